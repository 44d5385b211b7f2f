// gpusched/gang/detail/gang_capacity.hpp — how many identical tasks fit: per node, and from the index.
//
// `gang_node_task_capacity` is exact for identical tasks: a whole-GPU task of g GPUs takes g idle GPUs
// (of an allowed model with the GPU memory), a shared task takes its share on one GPU, so k tasks fit
// on a node iff each dimension holds k requests: k = min(cpu_free / cpu, memory_free / memory,
// usable idle GPUs / g) for whole GPUs, and for shares the sum over GPUs of how many shares each GPU
// holds. Placing one task lowers k by exactly one, which is why a greedy fill reaches the count.
//
// `gang_index_bound` reads only the idle-GPU buckets (no node scan): an upper bound on the tasks of one
// request the whole cluster could hold, and the number of nodes with room for one, answered in
// microseconds on 10,000 nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::detail {

inline constexpr std::int64_t kGangUnbounded = std::numeric_limits<std::int32_t>::max();

struct GangIndexBound {
  std::int64_t tasks = 0;  // upper bound on the tasks that fit (kGangUnbounded when the index cannot tell)
  std::int64_t nodes = 0;  // nodes with room for one task by idle GPUs (whole-GPU tasks); else -1
};

// Tasks of `request` that node n alone could take now (0 when it does not fit); kGangUnbounded for a
// request of nothing.
inline std::int64_t gang_node_task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (state.check_fit(n, request) != FitReason::kFits) return 0;
  const TaskShape& shape = request.shape;
  std::int64_t cap = kGangUnbounded;
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

inline GangIndexBound gang_index_bound(const ClusterState& state, const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  GangIndexBound b;
  if (!shape.needs_gpu()) return {kGangUnbounded, -1};
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

inline std::int64_t gang_indexed_idle_gpus(const ClusterState& state) {
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

}  // namespace gpusched::detail
