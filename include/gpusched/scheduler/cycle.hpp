// gpusched/scheduler/cycle.hpp — one scheduling cycle: what starts, where, what is evicted, what
// shrinks or grows, and why every other job waits.
//
// What it is for. An orchestrator does not ask "where does this one job fit"; every cycle it asks
// "given what runs and what waits, what starts now, where, what is evicted, what shrinks, and who is
// promised what". `run_cycle` answers that in one call over the one model:
//
//   ClusterState& state             the cluster, with every running task reserved on it;
//   span<const RunningJob> running  what runs (preemption.hpp: start, checkpoints, restart cost, ...);
//   span<const PendingJob> pending  what waits (a CompiledJob plus runtime estimate and backoff);
//   span<const QueueConfig> queues  the fairness family's queue tree and Kueue-style quotas (usage is
//                                   computed from `running`; the configs' own `usage` is ignored);
//   now, CycleOptions, and the nominations the previous cycle made (see "holding" below).
//
// The answer, `CycleDecisions`: starts (job -> task -> node, GPUs or MIG instance), evictions (whole
// gangs, with the reason and the milli-GPU-seconds they lose), elastic shrinks and grows,
// reservations (from the backfill stage), nominations, and every job left pending with a
// structured Outcome (core/outcome.hpp).
//
// The stages, in order (DESIGN.md's admit -> place -> preempt -> reserve/backfill -> grow/shrink):
//
//   0. Nominations of the previous cycle are honoured first: a preemptor whose victims were evicted
//      takes the capacity they freed before anyone else is considered (no loop where the victims
//      come back and take it, kueue#13662).
//   1. Admission that places, by the fairness family's one admission rule (fairness/
//      admission_rule.hpp, which FairSharePlanner::plan uses too). Queues are served in H-DRF order
//      (fairness/hdrf.hpp), queues whose head fits its nominal quota before borrowers (Kueue), and
//      within a queue by priority, then submit time, then input order. The head job's quota
//      is checked per flavor (GPU model; the queue's flavor order, nominal before borrowing) and the
//      job is admitted only if its gang places on that flavor's GPUs (place_gang: topology, MIG,
//      shares, whole GPUs). If it does not place, nothing was charged to its queue and the cycle goes
//      on: a StrictFIFO queue stops at its head (its later jobs wait, kBehindStrictHead), a
//      BestEffortFIFO queue tries its next job.
//   2. Preemption, for a head that does not place: find_victims (preemption.hpp) over the running
//      jobs the rules allow — lower priority in its own queue (or lower-or-equal-and-newer); Kueue's
//      reclaimWithinCohort (a job within its queue's nominal quota reclaims from queues of its cohort
//      that borrow); fair-share reclaim (from a queue whose weighted GPU share, after losing the
//      victim, stays at or above the preemptor's queue's share after it starts; a queue within its
//      nominal quota is never reclaimed from: nominal quota is the owner's). Victims are whole
//      gangs, elastic gangs shed tasks above their minimum first, the preemptor's placement is
//      simulated with the victims removed, and its quota is re-checked with theirs returned.
//   3. Blocked jobs go to backfill (scheduler/backfill.hpp): reservations on concrete nodes from the
//      runtime estimates, and the later jobs that may start now without delaying them. The first job
//      that blocks in stage 1 gets its reservation at once (plan_backfill over that one job), and its
//      nodes are closed (cordoned, reopened before returning) to every later job of stage 1 and to
//      elastic growth, so the small jobs behind it cannot take what it waits for (kueue#8309);
//      after stage 4 the blocked jobs, in cycle order, are planned together (EASY or conservative)
//      and those that fit without delaying the reservations start now (short jobs on the reserved
//      nodes that end before the reservation begins).
//   4. Elastic grow: after every pending job had its chance in stage 1, running elastic gangs grow
//      into idle capacity up to their maximum, within their queue's quota, off the reserved nodes.
//      (It runs before stage 3's final plan, which then only places jobs that fit before a
//      reservation begins.)
//
// Why there are no loops. A job is evicted only in the cycle its preemptor is placed (its placement
// is reserved at once), and each rule is one-way: priority is a strict order; "newer" compares
// submit times (a strict order); cohort reclaim needs the preemptor within nominal quota and the
// victim's queue borrowing, which the preemptor's start cannot make its own queue; fair-share reclaim
// needs the victim's queue to stay at least as far above its share as the preemptor's will be.
// Rules of different kinds can still point opposite ways once the queues' usage has changed (a
// cohort reclaim one way, later a fair-share reclaim the other), so a requeued job also remembers
// who evicted it (PendingJob::evicted_by) and never evicts them back.
// tests/scheduler/cycle_property_test.cpp checks this over random workloads and many cycles.
//
// Holding freed capacity. With `preemptor_starts_next_cycle` (evictions take time: a graceful
// termination) the preemptor does not start in the cycle that evicts; its placement is a
// `Nomination` in the decisions, the caller passes it back to the next cycle, and stage 0 starts it
// there before anyone else is placed. Otherwise (the default) the victims' eviction and the
// preemptor's start are decided together.
//
// Applying. `run_cycle` changes the state as it decides (each change journaled, never a rebuilt or
// copied state): with `dry_run` it rolls every change back before returning, and `apply(state,
// decisions)` later applies the same decisions in one call. `advance(...)` updates a caller's
// running and pending lists the same way (the simulator and the tests use it).
//
// Deterministic: the same inputs give the same decisions (no clock, no random choice, ties by index).
//
// Threads: run_cycle, apply, on_failure change the state (a dry run too: it reserves as it decides,
// then rolls back), so one thread per state at a time (copy the state per thread for what-ifs side by
// side); the spans they take are only read. A RunningUsage belongs to its caller like the running
// list it sums. advance and apply_failure change only the caller's lists.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusched/core/outcome.hpp"
#include "gpusched/fairness/admission_rule.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/fairness/hdrf.hpp"
#include "gpusched/fairness/quota.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/scheduler/backfill.hpp"
#include "gpusched/scheduler/preemption.hpp"

