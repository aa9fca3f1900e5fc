#include "towerflow/train/all_reduce.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "towerflow/core/device_spec.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/collective_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/train/internal/all_reduce_checks.h"
#include "towerflow/train/nccl_all_reduce.h"

namespace tw::train {

Status CheckAllReduceTensors(const std::vector<Tensor*>& tensors) {
  if (tensors.empty()) return errors::InvalidArgument("AllReduce: no tensors to reduce");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor* t = tensors[i];
    if (t == nullptr) return errors::InvalidArgument("AllReduce: tensor ", i, " is null");
    if (!t->IsInitialized()) return errors::InvalidArgument("AllReduce: tensor ", i, " is uninitialized");
    const Tensor& first = *tensors[0];
    if (t->dtype() != first.dtype()) {
      return errors::InvalidArgument("AllReduce: tensor ", i, " is ", DataTypeName(t->dtype()),
                                     " but tensor 0 is ", DataTypeName(first.dtype()));
    }
    if (t->shape() != first.shape()) {
      return errors::InvalidArgument("AllReduce: tensor ", i, " has shape ", t->shape().ToString(),
                                     " but tensor 0 has shape ", first.shape().ToString());
    }
  }
  const DataType dtype = tensors[0]->dtype();
  if (!DispatchNumeric(dtype, "AllReduce", []<typename T>() { return Status::OK(); }).ok()) {
    return errors::InvalidArgument("AllReduce: tensors of ", DataTypeName(dtype), " cannot be reduced");
  }
  return Status::OK();
}

namespace {

// Elements reduced at a time inside a chunk: the accumulator lives on the stack
// (16 KiB for double) and stays in L1 while the N inputs stream through it.
constexpr int64_t kBlock = 2048;

// Reduces elements [begin, end) of every input and writes the result to all.
template <typename T>
void ReduceRange(const std::vector<T*>& bufs, Reduction op, int64_t begin, int64_t end) {
  T acc[kBlock];
  const auto n = static_cast<T>(bufs.size());
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t len = std::min(kBlock, end - b);
    std::copy(bufs[0] + b, bufs[0] + b + len, acc);
    for (size_t j = 1; j < bufs.size(); ++j) {
      const T* in = bufs[j] + b;
      // One branch per block, not per element, so each loop vectorises.
      switch (op) {
        case Reduction::kMax:
          for (int64_t k = 0; k < len; ++k) acc[k] = std::max(acc[k], in[k]);
          break;
        case Reduction::kMin:
          for (int64_t k = 0; k < len; ++k) acc[k] = std::min(acc[k], in[k]);
          break;
        default:
          for (int64_t k = 0; k < len; ++k) acc[k] = static_cast<T>(acc[k] + in[k]);
      }
    }
    if (op == Reduction::kMean) {
      for (int64_t k = 0; k < len; ++k) acc[k] = static_cast<T>(acc[k] / n);
    }
    for (T* out : bufs) std::copy(acc, acc + len, out + b);
  }
}

Output ScalarOf(const Scope& scope, DataType dtype, int64_t value) {
  Tensor t(dtype, TensorShape{});
  Status s = DispatchNumeric(dtype, "AllReduce", [&]<typename T>() {
    t.data<T>()[0] = static_cast<T>(value);
    return Status::OK();
  });
  if (!s.ok()) {
    scope.UpdateStatus(errors::InvalidArgument("AllReduce: cannot average tensors of ", DataTypeName(dtype)));
    return Output();
  }
  return Const(scope, t);
}

}  // namespace

const char* ReductionName(Reduction op) {
  switch (op) {
    case Reduction::kSum:
      return "sum";
    case Reduction::kMean:
      return "mean";
    case Reduction::kMax:
      return "max";
    case Reduction::kMin:
      return "min";
  }
  return "unknown";
}

CpuAllReducer::CpuAllReducer(ThreadPool* pool, CpuAllReducerOptions options)
    : pool_(pool), options_(options) {}

CpuAllReducer::CpuAllReducer(int num_threads, CpuAllReducerOptions options)
    : owned_pool_(num_threads > 1 ? std::make_unique<ThreadPool>("all_reduce", num_threads - 1) : nullptr),
      pool_(owned_pool_.get()),
      options_(options) {}

