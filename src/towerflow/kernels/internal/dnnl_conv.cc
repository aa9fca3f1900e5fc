#include "towerflow/kernels/internal/dnnl_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#if defined(TOWERFLOW_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "towerflow/kernels/internal/dnnl_common.h"

namespace tw::dnnl_conv {

bool Enabled() { return dnnl_common::EnabledUnless("TOWERFLOW_CONV", "im2col"); }

#if defined(TOWERFLOW_HAVE_DNNL)
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

using dnnl_common::Engine;
using dnnl_common::OneOpenMpThread;

// The primitives of one batch size.
struct Prims {
  dnnl::primitive conv;
  memory::desc weights;  // the layout the primitive wants for the filter (or its gradient)
  memory::desc user_weights;
  memory::desc scratchpad;
  std::optional<dnnl::reorder> reorder;  // user -> weights (forward, backward data), weights -> user (filter)
  memory::desc src, dst;                 // NHWC, at this batch size
  memory::desc bias;                     // forward with a bias epilogue
};

}  // namespace

struct DnnlConv::Impl {
  conv::ConvGeometry g;
  Pass pass;
  Epilogue epilogue;
  std::mutex mu;
  std::map<int64_t, std::shared_ptr<const Prims>> by_batch;  // guarded by mu

  std::shared_ptr<const Prims> Build(int64_t nb) const {
    // A window whose stride leaves trailing input unread has no padding after
    // it: oneDNN sizes the output with floor division, as TF's VALID does.
    const memory::dim pad_bottom = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h - g.pad_top);
    const memory::dim pad_right = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w - g.pad_left);
    const memory::dims strides{g.sh, g.sw}, pad_l{g.pad_top, g.pad_left}, pad_r{pad_bottom, pad_right};
    const memory::desc src({nb, g.c, g.h, g.w}, memory::data_type::f32, Tag::nhwc);
    const memory::desc dst({nb, g.o, g.oh, g.ow}, memory::data_type::f32, Tag::nhwc);
    const memory::desc any_weights({g.o, g.c, g.kh, g.kw}, memory::data_type::f32, Tag::any);
    const memory::desc user_weights({g.o, g.c, g.kh, g.kw}, memory::data_type::f32, Tag::hwio);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // The backward passes take the plain forward as their hint; a forward with
    // an epilogue adds the bias and applies ReLU as a post-op on each output
    // tile before it is stored.
    const dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                        any_weights, dst, strides, pad_l, pad_r),
        attr, Engine());
    const memory::desc bias({g.o}, memory::data_type::f32, Tag::x);
    dnnl::primitive_attr fused_attr;
    fused_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (epilogue.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      fused_attr.set_post_ops(ops);
    }
    const bool fused = pass == Pass::kForward && (epilogue.bias || epilogue.relu);
    auto p = std::make_shared<Prims>();
    p->user_weights = user_weights;
    p->src = src;
    p->dst = dst;
    switch (pass) {
      case Pass::kForward: {
        if (!fused) {
          p->conv = dnnl::convolution_forward(forward);
          p->weights = forward.weights_desc();
          p->scratchpad = forward.scratchpad_desc();
          break;
        }
        const dnnl::convolution_forward::primitive_desc pd(
            epilogue.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                            dnnl::algorithm::convolution_direct, src, any_weights,
                                                            bias, dst, strides, pad_l, pad_r)
                          : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                            dnnl::algorithm::convolution_direct, src, any_weights,
                                                            dst, strides, pad_l, pad_r),
            fused_attr, Engine());
        p->conv = dnnl::convolution_forward(pd);
        p->weights = pd.weights_desc();
        p->scratchpad = pd.scratchpad_desc();
        if (epilogue.bias) p->bias = bias;
        break;
      }
      case Pass::kBackwardData: {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                                  strides, pad_l, pad_r),
            attr, Engine(), forward);
        p->conv = dnnl::convolution_backward_data(pd);
        p->weights = pd.weights_desc();
        p->scratchpad = pd.scratchpad_desc();
        break;
      }
      case Pass::kBackwardFilter: {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                                     strides, pad_l, pad_r),
            attr, Engine(), forward);
        p->conv = dnnl::convolution_backward_weights(pd);
        p->weights = pd.diff_weights_desc();
        p->scratchpad = pd.scratchpad_desc();
        break;
      }
    }
    if (p->weights != user_weights) {
      p->reorder = pass == Pass::kBackwardFilter
                       ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), p->weights, Engine(), user_weights))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), user_weights, Engine(), p->weights));
    }
    return p;
  }

  std::shared_ptr<const Prims> Get(int64_t nb) {
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = by_batch.find(nb);
      if (it != by_batch.end()) return it->second;
    }
    std::shared_ptr<const Prims> built = Build(nb);  // may throw dnnl::error
    std::lock_guard<std::mutex> lock(mu);
    return by_batch.emplace(nb, std::move(built)).first->second;
  }
};

DnnlConv::DnnlConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlConv::~DnnlConv() = default;

