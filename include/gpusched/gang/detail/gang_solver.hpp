// gpusched/gang/detail/gang_solver.hpp — the gang solver: bounds, greedy placement, bounded exact
// search (see gang.hpp for the idea). Included at the end of gang.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "gpusched/gang/detail/gang_format.hpp"

#include "gpusched/gang/detail/gang_capacity.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/cluster/domains.hpp"

namespace gpusched {
namespace detail {


inline constexpr std::int64_t kGangBig = std::numeric_limits<std::int64_t>::max() / 4;

GPUSCHED_DECL std::int64_t gang_sat_add(std::int64_t a, std::int64_t b) { return std::min(kGangBig, a + b); }

// "8 GPUs", "1 GPU", "500m GPU", "4 CPUs" — how a task is named in explanations.
GPUSCHED_DECL std::string gang_shape_text(const TaskShape& s) {
  if (s.shares_gpu()) return detail::gang_format("{}m GPU", s.gpu_milli);
  if (s.needs_gpu()) return s.gpus == 1 ? std::string("1 GPU") : detail::gang_format("{} GPUs", s.gpus);
  if (s.cpu > 0) {
    if (s.cpu % kMilliPerCpu == 0) return detail::gang_format("{} CPU", s.cpu / kMilliPerCpu);
    return detail::gang_format("{}m CPU", s.cpu);
  }
  return "no resources";
}


struct GangSpreadState {
  std::size_t map = 0;
  std::vector<char> covers;  // per group
  std::int64_t cap = 0;      // 0 = none
  std::int32_t min_domains = 0;
  std::vector<std::int32_t> count;  // per domain
  std::int32_t used = 0;            // domains with count > 0
  std::int64_t remaining = 0;       // covered tasks still to place in the minimum phase
};

struct GangAntiState {
  std::size_t map = 0;
  std::uint32_t a = 0, b = 0;
  std::vector<std::int32_t> count_a, count_b;  // per domain
};

class GangSolver {
 public:
  GangSolver(ClusterState& state, const GangSpec& spec, const GangOptions& options, const PlacementPolicy& policy)
      : st_(state),
        spec_(spec),
        opt_(options),
        policy_(policy),
        picker_(options.gpu_picker ? *options.gpu_picker : policy.gpu_picker(), options.mig_picker),
        ranks_(policy.ranks_nodes()),
        n_groups_(spec.groups.size()) {}

  GangResult run();

 private:
  enum class SearchOutcome { kFound, kExhausted, kBudget };

  const TaskRequest& req(std::uint32_t g) const { return spec_.groups[g].request; }
  // A level with mode kNone is no constraint.
  bool topology_in_force() const { return !spec_.topology.level.empty() && spec_.topology.mode != LevelMode::kNone; }
  std::size_t map_for(const std::string& level, Unlabelled unlabelled);
  void setup_constraints();
  bool allowed(NodeId n, std::uint32_t g) const;
  void note(NodeId n, std::uint32_t g, int sign);
  void set_min_phase(bool on);

  bool put(std::uint32_t g, const TaskAssignment& a);
  void undo_last();
  void undo_to(std::size_t n_tasks);
  std::int64_t rank(NodeId n, const TaskRequest& r) const;
  NodeId select(std::uint32_t g);
  NodeId select_allowed(std::uint32_t g, const std::vector<NodeId>* nodes);
  bool greedy_mins();
  void extras();

  bool aggregate_bounds(GangResult& out);
  void compute_caps();
  template <class F>
  void for_each_in(const std::vector<NodeId>* set, F&& f) const;
  bool count_bounds(const std::vector<NodeId>* set, std::vector<GangBound>* failed) const;
  std::int64_t group_avail(const std::vector<NodeId>* set, std::uint32_t g) const;

  SearchOutcome search(const std::vector<NodeId>* set);
  SearchOutcome dfs(std::size_t depth);
  void gpu_options(NodeId n, const TaskRequest& r, std::vector<TaskAssignment>& out) const;
  bool group_capacity_ok(std::size_t depth);

  GangResult finish(GangResult r, GangMethod method);
  void classify_capacity(GangResult& r, bool scan_nodes);
  // classify_capacity's counts: per group, the tasks that fit at capacity, in all and per domain.
  struct CapacityAtEmpty {
    std::vector<std::int64_t> total;
    std::vector<std::vector<std::int64_t>> per_domain;
    const std::vector<std::string>* names = nullptr;  // the domains' names, when known
    std::string level_name;
    bool domains_known = false, totals_known = false;
  };
  CapacityAtEmpty capacity_by_scan(bool required);
  CapacityAtEmpty capacity_from_summary(bool required);
  GangEmptyCapacity& capacity_cache() { return opt_.capacity_cache ? opt_.capacity_cache->impl_ : local_capacity_; }
  std::string bound_text(const GangBound& b) const;
  std::uint32_t main_group() const;
  std::string largest_domain_text(std::uint32_t g) const;
  std::string task_text(std::uint32_t g, std::int64_t count) const;

  ClusterState& st_;
  const GangSpec& spec_;
  const GangOptions& opt_;
  const PlacementPolicy& policy_;
  const detail::MigRoutedPicker picker_;
  const bool ranks_;  // policy_.ranks_nodes(): choices can be kept sorted by rank
  const std::size_t n_groups_;
  std::vector<NodeId> scratch_;  // candidates handed to select_among

  std::vector<DomainMap> maps_;
  std::vector<std::pair<std::string, Unlabelled>> map_keys_;
  std::optional<std::size_t> topo_;
  std::vector<GangSpreadState> spread_;
  std::vector<GangAntiState> anti_;
  bool dynamic_ = false;  // spread or anti-affinity constraints in force

  std::vector<std::vector<std::int64_t>> caps_;  // [group][node]: tasks that fit on the node alone
  std::vector<std::int64_t> cap_sums_;           // [group]: caps_[group] summed over the cluster
  std::vector<std::uint32_t> order_;             // groups, hardest first

  ClusterState::Checkpoint start_ = 0;
  std::vector<TaskPlacement> tasks_;
  std::vector<std::int32_t> placed_;
  std::vector<std::uint32_t> touched_;  // per node: tasks of this gang on it

  // Greedy selection restricted to tiers of nodes, tried in order (empty = the whole cluster).
  std::vector<const std::vector<NodeId>*> tiers_;
  // Per group, the fitting tier nodes ordered by (tier, -rank, id): the first allowed one is the
  // choice. Only the node a task lands on changes, so each placement refreshes one node per group
  // instead of rescanning the tier.
  using TierKey = std::tuple<std::uint32_t, std::int64_t, NodeId>;
  bool tier_index_on_ = false;
  std::vector<std::uint32_t> node_tier_;
  std::vector<std::set<TierKey>> tier_set_;
  std::vector<std::vector<std::int64_t>> tier_rank_;  // [group][node]: the key's rank while present
  std::vector<std::vector<char>> tier_in_;            // [group][node]
  void build_tier_index();
  void refresh_tier_node(NodeId n);

