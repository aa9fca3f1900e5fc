// The C++ side of the TFRecord interop tests (tests/interop/*.py run it next
// to TensorFlow). Two commands:
//
//   write --out FILE [--compression none|gzip] [--records N]
//       Writes N tf.train.Examples (libprotobuf messages, RecordWriter framing)
//       holding every list kind and awkward values: float lists with -0, NaN
//       payloads, infinities, denormals; int64 extremes; bytes with NULs and
//       0xff; lists of varying length (VarLen), empty lists, a feature present
//       in only some records, and raw int32/float32/uint8 bytes for decode_raw.
//       FILE.jsonl gets one JSON object per record with exactly what was written:
//       {"key": {"kind": "float", "bits": [uint32...]}, ... "int64" "values",
//       "bytes" "hex"}.
//
//   read [--compression none|gzip] [--batch-size B] --fixed KEY=DTYPE[:D0xD1..]
//        --var KEY=DTYPE --decode KEY=DTYPE ... FILES...
//       Reads FILES (one epoch, in order) through towerflow's graph ops:
//       StringInputProducer -> TFRecordReader -> ParseSingleExample -> DecodeRaw
//       (B = 0, the default), or -> Batch of B serialized records -> ParseExample
//       -> DecodeRaw (B > 0, smaller final batch kept). --fixed is a
//       FixedLenFeature (DTYPE int64|float|string, shape dims joined by 'x',
//       scalar when absent), --var a VarLenFeature, --decode applies DecodeRaw
//       (int32|int64|float32|float64|uint8) to a --fixed string feature.
//       Prints one JSON object per record (B = 0) or per batch:
//       {"key": K (single only), "features": {KEY: TENSOR, KEY: {"indices":
//       TENSOR, "values": TENSOR, "dense_shape": TENSOR}, "KEY:decoded": TENSOR}}
//       with TENSOR {"dtype": ..., "shape": [...], "values": [...]}: floats as
//       their IEEE bit patterns (uint32 / uint64), integers as numbers, strings
//       as hex. Exit status 0 at the clean end of the data; 1 with
//       "towerflow: <Code>: <message>" on stderr for any error (DataLoss for
//       corrupt files); 2 for bad usage.
#include <CLI/CLI.hpp>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "example.pb.h"
#include "towerflow/towerflow.h"

namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

