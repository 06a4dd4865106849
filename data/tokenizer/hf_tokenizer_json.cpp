// tokenizer.json -> HfTokenizerTables; what is implemented and refused: hf_tokenizer_json.h.
#include "data/tokenizer/hf_tokenizer_json.h"

#include "core/common/error.h"
#include "data/tokenizer/tiktoken_pretokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gptrain {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The split patterns recognized, exactly as the files spell them (after JSON unescaping).
constexpr std::string_view kGpt2Pattern =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kLlama3Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kQwen2Pattern =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

json read_json(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open", path.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path.string(), e.what());
  }
}

struct Reader {
  std::string path;

  [[noreturn]] void refuse(const std::string& what) const {
    fail(
        "{}: {}; HuggingFaceTokenizer implements BPE tokenizer.json files: byte-level (GPT-2/NeoX/Llama-3 style: "
        "ByteLevel or Split+ByteLevel pre-tokenizer) and SentencePiece-converted (Llama-2/Mistral style: Metaspace "
        "or no pre-tokenizer, Prepend/Replace normalizers, byte fallback)",
        path, what);
  }
  static std::string type_of(const json& j) {
    return j.is_object() && j.contains("type") ? j["type"].dump() : j.dump();
  }
  // A field that must be absent, null, false, 0 or empty for the implemented behaviour.
  void require_off(const json& obj, const char* key, const std::string& where) const {
    if (!obj.contains(key)) return;
    const json& v = obj[key];
    const bool off = v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0) ||
                     (v.is_string() && v.get<std::string>().empty());
    if (!off) refuse(fmt::format("{} {} = {} is not implemented", where, key, v.dump()));
  }
  bool flag(const json& obj, const char* key, bool dflt) const {
    if (!obj.contains(key) || obj[key].is_null()) return dflt;
    if (!obj[key].is_boolean()) fail("{}: \"{}\" = {}: expected true or false", path, key, obj[key].dump());
    return obj[key].get<bool>();
  }
};

// The raw bytes of a token as the ByteLevel decoder gives them: each character mapped back through the
// byte alphabet, or the token's own UTF-8 bytes when a character is outside it.
std::string token_to_bytes(const std::string& spelled) {
  std::string bytes;
  return byte_level_to_bytes(spelled, bytes) ? bytes : spelled;
}

// The SentencePiece family's symbols: characters by their text, <0xNN> byte tokens, the unknown token.
void read_char_model(const Reader& r, const json& model, HfTokenizerTables& t,
                     const std::unordered_map<std::string, int32_t>& id_of) {
  t.char_vocab = id_of;
  int missing = 0;
  for (unsigned b = 0; b < 256; ++b) {
    const auto it = id_of.find(fmt::format("<0x{:02X}>", b));
    t.byte_fallback_ids[b] = it == id_of.end() ? -1 : it->second;
    missing += it == id_of.end();
  }
  // With some <0xNN> missing Hugging Face falls back to the unknown token for that character, and
  // orders a pending unknown token after the byte tokens that follow it; not implemented.
  if (t.byte_fallback && missing)
    r.refuse(
        fmt::format("model byte_fallback = true with {} of the 256 <0xNN> tokens missing is not implemented", missing));
  const json& unk = model.value("unk_token", json());
  if (unk.is_string()) {
    const auto it = id_of.find(unk.get<std::string>());
    if (it == id_of.end()) fail("{}: model.unk_token {} is not in model.vocab", r.path, unk.dump());
    t.unk_id = it->second;
  } else if (!unk.is_null()) {
    fail("{}: model.unk_token = {}: expected a string or null", r.path, unk.dump());
  }
}

