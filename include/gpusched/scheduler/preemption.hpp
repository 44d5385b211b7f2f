// gpusched/scheduler/preemption.hpp — which running gangs to evict so that a waiting gang starts.
//
// What it is for. A high-priority gang waits; lower-priority work holds the GPUs. The scheduling
// cycle asks: which running jobs, if evicted, let it start, and what does that cost? The field gets
// three things wrong, which this module is written against:
//   - over-eviction: victims chosen one by one until "enough" is free evict more than needed
//     (volcano#5984: 10 pods for 1; KAI PR#1565: 376 GPUs for 48). Here the preemptor's placement is
//     simulated with the victims removed, and the set is trimmed afterwards like Kueue's reverse
//     pass: every victim whose return would still let the preemptor place is given back. Slurm's
//     documented case (an 8-node preemptor, candidates of 2, 4 and 8 nodes) evicts only the 8-node
//     job.
//   - broken gangs: victims are whole gangs (volcano#4607 evicts tasks without placing the
//     preemptor); an elastic gang first loses the tasks above its minimum and is never cut below
//     its minimum while it keeps running.
//   - lost work: no scheduler weighs what a victim loses (kueue#477). Here the cost of evicting a
//     job is the GPU-seconds it computed since its last checkpoint plus its restart cost (seconds of
//     every GPU it holds); among the victim sets that suffice, the cheapest wins — exactly (best-first
//     over all subsets, in cost order) when at most `exact_limit` candidates can matter, otherwise
//     greedily in cost order and then trimmed (minimal, not proven cheapest; `exact` says which).
//
// How. Candidates are the running jobs eligible by the rules below, restricted to the nodes where
// the preemptor could run at all (node selector, GPU model, capacity), so a 64-GPU gang among
// 10,000 running jobs looks at the few hundred that sit on useful nodes. Removing and restoring
// victims are journaled changes of the one ClusterState (release_journaled + rollback), so the
// search copies nothing and leaves the state exactly as it found it.
//
// Rules (the semantics Kueue, Volcano, KAI and Slurm users know):
//   - non-preemptible jobs and jobs that ran less than `min_runtime` are never candidates;
//   - within the preemptor's queue: lower priority (kLowerPriority), or lower, or equal and newer
//     (kLowerOrNewerEqualPriority: submitted after the preemptor, RunningJob::submit_time; a job
//     without a submit time counts from its start), or never (kNever). Comparing submit times, not
//     start times, makes "newer" a strict order: two jobs of equal priority can never each be the
//     newer one, so they never preempt each other back and forth;
//   - other queues: only the jobs the caller marks reclaimable (the fair-share / cohort rules of the
//     scheduling cycle decide which: lent quota reclaimed, a queue above its fair share).
//
// Thread safety: find_victims changes `state` while it searches and restores it before returning:
// one thread per state.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/core/outcome.hpp"
#include "gpusched/cluster/jobs.hpp"
#include "gpusched/core/preemption_policy.hpp"
#include "gpusched/gang/gang.hpp"

