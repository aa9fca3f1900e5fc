// The GPU kernels of the layout and indexing ops (layout_cuda.cu: Transpose,
// Tile, Pad, PadV2, ReverseV2; gather_cuda.cu: GatherV2, UnsortedSegmentSum, OneHot,
// Select, SelectV2) against their CPU twins (layout_kernels.cc,
// gather_kernels.cc): every dtype over odd and empty shapes, broadcasts,
// negative axes and ids, out-of-range one-hot indices, and the errors with the
// same codes and messages (the argument checks are shared: layout_args.h,
// gather_args.h). The kernels only move elements, or add them in the CPU
// twin's order (UnsortedSegmentSum), so results must be equal, not close.
// The registration tests need no GPU; the rest skip without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/gather_ops.h"
#include "towerflow/graph/ops/layout_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/kernels/register_all.h"

namespace tw {
namespace {

using parity::Case;
using parity::RandomTensor;
using V = const std::vector<Output>&;

// The dtypes of the GPU kernels (device memory), and int32 (the host path).
const std::vector<DataType>& Types() { return parity::AllTypes(); }

std::string Name(DataType t) { return std::string(DataTypeName(t)); }

Output Ints(const Scope& s, const std::vector<int32_t>& v, TensorShape shape) {
  return Const(s, Tensor::FromVector<int32_t>(v, shape));
}

// A scalar of `dtype` holding v (bool: v != 0).
Tensor ScalarOf(DataType dtype, int v) {
  switch (dtype) {
    case kFloat32: return Tensor::Scalar<float>(static_cast<float>(v));
    case kFloat64: return Tensor::Scalar<double>(v);
    case kInt32: return Tensor::Scalar<int32_t>(v);
    case kInt64: return Tensor::Scalar<int64_t>(v);
    case kUInt8: return Tensor::Scalar<uint8_t>(static_cast<uint8_t>(v));
    default: return Tensor::Scalar<bool>(v != 0);
  }
}

Case Exact(std::string name, std::vector<Tensor> inputs, decltype(Case::build) build) {
  Case c{std::move(name), std::move(inputs), std::move(build)};
  c.rtol = 0;
  c.atol = 0;
  return c;
}

// ---- Registration, checked without a GPU ----

class IndexingCudaRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureKernelsRegistered();
    RegisterCudaKernels(gpu_, KernelRegistry::Global());
  }
  const KernelDef* Find(const Output& o) const { return gpu_.Find(*o.node, kDeviceGpu); }
  void Expect(const Output& o, std::vector<int> in) {
    const KernelDef* k = Find(o);
    ASSERT_NE(k, nullptr) << o.node->DebugName() << " has no GPU kernel";
    EXPECT_EQ(k->host_memory_inputs, in) << o.node->DebugName();
    EXPECT_TRUE(k->host_memory_outputs.empty()) << o.node->DebugName();
  }
  KernelRegistry gpu_;
};

TEST_F(IndexingCudaRegistryTest, DeviceKernelsKeepIndicesAndShapesOnTheHost) {
  Graph g;
  Scope s(g);
  for (DataType t : {kFloat32, kFloat64, kInt64, kUInt8, kBool}) {
    Output x = Placeholder(s, t, PartialShape({4, 3}));
    Output c = Placeholder(s, kBool, PartialShape({4, 3}));
    Output ids = Placeholder(s, kInt64, PartialShape({4}));
    Expect(Transpose(s, x, std::vector<int32_t>{1, 0}), {1});
    Expect(Tile(s, x, Ints(s, {2, 1}, {2})), {1});
    Expect(Reverse(s, x, std::vector<int32_t>{1}), {1});
    Expect(Pad(s, x, Ints(s, {1, 1, 0, 2}, {2, 2})), {1});
    Expect(Pad(s, x, Ints(s, {1, 1, 0, 2}, {2, 2}), Placeholder(s, t, PartialShape({}))), {1, 2});
    Expect(Gather(s, x, ids, 1), {1, 2});
    Expect(SelectV2(s, c, x, x), {});
    Expect(Select(s, c, x, x), {});
    Expect(OneHot(s, ids, Const(s, 5), Placeholder(s, t, PartialShape({})), Placeholder(s, t, PartialShape({}))),
           {1, 2, 3});
    if (t != kBool) Expect(UnsortedSegmentSum(s, x, ids, Const(s, 3)), {1, 2});
  }
  for (DataType t : {kFloat32, kFloat64}) {
    Output img = Placeholder(s, t, PartialShape({1, 4, 4, 2}));
    Expect(AvgPool(s, img), {});
    Expect(Log1p(s, img), {});
  }
  ASSERT_TRUE(s.ok()) << s.status().ToString();
}

