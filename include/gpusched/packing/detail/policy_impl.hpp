// gpusched/packing/detail/policy_impl.hpp — the inline definitions of packing/policy.hpp.
//
// Included at the end of policy.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header. Helper names carry their family's words
// (policy_..., fit_...) because a consumer may include every family's headers in one translation
// unit and all `detail` helpers share the namespace gpusched::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/cluster/state_view.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/packing/policy.hpp"

namespace gpusched {
namespace detail {

// Fixed-point scale for scores computed from ratios: scores are integers so that ties are exact
// and decisions identical on every platform.
inline constexpr double kPolicyScoreScale = 1e9;

GPUSCHED_DECL std::int64_t policy_score_from_ratio(double x) { return std::llround(x * kPolicyScoreScale); }

GPUSCHED_DECL double policy_safe_ratio(std::int64_t a, std::int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

GPUSCHED_DECL bool policy_whole_gpu_request(const TaskRequest& r) { return r.shape.needs_gpu() && !r.shape.shares_gpu(); }

// Picks the best-scoring fitting candidate of the index, ties to the lowest node id.
template <class Score>
NodeId policy_select_by_score(const ClusterState& state, const TaskRequest& request, Score&& score) {
  NodeId best = kNoNode;
  std::int64_t best_score = 0;
  for_each_candidate(state, request, [&](NodeId node) {
    if (state.check_fit(node, request) != FitReason::kFits) return true;
    const std::int64_t s = score(node);
    if (best == kNoNode || s > best_score || (s == best_score && node < best)) {
      best = node;
      best_score = s;
    }
    return true;
  });
  return best;
}

// Walks the idle-GPU buckets from `fewest` to `most` idle GPUs (inclusive; ascending for best-fit,
// descending for worst-fit); in the first level holding a fitting node, returns the lowest-id fitting
// node over the allowed model keys. A request for more GPUs than any node has walks nothing (it once
// walked from 2^31 - 1 GPUs down to the largest node, one level at a time).
GPUSCHED_DECL NodeId policy_walk_idle_buckets(const ClusterState& state, const TaskRequest& request, std::int32_t fewest,
                                       std::int32_t most, bool ascending) {
  if (fewest > most) return kNoNode;
  // Only the levels some allowed model's bucket holds nodes at are visited: the next one (in walk
  // order) over the allowed keys, from the state's per-row set of non-empty levels.
  auto allowed_key = [&](std::uint8_t key) {
    return key != ClusterState::kNoGpuKey && (key == ClusterState::kMixedModels || (request.models & model_bit(key)));
  };
  auto next_level = [&](std::int32_t from) {
    std::int32_t level = -1;
    for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
      if (!allowed_key(key)) continue;
      const std::int32_t l = ascending ? gpusched::detail::cluster_index(state).next_idle_level(key, from) : gpusched::detail::cluster_index(state).prev_idle_level(key, from);
      if (l >= 0 && (level < 0 || (ascending ? l < level : l > level))) level = l;
    }
    return level;
  };
  for (std::int32_t idle = next_level(ascending ? fewest : most); idle >= fewest && idle <= most;
       idle = ascending ? next_level(idle + 1) : (idle == 0 ? -1 : next_level(idle - 1))) {
    NodeId best = kNoNode;
    for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
      if (key == ClusterState::kNoGpuKey) continue;
      if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
      const NodeBitset* bucket = gpusched::detail::cluster_index(state).idle_bucket(key, idle);
      if (!bucket) continue;
      for (std::uint32_t n = bucket->first(); n != NodeBitset::kEnd && n < best; n = bucket->next(n + 1)) {
        if (state.check_fit(static_cast<NodeId>(n), request) == FitReason::kFits) {
          best = static_cast<NodeId>(n);
          break;
        }
      }
    }
    if (best != kNoNode) return best;
  }
  return kNoNode;
}

// Best-fit's key: what the task leaves on the node, lower is tighter. Whole GPUs: idle GPUs left.
// Shared: the tightest GPU's share left, then idle GPUs. CPU-only: GPU nodes last (GPU nodes stay
// free for GPU work), then the CPU left. BestFitPolicy::select walks the index in this order.
// (One function per kind of request, so that select() chooses the formula once, not per node.)
GPUSCHED_DECL std::int64_t fit_leftover_shared(const ClusterState& state, NodeId n, const TaskRequest& r) {
  return std::int64_t{tightest_share_left(state, n, r)} * 100000 + state.shares().idle_gpus(n);
}
GPUSCHED_DECL std::int64_t fit_leftover_cpu_only(const ClusterState& state, NodeId n, const TaskRequest& r) {
  return static_cast<std::int64_t>(state.gpu_count(n)) * (std::int64_t{1} << 40) + state.cpu_free(n) - r.shape.cpu;
}
GPUSCHED_DECL std::int64_t fit_leftover_best(const ClusterState& state, NodeId n, const TaskRequest& r) {
  if (r.shape.shares_gpu()) return fit_leftover_shared(state, n, r);
  if (r.shape.needs_gpu()) return state.shares().idle_gpus(n) - r.shape.gpus;
  return fit_leftover_cpu_only(state, n, r);
}

// Worst-fit's key, higher is roomier. Whole GPUs: idle GPUs left. Shared: idle GPUs, then the most
// free share on one GPU. CPU-only: the CPU left.
GPUSCHED_DECL std::int64_t fit_room_shared(const ClusterState& state, NodeId n, const TaskRequest& /*r*/) {
  return std::int64_t{state.shares().idle_gpus(n)} * 100000 + gpusched::detail::cluster_index(state).most_free_share(n);
}
GPUSCHED_DECL std::int64_t fit_room_cpu_only(const ClusterState& state, NodeId n, const TaskRequest& r) {
  return state.cpu_free(n) - r.shape.cpu;
}
GPUSCHED_DECL std::int64_t fit_room_worst(const ClusterState& state, NodeId n, const TaskRequest& r) {
  if (r.shape.shares_gpu()) return fit_room_shared(state, n, r);
  if (r.shape.needs_gpu()) return state.shares().idle_gpus(n) - r.shape.gpus;
  return fit_room_cpu_only(state, n, r);
}

// Used and capacity of (CPU, memory, GPU) on a node, after placing `request`.
struct PolicyNodeDimensions {
  double used_after[3];
  double capacity[3];
};

GPUSCHED_DECL PolicyNodeDimensions policy_node_dimensions(const ClusterState& s, NodeId n, const TaskRequest& r) {
  const double gpu_cap = static_cast<double>(s.gpu_count(n)) * kMilliPerGpu;
  const double gpu_used = gpu_cap - static_cast<double>(s.shares().node_free_milli(n));
  return {{static_cast<double>(s.cpu_capacity(n) - s.cpu_free(n) + r.shape.cpu),
           static_cast<double>(s.memory_capacity(n) - s.memory_free(n) + r.shape.memory),
           gpu_used + static_cast<double>(r.shape.total_gpu_milli())},
          {static_cast<double>(s.cpu_capacity(n)), static_cast<double>(s.memory_capacity(n)), gpu_cap}};
}

// The candidates that fit the request, in ascending id order.
GPUSCHED_DECL std::vector<NodeId> policy_fitting_among(const ClusterState& state, const TaskRequest& request,
                                                std::span<const NodeId> candidates) {
  std::vector<NodeId> fitting;
  for (NodeId n : candidates)
    if (state.check_fit(n, request) == FitReason::kFits) fitting.push_back(n);
  std::sort(fitting.begin(), fitting.end());
  return fitting;
}

// One of `fitting` (ascending ids) drawn uniformly by `rng`; kNoNode when empty.
GPUSCHED_DECL NodeId policy_draw_uniform(const std::vector<NodeId>& fitting, SplitMix64& rng) {
  return fitting.empty() ? kNoNode : fitting[rng.below(fitting.size())];
}

// The request's selector re-resolved against another state's label dictionaries (ids differ).
GPUSCHED_DECL TaskRequest policy_request_for(const ClusterState& from, const ClusterState& to, const TaskRequest& request) {
  TaskRequest out = request;
  // A key or value the source state never saw (kUnknownLabel) stays unknown: no node matches it.
  for (LabelRequirement& l : out.selector)
    l = {l.key == ClusterState::kUnknownLabel ? l.key : to.labels().key_id(from.labels().key(l.key)),
         l.value == ClusterState::kUnknownLabel ? l.value : to.labels().value_id(from.labels().value(l.value))};
  return out;
}

}  // namespace detail

