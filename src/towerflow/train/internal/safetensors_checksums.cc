#include "towerflow/train/internal/safetensors_checksums.h"

#include <cstdio>

#include "towerflow/data/crc32c.h"

namespace tw::train::internal {

std::string HexCrc(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", crc);
  return buf;
}

std::optional<uint32_t> ParseHexCrc(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    v = v << 4 | static_cast<uint32_t>(digit);
  }
  return v;
}

uint32_t TensorCrc(const Tensor& t) {
  return t.TotalBytes() > 0 ? Crc32cValue(static_cast<const uint8_t*>(t.raw_data()), t.TotalBytes()) : 0;
}

std::map<std::string, std::string> WithChecksums(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                                 std::map<std::string, std::string> metadata) {
  for (const auto& [name, t] : tensors) metadata[std::string(kChecksumPrefix) + name] = HexCrc(TensorCrc(t));
  return metadata;
}

}  // namespace tw::train::internal
