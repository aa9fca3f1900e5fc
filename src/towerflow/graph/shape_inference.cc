#include "towerflow/graph/shape_inference.h"

#include <algorithm>

namespace tw {

InferenceContext::InferenceContext(const OpDef& def, const AttrMap& attrs,
                                   std::vector<PartialShape> input_shapes,
                                   std::vector<DataType> input_types,
                                   std::vector<const Tensor*> input_values, int num_outputs)
    : def_(def),
      attrs_(attrs),
      input_shapes_(std::move(input_shapes)),
      input_types_(std::move(input_types)),
      input_values_(std::move(input_values)),
      outputs_(static_cast<size_t>(num_outputs)) {}

const std::optional<PartialVector>& InferenceContext::input_partial(int i) const {
  static const std::optional<PartialVector> kNone;
  if (static_cast<size_t>(i) >= input_partials_.size()) return kNone;
  return input_partials_[static_cast<size_t>(i)];
}

StatusOr<PartialShape> InferenceContext::InputAsShape(int i) const {
  const Tensor* t = input_value(i);
  if (t == nullptr && input_partial(i) && input(i).known_rank() && input(i).rank() == 1) {
    std::vector<int64_t> dims;
    for (const std::optional<int64_t>& d : *input_partial(i)) dims.push_back(d && *d >= 0 ? *d : -1);
    return PartialShape(std::move(dims));
  }
  if (t != nullptr) {
    if (t->rank() != 1 || (t->dtype() != kInt32 && t->dtype() != kInt64)) {
      return errors::InvalidArgument("input ", i, " of ", def_.name,
                                     " must be an int32 or int64 vector giving a shape, got ",
                                     t->DebugString());
    }
    std::vector<int64_t> dims;
    for (int64_t k = 0; k < t->NumElements(); ++k) {
      dims.push_back(t->dtype() == kInt32 ? t->data<int32_t>()[k] : t->data<int64_t>()[k]);
    }
    return PartialShape::FromDims(dims);
  }
  const PartialShape& s = input(i);
  if (s.known_rank() && s.rank() == 1 && s.dim(0) >= 0) {
    return PartialShape::UnknownOfRank(static_cast<int>(s.dim(0)));
  }
  return PartialShape::Unknown();
}

Status InferenceContext::WithRank(int i, int rank) const {
  const PartialShape& s = input(i);
  if (s.known_rank() && s.rank() != rank) {
    return errors::InvalidArgument("input ", i, " (", def_.inputs.size() > static_cast<size_t>(i) ? def_.inputs[static_cast<size_t>(i)].name : "?",
                                   ") must have rank ", rank, " but has shape ", s.ToString());
  }
  return Status::OK();
}

Status InferenceContext::WithRankAtLeast(int i, int rank) const {
  const PartialShape& s = input(i);
  if (s.known_rank() && s.rank() < rank) {
    return errors::InvalidArgument("input ", i, " must have rank at least ", rank,
                                   " but has shape ", s.ToString());
  }
  return Status::OK();
}

namespace shape_fns {

Status Unchanged(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return Status::OK();
}

Status Unknown(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialShape::Unknown());
  return Status::OK();
}

Status Scalar(InferenceContext* c) {
  c->set_output(0, PartialShape(std::vector<int64_t>{}));
  return Status::OK();
}

StatusOr<PartialShape> BroadcastShapes(const PartialShape& a, const PartialShape& b) {
  if (!a.known_rank() || !b.known_rank()) return PartialShape::Unknown();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da == -1 || db == -1) {
      d = da == -1 ? db : da;  // the known one, or unknown
    } else if (da == db) {
      d = da;
    } else {
      return errors::InvalidArgument("incompatible shapes for broadcasting: ", a.ToString(),
                                     " and ", b.ToString());
    }
    out[static_cast<size_t>(i)] = d;
  }
  return PartialShape(out);
}

Status Broadcast(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(PartialShape s, BroadcastShapes(c->input(0), c->input(1)));
  c->set_output(0, s);
  return Status::OK();
}

Status Reduction(InferenceContext* c) {
  TW_ASSIGN_OR_RETURN(bool keep_dims, c->GetAttr<bool>("keep_dims"));
  const PartialShape& in = c->input(0);
  const Tensor* axes = c->input_value(1);
  if (!in.known_rank() || axes == nullptr) {
    c->set_output(0, keep_dims && in.known_rank() ? PartialShape::UnknownOfRank(in.rank())
                                                  : PartialShape::Unknown());
    return Status::OK();
  }
  std::vector<bool> reduce(static_cast<size_t>(in.rank()), false);
  for (int64_t k = 0; k < axes->NumElements(); ++k) {
    int64_t a = axes->dtype() == kInt32 ? axes->data<int32_t>()[k] : axes->data<int64_t>()[k];
    if (a < -in.rank() || a >= in.rank()) {
      return errors::InvalidArgument("reduction axis ", a, " is out of range for input of shape ",
                                     in.ToString());
    }
    if (a < 0) a += in.rank();
    reduce[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i) {
    if (!reduce[static_cast<size_t>(i)]) {
      out.push_back(in.dim(i));
    } else if (keep_dims) {
      out.push_back(1);
    }
  }
  c->set_output(0, PartialShape(out));
  return Status::OK();
}

std::optional<std::vector<int64_t>> KnownIntVector(InferenceContext* c, int i) {
  const Tensor* t = c->input_value(i);
  if (t == nullptr) {
    const std::optional<PartialVector>& p = c->input_partial(i);
    if (!p || (c->input(i).known_rank() && c->input(i).rank() > 1)) return std::nullopt;
    std::vector<int64_t> v;
    for (const std::optional<int64_t>& e : *p) {
      if (!e) return std::nullopt;
      v.push_back(*e);
    }
    return v;
  }
  if (t->rank() > 1 || (t->dtype() != kInt32 && t->dtype() != kInt64)) return std::nullopt;
  std::vector<int64_t> v;
  for (int64_t k = 0; k < t->NumElements(); ++k) {
    v.push_back(t->dtype() == kInt32 ? t->data<int32_t>()[k] : t->data<int64_t>()[k]);
  }
  return v;
}

}  // namespace shape_fns
}  // namespace tw
