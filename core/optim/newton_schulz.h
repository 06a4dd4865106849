// Newton-Schulz orthogonalization of one fp32 matrix on the backend (the Muon update): X is normalized by its
// Frobenius norm (divided by max(norm, 1e-7)), worked on as X^T when it has more rows than columns, then each
// step with coefficients (a, b, c) is
//   A = X X^T,  B = b A + c A A,  X = a X + B X
// (the GEMMs are Backend::gemm_f32). Coefficient sets are Megatron's --muon-coefficient-type names (those of
// its emerging-optimizers dependency), cycled over --muon-num-ns-steps, except polar_express, cans and
// deepseekv4, whose last set repeats. bf16: every step's inputs and outputs are rounded to bf16 values, as
// torch's Newton-Schulz runs in bf16 under --muon-fp32-matmul-prec medium (products exact, fp32 sums).
#pragma once

#include "kernels/backend.h"

#include <array>
#include <string>
#include <vector>

namespace gptrain {

struct NewtonSchulzOptions {
  int steps = 5;
  std::string coefficients = "quintic";
  bool bf16 = false;
};

// The known coefficient-set names, and one name's (a, b, c) per step (Error for an unknown name).
const std::vector<std::string>& newton_schulz_coefficient_types();
std::vector<std::array<float, 3>> newton_schulz_coefficients(const std::string& type, int steps);

// Orthogonalizes X (rows x cols, row-major, device fp32) in place.
void newton_schulz(Backend& be, float* X, int rows, int cols, const NewtonSchulzOptions& o);

}  // namespace gptrain
