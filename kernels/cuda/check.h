// Error checks for CUDA runtime, cuBLAS(Lt) and cuDNN calls. A failing call throws gptrain::Error
// naming the call, the file:line and the library's own message. The failure path lives out of line
// (check_cuda.cpp) so device code and .cu files do not pull in fmt.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace gptrain::cuda {

[[noreturn]] void fail_cuda(cudaError_t err, const char* expr, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t st, const char* expr, const char* file, int line);
[[noreturn]] void fail_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line);

}  // namespace gptrain::cuda

#define GPTRAIN_CUDA_CHECK(expr)                                                                          \
  do {                                                                                                    \
    cudaError_t gptrain_err_ = (expr);                                                                    \
    if (gptrain_err_ != cudaSuccess) ::gptrain::cuda::fail_cuda(gptrain_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, execution errors at the next sync.
#define GPTRAIN_CUDA_CHECK_LAUNCH() GPTRAIN_CUDA_CHECK(cudaGetLastError())

#define GPTRAIN_CUBLAS_CHECK(expr)                                                                                  \
  do {                                                                                                              \
    cublasStatus_t gptrain_st_ = (expr);                                                                            \
    if (gptrain_st_ != CUBLAS_STATUS_SUCCESS) ::gptrain::cuda::fail_cublas(gptrain_st_, #expr, __FILE__, __LINE__); \
  } while (0)

#define GPTRAIN_CUDNN_CHECK(expr)                                                                                 \
  do {                                                                                                            \
    cudnnStatus_t gptrain_st_ = (expr);                                                                           \
    if (gptrain_st_ != CUDNN_STATUS_SUCCESS) ::gptrain::cuda::fail_cudnn(gptrain_st_, #expr, __FILE__, __LINE__); \
  } while (0)
