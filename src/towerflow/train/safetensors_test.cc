// Safetensors: round trips of every dtype, the exact bytes of a small file, the
// writer's errors, and every validation failure of the reader (DataLoss naming
// the file), for files on disk and bytes in memory alike.
#include "towerflow/train/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

namespace tw::train {
namespace {

namespace fs = std::filesystem;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string U64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A file from a header (padded with spaces to a multiple of 8) and a buffer.
std::string MakeFile(std::string header, const std::string& buffer) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return U64(header.size()) + header + buffer;
}

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

template <typename T>
Tensor FromBits(std::initializer_list<uint64_t> bits, const TensorShape& shape) {
  std::vector<T> values;
  for (uint64_t b : bits) {
    if constexpr (std::is_same_v<T, float>) {
      values.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    } else {
      values.push_back(std::bit_cast<double>(b));
    }
  }
  return Tensor::FromVector<T>(values, shape);
}

// Same dtype, shape and bytes (NaN payloads and -0 included).
void ExpectSameTensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.TotalBytes(), b.TotalBytes()) << what;
  if (a.TotalBytes() > 0) {
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()), 0) << what;
  }
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / StrCat("safetensors_", info->name(), "_", ::getpid())).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::vector<std::string> DirectoryEntries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // `bytes` must fail as DataLoss whose message names the file and contains
  // `expected`, read from disk and parsed in memory alike.
  void ExpectDataLoss(const std::string& bytes, const std::string& expected) {
    const std::string path = Path("bad.safetensors");
    WriteBytes(path, bytes);
    auto read = ReadSafetensors(path);
    ASSERT_FALSE(read.ok()) << "accepted a file that should fail with: " << expected;
    EXPECT_EQ(read.status().code(), Code::kDataLoss) << read.status().ToString();
    EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status().ToString();
    EXPECT_NE(read.status().message().find(expected), std::string::npos)
        << read.status().ToString() << "\nexpected to contain: " << expected;
    auto parsed = ParseSafetensors(bytes, "in-memory.safetensors");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), Code::kDataLoss);
    std::string message = read.status().message();
    message.replace(message.find(path), path.size(), "in-memory.safetensors");
    EXPECT_EQ(parsed.status().message(), message);
  }

  std::string dir_;
};

std::vector<std::pair<std::string, Tensor>> EveryDtype() {
  return {
      {"f32", FromBits<float>({0x3F800000, 0x80000000, 0x7FC12345, 0xFF800000, 0x00000001, 0x7F7FFFFF},
                              TensorShape{2, 3})},
      {"f32_scalar", Tensor::Scalar(-1.25f)},
      {"f64", FromBits<double>({0x7FF8000000000ABCull, 0x8000000000000000ull, 0x0000000000000001ull,
                                0x3FF0000000000000ull},
                               TensorShape{4})},
      {"i32", Tensor::Vec<int32_t>(
                  {std::numeric_limits<int32_t>::min(), -1, 0, std::numeric_limits<int32_t>::max()})},
      {"i32_scalar", Tensor::Scalar<int32_t>(-7)},
      {"i64", Tensor::FromVector<int64_t>(
                  {std::numeric_limits<int64_t>::min(), 1LL << 40, std::numeric_limits<int64_t>::max(), -3},
                  TensorShape{2, 1, 2})},
      {"u8", Tensor::FromVector<uint8_t>({0, 255, 7, 128}, TensorShape{2, 2})},
      {"bool", Tensor::Vec<bool>({true, false, true})},
      {"bool_scalar", Tensor::Scalar(true)},
      {"empty_f32", Tensor(kFloat32, TensorShape{0})},
      {"empty_i64", Tensor(kInt64, TensorShape{2, 0, 3})},
      {"empty_bool", Tensor(kBool, TensorShape{0})},
      {"last/u8 é", Tensor::Vec<uint8_t>({9})},
  };
}

