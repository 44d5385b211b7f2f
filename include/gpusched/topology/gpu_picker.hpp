// gpusched/topology/gpu_picker.hpp — a GpuPicker that gives a multi-GPU task the best-connected
// free GPUs of its node.
//
// What it is for. Placement chooses the node (a PlacementPolicy), then which GPUs of it the task
// takes (a GpuPicker, packing/policy.hpp). The default picker takes the lowest-index idle GPUs; on
// a DGX-1 with GPUs 1 and 2 busy it hands a 4-GPU task {0, 3, 4, 5}, which has no NVLink ring, when
// {4, 5, 6, 7} (a fully NVLinked quad) is free. `TopologyGpuPicker` reads the node's interconnect
// from the cluster state (ClusterState::Topology::interconnect: the model's known default, or the node's
// `nvidia-smi topo -m` set by an event) and takes NodeTopology::best_gpus of the idle allowed GPUs:
// the set with the lowest estimated all-reduce time (allreduce.hpp), ties to the tightest span and
// to leaving the remaining free GPUs best connected.
//
// Anything it cannot improve goes to the default picker: shared-GPU and single-GPU tasks, CPU-only
// tasks and nodes without a known interconnect. It never picks a GPU the default would refuse
// (busy, unhealthy, of a model the request does not allow, short of GPU memory).
//
// How to use it: return it from a policy's `gpu_picker()` (any policy: the node choice is
// unchanged), or pass it where place_job/place_gang take a picker.
//
//   class TopologyAwareBestFit : public gpusched::PlacementPolicy {   // or any policy
//     ... NodeId select(...) const override { return best_fit_.select(state, request); }
//     const GpuPicker& gpu_picker() const override { return picker_; }
//     gpusched::topology::TopologyGpuPicker picker_;
//   };
//
// Cost: the node's graph is built once per distinct interconnect (kept in the picker, keyed by the
// interconnect's content, so it can never answer for a node whose interconnect was replaced); a
// pick is then best_gpus (<= 10 us for 4 of 8 GPUs, benchmarks/README.md). The cache makes a
// picker object unsafe to share between threads: use one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/topology/node_topology.hpp"

namespace gpusched::topology {

class TopologyGpuPicker final : public GpuPicker {
 public:
  explicit TopologyGpuPicker(PickOptions options = {}) : options_(options) {}

  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override {
    const TaskShape& shape = request.shape;
    const NodeInterconnect* ic = state.topology().interconnect(node);
    if (!shape.needs_gpu() || shape.shares_gpu() || shape.gpus < 2 || ic == nullptr ||
        ic->gpu_count() != state.gpu_count(node))
      return fallback_.pick(state, node, request, out);
    const NodeTopology* topo = topology_of(*ic);
    if (topo == nullptr) return fallback_.pick(state, node, request, out);
    // The GPUs the default picker could take: idle (an unhealthy GPU reads 0 free), an allowed
    // model, enough GPU memory.
    std::vector<std::uint16_t> free;
    const auto free_milli = state.shares().free_milli(node);
    for (std::size_t g = 0; g < free_milli.size(); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      if (free_milli[g] == kMilliPerGpu && (request.models & model_bit(state.gpu_model(node, gi))) &&
          state.shares().free_memory(node, gi) >= shape.gpu_memory)
        free.push_back(gi);
    }
    out = make_assignment(node, request);
    if (free.size() < static_cast<std::size_t>(shape.gpus)) return false;
    const GpuPick best = topo->best_gpus(free, static_cast<std::size_t>(shape.gpus), options_);
    if (!best.found()) return fallback_.pick(state, node, request, out);
    out.gpus.assign(best.gpus.begin(), best.gpus.end());
    return true;
  }

  // How many distinct interconnects the picker has built a graph for.
  std::size_t cached_topologies() const { return cache_.size(); }

 private:
  // The graph of an interconnect, built on first use; nullptr when the matrix does not build.
  const NodeTopology* topology_of(const NodeInterconnect& ic) const {
    for (const auto& [key, topo] : cache_)
      if (key == ic) return topo.get();
    auto built = NodeTopology::build(ic);
    cache_.emplace_back(ic, built ? std::make_unique<NodeTopology>(std::move(*built)) : nullptr);
    return cache_.back().second.get();
  }

  PickOptions options_;
  LowestIndexGpuPicker fallback_;
  mutable std::vector<std::pair<NodeInterconnect, std::unique_ptr<NodeTopology>>> cache_;
};

}  // namespace gpusched::topology
