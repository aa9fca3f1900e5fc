#include "towerflow/data/example_parser.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "example.pb.h"

#include "towerflow/core/allocator.h"

namespace tw {
namespace {

using example_wire::FeatureRef;
using example_wire::KeyIndex;
using example_wire::Kind;

// How much of a bad record an error message shows.
constexpr size_t kShownBytes = 40;

// absl::CEscape, which TF applies to values in messages: printable ASCII as is,
// the usual backslash escapes, octal for everything else.
std::string CEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (const unsigned char c : s) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\%03o", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// TF's text for an example without a name.
constexpr std::string_view kUnknownName = "<unknown>";

// TF's message has no name; with one it is put first, as in the other errors.
Status CouldNotParse(std::string_view serialized, std::string_view name) {
  const std::string named = name == kUnknownName ? std::string() : StrCat("Name: ", name, ", ");
  if (serialized.size() <= kShownBytes) {
    return errors::InvalidArgument(named, "Could not parse example input, value: '", CEscape(serialized), "'");
  }
  return errors::InvalidArgument(named, "Could not parse example input, value: '",
                                 CEscape(serialized.substr(0, kShownBytes)), "...' (", serialized.size(),
                                 " bytes)");
}

Status BytesChanged() { return errors::Internal("a serialized Example changed while it was being parsed"); }

// TF's word for the list type in value count errors.
std::string_view ListTypeName(DataType dtype) { return dtype == kString ? "bytes" : DataTypeName(dtype); }

Status CheckDtype(const std::string& key, DataType dtype, const FeatureRef& ref, std::string_view name) {
  const DataType wire = example_wire::KindDataType(ref.kind);
  if (ref.kind == Kind::kNone || wire == dtype) return Status::OK();
  return errors::InvalidArgument("Name: ", name, ", Feature: ", key,
                                 ".  Data types don't match. Data type: ", DataTypeName(wire),
                                 " Expected type: ", DataTypeName(dtype));
}

// TF's checks on one dense feature of example `index`: present or defaulted, of
// the configured type, with exactly as many values as the shape holds.
// " The record has: a, b, c." (its feature keys, sorted, at most 20), for the
// error of a missing feature: a record of another schema says which. The error
// path only, so it may decode the record with libprotobuf.
std::string RecordKeys(std::string_view serialized) {
  tensorflow::Example ex;
  if (serialized.size() > INT32_MAX || !ex.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return "";
  }
  std::vector<std::string> keys;
  for (const auto& [key, feature] : ex.features().feature()) keys.push_back(key);
  return DescribeRecordKeys(std::move(keys));
}

Status CheckDense(const FixedLenFeature& f, const FeatureRef& ref, int64_t index, std::string_view name,
                  std::string_view serialized) {
  if (ref.kind == Kind::kNone) {
    if (f.default_value.has_value()) return Status::OK();
    return errors::InvalidArgument("Name: ", name, ", Feature: ", f.key,
                                   " (data type: ", DataTypeName(f.dtype),
                                   ") is required but could not be found.", RecordKeys(serialized));
  }
  TW_RETURN_IF_ERROR(CheckDtype(f.key, f.dtype, ref, name));
  if (ref.count != f.shape.num_elements()) {
    return errors::InvalidArgument("Name: ", name, ", Key: ", f.key, ", Index: ", index, ".  Number of ",
                                   ListTypeName(f.dtype), " values != expected.  Values size: ", ref.count,
                                   " but output shape: ", f.shape.ToString());
  }
  return Status::OK();
}

// Element `offset` of t. REQUIRES: dtype kInt64, kFloat32 or kString.
void* ElementPtr(Tensor& t, int64_t offset) {
  if (t.dtype() == kString) return t.data<std::string>() + offset;
  return static_cast<char*>(t.raw_data()) + offset * static_cast<int64_t>(DataTypeSize(t.dtype()));
}

// Decodes ref's values to dst, an array of ref.count elements of `dtype`.
bool ReadInto(const FeatureRef& ref, DataType dtype, void* dst) {
  switch (dtype) {
    case kFloat32:
      return example_wire::ReadValues(ref, static_cast<float*>(dst));
    case kInt64:
      return example_wire::ReadValues(ref, static_cast<int64_t*>(dst));
    case kString:
      return example_wire::ReadValues(ref, static_cast<std::string*>(dst));
    default:
      return false;
  }
}

// Writes one example's values of a checked dense feature (or its default) to dst.
Status WriteDense(const FixedLenFeature& f, const FeatureRef& ref, void* dst) {
  if (ref.kind != Kind::kNone) return ReadInto(ref, f.dtype, dst) ? Status::OK() : BytesChanged();
  const Tensor& d = *f.default_value;
  if (f.dtype == kString) {
    auto* out = static_cast<std::string*>(dst);
    for (const std::string& s : d.flat<std::string>()) *out++ = s;
  } else if (d.TotalBytes() > 0) {
    std::memcpy(dst, d.raw_data(), d.TotalBytes());
  }
  return Status::OK();
}

StatusOr<Tensor> AllocateOutput(DataType dtype, const TensorShape& shape) {
  return Tensor::Allocate(CpuAllocator(), dtype, shape);
}

// Per-call space for one FeatureRef per configured key, on the stack for the
// usual handful of features.
class RefBuffer {
 public:
  explicit RefBuffer(int n) {
    if (n > kInline) heap_.resize(static_cast<size_t>(n));
  }
  FeatureRef* data() { return heap_.empty() ? inline_ : heap_.data(); }
  FeatureRef& operator[](size_t i) { return data()[i]; }

