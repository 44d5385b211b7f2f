// gpusched/fairness/detail/hdrf_impl.hpp — the definitions behind gpusched/fairness/hdrf.hpp.
//
// Included at the end of hdrf.hpp, so a consumer compiles the fairness family with its own
// code and links no gpusched library (issue 11);
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/fairness/hdrf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gpusched/fairness/detail/text.hpp"

#include "gpusched/fairness/detail/demand_check.hpp"
#include "gpusched/fairness/detail/exact_share.hpp"
#include "gpusched/fairness/detail/indexed_heap.hpp"

namespace gpusched::fairness {

namespace detail {

// A node's key as its parent orders it: (tier, weighted share, id). Kept together so one comparison
// reads one cache line.
struct HdrfKey {
  double share = 0.0;
  std::uint8_t tier = 0;
  bool exact = false;  // a leaf: its exact fraction is in the scheduler's `exact` vector
};

// Share order between siblings: a leaf's share is also kept as an exact fraction (HdrfKey::exact), and two
// leaves whose doubles are within rounding of each other are ordered by the exact fractions
// (detail/exact_share.hpp), so equal rational shares tie and the tie goes to the lower id (created
// first). An internal node's share is a sum of rescaled doubles with no exact value kept (H-DRF's
// rescaling by M / s_c makes its exact value a rational of unbounded size), so when either side is
// an internal node, shares within the rounding margin are a tie and go to the lower id: two teams
// holding exactly 4/20 GPUs at weight 2 and 9/30 cores at weight 3 (0.1 and 0.09999999999999999 in
// doubles) are served in creation order, as documented, and never by the last bit of a rounding.
GPUSCHED_DECL bool hdrf_share_less(const std::vector<HdrfKey>& keys, const std::vector<ExactShare>& exact, std::uint32_t a,
                            std::uint32_t b) {
  const HdrfKey& ka = keys[a];
  const HdrfKey& kb = keys[b];
  const double sa = ka.share, sb = kb.share;  // non-negative
  // Clearly apart (the usual case): the doubles decide, without touching the exact fractions.
  // std::max, not std::fmax: shares are never NaN, and fmax is a libm call in the hottest comparison.
  const double margin = kFairnessShareMargin * std::max(sa, sb);
  if (sb - sa > margin) return true;
  if (sa - sb > margin) return false;
  if (ka.exact && kb.exact) {
    const auto order = compare_exact_shares(exact[a], exact[b]);
    return order < 0 || (order == 0 && a < b);
  }
  return a < b;
}

struct HdrfPickLess {
  const std::vector<HdrfKey>* keys;
  const std::vector<ExactShare>* exact;
  bool operator()(std::uint32_t a, std::uint32_t b) const {
    const HdrfKey& ka = (*keys)[a];
    const HdrfKey& kb = (*keys)[b];
    if (ka.tier != kb.tier) return ka.tier < kb.tier;
    return hdrf_share_less(*keys, *exact, a, b);
  }
};
// The smallest share among non-blocked children (M, the rescaling target).
struct HdrfShareLess {
  const std::vector<HdrfKey>* keys;
  const std::vector<ExactShare>* exact;
  bool operator()(std::uint32_t a, std::uint32_t b) const { return hdrf_share_less(*keys, *exact, a, b); }
};

enum class HdrfContribution : std::uint8_t { kNone, kScaled, kBlocked };

// Internal nodes with at most this many children recompute their sums from all children on every
// update (O(fan-out · m), exact and independent of the order of past updates); wider nodes keep
// running sums and a heap for M (O(m + log fan-out) per update, re-summed every kHdrfRebuildEvery
// updates so rounding cannot accumulate). The root is never summed: nothing compares its share, so
// it only keeps the heap pick() walks (its share and consumption are computed when asked).
inline constexpr std::size_t kHdrfExactFanout = 16;
inline constexpr std::uint32_t kHdrfRebuildEvery = 1024;

}  // namespace detail

struct HdrfScheduler::Impl {
  Amounts capacity;
  Amounts threshold;
  Amounts free;
  std::vector<double> cap;  // capacity as doubles (0 = ignored in shares)
  std::vector<char> saturated;
  std::size_t m = 0;

