#include "parallel/pipeline/distributed_gpt.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "core/model/fp8_scaling.h"
#include "parallel/context/context_batch.h"
#include "parallel/pipeline/pipeline_p2p.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>

namespace gptrain::parallel {

StageConfig chunk_model_config(const StageConfig& model, int make_vocab_size_divisible_by, int tp_size, int tp_rank,
                               bool sequence_parallel, const ChunkRange& r, int ep_size, int ep_rank, int etp_rank,
                               int cp_size, int cp_rank) {
  StageConfig c = model;
  c.tp_size = tp_size;
  c.tp_rank = tp_rank;
  c.ep_size = ep_size;
  c.ep_rank = ep_rank;
  c.etp_rank = etp_rank;
  c.cp_size = cp_size;
  c.cp_rank = cp_rank;
  c.sequence_parallel = sequence_parallel;
  c.layer_first = r.first;
  c.layer_last = r.last;
  c.has_embedding = r.has_embedding;
  c.has_head = r.has_head;
  c.finalize(make_vocab_size_divisible_by);
  return c;
}

DistributedGpt::DistributedGpt(const StageConfig& model, int make_vocab_size_divisible_by, const ParallelArgs& opts,
                               const ProcessGrid& grid, GridComms& comms, Backend& backend)
    : opts_(opts), grid_(grid), comms_(comms), be_(backend) {
  validate_parallel_args(opts_);
  const bool sp = opts_.sequence_parallel && grid_.tp_size() > 1;
  // Expert tensor parallelism: ETP = TP > 1 splits every routed expert over the TP group (validated above).
  StageConfig stage = model;
  stage.etp_size = model.moe.enabled() ? expert_tensor_parallel_size(opts_) : 1;
  experts_split_ = stage.etp_size > 1;
  if (grid_.tp_size() > 1) {
    check(comms_.tp != nullptr, "tensor parallel size {} without a TP communicator", grid_.tp_size());
    tp_hooks_ = std::make_unique<TensorParallelHooks>(*comms_.tp, be_, sp, experts_split_);
    hooks_ = tp_hooks_.get();
  }
  if (grid_.ep_size() > 1 && grid_.experts_over_tp()) {
    check(model.moe.enabled(), "--expert-model-parallel-size {} needs an MoE model (--num-experts)", grid_.ep_size());
    check(tp_hooks_ != nullptr && comms_.ep != nullptr, "expert parallelism over TP without the TP hooks");
    tp_expert_hooks_ = std::make_unique<TpExpertHooks>(*tp_hooks_, *comms_.ep, be_);
    hooks_ = tp_expert_hooks_.get();
  } else if (grid_.ep_size() > 1) {
    check(model.moe.enabled(), "--expert-model-parallel-size {} needs an MoE model (--num-experts)", grid_.ep_size());
    dispatcher_ = std::make_unique<TokenDispatcher>(*comms_.ep, comms_.host_ep(), be_, model.moe.num_experts,
                                                    parse_token_dispatcher_type(opts_.moe_token_dispatcher_type));
    ep_hooks_ = std::make_unique<ExpertParallelHooks>(hooks_ ? *hooks_ : no_parallel_hooks(), *dispatcher_, be_);
    hooks_ = ep_hooks_.get();
  }
  if (grid_.cp_size() > 1) {
    check(comms_.cp != nullptr, "context parallel size {} without a CP communicator", grid_.cp_size());
    cp_hooks_ = std::make_unique<ContextParallelHooks>(hooks_ ? *hooks_ : no_parallel_hooks(), *comms_.cp, be_, true);
    hooks_ = cp_hooks_.get();
  }
  ranges_ = pipeline_chunks(opts_, model.num_layers, grid_.pp_rank());
  if (num_model_chunks(opts_, model.num_layers) > 1) {
    check(grid_.pp_size() > 1, "an interleaved pipeline needs --pipeline-model-parallel-size > 1");
  }
  for (const ChunkRange& r : ranges_) {
    const StageConfig c = chunk_model_config(stage, make_vocab_size_divisible_by, grid_.tp_size(), grid_.tp_rank(), sp,
                                             r, grid_.ep_size(), grid_.ep_rank(), experts_split_ ? grid_.tp_rank() : 0,
                                             grid_.cp_size(), grid_.cp_rank());
    chunks_.push_back(std::make_unique<GptStage>(c, be_, hooks_));
  }
  free_acts_.resize(chunks_.size());
  final_backward_.assign(chunks_.size(), 0);
  if (model.moe.expert_bias) expert_bias_.assign(std::size_t(model.num_layers) * model.moe.num_experts, 0.0f);
  if (model.fp8.delayed()) fp8_state_ = fp8_initial_state(model.num_layers, model.fp8);
  for (int c = 0; c < num_chunks(); ++c) {
    chunks_[c]->set_grads_done_callback([this, c](int group) {
      if (listener_ != nullptr && final_backward_[c]) listener_->grads_final(c, group);
    });
    chunks_[c]->set_params_needed_callback([this, c](int part) {
      if (params_listener_ != nullptr) params_listener_->params_needed(c, part);
    });
  }
  if (grid_.pp_size() > 1) {
    const LocalSizes& s = chunks_[0]->sizes();
    p2p_elems_ = std::size_t(s.N_seq) * s.C;
    recv_fwd_ = be_.alloc(p2p_elems_ * dtype_size(be_.compute_dtype()));
    recv_bwd_ = be_.alloc(p2p_elems_ * dtype_size(be_.compute_dtype()));
  }
}

DistributedGpt::~DistributedGpt() {
  if (recv_bwd_ != nullptr) be_.release(recv_bwd_);
  if (recv_fwd_ != nullptr) be_.release(recv_fwd_);
}

void DistributedGpt::init_parameters() {
  for (auto& c : chunks_) c->init_parameters();
}

void DistributedGpt::zero_grads() {
  for (auto& c : chunks_) c->zero_grads();
}

void DistributedGpt::update_fp8_scales() {
  if (fp8_state_.empty()) return;
  const Fp8Config& c = chunks_[0]->config().fp8;
  // The step's amaxes: this rank's layers from its chunks, the others 0; the max over all ranks is the
  // max over TP and DP (Megatron's amax reduction group), each layer living on one pipeline stage.
  for (auto& ch : chunks_) ch->get_fp8_state(fp8_state_);
  const std::size_t stride = std::size_t(fp8_state_stride(c)), n = fp8_state_.size() / stride;
  std::vector<float> amax(n, 0.0f);
  std::vector<char> mine(fp8_state_.size() / (stride * kFp8TensorsPerLayer), 0);
  for (auto& ch : chunks_)
    for (int l = ch->config().layer_first; l < ch->config().layer_last; ++l) mine[l] = 1;
  for (std::size_t t = 0; t < n; ++t)
    if (mine[t / kFp8TensorsPerLayer]) amax[t] = fp8_state_[t * stride];
  if (grid_.world_size() > 1) comms_.host_world().all_reduce(amax.data(), n, ElemType::F32, ReduceOp::Max);
  for (std::size_t t = 0; t < n; ++t) fp8_state_[t * stride] = amax[t];
  fp8_delayed_update_all(fp8_state_, c);
  for (auto& ch : chunks_) ch->set_fp8_state(fp8_state_);
  // Test hook: the step's reduced amaxes and the updated state, one JSON line per step (tests/python checks
  // them against a transcription of the update rule).
  if (const char* path = std::getenv("GPTRAIN_TEST_FP8_TRACE"); path && grid_.rank() == 0) {
    std::ofstream out(path, std::ios::app);
    out << nlohmann::json{{"amax", amax}, {"state", fp8_state_}}.dump() << "\n";
  }
}

void DistributedGpt::set_fp8_state(const std::vector<float>& all_layers) {
  check(all_layers.size() == fp8_state_.size(), "the FP8 scaling state has {} values; this model takes {}",
        all_layers.size(), fp8_state_.size());
  fp8_state_ = all_layers;
  for (auto& ch : chunks_) ch->set_fp8_state(fp8_state_);
}

namespace {
double loss_tokens(const HostMicroBatch& mb) {
  double tokens = 0.0;
  for (float x : mb.loss_mask) tokens += x;
  return tokens;
}
}  // namespace

double DistributedGpt::per_token_weight(const std::vector<HostMicroBatch>& mbs, double loss_scale) {
  // Every stage and TP rank of a replica holds the same micro-batches, so each knows the count.
  double tokens = 0.0;
  for (const HostMicroBatch& mb : mbs) tokens += loss_tokens(mb);
  // The micro-batches are this rank's tokens (its CP chunks): the count sums over DP x CP, and so does the
  // gradient reduction that averages over it.
  const int dp = grid_.dp_cp_size();
  if (dp > 1) comms_.host_dp().all_reduce(&tokens, 1, ElemType::F64, ReduceOp::Sum);
  return tokens > 0 ? loss_scale * dp / tokens : 0.0;
}

// One run_pipeline call: its schedule, the activations of the micro-batches in flight, the loss totals
// so far, and what each schedule step produced for the next step's transfer.
struct DistributedGpt::PipelineRun {
  DistributedGpt& model;
  const std::vector<HostMicroBatch>& mbs;   // this rank's tokens (its CP chunks)
  const std::vector<HostMicroBatch>& full;  // the whole sequences (the same as mbs without CP)
  const bool train;
  const double loss_scale;
  const int m;         // micro-batches
  bool per_token;      // --calculate-per-token-loss (training)
  float token_weight;  // its backward weight of every micro-batch
  int last_vs;         // the pipeline's last virtual stage (it computes the loss)
  std::vector<PipeOp> ops;
  int warmup;
  std::vector<int> last_backward;  // per chunk: index in ops of its step's last backward
  std::map<std::pair<int, int>, std::unique_ptr<StageActivations>> live;  // (chunk, mb)
  double stats[2] = {0.0, 0.0};                                           // last stage: loss sum, tokens
  MoeStepStats moe;                                                       // this rank's MoE layers
  // What the previous step produced for the next/previous stage, in op order (an arena's output or
  // input gradient; pooled arenas are reused only after the batch that sends them has completed).
  std::vector<std::pair<PipeMessage, const void*>> outgoing;
  std::vector<P2POp> batch;

