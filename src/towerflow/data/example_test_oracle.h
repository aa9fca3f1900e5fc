// Test-only oracle and input generator for data/example_parser tests.
//
// ReferenceParse decodes with libprotobuf (tensorflow::Example::ParseFromArray)
// and applies TF's parse_example rules written out plainly, as the fast parser's
// reference. Generator writes random tf.train.Examples in varied wire encodings
// (packed, unpacked and split lists, merged values, oneof switches, unknown fields
// of every wire type, entries with fields in either order) and mutates bytes.
// Header-only; not thread-safe (a Generator is one random stream).
#ifndef TOWERFLOW_DATA_EXAMPLE_TEST_ORACLE_H_
#define TOWERFLOW_DATA_EXAMPLE_TEST_ORACLE_H_

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "towerflow/data/example_test_util.h"

namespace tw::example_test {

inline constexpr char kParseErrorPrefix[] = "Could not parse example input, value: '";

// The oracle: libprotobuf, then TF's rules written out plainly.

inline DataType KindType(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      return kString;
    case tensorflow::Feature::kFloatList:
      return kFloat32;
    case tensorflow::Feature::kInt64List:
      return kInt64;
    default:
      return DataType::kInvalid;
  }
}

inline int64_t KindCount(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      return f.bytes_list().value_size();
    case tensorflow::Feature::kFloatList:
      return f.float_list().value_size();
    case tensorflow::Feature::kInt64List:
      return f.int64_list().value_size();
    default:
      return 0;
  }
}

// Writes f's values to t's elements [offset, offset + count).
inline void CopyValues(const tensorflow::Feature& f, Tensor* t, int64_t offset) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList:
      for (int i = 0; i < f.bytes_list().value_size(); ++i) {
        t->data<std::string>()[offset + i] = f.bytes_list().value(i);
      }
      break;
    case tensorflow::Feature::kFloatList:
      for (int i = 0; i < f.float_list().value_size(); ++i) {
        t->data<float>()[offset + i] = f.float_list().value(i);
      }
      break;
    case tensorflow::Feature::kInt64List:
      for (int i = 0; i < f.int64_list().value_size(); ++i) {
        t->data<int64_t>()[offset + i] = f.int64_list().value(i);
      }
      break;
    default:
      break;
  }
}

inline Status ReferenceParse(std::string_view bytes, const ParseConfig& config, ParseResult* out) {
  TW_RETURN_IF_ERROR(config.Validate());
  tensorflow::Example ex;
  if (!ex.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return errors::InvalidArgument(kParseErrorPrefix);
  }
  const auto& map = ex.features().feature();
  auto find = [&](const std::string& key) -> const tensorflow::Feature* {
    auto it = map.find(key);
    return it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET ? nullptr
                                                                                          : &it->second;
  };
  auto type_error = [](const std::string& key, DataType got, DataType want) {
    return errors::InvalidArgument("Name: <unknown>, Feature: ", key,
                                   ".  Data types don't match. Data type: ", DataTypeName(got),
                                   " Expected type: ", DataTypeName(want));
  };
  for (const FixedLenFeature& d : config.dense) {
    const tensorflow::Feature* f = find(d.key);
    if (f == nullptr) {
      if (d.default_value) continue;
      std::vector<std::string> keys;
      for (const auto& [key, feature] : map) keys.push_back(key);
      return errors::InvalidArgument("Name: <unknown>, Feature: ", d.key,
                                     " (data type: ", DataTypeName(d.dtype),
                                     ") is required but could not be found.", DescribeRecordKeys(keys));
    }
    if (KindType(*f) != d.dtype) return type_error(d.key, KindType(*f), d.dtype);
    if (KindCount(*f) != d.shape.num_elements()) {
      return errors::InvalidArgument("Name: <unknown>, Key: ", d.key, ", Index: 0.  Number of ",
                                     d.dtype == kString ? "bytes" : DataTypeName(d.dtype),
                                     " values != expected.  Values size: ", KindCount(*f),
                                     " but output shape: ", d.shape.ToString());
    }
  }
  for (const VarLenFeature& s : config.sparse) {
    const tensorflow::Feature* f = find(s.key);
    if (f != nullptr && KindType(*f) != s.dtype) return type_error(s.key, KindType(*f), s.dtype);
  }
  out->dense.clear();
  for (const FixedLenFeature& d : config.dense) {
    const tensorflow::Feature* f = find(d.key);
    if (f == nullptr) {
      out->dense.push_back(d.default_value->DeepCopy());
    } else {
      Tensor t(d.dtype, d.shape);
      CopyValues(*f, &t, 0);
      out->dense.push_back(t);
    }
  }
  out->sparse.clear();
  for (const VarLenFeature& s : config.sparse) {
    const tensorflow::Feature* f = find(s.key);
    const int64_t n = f ? KindCount(*f) : 0;
    SparseTensorValue v{Tensor(kInt64, TensorShape{n, 1}), Tensor(s.dtype, TensorShape{n}),
                        Tensor::Vec<int64_t>({n})};
    for (int64_t i = 0; i < n; ++i) v.indices.data<int64_t>()[i] = i;
    if (f) CopyValues(*f, &v.values, 0);
    out->sparse.push_back(v);
  }
  return Status::OK();
}

