// Dataset and Iterator (data/dataset.h): the public values over the
// implementation chain, and the pipeline plumbing every iterator shares.
#include "towerflow/data/dataset.h"

#include <charconv>
#include <cstring>
#include <thread>

#include "towerflow/data/dataset/dataset_base.h"
#include "towerflow/data/dataset/element_util.h"

namespace tw::data {

// ---- PipelineContext

int PipelineContext::AddWaker(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(mu);
  wakers[next_waker] = std::move(wake);
  return next_waker++;
}

void PipelineContext::RemoveWaker(int id) {
  std::lock_guard<std::mutex> wake_lock(wake_mu);
  std::lock_guard<std::mutex> lock(mu);
  wakers.erase(id);
}

void PipelineContext::Cancel() {
  cancelled.store(true);
  std::lock_guard<std::mutex> wake_lock(wake_mu);
  std::map<int, std::function<void()>> wake;
  {
    std::lock_guard<std::mutex> lock(mu);
    wake = wakers;
  }
  for (auto& [id, fn] : wake) fn();
}

void PipelineContext::SetTuned(const std::string& stage, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu);
  tuned[stage] = value;
}

void PipelineContext::SetGauge(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mu);
  gauges[name] = value;
}

int PipelineCores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// ---- state

void StateWriter::WriteInt(const std::string& key, int64_t value) {
  (*state_)[prefix_ + ":" + key] = std::to_string(value);
}
void StateWriter::WriteString(const std::string& key, const std::string& value) {
  (*state_)[prefix_ + ":" + key] = value;
}
void StateWriter::WriteElement(const std::string& key, const Element& element) {
  std::string bytes;
  EncodeElement(element, &bytes);
  (*state_)[prefix_ + ":" + key] = std::move(bytes);
}

bool StateReader::Contains(const std::string& key) const { return state_->count(prefix_ + ":" + key) > 0; }

Status StateReader::ReadString(const std::string& key, std::string* value) const {
  auto it = state_->find(prefix_ + ":" + key);
  if (it == state_->end()) return errors::NotFound("iterator state has no '", prefix_, ":", key, "'");
  *value = it->second;
  return Status::OK();
}

Status StateReader::ReadInt(const std::string& key, int64_t* value) const {
  std::string s;
  TW_RETURN_IF_ERROR(ReadString(key, &s));
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return errors::DataLoss("iterator state '", prefix_, ":", key, "' is not an integer: '", s, "'");
  }
  return Status::OK();
}

Status StateReader::ReadElement(const std::string& key, Element* element) const {
  std::string s;
  TW_RETURN_IF_ERROR(ReadString(key, &s));
  auto e = DecodeElement(s);
  if (!e.ok()) return errors::DataLoss("iterator state '", prefix_, ":", key, "': ", e.status().message());
  *element = std::move(e).value();
  return Status::OK();
}

Status SaveInput(const IteratorBase& input, StateWriter& writer) {
  StateWriter child = writer.Child(input.name());
  return input.Save(child);
}

Status RestoreInput(IteratorBase& input, const StateReader& reader) {
  return input.Restore(reader.Child(input.name()));
}

Status IteratorBase::Save(StateWriter&) const {
  return errors::Unimplemented(name(), " iterators cannot be saved in a checkpoint");
}
Status IteratorBase::Restore(const StateReader&) {
  return errors::Unimplemented(name(), " iterators cannot be restored from a checkpoint");
}

// ---- Dataset

Dataset::Dataset() : status_(errors::FailedPrecondition("an empty Dataset (default-constructed)")) {}

Dataset::Dataset(std::shared_ptr<const DatasetBase> impl) : impl_(std::move(impl)) {}

Dataset Dataset::FromError(Status status) {
  Dataset d;
  d.status_ = std::move(status);
  return d;
}

namespace {
Dataset Wrap(StatusOr<std::shared_ptr<const DatasetBase>> made, const char* what) {
  if (!made.ok()) return Dataset::FromError(made.status().WithContext(what));
  return Dataset(std::move(made).value());
}
}  // namespace

const ElementSpec& Dataset::element_spec() const {
  TW_CHECK(ok()) << "element_spec() of a dataset with an error: " << status_.ToString();
  return impl_->spec();
}

int64_t Dataset::Cardinality() const { return ok() ? impl_->Cardinality() : kUnknownCardinality; }

std::string Dataset::DebugString() const { return ok() ? impl_->DebugString() : "<error: " + status_.ToString() + ">"; }

Dataset Dataset::TFRecord(std::vector<std::string> files, const TFRecordOptions& options) {
  if (files.size() > 1 && options.num_parallel_reads != 1) {
    std::vector<std::string> names = files;
    Tensor list(kString, TensorShape{static_cast<int64_t>(names.size())});
    for (size_t i = 0; i < names.size(); ++i) list.flat<std::string>()[i] = names[i];
    return TFRecord(FromTensorSlices({list}), options);
  }
  return Wrap(MakeTFRecordDataset(std::move(files), options), "TFRecord");
}

