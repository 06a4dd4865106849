// Per-tokenizer cache: piece bytes -> its BPE ids. Open addressing over two arenas (key bytes, ids);
// cleared wholesale when it reaches its capacity, which bounds memory on endless input. Not
// thread-safe: each GPT2Tokenizer owns one.
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
    uint64_t h = 0xcbf29ce484222325ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ w) * 0x100000001b3ull;
      h ^= h >> 29;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
  }

  // Appends the cached ids of key to out and returns true, or returns false.
  bool lookup(std::string_view key, uint64_t h, std::vector<int32_t>& out) const {
    for (size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
      const Entry& e = table_[slot];
      if (e.key_len == kEmpty) return false;
      if (e.hash == h && e.key_len == key.size() && std::memcmp(keys_.data() + e.key_off, key.data(), key.size()) == 0) {
        out.insert(out.end(), ids_.begin() + e.ids_off, ids_.begin() + e.ids_off + e.ids_len);
        return true;
      }
    }
  }

  void insert(std::string_view key, uint64_t h, const int32_t* ids, size_t count) {
    if (size_ >= capacity_) reset();
    size_t slot = h & mask_;
    while (table_[slot].key_len != kEmpty) slot = (slot + 1) & mask_;
    table_[slot] = Entry{h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(key.size()),
                         static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(count)};
    keys_.insert(keys_.end(), key.begin(), key.end());
    ids_.insert(ids_.end(), ids, ids + count);
    ++size_;
  }

  void reset() {
    size_t slots = 64;
    while (slots < capacity_ * 2) slots *= 2;
    table_.assign(slots, Entry{0, 0, kEmpty, 0, 0});
    mask_ = slots - 1;
    keys_.clear();
    ids_.clear();
    size_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  struct Entry {
    uint64_t hash;
    uint32_t key_off, key_len, ids_off, ids_len;
  };
  size_t capacity_;
  size_t size_ = 0;
  size_t mask_ = 0;
  std::vector<Entry> table_;
  std::vector<char> keys_;
  std::vector<int32_t> ids_;
};

}  // namespace gptrain
