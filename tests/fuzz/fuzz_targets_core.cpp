// Fuzz targets of core/: safetensors files and sharded indexes, checkpoint metadata.json, the tracker
// file and tensor files with slice metadata, a HF config.json (through convert_from_hf), and
// pretrain_gpt's command line and --config YAML.
#include "core/checkpoint/checkpoint.h"
#include "core/common/error.h"
#include "core/config/train_args.h"
#include "core/hf/convert.h"
#include "core/safetensors/reader.h"
#include "core/safetensors/sharded.h"
#include "core/safetensors/writer.h"
#include "tests/fuzz/fuzz_target.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>

namespace gptrain::fuzz {

namespace {

using nlohmann::json;
namespace st = safetensors;

const std::vector<std::string> kJsonTokens = {"{",     "}",   "[", "]", "\"",  ":",     ",",    "null", "true",
                                              "false", "\\u", "-", "0", "1.5", "1e400", "\"\"", " "};

// ---- safetensors ----
std::string safetensors_file(const fs::path& path, const std::vector<st::TensorSpec>& specs,
                             std::map<std::string, std::string> metadata = {}) {
  std::vector<std::vector<float>> values;
  std::vector<st::HostTensorRef> refs;
  for (const auto& s : specs) values.emplace_back(static_cast<size_t>(st::shape_numel(s.shape)), 0.5f);
  for (size_t i = 0; i < specs.size(); ++i) refs.push_back({specs[i], values[i].data()});
  st::write_file(path.string(), refs, std::move(metadata));
  return read_file(path);
}

// What a reader accepted must describe the file: tensors in offset order, back to back from the start
// of the data section to its end, each exactly numel * element size bytes.
void check_safetensors_layout(const st::Reader& r, const std::string& input) {
  uint64_t header_len = 0;
  std::memcpy(&header_len, input.data(), 8);
  const uint64_t data_len = input.size() - 8 - header_len;
  uint64_t at = 0;
  for (const auto& t : r.tensors()) {
    if (t.begin != at)
      throw Violation(fmt::format("tensor {} begins at {}, the previous one ends at {}", t.name, t.begin, at));
    const unsigned __int128 bits = static_cast<unsigned __int128>(t.numel()) * st::dtype_bits(t.dtype);
    if (t.numel() < 0 || bits != static_cast<unsigned __int128>(t.nbytes()) * 8)
      throw Violation(fmt::format("tensor {} has {} bytes for {} elements", t.name, t.nbytes(), t.numel()));
    at = t.end;
  }
  if (at != data_len) throw Violation(fmt::format("tensors end at {}, the data section at {}", at, data_len));
}

void safetensors_run(const std::string& input, const fs::path&, const fs::path& in) {
  write_file(in / "a.safetensors", input);
  const st::Reader r((in / "a.safetensors").string());
  check_safetensors_layout(r, input);
  for (const auto& t : r.tensors()) {
    (void)r.bytes(t.name);
    if (t.dtype == st::DType::F32 || t.dtype == st::DType::BF16 || t.dtype == st::DType::F16 ||
        t.dtype == st::DType::F64)
      (void)r.read_f32(t.name);
  }
}

std::vector<std::string> safetensors_seeds(const fs::path& dir) {
  return {
      safetensors_file(dir / "a.safetensors",
                       {{"w", st::DType::F32, {2, 3}},
                        {"b", st::DType::BF16, {4}},
                        {"s", st::DType::F16, {}},
                        {"d", st::DType::F64, {1, 1}},
                        {"e", st::DType::F32, {0, 5}}},
                       {{"format", "pt"}, {"note", "caf\xc3\xa9"}}),
      safetensors_file(dir / "b.safetensors", {}),
  };
}

// Three shards of a sharded weight set; the input is the index.
std::vector<std::string> index_seeds(const fs::path& dir) {
  std::vector<st::TensorSpec> specs = {
      {"a", st::DType::F32, {4, 4}}, {"b", st::DType::F32, {16}}, {"c", st::DType::F32, {3}}};
  st::ShardedWriter w(dir.string(), specs, 70);
  for (const auto& s : specs) {
    std::vector<float> v(static_cast<size_t>(st::shape_numel(s.shape)), 1.0f);
    w.write_f32(s.name, v.data(), v.size());
  }
  w.finish();
  return {read_file(dir / "model.safetensors.index.json")};
}

void index_run(const std::string& input, const fs::path& dir, const fs::path& in) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") fs::create_hard_link(e.path(), in / e.path().filename());
  write_file(in / "model.safetensors.index.json", input);
  const st::WeightSet ws(in.string());
  for (const auto& n : ws.names()) (void)ws.read_f32(n);
}

// ---- checkpoint ----
checkpoint::Metadata sample_metadata() {
  checkpoint::Metadata m;
  m.iteration = 20;
  m.consumed_train_samples = 160;
  m.model = {{"family", "gpt2"}, {"num_layers", 2}, {"hidden_size", 64}};
  m.layout = {2, 1, 2, true};
  m.args = {{"lr", 0.001}, {"seq_length", 32}, {"data_path", {"0.5", "a", "0.5", "b"}}};
  m.scheduler = {{"num_steps", 160}};
  return m;
}

// The integer fields of an accepted metadata.json must be JSON integers that fit their field: a
// fraction, a boolean or an out-of-range number means the file is damaged.
void check_metadata(const checkpoint::Metadata& m, const std::string& input) {
  const json j = json::parse(input);
  auto exact = [](const json& v, int64_t got, const char* key) {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX) ||
        v.get<int64_t>() != got || got < 0)
      throw Violation(fmt::format("\"{}\": {} was read as {}", key, v.dump(), got));
  };
  exact(j["iteration"], m.iteration, "iteration");
  if (j.contains("consumed_train_samples"))
    exact(j["consumed_train_samples"], m.consumed_train_samples, "consumed_train_samples");
  if (j.contains("consumed_valid_samples"))
    exact(j["consumed_valid_samples"], m.consumed_valid_samples, "consumed_valid_samples");
  if (j.contains("layout")) {
    const json& l = j["layout"];
    if (l.contains("tp")) exact(l["tp"], m.layout.tp, "tp");
    if (l.contains("pp")) exact(l["pp"], m.layout.pp, "pp");
    if (l.contains("dp")) exact(l["dp"], m.layout.dp, "dp");
  }
}

