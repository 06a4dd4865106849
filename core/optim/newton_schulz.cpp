#include "core/optim/newton_schulz.h"

#include "core/common/error.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace gptrain {

namespace {

using Coeffs = std::vector<std::array<float, 3>>;

// Published Newton-Schulz coefficient sets (a, b, c) by Megatron's names; `repeat_last`: after the list the
// last set repeats (otherwise the list cycles).
struct CoefficientSet {
  Coeffs sets;
  bool repeat_last = false;
};

const std::map<std::string, CoefficientSet>& coefficient_table() {
  static const std::map<std::string, CoefficientSet> table = {
      {"simple", {{{3.4445f, -4.7750f, 2.0315f}}, false}},
      {"quintic",
       {{{4.0848f, -6.8946f, 2.9270f},
         {3.9505f, -6.3029f, 2.6377f},
         {3.7418f, -5.5913f, 2.3037f},
         {2.8769f, -3.1427f, 1.2046f},
         {2.8366f, -3.0525f, 1.2012f}},
        false}},
      {"polar_express",
       {{{8.2051f, -22.9019f, 16.4607f},
         {4.0664f, -2.8612f, 0.5184f},
         {3.9096f, -2.8234f, 0.5250f},
         {3.2856f, -2.4153f, 0.4853f},
         {2.2779f, -1.6198f, 0.3985f},
         {1.8726f, -1.2307f, 0.3585f},
         {1.8564f, -1.2132f, 0.3568f},
         {1.8750f, -1.2500f, 0.3750f}},
        true}},
      {"cans",
       {{{8.4703f, -25.1081f, 18.6293f},
         {4.1828f, -3.1087f, 0.5806f},
         {3.9619f, -2.9541f, 0.5630f},
         {3.2866f, -2.4647f, 0.5074f},
         {2.2737f, -1.6447f, 0.4162f}},
        true}},
      {"aol",
       {{{4.0098f, -7.0585f, 2.4635f},
         {3.4585f, -5.5479f, 2.5959f},
         {2.7573f, -3.2939f, 1.4254f},
         {2.7215f, -3.0494f, 1.3169f}},
        false}},
      {"deepseekv4",
       {{{3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {3.4445f, -4.7750f, 2.0315f},
         {2.0f, -1.5f, 0.5f},
         {2.0f, -1.5f, 0.5f}},
        true}},
  };
  return table;
}

constexpr float kNormEps = 1e-7f;  // the normalization's floor (torch.nn.functional.normalize's eps there)

}  // namespace

const std::vector<std::string>& newton_schulz_coefficient_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [k, v] : coefficient_table()) n.push_back(k);
    return n;
  }();
  return names;
}

std::vector<std::array<float, 3>> newton_schulz_coefficients(const std::string& type, int steps) {
  const auto it = coefficient_table().find(type);
  check(it != coefficient_table().end(), "Newton-Schulz coefficient type '{}' is not one of {}", type,
        fmt::join(newton_schulz_coefficient_types(), ", "));
  check(steps >= 1, "Newton-Schulz needs at least 1 step (got {})", steps);
  const CoefficientSet& s = it->second;
  Coeffs out;
  for (int i = 0; i < steps; ++i) {
    const std::size_t k = std::size_t(i);
    out.push_back(k < s.sets.size() ? s.sets[k] : s.repeat_last ? s.sets.back() : s.sets[k % s.sets.size()]);
  }
  return out;
}

void newton_schulz(Backend& be, float* X, int rows, int cols, const NewtonSchulzOptions& o) {
  const Coeffs coeffs = newton_schulz_coefficients(o.coefficients, o.steps);
  const std::size_t n = std::size_t(rows) * std::size_t(cols);
  const float norm = static_cast<float>(std::sqrt(be.sum_squares(X, n)));
  be.muon_scale_round(X, n, std::max(norm, kNormEps), o.bf16);
  // Work on the smaller Gram matrix: X X^T (rows x rows) or, for a tall X, X^T X (cols x cols), which is the
  // same iteration on X^T (the products keep X's own layout, B being symmetric).
  const bool tall = rows > cols;
  const int s = tall ? cols : rows;
  const std::size_t ss = std::size_t(s) * std::size_t(s);
  float* buf = static_cast<float*>(be.alloc((2 * ss + n) * sizeof(float)));
  float* A = buf;
  float* B = buf + ss;
  float* Y = buf + 2 * ss;
  float* cur = X;
  float* next = Y;
  for (const auto& [a, b, c] : coeffs) {
    if (tall)
      be.gemm_f32(A, cur, cur, s, s, rows, true, false, 1.0f, 0.0f);
    else
      be.gemm_f32(A, cur, cur, s, s, cols, false, true, 1.0f, 0.0f);
    be.muon_scale_round(A, ss, 1.0f, o.bf16);
    const float* P = A;  // the polynomial in A that multiplies X
    float alpha = b;
    if (c != 0.0f) {
      be.copy(B, A, ss * sizeof(float));
      be.gemm_f32(B, A, A, s, s, s, false, false, c, b);
      be.muon_scale_round(B, ss, 1.0f, o.bf16);
      P = B;
      alpha = 1.0f;
    }
    be.copy(next, cur, n * sizeof(float));
    if (tall)
      be.gemm_f32(next, cur, P, rows, cols, cols, false, false, alpha, a);
    else
      be.gemm_f32(next, P, cur, rows, cols, rows, false, false, alpha, a);
    be.muon_scale_round(next, n, 1.0f, o.bf16);
    std::swap(cur, next);
  }
  if (cur != X) be.copy(X, cur, n * sizeof(float));
  be.release(buf);
}

}  // namespace gptrain
