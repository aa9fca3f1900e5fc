// CPU kernels of 2-D convolution (NHWC input, HWIO filter): Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter, and Conv2D fused with the BiasAdd
// or BiasAddRelu that alone reads it (runtime/fusion.h). A float32 first layer
// (1 to 4 input channels, stride 1, outputs a multiple of 16) runs forward on
// direct AVX-512 loops where the CPU has them (internal/direct_conv.h); other
// float32 convolutions run on oneDNN's JIT
// convolutions where it is built in (internal/dnnl_conv.h); float64, builds
// without oneDNN, shapes oneDNN has no implementation for and TOWERFLOW_CONV=im2col
// run as im2col (im2col.h) + GEMM (blas.h: OpenBLAS, single-threaded). On the tutorial
// CNN's two layers, forward and backward on one thread, oneDNN runs about twice
// as fast (bench/conv_bench: conv_layers against conv_layers_im2col).
//
// Either way the batch is split over the device's intra-op threads, each shard
// on one thread. On the im2col path each shard walks its images in chunks whose
// patch matrix fits kColBudgetBytes (the whole batch's would be 63 MB for the
// tutorial CNN's second layer) and makes one GEMM per chunk:
//   Conv2D               y[rows, O]  = col[rows, K] * W[K, O]
//   Conv2DBackpropInput  dcol[rows, K] = dy[rows, O] * W^T, then col2im into dx
//   Conv2DBackpropFilter dW[K, O]   += col^T * dy
// The filter gradient is one partial per shard, summed in shard order
// (deterministic for a given thread count). 1x1 stride-1 convolutions use the
// input rows directly. The attrs and the argument checks are window_params.h's,
// shared with the CUDA twins (conv_cuda.cu). MaxPool is in pool_kernels.cc and
// registered from here.
#include <algorithm>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "towerflow/kernels/blas.h"
#include "towerflow/kernels/im2col.h"
#include "towerflow/kernels/internal/direct_conv.h"
#include "towerflow/kernels/internal/dnnl_conv.h"
#include "towerflow/kernels/nn_args.h"
#include "towerflow/kernels/register_all.h"
#include "towerflow/kernels/window_params.h"

namespace tw {

void RegisterPoolKernels(KernelRegistry& registry);  // pool_kernels.cc

namespace {

using conv::ConvGeometry;

// 4 MB of patches per chunk: single-threaded sgemm is as fast here as on whole
// batches (measured 2 to 8 MB alike, 32 MB slower), and each thread holds one.
constexpr int64_t kColBudgetBytes = 4 << 20;

// Images per chunk so that a chunk's patch matrix fits kColBudgetBytes (at
// least one image).
template <typename T>
int64_t ChunkImages(const ConvGeometry& g) {
  const int64_t per_image = std::max<int64_t>(1, g.rows() * g.k() * static_cast<int64_t>(sizeof(T)));
  return std::clamp<int64_t>(kColBudgetBytes / per_image, 1, std::max<int64_t>(g.n, 1));
}

// Runs fn(shard_begin, image_begin, image_end, col) over the batch on the
// intra-op pool, chunk by chunk; shard_begin is the first image of the calling
// shard and `col` its patch buffer of one chunk (nullptr for pointwise
// convolutions, which need none). Returns the first failure of fn or of
// allocating a buffer.
template <typename T, typename Fn>
Status ForImageChunks(OpKernelContext* ctx, const ConvGeometry& g, Fn&& fn) {
  const int64_t chunk = ChunkImages<T>(g);
  std::mutex mu;
  Status status;
  // A unit is one image: rows * K * O multiply-adds at ~16 per cycle.
  const int64_t cost = std::max<int64_t>(1, g.rows() * g.k() * g.o / 16);
  ParallelFor(ctx->intra_op_pool(), g.n, cost, [&](int64_t b, int64_t e) {
    Tensor col;
    Status s;
    if (!g.is_pointwise()) {
      s = ctx->allocate_temp(DataTypeOf<T>(), TensorShape{std::min(chunk, e - b) * g.rows(), g.k()}, &col);
    }
    for (int64_t n0 = b; s.ok() && n0 < e; n0 += chunk) {
      s = fn(b, n0, std::min(e, n0 + chunk), g.is_pointwise() ? nullptr : col.data<T>());
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (status.ok()) status = s;
    }
  });
  return status;
}

// The patch rows of images [n0, n1): the input itself for pointwise
// convolutions, else im2col into `col`.
template <typename T>
const T* Patches(const ConvGeometry& g, const T* x, int64_t n0, int64_t n1, T* col) {
  const int64_t image = g.h * g.w * g.c;
  if (col == nullptr) return x + n0 * image;
  for (int64_t n = n0; n < n1; ++n) conv::Im2Col(g, x + n * image, col + (n - n0) * g.rows() * g.k());
  return col;
}

// Reads strides and padding (window_params.h) and loads BLAS; shared by the
// three kernels.
class ConvKernelBase : public OpKernel {
 public:
  explicit ConvKernelBase(OpKernelConstruction* c) : OpKernel(c) {
    TW_OP_REQUIRES_OK(c, window::ReadConvAttrs(*c, &attrs_));
    TW_OP_REQUIRES_OK(c, blas::Init());
  }