// --- GPU pickers ---------------------------------------------------------------------------------

namespace detail {
// A node whose GPUs by free share the state keeps (detail::ClusterIndex::least_share_gpu, which also
// answers for the allowed models and the GPU memory asked).
GPUSCHED_DECL bool policy_share_index_answers(const ClusterState& state, NodeId node, const TaskRequest& /*request*/) {
  return gpusched::detail::cluster_index(state).share_indexed(node);
}
}  // namespace detail

GPUSCHED_DECL std::int32_t tightest_share_left(const ClusterState& state, NodeId node, const TaskRequest& request) {
  if (detail::policy_share_index_answers(state, node, request)) {
    const std::int32_t g = gpusched::detail::cluster_index(state).least_share_gpu(node, request.shape.gpu_milli, request.models, request.shape.gpu_memory);
    return g < 0 ? kMilliPerGpu + 1
                 : static_cast<std::int32_t>(state.shares().free_milli(node, static_cast<GpuIndex>(g)) - request.shape.gpu_milli);
  }
  std::int32_t best = kMilliPerGpu + 1;
  const auto free = state.shares().free_milli(node);
  for (std::size_t g = 0; g < free.size(); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (free[g] < request.shape.gpu_milli || !(request.models & model_bit(state.gpu_model(node, gi))) ||
        state.shares().free_memory(node, gi) < request.shape.gpu_memory)
      continue;
    best = std::min<std::int32_t>(best, free[g] - static_cast<std::int32_t>(request.shape.gpu_milli));
  }
  return best;
}

