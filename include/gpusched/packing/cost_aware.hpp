// gpusched/packing/cost_aware.hpp — energy- and cost-aware node choice: consolidate onto powered
// nodes, prefer cheaper ones.
//
// An idle node can be powered down (or is not billed, in a cloud pool); a GPU-hour on a T4 costs a
// fraction of one on an H100. `CostAwarePolicy` scores a node that fits by, in this order:
//   1. powered: the node already runs work (any GPU share or CPU taken), so placing here powers
//      nothing new on (the consolidation of Kubernetes' MostAllocated, for energy);
//   2. cheaper: the caller's per-node cost (e.g. price per hour, or watts), lower first — a job
//      whose allowed models include a cheaper GPU type lands there;
//   3. best fit: the least GPU share left on the node, so partly used nodes fill first.
// Ties go to the lowest node id (ScoringPolicy). Costs are integers (cents, watts) for exact ties;
// a node beyond the vector costs 0.
#pragma once

#include <cstdint>
#include <vector>

#include "gpusched/packing/policy.hpp"

namespace gpusched {

class CostAwarePolicy final : public ScoringPolicy {
 public:
  explicit CostAwarePolicy(std::vector<std::int64_t> node_cost) : cost_(std::move(node_cost)) {}
  std::string_view name() const override { return "cost-aware"; }
  std::int64_t score(const ClusterState& state, NodeId n, const TaskRequest& r) const override {
    const bool powered =
        state.shares().node_free_milli(n) < static_cast<MilliGpu>(state.gpu_count(n)) * kMilliPerGpu || state.cpu_free(n) < state.cpu_capacity(n);
    const std::int64_t cost = n < cost_.size() ? std::min<std::int64_t>(cost_[n], (std::int64_t{1} << 20) - 1) : 0;
    const std::int64_t left = std::max<std::int64_t>(0, state.shares().node_free_milli(n) - r.shape.total_gpu_milli());
    return (powered ? (std::int64_t{1} << 52) : 0) - cost * (std::int64_t{1} << 24) - std::min<std::int64_t>(left, (1 << 24) - 1);
  }

 private:
  std::vector<std::int64_t> cost_;
};

}  // namespace gpusched
