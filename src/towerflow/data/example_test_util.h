// Test helpers for data/example_parser tests: Examples built with the libprotobuf
// classes, hand-written wire bytes for encodings libprotobuf never emits, and
// config shorthands. Header-only, tests only.
#ifndef TOWERFLOW_DATA_EXAMPLE_TEST_UTIL_H_
#define TOWERFLOW_DATA_EXAMPLE_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "example.pb.h"
#include "feature.pb.h"
#include "towerflow/data/example_config.h"

namespace tw::example_test {

inline void AddBytes(tensorflow::Example* ex, const std::string& key,
                     const std::vector<std::string>& values) {
  auto* list = (*ex->mutable_features()->mutable_feature())[key].mutable_bytes_list();
  for (const auto& v : values) list->add_value(v);
}
inline void AddFloats(tensorflow::Example* ex, const std::string& key, const std::vector<float>& values) {
  auto* list = (*ex->mutable_features()->mutable_feature())[key].mutable_float_list();
  for (float v : values) list->add_value(v);
}
inline void AddInt64s(tensorflow::Example* ex, const std::string& key, const std::vector<int64_t>& values) {
  auto* list = (*ex->mutable_features()->mutable_feature())[key].mutable_int64_list();
  for (int64_t v : values) list->add_value(v);
}
inline std::string Serialize(const tensorflow::Example& ex) {
  std::string out;
  ex.SerializeToString(&out);
  return out;
}

// Wire-format writers.
inline std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
inline std::string Tag(uint32_t field, uint32_t wire_type) { return Varint(field << 3 | wire_type); }
inline std::string Len(uint32_t field, const std::string& payload) {
  return Tag(field, 2) + Varint(payload.size()) + payload;
}
inline std::string Fixed32(uint32_t field, float v) {
  char b[4];
  std::memcpy(b, &v, 4);
  return Tag(field, 5) + std::string(b, 4);
}
inline std::string PackedFloats(const std::vector<float>& values) {
  std::string payload(values.size() * 4, '\0');
  if (!values.empty()) std::memcpy(payload.data(), values.data(), payload.size());
  return Len(1, payload);
}
inline std::string PackedInt64s(const std::vector<int64_t>& values) {
  std::string payload;
  for (int64_t v : values) payload += Varint(static_cast<uint64_t>(v));
  return Len(1, payload);
}
// Feature oneof fields: 1 bytes_list, 2 float_list, 3 int64_list.
inline std::string Entry(const std::string& key, const std::string& feature) {
  return Len(1, Len(1, key) + Len(2, feature));
}
// An Example holding the given serialized map entries in one Features.
inline std::string ExampleOf(const std::string& entries) { return Len(1, entries); }

inline FixedLenFeature Dense(const std::string& key, DataType dtype, TensorShape shape,
                             std::optional<Tensor> default_value = std::nullopt) {
  return FixedLenFeature{key, dtype, std::move(shape), std::move(default_value)};
}
inline VarLenFeature Sparse(const std::string& key, DataType dtype) { return VarLenFeature{key, dtype}; }

}  // namespace tw::example_test

#endif  // TOWERFLOW_DATA_EXAMPLE_TEST_UTIL_H_
