// Schemas and builders of the neural-network ops: BiasAdd, Relu, Softmax, the
// softmax cross-entropies, L2Loss, Conv2D, MaxPool and AvgPool (NHWC, filters HWIO),
// Dropout, LRN, and the internal ops their gradients use (BiasAddGrad, ReluGrad,
// Conv2DBackpropInput, Conv2DBackpropFilter, MaxPoolGrad, MaxPoolGradGrad,
// AvgPoolGrad, LRNGrad).
//
// Window sizes follow TF exactly (GetWindowedOutputSize): VALID gives
// ceil((in - k + 1) / stride), SAME gives ceil(in / stride); the kernels in
// kernels/conv_kernels.cc and kernels/pool_kernels.cc compute the same.
#include "towerflow/graph/ops/nn_ops.h"

#include "towerflow/graph/ops/register.h"

namespace tw {
namespace {

// Output size of a window of `k` sliding over `in` by `stride`; -1 when `in` is
// unknown. InvalidArgument when a VALID window is larger than the input.
StatusOr<int64_t> WindowedOutputSize(int64_t in, int64_t k, int64_t stride, bool same) {
  if (in < 0 || k < 0) return int64_t{-1};
  if (same) return (in + stride - 1) / stride;
  if (in < k) {
    return errors::InvalidArgument("a VALID window of size ", k, " does not fit an input of size ", in);
  }
  return (in - k + stride) / stride;
}

// Checks a 4-entry NHWC window attr (strides, ksize): positive, and 1 along
// batch and depth.
Status CheckWindowAttr(InferenceContext* c, const char* name) {
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> v, c->GetAttr<std::vector<int64_t>>(name));
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    return errors::InvalidArgument("attr '", name, "' must be [1, h, w, 1] with h, w >= 1 (NHWC), got ",
                                   PartialShape(v).ToString());
  }
  return Status::OK();
}

StatusOr<bool> IsSamePadding(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(std::string padding, c->GetAttr<std::string>("padding"));
  if (padding != "SAME" && padding != "VALID") {
    return errors::InvalidArgument("attr 'padding' must be \"SAME\" or \"VALID\", got \"", padding, "\"");
  }
  return padding == "SAME";
}

// [N,OH,OW,depth] for a window of kh x kw over `in` ([N,H,W,C] or unknown).
StatusOr<PartialShape> WindowedShape(InferenceContext* c, const PartialShape& in, int64_t kh, int64_t kw,
                                     int64_t depth) {
  TW_RETURN_IF_ERROR(CheckWindowAttr(c, "strides"));
  TW_ASSIGN_OR_RETURN(bool same, IsSamePadding(c));
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> strides, c->GetAttr<std::vector<int64_t>>("strides"));
  const PartialShape s = in.known_rank() ? in : PartialShape::UnknownOfRank(4);
  auto oh = WindowedOutputSize(s.dim(1), kh, strides[1], same);
  auto ow = WindowedOutputSize(s.dim(2), kw, strides[2], same);
  if (!oh.ok() || !ow.ok()) {
    return errors::InvalidArgument("a VALID window of ", kh, "x", kw, " does not fit input of shape ",
                                   in.ToString());
  }
  return PartialShape({s.dim(0), *oh, *ow, depth});
}

Status Conv2DShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 4));
  TW_RETURN_IF_ERROR(c->WithRank(1, 4));
  const PartialShape& in = c->input(0);
  const PartialShape f = c->input(1).known_rank() ? c->input(1) : PartialShape::UnknownOfRank(4);
  if (in.known_rank() && in.dim(3) >= 0 && f.dim(2) >= 0 && in.dim(3) != f.dim(2)) {
    return errors::InvalidArgument("Conv2D: input of shape ", in.ToString(), " has ", in.dim(3),
                                   " channels but filter of shape ", f.ToString(), " expects ", f.dim(2));
  }
  TW_ASSIGN_OR_RETURN(PartialShape out, WindowedShape(c, in, f.dim(0), f.dim(1), f.dim(3)));
  c->set_output(0, out);
  return Status::OK();
}

