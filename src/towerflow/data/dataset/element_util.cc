#include "towerflow/data/dataset/element_util.h"

#include <cstring>

namespace tw::data {

namespace {

TensorShape WithoutDim0(const TensorShape& s) {
  std::vector<int64_t> dims(s.dims().begin() + 1, s.dims().end());
  return TensorShape(std::move(dims));
}

TensorShape WithDim0(int64_t n, const TensorShape& s) {
  std::vector<int64_t> dims = {n};
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return TensorShape(std::move(dims));
}

// Copies `src` into the row-major block of `dst` that starts at element
// `offset`, placing src's (smaller or equal) box at the origin of `shape`.
void CopyPadded(const Tensor& src, Tensor* dst, int64_t offset, const TensorShape& shape) {
  const int rank = shape.rank();
  const size_t elem = DataTypeSize(src.dtype());
  const bool strings = src.dtype() == kString;
  if (src.shape() == shape) {
    if (strings) {
      const std::string* s = src.data<std::string>();
      std::string* d = dst->data<std::string>() + offset;
      for (int64_t k = 0; k < src.NumElements(); ++k) d[k] = s[k];
    } else if (src.TotalBytes() > 0) {
      std::memcpy(static_cast<char*>(dst->raw_data()) + offset * static_cast<int64_t>(elem), src.raw_data(),
                  src.TotalBytes());
    }
    return;
  }
  // Row by row over the leading rank-1 dims of src.
  if (src.NumElements() == 0) return;
  const int64_t row = rank == 0 ? 1 : src.dim(rank - 1);
  const int64_t rows = src.NumElements() / row;
  std::vector<int64_t> idx(static_cast<size_t>(std::max(rank - 1, 0)), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t dst_off = 0;
    for (int d = 0; d < rank - 1; ++d) dst_off = dst_off * shape.dim(d) + idx[static_cast<size_t>(d)];
    dst_off = offset + (rank == 0 ? 0 : dst_off * shape.dim(rank - 1));
    const int64_t src_off = r * row;
    if (strings) {
      const std::string* s = src.data<std::string>() + src_off;
      std::string* d = dst->data<std::string>() + dst_off;
      for (int64_t k = 0; k < row; ++k) d[k] = s[k];
    } else {
      std::memcpy(static_cast<char*>(dst->raw_data()) + dst_off * static_cast<int64_t>(elem),
                  static_cast<const char*>(src.raw_data()) + src_off * static_cast<int64_t>(elem),
                  static_cast<size_t>(row) * elem);
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < src.dim(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

void FillWith(Tensor* t, const Tensor& pad) {
  if (!pad.IsInitialized()) {  // zeros; new string tensors hold empty strings
    if (t->dtype() != kString && t->TotalBytes() > 0) std::memset(t->raw_data(), 0, t->TotalBytes());
    return;
  }
  const Status s = DispatchAll(t->dtype(), "padding", [&]<typename T>() {
    const T v = pad.scalar<T>();
    for (T& x : t->flat<T>()) x = v;
    return Status::OK();
  });
  TW_CHECK(s.ok()) << s.ToString();
}

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Decoder {
 public:
  explicit Decoder(std::string_view b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (b_.size() < sizeof(T)) return false;
    std::memcpy(v, b_.data(), sizeof(T));
    b_.remove_prefix(sizeof(T));
    return true;
  }
  bool Bytes(size_t n, std::string_view* v) {
    if (b_.size() < n) return false;
    *v = b_.substr(0, n);
    b_.remove_prefix(n);
    return true;
  }
  size_t left() const { return b_.size(); }

 private:
  std::string_view b_;
};

}  // namespace

Tensor SliceAlongDim0(const Tensor& t, int64_t i) {
  const TensorShape shape = WithoutDim0(t.shape());
  Tensor out(t.dtype(), shape);
  const int64_t n = shape.num_elements();
  if (t.dtype() == kString) {
    const std::string* s = t.data<std::string>() + i * n;
    std::string* d = out.data<std::string>();
    for (int64_t k = 0; k < n; ++k) d[k] = s[k];
  } else if (n > 0) {
    const size_t bytes = static_cast<size_t>(n) * DataTypeSize(t.dtype());
    std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + static_cast<size_t>(i) * bytes, bytes);
  }
  return out;
}

StatusOr<Tensor> Stack(const std::vector<const Tensor*>& parts, int component) {
  TW_CHECK(!parts.empty());
  const Tensor& first = *parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i]->shape() != first.shape()) {
      return errors::InvalidArgument("Cannot batch tensors with different shapes in component ", component,
                                     ". First element had shape ", first.shape().ToString(), " and element ", i,
                                     " had shape ", parts[i]->shape().ToString(), ".");
    }
  }
  Tensor out(first.dtype(), WithDim0(static_cast<int64_t>(parts.size()), first.shape()));
  const int64_t n = first.NumElements();
  for (size_t i = 0; i < parts.size(); ++i) CopyPadded(*parts[i], &out, static_cast<int64_t>(i) * n, first.shape());
  return out;
}

StatusOr<Tensor> StackConsuming(const std::vector<Tensor*>& parts, int component) {
  TW_CHECK(!parts.empty());
  if (parts[0]->dtype() != kString) return Stack(std::vector<const Tensor*>(parts.begin(), parts.end()), component);
  const Tensor& first = *parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i]->shape() != first.shape()) return Stack(std::vector<const Tensor*>(parts.begin(), parts.end()), component);
  }
  Tensor out(kString, WithDim0(static_cast<int64_t>(parts.size()), first.shape()));
  const int64_t n = first.NumElements();
  std::string* dst = out.data<std::string>();
  for (size_t i = 0; i < parts.size(); ++i, dst += n) {
    Tensor& part = *parts[i];
    std::string* src = part.data<std::string>();
    const bool owned = part.buffer().use_count() == 1;
    for (int64_t k = 0; k < n; ++k) dst[k] = owned ? std::move(src[k]) : src[k];
  }
  return out;
}