  // Search state.
  std::vector<std::uint32_t> search_tasks_;
  std::vector<NodeId> search_last_;
  std::vector<std::uint32_t> node_class_;                 // per node, for candidates
  std::vector<std::vector<NodeId>> class_members_;        // per class, ascending
  std::vector<NodeId> search_nodes_;                      // the candidate set
  std::vector<char> in_search_;                           // per node
  std::uint64_t effort_ = 0;
  GangEmptyCapacity local_capacity_;  // when the caller keeps none (GangOptions::capacity_cache)
};

// --- constraints ---------------------------------------------------------------------------------

GPUSCHED_DECL std::size_t GangSolver::map_for(const std::string& level, Unlabelled unlabelled) {
  for (std::size_t i = 0; i < map_keys_.size(); ++i)
    if (map_keys_[i].first == level && map_keys_[i].second == unlabelled) return i;
  DomainMap m;
  if (opt_.domains && !is_node_level(level)) m = build_domains(*opt_.domains, st_, level, unlabelled);
  if (!m.resolved) m = build_domains(st_, level, unlabelled);
  maps_.push_back(std::move(m));
  map_keys_.emplace_back(level, unlabelled);
  return maps_.size() - 1;
}

GPUSCHED_DECL void GangSolver::setup_constraints() {
  if (topology_in_force()) topo_ = map_for(spec_.topology.level, Unlabelled::kExcluded);
  for (const SpreadConstraint& c : spec_.spread) {
    GangSpreadState rt;
    rt.map = map_for(c.level, Unlabelled::kExcluded);
    rt.covers.assign(n_groups_, c.groups.empty() ? 1 : 0);
    for (auto g : c.groups) rt.covers[g] = 1;
    rt.cap = c.max_per_domain;
    rt.min_domains = c.min_domains;
    rt.count.assign(maps_[rt.map].domain_count(), 0);
    spread_.push_back(std::move(rt));
  }
  for (const AntiAffinity& c : spec_.anti_affinity) {
    GangAntiState rt;
    rt.map = map_for(c.level, Unlabelled::kOwnDomain);
    rt.a = c.group_a;
    rt.b = c.group_b;
    rt.count_a.assign(maps_[rt.map].domain_count(), 0);
    rt.count_b.assign(maps_[rt.map].domain_count(), 0);
    anti_.push_back(std::move(rt));
  }
  dynamic_ = !spread_.empty() || !anti_.empty();
}

GPUSCHED_DECL bool GangSolver::allowed(NodeId n, std::uint32_t g) const {
  for (const GangSpreadState& s : spread_) {
    if (!s.covers[g]) continue;
    const std::uint32_t d = maps_[s.map].node_domain[n];
    if (d == DomainMap::kNone) return false;
    if (s.cap > 0 && s.count[d] >= s.cap) return false;
    // When the tasks left are just enough to open the domains still missing, each must open one.
    if (s.min_domains > 0 && s.used < s.min_domains && s.count[d] > 0 && s.remaining <= s.min_domains - s.used)
      return false;
  }
  for (const GangAntiState& a : anti_) {
    const std::uint32_t d = maps_[a.map].node_domain[n];
    if (g == a.a && a.count_b[d] > 0) return false;
    if (g == a.b && a.count_a[d] > 0) return false;
  }
  return true;
}

GPUSCHED_DECL void GangSolver::note(NodeId n, std::uint32_t g, int sign) {
  for (GangSpreadState& s : spread_) {
    if (!s.covers[g]) continue;
    const std::uint32_t d = maps_[s.map].node_domain[n];
    if (sign > 0 && s.count[d]++ == 0) ++s.used;
    if (sign < 0 && --s.count[d] == 0) --s.used;
    s.remaining -= sign;
  }
  for (GangAntiState& a : anti_) {
    const std::uint32_t d = maps_[a.map].node_domain[n];
    if (g == a.a) a.count_a[d] += sign;
    if (g == a.b) a.count_b[d] += sign;
  }
}

GPUSCHED_DECL void GangSolver::set_min_phase(bool on) {
  for (GangSpreadState& s : spread_) {
    if (!on) {
      s.remaining = kGangBig;  // extras: the minimum phase already opened the domains
      continue;
    }
    s.remaining = 0;
    for (std::uint32_t g = 0; g < n_groups_; ++g)
      if (s.covers[g]) s.remaining += spec_.groups[g].min_replicas - placed_[g];
  }
}

// --- placing -------------------------------------------------------------------------------------

GPUSCHED_DECL bool GangSolver::put(std::uint32_t g, const TaskAssignment& a) {
  if (!st_.reserve(req(g), a).ok()) return false;
  tasks_.push_back({g, static_cast<std::uint32_t>(placed_[g]), a});
  ++placed_[g];
  ++touched_[a.node];
  note(a.node, g, +1);
  if (tier_index_on_) refresh_tier_node(a.node);
  return true;
}

GPUSCHED_DECL void GangSolver::undo_last() {
  const TaskPlacement& t = tasks_.back();
  note(t.assignment.node, t.group, -1);
  --touched_[t.assignment.node];
  --placed_[t.group];
  st_.rollback(st_.checkpoint() - 1);
  const NodeId n = t.assignment.node;
  tasks_.pop_back();
  if (tier_index_on_) refresh_tier_node(n);
}

GPUSCHED_DECL void GangSolver::undo_to(std::size_t n_tasks) {
  while (tasks_.size() > n_tasks) undo_last();
}

// The policy's preference among nodes (higher is better, ties to the lowest id) when it ranks
// nodes (PlacementPolicy::ranks_nodes); otherwise 0, and choices go through select_among.
GPUSCHED_DECL std::int64_t GangSolver::rank(NodeId n, const TaskRequest& r) const {
  return ranks_ ? policy_.rank(st_, n, r) : 0;
}

// The policy's choice among the nodes of `nodes` (nullptr: the index's candidates) that group g's
// constraints allow and that fit.
GPUSCHED_DECL NodeId GangSolver::select_allowed(std::uint32_t g, const std::vector<NodeId>* nodes) {
  const TaskRequest& r = req(g);
  std::vector<NodeId>& cand = scratch_;
  cand.clear();
  auto consider = [&](NodeId n) {
    if (allowed(n, g) && st_.check_fit(n, r) == FitReason::kFits) cand.push_back(n);
    return true;
  };
  if (nodes) {
    for (NodeId n : *nodes) consider(n);
  } else {
    for_each_candidate(st_, r, consider);
  }
  return cand.empty() ? kNoNode : policy_.select_among(st_, r, cand);
}

GPUSCHED_DECL NodeId GangSolver::select(std::uint32_t g) {
  if (tiers_.empty()) {
    // The whole cluster: the policy's index-driven select, unless a constraint rejects it.
    const NodeId n = policy_.select(st_, req(g));
    if (n == kNoNode || !dynamic_ || allowed(n, g)) return n;
    return select_allowed(g, nullptr);
  }
  if (!tier_index_on_) {
    // A policy that does not rank: asked tier by tier, the first tier with a fitting node decides.
    for (const std::vector<NodeId>* tier : tiers_)
      if (const NodeId n = select_allowed(g, tier); n != kNoNode) return n;
    return kNoNode;
  }
  for (const TierKey& key : tier_set_[g]) {
    const NodeId n = std::get<2>(key);
    if (allowed(n, g)) return n;
  }
  return kNoNode;
}

GPUSCHED_DECL void GangSolver::build_tier_index() {
  tier_index_on_ = !tiers_.empty() && ranks_;
  if (!tier_index_on_) return;
  node_tier_.assign(st_.node_count(), ~std::uint32_t{0});
  for (std::uint32_t t = 0; t < tiers_.size(); ++t)
    for (NodeId n : *tiers_[t]) node_tier_[n] = t;
  tier_set_.assign(n_groups_, {});
  tier_rank_.assign(n_groups_, std::vector<std::int64_t>(st_.node_count(), 0));
  tier_in_.assign(n_groups_, std::vector<char>(st_.node_count(), 0));
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (spec_.groups[g].replicas == 0) continue;
    for (std::uint32_t t = 0; t < tiers_.size(); ++t)
      for (NodeId n : *tiers_[t]) {
        if (st_.check_fit(n, req(g)) != FitReason::kFits) continue;
        tier_rank_[g][n] = rank(n, req(g));
        tier_in_[g][n] = 1;
        tier_set_[g].emplace(t, -tier_rank_[g][n], n);
      }
  }
}

GPUSCHED_DECL void GangSolver::refresh_tier_node(NodeId n) {
  const std::uint32_t t = node_tier_[n];
  if (t == ~std::uint32_t{0}) return;
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (spec_.groups[g].replicas == 0) continue;
    if (tier_in_[g][n]) tier_set_[g].erase({t, -tier_rank_[g][n], n});
    tier_in_[g][n] = st_.check_fit(n, req(g)) == FitReason::kFits;
    if (!tier_in_[g][n]) continue;
    tier_rank_[g][n] = rank(n, req(g));
    tier_set_[g].emplace(t, -tier_rank_[g][n], n);
  }
}

