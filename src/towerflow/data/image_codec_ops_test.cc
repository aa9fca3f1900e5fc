// The image codec ops (data/image_codec_ops.cc over
// data/internal/image_codecs.h): PNG round trips bit for bit in every channel
// count, JPEG round trips within its loss, DecodeImage telling the formats
// apart, and bad data (empty, truncated, corrupt, other formats, headers that
// claim huge images) giving InvalidArgument that names what failed, without
// allocating for the claimed size. tests/python/tf1_image_test.py compares
// the decoded pixels with TensorFlow's.
#include "towerflow/data/image_codec_ops.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "towerflow/data/internal/image_codecs.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw {
namespace {

// A smooth h x w x c test picture (h + w <= 97).
Tensor Picture(int64_t h, int64_t w, int64_t c) {
  Tensor t(kUInt8, TensorShape{h, w, c});
  uint8_t* p = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) p[(y * w + x) * c + k] = static_cast<uint8_t>(y * 2 + x * 2 + k * 30);
    }
  }
  return t;
}

class ImageCodecTest : public ::testing::Test {
 protected:
  StatusOr<Tensor> Run(const std::function<Output(const Scope&, const Output&)>& build, Tensor input) {
    Graph g;
    Scope s(g);
    Output in = Placeholder(s, input.dtype(), PartialShape::Unknown());
    Output out = build(s, in);
    if (!s.ok()) return s.status();
    Session sess(g);
    TW_ASSIGN_OR_RETURN(std::vector<Tensor> r, sess.Run({{in, std::move(input)}}, {out}));
    return r[0];
  }
  std::string Encode(const Tensor& image, bool png) {
    auto r = Run([png](const Scope& s, const Output& x) { return png ? io::EncodePng(s, x) : io::EncodeJpeg(s, x); },
                 image);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->data<std::string>()[0] : std::string();
  }
  StatusOr<Tensor> Decode(std::string bytes, const std::function<Output(const Scope&, const Output&)>& decode) {
    return Run(decode, Tensor::Scalar<std::string>(std::move(bytes)));
  }
};

Output Png(const Scope& s, const Output& x) { return io::DecodePng(s, x); }
Output Jpeg(const Scope& s, const Output& x) { return io::DecodeJpeg(s, x); }
Output Image(const Scope& s, const Output& x) { return io::DecodeImage(s, x); }

void ExpectError(const StatusOr<Tensor>& r, const std::string& text) {
  ASSERT_FALSE(r.ok()) << "decoded where " << text << " was expected";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().ToString();
}

TEST_F(ImageCodecTest, PngRoundTripsInEveryChannelCount) {
  for (int64_t c = 1; c <= 4; ++c) {
    const Tensor picture = Picture(13, 21, c);
    const std::string png = Encode(picture, true);
    auto back = Decode(png, Png);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->shape(), picture.shape());
    EXPECT_EQ(back->ToVector<uint8_t>(), picture.ToVector<uint8_t>()) << c << " channels";
    auto any = Decode(png, Image);
    ASSERT_TRUE(any.ok()) << any.status().ToString();
    EXPECT_EQ(any->ToVector<uint8_t>(), picture.ToVector<uint8_t>());
  }
}

TEST_F(ImageCodecTest, EachDecoderReadsTheOtherFormatAsTFs) {
  const Tensor picture = Picture(6, 7, 3);
  auto png_as_jpeg = Decode(Encode(picture, true), Jpeg);
  ASSERT_TRUE(png_as_jpeg.ok()) << png_as_jpeg.status().ToString();
  EXPECT_EQ(png_as_jpeg->ToVector<uint8_t>(), picture.ToVector<uint8_t>());
  auto jpeg_as_png = Decode(Encode(picture, false), Png);
  ASSERT_TRUE(jpeg_as_png.ok()) << jpeg_as_png.status().ToString();
  EXPECT_EQ(jpeg_as_png->shape(), picture.shape());
}

