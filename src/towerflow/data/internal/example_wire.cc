#include "towerflow/data/internal/example_wire.h"

#include <bit>
#include <climits>
#include <cstring>

namespace tw::example_wire {
namespace {

using Ptr = const uint8_t*;

// libprotobuf's default recursion limit: a message or group nested this deep
// below the Example fails to parse, so it fails here too.
constexpr int kMaxDepth = 100;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr uint32_t MakeTag(uint32_t field, WireType type) { return field << 3 | type; }

constexpr uint32_t kTagKey = MakeTag(1, kLengthDelimited);         // entry key, list value
constexpr uint32_t kTagEntryValue = MakeTag(2, kLengthDelimited);  // map entry value
constexpr uint32_t kTagExampleFeatures = MakeTag(1, kLengthDelimited);
constexpr uint32_t kTagFeaturesEntry = MakeTag(1, kLengthDelimited);
constexpr uint32_t kTagPacked = MakeTag(1, kLengthDelimited);
constexpr uint32_t kTagFloat = MakeTag(1, kFixed32);  // one unpacked float
constexpr uint32_t kTagInt64 = MakeTag(1, kVarint);   // one unpacked int64

constexpr uint32_t KindTag(Kind kind) { return MakeTag(static_cast<uint32_t>(kind), kLengthDelimited); }

// The readers below require p < end on entry unless noted, and return the
// position after what they read, or nullptr when the bytes are malformed. Their
// limits are libprotobuf's (parse_context.h), so both accept the same bytes.

// A tag: at most 5 bytes; bits past 32 are dropped, as ReadTag does.
inline Ptr ReadTag(Ptr p, Ptr end, uint32_t* tag) {
  uint32_t b = p[0];
  if (b < 0x80) {
    *tag = b;
    return p + 1;
  }
  uint32_t res = b & 0x7f;
  for (int i = 1; i < 5; ++i) {
    if (end - p <= i) return nullptr;
    b = p[i];
    res |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *tag = res;
      return p + i + 1;
    }
  }
  return nullptr;
}

// A varint: at most 10 bytes; bits past 64 are dropped. p may equal end.
inline Ptr ReadVarint(Ptr p, Ptr end, uint64_t* out) {
  if (p < end && p[0] < 0x80) {
    *out = p[0];
    return p + 1;
  }
  uint64_t res = 0;
  for (int i = 0; i < 10; ++i) {
    if (end - p <= i) return nullptr;
    const uint64_t b = p[i];
    res |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *out = res;
      return p + i + 1;
    }
  }
  return nullptr;
}

// A length: at most 5 bytes with the fifth below 8, under INT_MAX - 16 (libprotobuf
// keeps room for its slop bytes), and never past `end`. p may equal end.
inline Ptr ReadSize(Ptr p, Ptr end, size_t* size) {
  uint32_t res = 0;
  int i = 0;
  for (;; ++i) {
    if (end - p <= i) return nullptr;
    const uint32_t b = p[i];
    if (i == 4) {
      if (b >= 8) return nullptr;
      res |= b << 28;
      break;
    }
    res |= (b & 0x7f) << (7 * i);
    if (b < 0x80) break;
  }
  p += i + 1;
  if (res > static_cast<uint32_t>(INT_MAX - 16) || res > static_cast<size_t>(end - p)) return nullptr;
  *size = res;
  return p;
}

// Reads a message field's tag; also fails on what ends a message early in
// libprotobuf (tag 0, an end-group tag), which outside a group is an error.
inline Ptr ReadFieldTag(Ptr p, Ptr end, uint32_t* tag) {
  p = ReadTag(p, end, tag);
  if (p == nullptr || *tag == 0 || (*tag & 7) == kEndGroup) return nullptr;
  return p;
}

Ptr SkipGroup(Ptr p, Ptr end, uint32_t field, int depth);

// Skips the payload of an unknown field whose tag was just read. `depth` is how
// many more levels of nesting libprotobuf would allow.
Ptr SkipField(Ptr p, Ptr end, uint32_t tag, int depth) {
  if ((tag >> 3) == 0) return nullptr;
  switch (tag & 7) {
    case kVarint: {
      uint64_t unused;
      return ReadVarint(p, end, &unused);
    }
    case kFixed64:
      return end - p >= 8 ? p + 8 : nullptr;
    case kLengthDelimited: {
      size_t n;
      p = ReadSize(p, end, &n);
      return p ? p + n : nullptr;
    }
    case kStartGroup:
      return SkipGroup(p, end, tag >> 3, depth);
    case kFixed32:
      return end - p >= 4 ? p + 4 : nullptr;
    default:  // end group (unmatched), 6 and 7 (no such wire types)
      return nullptr;
  }
}

