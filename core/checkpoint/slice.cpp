// Copies between a global tensor and the local slice a Slice describes.
#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"

#include <cstring>

namespace gptrain::checkpoint {

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

struct SliceGeom {
  int dim = 0;
  int64_t outer = 1;  // product of global dims before dim
  int64_t inner = 1;  // product of global dims after dim
  int64_t gdim = 0;   // global extent of dim
  int64_t ldim = 0;   // local extent of dim (sum of block lengths)
};

SliceGeom geometry(const Slice& s) {
  if (s.blocks.empty()) fail("checkpoint: a slice needs at least one block");
  SliceGeom g;
  g.dim = s.blocks[0].dim;
  const int rank = static_cast<int>(s.global_shape.size());
  if (g.dim < 0 || g.dim >= rank) fail("checkpoint: slice block dim {} out of range for a rank-{} tensor", g.dim, rank);
  for (int i = 0; i < g.dim; ++i) g.outer *= s.global_shape[i];
  for (int i = g.dim + 1; i < rank; ++i) g.inner *= s.global_shape[i];
  g.gdim = s.global_shape[g.dim];
  for (const auto& b : s.blocks) {
    if (b.dim != g.dim) fail("checkpoint: slice blocks use different dims ({} and {})", g.dim, b.dim);
    if (b.offset < 0 || b.length < 0 || b.offset + b.length > g.gdim)
      fail("checkpoint: slice block [{}, {}) out of range for dim {} of extent {}", b.offset, b.offset + b.length,
           g.dim, g.gdim);
    g.ldim += b.length;
  }
  return g;
}

template <bool ToLocal>
void copy_slice(float* global, const Slice& s, float* local) {
  const SliceGeom g = geometry(s);
  int64_t lpos = 0;  // position along dim in the local tensor
  for (const auto& b : s.blocks) {
    const std::size_t run = static_cast<std::size_t>(b.length * g.inner);
    for (int64_t o = 0; o < g.outer; ++o) {
      float* gp = global + (o * g.gdim + b.offset) * g.inner;
      float* lp = local + (o * g.ldim + lpos) * g.inner;
      if constexpr (ToLocal)
        std::memcpy(lp, gp, run * sizeof(float));
      else
        std::memcpy(gp, lp, run * sizeof(float));
    }
    lpos += b.length;
  }
}

}  // namespace

std::vector<int64_t> slice_local_shape(const Slice& s) {
  const SliceGeom g = geometry(s);
  auto shape = s.global_shape;
  shape[g.dim] = g.ldim;
  return shape;
}

void extract_slice(const float* global, const Slice& s, float* local) {
  copy_slice<true>(const_cast<float*>(global), s, local);
}
void insert_slice(float* global, const Slice& s, const float* local) {
  copy_slice<false>(global, s, const_cast<float*>(local));
}

}  // namespace gptrain::checkpoint
