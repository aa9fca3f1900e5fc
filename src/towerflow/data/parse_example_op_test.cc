#include "towerflow/data/parse_example_op.h"

#include <gtest/gtest.h>

#include "towerflow/data/example_test_util.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

using example_test::AddBytes;
using example_test::AddFloats;
using example_test::AddInt64s;
using example_test::Serialize;

std::string Int32Bytes(const std::vector<int32_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int32_t));
}

class ParseExampleOpTest : public ::testing::Test {
 protected:
  Graph graph_;
  Scope root_{graph_};
};

// The seed's get_input(): parse_single_example, decode_raw, reshape.
TEST_F(ParseExampleOpTest, SeedSchemaThroughDecodeRawAndReshape) {
  tensorflow::Example ex;
  AddBytes(&ex, "x", {Int32Bytes({1, 2, 3, 4, 5, 6})});
  AddBytes(&ex, "labels", {Int32Bytes({0, 1})});
  auto serialized = Placeholder(root_, kString, PartialShape(TensorShape()));
  auto f = io::ParseSingleExample(root_, serialized,
                                  {{"x", io::FixedLenFeature(kString)}, {"labels", io::FixedLenFeature(kString)}});
  auto x = Reshape(root_, io::DecodeRaw(root_, f["x"], kInt32), {2, 3});
  auto labels = Reshape(root_, io::DecodeRaw(root_, f["labels"], kInt32), {1, 2});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(Output(f["x"]).shape(), PartialShape(TensorShape()));
  Session session(graph_);
  auto out = session.Run({{serialized, Tensor::String(Serialize(ex))}}, {x, labels});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape(), (TensorShape{2, 3}));
  EXPECT_EQ((*out)[0].ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*out)[1].ToVector<int32_t>(), (std::vector<int32_t>{0, 1}));
}