namespace gpusched::scheduler {

// A job waiting to start.
struct PendingJob {
  CompiledJob job;               // compile_job against the state: queue, priority, submit time, groups
                                 // (replicas = the most, min_replicas = the least for an elastic group)
  Seconds runtime_estimate = 0;  // expected run time (0 = unknown): backfill
  Seconds not_before = 0;        // requeued after a failure: not started before this time (backoff)
  // Carried into the RunningJob when it starts (advance / running_from_start).
  bool preemptible = true;
  Seconds restart_cost = 0;
  Seconds checkpoint_interval = 0;
  std::int32_t restarts = 0;
  // The jobs that evicted it (advance() appends the preemptor when it requeues an evicted job). It
  // never evicts them back: the last guard against a pair preempting each other back and forth
  // when the queues' usage has changed in between (a reclaim one way, a reclaim the other way).
  std::vector<std::string> evicted_by;
};

// Kueue's reclaimWithinCohort (core/preemption_policy.hpp; a queue may set its own).
using gpusched::CohortReclaim;

// The running jobs' usage per queue, kept by a caller between cycles (optional: CycleOptions::usage).
// Without it every cycle with queues sums the tasks of every running job, O(running tasks) per
// cycle: most of a cycle's time where few jobs change between cycles (a simulator on 10,000 nodes
// with ~20,000 running jobs, benchmarks/README.md). With it a cycle reads the sums, O(queues x GPU
// models). The caller adds a job's tasks when it starts or grows and subtracts them when it ends, is
// evicted or shrinks, against the state the cycle runs on (GPU models by its registry). The sums must
// be those of the `running` given to the cycle: builds with assertions (no NDEBUG) check it and
// refuse the cycle (kInconsistent) when they differ.
class RunningUsage {
 public:
  struct Queue {
    std::string name;
    std::int64_t jobs = 0;  // jobs added less jobs subtracted
    std::int64_t cpu = 0, memory = 0;
    std::vector<std::int64_t> gpu_milli;  // by GpuModelId: of each task's first GPU, as the cycle counts
  };
  // Adds (sign +1) or subtracts (sign -1) the tasks a running job of queue `queue` holds (a job's
  // count changes with `count_job`: false for tasks a job gains or sheds while it keeps running).
  // Refused, changing nothing, for another sign or a sum beyond 64 bits (kOverflow).
  Status add(const ClusterState& state, std::string_view queue, std::span<const RunningTask> tasks, int sign = 1,
             bool count_job = true);
  Status add(const ClusterState& state, const RunningJob& job, int sign = 1) { return add(state, job.queue, job.tasks, sign); }
  std::span<const Queue> queues() const { return queues_; }
  void clear() { queues_.clear(); }

