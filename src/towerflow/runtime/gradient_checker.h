// Numeric gradient checking: compares the symbolic gradient of an op (from
// Gradients) with central finite differences, in float64 where the op has a
// float64 kernel.
//
// Each op family registers GradCheckCases (graph of one op on placeholders, with
// input shapes and, where the op needs them, input generators); unit tests and
// `towerflow ops --check-gradients` run them all on fresh random inputs, on the
// CPU; runtime/grad_checks_cuda_test.cc runs them with the op on a GPU.
// CheckGradient builds a private graph and session per call: thread-safe.
#ifndef TOWERFLOW_RUNTIME_GRADIENT_CHECKER_H_
#define TOWERFLOW_RUNTIME_GRADIENT_CHECKER_H_

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "towerflow/graph/scope.h"

namespace tw {

struct GradCheckCase {
  std::string op;    // the op whose gradient is checked
  std::string name;  // what this case covers ("broadcast [3,1]x[1,4]")
  struct Input {
    DataType dtype = kFloat64;
    TensorShape shape;
    bool differentiable = true;  // checked against finite differences
  };
  std::vector<Input> inputs;
  // Builds the op from placeholders of `inputs`; returns the output to check.
  std::function<Output(const Scope&, const std::vector<Output>&)> build;
  // Optional: makes input i (default: uniform in [-1, 1] for floats, [0, 3] for
  // integers). Use it to keep away from kinks (Relu at 0, Max ties).
  std::function<Tensor(int, std::mt19937_64&)> make_input;
  double tolerance = 1e-6;  // max abs error allowed, relative to max(1, |grad|)
  double delta = 1e-5;      // finite-difference step
};

struct GradCheckResult {
  double max_error = 0;  // max over checked elements of |numeric - symbolic| / max(1, |numeric|)
  int64_t elements = 0;  // input elements checked
  // With a device: the nodes of the case and of its gradient that were asked
  // for the device but run elsewhere (no kernel there for their dtype, or
  // host-only arguments), as "name (Op) on /device:CPU:0". Empty on the CPU.
  std::vector<std::string> moved;
};

// Runs one case with inputs drawn from `seed`. InvalidArgument when the case
// cannot be built or run; the errors of graph building name the node.
//
// `device` "" runs every node on the CPU (the session creates no GPU, so
// nothing moves to one). A device ("/device:GPU:0") gets the nodes the case
// builds and, through Gradients, their gradient nodes; the inputs are fed on
// the CPU and the weighted-sum loss is taken there (copies in between), and
// soft placement moves a node without a kernel on the device to the CPU
// (listed in `moved`). Unimplemented, before any value is computed, when a
// node of the checked op itself does not land on the device (no kernel there
// for the case's dtypes, or no such device): the case says nothing about it.
StatusOr<GradCheckResult> CheckGradient(const GradCheckCase& c, uint64_t seed, const std::string& device = "");

// Every registered case (filled once, on first use, by the families below).
const std::vector<GradCheckCase>& AllGradCheckCases();

// One per op family, each in runtime/grad_checks/<family>_checks.cc.
void AddArrayGradChecks(std::vector<GradCheckCase>& cases);
void AddIndexingGradChecks(std::vector<GradCheckCase>& cases);
void AddMathGradChecks(std::vector<GradCheckCase>& cases);
void AddNnGradChecks(std::vector<GradCheckCase>& cases);

}  // namespace tw

#endif  // TOWERFLOW_RUNTIME_GRADIENT_CHECKER_H_