std::vector<std::string> metadata_seeds(const fs::path&) {
  const json minimal = {{"format", "gptrain-checkpoint"}, {"version", 1}, {"iteration", 0}};
  return {checkpoint::metadata_to_json(sample_metadata()).dump(2), minimal.dump()};
}

void metadata_run(const std::string& input, const fs::path&, const fs::path& in) {
  write_file(in / "metadata.json", input);
  check_metadata(checkpoint::read_metadata(in.string()), input);
}

std::vector<std::string> checkpoint_tensor_seeds(const fs::path& dir) {
  checkpoint::Metadata m = sample_metadata();
  m.layout = {};  // one tensor file: tp 1 x pp 1
  checkpoint::write_metadata(dir.string(), m);
  std::vector<float> a(12, 0.25f), b(6, 1.0f), c(4, 2.0f);
  // A whole tensor, a slice made of two blocks of rows, and a column slice of a padded tensor.
  std::vector<checkpoint::NamedTensor> t = {
      {"embedding.word_embeddings.weight", {4, 3}, a.data(), std::nullopt},
      {"decoder.layers.0.self_attention.linear_qkv.weight",
       {2, 3},
       b.data(),
       checkpoint::Slice{{2, 3}, {{0, 0, 1}, {0, 1, 1}}}},
      {"decoder.layers.0.mlp.linear_fc2.weight", {2, 2}, c.data(), checkpoint::Slice{{2, 2}, {{1, 0, 2}}}},
  };
  std::vector<std::string> seeds;
  for (size_t n = 1; n <= t.size(); ++n) {
    const fs::path p = dir / fmt::format("seed{}.safetensors", n);
    checkpoint::write_tensor_file(p.string(), std::span(t).first(n));
    seeds.push_back(read_file(p));
  }
  return seeds;
}

