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
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "towerflow/data/example_parser.h"
#include "towerflow/data/example_test_oracle.h"

namespace tw {
namespace {

using namespace example_test;  // NOLINT: test helpers

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
  ASSERT_EQ(got_status.code(), want_status.code())
      << got_status.ToString() << " vs oracle " << want_status.ToString();
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
  std::printf("original: %d ok, %d feature errors, %d unparseable; mutated: %d, %d, %d\n", original.accepted,
              original.feature_errors, original.rejected_bytes, mutated.accepted, mutated.feature_errors,
              mutated.rejected_bytes);
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
      "\x80",
      "\x0a\x80",
      in_list("\x08\x80"),
      in_list(Tag(1, 2) + "\x02\x80"),
      // Lengths past the end at each level.
      "\x0a\x05\x0a\x03",
      in_feature("\x1a\x10\x08\x01"),
      in_list("\x0a\x09\x01"),
      ExampleOf(Len(1, "\x0a\x7f")),
      // A length of 2^31 and more, and a 6-byte length.
      "\x0a\xff\xff\xff\xff\x07",
      "\x0a\x80\x80\x80\x80\x08",
      "\x0a\x80\x80\x80\x80\x80\x00",
      "\x0a\x80\x80\x80\x80\x00",
      // 10- and 11-byte varints, and a 10-byte one whose last byte is large.
      in_list(Tag(1, 0) + std::string(9, '\xff') + "\x01"),
      in_list(Tag(1, 0) + std::string(10, '\xff') + "\x01"),
      in_list(Tag(1, 0) + std::string(9, '\xff') + "\x7f"),
      in_list(Len(1, std::string(10, '\x80') + std::string(1, '\x00'))),
      // A packed varint run ending mid-varint; packed floats not a multiple of 4.
      in_list(Len(1, "\x01\x80")),
      in_feature(Len(2, Len(1, "abcde"))),
      in_feature(Len(2, Len(1, "abcd"))),
      in_feature(Len(2, Tag(1, 5) + "abc")),
      // Wire types 6 and 7, field number 0, tag 0, a stray end-group tag.
      "\x0e",
      "\x0f",
      in_list("\x06"),
      in_list("\x00"),
      in_feature(Tag(9, 4)),
      "\x0c",
      std::string("\x00", 1),
      "\x01" + std::string(8, 'x'),
      // Groups: matched, unmatched, unterminated, ended by the enclosing message.
      Tag(5, 3) + Tag(5, 4),
      Tag(5, 3) + Tag(6, 4),
      Tag(5, 3),
      in_list(Tag(5, 3) + Tag(5, 4)),
      in_list(Tag(5, 3)) + Tag(5, 4),
      Tag(5, 3) + Tag(6, 3) + Tag(6, 4) + Tag(5, 4),
      // Tags of 5 bytes (top bits dropped) and of 6.
      "\x8a\x80\x80\x80\x10\x00",
      "\x8a\x80\x80\x80\x80\x00\x00",
      // Known fields with the wrong wire type are unknown fields.
      Tag(1, 0) + Varint(1),
      in_feature(Tag(1, 0) + Varint(3) + Len(3, good_list)),
      in_list(Tag(1, 5) + "abcd" + Tag(1, 1) + "abcdefgh"),
      // Entries: no key, no value, two keys, a key of the wrong wire type.
      ExampleOf(Len(1, Len(2, Len(3, good_list)))),
      ExampleOf(Len(1, Len(1, "a"))),
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
  const std::vector<std::string> keys = {"plain",
                                         "\xc3\xa9",
                                         "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80",
                                         "\xf4\x8f\xbf\xbf",  // valid
                                         "\x80",
                                         "\xc0\x80",
                                         "\xc1\xbf",
                                         "\xe0\x80\xaf",
                                         "\xed\xa0\x80",
                                         "\xed\xbf\xbf",
                                         "\xf4\x90\x80\x80",
                                         "\xf5\x80\x80\x80",
                                         "\xf8\x88\x80\x80\x80",
                                         "\xc3",
                                         "\xe2\x82",
                                         "abcdefgh\xc3",
                                         "abcdefghijklmnop\xff",
                                         "\xef\xbf\xbf",
                                         "\xee\x80\x80"};
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
    if (ParseSingleExample(bytes, config, &unused).ok())
      records.push_back(bytes + Len(15, std::string(2000, 'p')));
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
