// cuBLAS and cuBLASLt, loaded when first called.
//
// libcublasLt costs about 210 MB of resident memory the moment it is mapped
// (measured: a program that only links it peaks at 212 MB; one that links
// nothing at 1 MB), which every `towerflow` command paid, `--help` included,
// on every machine, GPU or not. So towerflow does not link them: the few
// entry points it calls are defined in cublas_loader.cc, each forwarding to
// the real function, resolved with dlopen/dlsym of libcublas.so.<major> and
// libcublasLt.so.<major> (the toolkit's major version) on the first call (the
// lazy loading TF does for its CUDA libraries). A process that never creates a
// GPU device never loads them.
//
// When a library cannot be loaded every forwarded call returns
// CUBLAS_STATUS_NOT_INITIALIZED, and cublasGetStatusString says why (the
// dlopen error), so a GPU device that fails to start names the cause.
// Thread-safe: each library is loaded once, under a function-local static.
#ifndef TOWERFLOW_DEVICE_CUDA_CUBLAS_LOADER_H_
#define TOWERFLOW_DEVICE_CUDA_CUBLAS_LOADER_H_

#include <string>

namespace tw::cuda {

// Loads libcublas and libcublasLt if they are not loaded yet. True when both
// are; otherwise false with *why (if not null) set to the dlopen error.
bool LoadCublas(std::string* why = nullptr);

// The sonames it loads: "libcublas.so.13", "libcublasLt.so.13".
std::string CublasSoname();
std::string CublasLtSoname();

}  // namespace tw::cuda

#endif  // TOWERFLOW_DEVICE_CUDA_CUBLAS_LOADER_H_
