#include "gpusched/fairness/hdrf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "gpusched/fairness/internal/indexed_heap.hpp"

namespace gpusched::fairness {

namespace {

struct KeyData {
  std::vector<double> share;
  std::vector<std::uint8_t> tier;
};

// Serving order at one level: (tier, weighted share, id).
struct PickLess {
  const KeyData* keys;
  bool operator()(std::uint32_t a, std::uint32_t b) const {
    if (keys->tier[a] != keys->tier[b]) return keys->tier[a] < keys->tier[b];
    const double sa = keys->share[a], sb = keys->share[b];
    return sa < sb || (sa == sb && a < b);
  }
};
// The smallest share among non-blocked children (M, the rescaling target).
struct ShareLess {
  const KeyData* keys;
  bool operator()(std::uint32_t a, std::uint32_t b) const {
    const double sa = keys->share[a], sb = keys->share[b];
    return sa < sb || (sa == sb && a < b);
  }
};

enum class Contribution : std::uint8_t { kNone, kScaled, kBlocked };

}  // namespace

struct HdrfScheduler::Impl {
  Amounts capacity;
  Amounts threshold;
  Amounts free;
  std::vector<char> saturated;
  Eigen::Index m = 0;

  // Per node. Keys live in a heap-allocated KeyData so the heaps' comparators stay valid when the
  // scheduler moves.
  std::unique_ptr<KeyData> keys = std::make_unique<KeyData>();
  std::vector<NodeId> parent;
  std::vector<double> weight;
  std::vector<std::vector<NodeId>> children;
  std::vector<Amounts> alloc;  // leaves
  std::vector<char> leaf_blocked;
  std::vector<char> blocked;  // effective (leaf: its flag; internal: every child blocked)
  std::vector<Vector> consumption;  // V as seen by the parent
  std::vector<Vector> scaled_sum;   // internal: sum over non-blocked children of V_c / share_c
  std::vector<Vector> blocked_sum;  // internal: sum of the other children's V_c
  std::vector<Vector> contrib;      // what the node added to its parent's sums
  std::vector<Contribution> contrib_kind;
  std::vector<std::uint32_t> updates;
  std::vector<internal::IndexedHeap<PickLess>> pick_heap;
  std::vector<internal::IndexedHeap<ShareLess>> share_heap;

  NodeId add(NodeId p, double w) {
    const auto id = static_cast<NodeId>(parent.size());
    parent.push_back(p);
    weight.push_back(w);
    children.emplace_back();
    alloc.push_back(Amounts::Zero(m));
    leaf_blocked.push_back(0);
    blocked.push_back(0);
    consumption.push_back(Vector::Zero(m));
    scaled_sum.push_back(Vector::Zero(m));
    blocked_sum.push_back(Vector::Zero(m));
    contrib.push_back(Vector::Zero(m));
    contrib_kind.push_back(Contribution::kNone);
    updates.push_back(0);
    keys->share.push_back(0.0);
    keys->tier.push_back(0);
    pick_heap.emplace_back(PickLess{keys.get()});
    share_heap.emplace_back(ShareLess{keys.get()});
    return id;
  }

  bool leaf(NodeId n) const { return children[n].empty(); }

  double share_of(const Vector& v, double w, bool skip_saturated) const {
    double best = 0.0;
    for (Eigen::Index r = 0; r < m; ++r) {
      if (capacity[r] <= 0 || (skip_saturated && saturated[static_cast<std::size_t>(r)])) continue;
      best = std::max(best, v[r] / static_cast<double>(capacity[r]));
    }
    return best / w;
  }

  // Recomputes a node's own values from its state (its children's contributions must be current).
  void recompute_node(NodeId n) {
    if (leaf(n)) {
      consumption[n] = alloc[n].cast<double>();
      keys->share[n] = share_of(consumption[n], weight[n], false);
      blocked[n] = leaf_blocked[n];
      return;
    }
    const auto& heap = share_heap[n];
    if (heap.empty()) {
      blocked[n] = 1;
      consumption[n] = blocked_sum[n];
    } else {
      blocked[n] = 0;
      const double M = keys->share[heap.top()];
      consumption[n] = scaled_sum[n] * M + blocked_sum[n];
      keys->tier[n] = keys->tier[pick_heap[n].top()];
    }
    keys->share[n] = share_of(consumption[n], weight[n], true);
  }

