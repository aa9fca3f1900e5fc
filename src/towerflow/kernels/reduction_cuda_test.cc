// Sum, Mean, Max and ArgMax on the GPU (reduction_cuda.cu) against their CPU
// twins (reduction_kernels.cc): every axis subset of a [7,33,5] tensor with
// and without keep_dims, negative and repeated axes, rank 1 and rank 2 over
// the odd sizes, shapes that take the chunked and multi-fold paths, empty
// and scalar inputs, ArgMax on every axis with many ties and both index types,
// and the axis errors with the same codes. Float and double; skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw {
namespace {

using parity::Case;
using Axes = std::vector<int32_t>;

const char* const kOps[] = {"Sum", "Mean", "Max"};
const DataType kTypes[] = {kFloat32, kFloat64};

std::string AxesStr(const Axes& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + std::to_string(axes[i]);
  return s + "}";
}

// `op` over exactly `axes` (empty: no axis, unlike the Sum builder's "all").
Output Reduction(const Scope& s, const std::string& op, const Output& x, const Axes& axes, bool keep_dims) {
  return NodeBuilder(s, op)
      .Input(x)
      .Input(Const(s.NewSubScope(""), axes))
      .Attr("keep_dims", keep_dims)
      .Finalize();
}

struct Fold {
  int input;  // which of the case's inputs
  Axes axes;
  bool keep_dims = false;
};

// One case: `op` in `dtype` over random inputs of `shapes`, one output per fold.
Case ReductionCase(const std::string& op, DataType dtype, const std::vector<TensorShape>& shapes,
                   const std::vector<Fold>& folds, std::mt19937_64& rng) {
  Case c;
  c.name = op + " " + std::string(DataTypeName(dtype)) + ", outputs:";
  for (const TensorShape& s : shapes) c.inputs.push_back(parity::RandomTensor(dtype, s, rng));
  int64_t max_count = 1;
  for (size_t i = 0; i < folds.size(); ++i) {
    const Fold& f = folds[i];
    const TensorShape& s = shapes[static_cast<size_t>(f.input)];
    c.name += " #" + std::to_string(i) + " " + s.ToString() + " over " + AxesStr(f.axes) +
              (f.keep_dims ? " kept;" : ";");
    std::set<int> reduced;
    for (int32_t a : f.axes) reduced.insert(a < 0 ? a + s.rank() : a);
    int64_t count = 1;
    for (int a : reduced) count *= s.dim(a);
    max_count = std::max(max_count, count);
  }
  c.build = [op, folds](const Scope& s, const std::vector<Output>& in) {
    std::vector<Output> outs;
    for (const Fold& f : folds)
      outs.push_back(Reduction(s, op, in[static_cast<size_t>(f.input)], f.axes, f.keep_dims));
    return outs;
  };
  // Max is exact. Sums differ from the CPU's by summation order: roughly
  // sqrt(count) roundings of partial sums of size ~sqrt(count).
  if (op == "Max") {
    c.rtol = 0;
    c.atol = 0;
  } else if (dtype == kFloat32) {
    c.rtol = 1e-5;
    c.atol = 2e-5 + 1e-7 * static_cast<double>(max_count);
  } else {
    c.rtol = 1e-12;
    c.atol = 1e-13 + 1e-15 * static_cast<double>(max_count);
  }
  return c;
}

// Runs ReductionCase for every op and dtype.
void CheckAll(const std::vector<TensorShape>& shapes, const std::vector<Fold>& folds) {
  parity::SeededRng rng;
  for (const char* op : kOps) {
    for (DataType dtype : kTypes) parity::ExpectGpuMatchesCpu(ReductionCase(op, dtype, shapes, folds, rng));
  }
}

TEST(ReductionCudaTest, Rank3EveryAxisSubset) {
  TW_SKIP_WITHOUT_GPU();
  const std::vector<Axes> lists = {{},        {0},  {1},      {2},     {0, 1},      {0, 2}, {1, 2},
                                   {0, 1, 2}, {-1}, {-3, -1}, {0, -2}, {-2, -1, 0}, {1, 1}, {2, -1}};
  std::vector<Fold> folds;
  for (bool keep : {false, true}) {
    for (const Axes& a : lists) folds.push_back({0, a, keep});
  }
  CheckAll({TensorShape{7, 33, 5}}, folds);
}

TEST(ReductionCudaTest, Rank1OddSizes) {
  TW_SKIP_WITHOUT_GPU();
  std::vector<TensorShape> shapes;
  std::vector<Fold> folds;
  for (int64_t n : parity::OddSizes()) {
    const int input = static_cast<int>(shapes.size());
    shapes.push_back(TensorShape{n});
    folds.push_back({input, {0}, false});
    folds.push_back({input, {-1}, true});
    folds.push_back({input, {}, false});
  }
  CheckAll(shapes, folds);
}

TEST(ReductionCudaTest, Rank2OddSizes) {
  TW_SKIP_WITHOUT_GPU();
  std::vector<TensorShape> shapes;
  std::vector<Fold> folds;
  for (int64_t r : parity::OddSizes()) {
    for (int64_t c : parity::OddSizes()) {
      const int input = static_cast<int>(shapes.size());
      shapes.push_back(TensorShape{r, c});
      folds.push_back({input, {0}, false});
      folds.push_back({input, {1}, false});
      folds.push_back({input, {0, 1}, false});
      folds.push_back({input, {-1}, true});
    }
  }
  CheckAll(shapes, folds);
}

// Few long rows or columns: the folds cut the reduced axis into chunks (block
// per row chunk, warp per row chunk, thread per column chunk) and fold the
// partial results again; a long vector goes through cub::DeviceReduce.
TEST(ReductionCudaTest, LongRowsAndColumns) {
  TW_SKIP_WITHOUT_GPU();
  CheckAll({TensorShape{3, 50000}, TensorShape{2, 5000}, TensorShape{50000, 3}, TensorShape{100, 1024},
            TensorShape{1, 300000}, TensorShape{300000}, TensorShape{4, 3000, 6}, TensorShape{64, 70, 3}},
           {{0, {1}},
            {1, {1}},
            {2, {0}},
            {3, {0}},
            {3, {1}},
            {4, {1}},
            {5, {0}},
            {6, {1}},
            {6, {0, 2}},
            {7, {0, 2}}});
}

// Long rows that get a block each (cub::BlockReduce): [4300, 4100] has enough
// rows to fill an H200 unchunked; [2, 8700000] is cut into chunks of more than
// 4096. Float only (the kernels are the same templates for double).
TEST(ReductionCudaTest, BlockPerRowPaths) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  for (const char* op : kOps) {
    parity::ExpectGpuMatchesCpu(ReductionCase(
        op, kFloat32, {TensorShape{4300, 4100}, TensorShape{2, 8700000}}, {{0, {1}}, {1, {1}}}, rng));
  }
}