TEST_F(IndexingCudaRegistryTest, Int32KernelsKeepEveryArgumentInHostMemory) {
  Graph g;
  Scope s(g);
  Output x = Placeholder(s, kInt32, PartialShape({4, 3}));
  Output c = Placeholder(s, kBool, PartialShape({4, 3}));
  Output ids = Placeholder(s, kInt32, PartialShape({4}));
  const std::vector<Output> ops = {Transpose(s, x, std::vector<int32_t>{1, 0}),
                                   Tile(s, x, Ints(s, {2, 1}, {2})),
                                   Reverse(s, x, std::vector<int32_t>{0}),
                                   Pad(s, x, Ints(s, {1, 1, 0, 2}, {2, 2})),
                                   Pad(s, x, Ints(s, {1, 1, 0, 2}, {2, 2}), Const(s, 7)),
                                   Gather(s, x, ids, 0),
                                   UnsortedSegmentSum(s, x, ids, Const(s, 3)),
                                   OneHot(s, ids, Const(s, 5), Const(s, 1), Const(s, 0)),
                                   Select(s, c, x, x),
                                   SelectV2(s, c, x, x),
                                   Range(s, Const(s, 0), Const(s, 5), Const(s, 1)),
                                   InvertPermutation(s, Ints(s, {1, 0}, {2}))};
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const Output& o : ops) {
    const KernelDef* k = Find(o);
    ASSERT_NE(k, nullptr) << o.node->DebugName();
    for (int i = 0; i < o.node->num_inputs(); ++i) {
      EXPECT_TRUE(k->HostMemoryInput(i)) << o.node->DebugName() << " input " << i;
    }
    EXPECT_TRUE(k->HostMemoryOutput(0)) << o.node->DebugName();
  }
}

// ---- Parity with the CPU twins (GPU only) ----

TEST(IndexingCudaTest, Transpose) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape shape;
    std::vector<int32_t> perm;
  };
  const std::vector<T> cases = {{{7, 33}, {1, 0}},       {{2, 3, 5, 7}, {3, 1, 0, 2}}, {{33, 1, 7}, {2, 0, 1}},
                                {{7, 33, 2}, {0, 1, 2}}, {{1000}, {0}},               {{}, {}},
                                {{0, 5}, {1, 0}},        {{5, 7}, {-1, 0}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      const std::vector<int32_t> perm = t.perm;
      parity::ExpectGpuMatchesCpu(Exact("Transpose " + Name(dtype) + " " + t.shape.ToString(),
                                        {RandomTensor(dtype, t.shape, rng)},
                                        [perm](const Scope& s, V in) {
                                          return std::vector<Output>{Transpose(s, in[0], perm)};
                                        }));
    }
  }
}

