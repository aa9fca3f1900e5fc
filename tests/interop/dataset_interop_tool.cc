// The C++ side of tf_data_matches.py: input pipelines built with tw::data::Dataset,
// each written the same way with tf.data on the Python side, over the same files.
//
//   run --pipeline NAME [--compression none|gzip|zlib] [--pattern GLOB] [FILES...]
//       Builds pipeline NAME over FILES (or, with --pattern, over
//       Dataset::ListFiles(GLOB) in sorted order), iterates it with
//       Dataset::MakeIterator / Iterator::GetNext until OutOfRange and prints one
//       JSON line per element:
//         {"components": [TENSOR, ...]}
//       TENSOR is {"dtype": D, "shape": [...], "values": [...]} with D TF's dtype
//       name (float32, float64, int32, int64, uint8, bool, string), values in
//       row-major order: floats in decimal with enough digits to round-trip
//       (%.9g, %.17g for float64; NaN, Infinity and -0.0 as Python's json reads
//       them), integers as numbers, bools as true/false, strings as hex.
//
// Pipelines (the records are Examples with features image: 784 bytes, label:
// int64 and tokens: 0 to 20 bytes):
//   records          TFRecord(files)
//   interleave       TFRecord(files, {.num_parallel_reads = 2})
//   parse_single     TFRecord.Map(ParseSingleExample -> image: DecodeRaw uint8,
//                    Reshape [784], Cast float32 * (1/255); label).Batch(32)
//   batch_parse      TFRecord.Batch(50).Map(ParseExample -> DecodeRaw(image)
//                    uint8 [B, 784], label [B], {.num_parallel_calls = 2})
//   take_skip_shard  TFRecord.Skip(3).Take(40).Shard(3, 1)
//   repeat_batch     TFRecord.Take(10).Repeat(3).Batch(7).Map(ParseExample -> label)
//   range_ops        Range(0, 100, 3).Filter(x % 2 == 0).Map(x * 2).Batch(4, true)
//                    (no files read)
//   padded           TFRecord.Map(DecodeRaw(tokens) uint8 [n], label).PaddedBatch(5)
//
// Exit status: 0 at the clean end (GetNext's OutOfRange); 1 with
// "towerflow: <Code>: <message>" on stderr for any error of building or
// iterating, after the elements that came before it; 2 for bad usage.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "towerflow/towerflow.h"

namespace {

using tw::Output;
using tw::Scope;
using tw::data::Dataset;

// ---- output ----------------------------------------------------------------

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

template <typename T, typename F>
std::string JsonList(const std::vector<T>& values, F each) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += each(values[i]);
  }
  return out + "]";
}

// A float in decimal that parses back to the same value: `digits` significant
// digits (9 for float32, 17 for float64), always with a '.' or an exponent so
// that -0 stays a float, and NaN / Infinity as Python's json spells them.
std::string Decimal(double x, int digits) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, x);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// TF's dtype names (towerflow's DataTypeName says "float" and "double").
std::string TfDtypeName(tw::DataType dtype) {
  if (dtype == tw::kFloat32) return "float32";
  if (dtype == tw::kFloat64) return "float64";
  return std::string(tw::DataTypeName(dtype));
}

std::string TensorJson(const tw::Tensor& t) {
  std::string out = "{\"dtype\": \"" + TfDtypeName(t.dtype()) + "\", \"shape\": " +
                    JsonList(t.shape().dims(), [](int64_t d) { return std::to_string(d); }) + ", \"values\": ";
  auto num = [](auto x) { return std::to_string(x); };
  switch (t.dtype()) {
    case tw::kFloat32:
      return out + JsonList(t.ToVector<float>(), [](float x) { return Decimal(x, 9); }) + "}";
    case tw::kFloat64:
      return out + JsonList(t.ToVector<double>(), [](double x) { return Decimal(x, 17); }) + "}";
    case tw::kInt32: return out + JsonList(t.ToVector<int32_t>(), num) + "}";
    case tw::kInt64: return out + JsonList(t.ToVector<int64_t>(), num) + "}";
    case tw::kUInt8:
      return out + JsonList(t.ToVector<uint8_t>(), [](uint8_t x) { return std::to_string(x); }) + "}";
    case tw::kBool:
      return out + JsonList(t.ToVector<bool>(), [](bool x) { return std::string(x ? "true" : "false"); }) + "}";
    case tw::kString:
      return out + JsonList(t.ToVector<std::string>(), [](const std::string& x) { return "\"" + Hex(x) + "\""; }) +
             "}";
    default: return out + "null}";
  }
}

// ---- pipelines -------------------------------------------------------------

struct Flags {
  std::string pipeline;
  std::string compression = "none";
  std::string pattern;
  std::vector<std::string> files;
};

// The records of the input files, `parallel_reads` files at once.
Dataset Records(const Flags& flags, int64_t parallel_reads = 1) {
  const tw::data::TFRecordOptions options{.compression = flags.compression == "none" ? "" : flags.compression,
                                          .num_parallel_reads = parallel_reads};
  if (!flags.pattern.empty()) {
    return Dataset::TFRecord(Dataset::ListFiles(flags.pattern, {.shuffle = false}), options);
  }
  return Dataset::TFRecord(flags.files, options);
}

// tf's `x * (1 / 255)` multiplies by the float32 nearest to the double 1/255.
constexpr float kPixelScale = static_cast<float>(1.0 / 255.0);