  // Per node; vectors of m entries are stored contiguously (node-major) rather than as one heap
  // allocation per node, so an update touches a few adjacent cache lines. Keys live behind a
  // unique_ptr so the heaps' comparators stay valid when the scheduler moves.
  std::unique_ptr<std::vector<detail::HdrfKey>> keys = std::make_unique<std::vector<detail::HdrfKey>>();
  // Leaves' shares as exact fractions (den -1 for internal nodes), for ties; see hdrf_share_less.
  std::unique_ptr<std::vector<detail::ExactShare>> exact = std::make_unique<std::vector<detail::ExactShare>>();
  std::vector<NodeId> parent;
  std::vector<double> weight;
  std::vector<std::vector<NodeId>> children;
  std::vector<std::int64_t> alloc;   // leaves: allocation
  std::vector<char> leaf_blocked;
  std::vector<char> blocked;         // effective (leaf: its flag; internal: every child blocked)
  std::vector<double> consumption;   // V as seen by the parent
  std::vector<double> scaled_sum;    // wide internal nodes: sum over non-blocked children of V_c / share_c
  std::vector<double> blocked_sum;   // wide internal nodes: sum of the other children's V_c
  std::vector<double> contrib;       // children of wide nodes: what the node added to its parent's sums
  std::vector<detail::HdrfContribution> contrib_kind;
  std::vector<std::uint32_t> updates;
  // Each node's position in its parent's heaps, shared by all heaps (detail::SharedHeapPositions).
  std::unique_ptr<std::vector<std::uint32_t>> pick_pos = std::make_unique<std::vector<std::uint32_t>>();
  std::unique_ptr<std::vector<std::uint32_t>> share_pos = std::make_unique<std::vector<std::uint32_t>>();
  std::vector<detail::IndexedHeap<detail::HdrfPickLess, detail::SharedHeapPositions>> pick_heap;
  std::vector<detail::IndexedHeap<detail::HdrfShareLess, detail::SharedHeapPositions>> share_heap;

  double* row(std::vector<double>& v, NodeId n) { return v.data() + static_cast<std::size_t>(n) * m; }
  const double* row(const std::vector<double>& v, NodeId n) const { return v.data() + static_cast<std::size_t>(n) * m; }

  NodeId add(NodeId p, double w) {
    const auto id = static_cast<NodeId>(parent.size());
    parent.push_back(p);
    weight.push_back(w);
    children.emplace_back();
    alloc.resize(alloc.size() + m, 0);
    leaf_blocked.push_back(0);
    blocked.push_back(0);
    for (auto* v : {&consumption, &scaled_sum, &blocked_sum, &contrib}) v->resize(v->size() + m, 0.0);
    contrib_kind.push_back(detail::HdrfContribution::kNone);
    updates.push_back(0);
    keys->push_back(detail::HdrfKey{});
    exact->push_back(detail::fairness_zero_share(w));
    pick_pos->push_back(detail::IndexedHeap<detail::HdrfPickLess>::kAbsent);
    share_pos->push_back(detail::IndexedHeap<detail::HdrfShareLess>::kAbsent);
    pick_heap.emplace_back(detail::HdrfPickLess{keys.get(), exact.get()}, detail::SharedHeapPositions{pick_pos.get()});
    share_heap.emplace_back(detail::HdrfShareLess{keys.get(), exact.get()}, detail::SharedHeapPositions{share_pos.get()});
    return id;
  }

  bool leaf(NodeId n) const { return children[n].empty(); }
  bool wide(NodeId n) const { return n != kRoot && children[n].size() > detail::kHdrfExactFanout; }

  double share_of(const double* v, double w, bool skip_saturated) const {
    double best = 0.0;
    for (std::size_t r = 0; r < m; ++r) {
      if (cap[r] <= 0 || (skip_saturated && saturated[r])) continue;
      best = std::max(best, v[r] / cap[r]);
    }
    return best / w;
  }

  void recompute_leaf(NodeId n) {
    double* v = row(consumption, n);
    const std::int64_t* a = alloc.data() + static_cast<std::size_t>(n) * m;
    for (std::size_t r = 0; r < m; ++r) v[r] = static_cast<double>(a[r]);
    detail::ExactShare& e = (*exact)[n];
    detail::fairness_set_dominant_fraction(
        e, m, [a](std::size_t r) { return a[r]; }, [this](std::size_t r) { return capacity[static_cast<Eigen::Index>(r)]; });
    // The double share_of(v, weight, false) computes, without a second pass over the resources:
    // rounding is monotone, so the largest rounded quotient is the exact dominant resource's (up to
    // amounts beyond 2^53, where the conversion itself rounds and the exact order then decides).
    (*keys)[n].share = e.den > 0 ? static_cast<double>(e.num) / static_cast<double>(e.den) / weight[n] : 0.0;
    (*keys)[n].exact = true;
    blocked[n] = leaf_blocked[n];
  }

