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