TEST_F(SafetensorsTest, RoundTripsEveryDtypeInFileOrder) {
  const auto tensors = EveryDtype();
  const std::map<std::string, std::string> metadata = {{"format", "tw"}, {"note", "ünïcode ✓ \"quoted\"\n"}};
  const std::string path = Path("all.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, tensors, metadata).ok());

  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  auto parsed = ParseSafetensors(ReadBytes(path), path);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  for (const SafetensorsFile* file : {&*read, &*parsed}) {
    ASSERT_EQ(file->tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(file->tensors[i].first, tensors[i].first);
      ExpectSameTensor(file->tensors[i].second, tensors[i].second, tensors[i].first);
    }
    EXPECT_EQ(file->metadata, metadata);
    ASSERT_NE(file->Find("i32"), nullptr);
    EXPECT_EQ(file->Find("i32")->ToVector<int32_t>()[3], std::numeric_limits<int32_t>::max());
    EXPECT_EQ(file->Find("missing"), nullptr);
  }
  auto only_metadata = ReadSafetensorsMetadata(path);
  ASSERT_TRUE(only_metadata.ok());
  EXPECT_EQ(*only_metadata, metadata);

  // The header is padded with spaces to a multiple of 8.
  const std::string bytes = ReadBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header.substr(header.find_last_not_of(' ') + 1),
            std::string(n - 1 - header.find_last_not_of(' '), ' '));
}

TEST_F(SafetensorsTest, WritesTheExactBytesTheReferenceWrites) {
  // safetensors.numpy.save({"a": float32 [1, -2], "b": uint8 [1, 2, 3]},
  // metadata={"k": "v"}) writes these 155 bytes: a 132-byte header padded to 136.
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}    )";
  ASSERT_EQ(header.size(), 136u);
  const std::string expected = Bytes({0x88, 0, 0, 0, 0, 0, 0, 0}) + header +
                               Bytes({0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 1, 2, 3});
  const std::string path = Path("small.safetensors");
  ASSERT_TRUE(WriteSafetensors(
                  path, {{"a", Tensor::Vec<float>({1.0f, -2.0f})}, {"b", Tensor::Vec<uint8_t>({1, 2, 3})}},
                  {{"k", "v"}})
                  .ok());
  EXPECT_EQ(ReadBytes(path), expected);
}

TEST_F(SafetensorsTest, NoMetadataKeyWithoutMetadata) {
  const std::string path = Path("plain.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"x", Tensor::Scalar(1.0f)}}).ok());
  EXPECT_EQ(ReadBytes(path).substr(8), R"({"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})" +
                                           std::string(3, ' ') + Bytes({0x00, 0x00, 0x80, 0x3f}));
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->metadata.empty());
}

TEST_F(SafetensorsTest, WriteRejectsWhatTheFormatCannotHold) {
  const std::string path = Path("w.safetensors");
  auto expect_invalid = [&](const std::vector<std::pair<std::string, Tensor>>& tensors,
                            const std::string& expected,
                            const std::map<std::string, std::string>& metadata = {}) {
    Status s = WriteSafetensors(path, tensors, metadata);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.ToString() << "\nexpected: " << expected;
  };
  expect_invalid({{"ok", Tensor::Scalar(1.0f)}, {"names", Tensor::String("x")}},
                 "tensor 'names': safetensors has no dtype for string");
  expect_invalid({{"a", Tensor::Scalar(1.0f)}, {"a", Tensor::Scalar(2.0f)}},
                 "tensor 'a': the name appears twice");
  expect_invalid({{"__metadata__", Tensor::Scalar(1.0f)}}, "reserved");
  expect_invalid({{"u", Tensor()}}, "tensor 'u': the tensor is uninitialized");
  expect_invalid({{"bad\xff", Tensor::Scalar(1.0f)}}, "tensor 'bad\\xff': the name is not valid UTF-8");
  expect_invalid({{"surrogate\xed\xa0\x80", Tensor::Scalar(1.0f)}}, "the name is not valid UTF-8");
  expect_invalid({{"ok", Tensor::Scalar(1.0f)}}, "metadata 'k' is not valid UTF-8",
                 {{"k", "\xc0\x80"}});      // overlong
  // A header no reader would accept (metadata past kSafetensorsMaxHeaderBytes)
  // is refused before anything is written, not written unreadable.
  expect_invalid({{"ok", Tensor::Scalar(1.0f)}}, "over the 100000000 that readers accept",
                 {{"big", std::string(kSafetensorsMaxHeaderBytes, 'a')}});
  EXPECT_TRUE(DirectoryEntries().empty());  // nothing written, no temporary left
}