void checkpoint_tensors_run(const std::string& input, const fs::path& dir, const fs::path& in) {
  fs::copy_file(dir / "metadata.json", in / "metadata.json");
  write_file(in / checkpoint::model_file_name(0, 0), input);
  const checkpoint::Checkpoint ck(in.string());
  for (const auto& name : ck.names(checkpoint::Checkpoint::Kind::model)) {
    const auto shape = ck.global_shape(checkpoint::Checkpoint::Kind::model, name);
    (void)ck.read_global(checkpoint::Checkpoint::Kind::model, name);
    (void)shape;
  }
}

// ---- HF config.json: a tiny GPT-2 weight set beside it, converted with convert_from_hf ----
json tiny_gpt2_config() {
  return {{"model_type", "gpt2"},
          {"n_layer", 1},
          {"n_embd", 8},
          {"n_head", 2},
          {"vocab_size", 16},
          {"n_positions", 8},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", 1e-5},
          {"tie_word_embeddings", true}};
}

// A tiny Mixtral (Llama attention, 2 experts top-1) beside the GPT-2: MoE configs size per-layer lists.
json tiny_mixtral_config() {
  return {{"model_type", "mixtral"},  {"num_hidden_layers", 1},       {"hidden_size", 8},
          {"num_attention_heads", 2}, {"num_key_value_heads", 1},     {"intermediate_size", 16},
          {"vocab_size", 16},         {"max_position_embeddings", 8}, {"num_local_experts", 2},
          {"num_experts_per_tok", 1}, {"rms_norm_eps", 1e-5},         {"sliding_window", nullptr}};
}

void mixtral_weights(const fs::path& path) {
  const int64_t C = 8, F = 16, V = 16, HS = 4, NH = 2, NKV = 1, E = 2;
  std::vector<st::TensorSpec> specs;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) { specs.push_back({n, st::DType::F32, shape}); };
  add("model.embed_tokens.weight", {V, C}), add("model.norm.weight", {C}), add("lm_head.weight", {V, C});
  const std::string l = "model.layers.0.";
  add(l + "input_layernorm.weight", {C}), add(l + "post_attention_layernorm.weight", {C});
  add(l + "self_attn.q_proj.weight", {NH * HS, C}), add(l + "self_attn.k_proj.weight", {NKV * HS, C});
  add(l + "self_attn.v_proj.weight", {NKV * HS, C}), add(l + "self_attn.o_proj.weight", {C, NH * HS});
  add(l + "block_sparse_moe.gate.weight", {E, C});
  for (int j = 0; j < E; ++j) {
    const std::string e = l + "block_sparse_moe.experts." + std::to_string(j) + ".";
    add(e + "w1.weight", {F, C}), add(e + "w3.weight", {F, C}), add(e + "w2.weight", {C, F});
  }
  safetensors_file(path, specs);
}

std::vector<std::string> hf_seeds(const fs::path& dir) {
  const int64_t C = 8, F = 32, V = 16, P = 8;
  std::vector<st::TensorSpec> specs = {{"wte.weight", st::DType::F32, {V, C}}, {"wpe.weight", st::DType::F32, {P, C}}};
  auto add = [&](const std::string& n, std::vector<int64_t> shape) { specs.push_back({n, st::DType::F32, shape}); };
  add("h.0.ln_1.weight", {C}), add("h.0.ln_1.bias", {C});
  add("h.0.attn.c_attn.weight", {C, 3 * C}), add("h.0.attn.c_attn.bias", {3 * C});
  add("h.0.attn.c_proj.weight", {C, C}), add("h.0.attn.c_proj.bias", {C});
  add("h.0.ln_2.weight", {C}), add("h.0.ln_2.bias", {C});
  add("h.0.mlp.c_fc.weight", {C, F}), add("h.0.mlp.c_fc.bias", {F});
  add("h.0.mlp.c_proj.weight", {F, C}), add("h.0.mlp.c_proj.bias", {C});
  add("ln_f.weight", {C}), add("ln_f.bias", {C});
  safetensors_file(dir / "model.safetensors", specs);
  fs::create_directories(dir / "mixtral");
  mixtral_weights(dir / "mixtral" / "model.safetensors");
  json pretty = tiny_gpt2_config();
  pretty["n_inner"] = nullptr;
  pretty["initializer_range"] = 0.02;
  return {tiny_gpt2_config().dump(), pretty.dump(2), tiny_mixtral_config().dump()};
}

