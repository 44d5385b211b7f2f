// benchmarks/instances/topology.hpp — the fat tree of topology_bench.cpp (4,096 nodes) with its size a
// parameter, which scale_stack.cpp measures at 25,000-100,000 nodes.
#pragma once

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/topology/cluster_topology.hpp"

namespace gpusched::bench {

// Blocks of 512 nodes under spines, leaves (racks) of 32 nodes, InfiniBand NDR at both levels.
inline const std::vector<topology::TopologyLevel>& fat_tree_levels() {
  static const std::vector<topology::TopologyLevel> levels = {
      {"topology.kubernetes.io/block", topology::LinkKind::kIbNdr, 8},
      {"topology.kubernetes.io/rack", topology::LinkKind::kIbNdr, 8}};
  return levels;
}

// `count` nodes of 8 H100s labelled with their block and leaf; a fifth of the nodes (by a
// multiplicative hash of the index) full, the rest idle.
inline ClusterState fat_tree(std::size_t count) {
  std::vector<NodeSpec> nodes(count);
  for (std::size_t i = 0; i < count; ++i) {
    NodeSpec& n = nodes[i];
    n.name = fmt::format("n{:06d}", i);
    n.cpu = 128000;
    n.memory = 1024 * kGiB;
    const int used = (i * 2654435761u) % 5 == 0 ? 8 : 0;
    for (int g = 0; g < 8; ++g) n.gpus.push_back({"H100-SXM5-80GB", g < used ? kMilliPerGpu : 0, 0, true});
    n.labels = {{"topology.kubernetes.io/block", fmt::format("b{}", i / 512)},
                {"topology.kubernetes.io/rack", fmt::format("leaf{}", i / 32)}};
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

}  // namespace gpusched::bench
