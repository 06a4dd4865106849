// Where every parameter tensor of a stage lives in the flat parameter / gradient buffers, with its
// global (checkpoint) name, global shape and the blocks of the global tensor this rank holds.
//
// Order: all weight-decayed tensors (matrices, embeddings) first, then all non-decayed ones (biases,
// norm weights), so AdamW runs as two contiguous launches ([0, num_decay) and [num_decay, total)).
// The same offsets index the parameter buffer (compute dtype), the fp32 gradient buffer, and the
// optimizer's fp32 moment/master buffers, so DP all-reduce, the distributed optimizer and
// checkpoint resharding can work on flat ranges.
#pragma once

#include "core/model/model_config.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

// A block of rows (dim 0) or columns (dim 1) of the global tensor held locally, in local order.
struct ShardBlock {
  int dim;
  int64_t global_offset;
  int64_t length;
};

enum class InitKind : uint8_t { Normal, Zeros, Ones, Uniform };

struct ParamTensor {
  std::string name;                   // global checkpoint name (docs/checkpoint-format.md)
  std::vector<int64_t> global_shape;  // shape of the whole tensor
  std::vector<int64_t> local_shape;   // shape of this rank's piece
  std::vector<ShardBlock> blocks;     // empty: the whole tensor (replicated over TP)
  std::size_t offset = 0;             // element offset in the flat buffers
  std::size_t numel = 0;              // local elements
  bool decay = true;                  // AdamW weight decay applies
  InitKind init = InitKind::Normal;
  float init_std = 0.0f;    // for Normal
  float init_bound = 0.0f;  // for Uniform: U(-init_bound, init_bound)
  // A second copy of a tensor another stage owns (the tied word embeddings held by the last pipeline
  // stage as its output layer): its gradient must be summed with the owner's, and checkpoints
  // store it once (from the first stage).
  bool tied_copy = false;
  // The stacked weights of the E routed experts of an MoE layer, (E, out, in) with dim 0 the expert:
  // expert parallelism gives each rank a contiguous block of experts (a dim-0 ShardBlock), and their
  // gradients are reduced over the ranks that hold the same experts, not over the whole DP group.
  bool expert = false;
  bool sharded() const { return !blocks.empty(); }
};

struct ParamLayout {
  std::vector<ParamTensor> tensors;  // decayed first, then non-decayed
  std::size_t num_decay = 0;         // elements in the decayed range [0, num_decay)
  std::size_t total = 0;             // all local elements

  const ParamTensor* find(const std::string& name) const;  // null when absent
  const ParamTensor& at(const std::string& name) const;    // throws Error when absent
};

// Builds the layout of the stage described by a finalized config.
ParamLayout build_param_layout(const StageConfig& c);

// Whether a global parameter name is a norm weight (input_layernorm, pre_mlp_layernorm, final_layernorm:
// LayerNorm or RMSNorm scale), the tensors --apply-layernorm-1p stores as gamma - 1.
bool is_norm_weight(const std::string& name);

// For element `i` (row-major) of a tensor's LOCAL piece, its row-major index in the GLOBAL tensor.
int64_t local_to_global_index(const ParamTensor& t, int64_t i);

}  // namespace gptrain
