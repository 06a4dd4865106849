// The interval bookkeeping behind the log line's loss averages and iteration counters (Megatron's
// total_loss_dict rules), ending in whole formatted lines.
#include "core/metrics/log_interval.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace gptrain::metrics;

TEST_CASE("log interval: averages over non-skipped iterations, counts skipped and nan", "[log_line]") {
  LogInterval li;
  li.add_iteration({{"lm loss", 4.0f}}, false);
  li.add_iteration({{"lm loss", std::numeric_limits<float>::infinity()}}, true);  // overflow: skipped, nan
  li.add_iteration({{"lm loss", 2.0f}}, false);
  li.add_iteration({{"lm loss", 9.0f}}, true);  // skipped, finite loss: not a nan iteration
  CHECK(li.advanced_iterations() == 2);
  CHECK(li.skipped_iterations() == 2);
  CHECK(li.nan_iterations() == 1);
  CHECK(li.total_iterations() == 4);
  const auto avg = li.average_losses();
  REQUIRE(avg.size() == 1);
  CHECK(avg[0].first == "lm loss");
  CHECK(avg[0].second == 3.0);

  IterationLogValues v;
  v.iteration = 4;
  v.train_iters = 10;
  v.consumed_samples = 16;
  v.elapsed_ms_per_iteration = 100.0;
  v.learning_rate = 1e-4;
  v.global_batch_size = 8;
  li.fill(v);
  const std::string line = format_iteration_line(v);
  CHECK(line.substr(line.find(" iteration")) ==
        " iteration        4/      10 | consumed samples:           16 | elapsed time per iteration (ms): 100.0 |"
        " learning rate: 1.000000E-04 | global batch size:     8 | lm loss: 3.000000E+00 | loss scale: 1.0 |"
        " number of skipped iterations:   2 | number of nan iterations:   1 |");
}

TEST_CASE("log interval: names persist across reset, sums are fp32", "[log_line]") {
  LogInterval li;
  li.add_iteration({{"lm loss", 1.0f}}, true);  // a skipped first iteration adds no loss name
  CHECK(li.average_losses().empty());
  li.add_iteration({{"lm loss", 1.0f}, {"z loss", 0.5f}}, false);
  li.reset();
  CHECK(li.total_iterations() == 0);
  li.add_iteration({{"lm loss", 7.0f}}, true);
  auto avg = li.average_losses();  // only skipped iterations since the reset: sum 0 / max(1, 0)
  REQUIRE(avg.size() == 2);
  CHECK(avg[0] == std::pair<std::string, double>("lm loss", 0.0));
  CHECK(avg[1] == std::pair<std::string, double>("z loss", 0.0));

  li.reset();
  // 16777216 + 1 is not representable in fp32: the sum stays 16777216, as in Megatron's float accumulator.
  li.add_iteration({{"lm loss", 16777216.0f}}, false);
  li.add_iteration({{"lm loss", 1.0f}}, false);
  avg = li.average_losses();
  CHECK(avg[0].second == 16777216.0 / 2);
}
