// Registers every CPU kernel of towerflow in KernelRegistry::Global(), once.
// Thread-safe (std::call_once); Session and the `towerflow ops` command call it.
#ifndef TOWERFLOW_KERNELS_REGISTER_ALL_H_
#define TOWERFLOW_KERNELS_REGISTER_ALL_H_

#include "towerflow/device/kernel_registry.h"

namespace tw {

void EnsureKernelsRegistered();

// One per kernel family; each lives in its kernel file.
void RegisterArrayKernels(KernelRegistry& registry);
void RegisterShapeKernels(KernelRegistry& registry);
// GatherV2, UnsortedSegmentSum, OneHot, SelectV2, InTopKV2 (gather_kernels.cc).
void RegisterGatherKernels(KernelRegistry& registry);
// Transpose, InvertPermutation, Tile, Pad, PadV2, Range (layout_kernels.cc).
void RegisterLayoutKernels(KernelRegistry& registry);
void RegisterImageKernels(KernelRegistry& registry);
void RegisterBicubicAreaKernels(KernelRegistry& registry);
void RegisterColorKernels(KernelRegistry& registry);
void RegisterBoundingBoxKernels(KernelRegistry& registry);
void RegisterMathKernels(KernelRegistry& registry);
void RegisterMatMulKernels(KernelRegistry& registry);
void RegisterReductionKernels(KernelRegistry& registry);
void RegisterNnKernels(KernelRegistry& registry);
void RegisterConvKernels(KernelRegistry& registry);
// AvgPool, AvgPoolGrad (avg_pool_kernels.cc).
void RegisterAvgPoolKernels(KernelRegistry& registry);
// LRN, LRNGrad (lrn_kernels.cc).
void RegisterLrnKernels(KernelRegistry& registry);
void RegisterStateKernels(KernelRegistry& registry);
void RegisterRandomKernels(KernelRegistry& registry);
void RegisterTrainingKernels(KernelRegistry& registry);
void RegisterBatchMatMulKernels(KernelRegistry& registry);
// MatMul -> ApplyMomentum and Div -> ApplyMomentum (momentum_fusions.cc).
void RegisterMomentumFusions(KernelRegistry& registry);
// Cast (uint8 -> float32) -> Mul by one element (cast_fusions.cc).
void RegisterCastFusions(KernelRegistry& registry);
// The CPU twins of the GPU's MatMul -> BiasAdd / BiasAddRelu (pair_twin.h).
void RegisterPairTwins(KernelRegistry& registry);
void RegisterCollectiveKernels(KernelRegistry& registry);

}  // namespace tw

#endif  // TOWERFLOW_KERNELS_REGISTER_ALL_H_
