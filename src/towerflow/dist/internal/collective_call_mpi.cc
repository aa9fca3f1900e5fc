#include "towerflow/dist/internal/collective_call.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>

namespace tw::dist::internal {
namespace {

// out[i] = sum[i] / n, or a copy when n is 1 (x / 1 == x). `out` is `sum`
// (a bucket divided where it was reduced) or does not overlap it.
template <typename T>
void Divided(const T* sum, T* out, int64_t count, int n) {
  if (n == 1) {
    if (out != sum) std::memcpy(out, sum, static_cast<size_t>(count) * sizeof(T));
    return;
  }
  const T divisor = static_cast<T>(n);
  if constexpr (std::is_floating_point_v<T>) {
    if ((n & (n - 1)) == 0) {
      // 1 / n is exact for a power of two, and so x * (1 / n) is x / n
      // rounded once, the same bits as the division at twice its speed.
      const T inverse = T(1) / divisor;
      for (int64_t i = 0; i < count; ++i) out[i] = sum[i] * inverse;
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(sum[i] / divisor);
}

// CopyResult for elements of type T.
template <typename T>
void CopyResultAs(const Call& c, int n, const std::vector<World::Piece>& pieces) {
  const T* from = reinterpret_cast<const T*>(c.buffer.get());
  for (const World::Piece& p : pieces) {
    if (p.count <= 0) continue;
    if (p.out != nullptr) Divided(from, static_cast<T*>(p.out), p.count, n);
    from += p.count;
  }
}

}  // namespace

Status MpiStatus(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return errors::Internal(call, " failed: ", std::string(text, static_cast<size_t>(len)));
}

StatusOr<MPI_Datatype> MpiType(DataType t) {
  switch (t) {
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
    case kInt32:
      return MPI_INT32_T;
    case kInt64:
      return MPI_INT64_T;
    default:
      return errors::InvalidArgument("no cross-process reduction of ", DataTypeName(t),
                                     " (float, double, int32 and int64 reduce)");
  }
}

Status RunCollective(MPI_Comm comm, int size, Call& c) {
  char* buffer = c.data();
  if (c.kind == Kind::kTask) return c.work();  // ranks of one process too
  if (size == 1) return Status::OK();
  switch (c.kind) {
    case Kind::kAllReduce: {
      TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(c.dtype));
      const MPI_Op op = c.op == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
      if (c.tag.channel == Channel::kControl) {
        // Polled with sleeps: a control call is small and not in a hurry,
        // and its thread leaves the cores to the training's meanwhile.
        MPI_Request request;
        TW_RETURN_IF_ERROR(MpiStatus(
            "MPI_Iallreduce", MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(c.count), type, op, comm, &request)));
        auto pause = std::chrono::microseconds(20);
        for (;;) {
          int finished = 0;
          if (Status s = MpiStatus("MPI_Test", MPI_Test(&request, &finished, MPI_STATUS_IGNORE)); !s.ok()) {
            // The request may still write into the buffer: it is left to
            // MPI, never reused nor freed.
            (void)c.buffer.release();
            if (c.keep != nullptr) (void)new std::shared_ptr<void>(std::move(c.keep));
            return s;
          }
          if (finished) return Status::OK();
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
      }
      return MpiStatus("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(c.count), type, op, comm));
    }
    case Kind::kBroadcast:
      return MpiStatus("MPI_Bcast", MPI_Bcast(buffer, static_cast<int>(c.count), MPI_BYTE, c.root, comm));
    case Kind::kAllGather: {
      int64_t mine = static_cast<int64_t>(c.bytes);
      std::vector<int64_t> lengths(static_cast<size_t>(size));
      TW_RETURN_IF_ERROR(
          MpiStatus("MPI_Allgather", MPI_Allgather(&mine, 1, MPI_INT64_T, lengths.data(), 1, MPI_INT64_T, comm)));
      std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
      int64_t total = 0;
      for (int r = 0; r < size; ++r) {
        const int64_t n = lengths[static_cast<size_t>(r)];
        if (n < 0 || total + n > std::numeric_limits<int>::max()) {
          return errors::InvalidArgument("all-gather of more than 2 GiB (rank ", r, " sends ", n, " bytes)");
        }
        counts[static_cast<size_t>(r)] = static_cast<int>(n);
        displs[static_cast<size_t>(r)] = static_cast<int>(total);
        total += n;
      }
      std::vector<char> all(static_cast<size_t>(std::max<int64_t>(total, 1)));
      TW_RETURN_IF_ERROR(MpiStatus("MPI_Allgatherv",
                                   MPI_Allgatherv(buffer, static_cast<int>(mine), MPI_CHAR, all.data(),
                                                  counts.data(), displs.data(), MPI_CHAR, comm)));
      for (int r = 0; r < size; ++r) {
        c.gathered.emplace_back(all.data() + displs[static_cast<size_t>(r)],
                                static_cast<size_t>(counts[static_cast<size_t>(r)]));
      }
      return Status::OK();
    }
    case Kind::kTask:
      break;
  }
  return errors::Internal("unknown collective");
}

void CopyPieces(Call& c, const std::vector<World::Piece>& pieces) {
  const size_t elem = DataTypeSize(c.dtype);
  char* to = c.buffer.get();
  for (const World::Piece& p : pieces) {
    const size_t n = p.count > 0 ? static_cast<size_t>(p.count) * elem : 0;
    if (n > 0 && p.in != nullptr) {
      std::memcpy(to, p.in, n);
    } else if (n > 0) {
      std::memset(to, 0, n);  // a gap
    }
    to += n;
  }
}

void CopyResult(const Call& c, int size, const std::vector<World::Piece>& pieces) {
  const int n = c.op == ReduceOp::kMean ? size : 1;
  switch (c.dtype) {
    case kFloat32:
      return CopyResultAs<float>(c, n, pieces);
    case kFloat64:
      return CopyResultAs<double>(c, n, pieces);
    case kInt32:
      return CopyResultAs<int32_t>(c, n, pieces);
    case kInt64:
      return CopyResultAs<int64_t>(c, n, pieces);
    default:  // MpiType refused it before the call was made
      return;
  }
}

void DivideInPlace(DataType dtype, void* data, int64_t count, int size) {
  if (size == 1 || count <= 0) return;  // x / 1 == x
  switch (dtype) {
    case kFloat32:
      return Divided(static_cast<float*>(data), static_cast<float*>(data), count, size);
    case kFloat64:
      return Divided(static_cast<double*>(data), static_cast<double*>(data), count, size);
    case kInt32:
      return Divided(static_cast<int32_t*>(data), static_cast<int32_t*>(data), count, size);
    case kInt64:
      return Divided(static_cast<int64_t*>(data), static_cast<int64_t*>(data), count, size);
    default:  // MpiType refused it before the call was made
      return;
  }
}

}  // namespace tw::dist::internal
