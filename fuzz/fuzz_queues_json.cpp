// libFuzzer: the queues document reader (docs/fairness.md) and the admission plan it drives, on
// arbitrary bytes. The cluster and the jobs are fixed (the fairness fixture's four nodes of two GPU
// models and six jobs), so every input that reads also plans: quotas, cohorts, borrowing and lending
// limits, weights, priority classes and aging of any value must give an order or an Error.
#include "fuzz_harness.hpp"

#include <optional>

#include "gpusched/io/fairshare_json.hpp"

namespace fuzz_queues_json {

constexpr std::string_view kCluster = R"({"nodes": [
  {"name": "h100-0", "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "H100-80GB"},
  {"name": "h100-1", "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "H100-80GB"},
  {"name": "a100-0", "cpu": 64, "memory": "512Gi", "gpus": 4, "gpu_model": "A100-80GB"}]})";

constexpr std::string_view kJobs = R"({"jobs": [
  {"name": "v-train", "queue": "vision", "priority": 10, "submit_time": 100, "gpus": 4, "cpu": 8, "memory": "64Gi"},
  {"name": "v-big", "queue": "vision", "submit_time": 200, "replicas": 2, "gpus": 2, "cpu": 8, "memory": "64Gi",
   "gpu_models": ["A100-80GB"]},
  {"name": "n-pretrain", "queue": "nlp", "submit_time": 300, "gpus": 4, "cpu": 16, "memory": "128Gi",
   "gpu_models": ["H100-80GB"], "priority_class": "batch"},
  {"name": "r-ft", "queue": "research", "priority": 5, "submit_time": 500, "gpus": 2, "cpu": 4, "memory": "32Gi"}]})";

struct Fixed {
  gpusched::io::ClusterDocument cluster;
  std::optional<gpusched::ClusterState> state;
  gpusched::io::JobsDocument jobs;
};

const Fixed& fixed() {
  static const Fixed f = [] {
    Fixed out{*gpusched::io::read_cluster_json(kCluster, "cluster.json"), std::nullopt,
              *gpusched::io::read_jobs_json(kJobs, "jobs.json")};
    out.state.emplace(*gpusched::ClusterState::build(out.cluster.cluster, out.cluster.registry));
    return out;
  }();
  return f;
}

GPUSCHED_FUZZ_TARGET(queues_json, data, size) {
  const Fixed& f = fixed();
  gpusched::fuzz::check_result(
      gpusched::io::fairshare_plan(*f.state, f.jobs, gpusched::fuzz::as_text(data, size), std::nullopt, "fuzz.json"));
  return 0;
}

}  // namespace fuzz_queues_json
