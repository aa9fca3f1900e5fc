// The cuBLAS entry points towerflow calls (cublas_loader.h): each resolves the
// real function once, from a library dlopened on first use, and forwards to it.
// The list is the build's: `nm -u` of the CUDA objects names every cublas*
// symbol they use; one missing here fails the link, so none can be forgotten.
#include "towerflow/device/cuda/cublas_loader.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

namespace tw::cuda {
namespace {

// A library opened once (RTLD_NOW: every symbol resolved at load, so a broken
// library fails here, not in the middle of a step).
struct Library {
  void* handle = nullptr;
  std::string error;
};

const Library& Open(const std::string& soname) {
  // One per soname; both statics are initialised once, thread-safely.
  static const Library cublas = [] {
    Library l;
    l.handle = ::dlopen(CublasSoname().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) l.error = ::dlerror();
    return l;
  }();
  static const Library cublas_lt = [] {
    Library l;
    l.handle = ::dlopen(CublasLtSoname().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) l.error = ::dlerror();
    return l;
  }();
  return soname == CublasSoname() ? cublas : cublas_lt;
}

// The function `name` of the library, or nullptr.
template <typename Fn>
Fn Resolve(const std::string& soname, const char* name) {
  const Library& l = Open(soname);
  return l.handle == nullptr ? nullptr : reinterpret_cast<Fn>(::dlsym(l.handle, name));
}

}  // namespace

std::string CublasSoname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }
std::string CublasLtSoname() { return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR); }

bool LoadCublas(std::string* why) {
  for (const std::string& soname : {CublasSoname(), CublasLtSoname()}) {
    const Library& l = Open(soname);
    if (l.handle == nullptr) {
      if (why != nullptr) *why = l.error;
      return false;
    }
  }
  return true;
}

}  // namespace tw::cuda

// ---- the forwarded entry points (the signatures of cublas_v2.h / cublasLt.h) ----

using tw::cuda::CublasLtSoname;
using tw::cuda::CublasSoname;
using tw::cuda::Resolve;

// `FN` is the function; the macro body calls it once it is resolved.
#define TW_FORWARD(soname, fn, ...)                                              \
  static const auto real = Resolve<decltype(&fn)>(soname, #fn);                  \
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;                     \
  return real(__VA_ARGS__)

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  TW_FORWARD(CublasSoname(), cublasCreate_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  TW_FORWARD(CublasSoname(), cublasDestroy_v2, handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  TW_FORWARD(CublasSoname(), cublasSetStream_v2, handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspace_bytes) {
  TW_FORWARD(CublasSoname(), cublasSetWorkspace_v2, handle, workspace, workspace_bytes);
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  TW_FORWARD(CublasSoname(), cublasSetMathMode, handle, mode);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                         void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  // cublasGemmEx is overloaded in C++ (a legacy cudaDataType computeType): the
  // pointer type is spelled out.
  using Fn = cublasStatus_t(CUBLASWINAPI*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                           cublasGemmAlgo_t);
  static const auto real = Resolve<Fn>(CublasSoname(), "cublasGemmEx");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  return real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
              algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k,
                                                       const void* alpha, const void* A, cudaDataType Atype, int lda,
                                                       long long int strideA, const void* B, cudaDataType Btype,
                                                       int ldb, long long int strideB, const void* beta, void* C,
                                                       cudaDataType Ctype, int ldc, long long int strideC,
                                                       int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t algo) {
  // Overloaded in C++ as cublasGemmEx is: the pointer type is spelled out.
  using Fn = cublasStatus_t(CUBLASWINAPI*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                           const void*, const void*, cudaDataType, int, long long int, const void*,
                                           cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                           long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const auto real = Resolve<Fn>(CublasSoname(), "cublasGemmStridedBatchedEx");
  if (real == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  return real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
              ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  TW_FORWARD(CublasLtSoname(), cublasLtCreate, handle);
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) {
  TW_FORWARD(CublasLtSoname(), cublasLtDestroy, handle);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc,
                                                     cublasComputeType_t computeType, cudaDataType_t scaleType) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulDescCreate, matmulDesc, computeType, scaleType);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulDescDestroy, matmulDesc);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                           size_t sizeInBytes) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulDescSetAttribute, matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatrixLayoutCreate, matLayout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatrixLayoutDestroy, matLayout);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulPreferenceCreate, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulPreferenceDestroy, pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void* buf, size_t sizeInBytes) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulPreferenceSetAttribute, pref, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
                                                           cublasLtMatmulDesc_t operationDesc,
                                                           cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                                           cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                                           cublasLtMatmulPreference_t preference,
                                                           int requestedAlgoCount,
                                                           cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                                           int* returnAlgoCount) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmulAlgoGetHeuristic, lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc,
             preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                           void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream) {
  TW_FORWARD(CublasLtSoname(), cublasLtMatmul, lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D,
             Ddesc, algo, workspace, workspaceSizeInBytes, stream);
}

// The status texts: the library's when it loads, else why it did not.
const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static const auto real = Resolve<decltype(&cublasGetStatusName)>(CublasSoname(), "cublasGetStatusName");
  return real != nullptr ? real(status) : "CUBLAS_STATUS_NOT_INITIALIZED (cuBLAS not loaded)";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto real = Resolve<decltype(&cublasGetStatusString)>(CublasSoname(), "cublasGetStatusString");
  if (real != nullptr) return real(status);
  static const std::string why = [] {
    std::string error;
    tw::cuda::LoadCublas(&error);
    return "towerflow could not load " + CublasSoname() + " / " + CublasLtSoname() + ": " + error;
  }();
  return why.c_str();
}

}  // extern "C"

#undef TW_FORWARD