  PipelineRun(DistributedGpt& g, const std::vector<HostMicroBatch>& micro_batches,
              const std::vector<HostMicroBatch>& whole, bool training, double scale, LossNormalization norm)
      : model(g),
        mbs(micro_batches),
        full(whole),
        train(training),
        loss_scale(scale),
        m(static_cast<int>(micro_batches.size())) {
    check(m >= 1, "forward_backward: no micro-batches");
    per_token = train && norm == LossNormalization::per_token;
    token_weight = per_token ? static_cast<float>(model.per_token_weight(mbs, loss_scale)) : 0.0f;
    const int pp = model.grid_.pp_size(), me = model.grid_.pp_rank(), v = model.num_chunks();
    last_vs = pp * v - 1;
    ops = train ? pipeline_schedule(pp, me, m, v) : forward_only_schedule(m, v);
    warmup = train ? pipeline_warmup(pp, me, m, v) : static_cast<int>(ops.size());
    last_backward.assign(v, -1);
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (!ops[i].forward) last_backward[ops[i].chunk] = static_cast<int>(i);
  }

  // A schedule step's transfers, in one batched call: the sends take what the previous step produced.
  void exchange(const PipeStep& step) {
    batch.clear();
    std::size_t sent = 0;
    for (const PipeTransfer& t : step.batch) {
      if (t.send) {
        check(sent < outgoing.size() && outgoing[sent].first == t.msg,
              "pipeline p2p: step at op {} sends a message its previous step did not produce", step.first);
        batch.push_back(P2POp::send_to(outgoing[sent++].second, model.p2p_elems_, t.peer));
      } else {
        batch.push_back(P2POp::recv_from(t.msg.forward ? model.recv_fwd_ : model.recv_bwd_, model.p2p_elems_, t.peer));
      }
    }
    check(sent == outgoing.size(), "pipeline p2p: {} produced messages left unsent", outgoing.size() - sent);
    if (!batch.empty()) {
      ProfileRange p2p_range("pipeline-p2p");
      model.comms_.pp->batch_send_recv(batch, act_elem_type(model.be_.compute_dtype()));
    }
    outgoing.clear();
  }

