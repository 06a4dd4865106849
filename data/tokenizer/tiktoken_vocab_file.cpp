// Reading TikTokenizer's vocabulary (Megatron's JSON or tiktoken's BPE file); see tiktoken_vocab_file.h.
#include "data/tokenizer/tiktoken_vocab_file.h"

#include "core/common/error.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace gptrain {

bool decode_base64(std::string_view s, std::string& out) {
  out.clear();
  if (s.size() % 4 != 0) return false;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (size_t i = 0; i < s.size(); i += 4) {
    const bool last = i + 4 == s.size();
    const int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=') : 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = k >= 4 - pad ? 0 : value(s[i + k]);
      if (d < 0) return false;
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>(v >> 16));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xFF));
  }
  return true;
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("--tokenizer-model {}: cannot open", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail("{}: read error", path);
  return ss.str();
}

std::vector<std::string> read_megatron_json(const std::string& path, int64_t max_ranks) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_all(path));
  } catch (const nlohmann::json::exception& e) {
    fail(
        "{}: not valid JSON ({}); expected Megatron's TikTokenizer list [{{\"rank\", \"token_bytes\", \"token_str\"}}]",
        path, e.what());
  }
  if (!j.is_array())
    fail(
        "{}: expected a JSON list of {{\"rank\", \"token_bytes\", \"token_str\"}} (Megatron's TikTokenizer vocabulary)",
        path);
  const int64_t count = std::min<int64_t>(static_cast<int64_t>(j.size()), max_ranks);
  std::vector<std::string> tokens(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const nlohmann::json& e = j[static_cast<size_t>(i)];
    if (!e.is_object() || e.size() != 3 || !e.contains("rank") || !e.contains("token_bytes") ||
        !e.contains("token_str"))
      fail("{}: entry {}: expected exactly the keys rank, token_bytes, token_str", path, i);
    if (!e["rank"].is_number_integer() || e["rank"].get<int64_t>() != i)
      fail("{}: entry {}: rank {} (the rank of each entry must be its position)", path, i, e["rank"].dump());
    if (!e["token_bytes"].is_string() || !decode_base64(e["token_bytes"].get<std::string>(), tokens[i]) ||
        tokens[i].empty())
      fail("{}: entry {}: token_bytes {} is not non-empty base64", path, i, e["token_bytes"].dump());
    if (i < 256 && tokens[i] != std::string(1, static_cast<char>(i)))
      fail("{}: entry {}: the first 256 entries must be the single bytes 0..255 in order", path, i);
  }
  return tokens;
}

std::vector<std::string> read_tiktoken_bpe(const std::string& path, int64_t max_ranks) {
  const std::string text = read_all(path);
  std::vector<std::string> by_rank;
  std::vector<size_t> line_of_rank;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;  // tiktoken skips empty lines
    const size_t sp = line.find(' ');
    int64_t rank = -1;
    std::string bytes;
    const std::string_view num = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    const auto parsed = std::from_chars(num.data(), num.data() + num.size(), rank);
    if (sp == std::string_view::npos || parsed.ec != std::errc() || parsed.ptr != num.data() + num.size() || rank < 0 ||
        !decode_base64(line.substr(0, sp), bytes) || bytes.empty())
      fail("{}:{}: expected \"BASE64 RANK\" (tiktoken's BPE file) or a .json file (Megatron's), got \"{}\"", path,
           line_no, line.substr(0, 80));
    if (rank >= INT32_MAX) fail("{}:{}: rank {} is too large", path, line_no, rank);
    if (static_cast<size_t>(rank) >= by_rank.size()) {
      by_rank.resize(static_cast<size_t>(rank) + 1);
      line_of_rank.resize(static_cast<size_t>(rank) + 1, 0);
    }
    if (line_of_rank[rank] != 0)
      fail("{}:{}: rank {} repeats line {}", path, line_no, rank, line_of_rank[static_cast<size_t>(rank)]);
    by_rank[rank] = std::move(bytes);
    line_of_rank[rank] = line_no;
  }
  for (size_t r = 0; r < by_rank.size(); ++r)
    if (line_of_rank[r] == 0)
      fail("{}: no line for rank {} (ranks must be 0..{} each once)", path, r, by_rank.size() - 1);
  if (static_cast<int64_t>(by_rank.size()) > max_ranks) by_rank.resize(static_cast<size_t>(max_ranks));
  return by_rank;
}

}  // namespace

std::vector<std::string> read_tiktoken_vocab(const std::string& path, int64_t max_ranks) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::vector<std::string> tokens = json ? read_megatron_json(path, max_ranks) : read_tiktoken_bpe(path, max_ranks);
  if (static_cast<int64_t>(tokens.size()) < max_ranks)
    fail(
        "{}: {} tokens, fewer than the {} that --vocab-size minus --tiktoken-num-special-tokens asks for (Megatron "
        "requires the file to fill every id)",
        path, tokens.size(), max_ranks);
  std::unordered_set<std::string_view> seen;
  bool single[256] = {};
  for (size_t r = 0; r < tokens.size(); ++r) {
    if (!seen.insert(tokens[r]).second) fail("{}: rank {} repeats the bytes of an earlier rank", path, r);
    if (tokens[r].size() == 1) single[static_cast<unsigned char>(tokens[r][0])] = true;
  }
  for (int b = 0; b < 256; ++b)
    if (!single[b])
      fail("{}: no token for the single byte 0x{:02X} among the first {} ranks (every byte needs one)", path, b,
           tokens.size());
  return tokens;
}

}  // namespace gptrain
