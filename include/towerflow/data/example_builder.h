// ExampleBuilder: builds one tf.train.Example (data/proto/example.proto, TF's
// schema and field numbers) and serializes it, so that a program writes the
// records TF and towerflow read without including generated protobuf headers:
//
//   tw::io::ExampleBuilder ex;
//   ex.SetBytes("image_raw", pixels).SetInt64("label", {7}).SetFloat("weight", {0.5f});
//   TW_ASSIGN_OR_RETURN(std::string record, ex.Serialize());
//   TW_RETURN_IF_ERROR(writer->WriteRecord(record));   // data/record_writer.h
//
// Each Set* replaces the feature of that key (kind and values), as assigning
// a tf.train.Feature does; features are serialized in key order, so equal
// builders give equal bytes. A plain value, not thread-safe; Clear() reuses it.
#ifndef TOWERFLOW_DATA_EXAMPLE_BUILDER_H_
#define TOWERFLOW_DATA_EXAMPLE_BUILDER_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "towerflow/core/status.h"

namespace tw::io {

class ExampleBuilder {
 public:
  // A bytes_list feature: one value (an encoded image, raw pixels) or several.
  ExampleBuilder& SetBytes(std::string_view key, std::string_view value);
  ExampleBuilder& SetBytes(std::string_view key, const std::vector<std::string>& values);
  // An int64_list feature.
  ExampleBuilder& SetInt64(std::string_view key, std::span<const int64_t> values);
  ExampleBuilder& SetInt64(std::string_view key, std::initializer_list<int64_t> values);
  // A float_list feature.
  ExampleBuilder& SetFloat(std::string_view key, std::span<const float> values);
  ExampleBuilder& SetFloat(std::string_view key, std::initializer_list<float> values);

  // Removes every feature.
  void Clear() { features_.clear(); }
  bool empty() const { return features_.empty(); }
  int num_features() const { return static_cast<int>(features_.size()); }

  // The serialized Example. InvalidArgument naming the key when a key is not
  // valid UTF-8 (proto3 map keys are strings: TF and libprotobuf reject the
  // record otherwise).
  StatusOr<std::string> Serialize() const;

 private:
  using Values = std::variant<std::vector<std::string>, std::vector<int64_t>, std::vector<float>>;
  std::map<std::string, Values, std::less<>> features_;
};

}  // namespace tw::io

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_EXAMPLE_BUILDER_H_