  // ops[i]: a forward or a backward of one micro-batch through one model chunk.
  void run_op(int i) {
    if (ops[i].forward)
      forward(ops[i]);
    else
      backward(i);
  }

  // Activations from the chunk's pool; the last stage adds the loss, the others pass their output on.
  // Training keeps the activations for the backward; evaluation returns them to the pool at once.
  void forward(const PipeOp& op) {
    GptStage& st = *model.chunks_[op.chunk];
    const int vs = model.ranges_[op.chunk].virtual_stage;
    std::unique_ptr<StageActivations> a;
    auto& pool = model.free_acts_[op.chunk];
    if (pool.empty()) {
      a = st.make_activations();
    } else {
      a = std::move(pool.back());
      pool.pop_back();
    }
    st.load_batch(*a, mbs[op.microbatch]);
    st.forward(*a, vs > 0 ? model.recv_fwd_ : nullptr, train);
    if (train) model.add_moe_stats(moe, st, *a);
    if (vs == last_vs) {
      const GptStage::LossSum ls = st.loss_sum(*a);
      stats[0] += ls.loss_sum;
      stats[1] += ls.num_tokens;
    } else {
      outgoing.push_back({{true, op.microbatch, vs + 1}, st.output(*a)});
    }
    if (train) {
      live[{op.chunk, op.microbatch}] = std::move(a);
    } else {
      pool.push_back(std::move(a));
    }
  }

