#include "parallel/plan/recompute_plan.h"

#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/pipeline/pipeline_layout.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace gptrain::parallel {

namespace {

// Causal attention scores and weighted values: 2 matmuls of 2 B T^2 ATT FLOPs, half of them masked. A
// sliding window of `window` earlier keys leaves (W+1)(W+2)/2 + (T-W-1)(W+1) (query, key) pairs of the T^2/2.
double core_attention_flops(const LocalSizes& s, int window) {
  const double T = s.T;
  if (window < 0 || window >= s.T - 1) return 2.0 * s.B * T * T * s.ATT;
  const double w = double(window) + 1.0;
  return 4.0 * s.B * s.ATT * (w * (w + 1.0) / 2.0 + (T - w) * w);
}
double fc1_activation_flops(const LocalSizes& s) { return 2.0 * s.N * double(s.C) * s.F1 + double(s.N) * s.F; }
double norms_flops(const LocalSizes& s) { return 2.0 * 8.0 * s.N_seq * double(s.C); }
// An MoE MLP: the activations of the K routed rows per token (and of the shared expert), then everything
// else (router, expert and shared GEMMs), dropless.
double moe_activation_flops(const LocalSizes& s) { return double(s.N) * s.K * s.FE + double(s.N) * s.FS; }
double moe_mlp_flops(const LocalSizes& s) {
  const double n = s.N, rows = n * s.K;
  return 2.0 * n * s.C * s.E + 2.0 * rows * s.C * s.FE1 + 2.0 * rows * s.FE * s.C + 2.0 * n * s.C * s.FS1 +
         2.0 * n * s.FS * s.C + moe_activation_flops(s);
}

// Replayed forward FLOPs of local layer li of a chunk under r; `first` is recompute_group_first(r, layers),
// `forward` the layer's forward FLOPs (both computed once per chunk: the choices are many).
double replayed_flops(const StageConfig& chunk, const RecomputeConfig& r, int li, const std::vector<int>& first,
                      double forward) {
  if (r.full()) return first[li] >= 0 ? forward : 0.0;
  if (!r.selective()) return 0.0;
  const LocalSizes s = local_sizes(chunk);
  const bool moe = chunk.moe.is_moe_layer(chunk.layer_first + li);
  double f = 0.0;
  if (r.core_attn) f += core_attention_flops(s, chunk.attention_window(chunk.layer_first + li));
  if (r.mlp && !moe) f += fc1_activation_flops(s);  // Megatron's mlp: dense MLPs only
  if (r.moe && moe) f += moe_mlp_flops(s);
  if (r.moe_act && !r.moe && moe) f += moe_activation_flops(s);
  if (r.layernorm) f += norms_flops(s);
  return f;
}

RecomputeConfig selective(bool mlp, bool layernorm) {
  RecomputeConfig r;
  r.granularity = RecomputeGranularity::Selective;
  r.core_attn = true, r.mlp = mlp, r.layernorm = layernorm;
  return r;
}

RecomputeConfig full(RecomputeMethod m, int n) {
  RecomputeConfig r;
  r.granularity = RecomputeGranularity::Full;
  r.method = m, r.num_layers = n;
  return r;
}

}  // namespace

double layer_forward_flops(const StageConfig& chunk, int li) {
  const LocalSizes s = local_sizes(chunk);
  const double n = s.N;
  const double mlp =
      chunk.moe.is_moe_layer(chunk.layer_first + li) ? moe_mlp_flops(s) : fc1_activation_flops(s) + 2.0 * n * s.F * s.C;
  return 2.0 * n * s.C * s.QKV + core_attention_flops(s, chunk.attention_window(chunk.layer_first + li)) +
         2.0 * n * s.ATT * s.C + mlp + norms_flops(s);
}

std::string recompute_flags(const RecomputeConfig& r) {
  if (r.full())
    return fmt::format("--recompute-granularity full --recompute-method {} --recompute-num-layers {}{}",
                       r.method == RecomputeMethod::Uniform ? "uniform" : "block", r.num_layers,
                       r.distribute_saved_activations ? " --distribute-saved-activations" : "");
  if (!r.selective()) return "";
  std::string f = "--recompute-granularity selective";
  if (r.mlp || r.layernorm) {
    f += " --recompute-modules core_attn";
    if (r.mlp) f += " mlp";
    if (r.layernorm) f += " layernorm";
  }
  if (r.moe) f += r.mlp || r.layernorm ? " moe" : " --recompute-modules core_attn moe";
  return f;
}

