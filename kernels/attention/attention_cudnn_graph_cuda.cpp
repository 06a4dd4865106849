// cuDNN backend-API graph helpers shared by the attention forward and backward graphs
// (see attention_cudnn_graph.h).
#include "kernels/attention/attention_cudnn_graph.h"

#include <algorithm>
#include <limits>

#include "kernels/cuda/check.h"

namespace gptrain::cuda {

CudnnDesc::CudnnDesc(cudnnBackendDescriptorType_t type) { GPTRAIN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d)); }

CudnnDesc::~CudnnDesc() {
  if (d) cudnnBackendDestroyDescriptor(d);
}

void cudnn_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
               int64_t count, const void* value) {
  GPTRAIN_CUDNN_CHECK(cudnnBackendSetAttribute(d, name, type, count, value));
}

float cudnn_mask_value(std::size_t cudnn_version) {
  return cudnn_version < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity();
}

CudnnDesc& CudnnAttention::Plan::make(cudnnBackendDescriptorType_t type) {
  keep.push_back(std::make_unique<CudnnDesc>(type));
  return *keep.back();
}

cudnnBackendDescriptor_t CudnnAttention::Plan::tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
                                                      std::vector<int64_t> strides, bool is_virtual, bool by_value) {
  CudnnDesc& t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kCudnnAlign);
  cudnn_set(t.d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) cudnn_set(t.d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(t.d));
  return t.d;
}

cudnnBackendDescriptor_t CudnnAttention::Plan::matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                                                      cudnnBackendDescriptor_t c) {
  CudnnDesc& mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnn_set(mm.d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(mm.d));
  CudnnDesc& op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm.d);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
  return op.d;
}

cudnnBackendDescriptor_t CudnnAttention::Plan::pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                                         cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                                                         cudnnBackendDescriptor_t t, int64_t axis,
                                                         cudnnDataType_t prec) {
  CudnnDesc& pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnn_set(pw.d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  cudnn_set(pw.d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  if (axis >= 0) cudnn_set(pw.d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(pw.d));
  CudnnDesc& op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw.d);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  if (b) cudnn_set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
  if (t) cudnn_set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
  return op.d;
}

cudnnBackendDescriptor_t CudnnAttention::Plan::reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                                                         cudnnBackendDescriptor_t y) {
  CudnnDesc& rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  cudnn_set(rd.d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnn_set(rd.d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(rd.d));
  CudnnDesc& op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd.d);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
  return op.d;
}

cudnnBackendDescriptor_t CudnnAttention::Plan::reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  CudnnDesc& op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  cudnn_set(op.d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  GPTRAIN_CUDNN_CHECK(cudnnBackendFinalize(op.d));
  return op.d;
}

cudnnBackendDescriptor_t CudnnAttention::Plan::causal_mask(std::vector<cudnnBackendDescriptor_t>& ops,
                                                           cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t neg_inf,
                                                           int64_t& uid, const std::vector<int64_t>& dims,
                                                           const std::vector<int64_t>& strides) {
  auto row = tensor(uid++, CUDNN_DATA_INT32, dims, strides, true);
  auto col = tensor(uid++, CUDNN_DATA_INT32, dims, strides, true);
  auto keep_mask = tensor(uid++, CUDNN_DATA_BOOLEAN, dims, strides, true);
  auto y = tensor(uid++, CUDNN_DATA_FLOAT, dims, strides, true);
  ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, row, nullptr, 2));
  ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, col, nullptr, 3));
  ops.push_back(pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep_mask, nullptr, -1, CUDNN_DATA_BOOLEAN));
  ops.push_back(pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, neg_inf, y, keep_mask));
  return y;
}

namespace {

// Whether the engine behind an engine config may give different bits run to run.
bool nondeterministic(CudnnAttention::Plan& p, cudnnBackendDescriptor_t cfg) {
  CudnnDesc& engine = p.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine.d) !=
          CUDNN_STATUS_SUCCESS ||
      n != 1)
    return true;  // unknown: not proven deterministic
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS)
    return true;
  return std::find(notes, notes + count, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) != notes + count;
}

}  // namespace

void CudnnAttention::Plan::finalize(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops,
                                    bool deterministic) {
  CudnnDesc& graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnn_set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()),
            ops.data());
  cudnn_set(graph.d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  cudnnStatus_t st = cudnnBackendFinalize(graph.d);
  if (st != CUDNN_STATUS_SUCCESS) {
    error = std::string("operation graph rejected: ") + cudnnGetErrorString(st);
    return;
  }
  int skipped_nondeterministic = 0;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    CudnnDesc& heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnn_set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph.d);
    cudnn_set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) continue;
    constexpr int kMaxConfigs = 8;
    std::vector<cudnnBackendDescriptor_t> cfgs;
    for (int i = 0; i < kMaxConfigs; ++i) cfgs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).d);
    int64_t found = 0;
    if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxConfigs,
                                 &found, cfgs.data()) != CUDNN_STATUS_SUCCESS)
      continue;
    for (int64_t i = 0; i < found; ++i) {
      if (deterministic && nondeterministic(*this, cfgs[i])) {
        ++skipped_nondeterministic;
        continue;
      }
      CudnnDesc& candidate = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      cudnn_set(candidate.d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      cudnn_set(candidate.d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
      if (cudnnBackendFinalize(candidate.d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      GPTRAIN_CUDNN_CHECK(cudnnBackendGetAttribute(candidate.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                   CUDNN_TYPE_INT64, 1, &n, &ws));
      plan = candidate.d;
      workspace = ws;
      ok = true;
      return;
    }
  }
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  error = "no cuDNN engine finalized for the graph";
  if (skipped_nondeterministic > 0)
    error +=
        " (" + std::to_string(skipped_nondeterministic) + " non-deterministic engine(s) skipped: --deterministic-mode)";
  if (detail[0]) error += std::string(": ") + detail;
}

}  // namespace gptrain::cuda
