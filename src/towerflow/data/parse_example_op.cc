// ParseSingleExample and ParseExample: schemas, CPU kernels and builders. The
// attr and list layout is described in parse_example_op.h.
#include "towerflow/data/parse_example_op.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "towerflow/data/example_parser.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/shape_inference.h"

namespace tw {
namespace {

constexpr const char* kGroupNames[3] = {"float", "int64", "string"};
constexpr DataType kGroupTypes[3] = {kFloat32, kInt64, kString};

int GroupOffset(const int (&counts)[3], int group) {
  int offset = 0;
  for (int g = 0; g < group; ++g) offset += counts[g];
  return offset;
}

std::vector<std::string> KeysAttr(const AttrMap& attrs, const std::string& name, Status* status) {
  auto t = attrs.Get<Tensor>(name);
  if (!t.ok()) {
    *status = t.status();
    return {};
  }
  if (t->dtype() != kString || t->rank() != 1) {
    *status = errors::InvalidArgument("attr '", name, "' must be a string vector, got ", t->DebugString(2));
    return {};
  }
  return t->ToVector<std::string>();
}

Status CheckCount(const AttrMap& attrs, const std::string& name, int want) {
  TW_ASSIGN_OR_RETURN(int got, attrs.Get<int>(name));
  if (got != want) {
    return errors::InvalidArgument("attr '", name, "' = ", got, " but the feature dtypes give ", want);
  }
  return Status::OK();
}

// True when two default tensors hold the same dtype, shape and values.
bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == kString) {
    auto x = a.flat<std::string>();
    auto y = b.flat<std::string>();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  return a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// The parse attrs as an AttrMap (InferenceContext exposes attrs one by one).
StatusOr<AttrMap> ParseAttrs(InferenceContext* c) {
  AttrMap m;
  for (const char* name : {"dense_keys", "sparse_keys"}) {
    TW_ASSIGN_OR_RETURN(Tensor t, c->GetAttr<Tensor>(name));
    m.Set(name, std::move(t));
  }
  for (const char* name : {"Tdense", "sparse_types"}) {
    TW_ASSIGN_OR_RETURN(std::vector<DataType> t, c->GetAttr<std::vector<DataType>>(name));
    m.Set(name, std::move(t));
  }
  for (const char* name : {"dense_shape_ranks", "dense_shape_dims"}) {
    TW_ASSIGN_OR_RETURN(std::vector<int64_t> v, c->GetAttr<std::vector<int64_t>>(name));
    m.Set(name, std::move(v));
  }
  std::vector<std::string> counts = {"Nsparse"};
  for (const char* g : kGroupNames) {
    counts.push_back(std::string("Ndense_") + g);
    counts.push_back(std::string("Nsparse_") + g);
  }
  for (const std::string& name : counts) {
    TW_ASSIGN_OR_RETURN(int64_t v, c->GetAttr<int64_t>(name));
    m.Set(name, v);
  }
  return m;
}

Status ParseShapeFn(InferenceContext* c, bool batched) {
  TW_ASSIGN_OR_RETURN(AttrMap attrs, ParseAttrs(c));
  TW_ASSIGN_OR_RETURN(ParseExampleLayout layout, ParseExampleLayoutFromAttrs(attrs));
  TW_RETURN_IF_ERROR(c->WithRank(0, batched ? 1 : 0));
  // names: one per example, or none (an empty vector).
  if (c->input(1).known_rank() && c->input(1).rank() > 1) {
    return errors::InvalidArgument("names must be a vector (one name per example, or empty), got shape ",
                                   c->input(1).ToString());
  }
  const int64_t batch = batched && c->input(0).known_rank() ? c->input(0).dim(0) : -1;
  const int sparse_rank = batched ? 2 : 1;
  for (int s = 0; s < layout.NumSparse(); ++s) {
    c->set_output(layout.SparseIndicesOutput(s), PartialShape({-1, sparse_rank}));
    c->set_output(layout.SparseValuesOutput(s), PartialShape({-1}));
    c->set_output(layout.SparseShapeOutput(s), PartialShape({sparse_rank}));
  }
  for (size_t d = 0; d < layout.config.dense.size(); ++d) {
    const FixedLenFeature& f = layout.config.dense[d];
    const int input = layout.DenseDefaultInput(static_cast<int>(d));
    const int64_t have = c->input(input).num_elements();
    if (have > 0 && have != f.shape.num_elements()) {
      return errors::InvalidArgument("Default value of feature '", f.key, "' has shape ",
                                     c->input(input).ToString(), " (", have, " values) but the feature has shape ",
                                     f.shape.ToString());
    }
    std::vector<int64_t> dims;
    if (batched) dims.push_back(batch);
    dims.insert(dims.end(), f.shape.dims().begin(), f.shape.dims().end());
    c->set_output(layout.DenseOutput(static_cast<int>(d)), PartialShape(dims));
  }
  return Status::OK();
}

// The CPU kernel of both ops. The ExampleParser (its validated config and key
// index) is built once per distinct set of default values: defaults are
// usually constants, so steps after the first reuse it.
class ParseExampleOp : public OpKernel {
 public:
  ParseExampleOp(OpKernelConstruction* c, bool batched) : OpKernel(c), batched_(batched) {
    auto layout = ParseExampleLayoutFromAttrs(c->node().attrs());
    TW_OP_REQUIRES_OK(c, layout.status());
    layout_ = std::move(layout).value();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& serialized = ctx->input(0);
    TW_OP_REQUIRES(ctx, serialized.rank() == (batched_ ? 1 : 0),
                   errors::InvalidArgument("Expected serialized to be a ", batched_ ? "vector" : "scalar",
                                           ", got shape: ", serialized.shape().ToString()));
    // The examples' names for errors (TF's `names`): empty, or one per example.
    const Tensor& names = ctx->input(1);
    const bool named = names.NumElements() > 0;
    TW_OP_REQUIRES(ctx, !named || (names.rank() == 1 && names.NumElements() == std::max<int64_t>(serialized.NumElements(), 1)),
                   errors::InvalidArgument("Expected names to be empty or a vector of ", serialized.NumElements(),
                                           " (one per example), got shape: ", names.shape().ToString()));
    auto parser = GetParser(ctx);
    TW_OP_REQUIRES_OK(ctx, parser.status());
    ParseResult result;
    if (batched_) {
      std::vector<std::string_view> views;
      views.reserve(static_cast<size_t>(serialized.NumElements()));
      for (const std::string& s : serialized.flat<std::string>()) views.emplace_back(s);
      std::vector<std::string_view> name_views;
      if (named) {
        name_views.reserve(views.size());
        for (const std::string& n : names.flat<std::string>()) name_views.emplace_back(n);
      }
      TW_OP_REQUIRES_OK(ctx, (*parser)->ParseBatch(views, &result, ctx->intra_op_pool(), named ? &name_views : nullptr));
    } else {
      TW_OP_REQUIRES_OK(ctx, (*parser)->ParseSingle(serialized.scalar<std::string>(), &result,
                                                    named ? std::string_view(names.flat<std::string>()[0]) : ""));
    }
    for (int s = 0; s < layout_.NumSparse(); ++s) {
      SparseTensorValue& v = result.sparse[static_cast<size_t>(s)];
      ctx->set_output(layout_.SparseIndicesOutput(s), std::move(v.indices));
      ctx->set_output(layout_.SparseValuesOutput(s), std::move(v.values));
      ctx->set_output(layout_.SparseShapeOutput(s), std::move(v.dense_shape));
    }
    for (size_t d = 0; d < result.dense.size(); ++d) {
      ctx->set_output(layout_.DenseOutput(static_cast<int>(d)), std::move(result.dense[d]));
    }
  }

 private:
  StatusOr<std::shared_ptr<const ExampleParser>> GetParser(OpKernelContext* ctx) {
    const size_t num_dense = layout_.config.dense.size();
    std::vector<Tensor> defaults(num_dense);
    for (size_t d = 0; d < num_dense; ++d) defaults[d] = ctx->input(layout_.DenseDefaultInput(static_cast<int>(d)));
    std::lock_guard<std::mutex> lock(mu_);
    if (parser_ != nullptr) {
      bool same = true;
      for (size_t d = 0; d < num_dense && same; ++d) same = SameTensor(defaults[d], defaults_[d]);
      if (same) return parser_;
    }
    ParseConfig config = layout_.config;
    for (size_t d = 0; d < num_dense; ++d) {
      FixedLenFeature& f = config.dense[d];
      const Tensor& t = defaults[d];
      // TF's convention: an empty default means "required" (unless the feature
      // itself holds no values, where the empty default is the value).
      if (t.NumElements() == 0 && f.shape.num_elements() != 0) continue;
      if (t.NumElements() != f.shape.num_elements()) {
        return errors::InvalidArgument("Default value of feature '", f.key, "' has shape ", t.shape().ToString(),
                                       " (", t.NumElements(), " values) but the feature has shape ",
                                       f.shape.ToString());
      }
      TW_ASSIGN_OR_RETURN(Tensor reshaped, t.Reshaped(f.shape));
      f.default_value = std::move(reshaped);
    }
    TW_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(std::move(config)));
    parser_ = std::make_shared<const ExampleParser>(std::move(parser));
    defaults_ = std::move(defaults);
    return parser_;
  }

  const bool batched_;
  ParseExampleLayout layout_;
  std::mutex mu_;
  std::shared_ptr<const ExampleParser> parser_;  // guarded by mu_
  std::vector<Tensor> defaults_;                 // guarded by mu_; what parser_ was built with
};

class ParseSingleExampleOp : public ParseExampleOp {
 public:
  explicit ParseSingleExampleOp(OpKernelConstruction* c) : ParseExampleOp(c, false) {}
};
class ParseExampleBatchOp : public ParseExampleOp {
 public:
  explicit ParseExampleBatchOp(OpKernelConstruction* c) : ParseExampleOp(c, true) {}
};

OpDef ParseOpDef(const std::string& name, bool batched) {
  OpDefBuilder b(name);
  b.Input("serialized", "string");
  b.Input("names", "string");
  for (int g = 0; g < 3; ++g) {
    b.ListInput(std::string("dense_defaults_") + kGroupNames[g], kGroupNames[g],
                std::string("Ndense_") + kGroupNames[g]);
  }
  b.Output("sparse_indices", "int64");
  for (int g = 0; g < 3; ++g) b.Output(std::string("sparse_values_") + kGroupNames[g], kGroupNames[g]);
  b.Output("sparse_shapes", "int64");
  for (int g = 0; g < 3; ++g) b.Output(std::string("dense_values_") + kGroupNames[g], kGroupNames[g]);
  b.Attr("dense_keys", Tensor(kString, TensorShape{0}))
      .Attr("Tdense", std::vector<DataType>{})
      .Attr("dense_shape_ranks", std::vector<int64_t>{})
      .Attr("dense_shape_dims", std::vector<int64_t>{})
      .Attr("sparse_keys", Tensor(kString, TensorShape{0}))
      .Attr("sparse_types", std::vector<DataType>{})
      .Attr("Nsparse", int64_t{0});
  for (int g = 0; g < 3; ++g) b.Attr(std::string("Nsparse_") + kGroupNames[g], int64_t{0});
  b.Shape([batched](InferenceContext* c) { return ParseShapeFn(c, batched); });
  b.Doc(batched ? "Parses a vector of serialized tf.train.Example protos."
                : "Parses one serialized tf.train.Example proto.");
  OpDef def = b.Build();
  // OpDefBuilder has no list outputs: attach the count attrs here.
  def.outputs[0].number_attr = "Nsparse";
  for (int g = 0; g < 3; ++g) def.outputs[static_cast<size_t>(1 + g)].number_attr = std::string("Nsparse_") + kGroupNames[g];
  def.outputs[4].number_attr = "Nsparse";
  for (int g = 0; g < 3; ++g) def.outputs[static_cast<size_t>(5 + g)].number_attr = std::string("Ndense_") + kGroupNames[g];
  return def;
}

}  // namespace

