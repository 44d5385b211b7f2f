// Preemption victim search: Slurm's documented reorder case, checkpoint-aware costs, elastic shrink
// before eviction, the eligibility rules, infeasible vs not now, and an exhaustive oracle on small
// random instances (cheapest and minimal victim sets, state unchanged).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/scheduler/preemption.hpp"
#include "scheduler/cycle_util.hpp"

using namespace gpusched;
using namespace gpusched::scheduler;
using namespace cycle_test;  // kModel, make_cluster, whole_gpus

namespace {

// A running task of `gpus` whole GPUs on `node`, GPUs [first, first + gpus), reserved on the state.
RunningTask run_on(ClusterState& state, NodeId node, GpuIndex first, GpuCount gpus) {
  RunningTask t{whole_gpus(state, gpus), {}};
  t.assignment = make_assignment(node, t.request);
  for (GpuCount g = 0; g < gpus; ++g) t.assignment.gpus.push_back(static_cast<GpuIndex>(first + g));
  REQUIRE(state.reserve(t.request, t.assignment).ok());
  return t;
}

// A job holding whole nodes [first, first + count) of 8 GPUs each.
RunningJob whole_nodes(ClusterState& state, std::string name, NodeId first, NodeId count, std::int32_t priority = 0) {
  RunningJob j;
  j.name = std::move(name);
  j.queue = "q";
  j.priority = priority;
  for (NodeId n = first; n < first + count; ++n) j.tasks.push_back(run_on(state, n, 0, 8));
  return j;
}

GangSpec gang(const ClusterState& state, std::int32_t tasks, GpuCount gpus_each, std::int32_t min_tasks = -1) {
  GangSpec spec;
  spec.name = "preemptor";
  spec.groups.push_back({"worker", tasks, min_tasks < 0 ? tasks : min_tasks, whole_gpus(state, gpus_each)});
  return spec;
}

// Milli-GPUs a running job holds.
std::int64_t held_by(const RunningJob& job) {
  std::int64_t out = 0;
  for (const RunningTask& t : job.tasks) out += static_cast<std::int64_t>(t.assignment.gpus.size()) * t.assignment.gpu_milli;
  return out;
}

// A user's victim order: evict what holds the fewest GPUs (its cost: the milli-GPUs it frees).
struct FewestHeldVictimsFirst final : VictimOrder {
  std::string_view name() const override { return "fewest-gpus"; }
  std::int64_t cost(const VictimCandidate& c) const override { return c.freed_milli_gpu; }
};
const FewestHeldVictimsFirst fewest_gpus_victims;

// A user's victim order: the most recently started first (cost: seconds it has run).
struct NewestVictimsFirst final : VictimOrder {
  std::string_view name() const override { return "newest"; }
  std::int64_t cost(const VictimCandidate& c) const override { return c.now - c.job->start_time; }
};

std::vector<std::size_t> victim_jobs(const PreemptionPlan& plan) {
  std::vector<std::size_t> out;
  for (const Victim& v : plan.victims) out.push_back(v.job);
  return out;
}

}  // namespace

TEST_CASE("Slurm's reorder example: an 8-node preemptor with candidates of 2, 4 and 8 nodes evicts only the 8-node job") {
  // 14 nodes x 8 GPUs, all held: A on 2 nodes, B on 4, C on 8 (Slurm preempt.shtml, "reorder").
  for (bool checkpoint_aware : {true, false}) {
    auto state = ClusterState::build(make_cluster(14, 8), GpuModelRegistry::builtin()).value();
    std::vector<RunningJob> running;
    running.push_back(whole_nodes(state, "A", 0, 2));
    running.push_back(whole_nodes(state, "B", 2, 4));
    running.push_back(whole_nodes(state, "C", 6, 8));
    // Started newest first, so Kueue's order (newest first) tries A, then B, then C.
    running[0].start_time = 300;
    running[1].start_time = 200;
    running[2].start_time = 100;
    state.commit();
    const ClusterState before = state;
    const GangSpec spec = gang(state, 8, 8);
    PreemptionOptions options;
    options.checkpoint_aware = checkpoint_aware;
    const PreemptionPlan plan = find_victims(state, {&spec, "q", 10, 400}, running, 1000, options);
    CAPTURE(checkpoint_aware);
    REQUIRE(plan.verdict == Verdict::kPlaced);
    CHECK(victim_jobs(plan) == std::vector<std::size_t>{2});
    CHECK(plan.victims[0].whole);
    CHECK(plan.victims[0].tasks_shed == 8);
    CHECK(plan.placement.size() == 8);
    for (const TaskPlacement& t : plan.placement) CHECK(t.assignment.node >= 6);
    CHECK(plan.exact == checkpoint_aware);
    CHECK(state.same_allocation_as(before));
    CHECK(state.journal_size() == 0);
  }
}

