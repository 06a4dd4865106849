// Signals that end a training run (Megatron's --exit-signal-handler / --exit-signal).
//
// With the handler on, the exit signal only raises a flag: the training loop finishes the iteration it is
// in, all ranks agree through a collective that some rank received it, the run saves (with --save) and
// exits 0. Any other terminating signal (SIGTERM, SIGINT without the handler for it) ends the process as
// the default action does, except inside a checkpoint save, where it waits for the save to finish so that
// no half-written checkpoint is left behind; the process then dies of that signal.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gptrain::exit_signal {

// The names --exit-signal accepts ("SIGTERM", "SIGINT", "SIGUSR1", ...).
const std::vector<std::string>& names();
// "SIGTERM" -> 15; an unknown name stops with an Error naming --exit-signal.
int number(const std::string& name);

// Installs the handlers (idempotent; clears a flag raised before). graceful: the --exit-signal number
// when --exit-signal-handler is on, else none.
void install(std::optional<int> graceful);
// The graceful signal arrived on this process since install().
bool received();

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
// or with "NAME@saveITERATION[@RANK]" at the start of that iteration's checkpoint save.
struct TestRaise {
  int signal = 0;
  long iteration = -1;
  bool in_save = false;
  int rank = -1;
  static std::optional<TestRaise> from_env();
  // Sends the signal when (iteration, in_save, rank) match.
  void maybe_raise(long iter, bool saving, int global_rank) const;
};

}  // namespace gptrain::exit_signal