 protected:
  StatusOr<ConvGeometry> Geometry(const TensorShape& input, const TensorShape& filter) const {
    TW_ASSIGN_OR_RETURN(ConvGeometry g,
                        conv::MakeGeometry(node().op().c_str(), input, filter, attrs_.strides, attrs_.same));
    // BLAS takes 32-bit sizes; one image's patch matrix is the largest operand.
    if (std::max({g.rows(), g.k(), g.o, g.h * g.w}) > INT32_MAX / 2) {
      return errors::InvalidArgument(node().op(), ": input ", input.ToString(), " and filter ", filter.ToString(),
                                     " exceed BLAS's 32-bit sizes");
    }
    return g;
  }

  // The oneDNN convolution for `g` (float32 only), built on first use and
  // rebuilt when the geometry changes; null when oneDNN is off or cannot run
  // it (the caller uses im2col).
  template <typename T>
  std::shared_ptr<dnnl_conv::DnnlConv> Dnnl(const ConvGeometry& g, dnnl_conv::Pass pass) {
    if (!std::is_same_v<T, float> || !dnnl_) return nullptr;
    std::lock_guard<std::mutex> lock(dnnl_mu_);
    const bool same = dnnl_geometry_ && dnnl_geometry_->h == g.h && dnnl_geometry_->w == g.w &&
                      dnnl_geometry_->c == g.c && dnnl_geometry_->kh == g.kh && dnnl_geometry_->kw == g.kw &&
                      dnnl_geometry_->o == g.o && dnnl_geometry_->sh == g.sh && dnnl_geometry_->sw == g.sw &&
                      dnnl_geometry_->oh == g.oh && dnnl_geometry_->ow == g.ow &&
                      dnnl_geometry_->pad_top == g.pad_top && dnnl_geometry_->pad_left == g.pad_left;
    if (!same) {
      auto made = dnnl_conv::DnnlConv::Create(g, pass, epilogue_);
      dnnl_geometry_ = g;
      dnnl_conv_ = made.ok() ? std::shared_ptr<dnnl_conv::DnnlConv>(std::move(made).value()) : nullptr;
    }
    return dnnl_conv_;
  }

  // Runs fn(begin, end, scratch) over the batch's intra-op shards; `scratch`
  // hands out temp memory that lives until the shard ends.
  template <typename Fn>
  static Status ForShards(OpKernelContext* ctx, const ConvGeometry& g, Fn&& fn) {
    std::mutex mu;
    Status status;
    const int64_t cost = std::max<int64_t>(1, g.rows() * g.k() * g.o / 16);
    ParallelFor(ctx->intra_op_pool(), g.n, cost, [&](int64_t b, int64_t e) {
      std::vector<Tensor> temps;
      auto scratch = [&](size_t bytes) -> uint8_t* {
        Tensor t;
        if (!ctx->allocate_temp(kUInt8, TensorShape{static_cast<int64_t>(bytes)}, &t).ok()) return nullptr;
        temps.push_back(t);
        return t.data<uint8_t>();
      };
      Status s = fn(b, e, scratch);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (status.ok()) status = s;
      }
    });
    return status;
  }

  window::ConvAttrs attrs_;
  const bool direct_ = direct_conv::Enabled();
  // A fused Conv2D's bias and ReLU (FusedConv2DOp); none otherwise.
  dnnl_conv::Epilogue epilogue_;

 private:
  const bool dnnl_ = dnnl_conv::Enabled();
  std::mutex dnnl_mu_;
  std::optional<ConvGeometry> dnnl_geometry_;           // guarded by dnnl_mu_
  std::shared_ptr<dnnl_conv::DnnlConv> dnnl_conv_;     // guarded by dnnl_mu_
};

// y[rows, o] += bias (per column), then ReLU when `relu`: a fused Conv2D's
// epilogue on the im2col path, applied to each chunk while it is in cache.
template <typename T>
void AddBiasRows(T* __restrict y, int64_t rows, int64_t o, const T* __restrict bias, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * o;
    if (relu) {
      for (int64_t j = 0; j < o; ++j) row[j] = std::max(row[j] + bias[j], T(0));
    } else {
      for (int64_t j = 0; j < o; ++j) row[j] += bias[j];
    }
  }
}

