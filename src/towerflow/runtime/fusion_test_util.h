// Helpers of the fusion tests (fusion_test.cc, fusion_momentum_test.cc):
// seeded random tensors and the largest element difference of two tensors.
#ifndef TOWERFLOW_RUNTIME_FUSION_TEST_UTIL_H_
#define TOWERFLOW_RUNTIME_FUSION_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "towerflow/core/tensor.h"

namespace tw::fusion_test {

// Values uniform in [-1, 1) from `seed`.
template <typename T>
Tensor Random(const TensorShape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(DataTypeOf<T>(), shape);
  for (T& v : t.flat<T>()) v = static_cast<T>(u(rng));
  return t;
}

// max |a[i] - b[i]|; a test failure when the shapes differ.
template <typename T>
double MaxDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, std::abs(double(a.data<T>()[i]) - double(b.data<T>()[i])));
  }
  return worst;
}

}  // namespace tw::fusion_test

#endif  // TOWERFLOW_RUNTIME_FUSION_TEST_UTIL_H_
