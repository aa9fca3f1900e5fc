#include "towerflow/graph/attr_value.h"

namespace tw {

std::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kBool: return "bool";
    case AttrType::kString: return "string";
    case AttrType::kType: return "type";
    case AttrType::kShape: return "shape";
    case AttrType::kIntList: return "list(int)";
    case AttrType::kTypeList: return "list(type)";
    case AttrType::kTensor: return "tensor";
    case AttrType::kFloatList: return "list(float)";
  }
  return "?";
}

AttrType AttrTypeOf(const AttrValue& value) {
  return static_cast<AttrType>(value.index());
}

std::string AttrValueToString(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(DataType v) const { return std::string(DataTypeName(v)); }
    std::string operator()(const PartialShape& v) const { return v.ToString(); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<DataType>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::string(DataTypeName(v[i]));
      return s + "]";
    }
    std::string operator()(const Tensor& v) const { return v.DebugString(4); }
    std::string operator()(const std::vector<double>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace tw
