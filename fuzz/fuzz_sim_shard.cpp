// libFuzzer: the shard reader of `gpusched merge` (gpusched/sim/sim_report.hpp, read_shard) on
// arbitrary bytes: a shard or an Error naming the field, never a crash, an exception or a runaway
// (a 100,000-deep unknown field once grew the merged report quadratically).
#include "fuzz_harness.hpp"

#include "gpusched/sim/sim_report.hpp"

namespace fuzz_sim_shard {

GPUSCHED_FUZZ_TARGET(sim_shard, data, size) {
  gpusched::fuzz::check_result(gpusched::sim::read_shard(gpusched::fuzz::as_text(data, size), "shard.json"));
  return 0;
}

}  // namespace fuzz_sim_shard
