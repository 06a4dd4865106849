// Activation offloading (Megatron's --cpu-offloading-num-layers N): what the global layers [0, N) keep for
// backward is moved to host memory after their forward and brought back before their backward. Applied
// around the layers, as recomputation is; the layer maths does not know about it.
//
// An offloaded layer's kept activations (its input and whatever the recomputation choice keeps of it) are
// carved, not in the per-micro-batch arena, but in one of K staging slots of device memory that the stage
// allocates once for all micro-batches (K = min(3, offloaded units)); each micro-batch in flight has a host
// arena holding every unit. An "offload unit" is an offloaded local layer that keeps anything (with full
// recomputation only the first layer of a group does: its kept input). Unit u uses slot u % K:
//   forward:  before layer l writes into the slot of the next unit (its output is that unit's input), the
//             compute waits for that slot's previous copy to the host; after unit u's layer, the slot is
//             copied to host[u] (on CUDA on a copy stream, overlapping the next layers)
//   backward: before the backward (or the replay) that reads unit u, host[u] is copied back (if its prefetch
//             was not issued yet) and waited for; unit u-1 is then prefetched into its slot, which the
//             backward of unit u+2 was the last to use. Three slots keep a replay, which rewrites the input
//             of unit u+1, off the slot being prefetched.
// The arena saving is the units' bytes per micro-batch in flight, less the K slots (activation_offload
// bytes in the memory plan).
#pragma once

#include "core/model/model_config.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace gptrain {

class Backend;
class OffloadStream;
struct StageActivations;

// Per local layer of a finalized chunk config: its offload unit, or -1 (kept on the device or nothing kept).
std::vector<int> offload_units(const StageConfig& c);
int offload_unit_count(const StageConfig& c);
// Staging slots a chunk allocates (0 without offloading).
int offload_slots(const StageConfig& c);

// The offload copies of one GptStage: its staging slots (device) and copy stream; the host arena of each
// micro-batch lives in its StageActivations.
class ActivationOffload {
 public:
  // unit_bytes: one unit's bytes (StageActivations::offload_unit_bytes_for).
  ActivationOffload(Backend& be, const StageConfig& c, std::size_t unit_bytes);
  ~ActivationOffload();
  ActivationOffload(const ActivationOffload&) = delete;
  ActivationOffload& operator=(const ActivationOffload&) = delete;

  void* staging() { return staging_; }  // K slots of unit_bytes (device)
  // Gives a new micro-batch's activations their host arena.
  void attach(StageActivations& a);

  void before_forward(StageActivations& a);                 // the input / embedding writes unit 0's slot
  void before_layer_forward(StageActivations& a, int li);   // layer li writes the next unit's slot
  void after_layer_forward(StageActivations& a, int li);    // unit li's slot -> host
  void before_layer_backward(StageActivations& a, int li);  // what layer li's backward and replay read -> device

 private:
  void load(StageActivations& a, int unit);  // issue host -> slot once per backward

  Backend& be_;
  std::vector<int> unit_;  // per local layer
  std::vector<int> need_;  // per local layer: the unit its backward (and replay) reads, or -1
  int units_ = 0, slots_ = 0;
  std::size_t unit_bytes_ = 0;
  void* staging_ = nullptr;
  std::unique_ptr<OffloadStream> stream_;
};

}  // namespace gptrain