TEST_F(ParseExampleOpTest, SingleExampleDenseDefaultsAndSparse) {
  tensorflow::Example ex;
  AddInt64s(&ex, "ids", {7, 8, 9, 10, 11, 12});
  AddFloats(&ex, "weights", {0.5f, 1.5f, 2.5f});
  AddBytes(&ex, "tags", {"a", "bc"});
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseSingleExample(
      root_, serialized,
      {{"ids", io::FixedLenFeature(kInt64, {2, 3})},
       {"score", io::FixedLenFeature(kFloat32, {}, Tensor::Scalar<float>(-1.0f))},
       {"name", io::FixedLenFeature(kString, {2}, Tensor::FromVector<std::string>({"x", "y"}, TensorShape{2}))},
       {"weights", io::VarLenFeature(kFloat32)},
       {"tags", io::VarLenFeature(kString)},
       {"missing", io::VarLenFeature(kInt64)}});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(Output(f["ids"]).shape(), PartialShape({2, 3}));
  EXPECT_EQ(Output(f["ids"]).dtype(), kInt64);
  EXPECT_TRUE(f["weights"].is_sparse());
  EXPECT_EQ(f["weights"].indices().shape(), PartialShape({-1, 1}));
  EXPECT_EQ(f["weights"].values().dtype(), kFloat32);
  EXPECT_EQ(f["tags"].values().dtype(), kString);
  EXPECT_EQ(f["weights"].dense_shape().shape(), PartialShape({1}));

  Session session(graph_);
  auto out = session.Run({{serialized, Tensor::String(Serialize(ex))}},
                         {f["ids"], f["score"], f["name"], f["weights"].indices(), f["weights"].values(),
                          f["weights"].dense_shape(), f["tags"].values(), f["missing"].values(),
                          f["missing"].dense_shape()});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto& r = *out;
  EXPECT_EQ(r[0].shape(), (TensorShape{2, 3}));
  EXPECT_EQ(r[0].ToVector<int64_t>(), (std::vector<int64_t>{7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(r[1].scalar<float>(), -1.0f);  // absent: the default
  EXPECT_EQ(r[2].ToVector<std::string>(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(r[3].shape(), (TensorShape{3, 1}));
  EXPECT_EQ(r[3].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r[4].ToVector<float>(), (std::vector<float>{0.5f, 1.5f, 2.5f}));
  EXPECT_EQ(r[5].ToVector<int64_t>(), std::vector<int64_t>{3});
  EXPECT_EQ(r[6].ToVector<std::string>(), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r[7].NumElements(), 0);
  EXPECT_EQ(r[8].ToVector<int64_t>(), std::vector<int64_t>{0});
}

TEST_F(ParseExampleOpTest, BatchOfExamples) {
  std::vector<std::string> batch;
  for (int i = 0; i < 3; ++i) {
    tensorflow::Example ex;
    AddInt64s(&ex, "label", {i});
    AddFloats(&ex, "xy", {float(i), float(10 * i)});
    std::vector<int64_t> ragged(static_cast<size_t>(i), 100 + i);
    AddInt64s(&ex, "ragged", ragged);
    if (i != 1) AddBytes(&ex, "name", {std::string("n").append(std::to_string(i))});
    batch.push_back(Serialize(ex));
  }
  auto serialized = Placeholder(root_, kString, PartialShape({3}));
  auto f = io::ParseExample(root_, serialized,
                            {{"label", io::FixedLenFeature(kInt64)},
                             {"xy", io::FixedLenFeature(kFloat32, {2})},
                             {"name", io::FixedLenFeature(kString, {}, Tensor::String("none"))},
                             {"ragged", io::VarLenFeature(kInt64)}});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_EQ(Output(f["xy"]).shape(), PartialShape({3, 2}));
  EXPECT_EQ(Output(f["label"]).shape(), PartialShape({3}));
  EXPECT_EQ(f["ragged"].indices().shape(), PartialShape({-1, 2}));
  EXPECT_EQ(f["ragged"].dense_shape().shape(), PartialShape({2}));

  Session session(graph_, {.intra_op_threads = 3});
  auto out = session.Run({{serialized, Tensor::FromVector<std::string>(batch, TensorShape{3})}},
                         {f["label"], f["xy"], f["name"], f["ragged"].indices(), f["ragged"].values(),
                          f["ragged"].dense_shape()});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto& r = *out;
  EXPECT_EQ(r[0].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r[1].shape(), (TensorShape{3, 2}));
  EXPECT_EQ(r[1].ToVector<float>(), (std::vector<float>{0, 0, 1, 10, 2, 20}));
  EXPECT_EQ(r[2].ToVector<std::string>(), (std::vector<std::string>{"n0", "none", "n2"}));
  EXPECT_EQ(r[3].shape(), (TensorShape{3, 2}));
  EXPECT_EQ(r[3].ToVector<int64_t>(), (std::vector<int64_t>{1, 0, 2, 0, 2, 1}));
  EXPECT_EQ(r[4].ToVector<int64_t>(), (std::vector<int64_t>{101, 102, 102}));
  EXPECT_EQ(r[5].ToVector<int64_t>(), (std::vector<int64_t>{3, 2}));
}

TEST_F(ParseExampleOpTest, LargeBatchParsesInParallel) {
  const int n = 257;
  std::vector<std::string> batch;
  for (int i = 0; i < n; ++i) {
    tensorflow::Example ex;
    AddInt64s(&ex, "v", {i, -i});
    batch.push_back(Serialize(ex));
  }
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseExample(root_, serialized, {{"v", io::FixedLenFeature(kInt64, {2})}});
  ASSERT_TRUE(root_.ok());
  Session session(graph_, {.intra_op_threads = 4});
  auto out = session.Run({{serialized, Tensor::FromVector<std::string>(batch, TensorShape{n})}}, {f["v"]});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ((*out)[0].shape(), (TensorShape{n, 2}));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ((*out)[0].data<int64_t>()[2 * i], i);
    ASSERT_EQ((*out)[0].data<int64_t>()[2 * i + 1], -i);
  }
}

TEST_F(ParseExampleOpTest, MissingRequiredFeatureNamesTheKeyAndTheNode) {
  tensorflow::Example ex;
  AddInt64s(&ex, "other", {1});
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseSingleExample(root_.WithOpName("parse"), serialized, {{"label", io::FixedLenFeature(kInt64)}});
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  auto out = session.Run({{serialized, Tensor::String(Serialize(ex))}}, {f["label"]});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Feature: label (data type: int64) is required but could not be found."),
            std::string::npos)
      << out.status().ToString();
  EXPECT_NE(out.status().message().find("'parse' (ParseSingleExample)"), std::string::npos) << out.status().ToString();
}

TEST_F(ParseExampleOpTest, DtypeMismatchAndBadBytesAreInvalidArgument) {
  tensorflow::Example ex;
  AddFloats(&ex, "label", {1.0f});
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseExample(root_, serialized, {{"label", io::FixedLenFeature(kInt64)}});
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  auto out = session.Run({{serialized, Tensor::FromVector<std::string>({Serialize(ex)}, TensorShape{1})}},
                         {f["label"]});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Feature: label.  Data types don't match. Data type: float Expected type: int64"),
            std::string::npos)
      << out.status().ToString();

  auto garbage = session.Run({{serialized, Tensor::FromVector<std::string>({"\xff\xff\xff"}, TensorShape{1})}},
                             {f["label"]});
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), Code::kInvalidArgument);
  EXPECT_NE(garbage.status().message().find("Could not parse example input"), std::string::npos)
      << garbage.status().ToString();
}