TEST_F(ImageCodecTest, PngChannelsConvertAsAsked) {
  const std::string rgb = Encode(Picture(4, 5, 3), true);
  auto rgba = Decode(rgb, [](const Scope& s, const Output& x) { return io::DecodePng(s, x, 4); });
  ASSERT_TRUE(rgba.ok()) << rgba.status().ToString();
  ASSERT_EQ(rgba->shape(), TensorShape({4, 5, 4}));
  EXPECT_EQ(rgba->data<uint8_t>()[3], 255);  // opaque alpha added
  EXPECT_EQ(rgba->data<uint8_t>()[4 + 1], Picture(4, 5, 3).data<uint8_t>()[3 + 1]);
  auto gray = Decode(rgb, [](const Scope& s, const Output& x) { return io::DecodePng(s, x, 1); });
  ASSERT_TRUE(gray.ok()) << gray.status().ToString();
  ASSERT_EQ(gray->shape(), TensorShape({4, 5, 1}));
  // Pixel (0, 0) is (0, 30, 60): 0.299 * 0 + 0.587 * 30 + 0.114 * 60 = 24.4.
  EXPECT_NEAR(gray->data<uint8_t>()[0], 24, 1);
  auto expanded = Decode(Encode(Picture(4, 5, 1), true), [](const Scope& s, const Output& x) {
    return io::DecodePng(s, x, 3);
  });
  ASSERT_TRUE(expanded.ok()) << expanded.status().ToString();
  EXPECT_EQ(expanded->data<uint8_t>()[5 * 3 + 0], expanded->data<uint8_t>()[5 * 3 + 2]);
}

TEST_F(ImageCodecTest, JpegRoundTripsWithinItsLoss) {
  for (int64_t c : {1, 3}) {
    const Tensor picture = Picture(33, 47, c);
    const std::string jpeg = Encode(picture, false);
    ASSERT_EQ(jpeg.substr(0, 3), "\xff\xd8\xff");
    for (auto decode : {Jpeg, Image}) {
      auto back = Decode(jpeg, decode);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      ASSERT_EQ(back->shape(), picture.shape());
      double err = 0;
      for (int64_t i = 0; i < picture.NumElements(); ++i) {
        err += std::abs(static_cast<int>(back->data<uint8_t>()[i]) - static_cast<int>(picture.data<uint8_t>()[i]));
      }
      EXPECT_LT(err / static_cast<double>(picture.NumElements()), 3.0) << c << " channels";
    }
  }
  // Half the size while decoding; gray from color.
  auto half = Decode(Encode(Picture(32, 48, 3), false), [](const Scope& s, const Output& x) {
    io::DecodeJpegOptions o;
    o.ratio = 2;
    o.channels = 1;
    return io::DecodeJpeg(s, x, o);
  });
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(half->shape(), TensorShape({16, 24, 1}));
}

TEST_F(ImageCodecTest, TruncatedJpegFailsUnlessRecoveryIsAsked) {
  const std::string jpeg = Encode(Picture(64, 64, 3), false);
  const std::string cut = jpeg.substr(0, jpeg.size() / 2);
  ExpectError(Decode(cut, Jpeg), "Premature end of JPEG data");
  auto recovered = Decode(cut, [](const Scope& s, const Output& x) {
    io::DecodeJpegOptions o;
    o.try_recover_truncated = true;
    o.acceptable_fraction = 0.25;
    return io::DecodeJpeg(s, x, o);
  });
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(recovered->shape(), TensorShape({64, 64, 3}));
  ExpectError(Decode(jpeg.substr(0, 200), Jpeg), "Invalid JPEG data");
}

// A header cut inside its markers, with recovery asked for: the fake end
// marker is given once, then the decoder stops (found by fuzz_image_decode: a
// source that answered "more data" without any made libjpeg ask forever).
TEST_F(ImageCodecTest, RecoveryFromACutHeaderEnds) {
  const std::string cut(
      "\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46\x00\x01\x01\x01\x01\x2c\x21\x2c\x00\x00\xff\xdb\x00\x43"
      "\x00\x06\x04\x05\x06\x05\x04\x06\x06\x05\x06\x07\x07\x06\x08\x0a\x10\x0a\x0a\x02\x00\x89\x50\x4e"
      "\x30\x47\x0d\x0a\x1a\x28\x30\x25\x28\x29\x28\xff\xc0\x00\x0b\xfd\x00\x0c\x00\x0a\x01\x01\x11\x00"
      "\xff\xc4\x00\x1f\x00\x00\x01\x05\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02"
      "\x03\x04\x05\x06\x07\x08\x09\x01\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff",
      114);
  auto r = Decode(cut, [](const Scope& s, const Output& x) {
    io::DecodeJpegOptions o;
    o.try_recover_truncated = true;
    o.ratio = 2;
    return io::DecodeJpeg(s, x, o);
  });
  ExpectError(r, "Invalid JPEG data");
}