Tensor StackPadded(const std::vector<const Tensor*>& parts, const TensorShape& shape, const Tensor& pad) {
  TW_CHECK(!parts.empty());
  Tensor out(parts[0]->dtype(), WithDim0(static_cast<int64_t>(parts.size()), shape));
  FillWith(&out, pad);
  const int64_t n = shape.num_elements();
  for (size_t i = 0; i < parts.size(); ++i) CopyPadded(*parts[i], &out, static_cast<int64_t>(i) * n, shape);
  return out;
}

ElementSpec SpecOf(const Element& element) {
  ElementSpec spec;
  for (const Tensor& t : element) {
    spec.dtypes.push_back(t.dtype());
    spec.shapes.push_back(PartialShape(t.shape()));
  }
  return spec;
}

StatusOr<ElementSpec> MostSpecific(const ElementSpec& a, const ElementSpec& b) {
  if (a.dtypes != b.dtypes) {
    return errors::InvalidArgument("element types differ: ", a.DebugString(), " and ", b.DebugString());
  }
  ElementSpec out = a;
  for (size_t i = 0; i < a.size(); ++i) {
    const PartialShape& x = a.shapes[i];
    const PartialShape& y = b.shapes[i];
    if (!x.known_rank() || !y.known_rank() || x.rank() != y.rank()) {
      out.shapes[i] = PartialShape::Unknown();
      continue;
    }
    std::vector<int64_t> dims(static_cast<size_t>(x.rank()));
    for (int d = 0; d < x.rank(); ++d) dims[static_cast<size_t>(d)] = x.dim(d) == y.dim(d) ? x.dim(d) : -1;
    out.shapes[i] = PartialShape(std::move(dims));
  }
  return out;
}

