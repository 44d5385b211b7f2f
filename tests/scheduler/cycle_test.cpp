// The scheduling cycle, one hand-worked case per rule (the numbers are in the comments): admission
// that places, StrictFIFO vs BestEffortFIFO, quota flavors, priority preemption with lost work,
// Kueue's reclaim within a cohort, fair-share reclaim, nominations held for the next cycle, elastic
// shrink before eviction and grow into idle capacity, backoff, dry run and apply, failures.
#include <algorithm>
#include <limits>

#include "cycle_util.hpp"
#include "gpusched/scheduler/session.hpp"

using namespace cycle_test;

namespace {

ClusterState cluster(std::size_t nodes, std::size_t gpus = 8) {
  return ClusterState::build(make_cluster(nodes, gpus), GpuModelRegistry::builtin()).value();
}

std::vector<std::string> names(const std::vector<Start>& starts) {
  std::vector<std::string> out;
  for (const Start& s : starts) out.push_back(s.job);
  return out;
}

// 2 nodes x 8 GPUs, queues a and b of weight 1 without quotas; b runs two 8-GPU jobs (b1 since t=0,
// b2 since t=10), a waits with two 8-GPU jobs (a1 submitted at 50, a2 at 60).
struct FairShareCase {
  ClusterState state = cluster(2);
  std::vector<fairness::QueueConfig> queues = [this] {
    std::vector<fairness::QueueConfig> qs{queue(state, "a", fairness::kNoLimit), queue(state, "b", fairness::kNoLimit)};
    for (auto& q : qs) q.nominal.clear();
    return qs;
  }();
  std::vector<RunningJob> running{run(state, "b1", "b", 0, 0, 1, 8, 0, 0), run(state, "b2", "b", 1, 0, 1, 8, 0, 10)};
  std::vector<PendingJob> pending{job(state, "a1", "a", 1, 8, 0, 50), job(state, "a2", "a", 1, 8, 0, 60)};
};

// One 8-GPU node; queues P1 and P2 (siblings, no quotas), a under P2 and b under P1, listed a, b, P1,
// P2; ja in a and jb in b, 8 GPUs each.
struct SiblingQueuesCase {
  ClusterState state = cluster(1);
  std::vector<fairness::QueueConfig> queues = [this] {
    std::vector<fairness::QueueConfig> qs{queue(state, "a", fairness::kNoLimit), queue(state, "b", fairness::kNoLimit),
                                          queue(state, "P1", 0), queue(state, "P2", 0)};
    qs[0].parent = "P2";
    qs[1].parent = "P1";
    for (auto& q : qs) q.nominal.clear();  // no quotas
    return qs;
  }();
  std::vector<PendingJob> pending{job(state, "ja", "a", 1, 8), job(state, "jb", "b", 1, 8)};
};

}  // namespace

TEST_CASE("admission places: a job starts only where its gang places; BestEffortFIFO moves on") {
  // 2 nodes x 8 GPUs, nothing running, no queues (one implicit queue, priority then submit order).
  // a: 2 tasks x 4 GPUs -> placed (8 of 16 GPUs); b: 2 x 8 GPUs needs two idle nodes, only one is
  // idle -> waits (not now, too few tasks fit); c: 1 x 4 GPUs -> placed behind b (BestEffortFIFO).
  auto state = cluster(2);
  std::vector<PendingJob> pending{job(state, "a", "", 2, 4, 0, 1), job(state, "b", "", 2, 8, 0, 2),
                                  job(state, "c", "", 1, 4, 0, 3)};
  auto d = run_cycle(state, {}, pending, {}, 100).value();
  CHECK(names(d.starts) == std::vector<std::string>{"a", "c"});
  REQUIRE(d.waiting.size() == 1);
  CHECK(d.waiting[0].job == "b");
  CHECK(d.waiting[0].outcome.verdict == Verdict::kNotNow);
  CHECK(state.shares().total_free() == 4 * kMilliPerGpu);  // 16 - 8 - 4
  // Every start is a whole gang: 2 tasks of a on distinct or same nodes, each 4 GPUs.
  CHECK(d.find_start("a")->tasks.size() == 2);
}

TEST_CASE("a failed shape's outcome is reused only for the same shape: a larger job says its own reasons") {
  // 2 nodes x 8 GPUs, node 0 full (running r, 8 GPUs), no preemption. a (1 x 8 GPUs) waits: not now,
  // node 1 has room. a2 (the same shape) waits with a's outcome. huge (1 x 16 GPUs) fails too, but it
  // fits no node even empty: infeasible, with its own numbers (needs 16 GPUs), not a's (8).
  auto state = cluster(2);
  std::vector<RunningJob> running{run(state, "r", "", 0, 0, 1, 8)};
  std::vector<PendingJob> pending{job(state, "x", "", 1, 8, 0, 1), job(state, "a", "", 1, 8, 0, 2),
                                  job(state, "a2", "", 1, 8, 0, 3), job(state, "huge", "", 1, 16, 0, 4)};
  CycleOptions o;
  o.preempt = false;
  auto d = run_cycle(state, running, pending, {}, 100, o).value();
  CHECK(names(d.starts) == std::vector<std::string>{"x"});
  const Waiting* a = d.find_waiting("a");
  const Waiting* a2 = d.find_waiting("a2");
  const Waiting* huge = d.find_waiting("huge");
  REQUIRE((a && a2 && huge));
  CHECK(a->outcome.verdict == Verdict::kNotNow);
  CHECK(a2->outcome.verdict == Verdict::kNotNow);
  CHECK(d.stats.cache_hits == 1);  // a2 only
  CHECK(huge->outcome.verdict == Verdict::kInfeasible);
  const auto gpus = std::find_if(huge->outcome.reasons.begin(), huge->outcome.reasons.end(),
                                 [](const Reason& r) { return r.kind == ReasonKind::kInsufficientGpus; });
  REQUIRE(gpus != huge->outcome.reasons.end());
  CHECK(gpus->needed == 16);
}

TEST_CASE("StrictFIFO: the head that does not place blocks its queue") {
  // Same jobs in a StrictFIFO queue: b (16 GPUs) does not place, so c waits behind it even though
  // 8 GPUs are idle: kBehindStrictHead naming b (pending index 1).
  auto state = cluster(2);
  std::vector<fairness::QueueConfig> queues{queue(state, "q", 16, "", true)};
  std::vector<PendingJob> pending{job(state, "a", "q", 2, 4, 0, 1), job(state, "b", "q", 2, 8, 0, 2),
                                  job(state, "c", "q", 1, 4, 0, 3)};
  auto d = run_cycle(state, {}, pending, queues, 100).value();
  CHECK(names(d.starts) == std::vector<std::string>{"a"});
  const Waiting* c = d.find_waiting("c");
  REQUIRE(c);
  CHECK(c->outcome.reasons.at(0).kind == ReasonKind::kBehindStrictHead);
  CHECK(c->behind == 1);
}