StatusOr<std::unique_ptr<DnnlConv>> DnnlConv::Create(const conv::ConvGeometry& g, Pass pass, Epilogue epilogue) {
  if (g.c == 0 || g.o == 0 || g.kh == 0 || g.kw == 0 || g.oh == 0 || g.ow == 0) {
    return errors::Unimplemented("oneDNN convolution: an empty dimension");
  }
  auto impl = std::make_unique<Impl>();
  impl->g = g;
  impl->pass = pass;
  impl->epilogue = pass == Pass::kForward ? epilogue : Epilogue{};
  try {
    OneOpenMpThread one;
    impl->Get(std::max<int64_t>(g.n, 1));  // the whole batch: fail here, not in Run
  } catch (const dnnl::error& e) {
    return errors::Unimplemented("oneDNN convolution: ", e.what());
  }
  return std::unique_ptr<DnnlConv>(new DnnlConv(std::move(impl)));
}

Status DnnlConv::Run(int64_t n0, int64_t n1, const float* x, const float* w, const float* dy, float* out,
                     const ScratchAllocator& scratch, const float* bias) {
  if (n1 <= n0) return Status::OK();
  OneOpenMpThread one;  // the intra-op pool shards the batch
  const conv::ConvGeometry& g = impl_->g;
  const int64_t in_image = g.h * g.w * g.c;
  const int64_t out_image = g.oh * g.ow * g.o;
  try {
    std::shared_ptr<const Prims> p = impl_->Get(n1 - n0);
    dnnl::engine& engine = Engine();
    dnnl::stream stream(engine);
    auto bytes = [&](const memory::desc& d) -> StatusOr<void*> {
      if (d.get_size() == 0) return static_cast<void*>(nullptr);
      uint8_t* buffer = scratch(d.get_size());
      if (buffer == nullptr) return errors::ResourceExhausted("oneDNN convolution: no memory for ", d.get_size(), " bytes");
      return static_cast<void*>(buffer);
    };
    std::unordered_map<int, memory> args;
    TW_ASSIGN_OR_RETURN(void* pad, bytes(p->scratchpad));
    if (pad != nullptr) args.emplace(DNNL_ARG_SCRATCHPAD, memory(p->scratchpad, engine, pad));
    // The filter in the primitive's layout: w itself, or reordered into scratch.
    auto filter = [&](float* user) -> StatusOr<memory> {
      memory user_memory(p->user_weights, engine, user);
      if (!p->reorder) return user_memory;
      TW_ASSIGN_OR_RETURN(void* buffer, bytes(p->weights));
      memory m(p->weights, engine, buffer);
      if (g.kh * g.kw * g.c * g.o > 0 && impl_->pass != Pass::kBackwardFilter) {
        p->reorder->execute(stream, user_memory, m);
      }
      return m;
    };
    switch (impl_->pass) {
      case Pass::kForward: {
        TW_ASSIGN_OR_RETURN(memory weights, filter(const_cast<float*>(w)));
        args.emplace(DNNL_ARG_SRC, memory(p->src, engine, const_cast<float*>(x + n0 * in_image)));
        args.emplace(DNNL_ARG_WEIGHTS, weights);
        args.emplace(DNNL_ARG_DST, memory(p->dst, engine, out + n0 * out_image));
        if (impl_->epilogue.bias) args.emplace(DNNL_ARG_BIAS, memory(p->bias, engine, const_cast<float*>(bias)));
        p->conv.execute(stream, args);
        break;
      }
      case Pass::kBackwardData: {
        TW_ASSIGN_OR_RETURN(memory weights, filter(const_cast<float*>(w)));
        args.emplace(DNNL_ARG_DIFF_DST, memory(p->dst, engine, const_cast<float*>(dy + n0 * out_image)));
        args.emplace(DNNL_ARG_WEIGHTS, weights);
        args.emplace(DNNL_ARG_DIFF_SRC, memory(p->src, engine, out + n0 * in_image));
        p->conv.execute(stream, args);
        break;
      }
      case Pass::kBackwardFilter: {
        TW_ASSIGN_OR_RETURN(memory weights, filter(out));
        args.emplace(DNNL_ARG_SRC, memory(p->src, engine, const_cast<float*>(x + n0 * in_image)));
        args.emplace(DNNL_ARG_DIFF_DST, memory(p->dst, engine, const_cast<float*>(dy + n0 * out_image)));
        args.emplace(DNNL_ARG_DIFF_WEIGHTS, weights);
        p->conv.execute(stream, args);
        if (p->reorder) {
          memory user(p->user_weights, engine, out);
          p->reorder->execute(stream, weights, user);
        }
        break;
      }
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    return errors::Internal("oneDNN convolution: ", e.what());
  }
  return Status::OK();
}

#else  // !TOWERFLOW_HAVE_DNNL

struct DnnlConv::Impl {};
DnnlConv::DnnlConv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlConv::~DnnlConv() = default;

StatusOr<std::unique_ptr<DnnlConv>> DnnlConv::Create(const conv::ConvGeometry&, Pass, Epilogue) {
  return errors::Unimplemented("this towerflow was built without oneDNN (libdnnl-dev)");
}

Status DnnlConv::Run(int64_t, int64_t, const float*, const float*, const float*, float*, const ScratchAllocator&,
                     const float*) {
  return errors::Unimplemented("this towerflow was built without oneDNN (libdnnl-dev)");
}

#endif

}  // namespace tw::dnnl_conv
