// Conversions between towerflow's C++ values and Python's: Status to the
// exceptions of towerflow.errors (TF1's tf.errors classes), DataType to and
// from its name, and Tensor to and from NumPy arrays.
//
// Fetched tensors become NumPy arrays over the tensor's own buffer (no copy:
// the array keeps the buffer alive); string tensors become object arrays of
// bytes. Fed arrays are copied once into a tensor of the host allocator.
#ifndef TOWERFLOW_PYTHON_CONVERT_H_
#define TOWERFLOW_PYTHON_CONVERT_H_

#include <nanobind/nanobind.h>

#include <string>

#include "towerflow/towerflow.h"

namespace tw::python {

namespace nb = nanobind;

// Thrown by the bindings for a non-OK Status; translated into the exception
// class of towerflow.errors for its code (InvalidArgumentError, ...).
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}
template <typename T>
T ValueOrThrow(StatusOr<T> value) {
  ThrowIfError(value.status());
  return std::move(value).value();
}

// Registers the StatusError translator (module init).
void RegisterStatusTranslator();

// "float32" / "float" ... -> DataType; InvalidArgument naming the name otherwise.
DataType DataTypeFromName(const std::string& name);
// "float32", "float64", "int32", "int64", "uint8", "bool", "string": NumPy's
// names (and TF's Python names) rather than the C++ log names.
std::string DataTypeToName(DataType dtype);

// A NumPy array of the tensor's contents. Numeric: a view of the tensor's
// buffer, which the array keeps alive. String: an object array of bytes.
nb::object TensorToNumpy(const Tensor& tensor);
// A tensor of `dtype` from any array-like value (a NumPy array, nested lists,
// a scalar; bytes or str for strings), converted as numpy.asarray does.
// InvalidArgument naming the value's dtype when it cannot convert.
Tensor TensorFromPython(nb::handle value, DataType dtype);
// As above, the dtype taken from the value (float64 for Python floats is kept:
// callers narrow as TF does, by passing a dtype).
Tensor TensorFromPythonAnyType(nb::handle value);

}  // namespace tw::python

#endif  // TOWERFLOW_PYTHON_CONVERT_H_
