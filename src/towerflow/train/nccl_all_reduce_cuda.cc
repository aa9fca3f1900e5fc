// NcclAllReducer (nccl_all_reduce.h): NCCL across physical GPUs, device-memory
// reduction across the logical GPUs of one physical GPU. Compiled only with
// TOWERFLOW_CUDA (the _cuda.cc suffix); its CUDA kernels are in
// all_reduce_cuda.cu.
#include <map>
#include <utility>

#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/train/internal/all_reduce_checks.h"
#include "towerflow/train/nccl_all_reduce.h"

namespace tw::train {

// The host launchers of all_reduce_cuda.cu. Each queues its work on gpu's
// compute stream. REQUIRES: gpu's ordinal is current, n > 0.
Status LaunchAllReduceCombine(const GpuDevice& gpu, DataType dtype, void* acc, const void* in, int64_t n,
                              Reduction op);
Status LaunchAllReduceDivide(const GpuDevice& gpu, DataType dtype, void* acc, int64_t n, int64_t divisor);
Status LaunchCopySegments(const GpuDevice& gpu, DataType dtype, const std::vector<const void*>& src,
                          const std::vector<void*>& dst, const std::vector<int64_t>& count);

namespace {

StatusOr<ncclDataType_t> NcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kUInt8:
      return ncclUint8;
    default:
      return errors::InvalidArgument("AllReduce: tensors of ", DataTypeName(dtype), " cannot be reduced");
  }
}

}  // namespace

// The devices grouped by physical GPU, with their NCCL communicators and one
// event per device.
struct NcclAllReducer::State {
  struct Group {
    int ordinal = 0;
    std::vector<size_t> members;  // indices into devices_; members[0] leads
    ncclComm_t comm = nullptr;    // null with a single group
  };
  std::vector<Group> groups;
  std::vector<cudaEvent_t> events;  // per device index
  bool all_physical = true;         // every group has one member

  ~State() {
    // Errors on teardown have no caller to go to.
    for (Group& g : groups) {
      if (g.comm != nullptr) (void)ncclCommDestroy(g.comm);
    }
    for (cudaEvent_t e : events) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
  }
};

NcclAllReducer::NcclAllReducer(std::vector<GpuDevice*> devices, NcclAllReducerOptions options)
    : devices_(std::move(devices)), options_(options) {}

NcclAllReducer::~NcclAllReducer() = default;

Status NcclAllReducer::InitLocked() {
  if (state_ != nullptr) return Status::OK();
  auto st = std::make_unique<State>();
  std::map<int, size_t> group_of;  // ordinal -> index into st->groups
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == nullptr) return errors::InvalidArgument("NcclAllReducer: device ", i, " is null");
    const int ordinal = devices_[i]->ordinal();
    auto [it, added] = group_of.emplace(ordinal, st->groups.size());
    if (added) st->groups.push_back(State::Group{ordinal, {}, nullptr});
    st->groups[it->second].members.push_back(i);
  }
  st->events.assign(devices_.size(), nullptr);
  for (size_t i = 0; i < devices_.size(); ++i) {
    TW_RETURN_IF_ERROR(devices_[i]->Activate());
    TW_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&st->events[i], cudaEventDisableTiming));
  }
  for (const State::Group& g : st->groups) st->all_physical &= g.members.size() == 1;
  if (st->groups.size() > 1 || options_.nccl_with_one_gpu) {
    std::vector<int> ordinals;
    for (const State::Group& g : st->groups) ordinals.push_back(g.ordinal);
    std::vector<ncclComm_t> comms(ordinals.size(), nullptr);
    TW_NCCL_RETURN_IF_ERROR(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()));
    for (size_t k = 0; k < comms.size(); ++k) st->groups[k].comm = comms[k];
  }
  state_ = std::move(st);
  return Status::OK();
}

Status NcclAllReducer::CheckValue(const std::vector<Tensor*>& tensors) const {
  TW_RETURN_IF_ERROR(CheckAllReduceTensors(tensors));  // CpuAllReducer's checks
  if (tensors.size() != devices_.size()) {
    return errors::InvalidArgument("AllReduce: ", tensors.size(), " tensors for an NCCL reducer of ",
                                   devices_.size(), " devices");
  }
  if (tensors[0]->NumElements() == 0) return Status::OK();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (devices_[i] == nullptr) return errors::InvalidArgument("NcclAllReducer: device ", i, " is null");
    cudaPointerAttributes attr{};
    TW_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attr, tensors[i]->raw_data()));
    if (attr.type != cudaMemoryTypeDevice || attr.device != devices_[i]->ordinal()) {
      return errors::InvalidArgument("AllReduce: tensor ", i, " is not in the memory of ",
                                     devices_[i]->short_name(), " (CUDA device ", devices_[i]->ordinal(),
                                     ")");
    }
  }
  return Status::OK();
}

