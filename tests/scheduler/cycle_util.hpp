// Helpers of the scheduling-cycle tests: small clusters of identical 8-GPU nodes, compiled jobs,
// running jobs reserved on the state, and invariant checks.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/scheduler/cycle.hpp"

namespace cycle_test {

using namespace gpusched;
using namespace gpusched::scheduler;

inline constexpr const char* kModel = "A100-SXM4-40GB";

inline Cluster make_cluster(std::size_t nodes, std::size_t gpus_per_node) {
  std::vector<NodeSpec> specs;
  for (std::size_t i = 0; i < nodes; ++i) {
    NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.cpu = 64 * kMilliPerCpu;
    n.memory = 512 * kGiB;
    n.gpus.assign(gpus_per_node, GpuSpec{kModel});
    specs.push_back(std::move(n));
  }
  return Cluster(std::move(specs));
}

inline TaskRequest whole_gpus(const ClusterState& state, GpuCount gpus) {
  TaskShape shape;
  shape.cpu = 1000;
  shape.memory = kGiB;
  shape.gpus = gpus;
  shape.gpu_milli = kMilliPerGpu;
  return state.compile(shape).value();
}

// A pending job of `tasks` tasks (at least `min_tasks`; -1 = all) of `gpus` whole GPUs each.
inline PendingJob job(const ClusterState& state, std::string name, std::string queue, std::int32_t tasks, GpuCount gpus,
                      std::int32_t priority = 0, std::int64_t submit = 0, std::int32_t min_tasks = -1) {
  PendingJob p;
  p.job.name = std::move(name);
  p.job.queue = std::move(queue);
  p.job.priority = priority;
  p.job.submit_time = submit;
  p.job.groups.push_back({"worker", tasks, min_tasks < 0 ? tasks : min_tasks, whole_gpus(state, gpus), {}});
  return p;
}

// A running job of `tasks` tasks of `gpus` GPUs, task t on node first_node + t * gpus / 8 (packed),
// reserved on the state.
inline RunningJob run(ClusterState& state, std::string name, std::string queue, NodeId node, GpuIndex first_gpu,
                      std::int32_t tasks, GpuCount gpus, std::int32_t priority = 0, Seconds start = 0) {
  RunningJob r;
  r.name = std::move(name);
  r.queue = std::move(queue);
  r.priority = priority;
  r.start_time = start;
  r.submit_time = start;
  NodeId n = node;
  GpuIndex g = first_gpu;
  for (std::int32_t t = 0; t < tasks; ++t) {
    if (g + gpus > static_cast<GpuIndex>(state.gpu_count(n))) {
      ++n;
      g = 0;
    }
    RunningTask task{whole_gpus(state, gpus), make_assignment(n, whole_gpus(state, gpus))};
    for (GpuCount k = 0; k < gpus; ++k) task.assignment.gpus.push_back(static_cast<GpuIndex>(g + k));
    REQUIRE(state.reserve(task.request, task.assignment).ok());
    r.tasks.push_back(std::move(task));
    g = static_cast<GpuIndex>(g + gpus);
  }
  return r;
}

inline fairness::QueueConfig queue(const ClusterState& state, std::string name, std::int64_t nominal_gpus,
                                   std::string cohort = {}, bool strict = false) {
  auto cluster = fairness::fairness_cluster(state).value();
  fairness::QueueConfig q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  q.strict_fifo = strict;
  q.nominal.assign(static_cast<std::size_t>(cluster.space.size()), fairness::kNoLimit);
  for (std::size_t d = 2; d < q.nominal.size(); ++d) q.nominal[d] = nominal_gpus * kMilliPerGpu;
  return q;
}

// Every GPU's share used by the running jobs never exceeds the GPU, and the state agrees with them
// (what the running jobs hold is exactly what the state has taken).
inline void check_no_overcommit(const ClusterState& state, std::span<const RunningJob> running) {
  std::vector<std::vector<std::int64_t>> used(state.node_count());
  for (NodeId n = 0; n < state.node_count(); ++n) used[n].assign(state.gpu_count(n), 0);
  for (const RunningJob& r : running)
    for (const RunningTask& t : r.tasks)
      for (GpuIndex g : t.assignment.gpus) used[t.assignment.node][g] += t.assignment.gpu_milli;
  for (NodeId n = 0; n < state.node_count(); ++n)
    for (GpuIndex g = 0; g < state.gpu_count(n); ++g) {
      REQUIRE(used[n][g] <= kMilliPerGpu);
      REQUIRE(state.shares().free_milli_if_healthy(n, g) == kMilliPerGpu - used[n][g]);
    }
}

}  // namespace cycle_test
