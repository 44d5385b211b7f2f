// libFuzzer: the fabric JSON reader (docs/topology.md, "Cluster fabric from JSON") on arbitrary bytes,
// against a fixed eight-node cluster named like the seeds' (gb-00 .. gb-07).
#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/topology_json.hpp"

namespace fuzz_topology_json {

const gpusched::ClusterState& cluster() {
  static const gpusched::ClusterState state = [] {
    std::string nodes;
    for (int i = 0; i < 8; ++i)
      nodes += std::string(i ? "," : "") + R"({"name": "gb-0)" + std::to_string(i) +
               R"(", "cpu": 144, "memory": "1Ti", "gpus": 4, "gpu_model": "H100-80GB"})";
    auto doc = gpusched::io::read_cluster_json(R"({"nodes": [)" + nodes + "]}", "fuzz cluster");
    if (!doc) std::abort();
    auto built = gpusched::ClusterState::build(doc->cluster, doc->registry);
    if (!built) std::abort();
    return std::move(*built);
  }();
  return state;
}

GPUSCHED_FUZZ_TARGET(topology_json, data, size) {
  gpusched::fuzz::check_result(gpusched::io::read_cluster_topology_json(gpusched::fuzz::as_text(data, size), cluster()));
  return 0;
}

}  // namespace fuzz_topology_json
