#include "towerflow/cli/train_input.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "towerflow/cli/json.h"
#include "towerflow/core/logging.h"
#include "towerflow/dist/consistency.h"

namespace tw::cli {

namespace {

// TF's fast form of the seed's pipeline: read_up_to + parse_example +
// decode_raw on whole batches, enqueue_many into the shuffle queue. One step
// of an input thread handles a batch of records, not one record: the input
// costs half as much CPU, which towers on the same cores get back. Each input
// thread has its own reader (shuffle_batch_join), so that threads read and
// decompress different files at once instead of taking turns at one reader.
void BuildQueue(const Scope& input, const TrainConfig& c, const dist::InputShard& shard, TrainInput* in) {
  io::Queue filenames = train::StringInputProducer(input, shard.files, {.shuffle = true});
  const int threads = std::max(1, c.input_threads);
  std::vector<tw::Batch> per_thread;
  for (int t = 0; t < threads; ++t) {
    io::TFRecordReader reader(input, {.compression = c.compression,
                                      .skip_corrupt = c.skip_corrupt,
                                      .shard_count = shard.record_shard_count,
                                      .shard_index = shard.record_shard_index});
    auto [keys, values] = reader.ReadUpTo(filenames, c.batch_size);
    per_thread.push_back(DecodeBatch(input, values, c.model, keys));
  }
  const int64_t towers = static_cast<int64_t>(c.devices.size());
  in->queue = train::ShuffleBatchSource::Join(
      input, per_thread,
      {.batch_size = c.batch_size,
       .capacity = c.min_after_dequeue + (threads + 2) * c.batch_size * towers,
       .min_after_dequeue = c.min_after_dequeue,
       .deterministic = c.deterministic,
       .enqueue_many = true});
}

// The same work as tf.data users write it: the file order shuffled each
// epoch, input_threads files read at once, this rank's part of it all
// (dist::DistributeDataset: the files split by rank, or each file's records
// when there are fewer files than ranks, as `shard` says), batches of records parsed by
// parallel calls of one map that run ahead, a shuffle buffer of parsed
// examples, and the towers' batches drawn from it ahead of them (Prefetch:
// the rows' copies then cost the towers nothing; measured with --trace, a
// tower's IteratorGetNext went from 347 to 116 us, the queue's dequeue is
// 140 us).
void BuildDataset(const Scope& input, const TrainConfig& c, const dist::InputShard& shard, TrainInput* in) {
  Tensor names(kString, TensorShape{static_cast<int64_t>(c.files.size())});
  for (size_t i = 0; i < c.files.size(); ++i) names.flat<std::string>()[i] = c.files[i];
  // Op-level seeds from the graph's, as the queues' (Graph::set_seed).
  const OpSeeds seeds = GetSeeds(input.graph(), 0);
  const int64_t seed = seeds.seed * 1000003 + seeds.seed2;
  // Keyed records, so that a parse error names the record's file and offset.
  const data::TFRecordOptions read = {.compression = std::string(CompressionName(c.compression)),
                                      .skip_corrupt = c.skip_corrupt,
                                      .keys = true};
  const int64_t reads = std::max(1, c.input_threads);
  const int64_t calls = c.input_threads > 0 ? c.input_threads : data::kAutotune;
  data::Dataset records =
      data::Dataset::FromTensorSlices({names})
          .Shuffle(static_cast<int64_t>(shard.files.size()), {.seed = seed})
          .Repeat()
          .Interleave(
              [read](const data::Element& e) -> StatusOr<data::Dataset> {
                return data::Dataset::TFRecord(std::vector<std::string>{e[0].scalar<std::string>()}, read);
              },
              {.cycle_length = reads, .num_parallel_calls = reads > 1 ? reads : 0});
  const ModelConfig model = c.model;
  // Parsed before the shuffle, as the queue's enqueue_many does: the shuffle
  // buffer then holds fixed-size rows (Batch(Shuffle(Unbatch)) runs fused,
  // rows kept in one array per component), not a serialized record each.
  data::Dataset batches =
      records.Batch(c.batch_size)
          .Map([model](const Scope& s, const std::vector<Output>& keyed) {
                 return DecodeBatch(s, keyed[1], model, /*names=*/keyed[0]);
               },
               {.num_parallel_calls = calls})
          .Unbatch()
          .Shuffle(std::max<int64_t>(1, c.min_after_dequeue), {.seed = seed + 1})
          .Batch(c.batch_size, /*drop_remainder=*/true);
  in->dataset = data::MakeIterator(input, dist::DistributeDataset(batches).Prefetch(data::kAutotune));
}

}  // namespace

train::BatchSourceFn TrainInput::Source() const {
  if (queue) return *queue;
  return *dataset;
}

Status BuildTrainInput(const Scope& root, const TrainConfig& c, const dist::InputShard& shard, TrainInput* input) {
  Scope scope = root.WithDevice("/device:CPU:0").NewSubScope("input");
  if (c.input == "dataset") {
    BuildDataset(scope, c, shard, input);
  } else if (c.input == "queue") {
    BuildQueue(scope, c, shard, input);
  } else {
    return errors::InvalidArgument("unknown input '", c.input, "' (queue or dataset)");
  }
  return root.status();
}

double InputFill(Session& session, const TrainInput& input, std::vector<std::pair<std::string, double>>* summaries) {
  if (input.dataset) {
    const auto gauges = data::IteratorGauges(session, *input.dataset);
    auto it = gauges.find("Shuffle buffer fill");
    if (it == gauges.end()) return -1;
    if (summaries) summaries->push_back({"input/shuffle_buffer_fill", it->second});
    return it->second;
  }
  double fill = -1;
  for (const io::QueueFill& q : io::QueueFillStats(session)) {
    if (summaries) summaries->push_back({q.summary_name, q.value});
    if (q.op == "RandomShuffleQueue" && q.capacity > 0) {
      fill = static_cast<double>(q.size) / static_cast<double>(q.capacity);
    }
  }
  return fill;
}

std::string InputAutotune(Session& session, const TrainInput& input) {
  return input.dataset ? data::IteratorAutotuneSummary(session, *input.dataset) : "";
}

namespace {

dist::CollectiveTag InputTag(const std::string& what) {
  return {.channel = dist::Channel::kControl, .bucket = 0, .num_buckets = 1, .what = what};
}

std::string RankKey(int rank) {
  return rank == 0 ? std::string(kInputStateKey) : std::string(kInputStateKey) + "." + std::to_string(rank);
}

// Restores one rank's position from its metadata value.
Status RestoreFrom(Session& session, const TrainInput& input, const std::string& key, const std::string& value) {
  std::string bytes;
  if (!Base64Decode(value, &bytes)) return errors::DataLoss("checkpoint metadata '", key, "' is not base64");
  auto state = data::ParseIteratorState(bytes);
  if (!state.ok()) return state.status().WithContext("checkpoint metadata '" + key + "'");
  return data::RestoreIterator(session, *input.dataset, *state);
}

// The entries, or, past kInputStateMaxBytes, only how large they were (with
// a warning, once per process).
std::map<std::string, std::string> WithinBudget(std::map<std::string, std::string> entries) {
  size_t bytes = 0;
  for (const auto& [key, value] : entries) bytes += key.size() + value.size();
  if (bytes <= kInputStateMaxBytes) return entries;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    TW_LOG(WARNING) << "the input's position takes " << bytes / 1000000 << " MB (its shuffle buffer), more than the "
                    << kInputStateMaxBytes / 1000000
                    << " MB a checkpoint keeps: checkpoints hold none, and --resume starts the input afresh "
                       "(a smaller --min-after-dequeue keeps it)";
  }
  return {{kInputDroppedKey, std::to_string(bytes)}};
}

}  // namespace

