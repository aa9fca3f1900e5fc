#include "towerflow/runtime/session.h"

#include "towerflow/runtime/session_impl.h"

namespace tw {

Session::Session(Graph& graph, SessionOptions options)
    : impl_(std::make_unique<SessionImpl>(graph, std::move(options))) {}

Session::~Session() = default;

StatusOr<std::vector<Tensor>> Session::Run(const FeedList& feeds, const std::vector<Output>& fetches,
                                           const std::vector<Node*>& targets, StepStats* stats) {
  return impl_->Run(feeds, fetches, targets, stats);
}

StatusOr<std::vector<Tensor>> Session::Run(const std::vector<Output>& fetches,
                                           const std::vector<Node*>& targets) {
  return impl_->Run(FeedList{}, fetches, targets, nullptr);
}

Status Session::Run(Node* target) { return impl_->Run(FeedList{}, {}, {target}, nullptr).status(); }

StatusOr<PendingFetches> Session::RunAsync(const FeedList& feeds, const std::vector<Output>& fetches,
                                           const std::vector<Node*>& targets, StepStats* stats) {
  // Shared by the waiting function (std::function copies what it holds).
  auto copies = std::make_shared<std::vector<std::unique_ptr<PendingCopy>>>();
  TW_ASSIGN_OR_RETURN(std::vector<Tensor> values, impl_->Run(feeds, fetches, targets, stats, copies.get()));
  PendingFetches pending;
  pending.values_ = std::move(values);
  pending.pending_ = true;
  if (!copies->empty()) {
    pending.wait_ = [copies]() -> Status {
      Status first;
      for (auto& copy : *copies) {
        Status s = copy->Wait();
        if (first.ok()) first = s;
      }
      copies->clear();
      return first;
    };
  }
  return pending;
}

StatusOr<std::vector<Tensor>> PendingFetches::Wait() {
  if (!pending_) return errors::FailedPrecondition("these fetches were already waited for (or never run)");
  pending_ = false;
  if (wait_) {
    Status s = wait_();
    wait_ = nullptr;
    if (!s.ok()) {
      values_.clear();
      return s;
    }
  }
  return std::move(values_);
}

void Session::Close() { impl_->Close(); }

bool Session::closed() const { return impl_->closed(); }

Graph& Session::graph() const { return impl_->graph(); }

const SessionOptions& Session::options() const { return impl_->options(); }

std::vector<DeviceAttributes> Session::ListDevices() const { return impl_->ListDevices(); }

std::string Session::DescribeDevices() const { return impl_->DeviceMapping(); }

std::string Session::PlacedDevice(const Node& node) const { return impl_->placement().device_name(node); }

std::string Session::PlacementReason(const Node& node) const { return impl_->placement().reason(node); }

std::string DeviceNameOf(const Device* device) { return device ? device->name() : std::string(); }

}  // namespace tw
