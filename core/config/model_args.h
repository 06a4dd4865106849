// The architecture flags (Megatron's names and defaults: --num-layers ... --init-method-std). validate_train_args
// turns them once into the model's own ModelConfig (train_args.cpp: architecture_from_flags, the one place where
// Megatron's flag semantics, the GQA switch, the GELU choice, the bias switches, meet the model).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct ModelArgs {
  std::optional<int> num_layers, hidden_size, ffn_hidden_size, num_attention_heads, kv_channels;
  bool group_query_attention = false;
  int num_query_groups = 1;
  std::optional<int> seq_length, max_position_embeddings;
  std::string position_embedding_type = "learned_absolute";
  bool use_rotary_position_embeddings = false;  // Megatron's legacy spelling of --position-embedding-type rope
  double rotary_base = 10000, rotary_percent = 1.0;
  bool rotary_interleaved = false;
  // Llama-3.x RoPE scaling: Megatron's --use-rope-scaling and --rope-scaling-factor, and gptrain's flags for
  // the three numbers Megatron fixes (Meta's values are the defaults; Hugging Face configs may differ).
  bool use_rope_scaling = false;
  double rope_scaling_factor = 8.0;
  double rope_scaling_low_freq_factor = 1.0, rope_scaling_high_freq_factor = 4.0;
  int rope_scaling_original_max_position_embeddings = 8192;
  std::optional<int> rotary_seq_len_interpolation_factor;  // Megatron's type: an integer; rotary positions / it
  // YaRN (--position-embedding-type yarn), Megatron's flags and defaults (the MLA group's scaling factor and
  // mscales are YaRN's too).
  double rotary_scaling_factor = 1.0;
  int yarn_original_max_position_embeddings = 4096;
  double yarn_beta_fast = 32.0, yarn_beta_slow = 1.0;
  bool yarn_correction_range_round_to_int = false, no_yarn_correction_range_round_to_int = false;  // default: round
  double mscale = 1.0, mscale_all_dim = 0.0;
  std::string window_size;            // --window-size "L,R" (Megatron's tuple); "" = no window
  std::string window_attn_skip_freq;  // --window-attn-skip-freq N; "" = every layer windowed
  std::string normalization = "LayerNorm";
  double norm_epsilon = 1e-5;
  bool apply_layernorm_1p = false;  // zero-centred norm weights: the norms scale by 1 + weight
  bool qk_layernorm = false;        // a per-head norm of Q and K before RoPE
  bool qk_l2_norm = false;          // Llama-4's weightless per-head norm of Q and K before RoPE
  bool swiglu = false;
  bool squared_relu = false;  // MLP activation relu(x)^2
  bool disable_bias_linear = false;
  bool add_qkv_bias = false;
  bool untie_embeddings_and_output_weights = false;
  int make_vocab_size_divisible_by = 128;
  bool no_bias_gelu_fusion = false;  // Megatron: the unfused MLP uses exact (erf) GELU
  // gptrain switches (no Megatron flag): residual form, explicit GELU variant, GPT-J lm_head bias,
  // GPT-J's bias layout (no qkv / attention output biases, MLP biases kept).
  std::string parallel_residual = "none";
  std::string gelu;  // "" = Megatron's choice (tanh with bias-GELU fusion and biases, else erf)
  bool output_layer_bias = false;
  bool disable_bias_attention = false;
  bool geglu = false;                            // gated GELU MLP (Gemma)
  bool scale_embeddings_by_sqrt_hidden = false;  // embeddings * sqrt(hidden) (Gemma)
  // regularization and initialization
  double hidden_dropout = 0.1, attention_dropout = 0.1;
  double init_method_std = 0.02;
  bool init_method_xavier_uniform = false;
  std::optional<double> embedding_init_method_std;  // unset: as init_method_std
};

// --tokenizer-type and its files; --vocab-size fixes the vocabulary where no tokenizer does (mock data).
struct TokenizerArgs {
  std::string tokenizer_type = "GPT2BPETokenizer";
  std::optional<std::string> vocab_file, merge_file;
  std::optional<std::string> tokenizer_model;  // --tokenizer-model: tokenizer.json or dir, or a SentencePiece .model
  std::optional<int> vocab_size;
  std::optional<std::string> tiktoken_pattern;       // --tiktoken-pattern v1|v2: read by TikTokenizer only
  int tiktoken_num_special_tokens = 1000;            // TikTokenizer: ids 0..N-1 are special tokens
  std::vector<std::string> tiktoken_special_tokens;  // TikTokenizer's named special tokens (empty: Megatron's)
};

}  // namespace gptrain