TEST_F(SafetensorsTest, WriteErrorsNameTheFile) {
  const std::string path = Path("no_such_dir/x.safetensors");
  Status s = WriteSafetensors(path, {{"x", Tensor::Scalar(1.0f)}});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find(path + ".tmp-"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.ToString();
}

TEST_F(SafetensorsTest, RewriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = Path("x.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {{"x", Tensor::Scalar(1.0f)}}).ok());
  ASSERT_TRUE(WriteSafetensors(path, {{"y", Tensor::Vec<int64_t>({5, 6})}}).ok());
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->tensors.size(), 1u);
  EXPECT_EQ(read->tensors[0].first, "y");
  EXPECT_EQ(read->tensors[0].second.ToVector<int64_t>(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(DirectoryEntries(), std::vector<std::string>{"x.safetensors"});
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  auto read = ReadSafetensors(Path("absent.safetensors"));
  EXPECT_EQ(read.status().code(), Code::kNotFound);
  EXPECT_NE(read.status().message().find(Path("absent.safetensors")), std::string::npos);
}

TEST_F(SafetensorsTest, FilesThatAreNotRegularAreNamedForWhatTheyAre) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "/dev/zero is a character device"},
      {"/dev/null", "/dev/null is a character device"},
      {dir_, dir_ + " is a directory"},
      {Path("fifo"), Path("fifo") + " is a FIFO"},  // refused at once: no writer is waited for
  };
  for (const auto& [path, want] : cases) {
    auto read = ReadSafetensors(path);
    ASSERT_FALSE(read.ok()) << path;
    EXPECT_EQ(read.status().code(), Code::kInvalidArgument) << read.status().ToString();
    EXPECT_NE(read.status().message().find(want), std::string::npos) << read.status().ToString();
    EXPECT_EQ(ReadSafetensorsMetadata(path).status().code(), Code::kInvalidArgument) << path;
  }
}

TEST_F(SafetensorsTest, ChecksumsAreWrittenOnRequestAndVerifiedOnEveryRead) {
  const std::string path = Path("summed.safetensors");
  const auto tensors = EveryDtype();
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"run", "x"}}, {.checksums = true}).ok());
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->metadata.at("run"), "x");
  EXPECT_EQ(read->metadata.at("crc32c:empty_f32"), "00000000");
  EXPECT_EQ(read->metadata.size(), tensors.size() + 1);  // one checksum per tensor
  // Without the option the metadata is exactly what was given (the reference's bytes).
  ASSERT_TRUE(WriteSafetensors(Path("plain.safetensors"), tensors, {{"run", "x"}}).ok());
  EXPECT_EQ(ReadSafetensorsMetadata(Path("plain.safetensors"))->size(), 1u);
  // A reserved key is refused when checksums are written.
  EXPECT_EQ(WriteSafetensors(Path("r.safetensors"), tensors, {{"crc32c:f32", "0"}}, {.checksums = true}).code(),
            Code::kInvalidArgument);

  // Every single-bit flip in the tensor data is caught (CRC32C detects them all).
  const std::string good = ReadBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, good.data(), sizeof(n));
  for (size_t at = 8 + n; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] ^= 0x01;
    auto parsed = ParseSafetensors(bad, "flipped");
    ASSERT_FALSE(parsed.ok()) << "flip at byte " << at << " went unnoticed";
    EXPECT_EQ(parsed.status().code(), Code::kDataLoss);
  }
  std::string flipped = good;
  flipped[8 + n] ^= 0x40;  // the first byte of "f32"
  ExpectDataLoss(flipped, "tensor 'f32': the CRC32C of its 24 bytes (file bytes " + std::to_string(8 + n) + "..");
}

