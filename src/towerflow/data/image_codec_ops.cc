// DecodeJpeg, DecodePng, DecodeImage, EncodeJpeg, EncodePng: schemas, CPU
// kernels and builders (TF's tensorflow/core/kernels/image/decode_image_op.cc,
// encode_jpeg_op.cc, encode_png_op.cc). The codecs are
// data/internal/image_codecs.h's; the kernels check the attrs and shapes,
// allocate the output once the header has given its size, and name the op's
// input in their errors. As TF's, the three decoders take JPEG and PNG alike.
#include "towerflow/data/image_codec_ops.h"

#include <string_view>

#include "towerflow/data/internal/image_codecs.h"
#include "towerflow/data/register.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace {

// The single string of `contents` (input 0), or InvalidArgument.
StatusOr<std::string_view> Contents(OpKernelContext* ctx, const char* op) {
  const Tensor& t = ctx->input(0);
  if (t.dtype() != kString || t.rank() != 0) {
    return errors::InvalidArgument(op, ": contents must be a scalar string, got ", t.DebugString());
  }
  return std::string_view(t.data<std::string>()[0]);
}

// Allocates output 0 as [height, width, channels] uint8 for a codec.
image_codec::PixelSink OutputSink(OpKernelContext* ctx) {
  return [ctx](int64_t h, int64_t w, int64_t c) -> StatusOr<void*> {
    TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make({h, w, c}));
    Tensor* out = nullptr;
    TW_RETURN_IF_ERROR(ctx->allocate_output(0, shape, &out));
    return static_cast<void*>(out->data<uint8_t>());
  };
}

Status CheckJpegAttrs(int64_t channels, int64_t ratio, const std::string& dct) {
  if (channels != 0 && channels != 1 && channels != 3) {
    return errors::InvalidArgument("channels must be 0, 1, or 3 for JPEG, got ", channels);
  }
  if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8) {
    return errors::InvalidArgument("ratio must be 1, 2, 4, or 8, got ", ratio);
  }
  if (!dct.empty() && dct != "INTEGER_FAST" && dct != "INTEGER_ACCURATE") {
    return errors::InvalidArgument("dct_method must be \"\", \"INTEGER_FAST\" or \"INTEGER_ACCURATE\", got \"", dct,
                                   "\"");
  }
  return Status::OK();
}

// TF's decoders take no 2-channel (gray + alpha) output.
Status CheckPngChannels(int64_t channels) {
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    return errors::InvalidArgument("channels must be 0, 1, 3 or 4, got ", channels);
  }
  return Status::OK();
}

// The format of encoded image bytes that towerflow does not decode, or "".
const char* OtherFormat(std::string_view d) {
  if (d.size() >= 3 && d.compare(0, 3, "GIF") == 0) return "GIF";
  if (d.size() >= 2 && d.compare(0, 2, "BM") == 0) return "BMP";
  if (d.size() >= 12 && d.compare(0, 4, "RIFF") == 0 && d.compare(8, 4, "WEBP") == 0) return "WebP";
  return "";
}

// Decodes JPEG or PNG bytes into output 0, whichever their first bytes say:
// as TF's, DecodeJpeg, DecodePng and DecodeImage each take either format (a
// PNG saved as .jpg). `jpeg` holds the channels asked for (and, for
// DecodeJpeg, its other attrs); `op` names the kernel in errors.
Status DecodeEither(OpKernelContext* ctx, std::string_view data, const image_codec::JpegOptions& jpeg,
                    const std::string& op) {
  if (data.empty()) return errors::InvalidArgument(op, ": Input is empty.");
  if (image_codec::IsPng(data)) {
    return image_codec::DecodePng(data, jpeg.channels, OutputSink(ctx)).WithContext(op);
  }
  if (image_codec::IsJpeg(data)) {
    if (jpeg.channels == 4) return errors::InvalidArgument(op, ": JPEG does not support 4 channels");
    return image_codec::DecodeJpeg(data, jpeg, OutputSink(ctx)).WithContext(op);
  }
  const std::string other = OtherFormat(data);
  if (!other.empty()) {
    return errors::InvalidArgument(op, ": ", other, " images are not decoded by towerflow (", data.size(),
                                   " bytes); JPEG and PNG are");
  }
  return errors::InvalidArgument(op, ": Unknown image file format (", data.size(),
                                 " bytes). One of JPEG, PNG required.");
}

