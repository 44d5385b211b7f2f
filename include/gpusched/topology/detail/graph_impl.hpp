// Implementation of gpusched/topology/graph.hpp (header-only: included at its end). Helpers live in
// gpusched::topology::detail.
#pragma once

#include "gpusched/topology/graph.hpp"


#include <cmath>
#include <limits>
#include <queue>
#include <utility>

#include <boost/graph/push_relabel_max_flow.hpp>

namespace gpusched::topology {

inline std::string_view vertex_kind_name(VertexKind kind) {
  switch (kind) {
    case VertexKind::kGpu: return "gpu";
    case VertexKind::kNic: return "nic";
    case VertexKind::kNvSwitch: return "nvswitch";
    case VertexKind::kPcieSwitch: return "pcie-switch";
    case VertexKind::kHostBridge: return "host-bridge";
    case VertexKind::kNumaNode: return "numa-node";
    case VertexKind::kHost: return "host";
    case VertexKind::kLeafSwitch: return "leaf-switch";
    case VertexKind::kSpineSwitch: return "spine-switch";
    case VertexKind::kNvlDomain: return "nvlink-domain";
  }
  return "?";
}

inline TopologyGraph::Vertex TopologyGraph::add_vertex(VertexKind kind, std::string name, std::int32_t device) {
  return boost::add_vertex(VertexInfo{kind, std::move(name), device}, g_);
}

inline void TopologyGraph::add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links) {
  const LinkSpec& spec = link_spec(kind);
  add_link(a, b, kind, links, spec.gbytes_per_s * links, spec.latency_us);
}

inline void TopologyGraph::add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links, double gbytes_per_s,
                             double latency_us) {
  boost::add_edge(a, b, EdgeInfo{kind, links, gbytes_per_s, latency_us}, g_);
}

// Both queries are Dijkstra's algorithm over the Boost adjacency structure with a different
// "path value" algebra: (max, min) for the widest path, (min, +) for latency. Endpoints other than
// the source are settled but never expanded, so no path transits a GPU or NIC.
inline std::vector<double> TopologyGraph::widest_from(Vertex source) const {
  const std::size_t n = vertex_count();
  std::vector<double> best(n, 0.0);
  std::vector<char> done(n, 0);
  best[source] = std::numeric_limits<double>::infinity();
  std::priority_queue<std::pair<double, Vertex>> pq;  // largest bandwidth first
  pq.emplace(best[source], source);
  while (!pq.empty()) {
    auto [bw, v] = pq.top();
    pq.pop();
    if (done[v]) continue;
    done[v] = 1;
    if (v != source && is_endpoint(v)) continue;
    for (auto [e, end] = boost::out_edges(v, g_); e != end; ++e) {
      const Vertex w = boost::target(*e, g_);
      const double cand = std::min(bw, g_[*e].gbytes_per_s);
      if (!done[w] && cand > best[w]) {
        best[w] = cand;
        pq.emplace(cand, w);
      }
    }
  }
  return best;
}

inline std::vector<double> TopologyGraph::latency_from(Vertex source) const {
  const std::size_t n = vertex_count();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dist(n, inf);
  std::vector<char> done(n, 0);
  dist[source] = 0.0;
  using Item = std::pair<double, Vertex>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  pq.emplace(0.0, source);
  while (!pq.empty()) {
    auto [d, v] = pq.top();
    pq.pop();
    if (done[v]) continue;
    done[v] = 1;
    if (v != source && is_endpoint(v)) continue;
    for (auto [e, end] = boost::out_edges(v, g_); e != end; ++e) {
      const Vertex w = boost::target(*e, g_);
      const double cand = d + g_[*e].latency_us;
      if (!done[w] && cand < dist[w]) {
        dist[w] = cand;
        pq.emplace(cand, w);
      }
    }
  }
  return dist;
}

inline double TopologyGraph::max_flow(std::span<const Vertex> sources, std::span<const Vertex> sinks,
                               std::span<const Vertex> transit) const {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, long,
                      boost::property<boost::edge_residual_capacity_t, long,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = vertex_count();
  std::vector<char> role(n, 0);  // 1 source, 2 sink
  for (Vertex v : sources) role[v] = 1;
  for (Vertex v : sinks) role[v] = 2;
  for (Vertex v : transit)
    if (!role[v]) role[v] = 3;
  FlowGraph f(n + 2);
  const auto s = static_cast<Traits::vertex_descriptor>(n), t = static_cast<Traits::vertex_descriptor>(n + 1);
  auto cap = boost::get(boost::edge_capacity, f);
  auto rev = boost::get(boost::edge_reverse, f);
  auto arc = [&](std::size_t a, std::size_t b, long c) {
    auto e1 = boost::add_edge(a, b, f).first;
    auto e2 = boost::add_edge(b, a, f).first;
    cap[e1] = c;
    cap[e2] = 0;
    rev[e1] = e2;
    rev[e2] = e1;
  };
  // Integer capacities in units of 0.01 GB/s keep the flow exact.
  auto units = [](double gbps) { return static_cast<long>(std::llround(gbps * 100.0)); };
  const long big = std::numeric_limits<long>::max() / 4;
  for (auto [e, end] = boost::edges(g_); e != end; ++e) {
    const Vertex a = boost::source(*e, g_), b = boost::target(*e, g_);
    if ((is_endpoint(a) && !role[a]) || (is_endpoint(b) && !role[b])) continue;
    arc(a, b, units(g_[*e].gbytes_per_s));
    arc(b, a, units(g_[*e].gbytes_per_s));
  }
  for (Vertex v : sources) arc(s, v, big);
  for (Vertex v : sinks) arc(v, t, big);
  const long flow = boost::push_relabel_max_flow(f, s, t);
  return static_cast<double>(flow) / 100.0;
}

}  // namespace gpusched::topology