GPUSCHED_DECL TaskAssignment make_assignment(NodeId node, const TaskRequest& request) {
  TaskAssignment a;
  a.node = node;
  a.cpu = request.shape.cpu;
  a.memory = request.shape.memory;
  a.gpu_milli = request.shape.needs_gpu() ? request.shape.gpu_milli : 0;
  a.gpu_memory = request.shape.needs_gpu() ? request.shape.gpu_memory : 0;
  return a;
}

GPUSCHED_DECL bool LowestIndexGpuPicker::pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                                       TaskAssignment& out) const {
  out = make_assignment(node, request);
  if (request.mig.any()) return state.mig().pick_instance(node, request, out);  // a MIG instance, not GPUs
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return true;
  const auto free = state.shares().free_milli(node);
  auto allowed = [&](std::size_t g) {
    const auto gi = static_cast<GpuIndex>(g);
    return (request.models & model_bit(state.gpu_model(node, gi))) &&
           state.shares().free_memory(node, gi) >= shape.gpu_memory;
  };
  if (shape.shares_gpu()) {
    if (detail::policy_share_index_answers(state, node, request)) {
      const std::int32_t g = gpusched::detail::cluster_index(state).least_share_gpu(node, shape.gpu_milli, request.models, shape.gpu_memory);
      if (g < 0) return false;
      out.gpus.push_back(static_cast<GpuIndex>(g));
      return true;
    }
    std::size_t best = free.size();
    for (std::size_t g = 0; g < free.size(); ++g) {
      if (free[g] < shape.gpu_milli || !allowed(g)) continue;
      if (best == free.size() || free[g] < free[best]) best = g;
    }
    if (best == free.size()) return false;
    out.gpus.push_back(static_cast<GpuIndex>(best));
    return true;
  }
  // The idle GPUs in index order through the state's idle-GPU set: busy GPUs are skipped without
  // being visited (filling one node of 65,535 GPUs GPU by GPU was quadratic; issue 15).
  for (std::int32_t g = gpusched::detail::cluster_index(state).next_idle_gpu(node, 0); g >= 0 && out.gpus.size() < static_cast<std::size_t>(shape.gpus);
       g = gpusched::detail::cluster_index(state).next_idle_gpu(node, static_cast<std::size_t>(g) + 1))
    if (allowed(static_cast<std::size_t>(g))) out.gpus.push_back(static_cast<GpuIndex>(g));
  return out.gpus.size() == static_cast<std::size_t>(shape.gpus);
}

// --- the base class ------------------------------------------------------------------------------

GPUSCHED_DECL const GpuPicker& PlacementPolicy::gpu_picker() const {
  static const LowestIndexGpuPicker kDefault;
  return kDefault;
}