// DecodeJpeg (its attrs), DecodePng and DecodeImage (channels 0, 1, 3, 4).
class DecodeOp : public OpKernel {
 public:
  explicit DecodeOp(OpKernelConstruction* c) : OpKernel(c), op_(c->node().op()) {
    int64_t channels = 0;
    TW_OP_REQUIRES_OK(c, c->GetAttr("channels", &channels));
    if (op_ == "DecodeJpeg") {
      int64_t ratio = 1;
      double fraction = 1.0;
      TW_OP_REQUIRES_OK(c, c->GetAttr("ratio", &ratio));
      TW_OP_REQUIRES_OK(c, c->GetAttr("fancy_upscaling", &options_.fancy_upscaling));
      TW_OP_REQUIRES_OK(c, c->GetAttr("try_recover_truncated", &options_.try_recover_truncated));
      TW_OP_REQUIRES_OK(c, c->GetAttr("acceptable_fraction", &fraction));
      TW_OP_REQUIRES_OK(c, c->GetAttr("dct_method", &options_.dct_method));
      TW_OP_REQUIRES_OK(c, CheckJpegAttrs(channels, ratio, options_.dct_method));
      options_.ratio = static_cast<int>(ratio);
      options_.acceptable_fraction = static_cast<float>(fraction);
    } else {
      TW_OP_REQUIRES_OK(c, CheckPngChannels(channels));
    }
    options_.channels = static_cast<int>(channels);
  }
  void Compute(OpKernelContext* ctx) override {
    auto data = Contents(ctx, op_.c_str());
    TW_OP_REQUIRES_OK(ctx, data.status());
    TW_OP_REQUIRES_OK(ctx, DecodeEither(ctx, *data, options_, op_));
  }

 private:
  const std::string op_;
  image_codec::JpegOptions options_;
};

// The uint8 [height, width, channels] image of input 0, channels checked
// against `allowed` (a predicate's text for the error).
Status CheckImage(const Tensor& image, const char* op, bool channels_ok, const char* allowed) {
  if (image.dtype() != kUInt8 || image.rank() != 3) {
    return errors::InvalidArgument(op, ": image must be a 3-dimensional uint8 tensor [height, width, channels], got ",
                                   image.DebugString());
  }
  if (!channels_ok) return errors::InvalidArgument(op, ": image must have ", allowed, " channels, got ", image.dim(2));
  if (image.dim(0) == 0 || image.dim(1) == 0) {
    return errors::InvalidArgument(op, ": image must not be empty, got shape ", image.shape().ToString());
  }
  return Status::OK();
}

class EncodeJpegOp : public OpKernel {
 public:
  explicit EncodeJpegOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t quality = 95, x = 300, y = 300;
    TW_OP_REQUIRES_OK(c, c->GetAttr("format", &options_.format));
    TW_OP_REQUIRES_OK(c, c->GetAttr("quality", &quality));
    TW_OP_REQUIRES_OK(c, c->GetAttr("progressive", &options_.progressive));
    TW_OP_REQUIRES_OK(c, c->GetAttr("optimize_size", &options_.optimize_size));
    TW_OP_REQUIRES_OK(c, c->GetAttr("chroma_downsampling", &options_.chroma_downsampling));
    TW_OP_REQUIRES_OK(c, c->GetAttr("density_unit", &options_.density_unit));
    TW_OP_REQUIRES_OK(c, c->GetAttr("x_density", &x));
    TW_OP_REQUIRES_OK(c, c->GetAttr("y_density", &y));
    TW_OP_REQUIRES(c, options_.format.empty() || options_.format == "grayscale" || options_.format == "rgb",
                   errors::InvalidArgument("format must be \"\", \"grayscale\" or \"rgb\", got \"", options_.format,
                                           "\""));
    TW_OP_REQUIRES(c, quality >= 0 && quality <= 100,
                   errors::InvalidArgument("quality must be in [0,100], got ", quality));
    TW_OP_REQUIRES(c, options_.density_unit == "in" || options_.density_unit == "cm",
                   errors::InvalidArgument("density_unit must be 'in' or 'cm', got \"", options_.density_unit, "\""));
    TW_OP_REQUIRES(c, x >= 0 && x <= 65535 && y >= 0 && y <= 65535,
                   errors::InvalidArgument("x_density and y_density must be in [0, 65535], got ", x, " and ", y));
    options_.quality = static_cast<int>(quality);
    options_.x_density = static_cast<int>(x);
    options_.y_density = static_cast<int>(y);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& image = ctx->input(0);
    const int64_t c = image.rank() == 3 ? image.dim(2) : 0;
    const bool ok = options_.format == "grayscale" ? c == 1 : options_.format == "rgb" ? c == 3 : c == 1 || c == 3;
    const char* allowed = options_.format == "grayscale" ? "1 (format \"grayscale\")"
                          : options_.format == "rgb"     ? "3 (format \"rgb\")"
                                                         : "1 or 3";
    TW_OP_REQUIRES_OK(ctx, CheckImage(image, "EncodeJpeg", ok, allowed));
    auto bytes = image_codec::EncodeJpeg(image.data<uint8_t>(), image.dim(0), image.dim(1), c, options_);
    TW_OP_REQUIRES_OK(ctx, bytes.status().WithContext("EncodeJpeg"));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<std::string>()[0] = std::move(*bytes);
  }

 private:
  image_codec::JpegEncodeOptions options_;
};

