// Implementation of gpusched/topology/graph.hpp (header-only: included at its end;
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
// Helpers live in gpusched::topology::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/topology/graph.hpp"


#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include <boost/graph/push_relabel_max_flow.hpp>

namespace gpusched::topology {

GPUSCHED_DECL std::string_view vertex_kind_name(VertexKind kind) {
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

GPUSCHED_DECL TopologyGraph::Vertex TopologyGraph::add_vertex(VertexKind kind, std::string name, std::int32_t device) {
  return boost::add_vertex(VertexInfo{kind, std::move(name), device}, g_);
}

GPUSCHED_DECL void TopologyGraph::add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links) {
  const LinkSpec& spec = link_spec(kind);
  add_link(a, b, kind, links, spec.gbytes_per_s * links, spec.latency_us);
}

GPUSCHED_DECL void TopologyGraph::add_link(Vertex a, Vertex b, LinkKind kind, std::int32_t links, double gbytes_per_s,
                             double latency_us) {
  boost::add_edge(a, b, EdgeInfo{kind, links, gbytes_per_s, latency_us}, g_);
}

// Both queries are Dijkstra's algorithm over the Boost adjacency structure with a different
// "path value" algebra: (max, min) for the widest path, (min, +) for latency. Endpoints other than
// the source are settled but never expanded, so no path transits a GPU or NIC.
namespace detail {

// Label-setting search (Dijkstra's scheme) from `source` over `g`: `extend(label, edge)` is a
// label carried over an edge, `better(a, b)` says a beats b. Vertices for which `stops_at(v)` holds
// are reached but not passed through (endpoints never forward). Serves both the widest path
// (label = bottleneck bandwidth) and the lowest latency (label = sum of hop latencies).
template <class Graph, class StopsAt, class Extend, class Better>
std::vector<double> best_path_labels(const Graph& g, typename Graph::vertex_descriptor source, double unreached,
                                     double at_source, StopsAt&& stops_at, Extend&& extend, Better&& better) {
  using Vertex = typename Graph::vertex_descriptor;
  using Item = std::pair<double, Vertex>;
  const std::size_t n = boost::num_vertices(g);
  std::vector<double> label(n, unreached);
  std::vector<char> done(n, 0);
  label[source] = at_source;
  auto worse_first = [&](const Item& x, const Item& y) { return better(y.first, x.first); };
  std::priority_queue<Item, std::vector<Item>, decltype(worse_first)> pq(worse_first);
  pq.emplace(at_source, source);
  while (!pq.empty()) {
    auto [d, v] = pq.top();
    pq.pop();
    if (done[v]) continue;
    done[v] = 1;
    if (v != source && stops_at(v)) continue;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const Vertex w = boost::target(*e, g);
      const double cand = extend(d, g[*e]);
      if (!done[w] && better(cand, label[w])) {
        label[w] = cand;
        pq.emplace(cand, w);
      }
    }
  }
  return label;
}

}  // namespace detail

GPUSCHED_DECL std::vector<double> TopologyGraph::widest_from(Vertex source) const {
  return detail::best_path_labels(
      g_, source, 0.0, std::numeric_limits<double>::infinity(), [&](Vertex v) { return is_endpoint(v); },
      [](double bw, const EdgeInfo& e) { return std::min(bw, e.gbytes_per_s); }, std::greater<>{});
}

GPUSCHED_DECL std::vector<double> TopologyGraph::latency_from(Vertex source) const {
  return detail::best_path_labels(
      g_, source, std::numeric_limits<double>::infinity(), 0.0, [&](Vertex v) { return is_endpoint(v); },
      [](double d, const EdgeInfo& e) { return d + e.latency_us; }, std::less<>{});
}

GPUSCHED_DECL double TopologyGraph::max_flow(std::span<const Vertex> sources, std::span<const Vertex> sinks,
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
