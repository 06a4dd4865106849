// Out-of-line failure paths of the GPTRAIN_*_CHECK macros (check.h).
#include "kernels/cuda/check.h"

#include "core/common/error.h"

namespace gptrain::cuda {

void fail_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  fail(
      "{}:{}: CUDA call failed: {}: {} ({}); if this is an illegal address or launch failure, rerun under "
      "compute-sanitizer to find the kernel",
      file, line, expr, cudaGetErrorString(err), cudaGetErrorName(err));
}

void fail_cublas(cublasStatus_t st, const char* expr, const char* file, int line) {
  fail("{}:{}: cuBLAS call failed: {}: {} ({})", file, line, expr, cublasGetStatusString(st), cublasGetStatusName(st));
}

void fail_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line) {
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  fail("{}:{}: cuDNN call failed: {}: {}{}{}", file, line, expr, cudnnGetErrorString(st), detail[0] ? ": " : "",
       detail);
}

}  // namespace gptrain::cuda