TEST(IndexingCudaTest, Reverse) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape shape;
    std::vector<int32_t> axes;
  };
  const std::vector<T> cases = {{{7, 33}, {1}},          {{7, 33}, {0}},         {{2, 3, 5, 7}, {3, 1}},
                                {{2, 3, 5, 7}, {0, 2}},  {{33, 1, 7}, {1}},      {{4, 9, 9, 3}, {-2}},
                                {{1000}, {0}},           {{}, {}},               {{0, 5}, {1}},
                                {{5, 7}, {}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      const std::vector<int32_t> axes = t.axes;
      parity::ExpectGpuMatchesCpu(Exact("ReverseV2 " + Name(dtype) + " " + t.shape.ToString(),
                                        {RandomTensor(dtype, t.shape, rng)},
                                        [axes](const Scope& s, V in) {
                                          return std::vector<Output>{Reverse(s, in[0], axes)};
                                        }));
    }
  }
}

TEST(IndexingCudaTest, Tile) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape shape;
    std::vector<int32_t> multiples;
  };
  const std::vector<T> cases = {{{7, 3}, {2, 3}},       {{33}, {3}},       {{2, 1, 5}, {1, 4, 2}},
                                {{7, 33}, {1, 1}},      {{3, 4}, {0, 2}},  {{}, {}},
                                {{1000, 1}, {1, 7}},    {{0, 3}, {2, 2}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      const std::vector<int32_t> m = t.multiples;
      const int64_t rank = static_cast<int64_t>(m.size());
      parity::ExpectGpuMatchesCpu(Exact("Tile " + Name(dtype) + " " + t.shape.ToString(),
                                        {RandomTensor(dtype, t.shape, rng)}, [m, rank](const Scope& s, V in) {
                                          return std::vector<Output>{Tile(s, in[0], Ints(s, m, {rank}))};
                                        }));
    }
  }
}

TEST(IndexingCudaTest, PadAndPadV2) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape shape;
    std::vector<int32_t> paddings;  // [rank, 2], row-major
  };
  const std::vector<T> cases = {{{7, 33}, {1, 2, 0, 3}}, {{2, 3, 4}, {0, 0, 2, 1, 1, 1}}, {{}, {}},
                                {{0, 3}, {1, 1, 2, 0}},  {{1000}, {7, 0}},              {{5, 7}, {0, 0, 0, 0}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      const std::vector<int32_t> p = t.paddings;
      const int64_t rank = t.shape.rank();
      parity::ExpectGpuMatchesCpu(
          Exact("Pad and PadV2 " + Name(dtype) + " " + t.shape.ToString(),
                {RandomTensor(dtype, t.shape, rng), RandomTensor(dtype, {}, rng, 2, 9)},
                [p, rank](const Scope& s, V in) {
                  Output paddings = Ints(s, p, {rank, 2});
                  return std::vector<Output>{Pad(s, in[0], paddings), Pad(s, in[0], paddings, in[1])};
                }));
    }
  }
}

TEST(IndexingCudaTest, GatherV2) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape params, indices;
    int axis;
  };
  const std::vector<T> cases = {{{1000, 7}, {33}, 0},  {{7, 33, 5}, {2, 3}, 1}, {{7, 33}, {1000}, -1},
                                {{33}, {}, 0},         {{7, 5}, {0}, 0},        {{0, 5}, {4}, 1},
                                {{1, 1}, {7, 1}, 0}};
  for (DataType dtype : Types()) {
    for (DataType index : {kInt32, kInt64}) {
      for (const T& t : cases) {
        const int rank = t.params.rank();
        const int64_t n = t.params.dim(t.axis < 0 ? t.axis + rank : t.axis);
        const int axis = t.axis;
        parity::ExpectGpuMatchesCpu(
            Exact("GatherV2 " + Name(dtype) + " " + t.params.ToString() + " at " + Name(index) + " " +
                      t.indices.ToString() + " axis " + std::to_string(axis),
                  {RandomTensor(dtype, t.params, rng), RandomTensor(index, t.indices, rng, 0, std::max<int64_t>(n - 1, 0))},
                  [axis](const Scope& s, V in) { return std::vector<Output>{Gather(s, in[0], in[1], axis)}; }));
      }
    }
  }
}

