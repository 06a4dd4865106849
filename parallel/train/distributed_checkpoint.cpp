#include "parallel/train/distributed_checkpoint.h"

#include "core/checkpoint/fp8_state_json.h"
#include "core/checkpoint/model_json.h"
#include "core/checkpoint/stage_weights.h"
#include "core/common/agreed_error.h"
#include "core/common/error.h"
#include "core/hf/family.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace gptrain::parallel {
namespace {

using checkpoint::NamedTensor;
using checkpoint::Slice;

std::optional<Slice> slice_of(const ParamTensor& t) {
  if (!t.sharded()) return std::nullopt;
  Slice s;
  s.global_shape = t.global_shape;
  for (const ShardBlock& b : t.blocks) s.blocks.push_back({b.dim, b.global_offset, b.length});
  return s;
}

// Parameters of one chunk as fp32 on the host.
std::vector<float> params_to_host(GptStage& st) {
  Backend& be = st.backend();
  const std::size_t n = st.layout().total;
  std::vector<float> host(n);
  if (n == 0) return host;
  if (be.compute_dtype() == DType::F32) {
    be.copy_to_host(host.data(), st.params(), n * 4);
  } else {
    float* tmp = static_cast<float*>(be.alloc(n * 4));
    be.convert(tmp, DType::F32, st.params(), be.compute_dtype(), n);
    be.copy_to_host(host.data(), tmp, n * 4);
    be.release(tmp);
  }
  return host;
}

void params_from_host(GptStage& st, const std::vector<float>& host) {
  Backend& be = st.backend();
  const std::size_t n = st.layout().total;
  if (n == 0) return;
  if (be.compute_dtype() == DType::F32) {
    be.copy_to_device(st.params(), host.data(), n * 4);
  } else {
    float* tmp = static_cast<float*>(be.alloc(n * 4));
    be.copy_to_device(tmp, host.data(), n * 4);
    be.convert(st.params(), be.compute_dtype(), tmp, DType::F32, n);
    be.release(tmp);
  }
  be.synchronize();
}

// Reads tensor `name` (checkpoint kind `kind`) into this rank's piece of t. The vocabulary tensors
// may differ in padded rows between layouts (padding is a multiple of 128 x TP): rows are then
// truncated or zero-padded to this layout's global size before cutting the slice.
void read_piece(const checkpoint::Checkpoint& ck, checkpoint::Checkpoint::Kind kind, const std::string& name,
                const ParamTensor& t, float* dst) {
  const std::vector<int64_t> have = ck.global_shape(kind, name);
  NamedTensor nt{name, t.local_shape, dst, slice_of(t)};
  if (have == t.global_shape) {
    ck.read_into(kind, nt);
    return;
  }
  const bool vocab = checkpoint::is_vocab_padded(name);
  const bool rows_only =
      have.size() == t.global_shape.size() && std::equal(have.begin() + 1, have.end(), t.global_shape.begin() + 1);
  check(vocab && rows_only, "{}: tensor {} has global shape {} in the checkpoint, the model expects {}", ck.dir(), name,
        fmt::join(have, "x"), fmt::join(t.global_shape, "x"));
  const std::vector<float> src = ck.read_global(kind, name);
  int64_t row = 1;
  for (std::size_t k = 1; k < have.size(); ++k) row *= have[k];
  std::vector<float> global(static_cast<std::size_t>(t.global_shape[0] * row), 0.0f);
  const int64_t rows = std::min(have[0], t.global_shape[0]);
  std::copy(src.begin(), src.begin() + rows * row, global.begin());
  if (nt.slice) {
    checkpoint::extract_slice(global.data(), *nt.slice, dst);
  } else {
    std::copy(global.begin(), global.end(), dst);
  }
}

// Every tensor's optimizer state in the checkpoint must be of this run's kind (Adam's moments, or the momentum
// buffer of SGD or of Muon's matrices): a change of --optimizer between save and load is named instead of
// failing on a missing tensor.
void check_optimizer_kind(const checkpoint::Checkpoint& ck, const DataParallelOptimizer& opt,
                          const ParamLayout& layout) {
  using Kind = checkpoint::Checkpoint::Kind;
  for (const ParamTensor& t : layout.tensors) {
    if (t.tied_copy || t.numel == 0) continue;
    const std::vector<std::string> names = opt.state_names(t);
    const std::string want = names.front();
    // Adam's and Lion's state share the name exp_avg: exp_avg_sq tells them apart.
    const bool has_sq = ck.has(Kind::optim, "exp_avg_sq." + t.name);
    if (want == "exp_avg" && ck.has(Kind::optim, want + "." + t.name) && has_sq != (names.size() > 1))
      fail(
          "{}: the checkpoint holds {} optimizer state for {} but this run's --optimizer {} keeps {} for it; pass "
          "--no-load-optim to start the optimizer fresh from these weights, or resume with the optimizer it was "
          "saved with",
          ck.dir(), has_sq ? "Adam's (exp_avg and exp_avg_sq)" : "Lion's (exp_avg only)", t.name, opt.optimizer_name(),
          fmt::join(names, " and "));
    if (ck.has(Kind::optim, want + "." + t.name)) continue;
    const std::string other = want == "exp_avg" ? "momentum_buffer" : "exp_avg";
    if (!ck.has(Kind::optim, other + "." + t.name)) return;  // read_piece names the missing tensor
    fail(
        "{}: the checkpoint holds {} optimizer state for {} ({}.{}) but this run's --optimizer {} keeps {} for it; "
        "pass --no-load-optim to start the optimizer fresh from these weights, or resume with the optimizer it was "
        "saved with",
        ck.dir(), other == "exp_avg" ? "Adam's" : "a momentum buffer (SGD's or Muon's)", t.name, other, t.name,
        opt.optimizer_name(), want);
  }
}

}  // namespace

