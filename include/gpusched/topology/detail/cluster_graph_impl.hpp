// Implementation of gpusched/topology/cluster_graph.hpp (header-only: included at its end;
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
// Helpers live in gpusched::topology::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/topology/cluster_graph.hpp"
// The cluster fabric graph and the ring all-reduce estimate over it (model in cluster_graph.hpp).

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "gpusched/topology/allreduce.hpp"

namespace gpusched::topology {
namespace detail {

GPUSCHED_DECL bool is_nvlink_kind(LinkKind k) {
  return k == LinkKind::kNvLink1 || k == LinkKind::kNvLink2 || k == LinkKind::kNvLink3 || k == LinkKind::kNvLink4 ||
         k == LinkKind::kNvLink5;
}

// The intra-node NVLink hop: the floor of a ring step's latency (same figure as node_topology).
inline constexpr double kMinRingHopUs = 0.5;

// A host vertex's name: its node's, or "host<id>" without a state.
GPUSCHED_DECL std::string host_name(const ClusterState* state, NodeId n) {
  return state && n < state->node_count() ? std::string(state->node_name(n)) : fmt::format("host{}", n);
}

}  // namespace detail

GPUSCHED_DECL ClusterGraph ClusterGraph::build(const ClusterTopology& topo, const ClusterState* state) {
  ClusterGraph g;
  const std::size_t L = topo.level_count();
  auto add = [&](VertexKind kind, std::string name, Vertex parent, std::int32_t depth) {
    const Vertex v = g.graph_.add_vertex(kind, std::move(name));
    g.parent_.push_back(parent);
    g.up_gbps_.push_back(0);
    g.up_latency_us_.push_back(0);
    g.hosts_below_.push_back(0);
    g.depth_.push_back(depth);
    g.switch_slot_.push_back(kind == VertexKind::kHost ? -1 : g.switch_count_++);
    return v;
  };
  // Hosts below a domain: its node list (all placed nodes of the domain).
  auto link_up = [&](Vertex child, Vertex parent, const TopologyLevel& joining, double hosts, double oversub) {
    const LinkSpec& spec = link_spec(joining.link);
    const double bw = hosts * joining.links_per_node * spec.gbytes_per_s / oversub;
    // Bonded port count for display; clamped (a huge domain times many rails must not overflow).
    const double ports = std::min(hosts * joining.links_per_node, double{std::numeric_limits<std::int32_t>::max()});
    g.graph_.add_link(child, parent, joining.link, static_cast<std::int32_t>(ports), bw, spec.latency_us);
    g.up_gbps_[child] = bw;
    g.up_latency_us_[child] = spec.latency_us;
  };

  // Every node gets a host vertex, every domain one, plus perhaps the root.
  std::size_t vertices = topo.node_count() + 1;
  for (std::size_t l = 0; l < L; ++l) vertices += topo.domain_count(l);
  for (auto* v : {&g.up_gbps_, &g.up_latency_us_}) v->reserve(vertices);
  for (auto* v : {&g.hosts_below_, &g.depth_, &g.switch_slot_}) v->reserve(vertices);
  g.parent_.reserve(vertices);

  Vertex root = kNoVertex;
  std::int32_t base = 0;
  if (topo.top_domains().size() > 1) {
    root = add(VertexKind::kSpineSwitch, "cluster", kNoVertex, 0);
    base = 1;
  }
  g.domain_.assign(L, {});
  for (std::size_t l = 0; l < L; ++l) g.domain_[l].assign(topo.domain_count(l), kNoVertex);
  g.host_.assign(topo.node_count(), kNoVertex);
  g.order_.assign(topo.node_count(), std::numeric_limits<std::size_t>::max());
  std::size_t next_order = 0;

  auto kind_of = [&](std::size_t l) {
    if (detail::is_nvlink_kind(topo.level(l).link)) return VertexKind::kNvlDomain;
    return l == 0 ? VertexKind::kSpineSwitch : VertexKind::kLeafSwitch;
  };
  // Depth-first, so vertex ids and the ring order follow the tree.
  auto visit = [&](auto&& self, std::size_t l, DomainId d, Vertex parent) -> void {
    const Vertex v = add(kind_of(l), std::string(topo.domain_name(l, d)), parent, base + static_cast<std::int32_t>(l));
    g.domain_[l][d] = v;
    const auto below = static_cast<std::int32_t>(topo.domain_nodes(l, d).size());
    g.hosts_below_[v] = below;
    if (parent != kNoVertex) {
      const TopologyLevel& joining = topo.level(l == 0 ? 0 : l - 1);
      link_up(v, parent, joining, below, topo.level(l).uplink_oversubscription);
    }
    if (l + 1 < L) {
      for (DomainId c : topo.domain_children(l, d)) self(self, l + 1, c, v);
      return;
    }
    for (NodeId n : topo.domain_nodes(l, d)) {
      const Vertex h = add(VertexKind::kHost, detail::host_name(state, n), v, base + static_cast<std::int32_t>(L));
      g.hosts_below_[h] = 1;
      link_up(h, v, topo.level(L - 1), 1.0, 1.0);
      g.host_[n] = h;
      g.order_[n] = next_order++;
    }
  };
  if (root != kNoVertex) g.hosts_below_[root] = static_cast<std::int32_t>(topo.node_count() - topo.unplaced_nodes());
  for (DomainId d : topo.top_domains()) visit(visit, 0, d, root);
  // Unplaced nodes still get a (disconnected) host vertex so every node has a name in the graph.
  for (NodeId n = 0; n < topo.node_count(); ++n) {
    if (g.host_[n] == kNoVertex) add(VertexKind::kHost, detail::host_name(state, n), kNoVertex, 0);
  }
  return g;
}

GPUSCHED_DECL NodeSetEstimate ClusterGraph::allreduce(std::span<const NodeId> nodes, std::int32_t gpus_per_node, double bytes,
                                        double intra_node_gbps) const {
  NodeSetEstimate e;
  const double inf = std::numeric_limits<double>::infinity();
  e.allreduce_us = inf;
  if (gpus_per_node < 1 || !(bytes >= 0) || nodes.empty()) {
    e.bottleneck = fmt::format("no estimate: {} nodes, gpus_per_node {}, bytes {}", nodes.size(), gpus_per_node, bytes);
    return e;
  }
  for (NodeId n : nodes) {
    if (host(n) == kNoVertex) {
      e.bottleneck = fmt::format("node {} has no place in the topology", n);
      return e;
    }
  }
  e.valid = true;
  e.bus_bandwidth_gbps = intra_node_gbps > 0 ? intra_node_gbps : inf;
  e.bottleneck = "intra-node";
  e.latency_us = detail::kMinRingHopUs;
  // Ring in tree order.
  std::vector<NodeId> ring(nodes.begin(), nodes.end());
  std::sort(ring.begin(), ring.end(), [&](NodeId a, NodeId b) { return order_[a] < order_[b]; });
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  const std::size_t k = ring.size();
  if (k > 1) {
    // Per edge (identified by its lower vertex): job hosts below, ring flows up and down. A host's
    // own edge always carries its one host and one ring flow each way (the ring visits k distinct
    // nodes), so only switch vertices need counters: a few hundred, not one per host.
    struct EdgeLoad {
      std::int32_t job = 0, up = 0, down = 0;
    };
    std::vector<EdgeLoad> load(static_cast<std::size_t>(switch_count_));
    auto load_of = [&](Vertex v) -> EdgeLoad* {
      return switch_slot_[v] < 0 ? nullptr : &load[static_cast<std::size_t>(switch_slot_[v])];
    };
    std::vector<Vertex> touched;
    for (NodeId n : ring)
      for (Vertex v = host_[n]; parent_[v] != kNoVertex; v = parent_[v]) {
        EdgeLoad* c = load_of(v);
        if (c == nullptr || c->job++ == 0) touched.push_back(v);
      }
    for (std::size_t i = 0; i < k; ++i) {
      Vertex a = host_[ring[i]], b = host_[ring[(i + 1) % k]];
      double lat = 0;
      while (a != b) {
        if (depth_[a] >= depth_[b]) {
          if (EdgeLoad* c = load_of(a)) ++c->up;
          lat += up_latency_us_[a];
          a = parent_[a];
        } else {
          if (EdgeLoad* c = load_of(b)) ++c->down;
          lat += up_latency_us_[b];
          b = parent_[b];
        }
        if (a == kNoVertex || b == kNoVertex) break;  // disjoint roots cannot happen for placed nodes
      }
      e.latency_us = std::max(e.latency_us, lat);
    }
    for (Vertex v : touched) {
      const EdgeLoad* c = load_of(v);
      const std::int32_t job = c ? c->job : 1;
      const std::int32_t flows = c ? std::max(c->up, c->down) : 1;
      if (flows == 0) continue;
      const double share = up_gbps_[v] * job / std::max(hosts_below_[v], 1) / flows;
      if (share < e.bus_bandwidth_gbps) {
        e.bus_bandwidth_gbps = share;
        const Vertex p = parent_[v];
        const VertexInfo& lo = graph_.vertex(v);
        const VertexInfo& hi = graph_.vertex(p);
        e.bottleneck = fmt::format("{} '{}' -> {} '{}': {:.2f} GB/s shared by {} hosts, {} of them in the set, {} flow{}",
                                   vertex_kind_name(lo.kind), lo.name, vertex_kind_name(hi.kind), hi.name,
                                   up_gbps_[v], hosts_below_[v], job, flows, flows == 1 ? "" : "s");
      }
    }
  }
  const double ranks = static_cast<double>(k) * gpus_per_node;
  e.allreduce_us = allreduce_time(ranks, bytes, e.bus_bandwidth_gbps, e.latency_us).best_us;
  return e;
}

}  // namespace gpusched::topology
