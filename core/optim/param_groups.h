// Megatron's optimizer parameter groups over a flat parameter layout (megatron/core/optimizer
// _get_param_groups): weight decay on or off (off for biases and norm weights), and the learning-rate
// group: with --decoupled-lr the weights Megatron marks is_embedding_or_output_parameter (the input word
// embeddings on the first stage and the output layer weight on the last one, which with tied embeddings
// and PP > 1 is the last stage's copy of the word embeddings) follow the decoupled schedule. Position
// embeddings and the output-layer bias stay in the default group.
#pragma once

#include "core/model/param_layout.h"

#include <cstddef>
#include <vector>

namespace gptrain {

// A run of adjacent elements of one group.
struct ParamGroupRange {
  std::size_t lo = 0, hi = 0;
  bool decay = true;          // AdamW weight decay applies
  bool decoupled_lr = false;  // the --decoupled-lr group
  bool matrix = false;        // a uses_muon tensor (split out for --optimizer lion: Lion steps these, Adam the rest)
};

bool uses_decoupled_lr(const ParamTensor& t);
// --optimizer muon: Megatron's Muon takes every 2-D weight not marked is_embedding_or_output_parameter (the
// same tensors as uses_decoupled_lr; learned position embeddings are Muon's too); the rest (embeddings and
// output layer, biases, norm weights) go to its scalar optimizer, Adam.
bool uses_muon(const ParamTensor& t);

// The layout's elements [0, total) cut into ranges of one group, in order, adjacent tensors of the same
// group merged (a layout without decoupled tensors gives [0, num_decay) and [num_decay, total)). With
// split_matrices the uses_muon tensors form groups of their own (ParamGroupRange::matrix).
std::vector<ParamGroupRange> param_group_ranges(const ParamLayout& layout, bool split_matrices = false);

// The two-group split of a layout whose first num_decay elements are decayed (no decoupled tensors).
std::vector<ParamGroupRange> decay_split_ranges(std::size_t total, std::size_t num_decay);

}  // namespace gptrain
