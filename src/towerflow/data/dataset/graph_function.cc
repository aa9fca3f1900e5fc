#include "towerflow/data/dataset/graph_function.h"

#include "towerflow/data/register.h"
#include "towerflow/graph/ops/array_ops.h"

namespace tw::data {

GraphFunction::~GraphFunction() {
  if (session_) session_->Close();
}

StatusOr<std::shared_ptr<GraphFunction>> GraphFunction::Make(const ElementSpec& input, const Builder& builder,
                                                             const std::string& name) {
  if (!builder) return errors::InvalidArgument("a null ", name, " function");
  EnsureDataRegistered();  // the function may use parsing and decoding ops
  std::shared_ptr<GraphFunction> f(new GraphFunction());
  f->graph_ = std::make_unique<Graph>();
  Scope root(*f->graph_);
  Scope scope = root.NewSubScope(name);
  for (size_t i = 0; i < input.size(); ++i) {
    f->args_.push_back(
        Placeholder(scope.WithOpName("args_" + std::to_string(i)), input.dtypes[i], input.shapes[i]));
  }
  if (!scope.ok()) return scope.status();
  f->rets_ = builder(scope, f->args_);
  if (!root.ok()) return root.status().WithContext("building the " + name + " function");
  if (f->rets_.empty()) return errors::InvalidArgument("the ", name, " function returned no outputs");
  for (size_t i = 0; i < f->rets_.size(); ++i) {
    const Output& r = f->rets_[i];
    if (!r.valid()) return errors::InvalidArgument("the ", name, " function returned a null output ", i);
    f->output_spec_.dtypes.push_back(r.dtype());
    f->output_spec_.shapes.push_back(r.shape());
    int arg = -1;
    for (size_t a = 0; a < f->args_.size(); ++a) {
      if (f->args_[a] == r) arg = static_cast<int>(a);
    }
    f->passthrough_.push_back(arg);
    if (arg >= 0) {
      f->fetch_of_.push_back(-1);
    } else {
      f->fetch_of_.push_back(static_cast<int>(f->fetches_.size()));
      f->fetches_.push_back(r);
    }
  }
  // The pipeline's worker threads are the parallelism: one thread per run.
  f->session_ = std::make_unique<Session>(
      *f->graph_, SessionOptions{.inter_op_threads = 1, .intra_op_threads = 1, .max_gpus = 0});
  return f;
}

Status GraphFunction::Run(const Element& in, Element* out) const {
  std::vector<Tensor> fetched;
  if (!fetches_.empty()) {
    FeedList feeds;
    feeds.reserve(args_.size());
    for (size_t i = 0; i < args_.size(); ++i) feeds.emplace_back(args_[i], in[i]);
    TW_ASSIGN_OR_RETURN(fetched, session_->Run(feeds, fetches_));
  }
  out->resize(rets_.size());
  for (size_t i = 0; i < rets_.size(); ++i) {
    (*out)[i] = passthrough_[i] >= 0 ? in[static_cast<size_t>(passthrough_[i])]
                                     : std::move(fetched[static_cast<size_t>(fetch_of_[i])]);
  }
  return Status::OK();
}

}  // namespace tw::data
