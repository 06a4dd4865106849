#include "core/model/activation_offload.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "core/model/stage_activations.h"
#include "kernels/backend.h"
#include "kernels/offload/offload_stream.h"

#include <algorithm>

namespace gptrain {

std::vector<int> offload_units(const StageConfig& c) {
  const int L = c.num_local_layers();
  const std::vector<int> first = recompute_group_first(c.recompute, L);
  std::vector<int> unit(std::size_t(std::max(L, 0)), -1);
  int next = 0;
  for (int li = 0; li < L; ++li) {
    const bool offloaded = c.layer_first + li < c.cpu_offload_layers;
    const bool keeps = first[li] < 0 || first[li] == li;  // inside a full-recompute group: nothing kept
    if (offloaded && keeps) unit[li] = next++;
  }
  return unit;
}

int offload_unit_count(const StageConfig& c) {
  const std::vector<int> u = offload_units(c);
  return int(std::count_if(u.begin(), u.end(), [](int x) { return x >= 0; }));
}

int offload_slots(const StageConfig& c) { return std::min(3, offload_unit_count(c)); }

ActivationOffload::ActivationOffload(Backend& be, const StageConfig& c, std::size_t unit_bytes)
    : be_(be),
      unit_(offload_units(c)),
      units_(offload_unit_count(c)),
      slots_(offload_slots(c)),
      unit_bytes_(unit_bytes) {
  check(slots_ > 0, "ActivationOffload: no layer of this stage is offloaded");
  const int L = c.num_local_layers();
  const std::vector<int> first = recompute_group_first(c.recompute, L);
  need_.assign(std::size_t(L), -1);
  for (int li = 0; li < L; ++li) {
    const bool group_last = li + 1 == L || first[li + 1] != first[li];
    if (first[li] < 0)
      need_[li] = unit_[li];
    else if (group_last)
      need_[li] = unit_[first[li]];  // the replay of the group reads its kept input
  }
  staging_ = be_.alloc(std::size_t(slots_) * unit_bytes_);
  be_.fill_zero(staging_, std::size_t(slots_) * unit_bytes_);
  stream_ = make_offload_stream(be_, slots_);
}

ActivationOffload::~ActivationOffload() {
  stream_->synchronize();
  be_.release(staging_);
}

void ActivationOffload::attach(StageActivations& a) {
  OffloadStream* stream = stream_.get();
  const std::size_t bytes = std::size_t(units_) * unit_bytes_;
  a.offload_host = std::unique_ptr<void, std::function<void(void*)>>(stream->alloc_host(bytes), [stream](void* p) {
    stream->synchronize();  // no copy may still read or write it
    stream->free_host(p);
  });
  a.offload_loading.assign(std::size_t(units_), 0);
}

namespace {
char* slot_of(void* staging, int unit, int slots, std::size_t unit_bytes) {
  return static_cast<char*>(staging) + std::size_t(unit % slots) * unit_bytes;
}
char* host_of(StageActivations& a, int unit) {
  return static_cast<char*>(a.offload_host.get()) + unit * a.offload_unit_bytes;
}
}  // namespace

void ActivationOffload::before_forward(StageActivations& a) {
  std::fill(a.offload_loading.begin(), a.offload_loading.end(), 0);
  if (!unit_.empty() && unit_[0] >= 0) stream_->wait_for_slot(unit_[0] % slots_);
}

void ActivationOffload::before_layer_forward(StageActivations&, int li) {
  if (li + 1 < int(unit_.size()) && unit_[li + 1] >= 0) stream_->wait_for_slot(unit_[li + 1] % slots_);
}

void ActivationOffload::after_layer_forward(StageActivations& a, int li) {
  const int u = unit_[li];
  if (u < 0) return;
  ProfileRange range("offload");
  stream_->to_host(host_of(a, u), slot_of(staging_, u, slots_, unit_bytes_), unit_bytes_, u % slots_);
}

void ActivationOffload::load(StageActivations& a, int u) {
  if (a.offload_loading[u]) return;
  a.offload_loading[u] = 1;
  stream_->to_device(slot_of(staging_, u, slots_, unit_bytes_), host_of(a, u), unit_bytes_, u % slots_);
}

void ActivationOffload::before_layer_backward(StageActivations& a, int li) {
  const int u = need_[li];
  if (u < 0) return;
  ProfileRange range("offload");
  load(a, u);
  stream_->wait_for_slot(u % slots_);
  if (u > 0) load(a, u - 1);  // prefetch: overlaps this layer's backward
}

}  // namespace gptrain
