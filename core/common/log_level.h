// Megatron's --logging-level (a Python logging level: DEBUG 10, INFO 20, WARNING 30, ERROR 40, CRITICAL 50;
// default INFO, or $MEGATRON_LOGGING_LEVEL) on gptrain's log. Megatron's training log (the iteration and
// validation lines) is printed, not logged, so no level hides it; the level filters the other lines as Python's
// logger would: <= 10 also debug lines, <= 20 informational lines (the default), <= 30 warnings but no
// informational lines, > 30 neither (errors that stop the run are always printed).
#pragma once

#include <optional>
#include <string_view>

namespace gptrain::log {

// Sets the threshold from the flag, else from $MEGATRON_LOGGING_LEVEL (an integer; an Error otherwise).
void set_python_logging_level(std::optional<int> flag);

// A line of the training log (iteration, validation): printed as an informational line whatever the level.
void training_log(std::string_view line);

}  // namespace gptrain::log
