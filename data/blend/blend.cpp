#include "data/blend/blend.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/common/error.h"

namespace gptrain {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Digits with single underscores between them (Python's digitpart); advances i past them.
bool digit_part(const std::string& s, size_t& i) {
  if (i >= s.size() || !is_digit(s[i])) return false;
  ++i;
  while (i < s.size() && (is_digit(s[i]) || (s[i] == '_' && i + 1 < s.size() && is_digit(s[i + 1])))) ++i;
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<double> parse_python_float(const std::string& text) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  const std::string s = text.substr(b, e - b);
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  const std::string word = lower(s.substr(i));
  const double sign = (i == 1 && s[0] == '-') ? -1.0 : 1.0;
  if (word == "inf" || word == "infinity") return sign * std::numeric_limits<double>::infinity();
  if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
  const bool int_part = digit_part(s, i);
  bool frac_part = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    frac_part = digit_part(s, i);
  }
  if (!int_part && !frac_part) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit_part(s, i)) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;  // hex ("0x10"), trailing text, ...
  std::string plain;
  for (char c : s)
    if (c != '_') plain += c;
  return std::strtod(plain.c_str(), nullptr);
}

BlendSpec parse_blend(const std::vector<std::string>& items, const std::string& flag) {
  check(!items.empty(), "{}: expected one or more dataset prefixes (optionally as weight prefix pairs)", flag);
  BlendSpec spec;
  if (items.size() % 2 == 0) {
    std::vector<double> w;
    std::vector<std::string> p;
    size_t numbers = 0;
    for (size_t i = 0; i < items.size(); i += 2) {
      const std::optional<double> v = parse_python_float(items[i]);
      numbers += v.has_value();
      w.push_back(v.value_or(0.0));
      p.push_back(items[i + 1]);
    }
    // Megatron reads the weights with Python's float(): all numbers -> pairs, none -> all prefixes. A mix
    // is a typo in one weight ("0x10" is no Python float), which Megatron fails on later or not at all.
    if (numbers != 0 && numbers != w.size())
      for (size_t i = 0; i < items.size(); i += 2)
        check(parse_python_float(items[i]).has_value(),
              "{}: '{}' (before {}) is not a number, but other weights are: expected weight prefix pairs with "
              "decimal weights (Python float syntax, no hex) or prefixes only",
              flag, items[i], items[i + 1]);
    if (numbers == w.size()) {
      for (size_t i = 0; i < w.size(); ++i)
        check(w[i] > 0 && std::isfinite(w[i]), "{}: weight '{}' of {} must be a positive number", flag, items[2 * i],
              p[i]);
      spec.prefixes = std::move(p);
      spec.weights = std::move(w);
      return spec;
    }
  }
  spec.prefixes = items;
  return spec;
}

static double pairwise_sum(const double* a, size_t n) {
  if (n < 8) {
    double r = -0.0;
    for (size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double numpy_sum(const std::vector<double>& v) { return pairwise_sum(v.data(), v.size()); }

std::vector<double> normalize_weights(const std::vector<double>& w) {
  const double s = numpy_sum(w);
  check(s > 0, "blend weights sum to {}, expected a positive sum", s);
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] / s;
  return out;
}

std::vector<int64_t> samples_per_dataset(const std::vector<double>& normalized, int64_t size, double surplus) {
  std::vector<int64_t> out;
  for (double w : normalized)
    out.push_back(static_cast<int64_t>(std::ceil(std::ceil(static_cast<double>(size) * w) * (1.0 + surplus))));
  return out;
}

BlendingIndex build_blending_index(const std::vector<double>& w, int64_t size) {
  check(w.size() < 32767, "a blend of {} datasets exceeds Megatron's int16 dataset index", w.size());
  BlendingIndex b;
  b.dataset_index.resize(static_cast<size_t>(size));
  b.dataset_sample_index.resize(static_cast<size_t>(size));
  std::vector<int64_t> count(w.size(), 0);
  for (int64_t s = 0; s < size; ++s) {
    const double x = std::max(static_cast<double>(s), 1.0);
    size_t best = 0;
    double best_err = std::numeric_limits<double>::lowest();
    for (size_t i = 0; i < w.size(); ++i) {
      const double err = w[i] * x - static_cast<double>(count[i]);
      if (err > best_err) {
        best_err = err;
        best = i;
      }
    }
    b.dataset_index[s] = static_cast<int16_t>(best);
    b.dataset_sample_index[s] = count[best]++;
  }
  return b;
}

BlendingIndex build_exhaustive_blending_index(const std::vector<int64_t>& sizes) {
  check(sizes.size() < 32767, "a blend of {} datasets exceeds Megatron's int16 dataset index", sizes.size());
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  std::vector<double> w(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) w[i] = static_cast<double>(sizes[i]) / static_cast<double>(total);
  BlendingIndex b;
  b.dataset_index.reserve(static_cast<size_t>(total));
  b.dataset_sample_index.reserve(static_cast<size_t>(total));
  std::vector<int64_t> count(sizes.size(), 0);
  for (int64_t s = 0; s < total; ++s) {
    const double x = std::max(static_cast<double>(s), 1.0);
    size_t best = 0;
    double best_err = std::numeric_limits<double>::lowest();
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (count[i] >= sizes[i]) continue;
      const double err = w[i] * x - static_cast<double>(count[i]);
      if (err > best_err) {
        best_err = err;
        best = i;
      }
    }
    b.dataset_index.push_back(static_cast<int16_t>(best));
    b.dataset_sample_index.push_back(count[best]++);
  }
  return b;
}

}  // namespace gptrain
