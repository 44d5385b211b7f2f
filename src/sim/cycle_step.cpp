// The simulator's scheduler step over the library's scheduling cycle (scheduler/cycle.hpp): every
// policy but backfill is a configuration of `run_cycle` (see step.hpp for the mapping).
#include <algorithm>
#include <limits>
#include <map>

#include "gpusched/scheduler/cycle.hpp"
#include "sim/step.hpp"

namespace gpusched::sim::detail {
namespace {

constexpr const char* kDefaultQueue = "default";

class CycleStep {
 public:
  CycleStep(const PolicyConfig& p, const SimCluster& cluster) : p_(p) {
    if (p_.energy_aware && !cluster.energy.empty()) {
      placement_ = make_cost_aware_policy(cluster);
    } else {
      placement_ = std::make_unique<BestFitPolicy>();
    }
    options_.placement.policy = placement_.get();
    options_.placement.effort = 20'000;
    options_.preempt = p_.preempt;
    options_.preemption.within_queue = scheduler::WithinQueue::kLowerPriority;
    options_.preemption.min_runtime = p_.min_runtime;
    options_.preemption.checkpoint_aware = p_.checkpoint_aware;
    options_.fair_share_reclaim = p_.order == QueueOrder::kDrf && p_.preempt;
    options_.reclaim_within_cohort = scheduler::CohortReclaim::kNever;
    // Stage 3 of the cycle: EASY or conservative backfill on concrete nodes (scheduler/backfill.hpp),
    // at one-second resolution so that the simulator's integer times are kept exactly.
    options_.backfill.mode = p_.backfill == BackfillMode::kEasy           ? scheduler::BackfillMode::kEasy
                             : p_.backfill == BackfillMode::kConservative ? scheduler::BackfillMode::kConservative
                                                                          : scheduler::BackfillMode::kNone;
    options_.backfill.resolution = 1;
    options_.backfill.depth = p_.backfill_depth;
    options_.backfill.placement = options_.placement;
    options_.dry_run = true;
  }

  StepDecision operator()(ClusterState& state, const StepView& v);

