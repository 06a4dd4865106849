// Checkpoint save/load: atomic layout, tracker, metadata, reassembly of TP slices and resharding,
// and refusing a checkpoint whose tensors do not match the model's switches.
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_json.h"
#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"

#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <numeric>

namespace ck = gptrain::checkpoint;
namespace fs = std::filesystem;

namespace {

const gptrain::test::ScratchDir kCheckpointScratch("ck");
void cleanup() { kCheckpointScratch.remove(); }  // at the end of a passing test
fs::path scratch(const std::string& name) { return kCheckpointScratch.fresh(name); }

std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// A one-rank save through the steps every writer takes: model_tp00_pp000 (+ optim_tp00_pp000_dp000 when
// optim is non-empty) and metadata.json, committed atomically. Returns the final checkpoint directory.
std::string save_one_rank(const std::string& save_dir, ck::Step step, const ck::Metadata& meta,
                          const std::vector<ck::NamedTensor>& model, const std::vector<ck::NamedTensor>& optim) {
  const std::string tmp = ck::begin_save(save_dir, step);
  ck::write_tensor_file((fs::path(tmp) / ck::model_file_name(0, 0)).string(), model);
  if (!optim.empty()) ck::write_tensor_file((fs::path(tmp) / ck::optim_file_name(0, 0, 0)).string(), optim);
  ck::write_metadata(tmp, meta);
  ck::commit_save(save_dir, step);
  return (fs::path(save_dir) / step.dir_name()).string();
}

// A freshly initialised model of config `c` saved as iteration 1 in scratch(name), metadata family `family`.
ck::Checkpoint save_initialised(gptrain::Backend& be, const gptrain::StageConfig& c, const std::string& family,
                                const std::string& name) {
  gptrain::GptStage s(c, be);
  s.init_parameters();
  std::vector<float> host(s.layout().total);
  be.copy_to_host(host.data(), s.params(), host.size() * sizeof(float));
  std::vector<ck::NamedTensor> model;
  for (const auto& t : s.layout().tensors) model.push_back({t.name, t.local_shape, host.data() + t.offset, {}});
  ck::Metadata meta;
  meta.model = ck::model_to_json({family, "GPT2BPETokenizer", c});
  const auto dir = scratch(name);
  save_one_rank(dir.string(), ck::Step::at(1), meta, model, {});
  return ck::Checkpoint::open(dir.string());
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("checkpoint: single-process save and load round trip with tracker and metadata") {
  const auto save = scratch("single");
  auto w = iota(12, 0.5f), b = iota(3, -1.0f), m = iota(12, 100.0f);
  std::vector<ck::NamedTensor> model = {{"decoder.layers.0.mlp.linear_fc1.weight", {3, 4}, w.data(), {}},
                                        {"decoder.layers.0.mlp.linear_fc1.bias", {3}, b.data(), {}}};
  std::vector<ck::NamedTensor> optim = {{"exp_avg.decoder.layers.0.mlp.linear_fc1.weight", {3, 4}, m.data(), {}}};
  ck::Metadata meta;
  meta.iteration = 20;
  meta.consumed_train_samples = 160;
  meta.model = {{"family", "gpt2"}, {"num_layers", 1}};
  meta.args = {{"lr", 0.001}};
  const auto dir = save_one_rank(save.string(), ck::Step::at(20), meta, model, optim);
  REQUIRE(dir == (save / "iter_0000020").string());
  REQUIRE(slurp(save / "latest_checkpointed_iteration.txt") == "20");
  REQUIRE(fs::exists(save / "iter_0000020" / "model_tp00_pp000.safetensors"));
  REQUIRE(fs::exists(save / "iter_0000020" / "optim_tp00_pp000_dp000.safetensors"));
  REQUIRE(!fs::exists(save / ".iter_0000020.tmp"));

  auto ckpt = ck::Checkpoint::open(save.string());
  REQUIRE(ckpt.metadata().iteration == 20);
  REQUIRE(ckpt.metadata().consumed_train_samples == 160);
  REQUIRE(ckpt.metadata().model["family"] == "gpt2");
  REQUIRE(ckpt.metadata().args["lr"] == 0.001);
  REQUIRE(ckpt.names(ck::Checkpoint::Kind::model).size() == 2);
  REQUIRE(ckpt.has_optim());
  std::vector<float> w2(12), b2(3), m2(12);
  std::vector<ck::NamedTensor> into = {{model[0].name, {3, 4}, w2.data(), {}}, {model[1].name, {3}, b2.data(), {}}};
  ckpt.load(ck::Checkpoint::Kind::model, into, true);
  REQUIRE(w2 == w);
  REQUIRE(b2 == b);
  std::vector<ck::NamedTensor> ointo = {{optim[0].name, {3, 4}, m2.data(), {}}};
  ckpt.load(ck::Checkpoint::Kind::optim, ointo, true);
  REQUIRE(m2 == m);

  // A later save moves the tracker; the earlier step stays loadable by step.
  w[0] = 42.0f;
  save_one_rank(save.string(), ck::Step::at(30), meta, model, {});
  REQUIRE(slurp(save / "latest_checkpointed_iteration.txt") == "30");
  REQUIRE(!ck::Checkpoint::open(save.string()).has_optim());
  REQUIRE(ck::Checkpoint::open(save.string()).read_global(ck::Checkpoint::Kind::model, model[0].name)[0] == 42.0f);
  REQUIRE(ck::Checkpoint::open(save.string(), ck::Step::at(20))
              .read_global(ck::Checkpoint::Kind::model, model[0].name)[0] == 0.5f);
  // Re-saving an existing step replaces it.
  w[0] = 7.0f;
  save_one_rank(save.string(), ck::Step::at(20), meta, model, {});
  REQUIRE(ck::Checkpoint::open(save.string(), ck::Step::at(20))
              .read_global(ck::Checkpoint::Kind::model, model[0].name)[0] == 7.0f);
  // release
  save_one_rank(save.string(), ck::Step::release_step(), meta, model, {});
  REQUIRE(slurp(save / "latest_checkpointed_iteration.txt") == "release");
  REQUIRE(fs::exists(save / "release" / "metadata.json"));
  cleanup();
}

TEST_CASE("checkpoint: load errors name the problem") {
  const auto save = scratch("errors");
  auto w = iota(6, 0.0f);
  std::vector<ck::NamedTensor> model = {{"a.weight", {2, 3}, w.data(), {}}};
  save_one_rank(save.string(), ck::Step::at(1), ck::Metadata{}, model, {});
  auto ckpt = ck::Checkpoint::open(save.string());
  std::vector<float> out(6);
  std::vector<ck::NamedTensor> wrong_shape = {{"a.weight", {3, 2}, out.data(), {}}};
  REQUIRE_THROWS_WITH(ckpt.load(ck::Checkpoint::Kind::model, wrong_shape, true),
                      Catch::Contains("(2, 3)") && Catch::Contains("(3, 2)"));
  std::vector<ck::NamedTensor> missing = {{"a.weight", {2, 3}, out.data(), {}}, {"b.weight", {2}, out.data(), {}}};
  REQUIRE_THROWS_WITH(ckpt.load(ck::Checkpoint::Kind::model, missing, true),
                      Catch::Contains("b.weight") && Catch::Contains("lacks"));
  std::vector<ck::NamedTensor> none;
  REQUIRE_THROWS_WITH(ckpt.load(ck::Checkpoint::Kind::model, none, true), Catch::Contains("a.weight"));
  REQUIRE_NOTHROW(ckpt.load(ck::Checkpoint::Kind::model, none, false));
  REQUIRE_THROWS_WITH(ck::Checkpoint::open(save.string(), ck::Step::at(5)), Catch::Contains("iter_0000005"));
  REQUIRE_THROWS_WITH(ck::Checkpoint::open((save / "nothing").string()), Catch::Contains("no such directory"));
  std::ofstream(save / "latest_checkpointed_iteration.txt") << "12x";
  REQUIRE_THROWS_WITH(ck::Checkpoint::open(save.string()), Catch::Contains("12x"));
  std::ofstream(save / "iter_0000001" / "metadata.json") << R"({"format":"other","version":1})";
  REQUIRE_THROWS_WITH(ck::Checkpoint((save / "iter_0000001").string()), Catch::Contains("gptrain-checkpoint"));
  cleanup();
}

TEST_CASE("checkpoint: TP slices with several row blocks reassemble and reshard") {
  // A (12, 2) "qkv" weight: rows [Q(4) | K(4) | V(4)], TP2: rank r holds Q_r, K_r, V_r (2 rows each).
  const auto save = scratch("sliced");
  const auto full = iota(24, 0.0f);
  const auto proj = iota(8, 1000.0f);  // (2, 4) row-parallel: columns split
  const std::string tmp = ck::begin_save(save.string(), ck::Step::at(3));
  for (int r = 0; r < 2; ++r) {
    ck::Slice qkv{{12, 2}, {{0, 2 * r, 2}, {0, 4 + 2 * r, 2}, {0, 8 + 2 * r, 2}}};
    std::vector<float> local(12);
    ck::extract_slice(full.data(), qkv, local.data());
    ck::Slice cols{{2, 4}, {{1, 2 * r, 2}}};
    std::vector<float> plocal(4);
    ck::extract_slice(proj.data(), cols, plocal.data());
    REQUIRE(plocal[0] == proj[2 * r]);
    REQUIRE(plocal[2] == proj[4 + 2 * r]);
    std::vector<float> norm = {1.0f, 2.0f};
    std::vector<ck::NamedTensor> ts = {
        {"qkv", {6, 2}, local.data(), qkv}, {"proj", {2, 2}, plocal.data(), cols}, {"norm", {2}, norm.data(), {}}};
    ck::write_tensor_file((fs::path(tmp) / ck::model_file_name(r, 0)).string(), ts);
  }
  ck::Metadata meta;
  meta.layout.tp = 2;
  ck::write_metadata(tmp, meta);
  ck::commit_save(save.string(), ck::Step::at(3));

  auto ckpt = ck::Checkpoint::open(save.string());
  REQUIRE(ckpt.global_shape(ck::Checkpoint::Kind::model, "qkv") == std::vector<int64_t>{12, 2});
  REQUIRE(ckpt.read_global(ck::Checkpoint::Kind::model, "qkv") == full);
  REQUIRE(ckpt.read_global(ck::Checkpoint::Kind::model, "proj") == proj);
  REQUIRE(ckpt.read_global(ck::Checkpoint::Kind::model, "norm") == std::vector<float>{1.0f, 2.0f});
  // Reshard to TP4: rank 1 holds one row of each of Q, K, V.
  ck::Slice tp4{{12, 2}, {{0, 1, 1}, {0, 5, 1}, {0, 9, 1}}};
  std::vector<float> got(6);
  ckpt.read_into(ck::Checkpoint::Kind::model, {"qkv", {3, 2}, got.data(), tp4});
  REQUIRE(got == std::vector<float>{2, 3, 10, 11, 18, 19});
  // Load unsharded (TP1) from the TP2 checkpoint.
  std::vector<float> whole(24);
  ckpt.read_into(ck::Checkpoint::Kind::model, {"qkv", {12, 2}, whole.data(), {}});
  REQUIRE(whole == full);

  // Remove rank 1's file: metadata says tp 2, so opening fails naming the file.
  fs::remove(save / "iter_0000003" / ck::model_file_name(1, 0));
  REQUIRE_THROWS_WITH(ck::Checkpoint::open(save.string()), Catch::Contains("model_tp01_pp000.safetensors"));
  // With metadata claiming tp 1, the missing half is detected on read.
  meta.layout.tp = 1;
  ck::write_metadata((save / "iter_0000003").string(), meta);
  REQUIRE_THROWS_WITH(ck::Checkpoint::open(save.string()).read_global(ck::Checkpoint::Kind::model, "qkv"),
                      Catch::Contains("incomplete"));
  cleanup();
}

TEST_CASE("checkpoint: expert slices of EP ranks in _ep files, read back whole or as another EP's slice") {
  // Four experts (E, 2) saved at EP 2: EP rank 0's file holds a dense tensor and experts [0, 2), EP rank
  // 1's file (model_tp00_pp000_ep001) experts [2, 4) only.
  const auto save = scratch("ep");
  std::vector<float> experts(8), norm = {5.0f, 6.0f};
  for (int i = 0; i < 8; ++i) experts[i] = float(i);
  const std::string tmp = ck::begin_save(save.string(), ck::Step::at(2));
  for (int r = 0; r < 2; ++r) {
    ck::Slice half{{4, 2}, {{0, 2 * r, 2}}};
    std::vector<ck::NamedTensor> ts = {{"experts", {2, 2}, experts.data() + 4 * r, half}};
    if (r == 0) ts.push_back({"norm", {2}, norm.data(), {}});
    ck::write_tensor_file((fs::path(tmp) / ck::model_file_name(0, 0, r)).string(), ts);
  }
  REQUIRE(ck::model_file_name(0, 0, 1) == "model_tp00_pp000_ep001.safetensors");
  REQUIRE(ck::optim_file_name(1, 2, 0, 3) == "optim_tp01_pp002_dp000_ep003.safetensors");
  ck::Metadata meta;
  meta.layout.ep = 2;
  ck::write_metadata(tmp, meta);
  ck::commit_save(save.string(), ck::Step::at(2));
  auto ckpt = ck::Checkpoint::open(save.string());
  REQUIRE(ckpt.metadata().layout.ep == 2);
  REQUIRE(ckpt.read_global(ck::Checkpoint::Kind::model, "experts") == experts);  // EP 1
  std::vector<float> one(2);
  ckpt.read_into(ck::Checkpoint::Kind::model, {"experts", {1, 2}, one.data(), ck::Slice{{4, 2}, {{0, 1, 1}}}});
  REQUIRE(one == std::vector<float>{2, 3});  // EP 4, rank 1
  fs::remove(save / "iter_0000002" / ck::model_file_name(0, 0, 1));
  REQUIRE_THROWS_WITH(ck::Checkpoint::open(save.string()),
                      Catch::Contains("model_tp00_pp000_ep001.safetensors") && Catch::Contains("ep 2"));
  cleanup();
}

TEST_CASE("checkpoint: a slice along two dims (experts x ffn rows) cuts and reassembles") {
  // (E 4, rows 4, cols 3): EP rank 1's experts [2, 4), and rows {1} and {3} (one ETP rank's gate and up rows).
  std::vector<float> global(48);
  std::iota(global.begin(), global.end(), 0.0f);
  const ck::Slice s{{4, 4, 3}, {{0, 2, 2}, {1, 1, 1}, {1, 3, 1}}};
  REQUIRE(ck::slice_local_shape(s) == std::vector<int64_t>{2, 2, 3});
  std::vector<float> local(12);
  ck::extract_slice(global.data(), s, local.data());
  REQUIRE(local == std::vector<float>{27, 28, 29, 33, 34, 35, 39, 40, 41, 45, 46, 47});
  std::vector<float> back(48, -1.0f);
  ck::insert_slice(back.data(), s, local.data());
  for (int i = 0; i < 48; ++i) {
    const int e = i / 12, r = (i / 3) % 4;
    REQUIRE(back[i] == ((e >= 2 && (r == 1 || r == 3)) ? global[i] : -1.0f));
  }
  // A dim's blocks must be consecutive in the list (the local order along it).
  REQUIRE_THROWS_WITH(ck::slice_local_shape(ck::Slice{{4, 4, 3}, {{1, 1, 1}, {0, 2, 2}, {1, 3, 1}}}),
                      Catch::Contains("not consecutive"));
}

TEST_CASE("checkpoint: vocabulary rows re-padded for another TP size") {
  // Saved at TP1: 10 real rows padded to 12; loaded at TP2 padded to 16, rank 1 holds rows [8, 16).
  const auto save = scratch("repad");
  std::vector<float> wte(12 * 2, -1.0f);  // padding rows hold junk: must not leak into the load
  for (int i = 0; i < 20; ++i) wte[i] = float(i);
  std::vector<ck::NamedTensor> model = {{"embedding.word_embeddings.weight", {12, 2}, wte.data(), {}}};
  save_one_rank(save.string(), ck::Step::at(1), ck::Metadata{}, model, {});
  auto ckpt = ck::Checkpoint::open(save.string());
  std::vector<float> got(16, 99.0f);
  ck::Slice rank1{{16, 2}, {{0, 8, 8}}};
  ckpt.read_into(ck::Checkpoint::Kind::model, {"embedding.word_embeddings.weight", {8, 2}, got.data(), rank1}, 10);
  REQUIRE(got == std::vector<float>{16, 17, 18, 19, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  std::vector<float> whole(20);
  ckpt.read_into(ck::Checkpoint::Kind::model, {"embedding.word_embeddings.weight", {10, 2}, whole.data(), {}}, 10);
  REQUIRE(whole[19] == 19.0f);
  // Without valid_rows the shape mismatch is an error; with fewer rows than the vocabulary too.
  REQUIRE_THROWS_WITH(
      ckpt.read_into(ck::Checkpoint::Kind::model, {"embedding.word_embeddings.weight", {8, 2}, got.data(), rank1}),
      Catch::Contains("(12, 2)"));
  REQUIRE_THROWS_WITH(
      ckpt.read_into(ck::Checkpoint::Kind::model, {"embedding.word_embeddings.weight", {8, 2}, got.data(), rank1}, 13),
      Catch::Contains("real vocabulary rows"));
  cleanup();
}

TEST_CASE("checkpoint: a checkpoint of other bias switches is refused, naming the differing switch") {
  using namespace gptrain;
  StageConfig with;
  with.num_layers = 1, with.hidden_size = 16, with.num_attention_heads = 2, with.seq_length = 4, with.vocab_size = 20;
  with.parallel_residual = ParallelResidual::SharedNorm, with.position_embedding = PositionEmbedding::Rope;
  with.untie_embeddings_and_output_weights = true;
  with.finalize(8);
  StageConfig without = with;
  without.disable_bias_attention = true;
  without.finalize(8);
  auto be = make_backend("cpu", DType::F32);
  auto save_model = [&](const StageConfig& c, const std::string& name) {
    return save_initialised(*be, c, "gptj", name);
  };
  const auto ck_with = save_model(with, "with_attention_bias"), ck_without = save_model(without, "no_attention_bias");
  GptStage s_with(with, *be), s_without(without, *be);
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_with, ck_with));
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_without, ck_without));
  // Biases the run has no place for are never dropped silently; biases it needs are never invented.
  REQUIRE_THROWS_WITH(
      ck::load_stage_parameters(s_without, ck_with),
      Catch::Contains("no place for") && Catch::Contains("disable_bias_attention (checkpoint false, this run true)"));
  REQUIRE_THROWS_WITH(
      ck::load_stage_parameters(s_with, ck_without),
      Catch::Contains("lacks") && Catch::Contains("disable_bias_attention (checkpoint true, this run false)"));
  cleanup();
}

