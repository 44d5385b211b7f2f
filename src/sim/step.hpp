// The simulator's internal "scheduler step": what the engine asks at every cycle, and the first
// implementation, built from the library's building blocks (gang placement, the preemption search).
//
// The engine owns time, the job table and the one ClusterState; a step reads them and answers with
// decisions, leaving the state exactly as it found it (it works with journaled what-if changes and
// rolls back). The engine then applies the decisions: evictions and shrinks first, then starts and
// grows in the order given (each start was valid at its point in the step's sequence, and applying
// every eviction first only frees more).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gpusched/core/quantity.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/sim/simulator.hpp"

namespace gpusched::sim::detail {

enum class Phase : std::uint8_t { kFuture, kPending, kRunning, kDone };

// A job's life in the simulation.
struct JobState {
  Phase phase = Phase::kFuture;
  std::int64_t remaining = 0;   // work units (milli-GPU-seconds at full rate) not yet saved
  std::int64_t attained = 0;    // service received, milli-GPU-seconds (LAS)
  Seconds seg_start = 0;        // the running segment's start
  std::int64_t rate = 0;        // work units per second in this segment (held tasks x task rate)
  std::int32_t held = 0;        // tasks held
  std::vector<TaskPlacement> tasks;  // the held tasks' assignments
  Seconds not_before = 0;       // failure backoff: not restarted before this time
  std::uint64_t version = 0;    // the completion event in the queue is valid iff versions match
  std::int32_t preemptions = 0, failures = 0;
  Seconds first_start = -1, end = -1;
  Seconds executed = 0;           // wall seconds it has run, over all segments (Tiresias' executed time)
  Seconds waiting_since = 0;      // when it last became pending (arrival, eviction)
  std::int64_t las_discount = 0;  // attained service forgiven when it was promoted (LAS starvation)
  GangSpec spec;                // compiled when it first arrives; cleared when done
};

// What a running job's progress, expected end and last checkpoint depend on: fixed for a segment
// (JobState::version changes with it), so a step can keep it beside its own copy of the job.
struct SegmentClock {
  Seconds seg_start = 0, restart_cost = 0, estimate = 0, duration = 0, checkpoint_interval = 0;
  std::int64_t remaining = 0, rate = 0;

