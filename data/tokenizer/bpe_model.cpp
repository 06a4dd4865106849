// Loading vocab.json / merges.txt and the merge-rank BPE itself.
#include "data/tokenizer/bpe_model.h"

#include "core/common/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <queue>
#include <sstream>
#include <unordered_map>

namespace gptrain {

uint32_t byte_to_unicode(unsigned char b) {
  // Bytes that are printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other
  // 68 bytes, in increasing order, are shifted to U+0100, U+0101, ...
  auto printable = [](unsigned v) { return (v >= 0x21 && v <= 0x7E) || (v >= 0xA1 && v <= 0xAC) || (v >= 0xAE); };
  if (printable(b)) return b;
  uint32_t n = 0;
  for (unsigned v = 0; v < b; ++v)
    if (!printable(v)) ++n;
  return 256 + n;
}

namespace {

std::string read_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open {} file", path, what);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail("{}: read error", path);
  return ss.str();
}

// Inverse of byte_to_unicode for one token spelled in the byte alphabet (UTF-8).
struct ByteAlphabet {
  std::unordered_map<uint32_t, unsigned char> to_byte;
  ByteAlphabet() {
    for (unsigned b = 0; b < 256; ++b)
      to_byte[byte_to_unicode(static_cast<unsigned char>(b))] = static_cast<unsigned char>(b);
  }
  // Returns false when s holds a character outside the alphabet or invalid UTF-8.
  bool decode(std::string_view s, std::string& out) const {
    out.clear();
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      uint32_t cp;
      if (c < 0x80) {
        cp = c;
        i += 1;
      } else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
        cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
        i += 2;
      } else {
        return false;  // the alphabet lies below U+0800: 1 or 2 bytes
      }
      auto it = to_byte.find(cp);
      if (it == to_byte.end()) return false;
      out.push_back(static_cast<char>(it->second));
    }
    return true;
  }
};

}  // namespace

bool byte_level_to_bytes(std::string_view spelled, std::string& out) {
  static const ByteAlphabet alphabet;
  return alphabet.decode(spelled, out);
}

BpeModel::BpeModel(const std::string& vocab_json_path, const std::string& merges_txt_path) {
  const ByteAlphabet alphabet;
  // ---- vocab.json: {"token": id, ...}
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(read_file(vocab_json_path, "vocab.json"));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({}); expected the GPT-2 vocab.json object {{\"token\": id, ...}}", vocab_json_path,
         e.what());
  }
  if (!vocab.is_object() || vocab.empty())
    fail("{}: expected a non-empty JSON object {{\"token\": id, ...}}", vocab_json_path);
  const size_t V = vocab.size();
  std::vector<std::string> tokens(V);
  std::vector<bool> seen(V, false);
  std::unordered_map<std::string, int32_t> id_of;  // token as spelled in the files -> id
  id_of.reserve(V * 2);
  std::string bytes;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer())
      fail("{}: token {} maps to {}, expected an integer id", vocab_json_path, nlohmann::json(it.key()).dump(),
           it.value().dump());
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(V) || seen[id])
      fail("{}: token {} has id {}; expected ids 0..{} each used once", vocab_json_path,
           nlohmann::json(it.key()).dump(), id, V - 1);
    seen[id] = true;
    if (it.key() == "<|endoftext|>") {
      eod_id_ = static_cast<int32_t>(id);
      tokens[id] = it.key();
    } else if (!alphabet.decode(it.key(), bytes)) {
      fail("{}: token {} is not spelled in GPT-2's byte-level alphabet (bytes_to_unicode)", vocab_json_path,
           nlohmann::json(it.key()).dump());
    } else {
      tokens[id] = bytes;
    }
    id_of.emplace(it.key(), static_cast<int32_t>(id));
  }
  if (eod_id_ < 0) fail("{}: no \"<|endoftext|>\" token (GPT-2's end-of-document id)", vocab_json_path);
  set_tokens(tokens);
  for (unsigned b = 0; b < 256; ++b) {
    std::string spelled;
    const uint32_t cp = byte_to_unicode(static_cast<unsigned char>(b));
    if (cp < 0x80)
      spelled.push_back(static_cast<char>(cp));
    else {
      spelled.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      spelled.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    auto it = id_of.find(spelled);
    if (it == id_of.end())
      fail("{}: missing the single-byte token for byte 0x{:02X} (spelled {}); a byte-level vocab has all 256",
           vocab_json_path, b, nlohmann::json(spelled).dump());
    byte_token_[b] = it->second;
  }

  // ---- merges.txt: optional "#version" line, then "left right" per line, rank = line order.
  const std::string merges = read_file(merges_txt_path, "merges.txt");
  reserve_merges(V);
  int32_t rank = 0;
  size_t line_no = 0;
  std::vector<size_t> line_of_rank;
  for (size_t pos = 0; pos < merges.size();) {
    size_t eol = merges.find('\n', pos);
    if (eol == std::string::npos) eol = merges.size();
    std::string_view line(merges.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && line.starts_with("#version")) continue;
    // Hugging Face's tokenizers refuse a blank line (Megatron's reader ranks it as an empty merge); only
    // the file's final newline ends a line without starting another.
    if (line.empty()) fail("{}:{}: blank line (expected \"left right\" on every line)", merges_txt_path, line_no);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      fail("{}:{}: expected two tokens separated by one space, got \"{}\"", merges_txt_path, line_no, line);
    const std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
    auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
    if (l == id_of.end() || r == id_of.end() || m == id_of.end())
      fail("{}:{}: merge \"{}\" uses or makes a token that is not in {}", merges_txt_path, line_no, line,
           vocab_json_path);
    // A repeated pair would take its last line's rank in Megatron's and Hugging Face's readers (a dict),
    // which reorders the merges silently: a damaged file, refused.
    const Merge seen = merge(l->second, r->second);
    if (seen.rank >= 0)
      fail("{}:{}: merge \"{}\" repeats line {} (each pair must appear once)", merges_txt_path, line_no, line,
           line_of_rank[static_cast<size_t>(seen.rank)]);
    insert_merge(l->second, r->second, rank, m->second);
    line_of_rank.push_back(line_no);
    ++rank;
  }
  if (rank == 0) fail("{}: no merges found (expected lines \"left right\")", merges_txt_path);
}