int ParseExampleDtypeGroup(DataType dtype) {
  for (int g = 0; g < 3; ++g) {
    if (kGroupTypes[g] == dtype) return g;
  }
  return -1;
}

int ParseExampleLayout::SparseValuesOutput(int s) const {
  const int g = ParseExampleDtypeGroup(config.sparse[static_cast<size_t>(s)].dtype);
  return NumSparse() + GroupOffset(num_sparse, g) + sparse_slot[static_cast<size_t>(s)];
}
int ParseExampleLayout::DenseOutput(int d) const {
  const int g = ParseExampleDtypeGroup(config.dense[static_cast<size_t>(d)].dtype);
  return 3 * NumSparse() + GroupOffset(num_dense, g) + dense_slot[static_cast<size_t>(d)];
}
int ParseExampleLayout::DenseDefaultInput(int d) const {
  const int g = ParseExampleDtypeGroup(config.dense[static_cast<size_t>(d)].dtype);
  return 2 + GroupOffset(num_dense, g) + dense_slot[static_cast<size_t>(d)];
}

StatusOr<ParseExampleLayout> ParseExampleLayoutFromAttrs(const AttrMap& attrs) {
  ParseExampleLayout layout;
  Status status;
  const std::vector<std::string> dense_keys = KeysAttr(attrs, "dense_keys", &status);
  const std::vector<std::string> sparse_keys = KeysAttr(attrs, "sparse_keys", &status);
  TW_RETURN_IF_ERROR(status);
  TW_ASSIGN_OR_RETURN(std::vector<DataType> tdense, attrs.Get<std::vector<DataType>>("Tdense"));
  TW_ASSIGN_OR_RETURN(std::vector<DataType> sparse_types, attrs.Get<std::vector<DataType>>("sparse_types"));
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> ranks, attrs.Get<std::vector<int64_t>>("dense_shape_ranks"));
  TW_ASSIGN_OR_RETURN(std::vector<int64_t> dims, attrs.Get<std::vector<int64_t>>("dense_shape_dims"));
  if (tdense.size() != dense_keys.size() || ranks.size() != dense_keys.size()) {
    return errors::InvalidArgument("attrs 'dense_keys', 'Tdense' and 'dense_shape_ranks' must have one entry per "
                                   "dense feature, got ", dense_keys.size(), ", ", tdense.size(), " and ",
                                   ranks.size());
  }
  if (sparse_types.size() != sparse_keys.size()) {
    return errors::InvalidArgument("attrs 'sparse_keys' and 'sparse_types' must have one entry per sparse feature, got ",
                                   sparse_keys.size(), " and ", sparse_types.size());
  }
  size_t next_dim = 0;
  for (size_t d = 0; d < dense_keys.size(); ++d) {
    const int g = ParseExampleDtypeGroup(tdense[d]);
    if (g < 0) return errors::InvalidArgument("Invalid config dtype: ", DataTypeName(tdense[d]));
    if (ranks[d] < 0 || ranks[d] > static_cast<int64_t>(dims.size() - next_dim)) {
      return errors::InvalidArgument("attr 'dense_shape_ranks' gives feature '", dense_keys[d], "' rank ", ranks[d],
                                     " but 'dense_shape_dims' has ", dims.size() - next_dim, " dims left");
    }
    std::vector<int64_t> shape_dims(dims.begin() + static_cast<std::ptrdiff_t>(next_dim),
                                    dims.begin() + static_cast<std::ptrdiff_t>(next_dim + static_cast<size_t>(ranks[d])));
    next_dim += static_cast<size_t>(ranks[d]);
    auto shape = TensorShape::Make(shape_dims);
    if (!shape.ok()) return shape.status().WithContext("shape of dense feature '" + dense_keys[d] + "'");
    layout.config.dense.push_back(FixedLenFeature{dense_keys[d], tdense[d], *shape, std::nullopt});
    layout.dense_slot.push_back(layout.num_dense[g]++);
  }
  if (next_dim != dims.size()) {
    return errors::InvalidArgument("attr 'dense_shape_dims' has ", dims.size(), " dims but the ranks use ", next_dim);
  }
  for (size_t s = 0; s < sparse_keys.size(); ++s) {
    const int g = ParseExampleDtypeGroup(sparse_types[s]);
    if (g < 0) return errors::InvalidArgument("Invalid config dtype: ", DataTypeName(sparse_types[s]));
    layout.config.sparse.push_back(VarLenFeature{sparse_keys[s], sparse_types[s]});
    layout.sparse_slot.push_back(layout.num_sparse[g]++);
  }
  TW_RETURN_IF_ERROR(CheckCount(attrs, "Nsparse", static_cast<int>(sparse_keys.size())));
  for (int g = 0; g < 3; ++g) {
    TW_RETURN_IF_ERROR(CheckCount(attrs, std::string("Ndense_") + kGroupNames[g], layout.num_dense[g]));
    TW_RETURN_IF_ERROR(CheckCount(attrs, std::string("Nsparse_") + kGroupNames[g], layout.num_sparse[g]));
  }
  TW_RETURN_IF_ERROR(layout.config.Validate());
  return layout;
}