TEST_CASE("checkpoint: apply_layernorm_1p is recorded, absent reads as false, a mismatch is refused naming the flag") {
  using namespace gptrain;
  StageConfig plain;
  plain.num_layers = 1, plain.hidden_size = 16, plain.num_attention_heads = 2, plain.seq_length = 4;
  plain.vocab_size = 20, plain.max_position_embeddings = 4;
  plain.finalize(8);
  StageConfig one_p = plain;
  one_p.apply_layernorm_1p = true;
  auto j = ck::model_to_json({"gpt2", "GPT2BPETokenizer", one_p});
  REQUIRE(j.at("apply_layernorm_1p") == true);
  REQUIRE(ck::model_from_json(j, "test").config.apply_layernorm_1p);
  j.erase("apply_layernorm_1p");  // a checkpoint written before the field existed
  REQUIRE_FALSE(ck::model_from_json(j, "test").config.apply_layernorm_1p);

  auto be = make_backend("cpu", DType::F32);
  auto save_model = [&](const StageConfig& c, const std::string& name) {
    return save_initialised(*be, c, "gpt2", name);
  };
  const auto ck_plain = save_model(plain, "plain_norms"), ck_1p = save_model(one_p, "zero_centred_norms");
  GptStage s_plain(plain, *be), s_1p(one_p, *be);
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_plain, ck_plain));
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_1p, ck_1p));
  // The same names and shapes either way: only the recorded switch tells gamma from gamma - 1.
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_plain, ck_1p),
                      Catch::Contains("gamma - 1") && Catch::Contains("give --apply-layernorm-1p"));
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_1p, ck_plain),
                      Catch::Contains("this run has --apply-layernorm-1p") && Catch::Contains("convert_from_hf"));
  cleanup();
}

