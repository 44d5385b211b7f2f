// gpusched/core/preemption_policy.hpp — who a pending job may evict, as Kueue's ClusterQueue says it.
//
// Vocabulary shared by the queue model (fairness::QueueConfig: a queue's own policies, as Kueue sets
// them per ClusterQueue in spec.preemption) and the scheduler (scheduler::PreemptionOptions and
// CycleOptions: the defaults for queues that set none). Kueue, "Preemption"
// (kueue.sigs.k8s.io/docs/concepts/preemption/):
//   withinClusterQueue  Never | LowerPriority | LowerOrNewerEqualPriority: victims in the job's own queue;
//   reclaimWithinCohort Never | LowerPriority | Any: victims in other queues of the cohort that borrow,
//                       while the job's queue is within its nominal quota.
#pragma once

#include <cstdint>

namespace gpusched {

enum class WithinQueue : std::uint8_t { kNever, kLowerPriority, kLowerOrNewerEqualPriority };

enum class CohortReclaim : std::uint8_t { kNever, kLowerPriority, kAny };

}  // namespace gpusched
