// Graph and Node: the deferred dataflow graph a user builds and a Session runs.
//
// A Graph owns its Nodes. A Node is one op instance: its schema, attrs, data
// inputs (Outputs of earlier nodes), control inputs, requested device, and the
// dtypes and inferred shapes of its outputs. Nodes are immutable once added (their
// inputs never change), so a running Session may keep pointers to them while the
// graph grows. Names are unique, hierarchical ("tower_0/dense/MatMul").
//
// Thread-compatible: build a graph from one thread at a time; running sessions
// only read nodes that existed when their run started.
#ifndef TOWERFLOW_GRAPH_GRAPH_H_
#define TOWERFLOW_GRAPH_GRAPH_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <any>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "towerflow/graph/attr_value.h"
#include "towerflow/graph/op_def.h"

namespace tw {

class Node;

// One output of a node: the handle user code passes between op builders. A
// default-constructed Output is "null": what a failed builder returns.
struct Output {
  Node* node = nullptr;
  int index = 0;

  Output() = default;
  Output(Node* n, int i = 0) : node(n), index(i) {}  // NOLINT: a node is its output 0

  bool valid() const { return node != nullptr; }
  DataType dtype() const;
  const PartialShape& shape() const;
  // "name:index" ("MatMul:0"), as TF names tensors.
  std::string name() const;
  bool operator==(const Output& o) const { return node == o.node && index == o.index; }
  bool operator<(const Output& o) const;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const { return def_->name; }
  const OpDef& def() const { return *def_; }
  const AttrMap& attrs() const { return attrs_; }
  const std::vector<Output>& inputs() const { return inputs_; }
  const Output& input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType output_type(int i) const { return output_types_[static_cast<size_t>(i)]; }
  bool output_is_ref(int i) const { return output_is_ref_[static_cast<size_t>(i)]; }
  bool input_is_ref(int i) const { return input_is_ref_[static_cast<size_t>(i)]; }
  const PartialShape& output_shape(int i) const { return output_shapes_[static_cast<size_t>(i)]; }
  // The device the user asked for: the merged spec of the enclosing device
  // scopes ("/device:GPU:0"), or the string as written when nothing enclosed it
  // ("/gpu:1"); empty when unconstrained.
  const std::string& requested_device() const { return requested_device_; }
  // "loc:@<node>" entries: nodes this one must share a device with.
  const std::vector<std::string>& colocation_groups() const { return colocation_; }
  bool is_stateful() const { return def_->is_stateful; }
  // "'dense/MatMul' (MatMul)": how errors name a node.
  std::string DebugName() const;
  // What graph construction knows of output 0's value when it is a small
  // int32/int64 scalar or vector computed from constants and static shapes
  // (Shape, and ExpandDims, Squeeze, ConcatV2, Slice, Cast, Identity, Neg,
  // Add, Sub, Mul and Maximum of such values; a value the output type cannot
  // hold is unknown): each element, or nullopt where unknown; nullopt
  // as a whole when nothing is known. Shape functions read it, so that a
  // reshape to [tf.shape(x)[0], 4] keeps its 4 (TF's partial shape values).
  const std::optional<std::vector<std::optional<int64_t>>>& partial_value() const { return partial_value_; }

 private:
  friend class Graph;
  int id_ = -1;
  std::string name_;
  const OpDef* def_ = nullptr;
  AttrMap attrs_;
  std::vector<Output> inputs_;
  std::vector<bool> input_is_ref_;
  std::vector<Node*> control_inputs_;
  std::vector<DataType> output_types_;
  std::vector<bool> output_is_ref_;
  std::vector<PartialShape> output_shapes_;
  std::optional<std::vector<std::optional<int64_t>>> partial_value_;
  std::string requested_device_;
  std::vector<std::string> colocation_;
};

// What a node is built from; Graph::AddNode checks it against the op's schema.
struct NodeSpec {
  std::string name;  // already unique
  std::string op;
  std::vector<Output> inputs;  // list inputs flattened in order
  std::vector<Node*> control_inputs;
  AttrMap attrs;
  std::string device;
  std::vector<std::string> colocation;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Checks the spec against the op schema (input count and dtypes, attrs present
  // and allowed, defaults filled in), infers output dtypes and shapes, and adds
  // the node. InvalidArgument/NotFound naming the node and op otherwise; the graph
  // is unchanged on failure.
  StatusOr<Node*> AddNode(NodeSpec spec);

  Node* FindNode(const std::string& name) const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  Node* node(int id) const { return nodes_[static_cast<size_t>(id)].get(); }
  // Consumers of each node (data and control), in insertion order.
  const std::vector<Node*>& consumers(const Node* n) const { return consumers_[static_cast<size_t>(n->id())]; }

  // Returns `base` if unused, else base_1, base_2, ... and marks it used.
  std::string UniqueName(const std::string& base);
  bool IsNameUsed(const std::string& name) const { return used_names_.count(name) > 0; }

  // Collections, as TF's graph collections ("trainable_variables", "losses", ...).
  void AddToCollection(const std::string& key, std::any value) { collections_[key].push_back(std::move(value)); }
  template <typename T>
  std::vector<T> GetCollection(const std::string& key) const {
    std::vector<T> out;
    auto it = collections_.find(key);
    if (it == collections_.end()) return out;
    for (const auto& v : it->second) {
      if (const T* p = std::any_cast<T>(&v)) out.push_back(*p);
    }
    return out;
  }

  // Named objects owned by the graph on behalf of builders (the variable store of
  // variable scopes, keyed "var:<name>"). nullptr when absent.
  std::any* FindObject(const std::string& key) {
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : &it->second;
  }
  void SetObject(const std::string& key, std::any value) { objects_[key] = std::move(value); }

  // Graph-level random seed (tf.set_random_seed); ops combine it with their own.
  void set_seed(int64_t seed) { seed_ = seed; has_seed_ = true; }
  bool has_seed() const { return has_seed_; }
  int64_t seed() const { return seed_; }
  // A fresh op-level seed for ops built without one (TF's _last_id), so that a
  // graph built twice with the same graph seed draws the same numbers.
  int64_t NextOpSeed() { return ++op_seed_counter_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::vector<Node*>> consumers_;
  std::map<std::string, Node*> by_name_;
  std::map<std::string, int> used_names_;
  std::map<std::string, std::vector<std::any>> collections_;
  std::map<std::string, std::any> objects_;
  bool has_seed_ = false;
  int64_t seed_ = 0;
  int64_t op_seed_counter_ = 0;
};

// Standard collection keys (TF's GraphKeys).
namespace collections {
inline constexpr char kGlobalVariables[] = "variables";
inline constexpr char kTrainableVariables[] = "trainable_variables";
inline constexpr char kLocalVariables[] = "local_variables";
inline constexpr char kLosses[] = "losses";
inline constexpr char kRegularizationLosses[] = "regularization_losses";
inline constexpr char kQueueRunners[] = "queue_runners";
inline constexpr char kSummaries[] = "summaries";
inline constexpr char kUpdateOps[] = "update_ops";
inline constexpr char kGlobalStep[] = "global_step";
}  // namespace collections

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_GRAPH_GRAPH_H_