void read_model(const Reader& r, const json& model, HfTokenizerTables& t,
                std::unordered_map<std::string, int32_t>& id_of) {
  if (!model.is_object()) r.refuse("\"model\" is missing");
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") r.refuse(fmt::format("model type \"{}\" is not implemented (only BPE)", type));
  t.byte_fallback = r.flag(model, "byte_fallback", false);
  if (t.byte_level && t.byte_fallback)
    r.refuse(
        "model byte_fallback = true with a ByteLevel pre-tokenizer is not implemented (byte fallback belongs to "
        "SentencePiece-style files: Metaspace or no pre-tokenizer)");
  t.fuse_unk = r.flag(model, "fuse_unk", false);
  for (const char* k : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) r.require_off(model, k, "model");
  t.ignore_merges = r.flag(model, "ignore_merges", false);
  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object() || vocab.empty()) r.refuse("model.vocab is not a non-empty object {\"token\": id}");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() >= INT32_MAX)
      fail("{}: model.vocab {} = {}: expected a non-negative integer id", r.path, json(it.key()).dump(),
           it.value().dump());
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    if (t.tokens.size() <= static_cast<size_t>(id)) t.tokens.resize(static_cast<size_t>(id) + 1);
    id_of[it.key()] = id;
    std::string bytes;
    if (!t.byte_level) {  // token text as it is; the BPE runs on characters
      t.tokens[id] = it.key();
      if (t.ignore_merges) t.model_vocab.emplace(it.key(), id);
    } else if (byte_level_to_bytes(it.key(), bytes)) {
      t.tokens[id] = bytes;
      if (t.ignore_merges) t.model_vocab.emplace(bytes, id);
    } else {
      t.tokens[id] = it.key();
    }
  }
  if (id_of.size() != vocab.size()) r.refuse("model.vocab repeats a token");
  if (!t.byte_level) read_char_model(r, model, t, id_of);
  for (unsigned b = 0; b < 256 && t.byte_level; ++b) {
    const uint32_t cp = byte_to_unicode(static_cast<unsigned char>(b));
    std::string spelled;
    if (cp < 0x80) {
      spelled.push_back(static_cast<char>(cp));
    } else {
      spelled.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      spelled.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    auto it = id_of.find(spelled);
    if (it == id_of.end())
      fail("{}: model.vocab has no token for byte 0x{:02X} (spelled {}); a byte-level BPE vocabulary has all 256",
           r.path, b, json(spelled).dump());
    t.byte_tokens[b] = it->second;
  }
  const json& merges = model.value("merges", json());
  if (!merges.is_array()) r.refuse("model.merges is not a list");
  std::set<std::pair<int32_t, int32_t>> seen;
  for (size_t k = 0; k < merges.size(); ++k) {
    const json& m = merges[k];
    std::string left, right;
    if (m.is_string()) {  // "a b"
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
        fail("{}: model.merges[{}] = {}: expected \"left right\"", r.path, k, m.dump());
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      fail("{}: model.merges[{}] = {}: expected \"left right\" or [\"left\", \"right\"]", r.path, k, m.dump());
    }
    auto l = id_of.find(left), rt = id_of.find(right), merged = id_of.find(left + right);
    if (l == id_of.end() || rt == id_of.end() || merged == id_of.end())
      fail("{}: model.merges[{}] = {} uses or makes a token that is not in model.vocab", r.path, k, m.dump());
    if (!seen.emplace(l->second, rt->second).second)
      fail("{}: model.merges[{}] = {} repeats an earlier merge (each pair must appear once)", r.path, k, m.dump());
    t.merges.push_back({l->second, rt->second, merged->second});
  }
}

// ByteLevel pre-tokenizer; inside a Sequence after a Split it must not split again or add a space.
void read_byte_level(const Reader& r, const json& p, HfTokenizerTables& t, bool after_split) {
  const bool use_regex = r.flag(p, "use_regex", true);
  t.add_prefix_space = r.flag(p, "add_prefix_space", true);
  if (after_split && (use_regex || t.add_prefix_space))
    r.refuse("pre_tokenizer ByteLevel after a Split with use_regex or add_prefix_space true is not implemented");
  if (!after_split) t.split = use_regex ? HfSplitRegex::kGpt2 : HfSplitRegex::kNone;
}

void read_split(const Reader& r, const json& p, HfTokenizerTables& t) {
  const json& pattern = p.value("pattern", json());
  if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
    r.refuse(fmt::format("pre_tokenizer Split with pattern {} is not implemented (only the known Regex patterns)",
                         pattern.dump()));
  const std::string re = pattern["Regex"].get<std::string>();
  if (re == kGpt2Pattern) {
    t.split = HfSplitRegex::kGpt2;
  } else if (re == kLlama3Pattern || re == kQwen2Pattern) {
    t.split = HfSplitRegex::kLlama3;
    t.max_digits = re == kLlama3Pattern ? 3 : 1;
  } else if (re == kTiktokenV1Regex || re == kTiktokenV2Regex) {
    t.split = re == kTiktokenV1Regex ? HfSplitRegex::kTiktokenV1 : HfSplitRegex::kTiktokenV2;
  } else {
    r.refuse(
        fmt::format("pre_tokenizer Split regex {} is not one of the implemented patterns (GPT-2's, Llama-3's, "
                    "Qwen2's, Megatron's tiktoken v1 and v2)",
                    json(re).dump()));
  }
  const std::string behavior = p.value("behavior", std::string("Isolated"));
  if (behavior != "Isolated")
    r.refuse(fmt::format("pre_tokenizer Split behavior \"{}\" is not implemented (only Isolated)", behavior));
  if (r.flag(p, "invert", false)) r.refuse("pre_tokenizer Split invert = true is not implemented");
}

