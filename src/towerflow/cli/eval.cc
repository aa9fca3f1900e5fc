// `towerflow eval --checkpoint DIR|FILE --data GLOB [--model M] [--batch-size N]`:
// evaluates a checkpoint written by `towerflow train` on TFRecord files
// (evaluate.h) and prints loss and accuracy; the last line of stdout is one
// JSON object: examples, loss, accuracy, seconds, model, checkpoint, global_step.
// DIR means the newest checkpoint there that validates. The model is rebuilt
// from the checkpoint's metadata; --model, when given, must agree with it.
// Usage errors exit with 2, failures (a corrupt checkpoint or record) with 1;
// so does a checkpoint whose loss is not finite (weights that diverged): its
// result is printed all the same (the loss as null), and a line on stderr
// says so, so that a script that goes on from a good evaluation stops.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "towerflow/cli/commands.h"
#include "towerflow/cli/flags.h"
#include "towerflow/cli/evaluate.h"
#include "towerflow/cli/json.h"
#include "towerflow/train/checkpoint_manager.h"
#include "towerflow/train/safetensors.h"

namespace tw::cli {
namespace {

struct Checkpoint {
  std::string path;
  std::map<std::string, std::string> metadata;
};

// A file, or the newest checkpoint of a directory that validates (its CRCs,
// its global step, finite weights: CheckpointManager::ReadLatest). A file
// named alone is checked for its CRCs and its global step, and evaluated even
// when its weights are not finite (the loss then prints as null, exit 1).
StatusOr<Checkpoint> FindCheckpoint(const std::string& where) {
  std::error_code ec;
  if (std::filesystem::is_directory(where, ec)) {
    train::CheckpointManager manager(where);
    if (manager.Checkpoints().empty()) {
      return errors::NotFound("--checkpoint ", where, ": no checkpoints in this directory");
    }
    auto latest = manager.ReadLatest();
    if (!latest.ok()) return latest.status();
    for (const Status& rejected : latest->rejected) {
      std::fprintf(stderr, "towerflow eval: skipping %s\n", rejected.ToString().c_str());
    }
    return Checkpoint{latest->path, latest->file.metadata};
  }
  auto file = train::ReadSafetensors(where);
  if (!file.ok()) return file.status();
  const std::string name = std::filesystem::path(where).filename().string();
  TW_RETURN_IF_ERROR(train::CheckGlobalStep(where, *file, train::CheckpointManager(".").StepOf(name)));
  return Checkpoint{where, file->metadata};
}

}  // namespace

int UsageError(const std::string& flag, const Status& status) {
  std::fprintf(stderr, "towerflow eval: %s: %s\n", flag.c_str(), status.message().c_str());
  return 2;
}

int RunEval(int argc, char** argv) {
  CLI::App app{"Evaluate a checkpoint on TFRecord files", "towerflow eval"};
  std::string checkpoint, data, model, hidden;
  int64_t batch_size = 1000;
  bool skip_corrupt = false;
  int intra_op_threads = 0;
  app.add_option("--checkpoint", checkpoint, "a checkpoint file, or a logdir (its newest valid checkpoint)")
      ->required()
      ->check(NonEmptyText());
  app.add_option("--data", data, "TFRecord files to evaluate on (a glob)")->required()->check(NonEmptyText());
  app.add_option("--model", model, "mlp | cnn | seed: must match the checkpoint")
      ->check(CLI::IsMember({"mlp", "cnn", "seed"}));
  app.add_option("--batch-size", batch_size, "examples per evaluation step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_flag("--skip-corrupt-records", skip_corrupt, "skip records with bad CRCs (counted, logged)");
  app.add_option("--intra-op-threads", intra_op_threads, "threads for MatMul/Conv2D (0: all)")->check(CLI::Range(0, 1024));
  OneLineErrors(app, "eval");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  auto found = FindCheckpoint(checkpoint);
  // A path that holds no checkpoint (missing, a device, a FIFO) is bad usage;
  // a checkpoint that is corrupt is a failure (DataLoss, exit 1).
  if (errors::IsInvalidArgument(found.status()) || errors::IsNotFound(found.status())) {
    return UsageError("--checkpoint", found.status());
  }
  if (!found.ok()) return Fail(found.status());
  auto config = ModelFromMetadata(found->metadata);
  if (!config.ok()) return Fail(errors::DataLoss(found->path, ": ", config.status().message()));
  if (!model.empty() && model != config->name) {
    std::fprintf(stderr, "towerflow eval: --model %s, but %s holds a %s model\n", model.c_str(), found->path.c_str(),
                 config->name.c_str());
    return 2;
  }
  const std::vector<std::string> files = io::Glob(data);
  if (files.empty()) {
    std::fprintf(stderr, "towerflow eval: --data %s: no files match\n", data.c_str());
    return 2;
  }
  // Files, pipes and FIFOs are read (once, as streams); a directory is bad usage.
  for (const std::string& f : files) {
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      std::fprintf(stderr, "towerflow eval: --data %s is a directory, not a TFRecord file\n", f.c_str());
      return 2;
    }
  }
  // A checkpoint of mirrored variables (train --variables mirrored) names
  // tower 0's copies: the model is rebuilt in that variable scope.
  const auto scope = found->metadata.find("variable_scope");
  auto result = Evaluate(files, *config, found->path,
                         {.batch_size = batch_size,
                          .skip_corrupt = skip_corrupt,
                          .intra_op_threads = intra_op_threads,
                          .variable_scope = scope != found->metadata.end() ? scope->second : ""});
  if (!result.ok()) return Fail(result.status());
  const auto step = found->metadata.find("global_step");
  std::printf("%lld examples: loss %.4f, accuracy %.4f (%.2f s)\n", static_cast<long long>(result->examples),
              result->loss, result->accuracy, result->seconds);
  // The loss of a checkpoint that diverged is NaN, written as null: JSON has none.
  std::string json = "{\"examples\": " + std::to_string(result->examples) + ", \"loss\": ";
  AppendJsonNumber(result->loss, "%.6f", &json);
  json += ", \"accuracy\": ";
  AppendJsonNumber(result->accuracy, "%.4f", &json);
  json += ", \"seconds\": ";
  AppendJsonNumber(result->seconds, "%.3f", &json);
  json += ", ";
  json += "\"model\": ";
  AppendJsonString(config->name, &json);
  json += ", \"checkpoint\": ";
  AppendJsonString(found->path, &json);
  const bool numeric = step != found->metadata.end() && !step->second.empty() &&
                       step->second.find_first_not_of("0123456789") == std::string::npos;
  json += ", \"global_step\": " + (numeric ? step->second : std::string("null")) + "}";
  std::printf("%s\n", json.c_str());
  if (!std::isfinite(result->loss)) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "towerflow eval: the loss is %s: the weights of %s give no finite loss on these records "
                 "(a training that diverged; a logdir's newest finite checkpoint is what --checkpoint DIR takes)\n",
                 std::isnan(result->loss) ? "NaN" : "infinite", found->path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tw::cli
