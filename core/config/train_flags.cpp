// The one flag table of the training flags: every TrainArgs field bound to its Megatron flag, grouped by
// the subsystem struct it fills, plus the Megatron flags gptrain accepts without effect and those it
// rejects (with the reason). Apps that take some of these flags bind them from here (FlagTable::only).
#include "core/config/flag_table.h"
#include "core/config/megatron_only_flags.h"
#include "core/config/train_args.h"
#include "core/train/exit_signal.h"

namespace gptrain {

namespace {

void bind_model(FlagTable& t, ModelArgs& a) {
  t.group("model");
  t.value("num-layers", &a.num_layers, "transformer layers");
  t.value("hidden-size", &a.hidden_size, "model width");
  t.value("ffn-hidden-size", &a.ffn_hidden_size, "MLP width (default 4h; with --swiglu int(8h/3/64)*64)");
  t.value("num-attention-heads", &a.num_attention_heads, "query heads");
  t.value("kv-channels", &a.kv_channels, "per-head dim (default hidden/heads)");
  t.flag("group-query-attention", &a.group_query_attention, "enable GQA (uses --num-query-groups)");
  t.value("num-query-groups", &a.num_query_groups, "KV groups with --group-query-attention");
  t.value("seq-length", &a.seq_length, "training sequence length");
  t.value("max-position-embeddings", &a.max_position_embeddings, "position table size (>= seq-length)");
  t.choice("position-embedding-type", &a.position_embedding_type, {"learned_absolute", "rope", "yarn", "none"},
           "position embedding (yarn: RoPE with YaRN's frequencies and concentration factor)");
  t.flag("use-rotary-position-embeddings", &a.use_rotary_position_embeddings,
         "legacy Megatron spelling of --position-embedding-type rope (sets it, as Megatron)");
  t.value("rotary-base", &a.rotary_base, "RoPE theta");
  t.value("rotary-percent", &a.rotary_percent, "fraction of the head dim rotated");
  t.flag("rotary-interleaved", &a.rotary_interleaved, "rotate pairs (2i, 2i+1) (GPT-J) instead of half-split");
  t.flag("use-rope-scaling", &a.use_rope_scaling, "Llama-3.x RoPE frequency scaling (Hugging Face rope_type llama3)");
  t.value("rope-scaling-factor", &a.rope_scaling_factor, "with --use-rope-scaling: low frequencies divided by this");
  t.value("rope-scaling-low-freq-factor", &a.rope_scaling_low_freq_factor,
          "gptrain: with --use-rope-scaling, wavelengths above original/this are divided by the factor");
  t.value("rope-scaling-high-freq-factor", &a.rope_scaling_high_freq_factor,
          "gptrain: with --use-rope-scaling, wavelengths below original/this are kept (between: blended)");
  t.value("rope-scaling-original-max-position-embeddings", &a.rope_scaling_original_max_position_embeddings,
          "gptrain: with --use-rope-scaling, the context length the frequencies were first trained for");
  t.value("rotary-seq-len-interpolation-factor", &a.rotary_seq_len_interpolation_factor,
          "rope: positions divided by this integer before the frequencies (Hugging Face rope_type linear)");
  t.value("rotary-scaling-factor", &a.rotary_scaling_factor, "yarn: interpolated frequencies divided by this");
  t.value("yarn-original-max-position-embeddings", &a.yarn_original_max_position_embeddings,
          "yarn: the context length the frequencies were first trained for");
  t.value("yarn-beta-fast", &a.yarn_beta_fast, "yarn: pairs turning more often than this over it keep their frequency");
  t.value("yarn-beta-slow", &a.yarn_beta_slow, "yarn: pairs turning less often than this are fully interpolated");
  t.flag("yarn-correction-range-round-to-int", &a.yarn_correction_range_round_to_int,
         "yarn: round the blended pair range outwards to whole pairs (the default)");
  t.flag("no-yarn-correction-range-round-to-int", &a.no_yarn_correction_range_round_to_int,
         "yarn: keep the blended pair range's real bounds");
  t.value("mscale", &a.mscale, "yarn: cos and sin scaled by (0.1 mscale ln f + 1) / (0.1 mscale-all-dim ln f + 1)");
  t.value("mscale-all-dim", &a.mscale_all_dim, "yarn: the concentration factor's divisor coefficient (see --mscale)");
  t.value("window-size", &a.window_size,
          "sliding-window attention \"L,0\": query t sees keys t-L..t (-1,0: no window); HF sliding_window W = W-1,0");
  t.value("window-attn-skip-freq", &a.window_attn_skip_freq,
          "N: every N-th layer (1-based) keeps full attention under --window-size");
  t.choice("normalization", &a.normalization, {"LayerNorm", "RMSNorm"}, "norm type");
  t.value("norm-epsilon", &a.norm_epsilon, "norm epsilon");
  t.flag("apply-layernorm-1p", &a.apply_layernorm_1p,
         "zero-centred norm weights (LayerNorm and RMSNorm): stored as gamma - 1, initialised to 0");
  t.flag("qk-layernorm", &a.qk_layernorm,
         "a norm (of --normalization, RMSNorm only) over each query and key head, one weight per part, before RoPE");
  t.flag("qk-l2-norm", &a.qk_l2_norm,
         "each query and key head x * rsqrt(mean(x^2) + norm-epsilon) before RoPE, no weights (Llama-4)");
  t.flag("swiglu", &a.swiglu, "gated SiLU MLP");
  t.flag("squared-relu", &a.squared_relu, "MLP activation relu(x)^2 instead of GELU (not with --swiglu/--geglu)");
  t.flag("disable-bias-linear", &a.disable_bias_linear, "no biases in linear layers");
  t.flag("add-qkv-bias", &a.add_qkv_bias, "QKV bias even with --disable-bias-linear");
  t.flag("untie-embeddings-and-output-weights", &a.untie_embeddings_and_output_weights, "separate output layer");
  t.value("make-vocab-size-divisible-by", &a.make_vocab_size_divisible_by, "pad the vocab to a multiple of this x TP");
  t.flag("no-bias-gelu-fusion", &a.no_bias_gelu_fusion, "unfused MLP: exact (erf) GELU as Megatron");
  t.choice("parallel-residual", &a.parallel_residual, {"none", "shared_norm", "two_norms"},
           "gptrain: none | shared_norm (GPT-J) | two_norms (GPT-NeoX)");
  t.choice("gelu", &a.gelu, {"", "tanh", "erf"},
           "gptrain: GELU variant (default as Megatron: tanh when fused with a bias)");
  t.flag("output-layer-bias", &a.output_layer_bias, "gptrain: bias on the untied output layer (GPT-J lm_head)");
  t.flag("disable-bias-attention", &a.disable_bias_attention,
         "gptrain: no bias on QKV and the attention output projection, MLP biases kept (GPT-J)");
  t.flag("geglu", &a.geglu, "gptrain: gated GELU MLP, gelu(gate) * up (Gemma; the GELU of --gelu, default tanh)");
  t.flag("scale-embeddings-by-sqrt-hidden", &a.scale_embeddings_by_sqrt_hidden,
         "gptrain: multiply the embedding output by sqrt(hidden size) (Gemma; the tied output layer is not scaled)");
  t.value("hidden-dropout", &a.hidden_dropout, "dropout after attention/MLP output and embeddings");
  t.value("attention-dropout", &a.attention_dropout, "dropout on attention probabilities");
  t.value("init-method-std", &a.init_method_std, "normal init std");
  t.flag("init-method-xavier-uniform", &a.init_method_xavier_uniform,
         "Xavier-uniform init of the weight matrices (embeddings too unless --embedding-init-method-std differs)");
  t.value("embedding-init-method-std", &a.embedding_init_method_std,
          "normal init std of the word and position embeddings (default: --init-method-std)");
}

void bind_moe(FlagTable& t, MoeArgs& a) {
  t.group("moe");
  t.value("num-experts", &a.num_experts, "experts per MoE layer (E); without it every MLP is dense");
  t.value("moe-layer-freq", &a.moe_layer_freq,
          "N: layers 0, N, 2N, ... are MoE; or a 0/1 list expression per layer, e.g. \"([0]*3+[1]*1)*2\"");
  t.value("moe-router-topk", &a.moe_router_topk, "experts each token is routed to (K)");
  t.choice(
      "moe-router-load-balancing-type", &a.moe_router_load_balancing_type,
      {"aux_loss", "seq_aux_loss", "sinkhorn", "none"},
      "aux_loss (over the micro-batch), seq_aux_loss (per sequence), sinkhorn (Sinkhorn-balanced choice in training; "
      "needs --moe-aux-loss-coeff 0) or none");
  t.value("moe-aux-loss-coeff", &a.moe_aux_loss_coeff, "load-balancing loss coefficient (0: no loss)");
  t.value("moe-z-loss-coeff", &a.moe_z_loss_coeff, "router z-loss coefficient (unset: no z-loss)");
  t.choice("moe-router-score-function", &a.moe_router_score_function, {"softmax", "sigmoid"}, "router score function");
  t.flag("moe-router-pre-softmax", &a.moe_router_pre_softmax,
         "top-k of the softmax over all experts (not renormalised) instead of the softmax over the top-k logits");
  t.value("moe-router-topk-scaling-factor", &a.moe_router_topk_scaling_factor,
          "multiply the routing probabilities by this factor");
  t.value("moe-ffn-hidden-size", &a.moe_ffn_hidden_size, "expert MLP width (default --ffn-hidden-size)");
  t.value("moe-shared-expert-intermediate-size", &a.moe_shared_expert_intermediate_size,
          "width of the shared expert every token also goes through (unset: no shared expert)");
  t.flag("moe-shared-expert-gate", &a.moe_shared_expert_gate,
         "scale the shared expert's output by sigmoid(x . w), w a learned (1, hidden) gate (Qwen2-MoE)");
  t.value("moe-expert-capacity-factor", &a.moe_expert_capacity_factor,
          "expert capacity ceil(tokens * K / E * factor); tokens beyond it are dropped (unset: dropless)");
  t.choice("moe-token-drop-policy", &a.moe_token_drop_policy, {"probs", "position"},
           "over capacity, keep the highest-probability tokens (probs) or the earliest (position)");
  t.flag("moe-pad-expert-input-to-capacity", &a.moe_pad_expert_input_to_capacity,
         "every expert computes exactly capacity rows (zero padding); needs --moe-expert-capacity-factor");
  t.flag("moe-router-enable-expert-bias", &a.moe_router_enable_expert_bias,
         "aux-loss-free balancing: a per-expert bias added to the sigmoid scores for the choice only, updated after "
         "each step from the global batch's token counts (checkpointed)");
  t.value("moe-router-bias-update-rate", &a.moe_router_bias_update_rate,
          "the expert bias moves by this much per step: up for experts below the mean count, down above it");
  t.value("moe-router-num-groups", &a.moe_router_num_groups,
          "group-limited routing: experts split into this many equal groups of consecutive experts");
  t.value("moe-router-group-topk", &a.moe_router_group_topk,
          "group-limited routing: each token chooses among the experts of this many groups, those whose top "
          "topk/group_topk scores sum highest");
  t.value("moe-input-jitter-eps", &a.moe_input_jitter_eps,
          "multiply the router's input by uniform noise in [1 - eps, 1 + eps] per element (training and "
          "evaluation, as Megatron's code; gptrain's counter-based RNG, not torch's stream)");
  t.flag("moe-per-layer-logging", &a.moe_per_layer_logging,
         "log line: each MoE layer's losses and its tokens-per-expert min/max/std");
  t.flag("moe-use-upcycling", &a.moe_use_upcycling,
         "--load is a dense checkpoint: each MoE layer's experts start as copies of its MLP (routers as "
         "initialised, the rest copied); iteration, optimizer and RNG start fresh; needs --save without a checkpoint");
}

void bind_tokenizer(FlagTable& t, TokenizerArgs& a) {
  t.group("tokenizer");
  t.value("tokenizer-type", &a.tokenizer_type,
          "GPT2BPETokenizer, HuggingFaceTokenizer (byte-level BPE tokenizer.json, see --tokenizer-model), "
          "SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer (a SentencePiece .model), "
          "TikTokenizer (--tokenizer-model, --tiktoken-*), or NullTokenizer (pre-tokenized data: --vocab-size N ids "
          "and the end-of-document id N)");
  t.value("tokenizer-model", &a.tokenizer_model,
          "HuggingFaceTokenizer's tokenizer.json, or a directory holding it (and tokenizer_config.json); the "
          "SentencePiece types' .model file; TikTokenizer's vocabulary (Megatron's .json list or a tiktoken BPE file)");
  t.value("vocab-file", &a.vocab_file,
          "GPT-2 vocab.json (default: the one shipped in data/gpt2/, or the checkpoint's)");
  t.value("merge-file", &a.merge_file,
          "GPT-2 merges.txt (default: the one shipped in data/gpt2/, or the checkpoint's)");
  t.value("tiktoken-pattern", &a.tiktoken_pattern,
          "v1 or v2: TikTokenizer's pre-tokenization pattern (default v2); other tokenizer types ignore it, as in "
          "Megatron");
  t.value("tiktoken-num-special-tokens", &a.tiktoken_num_special_tokens,
          "TikTokenizer: ids 0..N-1 are special tokens (the named ones, then <SPECIAL_k> fillers); default 1000");
  t.list("tiktoken-special-tokens", &a.tiktoken_special_tokens,
         "TikTokenizer's named special tokens in id order; must include <unk> <s> </s> <mask> <pad> <cls> <sep> "
         "(the default list)");
  // Megatron's current name of the list (its TokenizerConfig); preprocess_data takes it through this table.
  t.alias("tokenizer-special-tokens", "tiktoken-special-tokens");
  t.value("vocab-size", &a.vocab_size,
          "NullTokenizer's ids (vocabulary N + 1), TikTokenizer's vocabulary (default 131072), or with "
          "GPT2BPETokenizer and --mock-data the vocabulary size");
}

void bind_data(FlagTable& t, DataArgs& a) {
  t.group("data");
  t.list("data-path", &a.data_path, "dataset prefix, or weight prefix pairs");
  t.value("split", &a.split, "train/valid/test proportions, e.g. 969,30,1");
  t.list("train-data-path", &a.train_data_path, "train split blend");
  t.list("valid-data-path", &a.valid_data_path, "valid split blend");
  t.list("test-data-path", &a.test_data_path, "test split blend");
  t.value("data-args-path", &a.data_args_path,
          "file holding the --data-path list (prefixes or weight prefix pairs, separated by white space); needs "
          "--split");
  t.value("per-split-data-args-path", &a.per_split_data_args_path,
          "JSON file {\"train\": ..., \"valid\": ..., \"test\": ...}: each split's list of weights and prefixes "
          "(or one string of them, or null)");
  t.flag("multiple-validation-sets", &a.multiple_validation_sets,
         "a validation loss per --valid-data-path dataset (\"validation-NAME loss at ...\"; weights unused); needs "
         "--full-validation");
  t.list("validation-set-names", &a.validation_set_names,
         "names of the --multiple-validation-sets in the log, one per dataset (default 0, 1, ...)");
  t.value("data-cache-path", &a.data_cache_path, "sample-index cache directory");
  t.flag("mock-data", &a.mock_data, "synthetic data");
  t.value("mid-level-dataset-surplus", &a.mid_level_dataset_surplus, "extra samples requested from blended datasets");
  t.flag("reset-position-ids", &a.reset_position_ids, "restart positions after each end-of-document");
  t.flag("reset-attention-mask", &a.reset_attention_mask, "attend only within a document");
  t.flag("eod-mask-loss", &a.eod_mask_loss, "no loss on end-of-document targets");
}

void bind_training(FlagTable& t, TrainingArgs& a) {
  t.group("training");
  t.value("micro-batch-size", &a.micro_batch_size, "per-process micro-batch");
  t.value("global-batch-size", &a.global_batch_size, "samples per iteration (default mbs x DP)");
  t.list("rampup-batch-size", &a.rampup_batch_size,
         "START INCREMENT SAMPLES: grow the global batch from START by INCREMENT up to --global-batch-size over "
         "SAMPLES consumed samples (needs --train-samples)");
  t.value("step-batch-size-schedule", &a.step_batch_size_schedule,
          "\"THRESHOLD:BATCH ...\": the global batch from each threshold of consumed tokens on (suffixes K, M, B, T; "
          "first threshold 0; needs --train-samples; replaces --global-batch-size)");
  t.flag("decrease-batch-size-if-needed", &a.decrease_batch_size_if_needed,
         "round the global batch down to a multiple of --micro-batch-size x DP instead of failing");
  t.value("train-iters", &a.train_iters, "iterations");
  t.value("train-samples", &a.train_samples, "samples (sample-based training)");
  t.value("eval-interval", &a.eval_interval, "validation every N iterations");
  t.value("start-eval-at-iter", &a.start_eval_at_iter,
          "no --eval-interval validation before this iteration (the validation split is sized for the "
          "evaluations left)");
  t.value("eval-iters", &a.eval_iters, "batches per evaluation");
  t.value("eval-micro-batch-size", &a.eval_micro_batch_size,
          "micro-batch size of evaluation (default --micro-batch-size); gptrain runs evaluation in micro-batches of "
          "--micro-batch-size, the same token-summed loss");
  t.value("eval-global-batch-size", &a.eval_global_batch_size,
          "samples per evaluation iteration (default --global-batch-size); a multiple of --eval-micro-batch-size "
          "and of --micro-batch-size, each x DP");
  t.flag("skip-train", &a.skip_train,
         "no training and no save: the (loaded) model's validation loss over --eval-iters batches from the "
         "validation split's start, then the test loss (implies --no-load-optim)");
  t.flag("full-validation", &a.full_validation,
         "each evaluation covers the whole validation split (built as one epoch), with or without --eval-iters; "
         "the test split still takes --eval-iters batches");
  t.list("iterations-to-skip", &a.iterations_to_skip,
         "iterations whose global batch is consumed but not trained on (no optimizer or LR step, no log line, "
         "evaluation or save at them)");
  t.value("exit-interval", &a.exit_interval, "exit after the iteration divisible by this");
  t.value("exit-duration-in-mins", &a.exit_duration_in_mins, "exit after this many minutes of training");
  t.flag("exit-signal-handler", &a.exit_signal_handler,
         "on --exit-signal: finish the iteration, save a checkpoint (with --save) and exit 0, all ranks at the "
         "same iteration");
  t.choice("exit-signal", &a.exit_signal, exit_signal::names(), "the signal --exit-signal-handler waits for");
  t.value("seed", &a.seed, "RNG seed (init, dropout, data shuffling)");
  t.flag("calculate-per-token-loss", &a.calculate_per_token_loss,
         "gradient of the global batch's summed token loss / its loss-token count (instead of the mean of "
         "micro-batch means); differs only when micro-batches hold different loss-token counts (--eod-mask-loss)");
  t.flag("no-check-for-nan-in-loss-and-grad", &a.no_check_for_nan_in_loss_and_grad,
         "train on through a NaN/inf loss or gradient norm (by default the run stops, naming the iteration)");
  t.flag("check-for-spiky-loss", &a.check_for_spiky_loss,
         "stop when an iteration's loss is >= 10x the largest loss of the run's first 100 iterations");
  t.flag("check-for-large-grads", &a.check_for_large_grads,
         "stop when an iteration's gradient norm (before clipping) is >= 10x the largest of the first 100");
  t.value("check-weight-hash-across-dp-replicas-interval", &a.check_weight_hash_across_dp_replicas_interval,
          "at the start and every N iterations, hash each parameter tensor on every DP replica and stop the run, "
          "naming the ranks and tensors, when two replicas differ");
}

void bind_recompute(FlagTable& t, RecomputeArgs& a) {
  t.group("recompute");
  t.flag("recompute-activations", &a.recompute_activations, "recompute activations: --recompute-granularity selective");
  t.value("recompute-granularity", &a.recompute_granularity,
          "full: keep only the input of each group of layers and replay the group in backward; selective: recompute "
          "the --recompute-modules of every layer");
  t.value("recompute-method", &a.recompute_method,
          "full only: uniform (all layers, in groups of --recompute-num-layers) or block (the first "
          "--recompute-num-layers layers of each pipeline stage / virtual chunk)");
  t.value("recompute-num-layers", &a.recompute_num_layers, "full only: N of --recompute-method");
  t.list("recompute-modules", &a.recompute_modules,
         "selective only: core_attn (default; attention output and softmax statistics), mlp (fc1 and activation "
         "of dense layers), layernorm (the norm outputs), moe (an MoE layer's whole MLP: router, experts, shared "
         "expert), moe_act (the routed and shared experts' activations)");
  t.flag("distribute-saved-activations", &a.distribute_saved_activations,
         "full only, TP > 1 without --sequence-parallel: each TP rank keeps 1/TP of every kept group input and "
         "the replay all-gathers it");
  t.flag("checkpoint-activations", &a.checkpoint_activations,
         "older Megatron spelling: --activations-checkpoint-method uniform");
  t.value("activations-checkpoint-method", &a.activations_checkpoint_method,
          "older Megatron spelling of --recompute-granularity full --recompute-method");
  t.value("activations-checkpoint-num-layers", &a.activations_checkpoint_num_layers,
          "older Megatron spelling of --recompute-num-layers (default 1)");
}

void bind_activation_offload(FlagTable& t, ActivationOffloadArgs& a) {
  t.group("offload");
  t.flag("cpu-offloading", &a.cpu_offloading,
         "move the activations of the first --cpu-offloading-num-layers layers to host memory after their forward "
         "and back before their backward");
  t.value("cpu-offloading-num-layers", &a.cpu_offloading_num_layers,
          "N: the first N layers (0 <= N < --num-layers) offload their activations (N > 0 turns --cpu-offloading on)");
}

void bind_schedule(FlagTable& t, schedule::LrScheduleArgs& a) {
  t.group("schedule");
  t.value("lr", &a.lr, "peak learning rate");
  t.value("min-lr", &a.min_lr, "LR floor");
  t.choice("lr-decay-style", &a.lr_decay_style, {"constant", "linear", "cosine", "inverse-square-root", "WSD"},
           "LR decay");
  t.value("lr-decay-iters", &a.lr_decay_iters, "decay horizon (iterations)");
  t.value("lr-decay-samples", &a.lr_decay_samples, "decay horizon (samples)");
  t.value("lr-warmup-iters", &a.lr_warmup_iters, "linear warmup (iterations)");
  t.value("lr-warmup-samples", &a.lr_warmup_samples, "linear warmup (samples)");
  t.value("lr-warmup-fraction", &a.lr_warmup_fraction, "warmup as a fraction of the decay horizon");
  t.value("lr-warmup-init", &a.lr_warmup_init, "LR at the start of warmup");
  t.value("decoupled-lr", &a.decoupled_lr,
          "peak LR of the input embedding and output layer weights (their own group, same schedule shape)");
  t.value("decoupled-min-lr", &a.decoupled_min_lr, "LR floor of that group (default --min-lr; needs --decoupled-lr)");
  t.choice("lr-wsd-decay-style", &a.lr_wsd_decay_style, {"exponential", "linear", "cosine", "minus_sqrt"},
           "WSD anneal");
  t.value("lr-wsd-decay-iters", &a.lr_wsd_decay_iters, "WSD anneal length (iterations)");
  t.value("lr-wsd-decay-samples", &a.lr_wsd_decay_samples, "WSD anneal length (samples)");
  t.value("weight-decay", &a.weight_decay, "AdamW decoupled weight decay");
  t.value("start-weight-decay", &a.start_weight_decay, "WD schedule start");
  t.value("end-weight-decay", &a.end_weight_decay, "WD schedule end");
  t.choice("weight-decay-incr-style", &a.weight_decay_incr_style, {"constant", "linear", "cosine"}, "WD schedule");
  t.flag("override-opt-param-scheduler", &a.override_opt_param_scheduler, "on resume, the flags' schedule wins");
  t.flag("use-checkpoint-opt-param-scheduler", &a.use_checkpoint_opt_param_scheduler,
         "on resume, the checkpoint's schedule wins");
}

void bind_optimizer(FlagTable& t, OptimizerArgs& a, std::string& optimizer, MixedPrecisionArgs& p) {
  t.group("optimizer");
  t.choice("optimizer", &optimizer, {"adam", "sgd", "muon", "dist_muon", "lion", "soap", "adaptive_muon"},
           "adam: AdamW (Megatron's adam with decoupled weight decay); sgd: torch.optim.SGD with --sgd-momentum "
           "(L2 weight decay added to the gradient, no dampening, no Nesterov); muon: Muon (Newton-Schulz "
           "orthogonalized momentum) for the 2-D weights, AdamW for the embeddings, output layer, biases and norms; "
           "lion: Lion (betas --adam-beta1/2, decoupled weight decay) for those 2-D weights, AdamW for the rest; "
           "dist_muon: Megatron's deprecated name for muon with --use-distributed-optimizer (soap and "
           "adaptive_muon are refused)");
  t.value("sgd-momentum", &a.sgd_momentum, "momentum factor of --optimizer sgd");
  t.value("muon-momentum", &a.muon_momentum, "Muon's momentum (EMA of the gradients)");
  t.flag("muon-no-split-qkv", &a.muon_no_split_qkv,
         "Muon orthogonalizes linear_qkv as one matrix instead of its query, key and value rows separately");
  t.flag("muon-nesterov", &a.muon_nesterov, "Muon orthogonalizes the Nesterov lerp(g, momentum, beta) instead");
  t.choice("muon-scale-mode", &a.muon_scale_mode, {"spectral", "unit_rms_norm", "shape_scaling"},
           "scale of Muon's orthogonalized (out, in) update: sqrt(max(out, in)), sqrt(out / in) or "
           "sqrt(max(1, out / in))");
  t.choice("muon-fp32-matmul-prec", &a.muon_fp32_matmul_prec, {"low", "medium", "high"},
           "Newton-Schulz GEMM precision: medium rounds every step to bf16 (torch's bf16 iteration), high is fp32 "
           "(low is refused: torch has no such precision)");
  t.value("muon-coefficient-type", &a.muon_coefficient_type,
          "Newton-Schulz coefficients: simple, quintic, polar_express, cans, aol or deepseekv4");
  t.value("muon-num-ns-steps", &a.muon_num_ns_steps, "Newton-Schulz steps");
  t.choice("muon-tp-mode", &a.muon_tp_mode, {"blockwise", "duplicated", "distributed"},
           "TP-sharded matrices: blockwise orthogonalizes each shard; duplicated and distributed the gathered "
           "whole (the same maths; gptrain computes both by gathering)");
  t.value("muon-extra-scale-factor", &a.muon_extra_scale_factor, "extra factor on Muon's update");
  t.accept_values("muon-scalar-optimizer", {"adam"},
                  "AdamW steps the parameters Muon does not (Lion as Muon's scalar optimizer is not implemented)");
  t.value("adam-beta1", &a.adam_beta1, "Adam beta1");
  t.value("adam-beta2", &a.adam_beta2, "Adam beta2");
  t.value("adam-eps", &a.adam_eps, "Adam epsilon");
  t.value("clip-grad", &a.clip_grad, "global L2 grad-norm clip (0: off)");
  t.group("precision");
  t.flag("fp16", &p.fp16, "fp16 compute with fp32 master weights and loss scaling (CUDA)");
  t.flag("bf16", &p.bf16, "bf16 compute with fp32 master weights (CUDA)");
  t.value("loss-scale", &p.loss_scale, "static loss scale (default dynamic with --fp16)");
  t.value("initial-loss-scale", &p.initial_loss_scale, "dynamic scaler start");
  t.value("min-loss-scale", &p.min_loss_scale, "dynamic scaler floor");
  t.value("loss-scale-window", &p.loss_scale_window, "iterations without overflow before doubling");
  t.value("hysteresis", &p.hysteresis, "overflows tolerated before halving");
  t.value("fp8-format", &p.fp8_format,
          "FP8 training of the layers' linear GEMMs (QKV, attention projection, fc1, fc2): e4m3, or hybrid (E4M3 "
          "inputs and weights, E5M2 output gradients)");
  t.choice("fp8-recipe", &p.fp8_recipe, {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"},
           "FP8 scaling: delayed (amax history) or tensorwise (current scaling); mxfp8, blockwise and custom are "
           "refused");
  t.value("fp8-margin", &p.fp8_margin, "delayed scaling: scale = (FP8 max / amax) / 2^margin");
  t.value("fp8-amax-history-len", &p.fp8_amax_history_len, "delayed scaling: steps of amax history per tensor");
  t.choice("fp8-amax-compute-algo", &p.fp8_amax_compute_algo, {"most_recent", "max"},
           "delayed scaling: the amax a scale comes from, the latest or the history's max");
  t.flag("no-fp8-wgrad", &p.no_fp8_wgrad,
         "delayed scaling: the weight-gradient GEMMs in the compute dtype (unquantised operands)");
  t.flag("first-last-layers-bf16", &p.first_last_layers_bf16,
         "keep the first and last layers out of FP8 (tensorwise recipe only, as Megatron)");
  t.value("num-layers-at-start-in-bf16", &p.num_layers_at_start_in_bf16,
          "layers at the start kept out of FP8 with --first-last-layers-bf16");
  t.value("num-layers-at-end-in-bf16", &p.num_layers_at_end_in_bf16,
          "layers at the end kept out of FP8 with --first-last-layers-bf16");
}

void bind_checkpoint(FlagTable& t, CheckpointArgs& a) {
  t.group("checkpoint");
  t.value("save", &a.save, "checkpoint directory to save to");
  t.value("load", &a.load, "checkpoint directory to resume (or read) from");
  t.flag("use-checkpoint-args", &a.use_checkpoint_args,
         "take the model flags from the --load checkpoint's recorded flags: the sizes unless given, the other "
         "model switches even over explicit flags (as Megatron's load_args_from_checkpoint)");
  t.value("save-interval", &a.save_interval, "iterations between saves");
  t.alias("persistent-save-interval", "save-interval");
  t.value("save-retain-interval", &a.save_retain_interval,
          "keep only the saves at multiples of this (and the latest); delete the other older iter_* directories "
          "(a multiple of --save-interval)");
  t.flag("no-save-optim", &a.no_save_optim, "do not save optimizer state");
  t.flag("no-save-rng", &a.no_save_rng, "do not save RNG state");
  t.flag("no-load-optim", &a.no_load_optim, "do not load optimizer state");
  t.flag("no-load-rng", &a.no_load_rng, "do not load RNG state");
  t.flag("finetune", &a.finetune,
         "load weights only; iteration, optimizer and RNG start fresh (a --load without a checkpoint is an error, "
         "and --save must be another directory)");
  t.value("ckpt-step", &a.ckpt_step, "load this iteration instead of the latest");
  t.flag("exit-on-missing-checkpoint", &a.exit_on_missing_checkpoint,
         "--load without a checkpoint (no tracker, no complete iter_*) stops with an error instead of starting from "
         "random weights");
  t.flag("ckpt-fallback-to-intact", &a.ckpt_fallback_to_intact,
         "gptrain: when the checkpoint to load fails its checksums, load the newest earlier one that passes them "
         "(without it the run stops, naming the damaged tensor and that earlier checkpoint)");
  t.flag("async-save", &a.async_save,
         "write checkpoint files on a background thread from a host copy while training goes on; committed "
         "(metadata, renames, tracker) once every rank has written its files");
  t.value("non-persistent-save-interval", &a.non_persistent_save_interval,
          "iterations between non-persistent saves (only the latest kept; needs --non-persistent-ckpt-type global)");
  t.value("non-persistent-ckpt-type", &a.non_persistent_ckpt_type,
          "global: non-persistent saves in --non-persistent-global-ckpt-dir, and --load resumes from the latest "
          "of them when it is at least as recent as the tracker's (local and in_memory are not implemented)");
  t.value("non-persistent-global-ckpt-dir", &a.non_persistent_global_ckpt_dir,
          "directory of non-persistent saves (default <save>/non_persistent, and <load>/non_persistent to load); "
          "neither --save nor --load itself");
}

void bind_logging(FlagTable& t, LoggingArgs& a) {
  t.group("logging");
  t.value("log-interval", &a.log_interval, "iterations between log lines");
  t.flag("log-throughput", &a.log_throughput, "add TFLOP/s per process to the log line");
  t.value("tensorboard-dir", &a.tensorboard_dir, "TensorBoard event files");
  t.value("metrics-file", &a.metrics_file, "gptrain: JSONL metrics (one object per log line / evaluation)");
  t.flag("profile", &a.profile,
         "profile iterations [--profile-step-start, --profile-step-end): on CUDA cudaProfilerStart/Stop + NVTX ranges "
         "(nsys profile --capture-range=cudaProfilerApi), on CPU a per-range wall-time table");
  t.value("profile-step-start", &a.profile_step_start, "iteration (completed iterations) the profile starts at");
  t.value("profile-step-end", &a.profile_step_end, "iteration (completed iterations) the profile stops at");
  t.list("profile-ranks", &a.profile_ranks, "global ranks to profile");
  t.flag("log-params-norm", &a.log_params_norm,
         "params norm in the log line and TensorBoard: L2 norm of every model element once (fp32 masters "
         "where the compute dtype is not fp32), computed after each step");
  t.flag("log-num-zeros-in-grad", &a.log_num_zeros_in_grad,
         "num zeros in the log line and TensorBoard: zero elements of the reduced gradient, each model element once");
  t.flag("log-timers-to-tensorboard", &a.log_timers_to_tensorboard,
         "TensorBoard iteration-time (seconds, the log line's average) and, with --log-throughput, throughput, at "
         "each log line but the first");
  t.flag("log-validation-ppl-to-tensorboard", &a.log_validation_ppl_to_tensorboard,
         "TensorBoard '<loss> validation ppl' (+ vs samples) beside each validation loss");
  t.flag("log-world-size-to-tensorboard", &a.log_world_size_to_tensorboard,
         "TensorBoard world-size (+ vs samples) every iteration");
  t.flag("no-log-loss-scale-to-tensorboard", &a.no_log_loss_scale_to_tensorboard,
         "no TensorBoard loss-scale (+ vs samples) scalars (written every iteration otherwise: 1 without --fp16)");
  t.flag("log-memory-to-tensorboard", &a.log_memory_to_tensorboard,
         "TensorBoard mem-allocated-bytes, mem-max-allocated-bytes, mem-allocated-count (what the backend "
         "allocated: the training state's arenas) and mem-reserved-bytes (CUDA: the device's used memory, "
         "total less free; CPU: the allocated bytes) with the training scalars");
  t.value("timing-log-level", &a.timing_log_level,
          "0 (default): the iteration time only; 1 and 2: after each log line Megatron's '(min, max) time across "
          "ranks (ms):' block of the level's timers that gptrain has (forward-backward, optimizer, ...; level 2 adds "
          "batch-generator, forward-compute, backward-compute), with --log-timers-to-tensorboard also <name>-time");
  t.value("logging-level", &a.logging_level,
          "a Python logging level: 10 DEBUG, 20 INFO (default, or $MEGATRON_LOGGING_LEVEL), 30 WARNING (no "
          "informational lines), 40 ERROR (no warnings either); the iteration and validation lines always print");
  t.flag("log-progress", &a.log_progress,
         "append Megatron's progress lines (job start, each save with its job and cumulative TFLOP/s/GPU, FLOPs and "
         "tokens so far) to <save>/progress.txt");
}

void bind_parallel(FlagTable& t, ParallelArgs& a) {
  t.group("parallel");
  t.value("tensor-model-parallel-size", &a.tensor_model_parallel_size, "TP: ranks that split each layer");
  t.value("pipeline-model-parallel-size", &a.pipeline_model_parallel_size, "PP: pipeline stages");
  t.value("context-parallel-size", &a.context_parallel_size,
          "CP: ranks that split each sequence (2 x CP load-balanced chunks; attention passes K/V blocks in a ring)");
  t.value("expert-model-parallel-size", &a.expert_model_parallel_size,
          "EP: MoE experts split over EP ranks inside the data-parallel group (must divide DP and --num-experts)");
  t.value(
      "expert-tensor-parallel-size", &a.expert_tensor_parallel_size,
      "ETP: each routed expert's fc1 rows and fc2 columns split over ETP ranks (default TP; gptrain takes TP, or 1: "
      "experts whole, on every TP rank with EP 1 or split over the TP ranks with EP = TP)");
  t.choice("moe-token-dispatcher-type", &a.moe_token_dispatcher_type, {"allgather", "alltoall"},
           "how tokens reach their expert's EP rank: allgather (every rank gathers all routed rows) or alltoall");
  t.flag("sequence-parallel", &a.sequence_parallel, "shard norm/dropout activations over TP along the sequence");
  t.flag("use-distributed-optimizer", &a.use_distributed_optimizer, "shard optimizer state and master weights over DP");
  t.flag("use-megatron-fsdp", &a.use_megatron_fsdp,
         "Megatron FSDP: --data-parallel-sharding-strategy optim (the distributed optimizer) or no_shard (plain DP); "
         "optim_grads and optim_grads_params (ZeRO-2/3) are refused");
  t.choice("data-parallel-sharding-strategy", &a.data_parallel_sharding_strategy,
           {"no_shard", "optim", "optim_grads", "optim_grads_params"},
           "with --use-megatron-fsdp: no_shard or optim (ZeRO-1); optim_grads (ZeRO-2) and optim_grads_params (ZeRO-3, "
           "Megatron's default) are not implemented and refused");
  t.value("num-distributed-optimizer-instances", &a.num_distributed_optimizer_instances,
          "hybrid sharding: the distributed optimizer shards over DP / N ranks and the N instances are replicas "
          "(gradients reduce-scattered inside an instance, then all-reduced across instances; default 1)");
  t.flag("overlap-grad-reduce", &a.overlap_grad_reduce, "reduce DP gradient buckets during backward");
  t.flag("overlap-param-gather", &a.overlap_param_gather,
         "distributed optimizer: parameter all-gathers finish during the next forward (needs --overlap-grad-reduce)");
  t.value("ddp-bucket-size", &a.ddp_bucket_size, "elements per DP gradient bucket (default max(40M, 1M x DP))");
  t.flag("grad-reduce-in-bf16", &a.grad_reduce_in_bf16,
         "DP gradient buckets cast to bf16, all-reduced / reduce-scattered in bf16, cast back to fp32");
  t.flag("optimizer-cpu-offload", &a.optimizer_cpu_offload,
         "keep --optimizer-offload-fraction of this rank's optimizer state (Adam moments, fp32 master weights) in "
         "host memory and update it there with the CPU AdamW (with the distributed optimizer: of this rank's shards)");
  t.value("optimizer-offload-fraction", &a.optimizer_offload_fraction,
          "with --optimizer-cpu-offload: the fraction of the optimizer state on the host, 0..1 (default 1)");
  t.flag("use-precision-aware-optimizer", &a.use_precision_aware_optimizer,
         "allow optimizer state in a lower precision (--exp-avg-dtype, --exp-avg-sq-dtype); needs "
         "--use-distributed-optimizer");
  t.choice("exp-avg-dtype", &a.exp_avg_dtype, {"fp32", "fp16", "bf16", "fp8"},
           "storage dtype of Adam's first moment: fp32 or bf16 (rounded to nearest even after each fp32 step; fp16 "
           "and fp8 are refused), with --use-precision-aware-optimizer");
  t.choice("exp-avg-sq-dtype", &a.exp_avg_sq_dtype, {"fp32", "fp16", "bf16", "fp8"},
           "storage dtype of Adam's second moment: fp32 or bf16 (as --exp-avg-dtype), with "
           "--use-precision-aware-optimizer");
  t.flag("bf16-stochastic-rounding", &a.bf16_stochastic_rounding,
         "gptrain: AdamW without fp32 master weights: the parameters are bf16 (with --bf16; bf16 values held in "
         "fp32 on an fp32 backend) and each update is rounded to bf16 stochastically (bits keyed by --seed, the "
         "step and the element's index in the global tensor); Adam only, not with --fp16");
  t.value("num-layers-per-virtual-pipeline-stage", &a.num_layers_per_virtual_pipeline_stage,
          "interleaved pipeline: layers per virtual stage");
  t.value("num-virtual-stages-per-pipeline-rank", &a.num_virtual_stages_per_pipeline_rank,
          "interleaved pipeline: model chunks per pipeline rank");
  t.value("decoder-first-pipeline-num-layers", &a.decoder_first_pipeline_num_layers, "uneven PP: first stage layers");
  t.value("decoder-last-pipeline-num-layers", &a.decoder_last_pipeline_num_layers, "uneven PP: last stage layers");
  t.choice("distributed-backend", &a.distributed_backend, {"auto", "nccl", "mpi"},
           "collectives: auto (NCCL with the cuda backend, MPI with cpu), nccl, or mpi (device buffers staged through "
           "host)");
  t.value("distributed-timeout-minutes", &a.distributed_timeout_minutes,
          "a collective waiting longer ends the job with a message naming the group");
}

void bind_backend(FlagTable& t, BackendArgs& a) {
  t.group("backend");
  t.choice("device", &a.device, {"auto", "cpu", "cuda"},
           "gptrain: backend (auto = cuda when built and a GPU is present)");
  t.value("attention-backend", &a.attention_backend,
          "CUDA attention: auto (cuDNN fused when supported, else flash), fused (cuDNN, alias cudnn), flash "
          "(own kernels: tensor cores for bf16/fp16 with head size 64/128, else FMA), flash-fma (own FMA kernels)");
  t.flag("deterministic-mode", &a.deterministic_mode,
         "same bits run to run: backend kernels without order-dependent reductions, collectives summed in rank order");
}

void bind_run(FlagTable& t, TrainArgs& a) {
  t.group("run");
  t.flag("dry-run", &a.dry_run,
         "gptrain: check flags, data, --load and --save as a run would, print parameter counts and the per-rank "
         "memory plan, exit (no model allocated, no sample index built)");
  t.value("dry-run-world-size", &a.dry_run_world_size,
          "gptrain: processes a single-process --dry-run plans for (default TP x PP x CP; DP = world / (TP x PP x "
          "CP))");
  t.value("dry-run-device-memory", &a.dry_run_device_memory,
          "gptrain: GiB of memory per device that --dry-run checks every rank's plan against (e.g. 80); a plan that "
          "does not fit fails, naming the cheapest recomputation that would fit");
}

}  // namespace

FlagTable train_flag_table(TrainArgs& a) {
  FlagTable t;
  bind_model(t, a.model);
  bind_moe(t, a.moe);
  bind_tokenizer(t, a.tokenizer);
  bind_data(t, a.data);
  bind_training(t, a.training);
  bind_recompute(t, a.recompute);
  bind_activation_offload(t, a.activation_offload);
  bind_schedule(t, a.schedule);
  bind_optimizer(t, a.optimizer, a.parallel.optimizer, a.precision);
  bind_checkpoint(t, a.checkpoint);
  bind_logging(t, a.logging);
  bind_parallel(t, a.parallel);
  bind_backend(t, a.backend);
  bind_run(t, a);
  bind_megatron_only_flags(t);
  return t;
}

}  // namespace gptrain