// The backprops' output shape is given by an int32 vector input (input_sizes,
// filter_sizes).
Status ConvBackpropShape(InferenceContext* c, int sizes_input) {
  TW_RETURN_IF_ERROR(CheckWindowAttr(c, "strides"));
  TW_RETURN_IF_ERROR(IsSamePadding(c).status());
  TW_RETURN_IF_ERROR(c->WithRank(sizes_input, 1));
  TW_RETURN_IF_ERROR(c->WithRank(sizes_input == 0 ? 1 : 0, 4));
  TW_RETURN_IF_ERROR(c->WithRank(2, 4));
  TW_ASSIGN_OR_RETURN(PartialShape s, c->InputAsShape(sizes_input));
  if (s.known_rank() && s.rank() != 4) {
    return errors::InvalidArgument("sizes must have 4 entries, got shape ", s.ToString());
  }
  c->set_output(0, s);
  return Status::OK();
}

Status MaxPoolShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 4));
  TW_RETURN_IF_ERROR(CheckWindowAttr(c, "ksize"));
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> ksize, c->GetAttr<std::vector<int64_t>>("ksize"));
  const PartialShape& in = c->input(0);
  TW_ASSIGN_OR_RETURN(PartialShape out, WindowedShape(c, in, ksize[1], ksize[2], in.known_rank() ? in.dim(3) : -1));
  c->set_output(0, out);
  return Status::OK();
}

Status PoolGradShape(InferenceContext* c, int like) {
  TW_RETURN_IF_ERROR(CheckWindowAttr(c, "ksize"));
  TW_RETURN_IF_ERROR(CheckWindowAttr(c, "strides"));
  TW_RETURN_IF_ERROR(IsSamePadding(c).status());
  for (int i = 0; i < 3; ++i) TW_RETURN_IF_ERROR(c->WithRank(i, 4));
  c->set_output(0, c->input(like));
  return Status::OK();
}

// Merges input `a` and `b` (the same shape is required); error names both.
StatusOr<PartialShape> SameShape(InferenceContext* c, int a, int b) {
  auto merged = c->input(a).Merge(c->input(b));
  if (!merged.ok()) {
    return errors::InvalidArgument("inputs must have one shape, got ", c->input(a).ToString(), " and ",
                                   c->input(b).ToString());
  }
  return merged;
}

Status XentShape(InferenceContext* c, bool sparse) {
  TW_RETURN_IF_ERROR(c->WithRank(0, 2));
  TW_RETURN_IF_ERROR(c->WithRank(1, sparse ? 1 : 2));
  PartialShape logits = c->input(0).known_rank() ? c->input(0) : PartialShape::UnknownOfRank(2);
  if (sparse) {
    const PartialShape& labels = c->input(1);
    if (labels.known_rank() && !PartialShape({logits.dim(0)}).IsCompatibleWith(labels)) {
      return errors::InvalidArgument("logits of shape ", logits.ToString(), " and labels of shape ",
                                     labels.ToString(), " must have one batch size");
    }
    if (labels.known_rank() && logits.dim(0) < 0) logits = PartialShape({labels.dim(0), logits.dim(1)});
  } else {
    TW_ASSIGN_OR_RETURN(PartialShape merged, SameShape(c, 0, 1));
    if (merged.known_rank()) logits = merged;
  }
  c->set_output(0, PartialShape({logits.dim(0)}));
  c->set_output(1, logits);
  return Status::OK();
}

Status XentMeanShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(XentShape(c, true));
  const PartialShape logits = c->outputs()[1];
  c->set_output(0, PartialShape({}));
  c->set_output(1, logits);
  c->set_output(2, PartialShape({logits.known_rank() ? logits.dim(0) : -1}));
  return Status::OK();
}

Status DropoutShape(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(double rate, c->GetAttr<double>("rate"));
  if (!(rate >= 0 && rate < 1)) {
    return errors::InvalidArgument("Dropout: rate must be in [0, 1), got ", rate);
  }
  c->set_output(0, c->input(0));
  c->set_output(1, c->input(0));
  return Status::OK();
}

