// Statuses from CUDA, cuBLAS, cuDNN and NCCL return codes (cuda_status.h).
#include "towerflow/device/cuda/cuda_status.h"

#include <string_view>

namespace tw {
namespace {

// "towerflow/kernels/cwise_cuda.cu" for "/work/x/src/towerflow/kernels/cwise_cuda.cu"
// (or "../src/..." from a build tree): the path under the last "src/"
// directory, so messages do not depend on where the tree was checked out.
std::string_view SourcePath(const char* file) {
  std::string_view path = file != nullptr ? file : "";
  for (size_t pos = path.rfind("src/"); pos != std::string_view::npos;
       pos = pos == 0 ? std::string_view::npos : path.rfind("src/", pos - 1)) {
    if (pos == 0 || path[pos - 1] == '/') return path.substr(pos + 4);
  }
  return path;
}

Status Make(bool out_of_memory, const char* call, const char* file, int line, const char* name,
            const char* text) {
  std::string message = StrCat(call, " failed at ", SourcePath(file), ":", line, ": ", name != nullptr ? name : "?",
                               ": ", text != nullptr ? text : "?");
  return Status(out_of_memory ? Code::kResourceExhausted : Code::kInternal, std::move(message));
}

}  // namespace

Status CudaStatus(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return Status::OK();
  // A failed runtime call also stays the thread's "last error" until
  // cudaGetLastError reads it: reset it here, so that the next
  // TW_CUDA_LAUNCH_CHECK on this thread reports its own launch, not this call.
  // (A sticky error, a corrupt context, is returned by every later call anyway.)
  (void)cudaGetLastError();
  return Make(err == cudaErrorMemoryAllocation, call, file, line, cudaGetErrorName(err), cudaGetErrorString(err));
}

Status CublasStatus(cublasStatus_t err, const char* call, const char* file, int line) {
  if (err == CUBLAS_STATUS_SUCCESS) return Status::OK();
  return Make(err == CUBLAS_STATUS_ALLOC_FAILED, call, file, line, cublasGetStatusName(err),
              cublasGetStatusString(err));
}

Status CudnnStatus(cudnnStatus_t err, const char* call, const char* file, int line) {
  if (err == CUDNN_STATUS_SUCCESS) return Status::OK();
  // cuDNN 9 split CUDNN_STATUS_ALLOC_FAILED (now a deprecated alias of the
  // host case) into a host and a device allocation failure; both are memory.
  const bool oom = err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                   err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  // cudnnGetErrorString gives the code's name ("CUDNN_STATUS_BAD_PARAM"); the
  // numeric code stands in for the description cuDNN does not give per code.
  const std::string code = StrCat("cuDNN status ", static_cast<int>(err));
  return Make(oom, call, file, line, cudnnGetErrorString(err), code.c_str());
}

Status NcclStatus(ncclResult_t err, const char* call, const char* file, int line) {
  if (err == ncclSuccess) return Status::OK();
  // ncclSystemError is a failed system call or socket, not device memory.
  const std::string code = StrCat("ncclResult ", static_cast<int>(err));
  return Make(false, call, file, line, code.c_str(), ncclGetErrorString(err));
}

}  // namespace tw