struct SaveSnapshot {
  std::string save_dir;
  checkpoint::Step step;
  std::string tmp;  // the temporary checkpoint directory (rank 0 made it)
  checkpoint::Metadata meta;
  bool writes = false;  // DP rank 0: this rank writes the files below
  std::string model_path, optim_path;
  checkpoint::FileStamp stamp;                            // every file's: the step's iteration and the save's id
  std::vector<std::vector<std::vector<float>>> state;     // host copies, per chunk, per optimizer state array
  std::vector<std::vector<float>> params, master;         // host copies, per chunk
  std::vector<NamedTensor> model_tensors, optim_tensors;  // pointing into the copies
};

std::shared_ptr<SaveSnapshot> snapshot_for_save(const std::string& save_dir, checkpoint::Step step,
                                                DistributedGpt& model, DataParallelOptimizer& opt,
                                                checkpoint::Metadata meta, bool save_optim) {
  opt.finish_param_gather();  // --overlap-param-gather: the parameters of the last step, all of them
  const ProcessGrid& g = model.grid();
  Communicator& world = model.comms().host_world();
  auto snap = std::make_shared<SaveSnapshot>();
  snap->save_dir = save_dir;
  snap->step = step;
  // Rank 0 makes the temporary directory; everyone learns its path (or rank 0's failure).
  std::string tmp;
  std::optional<std::string> begin_error;
  if (g.rank() == 0) {
    try {
      tmp = checkpoint::begin_save(save_dir, step);
    } catch (const std::exception& e) {
      begin_error = e.what();
    }
  }
  if (const auto e = agree_on_error(world, begin_error))
    fail_agreed("saving {} to {}: {}", step.dir_name(), save_dir, *e);
  int64_t len = static_cast<int64_t>(tmp.size());
  world.broadcast(&len, 1, ElemType::I64, 0);
  tmp.resize(static_cast<std::size_t>(len));
  world.broadcast(tmp.data(), tmp.size(), ElemType::Byte, 0);
  snap->tmp = tmp;

  // No fp32 master apart from the parameters: fp32 runs, and --bf16-stochastic-rounding.
  const bool fp32 = !opt.has_master();
  for (int c = 0; c < model.num_chunks(); ++c) {
    // Collective over DP (every DP rank takes part, only DP rank 0 writes).
    snap->state.emplace_back();
    for (int k = 0; k < opt.state_arrays(); ++k)
      snap->state.back().push_back(save_optim ? opt.gather_moments(c, k) : std::vector<float>());
    snap->master.push_back(save_optim && !fp32 ? opt.gather_moments(c, 2) : std::vector<float>());
    snap->params.push_back(params_to_host(model.chunk(c)));
  }
  // DP rank 0 writes every tensor of its TP x PP rank; with expert parallelism the other ranks of its EP
  // group (DP ranks 1 .. EP-1) write their routed experts, each a dim-0 slice of the (E, ...) tensors.
  // With the experts over the TP ranks (ETP 1, EP = TP) the EP group is the TP group: each TP rank's file holds
  // its experts, and there are no _ep files.
  // With context parallelism the CP ranks hold the same weights and gathered state: CP rank 0 writes.
  snap->writes = g.expert_dp_rank() == 0 && g.cp_rank() == 0;
  const bool dense_writer = g.dp_rank() == 0 && g.cp_rank() == 0;
  const int file_ep = g.experts_over_tp() ? 0 : g.ep_rank();
  if (snap->writes) {
    for (int c = 0; c < model.num_chunks(); ++c) {
      const std::vector<bool> expert = model.expert_tensors(c);
      const std::vector<ParamTensor>& tensors = model.chunk(c).layout().tensors;
      for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
        const ParamTensor& t = tensors[ti];
        if (t.tied_copy) continue;  // stored once, by the stage that owns the embedding
        if (!dense_writer && !expert[ti]) continue;
        snap->model_tensors.push_back({t.name, t.local_shape, snap->params[c].data() + t.offset, slice_of(t)});
        if (!save_optim) continue;
        auto& ot = snap->optim_tensors;
        const std::vector<std::string> names = opt.state_names(t);
        for (std::size_t k = 0; k < names.size(); ++k)
          ot.push_back({names[k] + "." + t.name, t.local_shape, snap->state[c][k].data() + t.offset, slice_of(t)});
        if (!fp32) ot.push_back({"master." + t.name, t.local_shape, snap->master[c].data() + t.offset, slice_of(t)});
      }
    }
    snap->model_path = tmp + "/" + checkpoint::model_file_name(g.tp_rank(), g.pp_rank(), file_ep);
    if (save_optim) snap->optim_path = tmp + "/" + checkpoint::optim_file_name(g.tp_rank(), g.pp_rank(), 0, file_ep);
  }
  // The save id from every rank's share of the content (each writer's files, in rank order).
  using File = std::pair<std::string, std::span<const NamedTensor>>;
  std::vector<File> files;
  if (snap->writes)
    files.emplace_back(checkpoint::model_file_name(g.tp_rank(), g.pp_rank(), file_ep), snap->model_tensors);
  if (!snap->optim_path.empty())
    files.emplace_back(checkpoint::optim_file_name(g.tp_rank(), g.pp_rank(), 0, file_ep), snap->optim_tensors);
  const int64_t mine = files.empty() ? 0 : int64_t(checkpoint::files_digest(files));
  std::vector<int64_t> all(static_cast<std::size_t>(world.size()));
  world.all_gather(all.data(), &mine, 1, ElemType::I64);
  std::vector<uint32_t> digests;
  for (const int64_t d : all) digests.push_back(static_cast<uint32_t>(d));
  const std::string save_id = checkpoint::save_id_of(digests);
  snap->stamp = {step.release ? meta.iteration : step.iteration, save_id};
  if (g.rank() == 0) {
    if (!step.release) meta.iteration = step.iteration;
    meta.layout = {g.tp_size(), g.pp_size(), g.dp_size(), g.experts_over_tp() ? 1 : g.ep_size(), opt.distributed()};
    meta.optimizer_state = save_optim;
    meta.save_id = save_id;
    if (!model.expert_bias().empty())
      meta.moe_router["expert_bias"] =
          checkpoint::expert_bias_to_json(model.expert_bias(), model.chunk(0).config().moe);
    if (!model.fp8_state().empty())
      meta.fp8 = checkpoint::fp8_state_to_json(model.fp8_state(), model.chunk(0).config());
    if (meta.model.empty()) {
      const StageConfig& c = model.chunk(0).config();
      meta.model = checkpoint::model_to_json({hf::default_family(c), "GPT2BPETokenizer", c});
    }
  }
  snap->meta = std::move(meta);
  return snap;
}