BpeModel::BpeModel(const std::vector<std::string>& tokens, const int32_t (&byte_tokens)[256],
                   const std::vector<MergeIds>& merges, int32_t eod_id)
    : eod_id_(eod_id) {
  set_tokens(tokens);
  std::copy(byte_tokens, byte_tokens + 256, byte_token_);
  reserve_merges(std::max(tokens.size(), merges.size()));
  for (size_t rank = 0; rank < merges.size(); ++rank)
    insert_merge(merges[rank].left, merges[rank].right, static_cast<int32_t>(rank), merges[rank].merged);
}

void BpeModel::set_tokens(const std::vector<std::string>& tokens) {
  const size_t V = tokens.size();
  token_offsets_.resize(V + 1);
  for (size_t id = 0; id < V; ++id) {
    token_offsets_[id] = token_bytes_.size();
    token_bytes_ += tokens[id];
  }
  token_offsets_[V] = token_bytes_.size();
}

void BpeModel::reserve_merges(size_t vocab_size) {
  size_t capacity = 1024;
  while (capacity < vocab_size * 3) capacity *= 2;
  slots_.assign(capacity, Slot{kEmpty, -1, -1});
  mask_ = capacity - 1;
}

void BpeModel::insert_merge(int32_t left, int32_t right, int32_t rank, int32_t id) {
  const uint64_t key = pair_key(left, right);
  size_t slot = hash(key) & mask_;
  while (slots_[slot].key != kEmpty) slot = (slot + 1) & mask_;
  slots_[slot] = Slot{key, rank, id};
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  const size_t n = bytes.size();
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_token_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  if (n > kShortPiece) {
    std::vector<int32_t> sym(n);
    for (size_t k = 0; k < n; ++k) sym[k] = byte_token_[static_cast<unsigned char>(bytes[k])];
    merge_long(sym, out);
    return;
  }
  int32_t sym[kShortPiece];
  for (size_t k = 0; k < n; ++k) sym[k] = byte_token_[static_cast<unsigned char>(bytes[k])];
  merge_short(sym, n, out);
}

void BpeModel::encode_symbols(std::vector<int32_t>& sym, std::vector<int32_t>& out) const {
  if (sym.size() <= kShortPiece)
    merge_short(sym.data(), sym.size(), out);
  else
    merge_long(sym, out);
}

// Short piece: repeatedly merge the leftmost lowest-rank adjacent pair. O(n^2), n <= kShortPiece, in place.
void BpeModel::merge_short(int32_t* sym, size_t n, std::vector<int32_t>& out) const {
  int32_t rank[kShortPiece];  // rank[k]: rank of the pair (sym[k], sym[k+1]), INT32_MAX if none
  int32_t merged[kShortPiece];
  size_t m = n;
  auto score = [&](size_t k) {
    const Merge g = merge(sym[k], sym[k + 1]);
    rank[k] = g.rank < 0 ? INT32_MAX : g.rank;
    merged[k] = g.id;
  };
  for (size_t k = 0; k + 1 < m; ++k) score(k);
  while (m > 1) {
    size_t best = 0;
    for (size_t k = 1; k + 1 < m; ++k)
      if (rank[k] < rank[best]) best = k;
    if (rank[best] == INT32_MAX) break;
    sym[best] = merged[best];
    for (size_t k = best + 1; k + 1 < m; ++k) {
      sym[k] = sym[k + 1];
      rank[k] = rank[k + 1];
      merged[k] = merged[k + 1];
    }
    --m;
    if (best + 1 < m) score(best);
    if (best > 0) score(best - 1);
  }
  out.insert(out.end(), sym, sym + m);
}

// Long pieces (long runs of spaces, punctuation or letters): the same merge order with a linked list
// and a min-heap keyed by (rank, position), O(n log n). Heap entries go stale when a neighbour merges;
// they are recognised by the pair no longer matching.
void BpeModel::merge_long(std::vector<int32_t>& sym, std::vector<int32_t>& out) const {
  const size_t n = sym.size();
  std::vector<int64_t> prev(n), next(n);
  for (size_t k = 0; k < n; ++k) {
    prev[k] = static_cast<int64_t>(k) - 1;
    next[k] = k + 1 < n ? static_cast<int64_t>(k + 1) : -1;
  }
  struct Cand {
    int32_t rank;
    int64_t pos;  // left symbol's node
    int32_t left, right;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int64_t k) {
    if (k < 0 || next[k] < 0) return;
    const Merge g = merge(sym[k], sym[next[k]]);
    if (g.rank >= 0) heap.push(Cand{g.rank, k, sym[k], sym[next[k]]});
  };
  for (size_t k = 0; k + 1 < n; ++k) push(static_cast<int64_t>(k));
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const int64_t k = c.pos;
    if (!alive[k] || next[k] < 0 || sym[k] != c.left || sym[next[k]] != c.right) continue;
    const int64_t r = next[k];
    sym[k] = merge(c.left, c.right).id;
    alive[r] = false;
    next[k] = next[r];
    if (next[r] >= 0) prev[next[r]] = k;
    push(prev[k]);
    push(k);
  }
  for (int64_t k = 0; k >= 0; k = next[k]) out.push_back(sym[k]);
}

}  // namespace gptrain
