// gpusched/fairness/hdrf.hpp — hierarchical DRF (H-DRF) over a tree of weighted queues.
//
// Organisations nest: a lab splits its cluster between teams, a team between projects. H-DRF
// (Bhattacharya, Culler, Friedman, Ghodsi, Shenker, Stoica, "Hierarchical Scheduling for Diverse
// Datacenter Workloads", SoCC 2013) applies DRF at every level of the tree, with weights at every
// level, and fixes the two ways the naive recursion goes wrong:
//
//   * A child whose dominant resource differs from its siblings' must not inflate its parent's share
//     (the paper's "starvation" example). An internal node's consumption is therefore the sum of its
//     children's consumption vectors *rescaled* so that every non-blocked child's weighted dominant
//     share equals the smallest one, M, among them; blocked children count as they are.
//   * A child that is blocked (its next task needs a saturated resource, or it has nothing left to
//     run) must not let its sibling take more than its share (the "blocked node" example). Blocked
//     children are not rescaled, and an internal node's dominant share ignores saturated resources.
//
// `HdrfScheduler` is the incremental whole-task version (the paper's "dynamic H-DRF"): `pick()`
// walks from the root to the child with the lowest key at every level, down to a leaf; the caller
// tries that leaf's next task and either `allocate`s it or `block`s the leaf. The key at every level
// is (tier, weighted dominant share, node id): lower is served first. Tiers let a caller put one
// class of work first everywhere (the admission planner puts heads that fit within nominal quota in
// tier 0 and borrowers in tier 1); with every tier 0 it is plain H-DRF. Node ids are given in
// creation order, so the tie-break is "created first". Ties are exact: leaves' shares compare as
// exact fractions, and internal nodes' shares (sums of rescaled doubles) that agree to within
// rounding (relative 1e-12) are a tie, so a rounding error never decides between equal shares.
//
// Each allocation updates only the path from the leaf to the root. An internal node with at most 16
// children re-sums its children on every update (exact: the result does not depend on the order of
// past updates); a wider one keeps running sums of its children's rescaled and blocked vectors and two
// indexed heaps (by key, and by share for M), so an update costs O(depth · (m + log fan-out)), and
// re-sums exactly every 1024 updates so floating-point rounding cannot accumulate. The root keeps only
// the heap pick() walks: nothing compares the root's own share. When a resource becomes saturated (its
// free amount drops below `saturation_threshold`) every node is recomputed once. Resource vectors are
// stored contiguously per node rather than one heap allocation each.
//
//   HdrfScheduler s(capacity);
//   auto lab = s.add_node(HdrfScheduler::kRoot, 3.0).value();
//   auto team = s.add_node(lab, 1.0).value();
//   while (auto leaf = s.pick()) { if (fits(*leaf)) s.allocate(*leaf, task(*leaf)); else s.block(*leaf); }
//
// A flat tree (every queue a child of the root) orders exactly like `DrfSorter`.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <memory>
#include <optional>

#include "gpusched/core/result.hpp"
#include "gpusched/fairness/drf.hpp"

namespace gpusched::fairness {

class HdrfScheduler {
 public:
  using NodeId = std::uint32_t;
  static constexpr NodeId kRoot = 0;

  // `capacity` is the pool shares are fractions of. A resource counts as saturated once its free
  // amount is below `saturation_threshold` (same size as capacity; missing = 1 unit, i.e. empty).
  explicit HdrfScheduler(Amounts capacity, Amounts saturation_threshold = {});
  HdrfScheduler(HdrfScheduler&&) noexcept;
  HdrfScheduler& operator=(HdrfScheduler&&) noexcept;
  ~HdrfScheduler();

  // Adds a node under `parent` (which must not have been allocated to as a leaf). Fails on an unknown
  // parent, a weight that is not positive and finite, or a parent that already holds resources.
  Result<NodeId> add_node(NodeId parent, double weight = 1.0);
  std::size_t node_count() const;
  bool is_leaf(NodeId n) const;
  NodeId parent(NodeId n) const;

  // The leaf to serve next, or nothing when every leaf is blocked.
  std::optional<NodeId> pick() const;