void AppendQuoted(std::string_view s, std::string* out) {
  *out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') *out += '\\';
    *out += c;
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

// ---- write -----------------------------------------------------------------

std::string Bytes(const void* data, size_t n) { return std::string(static_cast<const char*>(data), n); }

// Floats a parser or a JSON printer could get wrong.
float Special(int64_t k) {
  static const uint32_t kBits[] = {
      0x00000000u,  // 0
      0x80000000u,  // -0
      0x3f800000u,  // 1
      0x00800000u,  // FLT_MIN
      0x00000001u,  // the smallest denormal
      0x7f7fffffu,  // FLT_MAX
      0xff800000u,  // -inf
      0x7f800000u,  // inf
      0x7fc12345u,  // a quiet NaN with a payload
      0xffc00001u,  // a negative quiet NaN with a payload
      0x40490fdbu,  // pi
      0x3dcccccdu,  // 0.1
  };
  return std::bit_cast<float>(kBits[static_cast<size_t>(k) % std::size(kBits)]);
}

struct Written {
  tensorflow::Example example;
  std::string json;  // the FILE.jsonl line
};

// Record i of `write`: see the file comment.
Written MakeRecord(int64_t i) {
  Written w;
  auto& features = *w.example.mutable_features()->mutable_feature();
  std::vector<std::string> json;
  auto floats = [&](const std::string& key, const std::vector<float>& v) {
    auto* list = features[key].mutable_float_list();
    for (float x : v) list->add_value(x);
    std::string line;
    AppendQuoted(key, &line);
    json.push_back(line + ": {\"kind\": \"float\", \"bits\": " +
                   JsonList(v, [](float x) { return std::to_string(std::bit_cast<uint32_t>(x)); }) + "}");
  };
  auto int64s = [&](const std::string& key, const std::vector<int64_t>& v) {
    auto* list = features[key].mutable_int64_list();
    for (int64_t x : v) list->add_value(x);
    std::string line;
    AppendQuoted(key, &line);
    json.push_back(line + ": {\"kind\": \"int64\", \"values\": " +
                   JsonList(v, [](int64_t x) { return std::to_string(x); }) + "}");
  };
  auto bytes = [&](const std::string& key, const std::vector<std::string>& v) {
    auto* list = features[key].mutable_bytes_list();
    for (const std::string& x : v) list->add_value(x);
    std::string line;
    AppendQuoted(key, &line);
    json.push_back(line + ": {\"kind\": \"bytes\", \"hex\": " +
                   JsonList(v, [](const std::string& x) { return "\"" + Hex(x) + "\""; }) + "}");
  };
  const auto fi = static_cast<float>(i);
  floats("fixed_f", {Special(i), fi * 0.1f, -fi / 3.0f});
  int64s("fixed_i", {std::numeric_limits<int64_t>::min() + i, std::numeric_limits<int64_t>::max() - i * 12345});
  std::string b;
  for (int64_t k = 0; k < (i * 13) % 40; ++k) b += static_cast<char>((i * 31 + k * 97) % 256);
  bytes("fixed_b", {b});
  std::vector<float> var_f;
  for (int64_t k = 0; k < i % 4; ++k) var_f.push_back(k == 2 ? Special(i + 7) : fi + 0.25f * static_cast<float>(k));
  floats("var_f", var_f);
  std::vector<int64_t> var_i;
  for (int64_t k = 0; k < (i * 7) % 5; ++k) var_i.push_back((k - 2) * 1000000000000000LL + i);
  int64s("var_i", var_i);
  std::vector<std::string> var_b;
  for (int64_t k = 0; k < i % 3; ++k) var_b.push_back(std::string(static_cast<size_t>(k), static_cast<char>(k == 1 ? 0 : 0xff)));
  bytes("var_b", var_b);
  const int32_t raw_i32[4] = {static_cast<int32_t>(i), -static_cast<int32_t>(i),
                              std::numeric_limits<int32_t>::max() - static_cast<int32_t>(i),
                              std::numeric_limits<int32_t>::min() + static_cast<int32_t>(i)};
  bytes("raw_i32", {Bytes(raw_i32, sizeof(raw_i32))});  // little-endian: x86 and ARM hosts
  const float raw_f32[2] = {fi * 1.5f, Special(i + 3)};
  bytes("raw_f32", {Bytes(raw_f32, sizeof(raw_f32))});
  const uint8_t raw_u8[5] = {static_cast<uint8_t>(i), static_cast<uint8_t>(255 - i % 256), 0, 128,
                             static_cast<uint8_t>(i * 7)};
  bytes("raw_u8", {Bytes(raw_u8, sizeof(raw_u8))});
  if (i % 2 == 0) int64s("sometimes_i", {i});
  floats("empty_f", {});
  w.json = "{";
  for (size_t k = 0; k < json.size(); ++k) w.json += (k ? ", " : "") + json[k];
  w.json += "}";
  return w;
}

int Write(const std::string& out, const std::string& compression, int64_t records) {
  auto c = tw::ParseCompression(compression == "none" ? "" : compression);
  if (!c.ok()) return tw::Fail(c.status());
  auto writer = tw::RecordWriter::Open(out, {.compression = *c});
  if (!writer.ok()) return tw::Fail(writer.status());
  std::ofstream json(out + ".jsonl");
  std::string serialized;
  for (int64_t i = 0; i < records; ++i) {
    Written w = MakeRecord(i);
    // Deterministic (map entries sorted by key), so two files of the same records are the same bytes.
    serialized.clear();
    {
      google::protobuf::io::StringOutputStream stream(&serialized);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!w.example.SerializeToCodedStream(&coded)) return tw::Fail(tw::errors::Internal("cannot serialize ", i));
    }
    if (int rc = tw::Fail((*writer)->WriteRecord(serialized))) return rc;
    json << w.json << "\n";
  }
  if (int rc = tw::Fail((*writer)->Close())) return rc;
  json.close();
  if (!json) return tw::Fail(tw::errors::Internal(out, ".jsonl: write failed"));
  return 0;
}

// ---- read ------------------------------------------------------------------

