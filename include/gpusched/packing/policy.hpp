// gpusched/packing/policy.hpp — node selection for one task: Filter -> Score -> Select.
//
// A `PlacementPolicy` answers "which node should this task go to?" over a `ClusterState`. The
// common shape, as in the Kubernetes scheduling framework, is
//
//   Filter   nodes that can take the task now (`ClusterState::check_fit`);
//   Score    each remaining node (an integer, higher is better);
//   Select   the highest score; ties go to the lowest node id (the order of the cluster view), or,
//            for policies built with a seed, to the first node of a seeded permutation.
//
// Which GPU indices the task takes on the chosen node is a separate, replaceable step: a
// `GpuPicker` (the default takes the lowest-index idle GPUs, and for a shared task the GPU whose
// free share fits most tightly).
//
// Policies never scan every node when the index can answer: candidates come from the state's
// buckets of nodes with k idle GPUs (see cluster_state.hpp). Best-fit, first-fit and worst-fit walk
// the buckets in their preference order and stop at the first fitting node; scoring policies visit
// only buckets that can fit the task. The built-in policies:
//
//   first-fit         the lowest-id node that fits
//   best-fit          least idle GPUs left on the node after placing; a shared task goes to the GPU
//                     with the least free share that fits; a CPU-only task to the node with the
//                     fewest GPUs, then the least CPU left (GPU nodes stay free for GPU work)
//   worst-fit/spread  most idle GPUs left (a shared task: then the most free share on one GPU; the
//                     GPU within the node is still the default picker's tightest fit)
//   most-allocated    Kubernetes NodeResourcesFit MostAllocated: mean over CPU, memory and GPU of
//                     (used + request) / capacity, higher preferred (packs)
//   least-allocated   NodeResourcesFit LeastAllocated: mean of (free - request) / capacity (spreads)
//   dot-product       Tetris (Grandl et al., SIGCOMM'14): alignment of the request vector with the
//                     node's free vector, both normalised by the node's capacity
//   random            a uniformly random fitting node, from a seeded generator
//
// Policies are deterministic functions of (state, request) except `random`, whose generator is
// the policy's only state and is seeded.
//
// Composition. Other families place tasks inside a set of nodes they chose (the gang solver inside
// one rack or block, a topology-aware step inside one NVLink island): they ask
// `select_among(state, request, candidates)`, "the node this policy would choose if only these
// nodes existed", and never look at the policy's name. A policy whose choice is "the fitting node of
// the highest rank, ties to the lowest id" says so with `ranks_nodes()` and exposes the key as
// `rank()`; callers that keep candidates sorted (the gang solver's per-domain index) then update
// one node per placement instead of asking again. Every built-in policy except `random` ranks.
// The default `select_among` of a policy that does not rank runs the policy's own `select` on a
// snapshot of just the candidate nodes (cost: O(candidates) per call; override it for speed).
//
// Header-only: everything here is inline; the helpers live in packing/detail/policy_helpers.hpp.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/random.hpp"

namespace gpusched {

// Chooses the GPU indices a task takes on a node that fits it.
class GpuPicker {
 public:
  virtual ~GpuPicker() = default;
  // Fills `out` (node, gpus, amounts) or returns false when the node cannot take the task.
  virtual bool pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                    TaskAssignment& out) const = 0;
};

// Whole GPUs: the lowest-index idle GPUs of an allowed model. Shared: the GPU of an allowed model
// with the least free share that still fits (ties to the lowest index), so that partly used GPUs
// fill before idle ones are broken.
class LowestIndexGpuPicker final : public GpuPicker {
 public:
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request,
            TaskAssignment& out) const override;
};

namespace detail {
// The picker a placement uses: a task with a MIG profile goes to `mig` when the caller gave one
// (the options' mig_picker, e.g. the MIG family's FragAwareMigPicker), every other task to `gpus`.
class MigRoutedPicker final : public GpuPicker {
 public:
  MigRoutedPicker(const GpuPicker& gpus, const GpuPicker* mig) : gpus_(gpus), mig_(mig) {}
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override {
    return mig_ != nullptr && request.mig.any() ? mig_->pick(state, node, request, out) : gpus_.pick(state, node, request, out);
  }

 private:
  const GpuPicker& gpus_;
  const GpuPicker* mig_;
};
}  // namespace detail

// The least free share a shared request would leave on one of the node's GPUs that fit it (its
// tightest GPU), or 1001 when none fits. Best-fit ranks shared tasks by it.
std::int32_t tightest_share_left(const ClusterState& state, NodeId node, const TaskRequest& request);

// Fills the amounts of an assignment from the request (helper for pickers).
TaskAssignment make_assignment(NodeId node, const TaskRequest& request);

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // The chosen node, or kNoNode when no node fits.
  virtual NodeId select(const ClusterState& state, const TaskRequest& request) const = 0;
  // The GPU step; policies may override it (the default is LowestIndexGpuPicker).
  virtual const GpuPicker& gpu_picker() const;

  // --- composition hooks (see the essay at the top) ---
  // The node this policy would choose for `request` if only `candidates` (node ids of `state`, any
  // order, no duplicates) existed; kNoNode when none of them fits. The default: the highest
  // rank() among the fitting candidates (ties to the lowest id) when ranks_nodes(), else the
  // policy's own select() on a snapshot of the candidates alone.
  virtual NodeId select_among(const ClusterState& state, const TaskRequest& request,
                              std::span<const NodeId> candidates) const;
  // True when select() chooses the fitting node of the highest rank(), ties to the lowest id.
  virtual bool ranks_nodes() const { return false; }
  // The policy's preference for a node that fits (higher is better); meaningful when ranks_nodes().
  virtual std::int64_t rank(const ClusterState& /*state*/, NodeId /*node*/, const TaskRequest& /*request*/) const {
    return 0;
  }

  // --- per-run hooks ---
  // A run that places many tasks one after another on one state (bench-packing's replay) calls
  // attach(state) before it and observe(...) after each reservation: a policy may keep per-run
  // state there (a seeded node order, a cache of node classes). Policies stay correct without them.
  virtual void attach(const ClusterState& /*state*/) {}
  virtual void observe(const ClusterState& /*state*/, const TaskRequest& /*request*/,
                       const TaskAssignment& /*assignment*/) {}
  // A policy that runs user code (packing/score_function.hpp: C callbacks, Python) reports the first
  // failure of that code here, and refuses every node from then on; every path checks it after
  // deciding and reports the message naming the policy. "" = no failure; built-in policies never fail.
  virtual std::string_view failure() const { return {}; }
};

