// How the CPU kernels fold a row of values, shared by the reductions (Sum,
// Mean, Max: reduction_kernels.cc) and by kernels that end in a mean of their
// own (SparseSoftmaxCrossEntropyMean: nn_kernels.cc), so that both give the
// same bits.
//
// ReduceRow folds with eight independent accumulators, which the compiler
// turns into vector operations (one accumulator cannot be vectorised without
// reassociating). A whole tensor is cut into fixed kFullReduceChunk-element
// chunks, folded one by one (in parallel by the reductions) and combined in
// chunk order, so a result never depends on the number of threads.
#ifndef TOWERFLOW_KERNELS_INTERNAL_ROW_REDUCE_H_
#define TOWERFLOW_KERNELS_INTERNAL_ROW_REDUCE_H_

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tw::row_reduce {

template <typename T>
struct SumReducer {
  static T Identity() { return T(0); }
  static T Combine(T a, T b) { return static_cast<T>(a + b); }
};
template <typename T>
struct MaxReducer {
  static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  static T Combine(T a, T b) { return a < b ? b : a; }
};

template <typename T, typename R>
T ReduceRow(const T* __restrict x, int64_t n) {
  T acc[8];
  std::fill_n(acc, 8, R::Identity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] = R::Combine(acc[j], x[i + j]);
  }
  T r = R::Identity();
  for (int j = 0; j < 8; ++j) r = R::Combine(r, acc[j]);
  for (; i < n; ++i) r = R::Combine(r, x[i]);
  return r;
}

constexpr int64_t kFullReduceChunk = 8192;

// The sum of x[0, n) as Sum over every axis computes it, on one thread.
template <typename T>
T SumAll(const T* x, int64_t n) {
  T out = SumReducer<T>::Identity();
  for (int64_t c = 0; c * kFullReduceChunk < n; ++c) {
    out = SumReducer<T>::Combine(
        out, ReduceRow<T, SumReducer<T>>(x + c * kFullReduceChunk, std::min(kFullReduceChunk, n - c * kFullReduceChunk)));
  }
  return out;
}

}  // namespace tw::row_reduce

#endif  // TOWERFLOW_KERNELS_INTERNAL_ROW_REDUCE_H_