GPUSCHED_DECL bool GangSolver::greedy_mins() {
  build_tier_index();
  set_min_phase(true);
  for (std::uint32_t g : order_) {
    while (placed_[g] < spec_.groups[g].min_replicas) {
      const NodeId n = select(g);
      TaskAssignment a;
      if (n == kNoNode || !picker_.pick(st_, n, req(g), a) || !put(g, a)) return false;
    }
  }
  return true;
}

// Elastic groups: as many more as fit, up to replicas, hardest group first.
GPUSCHED_DECL void GangSolver::extras() {
  build_tier_index();
  set_min_phase(false);
  for (std::uint32_t g : order_) {
    while (placed_[g] < spec_.groups[g].replicas) {
      const NodeId n = select(g);
      TaskAssignment a;
      if (n == kNoNode || !picker_.pick(st_, n, req(g), a) || !put(g, a)) break;
    }
  }
}

// --- bounds --------------------------------------------------------------------------------------

GPUSCHED_DECL std::string GangSolver::task_text(std::uint32_t g, std::int64_t count) const {
  return detail::gang_format("{} task{} x {}", count, count == 1 ? "" : "s", gang_shape_text(req(g).shape));
}

GPUSCHED_DECL std::uint32_t GangSolver::main_group() const {
  std::uint32_t best = 0;
  auto weight = [&](std::uint32_t g) {
    const auto& s = req(g).shape;
    return std::pair{spec_.groups[g].min_replicas * s.total_gpu_milli(), spec_.groups[g].min_replicas * s.cpu};
  };
  for (std::uint32_t g = 1; g < n_groups_; ++g)
    if (weight(g) > weight(best)) best = g;
  return best;
}

GPUSCHED_DECL bool GangSolver::aggregate_bounds(GangResult& out) {
  // Each group alone, from the index.
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    const std::int64_t need = spec_.groups[g].min_replicas;
    if (need == 0) continue;
    const auto b = detail::gang_index_bound(st_, req(g));
    if (b.tasks >= need) continue;
    const auto& shape = req(g).shape;
    std::string text = detail::gang_format("group {} needs {}; ", spec_.groups[g].name, task_text(g, need));
    if (shape.shares_gpu())
      text += detail::gang_format("the cluster has {}m of GPU free ({} tasks at most)", st_.shares().total_free(), b.tasks);
    else
      text += detail::gang_format("{} {} {}{} free GPUs ({} {} fit)", b.nodes, b.nodes == 1 ? "node has" : "nodes have",
                          shape.gpus, shape.gpus < st_.max_gpus_per_node() ? " or more" : "", b.tasks,
                          b.tasks == 1 ? "task" : "tasks");
    out.bounds.push_back({detail::gang_format("group {}: tasks that fit", spec_.groups[g].name), need, b.tasks,
                          ReasonKind::kTooFewTasksFit, Unit::kTasks, static_cast<std::int32_t>(g)});
    out.explanation = text;
    return false;
  }
  // All groups together: GPU share and whole idle GPUs.
  std::int64_t need_milli = 0, need_whole = 0;
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    const auto& s = req(g).shape;
    need_milli += spec_.groups[g].min_replicas * s.total_gpu_milli();
    if (s.needs_gpu() && !s.shares_gpu()) need_whole += spec_.groups[g].min_replicas * s.gpus;
  }
  if (need_milli > st_.shares().total_free()) {
    out.bounds.push_back({"GPU share (milli-GPU) free", need_milli, st_.shares().total_free(),
                          ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu, -1});
    out.explanation = detail::gang_format("the gang needs {} GPUs in all; the cluster has {} free", need_milli / 1000.0,
                             st_.shares().total_free() / 1000.0);
    return false;
  }
  const std::int64_t idle = detail::gang_indexed_idle_gpus(st_);
  if (need_whole > idle) {
    out.bounds.push_back({"idle GPUs", need_whole, idle, ReasonKind::kInsufficientGpus, Unit::kGpus, -1});
    out.explanation = detail::gang_format("the gang needs {} whole GPUs; {} GPUs are idle on schedulable nodes", need_whole, idle);
    return false;
  }
  return true;
}

GPUSCHED_DECL void GangSolver::compute_caps() {
  caps_.assign(n_groups_, std::vector<std::int64_t>(st_.node_count(), 0));
  cap_sums_.assign(n_groups_, 0);
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (spec_.groups[g].replicas == 0) continue;
    auto& caps = caps_[g];
    std::int64_t sum = 0;
    for_each_candidate(st_, req(g), [&](NodeId n) {
      caps[n] = detail::gang_node_task_capacity(st_, n, req(g));
      sum = gang_sat_add(sum, caps[n]);
      return true;
    });
    cap_sums_[g] = sum;
  }
}

template <class F>
GPUSCHED_DECL void GangSolver::for_each_in(const std::vector<NodeId>* set, F&& f) const {
  if (set) {
    for (NodeId n : *set) f(n);
  } else {
    for (NodeId n = 0; n < st_.node_count(); ++n) f(n);
  }
}

