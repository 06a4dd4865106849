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

// ---- shared by both directions ----

std::vector<safetensors::TensorSpec> tensor_specs(const std::vector<OutTensor>& outs, safetensors::DType dtype) {
  std::vector<safetensors::TensorSpec> specs;
  for (const auto& t : outs) specs.push_back({t.name, dtype, t.shape});
  return specs;
}

// Produces and writes each tensor in turn (one in memory at a time), counting them into st. specs: the
// writer's, in the order of outs.
template <class TensorWriter>
void stream_tensors(const std::vector<OutTensor>& outs, const std::vector<safetensors::TensorSpec>& specs,
                    TensorWriter& writer, ConvertStats& st) {
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto v = outs[i].produce();
    writer.write_f32(outs[i].name, v.data(), v.size());
    st.tensors += 1;
    st.tensor_bytes += specs[i].nbytes();
  }
}

// ---- gptrain -> HF ----

// The tokenizer a converted model ships: GPT-2 BPE files, a tokenizer directory to copy, or one rebuilt
// from the checkpoint's recorded flags (SentencePiece, TikToken).
struct ToHfTokenizer {
  std::string vocab, merges, dir;
  std::unique_ptr<SentencePieceTokenizer> sp;
  std::unique_ptr<TikTokenizer> tik;
};

// pretrain_gpt records unset flags as null: a run without --vocab-file/--merge-file (and without
// --vocab-size) trained on the GPT-2 files shipped in data/gpt2/. Other checkpoints (e.g. from
// convert_from_hf) do not say which tokenizer they had, and need --vocab-file.
bool trained_on_shipped_gpt2_files(const json& args) {
  const auto is_null = [&](const char* k) { return args.contains(k) && args[k].is_null(); };
  return is_null("vocab_file") && is_null("merge_file") &&
         (!args.contains("vocab_size") || args["vocab_size"].is_null());
}

// The GPT-2 files of a GPT2BPETokenizer checkpoint: the options', else those its args name, else (a run
// that named none) the files shipped in data/gpt2/. Fails naming the missing one.
void find_gpt2_files(ToHfTokenizer& tok, const json& args) {
  if (tok.vocab.empty()) tok.vocab = arg_string(args, "vocab_file");
  if (tok.merges.empty()) tok.merges = arg_string(args, "merge_file");
  if (tok.vocab.empty() && tok.merges.empty() && trained_on_shipped_gpt2_files(args)) {
    tok.vocab = default_gpt2_vocab_path();
    tok.merges = default_gpt2_merges_path();
  }
  if (tok.vocab.empty() || !fs::is_regular_file(tok.vocab))
    fail("GPT-2 vocabulary not found ({}): pass --vocab-file (e.g. data/gpt2/vocab.json)",
         tok.vocab.empty() ? "not in the checkpoint args" : tok.vocab);
  if (tok.merges.empty() || !fs::is_regular_file(tok.merges))
    fail("GPT-2 merges not found ({}): pass --merge-file (e.g. data/gpt2/merges.txt)",
         tok.merges.empty() ? "not in the checkpoint args" : tok.merges);
}

// Resolved before any heavy work, so that a missing file fails fast.
ToHfTokenizer resolve_tokenizer(const ToHfOptions& o, const checkpoint::Checkpoint& ck,
                                const checkpoint::ModelDescription& desc, const std::string& meta_where) {
  ToHfTokenizer tok{o.vocab_file, o.merge_file, o.tokenizer_dir, nullptr, nullptr};
  const json& args = ck.metadata().args;
  if (!o.no_tokenizer && tok.dir.empty()) {
    if (desc.tokenizer_type == "GPT2BPETokenizer") {
      find_gpt2_files(tok, args);
    } else {
      tok.dir = arg_string(args, "tokenizer_model");
      if (tok.dir.empty() || !fs::exists(tok.dir))
        fail(
            "{}: tokenizer_type {} with no tokenizer directory or file in the args ({}); pass --tokenizer-dir <HF "
            "tokenizer dir> or --no-tokenizer",
            meta_where, desc.tokenizer_type, tok.dir.empty() ? "no tokenizer_model" : tok.dir);
    }
  }
  // The three SentencePiece types record their .model file as tokenizer_model.
  const bool rebuilt = !o.no_tokenizer && o.tokenizer_dir.empty();
  if (rebuilt && is_sentencepiece_type(desc.tokenizer_type))
    tok.sp = std::make_unique<SentencePieceTokenizer>(desc.tokenizer_type, tok.dir);
  // TikTokenizer: rebuilt from the recorded flags and written as a tokenizer.json.
  if (rebuilt && desc.tokenizer_type == "TikTokenizer")
    tok.tik = std::make_unique<TikTokenizer>(tiktoken_options(args, tok.dir));
  return tok;
}

