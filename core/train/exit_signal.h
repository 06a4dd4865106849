// Signals that end a training run (Megatron's --exit-signal-handler / --exit-signal).
//
// With the handler on, the exit signal only raises a flag: the training loop finishes the iteration it is
// in, all ranks agree through a collective that some rank received it, the run saves (with --save) and
// exits 0. Any other terminating signal (SIGTERM, SIGINT without the handler for it) ends the process as
// the default action does, except inside a checkpoint save, where it waits for the save to finish so that
// no half-written checkpoint is left behind; the process then dies of that signal.
//
// Start-up (MPI, the dataset index, the model, the checkpoint load) can take minutes, and a scheduler's
// signal may come then. catch_early() records every signal --exit-signal can name from the first line of
// main, before the flags are known; install() then takes a recorded exit signal as received and delivers
// any other to its own disposition. The start-up checks (parallel/train/pretrain.cpp, the trainer after
// --load) agree across ranks as the loop does and end the run with code 0 before its first iteration:
// nothing was trained, so there is nothing to save.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gptrain::exit_signal {

// The names --exit-signal accepts ("SIGTERM", "SIGINT", "SIGUSR1", ...).
const std::vector<std::string>& names();
// "SIGTERM" -> 15; an unknown name stops with an Error naming --exit-signal.
int number(const std::string& name);

// First thing in main: every signal of names() only records its arrival until install().
void catch_early();
// Installs the handlers. graceful: the --exit-signal number when --exit-signal-handler is on, else none.
// A flag raised before is cleared; signals recorded since catch_early() are then delivered anew (the
// graceful one raises the flag, another one acts as it would have, unless it was ignored before).
void install(std::optional<int> graceful);
// The graceful signal arrived on this process since install() (or, delivered by install(), before it).
bool received();
// The line a run prints when the exit signal ends it before its first iteration.
std::string startup_exit_message(const std::string& signal_name);

// While one lives, SIGTERM/SIGINT (other than the graceful signal) wait; its destructor delivers one that
// arrived meanwhile, with the default action.
class SaveSection {
 public:
  SaveSection();
  ~SaveSection();
  SaveSection(const SaveSection&) = delete;
  SaveSection& operator=(const SaveSection&) = delete;
};

// Files that a terminating signal removes before the process dies of it (a run's save-directory locks, so the
// next run finds none left over). At most 4 at a time; forget() takes one off the list.
void remove_at_death(const std::string& path);
void forget(const std::string& path);

// Test hook: GPTRAIN_TEST_RAISE_SIGNAL="NAME@ITERATION[@RANK]" makes global rank RANK (every rank when
// absent) send itself signal NAME during that training iteration (1-based, after its forward-backward),
// with "NAME@saveITERATION[@RANK]" at the start of that iteration's checkpoint save, or with
// "NAME@start:POINT[@RANK]" at a named start-up point (startup_point()).
struct TestRaise {
  int signal = 0;
  long iteration = -1;
  bool in_save = false;
  std::string start_point;  // non-empty: a start-up point instead of an iteration
  int rank = -1;
  static std::optional<TestRaise> from_env();
  // Sends the signal when (iteration, in_save, rank) match.
  void maybe_raise(long iter, bool saving, int global_rank) const;
};

// The start-up points the test hook can name, in their order: "launch" (before MPI starts), "comms" (the
// communicators are up), "data" (before the datasets and their index are built), "model" (before the model
// is built and initialized), "load" (before --load's checkpoint is read). Sends the hook's signal when its
// point and rank match.
void startup_point(const char* point, int global_rank);

}  // namespace gptrain::exit_signal
