// Fault injection for the checkpoint commit's renames (tests only; inert unless the variable is set).
//
//   GPTRAIN_FAULT_INJECT=rename:N          the Nth commit rename of this process fails with EIO
//   GPTRAIN_FAULT_INJECT=kill-at-rename:N  this process is killed (SIGKILL) just before the Nth rename
//
// Renames counted: moving a re-saved step's previous directory aside, the temp directory into place,
// the tracker's temp file into place (docs/checkpoint-format.md). The count restarts whenever the
// variable's value changes.
#pragma once

#include <string>
#include <system_error>

namespace gptrain::checkpoint {

// std::filesystem::rename, through the fault-injection hook.
void commit_rename(const std::string& from, const std::string& to, std::error_code& ec);

}  // namespace gptrain::checkpoint