  // The backward of ops[i] from the loss (last stage) or the received gradient; the others get the input
  // gradient, and the activations go back to the pool.
  void backward(int i) {
    const PipeOp& op = ops[i];
    GptStage& st = *model.chunks_[op.chunk];
    const int vs = model.ranges_[op.chunk].virtual_stage;
    auto it = live.find({op.chunk, op.microbatch});
    check(it != live.end(), "pipeline schedule: backward of micro-batch {} before its forward", op.microbatch);
    StageActivations& a = *it->second;
    model.final_backward_[op.chunk] = i == last_backward[op.chunk];
    // Megatron's MoEAuxLossAutoScaler: the routers' losses get the loss scale / micro-batches (per token:
    // the token weight, which the gradient's division by the batch's tokens then matches).
    a.moe_loss_weight = per_token ? token_weight : static_cast<float>(loss_scale / m);
    if (vs == last_vs) {
      // Per micro-batch: its mean over all of its loss tokens (every CP rank's); the CP ranks' gradients are
      // then summed by the DP x CP reduction, which averages, hence the factor CP (Megatron's loss * cp_size).
      const double tokens = loss_tokens(full[op.microbatch]);
      const double cp = model.grid_.cp_size();
      const float w = per_token ? token_weight : tokens > 0 ? static_cast<float>(loss_scale * cp / (tokens * m)) : 0.0f;
      st.backward(a, nullptr, w);
    } else {
      st.backward(a, model.recv_bwd_, 0.0f);
    }
    model.final_backward_[op.chunk] = 0;
    if (vs > 0) outgoing.push_back({{false, op.microbatch, vs - 1}, st.input_grad(a)});
    model.free_acts_[op.chunk].push_back(std::move(it->second));
    live.erase(it);
  }