  // A narrow internal node (fan-out <= detail::kHdrfExactFanout): its consumption from all its children, summed
  // in creation order. Also how the root's values are computed on request (into `v`).
  void sum_children(NodeId n, double* v, double* scaled, double* rest, bool& any, std::uint8_t& tier) const {
    std::fill(scaled, scaled + m, 0.0);
    std::fill(rest, rest + m, 0.0);
    any = false;
    double M = 0.0;
    tier = 0;
    for (NodeId c : children[n]) {
      const detail::HdrfKey& k = (*keys)[c];
      const double* vc = row(consumption, c);
      if (!blocked[c]) {
        M = any ? std::min(M, k.share) : k.share;
        tier = any ? std::min(tier, k.tier) : k.tier;
        any = true;
      }
      if (!blocked[c] && k.share > 0) {
        for (std::size_t r = 0; r < m; ++r) scaled[r] += vc[r] / k.share;
      } else {
        for (std::size_t r = 0; r < m; ++r) rest[r] += vc[r];
      }
    }
    for (std::size_t r = 0; r < m; ++r) v[r] = any ? scaled[r] * M + rest[r] : rest[r];
  }

  void recompute_narrow(NodeId n) {
    bool any = false;
    std::uint8_t tier = 0;
    sum_children(n, row(consumption, n), row(scaled_sum, n), row(blocked_sum, n), any, tier);
    blocked[n] = any ? 0 : 1;
    if (any) (*keys)[n].tier = tier;
    (*keys)[n].share = share_of(row(consumption, n), weight[n], true);
  }

  void recompute_wide(NodeId n) {
    double* v = row(consumption, n);
    const double* s = row(scaled_sum, n);
    const double* b = row(blocked_sum, n);
    const auto& heap = share_heap[n];
    if (heap.empty()) {
      blocked[n] = 1;
      std::copy(b, b + m, v);
    } else {
      blocked[n] = 0;
      const double M = (*keys)[heap.top()].share;
      for (std::size_t r = 0; r < m; ++r) v[r] = s[r] * M + b[r];
      (*keys)[n].tier = (*keys)[pick_heap[n].top()].tier;
    }
    (*keys)[n].share = share_of(v, weight[n], true);
  }

  void recompute_internal(NodeId n) {
    (*keys)[n].exact = false;  // a sum of rescaled doubles: no exact fraction
    if (wide(n)) recompute_wide(n);
    else recompute_narrow(n);
  }

  // Child c's membership and position in its parent's pick heap (and share heap for wide parents).
  void place_in_heaps(NodeId c) {
    const NodeId p = parent[c];
    if (blocked[c]) {
      pick_heap[p].erase(c);
      share_heap[p].erase(c);
    } else {
      pick_heap[p].push(c);
      if (wide(p)) share_heap[p].push(c);
    }
  }

  // Moves child c's contribution in its wide parent p to its current state.
  void refresh_contribution(NodeId c) {
    const NodeId p = parent[c];
    double* cc = row(contrib, c);
    double* ss = row(scaled_sum, p);
    double* bs = row(blocked_sum, p);
    switch (contrib_kind[c]) {
      case detail::HdrfContribution::kScaled:
        for (std::size_t r = 0; r < m; ++r) ss[r] -= cc[r];
        break;
      case detail::HdrfContribution::kBlocked:
        for (std::size_t r = 0; r < m; ++r) bs[r] -= cc[r];
        break;
      case detail::HdrfContribution::kNone: break;
    }
    const double s = (*keys)[c].share;
    const double* vc = row(consumption, c);
    if (!blocked[c] && s > 0) {
      for (std::size_t r = 0; r < m; ++r) {
        cc[r] = vc[r] / s;
        ss[r] += cc[r];
      }
      contrib_kind[c] = detail::HdrfContribution::kScaled;
    } else {
      // Blocked, or holding nothing that counts (share 0): added as it is.
      for (std::size_t r = 0; r < m; ++r) {
        cc[r] = vc[r];
        bs[r] += cc[r];
      }
      contrib_kind[c] = detail::HdrfContribution::kBlocked;
    }
  }

  // Exact recomputation of a wide node's sums and heaps from its children.
  void rebuild_wide(NodeId p) {
    std::fill(row(scaled_sum, p), row(scaled_sum, p) + m, 0.0);
    std::fill(row(blocked_sum, p), row(blocked_sum, p) + m, 0.0);
    pick_heap[p].clear();
    share_heap[p].clear();
    for (NodeId c : children[p]) {
      contrib_kind[c] = detail::HdrfContribution::kNone;
      refresh_contribution(c);
      place_in_heaps(c);
    }
    updates[p] = 0;
  }

  // What a node's parent reads of it: key (share, tier, exact), blocked, consumption.
  bool same_as_seen(NodeId n, const detail::HdrfKey& key, char was_blocked, const double* v) const {
    const detail::HdrfKey& k = (*keys)[n];
    return k.share == key.share && k.tier == key.tier && k.exact == key.exact && blocked[n] == was_blocked &&
           std::equal(v, v + m, row(consumption, n));
  }

