// gpusched/io/task_records.hpp — a decision's tasks as plain records: group, replica, node and GPUs by
// name and index, MIG instance. The one place every front end (`gpusched place`, `gpusched cycle`,
// the C API, the Python module) turns a placement's `TaskAssignment`s into what it prints or hands
// out, so that they all say the same thing about the same decision.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/packing/placement.hpp"

namespace gpusched::io {

struct TaskRecord {
  std::string group;                // the task group's name
  std::int32_t replica = 0;         // index within the group
  NodeId node = kNoNode;
  std::string node_name;
  std::vector<std::uint32_t> gpus;  // GPU indices on the node (a MIG task: the MIG GPU)
  std::int32_t gpu_milli = 0;       // share of each GPU, 1000 = whole (0: no GPU)
  // A MIG task: the profile's name and index in the GPU model's table, the instance's first slice,
  // and whether the reservation creates the instance. Otherwise "", -1, -1, false.
  std::string mig_profile;
  std::int32_t mig_profile_index = -1;
  std::int32_t mig_start = -1;
  bool mig_create = false;

  bool is_mig() const { return mig_profile_index >= 0; }
  bool partial_gpu() const { return gpu_milli > 0 && gpu_milli < kMilliPerGpu; }
};

// One task on `state` (the state the decision was made on: node names, MIG profile names).
TaskRecord task_record(const ClusterState& state, const TaskAssignment& assignment, std::string group,
                       std::int32_t replica = 0);

// A placement's tasks, named by `job`'s groups.
std::vector<TaskRecord> task_records(const ClusterState& state, const CompiledJob& job,
                                     std::span<const TaskPlacement> tasks);

}  // namespace gpusched::io
