// gpusched/scheduler/backfill.hpp — reservations and backfill from runtime estimates.
//
// What it is for. A 64-GPU gang waits behind a stream of 1-GPU jobs: whenever one GPU frees, a small
// job takes it, and the gang never sees 64 free at once (kueue#8309, KAI#1969: no Kubernetes
// scheduler has time-based backfill; Slurm and Flux do). Backfill fixes it with the jobs' runtime
// estimates: the blocked gang gets a *reservation* — concrete nodes and GPUs, and a start time when
// enough running work will have ended — and smaller jobs may start now only if they do not delay it:
// they end before the reservation begins, or they use resources the reservation does not.
//
// The two classic variants (Mu'alem & Feitelson, "Utilization, predictability, workloads and user
// runtime estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001):
//   EASY          only the first blocked job (the queue head) gets a reservation; any later job may
//                 start now if it does not delay that one reservation (it may delay the others);
//   conservative  every blocked job, in priority order, gets the earliest reservation that delays no
//                 earlier one; a job starts now when its earliest reservation is now.
// EASY starts more jobs now; conservative gives every job a predictable start (tests/scheduler/
// backfill_test.cpp has the paper's small example where the two differ). `kNone` is plain FCFS:
// jobs start in order while they fit, and from the first that does not, everyone waits.
//
// Slurm's knobs (sched_config: SchedulerParameters), with Slurm's defaults:
//   window      bf_window: how far ahead reservations are looked for (Slurm: 1 day); a job whose
//               earliest start lies beyond now + window gets no reservation (reason kBeyondWindow);
//   resolution  bf_resolution: the time grid (Slurm: 60 s), absolute like Slurm's: the multiples
//               of `resolution`. Expected ends of running work are rounded *up* to it (Slurm rounds
//               down), so resources are assumed held slightly longer, never shorter; an end does
//               not move with `now`, so a scheduler session keeps them rounded between cycles;
//   depth       bf_max_job_test: how many blocked jobs are tested (Slurm: 500); the rest wait with
//               reason kBeyondDepth, untested.
//
// The availability profile. A running job ends at start_time + runtime_estimate (unknown estimate:
// never, within the window). A job already past its estimate is assumed to end at the first grid
// point after now, and, since each cycle computes its plan afresh, keeps being extended step by
// step for as long as it runs. That keeps its resources held in every plan: no job is ever
// started on them, and a reservation that needs them is planned for when it can really begin, while
// the reservations on other resources are planned as if it did not exist (test "a job past its
// estimate does not break others' reservations").
//
// How a start time is found. The candidate times are now and every time something is expected to end
// (a running task, or a job started or reserved by this plan), within the window. A gang fits at t
// for its duration d if it places, with the library's own gang placement (gang/gang.hpp, dry run), on
// the one ClusterState as it will be during [t, t + d):
//   - the running tasks that end by t are released (journaled: release_journaled, undone by
//     rollback, so nothing is copied and the state is left exactly as it was);
//   - every job this plan started or reserved whose interval overlaps [t, t + d) is reserved again on
//     its own nodes and GPUs. Two of them that overlap [t, t + d) but not each other may hold the same
//     resources at different times; the second then takes what is left of what it held (clamped),
//     so the profile can only overestimate use: a placement found here is free for the whole
//     interval when the estimates hold. (A MIG instance of the second is then skipped: its GPU's
//     slices are held by the first; see "Limits".)
// Running work only ends over time, so the most it holds during [t, t + d) is what it holds at t.
// A job this plan starts now holds its resources during [now, now + d) for the jobs after it, like a
// reservation that begins now.
//
// Cost. These keep a plan of depth 500 on 10,000 nodes cheap (benchmarks/README.md,
// "Backfill"):
//   - a necessary condition checked before any state is touched: the whole idle GPUs per node between
//     the plan's time points (idle now, plus what running work frees, minus what the plan's own jobs
//     hold; exact for whole GPUs, since nothing changes between two of them), summed per task size,
//     rule out the times at which a gang's groups cannot have enough nodes; and the free GPU share now
//     plus what running work frees by t;
//   - the state of "now" is `state` itself (jobs started by the plan are reserved on it); later times
//     are tested on up to eight what-if copies, each a cursor over the running tasks sorted by end:
//     moving a cursor forward releases the tasks ending in between, back is a rollback, and a new
//     copy is made when that is cheaper than walking one (a copy costs about 1,000 releases). Until
//     the plan starts a job, `state` itself is walked that way (journaled, rolled back), so a plan
//     that starts nothing, like the scheduling cycle's one-job guards, copies nothing;
//   - before a test overlays the plan's jobs, the GPU share free at t less what the jobs active at t
//     hold must cover the gang's, and so must the share the overlay would leave, computed per GPU
//     without touching the state (the claims on a GPU take min(free, their sum));
//   - for a gang of whole-GPU tasks, the tasks of each group's size that the nodes' idle GPUs could
//     still hold once the overlay took the claims: the state's idle buckets less the idle GPUs the
//     claims would take a share of, node by node (free GPUs scattered over nodes pass the share
//     check; a third of the ITP-04 replay's placements at later times failed so);
//   - one dry-run gang placement per test that passes the bounds;
//   - a caller that wants the starts only (BackfillOptions::starts_only, the scheduling cycle's
//     CycleDetail::kActions) gets a plan that stops after the last job that could start now by the
//     counts above, against the claims made so far that begin before it would end (checked again
//     as claims come; they only take more). A job's start depends only on the jobs before it, so
//     the reservations after that one decide nothing now. In the contended ITP-04 conservative
//     replay, most blocked jobs could fit the free GPUs but not beside the reservations ahead of
//     them: its plans placed 234,000 jobs where the last start needed 207,000, and 2.3 M with
//     every reservation (918,000 counting the free GPUs without the claims).
//
// Limits. Estimates are trusted (jobs that overrun are handled as above; jobs that end early free
// resources the next cycle's plan uses). MIG tasks are reserved like any task, but two overlapping
// reservations on one MIG GPU at different times are not merged (the second's instance is skipped).
//
// Thread safety: plan_backfill changes `state` while it plans and restores it before returning (its
// journal ends where it found it; copies made for later times are dropped): one thread per state.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusched/core/outcome.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/scheduler/preemption.hpp"
#include "gpusched/scheduler/detail/shape_key.hpp"

