// The backend's own device scratch for one stage, estimated from the shapes before anything runs
// (the "workspace" entry of the memory plans). Nothing here restates a kernel: the sizes come from the
// functions the CUDA code itself requests with (plain headers, no CUDA toolkit needed):
//   gemm       cuBLASLt's one fixed workspace, kCublasLtWorkspaceBytes (kernels/matmul/matmul.h)
//   scratch    the CUDA backend's grow-only Workspace (kernels/cuda/workspace_size.h: piece rounding and
//              growth) at its largest request, one of the ops' *_scratch_bytes in their headers:
//              embedding backward (with a bound of CUB's sort storage), layernorm/rmsnorm backward, bias
//              gradient (each linear with a bias), the own flash backward (every attention path's
//              fallback), sum_squares over the stage's gradients, and the MoE router and losses
//   attention  cuDNN attention's own grow-only Workspace (kernels/attention/attention_cudnn_shape.h): when
//              its shape rule admits the stage, the backward's request; the plan workspace in it is cuDNN's
//              choice, known only once its graph is built: not counted, so with cuDNN attention possible
//              the figure is a lower bound (plan_workspace_unknown).
// With sequence parallelism the row count N used is the full B*T, an upper bound for the norms and
// row-parallel biases that see N/TP rows.
// The CPU backend allocates no scratch from the arenas (its per-call host temporaries, e.g. the
// attention's per-thread score blocks, come and go with each op): 0.
#pragma once

#include "core/model/model_config.h"
#include "kernels/backend.h"
#include "kernels/matmul/matmul.h"

#include <cstddef>
#include <string>

namespace gptrain {
class Backend;
}

namespace gptrain::parallel {

// How the backend will run: which backend, and for CUDA its attention backend and determinism.
struct WorkspaceOptions {
  std::string backend = "cpu";  // "cpu" | "cuda"
  BackendOptions cuda;
};

struct BackendWorkspace {
  std::size_t gemm = 0;                 // cuBLASLt workspace
  std::size_t scratch = 0;              // the CUDA backend's Workspace capacity at its peak
  std::size_t attention = 0;            // cuDNN attention's Workspace, its plan workspace not included
  bool plan_workspace_unknown = false;  // cuDNN attention may run: its plan workspace comes on top
  std::size_t total() const { return gemm + scratch + attention; }
};

// cuBLASLt's workspace bytes (kernels/matmul/matmul.h).
using cuda::kCublasLtWorkspaceBytes;

// The estimate for one stage: `stage` finalized (its local_sizes), `grad_elements` the largest
// gradient range one sum_squares call covers (the stage's parameter count).
BackendWorkspace backend_workspace(const StageConfig& stage, DType compute, const WorkspaceOptions& o,
                                   std::size_t grad_elements);

// Several stages (model chunks) on one backend share its workspaces, which keep their largest size:
// the field-wise maximum.
BackendWorkspace max_workspace(const BackendWorkspace& a, const BackendWorkspace& b);

// The options a built backend runs with (cuda: its attention backend and determinism).
WorkspaceOptions workspace_options(const Backend& be);
// The options the training flags select, for --dry-run (backend "cpu" or "cuda").
WorkspaceOptions workspace_options(const std::string& backend, const std::string& attention_backend,
                                   bool deterministic);

// "32.00 MiB cuBLASLt + 1.60 MiB reductions + 31.87 MiB cuDNN attention" style breakdown, with
// "+ cuDNN plan workspace" when it is not counted; "none" for 0.
std::string describe_workspace(const BackendWorkspace& w);

}  // namespace gptrain::parallel
