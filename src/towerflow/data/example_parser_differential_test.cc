// The fast Example parser against libprotobuf, on valid, odd and malformed bytes.
//
// The oracle is tensorflow::Example::ParseFromArray (generated from
// data/proto/example.proto) followed by a straightforward conversion to a
// ParseResult with TF's rules. The fast parser must agree with it on every input:
// accept exactly what libprotobuf accepts (so there are no documented exceptions:
// where TF's own fast parser is stricter than libprotobuf, e.g. it rejects unknown
// fields inside Features or a map entry without a key, towerflow follows
// libprotobuf, as the slow path of TF's parse_example does), give the same error
// for the same bad feature, and the same values bit for bit otherwise. Inputs:
// thousands of random Examples written with varied encodings, random mutations
// of them, every prefix of valid Examples, hand-made malformed classes (truncated
// varints, lengths past the end, bad wire types, unmatched groups, nesting at
// libprotobuf's recursion limit, invalid UTF-8 keys) and random garbage. Nothing
// may crash: run under -fsanitize=address,undefined to check that too.
#include <gtest/gtest.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "towerflow/data/example_parser.h"
#include "towerflow/data/example_test_util.h"

namespace tw {
namespace {

using namespace example_test;  // NOLINT: test helpers

constexpr char kParseErrorPrefix[] = "Could not parse example input, value: '";

// ---------------------------------------------------------------------------------
// The oracle: libprotobuf, then TF's rules written out plainly.

DataType KindType(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return kString;
    case tensorflow::Feature::kFloatList: return kFloat32;
    case tensorflow::Feature::kInt64List: return kInt64;
    default: return DataType::kInvalid;
  }
}

int64_t KindCount(const tensorflow::Feature& f) {
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: return f.bytes_list().value_size();
    case tensorflow::Feature::kFloatList: return f.float_list().value_size();
    case tensorflow::Feature::kInt64List: return f.int64_list().value_size();
    default: return 0;
  }
}