// value [..., C] + bias [C].
Status BiasAddShape(InferenceContext* c) {
  TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
  TW_RETURN_IF_ERROR(c->WithRank(1, 1));
  const PartialShape& v = c->input(0);
  const PartialShape& b = c->input(1);
  if (!v.known_rank() || !b.known_rank()) return shape_fns::Unchanged(c);
  std::vector<int64_t> dims = v.dims();
  int64_t& last = dims.back();
  if (last >= 0 && b.dim(0) >= 0 && last != b.dim(0)) {
    return errors::InvalidArgument("BiasAdd: bias of shape ", b.ToString(),
                                   " does not match the last dimension of value of shape ",
                                   v.ToString());
  }
  if (last < 0) last = b.dim(0);
  c->set_output(0, PartialShape(dims));
  return Status::OK();
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  const std::vector<DataType>& f = FloatTypes();
  r.Register(OpDefBuilder("BiasAdd").Input("value", "T").Input("bias", "T").Output("output", "T").TypeAttr("T", f)
                 .Shape(BiasAddShape)
                 .Doc("value + bias along the last dimension.").Build()).Check();
  r.Register(OpDefBuilder("BiasAddRelu").Input("value", "T").Input("bias", "T").Output("output", "T")
                 .TypeAttr("T", f).Shape(BiasAddShape)
                 .Doc("relu(value + bias): BiasAdd and Relu fused into one pass.").Build()).Check();
  r.Register(OpDefBuilder("BiasAddGrad").Input("out_backprop", "T").Output("output", "T").TypeAttr("T", f)
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
                   const PartialShape& g = c->input(0);
                   c->set_output(0, PartialShape({g.known_rank() ? g.dim(g.rank() - 1) : -1}));
                   return Status::OK();
                 })
                 .Doc("Internal: sums out_backprop over all but the last dimension.").Build()).Check();
  r.Register(OpDefBuilder("Relu").Input("features", "T").Output("activations", "T").TypeAttr("T", f)
                 .Shape(shape_fns::Unchanged).Doc("max(features, 0).").Build()).Check();
  r.Register(OpDefBuilder("ReluGrad").Input("gradients", "T").Input("features", "T").Output("backprops", "T")
                 .TypeAttr("T", f)
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(PartialShape s, SameShape(c, 0, 1));
                   c->set_output(0, s);
                   return Status::OK();
                 })
                 .Doc("Internal: gradients where features > 0, else 0.").Build()).Check();
  r.Register(OpDefBuilder("BiasAddReluGrad").Input("gradients", "T").Input("outputs", "T")
                 .Output("backprops", "T").Output("bias_backprops", "T").TypeAttr("T", f)
                 .Shape([](InferenceContext* c) {
                   TW_ASSIGN_OR_RETURN(PartialShape s, SameShape(c, 0, 1));
                   TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
                   c->set_output(0, s);
                   c->set_output(1, PartialShape({s.known_rank() ? s.dim(s.rank() - 1) : -1}));
                   return Status::OK();
                 })
                 .Doc("Internal: BiasAddRelu's gradient as one op: backprops = gradients where outputs > 0, "
                      "else 0 (ReluGrad), and bias_backprops = backprops summed over all but the last "
                      "dimension (BiasAddGrad).").Build()).Check();
  r.Register(OpDefBuilder("Softmax").Input("logits", "T").Output("softmax", "T").TypeAttr("T", f)
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1));
                   return shape_fns::Unchanged(c);
                 })
                 .Doc("exp(logits) / sum(exp(logits)) over the last dimension.").Build()).Check();
  r.Register(OpDefBuilder("SoftmaxCrossEntropyWithLogits").Input("features", "T").Input("labels", "T")
                 .Output("loss", "T").Output("backprop", "T").TypeAttr("T", f)
                 .Shape([](InferenceContext* c) { return XentShape(c, false); })
                 .Doc("Per-row cross-entropy of softmax(features) against labels; backprop = softmax - labels.")
                 .Build()).Check();
  r.Register(OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Input("features", "T").Input("labels", "Tlabels")
                 .Output("loss", "T").Output("backprop", "T").TypeAttr("T", f)
                 .TypeAttr("Tlabels", {kInt32, kInt64}, kInt64)
                 .Shape([](InferenceContext* c) { return XentShape(c, true); })
                 .Doc("Per-row cross-entropy of softmax(features) against class indices.").Build()).Check();
  r.Register(OpDefBuilder("SparseSoftmaxCrossEntropyMean").Input("features", "T").Input("labels", "Tlabels")
                 .Output("loss", "T").Output("backprop", "T").Output("correct", "T").TypeAttr("T", f)
                 .TypeAttr("Tlabels", {kInt32, kInt64}, kInt64)
                 .Shape(XentMeanShape)
                 .Doc("Mean cross-entropy of softmax(features) against class indices, its gradient (backprop) "
                      "and per row whether the first largest feature is the label's (correct).")
                 .Build()).Check();
  r.Register(OpDefBuilder("L2Loss").Input("t", "T").Output("output", "T").TypeAttr("T", f)
                 .Shape(shape_fns::Scalar).Doc("sum(t^2) / 2.").Build()).Check();

  const std::vector<int64_t> ones = {1, 1, 1, 1};
  r.Register(OpDefBuilder("Conv2D").Input("input", "T").Input("filter", "T").Output("output", "T")
                 .TypeAttr("T", f).Attr("strides", ones).Attr("padding", std::string("SAME"))
                 .Shape(Conv2DShape).Doc("2-D convolution: input NHWC, filter HWIO.").Build()).Check();
  r.Register(OpDefBuilder("Conv2DBackpropInput").Input("input_sizes", "int32").Input("filter", "T")
                 .Input("out_backprop", "T").Output("output", "T").TypeAttr("T", f).Attr("strides", ones)
                 .Attr("padding", std::string("SAME"))
                 .Shape([](InferenceContext* c) { return ConvBackpropShape(c, 0); })
                 .Doc("Gradient of Conv2D with respect to its input.").Build()).Check();
  r.Register(OpDefBuilder("Conv2DBackpropFilter").Input("input", "T").Input("filter_sizes", "int32")
                 .Input("out_backprop", "T").Output("output", "T").TypeAttr("T", f).Attr("strides", ones)
                 .Attr("padding", std::string("SAME"))
                 .Shape([](InferenceContext* c) { return ConvBackpropShape(c, 1); })
                 .Doc("Gradient of Conv2D with respect to its filter.").Build()).Check();
  const std::vector<int64_t> two = {1, 2, 2, 1};
  r.Register(OpDefBuilder("MaxPool").Input("input", "T").Output("output", "T").TypeAttr("T", f)
                 .Attr("ksize", two).Attr("strides", two).Attr("padding", std::string("SAME"))
                 .Shape(MaxPoolShape).Doc("Max over ksize windows (NHWC).").Build()).Check();
  r.Register(OpDefBuilder("MaxPoolGrad").Input("orig_input", "T").Input("orig_output", "T").Input("grad", "T")
                 .Output("output", "T").TypeAttr("T", f).Attr("ksize", two).Attr("strides", two)
                 .Attr("padding", std::string("SAME"))
                 .Shape([](InferenceContext* c) { return PoolGradShape(c, 0); })
                 .Doc("Gradient of MaxPool: grad routed to each window's first maximum.").Build()).Check();
  r.Register(OpDefBuilder("MaxPoolGradGrad").Input("orig_input", "T").Input("orig_output", "T")
                 .Input("grad", "T").Output("output", "T").TypeAttr("T", f).Attr("ksize", two)
                 .Attr("strides", two).Attr("padding", std::string("SAME"))
                 .Shape([](InferenceContext* c) { return PoolGradShape(c, 1); })
                 .Doc("Gradient of MaxPoolGrad: grad read at each window's first maximum.").Build()).Check();
  r.Register(OpDefBuilder("AvgPool").Input("value", "T").Output("output", "T").TypeAttr("T", f)
                 .Attr("ksize", two).Attr("strides", two).Attr("padding", std::string("SAME"))
                 .Shape(MaxPoolShape).Doc("Mean over ksize windows (NHWC), of the positions inside the input.")
                 .Build()).Check();
  r.Register(OpDefBuilder("AvgPoolGrad").Input("orig_input_shape", "int32").Input("grad", "T")
                 .Output("output", "T").TypeAttr("T", f).Attr("ksize", two).Attr("strides", two)
                 .Attr("padding", std::string("SAME"))
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(CheckWindowAttr(c, "ksize"));
                   TW_RETURN_IF_ERROR(CheckWindowAttr(c, "strides"));
                   TW_RETURN_IF_ERROR(IsSamePadding(c).status());
                   TW_RETURN_IF_ERROR(c->WithRank(0, 1));
                   TW_RETURN_IF_ERROR(c->WithRank(1, 4));
                   TW_ASSIGN_OR_RETURN(PartialShape s, c->InputAsShape(0));
                   if (s.known_rank() && s.rank() != 4) {
                     return errors::InvalidArgument("orig_input_shape must have 4 entries, got shape ", s.ToString());
                   }
                   c->set_output(0, s);
                   return Status::OK();
                 })
                 .Doc("Gradient of AvgPool: grad spread evenly over each window.").Build()).Check();
  r.Register(OpDefBuilder("Dropout").Input("x", "T").Output("output", "T").Output("mask", "T").TypeAttr("T", f)
                 .RequiredAttr("rate", AttrType::kFloat).Attr("seed", int64_t{0}).Attr("seed2", int64_t{0})
                 .Stateful().Shape(DropoutShape)
                 .Doc("Keeps each element with probability 1 - rate, scaled by 1 / (1 - rate).").Build()).Check();
  // TF's local response normalization over the depth (last) axis.
  r.Register(OpDefBuilder("LRN").Input("input", "T").Output("output", "T").TypeAttr("T", f)
                 .Attr("depth_radius", int64_t{5}).Attr("bias", 1.0).Attr("alpha", 1.0).Attr("beta", 0.5)
                 .Shape([](InferenceContext* c) {
                   TW_RETURN_IF_ERROR(c->WithRank(0, 4));
                   c->set_output(0, c->input(0).known_rank() ? c->input(0) : PartialShape::UnknownOfRank(4));
                   return Status::OK();
                 })
                 .Doc("input / (bias + alpha * sum of squares of the depth window of radius depth_radius)^beta.")
                 .Build()).Check();
  r.Register(OpDefBuilder("LRNGrad").Input("input_grads", "T").Input("input_image", "T")
                 .Input("output_image", "T").Output("output", "T").TypeAttr("T", f)
                 .Attr("depth_radius", int64_t{5}).Attr("bias", 1.0).Attr("alpha", 1.0).Attr("beta", 0.5)
                 .Shape([](InferenceContext* c) {
                   for (int i = 0; i < 3; ++i) TW_RETURN_IF_ERROR(c->WithRank(i, 4));
                   TW_ASSIGN_OR_RETURN(PartialShape s, SameShape(c, 0, 1));
                   auto merged = s.Merge(c->input(2));
                   if (!merged.ok()) {
                     return errors::InvalidArgument("inputs must have one shape, got ", s.ToString(), " and ",
                                                    c->input(2).ToString());
                   }
                   c->set_output(0, merged->known_rank() ? *merged : PartialShape::UnknownOfRank(4));
                   return Status::OK();
                 })
                 .Doc("Gradient of LRN with respect to its input.").Build()).Check();
}