  // One leaf-to-root pass after a node's own state changed. It stops at the first ancestor whose
  // recomputed state (what its parent reads: key, blocked, consumption) is exactly what it was: the
  // levels above would recompute the same values. Adding a leaf under a chain of D queues therefore
  // costs O(1) levels instead of D (building a D-deep tree was O(D^2): issue 15).
  void propagate(NodeId n) {
    if (leaf(n)) recompute_leaf(n);
    else recompute_internal(n);
    while (n != kRoot) {
      const NodeId p = parent[n];
      if (wide(p)) {
        if (++updates[p] >= detail::kHdrfRebuildEvery) {
          rebuild_wide(p);
        } else {
          refresh_contribution(n);
          place_in_heaps(n);
        }
      } else {
        place_in_heaps(n);
      }
      if (p == kRoot) return;
      const detail::HdrfKey before = (*keys)[p];
      const char was_blocked = blocked[p];
      seen_scratch.assign(row(consumption, p), row(consumption, p) + m);
      recompute_internal(p);
      if (same_as_seen(p, before, was_blocked, seen_scratch.data())) return;
      n = p;
    }
  }
  std::vector<double> seen_scratch;  // propagate's copy of one node's consumption

  void recompute_all() {
    // Children have larger ids than their parents: a reverse sweep is bottom-up. Every key may have
    // changed, so heaps are rebuilt from scratch rather than repaired one entry at a time.
    for (NodeId n = static_cast<NodeId>(parent.size()); n-- > 0;) {
      if (leaf(n)) {
        recompute_leaf(n);
        continue;
      }
      if (wide(n)) {
        rebuild_wide(n);
      } else {
        pick_heap[n].clear();
        for (NodeId c : children[n]) place_in_heaps(c);
      }
      if (n != kRoot) recompute_internal(n);
    }
  }

  bool update_saturation() {
    bool changed = false;
    for (std::size_t r = 0; r < m; ++r) {
      const auto ri = static_cast<Eigen::Index>(r);
      const bool now = capacity[ri] > 0 && free[ri] < threshold[ri];
      if (now != static_cast<bool>(saturated[r])) {
        saturated[r] = now;
        changed = true;
      }
    }
    return changed;
  }

  void apply(NodeId leaf_id, const LeafChange& c) {
    bool changed = false;
    if (c.allocate || c.release) {
      std::int64_t* a = alloc.data() + static_cast<std::size_t>(leaf_id) * m;
      for (const auto& [delta, sign] : {std::pair{c.allocate, 1}, std::pair{c.release, -1}}) {
        if (!delta) continue;
        for (std::size_t r = 0; r < m; ++r) {
          const std::int64_t d = (*delta)[static_cast<Eigen::Index>(r)] * sign;
          a[r] += d;
          free[static_cast<Eigen::Index>(r)] -= d;
        }
      }
      changed = true;
    }
    if (c.tier && (*keys)[leaf_id].tier != *c.tier) {
      (*keys)[leaf_id].tier = *c.tier;
      changed = true;
    }
    if (c.blocked && static_cast<bool>(leaf_blocked[leaf_id]) != *c.blocked) {
      leaf_blocked[leaf_id] = *c.blocked;
      changed = true;
    }
    if (!changed) return;
    if ((c.allocate || c.release) && update_saturation()) recompute_all();
    else propagate(leaf_id);
  }
};

GPUSCHED_CTOR_DECL HdrfScheduler::HdrfScheduler(Amounts capacity, Amounts saturation_threshold) : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.m = static_cast<std::size_t>(capacity.size());
  s.capacity = std::move(capacity);
  s.free = s.capacity;
  s.cap.resize(s.m);
  for (std::size_t r = 0; r < s.m; ++r) s.cap[r] = static_cast<double>(s.capacity[static_cast<Eigen::Index>(r)]);
  const auto mi = static_cast<Eigen::Index>(s.m);
  s.threshold = saturation_threshold.size() == mi ? std::move(saturation_threshold) : Amounts::Ones(mi);
  s.saturated.assign(s.m, 0);
  s.update_saturation();
  s.add(kRoot, 1.0);
}
GPUSCHED_CTOR_DECL HdrfScheduler::HdrfScheduler(HdrfScheduler&&) noexcept = default;
GPUSCHED_DECL HdrfScheduler& HdrfScheduler::operator=(HdrfScheduler&&) noexcept = default;
GPUSCHED_CTOR_DECL HdrfScheduler::~HdrfScheduler() = default;

