#include "core/train/exit_signal.h"

#include "core/common/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gptrain::exit_signal {

namespace {

const std::vector<std::pair<std::string, int>>& table() {
  static const std::vector<std::pair<std::string, int>> t{
      {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
      {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT}, {"SIGXCPU", SIGXCPU}, {"SIGCONT", SIGCONT}};
  return t;
}

// Written by the handler: only sig_atomic_t stores.
volatile std::sig_atomic_t g_graceful = 0;  // the --exit-signal number, 0: handler off
volatile std::sig_atomic_t g_received = 0;  // the graceful signal arrived
volatile std::sig_atomic_t g_in_save = 0;   // inside a SaveSection
volatile std::sig_atomic_t g_deferred = 0;  // a terminating signal that arrived during a save
// Between catch_early() and install(): which signals arrived, by number (NSIG covers every one).
volatile std::sig_atomic_t g_early[NSIG] = {};
volatile std::sig_atomic_t g_recording = 0;
struct sigaction g_before_early[NSIG];  // the dispositions catch_early() replaced
bool g_caught_early = false;

// remove_at_death's paths, read by the handler (no allocation there).
constexpr int kDeathFiles = 4;
char g_death_files[kDeathFiles][4096];
volatile std::sig_atomic_t g_death_file_used[kDeathFiles] = {};

void die_of(int sig) {
  for (int i = 0; i < kDeathFiles; ++i)
    if (g_death_file_used[i]) ::unlink(g_death_files[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void on_signal(int sig) {
  if (g_recording) {
    g_early[sig] = 1;
    return;
  }
  if (sig == g_graceful) {
    g_received = 1;
    return;
  }
  if (g_in_save) {
    g_deferred = sig;
    return;
  }
  die_of(sig);
}

void handle(int sig) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // file and MPI calls in flight carry on
  sigaction(sig, &sa, nullptr);
}

}  // namespace

const std::vector<std::string>& names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> v;
    for (const auto& [name, num] : table()) v.push_back(name);
    return v;
  }();
  return n;
}

int number(const std::string& name) {
  for (const auto& [n, num] : table())
    if (n == name) return num;
  fail("--exit-signal {}: expected a signal name ({})", name, fmt::join(names(), ", "));
}

void catch_early() {
  g_recording = 1;
  for (const auto& [name, sig] : table()) {
    sigaction(sig, nullptr, &g_before_early[sig]);
    handle(sig);
  }
  g_caught_early = true;
}

void install(std::optional<int> graceful) {
  g_received = 0;
  g_deferred = 0;
  g_graceful = graceful ? *graceful : 0;
  if (g_caught_early) {
    // The signals nobody handles get their former disposition back, before anything is delivered again.
    for (const auto& [name, sig] : table())
      if (sig != SIGTERM && sig != SIGINT && sig != g_graceful) sigaction(sig, &g_before_early[sig], nullptr);
  }
  handle(SIGTERM);
  handle(SIGINT);
  if (graceful) handle(*graceful);
  g_recording = 0;
  if (!g_caught_early) return;
  g_caught_early = false;
  for (const auto& [name, sig] : table()) {
    if (!g_early[sig]) continue;
    g_early[sig] = 0;
    // Ignored before start-up: stays ignored. Else it acts now as it would have on arrival.
    if (g_before_early[sig].sa_handler != SIG_IGN) std::raise(sig);
  }
}

bool received() { return g_received != 0; }

std::string startup_exit_message(const std::string& signal_name) {
  return fmt::format(
      "exiting program during start-up after receiving {} (--exit-signal-handler): no iteration was trained, "
      "nothing to save",
      signal_name);
}

SaveSection::SaveSection() { g_in_save = 1; }

SaveSection::~SaveSection() {
  g_in_save = 0;
  if (const int sig = g_deferred) die_of(sig);
}

void remove_at_death(const std::string& path) {
  check(path.size() < sizeof(g_death_files[0]), "{}: path too long", path);
  for (int i = 0; i < kDeathFiles; ++i)
    if (!g_death_file_used[i]) {
      std::memcpy(g_death_files[i], path.c_str(), path.size() + 1);
      g_death_file_used[i] = 1;
      return;
    }
  fail("{}: more than {} files to remove at a signal", path, kDeathFiles);
}

void forget(const std::string& path) {
  for (int i = 0; i < kDeathFiles; ++i)
    if (g_death_file_used[i] && path == g_death_files[i]) {
      g_death_file_used[i] = 0;
      return;
    }
}

std::optional<TestRaise> TestRaise::from_env() {
  const char* env = std::getenv("GPTRAIN_TEST_RAISE_SIGNAL");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string s = env;
  const auto at = s.find('@');
  check(at != std::string::npos, "GPTRAIN_TEST_RAISE_SIGNAL={}: expected NAME@ITERATION[@RANK]", s);
  TestRaise r;
  r.signal = number(s.substr(0, at));
  std::string rest = s.substr(at + 1);
  if (const auto at2 = rest.find('@'); at2 != std::string::npos) {
    r.rank = std::stoi(rest.substr(at2 + 1));
    rest = rest.substr(0, at2);
  }
  if (rest.rfind("start:", 0) == 0) {
    r.start_point = rest.substr(6);
    return r;
  }
  if (rest.rfind("save", 0) == 0) {
    r.in_save = true;
    rest = rest.substr(4);
  }
  r.iteration = std::stol(rest);
  return r;
}

void TestRaise::maybe_raise(long iter, bool saving, int global_rank) const {
  if (start_point.empty() && iter == iteration && saving == in_save && (rank < 0 || rank == global_rank))
    std::raise(signal);
}

void startup_point(const char* point, int global_rank) {
  static const std::optional<TestRaise> hook = TestRaise::from_env();
  if (hook && hook->start_point == point && (hook->rank < 0 || hook->rank == global_rank)) std::raise(hook->signal);
}

}  // namespace gptrain::exit_signal
