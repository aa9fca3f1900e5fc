// Test helpers for data/'s record tests: a fresh directory per test, and whole
// files read and written as bytes. Header-only, tests only.
#ifndef TOWERFLOW_DATA_RECORD_TEST_UTIL_H_
#define TOWERFLOW_DATA_RECORD_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace tw::record_test {

// A fixture whose tests each get a directory of their own under gtest's
// TempDir, removed with everything in it after the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "towerflow_records_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteFileBytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tw::record_test

#endif  // TOWERFLOW_DATA_RECORD_TEST_UTIL_H_
