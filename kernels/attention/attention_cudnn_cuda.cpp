// cuDNN fused attention forward through the cuDNN 9 backend graph API (see attention_cudnn.h).
// The graph is the scaled-dot-product pattern cuDNN's fused flash-attention engines recognise:
//   S = Q K^T (fp32) -> S * scale -> causal mask (gen_index row/col, row >= col, select -inf)
//   -> max, sub, exp, sum, log: Stats = max + log(sum) (the logsumexp, our lse) -> P = exp / sum
//   -> O = P V
// Q, K, V are strided views into the packed qkv (B, T, (NH + 2 NKV) HS) buffer, O is (B, T, NH, HS),
// Stats (B, NH, T, 1) fp32 is lse, exactly kernels/backend.h's layout: nothing is copied.
// Status: compiled, not yet run on a GPU.
#include "kernels/attention/attention_cudnn.h"

#include <cudnn.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/cuda/check.h"

namespace gptrain::cuda {

namespace {

// One backend descriptor, destroyed with its owner.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type) { GPTRAIN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d)); }
  ~Desc() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
};

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* value) {
  GPTRAIN_CUDNN_CHECK(cudnnBackendSetAttribute(d, name, type, count, value));
}

// Minimum power-of-two alignment of a pointer offset, as cuDNN wants it stated per tensor.
constexpr int64_t kAlign = 16;

}  // namespace

struct CudnnAttention::Plan {
  std::vector<std::unique_ptr<Desc>> keep;  // every descriptor the plan was built from
  cudnnBackendDescriptor_t plan = nullptr;  // owned by `keep`
  int64_t workspace = 0;
  bool ok = false;
  std::string error;

  Desc& make(cudnnBackendDescriptorType_t type) {
    keep.push_back(std::make_unique<Desc>(type));
    return *keep.back();
  }

  // A tensor (dims/strides in B, H, S, D order).
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
                                  std::vector<int64_t> strides, bool is_virtual, bool by_value = false) {
    Desc& t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(t.d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
    set(t.d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
    set(t.d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t.d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlign);
    set(t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) set(t.d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(t.d));
    return t.d;
  }

  cudnnBackendDescriptor_t matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    Desc& mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set(mm.d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(mm.d));
    Desc& op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set(op.d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    set(op.d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    set(op.d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    set(op.d, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm.d);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
    return op.d;
  }

  // y = mode(x [, b] [, t]); axis >= 0 for GEN_INDEX.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t t = nullptr,
                                     int64_t axis = -1) {
    Desc& pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw.d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    set(pw.d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) set(pw.d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(pw.d));
    Desc& op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw.d);
    set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b) set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t) set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
    return op.d;
  }

  cudnnBackendDescriptor_t reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t y) {
    Desc& rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(rd.d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set(rd.d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(rd.d));
    Desc& op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd.d);
    GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
    return op.d;
  }
};

namespace {

// Tensor UIDs of the variant pack.
enum : int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kNegInf, kVirtual = 100 };

// Builds the forward graph and the first execution plan cuDNN finalizes for it.
void build_forward(CudnnAttention::Plan& p, cudnnHandle_t handle, DType t, int B, int T, int NH, int NKV, int HS) {
  const cudnnDataType_t io = t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t b = B, s = T, h = NH, hk = NKV, d = HS;
  const int64_t row = (h + 2 * hk) * d;  // qkv row length
  int64_t uid = kVirtual;

  auto Q = p.tensor(kQ, io, {b, h, s, d}, {s * row, d, row, 1}, false);
  auto Kt = p.tensor(kK, io, {b, hk, d, s}, {s * row, d, 1, row}, false);  // K^T as a strided view
  auto V = p.tensor(kV, io, {b, hk, s, d}, {s * row, d, row, 1}, false);
  auto O = p.tensor(kO, io, {b, h, s, d}, {s * h * d, d, h * d, 1}, false);
  auto Stats = p.tensor(kStats, f32, {b, h, s, 1}, {h * s, s, 1, 1}, false);
  auto Scale = p.tensor(kScale, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto NegInf = p.tensor(kNegInf, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);

  const std::vector<int64_t> sd = {b, h, s, s}, ss = {h * s * s, s * s, s, 1};
  const std::vector<int64_t> rd = {b, h, s, 1}, rs = {h * s, s, 1, 1};
  auto S1 = p.tensor(uid++, f32, sd, ss, true);
  auto S2 = p.tensor(uid++, f32, sd, ss, true);
  auto Row = p.tensor(uid++, CUDNN_DATA_INT32, sd, ss, true);
  auto Col = p.tensor(uid++, CUDNN_DATA_INT32, sd, ss, true);
  auto Mask = p.tensor(uid++, CUDNN_DATA_BOOLEAN, sd, ss, true);
  auto S3 = p.tensor(uid++, f32, sd, ss, true);
  auto Mx = p.tensor(uid++, f32, rd, rs, true);
  auto S4 = p.tensor(uid++, f32, sd, ss, true);
  auto E = p.tensor(uid++, f32, sd, ss, true);
  auto Z = p.tensor(uid++, f32, rd, rs, true);
  auto LZ = p.tensor(uid++, f32, rd, rs, true);
  auto P = p.tensor(uid++, f32, sd, ss, true);

  std::vector<cudnnBackendDescriptor_t> ops = {
      p.matmul(Q, Kt, S1),
      p.pointwise(CUDNN_POINTWISE_MUL, S1, Scale, S2),
      p.pointwise(CUDNN_POINTWISE_GEN_INDEX, S2, nullptr, Row, nullptr, 2),
      p.pointwise(CUDNN_POINTWISE_GEN_INDEX, S2, nullptr, Col, nullptr, 3),
      p.pointwise(CUDNN_POINTWISE_CMP_GE, Row, Col, Mask),
      p.pointwise(CUDNN_POINTWISE_BINARY_SELECT, S2, NegInf, S3, Mask),
      p.reduction(CUDNN_REDUCE_TENSOR_MAX, S3, Mx),
      p.pointwise(CUDNN_POINTWISE_SUB, S3, Mx, S4),
      p.pointwise(CUDNN_POINTWISE_EXP, S4, nullptr, E),
      p.reduction(CUDNN_REDUCE_TENSOR_ADD, E, Z),
      p.pointwise(CUDNN_POINTWISE_LOG, Z, nullptr, LZ),
      p.pointwise(CUDNN_POINTWISE_ADD, Mx, LZ, Stats),
      p.pointwise(CUDNN_POINTWISE_DIV, E, Z, P),
      p.matmul(P, V, O),
  };

  Desc& graph = p.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()),
      ops.data());
  set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  cudnnStatus_t st = cudnnBackendFinalize(graph.d);
  if (st != CUDNN_STATUS_SUCCESS) {
    p.error = std::string("operation graph rejected: ") + cudnnGetErrorString(st);
    return;
  }

  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Desc& heur = p.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph.d);
    set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) continue;
    constexpr int kMaxConfigs = 8;
    std::vector<Desc*> cfgs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int i = 0; i < kMaxConfigs; ++i) {
      cfgs.push_back(&p.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(cfgs.back()->d);
    }
    int64_t found = 0;
    if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs,
                                 &found, raw.data()) != CUDNN_STATUS_SUCCESS)
      continue;
    for (int64_t i = 0; i < found; ++i) {
      Desc& plan = p.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      set(plan.d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      set(plan.d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i]);
      if (cudnnBackendFinalize(plan.d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      GPTRAIN_CUDNN_CHECK(
          cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws));
      p.plan = plan.d;
      p.workspace = ws;
      p.ok = true;
      return;
    }
  }
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  p.error = std::string("no cuDNN engine finalized for the attention graph") + (detail[0] ? ": " : "") + detail;
}

}  // namespace

