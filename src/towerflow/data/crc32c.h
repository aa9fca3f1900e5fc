// CRC32C (Castagnoli polynomial, RFC 3720) and the TFRecord CRC mask.
//
// Every TFRecord header and footer carries a *masked* CRC32C: the CRC of the
// length bytes or the payload, rotated and offset by kMaskDelta, because "it is
// problematic to compute the CRC of a string that contains embedded CRCs" (TF,
// LevelDB). Do not change: on-disk format (docs/formats.md).
//
// Crc32cExtend uses the SSE4.2 crc32 instruction when the CPU has it (chosen once
// at run time, so the build needs no -msse4.2) and a portable slicing-by-8 table
// otherwise; both give identical results. All functions are pure and thread-safe.
#ifndef TOWERFLOW_DATA_CRC32C_H_
#define TOWERFLOW_DATA_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tw {

// Returns the CRC32C of the concatenation A + data[0, n), where `crc` is the
// CRC32C of A. Crc32cExtend(0, data, n) is the CRC32C of data alone.
uint32_t Crc32cExtend(uint32_t crc, const uint8_t* data, size_t n);

// The CRC32C of data[0, n).
inline uint32_t Crc32cValue(const uint8_t* data, size_t n) { return Crc32cExtend(0, data, n); }
inline uint32_t Crc32cValue(std::string_view data) {
  return Crc32cExtend(0, reinterpret_cast<const uint8_t*>(data.data()), data.size());
}
inline uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  return Crc32cExtend(crc, reinterpret_cast<const uint8_t*>(data.data()), data.size());
}

// The TFRecord / LevelDB mask: rotate right by 15 bits, then add kMaskDelta
// (uint32 wrap-around). UnmaskCrc(MaskCrc(c)) == c for every c.
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

inline constexpr uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }

inline constexpr uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

namespace internal {

// The two implementations behind Crc32cExtend, exposed so that tests can check
// one against the other.
uint32_t Crc32cExtendPortable(uint32_t crc, const uint8_t* data, size_t n);
// True when this CPU has SSE4.2 (always false off x86-64).
bool Crc32cHardwareSupported();
// REQUIRES: Crc32cHardwareSupported().
uint32_t Crc32cExtendHardware(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace internal
}  // namespace tw

#endif  // TOWERFLOW_DATA_CRC32C_H_