Dataset Dataset::TFRecord(const Dataset& filenames, const TFRecordOptions& options) {
  if (!filenames.ok()) return filenames;
  const ElementSpec& spec = filenames.element_spec();
  if (spec.size() != 1 || spec.dtypes[0] != kString ||
      !(spec.shapes[0].known_rank() ? spec.shapes[0].rank() == 0 : true)) {
    return FromError(errors::InvalidArgument("TFRecord: file names must be string scalars, got ",
                                             spec.DebugString()));
  }
  TFRecordOptions one = options;
  one.num_parallel_reads = 1;
  DatasetFn open = [one](const Element& e) -> StatusOr<Dataset> {
    Dataset d = Dataset::TFRecord(std::vector<std::string>{e[0].scalar<std::string>()}, one);
    if (!d.ok()) return d.status();
    return d;
  };
  int64_t parallel = options.num_parallel_reads;
  if (parallel == kAutotune) parallel = PipelineCores();
  ElementSpec records{{kString}, {PartialShape(TensorShape{})}};
  if (options.keys) records = ElementSpec{{kString, kString}, {TensorShape{}, TensorShape{}}};
  if (parallel <= 1) {
    return Wrap(MakeInterleaveDataset(filenames.impl(), open, {.cycle_length = 1}, "TFRecord", &records),
                "TFRecord");
  }
  return Wrap(MakeInterleaveDataset(filenames.impl(), open,
                                    {.cycle_length = parallel, .block_length = 1, .num_parallel_calls = parallel},
                                    "TFRecord", &records),
              "TFRecord");
}

Dataset Dataset::FromTensors(Element components) {
  return Wrap(MakeTensorsDataset(std::move(components), /*slices=*/false), "FromTensors");
}
Dataset Dataset::FromTensorSlices(Element components) {
  return Wrap(MakeTensorsDataset(std::move(components), /*slices=*/true), "FromTensorSlices");
}
Dataset Dataset::Range(int64_t stop) { return Range(0, stop, 1); }
Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  return Wrap(MakeRangeDataset(start, stop, step), "Range");
}
Dataset Dataset::ListFiles(const std::string& pattern, const ListFilesOptions& options) {
  return Wrap(MakeListFilesDataset(pattern, options), "ListFiles");
}

// PrefetchToDevice must come last: the device it names is read from the
// outermost dataset (iterator_ops.cc).
#define TW_DATASET_CHAIN(WHAT, CALL)                                                                    \
  if (!ok()) return *this;                                                                          \
  if (!PrefetchDevice(*impl_).empty()) {                                                            \
    return FromError(errors::InvalidArgument(WHAT, ": PrefetchToDevice must be the last transformation")); \
  }                                                                                                 \
  return Wrap(CALL, WHAT)

Dataset Dataset::Map(const MapFn& fn, const MapOptions& options) const {
  TW_DATASET_CHAIN("Map", MakeMapDataset(impl_, fn, options));
}
Dataset Dataset::Filter(const PredicateFn& predicate) const {
  TW_DATASET_CHAIN("Filter", MakeFilterDataset(impl_, predicate));
}
Dataset Dataset::FlatMap(const DatasetFn& fn) const {
  TW_DATASET_CHAIN("FlatMap", MakeInterleaveDataset(impl_, fn, {.cycle_length = 1}, "FlatMap"));
}
Dataset Dataset::Interleave(const DatasetFn& fn, const InterleaveOptions& options) const {
  TW_DATASET_CHAIN("Interleave", MakeInterleaveDataset(impl_, fn, options, "Interleave"));
}
Dataset Dataset::Shuffle(int64_t buffer_size, const ShuffleOptions& options) const {
  TW_DATASET_CHAIN("Shuffle", MakeShuffleDataset(impl_, buffer_size, options));
}
Dataset Dataset::Repeat(int64_t count) const { TW_DATASET_CHAIN("Repeat", MakeRepeatDataset(impl_, count)); }
Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  TW_DATASET_CHAIN("Batch", MakeBatchDataset(impl_, batch_size, drop_remainder));
}
Dataset Dataset::PaddedBatch(int64_t batch_size, const PaddedBatchOptions& options) const {
  TW_DATASET_CHAIN("PaddedBatch", MakePaddedBatchDataset(impl_, batch_size, options));
}
Dataset Dataset::Unbatch() const { TW_DATASET_CHAIN("Unbatch", MakeUnbatchDataset(impl_)); }
Dataset Dataset::Take(int64_t count) const { TW_DATASET_CHAIN("Take", MakeTakeDataset(impl_, count)); }
Dataset Dataset::Skip(int64_t count) const { TW_DATASET_CHAIN("Skip", MakeSkipDataset(impl_, count)); }
Dataset Dataset::IgnoreErrors() const { TW_DATASET_CHAIN("IgnoreErrors", MakeIgnoreErrorsDataset(impl_)); }
Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  TW_DATASET_CHAIN("Shard", MakeShardDataset(impl_, num_shards, index));
}
Dataset Dataset::AutoShard(int64_t num_shards, int64_t index) const {
  TW_DATASET_CHAIN("AutoShard", MakeAutoShardDataset(impl_, num_shards, index));
}
Dataset Dataset::Cache(const std::string& filename) const {
  TW_DATASET_CHAIN("Cache", MakeCacheDataset(impl_, filename));
}
Dataset Dataset::Prefetch(int64_t buffer_size) const {
  TW_DATASET_CHAIN("Prefetch", MakePrefetchDataset(impl_, buffer_size));
}
Dataset Dataset::PrefetchToDevice(const std::string& device, int64_t buffer_size) const {
  TW_DATASET_CHAIN("PrefetchToDevice", MakePrefetchToDeviceDataset(impl_, device, buffer_size));
}
#undef TW_DATASET_CHAIN

