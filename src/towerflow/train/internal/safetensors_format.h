// Internal to train/safetensors: what the reader (safetensors.cc) and the
// writer (safetensors_write.cc) share of the format: the 8-byte length
// prefix, the metadata key, the dtype names, and the snippets of text that
// error messages quote. Pure functions; thread-safe.
#ifndef TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_FORMAT_H_
#define TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "towerflow/core/types.h"

namespace tw::train::internal {

inline constexpr uint64_t kPrefixBytes = 8;
inline constexpr char kMetadataKey[] = "__metadata__";
inline constexpr size_t kSnippetChars = 80;

// "F32", "F64", "I32", "I64", "U8", "BOOL"; nullopt for a dtype safetensors lacks.
std::optional<std::string_view> SafetensorsName(DataType dtype);
std::optional<DataType> FromSafetensorsName(std::string_view name);

// Text (a JSON value's, the parser's message) for an error message: at most
// kSnippetChars, with bytes outside printable ASCII as \xNN.
std::string Snippet(std::string_view text);

}  // namespace tw::train::internal

#endif  // TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_FORMAT_H_
