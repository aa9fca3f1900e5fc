// Gradients on the GPU: every GradCheckCase of AllGradCheckCases() with its op
// (and the op's gradient nodes) on /device:GPU:0, against central finite
// differences computed by the same GPU kernels, on fresh random inputs (float64
// cases in double on the GPU). A case whose op has no GPU kernel for its dtype
// (CheckGradient's Unimplemented: a GPU kernel without double, say) is skipped
// and counted; the counts and every gradient node that fell back to the CPU are
// printed. Skipped without a GPU (label cuda).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

constexpr char kGpu[] = "/device:GPU:0";

// True when the registry lists a GPU kernel of `op` for `dtype` (a hint for
// the report only: the dtype attr of an op need not be its first input's).
bool RegistryListsGpuKernel(const std::string& op, DataType dtype) {
  const auto types = KernelRegistry::Global().KernelTypes(op);
  auto it = types.find(kDeviceGpu);
  if (it == types.end()) return false;
  for (DataType t : it->second) {
    if (t == dtype) return true;
  }
  return it->second.empty();  // an untyped kernel
}

TEST(GradChecksCudaTest, EveryCaseWithAGpuKernelMatchesFiniteDifferencesOnTheGpu) {
  TW_SKIP_WITHOUT_GPU();
  // New GPU blocks hold NaN bytes: a gradient element a kernel forgets to
  // write fails the comparison (gpu_allocator.h).
  setenv("TOWERFLOW_GPU_POISON", "1", 1);
  int checked = 0;
  std::vector<std::string> skipped, moved;
  std::set<std::string> ops_checked;
  uint64_t seed = 1;
  for (const GradCheckCase& c : AllGradCheckCases()) {
    const std::string what = c.op + " " + c.name;
    SCOPED_TRACE(what + " on " + kGpu + ", seed " + std::to_string(seed));
    auto r = CheckGradient(c, seed++, kGpu);
    if (errors::IsUnimplemented(r.status())) {
      const DataType dtype = c.inputs.empty() ? kFloat64 : c.inputs[0].dtype;
      skipped.push_back(what + " [" + std::string(DataTypeName(dtype)) + "]" +
                        (RegistryListsGpuKernel(c.op, dtype) ? " (the registry lists one: " : " (") +
                        r.status().message() + ")");
      continue;
    }
    if (!r.ok()) {  // every case reports: one GPU run shows every failure
      ADD_FAILURE() << r.status().ToString();
      continue;
    }
    EXPECT_GT(r->elements, 0);
    EXPECT_LE(r->max_error, c.tolerance) << "max_error " << r->max_error << " > tolerance " << c.tolerance;
    for (const std::string& m : r->moved) moved.push_back(what + ": " + m);
    ++checked;
    ops_checked.insert(c.op);
  }
  std::printf("gradient checks on %s: %d of %zu cases checked (%zu ops), %zu skipped (no GPU kernel for the "
              "case's dtype)\n",
              kGpu, checked, AllGradCheckCases().size(), ops_checked.size(), skipped.size());
  for (const std::string& s : skipped) std::printf("  skipped %s\n", s.c_str());
  for (const std::string& m : moved) std::printf("  ran on the CPU: %s\n", m.c_str());
  RecordProperty("cases_checked", checked);
  RecordProperty("cases_skipped", static_cast<int>(skipped.size()));
  // The GPU backend has float64 kernels for the common ops: a run that checks
  // nothing means the GPU kernels are not registered at all.
  EXPECT_GT(checked, 0) << "no case ran on " << kGpu;
}

// The CPU path is the one `towerflow ops --check-gradients` takes: with a GPU
// present it still works (every node on the CPU, no GPU device created).
TEST(GradChecksCudaTest, NoDeviceStaysOnTheCpu) {
  TW_SKIP_WITHOUT_GPU();
  const std::vector<GradCheckCase>& cases = AllGradCheckCases();
  ASSERT_FALSE(cases.empty());
  auto r = CheckGradient(cases.front(), 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->elements, 0);
  EXPECT_LE(r->max_error, cases.front().tolerance);
}

// A device that does not exist places nothing there: Unimplemented naming it.
TEST(GradChecksCudaTest, AMissingDeviceIsUnimplemented) {
  TW_SKIP_WITHOUT_GPU();
  const GradCheckCase& c = AllGradCheckCases().front();
  auto r = CheckGradient(c, 1, "/device:GPU:" + std::to_string(VisibleCudaGpuCount() + 7));
  EXPECT_TRUE(errors::IsUnimplemented(r.status())) << r.status().ToString();
}

}  // namespace
}  // namespace tw
