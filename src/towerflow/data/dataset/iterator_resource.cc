// IteratorResource, the dataset table, and the kernels of Iterator,
// MakeIterator and IteratorGetNext (schemas in iterator_ops.cc).
#include "towerflow/data/dataset/iterator_resource.h"

#include <atomic>
#include <map>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/run_ahead.h"
#include "towerflow/data/queue_internal.h"
#include "towerflow/runtime/transfers.h"

namespace tw::data {

namespace {

std::mutex& TableMutex() {
  static std::mutex mu;
  return mu;
}
// guarded by TableMutex(); entries expire with their graphs.
std::map<std::string, std::weak_ptr<const Dataset>>& Table() {
  static auto* table = new std::map<std::string, std::weak_ptr<const Dataset>>();
  return *table;
}

}  // namespace

std::string RegisterDataset(Graph& graph, const Dataset& dataset) {
  static std::atomic<int64_t> next{0};
  const std::string id = "dataset_" + std::to_string(next.fetch_add(1));
  auto owned = std::make_shared<const Dataset>(dataset);
  graph.SetObject("dataset:" + id, owned);
  std::lock_guard<std::mutex> lock(TableMutex());
  auto& table = Table();
  for (auto it = table.begin(); it != table.end();) it = it->second.expired() ? table.erase(it) : std::next(it);
  table[id] = owned;
  return id;
}

StatusOr<Dataset> FindDataset(const std::string& id) {
  std::lock_guard<std::mutex> lock(TableMutex());
  auto it = Table().find(id);
  std::shared_ptr<const Dataset> d = it == Table().end() ? nullptr : it->second.lock();
  if (d == nullptr) return errors::FailedPrecondition("dataset '", id, "' no longer exists (its graph was destroyed)");
  return *d;
}

namespace {

// The public Iterator as a RunAhead input.
class IteratorInput final : public IteratorBase {
 public:
  explicit IteratorInput(Iterator* it) : it_(it) {}
  Status GetNext(Element* out, bool* end) override {
    Status s = it_->GetNext(out);
    *end = s.code() == Code::kOutOfRange;
    return *end ? Status::OK() : s;
  }
  const std::string& name() const override { return name_; }

 private:
  Iterator* it_;
  const std::string name_ = "Iterator";
};

// Copies an element into `device`'s memory (the session's own host-to-device
// copy; a GPU refuses string components, naming them).
Status CopyToDevice(Device* device, Element&& in, Element* out) {
  out->resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    Status s = CopyHostTensorToDevice(in[i], device, &(*out)[i]);
    if (!s.ok()) return s.WithContext("PrefetchToDevice: component " + std::to_string(i));
  }
  return Status::OK();
}

}  // namespace

struct IteratorResource::DeviceStage {
  Device* device = nullptr;
  std::shared_ptr<PipelineContext> ctx = std::make_shared<PipelineContext>();
  std::unique_ptr<IteratorInput> input;
  std::unique_ptr<RunAhead> run_ahead;  // destroyed first: its thread reads `input`
  ~DeviceStage() {
    ctx->Cancel();
    run_ahead.reset();
  }
};

IteratorResource::IteratorResource(std::string name, Dataset dataset, bool initializable)
    : name_(std::move(name)), dataset_(std::move(dataset)), initializable_(initializable) {}

Status IteratorResource::EnsureStartedLocked() {
  if (iterator_ != nullptr) return Status::OK();
  if (initializable_) {
    return errors::FailedPrecondition("Iterator '", name_,
                                      "': GetNext() failed because the iterator has not been initialized. Ensure "
                                      "that you have run the initializer operation for this iterator before getting "
                                      "the next element.");
  }
  return StartLocked();
}

IteratorResource::~IteratorResource() {
  // The device stage's thread may wait inside the pass: stop the pass first.
  if (iterator_) iterator_->Cancel();
  stage_.reset();
}

void IteratorResource::Close() {
  std::shared_ptr<Iterator> it;
  std::shared_ptr<PipelineContext> stage_ctx;
  {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    closed_ = true;
    it = iterator_;
    stage_ctx = stage_ctx_;
  }
  if (it) it->Cancel();
  if (stage_ctx) stage_ctx->Cancel();
}

