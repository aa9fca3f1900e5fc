#include "towerflow/cli/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "towerflow/cli/progress.h"
#include "towerflow/cli/rank_agreement.h"
#include "towerflow/cli/train_graph.h"
#include "towerflow/cli/train_input.h"
#include "towerflow/cli/train_optimizer.h"
#include "towerflow/core/logging.h"
#include "towerflow/dist/consistency.h"
#include "towerflow/dist/world.h"
#include "towerflow/runtime/trace.h"
#include "towerflow/train/checkpoint_manager.h"
#include "towerflow/train/event_writer.h"
#include "towerflow/train/logdir_lock.h"
#include "towerflow/train/saver.h"
#include "towerflow/runtime/session_impl.h"

namespace tw::cli {

std::atomic<bool> g_stop_requested{false};

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// The physical description of each tower's GPU; InvalidArgument naming a GPU
// tower device the session lacks (it would fail placement later, less clearly).
StatusOr<std::vector<std::string>> TowerGpus(const Session& session, const std::vector<std::string>& towers) {
  std::vector<std::string> gpus;
  for (const std::string& tower : towers) {
    if (tower.rfind("/device:GPU:", 0) != 0) continue;
    const Device* found = nullptr;
    for (const auto& d : session.impl().devices()) {
      if (d->short_name() == tower) found = d.get();
    }
    if (found == nullptr) {
      return errors::InvalidArgument("tower device ", tower, " does not exist: the session has ",
                                     session.impl().device_set().DescribeDevices());
    }
    gpus.push_back(found->physical_description());
  }
  return gpus;
}

// What the loop measures between summaries.
struct Window {
  Clock::time_point start = Clock::now();
  int64_t examples = 0;
  double Rate() const {
    const double s = SecondsSince(start);
    return s > 0 ? static_cast<double>(examples) / s : 0;
  }
};

class Loop {
 public:
  // Several processes (`world`): every rank runs the loop in step; rank 0
  // alone reports progress and writes events and checkpoints (`events` is null
  // on the others).
  Loop(const TrainConfig& c, TrainGraph& g, Session& session, train::EventFileWriter* events, dist::World* world)
      : c_(c), g_(g), session_(session), events_(events), world_(world),
        chief_(world == nullptr || world->rank() == 0),
        // mpirun hands each rank a pseudo-terminal and forwards it line by
        // line into whatever its own output is (often a log): plain lines.
        progress_(stdout, StdoutIsTerminal() && world == nullptr, c.log_every_seconds),
        examples_per_step_(c.batch_size * static_cast<int64_t>(c.devices.size()) *
                           (world != nullptr ? world->size() : 1)),
        agreement_(world != nullptr ? std::make_unique<StepAgreement>(*world) : nullptr) {}