StatusOr<std::map<std::string, std::string>> GatherInputStates(Session& session, const TrainInput& input,
                                                               dist::World* world) {
  std::map<std::string, std::string> entries;
  if (!input.dataset) return entries;  // every rank builds the same input (the config fingerprint)
  data::IteratorState state;
  TW_RETURN_IF_ERROR(data::SaveIterator(session, *input.dataset, &state));
  std::string mine = Base64(data::SerializeIteratorState(state));
  if (world == nullptr) {
    entries[kInputStateKey] = std::move(mine);
    return WithinBudget(std::move(entries));
  }
  TW_ASSIGN_OR_RETURN(auto all, world->AllGather(InputTag("the ranks' input positions"), mine));
  if (world->rank() != 0) return entries;
  for (size_t r = 0; r < all.size(); ++r) entries[RankKey(static_cast<int>(r))] = std::move(all[r]);
  entries[kInputRanksKey] = std::to_string(all.size());
  return WithinBudget(std::move(entries));
}

// Why `metadata` gives no position to a job of `ranks` processes over the
// files of `files`, or "".
std::string NoPositionFor(const std::map<std::string, std::string>& metadata, int ranks, const std::string& files) {
  if (auto dropped = metadata.find(kInputDroppedKey); dropped != metadata.end()) {
    return "the checkpoint holds no input position (its " + dropped->second +
           " bytes were more than a checkpoint keeps)";
  }
  if (auto saved = metadata.find(kInputFilesKey); saved != metadata.end() && saved->second != files) {
    return "the checkpoint's input positions are in other files than --data's";
  }
  const auto saved = metadata.find(kInputRanksKey);
  const int saved_ranks = saved == metadata.end() ? 1 : std::atoi(saved->second.c_str());
  if (saved == metadata.end() && metadata.find(kInputStateKey) == metadata.end()) {
    return "the checkpoint holds no input position";
  }
  if (saved_ranks != ranks) {
    return "the checkpoint's input positions are for " + std::to_string(saved_ranks) + " process" +
           (saved_ranks == 1 ? "" : "es") + ", not " + std::to_string(ranks);
  }
  return "";
}