 private:
  static constexpr int kInline = 16;
  FeatureRef inline_[kInline];
  std::vector<FeatureRef> heap_;
};

// The error of the lowest-numbered failing example, whichever shard saw it.
class FirstError {
 public:
  // True when an example before `index` has already failed (work past it is moot).
  bool Before(int64_t index) const { return index_.load(std::memory_order_relaxed) < index; }
  void Record(int64_t index, Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index < index_.load(std::memory_order_relaxed)) {
      index_.store(index, std::memory_order_relaxed);
      status_ = std::move(status);
    }
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  std::atomic<int64_t> index_{INT64_MAX};  // written under mu_
  Status status_;                          // guarded by mu_
};

std::vector<std::string_view> ConfigKeys(const ParseConfig& config) {
  std::vector<std::string_view> keys;
  keys.reserve(config.dense.size() + config.sparse.size());
  for (const FixedLenFeature& f : config.dense) keys.push_back(f.key);
  for (const VarLenFeature& f : config.sparse) keys.push_back(f.key);
  return keys;
}

Status ParseSingleImpl(const ParseConfig& config, const KeyIndex& index, std::string_view serialized,
                       ParseResult* out, std::string_view name) {
  RefBuffer refs(index.size());
  if (!example_wire::ScanExample(serialized, index, refs.data())) return CouldNotParse(serialized, name);
  const size_t num_dense = config.dense.size();
  // Check first, allocate after: every size below is then bounded by the bytes
  // present or by a default the config already holds.
  for (size_t d = 0; d < num_dense; ++d) {
    TW_RETURN_IF_ERROR(CheckDense(config.dense[d], refs[d], 0, name, serialized));
  }
  for (size_t s = 0; s < config.sparse.size(); ++s) {
    TW_RETURN_IF_ERROR(CheckDtype(config.sparse[s].key, config.sparse[s].dtype, refs[num_dense + s], name));
  }
  out->dense.clear();
  out->dense.reserve(num_dense);
  for (size_t d = 0; d < num_dense; ++d) {
    const FixedLenFeature& f = config.dense[d];
    TW_ASSIGN_OR_RETURN(Tensor t, AllocateOutput(f.dtype, f.shape));
    TW_RETURN_IF_ERROR(WriteDense(f, refs[d], ElementPtr(t, 0)));
    out->dense.push_back(std::move(t));
  }
  out->sparse.clear();
  out->sparse.reserve(config.sparse.size());
  for (size_t s = 0; s < config.sparse.size(); ++s) {
    const FeatureRef& ref = refs[num_dense + s];
    const int64_t n = ref.kind == Kind::kNone ? 0 : ref.count;
    SparseTensorValue v;
    TW_ASSIGN_OR_RETURN(v.indices, AllocateOutput(kInt64, TensorShape{n, 1}));
    TW_ASSIGN_OR_RETURN(v.values, AllocateOutput(config.sparse[s].dtype, TensorShape{n}));
    v.dense_shape = Tensor::Vec<int64_t>({n});
    int64_t* indices = v.indices.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) indices[i] = i;
    if (n > 0 && !ReadInto(ref, config.sparse[s].dtype, ElementPtr(v.values, 0))) {
      return BytesChanged();
    }
    out->sparse.push_back(std::move(v));
  }
  return Status::OK();
}

Status ParseBatchImpl(const ParseConfig& config, const KeyIndex& index,
                      const std::vector<std::string_view>& serialized, ParseResult* out, ThreadPool* pool,
                      const std::vector<std::string_view>* names) {
  const auto batch = static_cast<int64_t>(serialized.size());
  const size_t num_dense = config.dense.size();
  const size_t num_sparse = config.sparse.size();
  out->dense.clear();
  out->sparse.clear();
  out->dense.reserve(num_dense);
  std::vector<int64_t> row_size(num_dense);
  for (size_t d = 0; d < num_dense; ++d) {
    const FixedLenFeature& f = config.dense[d];
    std::vector<int64_t> dims = {batch};
    dims.insert(dims.end(), f.shape.dims().begin(), f.shape.dims().end());
    TW_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
    TW_ASSIGN_OR_RETURN(Tensor t, AllocateOutput(f.dtype, shape));
    out->dense.push_back(std::move(t));
    row_size[d] = f.shape.num_elements();
  }

  int64_t total_bytes = 0;
  for (std::string_view s : serialized) total_bytes += static_cast<int64_t>(s.size());
  // Rough cycles per example: walking and copying are a few cycles a byte.
  const int64_t cost = 500 + 8 * (batch > 0 ? total_bytes / batch : 0);

  // Pass over every example: check it, write its dense rows in place, and note
  // where its sparse values lie (decoded once their offsets are known).
  std::vector<FeatureRef> sparse_refs(static_cast<size_t>(batch) * num_sparse);
  FirstError first_error;
  ParallelFor(pool, batch, cost, [&](int64_t begin, int64_t end) {
    RefBuffer refs(index.size());
    for (int64_t e = begin; e < end; ++e) {
      if (first_error.Before(e)) return;
      Status status = [&]() -> Status {
        const std::string_view bytes = serialized[static_cast<size_t>(e)];
        const std::string_view name = names != nullptr ? (*names)[static_cast<size_t>(e)] : kUnknownName;
        if (!example_wire::ScanExample(bytes, index, refs.data())) return CouldNotParse(bytes, name);
        for (size_t d = 0; d < num_dense; ++d) {
          TW_RETURN_IF_ERROR(CheckDense(config.dense[d], refs[d], e, name, bytes));
          TW_RETURN_IF_ERROR(
              WriteDense(config.dense[d], refs[d], ElementPtr(out->dense[d], e * row_size[d])));
        }
        for (size_t s = 0; s < num_sparse; ++s) {
          const FeatureRef& ref = refs[num_dense + s];
          TW_RETURN_IF_ERROR(CheckDtype(config.sparse[s].key, config.sparse[s].dtype, ref, name));
          sparse_refs[static_cast<size_t>(e) * num_sparse + s] = ref;
        }
        return Status::OK();
      }();
      if (!status.ok()) {
        first_error.Record(e, std::move(status));
        return;
      }
    }
  });
  TW_RETURN_IF_ERROR(first_error.status());
  if (num_sparse == 0) return Status::OK();

  // Each sparse value took at least one input byte, so these sizes are bounded
  // by the input.
  std::vector<int64_t> offsets(sparse_refs.size());
  out->sparse.resize(num_sparse);
  for (size_t s = 0; s < num_sparse; ++s) {
    int64_t total = 0, longest = 0;
    for (int64_t e = 0; e < batch; ++e) {
      const size_t i = static_cast<size_t>(e) * num_sparse + s;
      const int64_t n = sparse_refs[i].kind == Kind::kNone ? 0 : sparse_refs[i].count;
      offsets[i] = total;
      total += n;
      longest = std::max(longest, n);
    }
    SparseTensorValue& v = out->sparse[s];
    TW_ASSIGN_OR_RETURN(v.indices, AllocateOutput(kInt64, TensorShape{total, 2}));
    TW_ASSIGN_OR_RETURN(v.values, AllocateOutput(config.sparse[s].dtype, TensorShape{total}));
    v.dense_shape = Tensor::Vec<int64_t>({batch, longest});
  }
  ParallelFor(pool, batch, cost, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      for (size_t s = 0; s < num_sparse; ++s) {
        const size_t i = static_cast<size_t>(e) * num_sparse + s;
        const FeatureRef& ref = sparse_refs[i];
        if (ref.kind == Kind::kNone || ref.count == 0) continue;
        SparseTensorValue& v = out->sparse[s];
        int64_t* indices = v.indices.data<int64_t>() + 2 * offsets[i];
        for (int64_t j = 0; j < ref.count; ++j) {
          indices[2 * j] = e;
          indices[2 * j + 1] = j;
        }
        if (!ReadInto(ref, config.sparse[s].dtype, ElementPtr(v.values, offsets[i]))) {
          first_error.Record(e, BytesChanged());
          return;
        }
      }
    }
  });
  return first_error.status();
}

}  // namespace

