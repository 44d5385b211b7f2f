// Implementation of gpusched/topology/cluster_topology.hpp (header-only: included at its end;
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
// Helpers live in gpusched::topology::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/topology/cluster_topology.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "gpusched/topology/allreduce.hpp"

namespace gpusched::topology {
namespace detail {

// Capacity of a node for CPU-only work that asks for nothing: bounded so that sums stay exact.
inline constexpr std::int64_t kUnboundedTaskSlots = std::int64_t{1} << 30;

// One candidate child while distributing tasks: its capacity and an id to recurse with.
struct ChildCapacity {
  std::int64_t cap = 0;
  std::uint32_t id = 0;  // DomainId at the child level, or NodeId at the node level
};

}  // namespace detail

GPUSCHED_DECL Result<ClusterTopology> ClusterTopology::from_labels(const ClusterState& state, std::vector<TopologyLevel> levels) {
  if (Status ok = check_levels(levels); !ok) return ok.error();
  std::vector<std::string> keys;
  for (const TopologyLevel& lv : levels) keys.push_back(lv.label_key);
  ClusterTopology t;
  t.levels_ = std::move(levels);
  t.tree_ = DomainTree::from_labels(state, std::move(keys));
  return t;
}

GPUSCHED_DECL Result<ClusterTopology> ClusterTopology::from_paths(const ClusterState& state, std::vector<TopologyLevel> levels,
                                                    const std::vector<std::vector<std::string>>& paths) {
  if (Status ok = check_levels(levels); !ok) return ok.error();
  if (paths.size() != state.node_count())
    return Error{fmt::format("paths: {} entries for {} nodes", paths.size(), state.node_count()), ErrorCode::kInconsistent, "paths"};
  for (std::size_t n = 0; n < paths.size(); ++n) {
    if (paths[n].empty()) continue;
    if (paths[n].size() != levels.size())
      return Error{fmt::format("paths[{}] ({}): {} domain names for {} levels", n,
                               state.node_name(static_cast<NodeId>(n)), paths[n].size(), levels.size()), ErrorCode::kInvalidValue, "paths"};
    for (std::size_t l = 0; l < paths[n].size(); ++l)
      if (paths[n][l].empty())
        return Error{fmt::format("paths[{}][{}] ({}): empty domain name", n, l,
                                 state.node_name(static_cast<NodeId>(n))), ErrorCode::kInvalidValue, "paths"};
  }
  return build(std::move(levels), paths);
}

GPUSCHED_DECL Status ClusterTopology::check_levels(const std::vector<TopologyLevel>& levels) {
  if (levels.empty()) return Error{"levels: at least one topology level is required", ErrorCode::kMissingField, "levels"};
  // The distribution and span walks recurse once per level: bound the depth (real fabrics have at
  // most 4-5 levels: NVLink domain, leaf, spine, super-spine, zone) so that no input overflows the stack.
  if (levels.size() > kMaxTopologyLevels)
    return Error{fmt::format("levels: {} topology levels, more than the limit of {}", levels.size(), kMaxTopologyLevels),
                 ErrorCode::kLimit, "levels"};
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const std::string field = fmt::format("levels[{}]", l);
    if (levels[l].label_key.empty())
      return Error{fmt::format("{}.label_key: must not be empty", field), ErrorCode::kInvalidValue, field + ".label_key"};
    if (levels[l].links_per_node < 1)
      return Error{fmt::format("{}.links_per_node: expected >= 1, got {}", field, levels[l].links_per_node),
                   ErrorCode::kInvalidValue, field + ".links_per_node"};
    if (!(levels[l].uplink_oversubscription >= 1.0) || !std::isfinite(levels[l].uplink_oversubscription))
      return Error{fmt::format("{}.uplink_oversubscription: expected a finite ratio >= 1, got {}", field,
                               levels[l].uplink_oversubscription),
                   ErrorCode::kInvalidValue, field + ".uplink_oversubscription"};
    for (std::size_t m = 0; m < l; ++m)
      if (levels[m].label_key == levels[l].label_key)
        return Error{fmt::format("{}.label_key: '{}' repeats levels[{}]", field, levels[l].label_key, m),
                     ErrorCode::kDuplicate, field + ".label_key"};
  }
  return {};
}