void write_snapshot_files(const SaveSnapshot& snap) {
  if (!snap.writes) return;
  checkpoint::write_tensor_file(snap.model_path, snap.model_tensors, snap.stamp);
  if (!snap.optim_path.empty()) checkpoint::write_tensor_file(snap.optim_path, snap.optim_tensors, snap.stamp);
}

void commit_snapshot(const SaveSnapshot& snap, Communicator& world, const std::optional<std::string>& write_error) {
  const std::string what = fmt::format("saving {} to {}", snap.step.dir_name(), snap.save_dir);
  if (const auto e = agree_on_error(world, write_error))
    fail_agreed("{}: {} (nothing was committed; the previous checkpoint stays current)", what, *e);
  std::optional<std::string> commit_error;
  if (world.rank() == 0) {
    try {
      checkpoint::write_metadata(snap.tmp, snap.meta);
      checkpoint::commit_save(snap.save_dir, snap.step);
    } catch (const std::exception& e) {
      commit_error = e.what();
    }
  }
  // Also the barrier after the commit: nobody moves on (or loads) before it is done.
  if (const auto e = agree_on_error(world, commit_error)) fail_agreed("{}: {}", what, *e);
}

checkpoint::Step snapshot_step(const SaveSnapshot& snap) { return snap.step; }

