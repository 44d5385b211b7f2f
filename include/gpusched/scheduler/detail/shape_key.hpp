// The shape of a simple job, the key of the scheduling cycle's memos (scheduler/cycle.hpp) and of
// the backfill plan's (scheduler/backfill.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "gpusched/gang/gang.hpp"

namespace gpusched::scheduler::detail {

// A single-group job without constraints: its failure to place now implies the failure of every job
// asking for at least as much of everything (while the state only loses free capacity). Kubernetes
// keeps the same "unschedulable" memo per pod shape. The cycle reuses a failed placement's outcome
// for the same shape only (a larger shape's reasons carry its own numbers, and it may be infeasible
// where the smaller one was not now); a failed preemption search rules out every dominated shape.
struct ShapeKey {
  GpuModelMask models = 0;
  std::int64_t gpus = 0, gpu_milli = 0, gpu_memory = 0, cpu = 0, memory = 0, tasks = 0;
  bool operator==(const ShapeKey&) const = default;
  bool dominated_by(const ShapeKey& failed) const {
    return models == failed.models && gpus >= failed.gpus && gpu_milli >= failed.gpu_milli &&
           gpu_memory >= failed.gpu_memory && cpu >= failed.cpu && memory >= failed.memory && tasks >= failed.tasks;
  }
};

inline std::optional<ShapeKey> shape_key(const GangSpec& spec) {
  if (spec.groups.size() != 1 || !spec.topology.level.empty() || !spec.spread.empty() || !spec.anti_affinity.empty())
    return std::nullopt;
  const GangGroup& g = spec.groups.front();
  if (!g.request.selector.empty() || g.request.mig.any()) return std::nullopt;
  const TaskShape& s = g.request.shape;
  return ShapeKey{g.request.models, s.gpus, s.gpu_milli, s.gpu_memory, s.cpu, s.memory, g.min_replicas};
}

}  // namespace gpusched::scheduler::detail
