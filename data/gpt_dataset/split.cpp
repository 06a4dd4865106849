#include "data/gpt_dataset/split.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/common/error.h"

namespace gptrain {

const char* split_name(SplitKind s) { return split_name(static_cast<int>(s)); }
const char* split_name(int s) {
  static const char* names[3] = {"train", "valid", "test"};
  return (s >= 0 && s < 3) ? names[s] : "?";
}

std::array<double, 3> parse_split(const std::string& split) {
  std::vector<double> nums;
  size_t i = 0;
  while (i < split.size()) {
    const char c = split[i];
    if ((c >= '0' && c <= '9') || c == '.') {
      size_t j = i;
      while (j < split.size() && ((split[j] >= '0' && split[j] <= '9') || split[j] == '.')) ++j;
      const std::string tok = split.substr(i, j - i);
      char* endp = nullptr;
      const double v = std::strtod(tok.c_str(), &endp);
      check(endp == tok.c_str() + tok.size() && tok != ".", "--split '{}': '{}' is not a number", split, tok);
      nums.push_back(v);
      i = j;
    } else {
      // Megatron's scan skips every other character, so "-1,50,50" would read as 1,50,50, "nan,1,1" as 1,1
      // and "1e3" as 1,3: signs and letters change a number's meaning and are refused; anything else
      // (commas, blanks, quotes, slashes) separates.
      check(c != '-' && c != '+' && !std::isalpha(static_cast<unsigned char>(c)),
            "--split '{}': unexpected '{}' at position {}; expected up to three non-negative numbers separated "
            "by commas (e.g. 969,30,1)",
            split, c, i);
      ++i;
    }
  }
  check(!nums.empty() && nums.size() <= 3, "--split '{}': expected one to three numbers (train, valid, test), got {}",
        split, nums.size());
  while (nums.size() < 3) nums.push_back(0.0);
  const double sum = nums[0] + nums[1] + nums[2];
  check(std::isfinite(sum), "--split '{}': the weights must be finite", split);
  check(sum > 0.0, "--split '{}': the weights sum to zero", split);
  return {nums[0] / sum, nums[1] / sum, nums[2] / sum};
}

std::array<std::optional<SeqRange>, 3> split_ranges(const std::array<double, 3>& w, int64_t n) {
  std::array<std::optional<SeqRange>, 3> out;
  double lo = 0.0;
  for (int k = 0; k < 3; ++k) {
    const double hi = lo + w[k];
    if (hi != lo) {
      // nearbyint under the default rounding mode is round-half-to-even, like Python's round().
      const double nd = static_cast<double>(n);
      out[k] = SeqRange{static_cast<int64_t>(std::nearbyint(lo * nd)), static_cast<int64_t>(std::nearbyint(hi * nd))};
    }
    lo = hi;
  }
  return out;
}

}  // namespace gptrain
