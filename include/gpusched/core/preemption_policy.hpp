// gpusched/core/preemption_policy.hpp — who a pending job may evict, as Kueue's ClusterQueue says it.
//
// Vocabulary shared by the queue model (fairness::QueueConfig: a queue's own policies, as Kueue sets
// them per ClusterQueue in spec.preemption) and the scheduler (scheduler::PreemptionOptions and
// CycleOptions: the defaults for queues that set none). Kueue, "Preemption"
// (kueue.sigs.k8s.io/docs/concepts/preemption/):
//   withinClusterQueue  Never | LowerPriority | LowerOrNewerEqualPriority: victims in the job's own queue;
//   reclaimWithinCohort Never | LowerPriority | Any: victims in other queues of the cohort that borrow,
//                       while the job's queue is within its nominal quota;
//   borrowWithinCohort  {policy: Never | LowerPriority, maxPriorityThreshold}: victims of lower priority
//                       (at most the threshold, when given) in other queues of the cohort that borrow,
//                       when the job's queue must borrow itself (classic preemption; Kueue refuses it
//                       beside reclaimWithinCohort Never).
#pragma once

#include <cstdint>
#include <optional>

namespace gpusched {

enum class WithinQueue : std::uint8_t { kNever, kLowerPriority, kLowerOrNewerEqualPriority };

enum class CohortReclaim : std::uint8_t { kNever, kLowerPriority, kAny };

struct BorrowWithinCohort {
  bool lower_priority = false;                        // policy LowerPriority (false: Never)
  std::optional<std::int64_t> max_priority_threshold;  // victims' priority at most this, when given
};

}  // namespace gpusched
