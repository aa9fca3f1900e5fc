#include "towerflow/runtime/check_numerics.h"

#include <cmath>

namespace tw {
namespace {

template <typename T>
Status CheckFinite(const Tensor& t, int output, const Device* device) {
  const auto v = t.flat<T>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      return errors::InvalidArgument("output ", output, " (", DataTypeName(t.dtype()), " ", t.shape().ToString(),
                                     ") on ", device->name(), " has ", std::isnan(v[i]) ? "NaN" : "Inf",
                                     " values (first at flat index ", i, "): the first op found producing them");
    }
  }
  return Status::OK();
}

Status CheckHostTensor(const Tensor& t, int output, const Device* device) {
  if (t.dtype() == kFloat32) return CheckFinite<float>(t, output, device);
  if (t.dtype() == kFloat64) return CheckFinite<double>(t, output, device);
  return Status::OK();
}

}  // namespace

Status CheckOutputNumerics(const ExecutorPlan::Item& item, int output, const Tensor& value) {
  if (value.dtype() != kFloat32 && value.dtype() != kFloat64) return Status::OK();
  if (OutputInHostMemory(item, output)) return CheckHostTensor(value, output, item.device);
  Tensor host;
  TW_RETURN_IF_ERROR(item.device->CopyToHost(value, &host));
  return CheckHostTensor(host, output, item.device);
}

}  // namespace tw