Status NcclAllReducer::AllReduce(const std::vector<Tensor*>& tensors, Reduction op) {
  TW_RETURN_IF_ERROR(CheckValue(tensors));
  // One tensor is its own sum, mean, max and min.
  if (tensors.size() == 1 || tensors[0]->NumElements() == 0) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(InitLocked());
  std::vector<void*> buffers;
  for (Tensor* t : tensors) buffers.push_back(t->raw_data());
  return ReduceLocked(buffers, tensors[0]->dtype(), tensors[0]->NumElements(), op);
}

Status NcclAllReducer::AllReduceBatch(const std::vector<std::vector<Tensor*>>& values, Reduction op) {
  for (size_t v = 0; v < values.size(); ++v) {
    TW_RETURN_IF_ERROR(CheckValue(values[v]).WithContext("AllReduceBatch: value " + std::to_string(v)));
  }
  if (values.empty() || devices_.size() == 1) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(InitLocked());
  // Open buckets by dtype: the values and their bytes so far.
  std::map<DataType, std::pair<std::vector<const std::vector<Tensor*>*>, int64_t>> open;
  for (const std::vector<Tensor*>& value : values) {
    const Tensor& t = *value[0];
    const int64_t bytes = static_cast<int64_t>(t.TotalBytes());
    if (bytes == 0) continue;
    if (bytes >= options_.bucket_bytes) {
      std::vector<void*> buffers;
      for (Tensor* x : value) buffers.push_back(x->raw_data());
      TW_RETURN_IF_ERROR(ReduceLocked(buffers, t.dtype(), t.NumElements(), op));
      continue;
    }
    auto& [bucket, bucket_bytes] = open[t.dtype()];
    if (bucket_bytes + bytes > options_.bucket_bytes) {
      TW_RETURN_IF_ERROR(ReduceBucketLocked(bucket, t.dtype(), op));
      bucket.clear();
      bucket_bytes = 0;
    }
    bucket.push_back(&value);
    bucket_bytes += bytes;
  }
  for (const auto& [dtype, bucket] : open) {
    if (!bucket.first.empty()) TW_RETURN_IF_ERROR(ReduceBucketLocked(bucket.first, dtype, op));
  }
  return Status::OK();
}

// Packs the bucket's values into one flat buffer per device, reduces those,
// and unpacks them.
Status NcclAllReducer::ReduceBucketLocked(const std::vector<const std::vector<Tensor*>*>& bucket,
                                          DataType dtype, Reduction op) {
  int64_t total = 0;
  for (const auto* value : bucket) total += (*value)[0]->NumElements();
  const size_t element = DataTypeSize(dtype);
  std::vector<Tensor> flats(devices_.size());
  std::vector<void*> buffers(devices_.size());
  std::vector<int64_t> counts;
  for (const auto* value : bucket) counts.push_back((*value)[0]->NumElements());
  for (size_t i = 0; i < devices_.size(); ++i) {
    TW_RETURN_IF_ERROR(devices_[i]->Activate());
    TW_ASSIGN_OR_RETURN(flats[i], Tensor::Allocate(devices_[i]->allocator(), dtype, TensorShape{total}));
    buffers[i] = flats[i].raw_data();
    std::vector<const void*> src;
    std::vector<void*> dst;
    int64_t offset = 0;
    for (const auto* value : bucket) {
      src.push_back((*value)[i]->raw_data());
      dst.push_back(static_cast<char*>(buffers[i]) + offset * element);
      offset += (*value)[0]->NumElements();
    }
    TW_RETURN_IF_ERROR(LaunchCopySegments(*devices_[i], dtype, src, dst, counts));
  }
  TW_RETURN_IF_ERROR(ReduceLocked(buffers, dtype, total, op));
  for (size_t i = 0; i < devices_.size(); ++i) {
    TW_RETURN_IF_ERROR(devices_[i]->Activate());
    std::vector<const void*> src;
    std::vector<void*> dst;
    int64_t offset = 0;
    for (const auto* value : bucket) {
      src.push_back(static_cast<const char*>(buffers[i]) + offset * element);
      dst.push_back((*value)[i]->raw_data());
      offset += (*value)[0]->NumElements();
    }
    TW_RETURN_IF_ERROR(LaunchCopySegments(*devices_[i], dtype, src, dst, counts));
  }
  // The flat buffers go back to their pools stream-ordered, after the unpack.
  return Status::OK();
}