GPUSCHED_DECL Result<HdrfScheduler::NodeId> HdrfScheduler::add_node(NodeId parent_id, double weight) {
  auto& s = *impl_;
  if (parent_id >= s.parent.size())
    return detail::fairness_error(ErrorCode::kUnknownName, detail::fairness_text("parent: no node ", parent_id, " (there are ", s.parent.size(), ")"));
  if (!std::isfinite(weight) || weight <= 0)
    return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("weight: expected a positive finite number, got ", weight));
  const std::int64_t* a = s.alloc.data() + static_cast<std::size_t>(parent_id) * s.m;
  if (std::any_of(a, a + s.m, [](std::int64_t v) { return v != 0; }))
    return detail::fairness_error(ErrorCode::kInconsistent, detail::fairness_text("parent: node ", parent_id, " already holds resources as a leaf"));
  const NodeId id = s.add(parent_id, weight);
  s.children[parent_id].push_back(id);
  // A parent that just became wide switches to running sums, built once from all its children.
  if (s.children[parent_id].size() == detail::kHdrfExactFanout + 1) s.rebuild_wide(parent_id);
  // A parent that was a leaf becomes internal; propagate() moves its contribution accordingly.
  s.propagate(id);
  return id;
}

GPUSCHED_DECL std::size_t HdrfScheduler::node_count() const { return impl_->parent.size(); }
GPUSCHED_DECL bool HdrfScheduler::is_leaf(NodeId n) const { return impl_->leaf(n); }
GPUSCHED_DECL HdrfScheduler::NodeId HdrfScheduler::parent(NodeId n) const { return impl_->parent[n]; }

GPUSCHED_DECL std::optional<HdrfScheduler::NodeId> HdrfScheduler::pick() const {
  const auto& s = *impl_;
  if (s.leaf(kRoot) || s.pick_heap[kRoot].empty()) return std::nullopt;
  NodeId n = kRoot;
  while (!s.leaf(n)) n = s.pick_heap[n].top();
  return n;
}

GPUSCHED_DECL void HdrfScheduler::apply(NodeId leaf, const LeafChange& change) { impl_->apply(leaf, change); }
GPUSCHED_DECL void HdrfScheduler::allocate(NodeId leaf, const Amounts& task) { impl_->apply(leaf, LeafChange{&task, nullptr, {}, {}}); }
GPUSCHED_DECL void HdrfScheduler::release(NodeId leaf, const Amounts& task) { impl_->apply(leaf, LeafChange{nullptr, &task, {}, {}}); }
GPUSCHED_DECL void HdrfScheduler::block(NodeId leaf) { impl_->apply(leaf, LeafChange{nullptr, nullptr, {}, true}); }
GPUSCHED_DECL void HdrfScheduler::unblock(NodeId leaf) { impl_->apply(leaf, LeafChange{nullptr, nullptr, {}, false}); }
GPUSCHED_DECL void HdrfScheduler::set_tier(NodeId leaf, std::uint8_t tier) { impl_->apply(leaf, LeafChange{nullptr, nullptr, tier, {}}); }

GPUSCHED_DECL bool HdrfScheduler::blocked(NodeId n) const {
  if (n == kRoot) return impl_->pick_heap[kRoot].empty();
  return impl_->blocked[n] != 0;
}

GPUSCHED_DECL double HdrfScheduler::share(NodeId n) const {
  if (n != kRoot || impl_->leaf(kRoot)) return (*impl_->keys)[n].share;
  const Vector v = consumption(kRoot);
  return impl_->share_of(v.data(), 1.0, true);
}

GPUSCHED_DECL Vector HdrfScheduler::consumption(NodeId n) const {
  const auto& s = *impl_;
  Vector v(static_cast<Eigen::Index>(s.m));
  if (n != kRoot || s.leaf(kRoot)) {
    std::copy(s.row(s.consumption, n), s.row(s.consumption, n) + s.m, v.data());
    return v;
  }
  std::vector<double> scaled(s.m), rest(s.m);
  bool any = false;
  std::uint8_t tier = 0;
  s.sum_children(kRoot, v.data(), scaled.data(), rest.data(), any, tier);
  return v;
}

GPUSCHED_DECL Eigen::Map<const Amounts> HdrfScheduler::allocation(NodeId leaf) const {
  return {impl_->alloc.data() + static_cast<std::size_t>(leaf) * impl_->m, static_cast<Eigen::Index>(impl_->m)};
}
GPUSCHED_DECL const Amounts& HdrfScheduler::free() const { return impl_->free; }
GPUSCHED_DECL const Amounts& HdrfScheduler::capacity() const { return impl_->capacity; }
GPUSCHED_DECL bool HdrfScheduler::saturated(Eigen::Index r) const { return impl_->saturated[static_cast<std::size_t>(r)] != 0; }