TEST_CASE("checkpoint: the sliding window is recorded, absent reads as none, a mismatch is refused naming it") {
  using namespace gptrain;
  StageConfig plain;
  plain.num_layers = 1, plain.hidden_size = 16, plain.num_attention_heads = 2, plain.seq_length = 4;
  plain.vocab_size = 20, plain.max_position_embeddings = 4;
  plain.finalize(8);
  StageConfig windowed = plain;
  windowed.window_size = 2;
  auto j = ck::model_to_json({"mistral", "GPT2BPETokenizer", windowed});
  REQUIRE(j.at("window_size") == 2);
  REQUIRE(j.at("window_attn_skip_freq") == 0);
  REQUIRE(ck::model_from_json(j, "test").config.window_size == 2);
  j.erase("window_size");  // a checkpoint written before the field existed
  j.erase("window_attn_skip_freq");
  REQUIRE(ck::model_from_json(j, "test").config.window_size == -1);
  REQUIRE(ck::model_from_json(j, "test").config.window_attn_skip_freq == 0);

  auto be = make_backend("cpu", DType::F32);
  const auto ck_windowed = save_initialised(*be, windowed, "mistral", "windowed");
  GptStage s_plain(plain, *be), s_windowed(windowed, *be);
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_windowed, ck_windowed));
  // The same tensors either way: only the recorded window tells the two models apart.
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_plain, ck_windowed),
                      Catch::Contains("trained with window_size 2 and window_attn_skip_freq 0") &&
                          Catch::Contains("give --window-size 2,0 as the saving run did"));
}