CudnnAttention::CudnnAttention() {
  cudnnHandle_t h = nullptr;
  GPTRAIN_CUDNN_CHECK(cudnnCreate(&h));
  handle_ = h;
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
  if (dev.cc_major < 8) return no("GPU older than sm_80");
  if (t == DType::F32) return no("fp32 compute dtype (cuDNN fused attention is bf16/fp16 only)");
  if (dropout_p > 0.0f) return no("attention dropout > 0 (cuDNN's dropout RNG differs from gptrain's Philox mapping)");
  if (segments) return no("segment mask (--reset-attention-mask)");
  if (HS % 8 != 0 || HS > 128) return no("head size not a multiple of 8 up to 128");
  if (NKV <= 0 || NH % NKV != 0) return no("NH not a multiple of NKV");
  if (T <= 0) return no("empty sequence");
  return true;
}

CudnnAttention::Plan& CudnnAttention::plan_for(DType t, int B, int T, int NH, int NKV, int HS) {
  Key key{static_cast<int>(t), B, T, NH, NKV, HS};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  build_forward(*plan, static_cast<cudnnHandle_t>(handle_), t, B, T, NH, NKV, HS);
  if (!plan->ok)
    log::warn("cuDNN attention: B={} T={} NH={} NKV={} HS={} {}: {}; using the flash kernels for this shape", B, T,
              NH, NKV, HS, dtype_name(t), plan->error);
  return *plans_.emplace(key, std::move(plan)).first->second;
}

bool CudnnAttention::forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, int B, int T, int NH,
                             int NKV, int HS, std::string* why) {
  Plan& p = plan_for(t, B, T, NH, NKV, HS);
  if (!p.ok) {
    if (why) *why = p.error;
    return false;
  }
  // The graph declares 16-byte aligned tensors; an arena carving that breaks this runs the flash kernels.
  const std::size_t head_bytes = std::size_t(HS) * dtype_size(t);
  for (const void* ptr : {qkv, static_cast<const void*>(out), static_cast<const void*>(lse)}) {
    if (reinterpret_cast<std::uintptr_t>(ptr) % kAlign != 0 || head_bytes % kAlign != 0) {
      if (why) *why = "a tensor is not 16-byte aligned";
      return false;
    }
  }
  cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_);
  GPTRAIN_CUDNN_CHECK(cudnnSetStream(h, s));
  const std::size_t es = dtype_size(t);
  const char* base = static_cast<const char*>(qkv);
  float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  float neg_inf = -std::numeric_limits<float>::infinity();
  int64_t uids[] = {kQ, kK, kV, kO, kStats, kScale, kNegInf};
  void* ptrs[] = {const_cast<char*>(base),
                  const_cast<char*>(base + std::size_t(NH) * HS * es),
                  const_cast<char*>(base + std::size_t(NH + NKV) * HS * es),
                  out,
                  lse,
                  &scale,
                  &neg_inf};
  void* workspace = p.workspace > 0 ? ws_.get(static_cast<std::size_t>(p.workspace)) : nullptr;
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 7, uids);
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 7, ptrs);
  set(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(pack.d));
  GPTRAIN_CUDNN_CHECK(cudnnBackendExecute(h, p.plan, pack.d));
  return true;
}

}  // namespace gptrain::cuda
