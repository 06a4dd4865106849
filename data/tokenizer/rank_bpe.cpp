// tiktoken's rank-based byte-pair merge; see rank_bpe.h.
#include "data/tokenizer/rank_bpe.h"

#include "data/tokenizer/bpe_cache.h"

#include <climits>
#include <queue>

namespace gptrain {

uint64_t RankBpe::hash(std::string_view s) { return BpeCache::hash(s); }

RankBpe::RankBpe(std::vector<std::string> tokens, int32_t id_offset) : id_offset_(id_offset) {
  offsets_.reserve(tokens.size() + 1);
  for (const std::string& t : tokens) {
    offsets_.push_back(bytes_.size());
    bytes_ += t;
  }
  offsets_.push_back(bytes_.size());
  size_t capacity = 1024;
  while (capacity < tokens.size() * 2) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (int32_t r = 0; r < size(); ++r) {
    const uint64_t h = hash(rank_bytes(r));
    size_t slot = h & mask_;
    while (slots_[slot].rank >= 0) slot = (slot + 1) & mask_;
    slots_[slot] = Slot{h, r};
  }
}

void RankBpe::encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  const size_t n = bytes.size();
  if (n == 0) return;
  if (const int32_t whole = find(bytes); whole >= 0) {
    out.push_back(whole);
    return;
  }
  constexpr size_t kShort = 64;
  if (n > kShort) return encode_long_piece(bytes, out);
  // Short piece: parts are byte ranges [start[k], start[k+1]); rank[k] is the rank of parts k and k+1
  // joined. O(n^2) with n <= 64, all on the stack.
  uint32_t start[kShort + 1];
  int32_t rank[kShort];
  size_t m = n;  // parts
  for (size_t k = 0; k <= n; ++k) start[k] = static_cast<uint32_t>(k);
  auto joined = [&](size_t k) { return rank_of(bytes.substr(start[k], start[k + 2] - start[k])); };
  for (size_t k = 0; k + 1 < m; ++k) rank[k] = joined(k);
  while (m > 1) {
    size_t best = 0;
    for (size_t k = 1; k + 1 < m; ++k)
      if (rank[k] < rank[best]) best = k;
    if (rank[best] == INT32_MAX) break;
    --m;  // parts best and best+1 become one
    for (size_t k = best + 1; k <= m; ++k) start[k] = start[k + 1];
    for (size_t k = best + 1; k + 1 < m; ++k) rank[k] = rank[k + 1];
    if (best + 1 < m) rank[best] = joined(best);
    if (best > 0) rank[best - 1] = joined(best - 1);
  }
  for (size_t k = 0; k < m; ++k) out.push_back(find(bytes.substr(start[k], start[k + 1] - start[k])));
}

// Long pieces: the same merge order with a linked list of parts and a min-heap keyed by (rank, start);
// an entry is stale when either part has changed since it was pushed (recognised by the parts' ends).
void RankBpe::encode_long_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  const size_t n = bytes.size();
  std::vector<int64_t> next(n), prev(n);  // by a part's first byte; next == n at the end
  for (size_t k = 0; k < n; ++k) {
    next[k] = static_cast<int64_t>(k + 1);
    prev[k] = static_cast<int64_t>(k) - 1;
  }
  struct Cand {
    int32_t rank;
    int64_t pos;       // the left part's first byte
    int64_t mid, end;  // where the right part starts and ends when pushed
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  const auto N = static_cast<int64_t>(n);
  auto push = [&](int64_t k) {
    if (k < 0 || next[k] >= N) return;
    const int64_t mid = next[k], end = next[mid];
    const int32_t r = rank_of(bytes.substr(static_cast<size_t>(k), static_cast<size_t>(end - k)));
    if (r != INT32_MAX) heap.push(Cand{r, k, mid, end});
  };
  std::vector<bool> alive(n, true);
  for (int64_t k = 0; k + 1 < N; ++k) push(k);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    if (!alive[c.pos] || next[c.pos] != c.mid || c.mid >= N || next[c.mid] != c.end) continue;
    alive[c.mid] = false;
    next[c.pos] = c.end;
    if (c.end < N) prev[c.end] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  for (int64_t k = 0; k < N; k = next[k])
    out.push_back(find(bytes.substr(static_cast<size_t>(k), static_cast<size_t>(next[k] - k))));
}

std::vector<std::string_view> RankBpe::parts_below(int32_t rank) const {
  const std::string_view bytes = rank_bytes(rank);
  std::vector<std::string_view> parts;
  for (size_t k = 0; k < bytes.size(); ++k) parts.push_back(bytes.substr(k, 1));
  // Tokens are short: the plain quadratic merge loop, lowest joined rank first, leftmost on ties.
  for (;;) {
    size_t best = parts.size();
    int32_t best_rank = rank;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      const int32_t r = rank_of({parts[k].data(), parts[k].size() + parts[k + 1].size()});
      if (r < best_rank) best = k, best_rank = r;
    }
    if (best == parts.size()) return parts;
    parts[best] = {parts[best].data(), parts[best].size() + parts[best + 1].size()};
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

}  // namespace gptrain