TEST_CASE(
    "checkpoint: geglu and scale_embeddings_by_sqrt_hidden are recorded and a mismatch is refused naming the flag") {
  using namespace gptrain;
  StageConfig swiglu;
  swiglu.num_layers = 1, swiglu.hidden_size = 16, swiglu.num_attention_heads = 2, swiglu.seq_length = 4;
  swiglu.vocab_size = 20, swiglu.max_position_embeddings = 4, swiglu.ffn_hidden_size = 24, swiglu.swiglu = true;
  swiglu.finalize(8);
  StageConfig gemma = swiglu;  // the same tensor names and shapes
  gemma.swiglu = false, gemma.geglu = true, gemma.scale_embeddings_by_sqrt_hidden = true;
  auto j = ck::model_to_json({"gemma", "GPT2BPETokenizer", gemma});
  REQUIRE((j.at("geglu") == true && j.at("scale_embeddings_by_sqrt_hidden") == true));
  const auto back = ck::model_from_json(j, "test").config;
  REQUIRE((back.geglu && back.scale_embeddings_by_sqrt_hidden && !back.swiglu));
  j.erase("geglu"), j.erase("scale_embeddings_by_sqrt_hidden");  // written before the fields existed
  REQUIRE_FALSE(ck::model_from_json(j, "test").config.geglu);

  auto be = make_backend("cpu", DType::F32);
  const auto ck_gemma = save_initialised(*be, gemma, "gemma", "gemma_switches");
  StageConfig unscaled = gemma;
  unscaled.scale_embeddings_by_sqrt_hidden = false;
  GptStage s_gemma(gemma, *be), s_swiglu(swiglu, *be), s_unscaled(unscaled, *be);
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_gemma, ck_gemma));
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_swiglu, ck_gemma),
                      Catch::Contains("model has geglu true; give --geglu"));
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_unscaled, ck_gemma),
                      Catch::Contains("give --scale-embeddings-by-sqrt-hidden"));
  cleanup();
}