// config.json: the family's, with the tokenizer's BOS/EOS ids where it says them.
json hf_model_config(const Adapter& adapter, const checkpoint::ModelDescription& desc, const ToHfTokenizer& tok,
                     const ToHfOptions& o) {
  json config = adapter.hf_config(desc);
  const auto take_ids = [&](const auto& t) {  // BOS falls back to the end-of-document token
    config["eos_token_id"] = t.eod_id();
    config["bos_token_id"] = t.bos_id().value_or(t.eod_id());
  };
  if (tok.tik) take_ids(*tok.tik);
  if (tok.sp) take_ids(*tok.sp);
  // A byte-level BPE tokenizer.json gptrain reads says its own BOS/EOS ids; other tokenizer directories
  // (SentencePiece, ...) keep the family's.
  if (!o.no_tokenizer && !tok.dir.empty() && desc.tokenizer_type == "HuggingFaceTokenizer") {
    try {
      take_ids(HuggingFaceTokenizer(tok.dir));
    } catch (const Error& e) {
      log::info("convert_to_hf: bos/eos ids from the model family ({})", e.what());
    }
  }
  config["torch_dtype"] = torch_dtype_name(o.dtype);
  config["transformers_version"] = "4.46.3";
  return config;
}

// config.json, generation_config.json (the same BOS/EOS ids) and, unless --no-tokenizer, the tokenizer.
void write_hf_side_files(const std::string& dir, const json& config, const ToHfTokenizer& tok,
                         const checkpoint::ModelDescription& desc, bool no_tokenizer) {
  write_json(fs::path(dir) / "config.json", config);
  json gen = {{"_from_model_config", true}, {"transformers_version", "4.46.3"}};
  if (config.contains("bos_token_id")) gen["bos_token_id"] = config["bos_token_id"];
  if (config.contains("eos_token_id")) gen["eos_token_id"] = config["eos_token_id"];
  write_json(fs::path(dir) / "generation_config.json", gen);
  if (no_tokenizer) return;
  const int max_positions = desc.config.max_position_embeddings;
  if (tok.tik)
    write_tiktoken_tokenizer(*tok.tik, dir, max_positions);
  else if (tok.sp)
    write_sentencepiece_tokenizer(*tok.sp, dir, max_positions);
  else if (!tok.dir.empty())
    write_hf_tokenizer(tok.dir, dir, max_positions);
  else
    write_gpt2_tokenizer(dir, tok.vocab, tok.merges, max_positions);
}

// ---- HF -> gptrain ----

// A training checkpoint in --save is never replaced; a new iteration beside it is the user's explicit choice.
void refuse_to_replace_training_checkpoint(const FromHfOptions& o) {
  const std::string held = checkpoint::training_checkpoint_contents(o.save_dir);
  if (held.empty()) return;
  const bool new_iteration = !o.step.release && !fs::exists(fs::path(o.save_dir) / o.step.dir_name());
  if (!new_iteration)
    checkpoint::refuse_to_replace(
        "--save", o.save_dir, "holds a training checkpoint (" + held + ")",
        o.step.release ? " (pass --iteration N with an iteration not there yet, or another --save directory)"
                       : fmt::format(" ({} exists; pass an iteration not there yet, or another --save directory)",
                                     o.step.dir_name()));
}

json read_hf_config(const fs::path& config_path, const std::string& hf_dir) {
  if (!fs::is_regular_file(config_path))
    fail("--load {}: no config.json (expected a Hugging Face model directory)", hf_dir);
  json config;
  try {
    std::ifstream f(config_path);
    config = json::parse(f);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", config_path.string(), e.what());
  }
  return config;
}