Output BiasAdd(const Scope& scope, const Output& value, const Output& bias) {
  return NodeBuilder(scope, "BiasAdd").Input(value).Input(bias).Finalize();
}
Output BiasAddRelu(const Scope& scope, const Output& value, const Output& bias) {
  return NodeBuilder(scope, "BiasAddRelu").Input(value).Input(bias).Finalize();
}
Output Relu(const Scope& scope, const Output& features) {
  return NodeBuilder(scope, "Relu").Input(features).Finalize();
}
Output Softmax(const Scope& scope, const Output& logits) {
  return NodeBuilder(scope, "Softmax").Input(logits).Finalize();
}

namespace {
SoftmaxXentResult Xent(const Scope& scope, const char* op, const Output& logits, const Output& labels) {
  Node* n = NodeBuilder(scope, op).Input(logits).Input(labels).Finalize();
  if (n == nullptr) return {};
  return {Output(n, 0), Output(n, 1)};
}
}  // namespace

SoftmaxXentResult SoftmaxCrossEntropyWithLogits(const Scope& scope, const Output& logits, const Output& labels) {
  return Xent(scope, "SoftmaxCrossEntropyWithLogits", logits, labels);
}
SoftmaxXentResult SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, const Output& logits,
                                                      const Output& labels) {
  return Xent(scope, "SparseSoftmaxCrossEntropyWithLogits", logits, labels);
}
SoftmaxXentMeanResult SparseSoftmaxCrossEntropyMean(const Scope& scope, const Output& logits, const Output& labels) {
  Node* n = NodeBuilder(scope, "SparseSoftmaxCrossEntropyMean").Input(logits).Input(labels).Finalize();
  if (n == nullptr) return {};
  return {Output(n, 0), Output(n, 1), Output(n, 2)};
}
Output L2Loss(const Scope& scope, const Output& t) { return NodeBuilder(scope, "L2Loss").Input(t).Finalize(); }

