#include "gpusched/packing/policy.hpp"

#include <cmath>

namespace gpusched {
namespace {

// Fixed-point scale for scores computed from ratios: scores are integers so that ties are exact
// and decisions identical on every platform.
constexpr double kScoreScale = 1e9;

std::int64_t to_score(double x) { return std::llround(x * kScoreScale); }

// Picks the best-scoring fitting candidate, ties to the lowest node id.
template <class Score>
NodeId select_by_score(const ClusterState& state, const TaskRequest& request, Score&& score) {
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

// Walks the idle-GPU buckets from `from` to `to` (inclusive, either direction); in the first level
// holding a fitting node, returns the lowest-id fitting node over the allowed model keys.
NodeId walk_buckets(const ClusterState& state, const TaskRequest& request, std::int32_t from, std::int32_t to) {
  const std::int32_t step = from <= to ? 1 : -1;
  for (std::int32_t idle = from; step > 0 ? idle <= to : idle >= to; idle += step) {
    NodeId best = kNoNode;
    for (std::uint8_t key : state.model_keys()) {
      if (key == ClusterState::kNoGpuKey) continue;
      if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
      const NodeBitset* bucket = state.idle_bucket(key, idle);
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

bool whole_gpu_request(const TaskRequest& r) { return r.shape.needs_gpu() && !r.shape.shares_gpu(); }

double ratio(std::int64_t a, std::int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

}  // namespace

std::int32_t tightest_share_left(const ClusterState& state, NodeId node, const TaskRequest& request) {
  std::int32_t best = kMilliPerGpu + 1;
  const auto free = state.gpu_free_milli(node);
  for (std::size_t g = 0; g < free.size(); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (free[g] < request.shape.gpu_milli || !(request.models & model_bit(state.gpu_model(node, gi))) ||
        state.gpu_free_memory(node, gi) < request.shape.gpu_memory)
      continue;
    best = std::min<std::int32_t>(best, free[g] - static_cast<std::int32_t>(request.shape.gpu_milli));
  }
  return best;
}

TaskAssignment make_assignment(NodeId node, const TaskRequest& request) {
  TaskAssignment a;
  a.node = node;
  a.cpu = request.shape.cpu;
  a.memory = request.shape.memory;
  a.gpu_milli = request.shape.needs_gpu() ? request.shape.gpu_milli : 0;
  a.gpu_memory = request.shape.needs_gpu() ? request.shape.gpu_memory : 0;
  return a;
}

bool LowestIndexGpuPicker::pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                                TaskAssignment& out) const {
  out = make_assignment(node, request);
  if (request.mig.any()) return state.pick_mig_instance(node, request, out);  // a MIG instance, not GPUs
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return true;
  const auto free = state.gpu_free_milli(node);
  auto allowed = [&](std::size_t g) {
    const auto gi = static_cast<GpuIndex>(g);
    return (request.models & model_bit(state.gpu_model(node, gi))) &&
           state.gpu_free_memory(node, gi) >= shape.gpu_memory;
  };
  if (shape.shares_gpu()) {
    std::size_t best = free.size();
    for (std::size_t g = 0; g < free.size(); ++g) {
      if (free[g] < shape.gpu_milli || !allowed(g)) continue;
      if (best == free.size() || free[g] < free[best]) best = g;
    }
    if (best == free.size()) return false;
    out.gpus.push_back(static_cast<GpuIndex>(best));
    return true;
  }
  for (std::size_t g = 0; g < free.size() && out.gpus.size() < static_cast<std::size_t>(shape.gpus); ++g)
    if (free[g] == kMilliPerGpu && allowed(g)) out.gpus.push_back(static_cast<GpuIndex>(g));
  return out.gpus.size() == static_cast<std::size_t>(shape.gpus);
}

const GpuPicker& PlacementPolicy::gpu_picker() const {
  static const LowestIndexGpuPicker kDefault;
  return kDefault;
}

NodeId ScoringPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return select_by_score(state, request, [&](NodeId n) { return score(state, n, request); });
}

NodeId FirstFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
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
      if (only_without_idle && state.idle_gpus(n) != 0) continue;
      if (state.check_fit(static_cast<NodeId>(n), request) == FitReason::kFits) {
        best = static_cast<NodeId>(n);
        return;
      }
    }
  };
  for (std::uint8_t key : state.model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
    for (std::int32_t idle = min_idle; idle <= state.max_gpus_per_node(); ++idle)
      if (const NodeBitset* bucket = state.idle_bucket(key, idle)) walk(*bucket, false);
  }
  if (request.shape.shares_gpu()) walk(state.partial_nodes(), true);
  return best;
}

NodeId BestFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (whole_gpu_request(request))
    return walk_buckets(state, request, request.shape.gpus, state.max_gpus_per_node());
  if (request.shape.shares_gpu()) {
    // Tightest GPU first, then the node with the fewest idle GPUs.
    return select_by_score(state, request, [&](NodeId n) {
      return -(std::int64_t{tightest_share_left(state, n, request)} * 100000 + state.idle_gpus(n));
    });
  }
  // CPU-only: keep GPU nodes for GPU work (fewest GPUs first), then the least CPU left.
  return select_by_score(state, request, [&](NodeId n) {
    return -(static_cast<std::int64_t>(state.gpu_count(n)) * (std::int64_t{1} << 40) + state.cpu_free(n) -
             request.shape.cpu);
  });
}

