// benchmarks/instances/placement.hpp — the placement benchmarks' cluster at about 70 % occupancy
// (packing_placement.cpp at 1,000-100,000 nodes, scale_families.cpp at 25,000-100,000).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"

namespace gpusched::bench {

// `nodes` nodes of 96 cores, 1 TiB and 8 H100s named node-0, node-1, ...; each GPU in use with
// probability 0.7, the node's CPU and memory used in proportion; labelled with their rack of 32
// nodes, and with `blocks` also their block of 1,024 nodes.
inline Cluster occupied_cluster(std::size_t nodes, bool blocks) {
  SplitMix64 rng{42};
  std::vector<NodeSpec> specs(nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    NodeSpec& n = specs[i];
    n.name = "node-" + std::to_string(i);
    n.cpu = 96000;
    n.memory = 1024 * kGiB;
    n.gpus.assign(8, GpuSpec{"H100-80GB"});
    int used = 0;
    for (auto& g : n.gpus)
      if (rng.next() % 10 < 7) {
        g.used_milli = 1000;
        ++used;
      }
    n.cpu_used = used * 11000;
    n.memory_used = used * 120 * kGiB;
    if (blocks) n.labels.push_back({"topology.kubernetes.io/block", "block-" + std::to_string(i / 1024)});
    n.labels.push_back({"topology.kubernetes.io/rack", "rack-" + std::to_string(i / 32)});
  }
  return Cluster(std::move(specs));
}

}  // namespace gpusched::bench