TEST_F(SafetensorsTest, MalformedChecksumsAreDataLoss) {
  const std::vector<std::pair<std::string, Tensor>> one = {{"w", Tensor::Vec<float>({1, 2})}};
  const std::string path = Path("c.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, one, {{"crc32c:w", "xyz"}}).ok());
  ExpectDataLoss(ReadBytes(path), "metadata 'crc32c:w' is not 8 lowercase hex digits");
  ASSERT_TRUE(WriteSafetensors(path, one, {{"crc32c:v", "00000000"}}).ok());
  ExpectDataLoss(ReadBytes(path), "metadata 'crc32c:v' is the checksum of a tensor the file does not hold");
  ASSERT_TRUE(WriteSafetensors(path, one, {{"crc32c:w", "00000000"}}).ok());
  ExpectDataLoss(ReadBytes(path), "tensor 'w': the CRC32C of its 8 bytes");
}

// ---- what the reader accepts -----------------------------------------------

TEST_F(SafetensorsTest, AcceptsEverythingTheReferenceAccepts) {
  // Header order differs from buffer order; empty tensors share offsets and sit
  // at the end; unknown entry keys are ignored; null metadata means none.
  const std::string bytes = MakeFile(
      R"({"__metadata__":null,"z":{"dtype":"U8","shape":[2],"data_offsets":[4,6],"extra":1},)"
      R"("e2":{"dtype":"F64","shape":[0],"data_offsets":[6,6]},"y":{"dtype":"I32","shape":[],"data_offsets":[0,4]},)"
      R"("e1":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]}})",
      Bytes({1, 0, 0, 0, 8, 9}));
  auto parsed = ParseSafetensors(bytes, "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  std::vector<std::string> names;
  for (const auto& [name, t] : parsed->tensors) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"e1", "y", "z", "e2"}));
  EXPECT_EQ(parsed->Find("y")->scalar<int32_t>(), 1);
  EXPECT_EQ(parsed->Find("z")->ToVector<uint8_t>(), (std::vector<uint8_t>{8, 9}));
  EXPECT_EQ(parsed->Find("e1")->shape(), (TensorShape{3, 0}));
  EXPECT_TRUE(parsed->metadata.empty());
}

// ---- what the reader rejects -----------------------------------------------

// A valid 2-tensor file: "a" F32[2] at [0, 8], "b" U8[3] at [8, 11].
std::string ValidFile() {
  return MakeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})",
                  Bytes({0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 1, 2, 3}));
}

// One entry "t" with the given fields, over `buffer`.
std::string OneTensor(const std::string& fields, const std::string& buffer) {
  return MakeFile(R"({"t":{)" + fields + "}}", buffer);
}

TEST_F(SafetensorsTest, TruncatedFilesAreDataLoss) {
  const std::string valid = ValidFile();
  ASSERT_TRUE(ParseSafetensors(valid, "mem").ok());
  const size_t n = valid.size() - 8 - 11;  // header length
  ExpectDataLoss("", "file has 0 bytes, fewer than the 8-byte header length");
  ExpectDataLoss(valid.substr(0, 7), "file has 7 bytes, fewer than the 8-byte header length");
  for (size_t cut : {size_t{8}, size_t{20}, 8 + n - 1}) {
    ExpectDataLoss(valid.substr(0, cut),
                   StrCat("header length ", n, " (byte 0) runs past the end of the file: only ", cut - 8,
                          " bytes follow"));
  }
  ExpectDataLoss(valid.substr(0, 8 + n), "tensor 'a': data_offsets [0, 8] end past the 0-byte buffer");
  ExpectDataLoss(valid.substr(0, 8 + n + 5), "tensor 'a': data_offsets [0, 8] end past the 5-byte buffer");
  ExpectDataLoss(
      valid.substr(0, valid.size() - 1),
      StrCat("tensor 'b': data_offsets [8, 11] end past the 10-byte buffer (the file ends at byte ",
             valid.size() - 1, ")"));
}

TEST_F(SafetensorsTest, HeaderLengthOverTheCapOrTheFileIsDataLoss) {
  const std::string rest = ValidFile().substr(8);
  ExpectDataLoss(U64(uint64_t{1} << 63) + rest,
                 "header length 9223372036854775808 (byte 0) exceeds the limit of 100000000");
  ExpectDataLoss(U64(kSafetensorsMaxHeaderBytes + 1) + rest, "exceeds the limit of 100000000 bytes");
  ExpectDataLoss(U64(kSafetensorsMaxHeaderBytes) + rest,
                 "header length 100000000 (byte 0) runs past the end");
}