std::vector<int> full_recompute_layer_counts(int most) {
  // Every N up to 16, then 16 values spread up to the largest chunk (its half and all of it among them): a
  // plan is linear in the layers, so planning every N up to thousands of layers was quadratic.
  std::set<int> ns;
  for (int n = 1; n <= std::min(most, 16); ++n) ns.insert(n);
  for (int i = 1; i <= 16 && most > 16; ++i) ns.insert(int(int64_t(i) * most / 16));
  if (most > 1) ns.insert(most / 2);
  return {ns.begin(), ns.end()};
}

std::vector<RecomputeChoice> recompute_choices(const StageConfig& model, int div, const ParallelArgs& opts, int pp_rank,
                                               int dp_size, int num_microbatches, DType compute,
                                               const WorkspaceOptions& ws) {
  std::vector<RecomputeConfig> configs = {RecomputeConfig{}, selective(false, false), selective(true, false),
                                          selective(true, true)};
  if (model.moe.num_moe_layers() > 0) {  // the MoE MLPs too, with the dense ones
    configs.push_back(selective(true, false));
    configs.back().moe = true;
  }
  const std::vector<ChunkRange> ranges = pipeline_chunks(opts, model.num_layers, pp_rank);
  int most = 0;  // layers of the largest chunk: N beyond it changes nothing
  for (const ChunkRange& cr : ranges) most = std::max(most, cr.last - cr.first);
  // uniform first: where block N recomputes every layer too, the same cost and memory, Megatron's usual spelling wins
  const std::vector<int> ns = full_recompute_layer_counts(most);
  for (const int n : ns) configs.push_back(full(RecomputeMethod::Uniform, n));
  for (const int n : ns) configs.push_back(full(RecomputeMethod::Block, n));
  // Without sequence parallelism the kept inputs can be split over the TP ranks: each full choice again so.
  if (opts.tensor_model_parallel_size > 1 && !(opts.sequence_parallel)) {
    const std::size_t n = configs.size();
    for (std::size_t i = 0; i < n; ++i)
      if (configs[i].full()) {
        configs.push_back(configs[i]);
        configs.back().distribute_saved_activations = true;
      }
  }

  const bool sp = opts.sequence_parallel && opts.tensor_model_parallel_size > 1;
  // The chunks and their layers' forward FLOPs, which no recomputation changes.
  std::vector<StageConfig> chunks;
  std::vector<std::vector<double>> layer_flops;
  double forward = 0.0;
  for (const ChunkRange& cr : ranges) {
    chunks.push_back(chunk_model_config(model, div, opts.tensor_model_parallel_size, 0, sp, cr,
                                        opts.expert_model_parallel_size, 0, 0, opts.context_parallel_size));
    std::vector<double>& f = layer_flops.emplace_back();
    for (int li = 0; li < chunks.back().num_local_layers(); ++li) f.push_back(layer_forward_flops(chunks.back(), li));
    for (const double x : f) forward += x;
  }
  const StageParameterCounts counts = stage_parameter_counts(model, div, opts, pp_rank, dp_size);
  std::vector<RecomputeChoice> out;
  for (const RecomputeConfig& r : configs) {
    StageConfig m = model;
    m.recompute = r;
    RecomputeChoice c{r, recompute_flags(r), 0.0,
                      memory_plan(m, div, opts, pp_rank, dp_size, num_microbatches, compute, ws, counts)};
    double replayed = 0.0;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      const std::vector<int> first = recompute_group_first(r, chunks[k].num_local_layers());
      for (int li = 0; li < chunks[k].num_local_layers(); ++li)
        replayed += replayed_flops(chunks[k], r, li, first, layer_flops[k][std::size_t(li)]);
    }
    c.extra_forward = forward > 0 ? replayed / forward : 0.0;
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<RecomputeChoice> cheapest_fitting_recompute(const std::vector<RecomputeChoice>& choices,
                                                          std::size_t free_bytes) {
  std::optional<RecomputeChoice> best;
  for (const RecomputeChoice& c : choices) {
    if (c.plan.total() > free_bytes) continue;
    if (!best || c.extra_forward < best->extra_forward ||
        (c.extra_forward == best->extra_forward && c.plan.total() < best->plan.total()))
      best = c;
  }
  return best;
}

PaperActivations paper_activations_per_layer(const StageConfig& model, int tp, bool sequence_parallel) {
  const double s = model.seq_length, b = model.micro_batch_size, h = model.hidden_size, a = model.num_attention_heads,
               t = tp;
  const double sbh = s * b * h;
  PaperActivations p;
  p.none = sequence_parallel ? sbh / t * (34.0 + 5.0 * a * s / h) : sbh * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
  p.selective = sequence_parallel ? 34.0 * sbh / t : sbh * (10.0 + 24.0 / t);
  p.full = sequence_parallel ? 2.0 * sbh / t : 2.0 * sbh;
  return p;
}

}  // namespace gptrain::parallel
