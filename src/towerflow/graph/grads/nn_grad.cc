// Gradients of the nn ops (graph/ops/nn_ops.cc), including the internal ops
// that gradients build, so that second derivatives exist too.
//
// Integer inputs (labels, sizes) get no gradient; neither do labels of the
// cross-entropies (TF returns one; no towerflow model trains its labels).
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/nn_ops.h"

namespace tw {
namespace {

using Grads = std::vector<Output>;

// Output `i` of the forward node (its value is reused by several gradients).
Output Out(const Node& op, int i = 0) { return Output(const_cast<Node*>(&op), i); }

// Builds `type` with the window attrs of `op` (strides, padding, ksize).
Output WindowOp(const Scope& s, const std::string& type, const Node& op, const std::vector<Output>& inputs) {
  NodeBuilder b(s, type);
  b.Inputs(inputs);
  for (const char* attr : {"strides", "padding", "ksize"}) {
    if (const AttrValue* v = op.attrs().Find(attr)) b.Attr(attr, *v);
  }
  return b.Finalize();
}

// The softmax-Jacobian product: for y = softmax(x), d x = (g - sum(g * y)) * y
// with the sum over the last axis.
Output SoftmaxBackward(const Scope& s, const Output& g, const Output& y) {
  return Mul(s, Sub(s, g, Sum(s, Mul(s, g, y), std::vector<int32_t>{-1}, true)), y);
}

// Both cross-entropies: loss_r = -sum_j labels_rj log softmax(x_r)_j, so
// d x_r = dloss_r * (softmax(x_r) - labels_r) = dloss_r * backprop_r. The
// backprop output (softmax - labels) adds its own softmax-Jacobian product.
Status XentGrad(const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
  Output dlogits;
  if (dy[0].valid()) dlogits = Mul(s, Out(op, 1), ExpandDims(s, dy[0], -1));
  if (dy[1].valid()) {
    Output term = SoftmaxBackward(s, dy[1], Softmax(s, op.input(0)));
    dlogits = dlogits.valid() ? Add(s, dlogits, term) : term;
  }
  (*dx)[0] = dlogits;
  return Status::OK();
}

}  // namespace

void RegisterNnGradients(GradientRegistry& r) {
  // y = value + bias (broadcast along the last axis): d value = dy,
  // d bias = dy summed over every other axis.
  r.Register("BiasAdd", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = dy[0];
    (*dx)[1] = NodeBuilder(s, "BiasAddGrad").Input(dy[0]).Finalize();
    return Status::OK();
  });
  // y = relu(value + bias): dz = dy where y > 0 (y > 0 exactly where z > 0),
  // then as BiasAdd: d value = dz, d bias = dz summed over the leading axes.
  // One op computes both (ReluGrad then BiasAddGrad, the same values): a GPU
  // sums each column while the masked gradient is in registers.
  r.Register("BiasAddRelu", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    Node* grad =
        NodeBuilder(s, "BiasAddReluGrad").Input(dy[0]).Input(Output(const_cast<Node*>(&op), 0)).Finalize();
    if (grad == nullptr) return s.status();
    (*dx)[0] = Output(grad, 0);
    (*dx)[1] = Output(grad, 1);
    return Status::OK();
  });
  // (dz, db) = (dy * mask, sum(dy * mask)): linear in dy with y's mask, so
  // d dy = mask * (d dz + d db broadcast along the last axis); y gets none.
  r.Register("BiasAddReluGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    Output up = dy[0];
    if (dy[1].valid()) up = up.valid() ? BiasAdd(s, up, dy[1]) : BroadcastTo(s, dy[1], Shape(s, op.input(0)));
    if (up.valid()) (*dx)[0] = NodeBuilder(s, "ReluGrad").Input(up).Input(op.input(1)).Finalize();
    return Status::OK();
  });
  // BiasAddGrad sums over leading axes; its adjoint broadcasts back.
  r.Register("BiasAddGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = BroadcastTo(s, dy[0], Shape(s, op.input(0)));
    return Status::OK();
  });
  // d relu(x)/dx = 1 where x > 0, else 0.
  r.Register("Relu", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = NodeBuilder(s, "ReluGrad").Input(dy[0]).Input(op.input(0)).Finalize();
    return Status::OK();
  });
  // ReluGrad(g, f) = g * [f > 0] is linear in g with the same mask; the mask is
  // piecewise constant in f, so f gets none.
  r.Register("ReluGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = NodeBuilder(s, "ReluGrad").Input(dy[0]).Input(op.input(1)).Finalize();
    return Status::OK();
  });
  // d softmax: dy_i y_i - y_i sum_j dy_j y_j, reusing y.
  r.Register("Softmax", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = SoftmaxBackward(s, dy[0], Out(op));
    return Status::OK();
  });
  r.Register("SoftmaxCrossEntropyWithLogits", XentGrad);
  r.Register("SparseSoftmaxCrossEntropyWithLogits", XentGrad);
  // d loss / d logits is the op's backprop; the incoming gradient is a scalar
  // (the loss's), and Minimize's OnesLike needs no multiply (x * 1 == x).
  // Through the backprop (softmax - onehot) / rows, as the cross-entropy's:
  // the softmax's backward pass over the rows. The per-row `correct` is
  // piecewise constant: no gradient.
  r.Register("SparseSoftmaxCrossEntropyMean", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    Output dlogits;
    if (dy[0].valid()) {
      const bool ones = dy[0].node->op() == "OnesLike" && dy[0].node->num_inputs() == 1 &&
                        dy[0].node->input(0) == Out(op, 0);
      dlogits = ones ? Out(op, 1) : Mul(s, Out(op, 1), dy[0]);
    }
    if (dy[1].valid()) {
      const Output logits = op.input(0);
      const int64_t known = logits.shape().known_rank() ? logits.shape().dim(0) : -1;
      const Output rows =
          known >= 0 ? ScalarLike(s, static_cast<double>(known), logits.dtype())
                     : Cast(s, Reshape(s, Slice(s, Shape(s, logits), std::vector<int32_t>{0}, std::vector<int32_t>{1}),
                                       std::vector<int32_t>{}),
                            logits.dtype());
      Output term = Div(s, SoftmaxBackward(s, dy[1], Softmax(s, logits)), rows);
      dlogits = dlogits.valid() ? Add(s, dlogits, term) : term;
    }
    (*dx)[0] = dlogits;
    return Status::OK();
  });
  // d (sum x^2 / 2)/dx = x.
  r.Register("L2Loss", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = Mul(s, op.input(0), dy[0]);
    return Status::OK();
  });

  // y = conv(x, w) is bilinear: d x = conv^T(dy, w) (Conv2DBackpropInput),
  // d w = the correlation of x with dy (Conv2DBackpropFilter).
  r.Register("Conv2D", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), w = op.input(1);
    (*dx)[0] = WindowOp(s, "Conv2DBackpropInput", op, {Shape(s, x), w, dy[0]});
    (*dx)[1] = WindowOp(s, "Conv2DBackpropFilter", op, {x, Shape(s, w), dy[0]});
    return Status::OK();
  });
  // BackpropInput(w, g) is bilinear with <BackpropInput(w, g), G> = <g, conv(G, w)>:
  // d g = conv(G, w), d w = BackpropFilter(G, g).
  r.Register("Conv2DBackpropInput", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output w = op.input(1), g = op.input(2);
    (*dx)[1] = WindowOp(s, "Conv2DBackpropFilter", op, {dy[0], Shape(s, w), g});
    (*dx)[2] = WindowOp(s, "Conv2D", op, {dy[0], w});
    return Status::OK();
  });
  // BackpropFilter(x, g) with <BackpropFilter(x, g), G> = <g, conv(x, G)>:
  // d g = conv(x, G), d x = BackpropInput(G, g).
  r.Register("Conv2DBackpropFilter", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    const Output x = op.input(0), g = op.input(2);
    (*dx)[0] = WindowOp(s, "Conv2DBackpropInput", op, {Shape(s, x), dy[0], g});
    (*dx)[2] = WindowOp(s, "Conv2D", op, {x, dy[0]});
    return Status::OK();
  });

  // Max pooling passes dy to each window's maximum; the choice of maximum is
  // piecewise constant, so MaxPoolGrad is linear in grad only, and its adjoint
  // (MaxPoolGradGrad) reads the gradient at the same maxima.
  r.Register("MaxPool", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = WindowOp(s, "MaxPoolGrad", op, {op.input(0), Out(op), dy[0]});
    return Status::OK();
  });
  r.Register("MaxPoolGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[2] = WindowOp(s, "MaxPoolGradGrad", op, {op.input(0), op.input(1), dy[0]});
    return Status::OK();
  });
  // AvgPool is linear: d x = AvgPoolGrad(dy), whose adjoint is AvgPool itself.
  r.Register("AvgPool", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[0] = WindowOp(s, "AvgPoolGrad", op, {Shape(s, op.input(0)), dy[0]});
    return s.status();
  });
  r.Register("AvgPoolGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[1] = WindowOp(s, "AvgPool", op, {dy[0]});
    return s.status();
  });
  r.Register("MaxPoolGradGrad", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    (*dx)[2] = WindowOp(s, "MaxPoolGrad", op, {op.input(0), op.input(1), dy[0]});
    return Status::OK();
  });

  // LRN: LRNGrad from the input, the output and dy, with LRN's attrs (TF's
  // LRNGrad has no gradient of its own).
  r.Register("LRN", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    NodeBuilder b(s, "LRNGrad");
    b.Input(dy[0]).Input(op.input(0)).Input(Out(op));
    for (const char* attr : {"depth_radius", "bias", "alpha", "beta"}) {
      if (const AttrValue* v = op.attrs().Find(attr)) b.Attr(attr, *v);
    }
    (*dx)[0] = b.Finalize();
    return s.status();
  });
  r.RegisterNoGradient("LRNGrad");

  // output = x * mask with mask independent of x: d x = dy * mask.
  r.Register("Dropout", [](const Scope& s, const Node& op, const Grads& dy, Grads* dx) {
    if (dy[0].valid()) (*dx)[0] = Mul(s, dy[0], Out(op, 1));
    return Status::OK();
  });
}

}  // namespace tw
