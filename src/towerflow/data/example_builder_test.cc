// ExampleBuilder: its bytes parse with libprotobuf as the tf.train.Example
// they describe, with towerflow's own parser (ParseSingleExample) too, are the
// same for equal builders, and a key that is not UTF-8 is refused by name.
#include "towerflow/data/example_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "example.pb.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw::io {
namespace {

tensorflow::Example ParseWithProtobuf(const std::string& bytes) {
  tensorflow::Example example;
  EXPECT_TRUE(example.ParseFromString(bytes));
  return example;
}

TEST(ExampleBuilderTest, BytesParseAsTheExampleTheyDescribe) {
  ExampleBuilder builder;
  const std::vector<int64_t> labels = {7, -3, int64_t{1} << 40};
  builder.SetBytes("image", std::string("\x00\xff\x10", 3))
      .SetInt64("label", labels)
      .SetFloat("weight", {0.5f, -1.25f})
      .SetBytes("tags", std::vector<std::string>{"a", "", "bc"});
  EXPECT_EQ(builder.num_features(), 4);
  auto bytes = builder.Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const tensorflow::Example ex = ParseWithProtobuf(*bytes);
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.size(), 4u);
  ASSERT_TRUE(f.at("image").has_bytes_list());
  EXPECT_EQ(f.at("image").bytes_list().value(0), std::string("\x00\xff\x10", 3));
  ASSERT_TRUE(f.at("label").has_int64_list());
  ASSERT_EQ(f.at("label").int64_list().value_size(), 3);
  EXPECT_EQ(f.at("label").int64_list().value(2), int64_t{1} << 40);
  EXPECT_EQ(f.at("label").int64_list().value(1), -3);
  ASSERT_TRUE(f.at("weight").has_float_list());
  EXPECT_EQ(f.at("weight").float_list().value(1), -1.25f);
  ASSERT_EQ(f.at("tags").bytes_list().value_size(), 3);
  EXPECT_EQ(f.at("tags").bytes_list().value(2), "bc");
}

TEST(ExampleBuilderTest, SetReplacesTheFeatureAndItsKind) {
  ExampleBuilder builder;
  builder.SetInt64("x", {1, 2}).SetFloat("x", {3.5f});
  auto bytes = builder.Serialize();
  ASSERT_TRUE(bytes.ok());
  const tensorflow::Example ex = ParseWithProtobuf(*bytes);
  const auto& x = ex.features().feature().at("x");
  EXPECT_FALSE(x.has_int64_list());
  ASSERT_TRUE(x.has_float_list());
  EXPECT_EQ(x.float_list().value_size(), 1);
  builder.Clear();
  EXPECT_TRUE(builder.empty());
  auto empty = builder.Serialize();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(ParseWithProtobuf(*empty).features().feature().size(), 0u);
}

TEST(ExampleBuilderTest, EqualBuildersGiveEqualBytes) {
  ExampleBuilder a, b;
  a.SetInt64("z", {1}).SetFloat("a", {2}).SetBytes("m", "v");
  b.SetBytes("m", "v").SetInt64("z", {1}).SetFloat("a", {2});
  auto x = a.Serialize(), y = b.Serialize();
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(*x, *y);
}

TEST(ExampleBuilderTest, KeysMustBeUtf8) {
  for (const std::string& good : {std::string("plain"), std::string("caf\xc3\xa9"), std::string("\xf0\x9f\x98\x80")}) {
    ExampleBuilder builder;
    builder.SetInt64(good, {1});
    auto bytes = builder.Serialize();
    ASSERT_TRUE(bytes.ok()) << good;
    EXPECT_EQ(ParseWithProtobuf(*bytes).features().feature().count(good), 1u);
  }
  // A lone continuation byte, a truncated sequence, an overlong '/', a UTF-16
  // surrogate, a code point past U+10FFFF.
  for (const std::string& bad : {std::string("a\x80"), std::string("caf\xc3"), std::string("\xc0\xaf"),
                                 std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80")}) {
    ExampleBuilder builder;
    builder.SetInt64("ok", {1}).SetInt64(bad, {2});
    auto bytes = builder.Serialize();
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(bytes.status().code(), Code::kInvalidArgument);
    EXPECT_NE(bytes.status().message().find("not valid UTF-8"), std::string::npos) << bytes.status().ToString();
  }
}

// Written GZIP-compressed, read back and parsed by towerflow's own parser.
TEST(ExampleBuilderTest, RecordsRoundTripThroughTheWriterAndTheParser) {
  const std::string path = ::testing::TempDir() + "/example_builder_test.tfrecord.gz";
  {
    auto writer = RecordWriter::Open(path, {.compression = Compression::kGzip});
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (int i = 0; i < 3; ++i) {
      ExampleBuilder builder;
      builder.SetInt64("label", {i}).SetFloat("x", {0.5f * i, 1.0f}).SetBytes("name", "r" + std::to_string(i));
      auto bytes = builder.Serialize();
      ASSERT_TRUE(bytes.ok());
      ASSERT_TRUE((*writer)->WriteRecord(*bytes).ok());
    }
    ASSERT_TRUE((*writer)->Close().ok());
  }
  auto reader = RecordReader::Open(path, {.compression = Compression::kGzip});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string record;
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());
  ASSERT_TRUE((*reader)->ReadRecord(&record).ok());  // the second one: i = 1

  Graph graph;
  Scope root(graph);
  Output serialized = Const(root, Tensor::String(record));
  ParsedFeatures f = ParseSingleExample(root, serialized,
                                        {{"label", FixedLenFeature(kInt64)},
                                         {"x", FixedLenFeature(kFloat32, TensorShape{2})},
                                         {"name", FixedLenFeature(kString)}});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  auto out = session.Run({f["label"], f["x"], f["name"]});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].scalar<int64_t>(), 1);
  EXPECT_EQ((*out)[1].flat<float>()[0], 0.5f);
  EXPECT_EQ((*out)[1].flat<float>()[1], 1.0f);
  EXPECT_EQ((*out)[2].scalar<std::string>(), "r1");
}

}  // namespace
}  // namespace tw::io
