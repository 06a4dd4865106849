// Fuzz targets of data/: the Megatron .idx/.bin reader, JSON-lines input (plain, gzip, zstd) and its
// field extraction, the GPT-2 vocab.json / merges.txt readers, the index cache's .npy files and
// --per-split-data-args-path.
#include "core/common/error.h"
#include "data/gpt_dataset/npy_file.h"
#include "data/indexed/indexed_dataset.h"
#include "data/jsonl/json_fields.h"
#include "data/jsonl/line_reader.h"
#include "data/loader/data_args_files.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "tests/fuzz/fuzz_target.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>
#include <zstd.h>

namespace gptrain::fuzz {

namespace {

const std::vector<std::string> kJsonTokens = {"{",   "}",    "[",    "]",     "\"",       ":",
                                              ",",   "null", "true", "false", "\\u",      "\\\"",
                                              "1e5", "-",    " ",    "\n",    "\"text\"", "{\"text\": \"\"}"};

// ---- .idx / .bin ----
std::vector<std::string> indexed_seeds(const fs::path& dir) {
  std::vector<std::string> seeds;
  int k = 0;
  for (IndexDType dtype : {IndexDType::uint16, IndexDType::int32, IndexDType::int64, IndexDType::float64}) {
    const std::string prefix = (dir / fmt::format("seed{}", k++)).string();
    IndexedDatasetWriter w(prefix, dtype);
    const std::vector<int32_t> a = {5, 7, 11, 50256}, b = {1, 2}, c = {3};
    w.add_sequence(a);
    w.end_document();
    w.end_document();  // an empty document
    w.add_sequence(b);
    w.add_sequence(c);
    w.end_document();
    w.finalize();
    seeds.push_back(pack_files({{"p.idx", read_file(prefix + ".idx")}, {"p.bin", read_file(prefix + ".bin")}}));
  }
  return seeds;
}

void indexed_run(const std::string& input, const fs::path&, const fs::path& in) {
  unpack_files(input, in, {"p.idx", "p.bin"});
  const IndexedDataset ds = IndexedDataset::open((in / "p").string());
  int64_t tokens = 0;
  for (int64_t i = 0; i < ds.num_sequences(); ++i) tokens += static_cast<int64_t>(ds.sequence(i).size());
  if (tokens != ds.num_tokens())
    throw Violation(fmt::format("read {} tokens, the index says {}", tokens, ds.num_tokens()));
}

// ---- JSON lines ----
std::string jsonl_text(int variant) {
  switch (variant) {
    case 0: return "{\"text\": \"hello world\", \"id\": 1}\n{\"text\": \"caf\\u00e9 \\ud83d\\ude00\"}\n";
    case 1: return "{\"meta\": {\"a\": [1, 2.5, -3e2, null, true]}, \"text\": [\"a\", \"b\"]}\r\n\n{\"text\": \"x\"}";
    default: return "{\"text\": \"line with \\\"quotes\\\" and \\n escapes\", \"text\": \"dup\"}\n[1, 2]\n\"str\"\n";
  }
}

std::string gzip(const std::string& data) {
  z_stream z{};
  check(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "fuzz: deflateInit2");
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  check(deflate(&z, Z_FINISH) == Z_STREAM_END, "fuzz: deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  check(!ZSTD_isError(n), "fuzz: ZSTD_compress");
  out.resize(n);
  return out;
}

// Reads every line and extracts "text" and "meta" as preprocess_data does; the extractor must accept
// exactly what nlohmann::json accepts (its documented contract) and find the same "text" string.
void read_jsonl(const fs::path& path) {
  LineReader r(path.string());
  const std::vector<std::string> keys = {"text", "meta"};
  std::string_view line;
  while (r.next(line)) {
    std::vector<JsonField> fields;
    std::string top;
    const std::string err = extract_json_fields(line, keys, fields, top);
    const bool ours = err.empty() || err.rfind("not an object", 0) == 0;
    const bool nlohmann_accepts = nlohmann::json::accept(line);
    bool reference = nlohmann_accepts;
    // Where nlohmann::json is not the reference: it stops at a NUL byte and skips a UTF-8 byte order
    // mark (both are refused, as Python's json does), and it refuses numbers beyond double's range,
    // which RFC 8259 and Python accept.
    const bool nul_or_bom = line.find('\0') != std::string_view::npos || line.rfind("\xef\xbb\xbf", 0) == 0;
    if (!reference && ours) {
      try {
        [[maybe_unused]] const auto j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        reference = std::string_view(e.what()).find("number overflow") != std::string_view::npos;
      }
    }
    if (ours != reference && !nul_or_bom)
      throw Violation(fmt::format("line {}: extract_json_fields says \"{}\", nlohmann::json {}", r.line_number(), err,
                                  reference ? "accepts it" : "refuses it"));
    if (err.empty() && nlohmann_accepts && !nul_or_bom && fields[0].kind == JsonField::kString) {
      const auto j = nlohmann::json::parse(line);
      if (!j["text"].is_string() || j["text"].get<std::string>() != fields[0].strings[0])
        throw Violation(fmt::format("line {}: \"text\" extracted as {:?}, nlohmann::json reads {}", r.line_number(),
                                    fields[0].strings[0], j["text"].dump()));
    }
  }
}

Target jsonl_target(const std::string& name, const std::string& ext, std::string (*compress)(const std::string&)) {
  Target t;
  t.name = name;
  t.seeds = [compress](const fs::path&) {
    std::vector<std::string> s;
    for (int v = 0; v < 3; ++v) s.push_back(compress ? compress(jsonl_text(v)) : jsonl_text(v));
    if (compress) s.push_back(compress(jsonl_text(0)) + compress(jsonl_text(1)));  // two members/frames
    return s;
  };
  t.run = [ext](const std::string& input, const fs::path&, const fs::path& in) {
    write_file(in / ("in" + ext), input);
    read_jsonl(in / ("in" + ext));
  };
  t.dictionary = kJsonTokens;
  return t;
}

// ---- vocab.json / merges.txt ----
std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's spelling of a byte string (bytes_to_unicode).
std::string spelled(const std::string& bytes) {
  std::string s;
  for (unsigned char b : bytes) s += utf8(byte_to_unicode(b));
  return s;
}

// A tiny byte-level BPE: the 256 byte tokens, a few merges, <|endoftext|>.
const std::vector<std::pair<std::string, std::string>> kMerges = {{" ", "t"}, {"h", "e"}, {" t", "he"}, {"a", "b"}};

std::string tiny_vocab_json(bool reversed) {
  nlohmann::ordered_json v = nlohmann::ordered_json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) v[spelled(std::string(1, static_cast<char>(b)))] = id++;
  for (const auto& [l, r] : kMerges) v[spelled(l + r)] = id++;
  v["<|endoftext|>"] = id++;
  if (!reversed) return v.dump();
  nlohmann::ordered_json w = nlohmann::ordered_json::object();  // same map, another key order
  for (auto it = v.items().begin(); it != v.items().end(); ++it) w[it.key()] = it.value();
  return w.dump(1);
}

std::string tiny_merges_txt(bool crlf) {
  std::string s = "#version: 0.2";
  for (const auto& [l, r] : kMerges) s += std::string(crlf ? "\r\n" : "\n") + spelled(l) + " " + spelled(r);
  return s + "\n";
}

// Loads the pair and checks the tokenizer's promise decode(encode(s)) == s on a few byte strings.
void tokenizer_run(const fs::path& vocab, const fs::path& merges) {
  GPT2Tokenizer tok(vocab.string(), merges.string());
  GPT2Tokenizer plain(vocab.string(), merges.string(), {.special_tokens_as_text = true});
  for (const std::string text : {"the tab the", "x<|endoftext|>y", "caf\xc3\xa9 \xff\xfe ab"}) {
    const std::vector<int32_t> ids = tok.encode(text);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size())
        throw Violation(fmt::format("encode gave id {} outside the vocabulary", id));
    const std::string back = plain.decode(plain.encode(text));
    if (back != text) throw Violation(fmt::format("decode(encode({:?})) is {:?}", text, back));
  }
}

// ---- .npy ----
std::vector<std::string> npy_seeds(const fs::path& dir) {
  std::vector<std::string> seeds;
  const std::vector<int64_t> v = {1, -2, 3, 4, 5, 6};
  const std::vector<int32_t> w = {7, 8, 9};
  write_npy((dir / "a.npy").string(), "<i8", {2, 3}, v.data(), 8);
  write_npy((dir / "b.npy").string(), "<i4", {3}, w.data(), 4);
  write_npy((dir / "c.npy").string(), "<i4", {0}, w.data(), 4);
  for (const char* f : {"a.npy", "b.npy", "c.npy"}) seeds.push_back(read_file(dir / f));
  return seeds;
}

}  // namespace