TEST_CASE("queue order: the cycle serves queues as the fair-share planner does (equal shares: the queue listed first)") {
  // fairness/admission_rule.hpp's QueueOrder, as in tests/fairness/admission_rule_test.cpp: P1 and
  // P2 are siblings with equal shares and P1 is listed first, so its child b is served before a
  // (listed first, under P2). One 8-GPU node: only the first job served starts.
  SiblingQueuesCase c;
  auto d = run_cycle(c.state, {}, c.pending, c.queues, 100).value();
  CHECK(names(d.starts) == std::vector<std::string>{"jb"});
}

TEST_CASE("one job model: the fair-share planner reads the cycle's pending jobs in place and admits as the cycle starts") {
  // The same queues and jobs as above; the planner is given the cycle's PendingJobs themselves
  // (JobSpan over their CompiledJob, no copy): it admits jb first too, and its plan equals the one
  // made from copies of the compiled jobs.
  SiblingQueuesCase c;
  const ClusterState& state = c.state;
  const std::vector<fairness::QueueConfig>& queues = c.queues;
  const std::vector<PendingJob>& pending = c.pending;
  const auto cluster_totals = fairness::fairness_cluster(state).value();
  const auto planner = fairness::FairSharePlanner::build(cluster_totals.space, cluster_totals.capacity, cluster_totals.free,
                                                         queues, &state.registry())
                           .value();
  const JobSpan in_place(std::span<const PendingJob>(pending), &PendingJob::job);
  REQUIRE(in_place.size() == 2);
  CHECK(&in_place[1] == &pending[1].job);  // a view: the cycle's own objects
  const fairness::AdmissionPlan plan = planner.plan(in_place);
  REQUIRE(plan.admitted.size() == 1);
  CHECK(pending[plan.admitted[0].job].job.name == "jb");
  CHECK(planner.reason(plan, plan.pending.at(0), in_place) == "cluster: not enough free gpu:A100-SXM4-40GB (requested 8, free 0)");
  const std::vector<CompiledJob> copies{pending[0].job, pending[1].job};
  const fairness::AdmissionPlan from_copies = planner.plan(copies);
  REQUIRE(from_copies.admitted.size() == 1);
  CHECK(from_copies.admitted[0].job == plan.admitted[0].job);
  CHECK(from_copies.pending.at(0).job == plan.pending.at(0).job);
  auto d = run_cycle(c.state, {}, c.pending, c.queues, 100).value();
  CHECK(names(d.starts) == std::vector<std::string>{"jb"});
}

TEST_CASE("flavors: a flavor within nominal quota is taken before an earlier one that borrows") {
  // fairness::choose_flavor in the cycle. n0 has 8 A100s, n1 8 H100s. Queue q's flavor order is
  // A100 then H100; its nominal quota is 0 A100s (it may borrow the 8 that `lender` lends to their
  // cohort) and 8 H100s. Its 4-GPU job fits both; it starts on the H100s, not borrowing (Kueue).
  std::vector<NodeSpec> specs(2);
  for (std::size_t i = 0; i < 2; ++i) {
    specs[i].name = "n" + std::to_string(i);
    specs[i].cpu = 64 * kMilliPerCpu;
    specs[i].memory = 512 * kGiB;
    specs[i].gpus.assign(8, GpuSpec{i == 0 ? kModel : "H100-80GB"});
  }
  auto state = ClusterState::build(Cluster(std::move(specs)), GpuModelRegistry::builtin()).value();
  const auto space = fairness::fairness_cluster(state).value().space;
  const Eigen::Index a100 = *space.gpu_dim(kModel), h100 = *space.gpu_dim("H100-80GB");
  std::vector<fairness::QueueConfig> queues{queue(state, "q", 0, "c"), queue(state, "lender", 8, "c")};
  queues[0].nominal[static_cast<std::size_t>(h100)] = 8 * kMilliPerGpu;
  queues[0].flavor_order = {kModel, "H100-80GB"};
  queues[1].nominal[static_cast<std::size_t>(h100)] = 0;
  std::vector<PendingJob> pending{job(state, "j", "q", 1, 4)};
  pending[0].job.groups[0].request.models = kAnyGpuModel;
  auto d = run_cycle(state, {}, pending, queues, 100).value();
  REQUIRE(d.starts.size() == 1);
  CHECK(d.starts[0].gpu_dim == h100);
  CHECK_FALSE(d.starts[0].borrowed);
  CHECK(d.starts[0].tasks[0].assignment.node == 1);
  // With H100s not offered to q, the same job borrows A100s.
  for (const Start& s : d.starts)
    for (const RunningTask& t : s.tasks) REQUIRE(state.release(t.assignment).ok());
  queues[0].flavor_order = {kModel};
  auto borrowing = run_cycle(state, {}, pending, queues, 100).value();
  REQUIRE(borrowing.starts.size() == 1);
  CHECK(borrowing.starts[0].gpu_dim == a100);
  CHECK(borrowing.starts[0].borrowed);
}

TEST_CASE("quota: a job over its queue's nominal quota waits even on an idle cluster; the next fits") {
  // Queue q, no cohort, nominal 8 GPUs: x (12 GPUs) is over nominal (need 12000, have 8000
  // milli-GPU); y (8 GPUs) fits exactly.
  auto state = cluster(2);
  std::vector<fairness::QueueConfig> queues{queue(state, "q", 8)};
  std::vector<PendingJob> pending{job(state, "x", "q", 3, 4, 5, 1), job(state, "y", "q", 2, 4, 0, 2)};
  CycleOptions o;
  o.preempt = false;
  auto d = run_cycle(state, {}, pending, queues, 10, o).value();
  CHECK(names(d.starts) == std::vector<std::string>{"y"});
  const Waiting* x = d.find_waiting("x");
  REQUIRE(x);
  REQUIRE(!x->outcome.reasons.empty());
  CHECK(x->outcome.reasons[0].kind == ReasonKind::kOverNominalQuota);
  CHECK(x->outcome.reasons[0].needed == 12000);
  CHECK(x->outcome.reasons[0].available == 8000);
}