// A group's fields up to the end-group tag of the same field number.
Ptr SkipGroup(Ptr p, Ptr end, uint32_t field, int depth) {
  if (--depth < 0) return nullptr;
  while (p < end) {
    uint32_t tag;
    p = ReadTag(p, end, &tag);
    if (p == nullptr || tag == 0) return nullptr;
    if ((tag & 7) == kEndGroup) return (tag >> 3) == field ? p : nullptr;
    p = SkipField(p, end, tag, depth);
    if (p == nullptr) return nullptr;
  }
  return nullptr;  // the enclosing message ended inside the group
}

// The values in a packed run of varints, which must all end inside it.
bool CountPackedVarints(Ptr p, Ptr end, int64_t* count) {
  int continued = 0;  // continuation bytes in a row: a varint has at most 9
  int64_t n = 0;
  for (; p < end; ++p) {
    if (*p & 0x80) {
      if (++continued == 10) return false;
    } else {
      continued = 0;
      ++n;
    }
  }
  *count += n;
  return continued == 0;
}

// Checks one BytesList, FloatList or Int64List payload and adds its value count.
bool CountList(Kind kind, Ptr p, Ptr end, int depth, int64_t* count) {
  while (p < end) {
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == kTagPacked) {  // bytes: one value; float/int64: packed values
      size_t len;
      p = ReadSize(p, end, &len);
      if (p == nullptr) return false;
      if (kind == Kind::kBytes) {
        ++*count;
      } else if (kind == Kind::kFloat) {
        if (len % 4 != 0) return false;
        *count += static_cast<int64_t>(len / 4);
      } else if (!CountPackedVarints(p, p + len, count)) {
        return false;
      }
      p += len;
    } else if (kind == Kind::kFloat && tag == kTagFloat) {
      if (end - p < 4) return false;
      p += 4;
      ++*count;
    } else if (kind == Kind::kInt64 && tag == kTagInt64) {
      uint64_t unused;
      p = ReadVarint(p, end, &unused);
      if (p == nullptr) return false;
      ++*count;
    } else {
      p = SkipField(p, end, tag, depth);
      if (p == nullptr) return false;
    }
  }
  return true;
}

// One Feature payload (a `value` of a map entry), merged into *ref: a list of
// the current kind adds to it, a list of another kind replaces it (oneof).
bool ScanFeature(Ptr p, Ptr end, int depth, FeatureRef* ref) {
  while (p < end) {
    const Ptr field_start = p;
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == KindTag(Kind::kBytes) || tag == KindTag(Kind::kFloat) || tag == KindTag(Kind::kInt64)) {
      const Kind kind = static_cast<Kind>(tag >> 3);
      size_t len;
      if (depth < 1 || (p = ReadSize(p, end, &len)) == nullptr) return false;
      if (kind != ref->kind) {
        ref->kind = kind;
        ref->count = 0;
        ref->run_start = field_start;
        ref->value_end = end;
      }
      if (!CountList(kind, p, p + len, depth - 1, &ref->count)) return false;
      p += len;
    } else {
      p = SkipField(p, end, tag, depth);
      if (p == nullptr) return false;
    }
  }
  return true;
}

// One map entry {key = 1; value = 2}. Fields may come in any order and repeat:
// the last key counts, the values merge. A missing key is "", a missing value a
// Feature with no kind. The entry then replaces any earlier one for its key.
bool ScanEntry(Ptr p, Ptr end, int depth, const KeyIndex& index, FeatureRef* refs) {
  static constexpr uint8_t kEmpty = 0;
  Ptr key = &kEmpty;
  size_t key_len = 0;
  FeatureRef ref;
  while (p < end) {
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == kTagKey) {
      size_t len;
      p = ReadSize(p, end, &len);
      if (p == nullptr || !IsValidUtf8(p, len)) return false;
      key = p;
      key_len = len;
      p += len;
    } else if (tag == kTagEntryValue) {
      size_t len;
      if (depth < 1 || (p = ReadSize(p, end, &len)) == nullptr) return false;
      if (!ScanFeature(p, p + len, depth - 1, &ref)) return false;
      p += len;
    } else {
      p = SkipField(p, end, tag, depth);
      if (p == nullptr) return false;
    }
  }
  const int slot = index.Find(key, key_len);
  if (slot >= 0) {
    ref.entry_end = end;
    refs[slot] = ref;
  }
  return true;
}