  static SegmentClock of(const SimJob& job, const JobState& s) {
    return {s.seg_start, job.restart_cost, job.runtime_estimate(), job.duration, job.checkpoint_interval, s.remaining, s.rate};
  }
  // Work units done in this segment by `now` (none while the restart cost is paid).
  std::int64_t progress(Seconds now) const { return rate * std::max<Seconds>(0, now - seg_start - restart_cost); }
  // The job's own estimate scaled to the work left: a job past its estimate is expected to end now+1.
  Seconds expected_end(Seconds now) const {
    const std::int64_t left = std::max<std::int64_t>(0, remaining - progress(now));
    const Seconds work_start = std::max(now, seg_start + restart_cost);
    // ceil(estimate / duration * left / rate), exactly, in integers: the same on every platform (a
    // long double is 64, 80 or 128 bits depending on it) and cheap (this runs for every running job
    // in every cycle; in x87 long doubles it was an eighth of a conservative-backfill replay).
    // In 64 bits when the products fit (a 128-bit division is a library call, and this ran for every
    // running job of a backfill policy in every cycle: a third of a synthetic replay).
    Seconds need = 0;
    std::int64_t num64 = 0, den64 = 0;
    if (!__builtin_mul_overflow(estimate, left, &num64) &&
        !__builtin_mul_overflow(std::max<Seconds>(1, duration), std::max<std::int64_t>(1, rate), &den64) &&
        num64 <= std::numeric_limits<std::int64_t>::max() - den64) {
      need = std::min((num64 + den64 - 1) / den64, std::numeric_limits<Seconds>::max() / 2);
    } else {
      using gpusched::detail::QuantityWide;
      const QuantityWide num = static_cast<QuantityWide>(estimate) * left;
      const QuantityWide den = static_cast<QuantityWide>(std::max<Seconds>(1, duration)) * std::max<std::int64_t>(1, rate);
      const QuantityWide quotient = (num + den - 1) / den;
      need = quotient > std::numeric_limits<Seconds>::max() / 2 ? std::numeric_limits<Seconds>::max() / 2
                                                                : static_cast<Seconds>(quotient);
    }
    // Against the estimate of the whole run: never before now + 1.
    return std::max(now + 1, work_start + need);
  }
  // The last checkpoint at or before `now` (the segment's start when none was taken yet).
  Seconds last_checkpoint(Seconds now) const {
    const Seconds work_from = seg_start + restart_cost;
    if (checkpoint_interval <= 0 || now < work_from) return seg_start;
    return work_from + (now - work_from) / checkpoint_interval * checkpoint_interval;
  }
};

struct StepView {
  Seconds now = 0;
  const std::vector<SimJob>& jobs;
  const std::vector<JobState>& state;
  std::span<const std::uint32_t> pending;  // FIFO order (submit time, then trace order)
  std::span<const std::uint32_t> running;  // ascending job id
  // Work units a running job would still need at `now` if it ran on at full size (for SRTF and the
  // backfill's estimated ends), and its estimated end time.
  std::function<std::int64_t(std::uint32_t)> remaining_now;
  std::function<Seconds(std::uint32_t)> estimated_end;
  std::function<Seconds(std::uint32_t)> last_checkpoint;
  std::int64_t unusable_free = 0;  // free GPU share on failed or cordoned nodes (not usable now)
  std::span<const std::uint64_t> running_versions;  // JobState::version of each running job, as `running`
};

struct Start {
  std::uint32_t job = 0;
  std::vector<TaskPlacement> tasks;
};
struct Shrink {
  std::uint32_t job = 0;
  std::vector<std::uint32_t> tasks;  // indices into the job's task list, released
};

struct StepDecision {
  std::vector<std::uint32_t> evict;
  std::vector<Shrink> shrink;
  std::vector<Start> starts;
  std::vector<Start> grows;  // tasks added to a running elastic job
  std::vector<std::uint32_t> reject;  // pending jobs that can never run here (infeasible on the empty cluster)
  std::optional<Error> error;         // inputs the step refused: the simulation stops with it
};

using SchedulerStep = std::function<StepDecision(ClusterState&, const StepView&)>;

// The library's scheduling cycle (scheduler/cycle.hpp) configured by the PolicyConfig: FIFO (one
// StrictFIFO queue), greedy (BestEffortFIFO), priority, LAS and SRTF (the order key as the priority,
// with the cycle's preemption), DRF (one queue per trace queue, H-DRF order, quotas, fair-share reclaim).
SchedulerStep make_cycle_step(const PolicyConfig& policy, const SimCluster& cluster, const ClusterState& state);

// The energy/cost-aware placement (packing/cost_aware.hpp) over the nodes' prices.
std::unique_ptr<PlacementPolicy> make_cost_aware_policy(const SimCluster& cluster);

// The priority a policy gives a job now (LAS: minus its attained-service queue; SRTF: minus its
// remaining seconds at full size; otherwise the job's priority).
std::int32_t order_key(const PolicyConfig& policy, const StepView& v, std::uint32_t job);
// LAS: the queue of a job that attained `attained` milli-GPU-seconds (0 = top; the priority is its
// negation), and the next threshold it crosses (INT64_MAX: none).
struct LasLevel {
  std::int32_t queue = 0;
  std::int64_t next_threshold = std::numeric_limits<std::int64_t>::max();
};
LasLevel las_level(const PolicyConfig& policy, std::int64_t attained);
// Tiresias' starvation rule: a pending job that has waited at least promote_knob x its executed time
// (and has run at all: a job that never ran is in the top queue anyway) is promoted to the top queue.
bool las_starving(const PolicyConfig& policy, const JobState& s, Seconds now);

// The first implementation, kept for what the cycle does not do yet (EASY and conservative backfill:
// the cycle's stage 3 waits for scheduler/backfill.hpp): queue order, backfill and preemption per
// PolicyConfig over the library's gang placement and preemption search.
SchedulerStep make_library_step(const PolicyConfig& policy, const SimCluster& cluster, const ClusterState& state,
                                std::uint64_t seed);

}  // namespace gpusched::sim::detail