// The weights beside the config: the Mixtral ones when the input names that family anywhere.
void hf_run(const std::string& input, const fs::path& dir, const fs::path& in) {
  const fs::path hf = in / "hf";
  fs::create_directories(hf);
  const bool mixtral = input.find("mixtral") != std::string::npos;
  fs::create_hard_link(mixtral ? dir / "mixtral" / "model.safetensors" : dir / "model.safetensors",
                       hf / "model.safetensors");
  write_file(hf / "config.json", input);
  hf::FromHfOptions o;
  o.hf_dir = hf.string();
  o.save_dir = (in / "ckpt").string();
  hf::convert_from_hf(o);
}

// ---- pretrain_gpt's command line and --config ----
const std::vector<std::string> kMinimalArgs = {"--num-layers",
                                               "2",
                                               "--hidden-size",
                                               "64",
                                               "--num-attention-heads",
                                               "4",
                                               "--seq-length",
                                               "32",
                                               "--max-position-embeddings",
                                               "64",
                                               "--micro-batch-size",
                                               "2",
                                               "--train-iters",
                                               "10",
                                               "--lr",
                                               "1e-3",
                                               "--mock-data"};

void parse_args(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"pretrain_gpt"};
  for (const auto& a : args) argv.push_back(a.c_str());
  (void)parse_train_args(static_cast<int>(argv.size()), argv.data(), 1);
}

// Refusals of the command line name the flag ("--lr ...") or the app.
bool names_flag(const std::string& message, const fs::path& in) {
  return message.find("--") != std::string::npos || message.find("pretrain_gpt") != std::string::npos ||
         message.find(in.string()) != std::string::npos;
}

// A target whose input is JSON (or holds JSON): the JSON tokens plus the format's own keywords.
Target json_target(std::string name, decltype(Target::seeds) seeds, decltype(Target::run) run,
                   std::initializer_list<const char*> keywords = {}) {
  Target t{std::move(name), std::move(seeds), std::move(run), kJsonTokens, nullptr};
  for (const char* k : keywords) t.dictionary.push_back(k);
  return t;
}

}  // namespace