bool ScanFeatures(Ptr p, Ptr end, int depth, const KeyIndex& index, FeatureRef* refs) {
  while (p < end) {
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == kTagFeaturesEntry) {
      size_t len;
      if (depth < 1 || (p = ReadSize(p, end, &len)) == nullptr) return false;
      if (!ScanEntry(p, p + len, depth - 1, index, refs)) return false;
      p += len;
    } else {
      p = SkipField(p, end, tag, depth);
      if (p == nullptr) return false;
    }
  }
  return true;
}

// Calls list(begin, end) for each list payload holding ref's values, in order.
template <typename ListFn>
bool ForEachList(const FeatureRef& ref, ListFn&& list) {
  const uint32_t list_tag = KindTag(ref.kind);
  auto feature = [&](Ptr p, Ptr end) {
    while (p < end) {
      uint32_t tag;
      p = ReadFieldTag(p, end, &tag);
      if (p == nullptr) return false;
      if (tag == list_tag) {
        size_t len;
        p = ReadSize(p, end, &len);
        if (p == nullptr || !list(p, p + len)) return false;
        p += len;
      } else if (tag == KindTag(Kind::kBytes) || tag == KindTag(Kind::kFloat) ||
                 tag == KindTag(Kind::kInt64)) {
        return false;  // another kind after the last switch: the bytes changed
      } else {
        p = SkipField(p, end, tag, kMaxDepth);
        if (p == nullptr) return false;
      }
    }
    return true;
  };
  if (ref.run_start == nullptr || !feature(ref.run_start, ref.value_end)) return false;
  Ptr p = ref.value_end;
  const Ptr end = ref.entry_end;
  while (p < end) {  // later fields of the entry: more values merge in
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == kTagEntryValue) {
      size_t len;
      p = ReadSize(p, end, &len);
      if (p == nullptr || !feature(p, p + len)) return false;
      p += len;
    } else {
      p = SkipField(p, end, tag, kMaxDepth);
      if (p == nullptr) return false;
    }
  }
  return true;
}

// Calls value(p, end) on the payload after each field-1 tag of a list, or
// skips other fields; `value` returns the position after what it read.
template <typename ValueFn>
bool ForEachListField(Ptr p, Ptr end, ValueFn&& value) {
  while (p < end) {
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if ((tag >> 3) == 1) {
      p = value(tag, p, end);
    } else {
      p = SkipField(p, end, tag, kMaxDepth);
    }
    if (p == nullptr) return false;
  }
  return true;
}

inline float LoadFloat(Ptr p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  if constexpr (std::endian::native == std::endian::big) bits = __builtin_bswap32(bits);
  return std::bit_cast<float>(bits);
}

}  // namespace

DataType KindDataType(Kind kind) {
  switch (kind) {
    case Kind::kBytes:
      return kString;
    case Kind::kFloat:
      return kFloat32;
    case Kind::kInt64:
      return kInt64;
    case Kind::kNone:
      break;
  }
  return DataType::kInvalid;
}

KeyIndex::KeyIndex(const std::vector<std::string_view>& keys) {
  offsets_.reserve(keys.size() + 1);
  for (std::string_view k : keys) {
    storage_.append(k);
    offsets_.push_back(static_cast<uint32_t>(storage_.size()));
  }
  if (keys.size() <= kLinearMax) return;
  uint64_t buckets = 16;
  while (buckets < 2 * keys.size()) buckets *= 2;
  mask_ = buckets - 1;
  table_.assign(buckets, 0);
  for (int i = 0; i < size(); ++i) {
    const auto* key = reinterpret_cast<const uint8_t*>(storage_.data()) + offsets_[i];
    uint64_t h = Hash(key, offsets_[i + 1] - offsets_[i]) & mask_;
    while (table_[h] != 0) h = (h + 1) & mask_;
    table_[h] = i + 1;
  }
}

uint64_t KeyIndex::Hash(const uint8_t* key, size_t len) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a: keys are short
  for (size_t i = 0; i < len; ++i) h = (h ^ key[i]) * 1099511628211ull;
  return h;
}

bool KeyIndex::Matches(int slot, const uint8_t* key, size_t len) const {
  const uint32_t begin = offsets_[slot];
  if (offsets_[slot + 1] - begin != len) return false;
  const auto* stored = reinterpret_cast<const uint8_t*>(storage_.data()) + begin;
  if (len > 16) return std::memcmp(stored, key, len) == 0;
  for (size_t i = 0; i < len; ++i) {  // short keys: cheaper than a call to memcmp
    if (stored[i] != key[i]) return false;
  }
  return true;
}

int KeyIndex::Find(const uint8_t* key, size_t len) const {
  if (table_.empty()) {
    for (int i = 0; i < size(); ++i) {
      if (Matches(i, key, len)) return i;
    }
    return -1;
  }
  for (uint64_t h = Hash(key, len) & mask_;; h = (h + 1) & mask_) {
    const int32_t entry = table_[h];
    if (entry == 0) return -1;
    if (Matches(entry - 1, key, len)) return entry - 1;
  }
}

