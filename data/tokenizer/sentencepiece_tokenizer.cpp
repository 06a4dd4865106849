// SentencePieceTokenizer / GPTSentencePieceTokenizer / Llama2Tokenizer over the SentencePiece library.
// See sentencepiece_tokenizer.h.
#include "data/tokenizer/sentencepiece_tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/sentencepiece_model_proto.h"
#include "data/tokenizer/spm_bpe_encoder.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

namespace gptrain {

namespace {

constexpr std::string_view kTypeNames[] = {"SentencePieceTokenizer", "GPTSentencePieceTokenizer", "Llama2Tokenizer"};

std::string model_file(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    const fs::path p = fs::path(path) / "tokenizer.model";
    check(fs::is_regular_file(p), "--tokenizer-model {}: a directory with no tokenizer.model in it", path);
    return p.string();
  }
  check(fs::is_regular_file(path), "--tokenizer-model {}: no such file (expected a SentencePiece .model file)", path);
  return path;
}

// The native BPE encoder's model for sp, as GPTRAIN_SPM_ENCODER asks (auto | native | library); null with
// why set when the library encodes.
std::shared_ptr<const SpmBpeModel> native_model(const sentencepiece::SentencePieceProcessor& sp,
                                                const std::string& path, std::string& why) {
  const char* env = std::getenv("GPTRAIN_SPM_ENCODER");
  const std::string_view mode = env && *env ? env : "auto";
  check(mode == "auto" || mode == "native" || mode == "library",
        "GPTRAIN_SPM_ENCODER={}: expected auto, native or library", mode);
  if (mode == "library") {
    why = "GPTRAIN_SPM_ENCODER=library";
    return nullptr;
  }
  SentencePieceModelSpec spec;
  std::shared_ptr<const SpmBpeModel> model;
  if (!parse_sentencepiece_model(sp.serialized_model_proto(), spec))
    why = "the model file did not parse as a ModelProto";
  else
    model = SpmBpeModel::build(spec, why);
  check(model || mode != "native",
        "--tokenizer-model {}: GPTRAIN_SPM_ENCODER=native, but the native encoder does not take this model: {}", path,
        why);
  return model;
}

}  // namespace

bool is_sentencepiece_type(std::string_view type) {
  for (std::string_view n : kTypeNames)
    if (type == n) return true;
  return false;
}

struct SentencePieceTokenizer::Shared {
  sentencepiece::SentencePieceProcessor sp;
  Flavor flavor = Flavor::kGPTSentencePiece;
  std::string path;
  int32_t pieces = 0, vocab = 0, eod = -1;
  std::optional<int32_t> bos;
  // SentencePieceTokenizer's special tokens in the order Megatron adds them; extra[i] is id pieces + i.
  std::vector<SpecialToken> specials;
  std::unordered_map<int32_t, std::string> special_by_id;
  std::vector<std::string> extra;
  std::shared_ptr<const SpmBpeModel> native;  // null: the library encodes, for native_why
  std::string native_why;

  // The id of a piece the model has, else a new id after the others (Megatron's _add_special_token).
  int32_t add_special(const std::string& t) {
    for (const SpecialToken& s : specials)
      if (s.content == t) return s.id;
    int32_t id = sp.PieceToId(t);
    if (sp.IdToPiece(id) != t) {
      auto it = std::find(extra.begin(), extra.end(), t);
      id = pieces + static_cast<int32_t>(it - extra.begin());
      if (it == extra.end()) extra.push_back(t);
    }
    specials.push_back({t, id});
    special_by_id[id] = t;
    return id;
  }
  // A reserved piece (pad, BOS, EOS) of the model, or Megatron's stand-in when the model has none (id -1).
  std::string reserved_piece(int id, const char* stand_in) const {
    return id >= 0 && id < pieces ? sp.IdToPiece(id) : std::string(stand_in);
  }
};

SentencePieceTokenizer::SentencePieceTokenizer(std::string_view type, const std::string& path) {
  auto s = std::make_shared<Shared>();
  for (int f = 0; f < 3; ++f)
    if (type == kTypeNames[f]) s->flavor = static_cast<Flavor>(f);
  check(is_sentencepiece_type(type), "--tokenizer-type {}: not a SentencePiece type", type);
  s->path = model_file(path);
  const auto status = s->sp.Load(s->path);
  check(status.ok(), "--tokenizer-model {}: not a SentencePiece model ({})", s->path, status.ToString());
  s->pieces = s->sp.GetPieceSize();
  s->vocab = s->pieces;
  const int bos = s->sp.bos_id(), eos = s->sp.eos_id();
  if (s->flavor == Flavor::kSentencePiece) {
    s->add_special("<CLS>");
    s->add_special("<SEP>");
    s->eod = s->add_special("<EOD>");
    s->add_special("<MASK>");
    s->add_special(s->reserved_piece(s->sp.pad_id(), "<PAD>"));
    s->bos = s->add_special(s->reserved_piece(bos, "<BOS>"));
    s->add_special(s->reserved_piece(eos, "<EOS>"));
    s->vocab = s->pieces + static_cast<int32_t>(s->extra.size());
  } else {
    // Megatron would put id -1 in the data: refuse a model without the pieces this type relies on.
    check(eos >= 0,
          "--tokenizer-model {}: the model has no end-of-sentence piece (eos_id -1), which {} uses as "
          "the end-of-document id",
          s->path, type);
    s->eod = eos;
    if (bos >= 0) s->bos = bos;
    check(s->flavor != Flavor::kLlama2 || bos >= 0,
          "--tokenizer-model {}: the model has no beginning-of-sentence piece (bos_id -1), which Llama2Tokenizer "
          "puts in front of every document",
          s->path);
  }
  s->native = native_model(s->sp, s->path, s->native_why);
  if (s->native) native_ = std::make_unique<SpmBpeEncoder>(s->native);
  shared_ = std::move(s);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;
SentencePieceTokenizer::SentencePieceTokenizer(const SentencePieceTokenizer& other) : shared_(other.shared_) {
  if (shared_->native) native_ = std::make_unique<SpmBpeEncoder>(shared_->native);
}

void SentencePieceTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  if (native_) return native_->encode(text, out);
  const auto status = shared_->sp.Encode(text, &scratch_);
  check(status.ok(), "SentencePiece could not encode a text of {} bytes: {}", text.size(), status.ToString());
  out.insert(out.end(), scratch_.begin(), scratch_.end());
}

void SentencePieceTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  const Shared& s = *shared_;
  if (s.flavor == Flavor::kLlama2) out.push_back(*s.bos);
  if (s.flavor != Flavor::kSentencePiece) return encode_plain(text, out);
  // Next occurrence of each special token at or after pos (npos: none left); refreshed once passed.
  const size_t n = s.specials.size();
  std::vector<size_t> next(n, 0);
  std::vector<bool> stale(n, true);
  for (size_t pos = 0;;) {
    size_t best = std::string_view::npos, which = n;
    for (size_t k = 0; k < n; ++k) {
      if (stale[k] || (next[k] != std::string_view::npos && next[k] < pos)) {
        next[k] = text.find(s.specials[k].content, pos);
        stale[k] = false;
      }
      if (next[k] < best) best = next[k], which = k;  // strict: at a tie the earlier-added token wins
    }
    if (which == n) return encode_plain(text.substr(pos), out);
    encode_plain(text.substr(pos, best - pos), out);
    out.push_back(s.specials[which].id);
    pos = best + s.specials[which].content.size();
  }
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  const Shared& s = *shared_;
  std::string text;
  std::vector<int> run;
  for (int32_t id : ids) {
    check(id >= 0 && id < s.vocab, "token id {} out of range [0, {})", id, s.vocab);
    const auto it = s.flavor == Flavor::kSentencePiece ? s.special_by_id.find(id) : s.special_by_id.end();
    if (it == s.special_by_id.end()) {
      run.push_back(id);
      continue;
    }
    // Megatron's detokenize: the text so far, then the special token between spaces.
    text += s.sp.DecodeIds(run) + " " + it->second + " ";
    run.clear();
  }
  return text + s.sp.DecodeIds(run);
}

std::string SentencePieceTokenizer::decode_continuation(std::span<const int32_t> ids) const {
  const Shared& s = *shared_;
  static const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space
  std::string text;
  for (int32_t id : ids) {
    check(id >= 0 && id < s.vocab, "token id {} out of range [0, {})", id, s.vocab);
    if (id >= s.pieces) {
      text += s.extra[static_cast<size_t>(id - s.pieces)];
    } else if (s.sp.IsByte(id)) {
      text += static_cast<char>(std::stoi(s.sp.IdToPiece(id).substr(3, 2), nullptr, 16));  // "<0xAB>"
    } else if (s.sp.IsUnknown(id)) {
      text += s.sp.DecodeIds({id});
    } else if (!s.sp.IsControl(id)) {
      const std::string& p = s.sp.IdToPiece(id);
      for (size_t i = 0; i < p.size();) {
        if (p.compare(i, kSpace.size(), kSpace) == 0) {
          text += ' ';
          i += kSpace.size();
        } else {
          text += p[i++];
        }
      }
    }
  }
  return text;
}

std::string_view SentencePieceTokenizer::type() const { return kTypeNames[static_cast<int>(shared_->flavor)]; }
int32_t SentencePieceTokenizer::vocab_size() const { return shared_->vocab; }
int32_t SentencePieceTokenizer::eod_id() const { return shared_->eod; }
std::optional<int32_t> SentencePieceTokenizer::bos_id() const { return shared_->bos; }
SentencePieceTokenizer::Flavor SentencePieceTokenizer::flavor() const { return shared_->flavor; }
const std::string& SentencePieceTokenizer::path() const { return shared_->path; }
int32_t SentencePieceTokenizer::piece_count() const { return shared_->pieces; }
const sentencepiece::SentencePieceProcessor& SentencePieceTokenizer::processor() const { return shared_->sp; }
bool SentencePieceTokenizer::native_encoder() const { return native_ != nullptr; }
const std::string& SentencePieceTokenizer::native_encoder_refusal() const { return shared_->native_why; }

std::vector<SpecialToken> SentencePieceTokenizer::special_tokens() const {
  const Shared& s = *shared_;
  if (s.flavor == Flavor::kSentencePiece) return s.specials;
  std::vector<SpecialToken> out;
  for (int id : {s.sp.unk_id(), s.sp.bos_id(), s.sp.eos_id(), s.sp.pad_id()})
    if (id >= 0 && id < s.pieces) out.push_back({s.sp.IdToPiece(id), id});
  return out;
}

}  // namespace gptrain
