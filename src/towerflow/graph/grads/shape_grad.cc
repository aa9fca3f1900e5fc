// Gradients of the shape-manipulating array ops (graph/ops/shape_ops.cc).
//
// Shape and index inputs (shape, dim, begin, size, axis, dims) are integers and
// get no gradient.
#include "towerflow/graph/grads/register.h"
#include "towerflow/graph/ops/array_ops.h"

namespace tw {
namespace {

// View ops move no values: d x = dy with x's shape.
Status ReshapeGrad(const Scope& s, const Node& op, const std::vector<Output>& dy, std::vector<Output>* dx) {
  (*dx)[0] = Reshape(s, dy[0], Shape(s, op.input(0)));
  return Status::OK();
}

}  // namespace

void RegisterShapeGradients(GradientRegistry& r) {
  r.Register("Reshape", ReshapeGrad);
  r.Register("ExpandDims", ReshapeGrad);
  r.Register("Squeeze", ReshapeGrad);

  // y = concat(x_0 .. x_{n-1}) along axis: d x_i is the slice of dy where x_i
  // landed, starting at ConcatOffset's offset i, of x_i's shape.
  r.Register("ConcatV2", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                            std::vector<Output>* dx) {
    const int n = op.num_inputs() - 1;
    const Output axis = op.input(n);
    std::vector<Output> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(Shape(s, op.input(i)));
    Node* offsets = NodeBuilder(s, "ConcatOffset").Input(axis).Inputs(shapes).Finalize();
    if (offsets == nullptr) return s.status();
    for (int i = 0; i < n; ++i) (*dx)[static_cast<size_t>(i)] = Slice(s, dy[0], Output(offsets, i), shapes[static_cast<size_t>(i)]);
    return Status::OK();
  });

  // y = x[begin : begin + size]: d x is dy placed at begin in zeros of x's shape.
  r.Register("Slice", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                         std::vector<Output>* dx) {
    (*dx)[0] = NodeBuilder(s, "SliceGrad").Input(dy[0]).Input(op.input(1)).Input(Shape(s, op.input(0))).Finalize();
    return Status::OK();
  });
  // SliceGrad is linear in dy and its adjoint is the slice itself.
  r.Register("SliceGrad", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                             std::vector<Output>* dx) {
    (*dx)[0] = Slice(s, dy[0], op.input(1), Shape(s, op.input(0)));
    return Status::OK();
  });

  // y[i] = value for every i: d value = sum of dy (summed to value's scalar shape).
  r.Register("Fill", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                        std::vector<Output>* dx) {
    (*dx)[1] = SumToShape(s, dy[0], Shape(s, op.input(1)));
    return Status::OK();
  });
  // BroadcastTo copies x along broadcast axes, so d x sums dy back over them;
  // SumToShape is its adjoint, whose gradient broadcasts dy back out.
  r.Register("BroadcastTo", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                               std::vector<Output>* dx) {
    (*dx)[0] = SumToShape(s, dy[0], Shape(s, op.input(0)));
    return Status::OK();
  });
  r.Register("SumToShape", [](const Scope& s, const Node& op, const std::vector<Output>& dy,
                              std::vector<Output>* dx) {
    (*dx)[0] = BroadcastTo(s, dy[0], Shape(s, op.input(0)));
    return Status::OK();
  });

  for (const char* op : {"Shape", "ConcatOffset"}) r.RegisterNoGradient(op);
}

}  // namespace tw