// Writes f's values to t's elements [offset, offset + count).
void CopyValues(const tensorflow::Feature& f, Tensor* t, int64_t offset) {
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

Status ReferenceParse(std::string_view bytes, const ParseConfig& config, ParseResult* out) {
  TW_RETURN_IF_ERROR(config.Validate());
  tensorflow::Example ex;
  if (!ex.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return errors::InvalidArgument(kParseErrorPrefix);
  }
  const auto& map = ex.features().feature();
  auto find = [&](const std::string& key) -> const tensorflow::Feature* {
    auto it = map.find(key);
    return it == map.end() || it->second.kind_case() == tensorflow::Feature::KIND_NOT_SET
               ? nullptr
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
      return errors::InvalidArgument("Name: <unknown>, Feature: ", d.key, " (data type: ",
                                     DataTypeName(d.dtype), ") is required but could not be found.");
    }
    if (KindType(*f) != d.dtype) return type_error(d.key, KindType(*f), d.dtype);
    if (KindCount(*f) != d.shape.num_elements()) {
      return errors::InvalidArgument(
          "Name: <unknown>, Key: ", d.key, ", Index: 0.  Number of ",
          d.dtype == kString ? "bytes" : DataTypeName(d.dtype), " values != expected.  Values size: ",
          KindCount(*f), " but output shape: ", d.shape.ToString());
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
::testing::AssertionResult SameTensor(const Tensor& a, const Tensor& b) {
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

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 400)) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return bytes.size() > 400 ? out + "..." : out;
}

struct Tally {
  int accepted = 0;
  int rejected_bytes = 0;  // libprotobuf refused them
  int feature_errors = 0;  // parsed, but a configured feature is wrong
};

// Parses `bytes` both ways under `config` and expects the same outcome.
void ExpectAgree(std::string_view bytes, const ParseConfig& config, Tally* tally = nullptr) {
  ParseResult want, got;
  const Status want_status = ReferenceParse(bytes, config, &want);
  const Status got_status = ParseSingleExample(bytes, config, &got);
  SCOPED_TRACE("bytes: " + Hex(bytes));
  ASSERT_EQ(got_status.code(), want_status.code()) << got_status.ToString() << " vs oracle "
                                                   << want_status.ToString();
  if (!want_status.ok()) {
    if (want_status.message() == kParseErrorPrefix) {
      EXPECT_EQ(got_status.message().rfind(kParseErrorPrefix, 0), 0u) << got_status.message();
      if (tally) ++tally->rejected_bytes;
    } else {
      EXPECT_EQ(got_status.message(), want_status.message());
      if (tally) ++tally->feature_errors;
    }
    return;
  }
  if (tally) ++tally->accepted;
  ASSERT_EQ(got.dense.size(), want.dense.size());
  for (size_t i = 0; i < want.dense.size(); ++i) {
    EXPECT_TRUE(SameTensor(got.dense[i], want.dense[i])) << config.dense[i].key;
  }
  ASSERT_EQ(got.sparse.size(), want.sparse.size());
  for (size_t i = 0; i < want.sparse.size(); ++i) {
    EXPECT_TRUE(SameTensor(got.sparse[i].indices, want.sparse[i].indices)) << config.sparse[i].key;
    EXPECT_TRUE(SameTensor(got.sparse[i].values, want.sparse[i].values)) << config.sparse[i].key;
    EXPECT_TRUE(SameTensor(got.sparse[i].dense_shape, want.sparse[i].dense_shape));
  }
}

// Two configs over keys a..f: mostly sparse and defaulted (parses often
// succeed), and strictly dense (feature errors are common).
ParseConfig LenientConfig() {
  ParseConfig c;
  c.sparse = {Sparse("a", kInt64), Sparse("b", kFloat32), Sparse("c", kString)};
  c.dense = {Dense("d", kInt64, {2}, Tensor::Vec<int64_t>({7, 8})),
             Dense("e", kFloat32, {}, Tensor::Scalar(0.25f)),
             Dense("f", kString, {1}, Tensor::Vec<std::string>({"dflt"}))};
  return c;
}
ParseConfig StrictConfig() {
  ParseConfig c;
  c.dense = {Dense("a", kInt64, {2}), Dense("b", kFloat32, {3}), Dense("c", kString, {})};
  c.sparse = {Sparse("d", kInt64)};
  return c;
}

// ---------------------------------------------------------------------------------
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
      case 0: return Uniform(100);
      case 1: return -Uniform(1000);
      case 2: return static_cast<int64_t>(rng_()) << 32 | rng_();
      default: return INT64_MIN + Uniform(3);
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
      case 0: return Tag(field, 0) + Varint(static_cast<uint64_t>(RandomInt64()));
      case 1: return Tag(field, 1) + RandomBytes(8);
      case 2: return Len(field, RandomBytes(Uniform(6)));
      case 3: return Tag(field, 3) + Tag(1, 0) + Varint(1) + Tag(field, 4);
      default: return Tag(field, 5) + RandomBytes(4);
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

// ---------------------------------------------------------------------------------

class ExampleParserDifferentialTest : public ::testing::Test {
 protected:
  // libprotobuf logs each invalid UTF-8 key it meets.
  google::protobuf::LogSilencer silence_;
  const std::vector<ParseConfig> configs_ = {LenientConfig(), StrictConfig()};
};

TEST_F(ExampleParserDifferentialTest, RandomExamplesAndMutations) {
  Generator gen(20240611);
  Tally original, mutated;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = i % 3 == 0 ? gen.Canonical() : gen.Example();
    if (gen.Chance(0.05)) bytes += gen.Example();  // concatenated Examples merge
    for (const ParseConfig& config : configs_) {
      ExpectAgree(bytes, config, &original);
      for (int m = 0; m < 4; ++m) ExpectAgree(gen.Mutate(bytes), config, &mutated);
    }
    if (HasFatalFailure() || testing::Test::HasFailure()) break;
  }
  // The corpus must exercise every outcome, or the comparison proves little.
  EXPECT_GT(original.accepted, 1000);
  EXPECT_GT(original.feature_errors, 2000);
  EXPECT_GT(original.rejected_bytes, 200);  // invalid UTF-8 keys
  EXPECT_GT(mutated.accepted, 500);
  EXPECT_GT(mutated.feature_errors, 800);
  EXPECT_GT(mutated.rejected_bytes, 10000);
  std::printf("original: %d ok, %d feature errors, %d unparseable; mutated: %d, %d, %d\n",
              original.accepted, original.feature_errors, original.rejected_bytes,
              mutated.accepted, mutated.feature_errors, mutated.rejected_bytes);
}

TEST_F(ExampleParserDifferentialTest, EveryPrefixOfValidExamples) {
  Generator gen(7);
  for (int i = 0; i < 40; ++i) {
    const std::string bytes = gen.Example();
    for (size_t n = 0; n <= bytes.size(); ++n) {
      for (const ParseConfig& config : configs_) ExpectAgree(bytes.substr(0, n), config);
    }
    if (testing::Test::HasFailure()) break;
  }
}

TEST_F(ExampleParserDifferentialTest, RandomGarbage) {
  Generator gen(99);
  Tally tally;
  for (int i = 0; i < 20000; ++i) {
    ExpectAgree(gen.RandomBytes(gen.Uniform(64)), configs_[i % 2], &tally);
    if (testing::Test::HasFailure()) break;
  }
  EXPECT_GT(tally.rejected_bytes, 10000);
  EXPECT_GT(tally.accepted + tally.feature_errors, 100);  // short garbage often parses
}