  // Runs steps until the total, a stop request, or an error (returned).
  //
  // One process runs each step before it reads the previous step's loss and
  // accuracy (Session::RunAsync): a GPU then has the next step queued while
  // the host waits for the metrics, where a step that ended in a wait for
  // its fetches left the GPU idle during the host's work between steps. No
  // step runs ahead of one after which something else must happen first (a
  // checkpoint, the last step, a stop, a traced step), so checkpoints hold
  // the state of the step they are named after. Several processes read each
  // step's metrics at once (their reduction is already one step late).
  Status Run(train::Coordinator& coord, train::CheckpointManager& checkpoints, TrainResult* result) {
    const int64_t warmup = std::min<int64_t>(3, std::max<int64_t>(0, c_.total_steps - result->global_step - 1));
    Clock::time_point timed_from = Clock::now(), last_checkpoint = Clock::now();
    const Clock::time_point started = Clock::now();
    int64_t timed_steps = 0;
    Window window;
    auto is_traced = [&](int64_t steps) {
      return !c_.trace_file.empty() && steps >= warmup && steps < warmup + c_.trace_steps;
    };
    std::optional<InFlight> ahead;  // the next step, run before this one's metrics were read
    // Several processes agree on when to stop (below), after a step: a rank
    // that left on its own (its coordinator stopped, Ctrl-C) would leave the
    // others waiting in a collective it never joins.
    while (ahead || (result->global_step < c_.total_steps && (world_ != nullptr || !coord.ShouldStop()))) {
      if (!ahead && world_ == nullptr && g_stop_requested.load()) {
        result->interrupted = true;
        break;
      }
      if (world_ != nullptr) world_->set_step(result->global_step + 1);
      const bool traced = is_traced(result->steps);
      std::vector<Output> fetches = {g_.step.loss, g_.accuracy};
      // Several processes: the first step also fetches tower 0's input, whose
      // fingerprint every rank compares (two ranks must not get one batch).
      const bool check_batch = world_ != nullptr && result->steps == 0 && !g_.step.tower_batches.empty() &&
                               !g_.step.tower_batches[0].empty() && g_.step.tower_batches[0][0].valid();
      if (check_batch) fetches.push_back(g_.step.tower_batches[0][0]);
      InFlight step;
      if (ahead) {
        step = std::move(*ahead);
        ahead.reset();
      } else {
        TW_ASSIGN_OR_RETURN(step, Start(fetches, traced));
      }
      // Checkpoints every N steps: every rank counts the same steps. Rank 0
      // decides those by time; with several processes every rank learns it
      // with the step's metrics, since each gives its input's position.
      const int64_t this_step = result->global_step + 1;
      const bool by_steps = c_.checkpoint_every_steps > 0 && this_step % c_.checkpoint_every_steps == 0;
      const bool by_time = c_.checkpoint_every_seconds > 0 && SecondsSince(last_checkpoint) >= c_.checkpoint_every_seconds;
      Status ahead_failed;  // the next step's, reported after this one counts
      // Nor ahead of the last warm-up step: the rate is timed from its end.
      if (world_ == nullptr && this_step < c_.total_steps && !by_steps && !by_time && !traced &&
          result->steps + 1 != warmup &&
          !is_traced(result->steps + 1) && !g_stop_requested.load() && !coord.ShouldStop()) {
        StatusOr<InFlight> next = Start(fetches, false);
        if (next.ok()) {
          ahead = std::move(next).value();
        } else {
          ahead_failed = next.status();
        }
      }
      StatusOr<std::vector<Tensor>> out = step.fetches.Wait();
      if (!out.ok()) return out.status();
      if (check_batch) {
        const Tensor& x = (*out)[2];
        const uint64_t fp = dist::Fingerprint64(x.raw_data(), x.TotalBytes());
        auto all = world_->AllGather(ControlTag("the fingerprints of the first batches"),
                                     std::string(reinterpret_cast<const char*>(&fp), sizeof(fp)));
        if (!all.ok()) return all.status();
        if (const std::string warning = dist::SameBatchWarning(*all); !warning.empty()) Message(warning);
      }
      const int64_t step_start = step.start_ns;
      StepStats& stats = step.stats;
      if (traced) {
        trace_.AddStep(result->global_step + 1, stats, session_);
        trace_.AddSpan("step " + std::to_string(result->global_step + 1), "step", step_start, NowNs(), "steps");
        // The input's autotune choices as they stand during the traced steps.
        if (const std::string tuned = InputAutotune(session_, g_.input); !tuned.empty()) {
          trace_.AddSpan("input autotune: " + tuned, "input", step_start, NowNs(), "input");
        }
      }
      ++result->steps;
      ++result->global_step;
      result->examples += examples_per_step_;
      window.examples += examples_per_step_;
      result->final_loss = (*out)[0].scalar<float>();
      result->final_accuracy = (*out)[1].scalar<float>();
      bool stop_agreed = false;
      bool checkpoint_now = (by_steps || (chief_ && by_time)) && result->global_step < c_.total_steps;
      // Checked on this rank's own loss, before anything is written.
      const bool finite_loss = std::isfinite(result->final_loss);
      if (world_ != nullptr && (finite_loss || !c_.stop_on_nan_loss)) {
        // The loss and accuracy over every rank, whether any rank was asked
        // to stop and whether rank 0 asks for a checkpoint by time: all stop,
        // and checkpoint, after the same step. Reduced while the next step
        // runs (a step's host never waits for the others' metrics): the
        // previous step's come back now, the last step waits for its own.
        const bool last = result->global_step >= c_.total_steps;
        std::optional<StepFlags> agreed;
        if (agreement_->in_flight()) {
          TW_ASSIGN_OR_RETURN(agreed, agreement_->Take());
          time_checkpoint_asked_ = false;
        }
        const bool ask_time = chief_ && by_time && !time_checkpoint_asked_ && !(agreed && agreed->checkpoint);
        time_checkpoint_asked_ = time_checkpoint_asked_ || ask_time;
        // A stop asked for (Ctrl-C) and an input that stopped (a failed
        // queue runner) apart: the first is a clean end, the second an error.
        TW_RETURN_IF_ERROR(agreement_->Start({.loss = result->final_loss,
                                              .accuracy = result->final_accuracy,
                                              .stop = g_stop_requested.load(),
                                              .checkpoint = ask_time,
                                              .input_stopped = coord.ShouldStop()}));
        if (last) {
          TW_ASSIGN_OR_RETURN(agreed, agreement_->Take());
        }
        if (agreed && agreed->input_stopped) return InputStoppedError(*world_, coord, result->global_step);
        if (agreed) {
          result->final_loss = agreed->loss;
          result->final_accuracy = agreed->accuracy;
          stop_agreed = agreed->stop;
          checkpoint_now = (by_steps || agreed->checkpoint) && !last;
        } else {
          checkpoint_now = by_steps && !last;
        }
      }
      if (c_.stop_on_nan_loss && !finite_loss) {
        // Before anything is written from the diverged weights: the newest
        // checkpoint stays the last one of a finite training.
        return errors::InvalidArgument(
            "the loss is ", std::isnan(result->final_loss) ? "NaN" : "infinite", " at global step ",
            result->global_step, ": training diverged; ",
            result->checkpoint.empty() ? std::string("no checkpoint was written")
                                       : "the newest checkpoint is " + result->checkpoint,
            " (lower --lr, or pass --on-nan-loss continue to train on)");
      }
      if (result->steps == warmup) timed_from = Clock::now();
      if (result->steps > warmup) ++timed_steps;
      const double rate = window.Rate();
      if (result->global_step % c_.summary_every_steps == 0) {
        if (Status s = WriteSummaries(result, rate); !s.ok()) return s;
        window = Window();
      }
      // The state reads every queue's size: only when it is drawn.
      if (chief_ && progress_.Due()) progress_.Update(State(*result, rate));
      if (checkpoint_now && !stop_agreed) {
        auto positions = GatherInputStates(session_, g_.input, world_);
        if (!positions.ok()) return positions.status();
        if (chief_) {
          auto path = checkpoints.Save(session_, *g_.saver, result->global_step, CheckpointMetadata(c_, *std::move(positions)));
          if (!path.ok()) return path.status();
          result->checkpoint = *path;
          last_checkpoint = Clock::now();
        }
      }
      if (stop_agreed) {
        result->interrupted = true;
        break;
      }
      if (!ahead_failed.ok()) return ahead_failed;
    }
    // Every rank issued the last step's metrics: they are waited for.
    if (agreement_ != nullptr && agreement_->in_flight()) TW_RETURN_IF_ERROR(agreement_->Take().status());
    result->seconds = SecondsSince(started);
    const double timed = SecondsSince(timed_from);
    result->examples_per_sec = timed_steps > 0 && timed > 0
                                   ? static_cast<double>(timed_steps * examples_per_step_) / timed
                                   : (result->seconds > 0 ? static_cast<double>(result->examples) / result->seconds : 0);
    return Status::OK();
  }

