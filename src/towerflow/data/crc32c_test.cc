#include "towerflow/data/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tw {
namespace {

// Each implementation under test, with a name for failure messages.
struct Impl {
  const char* name;
  uint32_t (*extend)(uint32_t, const uint8_t*, size_t);
};

std::vector<Impl> Impls() {
  std::vector<Impl> impls = {{"dispatch", &Crc32cExtend}, {"portable", &internal::Crc32cExtendPortable}};
  if (internal::Crc32cHardwareSupported()) {
    impls.push_back({"sse4.2", &internal::Crc32cExtendHardware});
  }
  return impls;
}

// RFC 3720 section B.4, as in TF's and LevelDB's crc32c_test.cc.
TEST(Crc32cTest, StandardResults) {
  uint8_t buf[32];
  for (const Impl& impl : Impls()) {
    SCOPED_TRACE(impl.name);
    std::memset(buf, 0, sizeof(buf));
    EXPECT_EQ(0x8a9136aau, impl.extend(0, buf, sizeof(buf)));

    std::memset(buf, 0xff, sizeof(buf));
    EXPECT_EQ(0x62a8ab43u, impl.extend(0, buf, sizeof(buf)));

    for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(0x46dd794eu, impl.extend(0, buf, sizeof(buf)));

    for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
    EXPECT_EQ(0x113fdb5cu, impl.extend(0, buf, sizeof(buf)));

    const uint8_t pdu[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(0xd9963a56u, impl.extend(0, pdu, sizeof(pdu)));

    // The catalogue check value of CRC-32C.
    const char* check = "123456789";
    EXPECT_EQ(0xe3069283u, impl.extend(0, reinterpret_cast<const uint8_t*>(check), 9));
    EXPECT_EQ(0u, impl.extend(0, nullptr, 0));
  }
}

TEST(Crc32cTest, Values) {
  EXPECT_NE(Crc32cValue("a"), Crc32cValue("foo"));
  EXPECT_EQ(Crc32cValue("hello world"), Crc32cExtend(Crc32cValue("hello "), "world"));
}

TEST(Crc32cTest, Mask) {
  const uint32_t crc = Crc32cValue("foo");
  EXPECT_NE(crc, MaskCrc(crc));
  EXPECT_NE(crc, MaskCrc(MaskCrc(crc)));
  EXPECT_EQ(crc, UnmaskCrc(MaskCrc(crc)));
  EXPECT_EQ(crc, UnmaskCrc(UnmaskCrc(MaskCrc(MaskCrc(crc)))));
  // By hand: rotating 0 gives 0, plus the delta.
  EXPECT_EQ(0xa282ead8u, MaskCrc(0));
  // 0x00008000 rotated right by 15 is 1.
  EXPECT_EQ(0xa282ead9u, MaskCrc(0x00008000u));
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const uint32_t c = rng();
    ASSERT_EQ(c, UnmaskCrc(MaskCrc(c)));
  }
}

// The SSE4.2 path (with its three-stripe combine above 768 bytes) must agree
// with the portable tables at every length, alignment and starting CRC.
TEST(Crc32cTest, HardwareMatchesPortable) {
  if (!internal::Crc32cHardwareSupported()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(42);
  std::vector<uint8_t> buf((1 << 20) + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 2400; ++n) lengths.push_back(n);
  for (size_t n : {3071u, 3072u, 3073u, 65535u, 65536u, 100001u, 1u << 20}) lengths.push_back(n);
  for (size_t n : lengths) {
    for (size_t align = 0; align < 8; ++align) {
      if (n > 2400 && align % 3 != 0) continue;
      const uint32_t init = (align & 1) ? static_cast<uint32_t>(rng()) : 0;
      const uint8_t* p = buf.data() + align;
      ASSERT_EQ(internal::Crc32cExtendPortable(init, p, n), internal::Crc32cExtendHardware(init, p, n))
          << "length " << n << " alignment " << align;
    }
  }
}

// Extending piecewise equals one pass, for every split point (crossing the
// stripe boundaries of the hardware path).
TEST(Crc32cTest, ExtendAtEverySplit) {
  std::mt19937 rng(3);
  std::vector<uint8_t> buf(2500);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (const Impl& impl : Impls()) {
    SCOPED_TRACE(impl.name);
    const uint32_t whole = impl.extend(0, buf.data(), buf.size());
    for (size_t split = 0; split <= buf.size(); ++split) {
      const uint32_t first = impl.extend(0, buf.data(), split);
      ASSERT_EQ(whole, impl.extend(first, buf.data() + split, buf.size() - split)) << split;
    }
  }
}

}  // namespace
}  // namespace tw
