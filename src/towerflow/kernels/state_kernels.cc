// CPU kernels of the variable ops: VariableV2 (storage in the session's
// ResourceMgr), Assign, AssignAdd, AssignSub, IsVariableInitialized,
// InitializedValue. Every read
// or write of a variable's tensor holds the variable's mutex. The checks are
// variable_args.h's, shared with the CUDA twins (state_cuda.cu).
#include <cstring>
#include <memory>
#include <mutex>

#include "towerflow/device/kernel_registry.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/variable_args.h"

namespace tw {
namespace {

// dst = src element-wise. REQUIRES: same dtype and element count.
void CopyElements(const Tensor& src, Tensor* dst) {
  if (src.raw_data() == dst->raw_data()) return;
  if (src.dtype() == kString) {
    const std::string* s = src.data<std::string>();
    std::string* d = dst->data<std::string>();
    for (int64_t k = 0; k < src.NumElements(); ++k) d[k] = s[k];
  } else {
    std::memcpy(dst->raw_data(), src.raw_data(), src.TotalBytes());
  }
}

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string container, shared_name;
    TW_OP_REQUIRES_OK(c, c->GetAttr("container", &container));
    TW_OP_REQUIRES_OK(c, c->GetAttr("shared_name", &shared_name));
    key_ = shared_name.empty() ? c->node().name() : shared_name;
    if (!container.empty()) key_ = container + "/" + key_;
  }

  void Compute(OpKernelContext* ctx) override {
    std::shared_ptr<Var> var;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!var_) {
        auto found = ctx->resource_mgr()->LookupOrCreate<Var>(
            key_, []() -> StatusOr<std::shared_ptr<Var>> { return std::make_shared<Var>(); });
        TW_OP_REQUIRES_OK(ctx, found.status());
        var_ = *found;
      }
      var = var_;
    }
    // The ResourceMgr and this kernel both own the Var: the pointers outlive the step.
    ctx->set_output_ref(0, &var->mu, &var->tensor);
  }
  bool IsExpensive() const override { return false; }
  bool OutputsFixed() const override { return true; }

 private:
  std::string key_;
  std::mutex mu_;
  std::shared_ptr<Var> var_;  // guarded by mu_
};

class AssignOp : public OpKernel {
 public:
  explicit AssignOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("validate_shape", &validate_shape_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      if (validate_shape_) TW_OP_REQUIRES_OK(ctx, CheckAssignShape(ctx, value));
      if (var->IsInitialized() && var->dtype() == value.dtype() && var->shape() == value.shape()) {
        CopyElements(value, var);  // in place: readers holding the buffer see the new value, as in TF
      } else {
        // A buffer owned by the variable alone, never the (possibly shared) value's.
        Tensor fresh;
        TW_OP_REQUIRES_OK(ctx, ctx->allocate_temp(value.dtype(), value.shape(), &fresh));
        CopyElements(value, &fresh);
        *var = std::move(fresh);
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool validate_shape_ = true;
};

template <typename T, bool kAdd>
class AssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      TW_OP_REQUIRES_OK(ctx, CheckAssignUpdate(ctx, value));
      T* v = var->data<T>();
      const T* d = value.data<T>();
      const int64_t n = var->NumElements();
      for (int64_t k = 0; k < n; ++k) {
        if constexpr (kAdd) {
          v[k] += d[k];
        } else {
          v[k] -= d[k];
        }
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }
};
template <typename T>
using AssignAddOp = AssignUpdateOp<T, true>;
template <typename T>
using AssignSubOp = AssignUpdateOp<T, false>;

class IsVariableInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    bool initialized = false;
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      initialized = ctx->mutable_input(0)->IsInitialized();
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<bool>()[0] = initialized;
  }
  bool IsExpensive() const override { return false; }
};

// Inputs: ref, initial_value. The variable's tensor (shared, as a read of it
// is) under its lock when it is initialized, else initial_value.
class InitializedValueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(*ctx->input_ref_mutex(0));
      const Tensor* var = ctx->mutable_input(0);
      if (var->IsInitialized()) {
        ctx->set_output(0, *var);
        return;
      }
    }
    ctx->set_output(0, ctx->input(1));
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterStateKernels(KernelRegistry& r) {
  r.RegisterUntyped<VariableOp>("VariableV2", kDeviceCpu, "dtype", AllDataTypes());
  r.RegisterUntyped<AssignOp>("Assign", kDeviceCpu, "T", AllDataTypes());
  r.RegisterTyped<AssignAddOp, float, double, int32_t, int64_t, uint8_t>("AssignAdd", kDeviceCpu);
  r.RegisterTyped<AssignSubOp, float, double, int32_t, int64_t, uint8_t>("AssignSub", kDeviceCpu);
  r.RegisterUntyped<IsVariableInitializedOp>("IsVariableInitialized", kDeviceCpu, "dtype", AllDataTypes());
  r.RegisterUntyped<InitializedValueOp>("InitializedValue", kDeviceCpu, "dtype", AllDataTypes());
}

}  // namespace tw
