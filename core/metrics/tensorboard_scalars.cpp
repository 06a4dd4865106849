#include "core/metrics/tensorboard_scalars.h"

namespace gptrain::metrics {

void write_train_scalars(TensorBoardWriter& w, const IterationLogValues& v, const TensorBoardOptions& o) {
  const int64_t it = v.iteration, samples = v.consumed_samples;
  auto both = [&](const std::string& tag, double x) {
    w.add_scalar(tag, it, x);
    w.add_scalar(tag + " vs samples", samples, x);
  };
  if (v.learning_rate) both("learning-rate", *v.learning_rate);
  if (v.decoupled_learning_rate) w.add_scalar("decoupled-learning-rate", it, *v.decoupled_learning_rate);
  if (v.skipped_samples > 0) w.add_scalar("skipped-train-samples", it, static_cast<double>(v.skipped_samples));
  both("batch-size", static_cast<double>(v.global_batch_size));
  for (const auto& [name, value] : v.losses) both(name, value);
  if (o.log_loss_scale) both("loss-scale", v.loss_scale);
  if (o.log_world_size) both("world-size", static_cast<double>(o.world_size));
  if (v.grad_norm) both("grad-norm", *v.grad_norm);
  if (v.num_zeros_in_grad) both("num-zeros", static_cast<double>(*v.num_zeros_in_grad));
  if (v.params_norm) both("params-norm", *v.params_norm);
  if (v.tokens_per_second) w.add_scalar("tokens-per-second", it, *v.tokens_per_second);
}

void write_timer_scalars(TensorBoardWriter& w, int64_t iteration, double seconds_per_iteration,
                         std::optional<double> throughput_tflops_per_gpu) {
  w.add_scalar("iteration-time", iteration, seconds_per_iteration);
  if (throughput_tflops_per_gpu) w.add_scalar("throughput", iteration, *throughput_tflops_per_gpu);
}

void write_memory_scalars(TensorBoardWriter& w, int64_t iteration, const MemoryScalars& m) {
  w.add_scalar("mem-reserved-bytes", iteration, double(m.reserved));
  w.add_scalar("mem-allocated-bytes", iteration, double(m.allocated));
  w.add_scalar("mem-max-allocated-bytes", iteration, double(m.max_allocated));
  w.add_scalar("mem-allocated-count", iteration, double(m.count));
}

void write_validation_scalars(TensorBoardWriter& w, int64_t iteration, int64_t consumed_train_samples,
                              const std::vector<std::pair<std::string, double>>& losses, const TensorBoardOptions& o,
                              const std::string& set_suffix) {
  for (const auto& [name, value] : losses) {
    const std::string tag = name + " validation" + set_suffix;
    w.add_scalar(tag, iteration, value);
    w.add_scalar(tag + " vs samples", consumed_train_samples, value);
    if (o.log_validation_ppl) {
      const double ppl = validation_ppl(value);
      w.add_scalar(tag + " ppl", iteration, ppl);
      w.add_scalar(tag + " ppl vs samples", consumed_train_samples, ppl);
    }
  }
}

}  // namespace gptrain::metrics