GPUSCHED_DECL Result<HdrfAllocation> hdrf_whole_tasks(const Amounts& capacity, std::span<const std::int64_t> parents,
                                        std::span<const double> weights, std::span<const HdrfTask> tasks) {
  const std::size_t n = parents.size();
  if (n == 0 || parents[0] != -1) return detail::fairness_error(ErrorCode::kInvalidValue, "parents[0]: the root must come first with parent -1");
  if (weights.size() != n) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("weights: expected ", n, " entries, got ", weights.size()));
  if (tasks.size() != n) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("tasks: expected ", n, " entries, got ", tasks.size()));
  if ((capacity.array() < 0).any()) return detail::fairness_error(ErrorCode::kInvalidValue, "capacity: negative amount");
  std::vector<char> has_child(n, 0);
  for (std::size_t i = 1; i < n; ++i) {
    if (parents[i] < 0 || static_cast<std::size_t>(parents[i]) >= i)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("parents[", i, "]: expected an earlier node, got ", parents[i]));
    has_child[static_cast<std::size_t>(parents[i])] = 1;
  }
  // Saturation threshold: the smallest leaf task needing each resource.
  Amounts threshold = Amounts::Ones(capacity.size());
  std::vector<char> seen(static_cast<std::size_t>(capacity.size()), 0);
  for (std::size_t i = 1; i < n; ++i) {
    if (has_child[i]) continue;
    const auto& t = tasks[i];
    if (t.demand.size() != capacity.size())
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("tasks[", i, "].demand: expected ", capacity.size(), " resources, got ", t.demand.size()));
    if ((t.demand.array() < 0).any()) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("tasks[", i, "].demand: negative amount"));
    if (t.max_tasks < -1) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("tasks[", i, "].max_tasks: expected -1 or a count, got ", t.max_tasks));
    if (t.max_tasks == -1 && t.demand.isZero())
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("tasks[", i, "].demand: all zero with unbounded max_tasks (it would never stop)"));
    for (Eigen::Index r = 0; r < capacity.size(); ++r) {
      if (t.demand[r] <= 0) continue;
      auto& seen_r = seen[static_cast<std::size_t>(r)];
      threshold[r] = seen_r ? std::min(threshold[r], t.demand[r]) : t.demand[r];
      seen_r = 1;
    }
  }
  HdrfScheduler s(capacity, threshold);
  for (std::size_t i = 1; i < n; ++i) {
    auto id = s.add_node(static_cast<HdrfScheduler::NodeId>(parents[i]), weights[i]);
    if (!id) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("nodes[", i, "].", id.error().message));
  }
  HdrfAllocation out;
  out.tasks.assign(n, 0);
  while (auto leaf = s.pick()) {
    const auto& t = tasks[*leaf];
    const bool capped = t.max_tasks >= 0 && out.tasks[*leaf] >= t.max_tasks;
    if (capped || !(t.demand.array() <= s.free().array()).all()) {
      s.block(*leaf);
      continue;
    }
    s.allocate(*leaf, t.demand);
    ++out.tasks[*leaf];
    out.sequence.push_back(*leaf);
  }
  return out;
}