// Conv2D; with an epilogue (FusedConv2DOp), input 2 is a bias added to every
// output, then ReLU when asked.
template <typename T>
class Conv2DOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    auto geo = Geometry(input.shape(), filter.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    const T* bias = nullptr;
    if (epilogue_.bias) {
      const Tensor& b = ctx->input(2);
      TW_OP_REQUIRES_OK(ctx, CheckBiasAdd(g.output_shape(), b.shape()));
      bias = b.data<T>();
    }
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    T* y = out->data<T>();
    if (out->NumElements() == 0) return;
    const auto epilogue = [&](int64_t n0, int64_t n1) {
      if (bias != nullptr) AddBiasRows(y + n0 * g.rows() * g.o, (n1 - n0) * g.rows(), g.o, bias, epilogue_.relu);
    };
    if (g.k() == 0) {  // an empty sum; GEMM with K = 0 is not reliably defined
      std::fill_n(y, out->NumElements(), T(0));
      epilogue(0, g.n);
      return;
    }
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (direct_ && direct_conv::Supports(g)) {
        TW_OP_REQUIRES_OK(ctx, ForShards(ctx, g, [&](int64_t b, int64_t e, const auto& scratch) {
          const size_t bytes = static_cast<size_t>(direct_conv::ScratchFloats(g)) * sizeof(float);
          uint8_t* pad = scratch(bytes);
          if (pad == nullptr) return errors::ResourceExhausted("Conv2D: no memory for ", bytes, " bytes of padding");
          direct_conv::Forward(g, b, e, x, w, bias, epilogue_.relu, y, reinterpret_cast<float*>(pad));
          return Status::OK();
        }));
        return;
      }
      if (auto dnnl = Dnnl<T>(g, dnnl_conv::Pass::kForward)) {
        TW_OP_REQUIRES_OK(ctx, ForShards(ctx, g, [&](int64_t b, int64_t e, const auto& scratch) {
          return dnnl->Run(b, e, x, w, nullptr, y, scratch, bias);
        }));
        return;
      }
    }
    TW_OP_REQUIRES_OK(ctx, ForImageChunks<T>(ctx, g, [&](int64_t, int64_t n0, int64_t n1, T* col) {
      const T* a = Patches(g, x, n0, n1, col);
      blas::Gemm(false, false, (n1 - n0) * g.rows(), g.o, g.k(), a, g.k(), w, g.o, T(0), y + n0 * g.rows() * g.o, g.o);
      epilogue(n0, n1);
      return Status::OK();
    }));
  }

 protected:
  // A fused kernel: the bias always (BiasAdd and BiasAddRelu both add one).
  Conv2DOp(OpKernelConstruction* c, bool relu) : ConvKernelBase(c) { epilogue_ = {true, relu}; }
};

// Conv2D fused with the BiasAdd or BiasAddRelu that alone reads its output
// (runtime/fusion.h): inputs (input, filter, bias), the consumer's output. On
// oneDNN the bias and ReLU are a post-op of the convolution; on im2col they
// run over each chunk after its GEMM.
template <typename T>
class FusedConv2DOp : public Conv2DOp<T> {
 public:
  FusedConv2DOp(OpKernelConstruction* c, const Node& consumer) : Conv2DOp<T>(c, consumer.op() == "BiasAddRelu") {}
};

template <typename T>
std::unique_ptr<OpKernel> MakeFusedConv2D(OpKernelConstruction* c, const Node& consumer) {
  return std::make_unique<FusedConv2DOp<T>>(c, consumer);
}

template <typename T>
class Conv2DBackpropInputOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    auto sizes = window::ConvSizesInput(ctx, 0);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    const Tensor& filter = ctx->input(1);
    auto geo = Geometry(*sizes, filter.shape());
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, window::CheckConvBackprop(ctx, g));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    T* dx = out->data<T>();
    const T* dy = ctx->input(2).data<T>();
    const T* w = filter.data<T>();
    if (out->NumElements() == 0) return;
    if (g.o == 0 || g.rows() == 0) {
      std::fill_n(dx, out->NumElements(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (auto dnnl = Dnnl<T>(g, dnnl_conv::Pass::kBackwardData)) {
        TW_OP_REQUIRES_OK(ctx, ForShards(ctx, g, [&](int64_t b, int64_t e, const auto& scratch) {
          return dnnl->Run(b, e, nullptr, w, dy, dx, scratch);
        }));
        return;
      }
    }
    // d col = dy W^T ([rows, O] x [O, K]); col2im adds it back into pixels.
    const int64_t image = g.h * g.w * g.c;
    TW_OP_REQUIRES_OK(ctx, ForImageChunks<T>(ctx, g, [&](int64_t, int64_t n0, int64_t n1, T* col) {
      const int64_t m = (n1 - n0) * g.rows();
      const T* dyc = dy + n0 * g.rows() * g.o;
      if (col == nullptr) {
        blas::Gemm(false, true, m, g.c, g.o, dyc, g.o, w, g.o, T(0), dx + n0 * image, g.c);
        return Status::OK();
      }
      blas::Gemm(false, true, m, g.k(), g.o, dyc, g.o, w, g.o, T(0), col, g.k());
      for (int64_t n = n0; n < n1; ++n) conv::Col2Im(g, col + (n - n0) * g.rows() * g.k(), dx + n * image);
      return Status::OK();
    }));
  }
};

