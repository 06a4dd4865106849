// fuzz_parsers: bounded, seeded fuzzing of every parser of user input (ctest label "fuzz").
//
//   fuzz_parsers --target NAME --seed S --iterations N   # inputs 0..N-1 of that target
//   fuzz_parsers --target NAME --seed S --iteration I    # replay one input, printing it in hex
//   fuzz_parsers --list
//
// Without --seed the seed is GPTRAIN_FUZZ_SEED from the environment, else today's date (UTC) as YYYYMMDD,
// so that the CI pass tries other inputs every day; the seed is printed first, for replaying.
//
// Inputs 0..K-1 are the K valid seeds (they must be accepted); input i >= K is a mutation of them
// drawn from Rng(seed, target, i). The property: every input is accepted or refused with
// gptrain::Error whose message names the file or flag. A crash (signal, sanitizer report), a hang
// (--timeout seconds per input), another exception type (std::out_of_range, nlohmann::json's,
// std::bad_alloc, ...), an allocation above --max-alloc-mb, an error message that does not say where,
// or an accepted input that contradicts itself (fuzz::Violation) is a failure: the report prints the
// seed, the iteration, the mutations and the input in hex, and the command that replays it.
#include "core/common/error.h"
#include "core/common/log.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/mutate.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <new>
#include <optional>