// Tasks of group g alone that the node set can take: per-node counts on nodes its spread levels
// label, capped per domain by spread caps and by self anti-affinity (one per domain).
GPUSCHED_DECL std::int64_t GangSolver::group_avail(const std::vector<NodeId>* set, std::uint32_t g) const {
  std::int64_t avail = 0;
  const bool spread_covers = std::any_of(spread_.begin(), spread_.end(), [&](const GangSpreadState& s) { return s.covers[g]; });
  if (set == nullptr && !spread_covers) {
    avail = cap_sums_[g];  // the whole cluster, no level to be labelled with: summed by compute_caps
  } else {
    for_each_in(set, [&](NodeId n) {
      if (caps_[g][n] == 0) return;
      for (const GangSpreadState& s : spread_)
        if (s.covers[g] && maps_[s.map].node_domain[n] == DomainMap::kNone) return;
      avail = gang_sat_add(avail, caps_[g][n]);
    });
  }
  // Sum over domains of min(cap, tasks of g in the domain); sparse, as the set may be one domain.
  auto capped_by_domain = [&](std::size_t map, std::int64_t cap) {
    std::vector<std::pair<std::uint32_t, std::int64_t>> per;
    for_each_in(set, [&](NodeId n) {
      const auto d = maps_[map].node_domain[n];
      if (d != DomainMap::kNone && caps_[g][n] > 0) per.emplace_back(d, caps_[g][n]);
    });
    std::sort(per.begin(), per.end());
    std::int64_t sum = 0, run = 0;
    for (std::size_t i = 0; i < per.size(); ++i) {
      run = gang_sat_add(run, per[i].second);
      if (i + 1 == per.size() || per[i + 1].first != per[i].first) {
        sum = gang_sat_add(sum, std::min(run, cap));
        run = 0;
      }
    }
    return sum;
  };
  for (const GangSpreadState& s : spread_)
    if (s.covers[g] && s.cap > 0) avail = std::min(avail, capped_by_domain(s.map, s.cap));
  for (const GangAntiState& a : anti_)
    if (a.a == g && a.b == g) avail = std::min(avail, capped_by_domain(a.map, 1));
  return avail;
}

// Necessary conditions on a node set (nullptr = all nodes). Each is exact for a one-request gang.
GPUSCHED_DECL bool GangSolver::count_bounds(const std::vector<NodeId>* set, std::vector<GangBound>* failed) const {
  bool ok = true;
  auto fail = [&](GangBound b) {
    ok = false;
    if (failed) failed->push_back(std::move(b));
  };
  // Per group, with the spread caps and self anti-affinity that bind it alone.
  for (std::uint32_t g = 0; g < n_groups_ && (ok || failed); ++g) {
    const std::int64_t need = spec_.groups[g].min_replicas;
    if (need == 0) continue;
    const std::int64_t avail = group_avail(set, g);
    if (avail < need) fail({detail::gang_format("group {}: tasks that fit", spec_.groups[g].name), need, avail, ReasonKind::kTooFewTasksFit,
                                Unit::kTasks, static_cast<std::int32_t>(g)});
  }
  // Covered groups of each spread together.
  for (const GangSpreadState& s : spread_) {
    std::int64_t need = 0;
    for (std::uint32_t g = 0; g < n_groups_; ++g)
      if (s.covers[g]) need += spec_.groups[g].min_replicas;
    std::vector<std::pair<std::uint32_t, std::int64_t>> per;
    for_each_in(set, [&](NodeId n) {
      const auto d = maps_[s.map].node_domain[n];
      if (d == DomainMap::kNone) return;
      std::int64_t k = 0;
      for (std::uint32_t g = 0; g < n_groups_; ++g)
        if (s.covers[g]) k = gang_sat_add(k, caps_[g][n]);
      if (k > 0) per.emplace_back(d, k);
    });
    std::sort(per.begin(), per.end());
    std::int64_t avail = 0, domains = 0, run = 0;
    for (std::size_t i = 0; i < per.size(); ++i) {
      run = gang_sat_add(run, per[i].second);
      if (i + 1 == per.size() || per[i + 1].first != per[i].first) {
        avail = gang_sat_add(avail, s.cap > 0 ? std::min(run, s.cap) : run);
        ++domains;
        run = 0;
      }
    }
    if (avail < need) fail({detail::gang_format("spread over {}: tasks that fit", maps_[s.map].level), need, avail,
                                ReasonKind::kSpreadUnsatisfiable, Unit::kTasks, -1});
    if (domains < s.min_domains)
      fail({detail::gang_format("spread over {}: domains with room", maps_[s.map].level), s.min_domains, domains,
            ReasonKind::kSpreadUnsatisfiable, Unit::kDomains, -1});
  }
  // All groups together: host and GPU resources of nodes where some task fits. With one group to
  // place, these are implied by its count when it holds (a node's count is the tasks each of its
  // dimensions holds: gang_capacity.hpp), so the node scan is skipped.
  const auto groups_needed = std::count_if(spec_.groups.begin(), spec_.groups.end(),
                                           [](const GangGroup& group) { return group.min_replicas > 0; });
  if (ok && groups_needed <= 1) return ok;
  std::int64_t need_milli = 0, need_whole = 0, need_cpu = 0, need_mem = 0;
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    const auto& s = req(g).shape;
    const std::int64_t m = spec_.groups[g].min_replicas;
    need_milli += m * s.total_gpu_milli();
    if (s.needs_gpu() && !s.shares_gpu()) need_whole += m * s.gpus;
    need_cpu += m * s.cpu;
    need_mem += m * s.memory;
  }
  std::int64_t milli = 0, whole = 0, cpu = 0, mem = 0;
  for_each_in(set, [&](NodeId n) {
    bool any = false;
    for (std::uint32_t g = 0; g < n_groups_ && !any; ++g) any = caps_[g][n] > 0;
    if (!any) return;
    milli += st_.shares().node_free_milli(n);
    whole += st_.shares().idle_gpus(n);
    cpu += st_.cpu_free(n);
    mem += st_.memory_free(n);
  });
  if (need_milli > milli) fail({"GPU share (milli-GPU) on usable nodes", need_milli, milli, ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu, -1});
  if (need_whole > whole) fail({"idle GPUs on usable nodes", need_whole, whole, ReasonKind::kInsufficientGpus, Unit::kGpus, -1});
  if (need_cpu > cpu) fail({"CPU (milli) on usable nodes", need_cpu, cpu, ReasonKind::kInsufficientCpu, Unit::kMilliCpu, -1});
  if (need_mem > mem) fail({"memory (bytes) on usable nodes", need_mem, mem, ReasonKind::kInsufficientMemory, Unit::kMemoryBytes, -1});
  return ok;
}

// --- exact search --------------------------------------------------------------------------------

