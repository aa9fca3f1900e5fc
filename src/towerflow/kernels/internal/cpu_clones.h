// TW_CPU_CLONES: a hot CPU loop compiled for the host's widest vectors.
//
// towerflow builds for baseline x86-64 (SSE2), where GCC leaves element-wise
// compares and selects scalar (SSE2 has no blend). A function marked
// TW_CPU_CLONES is compiled three times, for baseline x86-64, x86-64-v3
// (AVX2) and x86-64-v4 (AVX-512), and the dynamic loader picks the best one
// the CPU runs (GCC's target_clones: an ifunc resolved once at load).
//
// Every clone computes the same bits: the build contracts no multiply-add
// into an FMA (-ffp-contract=off, cmake/towerflow.cmake) and vectorises no
// float reduction (no -fassociative-math), so each clone performs the same
// IEEE operations on each element in the same order. Mark only leaf loops
// that dominate a kernel: each clone is code size and build time.
//
// Clang (the sanitizer builds), nvcc and other architectures: expands to
// nothing, and the baseline loop runs.
// Internal to kernels/.
#ifndef TOWERFLOW_KERNELS_INTERNAL_CPU_CLONES_H_
#define TOWERFLOW_KERNELS_INTERNAL_CPU_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define TW_CPU_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TW_CPU_CLONES
#endif

#endif  // TOWERFLOW_KERNELS_INTERNAL_CPU_CLONES_H_
