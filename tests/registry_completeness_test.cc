// Every registered op has a shape function, a CPU kernel for every dtype its
// schema allows, and a gradient function or an explicit no-gradient mark; every
// gradient function has a numeric check case. Covers the input pipeline's ops
// (data/) as well as the core's.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/data/register.h"
#include "towerflow/runtime/gradient_checker.h"

namespace tw {
namespace {

class RegistryCompletenessTest : public ::testing::Test {
 protected:
  void SetUp() override { EnsureDataRegistered(); }  // core and input-pipeline ops
};

TEST_F(RegistryCompletenessTest, EveryOpHasAShapeFunction) {
  for (const OpDef* def : OpRegistry::Global().List()) {
    if (def->outputs.empty()) continue;  // NoOp and friends have nothing to infer
    EXPECT_TRUE(static_cast<bool>(def->shape_fn)) << def->name << " has no shape function";
  }
}

TEST_F(RegistryCompletenessTest, EveryOpHasACpuKernelForEachDeclaredDtype) {
  for (const OpDef* def : OpRegistry::Global().List()) {
    std::vector<const KernelDef*> cpu;
    for (const KernelDef* k : KernelRegistry::Global().KernelsFor(def->name)) {
      if (k->device_type == kDeviceCpu) cpu.push_back(k);
    }
    ASSERT_FALSE(cpu.empty()) << def->name << " has no CPU kernel";
    const bool untyped = std::any_of(cpu.begin(), cpu.end(), [](const KernelDef* k) { return k->type_attr.empty(); });
    if (untyped) continue;
    const std::string& attr = cpu.front()->type_attr;
    const AttrDef* a = def->FindAttr(attr);
    ASSERT_NE(a, nullptr) << def->name << ": kernels keyed on unknown attr " << attr;
    std::set<DataType> have;
    for (const KernelDef* k : cpu) {
      EXPECT_EQ(k->type_attr, attr) << def->name << ": CPU kernels keyed on different attrs";
      have.insert(k->types.begin(), k->types.end());
    }
    const std::vector<DataType>& declared = a->allowed_types.empty() ? AllDataTypes() : a->allowed_types;
    for (DataType t : declared) {
      EXPECT_TRUE(have.count(t)) << def->name << " declares " << attr << "=" << DataTypeName(t)
                                 << " but has no CPU kernel for it";
    }
  }
}

TEST_F(RegistryCompletenessTest, EveryOpHasAGradientOrANoGradientMark) {
  const GradientRegistry& grads = GradientRegistry::Global();
  for (const OpDef* def : OpRegistry::Global().List()) {
    EXPECT_TRUE(grads.IsRegistered(def->name)) << def->name << " has neither a gradient nor a no-gradient mark";
    EXPECT_FALSE(grads.Find(def->name) && grads.IsNoGradient(def->name))
        << def->name << " has both a gradient and a no-gradient mark";
  }
}

TEST_F(RegistryCompletenessTest, EveryGradientHasANumericCheckCase) {
  std::set<std::string> checked;
  for (const GradCheckCase& c : AllGradCheckCases()) checked.insert(c.op);
  for (const OpDef* def : OpRegistry::Global().List()) {
    if (GradientRegistry::Global().Find(def->name)) {
      EXPECT_TRUE(checked.count(def->name)) << def->name << " has a gradient but no GradCheckCase";
    }
  }
}

}  // namespace
}  // namespace tw
