// The session's decisions equal run_cycle's from scratch, byte for byte, at every cycle of long
// random event sequences (scheduler/session.hpp): every policy and modifier the cycle has (strict
// and best-effort FIFO, priorities, H-DRF queues with quotas and a cohort, fair-share and cohort
// reclaim, EASY and conservative backfill, checkpoint-aware victims, nominations, elastic gangs),
// with arrivals, finishes, cancellations, priority, estimate and start-time changes, node and GPU failures,
// repairs and cordons between cycles. Before every committed cycle the reference is run_cycle on a
// copy of the state over the session's own lists; a plan (dry run) in between must change nothing.
#include <array>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cycle_util.hpp"
#include "test_util.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/scheduler/orders.hpp"
#include "gpusched/scheduler/session.hpp"

using namespace cycle_test;

namespace {

// What a cycle of `detail` is expected to say of run_cycle's decisions: kActions reports no
// reservations.
CycleDecisions as_told(CycleDecisions d, CycleDetail detail) {
  if (detail == CycleDetail::kActions) d.reservations.clear();
  return d;
}

// The decisions as text: what a caller acts on, in order (stats and message texts are not decisions).
std::string decisions_text(const CycleDecisions& d, bool with_not_now) {
  std::ostringstream o;
  const auto tasks = [&](const std::vector<RunningTask>& ts) {
    for (const RunningTask& t : ts) {
      o << " " << t.assignment.node << ":" << t.assignment.gpu_milli << "[";
      for (GpuIndex g : t.assignment.gpus) o << g << ",";
      o << "]" << t.assignment.cpu << "/" << t.assignment.memory;
      if (t.assignment.is_mig()) o << "mig";
    }
  };
  for (const Start& s : d.starts) {
    o << "start " << s.pending << " " << s.job << " g" << s.gpu_dim << " b" << s.borrowed << s.preempted << s.nominated
      << s.backfilled << " per";
    for (std::int32_t n : s.placed_per_group) o << " " << n;
    tasks(s.tasks);
    o << "\n";
  }
  for (const Eviction& e : d.evictions) {
    o << "evict " << e.running << " " << e.job << " for " << e.for_job << " " << eviction_reason_name(e.reason) << " w"
      << e.whole << " lost " << e.lost_milli_gpu_seconds << " restart " << e.restart_milli_gpu_seconds << " tasks";
    for (std::uint32_t t : e.tasks) o << " " << t;
    o << "\n";
  }
  for (const Grow& g : d.grows) {
    o << "grow " << g.running << " " << g.job;
    tasks(g.tasks);
    o << "\n";
  }
  for (const CycleReservation& r : d.reservations) {
    o << "reserve " << r.pending << " " << r.job << " " << r.start << "-" << r.end << " on";
    for (NodeId n : r.nodes) o << " " << n;
    o << "\n";
  }
  for (const Nomination& n : d.nominations) {
    o << "nominate " << n.job;
    tasks(n.tasks);
    o << " victims";
    for (const std::string& v : n.victims) o << " " << v;
    o << "\n";
  }
  for (const Waiting& w : d.waiting) {
    if (!with_not_now && w.outcome.verdict == Verdict::kNotNow) continue;
    o << "wait " << w.pending << " " << w.job << " " << static_cast<int>(w.outcome.verdict) << " p"
      << w.preemption_tried << static_cast<int>(w.preemption) << " behind " << w.behind;
    if (with_not_now)
      for (const Reason& r : w.outcome.reasons)
        o << " (" << static_cast<int>(r.kind) << " " << r.needed << " " << r.available << " " << r.count << " "
          << r.subject << ")";
    o << "\n";
  }
  return o.str();
}

// What the state holds, node by node (a plan must leave it exactly so).
std::string state_text(const ClusterState& s) {
  std::ostringstream o;
  for (NodeId n = 0; n < s.node_count(); ++n) {
    const NodeUsage u = s.usage(n);
    o << n << ":" << u.gpu_milli << "/" << u.cpu << "/" << u.memory << "/" << s.schedulable(n) << s.healthy(n);
    for (GpuIndex g = 0; g < s.gpu_count(n); ++g) o << "," << s.shares().free_milli_if_healthy(n, g);
    o << ";";
  }
  return o.str();
}

std::string lists_text(const Session& s) {
  std::ostringstream o;
  for (const PendingJob& p : s.pending()) o << p.job.name << "@" << p.job.priority << "/" << p.not_before << " ";
  o << "|";
  for (const RunningJob& r : s.running()) o << r.name << "x" << r.tasks.size() << " ";
  o << "|" << s.held().size();
  return o.str();
}

// Job orders of a caller's (CycleOptions::order): fewest GPUs first; shortest estimate first.
struct FewestGpusFirst final : JobOrder {
  std::string_view name() const override { return "fewest-gpus"; }
  std::int64_t key(const PendingJob& p) const override {
    std::int64_t gpus = 0;
    for (const CompiledGroup& g : p.job.groups) gpus += std::int64_t{g.replicas} * g.request.shape.gpus;
    return gpus;
  }
};
struct ShortestFirst final : JobOrder {
  std::string_view name() const override { return "shortest"; }
  std::int64_t key(const PendingJob& p) const override { return p.runtime_estimate; }
};
const FewestGpusFirst kFewestGpusFirst;
const ShortestFirst kShortestFirst;
const NewestFirstVictimOrder kNewestVictimsFirst;  // a victim order (scheduler/orders.hpp)

struct Setup {
  int queues = 0;  // 0: none; 1: one StrictFIFO queue; 2: a cohort of two with quotas; 3: a tree
  CycleOptions options;
};

Setup random_setup(SplitMix64& rng) {
  Setup s;
  s.queues = static_cast<int>(rng.next() % 4);
  CycleOptions& o = s.options;
  o.preempt = rng.next() % 3 != 0;
  o.preemption.within_queue = rng.next() % 2 ? WithinQueue::kLowerPriority : WithinQueue::kLowerOrNewerEqualPriority;
  o.preemption.checkpoint_aware = rng.next() % 2 == 0;
  o.preemption.min_runtime = static_cast<Seconds>(rng.next() % 3) * 15;
  o.reclaim_within_cohort = static_cast<CohortReclaim>(rng.next() % 3);
  o.fair_share_reclaim = rng.next() % 2 == 0;
  o.preemptor_starts_next_cycle = rng.next() % 3 == 0;
  o.grow_elastic = rng.next() % 4 != 0;
  o.backfill.mode = static_cast<BackfillMode>(rng.next() % 3);
  o.backfill.resolution = std::array<Seconds, 3>{1, 10, 25}[rng.next() % 3];  // (25: ends off the grid)
  o.backfill.depth = 2 + rng.next() % 6;
  o.max_preemption_attempts = 1 + rng.next() % 4;
  o.never_evict_back = rng.next() % 4 != 0;
  o.strict_fifo = rng.next() % 3 == 0;
  const auto order = rng.next() % 4;
  o.order = order == 1 ? static_cast<const JobOrder*>(&kFewestGpusFirst) : order == 2 ? &kShortestFirst : nullptr;
  if (rng.next() % 3 == 0) o.preemption.victim_order = &kNewestVictimsFirst;
  return s;
}

std::vector<fairness::QueueConfig> make_queues(const ClusterState& state, int kind, std::vector<std::string>& leaves) {
  std::vector<fairness::QueueConfig> q;
  if (kind == 1) {
    q.push_back(queue(state, "main", 0, "", true));
    q.back().nominal.clear();
    leaves = {"main"};
  } else if (kind == 2) {
    q.push_back(queue(state, "a", 12, "c"));
    q.push_back(queue(state, "b", 8, "c"));
    q.back().strict_fifo = true;
    leaves = {"a", "b"};
  } else if (kind == 3) {
    for (const char* name : {"org", "a", "b", "x"}) {
      q.push_back(queue(state, name, fairness::kNoLimit));
      q.back().nominal.clear();
    }
    q[1].parent = q[2].parent = "org";
    q[1].weight = 2;
    leaves = {"a", "b", "x"};
  }
  return q;
}

struct Counts {
  int ordered = 0;  // cycles with a job order of the caller's
  int cycles = 0, starts = 0, evictions = 0, grows = 0, reservations = 0, lean = 0, plans = 0;
  int actions = 0;  // cycles that report no reservations (CycleDetail::kActions)
};

void run_sequence(std::uint64_t seed, int steps, Counts& counts) {
  CAPTURE(seed);
  SplitMix64 rng(seed);
  ClusterState state = ClusterState::build(make_cluster(6, 4), GpuModelRegistry::builtin()).value();
  const Setup setup = random_setup(rng);
  CAPTURE(setup.queues);
  std::vector<std::string> leaves;
  auto queues = make_queues(state, setup.queues, leaves);
  auto opened = Session::open(state, queues, setup.options);
  REQUIRE_MESSAGE(opened.ok(), (opened.ok() ? std::string() : opened.error().message));
  Session session = std::move(*opened);
  std::map<std::string, Seconds> runtime;
  FailureOptions fo;
  fo.backoff_base = 10;
  fo.backoff_max = 40;
  std::vector<std::pair<NodeId, int>> down;  // failed or cordoned nodes and the step they come back
  int next_job = 0;

  Seconds now = 0;
  for (int step = 0; step < steps; ++step) {
    // Cycles 5-15 s apart: `now` off the backfill grid too, its first point after now moving or not.
    if (step > 0) now += 5 + static_cast<Seconds>(rng.next() % 11);
    // Finishes (by run time), a random cancellation.
    std::vector<std::string> done;
    for (const RunningJob& r : session.running())
      if (now - r.start_time >= runtime[r.name]) done.push_back(r.name);
    for (const std::string& name : done) REQUIRE(session.finish(name).ok());
    if (rng.next() % 9 == 0 && !session.pending().empty())
      REQUIRE(session.cancel(session.pending()[rng.next() % session.pending().size()].job.name).ok());
    // Repairs and uncordons, then a failure or a cordon now and then.
    for (std::size_t k = 0; k < down.size();) {
      if (down[k].second > step) {
        ++k;
        continue;
      }
      const NodeId n = down[k].first;
      if (!state.healthy(n)) REQUIRE(state.recover_node(n).ok());
      if (!state.schedulable(n)) REQUIRE(state.uncordon(n).ok());
      for (GpuIndex g = 0; g < state.gpu_count(n); ++g) REQUIRE(state.set_gpu_health(n, g, true).ok());
      down.erase(down.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (rng.next() % 10 == 0) {
      const NodeId n = static_cast<NodeId>(rng.next() % 6);
      if (std::none_of(down.begin(), down.end(), [&](const auto& d) { return d.first == n; })) {
        const int kind = static_cast<int>(rng.next() % 3);
        if (kind == 2) REQUIRE(state.cordon(n).ok());
        else REQUIRE(session.fail(n, kind == 0 ? -1 : static_cast<int>(rng.next() % 4), now, fo).ok());
        down.push_back({n, step + 2 + static_cast<int>(rng.next() % 4)});
      }
    }
    // Arrivals: rigid and elastic gangs, some too large for the cluster, some on unknown queues.
    const int arrivals = static_cast<int>(rng.next() % 4);
    for (int a = 0; a < arrivals; ++a) {
      const std::string name = "j" + std::to_string(next_job++);
      const std::int32_t tasks = 1 + static_cast<std::int32_t>(rng.next() % 3);
      const GpuCount gpus = rng.next() % 40 == 0 ? 8 : GpuCount{1} << (rng.next() % 3);
      const bool elastic = rng.next() % 5 == 0;
      std::string q = leaves.empty() ? "" : leaves[rng.next() % leaves.size()];
      if (!leaves.empty() && rng.next() % 50 == 0) q = "nowhere";
      PendingJob p = job(state, name, q, tasks + (elastic ? 2 : 0), gpus, static_cast<std::int32_t>(rng.next() % 4),
                         now - static_cast<Seconds>(rng.next() % 3) * 10, elastic ? tasks : -1);
      p.preemptible = rng.next() % 8 != 0;
      p.restart_cost = static_cast<Seconds>(rng.next() % 20);
      p.checkpoint_interval = static_cast<Seconds>(rng.next() % 3) * 15;
      p.runtime_estimate = rng.next() % 10 == 0 ? 0 : 10 * (1 + static_cast<Seconds>(rng.next() % 6));
      runtime[name] = 10 * (1 + static_cast<Seconds>(rng.next() % 6));
      REQUIRE(session.submit(std::move(p)).ok());
    }
    // Facts that change: a priority (pending or running), an estimate, a checkpoint.
    if (rng.next() % 4 == 0 && !session.pending().empty())
      REQUIRE(session.set_priority(session.pending()[rng.next() % session.pending().size()].job.name,
                                   static_cast<std::int32_t>(rng.next() % 5)).ok());
    if (rng.next() % 4 == 0 && !session.running().empty()) {
      const std::string name = session.running()[rng.next() % session.running().size()].name;
      REQUIRE(session.set_priority(name, static_cast<std::int32_t>(rng.next() % 5)).ok());
      REQUIRE(session.set_runtime_estimate(name, 10 * static_cast<Seconds>(rng.next() % 8)).ok());
      REQUIRE(session.set_last_checkpoint(name, now - static_cast<Seconds>(rng.next() % 20)).ok());
    }
    if (rng.next() % 6 == 0 && !session.running().empty())  // restarted in place: its run counts from now
      REQUIRE(session.set_start_time(session.running()[rng.next() % session.running().size()].name, now).ok());
    if (setup.options.order && rng.next() % 3 == 0 && !session.pending().empty())  // its key may change
      REQUIRE(session.set_runtime_estimate(session.pending()[rng.next() % session.pending().size()].job.name,
                                           10 * static_cast<Seconds>(rng.next() % 8)).ok());

    // The reference: run_cycle from scratch on a copy of the state, over the session's lists.
    ClusterState copy = state;
    CycleOptions o = setup.options;
    const std::vector<RunningJob> running(session.running().begin(), session.running().end());
    const std::vector<PendingJob> pending(session.pending().begin(), session.pending().end());
    const std::vector<Nomination> held(session.held().begin(), session.held().end());
    auto expected = run_cycle(copy, running, pending, queues, now, o, held);
    REQUIRE(expected.ok());

    // A plan first, now and then: the same decisions, and nothing changes.
    const CycleDetail detail = std::array{CycleDetail::kFull, CycleDetail::kDecisions, CycleDetail::kActions}[rng.next() % 3];
    const bool full = detail == CycleDetail::kFull;
    if (rng.next() % 4 == 0) {
      const std::string before = state_text(state) + lists_text(session);
      auto plan = session.cycle(now, CycleApply::kPlan, detail);
      REQUIRE(plan.ok());
      CHECK(decisions_text(*plan, full) == decisions_text(as_told(*expected, detail), full));
      CHECK(state_text(state) + lists_text(session) == before);
      ++counts.plans;
    }
    auto got = session.cycle(now, CycleApply::kCommit, detail);
    REQUIRE(got.ok());
    CAPTURE(step);
    REQUIRE(decisions_text(*got, full) == decisions_text(as_told(*expected, detail), full));
    // Committed: the state holds what the running jobs hold, and what run_cycle left on its copy.
    check_no_overcommit(state, session.running());
    CHECK(state_text(state) == state_text(copy));
    ++counts.cycles;
    counts.ordered += setup.options.order != nullptr;
    counts.lean += !full;
    counts.actions += detail == CycleDetail::kActions;
    counts.starts += static_cast<int>(got->starts.size());
    counts.evictions += static_cast<int>(got->evictions.size());
    counts.grows += static_cast<int>(got->grows.size());
    counts.reservations += static_cast<int>(got->reservations.size());
  }
}

// The kept prefix (cycle.hpp, CyclePrefix): a session resumes its last cycle where jobs only
// arrived since. Sequences made for it: no queues or preemption (the cycles that keep one), elastic
// gangs with growth on or off, every backfill mode, resolution and job order, windows short enough for time points to enter them,
// and mostly arrivals between cycles 0-12 s apart (some ahead of older jobs in the order), with now
// and then a finish, an overrun, a cancellation, a changed fact, a backoff, a cordon or a plan.
struct PrefixCounts {
  int cycles = 0, starts = 0, reservations = 0, grows = 0, resumed_cycles = 0;
  std::size_t resumed_jobs = 0;
};

void run_arrivals(std::uint64_t seed, int steps, PrefixCounts& counts) {
  CAPTURE(seed);
  SplitMix64 rng(seed);
  ClusterState state = ClusterState::build(make_cluster(4, 4), GpuModelRegistry::builtin()).value();
  CycleOptions o;
  o.preempt = false;
  o.grow_elastic = rng.next() % 2 == 0;
  o.backfill.mode = static_cast<BackfillMode>(rng.next() % 3);
  o.backfill.resolution = std::array<Seconds, 3>{1, 10, 25}[rng.next() % 3];
  o.backfill.window = std::array<Seconds, 3>{40, 150, 86'400}[rng.next() % 3];
  o.backfill.depth = 2 + rng.next() % 30;
  o.strict_fifo = rng.next() % 4 == 0;
  const auto order = rng.next() % 3;
  o.order = order == 1 ? static_cast<const JobOrder*>(&kFewestGpusFirst) : order == 2 ? &kShortestFirst : nullptr;
  CAPTURE(static_cast<int>(o.backfill.mode));
  Session session = Session::open(state, {}, o).value();
  std::map<std::string, Seconds> runtime;
  bool cordoned = false;
  auto any_pending = [&]() -> std::string {
    return session.pending()[rng.next() % session.pending().size()].job.name;
  };
  Seconds now = 0;
  for (int step = 0, next_job = 0; step < steps; ++step) {
    now += static_cast<Seconds>(rng.next() % 13);
    std::vector<std::string> done;
    for (const RunningJob& r : session.running())
      if (now - r.start_time >= runtime[r.name]) done.push_back(r.name);
    for (const std::string& name : done) REQUIRE(session.finish(name).ok());
    if (!session.pending().empty()) {
      const auto event = rng.next() % 40;
      if (event == 0) REQUIRE(session.cancel(any_pending()).ok());
      if (event == 1) REQUIRE(session.set_not_before(any_pending(), now + static_cast<Seconds>(rng.next() % 30)).ok());
      if (event == 2) REQUIRE(session.set_runtime_estimate(any_pending(), 10 * static_cast<Seconds>(rng.next() % 20)).ok());
      if (event == 3) REQUIRE(session.set_priority(any_pending(), static_cast<std::int32_t>(rng.next() % 2)).ok());
    }
    if (rng.next() % 25 == 0) {
      REQUIRE((cordoned ? state.uncordon(0) : state.cordon(0)).ok());
      cordoned = !cordoned;
    }
    const int arrivals = static_cast<int>(rng.next() % 3);
    for (int a = 0; a < arrivals; ++a) {
      const std::string name = "a" + std::to_string(next_job++);
      const std::int32_t tasks = 1 + static_cast<std::int32_t>(rng.next() % 2);
      const GpuCount gpus = rng.next() % 30 == 0 ? 8 : GpuCount{1} << (rng.next() % 3);  // (8: infeasible)
      const std::int32_t priority = rng.next() % 8 == 0 ? 1 : 0;
      const bool elastic = rng.next() % 5 == 0;  // (it may grow by 2 tasks once running)
      PendingJob p = job(state, name, "", tasks + (elastic ? 2 : 0), gpus, priority, now - (rng.next() % 8 == 0 ? 30 : 0),
                         elastic ? tasks : -1);
      p.runtime_estimate = rng.next() % 12 == 0 ? 0 : 10 * (2 + static_cast<Seconds>(rng.next() % 20));
      // Mostly within the estimate; now and then past it (its release moves with the floor).
      runtime[name] = rng.next() % 6 == 0 ? p.runtime_estimate + 40 : std::max<Seconds>(p.runtime_estimate, 40) - 10;
      REQUIRE(session.submit(std::move(p)).ok());
    }

    ClusterState copy = state;
    const std::vector<RunningJob> running(session.running().begin(), session.running().end());
    const std::vector<PendingJob> pending(session.pending().begin(), session.pending().end());
    auto expected = run_cycle(copy, running, pending, {}, now, o);
    REQUIRE(expected.ok());
    if (rng.next() % 10 == 0) {
      auto plan = session.cycle(now, CycleApply::kPlan, CycleDetail::kDecisions);
      REQUIRE(plan.ok());
      CHECK(decisions_text(*plan, false) == decisions_text(*expected, false));
    }
    // Mostly without reasons, with or without reservations: a cycle that reports none keeps a plan
    // of the jobs up to the last that could start, and the next one resumes it either way.
    const auto pick = rng.next() % 8;
    const CycleDetail detail = pick == 0 ? CycleDetail::kFull : pick % 2 ? CycleDetail::kDecisions : CycleDetail::kActions;
    auto got = session.cycle(now, CycleApply::kCommit, detail);
    REQUIRE(got.ok());
    CAPTURE(step);
    CAPTURE(now);
    REQUIRE(decisions_text(*got, false) == decisions_text(as_told(*expected, detail), false));
    CHECK(state_text(state) == state_text(copy));
    ++counts.cycles;
    counts.starts += static_cast<int>(got->starts.size());
    counts.reservations += static_cast<int>(got->reservations.size());
    counts.grows += static_cast<int>(got->grows.size());
    counts.resumed_cycles += got->stats.resumed > 0;
    counts.resumed_jobs += got->stats.resumed;
  }
}

}  // namespace

TEST_CASE("session: the same decisions as run_cycle from scratch at every cycle, every policy and event") {
  Counts counts;
  // (The sanitized run checks 4 of the sequences for memory errors and undefined behaviour.)
  for (std::uint64_t seed = 1; seed <= (testing::sanitized ? 4U : 60U); ++seed)
    run_sequence(seed, testing::sanitized ? 80 : 120, counts);
  MESSAGE("cycles " << counts.cycles << ", starts " << counts.starts << ", evictions " << counts.evictions << ", grows "
                    << counts.grows << ", reservations " << counts.reservations << ", decisions-only " << counts.lean
                    << " (actions only " << counts.actions << "), plans " << counts.plans);
  // Every kind of decision was exercised (so the comparison compared something).
  CHECK(counts.starts > 100);
  CHECK(counts.evictions > 10);
  CHECK(counts.grows > (testing::sanitized ? 0 : 5));
  CHECK(counts.reservations > 10);
  CHECK(counts.lean > 100);
  CHECK(counts.actions > 50);
  CHECK(counts.plans > 50);
  CHECK(counts.ordered > (testing::sanitized ? 0 : 500));
}

TEST_CASE("job order: the caller's key first, the default order for equal keys") {
  ClusterState state = ClusterState::build(make_cluster(1, 4), GpuModelRegistry::builtin()).value();
  // One node of 4 GPUs; three jobs submitted big first. Default order: big (4 GPUs) starts, the
  // others wait. Fewest GPUs first: small (1) and mid (2) start, big waits.
  const std::vector<PendingJob> pending = {job(state, "big", "", 1, 4, 0, 0), job(state, "mid", "", 1, 2, 0, 1),
                                           job(state, "small", "", 1, 1, 0, 2)};
  CycleOptions o;
  o.backfill.mode = BackfillMode::kNone;
  o.dry_run = true;
  auto names = [](const CycleDecisions& d) {
    std::string s;
    for (const Start& st : d.starts) s += st.job + " ";
    return s;
  };
  CHECK(names(run_cycle(state, {}, pending, {}, 0, o).value()) == "big ");
  o.order = &kFewestGpusFirst;
  CHECK(names(run_cycle(state, {}, pending, {}, 0, o).value()) == "small mid ");
  auto session = Session::open(state, {}, o).value();
  for (const PendingJob& p : pending) REQUIRE(session.submit(p).ok());
  CHECK(names(session.cycle(0, CycleApply::kPlan).value()) == "small mid ");
}

TEST_CASE("session: a copy plans from its own jobs, not from the releases kept for the original's") {
  // The session keeps its running tasks' releases as pointers into its own jobs; a copy must not
  // read the original's (ASan: a use after free once the original is gone).
  ClusterState state = ClusterState::build(make_cluster(2, 4), GpuModelRegistry::builtin()).value();
  CycleOptions o;
  o.backfill.mode = BackfillMode::kEasy;
  std::optional<Session> original(Session::open(state, {}, o).value());
  for (int k = 0; k < 3; ++k) {
    PendingJob p = job(state, "r" + std::to_string(k), "", 1, 2, 0, 0);
    p.runtime_estimate = 100 * (k + 1);
    REQUIRE(original->submit(std::move(p)).ok());
  }
  REQUIRE(original->cycle(0).ok());  // three start; their releases are kept
  PendingJob big = job(state, "big", "", 2, 4, 0, 1);
  big.runtime_estimate = 50;
  REQUIRE(original->submit(big).ok());
  REQUIRE(original->cycle(1, CycleApply::kPlan).ok());  // the kept releases are in use
  Session copy = *original;
  const std::string expected = decisions_text(original->rebuilt().value().cycle(2, CycleApply::kPlan).value(), true);
  original.reset();
  auto d = copy.cycle(2, CycleApply::kPlan);
  REQUIRE(d.ok());
  CHECK(decisions_text(*d, true) == expected);
  CHECK(d->reservations.size() == 1);  // big waits for two of the running jobs to end
}

TEST_CASE("session: the kept releases follow each cycle's grid, later or earlier than the last") {
  // Ends are kept rounded to the grid; the ones a cycle's `now` has passed (or a job past its
  // estimate) end at the first grid point after now, which a cycle at an earlier time lowers again.
  ClusterState state = ClusterState::build(make_cluster(2, 4), GpuModelRegistry::builtin()).value();
  CycleOptions o;
  o.backfill.mode = BackfillMode::kConservative;
  o.backfill.resolution = 25;
  Session s = Session::open(state, {}, o).value();
  for (int k = 0; k < 4; ++k) {
    PendingJob p = job(state, "r" + std::to_string(k), "", 1, 2, 0, 0);
    p.runtime_estimate = 30 + 40 * k;  // ends 33, 73, 113, 153: off the grid
    REQUIRE(s.submit(std::move(p)).ok());
  }
  REQUIRE(s.cycle(3).value().starts.size() == 4);
  for (int k = 0; k < 3; ++k) {
    PendingJob p = job(state, "w" + std::to_string(k), "", 1 + k % 2, 4, 0, 5);
    p.runtime_estimate = 20 + 15 * k;
    REQUIRE(s.submit(std::move(p)).ok());
  }
  for (const Seconds now : {4, 60, 90, 74, 160, 20, 200}) {
    CAPTURE(now);
    ClusterState copy = state;
    const std::vector<RunningJob> running(s.running().begin(), s.running().end());
    const std::vector<PendingJob> pending(s.pending().begin(), s.pending().end());
    const auto expected = run_cycle(copy, running, pending, {}, now, o).value();
    const auto got = s.cycle(now, CycleApply::kPlan).value();
    CHECK(decisions_text(got, true) == decisions_text(expected, true));
    CHECK(!got.reservations.empty());
  }
}

TEST_CASE("session: events that cannot be honoured are errors naming the job, and change nothing") {
  ClusterState state = ClusterState::build(make_cluster(2, 4), GpuModelRegistry::builtin()).value();
  Session s = Session::open(state).value();
  REQUIRE(s.submit(job(state, "a", "", 1, 2)).ok());
  auto dup = s.submit(job(state, "a", "", 1, 1));
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().code == ErrorCode::kDuplicate);
  CHECK(dup.error().message.find("\"a\"") != std::string::npos);
  CHECK(s.finish("a").error().code == ErrorCode::kUnknownName);  // pending, not running
  CHECK(s.cancel("zz").error().code == ErrorCode::kUnknownName);
  CHECK(s.set_priority("zz", 1).error().code == ErrorCode::kUnknownName);
  CHECK(s.pending().size() == 1);
  auto d = s.cycle(0);
  REQUIRE(d.ok());
  REQUIRE(d->starts.size() == 1);
  CHECK(s.running().size() == 1);
  CHECK(s.pending().empty());
  CHECK(s.requeue("a", 5, 1).ok());  // back to pending, its tasks released
  CHECK(state.usage(0).gpu_milli + state.usage(1).gpu_milli == 0);
  REQUIRE(s.pending().size() == 1);
  CHECK(s.pending()[0].not_before == 5);
  CHECK(s.pending()[0].restarts == 1);
  // Queues the fairness family refuses are refused when the session opens.
  fairness::QueueConfig bad = queue(state, "q", 4);
  bad.parent = "missing";
  auto refused = Session::open(state, {bad});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("missing") != std::string::npos);
}

TEST_CASE("session: a plan changes nothing, with or without running jobs") {
  ClusterState state = ClusterState::build(make_cluster(2, 4), GpuModelRegistry::builtin()).value();
  Session s = Session::open(state).value();
  REQUIRE(s.submit(job(state, "a", "", 2, 2)).ok());
  const std::string before = state_text(state);
  auto plan = s.cycle(0, CycleApply::kPlan);
  REQUIRE(plan.ok());
  CHECK(plan->starts.size() == 1);
  CHECK(state_text(state) == before);
  CHECK(s.running().empty());
  CHECK(s.pending().size() == 1);
  REQUIRE(s.cycle(0).ok());
  CHECK(state_text(state) != before);
  CHECK(s.running().size() == 1);
}

TEST_CASE("session: an arrival-only instant resumes the last cycle and decides what run_cycle does") {
  PrefixCounts counts;
  for (std::uint64_t seed = 1; seed <= (testing::sanitized ? 4U : 60U); ++seed)
    run_arrivals(seed, testing::sanitized ? 80 : 150, counts);
  MESSAGE("cycles " << counts.cycles << ", starts " << counts.starts << ", reservations " << counts.reservations
                    << ", grows " << counts.grows << ", resumed cycles " << counts.resumed_cycles << " (" << counts.resumed_jobs << " jobs not served again)");
  // The resumed path was taken often, over queues that had jobs (so the comparison compared it).
  CHECK(counts.resumed_cycles > counts.cycles / 10);
  CHECK(counts.resumed_jobs > 5 * static_cast<std::size_t>(counts.resumed_cycles));
  CHECK(counts.starts > counts.cycles / 45);
  CHECK(counts.reservations > counts.cycles / 18);
  if (!testing::sanitized) CHECK(counts.grows > 20);  // (the sanitized run's 4 sequences have no growth)
}
