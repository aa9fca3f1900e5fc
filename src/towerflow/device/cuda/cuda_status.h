// Status from CUDA, cuBLAS, cuDNN and NCCL return codes.
//
// Every call into a CUDA library goes through one of these macros, which turn
// a failure into a Status carrying the call's text, the library's own error
// name and string, and file:line (STYLE.md, Errors): out-of-memory codes become
// ResourceExhausted, everything else Internal. TW_CUDA_LAUNCH_CHECK() follows
// every <<<...>>> launch (launch errors are only visible through
// cudaGetLastError). Header-only macros over functions in cuda_status.cc;
// thread-safe.
#ifndef TOWERFLOW_DEVICE_CUDA_CUDA_STATUS_H_
#define TOWERFLOW_DEVICE_CUDA_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "towerflow/core/status.h"

namespace tw {

// OK for success; otherwise "<call> failed at <file>:<line>: <name>: <string>".
Status CudaStatus(cudaError_t err, const char* call, const char* file, int line);
Status CublasStatus(cublasStatus_t err, const char* call, const char* file, int line);
Status CudnnStatus(cudnnStatus_t err, const char* call, const char* file, int line);
Status NcclStatus(ncclResult_t err, const char* call, const char* file, int line);

}  // namespace tw

#define TW_CUDA_STATUS_IMPL_(fn, expr)                                    \
  do {                                                                    \
    ::tw::Status _tw_cuda_s = ::tw::fn((expr), #expr, __FILE__, __LINE__); \
    if (!_tw_cuda_s.ok()) return _tw_cuda_s;                              \
  } while (0)

#define TW_CUDA_RETURN_IF_ERROR(expr) TW_CUDA_STATUS_IMPL_(CudaStatus, expr)
#define TW_CUBLAS_RETURN_IF_ERROR(expr) TW_CUDA_STATUS_IMPL_(CublasStatus, expr)
#define TW_CUDNN_RETURN_IF_ERROR(expr) TW_CUDA_STATUS_IMPL_(CudnnStatus, expr)
#define TW_NCCL_RETURN_IF_ERROR(expr) TW_CUDA_STATUS_IMPL_(NcclStatus, expr)
// After a kernel launch: the launch's own error (bad configuration, no kernel
// image for this GPU), as a Status returned from the enclosing function.
#define TW_CUDA_LAUNCH_CHECK() TW_CUDA_RETURN_IF_ERROR(cudaGetLastError())

#endif  // TOWERFLOW_DEVICE_CUDA_CUDA_STATUS_H_