TEST_CASE("priority preemption: the lower-priority gang is evicted whole, its lost work reported") {
  // 1 node x 8 GPUs. low (priority 0) runs 2 tasks x 4 GPUs since t=0, last checkpoint t=40. high
  // (priority 10) needs 8 GPUs at t=100. low loses 8 GPUs x (100 - 40) s = 480 GPU-s = 480,000
  // milli-GPU-s, plus its restart cost 5 s x 8 GPUs = 40,000.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "low", "", 0, 0, 2, 4, 0, 0)};
  running[0].last_checkpoint = 40;
  running[0].restart_cost = 5;
  std::vector<PendingJob> pending{job(state, "high", "", 1, 8, 10, 50)};
  auto d = run_cycle(state, running, pending, {}, 100).value();
  REQUIRE(d.evictions.size() == 1);
  const Eviction& e = d.evictions[0];
  CHECK(e.job == "low");
  CHECK(e.for_job == "high");
  CHECK(e.whole);
  CHECK(e.reason == EvictionReason::kPriority);
  CHECK(e.lost_milli_gpu_seconds == 480'000);
  CHECK(e.restart_milli_gpu_seconds == 40'000);
  REQUIRE(d.starts.size() == 1);
  CHECK(d.starts[0].preempted);
  CHECK(state.shares().total_free() == 0);
  advance(running, pending, d);
  REQUIRE(running.size() == 1);
  CHECK(running[0].name == "high");
  check_no_overcommit(state, running);
}

TEST_CASE("lost work beyond 64 bits: an eviction or a failure that would report it saturated is refused") {
  // 1 node x 8 GPUs; low runs 8 GPUs since t=0 without checkpoints. At now = 2^62 its lost work is
  // 8,000 milli-GPU x 2^62 s, beyond 2^63: the figure would saturate at 9.2e15 GPU-seconds, which is
  // not the job's work. The cycle is refused, naming the job, and keeps nothing.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "low", "", 0, 0, 1, 8, 0, 0)};
  std::vector<PendingJob> pending{job(state, "high", "", 1, 8, 10, 50)};
  auto d = run_cycle(state, running, pending, {}, kMaxCycleTime);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == ErrorCode::kOverflow);
  CHECK(d.error().field == "running[0]");
  CHECK(d.error().message.find("running job \"low\"") != std::string::npos);
  CHECK(state.shares().total_free() == 0);  // low still holds its 8 GPUs
  // 2^50 s is still a number (8,000 x 2^50 < 2^63): evicted, the figure exact.
  auto ok = run_cycle(state, running, pending, {}, Seconds{1} << 50).value();
  REQUIRE(ok.evictions.size() == 1);
  CHECK(ok.evictions[0].lost_milli_gpu_seconds == 8'000 * (std::int64_t{1} << 50));
  // A failure likewise: refused before the node is marked failed or anything released.
  auto s2 = cluster(1);
  std::vector<RunningJob> r2{run(s2, "x", "", 0, 0, 1, 8, 0, 0)};
  FailureHistory history;
  auto f = on_failure(s2, r2, 0, -1, kMaxCycleTime, history, FailureOptions{});
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code == ErrorCode::kOverflow);
  CHECK(s2.healthy(0));
  CHECK(s2.shares().total_free() == 0);
  // And its clock is the cycle's: a time past 2^62 is refused by name (not_before would wrap).
  auto late = on_failure(s2, r2, 0, -1, std::numeric_limits<Seconds>::max(), history, FailureOptions{});
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().field == "now");
  CHECK(s2.healthy(0));
}

TEST_CASE("checkpoints: the victim whose last checkpoint is latest is the cheapest") {
  // 2 nodes x 8 GPUs, a and b each hold one node at priority 0 since t=0; a checkpoints every 30 s
  // (latest at t=90: loses 8 x 10 s = 80,000), b every 1000 s (none yet: loses 8 x 100 s = 800,000).
  // high (8 GPUs) evicts a.
  auto state = cluster(2);
  std::vector<RunningJob> running{run(state, "a", "", 0, 0, 1, 8), run(state, "b", "", 1, 0, 1, 8)};
  running[0].checkpoint_interval = 30;
  running[1].checkpoint_interval = 1000;
  std::vector<PendingJob> pending{job(state, "high", "", 1, 8, 10, 50)};
  auto d = run_cycle(state, running, pending, {}, 100).value();
  REQUIRE(d.evictions.size() == 1);
  CHECK(d.evictions[0].job == "a");
  CHECK(d.evictions[0].lost_milli_gpu_seconds == 80'000);
}

TEST_CASE("victim order: a user's order chooses the victim; a failed order is an error that keeps nothing") {
  // The setting above: the default order evicts a (the least lost work). An order by name evicts
  // the alphabetically last job first; one that fails makes the cycle an error.
  struct LastNameFirst final : VictimOrder {
    std::string_view name() const override { return "last-name"; }
    std::int64_t cost(const VictimCandidate& c) const override { return 'z' - c.job->name[0]; }
  };
  struct Failing final : VictimOrder {
    std::string_view name() const override { return "failing"; }
    std::int64_t cost(const VictimCandidate&) const override {
      why = "no opinion";
      return 0;
    }
    std::string_view failure() const override { return why; }
    mutable std::string why;
  };
  auto state = cluster(2);
  std::vector<RunningJob> running{run(state, "a", "", 0, 0, 1, 8), run(state, "b", "", 1, 0, 1, 8)};
  running[0].checkpoint_interval = 30;
  running[1].checkpoint_interval = 1000;
  std::vector<PendingJob> pending{job(state, "high", "", 1, 8, 10, 50)};
  const LastNameFirst last_name;
  CycleOptions o;
  o.preemption.victim_order = &last_name;
  o.dry_run = true;
  auto d = run_cycle(state, running, pending, {}, 100, o).value();
  REQUIRE(d.evictions.size() == 1);
  CHECK(d.evictions[0].job == "b");
  CHECK(d.evictions[0].lost_milli_gpu_seconds == 800'000);  // still the work it loses

  const Failing failing;
  o.preemption.victim_order = &failing;
  o.dry_run = false;
  const ClusterState before = state;
  auto e = run_cycle(state, running, pending, {}, 100, o);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().field == "preemption.victim_order");
  CHECK(e.error().message.find("no opinion") != std::string::npos);
  CHECK(state.same_allocation_as(before));
}

TEST_CASE("equal priority: lower-or-newer evicts only newer jobs, never back") {
  // 1 node x 8 GPUs. newer (submitted t=20) runs; older (submitted t=10, same priority) waits. With
  // kLowerOrNewerEqualPriority older evicts newer; then newer (pending again) cannot evict older
  // (older is not newer than it). With kLowerPriority nothing happens.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "newer", "", 0, 0, 1, 8, 0, 20)};
  running[0].submit_time = 20;
  std::vector<PendingJob> all{job(state, "older", "", 1, 8, 0, 10), job(state, "newer", "", 1, 8, 0, 20)};
  std::vector<PendingJob> pending{all[0]};
  CycleOptions o;
  o.preemption.within_queue = WithinQueue::kLowerPriority;
  CHECK(run_cycle(state, running, pending, {}, 100, o).value().evictions.empty());
  o.preemption.within_queue = WithinQueue::kLowerOrNewerEqualPriority;
  auto d = run_cycle(state, running, pending, {}, 100, o).value();
  REQUIRE(d.evictions.size() == 1);
  advance(running, pending, d, all);
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].job.name == "newer");
  auto back = run_cycle(state, running, pending, {}, 200, o).value();
  CHECK(back.evictions.empty());
  CHECK(back.starts.empty());
}