namespace gpusched::scheduler {

// An end time that never comes (an unknown estimate).
inline constexpr Seconds kForever = std::numeric_limits<Seconds>::max();

enum class BackfillMode : std::uint8_t { kNone, kEasy, kConservative };
std::string_view backfill_mode_name(BackfillMode mode);

struct BackfillOptions {
  BackfillMode mode = BackfillMode::kEasy;
  Seconds window = 86'400;   // bf_window (Slurm's default: 1440 minutes)
  Seconds resolution = 60;   // bf_resolution, > 0
  std::size_t depth = 500;   // bf_max_job_test
  GangOptions placement;     // how gangs are placed (policy, effort); dry_run is forced
  // Reasons for the jobs that wait. false: their BackfillWait records carry no reasons, which saves
  // the placements that only explain (the starts and reservations are the same).
  bool explain = true;
  // Only the starts are wanted (with explain false): the plan stops after the last job that could
  // start now by counts (its GPU share and its whole-GPU tasks' idle GPUs free beside the plan's
  // claims so far, detail::may_fit_by_counts), and the jobs after it get no reservation and no
  // waiting record. The starts are the same: whether a job starts depends only on the jobs before
  // it, and one that cannot start now by the counts cannot start now at all.
  bool starts_only = false;
};

// A job that waits, in priority order, with its expected run time.
struct BlockedJob {
  const GangSpec* spec = nullptr;
  Seconds runtime_estimate = -1;  // <= 0: unknown (it runs for ever)
};

