// gpusched/topology/graph.hpp — the topology graph on Boost.Graph.
//
// Vertices are the things a byte passes through: GPUs, NICs, NVSwitches, PCIe switches, PCIe host
// bridges, CPU sockets / NUMA nodes, hosts, leaf and spine switches and NVLink rack domains. Edges
// are links and carry their kind (a row of the link table, links.hpp), how many links are bonded,
// the resulting bandwidth per direction and the per-hop latency. The graph is an undirected
// `boost::adjacency_list` with bundled properties, so any Boost.Graph algorithm applies to it.
//
// Endpoints (GPUs and NICs) originate and terminate traffic but never forward it: NCCL does not
// route through a GPU outside the communicator, and a NIC is not a switch. The path queries here
// honour that: a path may start or end at an endpoint but not pass through one.
//
//   TopologyGraph g;
//   auto a = g.add_vertex(VertexKind::kGpu, "GPU0", 0), s = g.add_vertex(VertexKind::kPcieSwitch, "sw0");
//   g.add_link(a, s, LinkKind::kPcieGen4, 1);
//   std::vector<double> bw = g.widest_from(a);   // bottleneck bandwidth to every vertex
//
// `max_flow` (Boost's Boykov-Kolmogorov algorithm on the directed double of the graph) is the
// exact capacity between two sets of vertices; the fast set scoring of node_topology.hpp is
// checked against it in the tests.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Boost 1.74's named_graph returns an empty boost::optional that GCC 12 reports as uninitialized once
// inlined into add_vertex at -O1 (a known false positive); nothing here reads an empty optional.
// Scoped to this header and its implementation (pushed here, popped at the end).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group (clang would warn about an unknown group)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>

#include "gpusched/topology/links.hpp"

namespace gpusched::topology {

enum class VertexKind : std::uint8_t {
  kGpu,
  kNic,
  kNvSwitch,
  kPcieSwitch,
  kHostBridge,
  kNumaNode,   // a CPU socket / NUMA node
  kHost,       // a whole server (the root of a node's graph)
  kLeafSwitch,
  kSpineSwitch,
  kNvlDomain,  // an NVLink rack domain (GB200 NVL72) or a block of racks
};
std::string_view vertex_kind_name(VertexKind kind);

struct VertexInfo {
  VertexKind kind = VertexKind::kHost;
  std::string name;
  std::int32_t device = -1;  // for GPUs and NICs: the device index in its NodeTopology
};

struct EdgeInfo {
  LinkKind kind = LinkKind::kPcieGen4;
  std::int32_t links = 1;     // bonded links (NV12 = 12)
  double gbytes_per_s = 0;    // per direction: links x the table's per-link figure
  double latency_us = 0;
};

class TopologyGraph {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexInfo, EdgeInfo>;
  using Vertex = Graph::vertex_descriptor;

  Vertex add_vertex(VertexKind kind, std::string name, std::int32_t device = -1);
  // A link of `links` bonded links of `kind` (bandwidth and latency from the link table).
  void add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links = 1);
  // A link with explicit figures (for a measured or oversubscribed link).
  void add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links, double gbytes_per_s, double latency_us);

  std::size_t vertex_count() const { return boost::num_vertices(g_); }
  std::size_t edge_count() const { return boost::num_edges(g_); }
  const VertexInfo& vertex(Vertex v) const { return g_[v]; }
  const Graph& boost_graph() const { return g_; }

  // Bottleneck (widest-path) bandwidth from `source` to every vertex, never transiting an endpoint;
  // 0 for unreachable vertices, +inf for the source itself.
  std::vector<double> widest_from(Vertex source) const;
  // Lowest path latency from `source` to every vertex under the same rule; +inf when unreachable.
  std::vector<double> latency_from(Vertex source) const;
  // Maximum flow (GB/s) from the `sources` to the `sinks`, every link full duplex at its bandwidth,
  // endpoints (GPUs, NICs) in none of the three sets taken out of the graph (`transit` endpoints
  // stay and may forward, as the ranks of a ring do).
  double max_flow(std::span<const Vertex> sources, std::span<const Vertex> sinks,
                  std::span<const Vertex> transit = {}) const;

 private:
  bool is_endpoint(Vertex v) const {
    return g_[v].kind == VertexKind::kGpu || g_[v].kind == VertexKind::kNic;
  }
  Graph g_;
};

}  // namespace gpusched::topology

#if GPUSCHED_HEADER_ONLY
#include "gpusched/topology/detail/graph_impl.hpp"
#endif
#pragma GCC diagnostic pop