  // Moves child c's contribution in its parent p to its current state.
  void refresh_contribution(NodeId c) {
    const NodeId p = parent[c];
    switch (contrib_kind[c]) {
      case Contribution::kScaled: scaled_sum[p] -= contrib[c]; break;
      case Contribution::kBlocked: blocked_sum[p] -= contrib[c]; break;
      case Contribution::kNone: break;
    }
    const double s = keys->share[c];
    if (!blocked[c] && s > 0) {
      contrib[c] = consumption[c] / s;
      contrib_kind[c] = Contribution::kScaled;
      scaled_sum[p] += contrib[c];
    } else {
      // Blocked, or holding nothing that counts (share 0): added as it is.
      contrib[c] = consumption[c];
      contrib_kind[c] = Contribution::kBlocked;
      blocked_sum[p] += contrib[c];
    }
    if (blocked[c]) {
      pick_heap[p].erase(c);
      share_heap[p].erase(c);
    } else {
      pick_heap[p].push(c);
      share_heap[p].push(c);
    }
  }

  // Exact recomputation of an internal node's sums from its children.
  void rebuild_sums(NodeId p) {
    scaled_sum[p].setZero();
    blocked_sum[p].setZero();
    for (NodeId c : children[p]) {
      contrib_kind[c] = Contribution::kNone;
      refresh_contribution(c);
    }
    updates[p] = 0;
  }

  void propagate(NodeId n) {
    recompute_node(n);
    while (n != kRoot) {
      const NodeId p = parent[n];
      if (++updates[p] >= 1024) rebuild_sums(p);
      else refresh_contribution(n);
      recompute_node(p);
      n = p;
    }
  }

  void recompute_all() {
    // Children have larger ids than their parents: a reverse sweep is bottom-up.
    for (NodeId n = static_cast<NodeId>(parent.size()); n-- > 0;) {
      if (!leaf(n)) rebuild_sums(n);
      recompute_node(n);
    }
  }

  bool update_saturation() {
    bool changed = false;
    for (Eigen::Index r = 0; r < m; ++r) {
      const bool now = capacity[r] > 0 && free[r] < threshold[r];
      if (now != static_cast<bool>(saturated[static_cast<std::size_t>(r)])) {
        saturated[static_cast<std::size_t>(r)] = now;
        changed = true;
      }
    }
    return changed;
  }

  void change(NodeId leaf_id, const Amounts& delta, int sign) {
    if (sign > 0) {
      free -= delta;
      alloc[leaf_id] += delta;
    } else {
      free += delta;
      alloc[leaf_id] -= delta;
    }
    if (update_saturation()) recompute_all();
    else propagate(leaf_id);
  }
};

HdrfScheduler::HdrfScheduler(Amounts capacity, Amounts saturation_threshold) : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.m = capacity.size();
  s.capacity = std::move(capacity);
  s.free = s.capacity;
  s.threshold = saturation_threshold.size() == s.m ? std::move(saturation_threshold) : Amounts::Ones(s.m);
  s.saturated.assign(static_cast<std::size_t>(s.m), 0);
  s.update_saturation();
  s.add(kRoot, 1.0);
}
HdrfScheduler::HdrfScheduler(HdrfScheduler&&) noexcept = default;
HdrfScheduler& HdrfScheduler::operator=(HdrfScheduler&&) noexcept = default;
HdrfScheduler::~HdrfScheduler() = default;

Result<HdrfScheduler::NodeId> HdrfScheduler::add_node(NodeId parent_id, double weight) {
  auto& s = *impl_;
  if (parent_id >= s.parent.size())
    return Error{fmt::format("parent: no node {} (there are {})", parent_id, s.parent.size())};
  if (!std::isfinite(weight) || weight <= 0)
    return Error{fmt::format("weight: expected a positive finite number, got {}", weight)};
  if (!s.alloc[parent_id].isZero())
    return Error{fmt::format("parent: node {} already holds resources as a leaf", parent_id)};
  const NodeId id = s.add(parent_id, weight);
  s.children[parent_id].push_back(id);
  // A parent that was a leaf becomes internal; propagate() moves its contribution accordingly.
  s.propagate(id);
  return id;
}

