#include "towerflow/cli/train_json.h"

#include "towerflow/cli/json.h"

namespace tw::cli {

std::string TrainJsonLine(const TrainResult& r, const TrainConfig& c, const EvalResult* eval) {
  const int64_t global_batch = c.batch_size * static_cast<int64_t>(r.devices.size()) * r.ranks;
  // Numbers that may be NaN (a diverged loss) are written as null: JSON has none.
  std::string out = "{\"steps\": " + std::to_string(r.steps) + ", \"global_step\": " + std::to_string(r.global_step) +
                    ", \"examples\": " + std::to_string(r.examples) + ", \"seconds\": ";
  AppendJsonNumber(r.seconds, "%.3f", &out);
  out += ", \"examples_per_sec\": ";
  AppendJsonNumber(r.examples_per_sec, "%.1f", &out);
  out += ", \"final_loss\": ";
  AppendJsonNumber(r.final_loss, "%.6f", &out);
  out += ", \"train_accuracy\": ";
  AppendJsonNumber(r.final_accuracy, "%.4f", &out);
  out += ", ";
  if (eval != nullptr) {
    out += "\"test_loss\": ";
    AppendJsonNumber(eval->loss, "%.6f", &out);
    out += ", \"test_accuracy\": ";
    AppendJsonNumber(eval->accuracy, "%.4f", &out);
    out += ", \"test_examples\": " + std::to_string(eval->examples) + ", ";
  }
  out += "\"model\": ";
  AppendJsonString(c.model.name, &out);
  out += ", \"towers\": " + std::to_string(r.devices.size()) + ", \"devices\": [";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    if (i > 0) out += ", ";
    AppendJsonString(r.devices[i], &out);
  }
  out += "], \"ranks\": " + std::to_string(r.ranks) + ", \"global_batch\": " + std::to_string(global_batch);
  if (r.ranks > 1) {
    out += ", \"allreduce_ms_per_step\": ";
    AppendJsonNumber(r.allreduce_ms_per_step, "%.3f", &out);
    out += ", \"allreduce_overlap\": ";
    AppendJsonNumber(r.allreduce_overlap, "%.3f", &out);
    out += ", \"allreduce_in_place\": ";
    AppendJsonNumber(r.allreduce_in_place, "%.3f", &out);
    out += ", \"allreduce_shared\": ";
    AppendJsonNumber(r.allreduce_shared, "%.3f", &out);
  }
  if (!r.gpus.empty()) {
    out += ", \"gpus\": [";
    for (size_t i = 0; i < r.gpus.size(); ++i) {
      if (i > 0) out += ", ";
      AppendJsonString(r.gpus[i], &out);
    }
    out += "]";
  }
  out += ", \"checkpoint\": ";
  AppendJsonString(r.checkpoint, &out);
  out += ", \"logdir\": ";
  AppendJsonString(c.logdir, &out);
  out += std::string(", \"deterministic\": ") + (c.deterministic ? "true" : "false");
  out += ", \"input\": ";
  AppendJsonString(c.input, &out);
  if (!r.input_autotune.empty()) {
    out += ", \"input_autotune\": ";
    AppendJsonString(r.input_autotune, &out);
  }
  out += std::string(", \"interrupted\": ") + (r.interrupted ? "true" : "false") + "}";
  return out;
}

}  // namespace tw::cli