template <typename T>
class Conv2DBackpropFilterOp : public ConvKernelBase {
 public:
  using ConvKernelBase::ConvKernelBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    auto sizes = window::ConvSizesInput(ctx, 1);
    TW_OP_REQUIRES_OK(ctx, sizes.status());
    auto geo = Geometry(input.shape(), *sizes);
    TW_OP_REQUIRES_OK(ctx, geo.status());
    const ConvGeometry& g = *geo;
    TW_OP_REQUIRES_OK(ctx, window::CheckConvBackprop(ctx, g));
    Tensor* out = nullptr;
    TW_OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *sizes, &out));
    T* dw = out->data<T>();
    const T* x = input.data<T>();
    const T* dy = ctx->input(2).data<T>();
    const int64_t filter_elements = out->NumElements();
    if (filter_elements == 0) return;
    std::fill_n(dw, filter_elements, T(0));
    if (g.n * g.rows() == 0) return;
    // The shard holding image 0 accumulates into dw; every other shard into a
    // partial, keyed by its first image and added in that order afterwards.
    std::mutex mu;
    std::map<int64_t, Tensor> partials;  // guarded by mu
    if constexpr (std::is_same_v<T, float>) {
      if (auto dnnl = Dnnl<T>(g, dnnl_conv::Pass::kBackwardFilter)) {
        TW_OP_REQUIRES_OK(ctx, ForShards(ctx, g, [&](int64_t b, int64_t e, const auto& scratch) -> Status {
          T* acc = dw;
          if (b != 0) {
            Tensor t;
            TW_RETURN_IF_ERROR(ctx->allocate_temp(DataTypeOf<T>(), *sizes, &t));
            std::lock_guard<std::mutex> lock(mu);
            acc = partials.emplace(b, t).first->second.template data<T>();
          }
          return dnnl->Run(b, e, x, nullptr, dy, acc, scratch);  // overwrites acc
        }));
        AddPartials(partials, dw, filter_elements);
        return;
      }
    }
    TW_OP_REQUIRES_OK(ctx, ForImageChunks<T>(ctx, g, [&](int64_t shard, int64_t n0, int64_t n1, T* col) -> Status {
      T* acc = dw;
      if (shard != 0) {
        std::lock_guard<std::mutex> lock(mu);
        auto it = partials.find(shard);
        if (it == partials.end()) {  // the shard's first chunk
          Tensor t;
          TW_RETURN_IF_ERROR(ctx->allocate_temp(DataTypeOf<T>(), *sizes, &t));
          std::fill_n(t.data<T>(), filter_elements, T(0));
          it = partials.emplace(shard, t).first;
        }
        acc = it->second.template data<T>();
      }
      const T* a = Patches(g, x, n0, n1, col);
      blas::Gemm(true, false, g.k(), g.o, (n1 - n0) * g.rows(), a, g.k(), dy + n0 * g.rows() * g.o, g.o, T(1), acc,
                 g.o);
      return Status::OK();
    }));
    AddPartials(partials, dw, filter_elements);
  }

 private:
  static void AddPartials(const std::map<int64_t, Tensor>& partials, T* dw, int64_t n) {
    for (const auto& [first, partial] : partials) {
      const T* p = partial.template data<T>();
      for (int64_t i = 0; i < n; ++i) dw[i] += p[i];
    }
  }
};

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  r.RegisterTyped<Conv2DOp, float, double>("Conv2D", kDeviceCpu);
  r.RegisterTyped<Conv2DBackpropInputOp, float, double>("Conv2DBackpropInput", kDeviceCpu);
  r.RegisterTyped<Conv2DBackpropFilterOp, float, double>("Conv2DBackpropFilter", kDeviceCpu);
  for (const char* consumer : {"BiasAdd", "BiasAddRelu"}) {
    // The GPU fuses Conv2D -> BiasAddRelu (float) too: this is its twin.
    FusionDef f{"Conv2D", consumer, 0, kDeviceCpu, {kFloat32}, MakeFusedConv2D<float>};
    f.gpu_twin = std::string(consumer) == "BiasAddRelu";
    r.RegisterFusion(std::move(f));
    r.RegisterFusion(FusionDef{"Conv2D", consumer, 0, kDeviceCpu, {kFloat64}, MakeFusedConv2D<double>});
  }
  RegisterPoolKernels(r);
}

}  // namespace tw
