// The C++ side of the safetensors interop test (tests/interop/
// safetensors_interop.py runs it next to Hugging Face's safetensors). Commands:
//
//   write --out FILE
//       Writes one tensor of each dtype with known, awkward values (NaN payloads,
//       -0, infinities, denormals, integer extremes), a scalar, zero-size tensors
//       and a non-ASCII name, plus metadata, through tw::train::WriteSafetensors.
//       The python side holds the same values (EXPECTED there).
//
//   read FILE
//       Reads FILE with tw::train::ReadSafetensors and prints JSON lines: first
//       {"metadata": {KEY: VALUE, ...}}, then one {"name": N, "dtype": "F32",
//       "shape": [...], "values": [...]} per tensor in file order, floats as their
//       IEEE bit patterns (uint32 / uint64), bools as 0 / 1.
//
//   copy IN OUT
//       Reads IN and writes its tensors, in file order, and metadata to OUT.
//
// Exit status 0 on success; 1 with "towerflow: <Code>: <message>" on stderr for
// any error (DataLoss for corrupt files); 2 for bad usage.
#include <CLI/CLI.hpp>
#include <bit>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "towerflow/towerflow.h"
#include "towerflow/train/safetensors.h"

namespace {

using tw::Tensor;
using tw::TensorShape;

// ---- write -----------------------------------------------------------------

Tensor FloatBits(const std::vector<uint32_t>& bits, const TensorShape& shape) {
  std::vector<float> values;
  for (uint32_t b : bits) values.push_back(std::bit_cast<float>(b));
  return Tensor::FromVector<float>(values, shape);
}

Tensor DoubleBits(const std::vector<uint64_t>& bits, const TensorShape& shape) {
  std::vector<double> values;
  for (uint64_t b : bits) values.push_back(std::bit_cast<double>(b));
  return Tensor::FromVector<double>(values, shape);
}

int Write(const std::string& out) {
  using I32 = std::numeric_limits<int32_t>;
  using I64 = std::numeric_limits<int64_t>;
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"f32", FloatBits({0x3F800000, 0x80000000, 0x7FC12345, 0xFF800000, 0x00000001, 0x7F7FFFFF},
                        TensorShape{2, 3})},
      {"f64",
       DoubleBits({0x7FF8000000000ABCull, 0x8000000000000000ull, 0x0000000000000001ull}, TensorShape{3})},
      {"i32", Tensor::Vec<int32_t>({I32::min(), -1, 0, I32::max()})},
      {"i64", Tensor::FromVector<int64_t>({I64::min(), int64_t{1} << 40, I64::max(), -3}, TensorShape{2, 2})},
      {"u8", Tensor::Vec<uint8_t>({0, 1, 127, 128, 255})},
      {"bool", Tensor::FromVector<bool>({true, false, false, true}, TensorShape{2, 2})},
      {"scalar_f32", Tensor::Scalar(3.5f)},
      {"scalar_i64", Tensor::Scalar<int64_t>(-42)},
      {"empty_f32", Tensor(tw::kFloat32, TensorShape{0, 4})},
      {"empty_bool", Tensor(tw::kBool, TensorShape{0})},
      {"unicode \xe2\x9c\x93/name", Tensor::Vec<uint8_t>({7})},
  };
  const std::map<std::string, std::string> metadata = {{"format", "towerflow"},
                                                       {"global_step", "12"},
                                                       {"note",
                                                        "\xc3\xbc"
                                                        "n"
                                                        "\xc3\xaf"
                                                        "code \xe2\x9c\x93 \"quoted\""}};
  return tw::Fail(tw::train::WriteSafetensors(out, tensors, metadata));
}

// ---- read ------------------------------------------------------------------

void AppendQuoted(std::string_view s, std::string* out) {
  *out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      *out += buf;
    } else {
      *out += c;
    }
  }
  *out += '"';
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

std::string Values(const Tensor& t) {
  auto num = [](auto x) { return std::to_string(x); };
  switch (t.dtype()) {
    case tw::kFloat32:
      return JsonList(t.ToVector<float>(),
                      [](float x) { return std::to_string(std::bit_cast<uint32_t>(x)); });
    case tw::kFloat64:
      return JsonList(t.ToVector<double>(),
                      [](double x) { return std::to_string(std::bit_cast<uint64_t>(x)); });
    case tw::kInt32:
      return JsonList(t.ToVector<int32_t>(), num);
    case tw::kInt64:
      return JsonList(t.ToVector<int64_t>(), num);
    case tw::kUInt8:
      return JsonList(t.ToVector<uint8_t>(), [](uint8_t x) { return std::to_string(x); });
    case tw::kBool:
      return JsonList(t.ToVector<bool>(), [](bool x) { return std::string(x ? "1" : "0"); });
    default:
      return "null";
  }
}

std::string SafetensorsDtype(tw::DataType dtype) {
  switch (dtype) {
    case tw::kFloat32:
      return "F32";
    case tw::kFloat64:
      return "F64";
    case tw::kInt32:
      return "I32";
    case tw::kInt64:
      return "I64";
    case tw::kUInt8:
      return "U8";
    case tw::kBool:
      return "BOOL";
    default:
      return "?";
  }
}

int Read(const std::string& path) {
  auto file = tw::train::ReadSafetensors(path);
  if (!file.ok()) return tw::Fail(file.status());
  std::string line = "{\"metadata\": {";
  bool first = true;
  for (const auto& [key, value] : file->metadata) {
    if (!first) line += ", ";
    first = false;
    AppendQuoted(key, &line);
    line += ": ";
    AppendQuoted(value, &line);
  }
  std::printf("%s}}\n", line.c_str());
  for (const auto& [name, t] : file->tensors) {
    line = "{\"name\": ";
    AppendQuoted(name, &line);
    line += ", \"dtype\": \"" + SafetensorsDtype(t.dtype()) +
            "\", \"shape\": " + JsonList(t.shape().dims(), [](int64_t d) { return std::to_string(d); }) +
            ", \"values\": " + Values(t) + "}";
    std::printf("%s\n", line.c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int Copy(const std::string& in, const std::string& out) {
  auto file = tw::train::ReadSafetensors(in);
  if (!file.ok()) return tw::Fail(file.status());
  return tw::Fail(tw::train::WriteSafetensors(out, file->tensors, file->metadata));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"safetensors interop helper: writes, reads and copies checkpoint files",
               "checkpoint_interop_tool"};
  app.require_subcommand(1, 1);
  std::string out, in, copy_in, copy_out;
  CLI::App* write = app.add_subcommand("write", "write one tensor of each dtype with known values");
  write->add_option("--out", out, "the safetensors file")->required();
  CLI::App* read = app.add_subcommand("read", "print a file's metadata and tensors as JSON lines");
  read->add_option("file", in, "a safetensors file")->required();
  CLI::App* copy = app.add_subcommand("copy", "read IN and write its contents to OUT");
  copy->add_option("in", copy_in)->required();
  copy->add_option("out", copy_out)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (write->parsed()) return Write(out);
  if (read->parsed()) return Read(in);
  return Copy(copy_in, copy_out);
}
