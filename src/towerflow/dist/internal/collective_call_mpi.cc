#include "towerflow/dist/internal/collective_call.h"

#include <algorithm>
#include <limits>
#include <type_traits>

namespace tw::dist::internal {
namespace {

// The mean from the sum: the same division of the same bits on every rank.
void Divide(const Call& c, int size, char* buffer) {
  auto divide = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    const T n = static_cast<T>(size);
    for (int64_t i = 0; i < c.count; ++i) p[i] = static_cast<T>(p[i] / n);
  };
  switch (c.dtype) {
    case kFloat32:
      divide(reinterpret_cast<float*>(buffer));
      break;
    case kFloat64:
      divide(reinterpret_cast<double*>(buffer));
      break;
    case kInt32:
      divide(reinterpret_cast<int32_t*>(buffer));
      break;
    case kInt64:
      divide(reinterpret_cast<int64_t*>(buffer));
      break;
    default:
      break;
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

Status RunCollective(MPI_Comm comm, int size, Call& c, char* buffer) {
  if (c.kind == Kind::kTask) return c.work();  // ranks of one process too
  if (size == 1) return Status::OK();
  switch (c.kind) {
    case Kind::kAllReduce: {
      TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(c.dtype));
      TW_RETURN_IF_ERROR(MpiStatus("MPI_Allreduce",
                                   MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(c.count), type,
                                                 c.op == ReduceOp::kMax ? MPI_MAX : MPI_SUM, comm)));
      if (c.op == ReduceOp::kMean) Divide(c, size, buffer);
      return Status::OK();
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

}  // namespace tw::dist::internal