// buffers[i] (count elements on devices_[i]) all become the reduction.
// REQUIRES: mu_ held, InitLocked() done, more than one device, count > 0.
Status NcclAllReducer::ReduceLocked(const std::vector<void*>& buffers, DataType dtype, int64_t count,
                                    Reduction op) {
  State& st = *state_;
  const size_t bytes = static_cast<size_t>(count) * DataTypeSize(dtype);
  TW_ASSIGN_OR_RETURN(ncclDataType_t nccl_type, NcclType(dtype));
  bool nccl_mean = false;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
  nccl_mean = op == Reduction::kMean && st.all_physical && IsFloating(dtype);
#endif
  // 1. Within each physical GPU: the first device combines the others' buffers
  // into a temporary (single devices reduce in place).
  std::vector<Tensor> temps(st.groups.size());
  std::vector<void*> acc(st.groups.size());
  for (size_t k = 0; k < st.groups.size(); ++k) {
    const State::Group& g = st.groups[k];
    acc[k] = buffers[g.members[0]];
    if (g.members.size() == 1) continue;
    const GpuDevice& lead = *devices_[g.members[0]];
    TW_RETURN_IF_ERROR(lead.Activate());
    for (size_t j = 1; j < g.members.size(); ++j) {  // the lead's stream waits for the members' work
      const size_t m = g.members[j];
      TW_CUDA_RETURN_IF_ERROR(cudaEventRecord(st.events[m], devices_[m]->stream()));
      TW_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(lead.stream(), st.events[m], 0));
    }
    TW_ASSIGN_OR_RETURN(temps[k], Tensor::Allocate(lead.allocator(), dtype, TensorShape{count}));
    acc[k] = temps[k].raw_data();
    TW_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(acc[k], buffers[g.members[0]], bytes, cudaMemcpyDeviceToDevice, lead.stream()));
    for (size_t j = 1; j < g.members.size(); ++j) {
      TW_RETURN_IF_ERROR(LaunchAllReduceCombine(lead, dtype, acc[k], buffers[g.members[j]], count, op));
    }
  }
  // 2. Across physical GPUs: one NCCL rank each, on the lead's stream.
  if (st.groups[0].comm != nullptr) {
    ncclRedOp_t nccl_op = ncclSum;
    if (op == Reduction::kMax) nccl_op = ncclMax;
    if (op == Reduction::kMin) nccl_op = ncclMin;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    if (nccl_mean) nccl_op = ncclAvg;
#endif
    TW_NCCL_RETURN_IF_ERROR(ncclGroupStart());
    Status status;
    for (size_t k = 0; k < st.groups.size() && status.ok(); ++k) {
      const GpuDevice& lead = *devices_[st.groups[k].members[0]];
      status = NcclStatus(ncclAllReduce(acc[k], acc[k], static_cast<size_t>(count), nccl_type, nccl_op,
                                        st.groups[k].comm, lead.stream()),
                          "ncclAllReduce", __FILE__, __LINE__);
    }
    // The group must be closed even when a call in it failed.
    const Status end = NcclStatus(ncclGroupEnd(), "ncclGroupEnd()", __FILE__, __LINE__);
    if (!status.ok() || !end.ok()) {
      // The communicators may hold a half-issued collective that the others
      // wait on: aborted (their kernels stop), and made anew by the next call.
      for (State::Group& g : st.groups) {
        if (g.comm != nullptr) (void)ncclCommAbort(g.comm);
        g.comm = nullptr;
      }
      state_.reset();
      return !status.ok() ? status : end;
    }
  }
  // 3. The mean, unless NCCL averaged.
  if (op == Reduction::kMean && !nccl_mean) {
    for (size_t k = 0; k < st.groups.size(); ++k) {
      const GpuDevice& lead = *devices_[st.groups[k].members[0]];
      TW_RETURN_IF_ERROR(lead.Activate());
      TW_RETURN_IF_ERROR(
          LaunchAllReduceDivide(lead, dtype, acc[k], count, static_cast<int64_t>(devices_.size())));
    }
  }
  // 4. Back to every member of a physical GPU; their streams wait for it.
  for (size_t k = 0; k < st.groups.size(); ++k) {
    const State::Group& g = st.groups[k];
    if (g.members.size() == 1) continue;
    const GpuDevice& lead = *devices_[g.members[0]];
    TW_RETURN_IF_ERROR(lead.Activate());
    for (size_t m : g.members) {
      TW_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(buffers[m], acc[k], bytes, cudaMemcpyDeviceToDevice, lead.stream()));
    }
    cudaEvent_t done = st.events[g.members[0]];
    TW_CUDA_RETURN_IF_ERROR(cudaEventRecord(done, lead.stream()));
    for (size_t j = 1; j < g.members.size(); ++j) {
      TW_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(devices_[g.members[j]]->stream(), done, 0));
    }
  }
  // temps go back to the leads' pools stream-ordered, after the copies.
  return Status::OK();
}

}  // namespace tw::train