TEST_CASE("Kueue reclaimWithinCohort: a queue within its nominal quota reclaims what a borrower holds") {
  // 2 nodes x 8 GPUs; queues a and b in cohort c, nominal 8 GPUs each. b runs two 8-GPU jobs (b1
  // since t=0, b2 since t=60): 16 GPUs, borrowing 8 of a's. a's job (8 GPUs) is within a's nominal
  // quota but the pool is lent out: kReclaimable -> evict one of b's jobs. Lost work: b1 8 x 100 s =
  // 800,000, b2 8 x 40 s = 320,000: b2 is evicted (cheapest), reason cohort reclaim.
  auto state = cluster(2);
  std::vector<fairness::QueueConfig> queues{queue(state, "a", 8, "c"), queue(state, "b", 8, "c")};
  std::vector<RunningJob> running{run(state, "b1", "b", 0, 0, 1, 8, 5, 0), run(state, "b2", "b", 1, 0, 1, 8, 5, 60)};
  std::vector<PendingJob> pending{job(state, "a1", "a", 1, 8, 0, 90)};
  CycleOptions o;
  o.fair_share_reclaim = false;
  auto d = run_cycle(state, running, pending, queues, 100, o).value();
  REQUIRE(d.evictions.size() == 1);
  CHECK(d.evictions[0].job == "b2");
  CHECK(d.evictions[0].reason == EvictionReason::kCohortReclaim);
  CHECK(d.evictions[0].lost_milli_gpu_seconds == 320'000);
  CHECK(names(d.starts) == std::vector<std::string>{"a1"});

  SUBCASE("never: no reclaim, a1 waits with the reclaimable reason") {
    auto s2 = cluster(2);
    std::vector<RunningJob> r2{run(s2, "b1", "b", 0, 0, 1, 8, 5, 0), run(s2, "b2", "b", 1, 0, 1, 8, 5, 60)};
    o.reclaim_within_cohort = CohortReclaim::kNever;
    auto d2 = run_cycle(s2, r2, pending, queues, 100, o).value();
    CHECK(d2.evictions.empty());
    const Waiting* w = d2.find_waiting("a1");
    REQUIRE(w);
    CHECK(w->outcome.reasons.at(0).kind == ReasonKind::kReclaimable);
  }
  SUBCASE("the preemptor's queue's own policy decides over the cycle's (Kueue: per ClusterQueue)") {
    // a says Never while the cycle says Any: no reclaim. a says LowerPriority: b's jobs (priority
    // 5) outrank a1 (0), so none; Any: b2 goes. b's own policy is not what counts.
    for (const auto& [own, evicts] : std::vector<std::pair<CohortReclaim, bool>>{
             {CohortReclaim::kNever, false}, {CohortReclaim::kLowerPriority, false}, {CohortReclaim::kAny, true}}) {
      auto s4 = cluster(2);
      std::vector<RunningJob> r4{run(s4, "b1", "b", 0, 0, 1, 8, 5, 0), run(s4, "b2", "b", 1, 0, 1, 8, 5, 60)};
      auto q4 = queues;
      q4[0].reclaim_within_cohort = own;
      q4[1].reclaim_within_cohort = CohortReclaim::kNever;
      o.reclaim_within_cohort = own == CohortReclaim::kAny ? CohortReclaim::kNever : CohortReclaim::kAny;
      auto d4 = run_cycle(s4, r4, pending, q4, 100, o).value();
      CHECK(d4.evictions.size() == (evicts ? 1U : 0U));
    }
    // withinClusterQueue per queue likewise: a1 (priority 9) beside a's own a0 (priority 1) on a
    // full cluster evicts it only when a's policy allows.
    for (const auto& [own, evicts] : std::vector<std::pair<WithinQueue, bool>>{{WithinQueue::kNever, false},
                                                                                {WithinQueue::kLowerPriority, true}}) {
      auto s5 = cluster(1);
      std::vector<RunningJob> r5{run(s5, "a0", "a", 0, 0, 1, 8, 1, 0)};
      std::vector<PendingJob> p5{job(s5, "a9", "a", 1, 8, 9, 90)};
      auto q5 = queues;
      q5[0].within_queue = own;
      CycleOptions o5;
      o5.preemption.within_queue = own == WithinQueue::kNever ? WithinQueue::kLowerPriority : WithinQueue::kNever;
      CHECK(run_cycle(s5, r5, p5, q5, 100, o5).value().evictions.size() == (evicts ? 1U : 0U));
    }
  }
  SUBCASE("borrowWithinCohort: a queue that must borrow takes lower-priority work of the cohort's borrowers") {
    // 3 nodes x 8 GPUs, full; a and b have nominal 12 each in cohort c. a0 (a, 8 GPUs), b1 and b2
    // (b, 16 GPUs, priority 1: b borrows 4). a9 (a, 8 GPUs, priority 5) would take a to 16: it must
    // borrow, so reclaimWithinCohort alone does not let it evict; with borrowWithinCohort
    // LowerPriority it evicts one of b's jobs (then a borrows 4 and b none), unless the threshold is
    // below b's priority.
    struct Case {
      BorrowWithinCohort borrow;
      std::size_t evictions;
    };
    for (const Case& c : {Case{{}, 0}, Case{{true, std::nullopt}, 1}, Case{{true, 1}, 1}, Case{{true, 0}, 0}}) {
      auto s6 = cluster(3);
      std::vector<RunningJob> r6{run(s6, "a0", "a", 0, 0, 1, 8, 1, 0), run(s6, "b1", "b", 1, 0, 1, 8, 1, 0),
                                 run(s6, "b2", "b", 2, 0, 1, 8, 1, 60)};
      std::vector<PendingJob> p6{job(s6, "a9", "a", 1, 8, 5, 90)};
      std::vector<fairness::QueueConfig> q6{queue(s6, "a", 12, "c"), queue(s6, "b", 12, "c")};
      q6[0].reclaim_within_cohort = CohortReclaim::kAny;
      q6[0].within_queue = WithinQueue::kNever;  // a0 is not a victim
      q6[0].borrow_within_cohort = c.borrow;
      CycleOptions o6;
      o6.fair_share_reclaim = false;
      auto d6 = run_cycle(s6, r6, p6, q6, 100, o6).value();
      REQUIRE(d6.evictions.size() == c.evictions);
      if (c.evictions) {
        CHECK(d6.evictions[0].reason == EvictionReason::kCohortReclaim);
        CHECK(d6.evictions[0].job.rfind("b", 0) == 0);
        CHECK(names(d6.starts) == std::vector<std::string>{"a9"});
      }
    }
  }
  SUBCASE("b within its own nominal quota is not reclaimed from") {
    // b runs only b1 (8 GPUs = its nominal): a's 16-GPU job would have to borrow; nothing is
    // reclaimable, a2 waits.
    auto s3 = cluster(2);
    std::vector<RunningJob> r3{run(s3, "b1", "b", 0, 0, 1, 8, 5, 0)};
    std::vector<PendingJob> p3{job(s3, "a2", "a", 2, 8, 0, 90)};
    auto d3 = run_cycle(s3, r3, p3, queues, 100, o).value();
    CHECK(d3.evictions.empty());
    CHECK(d3.starts.empty());
  }
}

TEST_CASE("fair-share reclaim: an idle queue takes back from the queue above its share, not further") {
  // 2 nodes x 8 GPUs, queues a and b of weight 1, no quotas. b holds all 16 GPUs (two 8-GPU jobs).
  // a's 8-GPU job: after the swap a holds 8, b 8: 8 <= 8, allowed. A second a-job (8 GPUs) would
  // leave a at 16 vs b at 0: refused, it waits.
  FairShareCase c;
  auto& [state, queues, running, pending] = c;
  auto d = run_cycle(state, running, pending, queues, 100).value();
  REQUIRE(d.evictions.size() == 1);
  CHECK(d.evictions[0].reason == EvictionReason::kFairShare);
  CHECK(names(d.starts) == std::vector<std::string>{"a1"});
  CHECK(d.find_waiting("a2") != nullptr);
}

TEST_CASE("fair-share reclaim compares the queues' subtrees where their paths part (H-DRF), not the leaves") {
  // 1 node x 8 GPUs, every GPU held by 2-GPU jobs. Queue tree: A (weight 1) with leaves A1 and A2,
  // and leaf B (weight 1), all under the root; no quotas.
  auto state = cluster(1);
  auto tree = [&](double w_a1, double w_a2) {
    std::vector<fairness::QueueConfig> qs{queue(state, "A", fairness::kNoLimit), queue(state, "A1", fairness::kNoLimit),
                                          queue(state, "A2", fairness::kNoLimit), queue(state, "B", fairness::kNoLimit)};
    for (auto& q : qs) q.nominal.clear();
    qs[1].parent = qs[2].parent = "A";
    qs[1].weight = w_a1;
    qs[2].weight = w_a2;
    return qs;
  };
  SUBCASE("leaf weights count only among siblings") {
    // A1 (weight 3 within A) holds 6 GPUs, B holds 2; B's 2-GPU job. At the root A holds 6, B 2:
    // (2 + 2) / 1 <= (6 - 2) / 1, so B takes a job of A1's. (Comparing the leaves with their own
    // weights, 4 / 1 against 4 / 3, refused it: A1's weight says nothing about A against B.)
    std::vector<RunningJob> running{run(state, "a1", "A1", 0, 0, 1, 2, 0, 0), run(state, "a2", "A1", 0, 2, 1, 2, 0, 10),
                                    run(state, "a3", "A1", 0, 4, 1, 2, 0, 20), run(state, "b1", "B", 0, 6, 1, 2, 0, 30)};
    std::vector<PendingJob> pending{job(state, "bp", "B", 1, 2, 0, 50), job(state, "bq", "B", 1, 2, 0, 60)};
    auto d = run_cycle(state, running, pending, tree(3, 1), 100).value();
    REQUIRE(d.evictions.size() == 1);
    CHECK(d.evictions[0].reason == EvictionReason::kFairShare);
    CHECK(running[d.evictions[0].running].queue == "A1");
    CHECK(names(d.starts) == std::vector<std::string>{"bp"});
    // bq next: A 4, B 4 after the swap; (4 + 2) / 1 > (4 - 2) / 1: it waits.
    CHECK(d.find_waiting("bq") != nullptr);
  }
  SUBCASE("a queue takes back from its sibling, not from a subtree at its share") {
    // A2 holds 4, B holds 4, A1 nothing; A1's 2-GPU job. At the root A and B hold 4 each:
    // (4 + 2) / 1 > (4 - 2) / 1, B is not taken from. Within A: (0 + 2) / 1 <= (4 - 2) / 1, A2 is.
    // (Leaf against leaf, B's job was as reclaimable as A2's: 2 / 1 <= 2 / 1.)
    std::vector<RunningJob> running{run(state, "b1", "B", 0, 0, 1, 2, 0, 0), run(state, "b2", "B", 0, 2, 1, 2, 0, 0),
                                    run(state, "x1", "A2", 0, 4, 1, 2, 0, 0), run(state, "x2", "A2", 0, 6, 1, 2, 0, 0)};
    std::vector<PendingJob> pending{job(state, "p", "A1", 1, 2, 0, 50)};
    auto d = run_cycle(state, running, pending, tree(1, 1), 100).value();
    REQUIRE(d.evictions.size() == 1);
    CHECK(d.evictions[0].reason == EvictionReason::kFairShare);
    CHECK(running[d.evictions[0].running].queue == "A2");
    CHECK(names(d.starts) == std::vector<std::string>{"p"});
  }
}

TEST_CASE("nomination: freed capacity is held for the preemptor and honoured first next cycle") {
  // 1 node x 8 GPUs; low runs 8 GPUs; high (priority 10) preempts it, but evictions take a cycle:
  // high is nominated, not started. Next cycle, low is pending again (requeued) and listed first,
  // and a third job filler also waits: stage 0 starts high on the held GPUs before anyone else.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "low", "", 0, 0, 1, 8, 0, 0)};
  std::vector<PendingJob> all{job(state, "high", "", 1, 8, 10, 50), job(state, "low", "", 1, 8, 0, 0)};
  std::vector<PendingJob> pending{all[0]};
  CycleOptions o;
  o.preemptor_starts_next_cycle = true;
  auto d1 = run_cycle(state, running, pending, {}, 100, o).value();
  REQUIRE(d1.evictions.size() == 1);
  CHECK(d1.starts.empty());
  REQUIRE(d1.nominations.size() == 1);
  CHECK(d1.nominations[0].job == "high");
  CHECK(d1.nominations[0].victims == std::vector<std::string>{"low"});
  CHECK(state.shares().total_free() == 8 * kMilliPerGpu);  // low gone, high not yet there
  advance(running, pending, d1, all);
  // low is requeued; put it first in the list: it still must not take the held GPUs.
  std::rotate(pending.begin(), pending.end() - 1, pending.end());
  REQUIRE(pending[0].job.name == "low");
  auto d2 = run_cycle(state, running, pending, {}, 110, o, d1.nominations).value();
  REQUIRE(d2.starts.size() == 1);
  CHECK(d2.starts[0].job == "high");
  CHECK(d2.starts[0].nominated);
  CHECK(d2.evictions.empty());  // low does not preempt high back (lower priority)
  CHECK(d2.find_waiting("low") != nullptr);
}

TEST_CASE("elastic: a gang above its minimum shrinks before anyone is evicted") {
  // 1 node x 8 GPUs: e runs 4 tasks x 2 GPUs, minimum 2 tasks (priority 0); r (rigid, priority 0)
  // would not do. high needs 4 GPUs: shedding e's 2 extra tasks frees exactly 4 GPUs; e keeps 2.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "e", "", 0, 0, 4, 2, 0, 0)};
  running[0].min_tasks = 2;
  running[0].max_tasks = 4;
  std::vector<PendingJob> pending{job(state, "high", "", 1, 4, 10, 50)};
  CycleOptions o;
  o.grow_elastic = false;
  auto d = run_cycle(state, running, pending, {}, 100, o).value();
  REQUIRE(d.evictions.size() == 1);
  CHECK_FALSE(d.evictions[0].whole);
  CHECK(d.evictions[0].tasks == std::vector<std::uint32_t>{2, 3});
  CHECK(names(d.starts) == std::vector<std::string>{"high"});
  advance(running, pending, d);
  REQUIRE(running.size() == 2);
  CHECK(running[0].tasks.size() == 2);  // e at its minimum, never below
  check_no_overcommit(state, running);
}

TEST_CASE("elastic: a running gang grows into idle capacity after every pending job had its chance") {
  // 1 node x 8 GPUs: e runs 2 tasks x 2 GPUs (max 4); p (2 GPUs) waits. p starts first (4 + 2 = 6
  // GPUs used), then e grows by the one task that still fits (8 GPUs), not two.
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "e", "", 0, 0, 2, 2, 0, 0)};
  running[0].min_tasks = 1;
  running[0].max_tasks = 4;
  std::vector<PendingJob> pending{job(state, "p", "", 1, 2, 0, 5)};
  auto d = run_cycle(state, running, pending, {}, 100).value();
  CHECK(names(d.starts) == std::vector<std::string>{"p"});
  REQUIRE(d.grows.size() == 1);
  CHECK(d.grows[0].tasks.size() == 1);
  CHECK(state.shares().total_free() == 0);
  advance(running, pending, d);
  CHECK(running[0].tasks.size() == 3);
  check_no_overcommit(state, running);
}

