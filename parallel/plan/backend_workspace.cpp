#include "parallel/plan/backend_workspace.h"

#include "parallel/plan/memory_plan.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_cudnn_shape.h"
#include "kernels/backend.h"
#include "kernels/cuda/workspace_size.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace gptrain::parallel {

namespace {

bool cudnn_attention_possible(const StageConfig& c, const LocalSizes& s, DType compute, const WorkspaceOptions& o) {
  if (o.cuda.attention != AttentionBackend::Auto && o.cuda.attention != AttentionBackend::Cudnn) return false;
  // The shape-level rule of CudnnAttention::supports (the device and cuDNN version are not known here).
  // Segment masks (--reset-attention-mask) are a data flag the model config does not hold: taken as absent,
  // which can only overestimate. Layers whose sliding window hides keys run on the own kernels.
  bool full_layer = false;
  for (int l = c.layer_first; l < c.layer_last; ++l) {
    const int w = c.attention_window(l);
    full_layer = full_layer || w < 0 || w >= s.T - 1;
  }
  if (!full_layer) return false;
  return cuda::cudnn_attention_shape_supported(compute, s.T, s.NH, s.NKV, s.HS, /*segments=*/false, c.attention_dropout,
                                               nullptr);
}

bool has_local_moe_layer(const StageConfig& c) {
  for (int l = c.layer_first; l < c.layer_last; ++l)
    if (c.moe.is_moe_layer(l)) return true;
  return false;
}

// The largest request the CUDA backend's Workspace sees over a training step of this stage: each op that
// runs, at its shape, through the op's own *_scratch_bytes function.
std::size_t largest_scratch_request(const StageConfig& c, const LocalSizes& s, std::size_t grad_elements) {
  const std::size_t N = std::size_t(s.N);
  std::size_t r = cuda::sum_squares_scratch_bytes(grad_elements);
  if (c.has_embedding)  // once for the token and once for the position table
    r = std::max(r, cuda::embedding_backward_scratch_bytes(N, cuda::embedding_sort_temp_bytes_bound(N)));
  if (c.num_local_layers() > 0 || c.has_head) r = std::max(r, cuda::norm_backward_scratch_bytes(N, s.C));
  std::size_t bias_width = 0;  // the widest linear with a bias
  if (c.num_local_layers() > 0) {
    if (c.qkv_bias()) bias_width = std::max(bias_width, std::size_t(s.QKV));
    if (c.proj_bias()) bias_width = std::max(bias_width, std::size_t(s.C));
    if (c.mlp_bias()) bias_width = std::max({bias_width, std::size_t(s.F1), std::size_t(s.C)});
  }
  if (c.has_head && c.output_layer_bias) bias_width = std::max(bias_width, std::size_t(s.V));
  if (bias_width) r = std::max(r, cuda::bias_grad_scratch_bytes(N, bias_width));
  if (c.num_local_layers() > 0)  // the own flash backward: every attention path's fallback
    r = std::max(r, cuda::flash_attention_backward_scratch_bytes(s.B, s.T, s.NH));
  if (has_local_moe_layer(c)) {
    const MoeConfig& m = c.moe;
    const std::size_t seqs = m.balance == MoeBalance::SeqAuxLoss ? std::size_t(s.B) : 1;
    if (m.sinkhorn()) r = std::max(r, cuda::moe_sinkhorn_router_scratch_bytes(N, s.E, /*train=*/true));
    if (m.balance_loss_on())
      r = std::max({r, cuda::moe_load_balancing_loss_scratch_bytes(s.E, seqs),
                    cuda::moe_load_balancing_loss_backward_scratch_bytes(s.E, seqs)});
    if (m.z_loss_on()) r = std::max(r, cuda::moe_z_loss_scratch_bytes(N));
  }
  return r;
}

}  // namespace

BackendWorkspace backend_workspace(const StageConfig& c, DType compute, const WorkspaceOptions& o,
                                   std::size_t grad_elements) {
  BackendWorkspace w;
  if (o.backend != "cuda") return w;
  const LocalSizes s = local_sizes(c);
  w.gemm = cuda::kCublasLtWorkspaceBytes;
  w.scratch = cuda::workspace_grown_capacity(largest_scratch_request(c, s, grad_elements));
  if (c.num_local_layers() > 0 && cudnn_attention_possible(c, s, compute, o)) {
    // The backward's request less the plan workspace, which only cuDNN knows (at run time).
    const bool dq_accum = cuda::cudnn_attention_backward_accumulates_dq(o.cuda.deterministic);
    w.attention = cuda::workspace_grown_capacity(
        cuda::cudnn_attention_backward_scratch_bytes(s.B, s.T, s.NH, s.HS, /*plan_workspace=*/0, dq_accum));
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