const tw::io::FeatureMap& ImageLabel() {
  static const tw::io::FeatureMap kFeatures = {{"image", tw::io::FixedLenFeature(tw::kString)},
                                               {"label", tw::io::FixedLenFeature(tw::kInt64)}};
  return kFeatures;
}

// One record -> (image float32 [784] in [0, 1], label int64 []).
std::vector<Output> ParseSingle(const Scope& s, const std::vector<Output>& element) {
  tw::io::ParsedFeatures f = tw::io::ParseSingleExample(s, element[0], ImageLabel());
  Output pixels = tw::Reshape(s, tw::io::DecodeRaw(s, f["image"], tw::kUInt8), std::vector<int32_t>{784});
  Output image = tw::Mul(s, tw::Cast(s, pixels, tw::kFloat32), tw::Const(s, kPixelScale));
  Output label = f["label"];
  return {image, label};
}

// A batch of B records -> (image uint8 [B, 784], label int64 [B]).
std::vector<Output> ParseBatch(const Scope& s, const std::vector<Output>& element) {
  tw::io::ParsedFeatures f = tw::io::ParseExample(s, element[0], ImageLabel());
  Output image = tw::io::DecodeRaw(s, f["image"], tw::kUInt8);
  Output label = f["label"];
  return {image, label};
}

// A batch of records -> its labels (int64 [B]).
std::vector<Output> BatchLabels(const Scope& s, const std::vector<Output>& element) {
  tw::io::ParsedFeatures f =
      tw::io::ParseExample(s, element[0], {{"label", tw::io::FixedLenFeature(tw::kInt64)}});
  Output label = f["label"];
  return {label};
}

// One record -> (tokens uint8 [n], n = 0..20, label int64 []).
std::vector<Output> TokensLabel(const Scope& s, const std::vector<Output>& element) {
  tw::io::ParsedFeatures f = tw::io::ParseSingleExample(
      s, element[0],
      {{"tokens", tw::io::FixedLenFeature(tw::kString)}, {"label", tw::io::FixedLenFeature(tw::kInt64)}});
  Output tokens = tw::io::DecodeRaw(s, f["tokens"], tw::kUInt8);
  Output label = f["label"];
  return {tokens, label};
}

Output Int64(const Scope& s, int64_t value) { return tw::Const(s, tw::Tensor::Scalar<int64_t>(value)); }

// x % 2 == 0 for x >= 0. There is no Mod op: (x / 2) * 2 == x, Div truncating.
Output IsEven(const Scope& s, const std::vector<Output>& element) {
  const Output& x = element[0];
  return tw::Equal(s, tw::Mul(s, tw::Div(s, x, Int64(s, 2)), Int64(s, 2)), x);
}

std::vector<Output> Double(const Scope& s, const std::vector<Output>& element) {
  return {tw::Mul(s, element[0], Int64(s, 2))};
}

const std::map<std::string, std::function<Dataset(const Flags&)>>& Pipelines() {
  static const std::map<std::string, std::function<Dataset(const Flags&)>> kPipelines = {
      {"records", [](const Flags& f) { return Records(f); }},
      {"interleave", [](const Flags& f) { return Records(f, /*parallel_reads=*/2); }},
      {"parse_single", [](const Flags& f) { return Records(f).Map(ParseSingle).Batch(32); }},
      {"batch_parse",
       [](const Flags& f) {
         return Records(f).Batch(50, /*drop_remainder=*/false)
             .Map(ParseBatch, {.num_parallel_calls = 2, .deterministic = true});
       }},
      {"take_skip_shard", [](const Flags& f) { return Records(f).Skip(3).Take(40).Shard(3, 1); }},
      {"repeat_batch", [](const Flags& f) { return Records(f).Take(10).Repeat(3).Batch(7).Map(BatchLabels); }},
      {"range_ops",
       [](const Flags&) {
         return Dataset::Range(0, 100, 3).Filter(IsEven).Map(Double).Batch(4, /*drop_remainder=*/true);
       }},
      {"padded", [](const Flags& f) { return Records(f).Map(TokensLabel).PaddedBatch(5); }},
  };
  return kPipelines;
}

int Run(const Flags& flags) {
  const Dataset dataset = Pipelines().at(flags.pipeline)(flags);
  auto iterator = dataset.MakeIterator();
  if (!iterator.ok()) return tw::Fail(iterator.status());
  tw::data::Element element;
  tw::Status s;
  while ((s = (*iterator)->GetNext(&element)).ok()) {
    std::string line = "{\"components\": [";
    for (size_t i = 0; i < element.size(); ++i) line += (i ? ", " : "") + TensorJson(element[i]);
    std::printf("%s]}\n", line.c_str());
  }
  std::fflush(stdout);
  if (tw::errors::IsOutOfRange(s)) return 0;
  return tw::Fail(s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tf.data interop helper: runs a tw::data pipeline over TFRecord files, prints its elements",
               "dataset_interop_tool"};
  app.require_subcommand(1, 1);
  Flags flags;
  std::vector<std::string> names;
  for (const auto& entry : Pipelines()) names.push_back(entry.first);
  CLI::App* run = app.add_subcommand("run", "iterate a pipeline, print one JSON line per element");
  run->add_option("--pipeline", flags.pipeline, "the pipeline")->required()->check(CLI::IsMember(names));
  run->add_option("--compression", flags.compression)->check(CLI::IsMember({"none", "gzip", "zlib"}));
  run->add_option("--pattern", flags.pattern, "read the files matching a glob (ListFiles), sorted");
  run->add_option("files", flags.files, "TFRecord files");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return Run(flags);
}