  // A step that was run, its fetches (the loss, the accuracy, and on the
  // first step of several processes tower 0's batch) on their way.
  struct InFlight {
    PendingFetches fetches;
    StepStats stats;  // when traced
    int64_t start_ns = 0;
  };
  StatusOr<InFlight> Start(const std::vector<Output>& fetches, bool traced) {
    InFlight step;
    step.start_ns = NowNs();
    TW_ASSIGN_OR_RETURN(step.fetches, session_.RunAsync({}, fetches, {g_.step.train_op}, traced ? &step.stats : nullptr));
    return step;
  }

  void Finish(const TrainResult& result) {
    if (chief_ && result.steps > 0) progress_.Finish(State(result, result.examples_per_sec));
  }
  // The input's autotune choices, in a line above the progress bar when
  // they differ from those last reported (a thread added or retired, a
  // buffer grown).
  void ReportInputAutotune(std::string tuned) {
    if (tuned == input_autotune_) return;
    input_autotune_ = std::move(tuned);
    if (!input_autotune_.empty()) Message("input autotune: " + input_autotune_);
  }

  void Message(const std::string& line) {
    if (chief_) progress_.Message(line);
  }
  // Where its summaries go from now on (rank 0's; null: none).
  void set_events(train::EventFileWriter* events) { events_ = events; }
  Status WriteFinalSummaries(TrainResult* result) { return WriteSummaries(result, result->examples_per_sec); }
  Status WriteTrace() const {
    if (world_ == nullptr) return trace_.Write(c_.trace_file);
    // One file for the job: rank 0 gathers every rank's events, each rank's
    // devices as processes "rank r: <device>" (pids r * 1000 + ...), on one
    // time axis (the steady clock is the host's: aligned on one host).
    int64_t neg_base = -trace_.earliest_ns();
    if (Status s = world_->AllReduce(ControlTag("the trace's time base"), kInt64, &neg_base, 1, dist::ReduceOp::kMax);
        !s.ok()) {
      return s;
    }
    const int rank = world_->rank();
    auto parts = world_->AllGather(ControlTag("the ranks' traces"),
                                   trace_.EventsJson(rank * 1000, "rank " + std::to_string(rank) + ": ", -neg_base));
    if (!parts.ok()) return parts.status();
    return chief_ ? TraceRecorder::WriteEvents(c_.trace_file, *parts) : Status::OK();
  }

