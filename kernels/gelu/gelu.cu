// GELU (tanh / erf), SwiGLU and GeGLU on CUDA: elementwise in fp32 with kernels/gelu/gelu_math.h's maths,
// one rounding to the compute dtype on store. In place is allowed (out == inp, dinp == dout): each
// element is read before it is written by the same thread.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/gelu/gelu.h"
#include "kernels/gelu/gelu_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 256;

template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, std::size_t n, bool erf_form) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float x = to_f32(inp[i]);
    out[i] = from_f32<T>(erf_form ? gelu_erf(x) : gelu_tanh(x));
  }
}

template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, std::size_t n, bool erf_form) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float x = to_f32(inp[i]);
    dinp[i] = from_f32<T>(to_f32(dout[i]) * (erf_form ? gelu_erf_grad(x) : gelu_tanh_grad(x)));
  }
}

// inp (N, 2F) = [gate | up] per row; out (N, F).
template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int N, int F) {
  const std::size_t total = std::size_t(N) * F;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / F, j = i % F;
    const T* row = inp + r * 2 * F;
    out[i] = from_f32<T>(swiglu(to_f32(row[j]), to_f32(row[F + j])));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(T* dinp, const T* inp, const T* dout, int N, int F) {
  const std::size_t total = std::size_t(N) * F;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / F, j = i % F;
    const T* row = inp + r * 2 * F;
    float dg, du;
    swiglu_grad(to_f32(row[j]), to_f32(row[F + j]), to_f32(dout[i]), &dg, &du);
    T* drow = dinp + r * 2 * F;
    drow[j] = from_f32<T>(dg);
    drow[F + j] = from_f32<T>(du);
  }
}

// inp (N, 2F) = [gate | up] per row; out (N, F) = gelu(gate) * up.
template <typename T>
__global__ void geglu_forward_kernel(T* out, const T* inp, int N, int F, bool erf_form) {
  const std::size_t total = std::size_t(N) * F;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / F, j = i % F;
    const T* row = inp + r * 2 * F;
    out[i] = from_f32<T>(geglu(to_f32(row[j]), to_f32(row[F + j]), erf_form));
  }
}

template <typename T>
__global__ void geglu_backward_kernel(T* dinp, const T* inp, const T* dout, int N, int F, bool erf_form) {
  const std::size_t total = std::size_t(N) * F;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = i / F, j = i % F;
    const T* row = inp + r * 2 * F;
    float dg, du;
    geglu_grad(to_f32(row[j]), to_f32(row[F + j]), to_f32(dout[i]), erf_form, &dg, &du);
    T* drow = dinp + r * 2 * F;
    drow[j] = from_f32<T>(dg);
    drow[F + j] = from_f32<T>(du);
  }
}

}  // namespace

void gelu_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, GeluKind kind) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    gelu_forward_kernel<T><<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(inp), n,
                                                                  kind == GeluKind::Erf);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void gelu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, std::size_t n,
                   GeluKind kind) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    gelu_backward_kernel<T><<<grid_for(n, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), n, kind == GeluKind::Erf);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void swiglu_forward(cudaStream_t s, DType t, void* out, const void* inp, int N, int F) {
  if (N == 0 || F == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    swiglu_forward_kernel<T><<<grid_for(std::size_t(N) * F, kBlock), kBlock, 0, s>>>(static_cast<T*>(out),
                                                                                     static_cast<const T*>(inp), N, F);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void swiglu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, int N, int F) {
  if (N == 0 || F == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    swiglu_backward_kernel<T><<<grid_for(std::size_t(N) * F, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), N, F);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void geglu_forward(cudaStream_t s, DType t, void* out, const void* inp, int N, int F, GeluKind kind) {
  if (N == 0 || F == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    geglu_forward_kernel<T><<<grid_for(std::size_t(N) * F, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(out), static_cast<const T*>(inp), N, F, kind == GeluKind::Erf);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void geglu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, int N, int F,
                    GeluKind kind) {
  if (N == 0 || F == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    geglu_backward_kernel<T><<<grid_for(std::size_t(N) * F, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), N, F, kind == GeluKind::Erf);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