// The model family of a HF directory: the adapter of its config's model_type.
const Adapter& hf_family_adapter(const json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    fail("{}: no \"model_type\" string", where);
  try {
    return adapter_for_model_type(config["model_type"].get<std::string>());
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
}

// The architecture config.json describes, finalized (the vocabulary padded for --tensor-model-parallel-size)
// but whole (TP 1): loaders slice the checkpoint for their layout.
checkpoint::ModelDescription hf_model_description(const Adapter& adapter, const json& config, const std::string& where,
                                                  const FromHfOptions& o) {
  auto desc = adapter.from_hf_config(config, where);
  ModelConfig& c = desc.config;
  if (o.tensor_model_parallel_size < 1)
    fail("--tensor-model-parallel-size must be >= 1 (got {})", o.tensor_model_parallel_size);
  try {
    // The model as one stage of a run of that many TP ranks: its sizes must split over them.
    StageConfig whole(c);
    whole.tp_size = o.tensor_model_parallel_size;
    whole.finalize(o.make_vocab_size_divisible_by);
    c = static_cast<const ModelConfig&>(whole);
  } catch (const Error& e) {
    // finalize speaks of pretrain_gpt's flags; here the sizes came from config.json.
    fail("{}: the model it describes is not valid: {}", where, e.what());
  }
  c.apply_layernorm_1p = o.apply_layernorm_1p;
  return desc;
}

// What a checkpoint's norm weights store: gamma - this (Megatron's zero-centred gamma with --apply-layernorm-1p).
float checkpoint_norm_weight_offset(const ModelConfig& c) { return c.apply_layernorm_1p ? 1.0f : 0.0f; }

// The norm weights among `outs` (gptrain names) moved by `shift`, from the HF family's offset to the checkpoint's.
void shift_norm_weights(std::vector<OutTensor>& outs, float shift) {
  if (shift == 0.0f) return;
  for (auto& t : outs)
    if (is_norm_weight(t.name))
      t.produce = [stored = std::move(t.produce), shift] {
        std::vector<float> v = stored();
        for (float& x : v) x += shift;
        return v;
      };
}

// Every HF tensor must have gone somewhere, or the conversion silently loses weights.
void check_every_tensor_read(const safetensors::WeightSet& ws, const WeightSetStore& store, const Adapter& adapter,
                             const checkpoint::ModelDescription& desc, const std::string& hf_dir) {
  std::vector<std::string> unread;
  for (const auto& n : ws.names())
    if (!store.read_names().count(n) && !adapter.ignorable_hf_tensor(n, desc)) unread.push_back(n);
  if (!unread.empty())
    fail(
        "{}: {} tensor(s) do not fit the {} layout the config describes, e.g. \"{}\" (wrong model_type, or a variant "
        "not supported)",
        hf_dir, unread.size(), adapter.model_type(), unread.front());
}

// The tokenizer of a HF directory: GPT-2 BPE files when it has them (or they are given), else a
// SentencePiece type, else the HF tokenizer directory itself; type "" when it has none.
struct HfDirTokenizer {
  std::string type, vocab, merges, sp_type;
  bool has_hf_tokenizer = false;
};

HfDirTokenizer find_hf_tokenizer(const fs::path& hf_abs, const FromHfOptions& o) {
  HfDirTokenizer t{"", o.vocab_file, o.merge_file, "", false};
  if (t.vocab.empty() && fs::is_regular_file(hf_abs / "vocab.json") && fs::is_regular_file(hf_abs / "merges.txt")) {
    t.vocab = (hf_abs / "vocab.json").string();
    t.merges = (hf_abs / "merges.txt").string();
  }
  t.has_hf_tokenizer =
      fs::is_regular_file(hf_abs / "tokenizer.json") || fs::is_regular_file(hf_abs / "tokenizer.model");
  t.sp_type = sentencepiece_type_of(hf_abs);
  if (!t.vocab.empty() && !t.merges.empty())
    t.type = "GPT2BPETokenizer";
  else if (!t.sp_type.empty())
    t.type = t.sp_type;
  else if (t.has_hf_tokenizer)
    t.type = "HuggingFaceTokenizer";
  return t;
}

// metadata.json of the converted checkpoint; desc takes the directory's tokenizer type (if it has one).
checkpoint::Metadata converted_metadata(checkpoint::ModelDescription& desc, const FromHfOptions& o) {
  const fs::path hf_abs = fs::absolute(o.hf_dir);
  const HfDirTokenizer tok = find_hf_tokenizer(hf_abs, o);
  if (!tok.type.empty()) desc.tokenizer_type = tok.type;
  const ModelConfig& c = desc.config;
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
    if (!tok.vocab.empty()) meta.args["vocab_file"] = tok.vocab;
    if (!tok.merges.empty()) meta.args["merge_file"] = tok.merges;
  } else if (!tok.sp_type.empty()) {
    meta.args["tokenizer_model"] = (hf_abs / "tokenizer.model").string();
  } else if (tok.has_hf_tokenizer) {
    meta.args["tokenizer_model"] = hf_abs.string();
  }
  return meta;
}

}  // namespace