  // The loss lives on the last stage: share it with the pipeline, then combine the DP replicas.
  LossTotals reduce_losses() {
    check(outgoing.empty(), "pipeline p2p: the last step left {} messages unsent", outgoing.size());
    ProfileRange loss_range("loss-reduce");
    const int pp = model.grid_.pp_size();
    if (pp > 1) model.comms_.host_pp().broadcast(stats, 2, ElemType::F64, pp - 1);
    if (model.grid_.dp_cp_size() > 1)
      model.comms_.host_dp().all_reduce(stats, 2, ElemType::F64, ReduceOp::Sum);  // DP x CP: every rank's tokens
    if (train) model.reduce_moe_stats(moe, m);
    return LossTotals{stats[0], stats[1], std::move(moe)};
  }
};

LossTotals DistributedGpt::run_pipeline(const std::vector<HostMicroBatch>& mbs, bool train, double loss_scale,
                                        LossNormalization norm) {
  std::vector<HostMicroBatch> local;
  if (grid_.cp_size() > 1) {
    const StageConfig& c = chunks_[0]->config();
    for (const HostMicroBatch& mb : mbs)
      local.push_back(context_parallel_slice(mb, c.micro_batch_size, c.seq_length, grid_.cp_size(), grid_.cp_rank()));
  }
  PipelineRun run(*this, local.empty() ? mbs : local, mbs, train, loss_scale, norm);
  for (const PipeStep& step : pipeline_p2p_steps(run.ops, grid_.pp_size(), grid_.pp_rank(), num_chunks(), run.warmup)) {
    run.exchange(step);
    for (int i = step.first; i < step.first + step.count; ++i) run.run_op(i);
  }
  return run.reduce_losses();
}

void DistributedGpt::add_moe_stats(MoeStepStats& out, const GptStage& st, const StageActivations& a) const {
  const StageConfig& c = st.config();
  if (!c.moe.enabled()) return;
  const std::size_t L = std::size_t(c.num_layers), E = std::size_t(c.moe.num_experts);
  if (out.balance_loss.empty()) {
    out.balance_loss.assign(L, 0.0);
    out.z_loss.assign(L, 0.0);
    out.tokens_per_expert.assign(L, std::vector<double>(E, 0.0));
    out.routed_per_expert.assign(L, std::vector<double>(E, 0.0));
  }
  for (int li = 0; li < c.num_local_layers(); ++li) {
    const int gl = c.layer_first + li;
    if (!c.moe.is_moe_layer(gl)) continue;
    const MoeLayerHost& h = a.moe[li];
    out.balance_loss[gl] += h.balance_loss;
    out.z_loss[gl] += h.z_loss;
    for (std::size_t e = 0; e < E; ++e) {
      out.tokens_per_expert[gl][e] += double(h.tokens_per_expert[e]);
      out.routed_per_expert[gl][e] += double(h.routed_per_expert[e]);
    }
  }
}

void DistributedGpt::reduce_moe_stats(MoeStepStats& s, int micro_batches) {
  if (s.balance_loss.empty()) return;
  // Each layer lives on one pipeline stage (the others hold zeros): sum over PP, then over the DP replicas.
  const std::size_t L = s.balance_loss.size(), E = s.tokens_per_expert[0].size();
  std::vector<double> flat;
  flat.insert(flat.end(), s.balance_loss.begin(), s.balance_loss.end());
  flat.insert(flat.end(), s.z_loss.begin(), s.z_loss.end());
  for (const auto& t : s.tokens_per_expert) flat.insert(flat.end(), t.begin(), t.end());
  for (const auto& t : s.routed_per_expert) flat.insert(flat.end(), t.begin(), t.end());
  if (grid_.pp_size() > 1) comms_.host_pp().all_reduce(flat.data(), flat.size(), ElemType::F64, ReduceOp::Sum);
  if (grid_.dp_size() > 1) comms_.host_dp().all_reduce(flat.data(), flat.size(), ElemType::F64, ReduceOp::Sum);
  const double n = double(micro_batches) * grid_.dp_size();
  for (std::size_t l = 0; l < L; ++l) {
    s.balance_loss[l] = flat[l] / n;
    s.z_loss[l] = flat[L + l] / n;
    for (std::size_t e = 0; e < E; ++e) s.tokens_per_expert[l][e] = flat[2 * L + l * E + e];
    for (std::size_t e = 0; e < E; ++e) s.routed_per_expert[l][e] = flat[2 * L + L * E + l * E + e];
  }
}

void DistributedGpt::update_expert_bias(const MoeStepStats& s) {
  if (expert_bias_.empty() || s.routed_per_expert.empty()) return;
  gptrain::update_expert_bias(expert_bias_, s.routed_per_expert, chunks_[0]->config().moe);
  for (auto& c : chunks_) c->set_expert_bias(expert_bias_);
}

void DistributedGpt::set_expert_bias(const std::vector<float>& all_layers) {
  const MoeConfig& m = chunks_[0]->config().moe;
  check(all_layers.size() == expert_bias_.size(),
        "the expert bias has {} values; the model's {} layers of {} experts "
        "take {}",
        all_layers.size(), chunks_[0]->config().num_layers, m.num_experts, expert_bias_.size());
  expert_bias_ = all_layers;
  for (auto& c : chunks_) c->set_expert_bias(expert_bias_);
}

namespace {
bool is_norm_tensor(const std::string& name) { return name.find("layernorm.") != std::string::npos; }
// The per-head Q/K norm weights (--qk-layernorm): every TP rank holds them whole but normalizes only its own
// heads, so their gradients are partial sums over TP with or without sequence parallelism.
bool is_head_norm_tensor(const std::string& name) {
  return name.find("self_attention.q_layernorm.") != std::string::npos ||
         name.find("self_attention.k_layernorm.") != std::string::npos;
}
// Gradients each TP rank holds only a share of, summed over TP after backward.
bool tp_partial_grad(bool sequence_parallel, const std::string& name) {
  return is_head_norm_tensor(name) || (sequence_parallel && is_norm_tensor(name));
}

const std::string kWordEmbeddings = "embedding.word_embeddings.weight";

bool tied_across_stages(const ProcessGrid& grid, const GridComms& comms, const GptStage& chunk) {
  return grid.pp_size() > 1 && comms.embedding && chunk.config().tied_head();
}
}  // namespace

bool DistributedGpt::synced_by_model_parallel(int chunk, const ParamTensor& t) const {
  // Sequence parallel: every TP rank saw only its rows, so norm weight gradients are summed over TP; the
  // per-head Q/K norms saw only its heads.
  if (grid_.tp_size() > 1 && tp_partial_grad(opts_.sequence_parallel, t.name)) return true;
  // Tied word embeddings: the first stage's table and the last stage's output-layer copy.
  const ChunkRange& r = ranges_[chunk];
  return (r.has_embedding || r.has_head) && t.name == kWordEmbeddings &&
         tied_across_stages(grid_, comms_, *chunks_[chunk]);
}

std::vector<bool> DistributedGpt::model_parallel_synced(int chunk) const {
  std::vector<bool> out;
  for (const ParamTensor& t : chunks_[chunk]->layout().tensors) out.push_back(synced_by_model_parallel(chunk, t));
  return out;
}

std::size_t DistributedGpt::expert_exchange_bytes() const {
  if (tp_expert_hooks_) return tp_expert_hooks_->buffer_bytes();
  return ep_hooks_ ? ep_hooks_->buffer_bytes() + dispatcher_->buffer_bytes() : 0;
}

std::vector<bool> DistributedGpt::expert_tensors(int chunk) const {
  std::vector<bool> out;
  for (const ParamTensor& t : chunks_[chunk]->layout().tensors) out.push_back(t.expert);
  return out;
}

void DistributedGpt::finish_model_parallel_grads() {
  if (grid_.tp_size() > 1) {
    TimerRange timer("layernorm-grads-all-reduce");
    for (auto& c : chunks_)
      for (const ParamTensor& t : c->layout().tensors)
        if (tp_partial_grad(opts_.sequence_parallel, t.name))
          comms_.tp->all_reduce(c->grads() + t.offset, t.numel, ElemType::F32, ReduceOp::Sum);
  }
  // Tied word embeddings: the first stage's table and the last stage's output-layer copy get the
  // summed gradient, so both take the same step (every member of the group holds exactly one).
  if (tied_across_stages(grid_, comms_, *chunks_[0])) {
    TimerRange timer("embedding-grads-all-reduce");
    for (int i = 0; i < num_chunks(); ++i) {
      const ChunkRange& r = ranges_[i];
      if (!r.has_embedding && !r.has_head) continue;
      const ParamTensor* t = chunks_[i]->layout().find(kWordEmbeddings);
      check(t != nullptr, "tied embeddings: stage chunk {} holds no {}", i, kWordEmbeddings);
      comms_.embedding->all_reduce(chunks_[i]->grads() + t->offset, t->numel, ElemType::F32, ReduceOp::Sum);
    }
  }
}

bool DistributedGpt::counts_in_norm(const ParamTensor& t) const {
  if (t.tied_copy) return false;
  // Split over EP only, every TP rank holds the same copy; with ETP, or the experts over the TP ranks, each
  // holds its own share.
  if (t.expert) return experts_split_ || grid_.experts_over_tp() || grid_.tp_rank() == 0;
  return t.sharded() || grid_.tp_rank() == 0;
}

}  // namespace gptrain::parallel
