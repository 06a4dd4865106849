#include "core/model/moe_config.h"

#include "core/common/error.h"

#include <cctype>

namespace gptrain {

int MoeConfig::num_moe_layers() const {
  int n = 0;
  for (int v : layer_pattern) n += v != 0;
  return enabled() ? n : 0;
}

namespace {

// Recursive descent over Megatron's pattern expressions:
//   expr   := term ('+' term)*
//   term   := factor ('*' factor)*      (one side of each product is an integer)
//   factor := '[' int (',' int)* ']' | '(' expr ')' | int
// A value is a list or an integer; list * int repeats the list, as Python does.
class PatternParser {
 public:
  explicit PatternParser(const std::string& s) : s_(s) {}

  std::vector<int> parse() {
    Value v = expr();
    skip();
    if (pos_ != s_.size()) error("unexpected '" + std::string(1, s_[pos_]) + "'");
    if (!v.is_list) error("the expression is an integer, not a list");
    return v.list;
  }

 private:
  struct Value {
    bool is_list = false;
    std::vector<int> list;
    long n = 0;
  };
  const std::string& s_;
  std::size_t pos_ = 0;

  [[noreturn]] void error(const std::string& what) const {
    fail(
        "--moe-layer-freq \"{}\": {} at character {}; expected an integer or a list expression such as "
        "\"([0]*3+[1]*1)*2\"",
        s_, what, pos_ + 1);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  long integer() {
    skip();
    std::size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_) error("expected a number");
    if (pos_ - start > 6) error("number too large");
    return std::stol(s_.substr(start, pos_ - start));
  }
  Value expr() {
    Value v = term();
    while (eat('+')) {
      Value r = term();
      if (!v.is_list || !r.is_list) error("'+' joins two lists");
      v.list.insert(v.list.end(), r.list.begin(), r.list.end());
    }
    return v;
  }
  Value term() {
    Value v = factor();
    while (eat('*')) {
      Value r = factor();
      if (v.is_list == r.is_list) error("'*' repeats a list by an integer");
      Value& list = v.is_list ? v : r;
      const long times = v.is_list ? r.n : v.n;
      if (times * long(list.list.size()) > 100000) error("the list is too long");
      Value out;
      out.is_list = true;
      for (long i = 0; i < times; ++i) out.list.insert(out.list.end(), list.list.begin(), list.list.end());
      v = std::move(out);
    }
    return v;
  }
  Value factor() {
    Value v;
    if (eat('(')) {
      v = expr();
      if (!eat(')')) error("expected ')'");
    } else if (eat('[')) {
      v.is_list = true;
      if (!eat(']')) {
        do {
          const long x = integer();
          if (x != 0 && x != 1) error("layer entries are 0 (dense) or 1 (MoE)");
          v.list.push_back(int(x));
        } while (eat(','));
        if (!eat(']')) error("expected ']'");
      }
    } else {
      v.n = integer();
    }
    return v;
  }
};

}  // namespace

std::vector<int> moe_layer_pattern(const std::string& freq, int num_layers) {
  std::vector<int> p;
  if (freq.find('[') == std::string::npos) {
    int n = 0;
    try {
      std::size_t used = 0;
      n = std::stoi(freq, &used);
      check(used == freq.size(), "");
    } catch (...) {
      fail(
          "--moe-layer-freq \"{}\": expected an integer N (every N-th layer is MoE, starting at layer 0) or a "
          "list expression such as \"([0]*3+[1]*1)*2\"",
          freq);
    }
    check(n >= 1, "--moe-layer-freq must be >= 1 (got {})", n);
    for (int i = 0; i < num_layers; ++i) p.push_back(i % n == 0 ? 1 : 0);
    return p;
  }
  p = PatternParser(freq).parse();
  check(int(p.size()) == num_layers, "--moe-layer-freq \"{}\" gives {} layers; --num-layers is {}", freq, p.size(),
        num_layers);
  return p;
}

void update_expert_bias(std::vector<float>& bias, const std::vector<std::vector<double>>& counts, const MoeConfig& m) {
  const std::size_t E = std::size_t(m.num_experts);
  for (std::size_t l = 0; l < counts.size() && (l + 1) * E <= bias.size(); ++l) {
    if (!m.is_moe_layer(int(l))) continue;
    const std::vector<double>& n = counts[l];
    double total = 0.0;
    for (double x : n) total += x;
    const double mean = total / double(E);
    for (std::size_t e = 0; e < E; ++e) {
      const float sign = n[e] < mean ? 1.0f : (n[e] > mean ? -1.0f : 0.0f);
      bias[l * E + e] += sign * m.bias_update_rate;
    }
  }
}

MoeBalance parse_moe_balance(const std::string& s) {
  if (s == "aux_loss") return MoeBalance::AuxLoss;
  if (s == "seq_aux_loss") return MoeBalance::SeqAuxLoss;
  if (s == "none") return MoeBalance::None;
  if (s == "sinkhorn") return MoeBalance::Sinkhorn;
  fail("--moe-router-load-balancing-type {}: expected aux_loss, seq_aux_loss, sinkhorn or none", s);
}

MoeScore parse_moe_score(const std::string& s) {
  if (s == "softmax") return MoeScore::Softmax;
  if (s == "sigmoid") return MoeScore::Sigmoid;
  fail("--moe-router-score-function {}: expected softmax or sigmoid", s);
}

MoeDropPolicy parse_moe_drop_policy(const std::string& s) {
  if (s == "probs") return MoeDropPolicy::Probs;
  if (s == "position") return MoeDropPolicy::Position;
  fail("--moe-token-drop-policy {}: expected probs or position", s);
}

}  // namespace gptrain