// Reduced axes that stay apart after collapsing ([R,K,R], [K,R,K,R], ...)
// take one fold per reduced group; size-1 dimensions vanish from the plan.
TEST(ReductionCudaTest, SeparatedAxesAndSizeOneDimensions) {
  TW_SKIP_WITHOUT_GPU();
  CheckAll({TensorShape{3, 7, 5, 9}, TensorShape{5, 2, 3, 2, 4}, TensorShape{7, 1, 33, 1, 2}},
           {{0, {1, 3}},
            {0, {0, 2}},
            {0, {0, 2, 3}},
            {0, {0, 1, 3}, true},
            {0, {-4, -2}},
            {1, {0, 2, 4}},
            {1, {1, 3}},
            {1, {0, 2, 4}, true},
            {2, {1, 3}},
            {2, {0, 2}},
            {2, {1, 2}},
            {2, {0, 4}},
            {2, {3}},
            {2, {1, 3}, true}});
}

// Empty reductions give Sum 0, Mean NaN and Max -inf on both devices, and
// scalars and size-1 inputs are copies: the values must be equal (NaN to NaN,
// an infinity to itself).
TEST(ReductionCudaTest, EmptyAndScalarInputs) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const std::vector<TensorShape> shapes = {TensorShape{0, 5}, TensorShape{5, 0}, TensorShape{},
                                           TensorShape{1},    TensorShape{0},    TensorShape{1, 1, 1}};
  const std::vector<Fold> folds = {{0, {0}}, {0, {1}},    {0, {0, 1}},  {0, {0}, true}, {1, {1}},
                                   {1, {0}}, {2, {}},     {3, {0}},     {3, {}},        {4, {0}, true},
                                   {4, {0}}, {5, {0, 2}}, {5, {}, true}};
  for (const char* op : kOps) {
    for (DataType dtype : kTypes) {
      Case c = ReductionCase(op, dtype, shapes, folds, rng);
      c.rtol = 0;
      c.atol = 0;
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

// Max drops NaN as the CPU does, wherever it stands: first in a thread's
// tile, in a warp, in the last block, or everywhere (then -inf). The whole
// tensor folded to one value takes CUB's device-wide reduction, whose last
// step puts the identity on the left; rows and columns take the other paths.
TEST(ReductionCudaTest, MaxDropsNaNWhereverItStands) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {int64_t{4096}, int64_t{100003}}) {
    for (const int64_t at : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{32}, int64_t{1000}, n - 1, int64_t{-1}}) {
      Case c = ReductionCase("Max", kFloat32, {TensorShape{n}, TensorShape{n / 64, 64}},
                             {{0, {0}}, {1, {0}}, {1, {1}}, {1, {0, 1}}}, rng);
      for (Tensor& t : c.inputs) {
        float* x = t.data<float>();
        if (at < 0) {
          std::fill(x, x + t.NumElements(), nan);
        } else {
          x[at % t.NumElements()] = nan;
        }
      }
      c.name += " NaN at " + std::to_string(at);
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

// Values 0..3 only, so most rows have ties (the first index wins).
Tensor TiedTensor(DataType dtype, const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  std::uniform_int_distribution<int> v(0, 3);
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    if (dtype == kFloat32) {
      t.data<float>()[i] = static_cast<float>(v(rng));
    } else {
      t.data<double>()[i] = v(rng);
    }
  }
  return t;
}

TEST(ReductionCudaTest, ArgMaxEveryAxisWithTies) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const std::vector<TensorShape> shapes = {TensorShape{7, 33, 5}, TensorShape{1000},    TensorShape{7, 1000},
                                           TensorShape{3, 5000},  TensorShape{1000, 7}, TensorShape{1},
                                           TensorShape{33, 1},    TensorShape{0, 5}};
  const std::vector<std::pair<int, int>> args = {{0, 0}, {0, 1}, {0, 2}, {0, -1}, {0, -3},
                                                 {1, 0}, {2, 1}, {3, 1}, {3, 0},  {4, 0},
                                                 {4, 1}, {5, 0}, {6, 0}, {6, 1},  {7, 1}};
  for (DataType dtype : kTypes) {
    for (DataType index : {kInt64, kInt32}) {
      Case c;
      c.name = "ArgMax " + std::string(DataTypeName(dtype)) + " -> " + std::string(DataTypeName(index)) +
               ", outputs:";
      for (const TensorShape& s : shapes) c.inputs.push_back(TiedTensor(dtype, s, rng));
      for (size_t i = 0; i < args.size(); ++i) {
        c.name += " #" + std::to_string(i) + " " + shapes[static_cast<size_t>(args[i].first)].ToString() +
                  " axis " + std::to_string(args[i].second) + ";";
      }
      c.build = [args, index](const Scope& s, const std::vector<Output>& in) {
        std::vector<Output> outs;
        for (auto [input, axis] : args) {
          outs.push_back(NodeBuilder(s, "ArgMax")
                             .Input(in[static_cast<size_t>(input)])
                             .Input(Const(s.NewSubScope(""), static_cast<int32_t>(axis)))
                             .Attr("output_type", index)
                             .Finalize());
        }
        return outs;
      };
      c.rtol = 0;
      c.atol = 0;
      parity::ExpectGpuMatchesCpu(c);
    }
  }
}