std::string string_field(const Reader& r, const json& obj, const char* key, const std::string& where,
                         const std::string& dflt) {
  if (!obj.contains(key) || obj[key].is_null()) return dflt;
  if (!obj[key].is_string()) fail("{}: {} \"{}\" = {}: expected a string", r.path, where, key, obj[key].dump());
  return obj[key].get<std::string>();
}

void read_metaspace(const Reader& r, const json& p, HfTokenizerTables& t) {
  HfMetaspace m;
  m.replacement = string_field(r, p, "replacement", "pre_tokenizer Metaspace", m.replacement);
  if (m.replacement.empty()) fail("{}: pre_tokenizer Metaspace replacement is empty", r.path);
  const std::string scheme = string_field(r, p, "prepend_scheme", "pre_tokenizer Metaspace", "");
  if (scheme.empty())  // files written before prepend_scheme existed
    m.prepend = r.flag(p, "add_prefix_space", true) ? HfMetaspace::kAlways : HfMetaspace::kNever;
  else if (scheme == "always" || scheme == "first" || scheme == "never")
    m.prepend = scheme == "always"  ? HfMetaspace::kAlways
                : scheme == "first" ? HfMetaspace::kFirst
                                    : HfMetaspace::kNever;
  else
    r.refuse(fmt::format("pre_tokenizer Metaspace prepend_scheme \"{}\" is not one of always, first, never", scheme));
  m.split = r.flag(p, "split", true);
  t.metaspace = m;
}

void read_pre_tokenizer(const Reader& r, const json& p, HfTokenizerTables& t) {
  if (!t.byte_level) {  // null or Metaspace (is_byte_level decided)
    if (!p.is_null()) read_metaspace(r, p, t);
    return;
  }
  const std::string type = p.value("type", std::string());
  if (type == "ByteLevel") return read_byte_level(r, p, t, false);
  if (type != "Sequence") r.refuse(fmt::format("pre_tokenizer {} is not implemented", Reader::type_of(p)));
  const json& items = p.value("pretokenizers", json::array());
  const bool split_first = items.size() == 2 && items[0].value("type", "") == "Split";
  if (split_first && items[1].value("type", "") == "ByteLevel") {
    read_split(r, items[0], t);
    return read_byte_level(r, items[1], t, true);
  }
  if (items.size() == 1 && items[0].value("type", "") == "ByteLevel") return read_byte_level(r, items[0], t, false);
  r.refuse(fmt::format("pre_tokenizer Sequence {} is not implemented (only [Split, ByteLevel] or [ByteLevel])",
                       items.dump().substr(0, 300)));
}

void read_normalizer(const Reader& r, const json& n, HfTokenizerTables& t) {
  if (n.is_null()) return;
  const std::string type = n.value("type", std::string());
  if (type == "Sequence") {
    for (const json& m : n.value("normalizers", json::array())) read_normalizer(r, m, t);
  } else if (type == "NFC") {
    t.normalizers.push_back({HfNormalizerStep::kNfc, "", ""});
  } else if (type == "Prepend") {
    t.normalizers.push_back({HfNormalizerStep::kPrepend, "", string_field(r, n, "prepend", "normalizer Prepend", "")});
  } else if (type == "Replace" && n.contains("pattern") && n["pattern"].contains("String")) {
    const std::string from = n["pattern"]["String"].get<std::string>();
    if (from.empty()) fail("{}: normalizer Replace with an empty pattern", r.path);
    t.normalizers.push_back(
        {HfNormalizerStep::kReplace, from, string_field(r, n, "content", "normalizer Replace", "")});
  } else {
    r.refuse(
        fmt::format("normalizer {} is not implemented (only NFC, Prepend, Replace with a String pattern, Sequence)",
                    Reader::type_of(n)));
  }
}