TEST_CASE("checkpoint: a tracker that is no iteration number names the file and what it should hold") {
  const auto dir = scratch("tracker");
  const auto tracker = dir / "latest_checkpointed_iteration.txt";
  for (const char* text : {"12345678901234567890123", "-3", "1e3", "", "release2"}) {
    std::ofstream(tracker) << text << "\n";
    INFO(text);
    REQUIRE_THROWS_WITH(ck::read_tracker(dir.string()), Catch::Contains(tracker.string()) &&
                                                            Catch::Contains("expected an iteration number") &&
                                                            !Catch::Contains("stoll"));
  }
  std::ofstream(tracker) << "999999999999999999\n";  // the longest accepted
  REQUIRE(ck::read_tracker(dir.string())->iteration == 999999999999999999);
  std::ofstream(tracker) << " release \n";
  REQUIRE(ck::read_tracker(dir.string())->release);
  // A directory in the tracker's place gave the C++ library's "basic_filebuf::underflow" error.
  fs::remove(tracker);
  fs::create_directory(tracker);
  REQUIRE_THROWS_WITH(ck::read_tracker(dir.string()),
                      Catch::Contains(tracker.string()) && Catch::Contains("not a regular file"));
  cleanup();
}

TEST_CASE("checkpoint: rope_scaling is recorded (null when off), and a scaled checkpoint loads only with its scaling") {
  using namespace gptrain;
  StageConfig plain;
  plain.num_layers = 1, plain.hidden_size = 16, plain.num_attention_heads = 2, plain.seq_length = 4;
  plain.vocab_size = 20, plain.max_position_embeddings = 4;
  plain.position_embedding = PositionEmbedding::Rope;
  plain.finalize(8);
  StageConfig scaled = plain, other = plain;
  scaled.rope_scaling.llama3 = true;
  scaled.rope_scaling.factor = 32;
  scaled.rope_scaling.low_freq_factor = 1.5;
  scaled.rope_scaling.high_freq_factor = 6;
  scaled.rope_scaling.original_max_positions = 60;
  other.rope_scaling = scaled.rope_scaling;
  other.rope_scaling.factor = 8;
  auto j = ck::model_to_json({"llama", "GPT2BPETokenizer", scaled});
  REQUIRE(j.at("rope_scaling") == nlohmann::json{{"type", "llama3"},
                                                 {"factor", 32.0},
                                                 {"low_freq_factor", 1.5},
                                                 {"high_freq_factor", 6.0},
                                                 {"original_max_position_embeddings", 60}});
  const RopeScaling back = ck::model_from_json(j, "test").config.rope_scaling;
  REQUIRE((back.llama3 && back.factor == 32 && back.low_freq_factor == 1.5 && back.high_freq_factor == 6 &&
           back.original_max_positions == 60));
  REQUIRE(ck::model_to_json({"llama", "GPT2BPETokenizer", plain}).at("rope_scaling").is_null());
  j.erase("rope_scaling");  // a checkpoint written before the field existed
  REQUIRE_FALSE(ck::model_from_json(j, "test").config.rope_scaling.llama3);
  j["rope_scaling"] = {{"type", "yarn"}};
  REQUIRE_THROWS_WITH(ck::model_from_json(j, "test"), Catch::Contains("\"yarn\""));

  auto be = make_backend("cpu", DType::F32);
  const auto ck_plain = save_initialised(*be, plain, "llama", "rope_plain"),
             ck_scaled = save_initialised(*be, scaled, "llama", "rope_scaled");
  GptStage s_plain(plain, *be), s_scaled(scaled, *be), s_other(other, *be);
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_scaled, ck_scaled));
  REQUIRE_NOTHROW(ck::load_stage_parameters(s_scaled, ck_plain));  // scaling added for a longer context
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_plain, ck_scaled),
                      Catch::Contains("Llama-3 scaling (--use-rope-scaling --rope-scaling-factor 32 "
                                      "--rope-scaling-low-freq-factor 1.5") &&
                          Catch::Contains("this run has none"));
  REQUIRE_THROWS_WITH(ck::load_stage_parameters(s_other, ck_scaled),
                      Catch::Contains("this run has --use-rope-scaling --rope-scaling-factor 8 "));
  cleanup();
}
