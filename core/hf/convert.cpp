#include "core/hf/convert.h"

#include "core/checkpoint/model_json.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/hf/adapter.h"
#include "core/hf/adapter_util.h"
#include "core/hf/family.h"
#include "core/hf/stores.h"
#include "core/hf/tokenizer_files.h"
#include "core/model/param_layout.h"
#include "core/safetensors/sharded.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/sentencepiece_tokenizer.h"
#include "data/tokenizer/tiktoken_tokenizer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace gptrain::hf {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const char* torch_dtype_name(safetensors::DType t) {
  switch (t) {
    case safetensors::DType::F32: return "float32";
    case safetensors::DType::BF16: return "bfloat16";
    case safetensors::DType::F16: return "float16";
    default: fail("--dtype: only fp32, bf16 and fp16 outputs are supported");
  }
}

// Writes into a sibling temp directory; put_in_place() swaps it in for `final_dir`.
class StagingDir {
 public:
  explicit StagingDir(std::string final_dir) : final_(std::move(final_dir)) {
    while (!final_.empty() && final_.back() == '/') final_.pop_back();
    if (final_.empty()) fail("--output: empty path");
    if (fs::exists(final_) && !fs::is_directory(final_)) fail("--output {}: exists and is not a directory", final_);
    if (fs::is_directory(final_) && !fs::is_empty(final_) && !fs::exists(fs::path(final_) / "config.json")) {
      const std::string ckpt = checkpoint::training_checkpoint_contents(final_);
      checkpoint::refuse_to_replace(
          "--output", final_,
          ckpt.empty() ? "a non-empty directory that is not a Hugging Face model directory"
                       : "a non-empty directory that is not a Hugging Face model directory: it holds a training "
                         "checkpoint (" +
                             ckpt + ")");
    }
    tmp_ = fmt::format("{}.tmp.{}", final_, ::getpid());
    fs::remove_all(tmp_);
    std::error_code ec;
    fs::create_directories(tmp_, ec);
    if (ec) fail("--output {}: cannot create {}: {}", final_, tmp_, ec.message());
  }
  ~StagingDir() {
    std::error_code ec;
    if (!done_) fs::remove_all(tmp_, ec);
  }
  const std::string& path() const { return tmp_; }
  void put_in_place() {
    std::error_code ec;
    std::string old;
    if (fs::exists(final_)) {
      old = fmt::format("{}.old.{}", final_, ::getpid());
      fs::rename(final_, old, ec);
      if (ec) fail("--output {}: cannot move the previous contents aside: {}", final_, ec.message());
    }
    fs::rename(tmp_, final_, ec);
    if (ec) fail("--output {}: cannot rename {} into place: {}", final_, tmp_, ec.message());
    done_ = true;
    if (!old.empty()) fs::remove_all(old, ec);
  }

 private:
  std::string final_, tmp_;
  bool done_ = false;
};

std::string arg_string(const json& args, const char* key) {
  if (args.contains(key) && args[key].is_string()) return args[key].get<std::string>();
  return "";
}

// TikTokenizer's options as pretrain_gpt recorded its flags (unset ones are null: the defaults).
TikTokenizerOptions tiktoken_options(const json& args, const std::string& model) {
  TikTokenizerOptions o;
  o.path = model;
  const std::string pattern = arg_string(args, "tiktoken_pattern");
  if (!pattern.empty() && pattern != "v1" && pattern != "v2")
    fail("checkpoint args: tiktoken_pattern {}: expected v1 or v2", pattern);
  if (pattern == "v1") o.pattern = TiktokenPattern::kV1;
  if (args.contains("vocab_size") && args["vocab_size"].is_number_integer()) o.vocab_size = args["vocab_size"];
  if (args.contains("tiktoken_num_special_tokens") && args["tiktoken_num_special_tokens"].is_number_integer())
    o.num_special_tokens = args["tiktoken_num_special_tokens"];
  if (args.contains("tiktoken_special_tokens") && args["tiktoken_special_tokens"].is_array() &&
      !args["tiktoken_special_tokens"].empty())
    o.special_tokens = args["tiktoken_special_tokens"].get<std::vector<std::string>>();
  return o;
}