GPUSCHED_DECL Result<ClusterTopology> ClusterTopology::build(std::vector<TopologyLevel> levels,
                                               const std::vector<std::vector<std::string>>& paths) {
  if (Status ok = check_levels(levels); !ok) return ok.error();
  std::vector<std::string> keys;
  for (const TopologyLevel& lv : levels) keys.push_back(lv.label_key);
  ClusterTopology t;
  t.levels_ = std::move(levels);
  t.tree_ = DomainTree::from_paths(std::move(keys), paths);
  return t;
}

GPUSCHED_DECL Result<LevelConstraint> ClusterTopology::constraint(LevelMode mode, std::string_view level_name) const {
  if (mode == LevelMode::kNone) return LevelConstraint{};
  auto l = tree_.find_level(level_name);
  if (!l) {
    std::string known;
    for (std::size_t i = 0; i < levels_.size(); ++i)
      known += fmt::format("{}{}", i ? ", " : "", levels_[i].label_key);
    return Error{fmt::format("level: unknown topology level '{}' (levels: {})", level_name, known), ErrorCode::kUnknownName, "level"};
  }
  return LevelConstraint{mode, *l};
}

GPUSCHED_DECL NodeSpan ClusterTopology::span(std::span<const NodeId> nodes) const {
  NodeSpan s;
  if (nodes.empty()) return s;
  if (std::all_of(nodes.begin(), nodes.end(), [&](NodeId n) { return n == nodes[0]; })) {
    s.level = NodeSpan::kSingleNode;
    return s;
  }
  for (std::size_t l = levels_.size(); l-- > 0;) {
    const DomainId d = tree_.node_domain(nodes[0], l);
    if (d == kNoDomain) return s;
    if (std::all_of(nodes.begin(), nodes.end(), [&](NodeId n) { return tree_.node_domain(n, l) == d; })) {
      s.level = l;
      s.domain = d;
      return s;
    }
  }
  return s;
}

GPUSCHED_DECL double ClusterTopology::span_bandwidth_gbps(const NodeSpan& s) const {
  if (s.level == NodeSpan::kSingleNode) return 0.0;
  const TopologyLevel& lv = levels_[s.level == NodeSpan::kClusterWide ? 0 : s.level];
  return link_spec(lv.link).gbytes_per_s * lv.links_per_node;
}

GPUSCHED_DECL double ClusterTopology::span_latency_us(const NodeSpan& s) const {
  if (s.level == NodeSpan::kSingleNode) return 0.0;
  // Up from the node to the switch of the spanning level and down again: one cable hop per level
  // below it, each way.
  const std::size_t below = s.level == NodeSpan::kClusterWide ? levels_.size() + 1 : levels_.size() - s.level;
  const TopologyLevel& lv = levels_[s.level == NodeSpan::kClusterWide ? 0 : s.level];
  return 2.0 * static_cast<double>(below) * link_spec(lv.link).latency_us;
}

GPUSCHED_DECL double ClusterTopology::allreduce_us(std::span<const NodeId> nodes, std::int32_t gpus_per_node, double bytes,
                                     double intra_node_gbps) const {
  if (nodes.empty() || gpus_per_node < 1 || bytes < 0) return 0.0;
  const double ranks = static_cast<double>(nodes.size()) * gpus_per_node;
  if (ranks <= 1) return 0.0;
  const NodeSpan s = span(nodes);
  double bw = intra_node_gbps > 0 ? intra_node_gbps : std::numeric_limits<double>::infinity();
  double alpha = 0.5;
  if (s.level != NodeSpan::kSingleNode) {
    bw = std::min(bw, span_bandwidth_gbps(s));
    alpha = std::max(alpha, span_latency_us(s));
  }
  return allreduce_time(ranks, bytes, bw, alpha).best_us;
}

