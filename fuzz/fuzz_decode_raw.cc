// fuzz_decode_raw: DecodeRaw over every out_type and both byte orders, through
// the kernel's computation (DecodeRawShape + DecodeRawFill, data/decode_raw_op.h)
// checked against a byte-by-byte reference, and through the op in a Session,
// which must give the same tensor or the same error.
//
// Input: byte 0 bits 0-2 the out_type (float, double, int32, int64, uint8, bool,
// and two types DecodeRaw must refuse: string and kInvalid), bit 3
// little_endian, bits 4-7 the number of strings n (0..15); byte 1 bit 0: the rest
// is cut into n equal strings (else string i takes byte 2 + i's value mod 33
// bytes, so lengths differ), bit 1: shape [1, n] instead of [n] (or [] when n is
// 1 and bit 2 is set).
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "towerflow/data/decode_raw_op.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_decode_raw: %s\n", what.c_str());
  std::abort();
}

constexpr DataType kOutTypes[] = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool, kString, DataType::kInvalid};

size_t ElementSize(DataType dtype) {
  switch (dtype) {
    case kFloat32:
    case kInt32:
      return 4;
    case kFloat64:
    case kInt64:
      return 8;
    case kUInt8:
    case kBool:
      return 1;
    default:
      return 0;  // not a DecodeRaw type
  }
}

// One DecodeRaw node per out_type and byte order, fed by one placeholder.
struct Graphs {
  Graph graph;
  Output bytes;
  Output decode[8][2];
  std::unique_ptr<Session> session;
};

Graphs* BuildGraphs() {
  auto* g = new Graphs;
  Scope root(g->graph);
  g->bytes = Placeholder(root.WithOpName("bytes"), kString);
  for (int t = 0; t < 6; ++t) {
    for (int le = 0; le < 2; ++le) {
      g->decode[t][le] = io::DecodeRaw(root.WithOpName("decode_" + std::to_string(t) + "_" + std::to_string(le)),
                                       g->bytes, kOutTypes[t], le == 1);
    }
  }
  if (!root.ok()) Fail("building the graph: " + root.status().ToString());
  g->session = std::make_unique<Session>(g->graph);
  return g;
}

// Element j of `s` as DecodeRaw must read it: `size` bytes in the given order,
// as the bits of an unsigned integer (bool: 0 or 1).
uint64_t ReferenceBits(const std::string& s, size_t j, size_t size, bool little_endian, bool is_bool) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + j * size;
  if (is_bool) return p[0] != 0 ? 1 : 0;
  uint64_t v = 0;
  for (size_t b = 0; b < size; ++b) v |= static_cast<uint64_t>(p[little_endian ? b : size - 1 - b]) << (8 * b);
  return v;
}

uint64_t OutputBits(const Tensor& t, int64_t i, size_t size) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data()) + i * static_cast<int64_t>(size);
  uint64_t v = 0;
  std::memcpy(&v, p, size);  // little-endian host assumed below
  return v;
}

}  // namespace
}  // namespace tw

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw;
  static_assert(std::endian::native == std::endian::little, "OutputBits reads host order as little-endian");
  static Graphs* graphs = BuildGraphs();
  if (size < 2) return 0;
  const int type_index = data[0] & 7;
  const DataType out_type = kOutTypes[type_index];
  const bool little_endian = (data[0] & 8) != 0;
  const int n = data[0] >> 4;
  const bool equal = (data[1] & 1) != 0;
  size_t pos = 2;
  std::vector<std::string> strings;
  if (equal) {
    const size_t len = n == 0 ? 0 : (size - pos) / static_cast<size_t>(n);
    for (int i = 0; i < n; ++i, pos += len) strings.emplace_back(reinterpret_cast<const char*>(data + pos), len);
  } else {
    std::vector<size_t> lens;
    for (int i = 0; i < n; ++i) lens.push_back(pos + static_cast<size_t>(i) < size ? data[pos + i] % 33 : 0);
    pos = std::min(size, pos + static_cast<size_t>(n));
    for (size_t len : lens) {
      len = std::min(len, size - pos);
      strings.emplace_back(reinterpret_cast<const char*>(data + pos), len);
      pos += len;
    }
  }
  std::vector<int64_t> dims = {n};
  if (data[1] & 2) dims = {1, n};
  if (n == 1 && (data[1] & 4)) dims = {};
  const Tensor bytes = Tensor::FromVector<std::string>(strings, TensorShape(dims));

  // What DecodeRaw must do, worked out independently.
  const size_t elem = ElementSize(out_type);
  bool valid = elem != 0;
  size_t len = strings.empty() ? 0 : strings[0].size();
  for (const std::string& s : strings) valid = valid && s.size() == len && len % elem == 0;

  const StatusOr<TensorShape> shape = DecodeRawShape(bytes, out_type);
  if (shape.ok() != valid) {
    Fail("DecodeRawShape for " + std::string(DataTypeName(out_type)) + " over " + bytes.shape().ToString() +
         " strings: " + shape.status().ToString() + ", expected " + (valid ? "OK" : "an error"));
  }
  if (!valid) {
    if (shape.status().code() != Code::kInvalidArgument) Fail("not InvalidArgument: " + shape.status().ToString());
  } else {
    std::vector<int64_t> want_dims = dims;
    want_dims.push_back(strings.empty() ? 0 : static_cast<int64_t>(len / elem));
    if (*shape != TensorShape(want_dims)) Fail("shape " + shape->ToString());
    Tensor out(out_type, *shape);
    DecodeRawFill(bytes, little_endian, &out);
    const int64_t per = want_dims.back();
    for (int64_t i = 0; i < static_cast<int64_t>(strings.size()); ++i) {
      for (int64_t j = 0; j < per; ++j) {
        const uint64_t want = ReferenceBits(strings[i], j, elem, little_endian, out_type == kBool);
        const uint64_t got = OutputBits(out, i * per + j, elem);
        if (want != got) {
          Fail("element " + std::to_string(j) + " of string " + std::to_string(i) + " as " +
               std::string(DataTypeName(out_type)) + ": bits " + std::to_string(got) + ", expected " +
               std::to_string(want));
        }
      }
    }
    if (type_index < 6) {
      auto run = graphs->session->Run({{graphs->bytes, bytes}}, {graphs->decode[type_index][little_endian]});
      if (!run.ok()) Fail("the op failed: " + run.status().ToString());
      const Tensor& t = (*run)[0];
      if (t.dtype() != out_type || t.shape() != out.shape() ||
          (out.TotalBytes() > 0 && std::memcmp(t.raw_data(), out.raw_data(), out.TotalBytes()) != 0)) {
        Fail("the op's output differs from DecodeRawFill's: " + t.DebugString());
      }
    }
    return 0;
  }
  if (type_index < 6) {
    auto run = graphs->session->Run({{graphs->bytes, bytes}}, {graphs->decode[type_index][little_endian]});
    if (run.ok() || run.status().code() != Code::kInvalidArgument) {
      Fail("the op over bad strings: " + (run.ok() ? std::string("OK") : run.status().ToString()));
    }
  }
  return 0;
}
