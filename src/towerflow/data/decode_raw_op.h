// DecodeRaw (TF's tf.decode_raw): reinterprets the bytes of strings as vectors of
// numbers. The op schema, CPU kernel and builder live in decode_raw_op.cc; the
// builder is declared in the public data/io_ops.h. This header exposes the
// kernel's computation as a plain function (for tools and tests) and the
// registration hook called by RegisterParsingOps. Pure functions, thread-safe.
#ifndef TOWERFLOW_DATA_DECODE_RAW_OP_H_
#define TOWERFLOW_DATA_DECODE_RAW_OP_H_

#include "towerflow/core/tensor.h"
#include "towerflow/data/register.h"

namespace tw {

// The element types DecodeRaw produces: float, double, int32, int64, uint8, bool.
const std::vector<DataType>& DecodeRawTypes();

// The shape DecodeRaw gives `bytes` (a string tensor of any shape):
// bytes.shape + [len / sizeof(out_type)]. InvalidArgument with TF's texts when
// the strings differ in length or the length is not a multiple of the element
// size, or for an out_type outside DecodeRawTypes().
StatusOr<TensorShape> DecodeRawShape(const Tensor& bytes, DataType out_type);

// Decodes every string of `bytes` into *out, reading elements in the byte order
// `little_endian` names (bool: any non-zero byte is true).
// REQUIRES: out->shape() == DecodeRawShape(bytes, out->dtype()).
void DecodeRawFill(const Tensor& bytes, bool little_endian, Tensor* out);

// Registers the DecodeRaw schema, its CPU kernel and its no-gradient mark.
void RegisterDecodeRawOp(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads);

}  // namespace tw

#endif  // TOWERFLOW_DATA_DECODE_RAW_OP_H_