CpuAllReducer::~CpuAllReducer() = default;

Status CpuAllReducer::AllReduce(const std::vector<Tensor*>& tensors, Reduction op) {
  TW_RETURN_IF_ERROR(CheckAllReduceTensors(tensors));
  const DataType dtype = tensors[0]->dtype();
  const int64_t n = tensors[0]->NumElements();
  Status s = DispatchNumeric(dtype, "AllReduce", [&]<typename T>() {
    std::vector<T*> bufs;
    for (Tensor* t : tensors) bufs.push_back(t->data<T>());
    // One tensor is its own sum, mean, max and min (x / 1 == x exactly).
    if (tensors.size() == 1) return Status::OK();
    const int64_t chunk = std::max<int64_t>(1, options_.chunk_bytes / static_cast<int64_t>(sizeof(T)));
    const int64_t chunks = (n + chunk - 1) / chunk;
    // Cost per chunk: one read per input and one write per output per element.
    const int64_t cost = chunk * 2 * static_cast<int64_t>(tensors.size());
    ParallelFor(pool_, chunks, cost, [&](int64_t first, int64_t last) {
      ReduceRange<T>(bufs, op, first * chunk, std::min(n, last * chunk));
    });
    return Status::OK();
  });
  if (!s.ok()) {
    return errors::InvalidArgument("AllReduce: tensors of ", DataTypeName(dtype), " cannot be reduced");
  }
  return Status::OK();
}

namespace {

// Whether CollectiveAllReduce runs over NCCL on this process's GPUs: a build
// with the CUDA backend and CUDA GPUs visible. The first call registers the
// op's GPU kernel.
bool NcclCollectiveAvailable() {
#if TOWERFLOW_HAVE_CUDA
  return EnsureCollectiveAllReduceCudaKernel();
#else
  return false;
#endif
}

}  // namespace

AllReduceAlgorithm ResolveAllReduceAlgorithm(AllReduceAlgorithm algorithm, const std::vector<std::string>& devices) {
  if (algorithm != AllReduceAlgorithm::kAuto) return algorithm;
  bool all_gpus = !devices.empty();
  for (const std::string& d : devices) {
    StatusOr<DeviceSpec> spec = DeviceSpec::Parse(d);
    all_gpus = all_gpus && spec.ok() && spec->has_type() && spec->type() == "GPU";
  }
  return all_gpus && NcclCollectiveAvailable() ? AllReduceAlgorithm::kCollective
                                               : AllReduceAlgorithm::kReduceBroadcast;
}

