// Builders of the image codec ops (TF's tf.io.decode_jpeg, decode_png,
// decode_image, encode_jpeg, encode_png): JPEG and PNG bytes in a scalar
// string to uint8 pixels [height, width, channels] and back, decoded to the
// bytes TensorFlow gives (libjpeg-turbo and libpng with TF's settings). As
// TF's, each decoder takes JPEG and PNG alike, by the data's first bytes.
// Corrupt, truncated or oversized data is InvalidArgument naming the format,
// the size and what failed; a decoded image may take at most 2^29 bytes
// (JPEG, as TF) or 2^31 (PNG), refused before anything is allocated. Each
// builder returns the node's output, or a null Output with the error
// recorded in the scope (see graph/scope.h); every builder registers the data
// module's ops on first use.
#ifndef TOWERFLOW_DATA_IMAGE_CODEC_OPS_H_
#define TOWERFLOW_DATA_IMAGE_CODEC_OPS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <string>

#include "towerflow/graph/scope.h"

namespace tw::io {

// DecodeJpeg's attrs, TF's defaults: `channels` 0 (as in the file), 1 (gray)
// or 3 (RGB); `ratio` 1, 2, 4 or 8 (decoded at that fraction of the size);
// `dct_method` "" or "INTEGER_FAST" (TF's default) or "INTEGER_ACCURATE"; a
// truncated file is an error unless `try_recover_truncated`, and then at
// least `acceptable_fraction` of its lines must arrive (the rest are zeros).
struct DecodeJpegOptions {
  int64_t channels = 0;
  int64_t ratio = 1;
  bool fancy_upscaling = true;
  bool try_recover_truncated = false;
  double acceptable_fraction = 1.0;
  std::string dct_method;
};
Output DecodeJpeg(const Scope& scope, const Output& contents, DecodeJpegOptions options = {});

// A PNG's pixels with `channels` 0 (as in the file, which may be 2: gray and
// alpha), 1, 3 or 4 (RGBA), converted as TF's decoder converts them (opaque
// alpha added, alpha stripped, RGB to gray by 0.299 / 0.587 / 0.114, 16-bit
// samples cut to 8).
Output DecodePng(const Scope& scope, const Output& contents, int64_t channels = 0);

// JPEG or PNG (TF's decode_image; GIF, BMP and WebP are not decoded:
// InvalidArgument naming the format). `channels` as
// DecodePng's (a JPEG takes 0, 1 or 3).
Output DecodeImage(const Scope& scope, const Output& contents, int64_t channels = 0);

// EncodeJpeg's attrs, TF's defaults: `format` "" (by the channels),
// "grayscale" (1 channel) or "rgb" (3); `quality` 0 to 100; `density_unit`
// "in" or "cm".
struct EncodeJpegOptions {
  std::string format;
  int64_t quality = 95;
  bool progressive = false;
  bool optimize_size = false;
  bool chroma_downsampling = true;
  std::string density_unit = "in";
  int64_t x_density = 300;
  int64_t y_density = 300;
};
Output EncodeJpeg(const Scope& scope, const Output& image, EncodeJpegOptions options = {});

// A uint8 image [height, width, channels 1 to 4] as PNG, at zlib's
// `compression` level -1 (its default) to 9.
Output EncodePng(const Scope& scope, const Output& image, int64_t compression = -1);

}  // namespace tw::io

#pragma GCC visibility pop

#endif  // TOWERFLOW_DATA_IMAGE_CODEC_OPS_H_