TEST_F(SafetensorsTest, HeaderThatIsNotAJsonObjectIsDataLoss) {
  ExpectDataLoss(MakeFile(R"({"a": })", ""), "header is not valid JSON (file byte 14): ");
  ExpectDataLoss(MakeFile(R"({"a":{}} x)", ""), "header is not valid JSON (file byte 17)");
  ExpectDataLoss(MakeFile("{\"a\xff\":{}}", ""), "header is not valid JSON");
  ExpectDataLoss(MakeFile("[1, 2]", ""), "header (byte 8) does not start with '{'");
  ExpectDataLoss(MakeFile(R"( {})", ""), "does not start with '{'");
  ExpectDataLoss(U64(0), "does not start with '{'");
  ExpectDataLoss(MakeFile(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                          R"("t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                          Bytes({1, 2})),
                 "header names 't' twice");
}

TEST_F(SafetensorsTest, DeepOrHugeHeadersFailWithShortMessages) {
  const std::string head = R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)";
  auto nested = [&](int depth) {
    return MakeFile(head + std::string(depth, '[') + std::string(depth, ']') + "}}", Bytes({1}));
  };
  // Nesting the reference's parser accepts (an unknown key is ignored) ...
  ASSERT_TRUE(ParseSafetensors(nested(126), "mem").ok());
  // ... and past its limit: the 129th bracket, after "{", "{" and 126 "[".
  ExpectDataLoss(nested(127),
                 StrCat("header nests deeper than 128 levels at file byte ", 8 + head.size() + 126));
  ExpectDataLoss(nested(1000000), "header nests deeper than 128 levels");

  // A 200 KB shape with one bad element: the message quotes its start only.
  std::string shape = "[";
  for (int i = 0; i < 100000; ++i) shape += "1,";
  shape += "-1]";
  const std::string bytes =
      OneTensor(R"("dtype":"U8","shape":)" + shape + R"(,"data_offsets":[0,1])", Bytes({1}));
  ExpectDataLoss(bytes, "tensor 't': \"shape\" is not a list of non-negative integers: [1,1,1,1,");
  EXPECT_LT(ParseSafetensors(bytes, "mem").status().message().size(), 200u);
}

TEST_F(SafetensorsTest, MalformedEntriesAreDataLoss) {
  const std::string four = Bytes({0, 0, 0, 0});
  ExpectDataLoss(MakeFile(R"({"t":3})", ""), "tensor 't': header entry is not an object: 3");
  ExpectDataLoss(OneTensor(R"("dtype":"F16","shape":[2],"data_offsets":[0,4])", four),
                 "tensor 't': unknown dtype \"F16\"");
  ExpectDataLoss(OneTensor(R"("shape":[1],"data_offsets":[0,4])", four),
                 "\"dtype\" is missing or not a string: absent");
  ExpectDataLoss(OneTensor(R"("dtype":4,"shape":[1],"data_offsets":[0,4])", four),
                 "\"dtype\" is missing or not a string: 4");
  for (const char* shape : {"[-1]", "[1.5]", "[\"1\"]", "[[1]]", "[1,-4]"}) {
    ExpectDataLoss(OneTensor(StrCat(R"("dtype":"F32","shape":)", shape, R"(,"data_offsets":[0,4])"), four),
                   StrCat("tensor 't': \"shape\" is not a list of non-negative integers: ", shape));
  }
  ExpectDataLoss(OneTensor(R"("dtype":"F32","shape":1,"data_offsets":[0,4])", four),
                 "\"shape\" is missing or not a list: 1");
  ExpectDataLoss(OneTensor(R"("dtype":"F32","data_offsets":[0,4])", four),
                 "\"shape\" is missing or not a list: absent");
  ExpectDataLoss(
      OneTensor(R"("dtype":"U8","shape":[4294967296,4294967296,4294967296,0],"data_offsets":[0,0])", ""),
      "shape [4294967296,4294967296,4294967296,0] has more elements than fit in 64 bits");
  for (const char* offsets : {"[0]", "[0,4,8]", "[-1,4]", "[0,4.0]", "{}", "[\"0\",4]"}) {
    ExpectDataLoss(
        OneTensor(StrCat(R"("dtype":"F32","shape":[1],"data_offsets":)", offsets), four),
        StrCat("tensor 't': \"data_offsets\" is not a list of two non-negative integers: ", offsets));
  }
  ExpectDataLoss(OneTensor(R"("dtype":"F32","shape":[1])", four),
                 "\"data_offsets\" is not a list of two non-negative integers: absent");
  ExpectDataLoss(OneTensor(R"("dtype":"F32","shape":[0],"data_offsets":[4,0])", four),
                 "data_offsets [4, 0] begin after end");
}

