#include "towerflow/core/types.h"

namespace tw {

const std::vector<DataType>& AllDataTypes() {
  static const std::vector<DataType> kAll = {kFloat32, kFloat64, kInt32, kInt64,
                                             kUInt8,   kBool,    kString};
  return kAll;
}

std::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "float";
    case DataType::kFloat64: return "double";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    case DataType::kString: return "string";
    case DataType::kInvalid: break;
  }
  return "invalid";
}

StatusOr<DataType> ParseDataType(std::string_view name) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  for (DataType t : AllDataTypes()) {
    if (DataTypeName(t) == name) return t;
  }
  return errors::InvalidArgument("unknown dtype '", name,
                                 "' (expected float, double, int32, int64, uint8, bool or string)");
}

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
    case DataType::kUInt8: return 1;
    case DataType::kBool: return 1;
    case DataType::kString: return sizeof(std::string);
    case DataType::kInvalid: break;
  }
  return 0;
}

bool IsFloating(DataType dtype) { return dtype == kFloat32 || dtype == kFloat64; }
bool IsInteger(DataType dtype) {
  return dtype == kInt32 || dtype == kInt64 || dtype == kUInt8;
}

}  // namespace tw