bool ScanExample(std::string_view serialized, const KeyIndex& index, FeatureRef* refs) {
  for (int i = 0; i < index.size(); ++i) refs[i] = FeatureRef();
  auto p = reinterpret_cast<Ptr>(serialized.data());
  const Ptr end = p + serialized.size();
  const int depth = kMaxDepth;
  // Fields repeat when Examples are concatenated: each `features` merges into the
  // one map, so entries simply keep overwriting refs in order.
  while (p < end) {
    uint32_t tag;
    p = ReadFieldTag(p, end, &tag);
    if (p == nullptr) return false;
    if (tag == kTagExampleFeatures) {
      size_t len;
      if ((p = ReadSize(p, end, &len)) == nullptr) return false;
      if (!ScanFeatures(p, p + len, depth - 1, index, refs)) return false;
      p += len;
    } else {
      p = SkipField(p, end, tag, depth);
      if (p == nullptr) return false;
    }
  }
  return true;
}

bool ReadValues(const FeatureRef& ref, float* dst) {
  int64_t i = 0;
  const bool ok = ref.kind == Kind::kFloat && ForEachList(ref, [&](Ptr p, Ptr end) {
                    return ForEachListField(p, end, [&](uint32_t tag, Ptr q, Ptr e) -> Ptr {
                      if (tag == kTagPacked) {
                        size_t len;
                        q = ReadSize(q, e, &len);
                        const auto n = static_cast<int64_t>(len / 4);
                        if (q == nullptr || len % 4 != 0 || n > ref.count - i) return nullptr;
                        if constexpr (std::endian::native == std::endian::little) {
                          if (n > 0) std::memcpy(dst + i, q, len);  // the wire is little-endian
                          i += n;
                        } else {
                          for (int64_t j = 0; j < n; ++j) dst[i++] = LoadFloat(q + 4 * j);
                        }
                        return q + len;
                      }
                      if (tag == kTagFloat) {
                        if (e - q < 4 || i >= ref.count) return nullptr;
                        dst[i++] = LoadFloat(q);
                        return q + 4;
                      }
                      return SkipField(q, e, tag, kMaxDepth);
                    });
                  });
  return ok && i == ref.count;
}

bool ReadValues(const FeatureRef& ref, int64_t* dst) {
  int64_t i = 0;
  const bool ok = ref.kind == Kind::kInt64 && ForEachList(ref, [&](Ptr p, Ptr end) {
                    return ForEachListField(p, end, [&](uint32_t tag, Ptr q, Ptr e) -> Ptr {
                      if (tag == kTagPacked) {
                        size_t len;
                        q = ReadSize(q, e, &len);
                        if (q == nullptr) return nullptr;
                        const Ptr packed_end = q + len;
                        while (q < packed_end) {
                          uint64_t v;
                          q = ReadVarint(q, packed_end, &v);
                          if (q == nullptr || i >= ref.count) return nullptr;
                          dst[i++] = static_cast<int64_t>(v);
                        }
                        return q;
                      }
                      if (tag == kTagInt64) {
                        uint64_t v;
                        q = ReadVarint(q, e, &v);
                        if (q == nullptr || i >= ref.count) return nullptr;
                        dst[i++] = static_cast<int64_t>(v);
                        return q;
                      }
                      return SkipField(q, e, tag, kMaxDepth);
                    });
                  });
  return ok && i == ref.count;
}

bool ReadValues(const FeatureRef& ref, std::string* dst) {
  int64_t i = 0;
  const bool ok = ref.kind == Kind::kBytes && ForEachList(ref, [&](Ptr p, Ptr end) {
                    return ForEachListField(p, end, [&](uint32_t tag, Ptr q, Ptr e) -> Ptr {
                      if (tag != kTagPacked) return SkipField(q, e, tag, kMaxDepth);
                      size_t len;
                      q = ReadSize(q, e, &len);
                      if (q == nullptr || i >= ref.count) return nullptr;
                      dst[i++].assign(reinterpret_cast<const char*>(q), len);
                      return q + len;
                    });
                  });
  return ok && i == ref.count;
}

bool IsValidUtf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {  // ASCII fast path: keys are nearly always ASCII
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: how many continuation bytes follow, and the range the first of
    // them must lie in (narrower after E0, ED, F0, F4: no overlong forms, no
    // surrogates, nothing past U+10FFFF).
    size_t more;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (n - i <= more) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (size_t k = 2; k <= more; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
    }
    i += more + 1;
  }
  return true;
}

}  // namespace tw::example_wire