// The distinct ways a task can take GPUs on a node: GPUs with the same model, free share and free
// memory are interchangeable, so one assignment per class (shared) or per composition of classes
// (whole GPUs), each taking the lowest indices of its classes.
GPUSCHED_DECL void GangSolver::gpu_options(NodeId n, const TaskRequest& r, std::vector<TaskAssignment>& out) const {
  out.clear();
  const TaskShape& shape = r.shape;
  if (!shape.needs_gpu()) {
    out.push_back(make_assignment(n, r));
    return;
  }
  struct Class {
    GpuModelId model;
    std::int64_t milli, memory;
    std::vector<GpuIndex> gpus;
  };
  std::vector<Class> classes;
  const auto free = st_.shares().free_milli(n);
  for (std::size_t g = 0; g < free.size(); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    const GpuModelId model = st_.gpu_model(n, gi);
    const Bytes mem = st_.shares().free_memory(n, gi);
    if (!(r.models & model_bit(model)) || mem < shape.gpu_memory) continue;
    if (shape.shares_gpu() ? free[g] < shape.gpu_milli : free[g] != kMilliPerGpu) continue;
    auto it = std::find_if(classes.begin(), classes.end(), [&](const Class& c) {
      return c.model == model && c.milli == free[g] && c.memory == mem;
    });
    if (it == classes.end()) classes.push_back({model, free[g], mem, {gi}});
    else it->gpus.push_back(gi);
  }
  if (shape.shares_gpu()) {
    for (const Class& c : classes) {
      TaskAssignment a = make_assignment(n, r);
      a.gpus.push_back(c.gpus.front());
      out.push_back(std::move(a));
    }
    return;
  }
  // Compositions: counts per class adding up to shape.gpus (bounded: at most 64 options).
  std::vector<std::int32_t> take(classes.size(), 0);
  auto rec = [&](auto&& self, std::size_t c, std::int32_t left) -> void {
    if (out.size() >= 64) return;
    if (c == classes.size()) {
      if (left != 0) return;
      TaskAssignment a = make_assignment(n, r);
      for (std::size_t k = 0; k < classes.size(); ++k)
        for (std::int32_t i = 0; i < take[k]; ++i) a.gpus.push_back(classes[k].gpus[static_cast<std::size_t>(i)]);
      std::sort(a.gpus.begin(), a.gpus.end());
      out.push_back(std::move(a));
      return;
    }
    const auto most = std::min<std::int32_t>(left, static_cast<std::int32_t>(classes[c].gpus.size()));
    for (std::int32_t k = most; k >= 0; --k) {
      take[c] = k;
      self(self, c + 1, left - k);
    }
    take[c] = 0;
  };
  rec(rec, 0, shape.gpus);
}

// At a change of group in the search order: can every group still to come reach its minimum on
// the nodes of the search? (Counts on the current state; cheap next to the subtree it can cut.)
GPUSCHED_DECL bool GangSolver::group_capacity_ok(std::size_t depth) {
  std::vector<std::int64_t> need(n_groups_, 0);
  for (std::size_t t = depth; t < search_tasks_.size(); ++t) ++need[search_tasks_[t]];
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (need[g] == 0) continue;
    std::int64_t avail = 0;
    for (NodeId n : search_nodes_) {
      if (!allowed(n, g)) continue;
      avail = gang_sat_add(avail, detail::gang_node_task_capacity(st_, n, req(g)));
      if (avail >= need[g]) break;
    }
    effort_ += search_nodes_.size() / 8 + 1;
    if (avail < need[g]) return false;
  }
  return true;
}

GPUSCHED_DECL GangSolver::SearchOutcome GangSolver::dfs(std::size_t depth) {
  if (depth == search_tasks_.size()) return SearchOutcome::kFound;
  if (effort_ > opt_.effort) return SearchOutcome::kBudget;
  const std::uint32_t g = search_tasks_[depth];
  const bool new_group = depth == 0 || search_tasks_[depth - 1] != g;
  if (new_group && !group_capacity_ok(depth)) return SearchOutcome::kExhausted;
  // Identical tasks of a group go to non-decreasing node ids (any placement can be so ordered).
  const NodeId low = new_group ? 0 : search_last_[depth - 1];
  const TaskRequest& r = req(g);

  // Candidates: nodes this gang already touched, and the lowest untouched node of each class of
  // identical untouched nodes (the others would repeat the same subtree).
  std::vector<NodeId> cand;
  for (const TaskPlacement& t : tasks_) {
    const NodeId n = t.assignment.node;
    if (n >= low && in_search_[n]) cand.push_back(n);
  }
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
  for (const auto& members : class_members_) {
    auto it = std::lower_bound(members.begin(), members.end(), low);
    while (it != members.end() && touched_[*it] > 0) ++it;
    if (it != members.end()) cand.push_back(*it);
  }
  effort_ += cand.size();
  // Try the policy's favourite first: a good order finds feasible placements early.
  std::vector<std::pair<std::int64_t, NodeId>> ranked;
  for (NodeId n : cand)
    if (allowed(n, g) && st_.check_fit(n, r) == FitReason::kFits) ranked.emplace_back(-rank(n, r), n);
  std::sort(ranked.begin(), ranked.end());

  std::vector<TaskAssignment> options;
  for (const auto& [neg_rank, n] : ranked) {
    gpu_options(n, r, options);
    for (const TaskAssignment& a : options) {
      ++effort_;
      if (!put(g, a)) continue;
      search_last_[depth] = n;
      const SearchOutcome o = dfs(depth + 1);
      if (o == SearchOutcome::kFound) return o;
      undo_last();
      if (o == SearchOutcome::kBudget) return o;
    }
    if (effort_ > opt_.effort) return SearchOutcome::kBudget;
  }
  return SearchOutcome::kExhausted;
}

GPUSCHED_DECL GangSolver::SearchOutcome GangSolver::search(const std::vector<NodeId>* set) {
  tier_index_on_ = false;  // the search picks its own nodes
  // Candidate nodes: where some group with a minimum fits at all.
  search_nodes_.clear();
  in_search_.assign(st_.node_count(), 0);
  for_each_in(set, [&](NodeId n) {
    for (std::uint32_t g = 0; g < n_groups_; ++g)
      if (spec_.groups[g].min_replicas > 0 && caps_[g][n] > 0) {
        search_nodes_.push_back(n);
        in_search_[n] = 1;
        return;
      }
  });
  std::sort(search_nodes_.begin(), search_nodes_.end());

  // Classes of interchangeable nodes: same free resources, same GPU states (as a multiset), same
  // labels the groups select on, same domains of multi-node domains of every constraint level.
  std::vector<std::uint32_t> selector_keys;
  for (const auto& group : spec_.groups)
    for (const auto& l : group.request.selector) selector_keys.push_back(l.key);
  std::sort(selector_keys.begin(), selector_keys.end());
  selector_keys.erase(std::unique(selector_keys.begin(), selector_keys.end()), selector_keys.end());
  std::map<std::vector<std::int64_t>, std::uint32_t> ids;
  class_members_.clear();
  node_class_.assign(st_.node_count(), 0);
  for (NodeId n : search_nodes_) {
    std::vector<std::int64_t> sig{st_.cpu_free(n), st_.memory_free(n)};
    std::vector<std::array<std::int64_t, 3>> gpus;
    for (std::size_t g = 0; g < st_.gpu_count(n); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      gpus.push_back({st_.gpu_model(n, gi), st_.shares().free_milli(n, gi), st_.shares().free_memory(n, gi)});
    }
    std::sort(gpus.begin(), gpus.end());
    for (const auto& x : gpus) sig.insert(sig.end(), x.begin(), x.end());
    sig.push_back(-1);
    for (auto key : selector_keys) sig.push_back(st_.labels().value_of(n, key));
    for (const DomainMap& m : maps_) {
      const auto d = m.node_domain[n];
      sig.push_back(d == DomainMap::kNone ? -1 : (m.members[d].size() > 1 ? static_cast<std::int64_t>(d) : -2));
    }
    auto [it, inserted] = ids.try_emplace(std::move(sig), static_cast<std::uint32_t>(class_members_.size()));
    if (inserted) class_members_.emplace_back();
    class_members_[it->second].push_back(n);
    node_class_[n] = it->second;
  }

  search_tasks_.clear();
  for (std::uint32_t g : order_)
    for (std::int32_t i = placed_[g]; i < spec_.groups[g].min_replicas; ++i) search_tasks_.push_back(g);
  search_last_.assign(search_tasks_.size(), 0);
  set_min_phase(true);
  return dfs(0);
}