 private:
  PolicyConfig p_;
  std::unique_ptr<PlacementPolicy> placement_;
  scheduler::CycleOptions options_;
  std::vector<fairness::QueueConfig> queues_;
  bool queues_built_ = false;
  // The running jobs as the cycle sees them, kept between cycles in slots: a job keeps its slot while
  // it runs, a new one takes a slot at the end, and a job that stopped gives its slot to the last
  // one. Maintaining the list costs O(changes) moves per cycle, not a move of every running job.
  struct Slot {
    std::uint32_t job = 0;
    SegmentClock clock;
    std::int64_t las_base = 0;  // LAS: service attained before this segment, less the promotion discount
    // The first times the job's LAS priority and its last checkpoint can change: before them the
    // refresh leaves the RunningJob as it is (no division per running job per cycle).
    Seconds next_priority = 0, next_checkpoint = 0;
  };
  // The LAS priority of a slot's job at `now`, and when it changes next.
  std::int32_t las_priority(Slot& slot, Seconds now) const {
    const LasLevel level = las_level(p_, slot.las_base + slot.clock.rate * (now - slot.clock.seg_start));
    slot.next_priority = std::numeric_limits<Seconds>::max();
    if (level.next_threshold != std::numeric_limits<std::int64_t>::max() && slot.clock.rate > 0)
      slot.next_priority =
          slot.clock.seg_start + (level.next_threshold - slot.las_base + slot.clock.rate - 1) / slot.clock.rate;
    return -level.queue;
  }
  // The job's last checkpoint at `now`, and when the next one falls.
  Seconds last_checkpoint(Slot& slot, Seconds now) const {
    const Seconds last = slot.clock.last_checkpoint(now);
    const Seconds work_from = slot.clock.seg_start + slot.clock.restart_cost;
    const Seconds interval = slot.clock.checkpoint_interval;
    slot.next_checkpoint = interval <= 0 ? std::numeric_limits<Seconds>::max() : now < work_from ? work_from : last + interval;
    return last;
  }
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::vector<scheduler::RunningJob> running_;  // by slot
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> slot_of_job_;  // job id -> slot, kNoSlot when not running
  // With queues: their usage by the slots' jobs, kept as slots change (the cycle then reads the sums
  // instead of summing every running job: CycleOptions::usage).
  scheduler::RunningUsage usage_;
  std::vector<std::uint32_t> seen_ids_;      // the last cycle's running jobs (ascending id)
  std::vector<std::uint64_t> seen_versions_;  // and their segments' versions
  std::vector<scheduler::PendingJob> pending_;
  std::vector<std::uint32_t> pending_ids_;
  bool elastic_known_ = false, any_elastic_ = false;
};

StepDecision CycleStep::operator()(ClusterState& state, const StepView& v) {
  const bool drf = p_.order == QueueOrder::kDrf;
  if (!queues_built_) {
    // FIFO: one StrictFIFO queue; greedy, priority, LAS, SRTF: one BestEffortFIFO queue; DRF: one
    // queue per trace queue (weights, GPU quotas as nominal quota on every GPU model).
    queues_built_ = true;
    if (drf) {
      std::vector<std::string> names;
      for (const SimJob& j : v.jobs) names.push_back(j.queue.empty() ? kDefaultQueue : j.queue);
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      auto cluster = fairness::fairness_cluster(state);
      const Eigen::Index dims = cluster ? static_cast<Eigen::Index>(cluster->space.size()) : 2;
      for (const std::string& n : names) {
        fairness::QueueConfig q;
        q.name = n;
        for (const auto& [name, w] : p_.queue_weights)
          if (name == n) q.weight = w;
        for (const auto& [name, g] : p_.queue_quota_gpus)
          if (name == n) {
            q.nominal = fairness::Amounts::Constant(dims, fairness::kNoLimit);
            for (Eigen::Index d = 2; d < dims; ++d) q.nominal[d] = g * kMilliPerGpu;
            q.borrowing_limit = fairness::Amounts::Zero(dims);
          }
        queues_.push_back(std::move(q));
      }
    } else if (p_.strict && p_.order == QueueOrder::kFifo && p_.backfill == BackfillMode::kNone) {
      fairness::QueueConfig q;
      q.name = kDefaultQueue;
      q.strict_fifo = true;
      queues_.push_back(std::move(q));
    }
  }
  const bool named_queues = drf;
  // The one queue of FIFO (named: the fairness family wants a name) or none.
  const std::string one_queue = queues_.empty() ? std::string() : std::string(kDefaultQueue);
  // The running jobs matter to the cycle for preemption, queue usage (DRF), elastic grow and backfill
  // (their expected ends are the availability profile; without them every running task is held for
  // ever and no reservation can be made). Without those (FIFO, greedy on rigid jobs) its decisions do
  // not depend on them, and building the list is what would make a cycle cost O(running jobs) on a
  // 10,000-node cluster: it is left empty.
  if (!elastic_known_) {
    elastic_known_ = true;
    for (const SimJob& j : v.jobs) any_elastic_ = any_elastic_ || (j.min_tasks >= 0 && j.min_tasks < j.tasks);
    // Without elastic jobs no running job can grow: the cycle's stage 4 would scan them for nothing.
    options_.grow_elastic = any_elastic_;
  }
  const bool needs_running = p_.preempt || drf || any_elastic_ || p_.backfill != BackfillMode::kNone;
  // A slot's segment facts (tasks, start) are copied again only when the job's segment changed
  // (JobState::version); what changes with time alone is refreshed every cycle, from the slot (a
  // read of the engine's job table is random access into every job of the trace).
  // Only LAS and SRTF priorities change with time (the others are the job's own, set when filled).
  const bool refresh_priority =
      (p_.preempt || any_elastic_) && (p_.order == QueueOrder::kLas || p_.order == QueueOrder::kSrtf);
  const bool refresh_estimate = p_.backfill != BackfillMode::kNone;
  const bool las = p_.order == QueueOrder::kLas;
  const bool track_usage = !queues_.empty();
  options_.usage = track_usage ? &usage_ : nullptr;
  if (slot_of_job_.size() != v.jobs.size()) slot_of_job_.assign(v.jobs.size(), kNoSlot);
  // What changed since the last cycle, from a walk of this cycle's (job, version) lists beside the
  // last cycle's, both in ascending job id: sequential reads, and the slots are touched only for
  // the jobs that started, stopped or changed segment.
  const std::size_t n_running = needs_running ? v.running.size() : 0;
  std::size_t old = 0;
  // The queues' usage follows the slots (a sum beyond 64 bits stops the run with the error).
  Status usage_status;
  const auto count = [&](const scheduler::RunningJob& rj, int sign) {
    if (!track_usage || !usage_status) return;
    usage_status = usage_.add(state, rj, sign);
  };
  const auto vacate = [&](std::uint32_t job) {
    const std::uint32_t at = slot_of_job_[job];
    slot_of_job_[job] = kNoSlot;
    count(running_[at], -1);
    if (at + 1 != slots_.size()) {
      slots_[at] = slots_.back();
      running_[at] = std::move(running_.back());
      slot_of_job_[slots_[at].job] = at;
    }
    slots_.pop_back();
    running_.pop_back();
  };
  for (std::size_t i = 0; i < n_running; ++i) {
    const std::uint32_t r = v.running[i];
    for (; old < seen_ids_.size() && seen_ids_[old] < r; ++old) vacate(seen_ids_[old]);
    const bool known = old < seen_ids_.size() && seen_ids_[old] == r;
    if (known && seen_versions_[old++] == v.running_versions[i]) continue;
    std::uint32_t at = slot_of_job_[r];
    if (at == kNoSlot) {
      at = static_cast<std::uint32_t>(slots_.size());
      slot_of_job_[r] = at;
      slots_.emplace_back();
      running_.emplace_back();
    } else {
      count(running_[at], -1);
    }
    const JobState& s = v.state[r];
    const SimJob& job = v.jobs[r];
    slots_[at] = {r, SegmentClock::of(job, s), s.attained - s.las_discount};
    scheduler::RunningJob& rj = running_[at];
    rj.name = job.name;
    rj.queue = named_queues ? (job.queue.empty() ? kDefaultQueue : job.queue) : one_queue;
    rj.start_time = s.seg_start;
    rj.restart_cost = job.restart_cost;
    rj.preemptible = job.preemptible;
    const std::int32_t min = s.spec.groups[0].min_replicas;
    rj.min_tasks = min < job.tasks ? min : -1;
    rj.max_tasks = job.tasks;
    rj.submit_time = job.submit;
    rj.tasks.clear();
    for (const TaskPlacement& t : s.tasks) rj.tasks.push_back({s.spec.groups[0].request, t.assignment});
    rj.priority = las && refresh_priority ? las_priority(slots_[at], v.now) : order_key(p_, v, r);
    rj.last_checkpoint = last_checkpoint(slots_[at], v.now);
    rj.runtime_estimate = std::max<Seconds>(1, slots_[at].clock.expected_end(v.now) - slots_[at].clock.seg_start);
    count(rj, 1);
  }
  for (; old < seen_ids_.size(); ++old) vacate(seen_ids_[old]);
  if (!usage_status) {
    StepDecision d;
    d.error = Error{"scheduling cycle: " + usage_status.error().message, usage_status.error().code, usage_status.error().field};
    return d;
  }
  seen_ids_.assign(v.running.begin(), v.running.begin() + static_cast<std::ptrdiff_t>(n_running));
  seen_versions_.assign(v.running_versions.begin(), v.running_versions.begin() + static_cast<std::ptrdiff_t>(n_running));
  // The cycle reads a running job's priority only to choose victims and the order of elastic grows,
  // its last checkpoint only to price a victim, and its estimate only for backfill.
  const bool refresh = refresh_priority || p_.preempt || refresh_estimate;
  for (std::size_t at = 0; refresh && at < slots_.size(); ++at) {
    Slot& slot = slots_[at];
    scheduler::RunningJob& rj = running_[at];
    if (refresh_priority) {
      // order_key's LAS queue of a running job, from the slot: attained service grows at the
      // segment's rate (a running job is never starving).
      if (!las) rj.priority = order_key(p_, v, slot.job);
      else if (v.now >= slot.next_priority) rj.priority = las_priority(slot, v.now);
    }
    if (p_.preempt && v.now >= slot.next_checkpoint) rj.last_checkpoint = last_checkpoint(slot, v.now);
    if (refresh_estimate) rj.runtime_estimate = std::max<Seconds>(1, slot.clock.expected_end(v.now) - slot.clock.seg_start);
  }
  pending_.clear();
  pending_ids_.clear();
  for (std::uint32_t j : v.pending) {
    const JobState& s = v.state[j];
    if (s.not_before > v.now) continue;  // the cycle would keep it waiting too; skip the copy
    const SimJob& job = v.jobs[j];
    scheduler::PendingJob pj;
    pj.job.name = job.name;
    pj.job.queue = named_queues ? (job.queue.empty() ? kDefaultQueue : job.queue) : one_queue;
    pj.job.priority = order_key(p_, v, j);
    pj.job.submit_time = job.submit;
    const GangGroup& g = s.spec.groups[0];
    pj.job.groups.push_back(CompiledGroup{g.name, g.replicas, g.min_replicas, g.request, {}});
    pj.job.topology = s.spec.topology;
    pj.runtime_estimate = job.runtime_estimate();
    pj.preemptible = job.preemptible;
    pj.restart_cost = job.restart_cost;
    pj.checkpoint_interval = job.checkpoint_interval;
    pending_.push_back(std::move(pj));
    pending_ids_.push_back(j);
  }
  StepDecision d;
  auto decisions = scheduler::run_cycle(state, running_, pending_, queues_, v.now, options_);
  if (!decisions) {
    d.error = Error{"scheduling cycle: " + decisions.error().message, decisions.error().code, decisions.error().field};
    return d;
  }
  for (const scheduler::Eviction& e : decisions->evictions) {
    const std::uint32_t job = slots_[e.running].job;
    if (e.whole) d.evict.push_back(job);
    else d.shrink.push_back({job, e.tasks});
  }
  for (const scheduler::Start& st : decisions->starts) {
    Start s{pending_ids_[st.pending], {}};
    std::uint32_t replica = 0;
    for (const scheduler::RunningTask& t : st.tasks) s.tasks.push_back({0, replica++, t.assignment});
    d.starts.push_back(std::move(s));
  }
  for (const scheduler::Grow& g : decisions->grows) {
    Start s{slots_[g.running].job, {}};
    std::uint32_t replica = 0;
    for (const scheduler::RunningTask& t : g.tasks) s.tasks.push_back({0, replica++, t.assignment});
    d.grows.push_back(std::move(s));
  }
  for (const scheduler::Waiting& w : decisions->waiting)
    if (w.outcome.verdict == Verdict::kInfeasible) d.reject.push_back(pending_ids_[w.pending]);
  return d;
}

}  // namespace

SchedulerStep make_cycle_step(const PolicyConfig& policy, const SimCluster& cluster, const ClusterState& /*state*/) {
  auto step = std::make_shared<CycleStep>(policy, cluster);
  return [step](ClusterState& state, const StepView& v) { return (*step)(state, v); };
}

}  // namespace gpusched::sim::detail
