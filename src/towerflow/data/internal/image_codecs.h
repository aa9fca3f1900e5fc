// JPEG and PNG decoding (and encoding) over Debian's libjpeg-turbo and libpng,
// with TensorFlow's settings and transforms, so that an image decodes to the
// bytes TF's DecodeJpeg / DecodePng give (tests/python/tf1_image_test.py
// checks it). Used by the image ops (data/image_ops.cc). A build without the
// libraries (CMake did not find them) compiles these functions to return
// Unimplemented naming the package to install. Stateless; thread-safe.
#ifndef TOWERFLOW_DATA_INTERNAL_IMAGE_CODECS_H_
#define TOWERFLOW_DATA_INTERNAL_IMAGE_CODECS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "towerflow/core/status.h"

namespace tw {
namespace image_codec {

// Where a decoder writes its pixels: called once the header has given the
// size, it returns a buffer of height * width * channels bytes, or an error
// (a failed allocation) that the decoder returns as is.
using PixelSink = std::function<StatusOr<void*>(int64_t height, int64_t width, int64_t channels)>;

// The most bytes a decoded image may take (TF's limit for JPEG, 2^29):
// larger headers are refused before anything is allocated.
inline constexpr int64_t kMaxJpegBytes = int64_t{1} << 29;
// PNG's limit: 2^31 bytes of pixels.
inline constexpr int64_t kMaxPngBytes = int64_t{1} << 31;

// DecodeJpeg's attrs, TF's defaults.
struct JpegOptions {
  int channels = 0;            // 0: as in the file (1 or 3); 1 gray; 3 RGB
  int ratio = 1;               // downscaling while decoding: 1, 2, 4 or 8
  bool fancy_upscaling = true;  // smooth chroma upsampling
  bool try_recover_truncated = false;
  float acceptable_fraction = 1.0f;  // of the lines a truncated image must hold
  std::string dct_method;      // "" or "INTEGER_FAST" (TF's default), "INTEGER_ACCURATE"
  // The most bytes the pixels may take; libjpeg's own buffers (a
  // progressive file's coefficients) are held to 4 times as much.
  int64_t max_bytes = kMaxJpegBytes;
};

bool IsJpeg(std::string_view data);
bool IsPng(std::string_view data);

// Decodes a JPEG into sink's buffer (uint8, rows of width * channels).
// InvalidArgument for data that is not a JPEG, is corrupt, or is truncated
// (unless try_recover_truncated and at least acceptable_fraction of its lines
// arrived: the rest are zeros), or whose pixels would exceed max_bytes.
Status DecodeJpeg(std::string_view data, const JpegOptions& options, const PixelSink& sink);

// Decodes a PNG into sink's buffer: `channels` 0 (as in the file), 1 gray,
// 2 gray + alpha (the op refuses it, as TF's), 3 RGB or 4 RGBA, with TF's conversions (alpha added as
// opaque, stripped, palette and gray expanded, RGB to gray by 0.299/0.587/
// 0.114; 16-bit samples keep their high byte), as uint8. InvalidArgument for
// data that is not a PNG, is corrupt or truncated, or whose pixels would take
// more than max_bytes.
Status DecodePng(std::string_view data, int channels, const PixelSink& sink, int64_t max_bytes = kMaxPngBytes);

// EncodeJpeg's attrs, TF's defaults.
struct JpegEncodeOptions {
  std::string format;  // "" (by channels), "grayscale" or "rgb"
  int quality = 95;
  bool progressive = false;
  bool optimize_size = false;
  bool chroma_downsampling = true;
  std::string density_unit = "in";  // "in" or "cm"
  int x_density = 300, y_density = 300;
};

// Encodes height x width x channels uint8 pixels (channels 1 or 3) as JPEG.
StatusOr<std::string> EncodeJpeg(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels,
                                 const JpegEncodeOptions& options);

// Encodes height x width x channels uint8 pixels (channels 1 to 4) as an
// 8-bit PNG at zlib `compression` -1 (zlib's default) to 9.
StatusOr<std::string> EncodePng(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels,
                                int compression);

}  // namespace image_codec
}  // namespace tw

#endif  // TOWERFLOW_DATA_INTERNAL_IMAGE_CODECS_H_
