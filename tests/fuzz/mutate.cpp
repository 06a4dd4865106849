#include "tests/fuzz/mutate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace gptrain::fuzz {

namespace {

// Values at the edges of the integer types parsers convert to, and the usual float troublemakers.
const char* const kNumberTexts[] = {
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "127",
    "128",
    "255",
    "256",
    "32767",
    "32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "1e308",
    "1e309",
    "-1e309",
    "1e-320",
    "0.5",
    "-0.5",
    "1.5",
    "3e9",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "0x10",
    "1_000",
    "+1",
    "01",
    ".5",
    "5.",
    "1e",
    "-",
};

const uint64_t kRawInts[] = {
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x10000,
    0x7fffffff,
    0x80000000,
    0xffffffff,
    0x100000000ull,
    0x7fffffffffffffffull,
    0x8000000000000000ull,
    0xffffffffffffffffull,
    0xfffffffffffffffeull,
    1ull << 40,
    1ull << 48,
    1ull << 56,
};

// Byte strings that are not valid UTF-8 (or are, but troublesome: BOM, NUL, a surrogate escape).
const char* const kOddBytes[] = {
    "\x80",           "\xbf",         "\xc0\xaf",         "\xc3",
    "\xe2\x82",       "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80",
    "\xfe",           "\xff",         "\xef\xbb\xbf",     "\\ud800",
    "\\udc00\\ud800", "\\u0000",      "\\uZZZZ",          "\\",
};

size_t pos_in(Rng& rng, size_t size) { return size == 0 ? 0 : rng.below(size + 1); }

// [begin, end) of a run of ASCII digits (with a leading '-') at a random place, or nothing.
bool find_number(const std::string& s, Rng& rng, size_t& begin, size_t& end) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] >= '0' && s[i] <= '9' && (i == 0 || !(s[i - 1] >= '0' && s[i - 1] <= '9'))) starts.push_back(i);
  if (starts.empty()) return false;
  begin = starts[rng.below(starts.size())];
  end = begin;
  while (end < s.size() && ((s[end] >= '0' && s[end] <= '9') || s[end] == '.' || s[end] == 'e')) ++end;
  if (begin > 0 && s[begin - 1] == '-') --begin;
  return true;
}

