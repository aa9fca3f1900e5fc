// fuzz_image_decode: the JPEG and PNG decoders (data/internal/image_codecs.h)
// over arbitrary bytes, with every option. Each input must decode, with the
// pixel buffer asked for once, of a positive size within the decoder's limit,
// and written only inside it (AddressSanitizer watches the buffer), or fail
// with InvalidArgument; nothing else is allowed.
//
// The decoders are given a limit of 16 MiB of pixels (libjpeg's buffers 4
// times that), so that no input makes them allocate past libFuzzer's limit.
//
// Input: byte 0 bits 0-1 the decoder (JPEG, PNG, either by its magic bytes),
// bits 2-4 the channels asked for (0 to 4, taken modulo what the format
// allows), bit 5 try_recover_truncated, bits 6-7 the JPEG ratio (1, 2, 4, 8);
// byte 1 bit 0 INTEGER_ACCURATE, bit 1 no fancy upscaling; the rest is the file.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "towerflow/data/internal/image_codecs.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_image_decode: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw;
  if (size < 2) return 0;
  const int decoder = data[0] & 3;
  const int channels = (data[0] >> 2) & 7;
  const std::string_view file(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::vector<uint8_t> pixels;
  int calls = 0;
  constexpr int64_t kLimit = int64_t{16} << 20;
  const image_codec::PixelSink sink = [&](int64_t h, int64_t w, int64_t c) -> StatusOr<void*> {
    ++calls;
    if (h <= 0 || w <= 0 || c <= 0 || h * w * c > kLimit) {
      Fail("a buffer of " + std::to_string(h) + " x " + std::to_string(w) + " x " + std::to_string(c));
    }
    pixels.assign(static_cast<size_t>(h * w * c), 0);  // exact: ASan catches a write past the end
    pixels.shrink_to_fit();
    return static_cast<void*>(pixels.data());
  };
  const bool jpeg = decoder == 0 || (decoder >= 2 && image_codec::IsJpeg(file));
  Status s;
  if (jpeg) {
    image_codec::JpegOptions o;
    static constexpr int kJpegChannels[] = {0, 1, 3};
    o.channels = kJpegChannels[channels % 3];
    o.try_recover_truncated = (data[0] & 0x20) != 0;
    o.acceptable_fraction = o.try_recover_truncated ? 0.5f : 1.0f;
    o.ratio = 1 << (data[0] >> 6);
    o.dct_method = (data[1] & 1) ? "INTEGER_ACCURATE" : "";
    o.fancy_upscaling = (data[1] & 2) == 0;
    o.max_bytes = kLimit;
    s = image_codec::DecodeJpeg(file, o, sink);
  } else {
    s = image_codec::DecodePng(file, channels % 5, sink, kLimit);
  }
  if (s.ok() && calls != 1) Fail("decoded with " + std::to_string(calls) + " buffers");
  if (!s.ok() && s.code() != Code::kInvalidArgument) Fail("not InvalidArgument: " + s.ToString());
  if (calls > 1) Fail("asked for " + std::to_string(calls) + " buffers");
  return 0;
}
