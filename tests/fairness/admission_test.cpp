// The admission planner: priorities and aging within a queue, non-borrowers before borrowers, DRF
// across queues, flavor choice, StrictFIFO, and reasons for pending jobs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/admission.hpp"

using namespace gpusched::fairness;
using gpusched::CompiledGroup;
using gpusched::CompiledJob;

namespace {

constexpr std::int64_t kGi = std::int64_t{1} << 30;

ResourceSpace space2() { return ResourceSpace{{"A100", "H100"}}; }

// cpu cores, memory GiB, A100 GPUs, H100 GPUs.
Amounts cpu_mem_gpus(std::int64_t cpu, std::int64_t mem_gi, std::int64_t a100 = 0, std::int64_t h100 = 0) {
  Amounts a(4);
  a << cpu * 1000, mem_gi * kGi, a100 * 1000, h100 * 1000;
  return a;
}

// A job of one task: 1 core, 1 GiB and `gpus` GPUs of `models` (of space2(); empty = any).
CompiledJob job(std::string name, std::string queue, std::int64_t gpus, std::vector<std::string> models = {},
                std::int32_t priority = 0, std::int64_t submit = 0) {
  return testing::job_of(std::move(name), std::move(queue), 1000, kGi, gpus * 1000, space2(), models, priority, submit);
}

QueueConfig queue(std::string name, std::string cohort = {}, Amounts nominal = {}) {
  QueueConfig q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  q.nominal = queue_amounts(nominal);
  return q;
}

std::vector<std::string> order(const AdmissionPlan& plan, const std::vector<CompiledJob>& jobs) {
  std::vector<std::string> out;
  for (const auto& a : plan.admitted) out.push_back(jobs[a.job].name);
  return out;
}

}  // namespace

TEST_CASE("within a queue: priority, then submission time, then input order") {
  const Amounts cap = cpu_mem_gpus(100, 100, 8, 8);
  auto p = FairSharePlanner::build(space2(), cap, cap, {queue("q")}).value();
  std::vector<CompiledJob> jobs{job("low-early", "q", 1, {}, 0, 10), job("high-late", "q", 1, {}, 5, 50),
                               job("low-earlier", "q", 1, {}, 0, 5), job("high-early", "q", 1, {}, 5, 20),
                               job("low-earlier-twin", "q", 1, {}, 0, 5)};
  const auto plan = p.plan(jobs);
  CHECK(order(plan, jobs) ==
        std::vector<std::string>{"high-early", "high-late", "low-earlier", "low-earlier-twin", "low-early"});
}

TEST_CASE("aging lifts long-waiting low-priority jobs, up to max_boost") {
  CompiledJob old_low = job("old-low", "q", 1, {}, 0, 0);
  CompiledJob new_high = job("new-high", "q", 1, {}, 3, 900);
  AgingPolicy aging{100, 1, 5, 1000};
  CHECK(effective_priority(old_low, aging) == 5);   // waited 1000 s: 10 steps, capped at 5
  CHECK(effective_priority(new_high, aging) == 4);  // waited 100 s: one step
  CHECK(effective_priority(old_low, AgingPolicy{}) == 0);
  CHECK(effective_priority(old_low, AgingPolicy{1, 1000000, std::int64_t{1} << 62, std::int64_t{1} << 62}) ==
        std::int64_t{1} << 62);  // saturates instead of overflowing

  const Amounts cap = cpu_mem_gpus(100, 100, 1, 0);  // room for one of them
  auto p = FairSharePlanner::build(space2(), cap, cap, {queue("q")}).value();
  std::vector<CompiledJob> jobs{new_high, old_low};
  CHECK(order(p.plan(jobs), jobs) == std::vector<std::string>{"new-high"});
  CHECK(order(p.plan(jobs, aging), jobs) == std::vector<std::string>{"old-low"});
}

TEST_CASE("across queues: weighted DRF with the lowest share first") {
  // Two queues without quota, 8 H100s, every job one GPU: weight 3 vs 1 gives 6 : 2, and the
  // interleaving follows the shares (ties to the queue listed first).
  const Amounts cap = cpu_mem_gpus(100, 100, 0, 8);
  auto heavy = queue("heavy");
  heavy.weight = 3;
  auto p = FairSharePlanner::build(space2(), cap, cap, {heavy, queue("light")}).value();
  std::vector<CompiledJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(job(fmt::format("h{}", i), "heavy", 1, {"H100"}));
  for (int i = 0; i < 8; ++i) jobs.push_back(job(fmt::format("l{}", i), "light", 1, {"H100"}));
  const auto plan = p.plan(jobs);
  CHECK(plan.queues[0].admitted == 6);
  CHECK(plan.queues[1].admitted == 2);
  CHECK(order(plan, jobs) == std::vector<std::string>{"h0", "l0", "h1", "h2", "h3", "l1", "h4", "h5"});
  CHECK(plan.queues[0].dominant_share == doctest::Approx(0.75));
  CHECK(plan.queues[0].fair_share == doctest::Approx(0.75));
  CHECK(plan.queues[1].fair_share == doctest::Approx(0.25));
  REQUIRE(plan.pending.size() == 8);
  CHECK(p.reason(plan, plan.pending[0], jobs) == "cluster: not enough free gpu:H100 (requested 1, free 0)");
}

