#include "convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <vector>

namespace tw::python {

using namespace nb::literals;

void RegisterStatusTranslator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      // towerflow.errors makes the instance: its class is chosen by the code,
      // as TF's errors.exception_type_from_error_code does.
      nb::object errors = nb::module_::import_("towerflow.errors");
      nb::object exc = errors.attr("_from_status")(static_cast<int>(e.status().code()), e.status().message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
}

DataType DataTypeFromName(const std::string& name) { return ValueOrThrow(ParseDataType(name)); }

std::string DataTypeToName(DataType dtype) {
  switch (dtype) {
    case kFloat32:
      return "float32";
    case kFloat64:
      return "float64";
    default:
      return std::string(DataTypeName(dtype));
  }
}

namespace {

nb::dlpack::dtype DlpackType(DataType dtype) {
  using nb::dlpack::dtype_code;
  switch (dtype) {
    case kFloat32:
      return nb::dtype<float>();
    case kFloat64:
      return nb::dtype<double>();
    case kInt32:
      return nb::dtype<int32_t>();
    case kInt64:
      return nb::dtype<int64_t>();
    case kUInt8:
      return nb::dtype<uint8_t>();
    case kBool:
      return nb::dtype<bool>();
    default:
      throw StatusError(errors::Unimplemented("no NumPy type for ", DataTypeName(dtype)));
  }
}

nb::object Numpy() { return nb::module_::import_("numpy"); }

std::vector<size_t> Dims(const Tensor& t) {
  std::vector<size_t> dims;
  for (int i = 0; i < t.rank(); ++i) dims.push_back(static_cast<size_t>(t.dim(i)));
  return dims;
}

nb::object ShapeTuple(const Tensor& t) {
  nb::list dims;
  for (int i = 0; i < t.rank(); ++i) dims.append(t.dim(i));
  return nb::tuple(dims);
}

// Copies a C-contiguous array of `dtype` into a new host tensor.
Tensor FromArray(nb::handle array, DataType dtype) {
  auto a = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(array);
  std::vector<int64_t> dims;
  for (size_t i = 0; i < a.ndim(); ++i) dims.push_back(static_cast<int64_t>(a.shape(i)));
  Tensor t(dtype, TensorShape(dims));
  if (a.nbytes() != t.TotalBytes()) {
    throw StatusError(errors::Internal("array of ", a.nbytes(), " bytes for a tensor of ", t.TotalBytes()));
  }
  if (t.TotalBytes() > 0) std::memcpy(t.raw_data(), a.data(), t.TotalBytes());
  return t;
}

Tensor StringsFromObjectArray(nb::handle array) {
  nb::object arr = Numpy().attr("asarray")(array, "dtype"_a = "object");
  nb::tuple shape = nb::cast<nb::tuple>(arr.attr("shape"));
  std::vector<int64_t> dims;
  for (nb::handle d : shape) dims.push_back(nb::cast<int64_t>(d));
  Tensor t(kString, TensorShape(dims));
  nb::list flat = nb::cast<nb::list>(arr.attr("ravel")().attr("tolist")());
  std::string* out = t.data<std::string>();
  size_t i = 0;
  for (nb::handle item : flat) {
    if (PyBytes_Check(item.ptr())) {
      char* data = nullptr;
      Py_ssize_t size = 0;
      PyBytes_AsStringAndSize(item.ptr(), &data, &size);
      out[i].assign(data, static_cast<size_t>(size));
    } else if (PyUnicode_Check(item.ptr())) {
      out[i] = nb::cast<std::string>(item);
    } else {
      throw StatusError(errors::InvalidArgument("a string tensor takes bytes or str, not ",
                                                nb::cast<std::string>(nb::str(item.type().attr("__name__")))));
    }
    ++i;
  }
  return t;
}

}  // namespace

nb::object TensorToNumpy(const Tensor& tensor) {
  if (tensor.dtype() == kString) {
    nb::list items;
    for (const std::string& s : tensor.flat<std::string>()) items.append(nb::bytes(s.data(), s.size()));
    nb::object arr = Numpy().attr("empty")(tensor.NumElements(), "dtype"_a = "object");
    arr.attr("__setitem__")(nb::slice(nb::none(), nb::none(), nb::none()), items);
    return arr.attr("reshape")(ShapeTuple(tensor));
  }
  // The array owns a copy of the Tensor handle: the buffer lives as long as it.
  auto* owner = new Tensor(tensor);
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> dims = Dims(tensor);
  nb::ndarray<nb::numpy> array(tensor.raw_data(), dims.size(), dims.data(), capsule, nullptr,
                               DlpackType(tensor.dtype()));
  nb::object out = nb::cast(array, nb::rv_policy::reference);
  // A 64-bit integer comes out of DLPack as NumPy's 'longlong' ('q'), which
  // on LP64 is not the type np.int64 names ('l'): its scalars would fail
  // isinstance(x, np.int64) where TensorFlow's pass. A view, no copy.
  if (tensor.dtype() == kInt64) out = out.attr("view")("int64");
  return out;
}

Tensor TensorFromPython(nb::handle value, DataType dtype) {
  if (dtype == kString) return StringsFromObjectArray(value);
  // asarray(order="C"), not ascontiguousarray, which makes 0-d arrays 1-d.
  nb::object arr = Numpy().attr("asarray")(value, "dtype"_a = DataTypeToName(dtype), "order"_a = "C");
  return FromArray(arr, dtype);
}

Tensor TensorFromPythonAnyType(nb::handle value) {
  nb::object arr = Numpy().attr("asarray")(value);
  std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
  if (kind == "O" || kind == "S" || kind == "U") return StringsFromObjectArray(arr);
  std::string name = nb::cast<std::string>(arr.attr("dtype").attr("name"));
  StatusOr<DataType> dtype = ParseDataType(name);
  if (!dtype.ok()) {
    throw StatusError(errors::InvalidArgument("towerflow has no tensor type for NumPy's ", name,
                                              " (float32, float64, int32, int64, uint8, bool, string)"));
  }
  return TensorFromPython(arr, *dtype);
}

}  // namespace tw::python
