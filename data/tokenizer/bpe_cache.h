// Per-tokenizer cache: piece bytes -> its BPE ids. Open addressing with one 64-byte slot per entry
// that holds the hash, the first 16 key bytes and up to 6 ids inline, so a typical hit (a word of
// <= 16 bytes, <= 6 tokens) touches one cache line; longer keys/ids live in two arenas. Cleared
// wholesale when it reaches its capacity, which bounds memory on endless input. Not thread-safe:
// each GPT2Tokenizer owns one.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace gptrain {

class BpeCache {
 public:
  explicit BpeCache(size_t capacity) : capacity_(capacity < 16 ? 16 : capacity) { reset(); }

  static uint64_t hash(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    h = (h ^ load_partial(s.data() + i, s.size() - i)) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
  }

  // Appends the cached ids of key to out and returns true, or returns false.
  bool lookup(std::string_view key, uint64_t h, std::vector<int32_t>& out) const {
    uint64_t k0, k1;
    head(key, k0, k1);
    for (size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
      const Entry& e = table_[slot];
      if (e.key_len == kEmpty) return false;
      if (e.hash == h && e.key_len == key.size() && e.k0 == k0 && e.k1 == k1 &&
          (key.size() <= 16 || std::memcmp(keys_.data() + e.key_off, key.data() + 16, key.size() - 16) == 0)) {
        const size_t at = out.size();
        out.resize(at + e.ids_len);
        const int32_t* src = e.ids_len <= kInlineIds ? e.ids : ids_.data() + e.ids_off;
        std::memcpy(out.data() + at, src, e.ids_len * sizeof(int32_t));
        return true;
      }
    }
  }

  void insert(std::string_view key, uint64_t h, const int32_t* ids, size_t count) {
    if (size_ >= capacity_) reset();
    size_t slot = h & mask_;
    while (table_[slot].key_len != kEmpty) slot = (slot + 1) & mask_;
    Entry& e = table_[slot];
    e.hash = h;
    head(key, e.k0, e.k1);
    e.key_len = static_cast<uint32_t>(key.size());
    e.key_off = static_cast<uint32_t>(keys_.size());
    if (key.size() > 16) keys_.insert(keys_.end(), key.begin() + 16, key.end());
    e.ids_len = static_cast<uint32_t>(count);
    if (count <= kInlineIds) {
      std::memcpy(e.ids, ids, count * sizeof(int32_t));
      e.ids_off = 0;
    } else {
      e.ids_off = static_cast<uint32_t>(ids_.size());
      ids_.insert(ids_.end(), ids, ids + count);
    }
    ++size_;
  }

  // Appends the ids of piece: from the cache, or from encode(piece, out) (which appends them), cached
  // when the piece is at most max_cached bytes (longer ones are rare and would crowd the cache).
  template <class Encode>
  void encode_cached(std::string_view piece, std::vector<int32_t>& out, Encode&& encode, size_t max_cached = 256) {
    const bool cached = piece.size() <= max_cached;
    const uint64_t h = cached ? hash(piece) : 0;
    if (cached && lookup(piece, h, out)) return;
    const size_t before = out.size();
    encode(piece, out);
    if (cached) insert(piece, h, out.data() + before, out.size() - before);
  }

  void reset() {
    size_t slots = 64;
    while (slots < capacity_ * 2) slots *= 2;
    table_.assign(slots, Entry{});
    mask_ = slots - 1;
    keys_.clear();
    ids_.clear();
    size_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  static constexpr size_t kInlineIds = 6;
  struct alignas(64) Entry {
    uint64_t hash = 0;
    uint64_t k0 = 0, k1 = 0;                 // first 16 key bytes, zero-padded
    uint32_t key_len = kEmpty, key_off = 0;  // key bytes past 16 are keys_[key_off, + key_len - 16)
    uint32_t ids_len = 0, ids_off = 0;
    int32_t ids[kInlineIds] = {};
  };
  // Little-endian value of the n < 8 bytes at p, zero-extended, with register shifts only (a
  // variable-length memcpy into a stack word stalls store-to-load forwarding on the hot path).
  static uint64_t load_partial(const char* p, size_t n) {
    if (n >= 4) {
      uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      return a | (static_cast<uint64_t>(b) << (8 * (n - 4)));  // the overlap holds equal bytes
    }
    if (n == 0) return 0;
    const auto byte = [&](size_t k) { return static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k); };
    return byte(0) | byte(n / 2) | byte(n - 1);
  }
  static void head(std::string_view key, uint64_t& k0, uint64_t& k1) {
    const size_t n = key.size();
    if (n >= 16) {
      std::memcpy(&k0, key.data(), 8);
      std::memcpy(&k1, key.data() + 8, 8);
    } else if (n >= 8) {
      std::memcpy(&k0, key.data(), 8);
      k1 = load_partial(key.data() + 8, n - 8);
    } else {
      k0 = load_partial(key.data(), n);
      k1 = 0;
    }
  }

  size_t capacity_;
  size_t size_ = 0;
  size_t mask_ = 0;
  std::vector<Entry> table_;
  std::vector<char> keys_;
  std::vector<int32_t> ids_;
};

}  // namespace gptrain
