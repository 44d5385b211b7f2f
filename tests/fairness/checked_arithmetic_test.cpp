// Checked arithmetic in fair share (issue 15 part 2): request totals, cohort pools, quota checks and
// priority aging with extreme values either give the exact answer or an Error naming the field
// (ErrorCode::kOverflow), never a wrapped number.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "fairness/test_util.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/fairness/quota.hpp"

namespace gpusched::fairness {
namespace {

using testing::amounts;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// A job of one group: `replicas` tasks of `cpu` milli-CPU each.
CompiledJob big_job(std::int32_t replicas, MilliCpu cpu) {
  CompiledJob j = testing::job_of("big", "q", 0, 0, 0);
  j.groups[0] = testing::group_of(replicas, -1, cpu, 0, 0);
  return j;
}

// One leaf queue "q" with no quota on a cluster of `cpu` milli-CPU and 1 GiB, all free.
FairSharePlanner one_queue_planner(std::int64_t cpu) {
  std::vector<QueueConfig> queues(1);
  queues[0].name = "q";
  return FairSharePlanner::build(ResourceSpace{}, amounts({cpu, 1 << 30}), amounts({cpu, 1 << 30}), queues).value();
}

TEST_CASE("checked arithmetic: a request total beyond int64 is an overflow error naming the field") {
  // The case: ~9.2e18 milli-CPU in total (2 replicas of 4.7e18) used to wrap negative and be
  // admitted on a 256-core cluster.
  const RequestProblem r = request_problem(big_job(2, std::int64_t{4'700'000'000'000'000'000}));
  REQUIRE(r);
  CHECK(r.overflow);
  CHECK(r.path() == "groups[0].cpu");
  // Just below the limit is exact: 3 replicas of floor(MAX / 3).
  const JobDemand fits = job_demand(big_job(3, kMax / 3));
  REQUIRE_FALSE(fits.problem);
  CHECK(fits.cpu == (kMax / 3) * 3);
  // Negative replicas are invalid, not a negative total.
  const RequestProblem negative = request_problem(big_job(-1, 1000));
  REQUIRE(negative);
  CHECK_FALSE(negative.overflow);
  CHECK(negative.path() == "groups[0].replicas");
  // The sum over groups is checked too: two groups of MAX / 2 + 1 each.
  CompiledJob two = big_job(1, kMax / 2 + 1);
  const CompiledGroup copy = two.groups[0];
  two.groups.push_back(copy);
  const RequestProblem sum = request_problem(two);
  REQUIRE(sum);
  CHECK(sum.path() == "groups[1].cpu");
}

TEST_CASE("checked arithmetic: the planner reports a wrapped or negative request as invalid") {
  const auto planner = one_queue_planner(256000);  // 256 cores
  std::vector<CompiledJob> jobs{big_job(2, 4'700'000'000'000'000'000), testing::job_of("small", "q", 1000, 0, 0)};
  const AdmissionPlan plan = planner.plan(jobs);
  REQUIRE(plan.admitted.size() == 1);
  CHECK(plan.admitted[0].job == 1);
  REQUIRE(plan.pending.size() == 1);
  CHECK(plan.pending[0].kind == PendingKind::kInvalidRequest);
  CHECK(planner.outcome(plan, plan.pending[0]).verdict == Verdict::kInvalid);
  CHECK(plan.queues[0].usage[ResourceSpace::kCpu] == 1000);  // never negative
  CHECK_FALSE(planner.query(jobs[0]).admitted());
  CHECK(planner.reason(plan, plan.pending[0], jobs) == "job big: groups[0].cpu: 2 replicas of 4700000000000000000 exceed a 64-bit total (overflow)");
}

TEST_CASE("checked arithmetic: cohort pools that overflow are a build error naming the queue") {
  std::vector<QueueQuota> queues(2);
  queues[0] = {"a", "pool", amounts({kMax}), {}, {}};
  queues[1] = {"b", "pool", amounts({2}), {}, {}};
  auto book = QuotaBook::build(1, queues);
  REQUIRE_FALSE(book.ok());
  CHECK(book.error().code == ErrorCode::kOverflow);
  CHECK(book.error().field == "queues[1].nominal[0]");
}

TEST_CASE("checked arithmetic: quota checks near INT64_MAX do not wrap into a fit") {
  // No cohort: nominal MAX, usage MAX - 1, request 5 -> over nominal (usage + request would wrap
  // to a negative number, which the old check took as a fit).
  auto book = QuotaBook::build(1, {QueueQuota{"a", "", amounts({kMax}), {}, {}}});
  REQUIRE(book.ok());
  book->admit(0, amounts({kMax - 1}));
  const QuotaCheck c = book->check(0, amounts({5}));
  CHECK(c.verdict == QuotaVerdict::kOverNominal);
  CHECK(c.available == 1);
  CHECK(book->check(0, amounts({1})).verdict == QuotaVerdict::kFits);
  // With a cohort: nominal MAX - 10 (none of it lent) plus a borrowing limit of MAX saturates at
  // MAX; the other member lends 5. Ceiling: min(MAX, guaranteed MAX - 10 + pool 5) = MAX - 5.
  auto cohort = QuotaBook::build(1, {QueueQuota{"a", "c", amounts({kMax - 10}), amounts({kMax}), amounts({0})},
                                     QueueQuota{"b", "c", amounts({5}), {}, {}}});
  REQUIRE(cohort.ok());
  CHECK(cohort->ceiling(0, 0) == kMax - 5);
  cohort->admit(0, amounts({kMax - 10}));
  CHECK(cohort->check(0, amounts({5})).verdict == QuotaVerdict::kFitsBorrowing);
  CHECK(cohort->check(0, amounts({6})).verdict == QuotaVerdict::kCohortExhausted);
  // 11 more would take usage past INT64_MAX: refused by the (saturated) borrowing limit.
  CHECK(cohort->check(0, amounts({11})).verdict == QuotaVerdict::kOverBorrowingLimit);
}

TEST_CASE("checked arithmetic: aging gives no boost before a step has elapsed") {
  CompiledJob job;
  job.priority = 3;
  job.submit_time = 0;
  // step 10 is above max_boost 5, so max_boost / step == 0: the old test "steps < 0" failed and the
  // full boost was given after 50 s, before the first 100 s step.
  AgingPolicy aging{100, 10, 5, 50};
  CHECK(aging_boost(job, aging) == 0);
  CHECK(effective_priority(job, aging) == 3);
  aging.now = 100;  // one step: 10, capped at 5
  CHECK(effective_priority(job, aging) == 8);
}

TEST_CASE("checked arithmetic: aging with extreme times and priorities never wraps (property)") {
  testing::SplitMix rng(0x15c0ffee);
  const std::int64_t extremes[] = {kMin, kMin + 1, -1, 0, 1, 1000, kMax / 2, kMax - 1, kMax};
  const auto pick = [&] { return rng.below(3) == 0 ? static_cast<std::int64_t>(rng.next()) : extremes[rng.below(9)]; };
  for (int trial = 0; trial < 20000; ++trial) {
    CompiledJob job;
    job.priority = rng.below(2) == 0 ? static_cast<std::int32_t>(rng.next()) : std::numeric_limits<std::int32_t>::max();
    job.submit_time = pick();
    AgingPolicy aging{std::max<std::int64_t>(1, pick() & kMax), pick(), pick(), pick()};
    const std::int64_t boost = aging_boost(job, aging);
    // The boost, recomputed in 128 bits: min(max_boost, step · floor(wait / interval)), 0 when
    // aging is off or no step has elapsed.
    __extension__ using Wide = __int128;
    Wide expected = 0;
    if (aging.step > 0 && aging.max_boost > 0 && aging.now > job.submit_time) {
      const Wide waited = Wide{aging.now} - Wide{job.submit_time};
      const Wide capped_wait = waited > Wide{kMax} ? Wide{kMax} : waited;
      const Wide product = (capped_wait / aging.interval) * aging.step;
      expected = product < aging.max_boost ? product : Wide{aging.max_boost};
    }
    REQUIRE_MESSAGE(Wide{boost} == expected, "trial " << trial);
    const auto checked = checked_effective_priority(job, aging);
    if (Wide{job.priority} + Wide{boost} > Wide{kMax}) {
      REQUIRE_FALSE(checked.ok());
      CHECK(checked.error().code == ErrorCode::kOverflow);
      CHECK(checked.error().field == "priority");
    } else {
      REQUIRE(checked.ok());
      CHECK(*checked == job.priority + boost);
      CHECK(*checked >= job.priority);  // never a wrap to a lower priority
    }
  }
}

TEST_CASE("checked arithmetic: a priority that overflows with aging is reported, not planned") {
  const auto planner = one_queue_planner(8000);
  std::vector<CompiledJob> jobs{testing::job_of("top", "q", 1000, 0, 0, {}, {}, std::numeric_limits<std::int32_t>::max())};
  // An aging boost of up to INT64_MAX after 1000 s: the sum leaves 64 bits.
  const AdmissionPlan plan = planner.plan(jobs, AgingPolicy{10, kMax, kMax, 1000});
  CHECK(plan.admitted.empty());
  REQUIRE(plan.pending.size() == 1);
  CHECK(plan.pending[0].kind == PendingKind::kPriorityOverflow);
  CHECK(planner.reason(plan, plan.pending[0], jobs).find("overflow") != std::string::npos);
}

}  // namespace
}  // namespace gpusched::fairness
