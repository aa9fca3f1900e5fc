// JPEG through libjpeg-turbo (image_codecs.h), with TensorFlow's settings: its
// source manager (truncated data is an error unless recovery is asked for,
// then a fake end-of-image marker), INTEGER_FAST as the default DCT, CMYK
// files converted to RGB, and its encoder's defaults (JFIF at 300 dpi,
// quality 95, 4:2:0 chroma). libjpeg reports errors through longjmp: every
// libjpeg call stays inside the functions below that call setjmp, whose
// frames hold no object with a destructor across the call.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "towerflow/data/internal/image_codecs.h"

#if TOWERFLOW_HAVE_JPEG
extern "C" {
#include <jerror.h>
#include <jpeglib.h>
}
#endif

namespace tw {
namespace image_codec {

bool IsJpeg(std::string_view data) { return data.size() >= 3 && data.compare(0, 3, "\xff\xd8\xff") == 0; }

#if TOWERFLOW_HAVE_JPEG
namespace {

// libjpeg's error manager, ending in a longjmp back to the decoder with the
// library's message kept.
struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void OnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

void Quiet(j_common_ptr, int) {}  // warnings are not printed

// TF's memory source: no more data is a suspension (the decoder stops, an
// error) unless recovery is asked for, which ends the data with a fake EOI
// (again each time libjpeg comes back to the end of the real data), and
// then lets libjpeg go on when it asks with bytes still in the buffer. That
// last answer adds nothing, so it can make libjpeg ask forever (TF hangs on
// some cuts with recovery asked): here it is given at most `budget` times
// (1024 for the header, then one more per output pixel), and the source
// suspends after that.
struct Source {
  jpeg_source_mgr pub;
  bool recover;
  int64_t budget;  // answers left that give libjpeg no new bytes
};

constexpr JOCTET kFakeEoi[2] = {0xFF, JPEG_EOI};

void InitSource(j_decompress_ptr) {}
void TermSource(j_decompress_ptr) {}

boolean FillInput(j_decompress_ptr cinfo) {
  auto* src = reinterpret_cast<Source*>(cinfo->src);
  if (!src->recover) return FALSE;  // suspend: jpeg_read_* returns without progress
  if (src->pub.bytes_in_buffer > 0) {
    if (src->budget <= 0) return FALSE;
    --src->budget;
    return TRUE;
  }
  if (src->pub.next_input_byte == kFakeEoi + 2) return FALSE;
  WARNMS(cinfo, JWRN_JPEG_EOF);
  src->pub.next_input_byte = kFakeEoi;
  src->pub.bytes_in_buffer = 2;
  return TRUE;
}

void SkipInput(j_decompress_ptr cinfo, long n) {  // NOLINT(runtime/int): libjpeg's type
  auto* src = reinterpret_cast<Source*>(cinfo->src);
  if (n <= 0) return;
  if (static_cast<size_t>(n) > src->pub.bytes_in_buffer) {
    src->pub.next_input_byte += src->pub.bytes_in_buffer;
    src->pub.bytes_in_buffer = 0;
    return;
  }
  src->pub.next_input_byte += n;
  src->pub.bytes_in_buffer -= static_cast<size_t>(n);
}

// What the decoder learned, filled inside the setjmp frame.
struct DecodeState {
  char error[JMSG_LENGTH_MAX + 160] = {};
  int64_t lines = 0, height = 0;
  bool cmyk = false;
};

// Converts Adobe's inverted CMYK pixels to RGB in place, row by row
// (R = C * K / 255, as TF).
void CmykToRgb(const uint8_t* cmyk, int64_t pixels, uint8_t* rgb) {
  for (int64_t i = 0; i < pixels; ++i) {
    const int k = cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c) rgb[3 * i + c] = static_cast<uint8_t>(cmyk[4 * i + c] * k / 255);
  }
}

// The sink's buffer, or nullptr with *status set: keeps the StatusOr out of
// the setjmp frame.
uint8_t* CallSink(const PixelSink& sink, int64_t height, int64_t width, int64_t channels, Status* status) {
  StatusOr<void*> buffer = sink(height, width, channels);
  if (!buffer.ok()) {
    *status = buffer.status();
    return nullptr;
  }
  return static_cast<uint8_t*>(*buffer);
}

// The libjpeg part of DecodeJpeg; the sink and row buffer live in the caller.
// Returns false with state->error set on failure.
bool RunDecoder(std::string_view data, const JpegOptions& o, const PixelSink& sink, std::vector<uint8_t>* cmyk_row,
                Status* sink_status, DecodeState* state) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  Source src;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = OnError;
  err.pub.emit_message = Quiet;
  if (setjmp(err.jump)) {
    std::snprintf(state->error, sizeof(state->error), "%s", err.message);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  src.pub.init_source = InitSource;
  src.pub.fill_input_buffer = FillInput;
  src.pub.skip_input_data = SkipInput;
  src.pub.resync_to_restart = jpeg_resync_to_restart;
  src.pub.term_source = TermSource;
  src.pub.next_input_byte = reinterpret_cast<const JOCTET*>(data.data());
  src.pub.bytes_in_buffer = data.size();
  src.recover = o.try_recover_truncated;
  src.budget = 1024;
  cinfo.src = &src.pub;
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(state->error, sizeof(state->error), "the header is incomplete");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const bool file_cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  int channels = o.channels;
  if (channels == 0) channels = cinfo.num_components == 1 ? 1 : 3;
  if (channels == 1) {
    cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (file_cmyk) {
    cinfo.out_color_space = JCS_CMYK;
    state->cmyk = true;
  } else {
    cinfo.out_color_space = JCS_RGB;
  }
  cinfo.do_fancy_upsampling = o.fancy_upscaling ? TRUE : FALSE;
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned int>(o.ratio);
  cinfo.dct_method = o.dct_method == "INTEGER_ACCURATE" ? JDCT_ISLOW : JDCT_IFAST;
  jpeg_calc_output_dimensions(&cinfo);
  const int64_t width = cinfo.output_width, height = cinfo.output_height;
  if (width * height * channels >= o.max_bytes) {
    std::snprintf(state->error, sizeof(state->error), "an image of %lld x %lld x %d exceeds %lld bytes",
                  static_cast<long long>(height), static_cast<long long>(width), channels,  // NOLINT
                  static_cast<long long>(o.max_bytes));  // NOLINT
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  // libjpeg fails (no backing store) rather than take more than this.
  cinfo.mem->max_memory_to_use = static_cast<long>(4 * o.max_bytes);  // NOLINT(runtime/int): libjpeg's type
  src.budget = width * height + 1024;
  if (!jpeg_start_decompress(&cinfo)) {
    std::snprintf(state->error, sizeof(state->error), "Premature end of JPEG data before the first line");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  state->height = height;
  uint8_t* out = CallSink(sink, height, width, channels, sink_status);
  if (out == nullptr) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const int64_t row_bytes = width * channels;
  if (state->cmyk) cmyk_row->resize(static_cast<size_t>(width * 4));
  while (state->lines < height) {
    uint8_t* row = out + state->lines * row_bytes;
    JSAMPROW target = state->cmyk ? cmyk_row->data() : row;
    if (jpeg_read_scanlines(&cinfo, &target, 1) != 1) break;
    if (state->cmyk) CmykToRgb(cmyk_row->data(), width, row);
    ++state->lines;
  }
  if (state->lines < height) {
    // Suspended for want of data, or ended early: what arrived is kept only
    // when recovery was asked for and enough of it came.
    const bool enough = o.try_recover_truncated &&
                        static_cast<double>(state->lines) >= static_cast<double>(o.acceptable_fraction) * height;
    if (!enough) {
      std::snprintf(state->error, sizeof(state->error), "Premature end of JPEG data at line %lld of %lld",
                    static_cast<long long>(state->lines), static_cast<long long>(height));  // NOLINT
      jpeg_destroy_decompress(&cinfo);
      return false;
    }
    std::memset(out + state->lines * row_bytes, 0, static_cast<size_t>((height - state->lines) * row_bytes));
    jpeg_abort_decompress(&cinfo);
  } else {
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// The libjpeg part of EncodeJpeg.
struct Destination {
  jpeg_destination_mgr pub;
  std::string* out;
  JOCTET buffer[16384];
};

void InitDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<Destination*>(cinfo->dest);
  d->pub.next_output_byte = d->buffer;
  d->pub.free_in_buffer = sizeof(d->buffer);
}

boolean EmptyOutput(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<Destination*>(cinfo->dest);
  d->out->append(reinterpret_cast<const char*>(d->buffer), sizeof(d->buffer));
  d->pub.next_output_byte = d->buffer;
  d->pub.free_in_buffer = sizeof(d->buffer);
  return TRUE;
}

void TermDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<Destination*>(cinfo->dest);
  d->out->append(reinterpret_cast<const char*>(d->buffer), sizeof(d->buffer) - d->pub.free_in_buffer);
}

bool RunEncoder(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels, const JpegEncodeOptions& o,
                std::string* out, char* error, size_t error_size) {
  jpeg_compress_struct cinfo;
  ErrorManager err;
  Destination dest;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = OnError;
  err.pub.emit_message = Quiet;
  if (setjmp(err.jump)) {
    std::snprintf(error, error_size, "%s", err.message);
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  dest.out = out;
  dest.pub.init_destination = InitDestination;
  dest.pub.empty_output_buffer = EmptyOutput;
  dest.pub.term_destination = TermDestination;
  cinfo.dest = &dest.pub;
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = static_cast<int>(channels);
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (o.optimize_size) cinfo.optimize_coding = TRUE;
  cinfo.density_unit = o.density_unit == "cm" ? 2 : 1;
  cinfo.X_density = static_cast<UINT16>(o.x_density);
  cinfo.Y_density = static_cast<UINT16>(o.y_density);
  jpeg_set_quality(&cinfo, o.quality, TRUE);
  if (o.progressive) jpeg_simple_progression(&cinfo);
  if (!o.chroma_downsampling) {
    for (int i = 0; i < cinfo.num_components; ++i) {
      cinfo.comp_info[i].h_samp_factor = 1;
      cinfo.comp_info[i].v_samp_factor = 1;
    }
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    // libjpeg reads the rows without writing them.
    JSAMPROW row = const_cast<JSAMPROW>(pixels + static_cast<int64_t>(cinfo.next_scanline) * width * channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

Status DecodeJpeg(std::string_view data, const JpegOptions& options, const PixelSink& sink) {
  if (data.empty()) return errors::InvalidArgument("Input is empty.");
  if (!IsJpeg(data)) return errors::InvalidArgument("the data is not a JPEG (", data.size(), " bytes)");
  DecodeState state;
  std::vector<uint8_t> cmyk_row;
  Status sink_status;
  if (!RunDecoder(data, options, sink, &cmyk_row, &sink_status, &state)) {
    if (!sink_status.ok()) return sink_status;
    return errors::InvalidArgument("Invalid JPEG data, ", data.size(), " bytes: ", state.error);
  }
  return Status::OK();
}

StatusOr<std::string> EncodeJpeg(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels,
                                 const JpegEncodeOptions& options) {
  if (height > JPEG_MAX_DIMENSION || width > JPEG_MAX_DIMENSION) {
    return errors::InvalidArgument("an image of ", height, " x ", width, " exceeds JPEG's largest side, ",
                                   JPEG_MAX_DIMENSION);
  }
  std::string out;
  char error[JMSG_LENGTH_MAX + 1] = {};
  if (!RunEncoder(pixels, height, width, channels, options, &out, error, sizeof(error))) {
    return errors::Internal("libjpeg failed to encode a ", height, " x ", width, " x ", channels, " image: ", error);
  }
  return out;
}

#else  // !TOWERFLOW_HAVE_JPEG

Status DecodeJpeg(std::string_view, const JpegOptions&, const PixelSink&) {
  return errors::Unimplemented("this towerflow was built without libjpeg (apt install libjpeg62-turbo-dev, rebuild)");
}

StatusOr<std::string> EncodeJpeg(const uint8_t*, int64_t, int64_t, int64_t, const JpegEncodeOptions&) {
  return errors::Unimplemented("this towerflow was built without libjpeg (apt install libjpeg62-turbo-dev, rebuild)");
}

#endif  // TOWERFLOW_HAVE_JPEG

}  // namespace image_codec
}  // namespace tw
