#include "parallel/comm/communicator.h"

#include "core/common/error.h"
#include "kernels/common/dtype_math.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace gptrain::parallel {

std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::F32: return 4;
    case ElemType::F64: return 8;
    case ElemType::I32: return 4;
    case ElemType::I64: return 8;
    case ElemType::Byte: return 1;
    case ElemType::BF16: return 2;
    case ElemType::F16: return 2;
  }
  return 1;
}

const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::F32: return "f32";
    case ElemType::F64: return "f64";
    case ElemType::I32: return "i32";
    case ElemType::I64: return "i64";
    case ElemType::Byte: return "byte";
    case ElemType::BF16: return "bf16";
    case ElemType::F16: return "f16";
  }
  return "?";
}

namespace {
template <typename T>
void reduce_typed(T* out, const T* blocks, int n, std::size_t count, ReduceOp op) {
  // Block 0 first, then 1, 2, ...: a fixed association order, so every rank gets identical bits.
  if (out != blocks) std::memcpy(out, blocks, count * sizeof(T));
  for (int b = 1; b < n; ++b) {
    const T* src = blocks + static_cast<std::size_t>(b) * count;
    if (op == ReduceOp::Sum) {
      for (std::size_t i = 0; i < count; ++i) out[i] += src[i];
    } else {
      for (std::size_t i = 0; i < count; ++i) out[i] = std::max(out[i], src[i]);
    }
  }
}
void reduce_bf16(uint16_t* out, const uint16_t* blocks, int n, std::size_t count, ReduceOp op) {
  if (out != blocks) std::memcpy(out, blocks, count * sizeof(uint16_t));
  for (int b = 1; b < n; ++b) {
    const uint16_t* src = blocks + static_cast<std::size_t>(b) * count;
    if (op == ReduceOp::Sum) {
      for (std::size_t i = 0; i < count; ++i) out[i] = bf16_add(out[i], src[i]);
    } else {
      for (std::size_t i = 0; i < count; ++i) out[i] = bf16_max(out[i], src[i]);
    }
  }
}
}  // namespace

std::string describe(const Communicator& c) {
  const CommOptions& o = c.options();
  return fmt::format("{}, {} reductions, timeout {:g} s", c.transport(),
                     o.deterministic ? "rank-ordered (deterministic)" : "fastest-order", o.timeout_seconds);
}

std::optional<std::string> agree_on_error(Communicator& c, const std::optional<std::string>& mine) {
  // The lowest failing rank r contributes size - r, the largest value; ranks without an error contribute 0.
  int32_t v = mine ? c.size() - c.rank() : 0;
  c.all_reduce(&v, 1, ElemType::I32, ReduceOp::Max);
  if (v == 0) return std::nullopt;
  const int root = c.size() - v;
  std::string text = c.rank() == root ? *mine : std::string();
  if (c.size() > 1 && c.rank() == root) text = fmt::format("rank {}: {}", c.world_ranks()[root], text);
  int64_t len = static_cast<int64_t>(text.size());
  c.broadcast(&len, 1, ElemType::I64, root);
  text.resize(static_cast<std::size_t>(len));
  c.broadcast(text.data(), text.size(), ElemType::Byte, root);
  return text;
}

void check_all_to_all_v_counts(const Communicator& c, const std::vector<std::size_t>& recv_counts,
                               const std::vector<std::size_t>& send_counts) {
  check(static_cast<int>(recv_counts.size()) == c.size() && static_cast<int>(send_counts.size()) == c.size(),
        "all_to_all_v on {}: {} send and {} receive counts for a group of {}", c.name(), send_counts.size(),
        recv_counts.size(), c.size());
}

void reduce_blocks_in_order(void* out, const void* blocks, int n, std::size_t count, ElemType t, ReduceOp op) {
  switch (t) {
    case ElemType::F32: return reduce_typed(static_cast<float*>(out), static_cast<const float*>(blocks), n, count, op);
    case ElemType::F64:
      return reduce_typed(static_cast<double*>(out), static_cast<const double*>(blocks), n, count, op);
    case ElemType::I32:
      return reduce_typed(static_cast<int32_t*>(out), static_cast<const int32_t*>(blocks), n, count, op);
    case ElemType::I64:
      return reduce_typed(static_cast<int64_t*>(out), static_cast<const int64_t*>(blocks), n, count, op);
    case ElemType::BF16:
      return reduce_bf16(static_cast<uint16_t*>(out), static_cast<const uint16_t*>(blocks), n, count, op);
    case ElemType::Byte:
    case ElemType::F16:
      fail(
          "host reduction over {} values is not supported: use f32, f64, i32, i64 or bf16 (fp16 reduces only with "
          "NCCL)",
          elem_name(t));
  }
}

}  // namespace gptrain::parallel