// A job that may start now: where, and until when it is expected to run (kForever: unknown).
struct BackfillStart {
  std::size_t job = 0;  // index into the blocked jobs given
  Seconds end = kForever;
  std::vector<TaskPlacement> placement;
};

// A promise: the job's gang on these nodes and GPUs from `start` (> now) until `end`.
struct Reservation {
  std::size_t job = 0;
  Seconds start = 0;
  Seconds end = kForever;
  std::vector<TaskPlacement> placement;
  // The distinct nodes of the placement, ascending.
  std::vector<NodeId> nodes() const;
};

// A job neither started nor reserved, and why: kNotNow with kReservedForOther (subject: the blocked
// index of the reservation it would delay), kBeyondWindow, kBeyondDepth, kBehindStrictHead (mode
// kNone) or the gang placement's reasons; kInfeasible (it never fits this cluster) or kInvalid.
struct BackfillWait {
  std::size_t job = 0;
  Verdict verdict = Verdict::kNotNow;
  std::vector<Reason> reasons;
};

struct BackfillPlan {
  std::vector<BackfillStart> startable;    // in blocked order
  std::vector<Reservation> reservations;   // in blocked order
  std::vector<BackfillWait> waiting;       // in blocked order
  std::uint64_t placements_tried = 0;      // dry-run gang placements
  std::size_t time_points = 0;             // distinct candidate times known to the profile
  std::uint64_t cursor_steps = 0;          // tasks released or restored moving the profile's cursor
  std::uint64_t overlaid_tasks = 0;        // tasks of started/reserved jobs re-taken for a test
};

// Plans starts and reservations for `blocked` (highest priority first) at time `now`, given the
// running jobs (their tasks are allocated on `state`; start_time and runtime_estimate give their
// expected ends). Errors name the field: options.resolution <= 0, options.window < 0,
// blocked[i].spec null. `state` is left exactly as it was.
Result<BackfillPlan> plan_backfill(ClusterState& state, std::span<const RunningJob> running,
                                   std::span<const BlockedJob> blocked, Seconds now,
                                   const BackfillOptions& options = {});

// When running job `job` is expected to end, as the profile sees it at `now`: its estimated end
// rounded up to a multiple of `resolution`, and no earlier than the first multiple after now (past
// its estimate); unknown: kForever.
Seconds expected_end(const RunningJob& job, Seconds now, Seconds resolution);

namespace detail {
// One task that frees its resources at `end`, with what the profile's bounds read of it copied in:
// a plan reads every release once or twice (the share prefix, the idle-GPU bound), and following
// the pointer into the caller's jobs for each was most of that time (perf of a one-event cycle at
// 10,000 nodes and 50,000 running tasks).
struct ReleaseEntry {
  Seconds end = 0;
  const TaskAssignment* assignment = nullptr;
  std::int64_t milli = 0;        // the GPU share it holds (MIG instances: 0)
  NodeId node = 0;               // assignment->node
  std::int32_t whole_gpus = -1;  // the GPUs it touches; -1: a MIG instance (the idle-GPU bound skips it)
  std::uint32_t job = 0;         // its job's index in the caller's running list
};

// Whether a release ends after t: the comparator that finds, in releases sorted by end, the first
// one still running at t (std::upper_bound).
inline bool ends_after(Seconds t, const ReleaseEntry& e) { return t < e.end; }

// Calls f(end) once per distinct end of `releases` (sorted by end), in order. On the grid of
// `bf_resolution` many releases share an end: the next end is found by galloping (1, 2, 4, ...
// entries ahead, then a binary search), not by visiting every release of the current one.
template <typename F>
void for_each_end(std::span<const ReleaseEntry> releases, F&& f) {
  for (std::size_t i = 0; i < releases.size();) {
    const Seconds end = releases[i].end;
    f(end);
    if (i + 1 == releases.size() || releases[i + 1].end != end) {  // (at resolution 1 most ends are distinct)
      ++i;
      continue;
    }
    std::size_t lo = i + 1, step = 1;  // releases[lo].end == end
    while (lo + step < releases.size() && releases[lo + step].end == end) {
      lo += step;
      step *= 2;
    }
    const std::size_t hi = std::min(lo + step, releases.size());
    i = static_cast<std::size_t>(std::upper_bound(releases.begin() + static_cast<std::ptrdiff_t>(lo),
                                                  releases.begin() + static_cast<std::ptrdiff_t>(hi), end, ends_after) -
                                 releases.begin());
  }
}

// A plan's releases as two lists sorted by end, read as their merge (on equal ends the kept ones
// first, as std::merge orders them): the running work, kept by a session across cycles or made by
// the one-shot call, and the few tasks this cycle started. Merging them into one list copied the
// 50,000 kept releases for every plan after a start (a fifth of a one-event cycle at 10,000 nodes).
struct ReleaseLists {
  std::span<const ReleaseEntry> kept, more;