// Same dtype, shape and elements; floats compared bit for bit (NaNs included).
inline ::testing::AssertionResult SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << a.DebugString() << " vs " << b.DebugString();
  }
  bool same = true;
  if (a.dtype() == kString) {
    same = a.ToVector<std::string>() == b.ToVector<std::string>();
  } else if (a.TotalBytes() > 0) {
    same = std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
  }
  if (!same) return ::testing::AssertionFailure() << a.DebugString() << " vs " << b.DebugString();
  return ::testing::AssertionSuccess();
}

inline std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 400)) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return bytes.size() > 400 ? out + "..." : out;
}

// Random Examples in varied encodings.

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  int Uniform(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  std::string RandomBytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }

  int64_t RandomInt64() {
    switch (Uniform(4)) {
      case 0:
        return Uniform(100);
      case 1:
        return -Uniform(1000);
      case 2:
        return static_cast<int64_t>(rng_()) << 32 | rng_();
      default:
        return INT64_MIN + Uniform(3);
    }
  }
  float RandomFloat() {
    if (Chance(0.1)) {
      const uint32_t bits = rng_();  // any bit pattern, NaNs included
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    return std::uniform_real_distribution<float>(-100, 100)(rng_);
  }

  // Unknown fields of every wire type, now and then.
  std::string MaybeUnknown() {
    if (!Chance(0.15)) return "";
    const uint32_t field = 4 + Uniform(30);
    switch (Uniform(5)) {
      case 0:
        return Tag(field, 0) + Varint(static_cast<uint64_t>(RandomInt64()));
      case 1:
        return Tag(field, 1) + RandomBytes(8);
      case 2:
        return Len(field, RandomBytes(Uniform(6)));
      case 3:
        return Tag(field, 3) + Tag(1, 0) + Varint(1) + Tag(field, 4);
      default:
        return Tag(field, 5) + RandomBytes(4);
    }
  }

  // A list payload of `n` values of `kind` (1 bytes, 2 float, 3 int64), packed,
  // unpacked or mixed.
  std::string List(int kind, int n) {
    std::string out = MaybeUnknown();
    int i = 0;
    while (i < n) {
      const int run = 1 + Uniform(n - i);
      if (kind == 1) {
        for (int j = 0; j < run; ++j) {
          out += Len(1, Chance(0.05) ? RandomBytes(784) : RandomBytes(Uniform(12)));
        }
      } else if (Chance(0.6)) {  // packed run
        if (kind == 2) {
          std::vector<float> v;
          for (int j = 0; j < run; ++j) v.push_back(RandomFloat());
          out += PackedFloats(v);
        } else {
          std::vector<int64_t> v;
          for (int j = 0; j < run; ++j) v.push_back(RandomInt64());
          out += PackedInt64s(v);
        }
      } else {  // unpacked run
        for (int j = 0; j < run; ++j) {
          out += kind == 2 ? Fixed32(1, RandomFloat())
                           : Tag(1, 0) + Varint(static_cast<uint64_t>(RandomInt64()));
        }
      }
      i += run;
      out += MaybeUnknown();
    }
    if (kind != 1 && Chance(0.05)) out += kind == 2 ? PackedFloats({}) : PackedInt64s({});
    return out;
  }

  // A Feature payload whose final kind and count are as given (kind 0: none).
  std::string Feature(int kind, int n) {
    std::string out = MaybeUnknown();
    if (Chance(0.08)) {  // a list of another kind first: the oneof discards it
      const int other = 1 + (kind + Uniform(2)) % 3;
      if (other != kind) out += Len(other, List(other, Uniform(3)));
    }
    if (kind == 0) return out + MaybeUnknown();
    if (n > 1 && Chance(0.1)) {  // the same kind twice: the lists merge
      const int first = Uniform(n);
      out += Len(kind, List(kind, first)) + MaybeUnknown() + Len(kind, List(kind, n - first));
    } else {
      out += Len(kind, List(kind, n));
    }
    return out + MaybeUnknown();
  }

  std::string Key() {
    static const char* kKeys[] = {"a", "b", "c", "d", "e", "f", "zz", "other"};
    if (Chance(0.03)) return RandomBytes(Uniform(4));  // may not be UTF-8
    return kKeys[Uniform(8)];
  }

  // A map entry, its fields in either order, sometimes repeated or missing.
  std::string Entry(const std::string& key) {
    // Mostly the kind and count the configs ask for.
    static const int kKind[] = {3, 2, 1, 3, 2, 1};
    static const int kCount[] = {2, 3, 1, 2, 1, 1};
    int kind = Uniform(4), n = Uniform(5);
    if (key.size() == 1 && key[0] >= 'a' && key[0] <= 'f' && Chance(0.85)) {
      kind = kKind[key[0] - 'a'];
      n = kCount[key[0] - 'a'];
    }
    std::string value;
    if (Chance(0.05)) {  // value split in two fields: they merge
      value = Len(2, Feature(kind, n)) + Len(2, Feature(0, 0));
    } else if (!Chance(0.02)) {
      value = Len(2, Feature(kind, n));
    }
    std::string k = Chance(0.02) ? "" : Len(1, key);
    if (Chance(0.03)) k = Len(1, Key()) + k;  // the last key counts
    std::string fields = Chance(0.2) ? value + MaybeUnknown() + k : k + MaybeUnknown() + value;
    return Len(1, fields);
  }

  std::string Example() {
    std::string out = MaybeUnknown();
    const int parts = Chance(0.1) ? 2 : 1;  // split `features` fields merge
    for (int p = 0; p < parts; ++p) {
      std::string entries = MaybeUnknown();
      const int count = Uniform(9);
      for (int i = 0; i < count; ++i) entries += Entry(Key()) + MaybeUnknown();
      out += Len(1, entries) + MaybeUnknown();
    }
    return out;
  }

  // A tensorflow::Example written by libprotobuf itself (canonical encoding).
  std::string Canonical() {
    tensorflow::Example ex;
    for (int i = Uniform(8); i > 0; --i) {
      const std::string key = Key();
      const int n = Uniform(4);
      switch (Uniform(4)) {
        case 0: {
          std::vector<std::string> v;
          for (int j = 0; j < n; ++j) v.push_back(RandomBytes(Uniform(10)));
          AddBytes(&ex, key, v);
          break;
        }
        case 1: {
          std::vector<float> v;
          for (int j = 0; j < n; ++j) v.push_back(RandomFloat());
          AddFloats(&ex, key, v);
          break;
        }
        case 2: {
          std::vector<int64_t> v;
          for (int j = 0; j < n; ++j) v.push_back(RandomInt64());
          AddInt64s(&ex, key, v);
          break;
        }
        default:
          (*ex.mutable_features()->mutable_feature())[key];
      }
    }
    // Deterministic (sorted map keys) so that a failure reproduces; invalid UTF-8
    // keys serialize too (with a log line).
    std::string out;
    {
      google::protobuf::io::StringOutputStream stream(&out);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      ex.SerializeToCodedStream(&coded);
    }
    return out;
  }

  // 1-3 random edits: bit flips, bytes set to interesting values, insertions,
  // deletions, truncation, duplicated ranges.
  std::string Mutate(std::string s) {
    static const unsigned char kInteresting[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x07, 0x08, 0x0a,
                                                 0x0b, 0x0c, 0x0d, 0x12, 0x1a, 0x7f, 0x80, 0xff};
    for (int edits = 1 + Uniform(3); edits > 0; --edits) {
      const size_t pos = s.empty() ? 0 : static_cast<size_t>(Uniform(static_cast<int>(s.size())));
      switch (Uniform(6)) {
        case 0:
          if (!s.empty()) s[pos] = static_cast<char>(s[pos] ^ (1 << Uniform(8)));
          break;
        case 1:
          if (!s.empty()) s[pos] = static_cast<char>(kInteresting[Uniform(16)]);
          break;
        case 2:
          s.insert(pos, RandomBytes(1 + Uniform(3)));
          break;
        case 3:
          s.erase(pos, 1 + Uniform(4));
          break;
        case 4:
          s.resize(pos);
          break;
        default:
          s.insert(pos, s.substr(pos, 1 + Uniform(8)));
      }
    }
    return s;
  }

 private:
  std::mt19937 rng_;
};

}  // namespace tw::example_test

#endif  // TOWERFLOW_DATA_EXAMPLE_TEST_ORACLE_H_
