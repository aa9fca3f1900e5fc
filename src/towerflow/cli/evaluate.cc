#include "towerflow/cli/evaluate.h"

#include <chrono>

#include "towerflow/data/record_reader.h"
#include "towerflow/train/saver.h"

namespace tw::cli {
namespace {

// Sums of one evaluation pass.
struct Totals {
  int64_t examples = 0;
  double loss_sum = 0;
  double correct = 0;
};

class Evaluator {
 public:
  Evaluator(const ModelConfig& config, const EvalOptions& options) : root_(graph_) {
    serialized_ = Placeholder(root_.WithOpName("serialized"), kString, PartialShape({-1}));
    names_ = Placeholder(root_.WithOpName("names"), kString, PartialShape({-1}));
    tw::Batch batch = DecodeBatch(root_, serialized_, config, names_);
    const Scope model_scope =
        options.variable_scope.empty() ? root_ : root_.WithVariableScope(options.variable_scope);
    model_ = BuildModel(model_scope, batch, config, /*training=*/false);
    correct_ = Sum(root_.WithOpName("correct"), model_.correct, {0});
    saver_.emplace(root_);
    SessionOptions session_options{.inter_op_threads = 1,
                                   .intra_op_threads = options.intra_op_threads,
                                   .max_gpus = options.max_gpus,
                                   .visible_gpus = options.visible_gpus,
                                   .gpu_memory_limit_mb = options.gpu_memory_limit_mb,
                                   .allow_tf32 = options.allow_tf32};
    if (root_.ok()) session_ = std::make_unique<Session>(graph_, session_options);
  }

  Status Restore(const std::string& checkpoint) {
    if (!root_.ok()) return root_.status();
    return saver_->Restore(*session_, checkpoint);
  }

  // One batch of serialized Examples and their "<file>:<offset>" names.
  Status Run(std::vector<std::string>& records, std::vector<std::string>& names, Totals* totals) {
    const int64_t n = static_cast<int64_t>(records.size());
    Tensor batch(kString, TensorShape({n}));
    Tensor batch_names(kString, TensorShape({n}));
    auto flat = batch.flat<std::string>();
    auto flat_names = batch_names.flat<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      flat[static_cast<size_t>(i)].swap(records[static_cast<size_t>(i)]);
      flat_names[static_cast<size_t>(i)].swap(names[static_cast<size_t>(i)]);
    }
    auto out = session_->Run({{serialized_, batch}, {names_, batch_names}}, {model_.loss, correct_});
    if (!out.ok()) return out.status();
    totals->examples += n;
    totals->loss_sum += static_cast<double>((*out)[0].scalar<float>()) * static_cast<double>(n);
    totals->correct += static_cast<double>((*out)[1].scalar<float>());
    return Status::OK();
  }

 private:
  Graph graph_;
  Scope root_;
  Output serialized_;
  Output names_;
  ModelOutputs model_;
  Output correct_;
  std::optional<train::Saver> saver_;
  std::unique_ptr<Session> session_;
};

}  // namespace

StatusOr<EvalResult> Evaluate(const std::vector<std::string>& files, const ModelConfig& config,
                              const std::string& checkpoint, const EvalOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Evaluator evaluator(config, options);
  if (Status s = evaluator.Restore(checkpoint); !s.ok()) return s;
  Totals totals;
  std::vector<std::string> records, names;
  for (const std::string& file : files) {
    // One open per file, its compression detected from the bytes read first:
    // a pipe or FIFO evaluates as a stream.
    auto reader = RecordReader::Open(
        file, {.detect_compression = true, .skip_corrupt = options.skip_corrupt, .inflate_ahead = true});
    if (!reader.ok()) return reader.status();
    for (;;) {
      std::string record;
      Status s = (*reader)->ReadRecord(&record);
      if (s.code() == Code::kOutOfRange) break;
      if (!s.ok()) return s;
      // The reader's key, as training's: where the record starts.
      names.push_back(StrCat(file, ":", (*reader)->offset() - kRecordHeaderSize - record.size() - kRecordFooterSize));
      records.push_back(std::move(record));
      if (static_cast<int64_t>(records.size()) == options.batch_size) {
        if (Status r = evaluator.Run(records, names, &totals); !r.ok()) return r;
        records.clear();
        names.clear();
      }
    }
  }
  if (!records.empty()) {
    if (Status r = evaluator.Run(records, names, &totals); !r.ok()) return r;
  }
  if (totals.examples == 0) return errors::OutOfRange("no records to evaluate in ", files.size(), " file(s)");
  EvalResult result;
  result.examples = totals.examples;
  result.loss = totals.loss_sum / static_cast<double>(totals.examples);
  result.accuracy = totals.correct / static_cast<double>(totals.examples);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tw::cli
