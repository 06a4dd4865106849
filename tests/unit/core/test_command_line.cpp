// The command-line grammar of every app (argparse's): unique prefixes, ambiguous ones listing their
// candidates, exact names winning over longer ones, --flag=value, last-wins for repeated flags, list flags
// up to the next flag, negative numbers as values, and unknown flags reported one per line with the
// nearest known flag.
#include "core/common/error.h"
#include "error_text.h"
#include "core/config/command_line.h"
#include "core/config/flag_table.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace gptrain;

namespace {

struct Flags {
  int num_layers = 0;
  std::optional<int> num_layers_per_stage;
  double lr = 0.0;
  std::string lr_decay_style = "linear";
  std::vector<std::string> data_path;
  std::string split;
  bool swiglu = false;
  FlagTable table() {
    FlagTable t;
    t.value("num-layers", &num_layers, "layers");
    t.value("num-layers-per-stage", &num_layers_per_stage, "layers per stage");
    t.value("lr", &lr, "learning rate");
    t.choice("lr-decay-style", &lr_decay_style, {"linear", "cosine"}, "decay");
    t.list("data-path", &data_path, "prefixes");
    t.value("split", &split, "split");
    t.flag("swiglu", &swiglu, "gated MLP");
    t.unsupported("recompute-granularity", "not implemented");
    return t;
  }
};

Flags parse_flags(std::vector<std::string> args) {
  args.insert(args.begin(), "app");
  std::vector<const char*> argv;
  for (auto& s : args) argv.push_back(s.c_str());
  Flags f;
  FlagTable t = f.table();
  const bool parsed = t.parse("app", int(argv.size()), argv.data());  // throws Error outside REQUIRE
  REQUIRE(parsed);
  return f;
}

std::string error_of(std::vector<std::string> args) {
  return test::error_text([&] { parse_flags(std::move(args)); });
}

}  // namespace

TEST_CASE("command line: prefixes, exact names, --flag=value, last wins", "[config]") {
  CHECK(parse_flags({"--sw", "--data", "a", "b"}).swiglu);  // unique prefixes
  CHECK(parse_flags({"--sw", "--data", "a", "b"}).data_path == std::vector<std::string>{"a", "b"});
  CHECK(parse_flags({"--lr", "0.5"}).lr == 0.5);                        // exact, though --lr-decay-style starts so
  CHECK(parse_flags({"--lr-d", "cosine"}).lr_decay_style == "cosine");  // unique prefix of the longer name
  CHECK(parse_flags({"--num-layers", "2"}).num_layers == 2);            // exact wins over --num-layers-per-stage
  CHECK(parse_flags({"--num-layers=5"}).num_layers == 5);
  CHECK(parse_flags({"--num-layers", "2", "--num-layers", "3"}).num_layers == 3);  // the last one wins
  CHECK(parse_flags({"--data-path", "a", "--data-path", "b", "c"}).data_path == std::vector<std::string>{"b", "c"});
  CHECK(parse_flags({"--split", "-1,50,50"}).split == "-1,50,50");  // a leading '-' value is a value
  CHECK(parse_flags({"--data-path=x"}).data_path == std::vector<std::string>{"x"});
}

TEST_CASE("command line: ambiguous prefixes, unknown flags and stray arguments are errors", "[config]") {
  const std::string amb = error_of({"--num-lay", "2"});
  CHECK(amb.find("ambiguous option: --num-lay could match --num-layers, --num-layers-per-stage") != std::string::npos);
  const std::string unk = error_of({"--num-layerz", "2", "--swigly", "stray"});
  CHECK(unk.find("2 problems") != std::string::npos);
  CHECK(unk.find("\n  --num-layerz: unknown flag (did you mean --num-layers?)") != std::string::npos);
  CHECK(unk.find("\n  --swigly: unknown flag (did you mean --swiglu?)") != std::string::npos);
  // A long garbage name (the fuzzer's 40 KB run) gets no suggestion, and no edit distance is computed.
  const std::string garbage = "--num-" + std::string(40960, 'x');
  const std::string long_error = error_of({garbage});
  CHECK(long_error.find("x: unknown flag") != std::string::npos);
  CHECK(long_error.find("did you mean") == std::string::npos);
  CHECK(nearest_name(std::string(40960, 'x'), {"num-layers", "swiglu"}).empty());
  CHECK(nearest_name("num-layerz", {"num-layers", "swiglu"}) == "num-layers");
  CHECK(error_of({"oops"}).find("'oops': unexpected argument") != std::string::npos);
  CHECK(error_of({"--swiglu=1"}).find("--swiglu takes no value") != std::string::npos);
  CHECK(error_of({"--num-layers"}).find("--num-layers: expected one value") != std::string::npos);
  CHECK(error_of({"--data-path", "--swiglu"}).find("--data-path: expected at least one value") != std::string::npos);
  CHECK(error_of({"--recompute-gran", "full"})
            .find("--recompute-granularity is a Megatron flag that gptrain does "
                  "not implement: not implemented") != std::string::npos);
}

TEST_CASE("command line: --help lists the flags by group", "[config]") {
  Flags f;
  const std::string h = f.table().help("app");
  CHECK(h.find("usage: app") == 0);
  CHECK(h.find("--num-layers VALUE") != std::string::npos);
  CHECK(h.find("--data-path VALUE...") != std::string::npos);
  CHECK(h.find("Megatron flags gptrain rejects") != std::string::npos);
}
