#include "core/config/megatron_only_flags.h"

#include <initializer_list>

namespace gptrain {

namespace {

using K = FlagTable::Kind;
using Names = std::initializer_list<const char*>;

// The reason of Megatron's deprecated flags that Megatron itself ignores.
const char* const kIgnoredByMegatron = "deprecated; Megatron ignores it too";
const char* const kBertT5Retriever =
    "an option of Megatron's BERT, T5 and retriever models; gptrain trains GPT models only";

void refuse_all(FlagTable& t, Names names, const std::string& reason) {
  for (const char* n : names) t.unsupported(n, reason);
}
void accept_all(FlagTable& t, K kind, Names names, const std::string& what) {
  for (const char* n : names) t.noop(n, kind, what);
}

// Megatron's other workloads and model types: one reason per kind, whatever the flag.
void bind_other_workloads(FlagTable& t) {
  refuse_all(t,
             {"inference-batch-times-seqlen-threshold",
              "max-tokens-to-oom",
              "use-legacy-static-engine",
              "inference-max-requests",
              "inference-max-seq-length",
              "inference-dynamic-batching",
              "inference-dynamic-batching-buffer-size-gb",
              "inference-dynamic-batching-paused-buffer-size-gb",
              "inference-dynamic-batching-mamba-memory-ratio",
              "inference-dynamic-batching-block-size",
              "inference-dynamic-batching-max-requests",
              "inference-dynamic-batching-max-tokens",
              "inference-dynamic-batching-num-cuda-graphs",
              "inference-dynamic-batching-track-paused-request-events",
              "inference-dynamic-batching-track-generated-token-events",
              "decode-only-cuda-graphs",
              "inference-cuda-graph-all-prefills",
              "inference-cuda-graph-max-tokens",
              "inference-dynamic-batching-unified-memory-level",
              "enable-chunked-prefill",
              "num-speculative-tokens",
              "inference-dynamic-batching-prefix-caching",
              "inference-dynamic-batching-prefix-caching-eviction-policy",
              "inference-dynamic-batching-prefix-caching-coordinator-policy",
              "inference-dynamic-batching-prefix-caching-routing-alpha",
              "inference-dynamic-batching-prefix-caching-mamba-gb",
              "inference-dynamic-batching-cuda-graph-mixed-prefill-count",
              "inference-dynamic-batching-cuda-graph-sizing-distribution",
              "inference-dynamic-batching-sampling-backend",
              "use-same-sampling-seed-across-dp-ranks",
              "inference-dynamic-batching-async-sched-mode",
              "inference-dynamic-batching-logprobs-mode",
              "inference-logging-step-interval",
              "inference-text-gen-server-logging",
              "inference-wandb-logging",
              "inference-coordinator-port",
              "mamba-inference-conv-states-dtype",
              "mamba-inference-ssm-states-dtype",
              "inference-use-synchronous-zmq-collectives",
              "inference-disable-ep-consensus",
              "inference-shards",
              "inference-cuda-graph-scope",
              "flash-decode",
              "symmetric-ar-type",
              "nccl-all-reduce-for-prefill",
              "inference-fuse-tp-communication",
              "inference-disable-triton-nvls-kernels",
              "inference-grouped-gemm-backend",
              "inference-moe-disable-fused-quant-kernels",
              "inference-moe-token-dispatcher-type",
              "mlp-chunks-for-prefill",
              "cache-mla-latents"},
             "an option of Megatron's inference engine; pretrain_gpt trains (the generate app samples from a "
             "checkpoint)");
  refuse_all(t,
             {"perform-rl-step",
              "rl-prompts-per-eval",
              "grpo-prompts-per-step",
              "grpo-group-size",
              "rl-generation-lag",
              "rl-max-inflight-requests",
              "rl-submission-granularity",
              "rl-consumption-granularity",
              "rl-durable-rollout-bank",
              "rl-rollout-bank-dir",
              "rl-rollout-bank-max-bytes",
              "grpo-iterations",
              "grpo-clamp-eps-lower",
              "grpo-clamp-eps-upper",
              "grpo-kl-beta",
              "grpo-entropy-term-weight",
              "grpo-filter-groups-with-same-reward",
              "langrl-env-config",
              "rl-default-temperature",
              "rl-default-top-p",
              "rl-default-top-k",
              "rl-offload-optimizer-during-inference",
              "rl-kv-cache-management-mode",
              "rl-persist-cuda-graphs",
              "rl-partial-rollouts",
              "rl-inference-logprobs-is-correction",
              "rl-importance-sampling-truncation-coef",
              "rl-use-sequence-packing",
              "rl-sequence-packing-max-sequences-per-bin",
              "rl-sequence-packing-algo",
              "rl-training-cuda-graphs",
              "rl-inference-tensor-model-parallel-size",
              "rl-inference-pipeline-model-parallel-size",
              "rl-inference-expert-model-parallel-size",
              "rl-inference-expert-tensor-model-parallel-size",
              "rl-inference-model-unified-memory-level",
              "rl-offload-inference-model-weights-when-idle",
              "refit-method",
              "rl-verify-model-weights-swap",
              "rl-skip-bos-token",
              "rl-profile",
              "rl-profile-dir",
              "rl-inference-parsers"},
             "an option of Megatron's reinforcement learning (GRPO); gptrain pretrains language models only");
  refuse_all(t,
             {"num-classes",
              "img-h",
              "img-w",
              "num-channels",
              "patch-dim",
              "classes-fraction",
              "data-per-class-fraction",
              "no-data-sharding",
              "head-lr-mult",
              "vision-pretraining",
              "vision-pretraining-type",
              "vision-backbone-type",
              "swin-backbone-type",
              "mask-type",
              "mask-factor",
              "iter-per-epoch",
              "dino-local-img-size",
              "dino-local-crops-number",
              "dino-head-hidden-size",
              "dino-bottleneck-size",
              "dino-freeze-last-layer",
              "dino-norm-last-layer",
              "dino-warmup-teacher-temp",
              "dino-teacher-temp",
              "dino-warmup-teacher-temp-epochs"},
             "an option of Megatron's vision models (ViT, Swin, DINO); gptrain trains GPT models only");
  refuse_all(t,
             {"ict-head-size", "biencoder-projection-dim", "biencoder-shared-query-context-model", "ict-load",
              "bert-load", "titles-data-path", "query-in-block-prob", "use-one-sent-docs", "evidence-data-path",
              "retriever-report-topk-accuracies", "retriever-score-scaling", "block-data-path", "embedding-path",
              "indexer-batch-size", "indexer-log-interval", "output-bert-embeddings", "bert-embedder-type"},
             kBertT5Retriever);
  refuse_all(t,
             {"logits-save-top-k", "logits-save-top-p", "logits-save-top-p-min-k", "logits-save-dir",
              "logits-save-dtype", "logits-load-dir", "logits-load-decode-threads", "logits-load-prefetch-factor",
              "logits-load-msc-prefetch-depth", "logits-load-kd-loss-alpha", "logits-load-ignore-errors"},
             "knowledge distillation from saved teacher logits is not implemented");
  refuse_all(t, {"sft", "sft-tokenizer-prompt-format"},
             "Megatron's supervised fine-tuning (conversation datasets and prompt formats) is not implemented; "
             "gptrain trains on indexed token datasets (--finetune starts from a checkpoint)");
  refuse_all(t, {"heterogeneous-layers-config-path", "heterogeneous-layers-config-encoded-json"},
             "heterogeneous models (a configuration per layer) are not implemented: every layer has the same shape");
  refuse_all(t, {"kitchen-config-file", "kitchen-recipe-number", "use-kitchen-attention", "kitchen-attention-backend"},
             "NVIDIA Kitchen quantization is not implemented");
  refuse_all(
      t,
      {"fault-injector-ranks", "fault-injector-num-ranks", "fault-injector-fault-types",
       "fault-injector-fault-probabilities", "fault-injector-fault-delay", "fault-injector-delay-start-iteration",
       "fault-injector-mtti-seconds", "fault-injector-offset-seconds", "fault-injector-seed"},
      "Megatron's fault injector (for testing its resilience tools) is not implemented");
  refuse_all(
      t,
      {"inprocess-restart", "inprocess-max-iterations", "inprocess-monitor-thread-interval",
       "inprocess-monitor-process-interval", "inprocess-progress-watchdog-interval", "inprocess-heartbeat-interval",
       "inprocess-soft-timeout", "inprocess-hard-timeout", "inprocess-heartbeat-timeout", "inprocess-barrier-timeout",
       "inprocess-completion-timeout", "inprocess-last-call-wait", "inprocess-termination-grace-time",
       "inprocess-granularity", "inprocess-active-world-size", "inprocess-empty-cuda-cache"},
      "in-process restart (NVIDIA Resiliency Extension) is not implemented: a failed run stops, and a new run "
      "resumes from the last checkpoint with --load");
  refuse_all(t, {"enable-ft-package", "calc-ft-timeouts", "ft-num-warmup-iters"},
             "NVIDIA's fault-tolerance package is not supported: a hung collective ends the run after "
             "--distributed-timeout-minutes");
  refuse_all(t, {"adlr-autoresume", "adlr-autoresume-interval"},
             "ADLR cluster autoresume is not supported; --exit-signal-handler or --exit-duration-in-mins save and "
             "stop, --load resumes");
  t.unsupported("enable-msc", "the Multi-Storage Client (object storage) is not supported; paths are local files");
  t.noop("disable-msc", K::Switch, "deprecated; Megatron ignores it too (gptrain reads local files only)");
  accept_all(t, K::Switch, {"no-one-logger", "one-logger-async"},
             "gptrain reports to no OneLogger service (what this switch asks); the log, --tensorboard-dir and "
             "--metrics-file have the metrics");
  accept_all(t, K::Value, {"one-logger-project", "one-logger-run-name", "app-tag-run-name", "app-tag-run-version"},
             "gptrain reports to no OneLogger service (Megatron also runs without it when the package is absent); the "
             "log, --tensorboard-dir and --metrics-file have the metrics");
}

// Architectures of Megatron's TransformerConfig that gptrain does not build (they change the model's maths).
void bind_architecture_variants(FlagTable& t) {
  refuse_all(
      t, {"q-lora-rank", "kv-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim", "mla-down-proj-fusion"},
      "multi-latent attention (MLA) is not implemented");
  refuse_all(t,
             {"experimental-attention-variant",
              "linear-attention-freq",
              "linear-conv-kernel-dim",
              "linear-key-head-dim",
              "linear-value-head-dim",
              "linear-num-key-heads",
              "linear-num-value-heads",
              "dsa-indexer-n-heads",
              "dsa-indexer-head-dim",
              "dsa-indexer-topk",
              "dsa-indexer-topk-freq",
              "dsa-indexer-skip-topk-offset",
              "dsa-indexer-loss-coeff",
              "dsa-indexer-use-sparse-loss",
              "dsa-kernel-backend",
              "dsa-indexer-rope-interleaved",
              "no-dsa-indexer-rotate-activation",
              "no-dsa-indexer-scoring-relu",
              "dsa-indexer-k-norm-epsilon",
              "dsa-indexer-k-norm-fp32"},
             "attention variants (gated delta net, linear attention, DeepSeek sparse attention) are not implemented: "
             "every layer has softmax attention");
  refuse_all(
      t,
      {"is-hybrid-model", "hybrid-layer-pattern", "hybrid-override-pattern", "mtp-hybrid-override-pattern",
       "mamba-state-dim", "mamba-head-dim", "mamba-num-groups", "mamba-num-heads", "disable-mamba-mem-eff-path",
       "mamba-training-ssm-states-dtype", "gdp-num-householder", "gdp-cutedsl-kernel",
       "gdp-num-chunk-states-to-recompute"},
      "hybrid models (Mamba, gated delta product layers) are not implemented: gptrain builds transformer layers");
  refuse_all(t, {"mtp-standalone", "mtp-use-repeated-layer", "mtp-detach-heads", "mtp-hsm"},
             "multi-token prediction is not implemented");
  refuse_all(t,
             {"use-mup", "mup-width-mult", "mup-base-hidden-size", "mup-embedding-mult", "mup-output-mult",
              "mup-base-head-dim", "mup-attn-scale-power"},
             "maximal update parametrisation (muP scaling of init, learning rates, attention and logits) is not "
             "implemented");
  refuse_all(t,
             {"enable-mhc-connections", "mhc-num-residual-streams", "mhc-sinkhorn-iterations", "mhc-init-gating-factor",
              "mhc-recompute-layer-num"},
             "manifold-constrained hyper-connections (several residual streams) are not implemented");
  refuse_all(t, {"qk-clip", "qk-clip-alpha", "qk-clip-threshold"},
             "QK-clip (rescaling the Q/K weights by the largest attention logit) is not implemented");
  t.unsupported("attention-output-gate", "a gate on the attention output is not implemented");
  refuse_all(
      t,
      {"tensor-parallel-num-weight-shards", "expert-tensor-parallel-num-weight-shards", "gtp-remat-opt-in-modules",
       "gtp-remat-reduce-scatter-with-fp32-accumulation", "gtp-remat-nccl-ub", "gtp-expert-remat-nccl-ub"},
      "weights sharded beyond --tensor-model-parallel-size (generalized TP with rematerialised weights) are not "
      "implemented");
  t.unsupported("spec", "gptrain's layers are fixed (no Python module specs); the flags choose their options");
  t.unsupported("yaml-cfg",
                "Megatron's nested YAML configuration is not read; gptrain's --config takes a flat YAML file of the "
                "flags");
  t.noop("enable-experimental", K::Switch, "gptrain has no experimental features to enable");
}

// CUDA graphs replay the same kernels: whether gptrain captures them cannot change a value.
void bind_cuda_graphs(FlagTable& t) {
  const std::string no_graphs =
      "gptrain launches its kernels directly, without CUDA graph capture (the same values, more launch overhead)";
  t.accept_values("cuda-graph-impl", {"none", "local", "transformer_engine", "full_iteration"}, no_graphs);
  accept_all(t, K::Switch, {"enable-cuda-graph", "external-cuda-graph", "optimizer-cuda-graph"}, no_graphs);
  accept_all(t, K::Value, {"cuda-graph-warmup-steps"}, no_graphs);
  accept_all(t, K::List, {"cuda-graph-scope", "cuda-graph-modules"}, no_graphs);
}

// Megatron's "network size" group: architectures gptrain does not build.
void bind_model_features(FlagTable& t) {
  t.unsupported("encoder-num-layers", "for a GPT model use --num-layers (Megatron takes it as the same value)");
  t.accept_values("softmax-type", {"vanilla"}, "gptrain's attention uses the plain softmax (no offset)");
  t.accept_values("glu-linear-offset", {"0.0", "0"}, "gptrain's --swiglu multiplies by the linear half unchanged");
  t.accept_values("rope-type", {"rope"},
                  "Megatron's common attention takes only rope here (--rope-type yarn is MLA's, not implemented); "
                  "YaRN is --position-embedding-type yarn");
  refuse_all(t, {"relative-attention-num-buckets", "relative-attention-max-distance"},
             "relative (T5-style) position embeddings are not implemented");
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
             kBertT5Retriever);
  t.unsupported("muon-use-nesterov", "Megatron's switch is --muon-nesterov");
  t.noop("muon-use-syrk", K::Switch,
         "a Triton kernel for Newton-Schulz's Gram matrix X X^T; gptrain's fp32 GEMM computes the same product");
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
  t.unsupported(
      "use-torch-optimizer-for-cpu-offload",
      "gptrain's offloaded optimizer state is updated by its own CPU AdamW; there is no torch optimizer to pick");
  t.unsupported(
      "overlap-cpu-optimizer-d2h-h2d",
      "overlapping the offloaded optimizer's copies with its CPU step is not implemented (--optimizer-cpu-offload "
      "copies, steps and copies back in turn)");
  refuse_all(t, {"no-pin-cpu-grads", "no-pin-cpu-params"},
             "gptrain's offloaded optimizer copies through pageable host memory; pinning is not implemented");
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
  refuse_all(
      t,
      {"pytorch-profiler-collect-shapes", "pytorch-profiler-collect-callstack", "pytorch-profiler-collect-chakra",
       "record-shapes"},
      "gptrain has no PyTorch profiler; --profile gives NVTX ranges and cudaProfilerStart/Stop on CUDA (nsys), a "
      "per-range wall-time table on CPU");
  t.noop("nvtx-ranges", K::Switch,
         "gptrain puts NVTX ranges around its phases during --profile's iterations (CUDA), not otherwise");
  t.unsupported("gpu-sniff-test-interval", "GPU sniff tests (GEMM and communication benchmarks) are not implemented");
  t.noop("exit-signal-handler-for-dataloader", K::Switch,
         "gptrain has no data-loader worker processes (batches are read in the training thread)");
  t.unsupported(
      "exit-signal-handler-for-training",
      "use --exit-signal-handler (with --exit-signal): gptrain finishes the iteration, saves (with --save) and "
      "exits 0");
  t.unsupported("fake-process-group",
                "a fake process group is not implemented; --dry-run prints each rank's memory plan for any layout");
  t.unsupported("freeze-all-layers", "freezing layers is not implemented");
  t.noop("disable-jit-fuser", K::Switch, "gptrain has no JIT fuser (its fused kernels are compiled ahead of time)");
  const std::string no_straggler = "straggler detection is not implemented (each iteration's time is in the log line)";
  refuse_all(t, {"log-straggler", "straggler-ctrlr-port", "straggler-minmax-count"}, no_straggler);
  t.noop("disable-straggler-on-startup", K::Switch, "gptrain runs no straggler detector (what this switch asks)");
  t.unsupported("run-workload-inspector-server",
                "an on-demand profiling server is not implemented; --profile with --profile-step-start/-end profiles "
                "chosen iterations");
  t.accept_values("rerun-mode", {"disabled"},
                  "gptrain never reruns an iteration: a NaN/inf loss or gradient norm stops the run (Megatron's "
                  "disabled mode; its rerun state machine is not implemented)");
  refuse_all(t, {"error-injection-rate", "error-injection-type"},
             "Megatron's rerun state machine (and its error injection) is not implemented");
  t.unsupported("mlp-chunks-for-training", "splitting the MLP's input along the sequence is not implemented");
  refuse_all(t,
             {"fine-grained-activation-offloading", "offload-modules", "min-offloaded-tensor-size",
              "delay-offload-until-cuda-graph", "delta-offload-bytes-across-pp-ranks", "activation-offload-fraction",
              "fine-grained-offloading-max-inflight-offloads"},
             "per-module activation offloading is not implemented; --cpu-offloading-num-layers offloads whole layers");
  t.noop("cpu-offloading-retain-pinned-cpu-buffers", K::Switch,
         "gptrain allocates its arenas, --cpu-offloading's host arena included, once for the run and reuses them");
}

void bind_precision_features(FlagTable& t) {
  t.unsupported("fp8-output-proj", "the output layer in MXFP8 (Blackwell) is not implemented");
  t.unsupported("te-precision-config-file",
                "Transformer Engine's per-module precision overrides (FP8, FP4) are not implemented");
  t.unsupported("output-logit-dtype", "choosing the output layer's logits dtype is not implemented");
  t.accept_values("main-grads-dtype", {"fp32"},
                  "gptrain accumulates and reduces main gradients in fp32 (bf16 "
                  "main gradients are not implemented)");
  t.accept_values("main-params-dtype", {"fp32"},
                  "gptrain keeps fp32 master weights (Megatron's fp16 master weights keep a per-tensor scale, not "
                  "implemented)");
  accept_all(t, K::Switch, {"fused-residual-rmsnorm", "use-transformer-engine-op-fuser"},
             "gptrain's fusions are fixed (its fused ops give the unfused sequence's values)");
  t.unsupported("batch-invariant-mode", "batch-invariant kernels are not implemented");
  t.accept_values("batch-invariant-backend", {"te_native", "deepgemm", "triton"},
                  "the backend of --batch-invariant-mode, which is not implemented; without it Megatron ignores the "
                  "backend too");
  t.accept_values("flash-attention-version", {"2", "3", "4"},
                  "gptrain's attention is its own flash-style kernel, not the FlashAttention library (the same "
                  "values)");
  t.unsupported("fp8-quantizer-factory", "the custom FP8 recipe (a Python quantizer factory) is not implemented");
  t.unsupported("fp8-param-gather",
                "FP8 parameters (the distributed optimizer's all-gather in FP8) are not implemented: gptrain keeps "
                "compute-dtype parameters and quantises the weights in each FP8 GEMM");
  t.unsupported("reuse-grad-buf-for-mxfp8-param-ag", "MXFP8 (Blackwell) is not implemented");
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
  refuse_all(t,
             {"save-params-interval", "save-activations-interval", "save-tokens-per-expert-interval",
              "save-wgrads-interval", "save-dgrads-interval"},
             "saving parameters, activations, gradients or routing counts between checkpoints is not implemented");
  t.accept_values("async-strategy", {"nvrx", "mcore"},
                  "gptrain's --async-save writes from a host copy on a thread of the training process");
  const std::string writer_thread =
      "gptrain's --async-save writer is a thread of the training process (no worker process to tune)";
  accept_all(t, K::Value, {"async-ckpt-cpu-priority", "async-ckpt-io-priority", "dist-ckpt-workers"}, writer_thread);
  t.noop("async-ckpt-use-cpu-shm", K::Switch, writer_thread);
  const std::string own_layout =
      "every gptrain rank reads the slices it needs from the memory-mapped checkpoint files, and DP rank 0 of "
      "each model-parallel rank writes its own (no exchange to configure)";
  accept_all(t, K::Value,
             {"ckpt-fully-parallel-load-exchange-algo", "ckpt-fully-parallel-save-process-group",
              "ckpt-fully-parallel-load-process-group", "ckpt-pg-tensors-cache-path"},
             own_layout);
  accept_all(t, K::Switch, {"ckpt-fully-parallel-load-per-rank-objects", "ckpt-pg-tensors-cache-create"}, own_layout);
  t.noop("no-ckpt-load-validate-sharding-integrity", K::Switch,
         "gptrain's loads always check that every tensor is present with its shape (the check stays on)");
  t.noop("no-save-tokenizer-assets", K::Switch,
         "gptrain copies no tokenizer files into its checkpoints (their args record the tokenizer flags)");
  t.noop("verify-integrity", K::Switch,
         "gptrain always writes a CRC-32C of every tensor and checks it on load (docs/checkpoint-format.md)");
  t.unsupported("override-ckpt-iteration", "overriding the iteration of a loaded checkpoint is not implemented");
  t.noop("ckpt-drop-redundant-extra-state", K::Switch, "gptrain's checkpoints hold no Transformer Engine extra state");
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
  t.accept_values("cp-comm-type", {"p2p"},
                  "gptrain's context parallelism is the p2p ring (K/V blocks passed between the CP ranks, each "
                  "transfer posted before a block's attention); a2a, allgather and a2a+p2p are not implemented");
  t.unsupported("hierarchical-context-parallel-sizes",
                "only with --cp-comm-type a2a+p2p, which is not implemented (gptrain's context parallelism is the "
                "p2p ring)");
  refuse_all(
      t,
      {"use-torch-fsdp2", "torch-fsdp2-no-reshard-after-forward", "init-model-with-meta-device",
       "no-gradient-reduce-div-fusion", "fsdp-double-buffer", "suggested-communication-unit-size",
       "keep-fp8-transpose-cache", "enable-full-sharding-in-hsdp", "no-strict-fsdp-dtensor-load"},
      "gradient and parameter sharding (ZeRO-2/3: Torch FSDP2, Megatron FSDP's optim_grads and "
      "optim_grads_params) are not implemented; use --use-distributed-optimizer (or --use-megatron-fsdp "
      "--data-parallel-sharding-strategy optim), with --num-distributed-optimizer-instances for hybrid sharding");
  t.accept_values("outer-dp-sharding-strategy", {"no_shard"},
                  "the --num-distributed-optimizer-instances groups are replicas (HSDP); optim (sharding the optimizer "
                  "across them) needs --data-parallel-sharding-strategy optim_grads_params (as Megatron), not "
                  "implemented");
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
  refuse_all(t, {"hybrid-context-parallel", "max-seqlen-per-dp-cp-rank"},
             "gptrain's context parallelism splits every sequence over --context-parallel-size ranks (the p2p "
             "ring); hybrid CP with per-sequence group sizes is not implemented");
  refuse_all(t,
             {"megatron-fsdp-version", "fsdp-manual-registration", "megatron-fsdp-main-params-dtype",
              "megatron-fsdp-main-grads-dtype", "megatron-fsdp-grad-comm-dtype",
              "megatron-fsdp-enable-fine-grained-param-gather", "megatron-fsdp-max-pool-double-buffer",
              "fsdp-db-use-persist-buf-on-alloc-fail"},
             "Megatron FSDP's own buffers and versions are not implemented: --use-megatron-fsdp maps to gptrain's "
             "data parallelism (no_shard) or distributed optimizer (optim)");
  t.noop("ddp-param-name-patterns-for-fp32-local-accumulation", K::List,
         "gptrain accumulates every parameter's gradient in fp32 already");
  t.noop("create-all-gather-group", K::Switch, "gptrain's parameter all-gathers use the DP communicator");
  const std::string no_flight_recorder =
      "PyTorch's NCCL flight recorder does not exist in gptrain (NCCL's own NCCL_DEBUG settings apply)";
  refuse_all(t,
             {"flight-recorder-dump-path", "flight-recorder-trace-buffer-size", "flight-recorder-include-stack-trace"},
             no_flight_recorder);
  accept_all(t, K::Switch,
             {"no-flight-recorder-dump-on-timeout", "no-flight-recorder-include-only-active",
              "no-flight-recorder-extra-dump-on-exec"},
             no_flight_recorder);
}

void bind_data_features(FlagTable& t) {
  t.unsupported("encoder-seq-length", "for a GPT model use --seq-length (Megatron takes it as the same value)");
  t.unsupported("object-storage-cache-path", "object-storage (S3/MSC) datasets are not supported");
  t.unsupported("allow-ambiguous-pad-tokens",
                "masking dataset tokens that share the tokenizer's pad id is not implemented (GPT2BPETokenizer has no "
                "pad token and samples are never padded)");
  t.noop("num-dataset-builder-threads", K::Value, "gptrain builds a rank's dataset indices in one thread");
  t.unsupported("phase-transition-iterations", "training phases with their own data blends are not implemented");
  t.noop("per-dataset-sequences-path", K::Value, "gptrain reads each dataset's sequence count from its .idx file");
  accept_all(t, K::Switch, {"dataloader-fast-cache-load", "dataloader-defer-npy-index-mmap"},
             "gptrain memory-maps its cached sample indices (--data-cache-path) when it builds the dataset; there "
             "is no slower path to skip");
  t.unsupported("dataloader-inter-document-masking",
                "per-document attention from sequence boundaries (cu_seqlens) is not implemented; "
                "--reset-attention-mask attends within documents");
  refuse_all(t,
             {"fim-data", "fim-rate", "fim-spm-rate", "fim-split-sample", "fim-fragment-rate", "fim-no-prefix",
              "fim-prefix-token", "fim-middle-token", "fim-suffix-token", "fim-pad-token", "fim-eod-token"},
             "fill-in-the-middle (FIM) datasets are not implemented");
  t.unsupported("no-pad-vocab-size",
                "gptrain always pads the vocabulary to --make-vocab-size-divisible-by x TP (1 with TP 1 pads none)");
  refuse_all(t,
             {"tokenizer-sentencepiece-legacy", "no-tokenizer-sentencepiece-ignore-extra-whitespaces",
              "tokenizer-hf-no-include-special-tokens"},
             "this tokenizer option is not implemented (it changes the token ids)");
  t.noop("tokenizer-hf-no-use-fast", K::Switch,
         "gptrain has one implementation of HuggingFaceTokenizer (the same ids as the fast and the slow one)");
  t.noop("use-gigatoken", K::Switch, "gptrain has one implementation per tokenizer type");
  t.unsupported("null-tokenizer-eod-id",
                "gptrain's NullTokenizer's end-of-document id is --vocab-size (ids 0..N-1 are text); other ids are not "
                "implemented");
  t.accept_values("null-tokenizer-pad-id", {"-1"}, "gptrain's NullTokenizer has no pad token");
  t.noop("chat-template", K::Value, "pretraining reads token datasets, not conversations: no chat template applies");
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
  t.unsupported("log-energy", "energy logging is not implemented");
  t.accept_values("timing-log-option", {"minmax"},
                  "--timing-log-level's block gives each timer's (min, max) across ranks; 'max' and 'all' are not "
                  "implemented");
  t.noop("no-barrier-with-level-1-timing", K::Switch,
         "gptrain's forward-backward and optimizer timers (--timing-log-level 1 or 2) always start with a barrier "
         "over every rank, Megatron's default");
  t.accept_values("tensorboard-log-interval", {"1"},
                  "gptrain writes the training scalars to TensorBoard every iteration (Megatron's default)");
  t.noop("tensorboard-queue-size", K::Value, "gptrain flushes its TensorBoard events at every log line and evaluation");
  refuse_all(t, {"wandb-entity", "wandb-exp-name", "wandb-save-dir"},
             "Weights & Biases is not supported; use --tensorboard-dir or --metrics-file");
  refuse_all(t, {"log-memory-interval", "log-device-memory-used", "log-max-attention-logit"}, "not implemented");
  refuse_all(t,
             {"moe-routing-trace-path", "moe-routing-trace-max-training-iters", "moe-routing-trace-capture-logits",
              "moe-routing-trace-capture-hidden-states", "moe-routing-trace-dump-weights"},
             "tracing the MoE router's decisions is not implemented");
  refuse_all(t, {"otel-enabled", "otel-service-name", "otel-span-groups"},
             "OpenTelemetry is not supported; use --tensorboard-dir or --metrics-file");
  t.unsupported("config-logger-dir",
                "dumping Megatron's config objects is not implemented (each checkpoint's metadata records the flags)");
}

// Mixture of experts: what the MoE layer (core/model/moe_layer.cpp) does not implement.
void bind_moe(FlagTable& t) {
  t.accept_values("moe-router-dtype", {"fp32"},
                  "the routing maths (scores, top-k, probabilities, losses) is fp32 always; the router GEMM runs in "
                  "fp32 in fp32 runs (refused with --bf16/--fp16, where it runs in the compute dtype)");
  t.accept_values("moe-upcycling-granularity", {"1"},
                  "--moe-use-upcycling makes each expert a whole copy of the dense MLP (granularity 1); narrower "
                  "experts cut from it are not implemented");
  t.noop("moe-grouped-gemm", K::Switch,
         "gptrain's experts always run as GEMMs over their permuted rows (one per expert and source EP rank)");
  refuse_all(
      t,
      {"moe-shared-expert-overlap", "moe-use-legacy-grouped-gemm", "moe-extended-tp", "moe-router-fusion",
       "moe-router-force-load-balancing", "moe-router-padding-for-fp8", "moe-enable-deepep", "moe-deepep-num-sms",
       "moe-permute-fusion", "moe-apply-probs-on-input", "moe-pad-experts-for-cuda-graph-inference",
       "overlap-moe-expert-parallel-comm", "delay-wgrad-compute", "use-fused-weighted-squared-relu"},
      "this mixture-of-experts option is not implemented (docs/moe-ops.md lists what is)");
  t.unsupported(
      "moe-layer-recompute",
      "Megatron's deprecated spelling of --recompute-granularity selective --recompute-modules moe: give those");
  refuse_all(t,
             {"moe-enable-routing-replay", "moe-router-padding-for-quantization", "moe-router-quantile-balancing-ema",
              "moe-router-force-biased", "moe-latent-size", "moe-expert-rank-capacity-factor"},
             "this mixture-of-experts option is not implemented (docs/moe-ops.md lists what is)");
  refuse_all(t, {"moe-shared-expert-glu-interleave-size", "moe-mlp-glu-interleave-size"},
             "block-interleaved GLU weights are not implemented (gptrain's fc1 holds the gate half, then the linear "
             "half)");
  accept_all(t, K::Switch,
             {"moe-use-grouped-tensor", "moe-single-grouped-weight", "moe-single-grouped-bias",
              "use-grouped-gemm-for-shared-expert", "use-grouped-gemm-for-dense-mlp"},
             "gptrain runs its expert, shared-expert and dense MLP GEMMs its own way (one weight tensor per expert; "
             "the same values)");
  const std::string no_flex =
      "tunes Megatron's flex token dispatcher (DeepEP, HybridEP, NCCL EP), which gptrain does not have: its "
      "dispatch is --moe-token-dispatcher-type allgather or alltoall (the same routed rows)";
  t.accept_values("moe-flex-dispatcher-backend", {"deepep", "hybridep", "ncclep"}, no_flex);
  accept_all(t, K::Switch,
             {"moe-permute-fusion-into-hybridep", "moe-hybridep-pad-uneven-dispatch-inputs", "moe-ncclep-zero-copy"},
             no_flex);
  accept_all(t, K::Value,
             {"moe-flex-dispatcher-num-sms", "moe-hybridep-num-sms", "moe-hybridep-num-blocks-permute",
              "moe-hybridep-num-blocks-unpermute", "moe-hybridep-num-sms-preprocessing"},
             no_flex);
  for (const char* n : {"moe-dispatch-fwd-dtype", "moe-combine-bwd-dtype"})
    t.accept_values(n, {"bf16"},
                    "gptrain sends routed rows and their gradients unquantised (mxfp8 on the wire is not implemented)");
  accept_all(t, K::Switch,
             {"overlap-dispatch-backward-with-experts-wgrad", "ep-overlap-early-attn-memory-release",
              "high-priority-a2a-comm-stream"},
             "gptrain runs the expert-parallel all-to-all and the expert GEMMs in turn, without overlap (the same "
             "values)");
  const std::string no_stash = "gptrain keeps the experts' activations for backward in its own arena (no paged stash)";
  t.noop("moe-paged-stash", K::Switch, no_stash);
  accept_all(t, K::Value,
             {"moe-paged-stash-page-size", "moe-paged-stash-buffer-size-factor-cuda",
              "moe-paged-stash-buffer-size-factor-cpu"},
             no_stash);
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

  t.unsupported("openai-gelu", "use --gelu tanh (the same tanh approximation)");
  t.unsupported(
      "quick-geglu",
      "quick GELU (x * sigmoid(1.702 x)) is not implemented; gptrain's --geglu gates with the tanh or erf GELU");
  t.accept_values("transformer-impl", {"local", "transformer_engine"},
                  "gptrain has one implementation of the layers, laid out as Megatron-Core's (checkpoint names are "
                  "fixed, docs/checkpoint-format.md); Megatron's inference_optimized layers are not implemented");
  t.unsupported("multi-latent-attention", "MLA is not implemented");
  t.unsupported("mtp-num-layers", "multi-token prediction is not implemented");
  // Megatron seeds each DP rank's init with seed + 10 * dp_rank, then its DDP wrapper broadcasts DP rank 0's
  // parameters (drawn with the plain seed) to every DP rank before training: the weights are those of a run
  // without the flag. The other use of the per-rank seed, distinct dropout masks per DP rank, holds in gptrain
  // without it (masks are keyed by the micro-batch's number in the global batch).
  t.noop("data-parallel-random-init", K::Switch,
         "Megatron broadcasts DP rank 0's init (the plain seed's) to every DP rank before training, so the weights "
         "are those without the flag; gptrain's dropout masks already differ per DP rank (keyed by the global "
         "micro-batch)");
  t.unsupported("account-for-embedding-in-pipeline-split", "use --decoder-first/last-pipeline-num-layers");
  t.unsupported("account-for-loss-in-pipeline-split", "use --decoder-first/last-pipeline-num-layers");
  t.unsupported("tp-comm-overlap", "TE userbuffers overlap is not implemented");
  t.unsupported("use-pytorch-profiler",
                "gptrain has no PyTorch; --profile gives NVTX ranges and cudaProfilerStart/Stop on CUDA (nsys), a "
                "per-range wall-time table on CPU");
  t.unsupported("wandb-project", "Weights & Biases is not supported; use --tensorboard-dir or --metrics-file");
  refuse_all(t, {"apply-wd-to-qk-layernorm", "no-weight-decay-cond-type"},
             "weight decay on Q/K layer-norm weights is not implemented (norm weights get no weight decay)");
  t.noop("no-use-layer-wise-param-layout", K::Switch,
         "picks the buffer layout of Megatron's layer-wise distributed optimizer (--optimizer muon "
         "--use-distributed-optimizer), not its maths; gptrain's keeps the model's flat parameters, each tensor "
         "stepped by one DP rank");
  for (const char* f : {"lion-beta1", "lion-beta2"})
    t.noop(f, K::Value,
           "Megatron passes these only to Lion as Muon's scalar optimizer (--muon-scalar-optimizer lion, not "
           "implemented); its --optimizer lion takes --adam-beta1/--adam-beta2");
}

}  // namespace

void bind_megatron_only_flags(FlagTable& t) {
  t.group("megatron");
  bind_implementation_choices(t);
  bind_moe(t);
  bind_other_workloads(t);
  bind_architecture_variants(t);
  bind_cuda_graphs(t);
  bind_model_features(t);
  bind_training_features(t);
  bind_precision_features(t);
  bind_checkpoint_features(t);
  bind_distributed_features(t);
  bind_data_features(t);
  bind_logging_features(t);
}

}  // namespace gptrain