// The largest domain of the topology level for group g: "the largest topology.kubernetes.io/rack
// (rack-3) offers 30".
GPUSCHED_DECL std::string GangSolver::largest_domain_text(std::uint32_t g) const {
  if (!topo_ || maps_[*topo_].domain_count() == 0) return {};
  const DomainMap& m = maps_[*topo_];
  std::int64_t best = -1;
  std::size_t best_d = 0;
  for (std::size_t d = 0; d < m.domain_count(); ++d) {
    const std::int64_t k = group_avail(&m.members[d], g);
    if (k > best) {
      best = k;
      best_d = d;
    }
  }
  return detail::gang_format("the largest {} ({}) offers {}", m.per_node ? std::string("node") : m.key, m.names[best_d], best);
}

// --- the decision --------------------------------------------------------------------------------

// Per group, the tasks that fit the cluster at capacity (every node as if empty), over it and per
// domain of a required level, counted node by node (selectors included) after a node scan.
GPUSCHED_DECL GangSolver::CapacityAtEmpty GangSolver::capacity_by_scan(bool required) {
  CapacityAtEmpty cap;
  cap.total.assign(n_groups_, 0);
  cap.per_domain.resize(n_groups_);
  cap.totals_known = true;
  const DomainMap* topo = required && topo_ ? &maps_[*topo_] : nullptr;
  const std::size_t n_domains = topo ? topo->domain_count() : 0;
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (spec_.groups[g].min_replicas == 0) continue;
    cap.per_domain[g].assign(n_domains, 0);
    for (NodeId n = 0; n < st_.node_count(); ++n) {
      const std::int64_t k = placement_tasks_at_capacity(st_, n, req(g));
      cap.total[g] = gang_sat_add(cap.total[g], k);
      if (topo && topo->node_domain[n] != DomainMap::kNone)
        cap.per_domain[g][topo->node_domain[n]] = gang_sat_add(cap.per_domain[g][topo->node_domain[n]], k);
    }
  }
  if (topo && topo->resolved) {
    cap.domains_known = true;
    cap.names = &topo->names;
    cap.level_name = topo->per_node ? std::string("node") : topo->key;
  }
  return cap;
}

// The same from the capacity-at-empty summary, on the index-only path (no node scan ran).
GPUSCHED_DECL GangSolver::CapacityAtEmpty GangSolver::capacity_from_summary(bool required) {
  CapacityAtEmpty cap;
  cap.total.assign(n_groups_, 0);
  cap.per_domain.resize(n_groups_);
  // Index-only path: the per-group totals at empty come from the summary, a node pass once per
  // capacity generation (per call without a GangCapacityCache), then O(node shapes) per group.
  // Only the O(1) bounds ran here once, and an elastic gang asking a GPU model the cluster does
  // not have was "not now" for ever: the simulator never rejected it, and the jobs queued behind
  // it under FIFO were lost. The O(1) bounds above still answer first, in microseconds
  // (BM_GangInfeasibleBound).
  GangEmptyCapacity& cache = capacity_cache();
  cache.refresh(st_);
  cap.totals_known = true;
  const GangEmptyCapacity::Level* level = nullptr;
  if (required)
    level = &cache.level(spec_.topology.level, opt_.domains, [&]() -> const DomainMap& {
      if (!topo_) topo_ = map_for(spec_.topology.level, Unlabelled::kExcluded);
      return maps_[*topo_];
    });
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    if (spec_.groups[g].min_replicas == 0) continue;
    const std::vector<std::int64_t> caps = cache.shape_capacities(st_, req(g));
    cap.total[g] = cache.total(caps);
    if (level && level->resolved)
      for (std::size_t d = 0; d < level->names.size(); ++d) cap.per_domain[g].push_back(cache.domain_total(*level, d, caps));
  }
  if (level && level->resolved) {
    cap.domains_known = true;
    cap.names = &level->names;
    cap.level_name = level->per_node ? std::string("node") : level->key;
  }
  return cap;
}

// Infeasible or not now: a gang that does not fit now is infeasible when a capacity bound (every
// node as if empty) fails too. First the O(1) bounds (the largest node's GPUs, the cluster's GPU
// total); then per group over the whole cluster and per domain of a required level: counted node by
// node (selectors included) after a node scan, or, on the index-only path of a gang with a required
// level, from the capacity-at-empty summary (cached per capacity generation, selectors aside).
GPUSCHED_DECL void GangSolver::classify_capacity(GangResult& r, bool scan_nodes) {
  auto infeasible = [&](std::string what, ReasonKind kind, Unit unit, std::int64_t need, std::int64_t have,
                        std::int32_t subject) {
    r.verdict = Verdict::kInfeasible;
    r.reasons.insert(r.reasons.begin(), Reason{kind, unit, need, have, 0, subject});
    r.explanation += detail::gang_format("; infeasible even on the empty cluster: {} ({} needed, {} at capacity)", what,
                                 need, have);
  };
  std::int64_t need_milli = 0;
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    const TaskShape& shape = req(g).shape;
    if (spec_.groups[g].min_replicas == 0) continue;
    need_milli = gang_sat_add(need_milli, spec_.groups[g].min_replicas * shape.total_gpu_milli());
    if (shape.needs_gpu() && !shape.shares_gpu() && shape.gpus > st_.max_gpus_per_node())
      return infeasible(detail::gang_format("group {}: GPUs per task", spec_.groups[g].name), ReasonKind::kInsufficientGpus,
                        Unit::kGpus, shape.gpus, st_.max_gpus_per_node(), static_cast<std::int32_t>(g));
  }
  if (need_milli > st_.shares().total_capacity())
    return infeasible("GPU share (milli-GPU) of the cluster", ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu,
                      need_milli, st_.shares().total_capacity(), -1);
  // Per group over the cluster, and per domain of a required level: total[g], per_domain[g][d].
  const bool required = topology_in_force() && spec_.topology.mode == LevelMode::kRequired;
  const CapacityAtEmpty cap = scan_nodes ? capacity_by_scan(required) : capacity_from_summary(required);
  const std::vector<std::int64_t>& total = cap.total;
  const std::vector<std::vector<std::int64_t>>& per_domain = cap.per_domain;
  const std::vector<std::string>* names = cap.names;
  const std::string& level_name = cap.level_name;
  const bool domains_known = cap.domains_known, totals_known = cap.totals_known;
  for (std::uint32_t g = 0; g < n_groups_ && totals_known; ++g) {
    const std::int64_t need = spec_.groups[g].min_replicas;
    if (need > 0 && total[g] < need)
      return infeasible(detail::gang_format("group {}: tasks that fit", spec_.groups[g].name), ReasonKind::kTooFewTasksFit,
                        Unit::kTasks, need, total[g], static_cast<std::int32_t>(g));
  }
  if (!domains_known) return;
  // A group no domain holds alone at capacity: name the largest domain (ties: the first by name).
  const std::size_t n_domains = names->size();
  for (std::uint32_t g = 0; g < n_groups_; ++g) {
    const std::int64_t need = spec_.groups[g].min_replicas;
    if (need == 0) continue;
    std::int64_t best = 0;
    std::size_t best_d = 0;
    for (std::size_t d = 0; d < n_domains; ++d)
      if (per_domain[g][d] > best) {
        best = per_domain[g][d];
        best_d = d;
      }
    if (best < need)
      return infeasible(n_domains == 0
                            ? detail::gang_format("group {}: tasks in one {} (there is none)", spec_.groups[g].name, level_name)
                            : detail::gang_format("group {}: tasks in one {}, the largest being {}", spec_.groups[g].name,
                                                  level_name, (*names)[best_d]),
                        ReasonKind::kNoDomainFits, Unit::kTasks, need, best, static_cast<std::int32_t>(g));
  }
  // Every group fits some domain alone; does one domain hold them all?
  std::int64_t holding = 0;
  for (std::size_t d = 0; d < n_domains; ++d) {
    bool all = true;
    for (std::uint32_t g = 0; g < n_groups_ && all; ++g)
      all = spec_.groups[g].min_replicas == 0 || per_domain[g][d] >= spec_.groups[g].min_replicas;
    holding += all;
  }
  if (holding == 0)
    infeasible(detail::gang_format("domains of {} that can hold the gang", level_name), ReasonKind::kNoDomainFits,
               Unit::kDomains, 1, 0, -1);
}

