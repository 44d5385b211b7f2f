// gpusched/mig/planner.hpp — re-partition planning: new MIG layouts for pending demand.
//
// What it is for. Requests for MIG profiles are pending because no GPU has a free instance of the
// right profile (static MIG, the device plugin's `nvidia.com/mig-<profile>` resources), yet the
// cluster has room if some GPUs were re-partitioned (gpu-operator #361 asks for exactly this).
// `plan_repartition` proposes new layouts: which GPUs to change, which idle instances to destroy
// and which to create, so that as much of the demand as possible is served while as few GPUs as
// possible are touched. Busy instances never move. The answer is a value; applying it is the
// orchestrator's business (NVML `nvmlDeviceCreateGpuInstanceWithPlacement`, `nvidia-smi mig
// -cgi`, or mig-parted with the per-node configuration `mig_parted_plan` builds).
//
// The algorithm.
//   1. Idle instances first: each demand item, largest profile first, takes idle instances of
//      its profile (lowest GPU id first). They serve demand without touching any GPU.
//   2. The other GPUs are grouped by identical state (model, busy and reserved instances, other
//      idle instances). For a group, the best *fill* is found by exhaustive search over the GPU's
//      free memory slices (each free slice either starts an instance of a still-demanded profile
//      at an allowed start, or stays free; idle instances in the way may be destroyed). A fill is
//      ranked by (compute slices served, then fewer and so bigger instances, fewest idle destroyed,
//      least fragmentation added, as gpusched/mig/packer.hpp measures it with weights = 1 per
//      profile plus its pending count, fewest free slices left).
//   3. Greedy, as in set cover: apply the best fill of all groups to as many GPUs of its group as
//      the remaining demand allows, then search again; stop when nothing more can be served.
//      Serving the most per touched GPU first is what keeps the number of touched GPUs low.
//      Ties go to the group with the lowest GPU id. A touched GPU is never touched twice.
// It is a heuristic: the fewest-GPU plan is a set-cover problem. benchmarks/mig_plan.cpp compares
// it with exhaustive search on small clusters.
//
// mig-parted caveat. mig-parted configurations are per-device *counts* of profiles
// (`mig-devices: {"1g.5gb": 2, "3g.20gb": 1}`) and mig-parted re-creates every instance of a
// device it changes, so applying the counts with mig-parted needs the device's busy instances
// drained; the plan's per-GPU `created` list (with start slices) is what an in-place applier uses.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <numeric>
#include <tuple>
#include <span>
#include <string>
#include <vector>

#include "gpusched/mig/packer.hpp"
#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::mig {

struct MigDemandItem {
  std::string label;  // e.g. the profile name as requested
  MigRequest request;
  std::int64_t count = 0;
};

struct MigPlanOptions {
  bool destroy_idle = true;  // may destroy idle (unassigned) instances on a touched GPU
};

struct MigGpuChange {
  MigGpuId gpu = kNoGpu;
  std::vector<MigInstance> before, after;
  std::vector<MigInstance> created, destroyed;
  // For each created instance, the demand item it serves.
  std::vector<std::size_t> serves;
};

struct MigPlan {
  std::vector<std::int64_t> served_idle;     // per item: by existing idle instances
  std::vector<std::int64_t> served_created;  // per item: by created instances
  std::vector<std::int64_t> unserved;        // per item
  std::vector<MigGpuChange> changes;         // touched GPUs, by GPU id
  std::int64_t total_served() const;
  std::int64_t total_unserved() const;
};

MigPlan plan_repartition(const ClusterState& state, std::span<const MigDemandItem> demand, MigPlanOptions options = {});

// Applies a plan to the one state: each changed GPU gets its `after` layout through the cluster event
// ClusterState::apply_mig_layout (busy instances stay busy; created ones are idle until a task takes
// them). Stops at the first GPU the state refuses and returns that error.
Status apply_plan(ClusterState& state, const MigPlan& plan);

// The plan as mig-parted configurations, one per node with a touched GPU: GPUs of the node with
// identical resulting profile counts share an entry. `devices` are the GPUs' indices on the node.
struct MigPartedEntry {
  std::vector<std::uint32_t> devices;
  std::vector<std::pair<std::string, int>> mig_devices;  // profile name -> count, table order
};
struct MigPartedNode {
  std::string node;
  std::string config;  // the config name: "gpusched-<node>"
  std::vector<MigPartedEntry> entries;
};
std::vector<MigPartedNode> mig_parted_plan(const ClusterState& state, const MigPlan& plan);
// `version: v1` / `mig-configs:` YAML text of those configurations.
std::string to_mig_parted_yaml(const std::vector<MigPartedNode>& nodes);

}  // namespace gpusched::mig

#if GPUSCHED_HEADER_ONLY
#include "gpusched/mig/detail/planner_impl.hpp"
#endif
