// Exact share comparison (issue 15 part 3): fair share documents "ties go to the client / queue
// listed first", so equal rational weighted dominant shares must compare equal even when their
// doubles differ in the last bit.
//
// The instance used throughout (worked by hand): capacity 30 cores and 20 GPUs.
//   queue/client "gpu"  (listed first,  weight 2) holds 4 GPUs:  (4/20) / 2 = 1/10
//   queue/client "cpu"  (listed second, weight 3) holds 9 cores: (9/30) / 3 = 1/10
// Exactly equal, so "gpu" goes first. In doubles 4.0/20 = 0.2, 0.2/2 = 0.1, but 9.0/30 = 0.3 and
// 0.3/3 = 0.09999999999999999 < 0.1: a double comparison serves "cpu" first (the old behaviour).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/detail/exact_share.hpp"
#include "gpusched/fairness/drf.hpp"
#include "gpusched/fairness/hdrf.hpp"

namespace gpusched::fairness {
namespace {

using testing::amounts;

// The premise of every test below: the doubles really do disagree with the exact values.
TEST_CASE("exact ties: the instance's doubles differ although the shares are equal") {
  const double gpu_share = (4.0 / 20.0) / 2.0, cpu_share = (9.0 / 30.0) / 3.0;
  CHECK(cpu_share < gpu_share);
  CHECK(detail::compare_exact_shares({4, 20, 2.0}, {9, 30, 3.0}) == std::strong_ordering::equal);
}

TEST_CASE("exact ties: compare_exact_shares on hand-worked and extreme fractions") {
  using detail::compare_exact_shares;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  CHECK(compare_exact_shares({6, 9, 1.0}, {12, 18, 1.0}) == std::strong_ordering::equal);
  CHECK(compare_exact_shares({1, 3, 1.0}, {1, 3, 0.5}) == std::strong_ordering::less);  // 1/3 < 2/3
  CHECK(compare_exact_shares({0, 0, 1.0}, {1, kMax, 1e9}) == std::strong_ordering::less);  // 0 is least
  CHECK(compare_exact_shares({0, 5, 1.0}, {0, 0, 3.0}) == std::strong_ordering::equal);
  // Near INT64_MAX the products need all 192 bits: (MAX-1)/MAX vs (MAX-2)/(MAX-1) differ by
  // 1/(MAX(MAX-1)), far below a double's resolution, and the first is larger.
  CHECK(compare_exact_shares({kMax - 2, kMax - 1, 1.0}, {kMax - 1, kMax, 1.0}) == std::strong_ordering::less);
  CHECK(compare_exact_shares({kMax - 1, kMax, 3.0}, {kMax - 1, kMax, 3.0}) == std::strong_ordering::equal);
  // Weights are compared at their exact binary value: 0.1 (slightly above 1/10) vs 1/10 written
  // as 1 / (10 · 1.0): 1/(1 · 0.1000000000000000055) < 1/(10 · 1) · 10.
  CHECK(compare_exact_shares({1, 1, 0.1}, {10, 1, 1.0}) == std::strong_ordering::less);
  // Tiny and huge weights (exponents far apart) keep the order of the exact values.
  CHECK(compare_exact_shares({1, 1, 1e-300}, {1, 1, 1e300}) == std::strong_ordering::greater);
  CHECK(compare_exact_shares({3, 1, 0.75}, {4, 1, 1.0}) == std::strong_ordering::equal);  // 3/0.75 = 4
}

TEST_CASE("exact ties: DrfSorter serves the client registered first on an exact tie") {
  DrfSorter sorter(amounts({30, 20}));
  const auto gpu = sorter.add(2.0);
  const auto cpu = sorter.add(3.0);
  sorter.allocate(gpu, amounts({0, 4}));
  sorter.allocate(cpu, amounts({9, 0}));
  CHECK(sorter.share(cpu) < sorter.share(gpu));  // the doubles disagree ...
  CHECK(sorter.front() == gpu);                  // ... the exact tie goes to the lower id
  // One more core for "cpu" (10/30/3 = 1/9 > 1/10) and "gpu" stays first; one more GPU for "gpu"
  // instead (5/20/2 = 1/8 > 1/9) and "cpu" is first.
  sorter.allocate(cpu, amounts({1, 0}));
  CHECK(sorter.front() == gpu);
  sorter.allocate(gpu, amounts({0, 1}));
  CHECK(sorter.front() == cpu);
}

TEST_CASE("exact ties: H-DRF picks the leaf created first on an exact tie") {
  HdrfScheduler s(amounts({30, 20}));
  const auto gpu = s.add_node(HdrfScheduler::kRoot, 2.0).value();
  const auto cpu = s.add_node(HdrfScheduler::kRoot, 3.0).value();
  s.allocate(gpu, amounts({0, 4}));
  s.allocate(cpu, amounts({9, 0}));
  CHECK(s.share(cpu) < s.share(gpu));
  REQUIRE(s.pick().has_value());
  CHECK(*s.pick() == gpu);
}

// The same two shares one level down: teams (internal nodes) of weights 2 and 3, each with one
// leaf. An internal node's share is its rescaled consumption (here the leaf's own vector) over the
// capacity and its weight: 0.1 and 0.09999999999999999 in doubles, exactly 1/10 both. The team
// created first is served first; the order flips as soon as the shares really differ.
TEST_CASE("exact ties: H-DRF serves the internal node created first on an exact tie") {
  HdrfScheduler s(amounts({30, 20}));
  const auto gpu_team = s.add_node(HdrfScheduler::kRoot, 2.0).value();
  const auto cpu_team = s.add_node(HdrfScheduler::kRoot, 3.0).value();
  const auto gpu = s.add_node(gpu_team, 1.0).value();
  const auto cpu = s.add_node(cpu_team, 1.0).value();
  s.allocate(gpu, amounts({0, 4}));
  s.allocate(cpu, amounts({9, 0}));
  CHECK(s.share(cpu_team) < s.share(gpu_team));  // the doubles disagree ...
  REQUIRE(s.pick().has_value());
  CHECK(*s.pick() == gpu);                        // ... the tie goes to the team created first
  s.allocate(gpu, amounts({0, 1}));               // gpu-team 5/20/2 = 1/8 > 1/10
  CHECK(*s.pick() == cpu);
  s.allocate(cpu, amounts({3, 0}));               // cpu-team 12/30/3 = 2/15 > 1/8
  CHECK(*s.pick() == gpu);
}

// The instance's queues (capacity 30 cores, 1 TiB of memory untouched, 20 GPUs) planned with one small
// CPU job per leaf, listed "cpu" first so that input order cannot explain the answer: the "gpu" leaf's
// job must be admitted first.
void check_gpu_leaf_admitted_first(const std::vector<QueueConfig>& queues) {
  ResourceSpace space;
  space.gpu_models = {"A100"};
  const Amounts capacity = amounts({30000, std::int64_t{1} << 40, 20000});
  Amounts free = capacity;
  for (const QueueConfig& q : queues)
    if (q.usage.size() > 0) free -= amounts_of(q.usage);
  auto planner = FairSharePlanner::build(space, capacity, free, queues);
  REQUIRE(planner.ok());
  std::vector<CompiledJob> jobs{testing::job_of("from-cpu", "cpu", 1000, 0, 0), testing::job_of("from-gpu", "gpu", 1000, 0, 0)};
  const AdmissionPlan plan = planner->plan(jobs);
  REQUIRE(plan.admitted.size() == 2);
  CHECK(jobs[plan.admitted[0].job].name == "from-gpu");
  CHECK(jobs[plan.admitted[1].job].name == "from-cpu");
}

TEST_CASE("exact ties: the admission planner admits the team listed first on an exact tie") {
  std::vector<QueueConfig> queues(4);
  queues[0].name = "gpu-team";
  queues[0].weight = 2.0;
  queues[1].name = "cpu-team";
  queues[1].weight = 3.0;
  queues[2].name = "gpu";
  queues[2].parent = "gpu-team";
  queues[2].usage = queue_amounts(amounts({0, 0, 4000}));
  queues[3].name = "cpu";
  queues[3].parent = "cpu-team";
  queues[3].usage = queue_amounts(amounts({9000, 0, 0}));
  check_gpu_leaf_admitted_first(queues);
}

TEST_CASE("exact ties: the admission planner admits the queue listed first on an exact tie") {
  std::vector<QueueConfig> queues(2);
  queues[0].name = "gpu";
  queues[0].weight = 2.0;
  queues[0].usage = queue_amounts(amounts({0, 0, 4000}));
  queues[1].name = "cpu";
  queues[1].weight = 3.0;
  queues[1].usage = queue_amounts(amounts({9000, 0, 0}));
  check_gpu_leaf_admitted_first(queues);
}

}  // namespace
}  // namespace gpusched::fairness