TEST_CASE("elastic: a job of several groups grows each group up to its replicas, with its own request") {
  // 1 node x 8 GPUs; a blocker holds 3. mixed has ps (1 GPU, 1..2 replicas) and worker (2 GPUs,
  // 2..3 replicas): it starts at its minimum, 1 + 2 x 2 = 5 GPUs. The blocker ends; the next cycle
  // grows ps by one (1 GPU) and worker by one (2 GPUs): 8 GPUs, each task of its own group's shape
  // (growing by the last task's shape alone would add one 2-GPU worker and never a ps).
  auto state = cluster(1);
  std::vector<RunningJob> running{run(state, "blocker", "", 0, 0, 1, 3)};
  PendingJob mixed = job(state, "mixed", "", 3, 2, 0, 1, 2);
  mixed.job.groups.insert(mixed.job.groups.begin(), {"ps", 2, 1, whole_gpus(state, 1), {}});
  std::vector<PendingJob> pending{mixed};
  auto first = run_cycle(state, running, pending, {}, 10).value();
  REQUIRE(first.starts.size() == 1);
  CHECK(first.starts[0].tasks.size() == 3);
  CHECK(state.shares().total_free() == 0);
  advance(running, pending, first);
  REQUIRE(running.size() == 2);
  const RunningJob& m = running[1];
  REQUIRE(m.groups.size() == 2);
  CHECK(m.groups[0].name == "ps");
  CHECK(m.groups[1].max_tasks == 3);
  CHECK(m.min_tasks == 3);
  for (const RunningTask& t : running[0].tasks) REQUIRE(state.release(t.assignment).ok());
  running.erase(running.begin());
  state.commit();
  auto d = run_cycle(state, running, pending, {}, 20).value();
  REQUIRE(d.grows.size() == 1);
  REQUIRE(d.grows[0].tasks.size() == 2);
  CHECK(d.grows[0].groups == std::vector<std::string>{"ps", "worker"});
  CHECK(d.grows[0].tasks[0].group == 0);
  CHECK(d.grows[0].tasks[0].assignment.gpus.size() == 1);
  CHECK(d.grows[0].tasks[1].group == 1);
  CHECK(d.grows[0].tasks[1].assignment.gpus.size() == 2);
  CHECK(state.shares().total_free() == 0);
  advance(running, pending, d);
  CHECK(running[0].tasks.size() == 5);
  check_no_overcommit(state, running);
  // At its replicas in every group, it grows no more.
  CHECK(run_cycle(state, running, pending, {}, 30).value().grows.empty());
}

