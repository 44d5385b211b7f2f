// gpusched/packing/placement.hpp — placing a whole job, and explaining why it cannot be placed.
//
// `place_job` places every task of every group of a job with one policy, all or nothing: either
// every task is reserved on the state, or the state is left exactly as it was and the answer says
// why, as `kubectl describe pod` would: "0/1213 nodes: 900 insufficient GPUs, 313 GPU model not
// allowed". The reasons are counted over all nodes for the first task that could not be placed,
// against the state as it was after the job's earlier tasks were tentatively placed.
//
// (Minimum-member gangs, topology levels and queues of gangs are the gang module's business; this is
// the one-job building block it composes.)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpusched/packing/policy.hpp"

namespace gpusched {

// Per-reason node counts for one task request.
struct FitDiagnosis {
  std::size_t total_nodes = 0;
  std::array<std::size_t, kFitReasonCount> count{};  // indexed by FitReason; [kFits] = nodes that fit

  std::size_t fitting() const { return count[0]; }
  // "0/1213 nodes: 900 insufficient GPUs, 313 GPU model not allowed" (reasons by count, descending).
  std::string to_string() const;
};

FitDiagnosis diagnose(const ClusterState& state, const TaskRequest& request);

struct TaskPlacement {
  std::uint32_t group = 0;
  std::uint32_t replica = 0;
  TaskAssignment assignment;
};

struct JobPlacement {
  bool placed = false;
  std::vector<TaskPlacement> tasks;  // empty when not placed
  // When not placed: the first task that failed, and why.
  std::uint32_t failed_group = 0;
  std::uint32_t failed_replica = 0;
  FitDiagnosis diagnosis;
  std::string reason;  // one line for people
};

// A job compiled against a state: one request per group, with replica counts.
struct CompiledGroup {
  std::string name;
  std::int32_t replicas = 1;
  std::int32_t min_replicas = 1;
  TaskRequest request;
};
struct CompiledJob {
  std::string name;
  std::string queue;
  std::int32_t priority = 0;
  std::vector<CompiledGroup> groups;
};

Result<CompiledJob> compile_job(const ClusterState& state, const JobView& job);

// Places all replicas of all groups. On success the reservations stay on `state` (not committed:
// the caller may still roll back to a checkpoint taken before); on failure `state` is unchanged.
JobPlacement place_job(ClusterState& state, const CompiledJob& job, const PlacementPolicy& policy);

}  // namespace gpusched