// Axes fed at run time (graph construction cannot check them): the kernels'
// own checks answer, with the CPU's codes.
TEST(ReductionCudaTest, BadAxes) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  const Tensor axes_cases[] = {Tensor::Vec<int32_t>({3}), Tensor::Vec<int32_t>({-4}),
                               Tensor::Vec<int32_t>({0, 3}),
                               Tensor::FromVector<int32_t>({0, 1}, TensorShape{1, 2})};
  for (const char* op : kOps) {
    for (DataType dtype : kTypes) {
      for (const Tensor& axes : axes_cases) {
        Case c;
        c.name = std::string(op) + " " + std::string(DataTypeName(dtype)) + " [7,33,5] over axes of shape " +
                 axes.shape().ToString();
        c.inputs = {parity::RandomTensor(dtype, TensorShape{7, 33, 5}, rng), axes};
        const std::string name = op;
        c.build = [name](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{
              NodeBuilder(s, name).Input(in[0]).Input(in[1]).Attr("keep_dims", false).Finalize()};
        };
        parity::ExpectSameError(c);
      }
    }
  }
}

TEST(ReductionCudaTest, ArgMaxBadDimension) {
  TW_SKIP_WITHOUT_GPU();
  parity::SeededRng rng;
  struct Bad {
    TensorShape shape;
    Tensor dimension;
  };
  const std::vector<Bad> bad = {{TensorShape{7, 33, 5}, Tensor::Scalar<int32_t>(3)},
                                {TensorShape{7, 33, 5}, Tensor::Scalar<int32_t>(-4)},
                                {TensorShape{7, 33, 5}, Tensor::Vec<int32_t>({0, 1})},
                                {TensorShape{5, 0}, Tensor::Scalar<int32_t>(1)}};
  for (DataType dtype : kTypes) {
    for (const Bad& b : bad) {
      Case c;
      c.name = "ArgMax " + std::string(DataTypeName(dtype)) + " " + b.shape.ToString() +
               " along dimension of shape " + b.dimension.shape().ToString();
      c.inputs = {parity::RandomTensor(dtype, b.shape, rng), b.dimension};
      c.build = [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{
            NodeBuilder(s, "ArgMax").Input(in[0]).Input(in[1]).Attr("output_type", kInt64).Finalize()};
      };
      parity::ExpectSameError(c);
    }
  }
}

}  // namespace
}  // namespace tw
