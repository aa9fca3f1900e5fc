// PNG through libpng (image_codecs.h), with TensorFlow's transforms: alpha
// added (opaque) or stripped to reach the channels asked for, tRNS turned
// into alpha, palettes and low-bit gray expanded, RGB to gray with weights
// 0.299 / 0.587 / 0.114, 16-bit samples cut to their high byte, interlaced
// images de-interlaced. libpng
// reports errors through longjmp: every libpng call stays inside the
// functions below that call setjmp, whose frames hold no object with a
// destructor across the call.
#include <cstdio>
#include <cstring>

#include "towerflow/data/internal/image_codecs.h"

#if TOWERFLOW_HAVE_PNG
#include <png.h>
#endif

namespace tw {
namespace image_codec {

bool IsPng(std::string_view data) { return data.size() >= 8 && data.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0; }

#if TOWERFLOW_HAVE_PNG
namespace {

struct Reader {
  const png_byte* data;
  size_t size;
  size_t offset;
};

void ReadData(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->size - r->offset) png_error(png, "Read past the end of the data (truncated PNG)");
  std::memcpy(out, r->data + r->offset, n);
  r->offset += n;
}

// libpng's error callback: keeps the message, then libpng longjmps.
void OnError(png_structp png, png_const_charp message) {
  auto* buffer = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(buffer, 256, "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

uint8_t* CallSink(const PixelSink& sink, int64_t height, int64_t width, int64_t channels, Status* status) {
  StatusOr<void*> buffer = sink(height, width, channels);
  if (!buffer.ok()) {
    *status = buffer.status();
    return nullptr;
  }
  return static_cast<uint8_t*>(*buffer);
}

bool RunDecoder(std::string_view data, int desired_channels, const PixelSink& sink, int64_t max_bytes,
                Status* sink_status, char* error) {
  Reader reader{reinterpret_cast<const png_byte*>(data.data()), data.size(), 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, error, OnError, OnWarning);
  if (png == nullptr) {
    std::snprintf(error, 256, "libpng could not start a decoder");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    if (info == nullptr) std::snprintf(error, 256, "libpng could not start a decoder");
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    return false;
  }
  png_set_read_fn(png, &reader, ReadData);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(png, info, &width, &height, &depth, &color, &interlace, nullptr, nullptr);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  const bool has_alpha = (color & PNG_COLOR_MASK_ALPHA) != 0;
  int channels = desired_channels;
  if (channels == 0) {
    channels = color == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3) : png_get_channels(png, info);
  }
  if ((channels & 1) == 0) {  // alpha wanted
    if (!has_alpha) {
      if (has_trns) {
        png_set_tRNS_to_alpha(png);
      } else {
        png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
      }
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (depth > 8) png_set_strip_16(png);
  png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (color & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (channels < 3) {
    if (!is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  } else if (is_gray) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  const int64_t row_bytes = static_cast<int64_t>(width) * channels;
  if (static_cast<int64_t>(png_get_rowbytes(png, info)) != row_bytes) {
    std::snprintf(error, 256, "libpng's rows of %zu bytes differ from %lld expected",
                  static_cast<size_t>(png_get_rowbytes(png, info)), static_cast<long long>(row_bytes));  // NOLINT
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (static_cast<int64_t>(height) * row_bytes > max_bytes) {
    std::snprintf(error, 256, "an image of %u x %u x %d exceeds %lld bytes", height, width, channels,
                  static_cast<long long>(max_bytes));  // NOLINT
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  uint8_t* out = CallSink(sink, height, width, channels, sink_status);
  if (out == nullptr) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, out + y * row_bytes, nullptr);
  }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

struct Writer {
  std::string* out;
};

void WriteData(png_structp png, png_bytep data, png_size_t n) {
  static_cast<Writer*>(png_get_io_ptr(png))->out->append(reinterpret_cast<const char*>(data), n);
}

void Flush(png_structp) {}

bool RunEncoder(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels, int compression,
                std::string* out, char* error) {
  Writer writer{out};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, OnError, OnWarning);
  if (png == nullptr) {
    std::snprintf(error, 256, "libpng could not start an encoder");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    if (info == nullptr) std::snprintf(error, 256, "libpng could not start an encoder");
    png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
    return false;
  }
  static constexpr int kColor[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                    PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_write_fn(png, &writer, WriteData, Flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               kColor[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, compression);
  png_write_info(png, info);
  const int64_t row_bytes = width * channels;
  for (int64_t y = 0; y < height; ++y) png_write_row(png, pixels + y * row_bytes);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

Status DecodePng(std::string_view data, int channels, const PixelSink& sink, int64_t max_bytes) {
  if (data.empty()) return errors::InvalidArgument("Input is empty.");
  if (!IsPng(data)) return errors::InvalidArgument("the data is not a PNG (", data.size(), " bytes)");
  char error[256] = {};
  Status sink_status;
  if (!RunDecoder(data, channels, sink, max_bytes, &sink_status, error)) {
    if (!sink_status.ok()) return sink_status;
    return errors::InvalidArgument("Invalid PNG data, ", data.size(), " bytes: ", error);
  }
  return Status::OK();
}

StatusOr<std::string> EncodePng(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels,
                                int compression) {
  if (height > PNG_UINT_31_MAX || width > PNG_UINT_31_MAX) {
    return errors::InvalidArgument("an image of ", height, " x ", width, " exceeds PNG's largest side");
  }
  std::string out;
  char error[256] = {};
  if (!RunEncoder(pixels, height, width, channels, compression, &out, error)) {
    return errors::Internal("libpng failed to encode a ", height, " x ", width, " x ", channels, " image: ", error);
  }
  return out;
}

#else  // !TOWERFLOW_HAVE_PNG

Status DecodePng(std::string_view, int, const PixelSink&, int64_t) {
  return errors::Unimplemented("this towerflow was built without libpng (apt install libpng-dev, rebuild)");
}

StatusOr<std::string> EncodePng(const uint8_t*, int64_t, int64_t, int64_t, int) {
  return errors::Unimplemented("this towerflow was built without libpng (apt install libpng-dev, rebuild)");
}

#endif  // TOWERFLOW_HAVE_PNG

}  // namespace image_codec
}  // namespace tw