void read_decoder(const Reader& r, const json& d, HfTokenizerTables& t) {
  const std::string type = d.value("type", std::string());
  if (t.byte_level) {
    if (type != "ByteLevel")
      r.refuse(fmt::format("decoder {} is not implemented with a ByteLevel pre-tokenizer (only ByteLevel)",
                           Reader::type_of(d)));
    return;
  }
  HfDecoderStep s{HfDecoderStep::kFuse, "", ""};
  if (type == "Sequence") {
    for (const json& e : d.value("decoders", json::array())) read_decoder(r, e, t);
    return;
  } else if (type == "Replace" && d.contains("pattern") && d["pattern"].contains("String")) {
    s = {HfDecoderStep::kReplace, d["pattern"]["String"].get<std::string>(),
         string_field(r, d, "content", "decoder Replace", "")};
  } else if (type == "ByteFallback") {
    s.kind = HfDecoderStep::kByteFallback;
  } else if (type == "Fuse") {
    s.kind = HfDecoderStep::kFuse;
  } else if (type == "Strip") {
    s = {HfDecoderStep::kStrip, "", string_field(r, d, "content", "decoder Strip", " ")};
    s.start = d.value("start", 0);
    s.stop = d.value("stop", 0);
  } else if (type == "Metaspace") {
    s = {HfDecoderStep::kMetaspace, string_field(r, d, "replacement", "decoder Metaspace", "\xE2\x96\x81"), " "};
    const std::string scheme = string_field(r, d, "prepend_scheme", "decoder Metaspace", "");
    s.prepend = scheme.empty() ? r.flag(d, "add_prefix_space", true) : scheme != "never";
  } else {
    r.refuse(fmt::format("decoder {} is not implemented (only Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)",
                         Reader::type_of(d)));
  }
  t.decoders.push_back(s);
}

// Byte-level unless the pre-tokenizer is null or Metaspace (the SentencePiece family).
bool is_byte_level(const json& pre) {
  if (pre.is_null()) return false;
  return pre.value("type", std::string()) != "Metaspace";
}

void read_template(const Reader& r, const json& p, HfTokenizerTables& t) {
  const json& single = p.value("single", json::array());
  const json& specials = p.value("special_tokens", json::object());
  bool seen_sequence = false;
  for (const json& item : single) {
    if (item.contains("Sequence")) {
      if (seen_sequence || item["Sequence"].value("id", "") != "A")
        r.refuse("post_processor TemplateProcessing single template other than specials around one $A");
      seen_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const std::string name = item["SpecialToken"].value("id", "");
      if (!specials.contains(name) || !specials[name].contains("ids"))
        fail("{}: post_processor template names special token \"{}\" that its special_tokens do not define", r.path,
             name);
      std::vector<int32_t>& dst = seen_sequence ? t.suffix_ids : t.prefix_ids;
      for (const json& id : specials[name]["ids"]) dst.push_back(id.get<int32_t>());
    } else {
      r.refuse(fmt::format("post_processor TemplateProcessing item {} is not implemented", item.dump()));
    }
  }
  if (!seen_sequence) r.refuse("post_processor TemplateProcessing single template without $A");
}

void read_post_processor(const Reader& r, const json& p, HfTokenizerTables& t) {
  if (p.is_null()) return;
  const std::string type = p.value("type", std::string());
  if (type == "ByteLevel") return;  // offsets only
  if (type == "TemplateProcessing") return read_template(r, p, t);
  if (type == "Sequence") {
    for (const json& q : p.value("processors", json::array())) read_post_processor(r, q, t);
    return;
  }
  r.refuse(fmt::format("post_processor {} is not implemented", Reader::type_of(p)));
}

void read_added_tokens(const Reader& r, const json& list, HfTokenizerTables& t) {
  // Added tokens are text in the SentencePiece family; in the byte-level one their characters may
  // be spelled in the byte alphabet.
  auto bytes_of = [&](const std::string& content) { return t.byte_level ? token_to_bytes(content) : content; };
  for (const json& a : list) {
    const std::string content = a.value("content", std::string());
    if (content.empty() || !a.contains("id")) fail("{}: added_tokens entry {}: needs id and content", r.path, a.dump());
    for (const char* k : {"single_word", "lstrip", "rstrip"})
      if (r.flag(a, k, false))
        r.refuse(fmt::format("added token {} with {} = true is not implemented", json(content).dump(), k));
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id >= INT32_MAX) fail("{}: added token {} has id {}", r.path, json(content).dump(), id);
    t.added.push_back({content, static_cast<int32_t>(id), r.flag(a, "special", false), r.flag(a, "normalized", true)});
    if (t.tokens.size() <= static_cast<size_t>(id)) t.tokens.resize(static_cast<size_t>(id) + 1);
    t.tokens[id] = bytes_of(content);
  }
}