 private:
  std::vector<Queue> queues_;  // in order of first use (a few queues: found by a linear scan)
};

// The order of the pending jobs within a queue, when it is not the default (priority, higher first;
// then submit time; then submission): a key per job, lower first, the default order breaking equal
// keys (docs/policies.md, "Job order"). Shortest-estimate-first, smallest-gang-first, a deadline: any
// function of the job. A session takes a job's key when it joins its queue and again when its priority
// or runtime estimate changes, so the key must depend on the job's facts only (not on the clock).
// Admission across queues (fair share) and who may preempt whom (priority) do not change.
class JobOrder {
 public:
  virtual ~JobOrder() = default;
  virtual std::string_view name() const = 0;
  virtual std::int64_t key(const PendingJob& job) const = 0;
  // User code that failed (as PlacementPolicy::failure): the cycle is then an error keeping nothing.
  virtual std::string_view failure() const { return {}; }
  // Forgets a failure once its owner has reported it, so that a kept session asks the order again.
  virtual void clear_failure() const {}
};

namespace detail {
// Whether pending job a (index ia, order key ka) goes before b in their queue.
inline bool queue_order_before(const PendingJob& a, std::size_t ia, std::int64_t ka, const PendingJob& b,
                               std::size_t ib, std::int64_t kb) {
  if (ka != kb) return ka < kb;
  if (a.job.priority != b.job.priority) return a.job.priority > b.job.priority;
  if (a.job.submit_time != b.job.submit_time) return a.job.submit_time < b.job.submit_time;
  return ia < ib;
}
}  // namespace detail

struct CycleOptions {
  // The order within each queue; nullptr = the default (priority, submit time, submission).
  const JobOrder* order = nullptr;
  // The running jobs' usage per queue, when the caller keeps it (see RunningUsage); null: summed.
  const RunningUsage* usage = nullptr;
  GangOptions placement;           // how gangs are placed (policy, effort); dry_run is managed here
  PreemptionOptions preemption;    // within-queue rule, min runtime, checkpoint-aware cost
  bool preempt = true;             // stage 2 at all
  CohortReclaim reclaim_within_cohort = CohortReclaim::kAny;
  bool fair_share_reclaim = true;  // reclaim between queues by weighted GPU share
  // Without queues, the one implicit queue is StrictFIFO (its first job that does not start blocks
  // the rest, Kueue's StrictFIFO); otherwise BestEffortFIFO. With queues each queue says so itself.
  bool strict_fifo = false;
  // A requeued job never evicts the jobs that evicted it (PendingJob::evicted_by): the last guard
  // against a pair preempting each other back and forth (see "Why there are no loops"). false: it
  // may, for policies whose priorities move on purpose (Tiresias' LAS, where a promoted job takes
  // its GPUs back; the simulator's policies).
  bool never_evict_back = true;
  // At most this many preemption searches per cycle (each is a few simulated placements).
  std::size_t max_preemption_attempts = 32;
  bool preemptor_starts_next_cycle = false;  // evictions take time: the preemptor is nominated
  bool grow_elastic = true;        // stage 4
  // Stage 3 (scheduler/backfill.hpp): kEasy (the default) reserves the first blocked job and
  // protects its reservation for the rest of the cycle; kConservative reserves every blocked job up
  // to `depth` (only the first is protected in stage 1, see below); kNone: no reservations, no
  // backfill (BestEffortFIFO starts whatever fits, as Kueue does).
  BackfillOptions backfill;
  bool dry_run = false;            // decide, then roll every change back
};

// Why a job is evicted or shrunk.
enum class EvictionReason : std::uint8_t {
  kPriority,       // a higher-priority (or older equal-priority) job of its queue
  kCohortReclaim,  // its queue borrowed quota the preemptor's queue lent to the cohort
  kFairShare,      // its queue is above its fair share, the preemptor's below
  kFailure,        // a node or GPU it ran on failed (on_failure)
};
std::string_view eviction_reason_name(EvictionReason r);

struct Start {
  std::size_t pending = 0;         // index into the pending jobs given
  std::string job;
  std::vector<RunningTask> tasks;  // request and assignment of every task, by group then replica
  std::vector<std::int32_t> placed_per_group;
  int gpu_dim = -1;                // the flavor charged (fairness dimension), -1 none
  bool borrowed = false;           // admitted by borrowing from its cohort
  bool preempted = false;          // started on capacity freed by evictions
  bool nominated = false;          // honoured a nomination of the previous cycle
  bool backfilled = false;         // started by the backfill stage
};

struct Eviction {
  std::size_t running = 0;         // index into the running jobs given
  std::string job;
  std::string for_job;             // the preemptor ("" for a failure)
  EvictionReason reason = EvictionReason::kPriority;
  bool whole = true;               // false: an elastic shrink (tasks above its minimum)
  std::vector<std::uint32_t> tasks;          // indices of its tasks released
  std::vector<TaskAssignment> released;      // their assignments (what apply releases)
  std::int64_t lost_milli_gpu_seconds = 0;   // work since its last checkpoint
  std::int64_t restart_milli_gpu_seconds = 0;
};

struct Grow {
  std::size_t running = 0;
  std::string job;
  std::vector<RunningTask> tasks;  // the tasks added (RunningTask::group: the group each joins)
  std::vector<std::string> groups;  // the job's group names, for a job of several (RunningJob::groups)
};

// A promise from the backfill stage: the job's gang on these nodes from `start` (expected).
struct CycleReservation {
  std::size_t pending = 0;
  std::string job;
  Seconds start = 0;               // when it is expected to start
  Seconds end = 0;                 // and to end (INT64_MAX: unknown runtime)
  std::vector<NodeId> nodes;
};

// A preemptor whose victims were evicted: the capacity is held for it until it starts.
struct Nomination {
  std::string job;
  std::vector<RunningTask> tasks;  // the placement simulated with the victims removed
  std::vector<std::int32_t> placed_per_group;
  std::vector<std::string> victims;
};

struct Waiting {
  std::size_t pending = 0;
  std::string job;
  Outcome outcome;                 // kNotNow / kInfeasible / kInvalid with structured reasons
  bool preemption_tried = false;
  Verdict preemption = Verdict::kNotNow;  // the victim search's verdict when tried
  std::size_t behind = SIZE_MAX;   // kBehindStrictHead: the head's pending index
};

struct CycleStats {
  std::uint64_t placements_tried = 0;
  std::uint64_t cache_hits = 0;    // jobs refused by an earlier failure of the same shape (placement), or a failed preemption search of a smaller one
  std::size_t preemption_attempts = 0;
  std::size_t resumed = 0;  // pending jobs served by the session's last cycle and not again (CyclePrefix)
};

struct CycleDecisions {
  Seconds now = 0;
  std::vector<Start> starts;
  std::vector<Eviction> evictions;  // whole evictions and elastic shrinks (whole == false)
  std::vector<Grow> grows;
  std::vector<CycleReservation> reservations;
  std::vector<Nomination> nominations;
  std::vector<Waiting> waiting;     // every pending job neither started nor nominated
  CycleStats stats;

