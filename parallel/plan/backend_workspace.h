// The backend's own device scratch for one stage, estimated from the shapes before anything runs
// (the "workspace" entry of the memory plans). The sizing rules are those of the CUDA sources:
//   gemm       cuBLASLt's one fixed workspace (kernels/matmul/matmul_cublaslt_cuda.cpp, kWorkspaceBytes)
//   scratch    the CUDA backend's grow-only Workspace (kernels/cuda/workspace_cuda.cpp: a request of r bytes
//              that grows it allocates r + r/4), at its largest request, which is one of
//                embedding_backward  kernels/embedding/embedding.cu scatter_rows: 4 int32 key/value arrays
//                                    of N + cub::DeviceRadixSort temp storage (bound below)
//                layernorm/rmsnorm   kernels/layernorm/layernorm.cu norm_backward: 2 x (ceil(N/128), C) fp32
//                bias_grad           kernels/matmul/matmul.cu: (ceil(N/128), OC) fp32, each linear with a bias
//                attention backward  kernels/attention/attention.cu, attention_tc.cu: rowsum D (B*T*NH) fp32
//                sum_squares         kernels/elementwise/elementwise.cu: ceil(n/65536) + 1 doubles
//   attention  cuDNN attention's own grow-only Workspace (kernels/attention/attention_cudnn_cuda.cpp): the
//              backward carves [plan workspace | softmax_sum (B*NH*T) fp32 | dQ accumulator (B*NH*T*HS) fp32,
//              non-deterministic engines only]; the forward asks for the plan workspace alone. The plan
//              workspace is cuDNN's choice, known only once its graph is built: not counted, so with cuDNN
//              attention possible the figure is a lower bound (plan_workspace_unknown).
// Every request is 256-byte rounded per piece (Carver). With sequence parallelism the row count N used
// is the full B*T, an upper bound for the norms and row-parallel biases that see N/TP rows.
// The CPU backend allocates no scratch from the arenas (its per-call host temporaries, e.g. the
// attention's per-thread score blocks, come and go with each op): 0.
#pragma once

#include "core/model/model_config.h"
#include "kernels/backend.h"

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

// cuBLASLt's workspace bytes (matmul_cublaslt_cuda.cpp allocates exactly this once per backend).
inline constexpr std::size_t kCublasLtWorkspaceBytes = std::size_t(32) << 20;

// Upper bound of cub::DeviceRadixSort::SortPairs' temp storage for n int32 keys/values with separate
// in/out arrays (CUDA 12/13 dispatch_radix_sort.cuh, onesweep): alternate key and value buffers
// (2 x 4n), lookback (one 256-digit int row per tile; tiles hold >= 256 items, so <= 4 (n + 255)),
// and a 1 MiB allowance for bins, counters, alignment and the non-onesweep path's spine.
std::size_t cub_sort_pairs_temp_bound(std::size_t n);

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
