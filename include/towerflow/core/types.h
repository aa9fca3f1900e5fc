// DataType: the element types a Tensor can hold, with their names and sizes.
//
// Names follow TensorFlow's ("float32" prints as "float", as TF's DataTypeString
// does, so placement logs and errors read the same). Plain values; thread-safe.
#ifndef TOWERFLOW_CORE_TYPES_H_
#define TOWERFLOW_CORE_TYPES_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "towerflow/core/status.h"

namespace tw {

enum class DataType : uint8_t {
  kInvalid = 0,
  kFloat32,
  kFloat64,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kString,
};

inline constexpr DataType kFloat32 = DataType::kFloat32;
inline constexpr DataType kFloat64 = DataType::kFloat64;
inline constexpr DataType kInt32 = DataType::kInt32;
inline constexpr DataType kInt64 = DataType::kInt64;
inline constexpr DataType kUInt8 = DataType::kUInt8;
inline constexpr DataType kBool = DataType::kBool;
inline constexpr DataType kString = DataType::kString;

// All valid types, in enum order.
const std::vector<DataType>& AllDataTypes();

// "float", "double", "int32", "int64", "uint8", "bool", "string".
std::string_view DataTypeName(DataType dtype);
// Accepts the names above and "float32", "float64". InvalidArgument otherwise.
StatusOr<DataType> ParseDataType(std::string_view name);
// Bytes per element; sizeof(std::string) for kString (elements are objects).
size_t DataTypeSize(DataType dtype);
bool IsFloating(DataType dtype);
bool IsInteger(DataType dtype);

// Maps C++ types to DataType: DataTypeOf<float>() == kFloat32.
template <typename T>
constexpr DataType DataTypeOf();
template <> constexpr DataType DataTypeOf<float>() { return kFloat32; }
template <> constexpr DataType DataTypeOf<double>() { return kFloat64; }
template <> constexpr DataType DataTypeOf<int32_t>() { return kInt32; }
template <> constexpr DataType DataTypeOf<int64_t>() { return kInt64; }
template <> constexpr DataType DataTypeOf<uint8_t>() { return kUInt8; }
template <> constexpr DataType DataTypeOf<bool>() { return kBool; }
template <> constexpr DataType DataTypeOf<std::string>() { return kString; }

#define TW_TYPE_CASE(ENUM, TYPE) \
  case ENUM:                     \
    return fn.template operator()<TYPE>();

// Calls fn.template operator()<T>() with T the C++ type of `dtype`; returns
// Unimplemented naming `what` for a type outside the listed set.
template <typename Fn>
Status DispatchNumeric(DataType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    TW_TYPE_CASE(DataType::kFloat32, float)
    TW_TYPE_CASE(DataType::kFloat64, double)
    TW_TYPE_CASE(DataType::kInt32, int32_t)
    TW_TYPE_CASE(DataType::kInt64, int64_t)
    TW_TYPE_CASE(DataType::kUInt8, uint8_t)
    default:
      return errors::Unimplemented(what, " has no kernel for dtype ", DataTypeName(dtype));
  }
}

template <typename Fn>
Status DispatchFloat(DataType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    TW_TYPE_CASE(DataType::kFloat32, float)
    TW_TYPE_CASE(DataType::kFloat64, double)
    default:
      return errors::Unimplemented(what, " has no kernel for dtype ", DataTypeName(dtype));
  }
}

template <typename Fn>
Status DispatchAll(DataType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    TW_TYPE_CASE(DataType::kFloat32, float)
    TW_TYPE_CASE(DataType::kFloat64, double)
    TW_TYPE_CASE(DataType::kInt32, int32_t)
    TW_TYPE_CASE(DataType::kInt64, int64_t)
    TW_TYPE_CASE(DataType::kUInt8, uint8_t)
    TW_TYPE_CASE(DataType::kBool, bool)
    TW_TYPE_CASE(DataType::kString, std::string)
    default:
      return errors::Unimplemented(what, " has no kernel for dtype ", DataTypeName(dtype));
  }
}
#undef TW_TYPE_CASE

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_CORE_TYPES_H_
