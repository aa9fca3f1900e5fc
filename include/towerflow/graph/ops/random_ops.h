// Random-number ops (RandomStandardNormal, TruncatedNormal, RandomUniform) and
// the variable initializers built on them.
//
// Seeding follows TF1: an op's (seed, seed2) attrs come from the graph seed
// (Graph::set_seed) and the op seed. With a graph seed, ops built without their
// own seed take Graph::NextOpSeed(), so a graph built twice with the same graph
// seed draws the same numbers; with neither, the kernel seeds itself
// nondeterministically. Each kernel instance owns one generator that advances at
// every run (a session's second run draws new numbers). The builders record
// errors in the scope and return a null Output (see scope.h).
#ifndef TOWERFLOW_GRAPH_OPS_RANDOM_OPS_H_
#define TOWERFLOW_GRAPH_OPS_RANDOM_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>

#include "towerflow/graph/ops/state_ops.h"
#include "towerflow/graph/scope.h"

namespace tw {

// The (seed, seed2) attrs of a random op built with op seed `op_seed` (0: none),
// as TF's random_seed.get_seed computes them: (graph seed, op seed or the next
// op seed) with a graph seed; (87654321, op seed) with only an op seed; (0, 0),
// nondeterministic, with neither. A computed (0, 0) becomes (0, 2^31 - 1) so it
// stays deterministic.
struct OpSeeds {
  int64_t seed = 0;
  int64_t seed2 = 0;
};
OpSeeds GetSeeds(Graph& graph, int64_t op_seed);

// Samples of `dtype` (float or double) in the shape given by the int32/int64
// vector `shape`: standard normal; standard normal redrawn until within 2
// standard deviations; uniform in [0, 1).
Output RandomStandardNormal(const Scope& scope, const Output& shape, DataType dtype, int64_t seed = 0);
Output TruncatedNormal(const Scope& scope, const Output& shape, DataType dtype, int64_t seed = 0);
Output RandomUniform(const Scope& scope, const Output& shape, DataType dtype, int64_t seed = 0);

// Initializers for VariableOptions::initializer (tf.*_initializer). A seed of 0
// means "none" (see GetSeeds).
Initializer RandomNormalInitializer(double mean = 0, double stddev = 1, int64_t seed = 0);
Initializer TruncatedNormalInitializer(double mean = 0, double stddev = 1, int64_t seed = 0);
Initializer RandomUniformInitializer(double minval, double maxval, int64_t seed = 0);
// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) with TF's fans
// (see ComputeFans): Glorot & Bengio's initializer, TF's default for float variables.
Initializer GlorotUniformInitializer(int64_t seed = 0);
Initializer ZerosInitializer();
Initializer ConstantInitializer(double value);

// TF's _compute_fans: a scalar has fans 1/1; a vector [n] n/n; a matrix [in, out]
// in/out; a convolution filter [..., in, out] in*receptive/out*receptive, where
// receptive is the product of the leading (spatial) dimensions.
struct Fans {
  double fan_in = 1;
  double fan_out = 1;
};
Fans ComputeFans(const TensorShape& shape);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_OPS_RANDOM_OPS_H_