TEST_F(ParseExampleOpTest, NamesNameTheFailingExample) {
  tensorflow::Example good, bad;
  AddInt64s(&good, "label", {1});
  AddFloats(&bad, "other", {1.0f});
  auto serialized = Placeholder(root_, kString);
  auto names = Placeholder(root_, kString);
  auto f = io::ParseExample(root_, serialized, {{"label", io::FixedLenFeature(kInt64)}}, names);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_);
  const Tensor batch = Tensor::FromVector<std::string>({Serialize(good), Serialize(bad)}, TensorShape{2});
  auto out = session.Run({{serialized, batch}, {names, Tensor::FromVector<std::string>({"a.tfrecord:0", "b.tfrecord:52"},
                                                                                        TensorShape{2})}},
                         {f["label"]});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Name: b.tfrecord:52, Feature: label (data type: int64) is required"),
            std::string::npos)
      << out.status().ToString();
  // Garbage bytes are named too.
  auto garbage = session.Run(
      {{serialized, Tensor::FromVector<std::string>({"\xff\xff"}, TensorShape{1})},
       {names, Tensor::FromVector<std::string>({"c.tfrecord:16"}, TensorShape{1})}},
      {f["label"]});
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("Name: c.tfrecord:16, Could not parse example input"), std::string::npos)
      << garbage.status().ToString();
  // Empty names: TF's "<unknown>"; a wrong count is an error of its own.
  auto unnamed = session.Run({{serialized, batch}, {names, Tensor(kString, TensorShape{0})}}, {f["label"]});
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.status().message().find("Name: <unknown>, Feature: label"), std::string::npos)
      << unnamed.status().ToString();
  auto miscounted = session.Run(
      {{serialized, batch}, {names, Tensor::FromVector<std::string>({"only-one"}, TensorShape{1})}}, {f["label"]});
  ASSERT_FALSE(miscounted.ok());
  EXPECT_EQ(miscounted.status().code(), Code::kInvalidArgument);
  EXPECT_NE(miscounted.status().message().find("Expected names to be empty or a vector of 2"), std::string::npos)
      << miscounted.status().ToString();
}

TEST_F(ParseExampleOpTest, SerializedOfTheWrongRankIsInvalidArgument) {
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseSingleExample(root_, serialized, {{"a", io::FixedLenFeature(kInt64)}});
  ASSERT_TRUE(root_.ok());
  Session session(graph_);
  auto out = session.Run({{serialized, Tensor::FromVector<std::string>({"", ""}, TensorShape{2})}}, {f["a"]});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Expected serialized to be a scalar, got shape: [2]"), std::string::npos)
      << out.status().ToString();
  // A statically known wrong rank fails at build time.
  auto vec = Placeholder(root_, kString, PartialShape({4}));
  io::ParseSingleExample(root_, vec, {{"a", io::FixedLenFeature(kInt64)}});
  EXPECT_FALSE(root_.ok());
}

TEST_F(ParseExampleOpTest, DefaultsComeFromTheGraphAndMayChange) {
  tensorflow::Example empty;
  auto serialized = Placeholder(root_, kString);
  auto f = io::ParseSingleExample(root_, serialized, {{"a", io::FixedLenFeature(kInt64, {2}, Tensor::Vec<int64_t>({4, 5}))}});
  ASSERT_TRUE(root_.ok());
  Output a = f["a"];
  // Input 2 is the default of the first int64 feature (after serialized and
  // names: the layout in parse_example_op.h).
  const Output default_input = a.node->input(2);
  ASSERT_EQ(default_input.node->op(), "Const");
  Session session(graph_);
  auto first = session.Run({{serialized, Tensor::String(Serialize(empty))}}, {a});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)[0].ToVector<int64_t>(), (std::vector<int64_t>{4, 5}));
  auto fed = session.Run({{serialized, Tensor::String(Serialize(empty))}, {default_input, Tensor::Vec<int64_t>({9, 8})}},
                         {a});
  ASSERT_TRUE(fed.ok()) << fed.status().ToString();
  EXPECT_EQ((*fed)[0].ToVector<int64_t>(), (std::vector<int64_t>{9, 8}));
  auto wrong = session.Run({{serialized, Tensor::String(Serialize(empty))}, {default_input, Tensor::Vec<int64_t>({1})}},
                           {a});
  ASSERT_FALSE(wrong.ok());  // the feed's shape check or the kernel's default check
  EXPECT_EQ(wrong.status().code(), Code::kInvalidArgument) << wrong.status().ToString();
}