// ---- the allocation bound: every operator new of the process goes through here ----------------------
namespace {
std::atomic<size_t> g_max_alloc{size_t{1} << 62};
std::atomic<size_t> g_refused_alloc{0};  // the size of the last allocation refused (0: none)

void* checked_alloc(size_t n) {
  if (n > g_max_alloc.load(std::memory_order_relaxed)) {
    g_refused_alloc = n;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) { return checked_alloc(n); }
void* operator new[](size_t n) { return checked_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
// The nothrow forms too (std::stable_sort's buffer): every delete above must meet a new of this file.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return checked_alloc(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

// Set by sanitizer runtimes (weak: absent from a build without them).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace gptrain::fuzz {
namespace {

// ---- what a signal handler prints: the input being parsed when the process died or hung ------------
char g_context[512];
const std::string* g_input = nullptr;
int g_report_fd = 2;

void write_str(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(g_report_fd, s, n);
    if (w <= 0) return;
    s += w, n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: no allocation, only write().
void print_context(const char* what) {
  write_str("\nfuzz FAILURE (");
  write_str(what);
  write_str("): ");
  write_str(g_context);
  if (!g_input) return;
  write_str("input in hex:\n");
  static const char digits[] = "0123456789abcdef";
  char line[3 * 32 + 1];
  const std::string& s = *g_input;
  for (size_t i = 0; i < s.size(); i += 32) {
    size_t k = 0;
    for (size_t j = i; j < s.size() && j < i + 32; ++j) {
      const auto b = static_cast<unsigned char>(s[j]);
      line[k++] = digits[b >> 4], line[k++] = digits[b & 15], line[k++] = ' ';
    }
    line[k - 1] = '\n';
    line[k] = '\0';
    write_str(line);
  }
}

void on_fatal_signal(int sig) {
  print_context(strsignal(sig));
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
void on_alarm(int) {
  print_context("hang: the input took longer than --timeout");
  ::_exit(3);
}
void on_sanitizer_death() { print_context("sanitizer report above"); }

struct Options {
  std::string target;
  std::optional<uint64_t> seed;  // nullopt: GPTRAIN_FUZZ_SEED, else today's date
  int64_t iterations = 1000;
  std::optional<int64_t> only;
  int timeout_s = 10;
  size_t max_alloc_mb = 512;
  std::string work;
};

struct Counts {
  int64_t inputs = 0, accepted = 0, refused = 0;
  std::map<std::string, int64_t> failures;  // kind -> count
};

uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool default_names_source(const std::string& message, const fs::path& in) {
  return message.find(in.string()) != std::string::npos;
}

// Runs one input; returns the failure kind ("" when the input passed).
std::string run_one(const Target& t, const std::string& input, const fs::path& dir, const fs::path& in,
                    std::string& detail, bool& accepted) {
  fs::remove_all(in);
  fs::create_directories(in);
  g_refused_alloc = 0;
  std::string kind;
  try {
    t.run(input, dir, in);
    accepted = true;
  } catch (const Error& e) {
    accepted = false;
    detail = e.what();
    const auto& names = t.names_source ? t.names_source : default_names_source;
    if (!names(e.what(), in)) kind = "error message does not say where";
  } catch (const Violation& e) {
    kind = "silent acceptance", detail = e.what();
  } catch (const std::bad_alloc& e) {
    kind = "allocation", detail = fmt::format("std::bad_alloc ({} bytes asked)", g_refused_alloc.load());
  } catch (const std::exception& e) {
    kind = "wrong exception type", detail = fmt::format("{}: {}", typeid(e).name(), e.what());
  } catch (...) {
    kind = "wrong exception type", detail = "a non-std exception";
  }
  if (kind.empty() && g_refused_alloc)
    kind = "allocation",
    detail = fmt::format("an allocation of {} bytes was refused (and handled)", g_refused_alloc.load());
  return kind;
}

int fuzz(const Target& t, const Options& o) {
  const fs::path root = fs::path(o.work) / t.name;
  const fs::path dir = root / "seeds", in = root / "in";
  fs::remove_all(root);
  fs::create_directories(dir);
  const std::vector<std::string> seeds = t.seeds(dir);
  if (seeds.empty()) {
    fmt::print(stderr, "fuzz {}: no seeds\n", t.name);
    return 1;
  }
  Counts c;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t first = o.only ? *o.only : 0, last = o.only ? *o.only + 1 : o.iterations;
  for (int64_t i = first; i < last; ++i) {
    Mutated m;
    if (i < static_cast<int64_t>(seeds.size())) {
      m.bytes = seeds[i];
      m.seed_index = i;
    } else {
      Rng rng(*o.seed * 0x9E3779B97F4A7C15ull ^ name_hash(t.name) ^ (static_cast<uint64_t>(i) << 20));
      m = mutate(seeds, t.dictionary, rng);
    }
    std::string steps;
    for (const auto& s : m.steps) steps += (steps.empty() ? "" : "; ") + s;
    std::snprintf(g_context, sizeof g_context,
                  "target %s, seed %llu, iteration %lld (seed input %zu%s%s)\nreplay: fuzz_parsers --target %s --seed "
                  "%llu --iteration %lld\n",
                  t.name.c_str(), static_cast<unsigned long long>(*o.seed), static_cast<long long>(i), m.seed_index,
                  steps.empty() ? "" : ", then ", steps.c_str(), t.name.c_str(),
                  static_cast<unsigned long long>(*o.seed), static_cast<long long>(i));
    g_input = &m.bytes;
    ::alarm(static_cast<unsigned>(o.timeout_s));
    std::string detail;
    bool accepted = false;
    std::string kind = run_one(t, m.bytes, dir, in, detail, accepted);
    ::alarm(0);
    if (kind.empty() && !accepted && i < static_cast<int64_t>(seeds.size())) kind = "valid seed refused (harness bug)";
    ++c.inputs;
    (accepted ? c.accepted : c.refused) += 1;
    if (!kind.empty()) {
      c.failures[kind] += 1;
      print_context(kind.c_str());
      write_str(fmt::format("what: {}\n", detail).c_str());
    } else if (o.only) {
      write_str(fmt::format("fuzz {}: iteration {} {}; input:\n{}", t.name, i, accepted ? "accepted" : "refused",
                            hex_dump(m.bytes))
                    .c_str());
    }
    g_input = nullptr;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t failed = 0;
  std::string kinds;
  for (const auto& [k, n] : c.failures) failed += n, kinds += fmt::format(", {} {}", n, k);
  write_str(fmt::format("fuzz {}: {} inputs ({} seeds), {} accepted, {} refused with a clear error, {} failures{} "
                        "in {:.1f} s (--seed {})\n",
                        t.name, c.inputs, seeds.size(), c.accepted, c.refused, failed, kinds, secs, *o.seed)
                .c_str());
  fs::remove_all(root);
  return failed == 0 ? 0 : 1;
}

uint64_t parse_seed(const std::string& text, const char* from) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  check(!text.empty() && end != nullptr && *end == '\0' && text[0] != '-', "fuzz_parsers: {} {}: expected a number",
        from, text);
  return v;
}

// YYYYMMDD of today (UTC): a new seed every day, the same for every target of one day's pass.
uint64_t todays_seed() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  return uint64_t(utc.tm_year + 1900) * 10000 + uint64_t(utc.tm_mon + 1) * 100 + uint64_t(utc.tm_mday);
}

int main_body(int argc, char** argv) {
  std::vector<Target> targets = data_targets();
  for (auto& t : core_targets()) targets.push_back(std::move(t));
  Options o;
  o.work = (fs::temp_directory_path() / fmt::format("gptrain_fuzz_{}", ::getpid())).string();
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      check(i + 1 < argc, "fuzz_parsers: {} needs a value", a);
      return argv[++i];
    };
    if (a == "--target")
      o.target = value();
    else if (a == "--seed")
      o.seed = parse_seed(value(), "--seed");
    else if (a == "--iterations")
      o.iterations = std::stoll(value());
    else if (a == "--iteration")
      o.only = std::stoll(value());
    else if (a == "--timeout")
      o.timeout_s = std::stoi(value());
    else if (a == "--max-alloc-mb")
      o.max_alloc_mb = std::stoull(value());
    else if (a == "--work")
      o.work = value();
    else if (a == "--list")
      list = true;
    else
      fail("fuzz_parsers: unknown argument {} (see the comment at the top of tests/fuzz/fuzz_parsers.cpp)", a);
  }
  if (list) {
    for (const auto& t : targets) fmt::print("{}\n", t.name);
    return 0;
  }
  std::string seed_from = "--seed";
  if (!o.seed) {
    if (const char* env = std::getenv("GPTRAIN_FUZZ_SEED"); env != nullptr && *env != '\0') {
      o.seed = parse_seed(env, "GPTRAIN_FUZZ_SEED");
      seed_from = "GPTRAIN_FUZZ_SEED";
    } else {
      o.seed = todays_seed();
      seed_from = "today's date, UTC";
    }
  }
  fmt::print(stderr, "fuzz_parsers: seed {} ({}); replay with --seed {}\n", *o.seed, seed_from, *o.seed);
  // Parsers print (--help text, warnings); the reports go to the original stderr only.
  g_report_fd = ::dup(2);
  const int null_fd = ::open("/dev/null", O_WRONLY);
  ::dup2(null_fd, 1);
  log::set_level(log::Level::error);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, on_fatal_signal);
  ::signal(SIGALRM, on_alarm);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
  g_max_alloc = o.max_alloc_mb << 20;
  int rc = 0;
  bool found = false;
  for (const auto& t : targets)
    if (o.target.empty() || o.target == t.name) {
      found = true;
      rc |= fuzz(t, o);
    }
  check(found, "fuzz_parsers: no target named {} (--list names them)", o.target);
  fs::remove_all(o.work);
  return rc;
}

}  // namespace
}  // namespace gptrain::fuzz

int main(int argc, char** argv) { return gptrain::run_main("fuzz_parsers", gptrain::fuzz::main_body, argc, argv); }