  // Several changes to one leaf applied with a single leaf-to-root update (each field optional).
  // The admission planner admits a job and then sets the tier of the queue's next head job, or
  // blocks the queue when it has none left: one propagation instead of two per admission.
  struct LeafChange {
    const Amounts* allocate = nullptr;  // add to the leaf's allocation (the caller checked it fits)
    const Amounts* release = nullptr;   // take back from it
    std::optional<std::uint8_t> tier;
    std::optional<bool> blocked;
  };
  void apply(NodeId leaf, const LeafChange& change);

  // Gives `task` to a leaf (the caller checked that it fits `free()`), unblocking nothing else.
  void allocate(NodeId leaf, const Amounts& task);
  // Takes resources back from a leaf (a job finished or was preempted).
  void release(NodeId leaf, const Amounts& task);
  // A blocked leaf is skipped by pick() until unblocked.
  void block(NodeId leaf);
  void unblock(NodeId leaf);
  bool blocked(NodeId n) const;
  void set_tier(NodeId leaf, std::uint8_t tier);

  // Weighted dominant share of a node as its parent sees it (for internal nodes, of the rescaled
  // consumption, saturated resources ignored).
  double share(NodeId n) const;
  // The node's consumption vector as its parent sees it (a leaf: its allocation). The root's share
  // and consumption are not maintained (no parent compares them); asking computes them, O(fan-out·m).
  Vector consumption(NodeId n) const;
  Eigen::Map<const Amounts> allocation(NodeId leaf) const;
  const Amounts& free() const;
  const Amounts& capacity() const;
  bool saturated(Eigen::Index r) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct HdrfTask {
  Amounts demand;
  std::int64_t max_tasks = -1;  // -1 = until it no longer fits (demand must then not be all zero)
};

struct HdrfAllocation {
  std::vector<std::int64_t> tasks;      // per node (0 for internal nodes)
  std::vector<HdrfScheduler::NodeId> sequence;  // leaf of each task, in order
};

// Whole-task H-DRF on a tree given as parent indices (parents[0] = -1 is the root; every other
// parent index is smaller than the node's own) with per-node weights and one task shape per node
// (used for leaves, ignored for internal nodes). A resource saturates when its free amount drops below
// the smallest leaf task that needs it.
Result<HdrfAllocation> hdrf_whole_tasks(const Amounts& capacity, std::span<const std::int64_t> parents,
                                        std::span<const double> weights, std::span<const HdrfTask> leaf_tasks);

// Fractional H-DRF (the paper's static H-DRF): progressive filling over the tree. Every non-blocked
// leaf grows along its demand vector; at every internal node the non-blocked children's weighted
// dominant shares rise at one common rate (so siblings that were never blocked hold equal weighted
// shares), and the node's own share rises at the rate its parent gives it. A leaf stops when its
// demand cap is met or a resource it needs saturates; a blocked child stops counting in its parent,
// so its share is not handed to one sibling. Exact, event-driven: at most one event per leaf and per
// resource, each costing O(depth·m + internal nodes), plus O(n·m) per saturation.
//
// The tree is given like hdrf_whole_tasks's (parents[0] = -1, every other parent index smaller than
// the node's own); `nodes[i]` is leaf i's demand per task and cap (`weight` is ignored: weights come
// from `weights`; internal nodes' entries are ignored). A leaf with an all-zero demand or a zero cap
// wants nothing and is reported as demand met with 0 tasks. The result is per node: tasks and stop
// reasons for leaves, dominant shares for every node (internal nodes: of their subtree's total).
// On a one-level tree the result is `progressive_filling`'s. Fails, naming the field, on malformed
// trees, weights or demands.
Result<FractionalAllocation> hdrf_progressive_filling(const Vector& capacity, std::span<const std::int64_t> parents,
                                                      std::span<const double> weights,
                                                      std::span<const FractionalUser> nodes);

}  // namespace gpusched::fairness

#if GPUSCHED_HEADER_ONLY
#include "gpusched/fairness/detail/hdrf_impl.hpp"
#endif