namespace detail {

// Tasks of `request` that fit on node n now, or (all_free) if everything on the node were freed:
// the node's capacities instead of its free amounts; an ineligible (cordoned, failed) node or a
// selector mismatch holds none either way.
GPUSCHED_DECL std::int64_t node_task_slots(const ClusterState& state, NodeId n, const TaskRequest& request, bool all_free) {
  if (all_free) {
    if (!state.eligible(n)) return 0;
    for (const auto& req : request.selector)
      if (state.labels().value_of(n, req.key) != req.value) return 0;
  } else if (state.check_fit(n, request) != FitReason::kFits) {
    return 0;
  }
  const TaskShape& shape = request.shape;
  std::int64_t cap = kUnboundedTaskSlots;
  const MilliCpu cpu = all_free ? state.cpu_capacity(n) : state.cpu_free(n);
  const Bytes memory = all_free ? state.memory_capacity(n) : state.memory_free(n);
  if (shape.cpu > 0) cap = std::min<std::int64_t>(cap, cpu / shape.cpu);
  if (shape.memory > 0) cap = std::min<std::int64_t>(cap, memory / shape.memory);
  if (shape.needs_gpu()) {
    std::int64_t units = 0;
    const std::size_t gpus = state.gpu_count(n);
    for (std::size_t g = 0; g < gpus; ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      if (!state.gpu_healthy(n, gi) || !(request.models & model_bit(state.gpu_model(n, gi)))) continue;
      const MilliGpu free = all_free ? kMilliPerGpu : state.shares().free_milli(n, gi);
      const Bytes mem = all_free ? state.shares().memory_capacity(n, gi) : state.shares().free_memory(n, gi);
      if (shape.shares_gpu()) {
        std::int64_t k = free / shape.gpu_milli;
        if (shape.gpu_memory > 0) k = std::min<std::int64_t>(k, mem / shape.gpu_memory);
        units += k;
      } else if (free >= kMilliPerGpu && (shape.gpu_memory <= 0 || mem >= shape.gpu_memory)) {
        ++units;
      }
    }
    cap = std::min<std::int64_t>(cap, shape.shares_gpu() ? units : units / shape.gpus);
  }
  return std::clamp<std::int64_t>(cap, 0, kUnboundedTaskSlots);
}

}  // namespace detail

GPUSCHED_DECL std::int32_t ClusterTopology::task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request) {
  return static_cast<std::int32_t>(detail::node_task_slots(state, n, request, false));
}

GPUSCHED_DECL NodeSetPick ClusterTopology::pick_nodes(const ClusterState& state, const TaskRequest& request, std::int32_t tasks,
                                        const LevelConstraint& constraint) const {
  std::vector<std::int32_t> cap(state.node_count(), 0);
  if (state.node_count() == node_count())
    for (NodeId n = 0; n < state.node_count(); ++n)
      if (tree_.node_domain(n, 0) != kNoDomain) cap[n] = task_capacity(state, n, request);
  NodeSetPick pick = pick_nodes(cap, tasks, constraint);
  if (pick.found() || pick.outcome.verdict == Verdict::kInvalid || state.node_count() != node_count()) return pick;
  // Not now, or never? The same pick with every node's resources free decides.
  for (NodeId n = 0; n < state.node_count(); ++n)
    if (tree_.node_domain(n, 0) != kNoDomain)
      cap[n] = static_cast<std::int32_t>(detail::node_task_slots(state, n, request, true));
  if (!pick_nodes(cap, tasks, constraint).found()) pick.outcome.verdict = Verdict::kInfeasible;
  return pick;
}