StatusOr<std::unique_ptr<Iterator>> Dataset::MakeIterator() const {
  if (!ok()) return status_;
  auto ctx = std::make_shared<PipelineContext>();
  TW_ASSIGN_OR_RETURN(auto it, impl_->MakeIterator(ctx));
  return std::make_unique<Iterator>(ctx, std::move(it), impl_->spec());
}

// ---- Iterator

Iterator::Iterator(std::shared_ptr<PipelineContext> context, std::unique_ptr<IteratorBase> impl, ElementSpec spec)
    : context_(std::move(context)), impl_(std::move(impl)), spec_(std::move(spec)) {}

Iterator::~Iterator() {
  // Wake every thread of the pipeline, then destroy the chain (which joins them).
  context_->Cancel();
  impl_.reset();
}

Status Iterator::GetNext(Element* element) {
  if (!spent_.ok()) return spent_;
  // Pipelines without threads of their own see the cancellation here.
  if (context_->cancelled.load()) return errors::Cancelled("the iterator was cancelled (its session was closed)");
  if (ended_) return errors::OutOfRange("End of sequence");
  bool end = false;
  Status s = impl_->GetNext(element, &end);
  if (!s.ok()) {
    // An element's error is that element's: the next call goes on with the
    // next one (tf.data's rule). A closed pipeline stays closed.
    if (errors::IsCancelled(s)) spent_ = s;
    return s;
  }
  if (end) {
    ended_ = true;
    return errors::OutOfRange("End of sequence");
  }
  return Status::OK();
}

Status Iterator::Save(IteratorState* state) const {
  state->clear();
  StateWriter w(state, "");
  w.WriteInt("ended", ended_ ? 1 : 0);
  return SaveInput(*impl_, w);
}

Status Iterator::Restore(const IteratorState& state) {
  StateReader r(&state, "");
  int64_t ended = 0;
  TW_RETURN_IF_ERROR(r.ReadInt("ended", &ended));
  ended_ = ended != 0;
  return RestoreInput(*impl_, r);
}

void Iterator::Cancel() { context_->Cancel(); }

std::map<std::string, double> Iterator::Gauges() const {
  std::lock_guard<std::mutex> lock(context_->mu);
  return context_->gauges;
}

std::string SerializeIteratorState(const IteratorState& state) {
  std::string out;
  auto put = [&out](std::string_view s) {
    const uint64_t n = s.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(s);
  };
  for (const auto& [key, value] : state) {
    put(key);
    put(value);
  }
  return out;
}

StatusOr<IteratorState> ParseIteratorState(std::string_view bytes) {
  IteratorState state;
  size_t at = 0;
  auto get = [&](std::string* s) {
    uint64_t n = 0;
    if (bytes.size() - at < sizeof(n)) return false;
    std::memcpy(&n, bytes.data() + at, sizeof(n));
    at += sizeof(n);
    if (bytes.size() - at < n) return false;
    s->assign(bytes.substr(at, n));
    at += n;
    return true;
  };
  while (at < bytes.size()) {
    const size_t start = at;
    std::string key, value;
    if (!get(&key) || !get(&value)) {
      return errors::DataLoss("iterator state: truncated entry at byte ", start, " of ", bytes.size());
    }
    state[std::move(key)] = std::move(value);
  }
  return state;
}

std::string Iterator::AutotuneSummary() const {
  std::lock_guard<std::mutex> lock(context_->mu);
  std::string s;
  for (const auto& [stage, value] : context_->tuned) s += (s.empty() ? "" : ", ") + stage + ": " + value;
  return s;
}

}  // namespace tw::data
