// H-DRF: the SoCC'13 paper's two examples (starvation by a complementary sibling, and a blocked
// node), weights at every level, and agreement with flat DRF on one-level trees.
#include <doctest/doctest.h>

#include <vector>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/hdrf.hpp"

using namespace gpusched::fairness;
using gpusched::fairness::testing::SplitMix;
using gpusched::fairness::testing::amounts;

namespace {
HdrfTask task(std::initializer_list<std::int64_t> v) { return HdrfTask{amounts(v), -1}; }
}  // namespace

TEST_CASE("H-DRF, paper's starvation example: a CPU-heavy sibling does not cost its GPU sibling") {
  //            root
  //      n1 (w1)      n2 (w1)
  //     <0,1>      n21 <1,0>   n22 <0,1>
  // n21 takes all the CPU nobody else wants; the GPUs split evenly between n1 and n22 (n2's share is
  // n22's, rescaled, not inflated by n21's 100% CPU).
  const std::vector<std::int64_t> parents{-1, 0, 0, 2, 2};
  const std::vector<double> weights{1, 1, 1, 1, 1};
  const std::vector<HdrfTask> tasks{task({0, 0}), task({0, 1}), task({0, 0}), task({1, 0}), task({0, 1})};
  auto a = hdrf_whole_tasks(amounts({10, 10}), parents, weights, tasks);
  REQUIRE(a.ok());
  CHECK(a->tasks[1] == 5);
  CHECK(a->tasks[3] == 10);
  CHECK(a->tasks[4] == 5);
}

TEST_CASE("H-DRF, paper's blocked-node example: GPUs split evenly between n32 and n4") {
  //                 root
  //   n1 <1,0>   n2 <1,0>     n3          n4 <0,1>
  //                       n31 <1,0>  n32 <0,1>
  // CPU: a third each to n1, n2 and n31. Once the CPU is gone n31 is blocked; n3's share is then
  // n32's GPU share (the saturated CPU is ignored), so the GPUs split 1/2 : 1/2 rather than the
  // 2/3 : 1/3 the naive recursion gives.
  const std::vector<std::int64_t> parents{-1, 0, 0, 0, 3, 3, 0};
  const std::vector<double> weights(7, 1.0);
  const std::vector<HdrfTask> tasks{task({0, 0}), task({1, 0}), task({1, 0}), task({0, 0}),
                                    task({1, 0}), task({0, 1}), task({0, 1})};
  auto a = hdrf_whole_tasks(amounts({6, 6}), parents, weights, tasks);
  REQUIRE(a.ok());
  CHECK(a->tasks[1] == 2);
  CHECK(a->tasks[2] == 2);
  CHECK(a->tasks[4] == 2);
  CHECK(a->tasks[5] == 3);
  CHECK(a->tasks[6] == 3);
}

TEST_CASE("H-DRF: weights at every level") {
  //          root
  //   lab (w3)        ops (w1)
  // a (w1) b (w3)      c
  // 16 GPUs: lab 12, ops 4; inside lab 3 : 9.
  const std::vector<std::int64_t> parents{-1, 0, 0, 1, 1, 2};
  const std::vector<double> weights{1, 3, 1, 1, 3, 1};
  const std::vector<HdrfTask> tasks{task({0}), task({0}), task({0}), task({1}), task({1}), task({1})};
  auto a = hdrf_whole_tasks(amounts({16}), parents, weights, tasks);
  REQUIRE(a.ok());
  CHECK(a->tasks[3] == 3);
  CHECK(a->tasks[4] == 9);
  CHECK(a->tasks[5] == 4);

  // A capped leaf leaves its share to its sibling first, then to the other branch.
  std::vector<HdrfTask> capped = tasks;
  capped[3].max_tasks = 1;
  auto b = hdrf_whole_tasks(amounts({16}), parents, weights, capped);
  REQUIRE(b.ok());
  CHECK(b->tasks[3] == 1);
  CHECK(b->tasks[4] == 11);
  CHECK(b->tasks[5] == 4);
}

TEST_CASE("H-DRF on a one-level tree serves in exactly DRF's order") {
  SplitMix rng(19);
  for (int iter = 0; iter < 200; ++iter) {
    const int m = 1 + static_cast<int>(rng.below(4));
    const int n = 1 + static_cast<int>(rng.below(7));
    Amounts cap(m);
    for (int r = 0; r < m; ++r) cap[r] = 20 + static_cast<std::int64_t>(rng.below(100));
    std::vector<TaskUser> users(static_cast<std::size_t>(n));
    std::vector<std::int64_t> parents{-1};
    std::vector<double> weights{1};
    std::vector<HdrfTask> tasks{task({})};
    tasks[0].demand = Amounts::Zero(m);
    for (auto& u : users) {
      u.demand = Amounts::Zero(m);
      for (int r = 0; r < m; ++r)
        if (rng.below(3) != 0) u.demand[r] = 1 + static_cast<std::int64_t>(rng.below(9));
      if (u.demand.isZero()) u.demand[0] = 1;
      u.weight = 1.0 + static_cast<double>(rng.below(3));
      parents.push_back(0);
      weights.push_back(u.weight);
      tasks.push_back(HdrfTask{u.demand, -1});
    }
    auto flat = drf_whole_tasks(cap, users);
    auto tree = hdrf_whole_tasks(cap, parents, weights, tasks);
    REQUIRE(flat.ok());
    REQUIRE(tree.ok());
    REQUIRE(flat->sequence.size() == tree->sequence.size());
    for (std::size_t k = 0; k < flat->sequence.size(); ++k) CHECK(tree->sequence[k] == flat->sequence[k] + 1);
  }
}

TEST_CASE("HdrfScheduler: tiers come first at every level; release and unblock") {
  HdrfScheduler s(amounts({100}));
  const auto a = s.add_node(HdrfScheduler::kRoot, 1.0).value();
  const auto b = s.add_node(HdrfScheduler::kRoot, 1.0).value();
  const auto b1 = s.add_node(b, 1.0).value();
  CHECK(s.pick() == a);
  s.allocate(a, amounts({10}));
  CHECK(s.pick() == b1);
  s.set_tier(b1, 1);  // b's only leaf is in tier 1: a is served although its share is higher
  CHECK(s.pick() == a);
  s.block(a);
  CHECK(s.pick() == b1);
  s.block(b1);
  CHECK_FALSE(s.pick().has_value());
  s.unblock(a);
  s.release(a, amounts({10}));
  CHECK(s.share(a) == 0.0);
  CHECK(s.free()[0] == 100);
  CHECK(s.pick() == a);
  auto bad = s.add_node(42, 1.0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "parent: no node 42 (there are 4)");
  s.allocate(a, amounts({5}));
  auto busy = s.add_node(a, 1.0);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().message == "parent: node 1 already holds resources as a leaf");
}

TEST_CASE("hdrf_whole_tasks rejects malformed trees") {
  const std::vector<HdrfTask> tasks{task({1}), task({1})};
  auto r = hdrf_whole_tasks(amounts({4}), std::vector<std::int64_t>{-1, 1}, std::vector<double>{1, 1}, tasks);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "parents[1]: expected an earlier node, got 1");
  r = hdrf_whole_tasks(amounts({4}), std::vector<std::int64_t>{-1, 0}, std::vector<double>{1, 0}, tasks);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "nodes[1].weight: expected a positive finite number, got 0");
}