void save_distributed_checkpoint(const std::string& save_dir, checkpoint::Step step, DistributedGpt& model,
                                 DataParallelOptimizer& opt, checkpoint::Metadata meta, bool save_optim) {
  const auto snap = snapshot_for_save(save_dir, step, model, opt, std::move(meta), save_optim);
  std::optional<std::string> error;
  try {
    write_snapshot_files(*snap);
  } catch (const std::exception& e) {
    error = e.what();
  }
  commit_snapshot(*snap, model.comms().host_world(), error);
}

void load_distributed_checkpoint(const checkpoint::Checkpoint& ck, DistributedGpt& model, DataParallelOptimizer& opt,
                                 bool load_optim) {
  opt.finish_param_gather();  // no gather in flight may land on the loaded parameters
  using Kind = checkpoint::Checkpoint::Kind;
  const bool fp32 = !opt.has_master();  // parameters that are their own masters (fp32, stochastic rounding)
  checkpoint::check_optimizer_state(ck, load_optim);
  const bool with_optim = load_optim;
  checkpoint::check_model_tensors(ck, model.chunk(0).config());  // every rank: same names, same verdict
  const std::size_t arrays = std::size_t(opt.state_arrays());
  for (int c = 0; c < model.num_chunks(); ++c) {
    GptStage& st = model.chunk(c);
    if (with_optim) check_optimizer_kind(ck, opt, st.layout());
    const std::size_t n = st.layout().total;
    std::vector<float> p(n), master(fp32 ? 0 : n);
    std::vector<std::vector<float>> state(arrays, std::vector<float>(n));
    for (const ParamTensor& t : st.layout().tensors) {
      // An fp32 (or stochastically rounded) run resuming a bf16/fp16 checkpoint takes the exact fp32 masters as
      // its parameters.
      const bool masters_as_params = fp32 && with_optim && ck.has(Kind::optim, "master." + t.name);
      read_piece(ck, masters_as_params ? Kind::optim : Kind::model, masters_as_params ? "master." + t.name : t.name, t,
                 p.data() + t.offset);
      if (!with_optim) continue;
      const std::vector<std::string> names = opt.state_names(t);
      for (std::size_t k = 0; k < names.size(); ++k)
        read_piece(ck, Kind::optim, names[k] + "." + t.name, t, state[k].data() + t.offset);
      if (!fp32) {
        if (ck.has(Kind::optim, "master." + t.name)) {
          read_piece(ck, Kind::optim, "master." + t.name, t, master.data() + t.offset);
        } else {
          std::copy(p.begin() + t.offset, p.begin() + t.offset + t.numel, master.begin() + t.offset);
        }
      }
    }
    params_from_host(st, p);
    if (with_optim)
      for (std::size_t k = 0; k < arrays; ++k) opt.scatter_moments(c, int(k), state[k]);
    if (!fp32) opt.scatter_moments(c, 2, with_optim ? master : p);
  }
  if (const std::vector<float> bias = checkpoint::read_expert_bias(ck, model.chunk(0).config()); !bias.empty())
    model.set_expert_bias(bias);
  if (const std::vector<float> fp8 = checkpoint::read_fp8_state(ck, model.chunk(0).config()); !fp8.empty())
    model.set_fp8_state(fp8);
  opt.params_changed();
  model.comms().host_world().barrier();
}

