// The simulator's clock of a job: its life (phase, work left, service attained, segments) and the
// formulas of its progress, last checkpoint and expected run time, in integers so that a seed gives
// the same figures on every platform; and the policy's order key (LAS, SRTF). The scheduling itself is
// the library's session (scheduler/session.hpp), configured from the PolicyConfig (policy_session.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "gpusched/core/quantity.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/scheduler/session.hpp"
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
  std::vector<TaskPlacement> tasks;  // the held tasks' assignments, in the session's task order
  Seconds not_before = 0;       // failure backoff: not restarted before this time
  std::uint64_t version = 0;    // events about this job (completion, wake-ups) are valid iff versions match
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
  // The expected run time of the segment from its start, as the backfill profile sees it: the
  // restart cost, then the job's own estimate scaled to the work left at this rate (an estimate twice
  // the duration expects twice the time the work takes). Fixed for the segment: the profile's
  // expected end is seg_start + this (after it, the job is overrunning: cycle.hpp's rule).
  // ceil(estimate x left / (duration x rate)), exactly, in integers (64 bits when the products fit:
  // a 128-bit division is a library call).
  Seconds segment_estimate() const { return std::max<Seconds>(1, restart_cost + scaled(remaining, rate)); }
  // The same for a job that would start now at full rate `full_rate`.
  Seconds pending_estimate(std::int64_t full_rate) const { return std::max<Seconds>(1, restart_cost + scaled(remaining, full_rate)); }
  Seconds scaled(std::int64_t left, std::int64_t at_rate) const {
    std::int64_t num64 = 0, den64 = 0;
    const std::int64_t den_rate = std::max<std::int64_t>(1, at_rate);
    if (!__builtin_mul_overflow(estimate, left, &num64) &&
        !__builtin_mul_overflow(std::max<Seconds>(1, duration), den_rate, &den64) &&
        num64 <= std::numeric_limits<std::int64_t>::max() - den64)
      return std::min((num64 + den64 - 1) / den64, std::numeric_limits<Seconds>::max() / 4);
    using gpusched::detail::QuantityWide;
    const QuantityWide num = static_cast<QuantityWide>(estimate) * left;
    const QuantityWide den = static_cast<QuantityWide>(std::max<Seconds>(1, duration)) * den_rate;
    const QuantityWide quotient = (num + den - 1) / den;
    return quotient > std::numeric_limits<Seconds>::max() / 4 ? std::numeric_limits<Seconds>::max() / 4
                                                               : static_cast<Seconds>(quotient);
  }
  // The last checkpoint at or before `now` (the segment's start when none was taken yet).
  Seconds last_checkpoint(Seconds now) const {
    const Seconds work_from = seg_start + restart_cost;
    if (checkpoint_interval <= 0 || now < work_from) return seg_start;
    return work_from + (now - work_from) / checkpoint_interval * checkpoint_interval;
  }
};

// The scheduling session a policy is: the library's session (scheduler/session.hpp) with the queues
// and options the PolicyConfig names. FIFO: no queues, the implicit queue StrictFIFO; greedy, priority,
// LAS, SRTF, EASY and conservative: no queues (one implicit BestEffortFIFO queue; backfill per the
// policy); DRF: one
// queue per trace queue (weights, GPU quotas as nominal quota on every GPU model). `placement` must
// outlive the session.
// The user's orders (SimConfig::order, victim_order; null: the policy's own) must outlive it too.
Result<scheduler::Session> open_policy_session(const PolicyConfig& policy, const std::vector<SimJob>& jobs,
                                               ClusterState& state, const PlacementPolicy& placement,
                                               const scheduler::JobOrder* order = nullptr,
                                               const scheduler::VictimOrder* victim_order = nullptr);

// The energy/cost-aware placement (packing/cost_aware.hpp) over the nodes' prices.
std::unique_ptr<PlacementPolicy> make_cost_aware_policy(const SimCluster& cluster);

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
// When a pending job becomes starving (std::nullopt: never).
std::optional<Seconds> las_promotion_time(const PolicyConfig& policy, const JobState& s);

// The priority a policy gives job j now (LAS: minus its attained-service queue; SRTF: minus its
// remaining seconds at full size; otherwise the job's priority).
std::int32_t order_key(const PolicyConfig& policy, const SimJob& job, const JobState& s, Seconds now);

}  // namespace gpusched::sim::detail