void IteratorResource::StopDeviceStageLocked() {
  if (!stage_) return;
  // The stage's thread may wait inside iterator_: cancel that pass first.
  if (iterator_) iterator_->Cancel();
  stage_.reset();
  std::lock_guard<std::mutex> lock(cancel_mu_);
  stage_ctx_.reset();
}

Status IteratorResource::GetNextOnDevice(Device* device, Element* element) {
  std::lock_guard<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(EnsureStartedLocked());
  if (stage_ == nullptr || stage_->device != device) {
    if (stage_ != nullptr) return errors::FailedPrecondition("Iterator '", name_, "' prefetches to ", stage_->device->name(),
                                                             ", not to ", device->name());
    auto stage = std::make_unique<DeviceStage>();
    stage->device = device;
    stage->input = std::make_unique<IteratorInput>(iterator_.get());
    const int64_t buffer = std::max<int64_t>(1, PrefetchDeviceBuffer(*dataset_.impl()));
    stage->run_ahead = std::make_unique<RunAhead>(
        stage->ctx, stage->input.get(),
        [device](int64_t, Element&& in, Element* out) { return CopyToDevice(device, std::move(in), out); },
        RunAhead::Options{.stage = "PrefetchToDevice", .workers = 1, .buffer = buffer, .max_buffer = buffer});
    {
      std::lock_guard<std::mutex> cancel_lock(cancel_mu_);
      if (closed_) return errors::Cancelled("Iterator '", name_, "': the session is closed");
      stage_ctx_ = stage->ctx;
    }
    stage_ = std::move(stage);
  }
  fresh_ = false;
  bool end = false;
  TW_RETURN_IF_ERROR(stage_->run_ahead->GetNext(element, &end));
  if (end) return errors::OutOfRange("End of sequence");
  return Status::OK();
}

Status IteratorResource::StartLocked() {
  StopDeviceStageLocked();  // it reads the pass being replaced
  TW_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> made, dataset_.MakeIterator());
  std::lock_guard<std::mutex> lock(cancel_mu_);
  if (closed_) {
    made->Cancel();
    return errors::Cancelled("Iterator '", name_, "': the session is closed");
  }
  iterator_ = std::move(made);
  fresh_ = true;
  return Status::OK();
}

Status IteratorResource::GetNext(Element* element) {
  std::lock_guard<std::mutex> lock(mu_);
  TW_RETURN_IF_ERROR(EnsureStartedLocked());
  fresh_ = false;
  return iterator_->GetNext(element);
}

Status IteratorResource::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  return StartLocked();
}

Status IteratorResource::Save(IteratorState* state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stage_ != nullptr) {
    return errors::Unimplemented("saving Iterator '", name_, "': the elements it prefetched to ", stage_->device->name(),
                                 " are not saved (PrefetchToDevice)");
  }
  TW_RETURN_IF_ERROR(EnsureStartedLocked());
  return iterator_->Save(state).WithContext("saving Iterator '" + name_ + "'");
}

Status IteratorResource::Restore(const IteratorState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (iterator_ == nullptr || !fresh_) TW_RETURN_IF_ERROR(StartLocked());
  Status s = iterator_->Restore(state);
  if (!s.ok()) {
    // A half-restored pass is no pass: the next GetNext starts afresh.
    std::lock_guard<std::mutex> cancel_lock(cancel_mu_);
    iterator_.reset();
    return s.WithContext("restoring Iterator '" + name_ + "'");
  }
  return s;
}

std::string IteratorResource::AutotuneSummary() {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  return iterator_ ? iterator_->AutotuneSummary() : "";
}

std::map<std::string, double> IteratorResource::Gauges() {
  std::lock_guard<std::mutex> lock(cancel_mu_);
  return iterator_ ? iterator_->Gauges() : std::map<std::string, double>{};
}

