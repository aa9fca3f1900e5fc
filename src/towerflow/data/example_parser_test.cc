// Unit tests of the tf.train.Example parser: values of every type and encoding,
// defaults, VarLen outputs, batches, merging, unknown fields, and every error with
// its code and text. Malformed bytes and the comparison against libprotobuf are in
// example_parser_differential_test.cc.
#include "towerflow/data/example_parser.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "towerflow/data/example_test_util.h"

namespace tw {
namespace {

using namespace example_test;  // NOLINT: test helpers

ParseResult MustParse(std::string_view bytes, const ParseConfig& config) {
  ParseResult out;
  Status s = ParseSingleExample(bytes, config, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Status ParseStatus(std::string_view bytes, const ParseConfig& config) {
  ParseResult out;
  return ParseSingleExample(bytes, config, &out);
}

TEST(ExampleProtoTest, FieldNumbersAndPackingAreTensorFlows) {
  auto field = [](const google::protobuf::Descriptor* d, const char* name) {
    return d->FindFieldByName(name);
  };
  EXPECT_EQ(tensorflow::Example::descriptor()->full_name(), "tensorflow.Example");
  EXPECT_EQ(field(tensorflow::Example::descriptor(), "features")->number(), 1);
  EXPECT_EQ(field(tensorflow::SequenceExample::descriptor(), "context")->number(), 1);
  EXPECT_EQ(field(tensorflow::SequenceExample::descriptor(), "feature_lists")->number(), 2);
  EXPECT_EQ(field(tensorflow::Features::descriptor(), "feature")->number(), 1);
  EXPECT_TRUE(field(tensorflow::Features::descriptor(), "feature")->is_map());
  EXPECT_EQ(field(tensorflow::FeatureList::descriptor(), "feature")->number(), 1);
  EXPECT_EQ(field(tensorflow::FeatureLists::descriptor(), "feature_list")->number(), 1);
  EXPECT_EQ(field(tensorflow::Feature::descriptor(), "bytes_list")->number(), 1);
  EXPECT_EQ(field(tensorflow::Feature::descriptor(), "float_list")->number(), 2);
  EXPECT_EQ(field(tensorflow::Feature::descriptor(), "int64_list")->number(), 3);
  EXPECT_NE(field(tensorflow::Feature::descriptor(), "int64_list")->containing_oneof(), nullptr);
  EXPECT_FALSE(field(tensorflow::BytesList::descriptor(), "value")->is_packed());
  EXPECT_TRUE(field(tensorflow::FloatList::descriptor(), "value")->is_packed());
  EXPECT_TRUE(field(tensorflow::Int64List::descriptor(), "value")->is_packed());
}

TEST(ExampleParserTest, DenseBytesFloatInt64) {
  tensorflow::Example ex;
  AddBytes(&ex, "b", {"hello", std::string("\0\xff", 2)});
  AddFloats(&ex, "f", {1.5f, -2.0f, 3.25f, 0.0f});
  AddInt64s(&ex, "i", {-1, 0, INT64_MAX, INT64_MIN, 300, 7});
  AddInt64s(&ex, "ignored", {1, 2, 3});
  ParseConfig config;
  config.dense = {Dense("b", kString, {2}), Dense("f", kFloat32, {2, 2}), Dense("i", kInt64, {3, 2})};
  ParseResult out = MustParse(Serialize(ex), config);
  ASSERT_EQ(out.dense.size(), 3u);
  EXPECT_EQ(out.dense[0].shape(), TensorShape({2}));
  EXPECT_EQ(out.dense[0].ToVector<std::string>(),
            (std::vector<std::string>{"hello", std::string("\0\xff", 2)}));
  EXPECT_EQ(out.dense[1].shape(), TensorShape({2, 2}));
  EXPECT_EQ(out.dense[1].ToVector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f}));
  EXPECT_EQ(out.dense[2].ToVector<int64_t>(), (std::vector<int64_t>{-1, 0, INT64_MAX, INT64_MIN, 300, 7}));
  EXPECT_TRUE(out.sparse.empty());
}

TEST(ExampleParserTest, FashionMnistRecordScalarLabel) {
  tensorflow::Example ex;
  std::string image(784, '\0');
  for (int i = 0; i < 784; ++i) image[i] = static_cast<char>(i * 7);
  AddBytes(&ex, "image", {image});
  AddInt64s(&ex, "label", {9});
  ParseConfig config;
  config.dense = {Dense("image", kString, {}), Dense("label", kInt64, {})};
  auto parser = ExampleParser::Create(config);
  ASSERT_TRUE(parser.ok());
  ParseResult out;
  ASSERT_TRUE(parser->ParseSingle(Serialize(ex), &out).ok());
  EXPECT_EQ(out.dense[0].shape(), TensorShape({}));
  EXPECT_EQ(out.dense[0].scalar<std::string>(), image);
  EXPECT_EQ(out.dense[1].scalar<int64_t>(), 9);
}

TEST(ExampleParserTest, UnpackedAndSplitEncodings) {
  // float_list { value: 1 (unpacked) value: [2, 3] (packed) value: 4 (unpacked) }
  std::string floats = Fixed32(1, 1.0f) + PackedFloats({2.0f, 3.0f}) + Fixed32(1, 4.0f);
  // int64_list { value: 5 (unpacked) value: [-6, 7] (packed) value: [] (packed) }
  std::string ints = Tag(1, 0) + Varint(5) + PackedInt64s({-6, 7}) + PackedInt64s({});
  // bytes_list values may be split by unknown fields.
  std::string bytes = Len(1, "x") + Tag(9, 0) + Varint(1) + Len(1, "yz");
  std::string serialized =
      ExampleOf(Entry("f", Len(2, floats)) + Entry("i", Len(3, ints)) + Entry("b", Len(1, bytes)));
  ParseConfig config;
  config.dense = {Dense("f", kFloat32, {4}), Dense("i", kInt64, {3}), Dense("b", kString, {2})};
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(out.dense[1].ToVector<int64_t>(), (std::vector<int64_t>{5, -6, 7}));
  EXPECT_EQ(out.dense[2].ToVector<std::string>(), (std::vector<std::string>{"x", "yz"}));

  // libprotobuf reads the same values from these bytes.
  tensorflow::Example ref;
  ASSERT_TRUE(ref.ParseFromString(serialized));
  EXPECT_EQ(ref.features().feature().at("f").float_list().value_size(), 4);
  EXPECT_EQ(ref.features().feature().at("i").int64_list().value(1), -6);
}

TEST(ExampleParserTest, NonMinimalVarintsAndEntryFieldOrder) {
  // Value before key, a 10-byte varint for -1, lengths padded with 0x80 bytes.
  std::string ints = Tag(1, 0) + std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
  std::string padded_len = Tag(1, 2) + std::string("\x82\x80\x00", 3) + "ab";
  std::string entry = Len(2, Len(3, ints)) + Len(1, "k");
  std::string serialized = ExampleOf(Len(1, entry) + Entry("s", Len(1, padded_len)));
  ParseConfig config;
  config.dense = {Dense("k", kInt64, {}), Dense("s", kString, {})};
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].scalar<int64_t>(), -1);
  EXPECT_EQ(out.dense[1].scalar<std::string>(), "ab");
}