namespace {

// The dense checkpoint's name for a MoE layer's stacked expert tensor ("" for any other tensor).
std::string dense_mlp_name(const std::string& name) {
  for (const char* w : {"linear_fc1.weight", "linear_fc2.weight"}) {
    const std::string expert = std::string("mlp.experts.") + w;
    if (name.ends_with(expert)) return name.substr(0, name.size() - expert.size()) + "mlp." + w;
  }
  return "";
}

}  // namespace

void upcycle_dense_checkpoint(const checkpoint::Checkpoint& ck, DistributedGpt& model, DataParallelOptimizer& opt) {
  opt.finish_param_gather();
  using Kind = checkpoint::Checkpoint::Kind;
  const StageConfig& config = model.chunk(0).config();
  checkpoint::check_upcycling_source(ck, config);  // every rank: the whole checkpoint, same verdict
  const bool fp32 = !opt.has_master();
  const int64_t E = config.moe.num_experts;
  // Megatron's scale for pre-softmax routing, whose top-k probabilities sum to about K/E instead of 1: the
  // experts' output grows by E/K, spread over the weight matrices the activation multiplies (3 when gated or
  // squared, else 2). Routing renormalised over the top-k needs none.
  const double act_scale = config.moe.pre_softmax ? double(E) / config.moe.topk : 1.0;
  const float weight_scale =
      float(std::pow(act_scale, config.gated_mlp() || config.squared_relu ? 1.0 / 3.0 : 1.0 / 2.0));
  for (int c = 0; c < model.num_chunks(); ++c) {
    GptStage& st = model.chunk(c);
    std::vector<float> p = params_to_host(st);  // the routers keep their initialisation, as Megatron's
    for (const ParamTensor& t : st.layout().tensors) {
      float* dst = p.data() + t.offset;
      if (t.name.ends_with("mlp.router.weight")) continue;
      const std::string dense_name = dense_mlp_name(t.name);
      if (dense_name.empty()) {
        read_piece(ck, Kind::model, t.name, t, dst);
        continue;
      }
      // Every expert a copy of the dense MLP: the (E, out, in) tensor is E copies of (out, in); then this rank's
      // piece of it (its EP rank's experts, its TP block).
      std::vector<float> one = ck.read_global(Kind::model, dense_name);
      if (weight_scale != 1.0f)
        for (float& v : one) v *= weight_scale;
      check(int64_t(one.size()) * E == checkpoint::numel(t.global_shape),
            "--moe-use-upcycling: {}: \"{}\" has {} elements, each expert of \"{}\" {}", ck.dir(), dense_name,
            one.size(), t.name, checkpoint::numel(t.global_shape) / E);
      std::vector<float> all;
      all.reserve(one.size() * std::size_t(E));
      for (int64_t e = 0; e < E; ++e) all.insert(all.end(), one.begin(), one.end());
      if (const std::optional<Slice> sl = slice_of(t)) {
        checkpoint::extract_slice(all.data(), *sl, dst);
      } else {
        std::copy(all.begin(), all.end(), dst);
      }
    }
    params_from_host(st, p);
    if (!fp32) opt.scatter_moments(c, 2, p);
  }
  opt.params_changed();
  model.comms().host_world().barrier();
}

}  // namespace gptrain::parallel