namespace {

// The requested device of each list's first tensor.
std::vector<std::string> DevicesOf(const std::vector<std::vector<Output>>& inputs) {
  std::vector<std::string> devices;
  for (const auto& list : inputs) devices.push_back(list.empty() ? "" : list[0].node->requested_device());
  return devices;
}

// The algorithm for these lists: kAuto takes the collective only where its
// kernels take every dtype (CollectiveAllReduce: float, double, int32, int64).
// An explicit kCollective needs the lists on devices of one type (the
// participants of one group run one kernel: CPU or GPU).
StatusOr<AllReduceAlgorithm> AlgorithmFor(AllReduceAlgorithm requested,
                                          const std::vector<std::vector<Output>>& inputs) {
  const std::vector<std::string> devices = DevicesOf(inputs);
  const AllReduceAlgorithm algorithm = ResolveAllReduceAlgorithm(requested, devices);
  if (algorithm != AllReduceAlgorithm::kCollective) return algorithm;
  for (const auto& list : inputs) {
    for (const Output& t : list) {
      const DataType d = t.dtype();
      if (d == kFloat32 || d == kFloat64 || d == kInt32 || d == kInt64) continue;
      if (requested == AllReduceAlgorithm::kAuto) return AllReduceAlgorithm::kReduceBroadcast;
      return errors::InvalidArgument("AllReduce: the collective reduces float, double, int32 and int64, not ",
                                     DataTypeName(d), " (", t.name(), ")");
    }
  }
  std::string first_type;
  for (size_t i = 0; i < devices.size(); ++i) {
    StatusOr<DeviceSpec> spec = DeviceSpec::Parse(devices[i]);
    const std::string type = spec.ok() && spec->has_type() ? spec->type() : "CPU";
    if (i == 0) first_type = type;
    if (type != first_type) {
      return errors::InvalidArgument("AllReduce: the collective needs every device of one type, but device 0 is ",
                                     devices[0].empty() ? "unplaced (the CPU)" : devices[0], " and device ", i, " is ",
                                     devices[i]);
    }
  }
  return algorithm;
}

// The checks every graph all-reduce makes on one column (one tensor per
// device): column[0]'s dtype and a compatible static shape everywhere, and a
// reduction the graph supports. `label(i)` names entry i in the messages.
Status CheckColumn(const std::vector<Output>& column, Reduction reduction,
                   const std::function<std::string(size_t)>& label) {
  const Output& first = column[0];
  for (size_t i = 1; i < column.size(); ++i) {
    const Output& t = column[i];
    if (t.dtype() != first.dtype()) {
      return errors::InvalidArgument("AllReduce: ", label(i), " (", t.name(), ") is ", DataTypeName(t.dtype()),
                                     " but ", label(0), " (", first.name(), ") is ", DataTypeName(first.dtype()));
    }
    if (!t.shape().IsCompatibleWith(first.shape())) {
      return errors::InvalidArgument("AllReduce: ", label(i), " (", t.name(), ") has shape ", t.shape().ToString(),
                                     " but ", label(0), " (", first.name(), ") has shape ",
                                     first.shape().ToString());
    }
  }
  if (reduction != Reduction::kSum && reduction != Reduction::kMean) {
    return errors::InvalidArgument("AllReduce in the graph supports sum and mean, not ", ReductionName(reduction));
  }
  return Status::OK();
}

// The collective: one CollectiveAllReduce per device and dtype over the whole
// list. REQUIRES: inputs checked (same count, dtypes and shapes per k).
std::vector<std::vector<Output>> CollectiveMany(const Scope& scope, const std::vector<std::vector<Output>>& inputs,
                                                Reduction reduction) {
  const size_t n = inputs.size(), count = inputs[0].size();
  std::vector<std::vector<Output>> out(n, std::vector<Output>(count));
  NcclCollectiveAvailable();  // GPU participants get NCCL's kernel where there is one
  std::vector<DataType> dtypes;
  for (const Output& t : inputs[0]) {
    if (std::find(dtypes.begin(), dtypes.end(), t.dtype()) == dtypes.end()) dtypes.push_back(t.dtype());
  }
  for (DataType dtype : dtypes) {
    std::string suffix = dtypes.size() > 1 ? "_" + std::string(DataTypeName(dtype)) : "";
    // The group's name: this (unique) name scope, so that two reductions never meet.
    const std::string group = scope.name_scope() + suffix;
    for (size_t i = 0; i < n; ++i) {
      std::vector<Output> list;
      std::vector<size_t> ks;
      for (size_t k = 0; k < count; ++k) {
        if (inputs[i][k].dtype() != dtype) continue;
        list.push_back(inputs[i][k]);
        ks.push_back(k);
      }
      Scope ds = scope.WithDevice(inputs[i][0].node->requested_device())
                     .WithOpName("device_" + std::to_string(i) + suffix);
      std::vector<Output> reduced =
          CollectiveAllReduce(ds, list,
                              {.reduction = reduction == Reduction::kMean ? "mean" : "sum",
                               .num_devices = static_cast<int64_t>(n),
                               .shared_name = group});
      for (size_t j = 0; j < ks.size(); ++j) out[i][ks[j]] = reduced[j];
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<Output>> AllReduceMany(const Scope& scope, const std::vector<std::vector<Output>>& inputs,
                                               const GraphAllReduceOptions& options) {
  std::vector<std::vector<Output>> out;
  for (const auto& list : inputs) out.emplace_back(list.size());
  auto fail = [&](Status status) {
    scope.UpdateStatus(status);
    return out;
  };
  if (inputs.empty()) return fail(errors::InvalidArgument("AllReduce: no inputs"));
  const size_t count = inputs[0].size();
  if (count == 0) return fail(errors::InvalidArgument("AllReduce: device 0 has no tensors"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() != count) {
      return fail(errors::InvalidArgument("AllReduce: device ", i, " has ", inputs[i].size(),
                                          " tensors but device 0 has ", count));
    }
    for (size_t k = 0; k < count; ++k) {
      if (!inputs[i][k].valid()) {
        if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("AllReduce: tensor ", k, " of device ", i, " is null"));
        return out;
      }
    }
  }
  StatusOr<AllReduceAlgorithm> algorithm = AlgorithmFor(options.algorithm, inputs);
  if (!algorithm.ok()) return fail(algorithm.status());
  if (*algorithm == AllReduceAlgorithm::kReduceBroadcast) {
    // AllReduce checks each column.
    Scope s = options.name.empty() ? scope : scope.NewSubScope(options.name);
    for (size_t k = 0; k < count; ++k) {
      std::vector<Output> column;
      for (const auto& list : inputs) column.push_back(list[k]);
      GraphAllReduceOptions one = options;
      one.algorithm = AllReduceAlgorithm::kReduceBroadcast;
      one.name = "tensor_" + std::to_string(k);
      one.reduce_on = static_cast<int>((static_cast<size_t>(std::max(0, options.reduce_on)) + k) % inputs.size());
      std::vector<Output> reduced = AllReduce(s, column, one);
      if (!scope.ok()) return out;
      for (size_t i = 0; i < inputs.size(); ++i) out[i][k] = reduced[i];
    }
    return out;
  }
  for (size_t k = 0; k < count; ++k) {
    std::vector<Output> column;
    for (const auto& list : inputs) column.push_back(list[k]);
    Status s = CheckColumn(column, options.reduction,
                           [k](size_t i) { return StrCat("tensor ", k, " of device ", i); });
    if (!s.ok()) return fail(s);
  }
  Scope s = scope.NewSubScope(options.name.empty() ? "collective" : options.name);
  out = CollectiveMany(s, inputs, options.reduction);
  return out;
}

std::vector<Output> AllReduce(const Scope& scope, const std::vector<Output>& inputs,
                              const GraphAllReduceOptions& options) {
  std::vector<Output> out(inputs.size());
  auto fail = [&](Status status) {
    scope.UpdateStatus(status);
    return std::vector<Output>(inputs.size());
  };
  if (inputs.empty()) return fail(errors::InvalidArgument("AllReduce: no inputs"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      // The builder of that input recorded why.
      if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("AllReduce: input ", i, " is null"));
      return out;
    }
  }
  if (Status s = CheckColumn(inputs, options.reduction, [](size_t i) { return StrCat("input ", i); }); !s.ok()) {
    return fail(s);
  }
  if (options.reduce_on < 0 || options.reduce_on >= static_cast<int>(inputs.size())) {
    return fail(errors::InvalidArgument("AllReduce: reduce_on ", options.reduce_on, " is not one of the ",
                                        inputs.size(), " inputs"));
  }
  std::vector<std::vector<Output>> many;
  for (const Output& in : inputs) many.push_back({in});
  StatusOr<AllReduceAlgorithm> algorithm = AlgorithmFor(options.algorithm, many);
  if (!algorithm.ok()) return fail(algorithm.status());
  if (*algorithm == AllReduceAlgorithm::kCollective) {
    Scope s = scope.NewSubScope(options.name.empty() ? "collective" : options.name);
    std::vector<std::vector<Output>> reduced = CollectiveMany(s, many, options.reduction);
    for (size_t i = 0; i < inputs.size(); ++i) out[i] = reduced[i][0];
    return out;
  }
  Scope s = scope.NewSubScope(options.name);
  Output reduced;
  if (inputs.size() == 1) {
    reduced = inputs[0];
  } else {
    const std::string& device = inputs[static_cast<size_t>(options.reduce_on)].node->requested_device();
    Scope rs = s.WithDevice(device);
    // AddN rather than TF cifar10's expand_dims + concat + mean: one pass over
    // the inputs and no [N, ...] temporary.
    reduced = AddN(rs, inputs);
    if (options.reduction == Reduction::kMean) {
      Output n = ScalarOf(rs, inputs[0].dtype(), static_cast<int64_t>(inputs.size()));
      reduced = Div(rs.WithOpName("truediv"), reduced, n);
    }
  }
  if (!reduced.valid()) return out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out[i] = Identity(
        s.WithDevice(inputs[i].node->requested_device()).WithOpName("broadcast_" + std::to_string(i)),
        reduced);
  }
  return out;
}

}  // namespace tw::train