std::vector<Target> core_targets() {
  std::vector<Target> out;

  out.push_back(json_target(
      "safetensors", safetensors_seeds, safetensors_run,
      {"\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"F32\"", "\"BF16\"", "\"I64\"", "\"__metadata__\""}));
  out.push_back(
      json_target("safetensors_index", index_seeds, index_run,
                  {"\"weight_map\"", "\"metadata\"", "\"total_size\"", "\"model.safetensors\"", "\"../x\"", "\"/\""}));
  out.push_back(json_target("checkpoint_metadata", metadata_seeds, metadata_run));

  Target tracker;
  tracker.name = "checkpoint_tracker";
  tracker.seeds = [](const fs::path&) { return std::vector<std::string>{"100", "release\n", "0", " 42\r\n"}; };
  tracker.run = [](const std::string& input, const fs::path&, const fs::path& in) {
    write_file(in / "latest_checkpointed_iteration.txt", input);
    const auto step = checkpoint::read_tracker(in.string());
    if (!step) throw Violation("the tracker file exists but read_tracker says there is none");
    if (!step->release && step->iteration < 0) throw Violation(fmt::format("iteration {}", step->iteration));
  };
  tracker.dictionary = {"release", "\n", " ", "-", "+", "0x", "e3", "\t"};
  out.push_back(tracker);

  out.push_back(json_target("checkpoint_tensors", checkpoint_tensor_seeds, checkpoint_tensors_run,
                            {"global_shape", "blocks", "\\\"", "[[0, 0, 1]]", "[-1]"}));
  out.push_back(
      json_target("hf_config", hf_seeds, hf_run,
                  {"\"llama\"", "\"gpt_neox\"", "\"gptj\"", "\"mixtral\"", "\"n_layer\"", "\"n_inner\"",
                   "\"rotary_dim\"", "\"num_key_value_heads\"", "\"rope_scaling\"", "\"num_hidden_layers\"",
                   "\"num_local_experts\"", "\"num_experts_per_tok\"", "\"head_dim\"", "\"qwen2\"", "\"qwen2_moe\"",
                   "\"num_experts\"", "\"mlp_only_layers\"", "\"decoder_sparse_step\"", "\"use_sliding_window\""}));

  Target yaml;
  yaml.name = "yaml_config";
  yaml.seeds = [](const fs::path&) {
    return std::vector<std::string>{
        "num_layers: 2\nhidden-size: 64\nnum_attention_heads: 4\nseq_length: 32\nmax_position_embeddings: 64\n"
        "micro_batch_size: 2\ntrain_iters: 10\nlr: 1.0e-3\nmock_data: true\n",
        "# a comment\nnum-layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nseq_length: 32\n"
        "max_position_embeddings: 64\nmicro_batch_size: 2\nglobal_batch_size: 8\ntrain_iters: 10\nlr: 3.0e-4\n"
        "min_lr: 3.0e-5\nlr_decay_style: cosine\nlr_warmup_iters: 2\nmock_data: true\nswiglu: true\n"
        "rampup_batch_size: [2, 2, 100]\nweight_decay:\n",
    };
  };
  yaml.run = [](const std::string& input, const fs::path&, const fs::path& in) {
    write_file(in / "run.yaml", input);
    parse_args({"--config", (in / "run.yaml").string()});
  };
  yaml.dictionary = {": ",  "- ",    "\n",     "  ",        "[",  "]",    "{",        "}", ",",
                     "&a ", "*a",    "!!str ", "!!binary ", "? ", "|",    ">",        "'", "\"",
                     "#",   "---\n", "...\n",  "<<: ",      "~",  "null", "config: x"};
  yaml.names_source = names_flag;
  out.push_back(yaml);

  Target cl;
  cl.name = "command_line";
  cl.seeds = [](const fs::path&) {
    auto joined = [](const std::vector<std::string>& args) {
      std::string s;
      for (const auto& a : args) s += a + '\0';
      return s;
    };
    std::vector<std::string> more = kMinimalArgs;
    for (const char* a : {"--global-batch-size",
                          "8",
                          "--rampup-batch-size",
                          "2",
                          "2",
                          "100",
                          "--lr-decay-style",
                          "cosine",
                          "--lr-warmup-iters=2",
                          "--min-lr",
                          "1e-4",
                          "--clip-grad",
                          "1.0",
                          "--bf16",
                          "--seed",
                          "7",
                          "--split",
                          "98,2,0",
                          "--log-interval",
                          "5",
                          "--vocab-size",
                          "100"})
      more.push_back(a);
    return std::vector<std::string>{joined(kMinimalArgs), joined(more)};
  };
  cl.run = [](const std::string& input, const fs::path&, const fs::path&) {
    std::vector<std::string> args;
    size_t at = 0;
    for (size_t nul; (nul = input.find('\0', at)) != std::string::npos; at = nul + 1)
      args.push_back(input.substr(at, nul - at));
    if (at < input.size()) args.push_back(input.substr(at));
    parse_args(args);
  };
  cl.dictionary = {std::string("\0", 1),
                   "--",
                   "=",
                   "-h",
                   "--lr",
                   "--num-layers",
                   "--config",
                   "--data-path",
                   "--tensor-model-parallel-size",
                   "--fp16",
                   "--train-samples",
                   "--list-flags",
                   "-"};
  cl.names_source = names_flag;
  out.push_back(cl);
  return out;
}

}  // namespace gptrain::fuzz
