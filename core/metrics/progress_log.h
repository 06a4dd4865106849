// Megatron's --log-progress file: <save>/progress.txt, appended by global rank 0, one tab-separated line per
// event (megatron/training: append_to_progress_log, compute_throughputs_and_append_to_progress_log):
//   "%Y-%m-%d %H:%M:%S\tJob ID: <$SLURM_JOB_ID, or empty>\t# GPUs: <world size>\t<event>"
// Events: "Starting job"; after a persistent save "Saved checkpoint" (or, with --async-save, "Saving async
// checkpoint" when it starts) followed by
//   "\tIteration: N\tJob throughput: {:.1f} TFLOP/s/GPU\tCumulative throughput: {:.1f} TFLOP/s/GPU
//    \tFloating-point operations: {:.2e}\tTokens (in billions): {:.2f}"
// then "Saved async checkpoint\tIteration: N" when an async save commits, and "Deleted checkpoint\tIteration:
// N" per checkpoint --save-retain-interval deletes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gptrain::metrics {

// One line (with its newline) at local time t; the job id is $SLURM_JOB_ID, empty when unset.
std::string progress_line(std::chrono::system_clock::time_point t, int world_size, const std::string& event);

// Appends progress_line(now, ...) to <save_dir>/progress.txt, creating the directory; an Error naming the
// file when it cannot be written.
void append_progress(const std::string& save_dir, int world_size, const std::string& event);

// Megatron's get_start_time_from_progress_log: the time of the first "Starting job" line since the last line
// of another world size, and the floating-point operations of the last committed save before it (the
// "Floating-point operations" field of "Saved checkpoint" lines, of "Saving async checkpoint" ones once their
// "Saved async checkpoint" line follows). An Error naming the file when there is no such line.
struct ProgressStart {
  std::chrono::system_clock::time_point time;
  double flops = 0.0;
};
ProgressStart progress_start(const std::string& save_dir, int world_size);

// The event after a persistent save of `iteration` (async: "Saving async checkpoint").
std::string saved_checkpoint_event(bool async, int64_t iteration, double job_tflops_per_gpu,
                                   double cumulative_tflops_per_gpu, double flops_so_far, double tokens_so_far);

}  // namespace gptrain::metrics
