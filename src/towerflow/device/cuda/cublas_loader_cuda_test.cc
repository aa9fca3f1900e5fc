// cuBLAS loaded on first use (cublas_loader.h): the forwarded entry points
// reach the real library, which no GPU is needed to load; and the process
// did not map it before the first call.
#include "towerflow/device/cuda/cublas_loader.h"

#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tw::cuda {
namespace {

// Whether a library whose path contains `name` is mapped into this process.
bool Mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream ss;
  ss << maps.rdbuf();
  return ss.str().find(name) != std::string::npos;
}

TEST(CublasLoaderTest, LoadsOnFirstUseAndForwardsToTheLibrary) {
  // Nothing in this test binary has called cuBLAS yet.
  EXPECT_FALSE(Mapped("libcublasLt.so")) << "cuBLASLt was mapped at start";
  EXPECT_FALSE(Mapped("libcublas.so")) << "cuBLAS was mapped at start";
  std::string why;
  ASSERT_TRUE(LoadCublas(&why)) << why;
  EXPECT_TRUE(Mapped(CublasSoname()));
  EXPECT_TRUE(Mapped(CublasLtSoname()));
  // Status texts come from the library itself (no GPU needed).
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_NE(std::string(cublasGetStatusString(CUBLAS_STATUS_ALLOC_FAILED)).find("alloc"), std::string::npos)
      << cublasGetStatusString(CUBLAS_STATUS_ALLOC_FAILED);
  // Without a GPU, creating a handle fails with a status, never a crash.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cublasHandle_t handle = nullptr;
    EXPECT_NE(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  }
}

}  // namespace
}  // namespace tw::cuda
