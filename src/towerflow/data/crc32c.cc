#include "towerflow/data/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TW_CRC32C_X86 1
#include <nmmintrin.h>
#endif

namespace tw {
namespace {

// Reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed).
constexpr uint32_t kPoly = 0x82f63b78u;

// Slicing-by-8: table[0] is the classic byte-at-a-time table; table[k][b] is the
// CRC of byte b followed by k zero bytes, so eight table lookups consume one
// 64-bit word with no dependency between them.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

// Byte order independent; compiles to one load on little-endian hosts.
inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

namespace internal {

uint32_t Crc32cExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  uint32_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = kTables[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
  while (n >= 8) {
    const uint64_t w = LoadLE64(p) ^ c;
    c = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
        kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
        kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = kTables[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
  return ~c;
}

#ifdef TW_CRC32C_X86

namespace {

// The crc32 instruction has a latency of 3 cycles and a throughput of 1, so one
// dependent chain runs at a third of the possible speed. Long buffers are cut
// into three stripes of kStripe bytes whose CRCs run as three independent chains,
// then combined: the register after stripe 0 must still be advanced over the
// 2 * kStripe bytes that follow it, and stripe 1's over kStripe. Advancing a
// register over zero bytes is linear over GF(2), so it is four table lookups
// (one per register byte) into tables built once from the instruction itself.
constexpr size_t kStripe = 256;

struct ShiftTables {
  uint32_t by_stripe[4][256];       // register advanced over kStripe zero bytes
  uint32_t by_two_stripes[4][256];  // ... over 2 * kStripe zero bytes
};

__attribute__((target("sse4.2"))) uint32_t AdvanceOverZeros(uint32_t reg, size_t n) {
  uint64_t c = reg;
  for (size_t i = 0; i < n; i += 8) c = _mm_crc32_u64(c, 0);
  return static_cast<uint32_t>(c);
}

const ShiftTables& Shifts() {
  static const ShiftTables tables = [] {
    ShiftTables t;
    for (int byte = 0; byte < 4; ++byte) {
      for (uint32_t v = 0; v < 256; ++v) {
        t.by_stripe[byte][v] = AdvanceOverZeros(v << (8 * byte), kStripe);
        t.by_two_stripes[byte][v] = AdvanceOverZeros(v << (8 * byte), 2 * kStripe);
      }
    }
    return t;
  }();
  return tables;
}

inline uint32_t Shift(const uint32_t table[4][256], uint32_t reg) {
  return table[0][reg & 0xff] ^ table[1][(reg >> 8) & 0xff] ^ table[2][(reg >> 16) & 0xff] ^
         table[3][reg >> 24];
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

bool Crc32cHardwareSupported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return supported;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cExtendHardware(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = static_cast<uint32_t>(~crc);
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  if (n >= 3 * kStripe) {
    const ShiftTables& t = Shifts();
    do {
      uint64_t c1 = 0, c2 = 0;
      for (size_t i = 0; i < kStripe; i += 8) {
        c = _mm_crc32_u64(c, Load64(p + i));
        c1 = _mm_crc32_u64(c1, Load64(p + kStripe + i));
        c2 = _mm_crc32_u64(c2, Load64(p + 2 * kStripe + i));
      }
      c = Shift(t.by_two_stripes, static_cast<uint32_t>(c)) ^ Shift(t.by_stripe, static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
      p += 3 * kStripe;
      n -= 3 * kStripe;
    } while (n >= 3 * kStripe);
  }
  while (n >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(c);
}

#else  // !TW_CRC32C_X86

bool Crc32cHardwareSupported() { return false; }

uint32_t Crc32cExtendHardware(uint32_t crc, const uint8_t* p, size_t n) {
  return Crc32cExtendPortable(crc, p, n);
}

#endif  // TW_CRC32C_X86

}  // namespace internal

uint32_t Crc32cExtend(uint32_t crc, const uint8_t* data, size_t n) {
  using ExtendFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);
  static const ExtendFn extend =
      internal::Crc32cHardwareSupported() ? &internal::Crc32cExtendHardware : &internal::Crc32cExtendPortable;
  return extend(crc, data, n);
}

}  // namespace tw
