// Schemas and builders of the random ops, the seeding rule, and the variable
// initializers.
#include "towerflow/graph/ops/random_ops.h"

#include <cmath>
#include <limits>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

constexpr int64_t kDefaultGraphSeed = 87654321;
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// TF's _truncate_seed: seeds are kept in int32 range.
int64_t TruncateSeed(int64_t seed) { return seed % kMaxInt32; }

Status RandomShape(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(PartialShape s, c->InputAsShape(0));
  c->set_output(0, s);
  return Status::OK();
}

Output RandomOp(const Scope& scope, const std::string& op, const Output& shape, DataType dtype,
                int64_t seed) {
  const OpSeeds seeds = GetSeeds(scope.graph(), seed);
  return NodeBuilder(scope, op)
      .Input(shape)
      .Attr("dtype", dtype)
      .Attr("seed", seeds.seed)
      .Attr("seed2", seeds.seed2)
      .Finalize();
}

// The shape as an int32 vector constant (int64 when a dimension needs it).
Output ShapeConst(const Scope& scope, const TensorShape& shape) {
  bool wide = false;
  for (int64_t d : shape.dims()) wide |= d > kMaxInt32;
  if (wide) return Const(scope, Tensor::Vec<int64_t>(shape.dims()));
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  return Const(scope, dims);
}

// A scalar of `dtype` holding `value` (for Fill).
Tensor ScalarOfType(DataType dtype, double value) {
  switch (dtype) {
    case DataType::kFloat64: return Tensor::Scalar<double>(value);
    case DataType::kInt32: return Tensor::Scalar<int32_t>(static_cast<int32_t>(value));
    case DataType::kInt64: return Tensor::Scalar<int64_t>(static_cast<int64_t>(value));
    case DataType::kUInt8: return Tensor::Scalar<uint8_t>(static_cast<uint8_t>(value));
    case DataType::kBool: return Tensor::Scalar<bool>(value != 0);
    case DataType::kString: return Tensor::String("");
    default: return Tensor::Scalar<float>(static_cast<float>(value));
  }
}

// x * scale + shift, skipping the identity steps (scale 1, shift 0).
Output ScaleShift(const Scope& scope, Output x, double scale, double shift, DataType dtype) {
  if (scale != 1) x = Mul(scope, x, ScalarLike(scope, scale, dtype));
  if (shift != 0) x = Add(scope, x, ScalarLike(scope, shift, dtype));
  return x;
}

}  // namespace

void RegisterRandomOps(OpRegistry& r) {
  const struct {
    const char* name;
    const char* doc;
  } ops[] = {
      {"RandomStandardNormal", "Samples from the standard normal distribution."},
      {"TruncatedNormal", "Standard normal samples, redrawn until within 2 standard deviations."},
      {"RandomUniform", "Samples uniformly from [0, 1)."},
  };
  for (const auto& op : ops) {
    r.Register(OpDefBuilder(op.name)
                   .Input("shape", "T")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", FloatTypes())
                   .TypeAttr("T", {kInt32, kInt64})
                   .Attr("seed", int64_t{0})
                   .Attr("seed2", int64_t{0})
                   .Stateful()
                   .Shape(RandomShape)
                   .Doc(op.doc)
                   .Build()).Check();
  }
}

OpSeeds GetSeeds(Graph& graph, int64_t op_seed) {
  OpSeeds s;
  if (graph.has_seed()) {
    s.seed = TruncateSeed(graph.seed());
    s.seed2 = TruncateSeed(op_seed != 0 ? op_seed : graph.NextOpSeed());
  } else if (op_seed != 0) {
    s.seed = kDefaultGraphSeed;
    s.seed2 = TruncateSeed(op_seed);
  } else {
    return s;  // (0, 0): nondeterministic, as the user asked for no seed
  }
  if (s.seed == 0 && s.seed2 == 0) s.seed2 = kMaxInt32;
  return s;
}

Output RandomStandardNormal(const Scope& scope, const Output& shape, DataType dtype, int64_t seed) {
  return RandomOp(scope, "RandomStandardNormal", shape, dtype, seed);
}
Output TruncatedNormal(const Scope& scope, const Output& shape, DataType dtype, int64_t seed) {
  return RandomOp(scope, "TruncatedNormal", shape, dtype, seed);
}
Output RandomUniform(const Scope& scope, const Output& shape, DataType dtype, int64_t seed) {
  return RandomOp(scope, "RandomUniform", shape, dtype, seed);
}

Initializer RandomNormalInitializer(double mean, double stddev, int64_t seed) {
  return [=](const Scope& scope, const TensorShape& shape, DataType dtype) {
    Scope s = scope.NewSubScope("random_normal");
    return ScaleShift(s, RandomStandardNormal(s, ShapeConst(s, shape), dtype, seed), stddev, mean, dtype);
  };
}

Initializer TruncatedNormalInitializer(double mean, double stddev, int64_t seed) {
  return [=](const Scope& scope, const TensorShape& shape, DataType dtype) {
    Scope s = scope.NewSubScope("truncated_normal");
    return ScaleShift(s, TruncatedNormal(s, ShapeConst(s, shape), dtype, seed), stddev, mean, dtype);
  };
}

Initializer RandomUniformInitializer(double minval, double maxval, int64_t seed) {
  return [=](const Scope& scope, const TensorShape& shape, DataType dtype) {
    Scope s = scope.NewSubScope("random_uniform");
    return ScaleShift(s, RandomUniform(s, ShapeConst(s, shape), dtype, seed), maxval - minval, minval, dtype);
  };
}

Fans ComputeFans(const TensorShape& shape) {
  Fans f;
  const int rank = shape.rank();
  if (rank == 1) {
    f.fan_in = f.fan_out = static_cast<double>(shape.dim(0));
  } else if (rank == 2) {
    f.fan_in = static_cast<double>(shape.dim(0));
    f.fan_out = static_cast<double>(shape.dim(1));
  } else if (rank > 2) {
    double receptive = 1;
    for (int i = 0; i < rank - 2; ++i) receptive *= static_cast<double>(shape.dim(i));
    f.fan_in = static_cast<double>(shape.dim(rank - 2)) * receptive;
    f.fan_out = static_cast<double>(shape.dim(rank - 1)) * receptive;
  }
  return f;
}

Initializer GlorotUniformInitializer(int64_t seed) {
  return [=](const Scope& scope, const TensorShape& shape, DataType dtype) {
    const Fans f = ComputeFans(shape);
    // Variance 2 / (fan_in + fan_out); a uniform [-a, a] has variance a^2 / 3.
    const double limit = std::sqrt(6.0 / std::max(1.0, f.fan_in + f.fan_out));
    return RandomUniformInitializer(-limit, limit, seed)(scope, shape, dtype);
  };
}

Initializer ZerosInitializer() { return ConstantInitializer(0); }

Initializer ConstantInitializer(double value) {
  return [=](const Scope& scope, const TensorShape& shape, DataType dtype) {
    Scope s = scope.NewSubScope(value == 0 ? "zeros" : "Const");
    const Tensor scalar = ScalarOfType(dtype, value);
    if (shape.num_elements() == 1) return Const(s, scalar.Reshaped(shape).value());
    // A scalar filled out at run time: the graph holds one element, not the whole value.
    return Fill(s, ShapeConst(s, shape), Const(s, scalar));
  };
}

}  // namespace tw