std::string InputFilesFingerprint(const std::vector<std::string>& files) {
  std::string joined;
  for (const std::string& f : files) joined += f + "\n";
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(dist::Fingerprint64(joined.data(), joined.size())));
  return std::to_string(files.size()) + " files " + hex;
}

Status RestoreInputStates(Session& session, const TrainInput& input, dist::World* world,
                          const std::map<std::string, std::string>* metadata, const std::string& files_fingerprint,
                          bool* restored, std::string* why_not) {
  *restored = false;
  why_not->clear();
  if (!input.dataset) return Status::OK();
  if (metadata != nullptr) {
    *why_not = NoPositionFor(*metadata, world == nullptr ? 1 : world->size(), files_fingerprint);
  }
  if (world == nullptr) {
    if (metadata == nullptr || !why_not->empty()) return Status::OK();
    auto it = metadata->find(kInputStateKey);
    if (it == metadata->end()) return Status::OK();
    TW_RETURN_IF_ERROR(RestoreFrom(session, input, kInputStateKey, it->second));
    *restored = true;
    return Status::OK();
  }
  // Rank 0 sends every rank its position, all in one blob (an IteratorState
  // keyed by rank; empty when the checkpoint holds none for this many ranks).
  std::string blob;
  if (world->rank() == 0 && metadata != nullptr && why_not->empty()) {
    auto ranks = metadata->find(kInputRanksKey);
    if (ranks != metadata->end() && ranks->second == std::to_string(world->size())) {
      data::IteratorState per_rank;
      for (int r = 0; r < world->size(); ++r) {
        auto it = metadata->find(RankKey(r));
        if (it != metadata->end()) per_rank[std::to_string(r)] = it->second;
      }
      blob = data::SerializeIteratorState(per_rank);
    }
  }
  int64_t size = static_cast<int64_t>(blob.size());
  TW_RETURN_IF_ERROR(world->Broadcast(InputTag("the size of the input positions"), &size, sizeof(size), 0));
  blob.resize(static_cast<size_t>(size));
  if (size > 0) TW_RETURN_IF_ERROR(world->Broadcast(InputTag("the input positions"), blob.data(), size, 0));
  TW_ASSIGN_OR_RETURN(auto per_rank, data::ParseIteratorState(blob));
  auto mine = per_rank.find(std::to_string(world->rank()));
  if (mine == per_rank.end()) return Status::OK();
  TW_RETURN_IF_ERROR(RestoreFrom(session, input, RankKey(world->rank()), mine->second));
  *restored = true;
  return Status::OK();
}

StatusOr<std::string> ResumeInput(Session& session, const TrainInput& input, const std::vector<std::string>& files,
                                  dist::World* world, const std::map<std::string, std::string>* metadata,
                                  bool* resumed) {
  std::string why_not;
  TW_RETURN_IF_ERROR(RestoreInputStates(session, input, world, metadata, InputFilesFingerprint(files), resumed, &why_not));
  if (!input.dataset || metadata == nullptr) return std::string();
  if (*resumed) return std::string("resume: the input continues its epoch from the checkpoint's position");
  return "resume: " + (why_not.empty() ? std::string("the checkpoint holds no input position") : why_not) +
         "; the input starts afresh";
}

std::map<std::string, std::string> CheckpointMetadata(const TrainConfig& c,
                                                      std::map<std::string, std::string> input_states) {
  std::map<std::string, std::string> m = ModelMetadata(c.model);
  const std::string scope = CheckpointVariableScope(c);
  if (!scope.empty()) m["variable_scope"] = scope;
  if (!input_states.empty()) m[kInputFilesKey] = InputFilesFingerprint(c.files);
  m.merge(input_states);
  return m;
}

}  // namespace tw::cli