GPUSCHED_DECL NodeId PlacementPolicy::select_among(const ClusterState& state, const TaskRequest& request,
                                            std::span<const NodeId> candidates) const {
  if (ranks_nodes()) {
    NodeId best = kNoNode;
    std::int64_t best_rank = 0;
    for (NodeId n : candidates) {
      if (state.check_fit(n, request) != FitReason::kFits) continue;
      const std::int64_t r = rank(state, n, request);
      if (best == kNoNode || r > best_rank || (r == best_rank && n < best)) {
        best = n;
        best_rank = r;
      }
    }
    return best;
  }
  // The policy's own rule on the candidates alone: a snapshot of them, in ascending id order (so a
  // rule that breaks ties by id breaks them the same way), and the answer mapped back.
  const std::vector<NodeId> fitting = detail::policy_fitting_among(state, request, candidates);
  if (fitting.empty()) return kNoNode;
  auto snapshot = ClusterState::build(ClusterStateView(state, fitting), state.registry(), state.mig().table().catalog(),
                                      state.mig().table().rules());
  if (!snapshot) return kNoNode;  // cannot happen for nodes of a valid state; never guess
  const NodeId chosen = select(*snapshot, detail::policy_request_for(state, *snapshot, request));
  return chosen < fitting.size() ? fitting[chosen] : kNoNode;
}

GPUSCHED_DECL NodeId ScoringPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return detail::policy_select_by_score(state, request, [&](NodeId n) { return score(state, n, request); });
}

// --- the built-in policies -----------------------------------------------------------------------

GPUSCHED_DECL NodeId FirstFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (!request.shape.needs_gpu()) {
    for (NodeId n = 0; n < state.node_count(); ++n)
      if (state.check_fit(n, request) == FitReason::kFits) return n;
    return kNoNode;
  }
  // The lowest id over every bucket that can hold the task: each bucket is walked only up to its
  // first fitting node, or the best found so far.
  const std::int32_t min_idle = request.shape.shares_gpu() ? 1 : request.shape.gpus;
  NodeId best = kNoNode;
  auto walk = [&](const NodeBitset& bucket, bool only_without_idle) {
    for (std::uint32_t n = bucket.first(); n != NodeBitset::kEnd && n < best; n = bucket.next(n + 1)) {
      if (only_without_idle && state.shares().idle_gpus(n) != 0) continue;
      if (state.check_fit(static_cast<NodeId>(n), request) == FitReason::kFits) {
        best = static_cast<NodeId>(n);
        return;
      }
    }
  };
  for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
    for (std::int32_t idle = gpusched::detail::cluster_index(state).next_idle_level(key, min_idle); idle >= 0; idle = gpusched::detail::cluster_index(state).next_idle_level(key, idle + 1))
      if (const NodeBitset* bucket = gpusched::detail::cluster_index(state).idle_bucket(key, idle)) walk(*bucket, false);
  }
  if (request.shape.shares_gpu()) walk(gpusched::detail::cluster_index(state).partial_nodes(), true);
  return best;
}

GPUSCHED_DECL std::int64_t BestFitPolicy::rank(const ClusterState& state, NodeId node, const TaskRequest& request) const {
  return -detail::fit_leftover_best(state, node, request);
}

GPUSCHED_DECL NodeId BestFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (detail::policy_whole_gpu_request(request))
    return detail::policy_walk_idle_buckets(state, request, request.shape.gpus, state.max_gpus_per_node(), true);
  if (request.shape.shares_gpu())
    return detail::policy_select_by_score(
        state, request, [&](NodeId n) { return -detail::fit_leftover_shared(state, n, request); });
  if (!request.mig.any() && request.selector.empty()) {
    // CPU-only, the common case (launchers, parameter servers): check_fit reduces to "eligible, CPU
    // and memory fit", so the scan over every node inlines it instead of calling check_fit per node
    // (BM_GangHeterogeneous makes 65 such scans of 10,000 nodes; see benchmarks/README.md). Same
    // key and tie rule as the general path: least (GPUs << 40 + CPU left), then the lowest id.
    const MilliCpu cpu = request.shape.cpu;
    const Bytes memory = request.shape.memory;
    NodeId best = kNoNode;
    std::int64_t best_key = 0;
    for (NodeId n = 0; n < state.node_count(); ++n) {
      if (!state.eligible(n) || state.cpu_free(n) < cpu || state.memory_free(n) < memory) continue;
      const std::int64_t key = detail::fit_leftover_cpu_only(state, n, request);
      if (best == kNoNode || key < best_key) {
        best = n;
        best_key = key;
      }
    }
    return best;
  }
  return detail::policy_select_by_score(
      state, request, [&](NodeId n) { return -detail::fit_leftover_cpu_only(state, n, request); });
}

