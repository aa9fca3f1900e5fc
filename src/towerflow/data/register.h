// Registration of the data module's op schemas, kernels and gradient marks.
//
// data/ sits above runtime/, so its ops are not in the core registries until
// EnsureDataRegistered() runs. Every data builder function calls it (so a graph
// that uses data ops always has them), as do the `towerflow` tool and tests.
// Thread-safe and idempotent.
#ifndef TOWERFLOW_DATA_REGISTER_H_
#define TOWERFLOW_DATA_REGISTER_H_

#include "towerflow/device/kernel_registry.h"
#include "towerflow/graph/gradients.h"
#include "towerflow/graph/op_def.h"

namespace tw {

void EnsureDataRegistered();

// One per data op family; each lives next to its ops.
void RegisterQueueOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);
void RegisterParsingOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);
void RegisterReaderOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);
// DecodeJpeg, DecodePng, DecodeImage, EncodeJpeg, EncodePng (image_codec_ops.cc).
void RegisterImageCodecOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);
// Iterator, MakeIterator, IteratorGetNext (data/dataset/iterator_ops.cc).
void RegisterDatasetOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);

}  // namespace tw

#endif  // TOWERFLOW_DATA_REGISTER_H_
