#include "towerflow/data/decode_raw_op.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "towerflow/data/io_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// The little-endian bytes of `values`.
template <typename T>
std::string LittleEndianBytes(const std::vector<T>& values) {
  std::string out;
  for (T v : values) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big) std::reverse(b, b + sizeof(T));
    out.append(reinterpret_cast<const char*>(b), sizeof(T));
  }
  return out;
}
template <typename T>
std::string BigEndianBytes(const std::vector<T>& values) {
  std::string out;
  for (T v : values) {
    std::string le = LittleEndianBytes<T>({v});
    out.append(le.rbegin(), le.rend());
  }
  return out;
}

class DecodeRawTest : public ::testing::Test {
 protected:
  // Runs DecodeRaw on `strings` (shape `shape`) through a session.
  StatusOr<Tensor> Run(const std::vector<std::string>& strings, const TensorShape& shape, DataType out_type,
                       bool little_endian = true) {
    Graph graph;
    Scope root(graph);
    auto bytes = Placeholder(root.WithOpName("bytes"), kString);
    auto out = io::DecodeRaw(root.WithOpName("decode"), bytes, out_type, little_endian);
    if (!root.ok()) return root.status();
    Session session(graph);
    auto result = session.Run({{bytes, Tensor::FromVector<std::string>(strings, shape)}}, {out});
    if (!result.ok()) return result.status();
    return (*result)[0];
  }
};

TEST_F(DecodeRawTest, Uint8) {
  auto t = Run({std::string("\x01\x02\xff", 3)}, TensorShape{1}, kUInt8);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (TensorShape{1, 3}));
  EXPECT_EQ(t->ToVector<uint8_t>(), (std::vector<uint8_t>{1, 2, 255}));
}

TEST_F(DecodeRawTest, Int32ScalarInputGivesAVector) {
  const std::vector<int32_t> values = {1, -2, 70000, std::numeric_limits<int32_t>::min()};
  auto t = Run({LittleEndianBytes(values)}, TensorShape{}, kInt32);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (TensorShape{4}));
  EXPECT_EQ(t->ToVector<int32_t>(), values);
}

TEST_F(DecodeRawTest, Int64Matrix) {
  const std::vector<int64_t> a = {1, -1}, b = {int64_t{1} << 40, 7}, c = {0, -(int64_t{1} << 62)},
                             d = {3, 4};
  auto t = Run({LittleEndianBytes(a), LittleEndianBytes(b), LittleEndianBytes(c), LittleEndianBytes(d)},
               TensorShape{2, 2}, kInt64);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->shape(), (TensorShape{2, 2, 2}));
  EXPECT_EQ(t->ToVector<int64_t>(),
            (std::vector<int64_t>{1, -1, int64_t{1} << 40, 7, 0, -(int64_t{1} << 62), 3, 4}));
}

TEST_F(DecodeRawTest, FloatAndDouble) {
  const std::vector<float> f = {1.5f, -0.25f, 3e38f};
  auto tf = Run({LittleEndianBytes(f)}, TensorShape{1}, kFloat32);
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  EXPECT_EQ(tf->ToVector<float>(), f);
  const std::vector<double> d = {1e-300, -2.5};
  auto td = Run({LittleEndianBytes(d)}, TensorShape{1}, kFloat64);
  ASSERT_TRUE(td.ok()) << td.status().ToString();
  EXPECT_EQ(td->shape(), (TensorShape{1, 2}));
  EXPECT_EQ(td->ToVector<double>(), d);
}