TEST_CASE("backoff: a requeued job waits out its backoff") {
  auto state = cluster(1);
  std::vector<PendingJob> pending{job(state, "j", "", 1, 1)};
  pending[0].not_before = 160;
  auto d = run_cycle(state, {}, pending, {}, 100).value();
  REQUIRE(d.waiting.size() == 1);
  CHECK(d.waiting[0].outcome.reasons.at(0).kind == ReasonKind::kBackoff);
  CHECK(d.waiting[0].outcome.reasons[0].needed == 160);
  CHECK(run_cycle(state, {}, pending, {}, 160).value().starts.size() == 1);
}

TEST_CASE("dry run changes nothing; apply makes the same decisions real in one call") {
  auto state = cluster(2);
  auto twin = cluster(2);
  std::vector<RunningJob> running{run(state, "low", "", 0, 0, 1, 8, 0, 0)};
  std::vector<RunningJob> running_twin{run(twin, "low", "", 0, 0, 1, 8, 0, 0)};
  auto before = state;
  std::vector<PendingJob> pending{job(state, "high", "", 2, 8, 10, 5), job(state, "small", "", 1, 2, 0, 6)};
  CycleOptions dry;
  dry.dry_run = true;
  auto d = run_cycle(state, running, pending, {}, 100, dry).value();
  CHECK(state.same_allocation_as(before));
  CHECK(d.evictions.size() == 1);
  auto real = run_cycle(twin, running_twin, pending, {}, 100).value();
  REQUIRE(apply(state, d).ok());
  CHECK(state.same_allocation_as(twin));
  CHECK(names(d.starts) == names(real.starts));
  // Deterministic: the same inputs give the same decisions.
  auto again = run_cycle(before, running, pending, {}, 100, dry).value();
  CHECK(names(again.starts) == names(d.starts));
}

