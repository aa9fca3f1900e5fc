#include "towerflow/core/tensor.h"

#include <new>
#include <sstream>

namespace tw {

std::shared_ptr<TensorBuffer> TensorBuffer::Allocate(Allocator* allocator, DataType dtype,
                                                     int64_t num_elements) {
  const size_t elem = DataTypeSize(dtype);
  if (num_elements < 0 || (elem && static_cast<uint64_t>(num_elements) > SIZE_MAX / elem)) {
    return nullptr;
  }
  const size_t bytes = static_cast<size_t>(num_elements) * elem;
  void* data = allocator->Allocate(bytes);
  if (!data) return nullptr;
  if (dtype == kString) {
    auto* s = static_cast<std::string*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (s + i) std::string();
  }
  return std::shared_ptr<TensorBuffer>(new TensorBuffer(allocator, dtype, data, bytes, num_elements));
}

TensorBuffer::~TensorBuffer() {
  if (dtype_ == kString) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_elements_; ++i) s[i].~basic_string();
  }
  allocator_->Deallocate(data_, bytes_);
}

Tensor::Tensor(DataType dtype, const TensorShape& shape) {
  auto t = Allocate(CpuAllocator(), dtype, shape);
  t.status().Check();
  *this = std::move(t).value();
}

StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape) {
  if (dtype == DataType::kInvalid) return errors::InvalidArgument("cannot allocate a tensor of invalid dtype");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.buffer_ = TensorBuffer::Allocate(allocator, dtype, shape.num_elements());
  if (!t.buffer_) {
    // The request's size and the allocator's use (a GPU allocator's name also
    // gives its device and limit): what a user needs to size a batch.
    const int64_t n = shape.num_elements();
    const size_t elem = DataTypeSize(dtype);
    const std::string bytes = n >= 0 && (elem == 0 || static_cast<uint64_t>(n) <= SIZE_MAX / elem)
                                  ? std::to_string(static_cast<size_t>(n) * elem)
                                  : std::string("too many");
    return errors::ResourceExhausted("out of memory allocating ", DataTypeName(dtype), shape.ToString(), " (", n,
                                     " elements, ", bytes, " bytes) on ", allocator->Name(), "; ",
                                     allocator->BytesInUse(), " bytes in use");
  }
  return t;
}

StatusOr<Tensor> Tensor::Reshaped(const TensorShape& shape) const {
  if (shape.num_elements() != NumElements()) {
    return errors::InvalidArgument("cannot reshape a tensor of shape ", shape_.ToString(), " (",
                                   NumElements(), " elements) to shape ", shape.ToString(), " (",
                                   shape.num_elements(), " elements)");
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!IsInitialized()) return Tensor();
  Allocator* a = buffer_ ? buffer_->allocator() : CpuAllocator();
  Tensor t = Allocate(a, dtype_, shape_).ValueOrDie();
  if (dtype_ == kString) {
    auto src = flat<std::string>();
    auto dst = t.flat<std::string>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (TotalBytes()) {
    std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

std::string Tensor::DebugString(int max_values) const {
  if (!IsInitialized()) return "<uninitialized tensor>";
  std::ostringstream os;
  os << DataTypeName(dtype_) << shape_.ToString();
  const int64_t n = std::min<int64_t>(NumElements(), max_values);
  if (n == 0) return os.str();
  os << " {";
  DispatchAll(dtype_, "DebugString", [&]<typename T>() {
    const T* d = data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (i) os << ", ";
      if constexpr (std::is_same_v<T, uint8_t>) {
        os << static_cast<int>(d[i]);
      } else {
        os << d[i];
      }
    }
    return Status::OK();
  }).IgnoreError();
  if (NumElements() > n) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace tw
