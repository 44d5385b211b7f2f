// Properties of the scheduling cycle over long random runs (fixed seeds): random arrivals of rigid
// and elastic gangs in two queues of one cohort (or in a queue tree without quotas, where fair-share
// reclaim compares subtrees), priorities, jobs finishing, node and GPU failures
// with recovery, cycle after cycle. After every cycle:
//   - no job is evicted unless its preemptor starts in that cycle (or, when nominated, the next);
//   - no pair of jobs preempts each other back and forth (A evicts B, later B evicts A);
//   - never a partial gang (every start has at least each group's minimum);
//   - never an over-committed GPU, and the state holds exactly what the running jobs hold;
//   - no starvation: once arrivals stop, every job eventually finishes.
#include <map>
#include <set>

#include "cycle_util.hpp"
#include "test_util.hpp"
#include "gpusched/core/random.hpp"

using namespace cycle_test;

namespace {

struct World {
  ClusterState state;
  std::vector<fairness::QueueConfig> queues;
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;
  std::vector<PendingJob> catalog;  // every job as submitted (requeue source)
  std::map<std::string, Seconds> runtime;
  std::set<std::string> finished;
};

enum class Queues { kNone, kCohort, kTree };

// Returns the number of fair-share evictions (so that a run can show the rule was exercised).
int run_world(std::uint64_t seed, bool nominate, Queues queues, int arrival_cycles, int max_cycles) {
  CAPTURE(seed);
  CAPTURE(nominate);
  CAPTURE(static_cast<int>(queues));
  SplitMix64 rng(seed);
  World w{ClusterState::build(make_cluster(6, 4), GpuModelRegistry::builtin()).value(), {}, {}, {}, {}, {}, {}};
  std::vector<std::string> leaves;
  if (queues == Queues::kCohort) {
    w.queues.push_back(queue(w.state, "a", 12, "c"));
    w.queues.push_back(queue(w.state, "b", 12, "c"));
    leaves = {"a", "b"};
  } else if (queues == Queues::kTree) {
    // org (weight 1) over a (2) and b (1), beside x (1): no quotas, so every queue is open to
    // fair-share reclaim, decided where the paths part (org against x, or a against b).
    for (const char* name : {"org", "a", "b", "x"}) {
      w.queues.push_back(queue(w.state, name, fairness::kNoLimit));
      w.queues.back().nominal.clear();
    }
    w.queues[1].parent = w.queues[2].parent = "org";
    w.queues[1].weight = 2;
    leaves = {"a", "b", "x"};
  }
  CycleOptions options;
  options.preemptor_starts_next_cycle = nominate;
  options.preemption.within_queue =
      rng.next() % 2 ? WithinQueue::kLowerPriority : WithinQueue::kLowerOrNewerEqualPriority;
  FailureHistory history;
  FailureOptions fo;
  fo.backoff_base = 10;
  fo.backoff_max = 80;
  std::vector<Nomination> held;
  std::set<std::pair<std::string, std::string>> preempted;  // (preemptor, victim)
  std::vector<std::pair<NodeId, int>> down;                 // failed nodes and when they recover
  int next_job = 0;
  int fair_share_evictions = 0;
  int usage_checks = 0;
  bool event_since_cycle = false;

  for (int cycle = 0; cycle < max_cycles; ++cycle) {
    const Seconds now = cycle * 10;
    // Finish jobs whose run time elapsed.
    for (std::size_t j = 0; j < w.running.size();) {
      RunningJob& r = w.running[j];
      if (now - r.start_time >= w.runtime[r.name]) {
        for (const RunningTask& t : r.tasks) REQUIRE(w.state.release(t.assignment).ok());
        w.finished.insert(r.name);
        w.running.erase(w.running.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
    // Recoveries, then failures (only while jobs arrive, so the end state can drain).
    for (std::size_t k = 0; k < down.size();) {
      if (down[k].second <= cycle) {
        if (!w.state.healthy(down[k].first)) REQUIRE(w.state.recover_node(down[k].first).ok());
        if (!w.state.schedulable(down[k].first)) REQUIRE(w.state.uncordon(down[k].first).ok());
        for (GpuIndex g = 0; g < w.state.gpu_count(down[k].first); ++g)
          REQUIRE(w.state.set_gpu_health(down[k].first, g, true).ok());
        down.erase(down.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ++k;
      }
    }
    if (cycle < arrival_cycles && rng.next() % 12 == 0) {
      const NodeId n = static_cast<NodeId>(rng.next() % 6);
      const bool whole_node = rng.next() % 2 == 0;
      const bool already = std::any_of(down.begin(), down.end(), [&](const auto& d) { return d.first == n; });
      if (!already) {
        const int gpu = whole_node ? -1 : static_cast<int>(rng.next() % 4);
        auto resp = on_failure(w.state, w.running, n, gpu, now, history, fo);
        REQUIRE(resp.ok());
        apply_failure(w.running, w.pending, *resp, w.catalog);
        down.push_back({n, cycle + 2 + static_cast<int>(rng.next() % 4)});
        event_since_cycle = true;
      }
    }
    // Arrivals.
    if (cycle < arrival_cycles) {
      const int arrivals = static_cast<int>(rng.next() % 3);
      for (int a = 0; a < arrivals; ++a) {
        const std::string name = "j" + std::to_string(next_job++);
        const std::int32_t tasks = 1 + static_cast<std::int32_t>(rng.next() % 3);
        const GpuCount gpus = GpuCount{1} << (rng.next() % 3);  // 1, 2 or 4
        const bool elastic = rng.next() % 5 == 0;
        PendingJob p = job(w.state, name, leaves.empty() ? "" : leaves[rng.next() % leaves.size()], tasks + (elastic ? 2 : 0), gpus,
                           static_cast<std::int32_t>(rng.next() % 4), now, elastic ? tasks : -1);
        p.preemptible = rng.next() % 10 != 0;
        p.restart_cost = static_cast<Seconds>(rng.next() % 20);
        p.checkpoint_interval = static_cast<Seconds>(rng.next() % 3) * 15;
        p.runtime_estimate = 10 * (1 + static_cast<Seconds>(rng.next() % 6));
        w.runtime[name] = p.runtime_estimate;
        w.catalog.push_back(p);
        w.pending.push_back(p);
      }
    }
    // Evicted jobs that were requeued keep their catalog entry; the running list must still hold
    // what the state holds.
    check_no_overcommit(w.state, w.running);

    // Every third cycle with queues: the same cycle given the queues' usage as a caller keeps it
    // (RunningUsage) decides the same (a dry run, before the real one).
    std::optional<CycleDecisions> with_usage;
    if (!w.queues.empty() && cycle % 3 == 0) {
      RunningUsage usage;
      for (const RunningJob& r : w.running) REQUIRE(usage.add(w.state, r).ok());
      CycleOptions kept = options;
      kept.dry_run = true;
      kept.usage = &usage;
      auto r = run_cycle(w.state, w.running, w.pending, w.queues, now, kept, held);
      REQUIRE(r.ok());
      with_usage = std::move(*r);
    }
    auto result = run_cycle(w.state, w.running, w.pending, w.queues, now, options, held);
    REQUIRE(result.ok());
    const CycleDecisions& d = *result;
    if (with_usage) {
      REQUIRE(with_usage->starts.size() == d.starts.size());
      for (std::size_t i = 0; i < d.starts.size(); ++i) {
        CHECK(with_usage->starts[i].job == d.starts[i].job);
        REQUIRE(with_usage->starts[i].tasks.size() == d.starts[i].tasks.size());
        for (std::size_t t = 0; t < d.starts[i].tasks.size(); ++t) {
          CHECK(with_usage->starts[i].tasks[t].assignment.node == d.starts[i].tasks[t].assignment.node);
          CHECK(with_usage->starts[i].tasks[t].assignment.gpus == d.starts[i].tasks[t].assignment.gpus);
        }
      }
      REQUIRE(with_usage->evictions.size() == d.evictions.size());
      for (std::size_t i = 0; i < d.evictions.size(); ++i) CHECK(with_usage->evictions[i].job == d.evictions[i].job);
      CHECK(with_usage->waiting.size() == d.waiting.size());
      CHECK(with_usage->grows.size() == d.grows.size());
      ++usage_checks;
    }
    std::set<std::string> started;
    for (const Start& s : d.starts) {
      started.insert(s.job);
      const PendingJob& p = w.pending.at(s.pending);
      REQUIRE(s.placed_per_group.size() == p.job.groups.size());
      std::size_t total = 0;
      for (std::size_t g = 0; g < p.job.groups.size(); ++g) {
        CHECK(s.placed_per_group[g] >= p.job.groups[g].min_replicas);  // never a partial gang
        CHECK(s.placed_per_group[g] <= p.job.groups[g].replicas);
        total += static_cast<std::size_t>(s.placed_per_group[g]);
      }
      CHECK(s.tasks.size() == total);
    }
    // Last cycle's nominations start now (unless a failure took their capacity in between).
    if (!event_since_cycle)
      for (const Nomination& n : held) {
        const Start* s = d.find_start(n.job);
        CHECK_MESSAGE(s != nullptr, "nominated job " << n.job << " did not start");
        if (s) CHECK(s->nominated);
      }
    std::set<std::string> nominated;
    for (const Nomination& n : d.nominations) nominated.insert(n.job);
    for (const Eviction& e : d.evictions) {
      CHECK(e.reason != EvictionReason::kFailure);
      // No eviction without its preemptor starting (now, or next cycle when nominated).
      CHECK((started.count(e.for_job) == 1 || nominated.count(e.for_job) == 1));
      CHECK_MESSAGE(preempted.count({e.job, e.for_job}) == 0,
                    e.for_job << " evicts " << e.job << " after " << e.job << " evicted " << e.for_job << " ("
                                                << eviction_reason_name(e.reason) << ")");
      preempted.insert({e.for_job, e.job});
      fair_share_evictions += e.reason == EvictionReason::kFairShare;
      if (e.whole) {
        const RunningJob& r = w.running.at(e.running);
        CHECK(e.tasks.size() == r.tasks.size());  // whole gangs only
      } else {
        const RunningJob& r = w.running.at(e.running);
        CHECK(r.tasks.size() - e.tasks.size() >= static_cast<std::size_t>(r.min_tasks));  // never below minimum
      }
    }
    advance(w.running, w.pending, d, w.catalog);
    held = d.nominations;
    event_since_cycle = false;
    check_no_overcommit(w.state, w.running);
    if (cycle >= arrival_cycles && w.running.empty() && w.pending.empty() && held.empty()) break;
  }
  // No starvation: after arrivals stopped, every job finished.
  CHECK(w.pending.empty());
  CHECK(w.running.empty());
  CHECK(w.finished.size() == static_cast<std::size_t>(next_job));
  CHECK((w.queues.empty() || usage_checks > 0));  // the kept-usage comparison ran
  return fair_share_evictions;
}

}  // namespace

TEST_CASE("random runs: no eviction without its preemptor, no back-and-forth, whole gangs, no over-commit, no starvation") {
  // A sanitized build runs every fifth world (both preemption settings, both queue layouts):
  // test_util.hpp, testing::trials.
  const std::uint64_t step = gpusched::testing::sanitized ? 5 : 1;
  for (std::uint64_t seed = 1; seed <= 24; seed += step)
    run_world(seed, seed % 2 == 0, seed % 3 != 0 ? Queues::kCohort : Queues::kNone, 60, 400);
  int fair_share = 0;
  for (std::uint64_t seed = 101; seed <= 112; ++seed) fair_share += run_world(seed, seed % 2 == 0, Queues::kTree, 60, 400);
  CHECK(fair_share > 0);  // the tree runs do reclaim between subtrees
}

TEST_CASE("long random run with failures and nominations") {
  run_world(4242, true, Queues::kCohort, 300, 1200);
  if (!gpusched::testing::sanitized) run_world(4243, false, Queues::kCohort, 300, 1200);  // (sampled when sanitized)
  run_world(4244, true, Queues::kTree, 300, 1200);
}
