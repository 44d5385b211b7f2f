// libFuzzer: the scheduling cycle's running-jobs document (docs/cycle.md: the jobs format plus
// start_time, placement and checkpoint facts; gpusched/io/cycle_json.hpp) on arbitrary bytes, against
// a fixed cluster. A document it refuses must leave the state exactly as it was (its reservations are
// rolled back); one it accepts must give a cycle that decides (dry run) without crashing. The same
// bytes are also read as the cycle's options object.
#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/cycle_json.hpp"

namespace fuzz_cycle_running {

const gpusched::ClusterState& base_state() {
  static const gpusched::ClusterState state = [] {
    auto doc = gpusched::io::read_cluster_json(R"({"nodes": [
      {"name": "node-0", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100"},
      {"name": "node-1", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100"},
      {"name": "node-2", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100"},
      {"name": "node-3", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100"}]})");
    return gpusched::ClusterState::build(doc.value().cluster, doc.value().registry).value();
  }();
  return state;
}

GPUSCHED_FUZZ_TARGET(cycle_running, data, size) {
  const std::string_view text = gpusched::fuzz::as_text(data, size);
  gpusched::ClusterState state = base_state();
  gpusched::io::CycleInputs inputs;
  const gpusched::Status read = gpusched::io::read_running_jobs_json(state, text, "fuzz.json", inputs);
  gpusched::fuzz::check_result(read);
  if (!read.ok()) {
    if (state.checkpoint() != 0 || !inputs.running.empty()) std::abort();  // nothing kept on a refusal
  } else {
    gpusched::scheduler::CycleOptions options;
    options.dry_run = true;
    gpusched::fuzz::check_result(gpusched::io::run_cycle_on(state, inputs, 1000, options));
  }
  gpusched::fuzz::check_result(gpusched::io::read_cycle_options_json(text, "fuzz.json"));
  return 0;
}

}  // namespace fuzz_cycle_running