TEST_CASE("failures: restart whole from the last checkpoint with exponential backoff; elastic shrinks; cordon") {
  // 2 nodes x 8 GPUs. rigid runs 2 tasks x 4 GPUs on n0 (checkpoint at t=50), elastic runs 4 x 2
  // GPUs: 2 tasks on n0... placed by hand: elastic tasks 0,1 on n1, 2,3 on n1 too -- minimum 2.
  auto state = cluster(2);
  std::vector<RunningJob> running{run(state, "rigid", "", 0, 0, 2, 4, 0, 0), run(state, "el", "", 1, 0, 4, 2, 0, 0)};
  running[0].last_checkpoint = 50;
  running[1].min_tasks = 2;
  FailureHistory history;
  FailureOptions fo;
  fo.cordon_after = 2;
  fo.window = 1000;
  // n0 fails at t=100: rigid loses 8 GPUs x 50 s = 400,000 milli-GPU-s, restarts = 1, backoff 60 s.
  auto r = on_failure(state, running, 0, -1, 100, history, fo).value();
  REQUIRE(r.restarts.size() == 1);
  CHECK(r.restarts[0].job == "rigid");
  CHECK(r.restarts[0].lost_milli_gpu_seconds == 400'000);
  CHECK(r.restarts[0].not_before == 160);
  CHECK(r.cordoned.empty());
  std::vector<PendingJob> catalog{job(state, "rigid", "", 2, 4)};
  std::vector<PendingJob> pending;
  apply_failure(running, pending, r, catalog);
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].restarts == 1);
  check_no_overcommit(state, running);
  // GPU 0 of n1 fails at t=200: el's task 0 is on it; el has 4 tasks, minimum 2 -> sheds task 0.
  auto g = on_failure(state, running, 1, 0, 200, history, fo).value();
  REQUIRE(g.shrinks.size() == 1);
  CHECK(g.shrinks[0].tasks == std::vector<std::uint32_t>{0});
  CHECK(g.restarts.empty());
  apply_failure(running, pending, g, catalog);
  CHECK(running[0].tasks.size() == 3);
  // n1's second failure within the window cordons it (cordon_after = 2). el: 3 tasks left, all on
  // n1, minimum 2: it cannot keep its minimum, so it is restarted whole (second restart of a job
  // that had 0 before -> restarts 1, backoff 60).
  auto n = on_failure(state, running, 1, -1, 300, history, fo).value();
  CHECK(n.cordoned == std::vector<NodeId>{1});
  REQUIRE(n.restarts.size() == 1);
  CHECK(n.restarts[0].job == "el");
  CHECK_FALSE(state.schedulable(1));
  // Exponential: a job on its third restart waits 60 x 2^2 = 240 s.
  running.clear();
  auto s2 = cluster(1);
  std::vector<RunningJob> r2{run(s2, "x", "", 0, 0, 1, 1, 0, 0)};
  r2[0].restarts = 2;
  FailureHistory h2;
  auto x = on_failure(s2, r2, 0, -1, 1000, h2, fo).value();
  CHECK(x.restarts.at(0).not_before == 1240);
}

TEST_CASE("backfill in the cycle: EASY protects the first blocked job, conservative every one (Mu'alem & Feitelson)") {
  // One node of 4 GPUs at t=3, resolution 1 s. r0 holds 3 GPUs until t=100. Waiting, in FIFO order:
  // J1 (3 GPUs, 100 s), J2 (4 GPUs, 100 s), J3 (1 GPU, 250 s) — J3 fits the idle GPU now.
  //   EASY: J1 is reserved at 100 ([100, 200): r0's 3 GPUs). J3 on the idle GPU until 253 leaves 3
  //         for J1 at 100, so it is backfilled now; J2 is not protected (it would wait for J3).
  //   conservative: J2 is reserved too, at 200 (all 4 GPUs for [200, 300)); J3 until 253 would
  //         delay it, so J3 gets the earliest slot that delays neither: 300. Nothing starts.
  auto state = cluster(1, 4);
  std::vector<RunningJob> running{run(state, "r0", "", 0, 0, 1, 3, 0, 0)};
  running[0].runtime_estimate = 100;
  std::vector<PendingJob> pending{job(state, "J1", "", 1, 3, 0, 1), job(state, "J2", "", 1, 4, 0, 2),
                                  job(state, "J3", "", 1, 1, 0, 3)};
  pending[0].runtime_estimate = 100;
  pending[1].runtime_estimate = 100;
  pending[2].runtime_estimate = 250;
  CycleOptions o;
  o.preempt = false;
  o.backfill.resolution = 1;
  auto reserved = [](const CycleDecisions& d) {
    std::vector<std::pair<std::string, Seconds>> out;
    for (const auto& r : d.reservations) out.emplace_back(r.job, r.start);
    return out;
  };
  SUBCASE("EASY") {
    auto d = run_cycle(state, running, pending, {}, 3, o).value();
    CHECK(names(d.starts) == std::vector<std::string>{"J3"});
    CHECK(reserved(d) == std::vector<std::pair<std::string, Seconds>>{{"J1", 100}});
  }
  SUBCASE("conservative") {
    o.backfill.mode = BackfillMode::kConservative;
    auto d = run_cycle(state, running, pending, {}, 3, o).value();
    CHECK(d.starts.empty());
    CHECK(reserved(d) == std::vector<std::pair<std::string, Seconds>>{{"J1", 100}, {"J2", 200}, {"J3", 300}});
  }
  CHECK(state.schedulable(0));
}

TEST_CASE("backfill: the first blocked job's reservation is protected; a short job fills the hole") {
  // 2 nodes x 8 GPUs at t=10. r1 holds 4 GPUs of n0 until t=100 (estimate), r2 all of n1 until
  // t=1000. big (priority 10) needs 8 GPUs on one node: blocked now; EASY reserves n0 from r1's end
  // rounded up to the grid (resolution 60: 120). small (4 GPUs, no estimate) would take n0's 4 idle
  // GPUs and delay big for ever: it waits. short (4 GPUs, 60 s: ends at 70 <= 120) is backfilled
  // onto n0.
  auto state = cluster(2);
  std::vector<RunningJob> running{run(state, "r1", "", 0, 0, 1, 4, 0, 0), run(state, "r2", "", 1, 0, 1, 8, 0, 0)};
  running[0].runtime_estimate = 100;
  running[1].runtime_estimate = 1000;
  std::vector<PendingJob> pending{job(state, "big", "", 1, 8, 10, 1), job(state, "small", "", 1, 4, 0, 2),
                                  job(state, "short", "", 1, 4, 0, 3)};
  pending[0].runtime_estimate = 3600;
  pending[2].runtime_estimate = 60;
  CycleOptions o;
  o.preempt = false;
  auto d = run_cycle(state, running, pending, {}, 10, o).value();
  REQUIRE(d.starts.size() == 1);
  CHECK(d.starts[0].job == "short");
  CHECK(d.starts[0].backfilled);
  REQUIRE(d.reservations.size() == 1);
  CHECK(d.reservations[0].job == "big");
  CHECK(d.reservations[0].start == 120);
  CHECK(d.reservations[0].nodes == std::vector<NodeId>{0});
  const Waiting* small = d.find_waiting("small");
  REQUIRE(small);
  CHECK(std::any_of(small->outcome.reasons.begin(), small->outcome.reasons.end(),
                    [](const Reason& r) { return r.kind == ReasonKind::kReservedForOther; }));
  CHECK(state.schedulable(0));  // the reserved node is open again after the cycle

  SUBCASE("without backfill small takes n0 (the starvation Kueue users see)") {
    auto s2 = cluster(2);
    std::vector<RunningJob> r2{run(s2, "r1", "", 0, 0, 1, 4, 0, 0), run(s2, "r2", "", 1, 0, 1, 8, 0, 0)};
    o.backfill.mode = BackfillMode::kNone;
    auto d2 = run_cycle(s2, r2, pending, {}, 10, o).value();
    CHECK(names(d2.starts) == std::vector<std::string>{"small"});
    CHECK(d2.reservations.empty());
  }
}