TEST_CASE("a queue below its nominal quota is admitted before borrowers") {
  // Cohort of two, 4 H100 nominal each, 8 in the cluster. "greedy" already holds 2 of its 4;
  // "modest" holds nothing.
  const Amounts cap = cpu_mem_gpus(100, 100, 0, 8);
  auto greedy = queue("greedy", "lab", cpu_mem_gpus(100, 100, 0, 4));
  greedy.usage = queue_amounts(cpu_mem_gpus(0, 0, 0, 2));
  auto modest = queue("modest", "lab", cpu_mem_gpus(100, 100, 0, 4));
  auto p = FairSharePlanner::build(space2(), cap, cap - amounts_of(greedy.usage), {greedy, modest}).value();
  std::vector<CompiledJob> jobs{job("g1", "greedy", 2, {"H100"}), job("g2", "greedy", 2, {"H100"}),
                               job("g3", "greedy", 2, {"H100"}), job("m1", "modest", 2, {"H100"}),
                               job("m2", "modest", 2, {"H100"})};
  // Both heads fit their nominal quota (tier 0): DRF serves modest (share 0) first, then greedy and
  // modest tie at 0.25 and greedy, listed first, takes g1 (2 + 2 <= 4, not borrowing). The pool of
  // 8 is then used up, so g2 (which would borrow) and g3 wait: m2 is still within modest's nominal.
  const auto plan = p.plan(jobs);
  CHECK(order(plan, jobs) == std::vector<std::string>{"m1", "g1", "m2"});
  REQUIRE(plan.pending.size() == 2);
  CHECK(p.reason(plan, plan.pending[0], jobs) == "queue greedy: the cohort has no unused quota to lend on gpu:H100 "
                                  "(requested 2, available 0)");
  CHECK(plan.admitted[1].borrowed == false);

  // Now make the borrower the lower share: "greedy" would borrow with its head, "modest" holds 3
  // (share 0.375 > greedy's 0.25) but is below nominal with a 1-GPU head: modest goes first.
  auto greedy2 = queue("greedy", "lab", cpu_mem_gpus(100, 100, 0, 2));
  greedy2.usage = queue_amounts(cpu_mem_gpus(0, 0, 0, 2));
  auto modest2 = queue("modest", "lab", cpu_mem_gpus(100, 100, 0, 6));
  modest2.usage = queue_amounts(cpu_mem_gpus(0, 0, 0, 3));
  auto p2 = FairSharePlanner::build(space2(), cap, cap - amounts_of(greedy2.usage) - amounts_of(modest2.usage), {greedy2, modest2}).value();
  std::vector<CompiledJob> jobs2{job("borrow", "greedy", 1, {"H100"}), job("own", "modest", 1, {"H100"})};
  const auto plan2 = p2.plan(jobs2);
  CHECK(order(plan2, jobs2) == std::vector<std::string>{"own", "borrow"});
  CHECK(plan2.admitted[1].borrowed);
}

