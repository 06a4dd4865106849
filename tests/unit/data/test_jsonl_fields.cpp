// extract_json_fields (data/jsonl/json_fields.h) against nlohmann::json as the reference: the same
// lines are accepted/rejected and the extracted "text"/"title" values are equal, on hand-picked edge
// cases and on 30000 random mutations of valid lines.
#include "data/jsonl/json_fields.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using gptrain::JsonField;

namespace {

const std::vector<std::string> kKeys = {"text", "title"};

// What nlohmann makes of line, in JsonField terms; accepted=false when it throws.
struct Ref {
  bool skip = false;  // nlohmann refuses numbers beyond double range ("1e400"); JSON and Python allow them
  bool accepted = false;
  bool object = false;
  std::vector<JsonField> fields;
};

Ref reference(const std::string& line) {
  Ref r;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error&) {
    return r;
  } catch (const nlohmann::json::out_of_range&) {
    r.skip = true;
    return r;
  }
  r.accepted = true;
  r.object = j.is_object();
  r.fields.assign(kKeys.size(), JsonField{});
  if (!r.object) return r;
  for (size_t k = 0; k < kKeys.size(); ++k) {
    auto it = j.find(kKeys[k]);
    if (it == j.end()) continue;
    JsonField& f = r.fields[k];
    if (it->is_string()) {
      f.kind = JsonField::kString;
      f.strings.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      f.kind = JsonField::kStringArray;
      for (const auto& e : *it) {
        if (!e.is_string()) {
          f.kind = JsonField::kOther;
          f.strings.clear();
          break;
        }
        f.strings.push_back(e.get<std::string>());
      }
    } else {
      f.kind = JsonField::kOther;
    }
  }
  return r;
}

void compare(const std::string& line) {
  INFO("line: " << nlohmann::json(line).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
  const Ref ref = reference(line);
  if (ref.skip) return;
  std::vector<JsonField> fields;
  std::string top;
  const std::string err = gptrain::extract_json_fields(line, kKeys, fields, top);
  INFO("ours: " << err);
  const bool accepted = err.empty() || err.rfind("not an object", 0) == 0;
  REQUIRE(accepted == ref.accepted);
  if (!accepted) return;
  REQUIRE(err.empty() == ref.object);
  if (!ref.object) return;
  for (size_t k = 0; k < kKeys.size(); ++k) {
    REQUIRE(fields[k].kind == ref.fields[k].kind);
    if (fields[k].kind != JsonField::kOther) REQUIRE(fields[k].strings == ref.fields[k].strings);
  }
}

}  // namespace

TEST_CASE("jsonl fields: edge cases agree with nlohmann::json") {
  const std::vector<std::string> lines = {
      R"({"text": "hello"})",
      R"({"text":"a\"b\\c\/d\b\f\n\r\t"})",
      R"({"text": "\u00e9\u4e2d\ud83d\ude00"})",
      R"({"text": "\ud83d"})",
      R"({"text": "\ude00"})",
      R"({"text": "\ud83dx"})",
      R"({"text": "\u12"})",
      R"({"text": "\x"})",
      "{\"text\": \"tab\there\"}",
      "{\"text\": \"caf\xC3\xA9\"}",
      "{\"text\": \"\xC3\"}",
      "{\"text\": \"\xED\xA0\x80\"}",
      "{\"text\": \"\xF4\x90\x80\x80\"}",
      "{\"text\": \"\xC0\xAF\"}",
      "{\"text\": \"\xE0\x80\xAF\"}",
      "{\"text\": \"\xF0\x9F\x98\x80\"}",
      R"({"text": ["a", "b"]})",
      R"({"text": []})",
      R"({"text": ["a", 1]})",
      R"({"text": 5})",
      R"({"text": null, "title": "t"})",
      R"({"id": 1})",
      R"({})",
      R"([])",
      R"("text")",
      R"(42)",
      R"(true)",
      R"(nul)",
      R"({"text": "a",})",
      R"({"text": "a"} x)",
      R"({"text": "a"}  )",
      R"(  {"text": "a"})",
      R"({"text": "a" "b"})",
      R"({text: "a"})",
      R"({"text": 'a'})",
      R"({"n": 01})",
      R"({"n": -0.5e+10})",
      R"({"n": 1.})",
      R"({"n": .5})",
      R"({"n": -})",
      R"({"n": 1e})",
      R"({"n": [1, {"a": [null]}]})",
      R"({"text": "a", "text": "b"})",
      R"({"a": {"text": "nested"}, "text": "top"})",
      R"({"text": "unterminated)",
      R"({"text": "a")",
      R"({"text": "a"}})",
      "{\"text\": \"a\"}\n",
      "{\"text\":\"a\u007f\"}",
      R"({"text":"\u0000"})",
      R"({"title": "x", "text": ["\n", "\u00e9"]})",
      R"({"n": 1e400})",
      R"({"n": tru})",
      R"({"n": falsey})",
  };
  for (const auto& line : lines) compare(line);
}

// nlohmann skips a leading byte-order mark; Python's json (Megatron's tool) refuses it, and so does gptrain,
// naming it rather than "expected a value at byte 0".
TEST_CASE("jsonl fields: a UTF-8 byte-order mark is refused by name") {
  std::vector<JsonField> fields;
  std::string top;
  const std::string err = gptrain::extract_json_fields("\xEF\xBB\xBF{\"text\": \"a\"}", kKeys, fields, top);
  INFO(err);
  REQUIRE(err.find("byte-order mark") != std::string::npos);
}

TEST_CASE("jsonl fields: random mutations agree with nlohmann::json") {
  const std::vector<std::string> seeds = {
      R"({"text": "Hello, world\n\"quoted\" \u00e9 \ud83d\ude00", "id": [1, 2.5e3, {"k": null}], "title": "T"})",
      R"({"id": "x", "text": ["one", "two\t", ""], "meta": {"a": true, "b": false}})",
      "{\"text\": \"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\", \"n\": -12}",
  };
  const std::string alphabet = "{}[]\":,\\/ ntfrueals0123456789.-+eEu\xC3\xA9\xED\xF0\x9F\x80";
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 30000; ++iter) {
    std::string s = seeds[iter % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng() % s.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: s[at] = c; break;
        case 1: s.insert(s.begin() + static_cast<long>(at), c); break;
        default: s.erase(at, 1); break;
      }
    }
    compare(s);
  }
}