GPUSCHED_DECL std::string GangSolver::bound_text(const GangBound& b) const {
  return detail::gang_format("{}: {} needed, {} available", b.what, b.needed, b.available);
}

GPUSCHED_DECL GangResult GangSolver::finish(GangResult r, GangMethod method) {
  r.method = method;
  r.effort_used = effort_;
  if (r.verdict != Verdict::kPlaced) {
    undo_to(0);
    st_.rollback(start_);
    r.placed_per_group.assign(n_groups_, 0);
    std::vector<Reason> reasons;
    for (const GangBound& b : r.bounds) reasons.push_back(b.reason());
    reasons.insert(reasons.end(), r.reasons.begin(), r.reasons.end());
    r.reasons = std::move(reasons);
    if (r.verdict == Verdict::kNotNow && !r.undecided()) classify_capacity(r, method != GangMethod::kAggregateBound);
    return r;
  }
  r.placed_per_group = placed_;
  r.tasks = tasks_;
  // Report in group order, replicas ascending (they were placed hardest group first).
  std::stable_sort(r.tasks.begin(), r.tasks.end(), [](const TaskPlacement& a, const TaskPlacement& b) {
    return a.group != b.group ? a.group < b.group : a.replica < b.replica;
  });
  for (auto t : touched_) r.nodes_used += t > 0;
  if (topo_) {
    const DomainMap& m = maps_[*topo_];
    std::vector<char> used(m.domain_count(), 0);
    std::uint32_t last = DomainMap::kNone;
    for (const auto& t : tasks_) {
      const auto d = m.node_domain[t.assignment.node];
      if (d == DomainMap::kNone || used[d]) continue;
      used[d] = 1;
      ++r.domains_used;
      last = d;
    }
    if (r.domains_used == 1) r.domain = m.names[last];
    r.domain_level = m.per_node ? std::string(kNodeLevel) : m.key;
  }
  if (opt_.dry_run) {
    tasks_.clear();
    st_.rollback(start_);
  }
  return r;
}

