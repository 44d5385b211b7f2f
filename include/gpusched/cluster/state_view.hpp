// gpusched/cluster/state_view.hpp — a ClusterState read back as a ClusterView.
//
// The live nodes of a state (tombstones of removed nodes skipped), with their capacity, what is free
// now, health, cordon and labels, in id order. It is the "resulting view" of the event property test
// (build from it and the new state answers every query like the evolved one), and how a state is
// written out or handed to code that takes a view. Built from a list of node ids it shows only those
// nodes, in that order: the snapshot on which packing's default select_among runs a policy's own
// select over a candidate set.
//
// `compact(state)` is the same read-back used to drop tombstones: node ids stay stable through
// `remove_node`, so a long-running orchestrator whose nodes come and go keeps one tombstone per node
// ever removed (its arrays, about 450 bytes a node of 8 GPUs). Now and then it can compact: a new state
// of the live nodes, ids renumbered in id order, and each old id's new id to translate what it keeps
// (running assignments, its own per-node arrays). Policies attached to the old state attach again (the
// new state is another instance).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched {

class ClusterStateView final : public ClusterView {
 public:
  explicit ClusterStateView(const ClusterState& state) : state_(state) {
    live_.reserve(state.live_node_count());
    for (NodeId n = 0; n < state.node_count(); ++n)
      if (!state.removed(n)) live_.push_back(n);
  }
  // Only `nodes` (live ids), in that order.
  ClusterStateView(const ClusterState& state, std::span<const NodeId> nodes)
      : state_(state), live_(nodes.begin(), nodes.end()) {}
  // The state's id of view node i.
  NodeId node_id(std::size_t i) const { return live_[i]; }

  std::size_t node_count() const override { return live_.size(); }
  std::string_view node_name(std::size_t i) const override { return state_.node_name(live_[i]); }
  NodeResources node_resources(std::size_t i) const override {
    const NodeId n = live_[i];
    return {state_.cpu_capacity(n), state_.cpu_free(n), state_.memory_capacity(n), state_.memory_free(n)};
  }
  std::size_t gpu_count(std::size_t i) const override { return state_.gpu_count(live_[i]); }
  GpuInfo gpu(std::size_t i, std::size_t g) const override {
    const NodeId n = live_[i];
    const auto gi = static_cast<GpuIndex>(g);
    // An unhealthy GPU reports what is free on it once it recovers, as an orchestrator's view would.
    return {state_.registry().model(state_.gpu_model(n, gi)).name, state_.shares().free_milli_if_healthy(n, gi),
            state_.shares().memory_capacity(n, gi) - state_.shares().free_memory_if_healthy(n, gi), state_.gpu_healthy(n, gi),
            state_.mig().mode(n, gi), state_.mig().layout_fixed(n, gi)};
  }
  // A MIG GPU's instances with their busy flags (cluster/mig_gpus.hpp).
  std::size_t mig_instance_count(std::size_t i, std::size_t g) const override {
    const mig::MigGpuId id = state_.mig().gpu(live_[i], static_cast<GpuIndex>(g));
    return id == mig::kNoGpu ? 0 : state_.mig().table().instances(id).size();
  }
  MigInstanceInfo mig_instance(std::size_t i, std::size_t g, std::size_t k) const override {
    const mig::MigGpuId id = state_.mig().gpu(live_[i], static_cast<GpuIndex>(g));
    const mig::MigSlot s = state_.mig().table().instances(id)[k];
    return {state_.mig().table().spec_of(id).profiles[s.profile].id, s.start, s.busy};
  }
  // One set by event or given at build; nullptr for the model's default, which a state rebuilt from
  // this view assigns again (so a rebuild compares no matrices).
  const NodeInterconnect* node_interconnect(std::size_t i) const override {
    return state_.topology().interconnect_is_default(live_[i]) ? nullptr : state_.topology().interconnect(live_[i]);
  }
  bool schedulable(std::size_t i) const override { return state_.schedulable(live_[i]); }
  bool healthy(std::size_t i) const override { return state_.healthy(live_[i]); }
  std::size_t label_count(std::size_t i) const override { return state_.labels().of(live_[i]).size(); }
  Label label(std::size_t i, std::size_t l) const override {
    const LabelRequirement r = state_.labels().of(live_[i])[l];
    return {state_.labels().key(r.key), state_.labels().value(r.value)};
  }

 private:
  const ClusterState& state_;
  std::vector<NodeId> live_;
};

struct CompactedState {
  ClusterState state;
  std::vector<NodeId> new_id;  // by old id: the node's id in `state`; kNoNode for a removed node
};

// A state without the tombstones of removed nodes, equal to `state` in every answer (allocations,
// health, cordons, labels, MIG instances, interconnects, GPU models). Refused (kState, field "state")
// while reservations are uncommitted: the new state has no journal to roll them back with.
inline Result<CompactedState> compact(const ClusterState& state) {
  if (state.checkpoint() != 0)
    return Error{"compact: " + std::to_string(state.checkpoint()) +
                     " uncommitted reservations or releases (commit or roll back first)",
                 ErrorCode::kState, "state"};
  const ClusterStateView view(state);
  auto built = ClusterState::build(view, state.registry(), state.mig().table().catalog(), state.mig().table().rules());
  if (!built) return built.error();  // cannot happen for a valid state: every node passed build or add_node
  CompactedState out{std::move(*built), std::vector<NodeId>(state.node_count(), kNoNode)};
  for (std::size_t i = 0; i < view.node_count(); ++i) out.new_id[view.node_id(i)] = static_cast<NodeId>(i);
  return out;
}

}  // namespace gpusched