  // A position in the merged order: the first k kept and m more come before it; the kept ones
  // before `limit` come before more[m] (so that stepping through them is one comparison).
  struct Cursor {
    std::size_t k = 0, m = 0, limit = 0;
    std::size_t position() const { return k + m; }
  };
  Cursor start() const { return {0, 0, limit_from(0, 0)}; }
  // How many releases end by t: the position after them.
  std::size_t count_by(Seconds t) const {
    return static_cast<std::size_t>(std::upper_bound(kept.begin(), kept.end(), t, ends_after) - kept.begin()) +
           static_cast<std::size_t>(std::upper_bound(more.begin(), more.end(), t, ends_after) - more.begin());
  }
  // The release at c (null at the end), and c moved past it.
  // (Past the last of `more`, limit is the end of `kept`.)
  const ReleaseEntry* at(const Cursor& c) const {
    if (c.k < c.limit) return &kept[c.k];
    return c.m < more.size() ? &more[c.m] : nullptr;
  }
  void advance(Cursor& c) const {
    if (c.k < c.limit) {
      ++c.k;
    } else if (c.m < more.size()) {
      ++c.m;
      c.limit = limit_from(c.k, c.m);
    }
  }
  // The merged order as consecutive runs, each a span of one list: a loop over them is a plain
  // loop over spans (through a per-release callback, the idle-GPU bound's walk over 50,000
  // releases ran 5-10 % more instructions).
  std::vector<std::span<const ReleaseEntry>> runs() const {
    std::vector<std::span<const ReleaseEntry>> out;
    std::size_t k = 0;
    for (std::size_t m = 0; m < more.size(); ++m) {
      const std::size_t stop = limit_from(k, m);
      if (stop > k) out.push_back(kept.subspan(k, stop - k));
      out.push_back(more.subspan(m, 1));
      k = stop;
    }
    if (k < kept.size()) out.push_back(kept.subspan(k));
    return out;
  }

