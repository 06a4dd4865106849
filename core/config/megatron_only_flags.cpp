#include "core/config/megatron_only_flags.h"

#include <initializer_list>

namespace gptrain {

namespace {

using K = FlagTable::Kind;
using Names = std::initializer_list<const char*>;

// The reason of Megatron's deprecated flags that Megatron itself ignores.
const char* const kIgnoredByMegatron = "deprecated; Megatron ignores it too";

void refuse_all(FlagTable& t, Names names, const std::string& reason) {
  for (const char* n : names) t.unsupported(n, reason);
}
void accept_all(FlagTable& t, K kind, Names names, const std::string& what) {
  for (const char* n : names) t.noop(n, kind, what);
}

// Megatron's "network size" group: architectures gptrain does not build.
void bind_model_features(FlagTable& t) {
  t.unsupported("encoder-num-layers", "for a GPT model use --num-layers (Megatron takes it as the same value)");
  t.accept_values("softmax-type", {"vanilla"}, "gptrain's attention uses the plain softmax (no offset)");
  t.accept_values("glu-linear-offset", {"0.0", "0"}, "gptrain's --swiglu multiplies by the linear half unchanged");
  t.accept_values("rope-type", {"rope"},
                  "gptrain's RoPE is the standard rotary embedding (YaRN belongs to MLA, which is not implemented)");
  refuse_all(t, {"window-size", "window-attn-skip-freq"}, "sliding-window attention is not implemented");
  refuse_all(t, {"relative-attention-num-buckets", "relative-attention-max-distance"},
             "relative (T5-style) position embeddings are not implemented");
  t.unsupported("rotary-seq-len-interpolation-factor", "RoPE sequence-length interpolation is not implemented");
  t.unsupported("no-rope-freq", "skipping RoPE in some layers is not implemented");
  t.unsupported("mrope-section", "multimodal RoPE is not implemented");
  t.unsupported("apply-residual-connection-post-layernorm",
                "BERT's residual taken after the norm is not implemented (gptrain's blocks are pre-norm)");
  t.unsupported("activation-func-clamp-value", "the clamp belongs to --quick-geglu, which is not implemented");
  t.unsupported("onnx-safe", "ONNX export is not implemented");
  t.unsupported("mtp-loss-scaling-factor", "multi-token prediction is not implemented");
  t.unsupported("fp32-residual-connection",
                "an fp32 residual stream under --bf16/--fp16 is not implemented (it is in the compute dtype)");
  refuse_all(t,
             {"decoder-num-layers", "decoder-seq-length", "retriever-seq-length", "sample-rate", "mask-prob",
              "short-seq-prob", "vocab-extra-ids", "bert-no-binary-head"},
             "an option of Megatron's BERT, T5 and retriever models; gptrain trains GPT models only");
  refuse_all(t,
             {"muon-momentum", "muon-no-split-qkv", "muon-use-nesterov", "muon-scale-mode", "muon-fp32-matmul-prec",
              "muon-num-ns-steps", "muon-tp-mode", "muon-extra-scale-factor"},
             "the Muon optimizer is not implemented (only --optimizer adam)");
  t.unsupported("embedding-init-method-std",
                "a separate embedding init std (which also drops weight decay on embeddings) is not implemented");
  t.unsupported("use-legacy-models",
                "Megatron's legacy models are not implemented (gptrain's model is laid out as Megatron-Core's)");
}

// Megatron's "training" group: checks, offloading, profilers and kernel choices.
void bind_training_features(FlagTable& t) {
  t.unsupported("batch-size", "removed from Megatron; use --micro-batch-size");
  t.unsupported("warmup", "removed from Megatron; use --lr-warmup-fraction or --lr-warmup-iters");
  t.unsupported("result-rejected-tracker-filename",
                "Megatron's rerun state machine (reruns and their tracker file) is not implemented; rejected results "
                "stop the run with a message");
  t.unsupported("iterations-to-skip", "skipping iterations is not implemented");
  t.unsupported("check-weight-hash-across-dp-replicas-interval",
                "checking weight hashes across DP replicas is not implemented");
  t.unsupported(
      "use-torch-optimizer-for-cpu-offload",
      "gptrain's offloaded optimizer state is updated by its own CPU AdamW; there is no torch optimizer to pick");
  t.unsupported(
      "overlap-cpu-optimizer-d2h-h2d",
      "overlapping the offloaded optimizer's copies with its CPU step is not implemented (--optimizer-cpu-offload "
      "copies, steps and copies back in turn)");
  refuse_all(t, {"no-pin-cpu-grads", "no-pin-cpu-params"},
             "gptrain's offloaded optimizer copies through pageable host memory; pinning is not implemented");
  t.noop("use-precision-aware-optimizer", K::Switch,
         "gptrain's AdamW always keeps fp32 master weights and moments and writes the compute-dtype parameters in the "
         "same pass (Megatron's precision-aware optimizer with its fp32 defaults); --optimizer-cpu-offload does not "
         "need it");
  t.unsupported("dump-param-to-param-group-map", "parameter-to-group maps are not implemented");
  refuse_all(t, {"record-memory-history", "memory-snapshot-path"},
             "PyTorch's CUDA memory history does not exist in gptrain; --dry-run prints its per-rank memory plan");
  refuse_all(t, {"tp-comm-overlap-cfg", "tp-comm-overlap-rs-dgrad", "tp-comm-bootstrap-backend"},
             "TE userbuffers overlap is not implemented");
  accept_all(t, K::Switch,
             {"disable-tp-comm-overlap-ag", "disable-tp-comm-overlap-rs", "disable-tp-comm-bulk-dgrad",
              "disable-tp-comm-bulk-wgrad", "disable-tp-comm-split-ag", "disable-tp-comm-split-rs"},
             "gptrain never overlaps TP communication with GEMMs (what this switch asks)");
  t.noop("use-cpu-initialization", K::Switch,
         "gptrain's init is counter-based, so every TP/PP layout already builds the same global weights (what "
         "Megatron's CPU init is for)");
  t.noop("train-sync-interval", K::Value,
         "gptrain's CPU waits for every iteration's loss and gradient norm, so it never runs ahead of the GPU");
  t.noop("no-clone-scatter-output-in-embedding", K::Switch,
         "gptrain's embedding writes its own buffer; there is no PyTorch tensor to clone for the garbage collector");
  t.noop("disable-gloo-process-groups", K::Switch, "gptrain creates no Gloo groups (its collectives are MPI or NCCL)");
  const std::string no_gc = "gptrain has no garbage collector";
  t.noop("manual-gc-interval", K::Value, no_gc);
  t.noop("no-manual-gc-eval", K::Switch, no_gc);
  t.noop("cross-entropy-fusion-impl", K::Value,
         "gptrain's softmax + cross-entropy is its own fused op (neither Megatron's native one nor TE's)");
  t.noop("use-te-activation-func", K::Switch, "gptrain's activation kernels are its own (the same GELU/SwiGLU values)");
  t.noop("te-rng-tracker", K::Switch,
         "gptrain's dropout masks come from its own counter-based generator keyed by --seed; there is no TE/PyTorch "
         "RNG tracker");
  t.noop("inference-rng-tracker", K::Switch,
         "gptrain's random numbers come from its own counter-based generator keyed by --seed; there is no RNG "
         "tracker to configure");
  t.noop("no-async-tensor-model-parallel-allreduce", K::Switch, kIgnoredByMegatron);
}

void bind_precision_features(FlagTable& t) {
  refuse_all(t,
             {"fp8-recipe", "fp8-quantizer-factory", "fp8-margin", "fp8-amax-history-len", "fp8-amax-compute-algo",
              "no-fp8-wgrad", "fp8-param-gather", "first-last-layers-bf16", "num-layers-at-start-in-bf16",
              "num-layers-at-end-in-bf16", "reuse-grad-buf-for-mxfp8-param-ag"},
             "FP8 is not implemented");
  t.noop("fp8-interval", K::Value, kIgnoredByMegatron);
  refuse_all(t, {"fp4-format", "fp4-recipe", "fp4-quantizer-factory", "fp4-param-gather"}, "FP4 is not implemented");
  t.unsupported("fp16-lm-cross-entropy", "cross-entropy in fp16 is not implemented (gptrain's is always fp32)");
  t.unsupported("disable-bf16-reduced-precision-matmul",
                "gptrain leaves cuBLASLt's split-K reduction scheme to cuBLASLt; forbidding reduced-precision "
                "reductions is not implemented");
  t.noop("apply-query-key-layer-scaling", K::Switch,
         "gptrain's attention scores and softmax are fp32, so this fp16 overflow guard (scale Q K^T by 1/layer, "
         "undo it in the softmax) has nothing to guard; the values are the same");
}

void bind_checkpoint_features(FlagTable& t) {
  t.unsupported("load-main-params-from-ckpt", "loading fp32 master weights without the optimizer is not implemented");
  refuse_all(t,
             {"non-persistent-local-ckpt-dir", "non-persistent-local-ckpt-algo", "replication", "replication-jump",
              "replication-factor"},
             "local (node-local, replicated) non-persistent checkpoints are not implemented; use "
             "--non-persistent-ckpt-type global");
  t.unsupported("pretrained-checkpoint", "use --load with --finetune");
  t.unsupported("use-mp-args-from-checkpoint-args",
                "parallel flags must be given explicitly (a checkpoint loads under any TP x PP x DP layout)");
  t.unsupported("no-use-tokenizer-model-from-checkpoint-args",
                "gptrain takes the tokenizer files from the checkpoint unless --vocab-file / --merge-file are given");
  t.noop("use-persistent-ckpt-worker", K::Switch,
         "gptrain's --async-save writes on a thread of the training process; there is no worker process to keep");
  refuse_all(t, {"ckpt-convert-format", "ckpt-convert-save"},
             "converting to Megatron checkpoint formats is not implemented; convert_to_hf exports Hugging Face models");
  t.unsupported("ckpt-convert-update-legacy-dist-opt-format",
                "Megatron checkpoints cannot be loaded (gptrain reads its own format)");
  t.unsupported("dist-ckpt-save-pre-mcore-014", "gptrain writes its own checkpoint format, no Megatron format");
  t.unsupported("dist-ckpt-strictness",
                "gptrain's loads are always strict (a missing tensor, or one the model has no place for, stops the "
                "run); other modes are not implemented");
  t.noop("no-initialization", K::Switch, "gptrain always initializes the weights before --load overwrites them");
  t.noop("auto-detect-ckpt-format", K::Switch,
         "gptrain reads only its own checkpoint format (docs/checkpoint-format.md) and stops on any other");
  accept_all(t, K::Switch, {"use-dist-ckpt", "ckpt-fully-parallel-save"}, kIgnoredByMegatron);
  t.noop("dist-ckpt-format", K::Value, kIgnoredByMegatron);
  t.noop("no-ckpt-fully-parallel-save", K::Switch,
         "gptrain's saves are not spread over DP: DP rank 0 of each model-parallel rank writes its files, which "
         "still load under any layout");
  t.noop("ckpt-fully-parallel-load", K::Switch,
         "every gptrain rank reads the slices it needs from the memory-mapped checkpoint files");
  t.noop("ckpt-assume-constant-structure", K::Switch,
         "gptrain saves its fixed tensor list directly; there is no save plan to cache");
  t.noop("dist-ckpt-optim-fully-reshardable", K::Switch,
         "gptrain's checkpoints, optimizer state included, always load under any TP x PP x DP layout");
  t.noop("distrib-optim-fully-reshardable-mem-efficient", K::Switch,
         "gptrain gathers each model-parallel rank's optimizer state on DP rank 0 to save it; there is no other path");
}

void bind_distributed_features(FlagTable& t) {
  t.unsupported("model-parallel-size", "removed from Megatron; use --tensor-model-parallel-size");
  t.unsupported("pipeline-model-parallel-layout",
                "custom pipeline layouts are not implemented; use --decoder-first/last-pipeline-num-layers");
  t.unsupported("microbatch-group-size-per-virtual-pipeline-stage",
                "the interleaved schedule groups --pipeline-model-parallel-size micro-batches (Megatron's default); "
                "other group sizes are not implemented");
  t.unsupported("distributed-timeout-seconds-after-init",
                "a separate timeout after initialization is not implemented; --distributed-timeout-minutes applies "
                "throughout");
  t.unsupported("ddp-num-buckets", "use --ddp-bucket-size (gptrain sizes buckets in elements)");
  t.unsupported("ddp-reduce-scatter-with-fp32-accumulation",
                "gptrain reduces fp32 gradients; a reduce-scatter sending lower-precision values is not implemented");
  t.unsupported("lazy-mpu-init", "an external process-group manager is not supported");
  t.unsupported("use-tp-pp-dp-mapping", "only Megatron's default rank order tp-cp-ep-dp-pp is implemented");
  refuse_all(t, {"cp-comm-type", "hierarchical-context-parallel-sizes"},
             "context parallelism is not implemented (only --context-parallel-size 1)");
  refuse_all(t,
             {"use-megatron-fsdp", "use-torch-fsdp2", "torch-fsdp2-no-reshard-after-forward",
              "data-parallel-sharding-strategy", "init-model-with-meta-device", "no-gradient-reduce-div-fusion",
              "fsdp-double-buffer", "suggested-communication-unit-size", "keep-fp8-transpose-cache",
              "enable-full-sharding-in-hsdp", "no-strict-fsdp-dtensor-load"},
             "FSDP is not implemented; use --use-distributed-optimizer");
  t.accept_values("num-distributed-optimizer-instances", {"1"},
                  "one distributed optimizer spans the whole DP group (--use-distributed-optimizer)");
  t.noop("no-overlap-p2p-communication", K::Switch,
         "gptrain's pipeline transfers are batched per schedule step and complete before the next step (what this "
         "switch asks)");
  t.noop("overlap-p2p-communication-warmup-flush", K::Switch,
         "gptrain's pipeline transfers complete before the next step computes (the same values, no overlap)");
  accept_all(t, K::Switch, {"no-scatter-gather-tensors-in-pipeline", "use-ring-exchange-p2p"},
             "gptrain's pipeline transfers are MPI Isend/Irecv or NCCL send/recv of whole tensors");
  t.noop("pipeline-model-parallel-comm-backend", K::Value,
         "gptrain's pipeline transfers use the --distributed-backend communicator");
  const std::string no_deferral =
      "gptrain computes the output layer's weight gradient in every micro-batch's backward (the same gradient)";
  t.noop("defer-embedding-wgrad-compute", K::Switch, no_deferral);
  t.noop("wgrad-deferral-limit", K::Value, no_deferral);
  accept_all(t, K::Switch,
             {"no-align-grad-reduce", "no-align-param-gather", "overlap-param-gather-with-optimizer-step"},
             "gptrain times its DP reductions and parameter gathers itself (the same gradients and parameters)");
  t.noop("ddp-pad-buckets-for-high-nccl-busbw", K::Switch,
         "gptrain's buckets are --ddp-bucket-size elements, not padded for NCCL bandwidth (the same gradients)");
  t.noop("ddp-average-in-collective", K::Switch,
         "gptrain scales each gradient bucket by 1/DP before summing it (Megatron's default); the mean is the same");
  t.noop("local-rank", K::Value, "gptrain takes each process's local rank from the launcher's environment");
  accept_all(t, K::Switch, {"use-nccl-ub", "disable-symmetric-registration"},
             "gptrain does not register NCCL user buffers (the same collectives)");
  const std::string sharp = "gptrain leaves SHARP to NCCL's own configuration (NCCL_COLLNET_ENABLE)";
  t.noop("use-sharp", K::Switch, sharp);
  t.noop("sharp-enabled-group", K::Value, sharp);
  t.noop("nccl-communicator-config-path", K::Value,
         "gptrain creates NCCL communicators with NCCL's defaults (NCCL_* environment variables apply)");
  t.noop("high-priority-stream-groups", K::List, "gptrain's CUDA streams all have the default priority");
}

void bind_data_features(FlagTable& t) {
  t.unsupported("encoder-seq-length", "for a GPT model use --seq-length (Megatron takes it as the same value)");
  t.unsupported("object-storage-cache-path", "object-storage (S3/MSC) datasets are not supported");
  t.unsupported("allow-ambiguous-pad-tokens",
                "masking dataset tokens that share the tokenizer's pad id is not implemented (GPT2BPETokenizer has no "
                "pad token and samples are never padded)");
  t.noop("num-dataset-builder-threads", K::Value, "gptrain builds a rank's dataset indices in one thread");
  t.unsupported("multiple-validation-sets", "a separate loss per validation dataset is not implemented");
  t.unsupported("test-mode", "Megatron's real-time tests are not implemented");
  t.unsupported("padded-vocab-size", "set the padding with --make-vocab-size-divisible-by");
  refuse_all(t, {"tokenizer-metadata", "trust-remote-code"},
             "only GPT2BPETokenizer, HuggingFaceTokenizer (BPE tokenizer.json), the SentencePiece types, "
             "TikTokenizer and NullTokenizer are implemented");
  t.noop("legacy-tokenizer", K::Switch,
         "gptrain has one implementation per tokenizer type; its SentencePiece types are always the legacy module's "
         "(Llama2Tokenizer adds BOS, SentencePieceTokenizer adds <EOD> and friends)");
}

void bind_logging_features(FlagTable& t) {
  t.unsupported("log-progress", "progress.txt is not written");
  t.unsupported("log-energy", "energy logging is not implemented");
  t.unsupported("timing-log-option", "Megatron's timers are not implemented (the log line has the iteration time)");
  t.noop("no-barrier-with-level-1-timing", K::Switch, "gptrain has no level-1 timers, so no timer barriers");
  t.accept_values("tensorboard-log-interval", {"1"},
                  "gptrain writes the training scalars to TensorBoard every iteration (Megatron's default)");
  t.noop("tensorboard-queue-size", K::Value, "gptrain flushes its TensorBoard events at every log line and evaluation");
  refuse_all(t, {"no-log-loss-scale-to-tensorboard", "log-world-size-to-tensorboard"}, "not implemented");
  refuse_all(t, {"wandb-entity", "wandb-exp-name", "wandb-save-dir"},
             "Weights & Biases is not supported; use --tensorboard-dir or --metrics-file");
  t.unsupported("logging-level", "Python logging levels do not apply to gptrain's log");
}

// Mixture of experts: what the MoE layer (core/model/moe_layer.cpp) does not implement.
void bind_moe(FlagTable& t) {
  t.accept_values("expert-tensor-parallel-size", {"1"},
                  "experts are not split over tensor-parallel ranks: with TP > 1 each TP rank holds its EP rank's "
                  "experts whole");
  t.noop("moe-grouped-gemm", K::Switch,
         "gptrain's experts always run as GEMMs over their permuted rows (one per expert and source EP rank)");
  refuse_all(t,
             {"moe-router-enable-expert-bias",
              "moe-router-bias-update-rate",
              "moe-shared-expert-overlap",
              "moe-use-legacy-grouped-gemm",
              "moe-extended-tp",
              "moe-use-upcycling",
              "moe-upcycling-granularity",
              "moe-router-dtype",
              "moe-router-fusion",
              "moe-router-num-groups",
              "moe-router-group-topk",
              "moe-router-force-load-balancing",
              "moe-router-padding-for-fp8",
              "moe-input-jitter-eps",
              "moe-enable-deepep",
              "moe-deepep-num-sms",
              "moe-permute-fusion",
              "moe-apply-probs-on-input",
              "moe-pad-experts-for-cuda-graph-inference",
              "overlap-moe-expert-parallel-comm",
              "delay-wgrad-compute",
              "use-fused-weighted-squared-relu"},
             "this mixture-of-experts option is not implemented (docs/moe-ops.md lists what is)");
  t.unsupported(
      "moe-layer-recompute",
      "Megatron's deprecated spelling of --recompute-granularity selective --recompute-modules moe: give those");
}

// Implementation choices and features named by flags of Megatron's own groups that gptrain answers itself:
// what it does instead, or why it refuses them.
void bind_implementation_choices(FlagTable& t) {
  t.noop("num-workers", K::Value, "batches are read in the training thread from the memory-mapped dataset");
  t.accept_values("dataloader-type", {"single"}, "Megatron's single sampler is gptrain's (cyclic is not implemented)");
  t.noop("no-create-attention-mask-in-dataloader", K::Switch,
         "gptrain never materialises attention masks: its attention builds the causal mask itself");
  // Implementation choices gptrain does not have: what it does instead.
  const std::string fused = "gptrain's fusions are fixed (its fused ops give the unfused sequence's values)";
  for (const char* n : {"no-bias-swiglu-fusion", "no-bias-dropout-fusion", "no-masked-softmax-fusion", "no-rope-fusion",
                        "no-gradient-accumulation-fusion", "no-persist-layer-norm"})
    t.noop(n, K::Switch, fused);
  t.noop("cross-entropy-loss-fusion", K::Switch, "gptrain's softmax + cross-entropy is always one fused op");
  t.noop("use-flash-attn", K::Switch, "gptrain's attention is always flash-style (the (T, T) scores are never stored)");
  t.noop("attention-softmax-in-fp32", K::Switch, "gptrain's softmax statistics are always fp32");
  t.noop("accumulate-allreduce-grads-in-fp32", K::Switch, "gptrain's main gradients are always fp32");
  t.noop("use-mcore-models", K::Switch, "gptrain has one model implementation");
  t.noop("DDP-impl", K::Value, "gptrain's data parallelism is its own (gradient buckets, parallel/data_parallel)");
  t.noop("no-mmap-bin-files", K::Switch, "gptrain always memory-maps .bin files");
  t.noop("empty-unused-memory-level", K::Value,
         "gptrain allocates its arenas once; there is no allocator cache to empty");
  t.noop("manual-gc", K::Switch, "gptrain has no garbage collector");
  t.noop("ckpt-format", K::Value,
         "gptrain writes its own safetensors format (docs/checkpoint-format.md); convert_to_hf exports");
  t.noop("check-for-nan-in-loss-and-grad", K::Switch,
         "on by default, as Megatron: a NaN/inf loss or gradient norm stops the run (see "
         "--no-check-for-nan-in-loss-and-grad)");
  // Megatron (deprecated): taken only with --position-embedding-type rope, where there is no learned table
  // to drop; any other type is refused (parse_train_args), as in Megatron's validate_args.
  t.noop("no-position-embedding", K::Switch,
         "deprecated in Megatron and taken only with --position-embedding-type rope, which has no learned position "
         "table; the type alone decides (none: no positions)");

  t.unsupported("use-rope-scaling", "Llama-3.1 RoPE scaling is not implemented");
  t.unsupported("rope-scaling-factor", "Llama-3.1 RoPE scaling is not implemented");
  t.unsupported("qk-layernorm", "Q/K layer norms are not implemented");
  t.unsupported("squared-relu", "only GELU (tanh/erf, see --gelu) and --swiglu MLPs are implemented");
  t.unsupported("openai-gelu", "use --gelu tanh (the same tanh approximation)");
  t.unsupported(
      "quick-geglu",
      "quick GELU (x * sigmoid(1.702 x)) is not implemented; gptrain's --geglu gates with the tanh or erf GELU");
  t.unsupported("transformer-impl",
                "gptrain has one implementation; checkpoint names are fixed (docs/checkpoint-format.md)");
  t.unsupported("multi-latent-attention", "MLA is not implemented");
  t.unsupported("mtp-num-layers", "multi-token prediction is not implemented");
  t.unsupported("init-method-xavier-uniform", "only normal init (--init-method-std) is implemented");
  t.unsupported("data-parallel-random-init", "every DP rank starts from the same init");
  t.unsupported("account-for-embedding-in-pipeline-split", "use --decoder-first/last-pipeline-num-layers");
  t.unsupported("account-for-loss-in-pipeline-split", "use --decoder-first/last-pipeline-num-layers");
  t.unsupported("tp-comm-overlap", "TE userbuffers overlap is not implemented");
  t.unsupported("sgd-momentum", "only --optimizer adam is implemented");
  t.unsupported("fp8-format", "FP8 is not implemented");
  t.unsupported("use-checkpoint-args", "model flags must be given explicitly");
  t.unsupported("use-pytorch-profiler",
                "gptrain has no PyTorch; --profile gives NVTX ranges and cudaProfilerStart/Stop on CUDA (nsys), a "
                "per-range wall-time table on CPU");
  t.unsupported("log-params-norm", "not implemented");
  t.unsupported("log-num-zeros-in-grad", "not implemented");
  t.unsupported("timing-log-level", "not implemented");
  t.unsupported("log-timers-to-tensorboard", "not implemented");
  t.unsupported("log-validation-ppl-to-tensorboard", "not implemented");
  t.unsupported("log-memory-to-tensorboard", "not implemented");
  t.unsupported("wandb-project", "Weights & Biases is not supported; use --tensorboard-dir or --metrics-file");
  t.unsupported("skip-train", "not implemented");
  t.unsupported("full-validation", "not implemented; use --eval-iters");
  t.unsupported("data-args-path", "give blends with --data-path / --train-data-path");
  t.unsupported("per-split-data-args-path", "give blends with --train/valid/test-data-path");
}

}  // namespace

void bind_megatron_only_flags(FlagTable& t) {
  t.group("megatron");
  bind_implementation_choices(t);
  bind_moe(t);
  bind_model_features(t);
  bind_training_features(t);
  bind_precision_features(t);
  bind_checkpoint_features(t);
  bind_distributed_features(t);
  bind_data_features(t);
  bind_logging_features(t);
}

}  // namespace gptrain
