// Internal to train/safetensors: the per-tensor checksums towerflow keeps in a
// safetensors file's metadata, "crc32c:<tensor name>" = the CRC32C of the
// tensor's bytes as 8 lowercase hex digits (safetensors.h; docs/formats.md).
// Do not change: on-disk format. Pure functions; thread-safe.
#ifndef TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_CHECKSUMS_H_
#define TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_CHECKSUMS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "towerflow/core/tensor.h"

namespace tw::train::internal {

inline constexpr std::string_view kChecksumPrefix = "crc32c:";

// 8 lowercase hex digits.
std::string HexCrc(uint32_t crc);
// The value of exactly 8 lowercase hex digits; nullopt for anything else.
std::optional<uint32_t> ParseHexCrc(std::string_view text);
// The CRC32C (unmasked) of the tensor's bytes; 0 for an empty tensor.
uint32_t TensorCrc(const Tensor& t);
// `metadata` with "crc32c:<name>" added for every tensor.
std::map<std::string, std::string> WithChecksums(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                                 std::map<std::string, std::string> metadata);

}  // namespace tw::train::internal

#endif  // TOWERFLOW_TRAIN_INTERNAL_SAFETENSORS_CHECKSUMS_H_
