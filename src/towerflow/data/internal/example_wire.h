// Internal to data/example_parser: a zero-copy walker over the protobuf wire
// format of tensorflow.Example (data/proto/example.proto), in two passes.
//
// Pass 1 (ScanExample) checks the whole serialized Example exactly as libprotobuf's
// Example::ParseFromArray does (varints of at most 10 bytes, tags of at most 5,
// lengths inside their enclosing message, packed fixed32 lengths a multiple of 4,
// unknown fields skipped per wire type, groups matched and nested at most 100 deep
// counting message nesting, map keys valid UTF-8 as proto3 requires), and applies
// protobuf's merge rules: concatenated Examples merge, a later map entry for a key
// replaces an earlier one, repeated `value` fields of one entry merge, and setting
// a different oneof kind discards the values of the previous one. For each
// configured key it records where the final values lie (a FeatureRef) without
// copying anything. Pass 2 (ReadValues) decodes those values straight into an
// output buffer.
//
// Everything here is a pure function of its arguments: no global state, safe to
// call from many threads on different outputs. Nothing allocates.
#ifndef TOWERFLOW_DATA_INTERNAL_EXAMPLE_WIRE_H_
#define TOWERFLOW_DATA_INTERNAL_EXAMPLE_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/core/types.h"

namespace tw::example_wire {

// The oneof case of a tensorflow.Feature; the values are its field numbers.
enum class Kind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };

// kString, kFloat32, kInt64; kInvalid for kNone.
DataType KindDataType(Kind kind);

// Where one feature's final values lie inside the serialized bytes. Valid while
// those bytes live.
struct FeatureRef {
  Kind kind = Kind::kNone;  // kNone: key absent, or present with no kind set
  int64_t count = 0;        // number of values of `kind`
  // The values are those of the `kind` lists from the list field at run_start
  // (inside a Feature payload ending at value_end) on, including later `value`
  // fields of the same map entry (which ends at entry_end).
  const uint8_t* run_start = nullptr;
  const uint8_t* value_end = nullptr;
  const uint8_t* entry_end = nullptr;
};

// Maps configured keys to slots 0..size()-1. Find neither allocates nor builds a
// string. Owns a copy of the keys; immutable after construction, thread-safe to
// read, safe to copy.
class KeyIndex {
 public:
  KeyIndex() = default;
  // REQUIRES: keys distinct.
  explicit KeyIndex(const std::vector<std::string_view>& keys);

  int size() const { return static_cast<int>(offsets_.size()) - 1; }
  // The slot of `key`, or -1.
  int Find(const uint8_t* key, size_t len) const;

 private:
  static uint64_t Hash(const uint8_t* key, size_t len);
  bool Matches(int slot, const uint8_t* key, size_t len) const;

  std::string storage_;                  // the keys, concatenated
  std::vector<uint32_t> offsets_ = {0};  // key i is storage_[offsets_[i], offsets_[i+1])
  // Open addressing (linear probing) over slot+1 (0 = empty), used past
  // kLinearMax keys; below that a scan comparing lengths first is faster.
  static constexpr int kLinearMax = 8;
  std::vector<int32_t> table_;
  uint64_t mask_ = 0;
};

// Pass 1. Returns false when `serialized` is not a valid tensorflow.Example.
// Otherwise sets refs[slot] for every slot of `index` (kind kNone for keys the
// Example lacks). REQUIRES: refs has index.size() elements.
bool ScanExample(std::string_view serialized, const KeyIndex& index, FeatureRef* refs);

// Pass 2: writes the ref.count values of `ref` to dst[0, ref.count). Returns
// false (after writing at most ref.count values) only if the bytes changed since
// ScanExample. REQUIRES: ref.kind matches the element type (kFloat: float,
// kInt64: int64_t, kBytes: std::string).
bool ReadValues(const FeatureRef& ref, float* dst);
bool ReadValues(const FeatureRef& ref, int64_t* dst);
bool ReadValues(const FeatureRef& ref, std::string* dst);

// True when bytes[0, n) is structurally valid UTF-8 (no overlong forms, no
// surrogates, nothing above U+10FFFF), the check proto3 applies to string fields.
bool IsValidUtf8(const uint8_t* bytes, size_t n);

}  // namespace tw::example_wire

#endif  // TOWERFLOW_DATA_INTERNAL_EXAMPLE_WIRE_H_