Status CheckElement(const Element& element, const ElementSpec& spec, const std::string& what) {
  if (element.size() != spec.size()) {
    return errors::InvalidArgument(what, ": expected ", spec.size(), " components ", spec.DebugString(), ", got ",
                                   element.size());
  }
  for (size_t i = 0; i < element.size(); ++i) {
    if (element[i].dtype() != spec.dtypes[i]) {
      return errors::InvalidArgument(what, ": component ", i, " is ", DataTypeName(element[i].dtype()),
                                     ", expected ", DataTypeName(spec.dtypes[i]));
    }
    if (!PartialShape(element[i].shape()).IsCompatibleWith(spec.shapes[i])) {
      return errors::InvalidArgument(what, ": component ", i, " has shape ", element[i].shape().ToString(),
                                     ", expected ", ShapeString(spec.shapes[i]));
    }
  }
  return Status::OK();
}

std::string ShapeString(const PartialShape& shape) {
  if (!shape.known_rank()) return "<unknown>";
  std::string s = "[";
  for (int i = 0; i < shape.rank(); ++i) s += (i ? "," : "") + std::to_string(shape.dim(i));
  return s + "]";
}

std::string ElementSpec::DebugString() const {
  std::string s = "(";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (i) s += ", ";
    s += std::string(DataTypeName(dtypes[i])) + " " + ShapeString(i < shapes.size() ? shapes[i] : PartialShape());
  }
  return s + ")";
}

void EncodeElement(const Element& element, std::string* out) {
  Put<uint32_t>(out, static_cast<uint32_t>(element.size()));
  for (const Tensor& t : element) {
    Put<int32_t>(out, static_cast<int32_t>(t.dtype()));
    Put<int32_t>(out, t.rank());
    for (int64_t d : t.shape().dims()) Put<int64_t>(out, d);
    if (t.dtype() == kString) {
      for (const std::string& s : t.flat<std::string>()) {
        Put<uint64_t>(out, s.size());
        out->append(s);
      }
    } else if (t.TotalBytes() > 0) {
      out->append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
    }
  }
}

StatusOr<Element> DecodeElement(std::string_view bytes) {
  Decoder in(bytes);
  auto bad = [&](const char* what) {
    return errors::DataLoss("malformed element encoding (", what, ") at byte ", bytes.size() - in.left());
  };
  uint32_t count = 0;
  if (!in.Get(&count) || count > in.left()) return bad("component count");
  Element out;
  for (uint32_t c = 0; c < count; ++c) {
    int32_t dtype = 0, rank = 0;
    if (!in.Get(&dtype) || !in.Get(&rank) || rank < 0 || rank > 64) return bad("dtype or rank");
    bool known = false;
    for (DataType t : AllDataTypes()) known |= static_cast<int32_t>(t) == dtype;
    if (!known) return bad("dtype");
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) {
      if (!in.Get(&d)) return bad("dims");
    }
    auto shape = TensorShape::Make(dims);
    if (!shape.ok()) return bad("dims");
    const DataType type = static_cast<DataType>(dtype);
    const int64_t n = shape->num_elements();
    // Divisions, not products: a huge shape must not wrap around the check.
    const uint64_t elem = type == kString ? 8 : DataTypeSize(type);
    if (elem > 0 && static_cast<uint64_t>(n) > in.left() / elem) return bad("values");
    Tensor t(type, *shape);
    if (type == kString) {
      for (std::string& s : t.flat<std::string>()) {
        uint64_t len = 0;
        std::string_view v;
        if (!in.Get(&len) || !in.Bytes(len, &v)) return bad("string");
        s.assign(v);
      }
    } else if (n > 0) {
      std::string_view v;
      if (!in.Bytes(t.TotalBytes(), &v)) return bad("values");
      std::memcpy(t.raw_data(), v.data(), v.size());
    }
    out.push_back(std::move(t));
  }
  if (in.left() != 0) return bad("trailing bytes");
  return out;
}

}  // namespace tw::data