// One function on purpose: the numbered rules (one node, the deepest domain that fits, spread) share the
// domain capacities computed at its top.
GPUSCHED_DECL NodeSetPick ClusterTopology::pick_nodes(std::span<const std::int32_t> capacity, std::int32_t tasks,
                                        const LevelConstraint& constraint) const {
  NodeSetPick out;
  const std::size_t L = levels_.size();
  if (tasks < 1) {
    out.reason = fmt::format("tasks: expected a positive count, got {}", tasks);
    out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
    return out;
  }
  if (capacity.size() != node_count()) {
    out.reason = fmt::format("capacity: {} entries for {} nodes", capacity.size(), node_count());
    out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
    return out;
  }
  if (constraint.mode != LevelMode::kNone && constraint.level >= L) {
    out.reason = fmt::format("level: index {} out of range ({} levels)", constraint.level, L);
    out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
    return out;
  }
  auto node_cap = [&](NodeId n) -> std::int64_t {
    return tree_.node_domain(n, 0) == kNoDomain ? 0 : std::max<std::int64_t>(capacity[n], 0);
  };
  // Capacity of every domain, bottom-up through the node lists of the deepest level.
  std::vector<std::vector<std::int64_t>> dcap(L);
  for (std::size_t l = L; l-- > 0;) {
    dcap[l].assign(tree_.domain_count(l), 0);
    for (DomainId d = 0; d < dcap[l].size(); ++d) {
      if (l + 1 == L) {
        for (NodeId n : tree_.domain_nodes(l, d)) dcap[l][d] += node_cap(n);
      } else {
        for (DomainId c : tree_.domain_children(l, d)) dcap[l][d] += dcap[l + 1][c];
      }
    }
  }
  std::int64_t total = 0;
  for (DomainId d : tree_.top_domains()) total += dcap[0][d];

  // Children of a domain (level l in 0..L-1; l == L-1 means nodes), or the top domains for l = -1.
  auto children_of = [&](std::ptrdiff_t l, std::uint32_t d) {
    std::vector<detail::ChildCapacity> kids;
    if (l < 0) {
      for (DomainId c : tree_.top_domains()) kids.push_back({dcap[0][c], c});
    } else if (static_cast<std::size_t>(l) + 1 == L) {
      for (NodeId n : tree_.domain_nodes(l, d)) kids.push_back({node_cap(n), n});
    } else {
      for (DomainId c : tree_.domain_children(l, d)) kids.push_back({dcap[l + 1][c], c});
    }
    return kids;
  };

  // Distribute `count` tasks inside domain (l, d): largest children first, the last best-fit.
  auto distribute = [&](auto&& self, std::ptrdiff_t l, std::uint32_t d, std::int64_t count) -> void {
    std::vector<detail::ChildCapacity> kids = children_of(l, d);
    std::stable_sort(kids.begin(), kids.end(), [](const detail::ChildCapacity& a, const detail::ChildCapacity& b) { return a.cap > b.cap; });
    const bool leaf = static_cast<std::size_t>(l + 1) == L;
    std::int64_t left = count;
    std::size_t i = 0;
    std::vector<std::pair<std::uint32_t, std::int64_t>> chosen;
    while (left > 0 && i < kids.size()) {
      // If some child at or after i holds all that is left, take the smallest such (best fit; kids
      // are sorted by capacity descending, so it is the last one with cap >= left, and among equal
      // capacities the first of its run, i.e. the lowest id).
      std::size_t fitting = i;
      while (fitting < kids.size() && kids[fitting].cap >= left) ++fitting;
      std::size_t best = i + best_fit(fitting - i, left, [&](std::size_t j) { return kids[i + j].cap; });
      if (best == fitting) best = kids.size();
      if (best != kids.size()) {
        chosen.emplace_back(kids[best].id, left);
        left = 0;
        break;
      }
      if (kids[i].cap <= 0) break;
      chosen.emplace_back(kids[i].id, kids[i].cap);
      left -= kids[i].cap;
      ++i;
    }
    for (auto [id, k] : chosen) {
      if (leaf) {
        out.nodes.push_back(id);
        out.tasks_per_node.push_back(static_cast<std::int32_t>(k));
      } else {
        self(self, l + 1, id, k);
      }
    }
  };

  // kNone: the topology-unaware baseline, task by task best fit — each task on the node with the
  // least room that still holds one (ties to the lower node id), i.e. nodes filled in ascending
  // order of capacity. It neither looks for one domain nor minimises the node count.
  if (constraint.mode == LevelMode::kNone && total >= tasks) {
    std::vector<detail::ChildCapacity> order;
    for (NodeId n = 0; n < node_count(); ++n)
      if (node_cap(n) > 0) order.push_back({node_cap(n), n});
    std::stable_sort(order.begin(), order.end(), [](const detail::ChildCapacity& a, const detail::ChildCapacity& b) { return a.cap < b.cap; });
    std::int64_t left = tasks;
    for (const detail::ChildCapacity& c : order) {
      if (left == 0) break;
      const std::int64_t k = std::min(left, c.cap);
      out.nodes.push_back(c.id);
      out.tasks_per_node.push_back(static_cast<std::int32_t>(k));
      left -= k;
    }
    out.outcome = {};  // placed
  }
  // 1. A single node, then the deepest level with one domain that fits.
  if (constraint.mode != LevelMode::kNone) {
    const std::size_t best = best_fit(node_count(), tasks, [&](std::size_t n) { return node_cap(static_cast<NodeId>(n)); });
    if (best != node_count()) {
      out.outcome = {};  // placed
      out.nodes.push_back(static_cast<NodeId>(best));
      out.tasks_per_node.push_back(tasks);
    }
  }
  const std::size_t stop = constraint.mode == LevelMode::kRequired ? constraint.level : 0;
  for (std::size_t l = L; constraint.mode != LevelMode::kNone && !out.found() && l-- > stop;) {
    const std::size_t best = best_fit(dcap[l].size(), tasks, [&](std::size_t d) { return dcap[l][d]; });
    if (best != dcap[l].size()) {
      distribute(distribute, static_cast<std::ptrdiff_t>(l), static_cast<std::uint32_t>(best), tasks);
      out.outcome = {};  // placed
    }
  }
  if (!out.found() && constraint.mode == LevelMode::kPreferred && total >= tasks) {
    distribute(distribute, -1, 0, tasks);
    out.outcome = {};  // placed
  }
  if (!out.found()) {
    out.nodes.clear();
    out.tasks_per_node.clear();
    const std::string unplaced =
        tree_.unplaced_nodes() ? fmt::format("; {} nodes lack topology labels", tree_.unplaced_nodes()) : std::string{};
    if (constraint.mode == LevelMode::kRequired && total >= tasks) {
      const std::size_t l = constraint.level;
      DomainId largest = 0;
      for (DomainId d = 1; d < dcap[l].size(); ++d)
        if (dcap[l][d] > dcap[l][largest]) largest = d;
      out.outcome = Outcome::with(Verdict::kNotNow, Reason{ReasonKind::kNoDomainFits, Unit::kTasks, tasks,
                                                           dcap[l].empty() ? 0 : dcap[l][largest], dcap[l].size(),
                                                           static_cast<std::int32_t>(l)});
      out.reason = dcap[l].empty()
                       ? fmt::format("no {} domain has room for {} tasks: no placed nodes{}", level_short_name(l),
                                     tasks, unplaced)
                       : fmt::format("no {} has room for {} tasks: the largest free one holds {} ({} '{}'){}",
                                     level_short_name(l), tasks, dcap[l][largest], level_short_name(l),
                                     tree_.domain_name(l, largest), unplaced);
    } else {
      out.reason = fmt::format("only {} tasks fit in the cluster, {} requested{}", total, tasks, unplaced);
      out.outcome = Outcome::with(Verdict::kNotNow, Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, tasks, total, 0, -1});
    }
    return out;
  }
  out.span = span(out.nodes);
  switch (constraint.mode) {
    case LevelMode::kNone: out.preference_met = true; break;
    case LevelMode::kRequired: out.preference_met = true; break;
    case LevelMode::kPreferred:
      out.preference_met = out.span.level == NodeSpan::kSingleNode ||
                           (out.span.level != NodeSpan::kClusterWide && out.span.level >= constraint.level);
      break;
  }
  return out;
}

}  // namespace gpusched::topology
