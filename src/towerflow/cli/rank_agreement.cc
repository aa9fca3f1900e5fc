#include "towerflow/cli/rank_agreement.h"

#include <vector>

#include "towerflow/dist/consistency.h"
#include "towerflow/graph/ops/state_ops.h"

namespace tw::cli {

dist::CollectiveTag ControlTag(const std::string& what) {
  return {.channel = dist::Channel::kControl, .bucket = 0, .num_buckets = 1, .what = what};
}

namespace {
constexpr int kValues = 5;  // loss, accuracy, stop, checkpoint, input_stopped
}  // namespace

Status StepAgreement::Start(const StepFlags& mine) {
  const double values[kValues] = {mine.loss, mine.accuracy, mine.stop ? 1.0 : 0.0, mine.checkpoint ? 1.0 : 0.0,
                                  mine.input_stopped ? 1.0 : 0.0};
  TW_ASSIGN_OR_RETURN(in_flight_, world_.StartAllReduce(ControlTag("the step's metrics"), kFloat64, values, kValues,
                                                        dist::ReduceOp::kSum));
  return Status::OK();
}

StatusOr<StepFlags> StepAgreement::Take() {
  double m[kValues] = {};
  std::unique_ptr<dist::World::PendingAllReduce> pending = std::move(in_flight_);
  if (pending == nullptr) return errors::FailedPrecondition("no step's flags in flight");
  TW_RETURN_IF_ERROR(pending->Wait(m));
  const double ranks = world_.size();
  return StepFlags{.loss = m[0] / ranks,
                   .accuracy = m[1] / ranks,
                   .stop = m[2] > 0,
                   .checkpoint = m[3] > 0,
                   .input_stopped = m[4] > 0};
}

Status InputStoppedError(dist::World& world, const train::Coordinator& coord, int64_t step) {
  const Status mine = coord.error();
  auto all = world.AllGather(ControlTag("why the ranks' inputs stopped"),
                             !mine.ok() ? mine.ToString() : coord.ShouldStop() ? "its input ended" : "");
  if (!all.ok()) return all.status();
  for (size_t r = 0; r < all->size(); ++r) {
    if ((*all)[r].empty()) continue;
    return errors::Aborted("the input of rank ", r, " stopped by step ", step, ": ", (*all)[r]);
  }
  return errors::Internal("the ranks agreed that an input stopped, but none says so");
}

StatusOr<std::string> CheckReplicas(dist::World& world, Session& session, const Graph& graph, int64_t step) {
  std::vector<Output> values;
  std::vector<std::string> names;
  for (const Variable& v : GlobalVariables(graph)) {
    values.push_back(v.value);
    names.push_back(v.name);
  }
  auto got = session.Run(values);
  if (!got.ok()) return got.status();
  std::string mine;
  for (const Tensor& t : *got) {
    const uint64_t fp = dist::Fingerprint64(t.raw_data(), t.TotalBytes());
    mine.append(reinterpret_cast<const char*>(&fp), sizeof(fp));
  }
  auto all = world.AllGather(ControlTag("the fingerprints of the variables"), mine);
  if (!all.ok()) return all.status();
  TW_RETURN_IF_ERROR(dist::CheckReplicasIdentical(*all, names, step));
  return "replicas: all " + std::to_string(values.size()) + " variables bit-identical on the " +
         std::to_string(world.size()) + " ranks at step " + std::to_string(step);
}

}  // namespace tw::cli
