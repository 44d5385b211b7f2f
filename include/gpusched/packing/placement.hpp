// gpusched/packing/placement.hpp — placing a whole job, and explaining why it cannot be placed.
//
// A job reaches this header compiled (`compile_job`, cluster/jobs.hpp: the one job model every
// family reads): one resolved `TaskRequest` per group, the replica counts, and everything else the
// job said.
//
// `place_job` places every task of every group of a job with one policy, all or nothing: either
// every task is reserved on the state, or the state is left exactly as it was and the answer says
// why in the one vocabulary (core/outcome.hpp):
//
//   kPlaced      `tasks` holds the placement;
//   kNotNow      the first task that could not be placed fits some node's capacity, and every
//                group's replicas fit the cluster's capacity (counted node by node as if every node
//                were empty): freeing resources can admit it;
//   kInfeasible  proved impossible even on the empty cluster: no eligible node can hold one task of
//                the group at capacity (a task larger than every node, a GPU model or label no node
//                has), or a group has more replicas than all nodes could hold at capacity.
//
// The reasons are structured (`Reason`: kind, unit, needed, available, how many nodes) and counted
// over all nodes for the first task that could not be placed, against the state as it was after the
// job's earlier tasks were tentatively placed; `describe` formats them the way `kubectl describe
// pod` does: "group worker replica 1: 0/1213 nodes: 900 insufficient GPUs, 313 GPU model not allowed".
//
// (Minimum-member gangs, topology levels and queues of gangs are the gang module's business; this is
// the one-job building block it composes.)
//
// Header-only: the definitions are in packing/detail/placement_impl.hpp.
// Threads: place_job reserves on the state it is given (one thread per state: give each thread its
// own copy).
// Policies with a seeded generator or a cache (RandomPolicy, FgdPolicy, the trace policies) change
// inside their const calls: one policy object per thread. BestFitPolicy and the other stateless
// policies may be shared.
#pragma once

#include "gpusched/core/config.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpusched/core/outcome.hpp"
#include "gpusched/cluster/jobs.hpp"
#include "gpusched/packing/policy.hpp"

namespace gpusched {

// Per-reason node counts for one task request.
struct FitDiagnosis {
  std::size_t total_nodes = 0;
  std::array<std::size_t, kFitReasonCount> count{};  // indexed by FitReason; [kFits] = nodes that fit
  // Per reason, the most any node failing for it offers in the reason's unit (free CPU, free
  // memory, idle GPUs, the largest free share on one GPU, the largest free GPU memory); -1 = none.
  std::array<std::int64_t, kFitReasonCount> best_available{};

  std::size_t fitting() const { return count[0]; }
  // "0/1213 nodes: 900 insufficient GPUs, 313 GPU model not allowed" (reasons by count, descending).
  std::string to_string() const;
};

// Every node's first failing check for one task now (free resources).
FitDiagnosis diagnose(const ClusterState& state, const TaskRequest& request);
// The same at capacity: as if every node were empty (cordoned and failed nodes still excluded).
FitDiagnosis diagnose_capacity(const ClusterState& state, const TaskRequest& request);

// The reasons of a diagnosis, one per failing kind, in descending count; `subject` = `group`.
std::vector<Reason> fit_reasons(const FitDiagnosis& diagnosis, const TaskRequest& request, std::int32_t group);

struct TaskPlacement {
  std::uint32_t group = 0;
  std::uint32_t replica = 0;
  TaskAssignment assignment;
};

struct JobPlacement {
  Verdict verdict = Verdict::kNotNow;
  std::vector<TaskPlacement> tasks;  // empty when not placed
  // When not placed: structured reasons (subject = the group index), the first task that failed,
  // and the per-node counts behind the reasons (now, or at capacity when infeasible).
  std::vector<Reason> reasons;
  std::uint32_t failed_group = 0;
  std::uint32_t failed_replica = 0;
  FitDiagnosis diagnosis;
  bool gpu_pick_failed = false;  // the policy chose a node on which the GPU picker found no GPUs

  bool placed() const { return verdict == Verdict::kPlaced; }
};


struct JobPlacementOptions {
  // Which GPUs each task takes on the chosen node; nullptr = the policy's gpu_picker(). A
  // topology-aware picker (topology family) goes here.
  const GpuPicker* gpu_picker = nullptr;
  // Which MIG instance a task with a MIG profile takes on the chosen node; nullptr = the first fit
  // (an idle instance on the lowest GPU, else the lowest free start: ClusterState::Mig::pick_instance).
  // The MIG family's FragAwareMigPicker (mig/packer.hpp) keeps big and demanded profiles placeable.
  const GpuPicker* mig_picker = nullptr;
  // Reasons for a job not placed. false: only its verdict (kNotNow or kInfeasible), without the
  // node-by-node diagnosis behind the reasons (a caller that acts on the verdict alone).
  bool explain = true;
};

// Places all replicas of all groups. On success the reservations stay on `state` (not committed:
// the caller may still roll back to a checkpoint taken before); on failure `state` is unchanged.
JobPlacement place_job(ClusterState& state, const CompiledJob& job, const PlacementPolicy& policy,
                       const JobPlacementOptions& options = {});

// "group worker replica 1: 0/3 nodes: 3 insufficient GPUs" for a job not placed, with
// " (the chosen node's GPU pick failed)" when that was the cause; "placed: N tasks" otherwise.
std::string describe(const CompiledJob& job, const JobPlacement& placement);

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/placement_impl.hpp"
#endif