TEST_F(DecodeRawTest, BoolTreatsAnyNonZeroByteAsTrue) {
  auto t = Run({std::string("\x00\x01\x07", 3)}, TensorShape{1}, kBool);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->ToVector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST_F(DecodeRawTest, BigEndianInputIsSwapped) {
  auto t = Run({std::string("\x00\x00\x01\x02", 4)}, TensorShape{1}, kInt32, /*little_endian=*/false);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->ToVector<int32_t>(), std::vector<int32_t>{258});
  const std::vector<double> d = {3.25, -1e10};
  auto td = Run({BigEndianBytes(d)}, TensorShape{1}, kFloat64, false);
  ASSERT_TRUE(td.ok()) << td.status().ToString();
  EXPECT_EQ(td->ToVector<double>(), d);
  const std::vector<int64_t> i = {0x0102030405060708};
  auto ti = Run({BigEndianBytes(i)}, TensorShape{1}, kInt64, false);
  ASSERT_TRUE(ti.ok()) << ti.status().ToString();
  EXPECT_EQ(ti->ToVector<int64_t>(), i);
  // Bytes are never swapped for one-byte types.
  auto tu = Run({std::string("\x01\x02", 2)}, TensorShape{1}, kUInt8, false);
  ASSERT_TRUE(tu.ok());
  EXPECT_EQ(tu->ToVector<uint8_t>(), (std::vector<uint8_t>{1, 2}));
}

TEST_F(DecodeRawTest, EmptyInputs) {
  auto none = Run({}, TensorShape{0}, kFloat32);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->shape(), (TensorShape{0, 0}));
  auto empty_strings = Run({"", ""}, TensorShape{2}, kInt32);
  ASSERT_TRUE(empty_strings.ok()) << empty_strings.status().ToString();
  EXPECT_EQ(empty_strings->shape(), (TensorShape{2, 0}));
}

TEST_F(DecodeRawTest, StringsOfDifferentSizesAreInvalid) {
  auto t = Run({"abcd", "abcd", "abcdefgh"}, TensorShape{3}, kUInt8);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("DecodeRaw requires input strings to all be the same size, but element 2 "
                                      "has size 8 != 4"),
            std::string::npos)
      << t.status().ToString();
  EXPECT_NE(t.status().message().find("'decode' (DecodeRaw)"), std::string::npos) << t.status().ToString();
}

TEST_F(DecodeRawTest, LengthNotAMultipleOfTheElementSizeIsInvalid) {
  auto t = Run({"abcdef"}, TensorShape{1}, kInt32);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("Input to DecodeRaw has length 6 that is not a multiple of 4, the size of int32"),
            std::string::npos)
      << t.status().ToString();
  auto d = Run({"abcdefghijk"}, TensorShape{1}, kFloat64);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("length 11 that is not a multiple of 8, the size of double"), std::string::npos)
      << d.status().ToString();
}

TEST_F(DecodeRawTest, StaticShapeAppendsAnUnknownDimension) {
  Graph graph;
  Scope root(graph);
  auto bytes = Placeholder(root, kString, PartialShape({5, 3}));
  auto out = io::DecodeRaw(root, bytes, kFloat32);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_EQ(out.shape(), PartialShape({5, 3, -1}));
}

TEST_F(DecodeRawTest, UnsupportedOutTypeIsABuildError) {
  Graph graph;
  Scope root(graph);
  auto bytes = Placeholder(root, kString);
  auto out = io::DecodeRaw(root, bytes, kString);
  EXPECT_FALSE(out.valid());
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("out_type"), std::string::npos) << root.status().ToString();
}

TEST(DecodeRawFunctionTest, ShapeAndFillWithoutASession) {
  const std::vector<int32_t> v = {5, 6, 7};
  Tensor bytes = Tensor::FromVector<std::string>({LittleEndianBytes(v), BigEndianBytes(v)}, TensorShape{2});
  auto shape = DecodeRawShape(bytes, kInt32);
  ASSERT_TRUE(shape.ok());
  ASSERT_EQ(*shape, (TensorShape{2, 3}));
  Tensor out(kInt32, *shape);
  DecodeRawFill(bytes, true, &out);
  EXPECT_EQ(out.data<int32_t>()[0], 5);
  EXPECT_EQ(out.data<int32_t>()[2], 7);
  EXPECT_EQ(out.data<int32_t>()[3], 5 << 24);  // the big-endian row read as little-endian
  EXPECT_FALSE(DecodeRawShape(Tensor::Scalar<int32_t>(1), kInt32).ok());
}

}  // namespace
}  // namespace tw