TEST_F(SafetensorsTest, OffsetsThatDisagreeWithTheBufferAreDataLoss) {
  const std::string eight(8, '\0');
  // Header `{"t":{...}}` of 56 bytes: the buffer starts at file byte 64.
  ExpectDataLoss(OneTensor(R"("dtype":"F32","shape":[4],"data_offsets":[0,16])", eight),
                 "tensor 't': data_offsets [0, 16] end past the 8-byte buffer (the file ends at byte 72)");
  ExpectDataLoss(OneTensor(R"("dtype":"F32","shape":[3],"data_offsets":[0,8])", eight),
                 "tensor 't': data_offsets [0, 8] (file byte 64) hold 8 bytes, but F32 [3] needs 3 * 4");
  ExpectDataLoss(OneTensor(R"("dtype":"F64","shape":[2],"data_offsets":[0,8])", eight),
                 "hold 8 bytes, but F64 [2] needs 2 * 8");
  ExpectDataLoss(OneTensor(R"("dtype":"U8","shape":[4],"data_offsets":[4,8])", eight),
                 "tensors leave a hole of 4 bytes at file byte 64 before tensor 't'");
  ExpectDataLoss(
      OneTensor(R"("dtype":"U8","shape":[6],"data_offsets":[0,6])", eight),
      "the buffer has 8 bytes but the tensors cover 6: 2 bytes from file byte 70 belong to no tensor");
  const std::string twelve(12, '\0');
  const std::string two =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":)";
  ExpectDataLoss(MakeFile(two + "[8,12]}}", twelve), "tensors leave a hole of 4 bytes at file byte ");
  ExpectDataLoss(MakeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                          twelve),
                 "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a' (data_offsets [0, 8]) at file byte ");
  ExpectDataLoss(MakeFile(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
                          Bytes({1, 2, 3, 4})),
                 "overlaps tensor 'a'");
}

TEST_F(SafetensorsTest, BadMetadataIsDataLoss) {
  ExpectDataLoss(MakeFile(R"({"__metadata__":[1]})", ""), "\"__metadata__\" is not an object: [1]");
  ExpectDataLoss(MakeFile(R"({"__metadata__":{"ok":"x","step":3}})", ""),
                 "\"__metadata__\" value of 'step' is not a string: 3");
  auto metadata = ReadSafetensorsMetadata(Path("bad.safetensors"));  // the file ExpectDataLoss left
  EXPECT_EQ(metadata.status().code(), Code::kDataLoss);
}

TEST_F(SafetensorsTest, BoolBytesOtherThanZeroOrOneAreDataLoss) {
  const std::string bytes = OneTensor(R"("dtype":"BOOL","shape":[3],"data_offsets":[0,3])", Bytes({1, 0, 2}));
  ExpectDataLoss(bytes, "tensor 't': BOOL byte 2 at file byte 66 is neither 0 nor 1");
  // The header is valid: the metadata reads.
  EXPECT_TRUE(ReadSafetensorsMetadata(Path("bad.safetensors")).ok());
}

TEST_F(SafetensorsTest, RandomDamageIsDataLossOrStillValid) {
  // Every dtype's file, with bytes flipped, cut or appended at random (fixed
  // seed): the parser answers OK or DataLoss, never anything else, never crashes.
  const std::string path = Path("all.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, EveryDtype(), {{"k", "v"}}).ok());
  const std::string valid = ReadBytes(path);
  std::mt19937 rng(1234);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = valid;
    const int kind = static_cast<int>(rng() % 3);
    if (kind == 0) {
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k)
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    } else if (kind == 1) {
      bytes.resize(rng() % bytes.size());
    } else {
      bytes.append(1 + rng() % 9, static_cast<char>(rng()));
    }
    auto parsed = ParseSafetensors(bytes, "fuzzed");
    if (!parsed.ok()) {
      ++rejected;
      ASSERT_EQ(parsed.status().code(), Code::kDataLoss) << parsed.status().ToString();
      ASSERT_EQ(parsed.status().message().rfind("fuzzed: ", 0), 0u) << parsed.status().ToString();
    }
  }
  EXPECT_GT(rejected, 2000);  // cuts and appends always fail; most flips do
}

}  // namespace
}  // namespace tw::train
