// `towerflow ops`: every registered op with the device types and dtypes it has
// kernels for and whether it has a gradient; `--json` for machines;
// `--check-gradients` runs the numeric gradient check of every differentiable op.
// A build with the CUDA backend lists its GPU kernels whether or not a GPU is
// visible.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "towerflow/cli/commands.h"
#include "towerflow/cli/flags.h"
#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/data/register.h"
#include "towerflow/runtime/gradient_checker.h"
#if TOWERFLOW_HAVE_CUDA
#include "towerflow/device/device_set.h"
#include "towerflow/kernels/cuda_kernels.h"
#include "towerflow/train/nccl_all_reduce.h"
#endif

namespace tw::cli {
namespace {

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string TypesList(const std::vector<DataType>& types, bool json) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) out += json ? "," : " ";
    out += json ? "\"" + std::string(DataTypeName(types[i])) + "\"" : std::string(DataTypeName(types[i]));
  }
  return out;
}

// The CUDA kernels when the global registry lacks them: it holds them only
// where a GPU is visible (kernels/cuda_kernels.h), so without one they are
// registered into a registry of their own, the global CPU kernels as their
// source. Null in a build without CUDA and where a GPU is visible.
// train/'s GPU CollectiveAllReduce (NCCL) joins either registry.
std::unique_ptr<KernelRegistry> CudaKernelsToList() {
#if TOWERFLOW_HAVE_CUDA
  if (VisibleCudaGpuCount() == 0) {
    auto cuda = std::make_unique<KernelRegistry>();
    RegisterCudaKernels(*cuda, KernelRegistry::Global());
    train::RegisterCollectiveAllReduceCudaKernel(*cuda);
    return cuda;
  }
  train::EnsureCollectiveAllReduceCudaKernel();
#endif
  return nullptr;
}

// Per device type, the dtypes with a kernel for `op` in the global registry and
// in `extra` (when not null), sorted.
std::map<std::string, std::vector<DataType>> KernelTypes(const std::string& op, const KernelRegistry* extra) {
  auto types = KernelRegistry::Global().KernelTypes(op);
  if (extra == nullptr) return types;
  for (const auto& [device, dtypes] : extra->KernelTypes(op)) {
    std::vector<DataType>& merged = types[device];
    for (DataType t : dtypes) {
      if (std::find(merged.begin(), merged.end(), t) == merged.end()) merged.push_back(t);
    }
    std::sort(merged.begin(), merged.end());
  }
  return types;
}

void PrintOps(bool json) {
  const auto& grads = GradientRegistry::Global();
  const std::unique_ptr<KernelRegistry> cuda = CudaKernelsToList();
  if (json) std::printf("[");
  bool first = true;
  for (const OpDef* def : OpRegistry::Global().List()) {
    const auto kernels = KernelTypes(def->name, cuda.get());
    const bool has_grad = grads.Find(def->name) != nullptr;
    if (json) {
      std::printf("%s\n  {\"op\": \"%s\", \"kernels\": {", first ? "" : ",", JsonEscape(def->name).c_str());
      bool first_k = true;
      for (const auto& [device, types] : kernels) {
        std::printf("%s\"%s\": [%s]", first_k ? "" : ", ", device.c_str(), TypesList(types, true).c_str());
        first_k = false;
      }
      std::printf("}, \"gradient\": %s}", has_grad ? "true" : "false");
    } else {
      std::string k;
      for (const auto& [device, types] : kernels) {
        k += device + (types.empty() ? "" : "(" + TypesList(types, false) + ")") + " ";
      }
      std::printf("%-40s %-60s %s\n", def->name.c_str(), k.empty() ? "-" : k.c_str(),
                  has_grad ? "gradient" : (grads.IsNoGradient(def->name) ? "no-gradient" : "MISSING-gradient"));
    }
    first = false;
  }
  if (json) std::printf("\n]\n");
}

int CheckGradients(uint64_t seed) {
  int passed = 0, failed = 0;
  std::set<std::string> covered;
  for (const GradCheckCase& c : AllGradCheckCases()) {
    auto start = std::chrono::steady_clock::now();
    auto r = CheckGradient(c, seed++);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool ok = r.ok() && r->max_error <= c.tolerance;
    if (ok) {
      ++passed;
      covered.insert(c.op);
      std::printf("PASS %-32s %-36s max_error=%.2e elements=%lld (%.0f ms)\n", c.op.c_str(), c.name.c_str(),
                  r->max_error, static_cast<long long>(r->elements), ms);
    } else {
      ++failed;
      std::printf("FAIL %-32s %-36s %s\n", c.op.c_str(), c.name.c_str(),
                  r.ok() ? ("max_error=" + std::to_string(r->max_error) + " > tolerance " + std::to_string(c.tolerance)).c_str()
                         : r.status().ToString().c_str());
    }
  }
  // Differentiable ops without any case are failures too: an unchecked gradient.
  for (const OpDef* def : OpRegistry::Global().List()) {
    if (GradientRegistry::Global().Find(def->name) && !covered.count(def->name)) {
      bool has_case = false;
      for (const auto& c : AllGradCheckCases()) has_case |= c.op == def->name;
      if (!has_case) {
        ++failed;
        std::printf("FAIL %-32s has a gradient but no numeric check case\n", def->name.c_str());
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int RunOps(int argc, char** argv) {
  CLI::App app{"List registered ops, their kernels and gradients", "towerflow ops"};
  bool json = false, check = false;
  uint64_t seed = std::random_device{}();
  app.add_flag("--json", json, "print a JSON array of {op, kernels, gradient}");
  app.add_flag("--check-gradients", check, "check every gradient against finite differences");
  app.add_option("--seed", seed, "seed for the random inputs of --check-gradients")->check(IntegerIn(0, INT64_MAX));
  OneLineErrors(app, "ops");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  EnsureDataRegistered();  // every op: the core's and the input pipeline's
  if (check) return CheckGradients(seed);
  PrintOps(json);
  return 0;
}

}  // namespace tw::cli
