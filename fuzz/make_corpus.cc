// fuzz_make_corpus DIR: writes the seed corpora of the fuzz targets into
// DIR/<target>/ (fuzz/corpus/ in the repository; rerun it when an input format
// of a target changes). Small valid inputs of each mode, and a few broken ones
// near the edges; the fuzzer finds the rest. Deterministic.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "towerflow/data/example_test_util.h"
#include "towerflow/data/internal/image_codecs.h"
#include "towerflow/data/record_reader.h"
#include "towerflow/data/record_writer.h"

namespace tw {
namespace {

std::string dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string sub = dir + "/" + target;
  ::mkdir(sub.c_str(), 0755);
  std::ofstream(sub + "/" + name, std::ios::binary) << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The file RecordWriter writes for `records`, flushed after each when `flush`.
std::string RecordFile(const std::vector<std::string>& records, Compression compression, bool flush = false) {
  const std::string path = dir + "/.tmp.tfrecord";
  RecordWriterOptions options;
  options.compression = compression;
  auto writer = RecordWriter::Open(path, options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    std::exit(1);
  }
  for (const std::string& r : records) {
    (*writer)->WriteRecord(r).Check();
    if (flush) (*writer)->Flush().Check();
  }
  (*writer)->Close().Check();
  std::string bytes = ReadFile(path);
  std::remove(path.c_str());
  return bytes;
}

std::string SampleExample() {
  tensorflow::Example ex;
  example_test::AddInt64s(&ex, "a", {3, -1});
  example_test::AddFloats(&ex, "b", {0.5f, 1.5f});
  example_test::AddBytes(&ex, "c", {"xyz"});
  example_test::AddInt64s(&ex, "d", {1, 2, 3});
  return example_test::Serialize(ex);
}

void RecordReaderSeeds() {
  const std::vector<std::string> records = {"", "hello", std::string(40, 'r'), SampleExample()};
  const std::string plain = RecordFile(records, Compression::kNone);
  // Mode byte: bits 0-1 compression (0 none, 1 ZLIB, 2 GZIP), bit 2 skip_corrupt,
  // bits 3-4 second buffer size, bit 5 max_record_bytes.
  Write("fuzz_record_reader", "plain", std::string("\x00", 1) + plain);
  Write("fuzz_record_reader", "zlib", "\x09" + RecordFile(records, Compression::kZlib));
  Write("fuzz_record_reader", "gzip", "\x12" + RecordFile(records, Compression::kGzip));
  Write("fuzz_record_reader", "gzip_flushed", "\x1a" + RecordFile(records, Compression::kGzip, true));
  Write("fuzz_record_reader", "zlib_flushed_cut",
        "\x01" + RecordFile(records, Compression::kZlib, true).substr(0, 40));
  std::string corrupt = plain;
  corrupt[12 + 4 + 12 + 2] ^= 0x20;  // the second record's data
  Write("fuzz_record_reader", "plain_corrupt_skip", "\x04" + corrupt);
  Write("fuzz_record_reader", "plain_truncated", "\x20" + plain.substr(0, plain.size() - 3));
  std::string gz = RecordFile(records, Compression::kGzip);
  Write("fuzz_record_reader", "gzip_two_members", "\x02" + gz + gz);
}

void ExampleParserSeeds() {
  // Config bytes (two bits per key a, b, c, d): role (1 sparse, 2 dense, 3 dense
  // with default), dtype (0 int64, 1 float, 2 string), shape (0 [], 1 [2], 2 [0], 3 [1, 3]).
  const std::string ex = SampleExample();
  // a: dense int64 [2], b: dense float [2], c: dense string [], d: sparse int64.
  Write("fuzz_example_parser", "dense", std::string("\x6a\x24\x05", 3) + ex);
  // All sparse, the types that match.
  Write("fuzz_example_parser", "sparse", std::string("\x55\x24\x00", 3) + ex);
  // Defaults, one wrong dtype and one wrong shape.
  Write("fuzz_example_parser", "mismatch", std::string("\xff\x19\xd7", 3) + ex);
  tensorflow::Example packed;
  example_test::AddInt64s(&packed, "a", {1, 1LL << 40, -5});
  example_test::AddFloats(&packed, "zz", {1, 2, 3});
  Write("fuzz_example_parser", "other_keys", std::string("\x01\x00\x00", 3) + example_test::Serialize(packed));
  using example_test::Entry;
  using example_test::ExampleOf;
  using example_test::Len;
  using example_test::Tag;
  using example_test::Varint;
  // Wire forms libprotobuf never writes: unpacked int64s, an unknown group, a
  // feature whose kind switches.
  Write("fuzz_example_parser", "wire_forms",
        std::string("\x59\x00\x01", 3) +
            ExampleOf(Entry("a", Len(3, Tag(1, 0) + Varint(4) + Tag(1, 0) + Varint(5))) +
                      Entry("b", Len(1, Len(1, "x")) + Len(2, Len(1, std::string(4, '\0')))) + Tag(7, 3) +
                      Tag(7, 4)));
  Write("fuzz_example_parser", "empty", std::string("\x00\x00\x00", 3));
}

void DecodeRawSeeds() {
  // Byte 0: out_type (bits 0-2: float, double, int32, int64, uint8, bool, string,
  // invalid), little_endian (bit 3), string count (bits 4-7); byte 1: equal-length
  // strings (bit 0), shape [1, n] (bit 1), scalar (bit 2).
  const std::string bytes16 = "\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00\x80\x3f\xff\xff\xff\xff";
  Write("fuzz_decode_raw", "float_le", std::string("\x28\x01", 2) + bytes16);
  Write("fuzz_decode_raw", "double_be", std::string("\x21\x03", 2) + bytes16);
  Write("fuzz_decode_raw", "int32_scalar", std::string("\x1a\x05", 2) + bytes16);
  Write("fuzz_decode_raw", "int64_le", std::string("\x2b\x01", 2) + bytes16);
  Write("fuzz_decode_raw", "uint8_lengths", std::string("\x3c\x00\x04\x04\x05", 5) + bytes16);
  Write("fuzz_decode_raw", "bool", std::string("\x4d\x01", 2) + bytes16);
  Write("fuzz_decode_raw", "empty", std::string("\x08\x01", 2));
}

// Small JPEGs (gray, color, progressive, cut) and PNGs (1 to 4 channels,
// cut), with the option bytes of fuzz_image_decode.
void ImageDecodeSeeds() {
  std::vector<uint8_t> pixels(12 * 10 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 5);
  for (int c : {1, 3}) {
    image_codec::JpegEncodeOptions o;
    o.quality = 80;
    const std::string jpeg = *image_codec::EncodeJpeg(pixels.data(), 12, 10, c, o);
    Write("fuzz_image_decode", "jpeg_" + std::to_string(c), std::string("\x00\x00", 2) + jpeg);
    Write("fuzz_image_decode", "jpeg_cut_recover_" + std::to_string(c),
          std::string("\x6c\x01", 2) + jpeg.substr(0, jpeg.size() * 2 / 3));
    o.progressive = true;
    Write("fuzz_image_decode", "jpeg_progressive_" + std::to_string(c),
          std::string("\x82\x02", 2) + *image_codec::EncodeJpeg(pixels.data(), 12, 10, c, o));
  }
  for (int c = 1; c <= 4; ++c) {
    const std::string png = *image_codec::EncodePng(pixels.data(), 10, 12, c, 6);
    Write("fuzz_image_decode", "png_" + std::to_string(c), std::string(1, static_cast<char>(1 | (c << 2))) + '\0' + png);
    Write("fuzz_image_decode", "png_cut_" + std::to_string(c), std::string("\x02\x00", 2) + png.substr(0, png.size() - 20));
  }
}

}  // namespace
}  // namespace tw

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  tw::dir = argv[1];
  ::mkdir(tw::dir.c_str(), 0755);
  tw::RecordReaderSeeds();
  tw::ExampleParserSeeds();
  tw::DecodeRawSeeds();
  tw::ImageDecodeSeeds();
  return 0;
}