StatusOr<std::shared_ptr<IteratorResource>> IteratorResourceOf(ResourceMgr* resources, const Node& node) {
  TW_ASSIGN_OR_RETURN(std::string id, node.attrs().Get<std::string>("dataset_id"));
  TW_ASSIGN_OR_RETURN(std::string shared_name, node.attrs().Get<std::string>("shared_name"));
  const StatusOr<bool> init_attr = node.attrs().Get<bool>("initializable");  // absent in graphs made before it
  const bool initializable = init_attr.ok() && *init_attr;
  const std::string name = shared_name.empty() ? node.name() : shared_name;
  return resources->LookupOrCreate<IteratorResource>(
      "iterator:" + name, [&]() -> StatusOr<std::shared_ptr<IteratorResource>> {
        TW_ASSIGN_OR_RETURN(Dataset d, FindDataset(id));
        return std::make_shared<IteratorResource>(name, std::move(d), initializable);
      });
}

namespace {

// Iterator: creates (or finds) the resource and outputs a ref to its name.
class IteratorOp : public OpKernel {
 public:
  explicit IteratorOp(OpKernelConstruction* c) : OpKernel(c) {}
  void Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!resource_) {
        auto found = IteratorResourceOf(ctx->resource_mgr(), node());
        TW_OP_REQUIRES_OK(ctx, found.status());
        resource_ = *found;
        handle_ = Tensor::String(node().name());
      }
    }
    ctx->set_output_ref(0, &handle_mu_, &handle_);
  }
  bool IsExpensive() const override { return false; }
  std::shared_ptr<IteratorResource> resource() {
    std::lock_guard<std::mutex> lock(mu_);
    return resource_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<IteratorResource> resource_;  // guarded by mu_
  std::mutex handle_mu_;
  Tensor handle_;
};

// The kernels that act on the iterator of the Iterator node feeding input 0.
class IteratorAccessOp : public OpKernel {
 public:
  explicit IteratorAccessOp(OpKernelConstruction* c) : OpKernel(c) {}

 protected:
  StatusOr<std::shared_ptr<IteratorResource>> Resource(OpKernelContext* ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!resource_) {
      const Node* source = node().input(0).node;
      TW_ASSIGN_OR_RETURN(resource_, IteratorResourceOf(ctx->resource_mgr(), *source));
    }
    return resource_;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<IteratorResource> resource_;  // guarded by mu_
};

class MakeIteratorOp : public IteratorAccessOp {
 public:
  using IteratorAccessOp::IteratorAccessOp;
  void Compute(OpKernelContext* ctx) override {
    auto r = Resource(ctx);
    TW_OP_REQUIRES_OK(ctx, r.status());
    TW_OP_REQUIRES_OK(ctx, (*r)->Reset());
  }
};

class IteratorGetNextOp : public IteratorAccessOp {
 public:
  explicit IteratorGetNextOp(OpKernelConstruction* c) : IteratorAccessOp(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("output_types", &types_));
    positions_ = queue_internal::GroupedPositions(types_);
  }
  void Compute(OpKernelContext* ctx) override {
    auto r = Resource(ctx);
    TW_OP_REQUIRES_OK(ctx, r.status());
    Element element;
    if (ctx->device()->device_type() == kDeviceCpu) {
      TW_OP_REQUIRES_OK(ctx, (*r)->GetNext(&element));
    } else {
      TW_OP_REQUIRES_OK(ctx, (*r)->GetNextOnDevice(ctx->device(), &element));
    }
    TW_OP_REQUIRES(ctx, element.size() == types_.size(),
                   errors::Internal("the iterator gave ", element.size(), " components, the op expects ",
                                    types_.size()));
    for (size_t i = 0; i < element.size(); ++i) ctx->set_output(positions_[i], std::move(element[i]));
  }

 private:
  std::vector<DataType> types_;
  std::vector<int> positions_;
};

}  // namespace

void RegisterIteratorKernels(KernelRegistry& kernels) {
  kernels.RegisterUntyped<IteratorOp>("Iterator", kDeviceCpu);
  kernels.RegisterUntyped<MakeIteratorOp>("MakeIterator", kDeviceCpu);
  kernels.RegisterUntyped<IteratorGetNextOp>("IteratorGetNext", kDeviceCpu);
  // PrefetchToDevice: the same kernel on a GPU, its handle in host memory, its
  // outputs in the GPU's (copied there by the resource's device stage).
  kernels.Register(KernelDef{"IteratorGetNext", kDeviceGpu, "", {},
                             [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                               return std::make_unique<IteratorGetNextOp>(c);
                             },
                             /*host_memory_inputs=*/{0},
                             {}});
}

}  // namespace tw::data
