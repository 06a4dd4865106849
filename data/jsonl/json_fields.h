// A validating JSON reader for one JSON-lines document that extracts only the requested top-level
// keys. It accepts exactly RFC 8259 JSON (strict: no comments, no trailing commas, no NaN, strings must
// be valid UTF-8 and escapes/surrogate pairs well formed, like nlohmann::json's parser) but it builds
// nothing for the values it skips, which makes preprocess_data's parsing several times cheaper than a
// full DOM. tests/unit/data/test_jsonl_fields.cpp checks it against nlohmann::json on edge
// cases and random mutations.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

struct JsonField {
  enum Kind { kMissing, kString, kStringArray, kOther };
  Kind kind = kMissing;
  std::vector<std::string> strings;  // kString: one; kStringArray: the elements
  std::string other_type;            // kOther (or an array with a non-string): "number", "object", ...
};

// Parses line as one JSON value. When it is an object, fields[k] receives keys[k]'s value (the last
// one when a key repeats). Returns "" on success, else a message ("at byte 17: expected ':'"); when
// the line is valid JSON but not an object, returns "not an object: <type>" and top_type names it.
std::string extract_json_fields(std::string_view line, const std::vector<std::string>& keys,
                                std::vector<JsonField>& fields, std::string& top_type);

}  // namespace gptrain
