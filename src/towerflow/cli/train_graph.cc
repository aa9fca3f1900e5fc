#include "towerflow/cli/train_graph.h"

#include "towerflow/cli/train_optimizer.h"
#include "towerflow/dist/collective_ops.h"
#include "towerflow/dist/sharding.h"

namespace tw::cli {
namespace {

// The graph seed of a run that starts at global step `resume_step`. Queues
// are not checkpointed, and a run resumed with the first run's seeds would draw
// the first run's input order again (and the CNN's towers its dropout masks):
// a run preempted and resumed every N steps would train on the first N batches
// of that order over and over. From step 0, `seed` itself; resumed, a seed that
// depends on the step too (still the same for the same seed and step). The
// initial values it changes are overwritten by the restore.
int64_t GraphSeed(int64_t seed, int64_t resume_step) {
  if (resume_step == 0) return seed;
  uint64_t z = static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(resume_step);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;  // SplitMix64's finalizer
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 1);  // non-negative, as a seed given on the command line
}

}  // namespace

Status BuildGraph(const TrainConfig& c, int64_t resume_step, dist::World* world, TrainGraph* g) {
  const int rank = world != nullptr ? world->rank() : 0, ranks = world != nullptr ? world->size() : 1;
  // Each rank shuffles its own way (rank 0 as a single process would).
  g->graph.set_seed(dist::RankSeed(GraphSeed(c.seed, resume_step), rank));
  Scope root(g->graph);
  // The seed's get_input(), on the CPU: every tower takes its own batch.
  // Several processes: each reads its own files (or records) of the data.
  const dist::InputShard shard = dist::ShardInput(c.files, rank, ranks);
  if (Status s = BuildTrainInput(root, c, shard, &g->input); !s.ok()) return s;
  g->optimizer = MakeOptimizer(c, LearningRateTensor(root, c));
  std::vector<Output> correct;
  std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)> cross_process_mean;
  if (world != nullptr) {
    // On the variables' device: GPU towers reduce with NCCL where the
    // gradients are, CPU towers with MPI (or the CPU's, for ranks sharing a GPU).
    dist::GradientBucketOptions buckets;
    buckets.device = c.cross_process_device.empty() ? c.variable_device : c.cross_process_device;
    // Momentum's update of a variable kept once divides its mean in its loop.
    buckets.divide_in_consumer = c.optimizer == "momentum" && !c.mirrored_variables;
    cross_process_mean = [buckets](const Scope& s, const std::vector<Output>& grads) {
      return dist::CrossProcessMean(s, grads, buckets);
    };
  }
  g->step = train::Replicate(
      root, c.devices, g->input.Source(), *g->optimizer,
      [&](const Scope& tower, const tw::Batch& batch) {
        ModelOutputs m = BuildModel(tower, batch, c.model, /*training=*/true, c.l2);
        // Replicate may build one replica only to create the variables; it never runs.
        if (tower.name_scope().rfind("tower_", 0) == 0) correct.push_back(m.correct);
        return m.loss;
      },
      {.variable_placement = c.mirrored_variables ? train::VariablePlacement::kMirrored
                                                  : train::VariablePlacement::kSingleDevice,
       .variable_device = c.variable_device,
       .global_step = true,
       .ordered_batches = c.deterministic,
       // Several processes: the towers' mean gradients, averaged over the
       // ranks in buckets that start as the backward pass produces them.
       .cross_process_mean = cross_process_mean});
  if (!root.ok()) return root.status();
  // Beside the mean loss (on the variable device): a GPU run's step then
  // waits for the GPU once, when its fetches are copied to the host.
  Scope metrics = root.WithDevice(c.variable_device);
  // (One tower's rows need no Concat: one kernel fewer a step on a GPU.)
  g->accuracy = Mean(metrics.WithOpName("accuracy"), correct.size() == 1 ? correct[0] : Concat(metrics, correct, 0), {0});
  g->saver.emplace(root);
  if (world != nullptr) g->broadcast = dist::BroadcastVariables(root, GlobalVariables(g->graph), /*root=*/0);
  return root.status();
}

std::vector<std::string> ConfigFingerprint(const TrainConfig& c) {
  std::string hidden;
  for (int64_t h : c.model.hidden) hidden += (hidden.empty() ? "" : ",") + std::to_string(h);
  return {"model " + c.model.name + " hidden " + hidden,
          "towers " + std::to_string(c.devices.size()) + " batch " + std::to_string(c.batch_size),
          "optimizer " + c.optimizer + " lr " + std::to_string(c.learning_rate) + " schedule " + c.lr_schedule +
              " l2 " + std::to_string(c.l2),
          "steps " + std::to_string(c.total_steps) + " variables " + (c.mirrored_variables ? "mirrored" : "shared"),
          // What makes a rank join collectives the others may not: a
          // checkpoint's input positions, a NaN's early stop, the trace's
          // gathering, the resumed step's broadcast.
          "checkpoint every " + std::to_string(c.checkpoint_every_steps) + " steps, stop on a NaN loss " +
              (c.stop_on_nan_loss ? "yes" : "no") + ", trace " +
              (c.trace_file.empty() ? std::string("off") : std::to_string(c.trace_steps) + " steps") + ", resume " +
              (c.resume ? "yes" : "no"),
          // How a gradient bucket's round runs (--deterministic keeps MPI's past 2 ranks).
          "all-reduce " + c.allreduce + (c.deterministic ? ", deterministic" : "")};
}

}  // namespace tw::cli