// A Llama tokenizer directory (tokenizer.model with no tokenizer.json, or a LlamaTokenizer(Fast) class in
// tokenizer_config.json): the SentencePiece type that adds BOS as the config says (Llama2Tokenizer, or
// GPTSentencePieceTokenizer with add_bos_token false), SentencePieceTokenizer where <EOD> is the EOS
// token (as convert_to_hf writes that type); "" for other directories.
std::string sentencepiece_type_of(const fs::path& hf_dir) {
  if (!fs::is_regular_file(hf_dir / "tokenizer.model")) return "";
  json cfg = json::object();
  if (std::ifstream f(hf_dir / "tokenizer_config.json"); f) cfg = json::parse(f, nullptr, false);
  if (!cfg.is_object()) cfg = json::object();
  const std::string cls = cfg.value("tokenizer_class", "");
  if (fs::is_regular_file(hf_dir / "tokenizer.json") && cls.rfind("LlamaTokenizer", 0) != 0) return "";
  if (cfg.contains("eos_token") && cfg["eos_token"] == "<EOD>") return "SentencePieceTokenizer";
  return cfg.value("add_bos_token", true) ? "Llama2Tokenizer" : "GPTSentencePieceTokenizer";
}

}  // namespace

ConvertStats convert_to_hf(const ToHfOptions& o) {
  const auto ck = checkpoint::Checkpoint::open(o.load_dir, o.step);
  const std::string meta_where = ck.dir() + "/metadata.json";
  const auto desc = checkpoint::model_from_json(ck.metadata().model, meta_where);
  const std::string family = family_of(desc);
  const Adapter& adapter = adapter_for_family(family);
  log::info("convert_to_hf: {} (iteration {}, layout tp {} pp {}), family {}", ck.dir(), ck.metadata().iteration,
            ck.metadata().layout.tp, ck.metadata().layout.pp, family);

  // Resolve the tokenizer before any heavy work so a missing file fails fast.
  std::string vocab = o.vocab_file, merges = o.merge_file, tokenizer_dir = o.tokenizer_dir;
  if (!o.no_tokenizer && tokenizer_dir.empty()) {
    if (desc.tokenizer_type == "GPT2BPETokenizer") {
      if (vocab.empty()) vocab = arg_string(ck.metadata().args, "vocab_file");
      if (merges.empty()) merges = arg_string(ck.metadata().args, "merge_file");
      // pretrain_gpt records unset flags as null: a run without --vocab-file/--merge-file (and without
      // --vocab-size) trained on the GPT-2 files shipped in data/gpt2/. Other checkpoints (e.g. from
      // convert_from_hf) do not say which tokenizer they had, and need --vocab-file.
      const json& args = ck.metadata().args;
      const auto is_null = [&](const char* k) { return args.contains(k) && args[k].is_null(); };
      if (vocab.empty() && merges.empty() && is_null("vocab_file") && is_null("merge_file") &&
          (!args.contains("vocab_size") || args["vocab_size"].is_null())) {
        vocab = default_gpt2_vocab_path();
        merges = default_gpt2_merges_path();
      }
      if (vocab.empty() || !fs::is_regular_file(vocab))
        fail("GPT-2 vocabulary not found ({}): pass --vocab-file (e.g. data/gpt2/vocab.json)",
             vocab.empty() ? "not in the checkpoint args" : vocab);
      if (merges.empty() || !fs::is_regular_file(merges))
        fail("GPT-2 merges not found ({}): pass --merge-file (e.g. data/gpt2/merges.txt)",
             merges.empty() ? "not in the checkpoint args" : merges);
    } else {
      tokenizer_dir = arg_string(ck.metadata().args, "tokenizer_model");
      if (tokenizer_dir.empty() || !fs::exists(tokenizer_dir))
        fail(
            "{}: tokenizer_type {} with no tokenizer directory or file in the args ({}); pass --tokenizer-dir <HF "
            "tokenizer "
            "dir> or --no-tokenizer",
            meta_where, desc.tokenizer_type, tokenizer_dir.empty() ? "no tokenizer_model" : tokenizer_dir);
    }
  }

  // The three SentencePiece types record their .model file as tokenizer_model.
  std::unique_ptr<SentencePieceTokenizer> sp;
  if (!o.no_tokenizer && o.tokenizer_dir.empty() && is_sentencepiece_type(desc.tokenizer_type)) {
    sp = std::make_unique<SentencePieceTokenizer>(desc.tokenizer_type, tokenizer_dir);
  }

  // TikTokenizer: rebuilt from the recorded flags and written as a tokenizer.json.
  std::unique_ptr<TikTokenizer> tik;
  if (!o.no_tokenizer && o.tokenizer_dir.empty() && desc.tokenizer_type == "TikTokenizer")
    tik = std::make_unique<TikTokenizer>(tiktoken_options(ck.metadata().args, tokenizer_dir));

  json config = adapter.hf_config(desc);
  if (tik) {
    config["eos_token_id"] = tik->eod_id();
    config["bos_token_id"] = tik->bos_id().value_or(tik->eod_id());
  }
  if (sp) {
    config["eos_token_id"] = sp->eod_id();
    config["bos_token_id"] = sp->bos_id().value_or(sp->eod_id());
  }
  // A byte-level BPE tokenizer.json gptrain reads says its own BOS/EOS ids; other tokenizer directories
  // (SentencePiece, ...) keep the family's.
  if (!o.no_tokenizer && !tokenizer_dir.empty() && desc.tokenizer_type == "HuggingFaceTokenizer") {
    try {
      const HuggingFaceTokenizer tok(tokenizer_dir);
      config["eos_token_id"] = tok.eod_id();
      config["bos_token_id"] = tok.bos_id().value_or(tok.eod_id());
    } catch (const Error& e) {
      log::info("convert_to_hf: bos/eos ids from the model family ({})", e.what());
    }
  }
  config["torch_dtype"] = torch_dtype_name(o.dtype);
  config["transformers_version"] = "4.46.3";
  CheckpointStore store(ck, desc.config.apply_layernorm_1p);
  const auto outs = adapter.to_hf(desc, store);

  StagingDir staging(o.output_dir);
  std::vector<safetensors::TensorSpec> specs;
  for (const auto& t : outs) specs.push_back({t.name, o.dtype, t.shape});
  safetensors::ShardedWriter writer(staging.path(), specs, o.max_shard_bytes);
  ConvertStats st;
  const auto t0 = Clock::now();
  for (const auto& t : outs) {
    const auto v = t.produce();
    writer.write_f32(t.name, v.data(), v.size());
    st.tensors += 1;
    st.tensor_bytes += specs[static_cast<std::size_t>(st.tensors - 1)].nbytes();
  }
  writer.finish();
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  write_json(fs::path(staging.path()) / "config.json", config);
  json gen = {{"_from_model_config", true}, {"transformers_version", "4.46.3"}};
  if (config.contains("bos_token_id")) gen["bos_token_id"] = config["bos_token_id"];
  if (config.contains("eos_token_id")) gen["eos_token_id"] = config["eos_token_id"];
  write_json(fs::path(staging.path()) / "generation_config.json", gen);
  if (!o.no_tokenizer) {
    if (tik)
      write_tiktoken_tokenizer(*tik, staging.path(), desc.config.max_position_embeddings);
    else if (sp)
      write_sentencepiece_tokenizer(*sp, staging.path(), desc.config.max_position_embeddings);
    else if (!tokenizer_dir.empty())
      write_hf_tokenizer(tokenizer_dir, staging.path(), desc.config.max_position_embeddings);
    else
      write_gpt2_tokenizer(staging.path(), vocab, merges, desc.config.max_position_embeddings);
  }
  staging.put_in_place();
  log::info("convert_to_hf: wrote {} tensors ({:.1f} MB as {}) in {} file(s) to {} in {:.2f} s: {:.1f} MB/s",
            st.tensors, double(st.tensor_bytes) / 1e6, safetensors::dtype_name(o.dtype), writer.num_shards(),
            o.output_dir, st.seconds, st.mb_per_s());
  return st;
}