TEST_CASE("flavors: first flavor within nominal, borrowing on one flavor does not push another back") {
  const Amounts cap = cpu_mem_gpus(100, 100, 8, 8);
  auto t = queue("t", "lab", cpu_mem_gpus(100, 100, 4, 4));
  t.flavor_order = {"A100", "H100"};
  t.usage = queue_amounts(cpu_mem_gpus(0, 0, 6, 0));  // borrows 2 A100
  auto u = queue("u", "lab", cpu_mem_gpus(100, 100, 4, 4));
  auto p = FairSharePlanner::build(space2(), cap, cap - amounts_of(t.usage), {t, u}).value();
  // Any model: A100 would borrow, H100 is within nominal -> H100, not borrowing.
  const auto d = p.query(job("any", "t", 2));
  CHECK(d.admitted());
  CHECK_FALSE(d.borrows);
  CHECK(d.gpu_dim == 3);
  CHECK(d.reason == "fits within nominal quota on gpu:H100");
  // A100 only: borrows (u lends 2 of its 4... 6 + 2 = 8 <= pool 8).
  const auto a = p.query(job("a100", "t", 2, {"A100"}));
  CHECK(a.admitted());
  CHECK(a.borrows);
  const auto too_many = p.query(job("a100x3", "t", 3, {"A100"}));
  CHECK_FALSE(too_many.admitted());
  CHECK(too_many.reason == "queue t: the cohort has no unused quota to lend on gpu:A100 (requested 3, available 2)");
  // A model the cluster lacks: the jobs' registry (here A100, H100, L4) names it in the reason.
  gpusched::GpuModelRegistry registry;
  for (const char* model : {"A100", "H100", "L4"}) REQUIRE(registry.add(gpusched::GpuModel{model}).ok());
  auto with_l4 = FairSharePlanner::build(space2(), cap, cap - amounts_of(t.usage), {t, u}, &registry).value();
  CompiledJob l4 = job("l4", "t", 1);
  l4.groups[0].request.models = gpusched::model_bit(*registry.find("L4"));
  const auto none = with_l4.query(l4);
  CHECK_FALSE(none.admitted());
  CHECK(none.reason == "queue t: none of the allowed GPU models (L4) is offered");
  CHECK(none.outcome.verdict == gpusched::Verdict::kInfeasible);
  // The same registry's A100 is the space's A100: the answers above do not change with it.
  CHECK(with_l4.query(job("a100", "t", 2, {"A100"})).borrows);
  // u's own A100 quota that t borrowed is reclaimable.
  const auto reclaim = p.query(job("u-a100", "u", 4, {"A100"}));
  CHECK_FALSE(reclaim.admitted());
  CHECK(reclaim.reason ==
        "queue u: within nominal quota, but lent to borrowing queues (reclaimable) on gpu:A100 (requested 4, "
        "available 2); reclaim from: t borrows 2");
}

TEST_CASE("StrictFIFO stops a queue at its head; BestEffortFIFO moves on") {
  const Amounts cap = cpu_mem_gpus(100, 100, 0, 4);
  for (bool strict : {false, true}) {
    auto q = queue("q", "", cpu_mem_gpus(100, 100, 0, 4));
    q.strict_fifo = strict;
    auto p = FairSharePlanner::build(space2(), cap, cap, {q}).value();
    std::vector<CompiledJob> jobs{job("big", "q", 8, {"H100"}, 10), job("small", "q", 2, {}, 0)};
    const auto plan = p.plan(jobs);
    if (strict) {
      CHECK(plan.admitted.empty());
      REQUIRE(plan.pending.size() == 2);
      CHECK(p.reason(plan, plan.pending[1], jobs) == "queue q: waits behind big (StrictFIFO)");
    } else {
      CHECK(order(plan, jobs) == std::vector<std::string>{"small"});
      REQUIRE(plan.pending.size() == 1);
      CHECK(p.reason(plan, plan.pending[0], jobs) ==
            "queue q: exceeds nominal quota (no cohort to borrow from) on gpu:H100 (requested 8, available 4)");
    }
  }
}

TEST_CASE("hierarchical queues: weights at every level") {
  const Amounts cap = cpu_mem_gpus(1000, 1000, 0, 16);
  auto lab = queue("lab");
  lab.weight = 3;
  auto a = queue("a");
  a.parent = "lab";
  auto b = queue("b");
  b.parent = "lab";
  b.weight = 3;
  auto ops = queue("ops");
  auto p = FairSharePlanner::build(space2(), cap, cap, {lab, a, b, ops}).value();
  std::vector<CompiledJob> jobs;
  for (int i = 0; i < 16; ++i)
    for (const char* qn : {"a", "b", "ops"}) jobs.push_back(job(fmt::format("{}{}", qn, i), qn, 1, {"H100"}));
  const auto plan = p.plan(jobs);
  CHECK(plan.queues[1].admitted == 3);
  CHECK(plan.queues[2].admitted == 9);
  CHECK(plan.queues[3].admitted == 4);
  CHECK_FALSE(plan.queues[0].leaf);
  CHECK(plan.queues[0].usage[3] == 12000);
  CHECK(plan.queues[0].dominant_share == doctest::Approx(0.75));
  CHECK(plan.queues[0].fair_share == doctest::Approx(0.75));
  CHECK(plan.queues[2].fair_share == doctest::Approx(9.0 / 16.0));
}