// Hand-made members of each malformed class, inside each nesting level.
TEST_F(ExampleParserDifferentialTest, MalformedClasses) {
  const std::string good_list = PackedInt64s({1, 2});
  // Wraps a Feature payload at every level: list -> Feature -> entry -> Example.
  auto in_feature = [](const std::string& feature) { return ExampleOf(Entry("a", feature)); };
  auto in_list = [&](const std::string& list) { return in_feature(Len(3, list)); };
  std::vector<std::string> cases = {
      // Truncated varints: a tag, a length, a value.
      "\x80", "\x0a\x80", in_list("\x08\x80"), in_list(Tag(1, 2) + "\x02\x80"),
      // Lengths past the end at each level.
      "\x0a\x05\x0a\x03", in_feature("\x1a\x10\x08\x01"), in_list("\x0a\x09\x01"),
      ExampleOf(Len(1, "\x0a\x7f")),
      // A length of 2^31 and more, and a 6-byte length.
      "\x0a\xff\xff\xff\xff\x07", "\x0a\x80\x80\x80\x80\x08", "\x0a\x80\x80\x80\x80\x80\x00",
      "\x0a\x80\x80\x80\x80\x00",
      // 10- and 11-byte varints, and a 10-byte one whose last byte is large.
      in_list(Tag(1, 0) + std::string(9, '\xff') + "\x01"),
      in_list(Tag(1, 0) + std::string(10, '\xff') + "\x01"),
      in_list(Tag(1, 0) + std::string(9, '\xff') + "\x7f"),
      in_list(Len(1, std::string(10, '\x80') + std::string(1, '\x00'))),
      // A packed varint run ending mid-varint; packed floats not a multiple of 4.
      in_list(Len(1, "\x01\x80")), in_feature(Len(2, Len(1, "abcde"))),
      in_feature(Len(2, Len(1, "abcd"))), in_feature(Len(2, Tag(1, 5) + "abc")),
      // Wire types 6 and 7, field number 0, tag 0, a stray end-group tag.
      "\x0e", "\x0f", in_list("\x06"), in_list("\x00"), in_feature(Tag(9, 4)), "\x0c",
      std::string("\x00", 1), "\x01" + std::string(8, 'x'),
      // Groups: matched, unmatched, unterminated, ended by the enclosing message.
      Tag(5, 3) + Tag(5, 4), Tag(5, 3) + Tag(6, 4), Tag(5, 3), in_list(Tag(5, 3) + Tag(5, 4)),
      in_list(Tag(5, 3)) + Tag(5, 4), Tag(5, 3) + Tag(6, 3) + Tag(6, 4) + Tag(5, 4),
      // Tags of 5 bytes (top bits dropped) and of 6.
      "\x8a\x80\x80\x80\x10\x00", "\x8a\x80\x80\x80\x80\x00\x00",
      // Known fields with the wrong wire type are unknown fields.
      Tag(1, 0) + Varint(1), in_feature(Tag(1, 0) + Varint(3) + Len(3, good_list)),
      in_list(Tag(1, 5) + "abcd" + Tag(1, 1) + "abcdefgh"),
      // Entries: no key, no value, two keys, a key of the wrong wire type.
      ExampleOf(Len(1, Len(2, Len(3, good_list)))), ExampleOf(Len(1, Len(1, "a"))),
      ExampleOf(Len(1, Len(1, "zz") + Len(2, Len(3, good_list)) + Len(1, "a"))),
      ExampleOf(Len(1, Tag(1, 0) + Varint(5) + Len(2, Len(3, good_list)))),
  };
  for (const std::string& bytes : cases) {
    for (const ParseConfig& config : configs_) ExpectAgree(bytes, config);
  }
}

// libprotobuf allows 100 levels of messages and groups; so must the parser,
// counting the same way, at every level of an Example.
TEST_F(ExampleParserDifferentialTest, NestingAtTheRecursionLimit) {
  auto groups = [](int depth) {
    std::string open, close;
    for (int i = 0; i < depth; ++i) {
      open += Tag(9, 3);
      close = Tag(9, 4) + close;
    }
    return open + close;
  };
  Tally tally;
  for (int depth = 93; depth <= 102; ++depth) {
    const std::string g = groups(depth);
    const std::vector<std::string> cases = {
        g + ExampleOf(Entry("a", Len(3, PackedInt64s({1, 2})))),
        ExampleOf(g + Entry("a", Len(3, PackedInt64s({1, 2})))),
        ExampleOf(Len(1, g + Len(1, "a") + Len(2, Len(3, PackedInt64s({1, 2}))))),
        ExampleOf(Entry("a", g + Len(3, PackedInt64s({1, 2})))),
        ExampleOf(Entry("a", Len(3, g + PackedInt64s({1, 2})))),
        ExampleOf(Entry("zz", Len(1, g + Len(1, "x")))),
    };
    for (const std::string& bytes : cases) {
      for (const ParseConfig& config : configs_) ExpectAgree(bytes, config, &tally);
    }
  }
  EXPECT_GT(tally.accepted + tally.feature_errors, 20);
  EXPECT_GT(tally.rejected_bytes, 20);
}