NodeId WorstFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (whole_gpu_request(request))
    return walk_buckets(state, request, state.max_gpus_per_node(), request.shape.gpus);
  if (request.shape.shares_gpu()) {
    // Most idle GPUs, then the most free share on one GPU.
    return select_by_score(state, request, [&](NodeId n) {
      std::int32_t most = 0;
      for (auto f : state.gpu_free_milli(n)) most = std::max(most, f);
      return std::int64_t{state.idle_gpus(n)} * 100000 + most;
    });
  }
  return select_by_score(state, request, [&](NodeId n) { return state.cpu_free(n) - request.shape.cpu; });
}

namespace {

// Used and capacity of (CPU, memory, GPU) on a node, after placing `request`.
struct Dimensions {
  double used_after[3];
  double capacity[3];
};

Dimensions dimensions(const ClusterState& s, NodeId n, const TaskRequest& r) {
  const double gpu_cap = static_cast<double>(s.gpu_count(n)) * kMilliPerGpu;
  const double gpu_used = gpu_cap - static_cast<double>(s.free_gpu_milli(n));
  return {{static_cast<double>(s.cpu_capacity(n) - s.cpu_free(n) + r.shape.cpu),
           static_cast<double>(s.memory_capacity(n) - s.memory_free(n) + r.shape.memory),
           gpu_used + static_cast<double>(r.shape.total_gpu_milli())},
          {static_cast<double>(s.cpu_capacity(n)), static_cast<double>(s.memory_capacity(n)), gpu_cap}};
}

}  // namespace

std::int64_t MostAllocatedPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  const Dimensions d = dimensions(s, n, r);
  double sum = 0;
  int dims = 0;
  for (int i = 0; i < 3; ++i) {
    if (d.capacity[i] <= 0) continue;
    sum += d.used_after[i] / d.capacity[i];
    ++dims;
  }
  return dims ? to_score(sum / dims) : 0;
}

std::int64_t LeastAllocatedPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  const Dimensions d = dimensions(s, n, r);
  double sum = 0;
  int dims = 0;
  for (int i = 0; i < 3; ++i) {
    if (d.capacity[i] <= 0) continue;
    sum += (d.capacity[i] - d.used_after[i]) / d.capacity[i];
    ++dims;
  }
  return dims ? to_score(sum / dims) : 0;
}

std::int64_t DotProductPolicy::score(const ClusterState& s, NodeId n, const TaskRequest& r) const {
  // Tetris: sum over resources of (request / capacity) * (free / capacity).
  const double gpu_cap = static_cast<double>(s.gpu_count(n)) * kMilliPerGpu;
  const double dot =
      ratio(r.shape.cpu, s.cpu_capacity(n)) * ratio(s.cpu_free(n), s.cpu_capacity(n)) +
      ratio(r.shape.memory, s.memory_capacity(n)) * ratio(s.memory_free(n), s.memory_capacity(n)) +
      (gpu_cap > 0 ? static_cast<double>(r.shape.total_gpu_milli()) / gpu_cap *
                         static_cast<double>(s.free_gpu_milli(n)) / gpu_cap
                   : 0.0);
  return to_score(dot);
}

NodeId RandomPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return pick_random_fitting(state, request, rng_);
}

NodeId pick_random_fitting(const ClusterState& state, const TaskRequest& request, SplitMix64& rng) {
  std::vector<NodeId> fitting;
  for_each_candidate(state, request, [&](NodeId n) {
    if (state.check_fit(n, request) == FitReason::kFits) fitting.push_back(n);
    return true;
  });
  if (fitting.empty()) return kNoNode;
  std::sort(fitting.begin(), fitting.end());
  return fitting[rng.below(fitting.size())];
}

std::vector<std::string_view> policy_names() {
  return {"first-fit", "best-fit", "worst-fit", "most-allocated", "least-allocated", "dot-product", "random"};
}

std::unique_ptr<PlacementPolicy> make_policy(std::string_view name, std::uint64_t seed) {
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
