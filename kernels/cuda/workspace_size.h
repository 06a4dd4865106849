// The sizing rules of the CUDA backend's grow-only scratch (workspace.h), plain C++ so that the memory
// plan (parallel/plan/backend_workspace.cpp) computes with the same functions the kernels use: how many
// bytes a piece carved out of a Workspace takes, and the capacity a Workspace grows to. The ops that take
// scratch export their request for a shape beside their launchers (kernels/<op>/<op>.h, *_scratch_bytes).
#pragma once

#include <cstddef>

namespace gptrain::cuda {

// Every piece a Carver takes starts on this boundary.
inline constexpr std::size_t kWorkspaceAlign = 256;

// Bytes a Carver uses for `count` elements of T: rounded up to kWorkspaceAlign.
template <typename T>
constexpr std::size_t carve_bytes(std::size_t count) {
  return (count * sizeof(T) + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// The capacity a Workspace grows to for a request of `bytes` above its capacity: a quarter more, so
// varying shapes regrow it rarely. After requests up to r_max the capacity is at most this of r_max.
constexpr std::size_t workspace_grown_capacity(std::size_t bytes) { return bytes + bytes / 4; }

// ceil(n / d): the tile counts of the reductions whose partials live in the Workspace.
constexpr std::size_t ceil_div(std::size_t n, std::size_t d) { return (n + d - 1) / d; }

}  // namespace gptrain::cuda
