// Copies between a global tensor and the local slice a Slice describes.
#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"

#include <algorithm>
#include <cstring>

namespace gptrain::checkpoint {

int64_t numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// A slice's blocks grouped by dimension: the local tensor is the product of each dimension's selected
// ranges (a dimension without blocks is whole). One dimension is the usual TP or EP slice; two are an
// expert tensor split over both the experts (EP) and the ffn width (expert tensor parallelism).
struct SliceGeom {
  std::vector<int64_t> gshape, lshape;
  std::vector<std::vector<Block>> ranges;  // per dim, in local order; empty: whole
  int last = -1;                           // the last dim with blocks
  int64_t inner = 1;                       // elements of the whole dims after `last`
};

SliceGeom geometry(const Slice& s) {
  if (s.blocks.empty()) fail("checkpoint: a slice needs at least one block");
  SliceGeom g;
  const int rank = static_cast<int>(s.global_shape.size());
  g.gshape = s.global_shape;
  g.ranges.resize(rank);
  for (const auto& b : s.blocks) {
    if (b.dim < 0 || b.dim >= rank)
      fail("checkpoint: slice block dim {} out of range for a rank-{} tensor", b.dim, rank);
    if (b.offset < 0 || b.length < 0 || b.offset + b.length > g.gshape[b.dim])
      fail("checkpoint: slice block [{}, {}) out of range for dim {} of extent {}", b.offset, b.offset + b.length,
           b.dim, g.gshape[b.dim]);
    // Blocks of one dim are consecutive in the list (a dim's ranges in local order).
    if (!g.ranges[b.dim].empty() && s.blocks[&b - s.blocks.data() - 1].dim != b.dim)
      fail("checkpoint: slice blocks of dim {} are not consecutive", b.dim);
    g.ranges[b.dim].push_back(b);
    g.last = std::max(g.last, b.dim);
  }
  g.lshape = g.gshape;
  for (int d = 0; d < rank; ++d) {
    if (g.ranges[d].empty()) {
      g.ranges[d].push_back({d, 0, g.gshape[d]});
      continue;
    }
    g.lshape[d] = 0;
    for (const auto& b : g.ranges[d]) g.lshape[d] += b.length;
  }
  for (int d = g.last + 1; d < rank; ++d) g.inner *= g.gshape[d];
  return g;
}

// Walks the local positions of dims [0, last) (an odometer over their selected global indices) and
// copies each run of dim `last` (times the whole dims after it) between the two tensors.
template <bool ToLocal>
void copy_slice(float* global, const Slice& s, float* local) {
  const SliceGeom g = geometry(s);
  for (int64_t n : g.lshape)
    if (n == 0) return;
  const int last = g.last;
  std::vector<int64_t> gstride(last + 1, g.inner), lstride(last + 1, g.inner);
  for (int d = last - 1; d >= 0; --d) {
    gstride[d] = gstride[d + 1] * g.gshape[d + 1];
    lstride[d] = lstride[d + 1] * g.lshape[d + 1];
  }
  // Global index of each local position along the dims before `last`.
  std::vector<std::vector<int64_t>> gidx(last);
  for (int d = 0; d < last; ++d)
    for (const auto& b : g.ranges[d])
      for (int64_t i = 0; i < b.length; ++i) gidx[d].push_back(b.offset + i);
  std::vector<int64_t> pos(last, 0);
  for (;;) {
    int64_t gbase = 0, lbase = 0;
    for (int d = 0; d < last; ++d) {
      gbase += gidx[d][pos[d]] * gstride[d];
      lbase += pos[d] * lstride[d];
    }
    int64_t lpos = 0;
    for (const auto& b : g.ranges[last]) {
      const std::size_t run = static_cast<std::size_t>(b.length * g.inner);
      float* gp = global + gbase + b.offset * g.inner;
      float* lp = local + lbase + lpos * g.inner;
      if constexpr (ToLocal)
        std::memcpy(lp, gp, run * sizeof(float));
      else
        std::memcpy(gp, lp, run * sizeof(float));
      lpos += b.length;
    }
    int d = last - 1;
    while (d >= 0 && ++pos[d] == g.lshape[d]) pos[d--] = 0;
    if (d < 0) break;
  }
}

}  // namespace

std::vector<int64_t> slice_local_shape(const Slice& s) { return geometry(s).lshape; }

void extract_slice(const float* global, const Slice& s, float* local) {
  copy_slice<true>(const_cast<float*>(global), s, local);
}
void insert_slice(float* global, const Slice& s, const float* local) {
  copy_slice<false>(global, s, const_cast<float*>(local));
}

}  // namespace gptrain::checkpoint