std::string TensorJson(const tw::Tensor& t) {
  std::string out = "{\"dtype\": \"" + std::string(tw::DataTypeName(t.dtype())) + "\", \"shape\": " +
                    JsonList(t.shape().dims(), [](int64_t d) { return std::to_string(d); }) + ", \"values\": ";
  auto num = [](auto x) { return std::to_string(x); };
  switch (t.dtype()) {
    case tw::kFloat32:
      return out + JsonList(t.ToVector<float>(), [](float x) { return std::to_string(std::bit_cast<uint32_t>(x)); }) + "}";
    case tw::kFloat64:
      return out + JsonList(t.ToVector<double>(), [](double x) { return std::to_string(std::bit_cast<uint64_t>(x)); }) + "}";
    case tw::kInt32: return out + JsonList(t.ToVector<int32_t>(), num) + "}";
    case tw::kInt64: return out + JsonList(t.ToVector<int64_t>(), num) + "}";
    case tw::kUInt8: return out + JsonList(t.ToVector<uint8_t>(), [](uint8_t x) { return std::to_string(x); }) + "}";
    case tw::kString:
      return out + JsonList(t.ToVector<std::string>(), [](const std::string& x) { return "\"" + Hex(x) + "\""; }) + "}";
    default: return out + "null}";
  }
}

tw::StatusOr<tw::DataType> DtypeFromName(const std::string& name) {
  static const std::pair<const char*, tw::DataType> kNames[] = {
      {"int64", tw::kInt64}, {"float", tw::kFloat32}, {"float32", tw::kFloat32}, {"float64", tw::kFloat64},
      {"string", tw::kString}, {"int32", tw::kInt32}, {"uint8", tw::kUInt8}};
  for (const auto& [n, d] : kNames) {
    if (name == n) return d;
  }
  return tw::errors::InvalidArgument("unknown dtype '", name, "'");
}

// "KEY=DTYPE[:D0xD1]" -> key, dtype, shape.
tw::Status ParseSpec(const std::string& spec, std::string* key, tw::DataType* dtype, tw::TensorShape* shape) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return tw::errors::InvalidArgument("'", spec, "' is not KEY=DTYPE[:DIMS]");
  *key = spec.substr(0, eq);
  std::string rest = spec.substr(eq + 1), dims;
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    dims = rest.substr(colon + 1);
    rest.resize(colon);
  }
  TW_ASSIGN_OR_RETURN(*dtype, DtypeFromName(rest));
  std::vector<int64_t> d;
  for (size_t pos = 0; !dims.empty() && pos <= dims.size();) {
    size_t x = dims.find('x', pos);
    if (x == std::string::npos) x = dims.size();
    d.push_back(std::stoll(dims.substr(pos, x - pos)));
    pos = x + 1;
  }
  *shape = tw::TensorShape(d);
  return tw::Status::OK();
}

struct ReadFlags {
  std::string compression = "none";
  int64_t batch_size = 0;
  std::vector<std::string> fixed, var, decode, files;
};

