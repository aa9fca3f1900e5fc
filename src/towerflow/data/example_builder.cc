#include "towerflow/data/example_builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "example.pb.h"

namespace tw::io {
namespace {

// UTF-8 as proto3 requires of string fields: no overlong forms, no surrogates,
// nothing past U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (static_cast<size_t>(extra) >= s.size() - i) return false;  // truncated sequence
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

}  // namespace

ExampleBuilder& ExampleBuilder::SetBytes(std::string_view key, std::string_view value) {
  features_.insert_or_assign(std::string(key), std::vector<std::string>{std::string(value)});
  return *this;
}

ExampleBuilder& ExampleBuilder::SetBytes(std::string_view key, const std::vector<std::string>& values) {
  features_.insert_or_assign(std::string(key), values);
  return *this;
}

ExampleBuilder& ExampleBuilder::SetInt64(std::string_view key, std::span<const int64_t> values) {
  features_.insert_or_assign(std::string(key), std::vector<int64_t>(values.begin(), values.end()));
  return *this;
}

ExampleBuilder& ExampleBuilder::SetInt64(std::string_view key, std::initializer_list<int64_t> values) {
  return SetInt64(key, std::span<const int64_t>(values.begin(), values.size()));
}

ExampleBuilder& ExampleBuilder::SetFloat(std::string_view key, std::span<const float> values) {
  features_.insert_or_assign(std::string(key), std::vector<float>(values.begin(), values.end()));
  return *this;
}

ExampleBuilder& ExampleBuilder::SetFloat(std::string_view key, std::initializer_list<float> values) {
  return SetFloat(key, std::span<const float>(values.begin(), values.size()));
}

StatusOr<std::string> ExampleBuilder::Serialize() const {
  tensorflow::Example example;
  auto& map = *example.mutable_features()->mutable_feature();
  for (const auto& [key, values] : features_) {
    if (!IsValidUtf8(key)) {
      return errors::InvalidArgument("Example feature key '", key,
                                     "' is not valid UTF-8 (tf.train.Example keys are proto3 strings)");
    }
    tensorflow::Feature& feature = map[key];
    if (const auto* bytes = std::get_if<std::vector<std::string>>(&values)) {
      auto* list = feature.mutable_bytes_list();
      for (const std::string& v : *bytes) list->add_value(v);
    } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&values)) {
      feature.mutable_int64_list()->mutable_value()->Add(ints->begin(), ints->end());
    } else {
      const auto& floats = std::get<std::vector<float>>(values);
      feature.mutable_float_list()->mutable_value()->Add(floats.begin(), floats.end());
    }
  }
  // Deterministic: map entries in key order, so equal builders give equal bytes.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!example.SerializeToCodedStream(&coded)) {
      return errors::Internal("serializing a tf.train.Example failed");
    }
  }
  return out;
}

}  // namespace tw::io