  const Start* find_start(std::string_view job) const;
  const Waiting* find_waiting(std::string_view job) const;
};

// The times a cycle runs at: seconds from the caller's epoch, 0 to 2^62 (times a little past it, now
// plus a window or an estimate, then stay far inside 64 bits).
inline constexpr Seconds kMaxCycleTime = Seconds{1} << 62;
// `now` in that range, or the error naming it (kInvalidValue, field "now").
Status check_cycle_time(Seconds now);

// Runs one cycle. Errors (never exceptions) for inputs that cannot be used: `now` outside
// [0, kMaxCycleTime] (kInvalidValue, field "now"), queues the fairness
// family refuses (naming the queue and field), a running job on an unknown queue when queues are
// given. A pending job with a bad request is not an error: it waits with a kInvalid outcome (a gang
// that does not compile; a queue that does not exist or has child queues; a request whose total is
// beyond 64 bits, ReasonKind::kInvalidAmount, as fairness::job_demand sums it).
Result<CycleDecisions> run_cycle(ClusterState& state, std::span<const RunningJob> running,
                                 std::span<const PendingJob> pending, std::span<const fairness::QueueConfig> queues,
                                 Seconds now, const CycleOptions& options = {},
                                 std::span<const Nomination> held = {});

// How much a cycle says. kFull: every pending job left waiting has a record with its reasons (the
// tool's tables, explain). kDecisions: starts, evictions, shrinks, grows, reservations and
// nominations only, plus records for the jobs that can never start as they are (kInfeasible,
// kInvalid); the decisions are the same, without the work of explaining the kNotNow ones (a
// simulator's or an orchestrator's hot path). kActions: kDecisions without the reservations (none
// reported): what to do now and nothing of later, for a caller that acts on the starts, evictions,
// shrinks, grows and nominations only (the simulator). Conservative backfill then plans the blocked
// jobs only as far as the last one that could start now (BackfillOptions::starts_only); the
// decisions are the same.
enum class CycleDetail : std::uint8_t { kFull, kDecisions, kActions };

namespace detail {
// A pending job that did not start, in cycle order; `candidate`: waiting kNotNow on its own account
// (not behind a StrictFIFO head), so the backfill stage may plan it.
struct BlockedPending {
  std::size_t pending = 0;
  bool candidate = false;
};

// What a guard's plan found for a job shape: while the state only loses capacity (no eviction
// since), a job of the same shape and replicas running at least as long cannot start before the
// earliest start found for it (kForever: none within the window, or never), so its plan tests no
// earlier time, or is not made. Blocked jobs of a contended cluster share a few shapes.
struct GuardMemo {
  ShapeKey key;
  std::int64_t replicas = 0;
  Seconds duration = 0, earliest = 0;
};

// A shape whose placement failed in this cycle, and how.
struct FailedShape {
  ShapeKey key;
  Outcome outcome;
};

// What a cycle that decided nothing leaves for the next one of a session, so that an instant where
// jobs only arrived costs what the arrivals can change (issue 30; Slurm's backfill keeps nothing and
// replans every job at every pass). A cycle over the same state, running work and queue at a later
// now, with more jobs at the end of the queue, treats the jobs served here exactly as this one did:
// none fits now on the same state with the same guards (the guards' plans test the same times), and
// the backfill plan over them finds the same (PlanPrefix, which says when); no running job grows
// (none could on the nodes left open then, and the new jobs only take more). It then serves and plans
// only the jobs after them. The session says when the conditions hold (Session::prefix_usable); the
// cycle checks the queue's order itself and resumes only a cycle without queues, preemption,
// nominations or reasons (CycleDetail::kDecisions or kActions; a plan kActions stopped early is
// resumed from where it stopped).
struct CyclePrefix {
  bool ready = false;                   // filled by a committed cycle that decided nothing
  Seconds now = 0;                      // that cycle's
  std::vector<std::size_t> order;       // the queue it served, in order (pending indices)
  std::vector<Waiting> waiting;         // the records serving them wrote (kInfeasible, kInvalid)
  std::vector<BlockedPending> blocked;  // the cycle's state after serving them: what did not start,
  std::size_t guards = 0;               // the guards reserved and the nodes they closed,
  std::vector<NodeId> guard_cordoned;
  std::vector<GuardMemo> guard_memo;    // and its memos,
  std::vector<std::size_t> deferred_guards;  // and the guards not yet needed (CycleRun::guard)
  std::vector<FailedShape> failed;
  bool held_by_head = false;            // a StrictFIFO head blocked the rest of the queue
  CycleStats stats;
  PlanPrefix plan;                      // the backfill plan over the candidates among them
};

// What a scheduler session (scheduler/session.hpp) keeps between cycles and hands to the cycle
// instead of letting it recompute them: per pending job its gang spec and its shape; per queue its members in
// policy order (priority, submit time, pending index); the pending jobs in no queue (a bad spec,
// an unknown or non-leaf queue: they wait kInvalid), ascending; per running job its queue index.
struct CycleKept {
  std::span<const Result<GangSpec>> specs;
  std::span<const std::optional<ShapeKey>> keys;  // shape_key of each spec
  std::span<const std::vector<std::size_t>> members;
  std::span<const std::size_t> unqueued;
  std::span<const std::size_t> running_queue;
  // Every task of the running jobs with an estimate, each at its job's expected end on the cycle's
  // backfill grid (grid_end at the cycle's `now`), by (that end, job index) (nullopt: made by the
  // cycle from the jobs).
  std::optional<std::span<const ReleaseEntry>> releases;
  // More of them in the same order, read with those as one list: the jobs that joined since the
  // session last merged them in.
  std::span<const ReleaseEntry> fresh_releases;
  // The running jobs that may grow (max_tasks > 0), in any order (null: every running job is looked at).
  const std::vector<std::size_t>* elastic = nullptr;
  // The last cycle's prefix (null: none is kept), resumed when `resume` (the session found its
  // conditions met) and filled again by this cycle.
  CyclePrefix* prefix = nullptr;
  bool resume = false;
};

// run_cycle with what a session keeps (null: computed) and how much to say.
Result<CycleDecisions> run_cycle_with(ClusterState& state, std::span<const RunningJob> running,
                                      std::span<const PendingJob> pending, std::span<const fairness::QueueConfig> queues,
                                      Seconds now, const CycleOptions& options, std::span<const Nomination> held,
                                      const CycleKept* kept, CycleDetail detail);
}  // namespace detail

// Applies decisions made with dry_run: releases what the evictions release, reserves the starts and
// grows (a nominated placement is not reserved: the next cycle reserves it first). Refused, changing
// nothing, when a reservation no longer fits.
Status apply(ClusterState& state, const CycleDecisions& decisions);

// The RunningJob a start becomes (start_time = now).
RunningJob running_from_start(const PendingJob& job, const Start& start, Seconds now);

// Updates the caller's lists after the decisions were applied: started jobs move to `running`,
// evicted ones back to `pending` (a job is requeued only if `requeue_of` knows its PendingJob —
// given by name), shrunk and grown jobs change their tasks. Indices in `decisions` refer to the
// lists as they were.
void advance(std::vector<RunningJob>& running, std::vector<PendingJob>& pending, const CycleDecisions& decisions,
             std::span<const PendingJob> requeue_of = {});

// --- failures ------------------------------------------------------------------------------------

struct FailureOptions {
  // Backoff before a restarted job may start again: base * 2^(restarts - 1), at most `max_backoff`
  // (Kubernetes' CrashLoopBackOff doubles from 10 s up to 300 s; Kueue's requeuing backoff doubles
  // from 60 s). Defaults: 60 s doubling, capped at 3600 s.
  Seconds backoff_base = 60;
  Seconds backoff_max = 3600;
  // A node that fails `cordon_after` times within `window` seconds is cordoned (taken out of
  // scheduling until an operator uncordons it). 0 = never.
  std::int32_t cordon_after = 3;
  Seconds window = 3600;
};

// What the caller keeps between failures (no global state): failure times per node name.
struct FailureHistory {
  std::vector<std::pair<std::string, std::vector<Seconds>>> nodes;
};

struct Restart {
  std::size_t running = 0;
  std::string job;
  std::int64_t lost_milli_gpu_seconds = 0;
  std::int64_t restart_milli_gpu_seconds = 0;
  std::int32_t restarts = 0;   // after this failure
  Seconds not_before = 0;      // now + backoff
};

struct FailureResponse {
  std::vector<Eviction> shrinks;   // elastic gangs that lost only tasks above their minimum
  std::vector<Restart> restarts;   // gangs stopped whole, to requeue from their last checkpoint
  std::vector<Eviction> stopped;   // the same gangs as evictions (what was released)
  std::vector<NodeId> cordoned;
};

// A node failed (gpu < 0) or one of its GPUs did: applies the event to the state (fail_node or
// set_gpu_health), releases the tasks of the affected gangs (an elastic gang above its minimum sheds
// the affected tasks if its minimum survives; any other gang is stopped whole), and cordons the node
// after repeated failures. The caller requeues the restarted jobs (PendingJob::not_before,
// restarts) and drops the shed tasks (apply_failure does both on its lists).
Result<FailureResponse> on_failure(ClusterState& state, std::span<const RunningJob> running, NodeId node, int gpu,
                                   Seconds now, FailureHistory& history, const FailureOptions& options = {});

// Updates the caller's lists after on_failure: shrinks drop tasks, restarted jobs leave `running`
// and, when `requeue_of` knows them by name, are appended to `pending` with their backoff.
void apply_failure(std::vector<RunningJob>& running, std::vector<PendingJob>& pending, const FailureResponse& response,
                   std::span<const PendingJob> requeue_of = {});

}  // namespace gpusched::scheduler

#if GPUSCHED_HEADER_ONLY
#include "gpusched/scheduler/detail/cycle_impl.hpp"
#endif
