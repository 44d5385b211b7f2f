// libFuzzer: the Slurm reader (gpusched/io/slurm.hpp) on arbitrary bytes as one document with nodes and
// jobs (sinfo --json and squeue --json together); what it accepts must become the cycle's inputs and
// be decided by one conservative-backfill cycle without a crash.
#include <span>

#include "fuzz_harness.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/slurm.hpp"

GPUSCHED_FUZZ_TARGET(slurm, data, size) {
  const gpusched::io::slurm::Source source{gpusched::fuzz::as_text(data, size), "fuzz.json"};
  const std::span<const gpusched::io::slurm::Source> sources(&source, 1);
  gpusched::io::slurm::Options options;
  options.held = gpusched::io::slurm::Held::kPlan;
  gpusched::fuzz::check_result(gpusched::io::slurm::read(sources, options));
  auto cycle = gpusched::io::read_cycle_inputs_slurm(sources, options);
  gpusched::fuzz::check_result(cycle);
  if (!cycle.ok()) return 0;
  gpusched::scheduler::CycleOptions o;
  o.backfill.mode = gpusched::scheduler::BackfillMode::kConservative;
  gpusched::fuzz::check_result(gpusched::io::run_cycle_on(*cycle->state, cycle->inputs, 1796394815, o));
  return 0;
}
