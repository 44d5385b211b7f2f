#include "gpusched/gang/internal/capacity.hpp"

#include <algorithm>

namespace gpusched::gang_internal {

std::int64_t node_task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (state.check_fit(n, request) != FitReason::kFits) return 0;
  const TaskShape& shape = request.shape;
  std::int64_t cap = kUnbounded;
  if (shape.cpu > 0) cap = std::min(cap, state.cpu_free(n) / shape.cpu);
  if (shape.memory > 0) cap = std::min(cap, state.memory_free(n) / shape.memory);
  if (!shape.needs_gpu()) return cap;
  const auto free = state.gpu_free_milli(n);
  if (!shape.shares_gpu()) {
    std::int64_t usable = 0;
    if (state.node_index_model(n) != ClusterState::kMixedModels && shape.gpu_memory == 0) {
      usable = state.idle_gpus(n);  // check_fit passed, so the node's one model is allowed
    } else {
      for (std::size_t g = 0; g < free.size(); ++g) {
        const auto gi = static_cast<GpuIndex>(g);
        if (free[g] == kMilliPerGpu && (request.models & model_bit(state.gpu_model(n, gi))) &&
            state.gpu_free_memory(n, gi) >= shape.gpu_memory)
          ++usable;
      }
    }
    return std::min(cap, usable / shape.gpus);
  }
  std::int64_t shares = 0;
  for (std::size_t g = 0; g < free.size(); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (!(request.models & model_bit(state.gpu_model(n, gi)))) continue;
    std::int64_t k = free[g] / shape.gpu_milli;
    if (shape.gpu_memory > 0) k = std::min(k, state.gpu_free_memory(n, gi) / shape.gpu_memory);
    shares += k;
  }
  return std::min(cap, shares);
}

IndexBound index_bound(const ClusterState& state, const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  IndexBound b;
  if (!shape.needs_gpu()) return {kUnbounded, -1};
  if (shape.shares_gpu()) {
    b.tasks = state.total_gpu_milli_free() / shape.gpu_milli;
    b.nodes = -1;
    return b;
  }
  for (std::uint8_t key : state.model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
    for (std::int32_t idle = shape.gpus; idle <= state.max_gpus_per_node(); ++idle) {
      const NodeBitset* bucket = state.idle_bucket(key, idle);
      if (!bucket || bucket->empty()) continue;
      b.nodes += bucket->count();
      b.tasks += static_cast<std::int64_t>(bucket->count()) * (idle / shape.gpus);
    }
  }
  return b;
}

std::int64_t indexed_idle_gpus(const ClusterState& state) {
  std::int64_t total = 0;
  for (std::uint8_t key : state.model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    for (std::int32_t idle = 1; idle <= state.max_gpus_per_node(); ++idle) {
      const NodeBitset* bucket = state.idle_bucket(key, idle);
      if (bucket) total += static_cast<std::int64_t>(bucket->count()) * idle;
    }
  }
  return total;
}

}  // namespace gpusched::gang_internal
