// Shared by the topology suites: fixture text and a label-free cluster of GB-style nodes.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "test_util.hpp"

namespace gpusched::topology_test {

constexpr const char* kBlock = "topology.kubernetes.io/block";
constexpr const char* kRack = "topology.kubernetes.io/rack";

// A task of `gpus` whole GPUs, one core and 1 GiB.
inline TaskRequest whole_gpus(const ClusterState& s, int gpus) {
  TaskShape shape;
  shape.cpu = 1000;
  shape.memory = kGiB;
  shape.gpus = gpus;
  shape.gpu_milli = kMilliPerGpu;
  return s.compile(shape).value();
}

inline std::string fixture(const std::string& name) { return gpusched::testing::fixture_text("topology/" + name); }

// gb-00 .. gb-(n-1), 4 idle H100s each, no labels (a fabric JSON alone places them).
inline ClusterState plain_cluster(int n) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < n; ++i) {
    NodeSpec s;
    s.name = fmt::format("gb-{:02d}", i);
    s.cpu = 144000;
    s.memory = 1024 * kGiB;
    for (int g = 0; g < 4; ++g) s.gpus.push_back({"H100-SXM5-80GB", 0, 0, true});
    nodes.push_back(std::move(s));
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

// n0 .. n(count-1), `gpus` idle GPUs of `model` each (64 CPUs, 256 GiB), labelled by rack_of(i)
// under `rack_key` when the key is not empty; then `busy(i, g)` marks GPU g of node i fully used.
template <class RackOf, class Busy>
ClusterState racked_cluster(int count, const std::string& model, int gpus, const std::string& rack_key, RackOf&& rack_of,
                            Busy&& busy) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < count; ++i) {
    NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu = 64000;
    n.memory = 256 * kGiB;
    for (int g = 0; g < gpus; ++g) n.gpus.push_back({model, busy(i, g) ? kMilliPerGpu : 0, 0, true});
    if (!rack_key.empty()) n.labels = {{rack_key, rack_of(i)}};
    nodes.push_back(std::move(n));
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

}  // namespace gpusched::topology_test