// Every cut of a baseline and a progressive JPEG, recovery asked: each
// decodes or fails, none makes libjpeg ask for data forever (TF's decoder
// hangs on some cuts of progressive files). The codec is called directly, so
// a thousand cuts take milliseconds.
TEST_F(ImageCodecTest, RecoveryFromEveryCutEnds) {
  const Tensor picture = Picture(20, 24, 3);
  for (bool progressive : {false, true}) {
    image_codec::JpegEncodeOptions e;
    e.progressive = progressive;
    auto jpeg = image_codec::EncodeJpeg(picture.data<uint8_t>(), 20, 24, 3, e);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
    int decoded = 0;
    for (size_t cut = 2; cut < jpeg->size(); ++cut) {
      image_codec::JpegOptions o;
      o.try_recover_truncated = true;
      o.acceptable_fraction = 0;
      std::vector<uint8_t> pixels;
      const Status s = image_codec::DecodeJpeg(std::string_view(*jpeg).substr(0, cut), o,
                                               [&](int64_t h, int64_t w, int64_t c) -> StatusOr<void*> {
                                                 pixels.resize(static_cast<size_t>(h * w * c));
                                                 return static_cast<void*>(pixels.data());
                                               });
      EXPECT_TRUE(s.ok() || s.code() == Code::kInvalidArgument) << cut << ": " << s.ToString();
      decoded += s.ok() ? 1 : 0;
    }
    EXPECT_GT(decoded, 0) << (progressive ? "progressive" : "baseline");
  }
}

TEST_F(ImageCodecTest, BadDataIsAnErrorNamingIt) {
  ExpectError(Decode("", Jpeg), "Input is empty");
  ExpectError(Decode("", Image), "Input is empty");
  ExpectError(Decode("hello, world", Image), "Unknown image file format");
  ExpectError(Decode("GIF89a\x01\x00\x01\x00", Image), "GIF images are not decoded");
  ExpectError(Decode("hello, world", Jpeg), "Unknown image file format");
  ExpectError(Decode("hello, world", Png), "Unknown image file format");
  ExpectError(Decode(Encode(Picture(4, 4, 3), false), [](const Scope& s, const Output& x) {
                return io::DecodeImage(s, x, 4);
              }),
              "JPEG does not support 4 channels");
  std::string png = Encode(Picture(16, 16, 3), true);
  ExpectError(Decode(png.substr(0, png.size() - 30), Png), "Invalid PNG data");
  png[png.size() / 2] = static_cast<char>(png[png.size() / 2] ^ 0x55);  // fails the IDAT chunk's CRC
  ExpectError(Decode(png, Png), "Invalid PNG data");
  // Attrs out of range are refused when the kernel is made.
  ExpectError(Decode(Encode(Picture(8, 8, 3), false),
                     [](const Scope& s, const Output& x) {
                       io::DecodeJpegOptions o;
                       o.ratio = 3;
                       return io::DecodeJpeg(s, x, o);
                     }),
              "ratio must be 1, 2, 4, or 8");
  auto encoded = Run([](const Scope& s, const Output& x) { return io::EncodeJpeg(s, x); }, Picture(4, 4, 2));
  ExpectError(encoded, "must have 1 or 3 channels");
}

// Writes a big-endian 32-bit value.
void Put32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + static_cast<size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
}

TEST_F(ImageCodecTest, HeadersClaimingHugeImagesAreRefusedBeforeAllocating) {
  // PNG: IHDR (at byte 8: length, "IHDR", width, height, ...) says 60000 x 60000.
  std::string png = Encode(Picture(8, 8, 3), true);
  Put32(png, 16, 60000);
  Put32(png, 20, 60000);
  const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17));
  Put32(png, 29, crc);
  ExpectError(Decode(png, Png), "exceeds 2147483648 bytes");
  // JPEG: the SOF0 marker's height and width (after FF C0, length, precision).
  std::string jpeg = Encode(Picture(8, 8, 3), false);
  const size_t sof = jpeg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t at : {sof + 5, sof + 7}) {
    jpeg[at] = static_cast<char>(0xFD);
    jpeg[at + 1] = static_cast<char>(0xE8);  // 65000
  }
  ExpectError(Decode(jpeg, Jpeg), "exceeds 536870912 bytes");
}

}  // namespace
}  // namespace tw