TEST_F(ExampleParserDifferentialTest, Utf8KeysAsProto3Checks) {
  const std::vector<std::string> keys = {
      "plain", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",  // valid
      "\x80", "\xc0\x80", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
      "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xc3", "\xe2\x82",
      "abcdefgh\xc3", "abcdefghijklmnop\xff", "\xef\xbf\xbf", "\xee\x80\x80"};
  for (const std::string& key : keys) {
    for (const ParseConfig& config : configs_) {
      ExpectAgree(ExampleOf(Entry(key, Len(3, PackedInt64s({1})))), config);
    }
  }
}

// A batch on a pool equals the single-example results stacked, and its error is
// that of the first bad example.
TEST_F(ExampleParserDifferentialTest, BatchMatchesSingles) {
  Generator gen(5);
  ThreadPool pool("parse", 3);
  const ParseConfig config = LenientConfig();
  std::vector<std::string> records;
  while (records.size() < 300) {
    std::string bytes = gen.Example();
    ParseResult unused;
    if (ParseSingleExample(bytes, config, &unused).ok()) records.push_back(bytes + Len(15, std::string(2000, 'p')));
  }
  std::vector<std::string_view> views(records.begin(), records.end());
  ParseResult batch;
  ASSERT_TRUE(ParseExampleBatch(views, config, &batch, &pool).ok());
  std::vector<ParseResult> singles(records.size());
  int64_t longest[3] = {0, 0, 0}, offset[3] = {0, 0, 0};
  for (size_t e = 0; e < records.size(); ++e) {
    ASSERT_TRUE(ParseSingleExample(records[e], config, &singles[e]).ok());
    for (size_t d = 0; d < config.dense.size(); ++d) {
      const Tensor& row = singles[e].dense[d];
      Tensor slice(row.dtype(), row.shape());
      const int64_t n = row.NumElements();
      auto* base = static_cast<const char*>(batch.dense[d].raw_data());
      if (row.dtype() == kString) {
        for (int64_t j = 0; j < n; ++j) {
          slice.data<std::string>()[j] = batch.dense[d].data<std::string>()[e * n + j];
        }
      } else {
        std::memcpy(slice.raw_data(), base + e * row.TotalBytes(), row.TotalBytes());
      }
      EXPECT_TRUE(SameTensor(slice, row)) << e;
    }
    for (size_t s = 0; s < 3; ++s) {
      const SparseTensorValue& one = singles[e].sparse[s];
      const int64_t n = one.values.NumElements();
      longest[s] = std::max(longest[s], n);
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(batch.sparse[s].indices.data<int64_t>()[2 * (offset[s] + j)], static_cast<int64_t>(e));
        EXPECT_EQ(batch.sparse[s].indices.data<int64_t>()[2 * (offset[s] + j) + 1], j);
      }
      Tensor slice(one.values.dtype(), TensorShape{n});
      for (int64_t j = 0; j < n; ++j) {
        if (slice.dtype() == kString) {
          slice.data<std::string>()[j] = batch.sparse[s].values.data<std::string>()[offset[s] + j];
        } else if (slice.dtype() == kInt64) {
          slice.data<int64_t>()[j] = batch.sparse[s].values.data<int64_t>()[offset[s] + j];
        } else {
          slice.data<float>()[j] = batch.sparse[s].values.data<float>()[offset[s] + j];
        }
      }
      EXPECT_TRUE(SameTensor(slice, one.values)) << e;
      offset[s] += n;
    }
  }
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(batch.sparse[s].values.NumElements(), offset[s]);
    EXPECT_EQ(batch.sparse[s].dense_shape.ToVector<int64_t>(),
              (std::vector<int64_t>{static_cast<int64_t>(records.size()), longest[s]}));
  }

  // Break two records: the batch reports the first, with its index.
  records[123] = gen.Mutate(records[123]);
  while (ParseSingleExample(records[123], config, &singles[0]).ok()) records[123] = gen.Mutate(records[123]);
  records[250] = "\xff";
  views.assign(records.begin(), records.end());
  Status single = ParseSingleExample(records[123], config, &singles[0]);
  Status batched = ParseExampleBatch(views, config, &batch, &pool);
  EXPECT_EQ(batched.code(), Code::kInvalidArgument);
  std::string expected = single.message();
  const size_t at = expected.find(", Index: 0.");
  if (at != std::string::npos) expected.replace(at, 11, ", Index: 123.");
  EXPECT_EQ(batched.message(), expected);
}

}  // namespace
}  // namespace tw