// --- fractional H-DRF ------------------------------------------------------------------------------------
//
// Static H-DRF (SoCC'13, section 4) by progressive filling over the tree. Between two events every
// non-blocked leaf grows along its demand vector at a constant rate, fixed top-down: the root's
// non-blocked children raise their weighted dominant shares at one common rate (1 per unit time),
// and inside every internal node its non-blocked children raise theirs at one common rate, scaled so
// that the node's own dominant share rises at the rate its parent gives it. Each node n has a unit
// vector u_n, its consumption per unit of its own dominant share: a leaf's is D/d (its demand over
// the demand's dominant share), an internal node's is S_n/sigma_n where S_n = sum over non-blocked
// children of w_c·u_c and sigma_n the dominant share of S_n. Node n's children then move on n's clock
// V_n, which advances at kappa_n = w_n·kappa_parent/sigma_n (kappa_root = 1): a non-blocked leaf
// child d holds w_d·V_n/d_d tasks, so its demand cap is reached at the fixed clock value
// theta_d = max_tasks·d_d/w_d. The events are: a leaf's cap (next theta on each internal node's clock,
// kept sorted), and a resource saturating (free / total rate, the total rate being S_root); a
// saturation blocks every leaf needing the resource. Blocked children stop counting in their
// parent's S, which is what keeps a blocked node from handing its share to one sibling and a
// complementary sibling from starving its cousin (the paper's two examples). Saturated resources
// drop out of S (no growing leaf needs them), so internal shares ignore them, as in dynamic H-DRF.
// On a one-level tree this is exactly weighted progressive filling (DRF).
// One function on purpose: one event-driven sweep whose clocks, caps and saturations move together (the essay
// above).
GPUSCHED_DECL Result<FractionalAllocation> hdrf_progressive_filling(const Vector& capacity, std::span<const std::int64_t> parents,
                                                      std::span<const double> weights,
                                                      std::span<const FractionalUser> nodes) {
  const Eigen::Index mi = capacity.size();
  const auto m = static_cast<std::size_t>(mi);
  if (auto ok = detail::check_capacity(capacity); !ok) return ok.error();
  const std::size_t n = parents.size();
  if (n == 0 || parents[0] != -1) return detail::fairness_error(ErrorCode::kInvalidValue, "parents[0]: the root must come first with parent -1");
  if (weights.size() != n) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("weights: expected ", n, " entries, got ", weights.size()));
  if (nodes.size() != n) return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("nodes: expected ", n, " entries, got ", nodes.size()));
  std::vector<std::vector<std::size_t>> children(n);
  for (std::size_t i = 1; i < n; ++i) {
    if (parents[i] < 0 || static_cast<std::size_t>(parents[i]) >= i)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("parents[", i, "]: expected an earlier node, got ", parents[i]));
    if (!std::isfinite(weights[i]) || weights[i] <= 0)
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("weights[", i, "]: expected a positive finite number, got ", weights[i]));
    children[static_cast<std::size_t>(parents[i])].push_back(i);
  }
  auto is_leaf = [&](std::size_t i) { return i > 0 && children[i].empty(); };

  FractionalAllocation out = detail::empty_allocation(n, mi);

  std::vector<double> per_task(n, 0.0);  // d_i
  std::vector<char> blocked(n, 1);
  std::vector<double> u(n * m, 0.0);     // unit vectors
  std::vector<double> S(n * m, 0.0);     // internal: sum over non-blocked children of w_c·u_c
  std::vector<double> sigma(n, 0.0);
  std::vector<std::size_t> live(n, 0);   // internal: non-blocked children
  std::size_t active = 0;
  for (std::size_t i = 1; i < n; ++i) {
    if (!is_leaf(i)) continue;
    const auto& l = nodes[i];
    auto check = detail::check_demand(detail::fairness_text("nodes[", i, "]"), l.demand, l.max_tasks, capacity);
    if (!check) return check.error();
    const auto [any, unservable, d_i] = *check;
    per_task[i] = d_i;
    // A leaf wanting nothing (or capped at 0 tasks) is satisfied from the start.
    if (unservable) out.stop[i] = StopReason::kUnservable;
    else if (!any || l.max_tasks == 0) out.stop[i] = StopReason::kDemandMet;
    else {
      blocked[i] = 0;
      ++active;
      for (std::size_t r = 0; r < m; ++r) u[i * m + r] = l.demand[static_cast<Eigen::Index>(r)] / per_task[i];
    }
  }

  // An internal node's S, sigma, u and blocked flag from its children (exact).
  auto resum = [&](std::size_t p) {
    double* s = &S[p * m];
    std::fill(s, s + m, 0.0);
    live[p] = 0;
    for (std::size_t c : children[p]) {
      if (blocked[c]) continue;
      ++live[p];
      for (std::size_t r = 0; r < m; ++r) s[r] += weights[c] * u[c * m + r];
    }
    blocked[p] = live[p] == 0;
    sigma[p] = 0.0;
    for (std::size_t r = 0; r < m; ++r)
      if (capacity[static_cast<Eigen::Index>(r)] > 0) sigma[p] = std::max(sigma[p], s[r] / capacity[static_cast<Eigen::Index>(r)]);
    for (std::size_t r = 0; r < m; ++r) u[p * m + r] = sigma[p] > 0 ? s[r] / sigma[p] : 0.0;
    if (sigma[p] <= 0) blocked[p] = 1;
  };
  auto resum_all = [&] {
    for (std::size_t p = n; p-- > 0;)
      if (!is_leaf(p)) resum(p);
  };
  resum_all();

  // Leaf caps on each internal node's clock, in the order they are reached (ties: lower index).
  std::vector<std::vector<std::pair<double, std::size_t>>> caps(n);
  std::vector<std::size_t> cursor(n, 0);
  for (std::size_t i = 1; i < n; ++i)
    if (is_leaf(i) && !blocked[i] && std::isfinite(nodes[i].max_tasks))
      caps[static_cast<std::size_t>(parents[i])].push_back({nodes[i].max_tasks * per_task[i] / weights[i], i});
  for (auto& c : caps) std::sort(c.begin(), c.end());
  std::vector<double> clock(n, 0.0), kappa(n, 0.0);

  auto freeze = [&](std::size_t leaf, double tasks, StopReason why, int bottleneck) {
    blocked[leaf] = 1;
    --active;
    detail::record_fairness_stop(out, leaf, tasks, why, bottleneck);
  };
  auto tasks_now = [&](std::size_t leaf) {
    const auto p = static_cast<std::size_t>(parents[leaf]);
    return std::min(nodes[leaf].max_tasks, weights[leaf] * clock[p] / per_task[leaf]);
  };

  while (active > 0 && !blocked[0]) {
    // Clock rates, top-down (parents have smaller indices).
    kappa[0] = 1.0;
    for (std::size_t p = 1; p < n; ++p)
      if (!is_leaf(p) && !blocked[p]) kappa[p] = weights[p] * kappa[static_cast<std::size_t>(parents[p])] / sigma[p];
    double dt = kUnlimited;
    for (std::size_t p = 0; p < n; ++p) {
      if (is_leaf(p) || blocked[p]) continue;
      auto& c = caps[p];
      while (cursor[p] < c.size() && blocked[c[cursor[p]].second]) ++cursor[p];
      if (cursor[p] < c.size()) dt = std::min(dt, std::max(0.0, c[cursor[p]].first - clock[p]) / kappa[p]);
    }
    int sat = -1;
    double sat_dt = kUnlimited;
    for (std::size_t r = 0; r < m; ++r) {
      const double rate = S[r];  // S_root: consumption per unit time
      if (out.saturated[r] || rate <= 0) continue;
      const double t_r = std::max(0.0, capacity[static_cast<Eigen::Index>(r)] - out.used[static_cast<Eigen::Index>(r)]) / rate;
      if (t_r < sat_dt) {
        sat_dt = t_r;
        sat = static_cast<int>(r);
      }
    }
    const bool cap_first = dt <= sat_dt;  // a cap at the same moment as a saturation counts as met
    dt = std::min(dt, sat_dt);
    if (!std::isfinite(dt)) break;  // unreachable: an active leaf needs some unsaturated resource
    for (std::size_t p = 0; p < n; ++p)
      if (!is_leaf(p) && !blocked[p]) clock[p] += kappa[p] * dt;
    for (std::size_t r = 0; r < m; ++r) out.used[static_cast<Eigen::Index>(r)] += S[r] * dt;

    if (cap_first) {
      // Every cap reached now (up to rounding) fires; the parent chain of each is re-summed.
      std::vector<std::size_t> fired;
      for (std::size_t p = 0; p < n; ++p) {
        if (is_leaf(p) || blocked[p]) continue;
        auto& c = caps[p];
        const double tol = 1e-12 * std::max(1.0, clock[p]);
        while (cursor[p] < c.size()) {
          const auto [theta, leaf] = c[cursor[p]];
          if (!blocked[leaf]) {
            if (theta > clock[p] + tol) break;
            freeze(leaf, nodes[leaf].max_tasks, StopReason::kDemandMet, -1);
            fired.push_back(leaf);
          }
          ++cursor[p];
        }
      }
      for (std::size_t leaf : fired)
        for (auto p = static_cast<std::size_t>(parents[leaf]);; p = static_cast<std::size_t>(parents[p])) {
          resum(p);
          if (p == 0) break;
        }
      continue;
    }
    // Resource `sat` saturates (with any other that fills at the same moment, up to rounding).
    for (std::size_t r = 0; r < m; ++r) {
      const auto ri = static_cast<Eigen::Index>(r);
      if (out.saturated[r] || S[r] <= 0) continue;
      if (static_cast<int>(r) != sat && capacity[ri] - out.used[ri] > 1e-12 * capacity[ri]) continue;
      out.saturated[r] = true;
      out.used[ri] = capacity[ri];
      for (std::size_t i = 1; i < n; ++i)
        if (is_leaf(i) && !blocked[i] && nodes[i].demand[ri] > 0)
          freeze(i, tasks_now(i), StopReason::kResourceSaturated, static_cast<int>(r));
    }
    resum_all();
  }

  // Final figures from the tasks themselves (not the running sums): leaves' shares, subtree totals.
  std::vector<Vector> held(n, Vector::Zero(mi));
  for (std::size_t i = 1; i < n; ++i)
    if (is_leaf(i)) {
      held[i] = nodes[i].demand * out.tasks[i];
      out.dominant_share[i] = out.tasks[i] * per_task[i];
    }
  for (std::size_t i = n; i-- > 1;) held[static_cast<std::size_t>(parents[i])] += held[i];
  out.used = held[0];
  for (std::size_t i = 0; i < n; ++i)
    if (!is_leaf(i)) out.dominant_share[i] = dominant_share(held[i], capacity);
  for (Eigen::Index r = 0; r < mi; ++r)
    if (capacity[r] > 0 && out.used[r] >= capacity[r] * (1 - 1e-9)) out.saturated[static_cast<std::size_t>(r)] = true;
  return out;
}

}  // namespace gpusched::fairness