Output Conv2D(const Scope& scope, const Output& input, const Output& filter, Conv2DOptions options) {
  return NodeBuilder(scope, "Conv2D")
      .Input(input)
      .Input(filter)
      .Attr("strides", options.strides)
      .Attr("padding", options.padding)
      .Finalize();
}

namespace {
Output Pool(const Scope& scope, const char* op, const Output& input, const PoolOptions& options) {
  return NodeBuilder(scope, op)
      .Input(input)
      .Attr("ksize", options.ksize)
      .Attr("strides", options.strides)
      .Attr("padding", options.padding)
      .Finalize();
}
}  // namespace

Output MaxPool(const Scope& scope, const Output& input, PoolOptions options) {
  return Pool(scope, "MaxPool", input, options);
}
Output AvgPool(const Scope& scope, const Output& input, PoolOptions options) {
  return Pool(scope, "AvgPool", input, options);
}

Output LRN(const Scope& scope, const Output& input, LRNOptions options) {
  return NodeBuilder(scope, "LRN")
      .Input(input)
      .Attr("depth_radius", options.depth_radius)
      .Attr("bias", options.bias)
      .Attr("alpha", options.alpha)
      .Attr("beta", options.beta)
      .Finalize();
}

DropoutResult Dropout(const Scope& scope, const Output& x, float rate, int64_t seed) {
  // TF's get_seed: a graph seed makes every op deterministic (ops without their
  // own seed get the next op seed); an op seed alone pairs with TF's default
  // graph seed; neither leaves both 0, which the kernel takes as "seed randomly".
  constexpr int64_t kDefaultGraphSeed = 87654321;
  Graph& g = scope.graph();
  int64_t seed1 = 0, seed2 = 0;
  if (g.has_seed()) {
    seed1 = g.seed();
    seed2 = seed != 0 ? seed : g.NextOpSeed();
  } else if (seed != 0) {
    seed1 = kDefaultGraphSeed;
    seed2 = seed;
  }
  Node* n = NodeBuilder(scope, "Dropout")
                .Input(x)
                .Attr("rate", static_cast<double>(rate))
                .Attr("seed", seed1)
                .Attr("seed2", seed2)
                .Finalize();
  if (n == nullptr) return {};
  return {Output(n, 0), Output(n, 1)};
}

}  // namespace tw