TEST(ExampleParserTest, DefaultsForMissingAndKindlessFeatures) {
  // "none" is present with no kind set: missing for a dense feature.
  std::string serialized = ExampleOf(Entry("none", "") + Entry("empty", Len(2, "")));
  ParseConfig config;
  config.dense = {Dense("absent", kFloat32, {2}, Tensor::Vec<float>({0.5f, 1.5f})),
                  Dense("none", kString, {}, Tensor::String("dflt")), Dense("empty", kFloat32, {0}),
                  Dense("absent_empty", kInt64, {0}, Tensor(kInt64, TensorShape{0}))};
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].ToVector<float>(), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(out.dense[1].scalar<std::string>(), "dflt");
  EXPECT_EQ(out.dense[2].shape(), TensorShape({0}));
  EXPECT_EQ(out.dense[3].shape(), TensorShape({0}));
  // A present feature never takes the default, even when empty.
  config.dense = {Dense("empty", kFloat32, {2}, Tensor::Vec<float>({1, 2}))};
  Status s = ParseStatus(serialized, config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Name: <unknown>, Key: empty, Index: 0.  Number of float values != expected.  "
            "Values size: 0 but output shape: [2]");
}

TEST(ExampleParserTest, MissingRequiredFeature) {
  tensorflow::Example ex;
  AddBytes(&ex, "image", {"x"});
  ParseConfig config;
  config.dense = {Dense("image", kString, {}), Dense("label", kInt64, {})};
  Status s = ParseStatus(Serialize(ex), config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Name: <unknown>, Feature: label (data type: int64) is required but could not be found. "
            "The record has: image.");
  // Kind not set counts as missing, also for an empty Example.
  s = ParseStatus(ExampleOf(Entry("label", "")), config);
  EXPECT_NE(s.message().find("Feature: image (data type: string) is required"), std::string::npos);
  s = ParseStatus("", config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Feature: image"), std::string::npos);
}

TEST(ExampleParserTest, WrongValueCount) {
  tensorflow::Example ex;
  AddInt64s(&ex, "label", {1, 2, 3});
  AddFloats(&ex, "x", {1});
  AddBytes(&ex, "s", {"a", "b"});
  ParseConfig config;
  config.dense = {Dense("label", kInt64, {2})};
  Status s = ParseStatus(Serialize(ex), config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Name: <unknown>, Key: label, Index: 0.  Number of int64 values != expected.  "
            "Values size: 3 but output shape: [2]");
  config.dense = {Dense("x", kFloat32, {2, 3})};
  EXPECT_EQ(ParseStatus(Serialize(ex), config).message(),
            "Name: <unknown>, Key: x, Index: 0.  Number of float values != expected.  "
            "Values size: 1 but output shape: [2,3]");
  config.dense = {Dense("s", kString, {})};
  EXPECT_EQ(ParseStatus(Serialize(ex), config).message(),
            "Name: <unknown>, Key: s, Index: 0.  Number of bytes values != expected.  "
            "Values size: 2 but output shape: []");
}

TEST(ExampleParserTest, DataTypeMismatch) {
  tensorflow::Example ex;
  AddFloats(&ex, "label", {1});
  (*ex.mutable_features()->mutable_feature())["empty_bytes"].mutable_bytes_list();
  ParseConfig config;
  config.dense = {Dense("label", kInt64, {}, Tensor::Scalar<int64_t>(0))};
  Status s = ParseStatus(Serialize(ex), config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Name: <unknown>, Feature: label.  Data types don't match. Data type: float "
            "Expected type: int64");
  // Sparse features too, even with no values: the kind names the type.
  config.dense.clear();
  config.sparse = {Sparse("empty_bytes", kFloat32)};
  EXPECT_EQ(ParseStatus(Serialize(ex), config).message(),
            "Name: <unknown>, Feature: empty_bytes.  Data types don't match. Data type: string "
            "Expected type: float");
}

TEST(ExampleParserTest, VarLenFeatures) {
  tensorflow::Example ex;
  AddInt64s(&ex, "ids", {4, 5, 6});
  AddBytes(&ex, "words", {"a", "", "ccc"});
  (*ex.mutable_features()->mutable_feature())["kindless"];
  ParseConfig config;
  config.sparse = {Sparse("ids", kInt64), Sparse("words", kString), Sparse("absent", kFloat32),
                   Sparse("kindless", kInt64)};
  ParseResult out = MustParse(Serialize(ex), config);
  ASSERT_EQ(out.sparse.size(), 4u);
  EXPECT_EQ(out.sparse[0].indices.shape(), TensorShape({3, 1}));
  EXPECT_EQ(out.sparse[0].indices.ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(out.sparse[0].values.ToVector<int64_t>(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(out.sparse[0].dense_shape.ToVector<int64_t>(), (std::vector<int64_t>{3}));
  EXPECT_EQ(out.sparse[1].values.ToVector<std::string>(), (std::vector<std::string>{"a", "", "ccc"}));
  for (int i : {2, 3}) {
    EXPECT_EQ(out.sparse[i].indices.shape(), TensorShape({0, 1}));
    EXPECT_EQ(out.sparse[i].values.shape(), TensorShape({0}));
    EXPECT_EQ(out.sparse[i].dense_shape.ToVector<int64_t>(), (std::vector<int64_t>{0}));
  }
  EXPECT_EQ(out.sparse[2].values.dtype(), kFloat32);
}

// The batch of TF's parse_example: dense [batch] + shape, sparse (example, index).
ParseConfig BatchConfig() {
  ParseConfig config;
  config.dense = {Dense("x", kString, {}), Dense("v", kFloat32, {2}, Tensor::Vec<float>({-1, -2}))};
  config.sparse = {Sparse("labels", kInt64)};
  return config;
}

std::vector<std::string> BatchExamples(int n) {
  std::vector<std::string> out;
  for (int e = 0; e < n; ++e) {
    tensorflow::Example ex;
    AddBytes(&ex, "x", {"rec" + std::to_string(e)});
    if (e % 3 != 1) AddFloats(&ex, "v", {static_cast<float>(e), 0.5f});
    std::vector<int64_t> labels;
    for (int j = 0; j < e % 4; ++j) labels.push_back(e * 10 + j);
    AddInt64s(&ex, "labels", labels);
    out.push_back(Serialize(ex));
  }
  return out;
}

void ExpectBatchValues(const ParseResult& out, int n) {
  ASSERT_EQ(out.dense.size(), 2u);
  EXPECT_EQ(out.dense[0].shape(), TensorShape({n}));
  EXPECT_EQ(out.dense[1].shape(), TensorShape({n, 2}));
  std::vector<int64_t> indices, values;
  for (int e = 0; e < n; ++e) {
    EXPECT_EQ(out.dense[0].flat<std::string>()[e], "rec" + std::to_string(e));
    const float v0 = e % 3 != 1 ? static_cast<float>(e) : -1.0f;
    const float v1 = e % 3 != 1 ? 0.5f : -2.0f;
    EXPECT_EQ(out.dense[1].flat<float>()[2 * e], v0) << e;
    EXPECT_EQ(out.dense[1].flat<float>()[2 * e + 1], v1) << e;
    for (int j = 0; j < e % 4; ++j) {
      indices.push_back(e);
      indices.push_back(j);
      values.push_back(e * 10 + j);
    }
  }
  const auto total = static_cast<int64_t>(values.size());
  EXPECT_EQ(out.sparse[0].indices.shape(), TensorShape({total, 2}));
  EXPECT_EQ(out.sparse[0].indices.ToVector<int64_t>(), indices);
  EXPECT_EQ(out.sparse[0].values.ToVector<int64_t>(), values);
  EXPECT_EQ(out.sparse[0].dense_shape.ToVector<int64_t>(),
            (std::vector<int64_t>{n, n >= 4 ? 3 : std::max(0, n - 1)}));
}

TEST(ExampleParserTest, BatchInlineAndOnAPool) {
  const int n = 203;
  std::vector<std::string> records = BatchExamples(n);
  std::vector<std::string_view> views(records.begin(), records.end());
  ParseResult out;
  ASSERT_TRUE(ParseExampleBatch(views, BatchConfig(), &out).ok());
  ExpectBatchValues(out, n);

  ThreadPool pool("parse", 3);
  auto parser = ExampleParser::Create(BatchConfig());
  ASSERT_TRUE(parser.ok());
  ParseResult pooled;
  // Big enough per example that ParallelFor really shards.
  for (auto& r : records) r += Len(15, std::string(3000, 'p'));
  views.assign(records.begin(), records.end());
  ASSERT_TRUE(parser->ParseBatch(views, &pooled, &pool).ok());
  ExpectBatchValues(pooled, n);
}

TEST(ExampleParserTest, EmptyBatchGivesEmptyOutputs) {
  ParseResult out;
  ASSERT_TRUE(ParseExampleBatch({}, BatchConfig(), &out).ok());
  EXPECT_EQ(out.dense[0].shape(), TensorShape({0}));
  EXPECT_EQ(out.dense[1].shape(), TensorShape({0, 2}));
  EXPECT_EQ(out.sparse[0].indices.shape(), TensorShape({0, 2}));
  EXPECT_EQ(out.sparse[0].values.shape(), TensorShape({0}));
  EXPECT_EQ(out.sparse[0].dense_shape.ToVector<int64_t>(), (std::vector<int64_t>{0, 0}));
}

TEST(ExampleParserTest, BatchErrorNamesTheFirstBadExample) {
  std::vector<std::string> records = BatchExamples(50);
  tensorflow::Example bad;
  AddBytes(&bad, "x", {"a", "b"});
  records[7] = Serialize(bad);
  records[30] = "\xff";  // later and also bad: the first one is reported
  std::vector<std::string_view> views(records.begin(), records.end());
  ThreadPool pool("parse", 3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    ParseResult out;
    Status s = ParseExampleBatch(views, BatchConfig(), &out, p);
    EXPECT_EQ(s.code(), Code::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "Name: <unknown>, Key: x, Index: 7.  Number of bytes values != expected.  "
              "Values size: 2 but output shape: []");
  }
  records[7] = Serialize(tensorflow::Example());
  views.assign(records.begin(), records.end());
  ParseResult out;
  EXPECT_EQ(ParseExampleBatch(views, BatchConfig(), &out, &pool).message(),
            "Name: <unknown>, Feature: x (data type: string) is required but could not be found. "
            "The record has no features.");
}

TEST(ExampleParserTest, ZeroSizedShapesAndWireTypeMismatchInABatch) {
  tensorflow::Example ex;
  AddFloats(&ex, "x", {});
  AddFloats(&ex, "ids", {1.0f, 2.0f});
  ParseConfig config;
  config.dense = {Dense("x", kFloat32, {2, 0}),
                  Dense("y", kString, {0, 3}, Tensor(kString, TensorShape{0, 3}))};
  std::vector<std::string> records = {Serialize(ex), Serialize(ex)};
  std::vector<std::string_view> views(records.begin(), records.end());
  ParseResult out;
  ASSERT_TRUE(ParseExampleBatch(views, config, &out).ok());
  EXPECT_EQ(out.dense[0].shape(), TensorShape({2, 2, 0}));
  EXPECT_EQ(out.dense[1].shape(), TensorShape({2, 0, 3}));
  // A float list where int64 is configured never reaches the output buffers.
  config.sparse = {Sparse("ids", kInt64)};
  Status s = ParseExampleBatch(views, config, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Name: <unknown>, Feature: ids.  Data types don't match. Data type: float "
            "Expected type: int64");
}

TEST(ExampleParserTest, BatchShapeOverflowIsInvalidArgument) {
  ParseConfig config;
  config.dense = {Dense("x", kFloat32, {INT64_MAX / 2})};
  std::vector<std::string_view> views = {"", "", "", ""};
  ParseResult out;
  Status s = ParseExampleBatch(views, config, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
}

TEST(ExampleParserTest, ConcatenatedExamplesMergeLaterEntriesWin) {
  tensorflow::Example a, b;
  AddInt64s(&a, "label", {1});
  AddBytes(&a, "only_a", {"A"});
  AddFloats(&b, "label", {2.5f});  // replaces a's int64 list entirely
  AddBytes(&b, "only_b", {"B"});
  ParseConfig config;
  config.dense = {Dense("label", kFloat32, {}), Dense("only_a", kString, {}), Dense("only_b", kString, {})};
  const std::string serialized = Serialize(a) + Serialize(b);
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].scalar<float>(), 2.5f);
  EXPECT_EQ(out.dense[1].scalar<std::string>(), "A");
  EXPECT_EQ(out.dense[2].scalar<std::string>(), "B");
  // Same as libprotobuf's merge.
  tensorflow::Example merged;
  ASSERT_TRUE(merged.ParseFromString(serialized));
  EXPECT_EQ(merged.features().feature().at("label").kind_case(), tensorflow::Feature::kFloatList);
  // A later entry with no value replaces an earlier one with values: missing.
  const std::string cleared = serialized + ExampleOf(Len(1, Len(1, "label")));
  EXPECT_NE(ParseStatus(cleared, config).message().find("Feature: label (data type: float) is required"),
            std::string::npos);
}

TEST(ExampleParserTest, OneEntryMergesValuesAndOneofSwitchesDiscard) {
  // value {int64_list [1, 2]} value {int64_list [3]}: the lists merge.
  std::string merged_entry =
      Len(1, "k") + Len(2, Len(3, PackedInt64s({1, 2}))) + Len(2, Len(3, PackedInt64s({3})));
  // int64 [9, 9, 9], then float [0.5], then int64 [4, 5]: only the last kind's run.
  std::string switched = Len(3, PackedInt64s({9, 9, 9})) + Len(2, PackedFloats({0.5f})) +
                         Len(3, PackedInt64s({4})) + Len(7, "unknown") + Len(3, PackedInt64s({5}));
  std::string serialized = ExampleOf(
      Len(1, merged_entry) + Entry("s", switched) +
      Len(1, Len(1, "t") + Len(2, Len(2, PackedFloats({1.0f}))) + Len(2, Len(3, PackedInt64s({6, 7})))));
  ParseConfig config;
  config.dense = {Dense("k", kInt64, {3}), Dense("s", kInt64, {2}), Dense("t", kInt64, {2})};
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(out.dense[1].ToVector<int64_t>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(out.dense[2].ToVector<int64_t>(), (std::vector<int64_t>{6, 7}));
  tensorflow::Example ref;
  ASSERT_TRUE(ref.ParseFromString(serialized));
  EXPECT_EQ(ref.features().feature().at("k").int64_list().value_size(), 3);
  EXPECT_EQ(ref.features().feature().at("s").int64_list().value_size(), 2);
  EXPECT_EQ(ref.features().feature().at("t").int64_list().value_size(), 2);
}

TEST(ExampleParserTest, UnknownFieldsOfEveryWireTypeAreSkipped) {
  const std::string unknown = Tag(20, 0) + Varint(UINT64_MAX) +       // varint
                              Tag(21, 1) + std::string(8, '\x01') +   // fixed64
                              Len(22, "payload") +                    // length-delimited
                              Tag(23, 3) + Tag(1, 0) + Varint(5) +    // group {
                              Tag(24, 3) + Tag(24, 4) + Tag(23, 4) +  //   group {} }
                              Tag(25, 5) + std::string(4, '\x02');    // fixed32
  std::string list = unknown + PackedFloats({1.0f, 2.0f}) + unknown;
  std::string feature = unknown + Len(2, list) + unknown;
  std::string entry = unknown + Len(1, "f") + unknown + Len(2, feature) + unknown;
  // Wrong wire types for known field numbers are unknown fields too.
  std::string features = unknown + Len(1, entry) + Tag(1, 0) + Varint(3) + unknown;
  std::string serialized = unknown + Len(1, features) + Tag(1, 5) + std::string(4, 'z') + unknown;
  ParseConfig config;
  config.dense = {Dense("f", kFloat32, {2})};
  ParseResult out = MustParse(serialized, config);
  EXPECT_EQ(out.dense[0].ToVector<float>(), (std::vector<float>{1.0f, 2.0f}));
  tensorflow::Example ref;
  EXPECT_TRUE(ref.ParseFromString(serialized));
}

TEST(ExampleParserTest, ManyFeaturesUseTheHashedIndex) {
  tensorflow::Example ex;
  ParseConfig config;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "feature_" + std::to_string(i);
    AddInt64s(&ex, key, {i});
    AddInt64s(&ex, key + "_unconfigured", {-i});
    if (i % 2 == 0) {
      config.dense.push_back(Dense(key, kInt64, {}));
    } else {
      config.sparse.push_back(Sparse(key, kInt64));
    }
  }
  config.sparse.push_back(Sparse("", kInt64));  // the empty key is a key like any other
  AddInt64s(&ex, "", {77, 78});
  ParseResult out = MustParse(Serialize(ex), config);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(out.dense[i].scalar<int64_t>(), 2 * i);
    EXPECT_EQ(out.sparse[i].values.ToVector<int64_t>(), (std::vector<int64_t>{2 * i + 1}));
  }
  EXPECT_EQ(out.sparse[20].values.ToVector<int64_t>(), (std::vector<int64_t>{77, 78}));
}

TEST(ExampleParserTest, ConfigValidation) {
  ParseConfig config;
  config.dense = {Dense("a", kInt32, {})};
  Status s = ParseStatus("", config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "Invalid config dtype: int32");
  config.dense.clear();
  config.sparse = {Sparse("a", kFloat64)};
  EXPECT_EQ(config.Validate().message(), "Invalid config dtype: double");
  config.sparse = {Sparse("a", kInt64)};
  config.dense = {Dense("a", kInt64, {})};
  EXPECT_EQ(config.Validate().code(), Code::kInvalidArgument);
  EXPECT_NE(config.Validate().message().find("Duplicate feature key 'a'"), std::string::npos);
  config.sparse.clear();
  config.dense = {Dense("a", kInt64, {2}, Tensor::Vec<float>({1, 2}))};
  EXPECT_NE(config.Validate().message().find("has dtype float but the feature has dtype int64"),
            std::string::npos);
  config.dense = {Dense("a", kInt64, {2}, Tensor::Vec<int64_t>({1, 2, 3}))};
  EXPECT_NE(config.Validate().message().find("has shape [3] but the feature has shape [2]"),
            std::string::npos);
  config.dense = {Dense("a", kInt64, {2}, Tensor())};
  EXPECT_EQ(config.Validate().code(), Code::kInvalidArgument);
  EXPECT_EQ(ExampleParser::Create(config).status().code(), Code::kInvalidArgument);
  config.dense = {Dense("a", kInt64, {2}, Tensor::Vec<int64_t>({1, 2}))};
  EXPECT_TRUE(config.Validate().ok());
}

TEST(ExampleParserTest, UnparseableBytesShowAnEscapedPrefix) {
  ParseConfig config;
  config.sparse = {Sparse("a", kInt64)};
  Status s = ParseStatus(std::string("\x0a\x05\x01'\n", 5), config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "Could not parse example input, value: '\\n\\005\\001\\'\\n'");
  std::string long_bad = Len(1, std::string(100, 'a')) + "\xff";
  s = ParseStatus(long_bad, config);
  EXPECT_EQ(s.message(),
            "Could not parse example input, value: '\\nd" + std::string(38, 'a') + "...' (103 bytes)");
}

TEST(ExampleParserTest, KeysMustBeValidUtf8LikeProto3Strings) {
  ParseConfig config;
  config.sparse = {Sparse("k", kInt64)};
  EXPECT_TRUE(ParseStatus(ExampleOf(Entry("\xc3\xa9t\xc3\xa9", Len(3, ""))), config).ok());
  const std::string bad = ExampleOf(Entry("\xc3(", Len(3, "")));
  EXPECT_EQ(ParseStatus(bad, config).code(), Code::kInvalidArgument);
  tensorflow::Example ref;
  google::protobuf::LogSilencer silence;  // libprotobuf logs the bad key
  EXPECT_FALSE(ref.ParseFromString(bad));
}

}  // namespace
}  // namespace tw
