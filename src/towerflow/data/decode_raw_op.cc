// DecodeRaw: schema, CPU kernel and builder (TF tensorflow/core/kernels/decode_raw_op.cc).
#include "towerflow/data/decode_raw_op.h"

#include <bit>
#include <cstring>

#include "towerflow/data/io_ops.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace {

// Calls fn.template operator()<T>() with the C++ type DecodeRaw writes for `dtype`.
template <typename Fn>
Status DispatchDecodeRaw(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case kFloat32: return fn.template operator()<float>();
    case kFloat64: return fn.template operator()<double>();
    case kInt32: return fn.template operator()<int32_t>();
    case kInt64: return fn.template operator()<int64_t>();
    case kUInt8: return fn.template operator()<uint8_t>();
    case kBool: return fn.template operator()<bool>();
    default:
      return errors::InvalidArgument("DecodeRaw cannot decode to ", DataTypeName(dtype),
                                     "; out_type must be one of float, double, int32, int64, uint8, bool");
  }
}

// Copies n elements of T from little- or big-endian bytes. Bytes are reversed
// only when the data's byte order differs from the host's (TF does the same);
// bool is decoded byte-wise so that a byte other than 0 or 1 cannot make an
// invalid bool.
template <typename T>
void CopyElements(const char* src, int64_t n, bool swap, T* dst) {
  if constexpr (std::is_same_v<T, bool>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
    if (!swap || sizeof(T) == 1) return;
    auto* bytes = reinterpret_cast<unsigned char*>(dst);
    for (int64_t i = 0; i < n; ++i) {
      unsigned char* e = bytes + i * static_cast<int64_t>(sizeof(T));
      for (size_t a = 0, b = sizeof(T) - 1; a < b; ++a, --b) std::swap(e[a], e[b]);
    }
  }
}

class DecodeRawOp : public OpKernel {
 public:
  explicit DecodeRawOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("out_type", &out_type_));
    TW_OP_REQUIRES_OK(c, c->GetAttr("little_endian", &little_endian_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& bytes = ctx->input(0);
    auto shape = DecodeRawShape(bytes, out_type_);
    TW_OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    DecodeRawFill(bytes, little_endian_, out);
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType out_type_ = kUInt8;
  bool little_endian_ = true;
};

}  // namespace

const std::vector<DataType>& DecodeRawTypes() {
  static const std::vector<DataType> k = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};
  return k;
}

StatusOr<TensorShape> DecodeRawShape(const Tensor& bytes, DataType out_type) {
  if (bytes.dtype() != kString) {
    return errors::InvalidArgument("DecodeRaw input must be a string tensor, got ", DataTypeName(bytes.dtype()));
  }
  size_t elem_size = 0;
  TW_RETURN_IF_ERROR(DispatchDecodeRaw(out_type, [&]<typename T>() {
    elem_size = sizeof(T);
    return Status::OK();
  }));
  const int64_t n = bytes.NumElements();
  std::vector<int64_t> dims = bytes.shape().dims();
  if (n == 0) {
    dims.push_back(0);
    return TensorShape::Make(dims);
  }
  const std::string* s = bytes.data<std::string>();
  const size_t len = s[0].size();
  if (len % elem_size != 0) {
    return errors::InvalidArgument("Input to DecodeRaw has length ", len, " that is not a multiple of ",
                                   elem_size, ", the size of ", DataTypeName(out_type));
  }
  for (int64_t i = 1; i < n; ++i) {
    if (s[i].size() != len) {
      return errors::InvalidArgument("DecodeRaw requires input strings to all be the same size, but element ",
                                     i, " has size ", s[i].size(), " != ", len);
    }
  }
  dims.push_back(static_cast<int64_t>(len / elem_size));
  return TensorShape::Make(dims);
}

void DecodeRawFill(const Tensor& bytes, bool little_endian, Tensor* out) {
  const int64_t n = bytes.NumElements();
  if (n == 0 || out->NumElements() == 0) return;
  const int64_t per_string = out->NumElements() / n;
  const bool swap = little_endian != (std::endian::native == std::endian::little);
  const std::string* s = bytes.data<std::string>();
  DispatchDecodeRaw(out->dtype(), [&]<typename T>() {
    T* dst = out->data<T>();
    for (int64_t i = 0; i < n; ++i) CopyElements<T>(s[i].data(), per_string, swap, dst + i * per_string);
    return Status::OK();
  }).IgnoreError();
}

void RegisterDecodeRawOp(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("DecodeRaw")
                   .Input("bytes", "string")
                   .Output("output", "out_type")
                   .TypeAttr("out_type", DecodeRawTypes())
                   .Attr("little_endian", true)
                   .Shape([](InferenceContext* c) {
                     // The string length is known only at run time.
                     const PartialShape& in = c->input(0);
                     if (!in.known_rank()) {
                       c->set_output(0, PartialShape::Unknown());
                       return Status::OK();
                     }
                     std::vector<int64_t> dims = in.dims();
                     dims.push_back(-1);
                     c->set_output(0, PartialShape(dims));
                     return Status::OK();
                   })
                   .Doc("Reinterprets the bytes of strings as vectors of numbers.")
                   .Build()).Check();
  kernels.RegisterUntyped<DecodeRawOp>("DecodeRaw", kDeviceCpu, "out_type", DecodeRawTypes());
  grads.RegisterNoGradient("DecodeRaw");
}

namespace io {

void RegisterDataOps() { EnsureDataRegistered(); }

Output DecodeRaw(const Scope& scope, const Output& bytes, DataType out_type, bool little_endian) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "DecodeRaw")
      .Input(bytes)
      .Attr("out_type", out_type)
      .Attr("little_endian", little_endian)
      .Finalize();
}

}  // namespace io
}  // namespace tw