GPUSCHED_DECL std::int64_t WorstFitPolicy::rank(const ClusterState& state, NodeId node, const TaskRequest& request) const {
  return detail::fit_room_worst(state, node, request);
}

GPUSCHED_DECL NodeId WorstFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (detail::policy_whole_gpu_request(request))
    return detail::policy_walk_idle_buckets(state, request, request.shape.gpus, state.max_gpus_per_node(), false);
  if (request.shape.shares_gpu())
    return detail::policy_select_by_score(state, request,
                                          [&](NodeId n) { return detail::fit_room_shared(state, n, request); });
  return detail::policy_select_by_score(state, request,
                                        [&](NodeId n) { return detail::fit_room_cpu_only(state, n, request); });
}

GPUSCHED_DECL std::int64_t MostAllocatedPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  const detail::PolicyNodeDimensions d = detail::policy_node_dimensions(s, n, r);
  double sum = 0;
  int dims = 0;
  for (int i = 0; i < 3; ++i) {
    if (d.capacity[i] <= 0) continue;
    sum += d.used_after[i] / d.capacity[i];
    ++dims;
  }
  return dims ? detail::policy_score_from_ratio(sum / dims) : 0;
}

GPUSCHED_DECL std::int64_t LeastAllocatedPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  const detail::PolicyNodeDimensions d = detail::policy_node_dimensions(s, n, r);
  double sum = 0;
  int dims = 0;
  for (int i = 0; i < 3; ++i) {
    if (d.capacity[i] <= 0) continue;
    sum += (d.capacity[i] - d.used_after[i]) / d.capacity[i];
    ++dims;
  }
  return dims ? detail::policy_score_from_ratio(sum / dims) : 0;
}

GPUSCHED_DECL std::int64_t DotProductPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  // Tetris: sum over resources of (request / capacity) * (free / capacity).
  const double gpu_cap = static_cast<double>(s.gpu_count(n)) * kMilliPerGpu;
  const double dot =
      detail::policy_safe_ratio(r.shape.cpu, s.cpu_capacity(n)) *
          detail::policy_safe_ratio(s.cpu_free(n), s.cpu_capacity(n)) +
      detail::policy_safe_ratio(r.shape.memory, s.memory_capacity(n)) *
          detail::policy_safe_ratio(s.memory_free(n), s.memory_capacity(n)) +
      (gpu_cap > 0 ? static_cast<double>(r.shape.total_gpu_milli()) / gpu_cap *
                         static_cast<double>(s.shares().node_free_milli(n)) / gpu_cap
                   : 0.0);
  return detail::policy_score_from_ratio(dot);
}

GPUSCHED_DECL NodeId RandomPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return pick_random_fitting(state, request, rng_);
}

GPUSCHED_DECL NodeId RandomPolicy::select_among(const ClusterState& state, const TaskRequest& request,
                                         std::span<const NodeId> candidates) const {
  return detail::policy_draw_uniform(detail::policy_fitting_among(state, request, candidates), rng_);
}

GPUSCHED_DECL NodeId pick_random_fitting(const ClusterState& state, const TaskRequest& request, SplitMix64& rng) {
  std::vector<NodeId> fitting;
  for_each_candidate(state, request, [&](NodeId n) {
    if (state.check_fit(n, request) == FitReason::kFits) fitting.push_back(n);
    return true;
  });
  std::sort(fitting.begin(), fitting.end());
  return detail::policy_draw_uniform(fitting, rng);
}

GPUSCHED_DECL std::vector<std::string_view> policy_names() {
  return {"first-fit", "best-fit", "worst-fit", "most-allocated", "least-allocated", "dot-product", "random"};
}

GPUSCHED_DECL std::unique_ptr<PlacementPolicy> make_policy(std::string_view name, std::uint64_t seed) {
  if (name == "first-fit") return std::make_unique<FirstFitPolicy>();
  if (name == "best-fit") return std::make_unique<BestFitPolicy>();
  if (name == "worst-fit" || name == "spread") return std::make_unique<WorstFitPolicy>();
  if (name == "most-allocated") return std::make_unique<MostAllocatedPolicy>();
  if (name == "least-allocated") return std::make_unique<LeastAllocatedPolicy>();
  if (name == "dot-product" || name == "tetris") return std::make_unique<DotProductPolicy>();
  if (name == "random") return std::make_unique<RandomPolicy>(seed);
  return nullptr;
}

}  // namespace gpusched