TEST_F(ParseExampleOpTest, BuildErrorsAreRecordedInTheScope) {
  {
    Graph g;
    Scope s(g);
    auto in = Placeholder(s, kString);
    io::ParseSingleExample(s, in, {{"a", io::FixedLenFeature(kInt32)}});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("Invalid config dtype: int32"), std::string::npos) << s.status().ToString();
  }
  {
    Graph g;
    Scope s(g);
    auto in = Placeholder(s, kString);
    io::ParseSingleExample(s, in, {{"a", io::FixedLenFeature(kFloat32, {3}, Tensor::Scalar<float>(1))}});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("Default value of feature 'a'"), std::string::npos) << s.status().ToString();
  }
  {
    Graph g;
    Scope s(g);
    auto in = Placeholder(s, kString);
    auto f = io::ParseSingleExample(s, in, {{"a", io::FixedLenFeature(kFloat32)}, {"b", io::VarLenFeature(kInt64)}});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Output nope = f["nope"];
    EXPECT_FALSE(nope.valid());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kNotFound);
    EXPECT_NE(s.status().message().find("'nope'"), std::string::npos);
    EXPECT_NE(s.status().message().find("a, b"), std::string::npos) << s.status().ToString();
  }
  {
    Graph g;
    Scope s(g);
    auto in = Placeholder(s, kString);
    auto f = io::ParseSingleExample(s, in, {{"b", io::VarLenFeature(kInt64)}});
    Output as_dense = f["b"];
    EXPECT_FALSE(as_dense.valid());
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("VarLenFeature"), std::string::npos) << s.status().ToString();
  }
}

TEST(ParseExampleLayoutTest, AttrsRoundTripAndBadCountsAreRejected) {
  AttrMap attrs;
  attrs.Set("dense_keys", Tensor::Vec<std::string>({"a", "b", "c"}));
  attrs.Set("Tdense", std::vector<DataType>{kString, kFloat32, kString});
  attrs.Set("dense_shape_ranks", std::vector<int64_t>{0, 2, 1});
  attrs.Set("dense_shape_dims", std::vector<int64_t>{2, 3, 4});
  attrs.Set("sparse_keys", Tensor::Vec<std::string>({"s"}));
  attrs.Set("sparse_types", std::vector<DataType>{kInt64});
  attrs.Set("Nsparse", int64_t{1});
  attrs.Set("Ndense_float", int64_t{1});
  attrs.Set("Ndense_int64", int64_t{0});
  attrs.Set("Ndense_string", int64_t{2});
  attrs.Set("Nsparse_float", int64_t{0});
  attrs.Set("Nsparse_int64", int64_t{1});
  attrs.Set("Nsparse_string", int64_t{0});
  auto layout = ParseExampleLayoutFromAttrs(attrs);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->config.dense[1].shape, (TensorShape{2, 3}));
  EXPECT_EQ(layout->config.dense[2].shape, (TensorShape{4}));
  // Outputs: indices(1), values float(0) int64(1) string(0), shapes(1), dense float(1) int64(0) string(2).
  EXPECT_EQ(layout->SparseValuesOutput(0), 1);
  EXPECT_EQ(layout->SparseShapeOutput(0), 2);
  EXPECT_EQ(layout->DenseOutput(1), 3);  // the float
  EXPECT_EQ(layout->DenseOutput(0), 4);  // first string
  EXPECT_EQ(layout->DenseOutput(2), 5);
  // Inputs: serialized, names, then the defaults by dtype group.
  EXPECT_EQ(layout->DenseDefaultInput(1), 2);
  EXPECT_EQ(layout->DenseDefaultInput(2), 4);

  attrs.Set("Ndense_string", int64_t{1});
  auto bad = ParseExampleLayoutFromAttrs(attrs);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Ndense_string"), std::string::npos) << bad.status().ToString();
  attrs.Set("Ndense_string", int64_t{2});
  attrs.Set("dense_shape_dims", std::vector<int64_t>{2, 3});
  EXPECT_FALSE(ParseExampleLayoutFromAttrs(attrs).ok());
}

}  // namespace
}  // namespace tw