  // The end of the kept ones from k that come before more[m] (all of them past the last).
  std::size_t limit_from(std::size_t k, std::size_t m) const {
    if (m >= more.size()) return kept.size();
    return static_cast<std::size_t>(std::upper_bound(kept.begin() + static_cast<std::ptrdiff_t>(k), kept.end(), more[m].end, ends_after) -
                                    kept.begin());
  }
};

// Conservative backfill: what the plan learned of a job shape. A job of a simple shape (shape_key),
// `replicas` tasks and duration d found its earliest start T (kForever: none within the window), so
// it fits at no time in [now, T): not at the time points it tested, nor between two of them (the
// state there is that of the point before, with at least the same claims overlapping). A later job
// asking at least as much (the same models, at least as much per task, at least as many tasks:
// ShapeKey::dominated_by) that runs at least d fits at none of those times either: it meets the same
// running work and more claims (the plan only adds them, a longer interval overlaps a superset, and
// each overlay takes min(free, held)), so its placement sees no more free capacity. Its tests then
// begin at T. The same monotonicity as EASY's failed shapes (plan_backfill_on) and the cycle's memos (cycle.hpp).
// ITP-04 contended conservative: 40.6 -> 25.4 s (benchmarks/README.md, "The plan's shape memo").
class ShapeMemo {
 public:
  // The earliest start a job of this shape, replicas and duration can have (now when nothing is known).
  Seconds not_before(const std::optional<ShapeKey>& key, std::int64_t replicas, Seconds duration, Seconds now) const {
    Seconds out = now;
    if (!key) return out;
    for (const Group& g : groups_)
      if (key->dominated_by(g.key) && replicas >= g.replicas)
        for (const Entry& e : g.entries)
          if (e.duration <= duration) out = std::max(out, e.earliest);
    return out;
  }
  // A job of this shape found its earliest start (kForever: none). An entry that binds fewer jobs (a
  // longer duration) with no later start is dropped: the new one rules out all it did.
  void record(const std::optional<ShapeKey>& key, std::int64_t replicas, Seconds duration, Seconds earliest) {
    if (!key) return;
    const std::size_t at = group_of(*key, replicas);
    Group& g = at < groups_.size() ? groups_[at] : groups_.emplace_back(Group{*key, replicas, {}});
    std::erase_if(g.entries, [&](const Entry& e) { return e.duration >= duration && e.earliest <= earliest; });
    g.entries.push_back({duration, earliest});
  }

 private:
  struct Entry {
    Seconds duration = 0, earliest = 0;
  };
  struct Group {
    ShapeKey key;
    std::int64_t replicas = 0;
    std::vector<Entry> entries;
  };
  std::size_t group_of(const ShapeKey& key, std::int64_t replicas) const {
    std::size_t g = 0;
    while (g < groups_.size() && !(groups_[g].key == key && groups_[g].replicas == replicas)) ++g;
    return g;
  }
  std::vector<Group> groups_;
};

// A plan resumed where an earlier one stopped. An earlier plan at t0 over blocked jobs B, none of
// which it started, found their reservations and waiting records and learned its memos. A plan at a
// later now over B followed by more jobs, with nothing else changed (the same state, running work and
// B in the same order; no time point of the earlier plan in (t0, now] nor past its window's end and
// within the new one's), finds the same for B: every time it tests for a job of B is the same, and
// at now a job of B meets the same state and no fewer claims (all of them reserved later than now),
// so it fits no more than it did at t0. The later plan then begins with the jobs after B. A
// scheduling session keeps one across an arrival-only instant (cycle.hpp, CyclePrefix).
struct PlanPrefix {
  std::size_t jobs = 0;                   // how many blocked jobs it covers (the first ones)
  std::vector<Reservation> reservations;  // theirs, in blocked order
  std::vector<BackfillWait> waiting;      // theirs, in blocked order
  ShapeMemo memo;                         // conservative
  std::vector<std::pair<ShapeKey, Seconds>> failed_now;  // EASY
  std::optional<std::size_t> fcfs_head;   // kNone: the first job that did not start
};

// When running job `job` ends by its estimate, before the profile's rounding (start_time +
// runtime_estimate, kForever past the end of time); nullopt without an estimate. expected_end is a
// non-decreasing function of it at any `now`, so running jobs in this order are in profile order.
inline std::optional<Seconds> estimated_end(const RunningJob& job) {
  if (job.runtime_estimate <= 0) return std::nullopt;
  Seconds out = 0;
  return __builtin_add_overflow(job.start_time, job.runtime_estimate, &out) ? kForever : out;
}
}  // namespace detail

}  // namespace gpusched::scheduler

#if GPUSCHED_HEADER_ONLY
#include "gpusched/scheduler/detail/backfill_impl.hpp"
#endif