namespace gpusched::scheduler {

using Seconds = std::int64_t;

// The running job model (RunningTask, ElasticGroup, RunningJob) is the one of cluster/jobs.hpp.
using gpusched::ElasticGroup;
using gpusched::RunningJob;
using gpusched::RunningTask;

using gpusched::WithinQueue;  // core/preemption_policy.hpp (a queue may set its own)

// One thing the search may take away, as a victim order sees it: a running job evicted whole, or the
// tasks [first_task, first_task + task_count) an elastic job sheds while it keeps running.
struct VictimCandidate {
  const RunningJob* job = nullptr;
  std::uint32_t first_task = 0;
  std::uint32_t task_count = 0;
  bool whole = true;
  std::int64_t lost_milli_gpu_seconds = 0;     // work since the last checkpoint (lost_work)
  std::int64_t restart_milli_gpu_seconds = 0;  // its restart cost (0 for a shrink)
  std::int64_t freed_milli_gpu = 0;            // what evicting it frees
  Seconds now = 0;
};

// The order in which victims are taken (docs/policies.md, "Victim order"): a cost per candidate,
// >= 0 (a negative cost counts as 0 here; the C and Python adapters report it as a failure); among
// the sets of candidates that let the preemptor start, the search takes the cheapest, exactly up to
// PreemptionOptions::exact_limit candidates. Beyond that it is greedy and then trimmed: elastic
// shrinks first, then whole jobs node by node (nodes whose candidates free room for the preemptor's
// largest task first, the cheapest per freed milli-GPU first), by cost within a node. The eligibility rules (priority, queues, min_runtime, never evicting
// back) do not change: an order chooses among the jobs the rules allow. The cost must depend on the
// candidate only (not on the preemptor): a cycle prices each candidate once for all its preemptors.
class VictimOrder {
 public:
  virtual ~VictimOrder() = default;
  virtual std::string_view name() const = 0;
  virtual std::int64_t cost(const VictimCandidate& candidate) const = 0;
  // User code that failed (as PlacementPolicy::failure): the cycle is then an error keeping nothing.
  virtual std::string_view failure() const { return {}; }
  // Forgets a failure once its owner has reported it (JobOrder::clear_failure).
  virtual void clear_failure() const {}
};

// The default order: what an eviction loses, the GPU-seconds computed since the last checkpoint plus
// the restart cost of the GPUs it held (kueue#477's missing piece; see the top of this file).
class CheckpointCostOrder final : public VictimOrder {
 public:
  std::string_view name() const override { return "checkpoint-cost"; }
  std::int64_t cost(const VictimCandidate& c) const override;
};

struct PreemptionOptions {
  WithinQueue within_queue = WithinQueue::kLowerPriority;
  Seconds min_runtime = 0;
  // true: cost = lost work + restart, cheapest set; false: Kueue's order (lowest priority first,
  // then the most recently started), greedy and trimmed.
  bool checkpoint_aware = true;
  // A victim order of one's own (its costs replace lost work + restart; checkpoint_aware is then
  // ignored); nullptr: the default above. Borrowed: it must outlive the calls that use it.
  const VictimOrder* victim_order = nullptr;
  std::size_t exact_limit = 12;  // candidates up to which the cheapest set is searched exactly
  GangOptions placement;         // how the preemptor is placed (policy, effort); dry_run is forced
  // When no set of candidates suffices: true tells kNotNow from kInfeasible by placing the
  // preemptor on the cluster with every running job released (a simulation as large as the
  // cluster); false answers kNotNow at once (the scheduling cycle knows the placement's verdict).
  bool classify_refusal = true;
};

// The waiting gang and what the rules need to know of it.
struct Preemptor {
  const GangSpec* spec = nullptr;
  std::string queue;
  std::int32_t priority = 0;
  Seconds submit_time = 0;
};

// What one victim loses. Costs are in milli-GPU-seconds (a whole GPU for one second is 1000), exact
// integers, saturating at INT64_MAX rather than wrapping.
struct Victim {
  std::size_t job = 0;          // index into the running jobs given
  std::uint32_t tasks_shed = 0;  // == tasks.size(): evicted whole; fewer: an elastic shrink
  bool whole = true;
  std::int64_t lost_milli_gpu_seconds = 0;     // work since the last checkpoint
  std::int64_t restart_milli_gpu_seconds = 0;  // restart cost of the GPUs it held (0 for a shrink)
  std::int64_t cost() const;
};

struct PreemptionPlan {
  // kPlaced: evicting `victims` lets the preemptor place (`placement` is where, simulated);
  // kNotNow: it would fit the cluster, but not even evicting every candidate makes room now;
  // kInfeasible: it cannot fit even if every preemptible job were evicted... or the empty cluster.
  Verdict verdict = Verdict::kNotNow;
  std::vector<Victim> victims;            // in job index order
  std::vector<TaskPlacement> placement;   // the preemptor's simulated placement when kPlaced
  std::int64_t cost = 0;                  // sum of the victims' costs under the victim order
  bool exact = false;                     // the cheapest sufficient set (else: minimal, greedy)
  std::size_t candidates = 0;             // eligible candidate units considered
  std::uint64_t placements_tried = 0;     // simulated placements of the preemptor
  std::vector<Reason> reasons;            // when not kPlaced
};

// Milli-GPU-seconds lost by the tasks [first, first + count) of `job` if stopped at `now`, and the
// restart cost of those tasks.
std::int64_t lost_work(const RunningJob& job, std::size_t first, std::size_t count, Seconds now);
std::int64_t restart_work(const RunningJob& job, std::size_t first, std::size_t count);

// Is `job` a candidate victim for `preemptor` at `now` under `options` (`reclaimable`: the caller
// allows it from another queue)?
bool eligible_victim(const RunningJob& job, const Preemptor& preemptor, Seconds now, const PreemptionOptions& options,
                     bool reclaimable);

// Per running job, what the caller says beyond the rules: nothing (the rules decide), reclaimable
// (a candidate from another queue, or regardless of priority), or excluded (never a candidate: the
// scheduling cycle already evicted or shrank it, its tasks are no longer on the state).
inline constexpr std::uint8_t kRulesOnly = 0;
inline constexpr std::uint8_t kReclaimableVictim = 1;
inline constexpr std::uint8_t kExcludedVictim = 2;

// Finds the victims. `reclaimable[i]` marks running job i (kRulesOnly, kReclaimableVictim or
// kExcludedVictim; empty: all kRulesOnly). The state is left exactly as it was.
PreemptionPlan find_victims(ClusterState& state, const Preemptor& preemptor, std::span<const RunningJob> running,
                            Seconds now, const PreemptionOptions& options = {},
                            std::span<const std::uint8_t> reclaimable = {});

}  // namespace gpusched::scheduler

#if GPUSCHED_HEADER_ONLY
#include "gpusched/scheduler/detail/preemption_impl.hpp"
#endif
