// A simulator policy as the library's scheduling session (job_clock.hpp): the queues and cycle
// options each PolicyConfig names, and the policies' order keys.
//
// Rules, and where they come from (every one is the library's cycle, scheduler/cycle.hpp):
//   * FIFO without backfill: the first job that does not fit blocks the queue (Slurm's
//     SchedulerType=sched/builtin; Kueue's StrictFIFO).
//   * greedy: every job in submit order that places starts (Kueue's BestEffortFIFO).
//   * EASY and conservative backfill (Lifka 1995; Mu'alem and Feitelson, IEEE TPDS 2001): the cycle's
//     stage 3 on concrete nodes (scheduler/backfill.hpp), at one-second resolution so that the
//     simulator's integer times are kept exactly.
//   * Tiresias discretised 2D-LAS (Gu et al., NSDI'19): a job's priority is minus its queue by the
//     GPU-service it attained; FIFO inside a queue; the cycle's preemption. `las_promote_knob` K > 0:
//     a job that has waited K times as long as it has run is promoted to the top queue.
//   * SRTF with known durations: minus the remaining seconds at full size as the priority.
//   * DRF: one queue per trace queue, H-DRF order (Ghodsi et al., NSDI'11; Bhattacharya et al.,
//     SoCC'13), GPU quotas as nominal quota, fair-share reclaim with `+preempt`.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gpusched/packing/cost_aware.hpp"
#include "sim/job_clock.hpp"

namespace gpusched::sim::detail {

namespace {
constexpr const char* kDefaultQueue = "default";
}

Result<scheduler::Session> open_policy_session(const PolicyConfig& p, const std::vector<SimJob>& jobs,
                                               ClusterState& state, const PlacementPolicy& placement,
                                               const scheduler::JobOrder* order,
                                               const scheduler::VictimOrder* victim_order) {
  scheduler::CycleOptions o;
  o.order = order;
  o.preemption.victim_order = victim_order;
  o.placement.policy = &placement;
  o.placement.effort = 20'000;
  o.preempt = p.preempt;
  o.preemption.within_queue = scheduler::WithinQueue::kLowerPriority;
  o.preemption.min_runtime = p.min_runtime;
  o.preemption.checkpoint_aware = p.checkpoint_aware;
  o.fair_share_reclaim = p.order == QueueOrder::kDrf && p.preempt;
  o.reclaim_within_cohort = scheduler::CohortReclaim::kNever;
  o.max_preemption_attempts = SIZE_MAX;
  o.never_evict_back = false;  // LAS promotes on purpose; priority order is the policy's own
  o.backfill.mode = p.backfill;
  o.backfill.resolution = 1;
  o.backfill.depth = p.backfill_depth;
  o.backfill.placement = o.placement;
  // Without elastic jobs no running job can grow: stage 4 would scan them for nothing.
  o.grow_elastic = std::any_of(jobs.begin(), jobs.end(), [](const SimJob& j) { return j.min_tasks >= 0 && j.min_tasks < j.tasks; });

  std::vector<fairness::QueueConfig> queues;
  if (p.order == QueueOrder::kDrf) {
    std::vector<std::string> names;
    for (const SimJob& j : jobs) names.push_back(j.queue.empty() ? kDefaultQueue : j.queue);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    auto cluster = fairness::fairness_cluster(state);
    const Eigen::Index dims = cluster ? static_cast<Eigen::Index>(cluster->space.size()) : 2;
    for (const std::string& n : names) {
      fairness::QueueConfig q;
      q.name = n;
      for (const auto& [name, w] : p.queue_weights)
        if (name == n) q.weight = w;
      for (const auto& [name, g] : p.queue_quota_gpus)
        if (name == n) {
          q.nominal.assign(static_cast<std::size_t>(dims), fairness::kNoLimit);
          for (std::size_t d = 2; d < q.nominal.size(); ++d) q.nominal[d] = g * kMilliPerGpu;
          q.borrowing_limit.assign(static_cast<std::size_t>(dims), 0);
        }
      queues.push_back(std::move(q));
    }
  }
  o.strict_fifo = p.strict && p.order == QueueOrder::kFifo && p.backfill == BackfillMode::kNone;
  return scheduler::Session::open(state, std::move(queues), std::move(o));
}

std::unique_ptr<PlacementPolicy> make_cost_aware_policy(const SimCluster& cluster) {
  std::vector<std::int64_t> cents;
  for (const NodeEnergy& e : cluster.energy) cents.push_back(static_cast<std::int64_t>(e.price_per_hour * 100 + 0.5));
  return std::make_unique<CostAwarePolicy>(std::move(cents));
}

LasLevel las_level(const PolicyConfig& p, std::int64_t attained) {
  LasLevel out;
  for (std::int64_t t : p.las_thresholds) {
    if (attained >= t) ++out.queue;
    else out.next_threshold = std::min(out.next_threshold, t);
  }
  return out;
}

bool las_starving(const PolicyConfig& p, const JobState& s, Seconds now) {
  return p.order == QueueOrder::kLas && p.las_promote_knob > 0 && s.phase == Phase::kPending && s.executed > 0 &&
         static_cast<double>(now - s.waiting_since) >= p.las_promote_knob * static_cast<double>(s.executed);
}

std::optional<Seconds> las_promotion_time(const PolicyConfig& p, const JobState& s) {
  if (p.order != QueueOrder::kLas || p.las_promote_knob <= 0 || s.phase != Phase::kPending || s.executed <= 0)
    return std::nullopt;
  const double wait = std::ceil(p.las_promote_knob * static_cast<double>(s.executed));
  if (!(wait < 4e18)) return std::nullopt;
  Seconds t = s.waiting_since + static_cast<Seconds>(wait);
  while (!las_starving(p, s, t)) ++t;  // (rounding of the product: at most a step or two)
  return t;
}

std::int32_t order_key(const PolicyConfig& p, const SimJob& job, const JobState& s, Seconds now) {
  switch (p.order) {
    case QueueOrder::kLas: {
      if (las_starving(p, s, now)) return 0;
      const std::int64_t a = s.attained - s.las_discount + (s.phase == Phase::kRunning ? s.rate * (now - s.seg_start) : 0);
      return -las_level(p, a).queue;
    }
    case QueueOrder::kSrtf: {
      const std::int64_t left = s.phase == Phase::kRunning
                                    ? std::max<std::int64_t>(0, s.remaining - SegmentClock::of(job, s).progress(now))
                                    : s.remaining;
      const std::int64_t seconds = left / std::max<std::int64_t>(1, job.full_rate());
      return -static_cast<std::int32_t>(std::min<std::int64_t>(seconds, std::numeric_limits<std::int32_t>::max()));
    }
    default:
      return job.priority;
  }
}

}  // namespace gpusched::sim::detail
