// GPTRAIN_HD marks the per-element maths shared by the CPU twin (*.cpp) and the CUDA kernels (*.cu):
// one definition, compiled for host and device under nvcc, plain C++ otherwise. Shared functions are
// written `GPTRAIN_HD inline T f(...)`, use only <cmath> float functions that CUDA also provides
// (expf, tanhf, erff, sqrtf, powf, sinf, cosf, logf) and no std:: containers.
#pragma once

#ifdef __CUDACC__
#define GPTRAIN_HD __host__ __device__
#else
#define GPTRAIN_HD
#endif
