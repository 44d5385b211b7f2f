// libFuzzer: the scheduling cycle's pending jobs and queues read together (docs/cycle.md: the jobs
// format plus priority, runtime estimate, backoff and evicted_by; docs/fairness.md: the queue tree),
// as the tool's `cycle --pending --queues` reads them, against a fixed cluster. The bytes are the
// pending document, then a line "%%", then the queues document (no such line: no queues), so that a
// job's queue and the queue tree mutate together. A refused input must leave the state as it was;
// an accepted one must give a cycle that decides (dry run, then committed) without crashing.
#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/cycle_json.hpp"

namespace fuzz_cycle_pending {

const gpusched::ClusterState& base_state() {
  static const gpusched::ClusterState state = [] {
    auto doc = gpusched::io::read_cluster_json(R"({"nodes": [
      {"name": "node-0", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100", "labels": {"rack": "r0"}},
      {"name": "node-1", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "H100", "labels": {"rack": "r0"}},
      {"name": "node-2", "cpu": 64, "memory": "512Gi", "gpus": 8, "gpu_model": "A100-80GB", "labels": {"rack": "r1"}}]})");
    return gpusched::ClusterState::build(doc.value().cluster, doc.value().registry).value();
  }();
  return state;
}

GPUSCHED_FUZZ_TARGET(cycle_pending, data, size) {
  const std::string_view text = gpusched::fuzz::as_text(data, size);
  const std::size_t cut = text.find("\n%%\n");
  const std::string_view pending = text.substr(0, cut);
  const std::string_view queues = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 4);
  auto jobs = gpusched::io::read_jobs_json(pending, "pending.json");
  gpusched::fuzz::check_result(jobs);
  if (!jobs.ok()) return 0;
  gpusched::ClusterState state = base_state();
  const gpusched::io::CycleSources sources{"cluster.json", "pending.json", "running.json", "queues.json"};
  auto inputs = gpusched::io::read_cycle_inputs(state, *jobs, queues, "", sources);
  gpusched::fuzz::check_result(inputs);
  if (!inputs.ok()) {
    if (state.checkpoint() != 0) std::abort();  // nothing kept on a refusal
    return 0;
  }
  gpusched::scheduler::CycleOptions options;
  options.dry_run = true;
  gpusched::fuzz::check_result(gpusched::io::run_cycle_on(state, *inputs, 1000, options, "queues.json"));
  options.dry_run = false;
  gpusched::fuzz::check_result(gpusched::io::run_cycle_on(state, *inputs, 1000, options, "queues.json"));
  return 0;
}

}  // namespace fuzz_cycle_pending