 private:
  ProgressState State(const TrainResult& r, double rate) {
    ProgressState s;
    s.step = r.global_step;
    s.total_steps = c_.total_steps;
    if (c_.records > 0) {
      s.epoch = 1 + (r.global_step > 0 ? (r.global_step * examples_per_step_ - 1) / c_.records : 0);
      s.total_epochs = c_.epochs;
    }
    s.loss = r.final_loss;
    s.accuracy = r.final_accuracy;
    s.examples_per_sec = rate;
    s.queue_fill = InputFill(session_, g_.input, nullptr);
    if (g_.input.dataset) {
      s.queue_label = "shuffle buffer";
      ReportInputAutotune(InputAutotune(session_, g_.input));
    }
    return s;
  }

  Status WriteSummaries(TrainResult* r, double rate) {
    if (events_ == nullptr) return Status::OK();
    std::vector<std::pair<std::string, double>> scalars = {
        {"loss", r->final_loss},
        {"accuracy", r->final_accuracy},
        {"learning_rate", LearningRateAt(c_, r->global_step)},
        {"examples_per_sec", rate},
    };
    InputFill(session_, g_.input, &scalars);
    if (Status s = events_->AddScalars(r->global_step, scalars); !s.ok()) return s;
    return events_->Flush();
  }

  std::string input_autotune_;  // the choices last reported
  const TrainConfig& c_;
  TrainGraph& g_;
  Session& session_;
  train::EventFileWriter* events_;
  dist::World* const world_;
  const bool chief_;
  Progress progress_;
  const int64_t examples_per_step_;
  // The step's metrics being reduced over the ranks while the next step runs.
  std::unique_ptr<StepAgreement> agreement_;  // several processes
  bool time_checkpoint_asked_ = false;  // rank 0 asked, and has no answer yet
  TraceRecorder trace_;
};

// Restores the newest checkpoint that validates (--resume); the global step it
// holds, or 0 when there is none yet.
StatusOr<int64_t> Resume(Session& session, TrainGraph& g, train::CheckpointManager& checkpoints, Loop& loop,
                         TrainResult* result, std::optional<std::map<std::string, std::string>>* metadata) {
  auto restored = checkpoints.RestoreLatest(session, *g.saver);
  if (errors::IsNotFound(restored.status()) && checkpoints.Checkpoints().empty()) {
    loop.Message("resume: no checkpoint in the logdir yet; starting from step 0");
    return int64_t{0};
  }
  if (!restored.ok()) return restored.status();
  for (const Status& rejected : restored->rejected) loop.Message("resume: skipped " + rejected.ToString());
  result->checkpoint = restored->path;
  loop.Message("resume: restored " + restored->path + " (global step " + std::to_string(restored->step) + ")");
  auto read = train::ReadSafetensorsMetadata(restored->path);
  if (!read.ok()) return read.status();
  *metadata = *std::move(read);
  return restored->step;
}

}  // namespace

std::string CheckpointVariableScope(const TrainConfig& config) {
  return config.mirrored_variables ? "tower_0" : "";  // Replicate's name for tower 0
}

