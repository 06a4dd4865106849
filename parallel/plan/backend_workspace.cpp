#include "parallel/plan/backend_workspace.h"

#include "parallel/plan/memory_plan.h"
#include "kernels/backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace gptrain::parallel {

namespace {

// kernels/cuda/workspace.h carve_bytes: each piece rounded up to 256 bytes.
std::size_t carve(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Workspace::get grows to r + r/4 for a request r above its capacity, so the capacity after the
// largest request r_max is at most r_max + r_max/4.
std::size_t grown(std::size_t r) { return r + r / 4; }

constexpr std::size_t kNormTileRows = 128;     // layernorm.cu kTileRows
constexpr std::size_t kBiasTileRows = 128;     // matmul.cu kTileRows
constexpr std::size_t kSumSqChunk = 1u << 16;  // elementwise.cu sum_squares kChunk

bool cudnn_attention_possible(const StageConfig& c, const LocalSizes& s, DType compute, const WorkspaceOptions& o) {
  if (o.cuda.attention != AttentionBackend::Auto && o.cuda.attention != AttentionBackend::Cudnn) return false;
  // The shape-level conditions of CudnnAttention::supports (the device and cuDNN version are not known here).
  return compute != DType::F32 && c.attention_dropout == 0.0f && s.HS % 8 == 0 && s.HS <= 128;
}

}  // namespace

std::size_t cub_sort_pairs_temp_bound(std::size_t n) { return 2 * 4 * n + 4 * (n + 255) + (std::size_t(1) << 20); }

BackendWorkspace backend_workspace(const StageConfig& c, DType compute, const WorkspaceOptions& o,
                                   std::size_t grad_elements) {
  BackendWorkspace w;
  if (o.backend != "cuda") return w;
  const LocalSizes s = local_sizes(c);
  const std::size_t N = std::size_t(s.N);
  w.gemm = kCublasLtWorkspaceBytes;

  std::size_t r = 0;    // the backend Workspace's largest request
  if (c.has_embedding)  // scatter_rows, once for the token and once for the position table
    r = std::max(r, 4 * carve(4 * N) + carve(cub_sort_pairs_temp_bound(N)));
  const std::size_t norm_tiles = (N + kNormTileRows - 1) / kNormTileRows;
  if (c.num_local_layers() > 0 || c.has_head) r = std::max(r, 2 * carve(4 * norm_tiles * std::size_t(s.C)));
  const std::size_t bias_tiles = (N + kBiasTileRows - 1) / kBiasTileRows;
  std::size_t bias_width = 0;
  if (c.num_local_layers() > 0) {
    if (c.qkv_bias()) bias_width = std::max(bias_width, std::size_t(s.QKV));
    if (c.proj_bias()) bias_width = std::max(bias_width, std::size_t(s.C));
    if (c.mlp_bias()) bias_width = std::max({bias_width, std::size_t(s.F1), std::size_t(s.C)});
  }
  if (c.has_head && c.output_layer_bias) bias_width = std::max(bias_width, std::size_t(s.V));
  if (bias_width) r = std::max(r, carve(4 * bias_tiles * bias_width));
  const std::size_t rows = std::size_t(s.B) * s.T * s.NH;          // (B, T, NH) attention rows
  if (c.num_local_layers() > 0) r = std::max(r, carve(4 * rows));  // flash/tc backward D (every path's fallback)
  r = std::max(r, carve(8 * ((grad_elements + kSumSqChunk - 1) / kSumSqChunk)) + carve(8));
  w.scratch = grown(r);

  if (c.num_local_layers() > 0 && cudnn_attention_possible(c, s, compute, o)) {
    const std::size_t known = carve(4 * rows) + (o.cuda.deterministic ? 0 : carve(4 * rows * std::size_t(s.HS)));
    w.attention = grown(known);
    w.plan_workspace_unknown = true;
  }
  return w;
}

BackendWorkspace max_workspace(const BackendWorkspace& a, const BackendWorkspace& b) {
  BackendWorkspace w;
  w.gemm = std::max(a.gemm, b.gemm);
  w.scratch = std::max(a.scratch, b.scratch);
  w.attention = std::max(a.attention, b.attention);
  w.plan_workspace_unknown = a.plan_workspace_unknown || b.plan_workspace_unknown;
  return w;
}

WorkspaceOptions workspace_options(const Backend& be) {
  WorkspaceOptions o;
  o.backend = be.name();
  if (o.backend == "cuda") o.cuda = be.options();
  return o;
}

WorkspaceOptions workspace_options(const std::string& backend, const std::string& attention_backend,
                                   bool deterministic) {
  WorkspaceOptions o;
  o.backend = backend;
  o.cuda.attention = parse_attention_backend(attention_backend);
  o.cuda.deterministic = deterministic;
  return o;
}

std::string describe_workspace(const BackendWorkspace& w) {
  if (w.total() == 0 && !w.plan_workspace_unknown) return "none";
  std::string s = fmt::format("{} cuBLASLt + {} reductions", format_bytes(w.gemm), format_bytes(w.scratch));
  if (w.attention) s += fmt::format(" + {} cuDNN attention", format_bytes(w.attention));
  if (w.plan_workspace_unknown) s += " + cuDNN plan workspace, known only at run time";
  return s;
}

}  // namespace gptrain::parallel
