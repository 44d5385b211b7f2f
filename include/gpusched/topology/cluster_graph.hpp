// gpusched/topology/cluster_graph.hpp — the cluster fabric as a Boost graph, and what an all-reduce
// over a set of nodes costs on it.
//
// What it is for. A node set's *span* ("one rack", "one block") says how far apart its nodes are,
// but not how long its collectives take: two racks under a non-blocking spine can beat one rack
// whose NVLink domains hang off a 3:1 oversubscribed leaf. This turns a ClusterTopology into a
// TopologyGraph (graph.hpp) — a vertex per host, per domain of every level (leaf and spine
// switches; a level joined by NVLink becomes an NVLink rack-domain vertex, GB200 NVL72), plus a
// "cluster" root when there are several top-level domains — and estimates an all-reduce over a node
// set on it, so candidate node sets can be compared by time.
//
// The edges (bandwidth per direction, link figures from the cited table, links.hpp):
//   host -> its last-level domain:  links_per_node x the last level's link;
//   domain of level l -> its parent (level l-1): hosts below x links_per_node x level l-1's link,
//                                   divided by level l's uplink_oversubscription;
//   top-level domain -> cluster root: hosts below x links_per_node x level 0's link / level 0's
//                                   uplink_oversubscription.
// Latency of an edge is its link's per-hop figure.
//
// The model (ring all-reduce, bottleneck link decides):
//   * the ring visits the nodes in tree order (domain by domain), so it crosses each domain
//     boundary once each way; each ring hop is routed up to the lowest common domain and down;
//   * a loaded fabric: an edge's bandwidth is shared by all hosts below it in proportion, so the
//     job's flows over an edge get capacity x (job hosts below / all hosts below) — a lone node in a
//     2:1 leaf gets half its port up to the spine; a ring's single flow does not get the whole
//     leaf uplink just because the neighbours happen to be idle now;
//   * bus bandwidth B = min over the edges the ring uses of share / flows per direction, and of
//     the intra-node figure the caller gives (NodeTopology::score(...).bus_bandwidth_gbps);
//     α = the slowest ring hop's path latency (at least 0.5 µs, an intra-node NVLink hop);
//   * R = nodes x gpus_per_node ranks: time = 2(R-1)/R · bytes / B + 2(R-1) · α (Patarasuk & Yuan,
//     "Bandwidth optimal all-reduce algorithms", JPDC 2009; NCCL's ring model).
// Consequence (tested): a node set inside one last-level domain (a leaf) is never slower than the
// same number of nodes spread across several.
//
//   ClusterGraph g = ClusterGraph::build(topo, &state);
//   NodeSetEstimate e = g.allreduce(pick.nodes, /*gpus_per_node=*/8, 64.0 * (1 << 20), 450.0);
//   // e.allreduce_us, e.bus_bandwidth_gbps, e.bottleneck ("uplink leaf 'leaf0' -> spine 's0' ...")
//
// Cost: O(V) to build; an estimate is O(k · depth) for k nodes after an O(V) scratch reset.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/graph.hpp"

namespace gpusched::topology {

struct NodeSetEstimate {
  // False when a node has no place in the topology (unplaced, or an id out of range): then
  // allreduce_us is +inf and `bottleneck` says which node.
  bool valid = false;
  double bus_bandwidth_gbps = 0;  // +inf for a single node with no intra-node figure
  double latency_us = 0;          // α, the slowest ring hop
  double allreduce_us = 0;
  std::string bottleneck;         // the edge (or "intra-node") that sets B, with its numbers
};

class ClusterGraph {
 public:
  using Vertex = TopologyGraph::Vertex;
  static constexpr Vertex kNoVertex = ~Vertex{0};

  // Never fails: a ClusterTopology is already valid. `state` (optional) names the host vertices;
  // it must be the state the topology was built for.
  static ClusterGraph build(const ClusterTopology& topo, const ClusterState* state = nullptr);

  const TopologyGraph& graph() const { return graph_; }
  // kNoVertex for an unplaced node.
  Vertex host(NodeId n) const { return n < host_.size() ? host_[n] : kNoVertex; }
  Vertex domain(std::size_t level, DomainId d) const { return domain_[level][d]; }
  // The parent of a vertex in the fabric tree (kNoVertex for the root and unplaced hosts), the
  // bandwidth of the edge up to it (GB/s per direction) and how many hosts share that edge.
  Vertex parent(Vertex v) const { return parent_[v]; }
  double up_gbps(Vertex v) const { return up_gbps_[v]; }
  std::int32_t hosts_below(Vertex v) const { return hosts_below_[v]; }

  // Estimated all-reduce of `bytes` over `gpus_per_node` ranks on each of `nodes` (distinct), see
  // the essay. intra_node_gbps <= 0 means "not limited inside a node".
  NodeSetEstimate allreduce(std::span<const NodeId> nodes, std::int32_t gpus_per_node, double bytes,
                            double intra_node_gbps = 0) const;

 private:
  TopologyGraph graph_;
  std::vector<Vertex> host_;                    // [node]
  std::vector<std::vector<Vertex>> domain_;     // [level][domain]
  std::vector<Vertex> parent_;                  // [vertex]
  std::vector<double> up_gbps_, up_latency_us_; // [vertex] edge to parent
  std::vector<std::int32_t> hosts_below_;       // [vertex]
  std::vector<std::int32_t> depth_;             // [vertex], root(s) 0
  std::vector<std::size_t> order_;              // [node] position in tree (DFS) order
  std::vector<std::int32_t> switch_slot_;       // [vertex] dense index of a non-host vertex, -1 for hosts
  std::int32_t switch_count_ = 0;
};

}  // namespace gpusched::topology

#if GPUSCHED_HEADER_ONLY
#include "gpusched/topology/detail/cluster_graph_impl.hpp"
#endif