ConvertStats convert_from_hf(const FromHfOptions& o) {
  // A training checkpoint there is never replaced; a new iteration beside it is the user's explicit choice.
  if (const std::string held = checkpoint::training_checkpoint_contents(o.save_dir); !held.empty()) {
    const bool new_iteration = !o.step.release && !fs::exists(fs::path(o.save_dir) / o.step.dir_name());
    if (!new_iteration)
      checkpoint::refuse_to_replace(
          "--save", o.save_dir, "holds a training checkpoint (" + held + ")",
          o.step.release ? " (pass --iteration N with an iteration not there yet, or another --save directory)"
                         : fmt::format(" ({} exists; pass an iteration not there yet, or another --save directory)",
                                       o.step.dir_name()));
  }
  const fs::path config_path = fs::path(o.hf_dir) / "config.json";
  if (!fs::is_regular_file(config_path))
    fail("--load {}: no config.json (expected a Hugging Face model directory)", o.hf_dir);
  json config;
  try {
    std::ifstream f(config_path);
    config = json::parse(f);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", config_path.string(), e.what());
  }
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    fail("{}: no \"model_type\" string", config_path.string());
  const Adapter* found = nullptr;
  try {
    found = &adapter_for_model_type(config["model_type"].get<std::string>());
  } catch (const Error& e) {
    fail("{}: {}", config_path.string(), e.what());
  }
  const Adapter& adapter = *found;
  auto desc = adapter.from_hf_config(config, config_path.string());
  ModelConfig& c = desc.config;
  if (o.tensor_model_parallel_size < 1)
    fail("--tensor-model-parallel-size must be >= 1 (got {})", o.tensor_model_parallel_size);
  try {
    // The model as one stage of a run of that many TP ranks: its sizes must split over them, and the
    // vocabulary is padded for them. The checkpoint is written whole; loaders slice it for their layout.
    StageConfig whole{c};
    whole.tp_size = o.tensor_model_parallel_size;
    whole.finalize(o.make_vocab_size_divisible_by);
    c = static_cast<const ModelConfig&>(whole);
  } catch (const Error& e) {
    // finalize speaks of pretrain_gpt's flags; here the sizes came from config.json.
    fail("{}: the model it describes is not valid: {}", config_path.string(), e.what());
  }
  c.apply_layernorm_1p = o.apply_layernorm_1p;

  const safetensors::WeightSet ws(o.hf_dir);
  // Every layer has tensors of its own: a layer count beyond the tensor count is a damaged config, refused
  // before the adapter lists (and the writer declares) tensors for each of those layers.
  if (static_cast<size_t>(c.num_layers) > ws.names().size())
    fail("{}: {} layers, but {} holds only {} tensors", config_path.string(), c.num_layers, o.hf_dir,
         ws.names().size());
  WeightSetStore store(ws);
  auto outs = adapter.from_hf(desc, store);
  // Hugging Face stores gamma; a --apply-layernorm-1p model stores gamma - 1.
  if (c.apply_layernorm_1p)
    for (auto& t : outs)
      if (is_norm_weight(t.name))
        t.produce = [gamma = std::move(t.produce)] {
          std::vector<float> v = gamma();
          for (float& x : v) x -= 1.0f;
          return v;
        };

  const std::string tmp = checkpoint::begin_save(o.save_dir, o.step);
  ConvertStats st;
  try {
    std::vector<safetensors::TensorSpec> specs;
    for (const auto& t : outs) specs.push_back({t.name, safetensors::DType::F32, t.shape});
    safetensors::Writer writer((fs::path(tmp) / checkpoint::model_file_name(0, 0)).string(), specs);
    const auto t0 = Clock::now();
    for (const auto& t : outs) {
      const auto v = t.produce();
      writer.write_f32(t.name, v.data(), v.size());
      st.tensors += 1;
      st.tensor_bytes += v.size() * sizeof(float);
    }
    // Every HF tensor must have gone somewhere, or the conversion silently loses weights.
    std::vector<std::string> unread;
    for (const auto& n : ws.names())
      if (!store.read_names().count(n) && !adapter.ignorable_hf_tensor(n, desc)) unread.push_back(n);
    if (!unread.empty())
      fail(
          "{}: {} tensor(s) do not fit the {} layout the config describes, e.g. \"{}\" (wrong model_type, or a variant "
          "not supported)",
          o.hf_dir, unread.size(), adapter.model_type(), unread.front());
    writer.finish();
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    // Tokenizer: GPT-2 BPE files when the directory has them (or they are given), else the HF
    // tokenizer directory itself.
    const fs::path hf_abs = fs::absolute(o.hf_dir);
    std::string vocab = o.vocab_file, merges = o.merge_file;
    if (vocab.empty() && fs::is_regular_file(hf_abs / "vocab.json") && fs::is_regular_file(hf_abs / "merges.txt")) {
      vocab = (hf_abs / "vocab.json").string();
      merges = (hf_abs / "merges.txt").string();
    }
    const bool has_hf_tokenizer =
        fs::is_regular_file(hf_abs / "tokenizer.json") || fs::is_regular_file(hf_abs / "tokenizer.model");
    const std::string sp_type = sentencepiece_type_of(hf_abs);
    if (!vocab.empty() && !merges.empty())
      desc.tokenizer_type = "GPT2BPETokenizer";
    else if (!sp_type.empty())
      desc.tokenizer_type = sp_type;
    else if (has_hf_tokenizer)
      desc.tokenizer_type = "HuggingFaceTokenizer";
    checkpoint::Metadata meta;
    meta.iteration = o.step.release ? 0 : o.step.iteration;
    meta.model = checkpoint::model_to_json(desc);
    meta.args = {{"num_layers", c.num_layers},
                 {"hidden_size", c.hidden_size},
                 {"num_attention_heads", c.num_attention_heads},
                 {"num_query_groups", c.num_query_groups},
                 {"kv_channels", c.kv_channels},
                 {"ffn_hidden_size", c.ffn_hidden_size},
                 {"seq_length", c.seq_length},
                 {"max_position_embeddings", c.max_position_embeddings},
                 {"make_vocab_size_divisible_by", o.make_vocab_size_divisible_by},
                 {"apply_layernorm_1p", c.apply_layernorm_1p},
                 {"tokenizer_type", desc.tokenizer_type},
                 {"converted_from", hf_abs.string()}};
    if (desc.tokenizer_type == "GPT2BPETokenizer") {
      if (!vocab.empty()) meta.args["vocab_file"] = vocab;
      if (!merges.empty()) meta.args["merge_file"] = merges;
    } else if (!sp_type.empty()) {
      meta.args["tokenizer_model"] = (hf_abs / "tokenizer.model").string();
    } else if (has_hf_tokenizer) {
      meta.args["tokenizer_model"] = hf_abs.string();
    }
    checkpoint::write_metadata(tmp, meta);
    checkpoint::commit_save(o.save_dir, o.step);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  log::info("convert_from_hf: wrote {} tensors ({:.1f} MB fp32) to {}/{} in {:.2f} s: {:.1f} MB/s", st.tensors,
            double(st.tensor_bytes) / 1e6, o.save_dir, o.step.dir_name(), st.seconds, st.mb_per_s());
  return st;
}

}  // namespace gptrain::hf
