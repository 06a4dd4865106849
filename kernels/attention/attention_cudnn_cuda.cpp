// cuDNN fused attention through the cuDNN 9 backend graph API (see attention_cudnn.h): the forward
// graph, shape checks, the plan cache and the execution of both directions. The backward graph is
// in attention_cudnn_backward_cuda.cpp, the descriptor helpers in attention_cudnn_graph_cuda.cpp.
// The forward graph is the scaled-dot-product pattern cuDNN's fused flash-attention engines recognise:
//   S = Q K^T (fp32) -> S * scale -> causal mask (gen_index row/col, row >= col, select mask value)
//   -> max, sub, exp, sum, log: Stats = max + log(sum) (the logsumexp, our lse) -> P = exp / sum, stored
//   (virtually) in the input dtype, since both operands of a matmul must share one -> O = P V
// Q, K, V are strided views into the packed qkv (B, T, (NH + 2 NKV) HS) buffer, O is (B, T, NH, HS),
// Stats (B, NH, T, 1) fp32 is lse, exactly kernels/backend.h's layout: nothing is copied.
#include "kernels/attention/attention_cudnn.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/attention/attention_cudnn_graph.h"
#include "kernels/cuda/check.h"

namespace gptrain::cuda {

void build_cudnn_attention_forward(CudnnAttention::Plan& p, cudnnHandle_t handle, std::size_t cudnn_version, DType t,
                                   int B, int T, int NH, int NKV, int HS) {
  (void)cudnn_version;  // the forward graph is the same for every cuDNN 9 version
  const cudnnDataType_t io = t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t b = B, s = T, h = NH, hk = NKV, d = HS;
  const int64_t row = (h + 2 * hk) * d;  // qkv row length
  int64_t uid = kUidVirtual;

  auto Q = p.tensor(kUidQ, io, {b, h, s, d}, {s * row, d, row, 1}, false);
  auto Kt = p.tensor(kUidK, io, {b, hk, d, s}, {s * row, d, 1, row}, false);  // K^T as a strided view
  auto V = p.tensor(kUidV, io, {b, hk, s, d}, {s * row, d, row, 1}, false);
  auto O = p.tensor(kUidO, io, {b, h, s, d}, {s * h * d, d, h * d, 1}, false);
  auto Stats = p.tensor(kUidStats, f32, {b, h, s, 1}, {h * s, s, 1, 1}, false);
  auto Scale = p.tensor(kUidScale, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto NegInf = p.tensor(kUidNegInf, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);

  const std::vector<int64_t> sd = {b, h, s, s}, ss = {h * s * s, s * s, s, 1};
  const std::vector<int64_t> rd = {b, h, s, 1}, rs = {h * s, s, 1, 1};
  auto S1 = p.tensor(uid++, f32, sd, ss, true);
  auto S2 = p.tensor(uid++, f32, sd, ss, true);
  auto Mx = p.tensor(uid++, f32, rd, rs, true);
  auto S4 = p.tensor(uid++, f32, sd, ss, true);
  auto E = p.tensor(uid++, f32, sd, ss, true);
  auto Z = p.tensor(uid++, f32, rd, rs, true);
  auto LZ = p.tensor(uid++, f32, rd, rs, true);
  auto P = p.tensor(uid++, io, sd, ss, true);  // the second matmul's A: V's dtype, as the fused engines require

  std::vector<cudnnBackendDescriptor_t> ops = {
      p.matmul(Q, Kt, S1),
      p.pointwise(CUDNN_POINTWISE_MUL, S1, Scale, S2),
  };
  auto S3 = p.causal_mask(ops, S2, NegInf, uid, sd, ss);
  for (auto op : {
           p.reduction(CUDNN_REDUCE_TENSOR_MAX, S3, Mx),
           p.pointwise(CUDNN_POINTWISE_SUB, S3, Mx, S4),
           p.pointwise(CUDNN_POINTWISE_EXP, S4, nullptr, E),
           p.reduction(CUDNN_REDUCE_TENSOR_ADD, E, Z),
           p.pointwise(CUDNN_POINTWISE_LOG, Z, nullptr, LZ),
           p.pointwise(CUDNN_POINTWISE_ADD, Mx, LZ, Stats),
           p.pointwise(CUDNN_POINTWISE_DIV, E, Z, P),
           p.matmul(P, V, O),
       })
    ops.push_back(op);
  p.finalize(handle, ops, /*deterministic=*/false);  // the forward has no cross-tile reductions
}

CudnnAttention::CudnnAttention() {
  cudnnHandle_t h = nullptr;
  GPTRAIN_CUDNN_CHECK(cudnnCreate(&h));
  handle_ = h;
  version_ = cudnnGetVersion();
}

CudnnAttention::~CudnnAttention() {
  plans_.clear();
  if (handle_) cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

bool CudnnAttention::supports(const CudaDeviceInfo& dev, DType t, int T, int NH, int NKV, int HS, bool segments,
                              float dropout_p, std::string* why) {
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (dev.cudnn_version < 90000) return no("cuDNN older than 9.0");
  if (dev.cudnn_version == 91000 || dev.cudnn_version == 91001)
    return no("cuDNN 9.10.0/9.10.1 have known bugs in fp16/bf16 fused attention (9.10.2+ is fine)");
  if (dev.cc_major < 8) return no("GPU older than sm_80");
  return cudnn_attention_shape_supported(t, T, NH, NKV, HS, segments, dropout_p, why);
}

bool CudnnAttention::supports_backward(const CudaDeviceInfo& dev, DType t, int T, int NH, int NKV, int HS,
                                       bool segments, float dropout_p, std::string* why) {
  if (!supports(dev, t, T, NH, NKV, HS, segments, dropout_p, why)) return false;
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (T == 1) return no("T = 1 (cuDNN's backward does not take s_q = s_kv = 1)");
  if (dev.cudnn_version <= 91500 && T % 128 != 0)
    return no("T not a multiple of 128 on cuDNN <= 9.15.0 (needs a padding-mask workaround this graph does not build)");
  return true;
}

void CudnnAttention::note_once(const std::string& message) {
  if (noted_.insert(message).second) log::info("{}", message);
}

CudnnAttention::Plan& CudnnAttention::plan_for(Direction dir, DType t, int B, int T, int NH, int NKV, int HS,
                                               bool deterministic) {
  Key key{dir, static_cast<int>(t), B, T, NH, NKV, HS, deterministic ? 1 : 0};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  try {
    if (dir == kForward)
      build_cudnn_attention_forward(*plan, h, version_, t, B, T, NH, NKV, HS);
    else
      build_cudnn_attention_backward(*plan, h, version_, t, B, T, NH, NKV, HS, deterministic);
  } catch (const Error& e) {  // a descriptor this cuDNN version rejects: no plan for the shape
    plan->ok = false;
    plan->error = e.what();
  }
  if (!plan->ok)
    log::warn("cuDNN attention {}: B={} T={} NH={} NKV={} HS={} {}{}: {}; using the flash kernels for this shape",
              dir == kForward ? "forward" : "backward", B, T, NH, NKV, HS, dtype_name(t),
              deterministic ? " deterministic" : "", plan->error);
  return *plans_.emplace(key, std::move(plan)).first->second;
}

namespace {

// The graphs declare 16-byte aligned tensors; an arena carving that breaks this runs the flash kernels.
bool aligned(std::initializer_list<const void*> ptrs, int HS, DType t) {
  if ((std::size_t(HS) * dtype_size(t)) % kCudnnAlign != 0) return false;
  for (const void* ptr : ptrs)
    if (reinterpret_cast<std::uintptr_t>(ptr) % kCudnnAlign != 0) return false;
  return true;
}

// Executes `plan` with the given (uid, pointer) pairs and workspace.
void execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, const std::vector<int64_t>& uids,
             const std::vector<void*>& ptrs, void* workspace) {
  CudnnDesc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t n = static_cast<int64_t>(uids.size());
  cudnn_set(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids.data());
  cudnn_set(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs.data());
  cudnn_set(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(pack.d));
  GPTRAIN_CUDNN_CHECK(cudnnBackendExecute(h, plan, pack.d));
}

}  // namespace

bool CudnnAttention::forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, int B, int T, int NH,
                             int NKV, int HS, std::string* why) {
  Plan& p = plan_for(kForward, t, B, T, NH, NKV, HS, false);
  if (!p.ok) {
    if (why) *why = p.error;
    return false;
  }
  if (!aligned({qkv, out, lse}, HS, t)) {
    if (why) *why = "a tensor is not 16-byte aligned";
    return false;
  }
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  GPTRAIN_CUDNN_CHECK(cudnnSetStream(h, s));
  const std::size_t es = dtype_size(t);
  char* base = static_cast<char*>(const_cast<void*>(qkv));
  float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  float mask_value = cudnn_mask_value(version_);
  max_plan_workspace_ = std::max(max_plan_workspace_, static_cast<std::size_t>(p.workspace));
  void* workspace = p.workspace > 0 ? ws_.get(static_cast<std::size_t>(p.workspace)) : nullptr;
  execute(
      h, p.plan, {kUidQ, kUidK, kUidV, kUidO, kUidStats, kUidScale, kUidNegInf},
      {base, base + std::size_t(NH) * HS * es, base + std::size_t(NH + NKV) * HS * es, out, lse, &scale, &mask_value},
      workspace);
  return true;
}

bool CudnnAttention::backward(cudaStream_t s, DType t, void* dqkv, const void* dout, const void* qkv, const void* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS, bool deterministic,
                              std::string* why) {
  Plan& p = plan_for(kBackward, t, B, T, NH, NKV, HS, deterministic);
  if (!p.ok) {
    if (why) *why = p.error;
    return false;
  }
  if (!aligned({dqkv, dout, qkv, out, lse}, HS, t)) {
    if (why) *why = "a tensor is not 16-byte aligned";
    return false;
  }
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  GPTRAIN_CUDNN_CHECK(cudnnSetStream(h, s));
  // Workspace: [plan workspace | softmax_sum (B, NH, T) fp32 | dQ accumulator (B, NH, T, HS) fp32]
  const std::size_t rows = std::size_t(B) * NH * T;
  max_plan_workspace_ = std::max(max_plan_workspace_, static_cast<std::size_t>(p.workspace));
  Carver carve(
      ws_.get(cudnn_attention_backward_scratch_bytes(B, T, NH, HS, static_cast<std::size_t>(p.workspace), p.dq_accum)));
  void* workspace = carve.take<char>(static_cast<std::size_t>(p.workspace));
  float* softmax_sum = carve.take<float>(rows);
  float* dq_accum = p.dq_accum ? carve.take<float>(rows * HS) : nullptr;
  // cuDNN before 9.6 expects the dQ accumulator zeroed by the caller (later versions clear it).
  if (dq_accum && version_ < 90600) GPTRAIN_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, rows * HS * sizeof(float), s));

  const std::size_t es = dtype_size(t);
  const std::size_t k_off = std::size_t(NH) * HS * es, v_off = std::size_t(NH + NKV) * HS * es;
  char* in = static_cast<char*>(const_cast<void*>(qkv));
  char* grad = static_cast<char*>(dqkv);
  float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  float mask_value = cudnn_mask_value(version_);
  float one = 1.0f;
  std::vector<int64_t> uids = {kUidQ,  kUidK,  kUidV,     kUidO,      kUidDO,  kUidStats,     kUidDQ,
                               kUidDK, kUidDV, kUidScale, kUidNegInf, kUidOne, kUidSoftmaxSum};
  std::vector<void*> ptrs = {in,
                             in + k_off,
                             in + v_off,
                             const_cast<void*>(out),
                             const_cast<void*>(dout),
                             const_cast<float*>(lse),
                             grad,
                             grad + k_off,
                             grad + v_off,
                             &scale,
                             &mask_value,
                             &one,
                             softmax_sum};
  if (dq_accum) {
    uids.push_back(kUidDQAccum);
    ptrs.push_back(dq_accum);
  }
  execute(h, p.plan, uids, ptrs, workspace);
  return true;
}

}  // namespace gptrain::cuda