TEST(IndexingCudaTest, UnsortedSegmentSumAddsInTheCpuOrder) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape data, ids;
    int32_t num;
    int64_t lo, hi;  // id range (negatives are dropped)
  };
  const std::vector<T> cases = {{{33, 7}, {33}, 10, -1, 9}, {{7, 5, 3}, {7, 5}, 4, 0, 3},
                                {{1000, 3}, {1000}, 1, 0, 0},  // one segment of 1000 rows
                                {{1000}, {1000}, 1000, -2, 999}, {{0, 4}, {0}, 3, 0, 2},
                                {{7, 0}, {7}, 3, 0, 2},           {{7, 2}, {7}, 0, -3, -1},
                                {{3}, {}, 4, 0, 3}};  // a scalar id: the whole of data is one row
  for (DataType dtype : {kFloat32, kFloat64, kInt32, kInt64, kUInt8}) {
    for (DataType index : {kInt32, kInt64}) {
      for (const T& t : cases) {
        const int32_t num = t.num;
        parity::ExpectGpuMatchesCpu(
            Exact("UnsortedSegmentSum " + Name(dtype) + " " + t.data.ToString() + " by " + Name(index) + " " +
                      t.ids.ToString() + " into " + std::to_string(num),
                  {RandomTensor(dtype, t.data, rng, -100, 100), RandomTensor(index, t.ids, rng, t.lo, t.hi)},
                  [num](const Scope& s, V in) {
                    return std::vector<Output>{UnsortedSegmentSum(s, in[0], in[1], Const(s, num))};
                  }));
      }
    }
  }
}

TEST(IndexingCudaTest, OneHot) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (DataType dtype : Types()) {
    for (DataType index : {kInt32, kInt64, kUInt8}) {
      for (const TensorShape& shape : std::vector<TensorShape>{{33}, {7, 5}, {}, {0}, {1000}}) {
        for (int axis : {-1, 0, shape.rank()}) {
          // Indices from -2 to depth + 1: negative and too large ones make off rows.
          const int32_t depth = 10;
          Tensor indices = index == kUInt8 ? RandomTensor(kUInt8, shape, rng)
                                           : RandomTensor(index, shape, rng, -2, depth + 1);
          parity::ExpectGpuMatchesCpu(Exact(
              "OneHot " + Name(dtype) + " of " + Name(index) + " " + shape.ToString() + " axis " +
                  std::to_string(axis),
              {indices, ScalarOf(dtype, 3), ScalarOf(dtype, 0)},  // on != off in every dtype
              [axis, depth](const Scope& s, V in) {
                return std::vector<Output>{OneHot(s, in[0], Const(s, depth), in[1], in[2], axis)};
              }));
        }
      }
    }
  }
}

TEST(IndexingCudaTest, SelectV2Broadcasts) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape c, t, e;
  };
  const std::vector<T> cases = {{{7, 33}, {7, 33}, {7, 33}}, {{7, 1}, {1, 33}, {7, 33}}, {{}, {1000}, {1000}},
                                {{1000}, {}, {}},            {{2, 1, 5}, {3, 1}, {1}},   {{0, 3}, {3}, {0, 3}},
                                {{2, 1, 3, 1, 2}, {3, 1, 1}, {2, 1, 1, 5, 1}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      parity::ExpectGpuMatchesCpu(
          Exact("SelectV2 " + Name(dtype) + " " + t.c.ToString() + " " + t.t.ToString() + " " + t.e.ToString(),
                {RandomTensor(kBool, t.c, rng), RandomTensor(dtype, t.t, rng), RandomTensor(dtype, t.e, rng)},
                [](const Scope& s, V in) { return std::vector<Output>{SelectV2(s, in[0], in[1], in[2])}; }));
    }
  }
}