std::vector<Target> data_targets() {
  std::vector<Target> out;
  out.push_back({"indexed", indexed_seeds, indexed_run, {"MMIDIDX", "\n", "0", "\x01", "\xff\xff\xff\xff"}, nullptr});
  out.push_back(jsonl_target("jsonl", ".jsonl", nullptr));
  out.push_back(jsonl_target("jsonl_gz", ".jsonl.gz", gzip));
  out.push_back(jsonl_target("jsonl_zst", ".jsonl.zst", zstd));

  Target vocab;
  vocab.name = "vocab_json";
  vocab.seeds = [](const fs::path& dir) {
    write_file(dir / "merges.txt", tiny_merges_txt(false));
    return std::vector<std::string>{tiny_vocab_json(false), tiny_vocab_json(true)};
  };
  vocab.run = [](const std::string& input, const fs::path& dir, const fs::path& in) {
    write_file(in / "vocab.json", input);
    tokenizer_run(in / "vocab.json", dir / "merges.txt");
  };
  vocab.dictionary = kJsonTokens;
  vocab.dictionary.push_back("\"<|endoftext|>\"");
  // A merges.txt that no longer matches the damaged vocabulary is named in the error instead.
  vocab.names_source = [](const std::string& m, const fs::path& in) {
    return m.find(in.string()) != std::string::npos || m.find("merges.txt") != std::string::npos;
  };
  out.push_back(vocab);

  Target merges;
  merges.name = "merges_txt";
  merges.seeds = [](const fs::path& dir) {
    write_file(dir / "vocab.json", tiny_vocab_json(false));
    return std::vector<std::string>{tiny_merges_txt(false), tiny_merges_txt(true)};
  };
  merges.run = [](const std::string& input, const fs::path& dir, const fs::path& in) {
    write_file(in / "merges.txt", input);
    tokenizer_run(dir / "vocab.json", in / "merges.txt");
  };
  merges.dictionary = {"#version: 0.2\n", " ", "\n", "\r\n", "\xc4\xa0", "<|endoftext|>", "#"};
  out.push_back(merges);

  Target npy;
  npy.name = "npy";
  npy.seeds = npy_seeds;
  npy.run = [](const std::string& input, const fs::path&, const fs::path& in) {
    write_file(in / "a.npy", input);
    const NpyArray a = map_npy((in / "a.npy").string());
    if (a.num_elements() < 0) throw Violation("negative element count");
  };
  npy.dictionary = {"'descr':", "'<i8'", "'<u4'", "'fortran_order':", "False", "True", "'shape':", "(", ")",
                    ",",        "{",     "}",     "\x93NUMPY",        "\n"};
  out.push_back(npy);

  Target split;
  split.name = "per_split_data_args";
  split.seeds = [](const fs::path&) {
    return std::vector<std::string>{R"({"train": ["0.7", "a", "0.3", "b"], "valid": "c", "test": null})",
                                    R"({"train": [1, "x"], "valid": null, "test": "y"})"};
  };
  split.run = [](const std::string& input, const fs::path&, const fs::path& in) {
    write_file(in / "split.json", input);
    DataArgs args;
    read_per_split_data_args((in / "split.json").string(), args);
  };
  split.dictionary = kJsonTokens;
  out.push_back(split);
  return out;
}

}  // namespace gptrain::fuzz