int Read(const ReadFlags& flags) {
  auto compression = tw::ParseCompression(flags.compression == "none" ? "" : flags.compression);
  if (!compression.ok()) return tw::Fail(compression.status());
  tw::io::FeatureMap features;
  std::vector<std::string> dense_keys, sparse_keys;
  for (const std::string& spec : flags.fixed) {
    std::string key;
    tw::DataType dtype;
    tw::TensorShape shape;
    if (int rc = tw::Fail(ParseSpec(spec, &key, &dtype, &shape))) return rc;
    features.emplace(key, tw::io::FixedLenFeature(dtype, shape));
    dense_keys.push_back(key);
  }
  for (const std::string& spec : flags.var) {
    std::string key;
    tw::DataType dtype;
    tw::TensorShape shape;
    if (int rc = tw::Fail(ParseSpec(spec, &key, &dtype, &shape))) return rc;
    features.emplace(key, tw::io::VarLenFeature(dtype));
    sparse_keys.push_back(key);
  }

  tw::Graph graph;
  tw::Scope root(graph);
  tw::io::Queue filenames = tw::train::StringInputProducer(root, flags.files, {.num_epochs = 1, .shuffle = false});
  auto [key, value] = tw::io::TFRecordReader(root, {.compression = *compression}).Read(filenames);
  const bool batched = flags.batch_size > 0;
  tw::io::ParsedFeatures parsed;
  if (batched) {
    tw::Batch batch = tw::train::Batch(root, {value}, {.batch_size = flags.batch_size, .allow_smaller_final_batch = true});
    parsed = tw::io::ParseExample(root, batch.empty() ? tw::Output() : batch[0], features);
  } else {
    parsed = tw::io::ParseSingleExample(root, value, features);
  }
  // What each fetched tensor is called in the output, in fetch order.
  std::vector<std::string> names;
  std::vector<tw::Output> fetches;
  if (!batched) {
    names.push_back("");
    fetches.push_back(key);
  }
  for (const std::string& k : dense_keys) {
    names.push_back(k);
    fetches.push_back(parsed[k]);
  }
  for (const std::string& k : sparse_keys) {
    for (const char* part : {"indices", "values", "dense_shape"}) names.push_back(k + "/" + part);
    fetches.push_back(parsed[k].indices());
    fetches.push_back(parsed[k].values());
    fetches.push_back(parsed[k].dense_shape());
  }
  for (const std::string& spec : flags.decode) {
    std::string k;
    tw::DataType dtype;
    tw::TensorShape unused;
    if (int rc = tw::Fail(ParseSpec(spec, &k, &dtype, &unused))) return rc;
    names.push_back(k + ":decoded");
    fetches.push_back(tw::io::DecodeRaw(root, parsed[k], dtype));
  }
  if (!root.ok()) return tw::Fail(root.status());

  tw::Session session(graph);
  if (int rc = tw::Fail(session.Run(tw::LocalVariablesInitializer(graph)))) return rc;
  tw::train::Coordinator coord;
  std::vector<std::thread> threads = tw::train::StartQueueRunners(session, coord);
  tw::Status end;
  for (;;) {
    auto out = session.Run(fetches);
    if (!out.ok()) {
      end = out.status();
      break;
    }
    std::string line = "{";
    size_t f = 0;
    if (!batched) {
      line += "\"key\": ";
      AppendQuoted((*out)[0].scalar<std::string>(), &line);
      line += ", ";
      f = 1;
    }
    line += "\"features\": {";
    for (size_t n = f; n < fetches.size(); ++n) {
      if (n > f) line += ", ";
      AppendQuoted(names[n], &line);
      line += ": " + TensorJson((*out)[n]);
    }
    std::printf("%s}}\n", line.c_str());
  }
  coord.RequestStop(end);
  tw::Status joined = coord.Join(threads, std::chrono::seconds(10));
  if (!tw::errors::IsOutOfRange(end)) return tw::Fail(end);
  return tw::Fail(joined);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"TFRecord interop helper: writes Examples, reads files through the parse ops",
               "tfrecord_interop_tool"};
  app.require_subcommand(1, 1);
  std::string out, write_compression = "none";
  int64_t records = 10;
  CLI::App* write = app.add_subcommand("write", "write Examples of every list kind, and FILE.jsonl");
  write->add_option("--out", out, "the TFRecord file")->required();
  write->add_option("--compression", write_compression)->check(CLI::IsMember({"none", "gzip", "zlib"}));
  write->add_option("--records", records)->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  ReadFlags flags;
  CLI::App* read = app.add_subcommand("read", "parse files through the graph ops, print JSON");
  read->add_option("--compression", flags.compression)->check(CLI::IsMember({"none", "gzip", "zlib"}));
  read->add_option("--batch-size", flags.batch_size, "0: ParseSingleExample; B: Batch + ParseExample")
      ->check(CLI::NonNegativeNumber);
  // One value per occurrence, so that the files after the options stay files.
  read->add_option("--fixed", flags.fixed, "KEY=DTYPE[:D0xD1...]: a FixedLenFeature")->allow_extra_args(false);
  read->add_option("--var", flags.var, "KEY=DTYPE: a VarLenFeature")->allow_extra_args(false);
  read->add_option("--decode", flags.decode, "KEY=DTYPE: DecodeRaw of a --fixed string feature")
      ->allow_extra_args(false);
  read->add_option("files", flags.files, "TFRecord files")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (write->parsed()) return Write(out, write_compression, records);
  return Read(flags);
}