// A policy defined by a per-node score (higher is better). `select` filters the candidate nodes
// the index yields, scores them and returns the best, ties to the lowest node id.
class ScoringPolicy : public PlacementPolicy {
 public:
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  virtual std::int64_t score(const ClusterState& state, NodeId node, const TaskRequest& request) const = 0;
  bool ranks_nodes() const override { return true; }
  std::int64_t rank(const ClusterState& state, NodeId node, const TaskRequest& request) const override {
    return score(state, node, request);
  }
};

// Calls f(node) for every eligible node that could fit `request` by its idle GPU count (a
// superset of the fitting nodes, in increasing id order within each index bucket). For CPU-only
// requests that is every eligible node. f returns false to stop early.
template <class F>
void for_each_candidate(const ClusterState& state, const TaskRequest& request, F&& f);

class FirstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "first-fit"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  bool ranks_nodes() const override { return true; }  // every node ranks 0: the lowest id wins
};

// Best-fit and worst-fit rank by the same key: what the task would leave on the node (see
// detail::fit_leftover); best-fit prefers the least, worst-fit the most. select() walks the index
// in that order; rank() gives the key for one node.
class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  bool ranks_nodes() const override { return true; }
  std::int64_t rank(const ClusterState& state, NodeId node, const TaskRequest& request) const override;
};

class WorstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "worst-fit"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  bool ranks_nodes() const override { return true; }
  std::int64_t rank(const ClusterState& state, NodeId node, const TaskRequest& request) const override;
};

class MostAllocatedPolicy final : public ScoringPolicy {
 public:
  std::string_view name() const override { return "most-allocated"; }
  std::int64_t score(const ClusterState& state, NodeId node, const TaskRequest& request) const override;
};

class LeastAllocatedPolicy final : public ScoringPolicy {
 public:
  std::string_view name() const override { return "least-allocated"; }
  std::int64_t score(const ClusterState& state, NodeId node, const TaskRequest& request) const override;
};

class DotProductPolicy final : public ScoringPolicy {
 public:
  std::string_view name() const override { return "dot-product"; }
  std::int64_t score(const ClusterState& state, NodeId node, const TaskRequest& request) const override;
};

class RandomPolicy final : public PlacementPolicy {
 public:
  explicit RandomPolicy(std::uint64_t seed = 42) : rng_(seed) {}
  std::string_view name() const override { return "random"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override;
  // A uniformly drawn fitting candidate (the same draw rule as select, over the candidates).
  NodeId select_among(const ClusterState& state, const TaskRequest& request,
                      std::span<const NodeId> candidates) const override;

 private:
  mutable SplitMix64 rng_;
};

// A uniformly drawn fitting node: the fitting nodes in id order, one chosen by `rng`, so the draw
// depends only on the generator and the fitting set. kNoNode when none fits.
NodeId pick_random_fitting(const ClusterState& state, const TaskRequest& request, SplitMix64& rng);

// The policy names `make_policy` accepts, in a stable order.
std::vector<std::string_view> policy_names();
// Creates a policy by name ("best-fit", "spread" = "worst-fit", ...); nullptr for an unknown name.
std::unique_ptr<PlacementPolicy> make_policy(std::string_view name, std::uint64_t seed = 42);

// --- implementation ------------------------------------------------------------------------------

template <class F>
void for_each_candidate(const ClusterState& state, const TaskRequest& request, F&& f) {
  const TaskShape& shape = request.shape;
  const std::size_t n = state.node_count();
  if (!shape.needs_gpu()) {
    for (NodeId node = 0; node < n; ++node)
      if (state.eligible(node) && !f(node)) return;
    return;
  }
  const std::int32_t min_idle = shape.shares_gpu() ? 0 : shape.gpus;
  for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
    // Non-empty buckets only (detail::ClusterIndex::next_idle_level).
    for (std::int32_t idle = gpusched::detail::cluster_index(state).next_idle_level(key, std::max(min_idle, shape.shares_gpu() ? 1 : 0)); idle >= 0;
         idle = gpusched::detail::cluster_index(state).next_idle_level(key, idle + 1)) {
      const NodeBitset* bucket = gpusched::detail::cluster_index(state).idle_bucket(key, idle);
      if (!bucket) continue;
      for (std::uint32_t node = bucket->first(); node != NodeBitset::kEnd; node = bucket->next(node + 1))
        if (!f(static_cast<NodeId>(node))) return;
    }
  }
  if (shape.shares_gpu()) {
    // Nodes with no idle GPU can still take a share on a partly used GPU.
    const NodeBitset& partial = gpusched::detail::cluster_index(state).partial_nodes();
    for (std::uint32_t node = partial.first(); node != NodeBitset::kEnd; node = partial.next(node + 1))
      if (state.shares().idle_gpus(node) == 0 && !f(static_cast<NodeId>(node))) return;
  }
}

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/policy_impl.hpp"
#endif