std::string mutate_once(std::string s, const std::vector<std::string>& seeds,
                        const std::vector<std::string>& dictionary, Rng& rng, std::string& step) {
  const size_t n = s.size();
  switch (rng.below(12)) {
    case 0: {  // flip 1-8 bits
      if (n == 0) break;
      const int k = 1 + static_cast<int>(rng.below(8));
      for (int i = 0; i < k; ++i) s[rng.below(n)] ^= static_cast<char>(1u << rng.below(8));
      step = fmt::format("flip {} bits", k);
      break;
    }
    case 1: {  // set a byte
      if (n == 0) break;
      const size_t at = rng.below(n);
      s[at] = static_cast<char>(rng.below(256));
      step = fmt::format("set byte {}", at);
      break;
    }
    case 2: {  // insert random bytes
      const size_t at = pos_in(rng, n), k = 1 + rng.below(16);
      std::string ins(k, '\0');
      for (auto& c : ins) c = static_cast<char>(rng.below(256));
      s.insert(at, ins);
      step = fmt::format("insert {} bytes at {}", k, at);
      break;
    }
    case 3: {  // delete a range
      if (n == 0) break;
      const size_t at = rng.below(n), k = 1 + rng.below(std::min<size_t>(n - at, rng.chance(20) ? n : 16));
      s.erase(at, k);
      step = fmt::format("delete {} bytes at {}", k, at);
      break;
    }
    case 4: {  // duplicate a range somewhere else
      if (n == 0) break;
      const size_t from = rng.below(n), k = 1 + rng.below(std::min<size_t>(n - from, 64));
      const size_t to = pos_in(rng, n);
      s.insert(to, s.substr(from, k));
      step = fmt::format("duplicate {} bytes from {} to {}", k, from, to);
      break;
    }
    case 5: {  // truncate
      const size_t at = n == 0 ? 0 : rng.below(n);
      s.resize(at);
      step = fmt::format("truncate to {}", at);
      break;
    }
    case 6: {  // splice: a prefix of this with a suffix of another seed
      const std::string& other = seeds[rng.below(seeds.size())];
      const size_t a = pos_in(rng, n), b = pos_in(rng, other.size());
      s = s.substr(0, a) + other.substr(b);
      step = fmt::format("splice at {} with another seed from {}", a, b);
      break;
    }
    case 7: {  // an interesting number in place of a decimal one
      size_t b = 0, e = 0;
      if (!find_number(s, rng, b, e)) break;
      const char* t = kNumberTexts[rng.below(std::size(kNumberTexts))];
      s.replace(b, e - b, t);
      step = fmt::format("number at {} -> {}", b, t);
      break;
    }
    case 8: {  // an interesting integer over 1/2/4/8 raw little-endian bytes
      const size_t w = size_t{1} << rng.below(4);
      if (n < w) break;
      // Aligned offsets hit a binary header's fields more often than arbitrary ones.
      size_t at = rng.below(n - w + 1);
      if (rng.chance(50)) at -= at % w;
      uint64_t v = kRawInts[rng.below(std::size(kRawInts))];
      if (rng.chance(30)) v = ~v + 1;  // negated
      std::memcpy(s.data() + at, &v, w);
      step = fmt::format("{}-byte integer {:#x} at {}", w, v, at);
      break;
    }
    case 9: {  // a long run of one byte (deep nesting, long lines, long numbers)
      const char* const kRunBytes = "[{\"a0 \n\\-\xff";
      const char c = rng.chance(70) ? kRunBytes[rng.below(std::strlen(kRunBytes))] : static_cast<char>(rng.below(256));
      const size_t k = size_t{10} << (2 * rng.below(7));  // 10 .. 40960
      const size_t at = pos_in(rng, n);
      s.insert(at, std::string(k, c));
      step = fmt::format("run of {} x {:#04x} at {}", k, static_cast<unsigned char>(c), at);
      break;
    }
    case 10: {  // invalid UTF-8 (or an escape that decodes to it)
      const char* t = kOddBytes[rng.below(std::size(kOddBytes))];
      const size_t at = pos_in(rng, n);
      s.insert(at, t);
      step = fmt::format("odd bytes at {}", at);
      break;
    }
    case 11: {  // a token of the format
      if (dictionary.empty()) break;
      const std::string& t = dictionary[rng.below(dictionary.size())];
      const size_t at = pos_in(rng, n);
      if (rng.chance(50) || n == 0)
        s.insert(at, t);
      else
        s.replace(rng.below(n), std::min<size_t>(t.size(), 4), t);
      step = fmt::format("token \"{}\"", t);
      break;
    }
  }
  return s;
}

}  // namespace

Mutated mutate(const std::vector<std::string>& seeds, const std::vector<std::string>& dictionary, Rng& rng) {
  Mutated m;
  m.seed_index = rng.below(seeds.size());
  m.bytes = seeds[m.seed_index];
  // Half the inputs carry one mutation: a file damaged in one place gets past the first checks more often.
  const int k = rng.chance(50) ? 1 : 2 + static_cast<int>(rng.below(3));
  for (int i = 0; i < k; ++i) {
    std::string step = "no-op";
    m.bytes = mutate_once(std::move(m.bytes), seeds, dictionary, rng, step);
    m.steps.push_back(step);
  }
  return m;
}

std::string hex_dump(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 3 + bytes.size() / 32 + 1);
  for (size_t i = 0; i < bytes.size(); ++i) {
    out += fmt::format("{:02x}", static_cast<unsigned char>(bytes[i]));
    out += (i % 32 == 31 || i + 1 == bytes.size()) ? '\n' : ' ';
  }
  return out;
}

}  // namespace gptrain::fuzz