// One function on purpose: its stages (bounds, whole-cluster greedy, node sets by domain, search) share the
// journaled state and each may end the solve.
GPUSCHED_DECL GangResult GangSolver::run() {
  GangResult r;
  r.placed_per_group.assign(n_groups_, 0);
  if (auto st = validate_gang(spec_); !st) {
    r.verdict = Verdict::kInvalid;
    r.explanation = st.error().message;
    return r;
  }
  start_ = st_.checkpoint();
  placed_.assign(n_groups_, 0);
  touched_.assign(st_.node_count(), 0);
  order_.resize(n_groups_);
  std::iota(order_.begin(), order_.end(), 0u);
  // Hardest first: whole-GPU tasks by GPUs, then GPU share, CPU, memory.
  auto key = [&](std::uint32_t g) {
    const auto& s = req(g).shape;
    return std::tuple{s.needs_gpu() && !s.shares_gpu() ? s.gpus : 0, s.total_gpu_milli(), s.cpu, s.memory};
  };
  std::stable_sort(order_.begin(), order_.end(), [&](auto a, auto b) { return key(a) > key(b); });

  r.verdict = Verdict::kNotNow;
  if (!aggregate_bounds(r)) {
    // The proof took the index only; the topology figure costs a node scan, paid for explaining.
    if (topology_in_force()) {
      topo_ = map_for(spec_.topology.level, Unlabelled::kExcluded);
      if (maps_[*topo_].resolved) {
        compute_caps();
        r.explanation += "; " + largest_domain_text(main_group());
      }
    }
    return finish(std::move(r), GangMethod::kAggregateBound);
  }

  setup_constraints();
  const DomainMap* topo = topo_ ? &maps_[*topo_] : nullptr;
  const bool required = topo && spec_.topology.mode == LevelMode::kRequired;
  std::int64_t total_min = 0;
  for (const auto& group : spec_.groups) total_min += group.min_replicas;
  if (topo && !topo->resolved && required && total_min == 0) {  // nothing to place, nowhere to place it
    r.verdict = Verdict::kPlaced;
    return finish(std::move(r), GangMethod::kCountBound);
  }
  if (topo && !topo->resolved && required) {
    r.bounds.push_back({detail::gang_format("domains of level {}", spec_.topology.level), 1, 0, ReasonKind::kNoDomainFits,
                        Unit::kDomains, -1});
    r.explanation = detail::gang_format("no node has a label for level \"{}\" (or the name is ambiguous)", spec_.topology.level);
    return finish(std::move(r), GangMethod::kCountBound);
  }
  if (topo && !topo->resolved) {  // preferred: a level no node has is no preference at all
    topo_.reset();
    topo = nullptr;
  }
  // Without a level or constraints, the whole-cluster greedy below is tried before the per-node
  // counts: when it places the minimums, every count bound holds (they are necessary conditions), and
  // the node scan that builds the counts was most of a dry-run placement's time (the 544 placements
  // of a conservative backfill plan on 10,000 nodes, benchmarks/README.md).
  const bool greedy_first = topo == nullptr && !dynamic_;
  if (greedy_first) {
    tiers_.clear();
    if (greedy_mins()) {
      extras();
      r.verdict = Verdict::kPlaced;
      return finish(std::move(r), GangMethod::kGreedy);
    }
    undo_to(0);
  }
  compute_caps();
  const std::uint32_t main = main_group();
  const std::string level_name = topo ? (topo->per_node ? std::string("node") : topo->key) : std::string();

  auto largest_domain = [&] { return largest_domain_text(main); };

  // Whole-cluster counts.
  {
    std::vector<GangBound> failed;
    if (!count_bounds(nullptr, &failed)) {
      r.bounds = failed;
      const GangBound& b = failed.front();
      std::uint32_t g = main;
      for (std::uint32_t i = 0; i < n_groups_; ++i)
        if (b.what == detail::gang_format("group {}: tasks that fit", spec_.groups[i].name)) g = i;
      std::int64_t nodes = 0;
      for (NodeId n = 0; n < st_.node_count(); ++n) nodes += caps_[g][n] > 0;
      if (b.what.rfind("group ", 0) == 0)
        r.explanation = detail::gang_format("group {} needs {}; {} nodes have room for one, {} tasks fit in all",
                               spec_.groups[g].name, task_text(g, b.needed), nodes, b.available);
      else
        r.explanation = bound_text(b);
      if (topo) r.explanation += "; " + largest_domain();
      return finish(std::move(r), GangMethod::kCountBound);
    }
  }

  // The node sets to try, in order.
  std::vector<const std::vector<NodeId>*> sets;
  std::vector<std::size_t> domain_order;
  if (topo) {
    for (std::size_t d = 0; d < topo->domain_count(); ++d)
      if (count_bounds(&topo->members[d], nullptr)) domain_order.push_back(d);
    // Kueue TAS best fit (cluster/domains.hpp): the domain with the least room for the main group
    // that still holds all its replicas; an elastic gang no domain holds whole goes where it gets the most.
    std::vector<std::int64_t> room(topo->domain_count(), 0);
    for (auto d : domain_order) room[d] = group_avail(&topo->members[d], main);
    best_fit_order(domain_order, room, spec_.groups[main].replicas);
    for (auto d : domain_order) sets.push_back(&topo->members[d]);
  }
  if (required && sets.empty()) {
    r.bounds.push_back({detail::gang_format("domains of {} that can hold the gang", level_name), 1, 0, ReasonKind::kNoDomainFits,
                        Unit::kDomains, -1});
    r.explanation = detail::gang_format("no {} can hold the gang: group {} needs {}; {}", topo->per_node ? "node" : level_name,
                           spec_.groups[main].name, task_text(main, spec_.groups[main].min_replicas), largest_domain());
    return finish(std::move(r), GangMethod::kCountBound);
  }

  bool undecided = false;
  // One domain at a time (required, or preferred while one domain can hold the gang).
  for (const auto* set : sets) {
    tiers_ = {set};
    if (greedy_mins()) {
      extras();
      r.verdict = Verdict::kPlaced;
      return finish(std::move(r), GangMethod::kGreedy);
    }
    undo_to(0);
    if (!required) continue;  // preferred: the search runs once, over the whole cluster, below
    const SearchOutcome o = search(set);
    if (o == SearchOutcome::kFound) {
      extras();
      r.verdict = Verdict::kPlaced;
      return finish(std::move(r), GangMethod::kSearch);
    }
    undo_to(0);
    if (o == SearchOutcome::kBudget) {
      undecided = true;
      break;
    }
  }
  if (!required) {
    // No topology, or preferred with no single domain: everywhere, domains with most room first.
    std::vector<std::vector<NodeId>> tier_nodes;
    if (topo) {
      std::vector<std::size_t> all(topo->domain_count());
      std::iota(all.begin(), all.end(), std::size_t{0});
      std::vector<std::int64_t> room(topo->domain_count());
      for (auto d : all) room[d] = group_avail(&topo->members[d], main);
      std::stable_sort(all.begin(), all.end(), [&](auto a, auto b) { return room[a] > room[b]; });
      for (auto d : all) tier_nodes.push_back(topo->members[d]);
      std::vector<NodeId> rest;
      for (NodeId n = 0; n < st_.node_count(); ++n)
        if (topo->node_domain[n] == DomainMap::kNone) rest.push_back(n);
      tier_nodes.push_back(std::move(rest));
    }
    tiers_.clear();
    for (const auto& t : tier_nodes) tiers_.push_back(&t);
    if (!greedy_first && greedy_mins()) {
      extras();
      r.verdict = Verdict::kPlaced;
      return finish(std::move(r), GangMethod::kGreedy);
    }
    undo_to(0);
    const SearchOutcome o = search(nullptr);
    if (o == SearchOutcome::kFound) {
      extras();
      r.verdict = Verdict::kPlaced;
      auto out = finish(std::move(r), GangMethod::kSearch);
      tiers_.clear();
      return out;
    }
    undo_to(0);
    tiers_.clear();
    undecided = o == SearchOutcome::kBudget;
  }
  if (undecided) {
    r.verdict = Verdict::kNotNow;
    r.reasons.push_back({ReasonKind::kSearchBudget, Unit::kNone, -1, -1, 0, -1});
    r.explanation = detail::gang_format("search budget of {} exhausted: the bounds hold but no placement was found yet",
                           opt_.effort);
    return finish(std::move(r), GangMethod::kSearch);
  }
  r.reasons.push_back({required ? ReasonKind::kNoDomainFits : ReasonKind::kNoPlacementExists,
                       required ? Unit::kDomains : Unit::kNone, required ? 1 : -1, required ? 0 : -1, 0, -1});
  r.explanation = required ? detail::gang_format("no {} can hold the gang ({} domains pass the counts; exact search found no "
                                    "placement in any)",
                                    topo->per_node ? "node" : level_name, sets.size())
                      : std::string("exact search: no placement satisfies the gang's constraints, although every "
                                    "count bound holds");
  return finish(std::move(r), GangMethod::kSearch);
}

}  // namespace detail

GPUSCHED_DECL GangResult place_gang(ClusterState& state, const GangSpec& spec, const GangOptions& options) {
  static const BestFitPolicy kBestFit;
  const PlacementPolicy& policy = options.policy ? *options.policy : kBestFit;
  detail::GangSolver solver(state, spec, options, policy);
  return solver.run();
}

GPUSCHED_DECL QueueResult place_gangs(ClusterState& state, std::span<const GangSpec> gangs, const GangOptions& options) {
  GangCapacityCache queue_cache;  // one summary for the queue when the caller keeps none
  GangOptions opts = options;
  if (!opts.capacity_cache) opts.capacity_cache = &queue_cache;
  QueueResult out;
  out.results.reserve(gangs.size());
  for (const GangSpec& spec : gangs) {
    out.results.push_back(place_gang(state, spec, opts));
    if (out.results.back().placed()) ++out.placed;
  }
  return out;
}

GPUSCHED_DECL std::string gang_message(const GangSpec& spec, const GangResult& r, const ClusterState& /*state*/) {
  if (!r.placed()) return r.explanation;
  std::string counts;
  for (std::size_t g = 0; g < spec.groups.size() && g < r.placed_per_group.size(); ++g)
    counts += detail::gang_format("{}{} {}/{}", counts.empty() ? "" : ", ", spec.groups[g].name, r.placed_per_group[g],
                          spec.groups[g].replicas);
  std::string out = detail::gang_format("{} tasks ({}) on {} node{}", r.tasks.size(), counts, r.nodes_used,
                                r.nodes_used == 1 ? "" : "s");
  if (r.domains_used == 1 && r.domain_level != kNodeLevel) out += detail::gang_format(" in {}={}", r.domain_level, r.domain);
  else if (r.domains_used > 1) out += detail::gang_format(" across {} domains of {}", r.domains_used, r.domain_level);
  return out;
}

GPUSCHED_DECL std::string describe(const GangSpec& spec, const GangResult& result, const ClusterState& state) {
  return detail::gang_format("{}: {}{} ({}): {}", spec.name.empty() ? std::string("gang") : spec.name,
                     verdict_name(result.verdict), result.undecided() ? ", undecided" : "", method_name(result.method),
                     gang_message(spec, result, state));
}

}  // namespace gpusched
