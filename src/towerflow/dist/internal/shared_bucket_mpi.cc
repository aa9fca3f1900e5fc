#include <algorithm>
#include <cstring>

#include "towerflow/core/logging.h"
#include "towerflow/dist/internal/collective_call.h"
#include "towerflow/dist/internal/shared_bucket.h"

namespace tw::dist::internal {
namespace {

// What NewSharedBucket hands out: the bucket itself stays the world's.
class Handle final : public World::SharedBucket {
 public:
  explicit Handle(std::shared_ptr<MpiSharedBucket> bucket) : bucket_(std::move(bucket)) {}
  void* gradients() const override { return bucket_->gradients(); }
  const void* sum() const override { return bucket_->sum(); }
  int64_t count() const override { return bucket_->count(); }
  DataType dtype() const override { return bucket_->dtype(); }
  bool usable() const override { return bucket_->usable(); }
  MpiSharedBucket* bucket() const { return bucket_.get(); }

 private:
  std::shared_ptr<MpiSharedBucket> bucket_;
};

constexpr size_t kLine = 64;  // the sum's shares are whole cache lines; also the tensors' alignment

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// `p` moved up to the next cache line. Shared memory is mapped at page
// boundaries in every process, so each rank moves a segment by the same
// bytes whatever its address there.
char* AlignUp(void* p) {
  return reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(p), kLine));
}

// sum[lo, hi) = blocks[0] + blocks[1] + ... in rank order.
template <typename T>
void SumShare(const std::vector<const char*>& blocks, void* sum_bytes, int64_t lo, int64_t hi) {
  T* sum = static_cast<T*>(sum_bytes);
  const T* first = reinterpret_cast<const T*>(blocks[0]);
  if (blocks.size() == 1) {
    std::memcpy(sum + lo, first + lo, static_cast<size_t>(hi - lo) * sizeof(T));
    return;
  }
  const T* second = reinterpret_cast<const T*>(blocks[1]);
  for (int64_t i = lo; i < hi; ++i) sum[i] = first[i] + second[i];
  for (size_t r = 2; r < blocks.size(); ++r) {
    const T* b = reinterpret_cast<const T*>(blocks[r]);
    for (int64_t i = lo; i < hi; ++i) sum[i] += b[i];
  }
}

}  // namespace

Status MpiSharedBucket::MakeWindow(MPI_Comm comm, int size) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const size_t block = static_cast<size_t>(count_) * DataTypeSize(dtype_);
  const size_t sum_at = RoundUp(block, kLine);
  MPI_Info info;
  MPI_Info_create(&info);
  // Each rank's segment apart (its own pages, near its own core).
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* base = nullptr;
  // A line more: segments may start anywhere (OpenMPI's at 8 bytes).
  const MPI_Aint bytes = static_cast<MPI_Aint>((rank == 0 ? sum_at + block : block) + kLine);
  const int rc = MPI_Win_allocate_shared(bytes, 1, info, comm, &base, &win_);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    win_ = MPI_WIN_NULL;
    return MpiStatus("MPI_Win_allocate_shared", rc);
  }
  // Made on every rank alike from here on: freed by FreeAll whatever follows.
  owner_->Made(this);
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Win_lock_all", MPI_Win_lock_all(MPI_MODE_NOCHECK, win_)));
  blocks_.assign(static_cast<size_t>(size), nullptr);
  bool usable = true;
  for (int r = 0; r < size; ++r) {
    MPI_Aint segment = 0;
    int unit = 0;
    void* at = nullptr;
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Win_shared_query", MPI_Win_shared_query(win_, r, &segment, &unit, &at)));
    const char* aligned = at != nullptr ? AlignUp(at) : nullptr;
    const size_t needed = (r == 0 ? sum_at + block : block) + static_cast<size_t>(aligned - static_cast<const char*>(at));
    usable = usable && aligned != nullptr && static_cast<size_t>(segment) >= needed;
    blocks_[static_cast<size_t>(r)] = aligned;
  }
  // A window some segment of which is short is kept, freed with the others,
  // and never used: this rank then says "not ready" in every round.
  if (!usable) return errors::Internal("a segment of the shared window is smaller than the bucket");
  gradients_ = AlignUp(base);
  sum_ = const_cast<char*>(blocks_[0]) + sum_at;
  std::memset(gradients_, 0, block);
  return Status::OK();
}

