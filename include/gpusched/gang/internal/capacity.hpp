// gpusched/gang/internal/capacity.hpp — how many identical tasks fit: per node, and from the index.
//
// `node_task_capacity` is exact for identical tasks: a whole-GPU task of g GPUs takes g idle GPUs
// (of an allowed model with the GPU memory), a shared task takes its share on one GPU, so k tasks fit
// on a node iff each dimension holds k requests: k = min(cpu_free / cpu, memory_free / memory,
// usable idle GPUs / g) for whole GPUs, and for shares the sum over GPUs of how many shares each GPU
// holds. Placing one task lowers k by exactly one, which is why a greedy fill reaches the count.
//
// `index_bound` reads only the idle-GPU buckets (no node scan): an upper bound on the tasks of one
// request the whole cluster could hold, and the number of nodes with room for one, answered in
// microseconds on 10,000 nodes.
#pragma once

#include <cstdint>
#include <limits>

#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::gang_internal {

inline constexpr std::int64_t kUnbounded = std::numeric_limits<std::int32_t>::max();

// Tasks of `request` that node n alone could take now (0 when it does not fit); kUnbounded for a
// request of nothing.
std::int64_t node_task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request);

struct IndexBound {
  std::int64_t tasks = 0;  // upper bound on the tasks that fit (kUnbounded when the index cannot tell)
  std::int64_t nodes = 0;  // nodes with room for one task by idle GPUs (whole-GPU tasks); else -1
};
IndexBound index_bound(const ClusterState& state, const TaskRequest& request);

// Idle GPUs on eligible nodes, summed from the buckets.
std::int64_t indexed_idle_gpus(const ClusterState& state);

}  // namespace gpusched::gang_internal