ConvertStats convert_to_hf(const ToHfOptions& o) {
  const auto ck = checkpoint::Checkpoint::open(o.load_dir, o.step);
  const std::string meta_where = ck.dir() + "/metadata.json";
  const auto desc = checkpoint::model_from_json(ck.metadata().model, meta_where);
  const std::string family = family_of(desc);  // the family the checkpoint recorded (core/hf/family.h)
  const Adapter& adapter = adapter_for_family(family);
  log::info("convert_to_hf: {} (iteration {}, layout tp {} pp {}), family {}", ck.dir(), ck.metadata().iteration,
            ck.metadata().layout.tp, ck.metadata().layout.pp, family);
  const ToHfTokenizer tok = resolve_tokenizer(o, ck, desc, meta_where);
  const json config = hf_model_config(adapter, desc, tok, o);
  CheckpointStore store(ck, checkpoint_norm_weight_offset(desc.config) - adapter.hf_norm_weight_offset());
  const auto outs = adapter.to_hf(desc, store);

  StagingDir staging(o.output_dir);
  const std::vector<safetensors::TensorSpec> specs = tensor_specs(outs, o.dtype);
  safetensors::ShardedWriter writer(staging.path(), specs, o.max_shard_bytes);
  ConvertStats st;
  const auto t0 = Clock::now();
  stream_tensors(outs, specs, writer, st);
  writer.finish();
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  write_hf_side_files(staging.path(), config, tok, desc, o.no_tokenizer);
  staging.put_in_place();
  log::info("convert_to_hf: wrote {} tensors ({:.1f} MB as {}) in {} file(s) to {} in {:.2f} s: {:.1f} MB/s",
            st.tensors, double(st.tensor_bytes) / 1e6, safetensors::dtype_name(o.dtype), writer.num_shards(),
            o.output_dir, st.seconds, st.mb_per_s());
  return st;
}

ConvertStats convert_from_hf(const FromHfOptions& o) {
  refuse_to_replace_training_checkpoint(o);
  const fs::path config_path = fs::path(o.hf_dir) / "config.json";
  const json config = read_hf_config(config_path, o.hf_dir);
  const Adapter& adapter = hf_family_adapter(config, config_path.string());
  auto desc = hf_model_description(adapter, config, config_path.string(), o);

  const safetensors::WeightSet ws(o.hf_dir);
  // Every layer has tensors of its own: a layer count beyond the tensor count is a damaged config, refused
  // before the adapter lists (and the writer declares) tensors for each of those layers.
  if (static_cast<size_t>(desc.config.num_layers) > ws.names().size())
    fail("{}: {} layers, but {} holds only {} tensors", config_path.string(), desc.config.num_layers, o.hf_dir,
         ws.names().size());
  WeightSetStore store(ws);
  auto outs = adapter.from_hf(desc, store);
  shift_norm_weights(outs, adapter.hf_norm_weight_offset() - checkpoint_norm_weight_offset(desc.config));

  // Written into the iteration's temp directory, committed only whole.
  const std::string tmp = checkpoint::begin_save(o.save_dir, o.step);
  ConvertStats st;
  try {
    const std::vector<safetensors::TensorSpec> specs = tensor_specs(outs, safetensors::DType::F32);
    safetensors::Writer writer((fs::path(tmp) / checkpoint::model_file_name(0, 0)).string(), specs);
    const auto t0 = Clock::now();
    stream_tensors(outs, specs, writer, st);
    check_every_tensor_read(ws, store, adapter, desc, o.hf_dir);
    writer.finish();
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    checkpoint::write_metadata(tmp, converted_metadata(desc, o));
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
