// `towerflow eval --checkpoint DIR|FILE --data GLOB [--model M] [--batch-size N]`:
// evaluates a checkpoint written by `towerflow train` on TFRecord files
// (evaluate.h) and prints loss and accuracy; the last line of stdout is one
// JSON object: examples, loss, accuracy, seconds, model, checkpoint, global_step.
// DIR means the newest checkpoint there that validates. The model is rebuilt
// from the checkpoint's metadata; --model, when given, must agree with it.
// Usage errors exit with 2, failures (a corrupt checkpoint or record) with 1.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "towerflow/cli/commands.h"
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

// A file, or the newest checkpoint of a directory whose file reads back whole.
StatusOr<Checkpoint> FindCheckpoint(const std::string& where) {
  std::error_code ec;
  std::vector<std::string> candidates;
  if (std::filesystem::is_directory(where, ec)) {
    candidates = train::CheckpointManager(where).Checkpoints();
    if (candidates.empty()) return errors::NotFound("--checkpoint ", where, ": no checkpoints in this directory");
  } else {
    candidates = {where};
  }
  Status last;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    auto file = train::ReadSafetensors(*it);
    if (file.ok()) return Checkpoint{*it, file->metadata};
    last = file.status();
    if (candidates.size() > 1) std::fprintf(stderr, "towerflow eval: skipping %s\n", last.ToString().c_str());
  }
  return last;
}

}  // namespace

int RunEval(int argc, char** argv) {
  CLI::App app{"Evaluate a checkpoint on TFRecord files", "towerflow eval"};
  std::string checkpoint, data, model, hidden;
  int64_t batch_size = 1000;
  bool skip_corrupt = false;
  int intra_op_threads = 0;
  app.add_option("--checkpoint", checkpoint, "a checkpoint file, or a logdir (its newest valid checkpoint)")
      ->required();
  app.add_option("--data", data, "TFRecord files to evaluate on (a glob)")->required();
  app.add_option("--model", model, "mlp | cnn | seed: must match the checkpoint")
      ->check(CLI::IsMember({"mlp", "cnn", "seed"}));
  app.add_option("--batch-size", batch_size, "examples per evaluation step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_flag("--skip-corrupt-records", skip_corrupt, "skip records with bad CRCs (counted, logged)");
  app.add_option("--intra-op-threads", intra_op_threads, "threads for MatMul/Conv2D (0: all)")->check(CLI::Range(0, 1024));
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("towerflow eval: ") + e.what() + " (see --help)\n";  // one line
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  auto found = FindCheckpoint(checkpoint);
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
  std::string json;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "{\"examples\": %lld, \"loss\": %.6f, \"accuracy\": %.4f, \"seconds\": %.3f, ",
                static_cast<long long>(result->examples), result->loss, result->accuracy, result->seconds);
  json = buf;
  json += "\"model\": ";
  AppendJsonString(config->name, &json);
  json += ", \"checkpoint\": ";
  AppendJsonString(found->path, &json);
  const bool numeric = step != found->metadata.end() && !step->second.empty() &&
                       step->second.find_first_not_of("0123456789") == std::string::npos;
  json += ", \"global_step\": " + (numeric ? step->second : std::string("null")) + "}";
  std::printf("%s\n", json.c_str());
  return 0;
}

}  // namespace tw::cli
