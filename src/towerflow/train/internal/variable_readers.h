// Which nodes read a variable's memory on the way to some outputs: the
// ordering of an in-place update. Internal to train/ (optimizer.cc and
// replicate.cc build their update barriers from it). Plain functions of a
// graph that is not being changed meanwhile.
//
// Variables are updated in place, and a read on the variable's device shares
// its buffer (the "<var>/read" Identity forwards it; so do the other
// pass-through ops), so an update must wait until every node that takes such
// a tensor as a value has run: backprop reads W for dX = dY W^T, which no
// gradient of W waits for. Waiting for exactly those nodes (rather than for
// every gradient) orders the update after every read and leaves the nodes that
// only compute gradients free of control edges, so that a gradient's producer
// can be fused into the update that consumes it (runtime/fusion.h).
#ifndef TOWERFLOW_TRAIN_INTERNAL_VARIABLE_READERS_H_
#define TOWERFLOW_TRAIN_INTERNAL_VARIABLE_READERS_H_

#include <vector>

#include "towerflow/graph/graph.h"
#include "towerflow/graph/ops/state_ops.h"

namespace tw::train::internal {

// Ops whose output may be the input's buffer (a reader of their output reads
// what they read).
bool IsPassThrough(const Node& node);

// The nodes among `outputs`' ancestors (through data and control inputs,
// `outputs`' own nodes included) that take one of `vars`' ref outputs, or a
// pass-through op's output that aliases it, as a value input (not a ref input:
// those are the writers). In node id order, each once.
std::vector<Node*> VariableReaders(const Graph& graph, const std::vector<Variable>& vars,
                                   const std::vector<Output>& outputs);

}  // namespace tw::train::internal

#endif  // TOWERFLOW_TRAIN_INTERNAL_VARIABLE_READERS_H_
