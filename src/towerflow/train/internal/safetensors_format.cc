#include "towerflow/train/internal/safetensors_format.h"

#include <array>

namespace tw::train::internal {
namespace {

struct DtypeName {
  DataType dtype;
  std::string_view name;
};
constexpr std::array<DtypeName, 6> kDtypeNames = {{{kFloat32, "F32"},
                                                   {kFloat64, "F64"},
                                                   {kInt32, "I32"},
                                                   {kInt64, "I64"},
                                                   {kUInt8, "U8"},
                                                   {kBool, "BOOL"}}};

}  // namespace

std::optional<std::string_view> SafetensorsName(DataType dtype) {
  for (const DtypeName& d : kDtypeNames) {
    if (d.dtype == dtype) return d.name;
  }
  return std::nullopt;
}

std::optional<DataType> FromSafetensorsName(std::string_view name) {
  for (const DtypeName& d : kDtypeNames) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

std::string Snippet(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < kSnippetChars; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > kSnippetChars) out += "...";
  return out;
}

}  // namespace tw::train::internal