TEST_CASE("RunningUsage: the caller's per-queue sums give the cycle's decisions without summing the running jobs") {
  // The fair-share reclaim case above (b holds 16 GPUs in two jobs, a's 8-GPU job takes one back),
  // with the usage kept by the caller: the same eviction and start.
  FairShareCase c;
  auto& [state, queues, running, pending] = c;
  RunningUsage usage;
  for (const RunningJob& r : running) REQUIRE(usage.add(state, r).ok());
  REQUIRE(usage.queues().size() == 1);
  CHECK(usage.queues()[0].name == "b");
  CHECK(usage.queues()[0].jobs == 2);
  const GpuModelId model = state.gpu_model(0, 0);
  CHECK(usage.queues()[0].gpu_milli.at(model) == 16'000);

  CycleOptions o;
  o.dry_run = true;
  const auto plain = run_cycle(state, running, pending, queues, 100, o).value();
  o.usage = &usage;
  const auto kept = run_cycle(state, running, pending, queues, 100, o).value();
  REQUIRE(kept.evictions.size() == 1);
  CHECK(kept.evictions[0].job == plain.evictions.at(0).job);
  CHECK(kept.evictions[0].reason == EvictionReason::kFairShare);
  CHECK(names(kept.starts) == names(plain.starts));
  CHECK(names(kept.starts) == std::vector<std::string>{"a1"});

  SUBCASE("an elastic job's shed tasks, then the job itself: nothing left") {
    auto s2 = cluster(1);
    const RunningJob e = run(s2, "e", "b", 0, 0, 2, 4);
    RunningUsage u;
    REQUIRE(u.add(s2, e).ok());
    CHECK(u.queues()[0].gpu_milli.at(model) == 8'000);
    REQUIRE(u.add(s2, "b", std::span<const RunningTask>(e.tasks).subspan(1), -1, false).ok());  // sheds its second task
    CHECK(u.queues()[0].jobs == 1);
    CHECK(u.queues()[0].gpu_milli.at(model) == 4'000);
    REQUIRE(u.add(s2, "b", std::span<const RunningTask>(e.tasks).first(1), -1).ok());  // ends
    CHECK(u.queues()[0].jobs == 0);
    CHECK(u.queues()[0].cpu == 0);
    CHECK(u.queues()[0].memory == 0);
    CHECK(u.queues()[0].gpu_milli.at(model) == 0);
  }
  SUBCASE("a sum beyond 64 bits or a sign other than +-1 is refused and changes nothing") {
    RunningUsage u;
    RunningJob huge = running[0];
    huge.tasks[0].assignment.cpu = std::numeric_limits<std::int64_t>::max() / 2 + 1;
    REQUIRE(u.add(state, huge).ok());
    const auto before = u.queues()[0].cpu;
    const Status st = u.add(state, huge);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kOverflow);
    CHECK(st.error().field == "usage.cpu");
    CHECK(u.queues()[0].cpu == before);
    CHECK(u.queues()[0].jobs == 1);
    CHECK(u.add(state, running[0], 2).error().field == "sign");
    CHECK(u.queues()[0].jobs == 1);
  }
  SUBCASE("sums naming a queue that is not a leaf: the cycle sums the jobs and names the one to blame") {
    std::vector<fairness::QueueConfig> tree = queues;
    tree.push_back(queue(state, "leaf", fairness::kNoLimit));
    tree.back().nominal.clear();
    tree.back().parent = "b";
    auto r = run_cycle(state, running, pending, tree, 100, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().field == "running[0].queue");
  }
#ifndef NDEBUG
  SUBCASE("sums that differ from the running jobs are refused where assertions are on") {
    RunningUsage wrong;
    REQUIRE(wrong.add(state, running[0]).ok());
    o.usage = &wrong;
    auto r = run_cycle(state, running, pending, queues, 100, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInconsistent);
    CHECK(r.error().field == "options.usage");
  }
#endif
}

TEST_CASE("one admission rule: a job whose request sums beyond 64 bits waits invalid, in the cycle and a session") {
  // One 8-GPU node, queue a without quotas. `huge` asks 3 tasks of 4e18 bytes each: 1.2e19 bytes,
  // beyond a 64-bit total. fairshare's plan_jobs refuses it (jobs[i].groups[0].memory, kOverflow);
  // the cycle charges jobs by the same fairness::job_demand, so it must not sum it (a wrapped total
  // would be charged to the queue): it waits kInvalid (invalid amount), and `ok` behind it starts.
  auto state = cluster(1);
  std::vector<fairness::QueueConfig> queues{queue(state, "a", fairness::kNoLimit)};
  queues[0].nominal.clear();
  PendingJob huge = job(state, "huge", "a", 3, 1, 5);
  huge.job.groups[0].request.shape.memory = 4'000'000'000'000'000'000;
  CHECK(fairness::request_problem(huge.job).overflow);
  CHECK(fairness::request_problem(huge.job).path() == "groups[0].memory");
  const std::vector<PendingJob> pending{huge, job(state, "ok", "a", 1, 2)};
  const auto check = [](const CycleDecisions& d) {
    CHECK(names(d.starts) == std::vector<std::string>{"ok"});
    const Waiting* w = d.find_waiting("huge");
    REQUIRE(w != nullptr);
    CHECK(w->outcome.verdict == Verdict::kInvalid);
    REQUIRE(!w->outcome.reasons.empty());
    CHECK(w->outcome.reasons[0].kind == ReasonKind::kInvalidAmount);
  };
  ClusterState fresh = state;
  check(run_cycle(fresh, {}, pending, queues, 100).value());
  auto session = Session::open(state, queues, {}).value();
  for (const PendingJob& p : pending) REQUIRE(session.submit(p));
  check(session.cycle(100).value());
}