std::size_t HdrfScheduler::node_count() const { return impl_->parent.size(); }
bool HdrfScheduler::is_leaf(NodeId n) const { return impl_->leaf(n); }
HdrfScheduler::NodeId HdrfScheduler::parent(NodeId n) const { return impl_->parent[n]; }

std::optional<HdrfScheduler::NodeId> HdrfScheduler::pick() const {
  const auto& s = *impl_;
  if (s.leaf(kRoot) || s.blocked[kRoot]) return std::nullopt;
  NodeId n = kRoot;
  while (!s.leaf(n)) n = s.pick_heap[n].top();
  return n;
}

void HdrfScheduler::allocate(NodeId leaf, const Amounts& task) { impl_->change(leaf, task, +1); }
void HdrfScheduler::release(NodeId leaf, const Amounts& task) { impl_->change(leaf, task, -1); }

void HdrfScheduler::block(NodeId leaf) {
  if (impl_->leaf_blocked[leaf]) return;
  impl_->leaf_blocked[leaf] = 1;
  impl_->propagate(leaf);
}
void HdrfScheduler::unblock(NodeId leaf) {
  if (!impl_->leaf_blocked[leaf]) return;
  impl_->leaf_blocked[leaf] = 0;
  impl_->propagate(leaf);
}
bool HdrfScheduler::blocked(NodeId n) const { return impl_->blocked[n] != 0; }
void HdrfScheduler::set_tier(NodeId leaf, std::uint8_t tier) {
  if (impl_->keys->tier[leaf] == tier) return;
  impl_->keys->tier[leaf] = tier;
  impl_->propagate(leaf);
}

double HdrfScheduler::share(NodeId n) const { return impl_->keys->share[n]; }
const Vector& HdrfScheduler::consumption(NodeId n) const { return impl_->consumption[n]; }
const Amounts& HdrfScheduler::allocation(NodeId leaf) const { return impl_->alloc[leaf]; }
const Amounts& HdrfScheduler::free() const { return impl_->free; }
const Amounts& HdrfScheduler::capacity() const { return impl_->capacity; }
bool HdrfScheduler::saturated(Eigen::Index r) const { return impl_->saturated[static_cast<std::size_t>(r)] != 0; }

Result<HdrfAllocation> hdrf_whole_tasks(const Amounts& capacity, std::span<const std::int64_t> parents,
                                        std::span<const double> weights, std::span<const HdrfTask> tasks) {
  const std::size_t n = parents.size();
  if (n == 0 || parents[0] != -1) return Error{"parents[0]: the root must come first with parent -1"};
  if (weights.size() != n) return Error{fmt::format("weights: expected {} entries, got {}", n, weights.size())};
  if (tasks.size() != n) return Error{fmt::format("tasks: expected {} entries, got {}", n, tasks.size())};
  if ((capacity.array() < 0).any()) return Error{"capacity: negative amount"};
  std::vector<char> has_child(n, 0);
  for (std::size_t i = 1; i < n; ++i) {
    if (parents[i] < 0 || static_cast<std::size_t>(parents[i]) >= i)
      return Error{fmt::format("parents[{}]: expected an earlier node, got {}", i, parents[i])};
    has_child[static_cast<std::size_t>(parents[i])] = 1;
  }
  // Saturation threshold: the smallest leaf task needing each resource.
  Amounts threshold = Amounts::Ones(capacity.size());
  std::vector<char> seen(static_cast<std::size_t>(capacity.size()), 0);
  for (std::size_t i = 1; i < n; ++i) {
    if (has_child[i]) continue;
    const auto& t = tasks[i];
    if (t.demand.size() != capacity.size())
      return Error{fmt::format("tasks[{}].demand: expected {} resources, got {}", i, capacity.size(), t.demand.size())};
    if ((t.demand.array() < 0).any()) return Error{fmt::format("tasks[{}].demand: negative amount", i)};
    if (t.max_tasks < -1) return Error{fmt::format("tasks[{}].max_tasks: expected -1 or a count, got {}", i, t.max_tasks)};
    if (t.max_tasks == -1 && t.demand.isZero())
      return Error{fmt::format("tasks[{}].demand: all zero with unbounded max_tasks (it would never stop)", i)};
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
    if (!id) return Error{fmt::format("nodes[{}].{}", i, id.error().message)};
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

}  // namespace gpusched::fairness