class EncodePngOp : public OpKernel {
 public:
  explicit EncodePngOp(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, c->GetAttr("compression", &compression_));
    TW_OP_REQUIRES(c, compression_ >= -1 && compression_ <= 9,
                   errors::InvalidArgument("compression should be in [-1,9], got ", compression_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& image = ctx->input(0);
    const int64_t c = image.rank() == 3 ? image.dim(2) : 0;
    TW_OP_REQUIRES_OK(ctx, CheckImage(image, "EncodePng", c >= 1 && c <= 4, "1 to 4"));
    auto bytes =
        image_codec::EncodePng(image.data<uint8_t>(), image.dim(0), image.dim(1), c, static_cast<int>(compression_));
    TW_OP_REQUIRES_OK(ctx, bytes.status().WithContext("EncodePng"));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<std::string>()[0] = std::move(*bytes);
  }

 private:
  int64_t compression_ = -1;
};

// [?, ?, channels] (channels unknown when 0) for a scalar contents input.
Status DecodedShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 0));
  TW_ASSIGN_OR_RETURN(int64_t channels, c->GetAttr<int64_t>("channels"));
  c->set_output(0, PartialShape({-1, -1, channels > 0 ? channels : -1}));
  return Status::OK();
}

Status EncodedShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 3));
  c->set_output(0, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

}  // namespace

void RegisterImageCodecOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(OpDefBuilder("DecodeJpeg")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", int64_t{0})
                   .Attr("ratio", int64_t{1})
                   .Attr("fancy_upscaling", true)
                   .Attr("try_recover_truncated", false)
                   .Attr("acceptable_fraction", 1.0)
                   .Attr("dct_method", std::string())
                   .Shape(DecodedShape)
                   .Doc("The pixels of a JPEG image, [height, width, channels].")
                   .Build()).Check();
  ops.Register(OpDefBuilder("DecodePng")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", int64_t{0})
                   .Shape(DecodedShape)
                   .Doc("The pixels of a PNG image, [height, width, channels].")
                   .Build()).Check();
  ops.Register(OpDefBuilder("DecodeImage")
                   .Input("contents", "string")
                   .Output("image", "uint8")
                   .Attr("channels", int64_t{0})
                   .Shape(DecodedShape)
                   .Doc("The pixels of a JPEG or PNG image, the format found from its bytes.")
                   .Build()).Check();
  ops.Register(OpDefBuilder("EncodeJpeg")
                   .Input("image", "uint8")
                   .Output("contents", "string")
                   .Attr("format", std::string())
                   .Attr("quality", int64_t{95})
                   .Attr("progressive", false)
                   .Attr("optimize_size", false)
                   .Attr("chroma_downsampling", true)
                   .Attr("density_unit", std::string("in"))
                   .Attr("x_density", int64_t{300})
                   .Attr("y_density", int64_t{300})
                   .Shape(EncodedShape)
                   .Doc("A uint8 image [height, width, 1 or 3] as JPEG bytes.")
                   .Build()).Check();
  ops.Register(OpDefBuilder("EncodePng")
                   .Input("image", "uint8")
                   .Output("contents", "string")
                   .Attr("compression", int64_t{-1})
                   .Shape(EncodedShape)
                   .Doc("A uint8 image [height, width, 1 to 4] as PNG bytes.")
                   .Build()).Check();
  for (const char* op : {"DecodeJpeg", "DecodePng", "DecodeImage"}) kernels.RegisterUntyped<DecodeOp>(op, kDeviceCpu);
  kernels.RegisterUntyped<EncodeJpegOp>("EncodeJpeg", kDeviceCpu);
  kernels.RegisterUntyped<EncodePngOp>("EncodePng", kDeviceCpu);
  for (const char* op : {"DecodeJpeg", "DecodePng", "DecodeImage", "EncodeJpeg", "EncodePng"}) {
    grads.RegisterNoGradient(op);
  }
}

namespace io {

Output DecodeJpeg(const Scope& scope, const Output& contents, DecodeJpegOptions o) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "DecodeJpeg")
      .Input(contents)
      .Attr("channels", o.channels)
      .Attr("ratio", o.ratio)
      .Attr("fancy_upscaling", o.fancy_upscaling)
      .Attr("try_recover_truncated", o.try_recover_truncated)
      .Attr("acceptable_fraction", o.acceptable_fraction)
      .Attr("dct_method", o.dct_method)
      .Finalize();
}

Output DecodePng(const Scope& scope, const Output& contents, int64_t channels) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "DecodePng").Input(contents).Attr("channels", channels).Finalize();
}

Output DecodeImage(const Scope& scope, const Output& contents, int64_t channels) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "DecodeImage").Input(contents).Attr("channels", channels).Finalize();
}

Output EncodeJpeg(const Scope& scope, const Output& image, EncodeJpegOptions o) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "EncodeJpeg")
      .Input(image)
      .Attr("format", o.format)
      .Attr("quality", o.quality)
      .Attr("progressive", o.progressive)
      .Attr("optimize_size", o.optimize_size)
      .Attr("chroma_downsampling", o.chroma_downsampling)
      .Attr("density_unit", o.density_unit)
      .Attr("x_density", o.x_density)
      .Attr("y_density", o.y_density)
      .Finalize();
}

Output EncodePng(const Scope& scope, const Output& image, int64_t compression) {
  EnsureDataRegistered();
  return NodeBuilder(scope, "EncodePng").Input(image).Attr("compression", compression).Finalize();
}

}  // namespace io
}  // namespace tw