Status MpiSharedBucket::Reduce(MPI_Comm comm, int rank, int size, bool ready, void* fallback, ReduceOp op,
                               bool* shared) {
  *shared = false;
  if (!tried_) {
    tried_ = true;
    if (Status made = MakeWindow(comm, size); !made.ok()) {
      TW_LOG(WARNING) << "a gradient bucket of " << count_ * static_cast<int64_t>(DataTypeSize(dtype_))
                      << " bytes is reduced by MPI's all-reduce, not through shared memory: " << made.ToString();
    }
  }
  // {ready, memory made}: their minimum over the ranks.
  const bool usable = gradients_ != nullptr;
  int mine[2] = {ready && usable ? 1 : 0, usable ? 1 : 0}, all[2] = {0, 0};
  if (win_ != MPI_WIN_NULL) MPI_Win_sync(win_);
  TW_RETURN_IF_ERROR(MpiStatus("MPI_Allreduce", MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, comm)));
  everywhere_ = everywhere_ && all[1] == 1;
  if (all[0] == 1) {
    MPI_Win_sync(win_);  // the other ranks' blocks, as they wrote them before the agreement
    const size_t per_line = kLine / DataTypeSize(dtype_);
    const int64_t share =
        static_cast<int64_t>(RoundUp(static_cast<size_t>((count_ + size - 1) / size), per_line));
    const int64_t lo = std::min<int64_t>(count_, share * rank), hi = std::min<int64_t>(count_, lo + share);
    if (hi > lo) {
      if (dtype_ == kFloat32) {
        SumShare<float>(blocks_, sum_, lo, hi);
      } else {
        SumShare<double>(blocks_, sum_, lo, hi);
      }
      if (op == ReduceOp::kMean) {
        DivideInPlace(dtype_, static_cast<char*>(sum_) + static_cast<size_t>(lo) * DataTypeSize(dtype_), hi - lo,
                      size);
      }
    }
    MPI_Win_sync(win_);
    TW_RETURN_IF_ERROR(MpiStatus("MPI_Barrier", MPI_Barrier(comm)));
    MPI_Win_sync(win_);  // every rank's share of the sum
    *shared = true;
    return Status::OK();
  }
  TW_ASSIGN_OR_RETURN(MPI_Datatype type, MpiType(dtype_));
  return MpiStatus("MPI_Allreduce",
                   MPI_Allreduce(MPI_IN_PLACE, fallback, static_cast<int>(count_), type, MPI_SUM, comm));
}

std::unique_ptr<World::SharedBucket> SharedBuckets::New(DataType dtype, int64_t count) {
  auto bucket = std::make_shared<MpiSharedBucket>(this, dtype, count);
  std::lock_guard<std::mutex> lock(mu_);
  buckets_.push_back(bucket);
  return std::make_unique<Handle>(std::move(bucket));
}

MpiSharedBucket* SharedBuckets::Of(World::SharedBucket& handle) {
  auto* h = dynamic_cast<Handle*>(&handle);
  return h != nullptr ? h->bucket() : nullptr;
}

void SharedBuckets::Made(MpiSharedBucket* bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  made_.push_back(bucket);
}

void SharedBuckets::FreeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (MpiSharedBucket* b : made_) {
    MPI_Win_unlock_all(b->win_);
    MPI_Win_free(&b->win_);
    b->gradients_ = nullptr;
    b->sum_ = nullptr;
  }
  made_.clear();
}

}  // namespace tw::dist::internal