TEST(IndexingCudaTest, SelectPicksWholesRowsAndElements) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct T {
    TensorShape c, t;
  };
  const std::vector<T> cases = {{{}, {7, 33}}, {{7}, {7, 33}}, {{7, 33}, {7, 33}}, {{1000}, {1000}},
                                {{5}, {5, 2, 3}}, {{0}, {0, 4}}};
  for (DataType dtype : Types()) {
    for (const T& t : cases) {
      parity::ExpectGpuMatchesCpu(
          Exact("Select " + Name(dtype) + " " + t.c.ToString() + " " + t.t.ToString(),
                {RandomTensor(kBool, t.c, rng), RandomTensor(dtype, t.t, rng), RandomTensor(dtype, t.t, rng)},
                [](const Scope& s, V in) { return std::vector<Output>{Select(s, in[0], in[1], in[2])}; }));
    }
  }
}

TEST(IndexingCudaTest, ErrorsMatchTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const Tensor x = RandomTensor(kFloat32, {7, 5}, rng);
  auto index = [](std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(v, {static_cast<int64_t>(v.size())}); };
  parity::ExpectSameError(Case{"GatherV2 index out of range", {x, index({0, 7, 1})},
                               [](const Scope& s, V in) { return std::vector<Output>{Gather(s, in[0], in[1], 0)}; }},
                          "GatherV2: indices[1] = 7 is not in [0, 7)");
  parity::ExpectSameError(Case{"GatherV2 negative index", {x, index({-1})},
                               [](const Scope& s, V in) { return std::vector<Output>{Gather(s, in[0], in[1], 1)}; }},
                          "GatherV2: indices[0] = -1 is not in [0, 5)");
  parity::ExpectSameError(
      Case{"UnsortedSegmentSum id out of range", {x, index({0, 1, 2, 3, 4, 5, 3})},
           [](const Scope& s, V in) {
             return std::vector<Output>{UnsortedSegmentSum(s, in[0], in[1], Const(s, 4))};
           }},
      "UnsortedSegmentSum: segment_ids[4] = 4 is out of range [0, 4)");
  // perm fed, so that the shape function cannot see it and the kernels check it.
  for (const std::vector<int32_t>& perm : {std::vector<int32_t>{0, 0}, std::vector<int32_t>{1, 0, 2}}) {
    parity::ExpectSameError(
        Case{"Transpose by a bad perm", {x, Tensor::FromVector<int32_t>(perm, {static_cast<int64_t>(perm.size())})},
             [](const Scope& s, V in) { return std::vector<Output>{Transpose(s, in[0], in[1])}; }},
        perm.size() == 2 ? "is not a permutation of [0, 2)" : "must have one axis per axis of x");
  }
  parity::ExpectSameError(Case{"ReverseV2 of an axis twice", {x, Tensor::Vec<int32_t>({1, -1})},
                               [](const Scope& s, V in) { return std::vector<Output>{Reverse(s, in[0], in[1])}; }},
                          "axis 1 specified more than once");
  parity::ExpectSameError(Case{"Tile negative multiple", {x},
                               [](const Scope& s, V in) {
                                 return std::vector<Output>{Tile(s, in[0], Ints(s, {2, -1}, {2}))};
                               }},
                          "Tile: multiples must be non-negative");
  parity::ExpectSameError(Case{"Pad negative padding", {x},
                               [](const Scope& s, V in) {
                                 return std::vector<Output>{Pad(s, in[0], Ints(s, {0, 0, -1, 2}, {2, 2}))};
                               }},
                          "Pad: paddings must be non-negative");
  parity::ExpectSameError(Case{"Select of two shapes", {RandomTensor(kBool, {7}, rng), x, RandomTensor(kFloat32, {7, 4}, rng)},
                               [](const Scope& s, V in) { return std::vector<Output>{Select(s, in[0], in[1], in[2])}; }},
                          "must have one shape");
  parity::ExpectSameError(Case{"SelectV2 incompatible", {RandomTensor(kBool, {3}, rng), x, x},
                               [](const Scope& s, V in) { return std::vector<Output>{SelectV2(s, in[0], in[1], in[2])}; }},
                          "are not broadcast-compatible");
}

}  // namespace
}  // namespace tw
