// Fault injection for checkpoint saves (tests only; inert unless the variable is set).
//
//   GPTRAIN_FAULT_INJECT=rename:N               the Nth commit rename of this process fails with EIO
//   GPTRAIN_FAULT_INJECT=kill-at-rename:N       this process is killed (SIGKILL) just before the Nth rename
//   GPTRAIN_FAULT_INJECT=tensor-file:N          writing this process's Nth tensor file fails with EIO
//   GPTRAIN_FAULT_INJECT=kill-at-tensor-file:N  this process is killed just before writing its Nth tensor file
//   GPTRAIN_FAULT_INJECT=tracker:N              this process's Nth tracker write fails with ENOSPC (disk full)
//
// Renames counted: moving a re-saved step's previous directory aside, the temp directory into place,
// the tracker's temp file into place (docs/checkpoint-format.md). Tensor files counted: every
// model/optimizer file this process writes (with --async-save, on the background thread). Each count
// restarts whenever the variable's value changes.
#pragma once

#include <string>
#include <system_error>

namespace gptrain::checkpoint {

// std::filesystem::rename, through the fault-injection hook.
void commit_rename(const std::string& from, const std::string& to, std::error_code& ec);

// Called before a tensor file is written: throws an Error naming `path` (EIO), or kills the process, when
// the hook says so.
void tensor_file_fault_point(const std::string& path);

// Called before the tracker's temp file is written: the errno its write is to fail with (ENOSPC), or 0.
int tracker_write_fault();

}  // namespace gptrain::checkpoint