void RegisterParseExampleOps(OpRegistry& ops, KernelRegistry& kernels, GradientRegistry& grads) {
  ops.Register(ParseOpDef("ParseSingleExample", false)).Check();
  ops.Register(ParseOpDef("ParseExample", true)).Check();
  kernels.RegisterUntyped<ParseSingleExampleOp>("ParseSingleExample", kDeviceCpu);
  kernels.RegisterUntyped<ParseExampleBatchOp>("ParseExample", kDeviceCpu);
  grads.RegisterNoGradient("ParseSingleExample");
  grads.RegisterNoGradient("ParseExample");
}

namespace io {
namespace {

ParsedFeatures BuildParse(const Scope& scope, const std::string& op, const Output& serialized,
                          const FeatureMap& features, const Output& names) {
  EnsureDataRegistered();
  ParsedFeatures result(scope);
  // Config order: the keys sorted (FeatureMap is ordered), dense then sparse.
  std::vector<std::string> dense_keys, sparse_keys;
  std::vector<DataType> tdense, sparse_types;
  std::vector<int64_t> ranks, dims;
  std::vector<Output> defaults[3];
  int num_sparse[3] = {0, 0, 0};
  Status error;
  for (const auto& [key, feature] : features) {
    if (const auto* f = std::get_if<FixedLenFeature>(&feature)) {
      const int g = ParseExampleDtypeGroup(f->dtype);
      if (g < 0) {
        error = errors::InvalidArgument("Invalid config dtype: ", DataTypeName(f->dtype), " (feature '", key, "')");
        break;
      }
      Tensor value(f->dtype, TensorShape{0});  // empty: the feature is required
      if (f->default_value.has_value()) {
        const Tensor& d = *f->default_value;
        if (!d.IsInitialized() || d.dtype() != f->dtype || d.NumElements() != f->shape.num_elements()) {
          error = errors::InvalidArgument(
              "Default value of feature '", key, "' is ",
              d.IsInitialized() ? d.DebugString(2) : std::string("uninitialized"), " but the feature is ",
              DataTypeName(f->dtype), f->shape.ToString(), " (", f->shape.num_elements(), " values)");
          break;
        }
        value = d.Reshaped(f->shape).ValueOrDie();
      }
      dense_keys.push_back(key);
      tdense.push_back(f->dtype);
      ranks.push_back(f->shape.rank());
      dims.insert(dims.end(), f->shape.dims().begin(), f->shape.dims().end());
      // Without the op name the scope may carry: that belongs to the parse node.
      defaults[g].push_back(Const(scope.WithOpName(""), value));
    } else {
      const auto& v = std::get<VarLenFeature>(feature);
      const int g = ParseExampleDtypeGroup(v.dtype);
      if (g < 0) {
        error = errors::InvalidArgument("Invalid config dtype: ", DataTypeName(v.dtype), " (feature '", key, "')");
        break;
      }
      sparse_keys.push_back(key);
      sparse_types.push_back(v.dtype);
      ++num_sparse[g];
    }
  }
  if (!error.ok()) {
    scope.UpdateStatus(error.WithContext(op + " '" + scope.Prefixed(op) + "'"));
    for (const auto& [key, feature] : features) result.Set(key, ParsedFeature(scope, key, Output()));
    return result;
  }
  NodeBuilder b(scope, op);
  b.Input(serialized);
  b.Input(names.valid() ? names : Const(scope.WithOpName(""), Tensor(kString, TensorShape{0})));
  for (int g = 0; g < 3; ++g) {
    b.Inputs(defaults[g]);
    b.Attr(std::string("Ndense_") + kGroupNames[g], static_cast<int64_t>(defaults[g].size()));
    b.Attr(std::string("Nsparse_") + kGroupNames[g], static_cast<int64_t>(num_sparse[g]));
  }
  b.Attr("dense_keys", Tensor::Vec<std::string>(dense_keys))
      .Attr("Tdense", tdense)
      .Attr("dense_shape_ranks", ranks)
      .Attr("dense_shape_dims", dims)
      .Attr("sparse_keys", Tensor::Vec<std::string>(sparse_keys))
      .Attr("sparse_types", sparse_types)
      .Attr("Nsparse", static_cast<int64_t>(sparse_keys.size()));
  Node* node = b.Finalize();
  if (node == nullptr) {  // its error is in the scope already
    for (const auto& [key, feature] : features) result.Set(key, ParsedFeature(scope, key, Output()));
    return result;
  }
  // Cannot fail: the node's shape function read the same attrs.
  auto layout = ParseExampleLayoutFromAttrs(node->attrs());
  layout.status().Check();
  for (size_t d = 0; d < dense_keys.size(); ++d) {
    result.Set(dense_keys[d], ParsedFeature(scope, dense_keys[d], Output(node, layout->DenseOutput(static_cast<int>(d)))));
  }
  for (size_t s = 0; s < sparse_keys.size(); ++s) {
    const int i = static_cast<int>(s);
    SparseOutput out{Output(node, layout->SparseIndicesOutput(i)), Output(node, layout->SparseValuesOutput(i)),
                     Output(node, layout->SparseShapeOutput(i))};
    result.Set(sparse_keys[s], ParsedFeature(scope, sparse_keys[s], out));
  }
  return result;
}

}  // namespace

ParsedFeature::operator Output() const {
  if (is_sparse_) {
    if (scope_) {
      scope_->UpdateStatus(errors::InvalidArgument(
          "feature '", key_, "' is a VarLenFeature (a sparse tensor): use its indices(), values() and dense_shape()"));
    }
    return Output();
  }
  return dense_;
}

ParsedFeature ParsedFeatures::operator[](const std::string& key) const {
  auto it = features_.find(key);
  if (it != features_.end()) return it->second;
  if (scope_) {
    std::string known;
    for (const auto& [k, f] : features_) known += (known.empty() ? "" : ", ") + k;
    scope_->UpdateStatus(errors::NotFound("no parsed feature '", key, "'; the parse config has: ",
                                          known.empty() ? std::string("no features") : known));
  }
  return ParsedFeature();
}

ParsedFeatures ParseSingleExample(const Scope& scope, const Output& serialized, const FeatureMap& features,
                                  const Output& name) {
  return BuildParse(scope, "ParseSingleExample", serialized, features,
                    name.valid() ? Reshape(scope.WithOpName(""), name, {-1}) : Output());
}

ParsedFeatures ParseExample(const Scope& scope, const Output& serialized_batch, const FeatureMap& features,
                            const Output& names) {
  return BuildParse(scope, "ParseExample", serialized_batch, features, names);
}

}  // namespace io
}  // namespace tw