std::string DescribeRecordKeys(std::vector<std::string> keys) {
  if (keys.empty()) return " The record has no features.";
  std::sort(keys.begin(), keys.end());
  std::string out = " The record has: ";
  for (size_t i = 0; i < keys.size() && i < 20; ++i) out += (i > 0 ? ", " : "") + CEscape(keys[i]);
  if (keys.size() > 20) out += StrCat(", ... (", keys.size(), " features)");
  return out + ".";
}

StatusOr<ExampleParser> ExampleParser::Create(ParseConfig config) {
  TW_RETURN_IF_ERROR(config.Validate());
  KeyIndex index(ConfigKeys(config));
  return ExampleParser(std::move(config), std::move(index));
}

Status ExampleParser::ParseSingle(std::string_view serialized, ParseResult* out, std::string_view name) const {
  return ParseSingleImpl(config_, index_, serialized, out, name.empty() ? kUnknownName : name);
}

Status ExampleParser::ParseBatch(const std::vector<std::string_view>& serialized, ParseResult* out,
                                 ThreadPool* pool, const std::vector<std::string_view>* names) const {
  if (names != nullptr && names->size() != serialized.size()) {
    return errors::InvalidArgument("ParseBatch: ", names->size(), " names for ", serialized.size(), " examples");
  }
  return ParseBatchImpl(config_, index_, serialized, out, pool, names);
}

Status ParseSingleExample(std::string_view serialized, const ParseConfig& config, ParseResult* out) {
  TW_RETURN_IF_ERROR(config.Validate());
  return ParseSingleImpl(config, KeyIndex(ConfigKeys(config)), serialized, out, kUnknownName);
}

Status ParseExampleBatch(const std::vector<std::string_view>& serialized, const ParseConfig& config,
                         ParseResult* out, ThreadPool* pool) {
  TW_RETURN_IF_ERROR(config.Validate());
  return ParseBatchImpl(config, KeyIndex(ConfigKeys(config)), serialized, out, pool, nullptr);
}

}  // namespace tw