StatusOr<TrainResult> Train(const TrainConfig& c) {
  // Several processes (dist/world.h): rank 0 is the chief, which alone locks
  // and writes the logdir; the others train in step with it.
  dist::World* world = dist::World::Current();
  const bool chief = world == nullptr || world->rank() == 0;
  // One training per logdir: a second one would interleave its checkpoints.
  std::unique_ptr<train::LogdirLock> lock;
  if (chief) {
    auto acquired = train::LogdirLock::Acquire(c.logdir);
    if (!acquired.ok()) return acquired.status();
    lock = std::move(acquired).value();
  }
  TrainGraph g;
  train::CheckpointManager checkpoints(c.logdir, c.keep_checkpoints);
  // The step of the checkpoint --resume will restore first (an older one when
  // that one is unreadable: the seeds then still differ from the first run's).
  int64_t resume_step = c.resume && chief ? checkpoints.LatestStep().value_or(0) : 0;
  // The flags first (a rank started without --resume would not join the
  // broadcast below), then the graph built from them.
  if (world != nullptr) {
    if (Status s = dist::CheckSameOnEveryRank(*world, ConfigFingerprint(c)); !s.ok()) return s;
  }
  if (world != nullptr && c.resume) {
    if (Status s = world->Broadcast(ControlTag("the step --resume starts from"), &resume_step, sizeof(resume_step), 0);
        !s.ok()) {
      return s;
    }
  }
  if (Status s = BuildGraph(c, resume_step, world, &g); !s.ok()) return s;
  if (world != nullptr) {
    if (Status s = dist::CheckSameOnEveryRank(*world, dist::GraphFingerprint(g.graph)); !s.ok()) return s;
  }
  TrainResult result;
  result.devices = g.step.devices;
  result.ranks = world != nullptr ? world->size() : 1;

  SessionOptions options{.inter_op_threads = c.inter_op_threads,
                         .intra_op_threads = c.intra_op_threads,
                         .num_cpu_devices = c.num_cpu_devices,
                         .max_gpus = c.max_gpus,
                         .visible_gpus = c.visible_gpus,
                         .logical_gpus_per_gpu = c.logical_gpus_per_gpu,
                         .gpu_memory_limit_mb = c.gpu_memory_limit_mb,
                         .allow_tf32 = c.allow_tf32,
                         // TF1's multi-GPU examples do the same (trainer.h says why).
                         .allow_soft_placement = c.allow_soft_placement || c.max_gpus != 0,
                         .log_device_placement = c.log_device_placement && chief,
                         .check_numerics = c.check_numerics};
  options.cuda_graphs = c.cuda_graphs;
  // Timed algorithm choices differ from run to run.
  options.cudnn_autotune = !c.deterministic;
  Session session(g.graph, options);
  // Bad GPU options fail every run (an empty one too) with their own error,
  // which says more than a missing device. Checked before any step: soft
  // placement would move a missing GPU's ops to the CPU without a word.
  if (Status s = session.Run(FeedList{}, {}, {}).status(); !s.ok()) return s;
  auto gpus = TowerGpus(session, result.devices);
  if (!gpus.ok()) return gpus.status();
  result.gpus = *std::move(gpus);
  if (Status s = session.Run(GlobalVariablesInitializer(g.graph)); !s.ok()) return s;
  if (Status s = session.Run(LocalVariablesInitializer(g.graph)); !s.ok()) return s;

  Loop loop(c, g, session, /*events=*/nullptr, world);
  if (c.resume) {
    int64_t step = 0;
    std::optional<std::map<std::string, std::string>> metadata;  // the restored checkpoint's (rank 0)
    if (chief) {
      auto restored = Resume(session, g, checkpoints, loop, &result, &metadata);
      if (!restored.ok()) return restored.status();
      step = *restored;
    }
    if (world != nullptr) {
      if (Status s = world->Broadcast(ControlTag("the restored global step"), &step, sizeof(step), 0); !s.ok()) {
        return s;
      }
    }
    result.first_step = result.global_step = step;
    if (step >= c.total_steps) {
      loop.Message("resume: the checkpoint is at step " + std::to_string(step) + ", --steps " +
                   std::to_string(c.total_steps) + ": nothing left to train (give a larger --steps)");
    }
    auto said = ResumeInput(session, g.input, c.files, world, metadata ? &*metadata : nullptr, &result.input_resumed);
    if (!said.ok()) return said.status();
    if (!said->empty()) loop.Message(*said);
  }
  // Every rank starts from rank 0's variables (initialised or restored).
  if (g.broadcast != nullptr) {
    if (Status s = session.Run(g.broadcast); !s.ok()) return s;
  }
  // The events file, once the run is sure to train (a --resume that fails
  // leaves no empty one behind). The pid tells apart the files of runs that
  // start within the same second (a --resume right after a stop), as TF2
  // names its event files.
  std::unique_ptr<train::EventFileWriter> events;
  if (chief) {
    auto created = train::EventFileWriter::Create(c.logdir, "." + std::to_string(::getpid()));
    if (!created.ok()) return created.status();
    events = std::move(created).value();
    if (Status s = events->AddGraph(g.graph); !s.ok()) return s;
    loop.set_events(events.get());
  }

  train::Coordinator coord;
  std::vector<std::thread> runners = train::StartQueueRunners(session, coord);
  // Ctrl-C must also wake a step blocked on an empty queue: the watcher stops
  // the coordinator, whose cancel threads close the queues. Not with several
  // processes: their ranks agree to stop after a step (Loop::Run), and a rank
  // whose step failed on a closed queue would leave the others in that
  // step's collectives. A rank whose input stalls is named by the collective
  // timeout instead.
  std::atomic<bool> loop_done{false};
  std::thread watcher([&] {
    while (world == nullptr && !loop_done.load()) {
      if (g_stop_requested.load()) {
        coord.RequestStop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  Status status = loop.Run(coord, checkpoints, &result);
  loop_done = true;
  watcher.join();
  // Several processes: interrupted only where the ranks agreed (Loop::Run),
  // so that a rank's failed step is never taken for a clean stop.
  if (world == nullptr && g_stop_requested.load()) result.interrupted = true;
  // A step that failed because the input stopped reports the input's error.
  coord.RequestStop(status);
  Status joined = coord.Join(runners, std::chrono::seconds(30));
  if (!joined.ok()) status = joined;
  if (result.interrupted && (errors::IsCancelled(status) || errors::IsOutOfRange(status) || errors::IsAborted(status))) status = Status::OK();
  result.input_autotune = InputAutotune(session, g.input);
  loop.ReportInputAutotune(result.input_autotune);  // the final choices, unless already said
  loop.Finish(result);
  if (!status.ok()) return status;  // the newest checkpoint stays the last good one
  if (world != nullptr) {
    auto replicas = CheckReplicas(*world, session, g.graph, result.global_step);
    if (!replicas.ok()) return replicas.status();
    loop.Message(*replicas);
    const dist::World::GradientStats stats = world->gradient_stats();
    if (stats.rounds > 0) {
      result.allreduce_ms_per_step = stats.seconds / static_cast<double>(stats.rounds) * 1e3;
      result.allreduce_overlap = stats.seconds > 0 ? stats.overlapped_seconds / stats.seconds : 0;
      result.allreduce_in_place =
          stats.calls > 0 ? static_cast<double>(stats.in_place_calls) / static_cast<double>(stats.calls) : 0;
      result.allreduce_shared =
          stats.calls > 0 ? static_cast<double>(stats.shared_calls) / static_cast<double>(stats.calls) : 0;
      char line[240];
      std::snprintf(line, sizeof(line),
                    "all-reduce: %.3f ms per step (%.2f MB in fused buckets, %.0f%% of them in place, %.0f%% summed "
                    "in shared memory), %.0f%% of it overlapped with the backward pass",
                    result.allreduce_ms_per_step, static_cast<double>(stats.bytes) / static_cast<double>(stats.rounds) / 1e6,
                    100 * result.allreduce_in_place, 100 * result.allreduce_shared, 100 * result.allreduce_overlap);
      loop.Message(line);
    }
  }

  // The final checkpoint; with several processes every rank learns whether
  // there is one, since each gives its input's position.
  int64_t final_checkpoint = chief && (result.steps > 0 || result.checkpoint.empty()) ? 1 : 0;
  if (world != nullptr) {
    if (Status s = world->Broadcast(ControlTag("whether a final checkpoint is written"), &final_checkpoint,
                                    sizeof(final_checkpoint), 0);
        !s.ok()) {
      return s;
    }
  }
  if (final_checkpoint != 0) {
    auto positions = GatherInputStates(session, g.input, world);
    if (!positions.ok()) return positions.status();
    if (chief) {
      auto path = checkpoints.Save(session, *g.saver, result.global_step, CheckpointMetadata(c, *std::move(positions)));
      if (!path.ok()) return path.status();
      result.checkpoint = *path;
    }
  }
  if (chief && result.steps > 0) {
    if (Status s = loop.WriteFinalSummaries(&result); !s.ok()) return s;
  }
  if (events != nullptr) {
    if (Status s = events->Close(); !s.ok()) return s;
  }
  if (!c.trace_file.empty()) {
    if (Status s = loop.WriteTrace(); !s.ok()) return s;
  }
  return result;
}

}  // namespace tw::cli