TEST_CASE("checkpoint-aware: the victim that loses the least work since its checkpoint is evicted") {
  // Two nodes of 8 GPUs, each held by one 8-GPU job; the preemptor needs 8 GPUs on one node.
  // now = 1000. X: started 0, checkpointed at 900, restart 60 s:
  //   lost 8,000 milli x 100 s = 800,000; restart 8,000 x 60 = 480,000; cost 1,280,000.
  // Y: started 500, never checkpointed, restart 60 s: lost 8,000 x 500 = 4,000,000; cost 4,480,000.
  auto state = ClusterState::build(make_cluster(2, 8), GpuModelRegistry::builtin()).value();
  std::vector<RunningJob> running{whole_nodes(state, "X", 0, 1), whole_nodes(state, "Y", 1, 1)};
  running[0].start_time = 0;
  running[0].last_checkpoint = 900;
  running[0].restart_cost = 60;
  running[1].start_time = 500;
  running[1].restart_cost = 60;
  state.commit();
  const GangSpec spec = gang(state, 1, 8);
  const PreemptionPlan aware = find_victims(state, {&spec, "q", 10, 0}, running, 1000);
  REQUIRE(aware.verdict == Verdict::kPlaced);
  REQUIRE(victim_jobs(aware) == std::vector<std::size_t>{0});
  CHECK(aware.victims[0].lost_milli_gpu_seconds == 800'000);
  CHECK(aware.victims[0].restart_milli_gpu_seconds == 480'000);
  CHECK(aware.cost == 1'280'000);
  CHECK(lost_work(running[1], 0, 1, 1000) == 4'000'000);
  // Without checkpoint awareness, Kueue's order evicts the most recently started: Y.
  PreemptionOptions kueue;
  kueue.checkpoint_aware = false;
  const PreemptionPlan plain = find_victims(state, {&spec, "q", 10, 0}, running, 1000, kueue);
  REQUIRE(plain.verdict == Verdict::kPlaced);
  CHECK(victim_jobs(plain) == std::vector<std::size_t>{1});
  CHECK(plain.cost == 4'480'000);
  // A victim order of one's own replaces the cost: the newest (Y, 500 s) before X (1,000 s); the
  // plan's cost is in the order's units, the victim's own figures stay lost work and restart.
  const NewestVictimsFirst newest;
  PreemptionOptions mine;
  mine.victim_order = &newest;
  mine.checkpoint_aware = false;  // ignored beside an order
  const PreemptionPlan by_age = find_victims(state, {&spec, "q", 10, 0}, running, 1000, mine);
  REQUIRE(by_age.verdict == Verdict::kPlaced);
  CHECK(victim_jobs(by_age) == std::vector<std::size_t>{1});
  CHECK(by_age.exact);
  CHECK(by_age.cost == 500);
  CHECK(by_age.victims[0].cost() == 4'480'000);
  // The built-in order through the same point decides as the default.
  const CheckpointCostOrder builtin;
  mine.victim_order = &builtin;
  const PreemptionPlan same = find_victims(state, {&spec, "q", 10, 0}, running, 1000, mine);
  CHECK(victim_jobs(same) == std::vector<std::size_t>{0});
  CHECK(same.cost == aware.cost);
}

TEST_CASE("an elastic gang sheds its tasks above the minimum before anyone is evicted, never below it") {
  // now = 1000. Node 0: elastic E, 4 tasks x 2 GPUs, minimum 2, checkpointed at 990, restart 30 s.
  // Node 1: rigid R, 8 GPUs, checkpointed at 1000, restart 10 s.
  //   shed E's 2 tasks above its minimum: 4,000 milli x 10 s = 40,000 (no restart: E keeps running)
  //   evict R: lost 0 + restart 8,000 x 10 = 80,000
  //   evict E whole: 8,000 x 10 + 8,000 x 30 = 320,000
  auto state = ClusterState::build(make_cluster(2, 8), GpuModelRegistry::builtin()).value();
  RunningJob e;
  e.name = "E";
  e.queue = "q";
  e.min_tasks = 2;
  e.start_time = 0;
  e.last_checkpoint = 990;
  e.restart_cost = 30;
  for (GpuIndex first : {0, 2, 4, 6}) e.tasks.push_back(run_on(state, 0, first, 2));
  RunningJob r = whole_nodes(state, "R", 1, 1);
  r.last_checkpoint = 1000;
  r.restart_cost = 10;
  std::vector<RunningJob> running{e, r};
  state.commit();
  const GangSpec spec = gang(state, 1, 4);  // 4 GPUs on one node
  const PreemptionPlan plan = find_victims(state, {&spec, "q", 10, 0}, running, 1000);
  REQUIRE(plan.verdict == Verdict::kPlaced);
  REQUIRE(plan.victims.size() == 1);
  CHECK(plan.victims[0].job == 0);
  CHECK_FALSE(plan.victims[0].whole);
  CHECK(plan.victims[0].tasks_shed == 2);
  CHECK(plan.cost == 40'000);
  // A preemptor needing all 8 GPUs of a node cannot be served by shrinking E (it keeps 4 GPUs): R
  // (80,000) is cheaper than evicting E whole (8,000 x 10 + 8,000 x 30 = 320,000).
  const GangSpec big = gang(state, 1, 8);
  const PreemptionPlan plan8 = find_victims(state, {&big, "q", 10, 0}, running, 1000);
  REQUIRE(plan8.verdict == Verdict::kPlaced);
  CHECK(victim_jobs(plan8) == std::vector<std::size_t>{1});
  CHECK(plan8.cost == 80'000);
}

TEST_CASE("a shrink sheds only the tasks the preemptor needs, its last ones") {
  // One node of 8 GPUs held by elastic E: 8 tasks x 1 GPU, minimum 2. A 2-GPU preemptor needs two of
  // its six extra tasks, not all six (the search takes the whole shrink, the trim gives back four).
  for (bool checkpoint_aware : {true, false}) {
    auto state = ClusterState::build(make_cluster(1, 8), GpuModelRegistry::builtin()).value();
    RunningJob e;
    e.name = "E";
    e.queue = "q";
    e.min_tasks = 2;
    for (GpuIndex g = 0; g < 8; ++g) e.tasks.push_back(run_on(state, 0, g, 1));
    std::vector<RunningJob> running{e};
    state.commit();
    const GangSpec spec = gang(state, 1, 2);
    PreemptionOptions o;
    o.checkpoint_aware = checkpoint_aware;
    const PreemptionPlan plan = find_victims(state, {&spec, "q", 10, 0}, running, 1000, o);
    REQUIRE(plan.verdict == Verdict::kPlaced);
    REQUIRE(plan.victims.size() == 1);
    CHECK_FALSE(plan.victims[0].whole);
    CHECK(plan.victims[0].tasks_shed == 2);
    // The preemptor's placement uses the GPUs of E's last two tasks (6 and 7).
    REQUIRE(plan.placement.size() == 1);
    CHECK(plan.placement[0].assignment.gpus == std::vector<GpuIndex>{6, 7});
    CHECK(state.shares().total_free() == 0);  // a plan changes nothing
  }
}

TEST_CASE("eligibility: non-preemptible, too young, higher priority and other queues are not candidates") {
  auto state = ClusterState::build(make_cluster(1, 8), GpuModelRegistry::builtin()).value();
  std::vector<RunningJob> running{whole_nodes(state, "J", 0, 1, 5)};
  running[0].start_time = 900;
  state.commit();
  const GangSpec spec = gang(state, 1, 8);
  const Preemptor p{&spec, "q", 10, 950};
  CHECK(find_victims(state, p, running, 1000).verdict == Verdict::kPlaced);

  PreemptionOptions young;
  young.min_runtime = 200;  // J ran 100 s
  CHECK(find_victims(state, p, running, 1000, young).verdict == Verdict::kNotNow);

  running[0].preemptible = false;
  CHECK(find_victims(state, p, running, 1000).verdict == Verdict::kNotNow);
  running[0].preemptible = true;

  const Preemptor equal{&spec, "q", 5, 800};
  CHECK(find_victims(state, equal, running, 1000).verdict == Verdict::kNotNow);
  PreemptionOptions newer;
  newer.within_queue = WithinQueue::kLowerOrNewerEqualPriority;
  CHECK(find_victims(state, equal, running, 1000, newer).verdict == Verdict::kPlaced);  // J started after 800
  const Preemptor equal_later{&spec, "q", 5, 950};
  CHECK(find_victims(state, equal_later, running, 1000, newer).verdict == Verdict::kNotNow);

  const Preemptor other_queue{&spec, "other", 10, 950};
  CHECK(find_victims(state, other_queue, running, 1000).verdict == Verdict::kNotNow);
  const std::vector<std::uint8_t> reclaimable{1};
  CHECK(find_victims(state, other_queue, running, 1000, {}, reclaimable).verdict == Verdict::kPlaced);
}

TEST_CASE("infeasible vs not now") {
  auto state = ClusterState::build(make_cluster(2, 8), GpuModelRegistry::builtin()).value();
  std::vector<RunningJob> running{whole_nodes(state, "hi", 0, 2, 100)};
  state.commit();
  const GangSpec too_big = gang(state, 1, 16);  // no node has 16 GPUs
  PreemptionPlan p = find_victims(state, {&too_big, "q", 10, 0}, running, 1000);
  CHECK(p.verdict == Verdict::kInfeasible);
  const GangSpec fits_empty = gang(state, 2, 8);  // fits the empty cluster, but "hi" outranks it
  p = find_victims(state, {&fits_empty, "q", 10, 0}, running, 1000);
  CHECK(p.verdict == Verdict::kNotNow);
  REQUIRE_FALSE(p.reasons.empty());
  CHECK(p.reasons[0].kind == ReasonKind::kTooFewTasksFit);
}

TEST_CASE("oracle: on random small instances the plan is the cheapest sufficient set and minimal") {
  // Brute force over every subset of candidate jobs on a state rebuilt from scratch without them:
  // independent of the journaled what-if the library uses.
  SplitMix64 rng{7};
  int placed_cases = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const std::size_t nodes = 2 + rng.next() % 3;
    Cluster cluster = make_cluster(nodes, 4);
    auto state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
    std::vector<RunningJob> running;
    std::vector<std::vector<int>> used(nodes, std::vector<int>(4, 0));
    const int jobs = 2 + static_cast<int>(rng.next() % 5);
    for (int j = 0; j < jobs; ++j) {
      RunningJob job;
      job.name = "j" + std::to_string(j);
      job.queue = "q";
      job.priority = static_cast<std::int32_t>(rng.next() % 3);
      job.start_time = static_cast<Seconds>(rng.next() % 500);
      job.last_checkpoint = static_cast<Seconds>(rng.next() % 1000);
      job.restart_cost = static_cast<Seconds>(rng.next() % 50);
      const int tasks = 1 + static_cast<int>(rng.next() % 2);
      for (int t = 0; t < tasks; ++t) {
        const GpuCount gpus = 1 + static_cast<GpuCount>(rng.next() % 2);
        // First node with that many idle GPUs, lowest GPU indices.
        for (NodeId n = 0; n < nodes; ++n) {
          std::vector<GpuIndex> free;
          for (GpuIndex g = 0; g < 4; ++g)
            if (!used[n][g]) free.push_back(g);
          if (free.size() < static_cast<std::size_t>(gpus)) continue;
          RunningTask rt{whole_gpus(state, gpus), {}};
          rt.assignment = make_assignment(n, rt.request);
          for (GpuCount g = 0; g < gpus; ++g) {
            rt.assignment.gpus.push_back(free[static_cast<std::size_t>(g)]);
            used[n][free[static_cast<std::size_t>(g)]] = 1;
          }
          REQUIRE(state.reserve(rt.request, rt.assignment).ok());
          job.tasks.push_back(rt);
          break;
        }
      }
      if (!job.tasks.empty()) running.push_back(std::move(job));
    }
    state.commit();
    const GangSpec spec = gang(state, 1 + static_cast<std::int32_t>(rng.next() % 2), 1 + static_cast<GpuCount>(rng.next() % 4));
    const Preemptor p{&spec, "q", 2, 0};
    const ClusterState before = state;
    // The default order (lost work + restart) and a user order (the GPUs a victim holds): the
    // oracle prices each subset by the same order.
    const VictimOrder* order = trial % 2 == 0 ? nullptr : &fewest_gpus_victims;
    PreemptionOptions options;
    options.victim_order = order;
    const PreemptionPlan plan = find_victims(state, p, running, 1000, options);
    CHECK(state.same_allocation_as(before));

    // Every subset of the eligible jobs (whole evictions; no elastic jobs here).
    std::vector<std::size_t> eligible;
    for (std::size_t j = 0; j < running.size(); ++j)
      if (eligible_victim(running[j], p, 1000, {}, false)) eligible.push_back(j);
    auto fits_without = [&](std::uint32_t mask) {
      Cluster c = cluster;
      for (std::size_t j = 0; j < running.size(); ++j) {
        bool gone = false;
        for (std::size_t k = 0; k < eligible.size(); ++k)
          if ((mask >> k & 1U) && eligible[k] == j) gone = true;
        if (gone) continue;
        for (const RunningTask& t : running[j].tasks)
          for (GpuIndex g : t.assignment.gpus) c.nodes()[t.assignment.node].gpus[g].used_milli = kMilliPerGpu;
      }
      for (std::size_t n = 0; n < c.nodes().size(); ++n) {
        // Host resources of the remaining tasks (1 CPU, 1 GiB each).
        for (const RunningJob& job : running)
          for (const RunningTask& t : job.tasks)
            if (t.assignment.node == n && c.nodes()[n].gpus[t.assignment.gpus[0]].used_milli == kMilliPerGpu) {
              c.nodes()[n].cpu_used += t.assignment.cpu;
              c.nodes()[n].memory_used += t.assignment.memory;
            }
      }
      auto fresh = ClusterState::build(c, GpuModelRegistry::builtin()).value();
      GangOptions o;
      o.dry_run = true;
      return place_gang(fresh, spec, o).placed();
    };
    std::int64_t best = -1;
    for (std::uint32_t mask = 0; mask < (1U << eligible.size()); ++mask) {
      if (!fits_without(mask)) continue;
      std::int64_t cost = 0;
      for (std::size_t k = 0; k < eligible.size(); ++k)
        if (mask >> k & 1U) {
          const RunningJob& job = running[eligible[k]];
          const std::int64_t lost = lost_work(job, 0, job.tasks.size(), 1000);
          const std::int64_t restart = restart_work(job, 0, job.tasks.size());
          cost += order == nullptr ? lost + restart : fewest_gpus_victims.cost({&job, 0, 0, true, lost, restart, held_by(job), 1000});
        }
      if (best < 0 || cost < best) best = cost;
    }
    CAPTURE(trial);
    if (best < 0) {
      CHECK(plan.verdict != Verdict::kPlaced);
      continue;
    }
    REQUIRE(plan.verdict == Verdict::kPlaced);
    ++placed_cases;
    CHECK(plan.exact);
    CHECK(plan.cost == best);
    // The plan's set suffices and no victim can be given back.
    std::uint32_t mask = 0;
    for (const Victim& v : plan.victims)
      for (std::size_t k = 0; k < eligible.size(); ++k)
        if (eligible[k] == v.job) mask |= 1U << k;
    CHECK(fits_without(mask));
    for (std::size_t k = 0; k < eligible.size(); ++k)
      if (mask >> k & 1U) CHECK_FALSE(fits_without(mask & ~(1U << k)));
  }
  CHECK(placed_cases > 50);
}
