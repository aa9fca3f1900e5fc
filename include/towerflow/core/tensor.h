// Tensor: a typed, shaped n-dimensional array whose buffer comes from a device's
// Allocator.
//
// Copying a Tensor is cheap: copies share one reference-counted buffer (as TF's
// Tensor does), so a "copy" seen by two kernels is the same memory. Mutating a
// shared buffer is the caller's business (variables do it on purpose, under their
// own lock). String tensors hold std::string elements constructed in the buffer.
// A Tensor is thread-compatible; its buffer's lifetime is thread-safe.
#ifndef TOWERFLOW_CORE_TENSOR_H_
#define TOWERFLOW_CORE_TENSOR_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "towerflow/core/allocator.h"
#include "towerflow/core/logging.h"
#include "towerflow/core/tensor_shape.h"
#include "towerflow/core/types.h"

namespace tw {

class TensorBuffer {
 public:
  // Returns nullptr when the allocator is out of memory.
  static std::shared_ptr<TensorBuffer> Allocate(Allocator* allocator, DataType dtype,
                                                int64_t num_elements);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }

 private:
  TensorBuffer(Allocator* allocator, DataType dtype, void* data, size_t bytes, int64_t n)
      : allocator_(allocator), dtype_(dtype), data_(data), bytes_(bytes), num_elements_(n) {}
  Allocator* allocator_;
  DataType dtype_;
  void* data_;
  size_t bytes_;
  int64_t num_elements_;
};

class Tensor {
 public:
  Tensor() = default;  // uninitialized: dtype kInvalid, no buffer
  // Allocates from the host allocator; TW_CHECKs on exhaustion. For tests, tools
  // and small host tensors; kernels use OpKernelContext::AllocateOutput.
  Tensor(DataType dtype, const TensorShape& shape);
  // Allocates from `allocator`; ResourceExhausted naming the bytes on failure.
  static StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype, const TensorShape& shape);

  // Scalars and vectors from values: Tensor::Scalar(3.0f), Tensor::Vec<int32_t>({1,2}).
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(DataTypeOf<T>(), TensorShape{});
    t.data<T>()[0] = std::move(value);
    return t;
  }
  template <typename T>
  static Tensor Vec(const std::vector<T>& values) {
    return FromVector<T>(values, TensorShape{static_cast<int64_t>(values.size())});
  }
  // REQUIRES: values.size() == shape.num_elements().
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const TensorShape& shape) {
    Tensor t(DataTypeOf<T>(), shape);
    TW_CHECK(static_cast<int64_t>(values.size()) == shape.num_elements())
        << values.size() << " values for shape " << shape.ToString();
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  static Tensor String(const std::string& value) { return Scalar<std::string>(value); }

  bool IsInitialized() const { return dtype_ != DataType::kInvalid; }
  DataType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return shape_.num_elements(); }
  size_t TotalBytes() const { return static_cast<size_t>(NumElements()) * DataTypeSize(dtype_); }
  const std::shared_ptr<TensorBuffer>& buffer() const { return buffer_; }
  bool SharesBufferWith(const Tensor& other) const { return buffer_ && buffer_ == other.buffer_; }

  // REQUIRES: dtype() == DataTypeOf<T>() (TW_CHECKed).
  template <typename T>
  T* data() {
    TW_CHECK(DataTypeOf<T>() == dtype_) << "tensor of " << DataTypeName(dtype_) << " read as "
                                        << DataTypeName(DataTypeOf<T>());
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return const_cast<Tensor*>(this)->data<T>();
  }
  template <typename T>
  std::span<T> flat() {
    return {data<T>(), static_cast<size_t>(NumElements())};
  }
  template <typename T>
  std::span<const T> flat() const {
    return {data<T>(), static_cast<size_t>(NumElements())};
  }
  template <typename T>
  const T& scalar() const {
    return data<T>()[0];
  }
  template <typename T>
  std::vector<T> ToVector() const {
    auto f = flat<T>();
    return std::vector<T>(f.begin(), f.end());
  }
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }

  // Same buffer viewed with another shape of the same element count.
  // InvalidArgument naming both shapes otherwise.
  StatusOr<Tensor> Reshaped(const TensorShape& shape) const;
  // A new buffer with the same contents (from the same allocator).
  Tensor DeepCopy() const;

  // "float[2,3]" and, for small tensors, the values: "float[2] {1, 2}".
  std::string DebugString(int max_values = 8) const;

 private:
  DataType dtype_ = DataType::kInvalid;
  TensorShape shape_;
  std::shared_ptr<TensorBuffer> buffer_;
};

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_TENSOR_H_