TEST_CASE("planner input errors name the queue and field") {
  const Amounts cap = cpu_mem_gpus(1, 1);
  auto orphan = queue("x");
  orphan.parent = "nope";
  auto r = FairSharePlanner::build(space2(), cap, cap, {orphan});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "queues[0] (x).parent: no queue named \"nope\"");
  auto c1 = queue("c1");
  c1.parent = "c2";
  auto c2 = queue("c2");
  c2.parent = "c1";
  r = FairSharePlanner::build(space2(), cap, cap, {c1, c2});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("cycle") != std::string::npos);
  auto parent = queue("p", "lab", cpu_mem_gpus(1, 1));
  auto child = queue("k");
  child.parent = parent.name;
  r = FairSharePlanner::build(space2(), cap, cap, {parent, child});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("queues[0] (p): a queue with child queues takes no quota") == 0);
  auto w = queue("w");
  w.weight = 0;
  r = FairSharePlanner::build(space2(), cap, cap, {w});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "queues[0] (w).weight: expected a positive number, got 0");
  auto f = queue("f");
  f.flavor_order = {"B200"};
  r = FairSharePlanner::build(space2(), cap, cap, {f});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "queues[0] (f).flavors: unknown GPU model \"B200\" (not in the cluster)");
  auto p = FairSharePlanner::build(space2(), cap, cap, {queue("q")}).value();
  std::vector<CompiledJob> jobs{job("lost", "missing", 0)};
  const auto plan = p.plan(jobs);
  REQUIRE(plan.pending.size() == 1);
  CHECK(p.reason(plan, plan.pending[0], jobs) == "queue \"missing\": no such queue");
}

namespace {
// An elastic job of H100 workers (1 GPU, 1 core each) and optionally a rigid 2-core launcher.
CompiledJob elastic(std::string name, std::vector<CompiledGroup> groups) {
  CompiledJob j = job(std::move(name), "q", 0);
  for (CompiledGroup& g : groups)
    if (g.request.shape.needs_gpu()) g.request.models = gpusched::model_bit(1);  // H100, space2()'s second
  j.groups = std::move(groups);
  return j;
}
CompiledGroup worker(std::int32_t replicas, std::int32_t min) { return testing::group_of(replicas, min, 1000, 0, 1000); }
}  // namespace

TEST_CASE("partial admission: min_replicas admits as many replicas as the quota allows") {
  // Queue q: 6 H100 nominal, no cohort; cluster 8 H100.
  const Amounts cap = cpu_mem_gpus(100, 100, 0, 8);
  auto p = FairSharePlanner::build(space2(), cap, cap, {queue("q", "", cpu_mem_gpus(100, 100, 0, 6))}).value();

  // 8 workers (min 2) + a rigid launcher (2 cores): whole it needs 8 H100 > 6. S = 8 - 2 = 6 and the
  // workers keep 8 - s, so the least reduction that fits is s = 2: 6 workers, 6 + 2 = 8 cores.
  // The next job (1 H100, rigid) no longer fits.
  std::vector<CompiledJob> jobs{elastic("train", {worker(8, 2), testing::group_of(1, -1, 2000, 0, 0)}), job("small", "q", 1, {"H100"})};
  jobs[1].submit_time = 1;
  const auto plan = p.plan(jobs);
  REQUIRE(plan.admitted.size() == 1);
  CHECK(plan.admitted[0].partial);
  CHECK(plan.admitted[0].replicas == std::vector<std::int32_t>{6, 1});
  CHECK(plan.queues[0].usage[3] == 6000);
  CHECK(plan.queues[0].usage[0] == 6 * 1000 + 2000);  // 6 workers and the launcher
  REQUIRE(plan.pending.size() == 1);
  CHECK(p.reason(plan, plan.pending[0], jobs) ==
        "queue q: exceeds nominal quota (no cohort to borrow from) on gpu:H100 (requested 1, available 0)");

  // The same as a query, before anything is admitted.
  const auto d = p.query(jobs[0]);
  CHECK(d.admitted());
  CHECK(d.partial);
  CHECK(d.replicas == std::vector<std::int32_t>{6, 1});
  CHECK(d.reason == "fits partially (6+1 of 8+1 replicas)");

  // Two elastic groups shrink proportionally: A 4 (min 0), B 3 (min 1), S = 4; at step s A keeps
  // 4 - s and B keeps 3 - floor(2s/4): s = 0: 7, s = 1: 3 + 3 = 6 <= 6. Admitted with {3, 3}.
  const auto two = p.query(elastic("two", {worker(4, 0), worker(3, 1)}));
  CHECK(two.admitted());
  CHECK(two.replicas == std::vector<std::int32_t>{3, 3});

  // A job whose minimum does not fit stays pending, and the reason is about the minimum (7 > 6).
  const auto rigid_min = p.query(elastic("big", {worker(8, 7)}));
  CHECK_FALSE(rigid_min.admitted());
  CHECK(rigid_min.reason == "queue q: exceeds nominal quota (no cohort to borrow from) on gpu:H100 (requested 7, available 6)");

  // A job without min_replicas is all or nothing.
  const auto whole = p.query(elastic("whole", {worker(8, -1)}));
  CHECK_FALSE(whole.admitted());
  CHECK_FALSE(whole.partial);
}