// eos_token / bos_token of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  if (cfg[key].is_string()) return cfg[key].get<std::string>();
  if (cfg[key].is_object() && cfg[key].contains("content")) return cfg[key]["content"].get<std::string>();
  return std::nullopt;
}

void read_eod_bos(const Reader& r, const fs::path& dir, HfTokenizerTables& t,
                  const std::unordered_map<std::string, int32_t>& id_of) {
  auto find_id = [&](const std::string& content) -> std::optional<int32_t> {
    for (const HfAddedToken& a : t.added)
      if (a.content == content) return a.id;
    if (auto it = id_of.find(content); it != id_of.end()) return it->second;
    return std::nullopt;
  };
  const fs::path cfg_path = dir / "tokenizer_config.json";
  if (fs::is_regular_file(cfg_path)) {
    const json cfg = read_json(cfg_path);
    if (auto eos = config_token(cfg, "eos_token")) {
      const auto id = find_id(*eos);
      if (!id) fail("{}: eos_token {} is not a token of {}", cfg_path.string(), json(*eos).dump(), r.path);
      t.eod_id = *id;
    }
    if (auto bos = config_token(cfg, "bos_token")) {
      t.bos_id = find_id(*bos);
      if (!t.bos_id) fail("{}: bos_token {} is not a token of {}", cfg_path.string(), json(*bos).dump(), r.path);
    }
  }
  if (t.eod_id < 0) {
    for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"}) {
      for (const HfAddedToken& a : t.added)
        if (a.special && a.content == name) t.eod_id = a.id;
      if (t.eod_id >= 0) break;
    }
  }
  if (t.eod_id < 0)
    fail(
        "{}: no end-of-document token: put a tokenizer_config.json with \"eos_token\" next to it, or add one of "
        "<|endoftext|>, <|end_of_text|>, </s>, <eos> as a special added token",
        r.path);
  if (!t.bos_id && !t.prefix_ids.empty()) t.bos_id = t.prefix_ids.front();
}

}  // namespace

HfTokenizerTables load_hf_tokenizer_json(const std::string& file_or_dir) {
  fs::path path = file_or_dir;
  if (fs::is_directory(path)) path /= "tokenizer.json";
  if (!fs::is_regular_file(path))
    fail("--tokenizer-model {}: no tokenizer.json there (expected a tokenizer.json or a directory holding one)",
         file_or_dir);
  const Reader r{path.string()};
  const json j = read_json(path);
  if (!j.is_object()) r.refuse("expected a JSON object");
  HfTokenizerTables t;
  t.path = path.string();
  for (const char* k : {"truncation", "padding"}) r.require_off(j, k, "tokenizer");
  t.byte_level = is_byte_level(j.value("pre_tokenizer", json()));
  read_normalizer(r, j.value("normalizer", json()), t);
  read_decoder(r, j.value("decoder", json()), t);
  std::unordered_map<std::string, int32_t> id_of;
  read_model(r, j.value("model", json()), t, id_of);
  read_pre_tokenizer(r, j.value("pre_tokenizer", json()), t);
  read_added_tokens(r, j.value("added_tokens", json::array()), t);
  read_post_processor(r, j.value("post_processor", json()), t);
  for (size_t id = 0; id < t.tokens.size(); ++id)
    if (t.tokens[id].empty())
      fail("{}: no token has id {} (model.vocab and added_tokens must use the ids 0..{} each once)", r.path, id,
           t.tokens.size() - 1);
  for (int32_t id : t.prefix_ids)
    check(id >= 0 && static_cast<size_t>(id) < t.tokens.size(), "{}: post_processor id {} is not a token", r.path, id);
  for (int32_t id : t.suffix_ids)
    check(id >= 0 && static_cast<size_t>(id) < t.tokens.size(), "{}: post_processor id {} is not a token", r.path, id);
  read_eod_bos(r, path.parent_path(), t, id_of);
  return t;
}

}  // namespace gptrain
