// Fractional H-DRF (static H-DRF, Bhattacharya et al., SoCC 2013, by progressive filling): the paper's
// hierarchical examples with their known answers, weights at two levels, exact agreement with flat
// progressive filling (DRF) on one-level trees, and on random hierarchies the properties every
// progressive filling must have: no resource over capacity, every leaf either demand-satisfied or
// blocked on a saturated resource it needs, and never-blocked siblings at equal weighted shares.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/hdrf.hpp"

using namespace gpusched::fairness;
using gpusched::fairness::testing::SplitMix;
using gpusched::fairness::testing::vec;

namespace {

FractionalUser leaf(std::initializer_list<double> demand, double max_tasks = kUnlimited) {
  return FractionalUser{vec(demand), 1.0, max_tasks};
}
FractionalUser inner() { return FractionalUser{}; }

}  // namespace

TEST_CASE("fractional H-DRF, paper's starvation example: n1 and n22 split the GPUs, n21 takes the CPUs") {
  //            root
  //      n1 <0,1>        n2
  //                n21 <1,0>  n22 <0,1>
  const std::vector<std::int64_t> parents{-1, 0, 0, 2, 2};
  const std::vector<double> weights(5, 1.0);
  const std::vector<FractionalUser> nodes{inner(), leaf({0, 1}), inner(), leaf({1, 0}), leaf({0, 1})};
  auto a = hdrf_progressive_filling(vec({10, 10}), parents, weights, nodes);
  REQUIRE_MESSAGE(a.ok(), a.error().message);
  CHECK(a->tasks[1] == doctest::Approx(5));
  CHECK(a->tasks[3] == doctest::Approx(10));
  CHECK(a->tasks[4] == doctest::Approx(5));
  CHECK(a->stop[1] == StopReason::kResourceSaturated);
  CHECK(a->bottleneck[1] == 1);
  CHECK(a->bottleneck[3] == 0);
  CHECK(a->dominant_share[2] == doctest::Approx(1.0));  // n2 holds all the CPUs and half the GPUs
  CHECK(a->saturated[0]);
  CHECK(a->saturated[1]);
}

TEST_CASE("fractional H-DRF, paper's blocked-node example: n32 and n4 split the GPUs 1/2 : 1/2") {
  //                 root
  //   n1 <1,0>   n2 <1,0>     n3          n4 <0,1>
  //                       n31 <1,0>  n32 <0,1>
  // The CPUs go a third each to n1, n2, n31; once they are gone n31 is blocked and n3 grows with
  // n32 alone, at n4's rate: 1/2 each, not the 2/3 : 1/3 of the naive recursion.
  const std::vector<std::int64_t> parents{-1, 0, 0, 0, 3, 3, 0};
  const std::vector<double> weights(7, 1.0);
  const std::vector<FractionalUser> nodes{inner(), leaf({1, 0}), leaf({1, 0}), inner(),
                                          leaf({1, 0}), leaf({0, 1}), leaf({0, 1})};
  auto a = hdrf_progressive_filling(vec({6, 6}), parents, weights, nodes);
  REQUIRE_MESSAGE(a.ok(), a.error().message);
  CHECK(a->tasks[1] == doctest::Approx(2));
  CHECK(a->tasks[2] == doctest::Approx(2));
  CHECK(a->tasks[4] == doctest::Approx(2));
  CHECK(a->tasks[5] == doctest::Approx(3));
  CHECK(a->tasks[6] == doctest::Approx(3));
}

TEST_CASE("fractional H-DRF: weights at two levels, and a capped leaf leaves its share to its sibling first") {
  //          root
  //   lab (w3)        ops (w1)
  // a (w1) b (w3)      c
  const std::vector<std::int64_t> parents{-1, 0, 0, 1, 1, 2};
  const std::vector<double> weights{1, 3, 1, 1, 3, 1};
  std::vector<FractionalUser> nodes{inner(), inner(), inner(), leaf({1}), leaf({1}), leaf({1})};
  auto a = hdrf_progressive_filling(vec({16}), parents, weights, nodes);
  REQUIRE(a.ok());
  CHECK(a->tasks[3] == doctest::Approx(3));
  CHECK(a->tasks[4] == doctest::Approx(9));
  CHECK(a->tasks[5] == doctest::Approx(4));
  CHECK(a->dominant_share[1] == doctest::Approx(0.75));
  nodes[3].max_tasks = 1;
  auto b = hdrf_progressive_filling(vec({16}), parents, weights, nodes);
  REQUIRE(b.ok());
  CHECK(b->tasks[3] == doctest::Approx(1));
  CHECK(b->stop[3] == StopReason::kDemandMet);
  CHECK(b->tasks[4] == doctest::Approx(11));
  CHECK(b->tasks[5] == doctest::Approx(4));
}

TEST_CASE("fractional H-DRF: an internal node's complementary children are rescaled, not summed") {
  // Two resources, cap (12, 12). x has two children, x1 <1,0> and x2 <0,1>; y is a <1,1> leaf. A
  // flat DRF over path-product weights would count x's children as two users of weight 1/2; H-DRF
  // keeps x's share equal to y's: x1 and x2 each rise with y, so y ends at 6 of both and x1, x2 at 6.
  const std::vector<std::int64_t> parents{-1, 0, 1, 1, 0};
  const std::vector<double> weights(5, 1.0);
  const std::vector<FractionalUser> nodes{inner(), inner(), leaf({1, 0}), leaf({0, 1}), leaf({1, 1})};
  auto a = hdrf_progressive_filling(vec({12, 12}), parents, weights, nodes);
  REQUIRE(a.ok());
  CHECK(a->tasks[2] == doctest::Approx(6));
  CHECK(a->tasks[3] == doctest::Approx(6));
  CHECK(a->tasks[4] == doctest::Approx(6));
}

TEST_CASE("fractional H-DRF on a one-level tree equals flat progressive filling") {
  SplitMix rng(41);
  for (int iter = 0; iter < 500; ++iter) {
    const int m = 1 + static_cast<int>(rng.below(4));
    const int n = 1 + static_cast<int>(rng.below(12));
    Vector cap(m);
    for (int r = 0; r < m; ++r) cap[r] = rng.below(8) == 0 ? 0.0 : 1.0 + static_cast<double>(rng.below(100));
    std::vector<FractionalUser> users(static_cast<std::size_t>(n));
    std::vector<std::int64_t> parents{-1};
    std::vector<double> weights{1.0};
    std::vector<FractionalUser> nodes{inner()};
    for (auto& u : users) {
      u.demand = Vector::Zero(m);
      for (int r = 0; r < m; ++r)
        if (rng.below(3) != 0) u.demand[r] = 1.0 + static_cast<double>(rng.below(9));
      if ((u.demand.array() <= 0).all()) u.demand[0] = 1.0;
      u.weight = 1.0 + static_cast<double>(rng.below(3));
      if (rng.below(2) == 0) u.max_tasks = static_cast<double>(rng.below(20));
      parents.push_back(0);
      weights.push_back(u.weight);
      nodes.push_back(u);
    }
    auto flat = progressive_filling(cap, users);
    auto tree = hdrf_progressive_filling(cap, parents, weights, nodes);
    REQUIRE(flat.ok());
    REQUIRE_MESSAGE(tree.ok(), tree.error().message);
    for (std::size_t i = 0; i < users.size(); ++i) {
      INFO("iteration ", iter, ", user ", i);
      CHECK(tree->tasks[i + 1] == doctest::Approx(flat->tasks[i]).epsilon(1e-9));
      // A cap reached at the very moment a resource saturates is a tie, told apart only by rounding:
      // either reason is then true of the user.
      if (tree->stop[i + 1] != flat->stop[i]) CHECK(flat->tasks[i] == doctest::Approx(users[i].max_tasks).epsilon(1e-9));
    }
    for (int r = 0; r < m; ++r) CHECK(tree->saturated[static_cast<std::size_t>(r)] == flat->saturated[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("fractional H-DRF properties on random hierarchies") {
  SplitMix rng(2013);
  int saturated_leaves = 0, met_leaves = 0;
  for (int iter = 0; iter < 500; ++iter) {
    const int m = 1 + static_cast<int>(rng.below(4));
    const std::size_t n = 2 + rng.below(20);
    Vector cap(m);
    for (int r = 0; r < m; ++r) cap[r] = 1.0 + static_cast<double>(rng.below(100));
    std::vector<std::int64_t> parents{-1};
    std::vector<double> weights{1.0};
    for (std::size_t i = 1; i < n; ++i) {
      parents.push_back(static_cast<std::int64_t>(rng.below(i)));
      weights.push_back(rng.below(4) == 0 ? 0.5 : 1.0 + static_cast<double>(rng.below(3)));
    }
    std::vector<char> has_child(n, 0);
    for (std::size_t i = 1; i < n; ++i) has_child[static_cast<std::size_t>(parents[i])] = 1;
    std::vector<FractionalUser> nodes(n);
    for (std::size_t i = 1; i < n; ++i) {
      if (has_child[i]) continue;
      nodes[i].demand = Vector::Zero(m);
      for (int r = 0; r < m; ++r)
        if (rng.below(3) != 0) nodes[i].demand[r] = 1.0 + static_cast<double>(rng.below(9));
      if ((nodes[i].demand.array() <= 0).all()) nodes[i].demand[static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(m)))] = 2.0;
      if (rng.below(2) == 0) nodes[i].max_tasks = static_cast<double>(rng.below(12));
    }
    auto a = hdrf_progressive_filling(cap, parents, weights, nodes);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    INFO("iteration ", iter);
    Vector used = Vector::Zero(m);
    for (std::size_t i = 1; i < n; ++i)
      if (!has_child[i]) used += nodes[i].demand * a->tasks[i];
    for (int r = 0; r < m; ++r) CHECK(used[r] <= cap[r] * (1 + 1e-9));
    for (std::size_t i = 1; i < n; ++i) {
      if (has_child[i]) continue;
      CHECK(a->tasks[i] >= 0);
      CHECK(a->tasks[i] <= nodes[i].max_tasks * (1 + 1e-12));
      if (a->stop[i] == StopReason::kDemandMet) {
        ++met_leaves;
        CHECK(a->tasks[i] == doctest::Approx(nodes[i].max_tasks));
      } else {
        REQUIRE(a->stop[i] == StopReason::kResourceSaturated);
        ++saturated_leaves;
        const int r = a->bottleneck[i];
        REQUIRE(r >= 0);
        CHECK(a->saturated[static_cast<std::size_t>(r)]);
        CHECK(nodes[i].demand[r] > 0);
        CHECK(used[r] == doctest::Approx(cap[r]));
      }
    }
    // Siblings that were both stopped by the same saturation (never blocked before it) rose at one
    // rate from zero: equal weighted dominant shares, when both are leaves.
    for (std::size_t i = 1; i < n; ++i)
      for (std::size_t k = i + 1; k < n; ++k) {
        if (has_child[i] || has_child[k] || parents[i] != parents[k]) continue;
        if (a->stop[i] != StopReason::kResourceSaturated || a->stop[k] != StopReason::kResourceSaturated) continue;
        if (a->bottleneck[i] != a->bottleneck[k]) continue;
        CHECK(a->dominant_share[i] / weights[i] == doctest::Approx(a->dominant_share[k] / weights[k]).epsilon(1e-9));
      }
  }
  CHECK(saturated_leaves > 500);
  CHECK(met_leaves > 300);
}

TEST_CASE("fractional H-DRF rejects malformed input, naming the field") {
  const std::vector<FractionalUser> nodes{inner(), leaf({1})};
  auto r = hdrf_progressive_filling(vec({4}), std::vector<std::int64_t>{-1, 1}, std::vector<double>{1, 1}, nodes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "parents[1]: expected an earlier node, got 1");
  r = hdrf_progressive_filling(vec({4}), std::vector<std::int64_t>{-1, 0}, std::vector<double>{1, -2}, nodes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "weights[1]: expected a positive finite number, got -2");
  r = hdrf_progressive_filling(vec({4, 4}), std::vector<std::int64_t>{-1, 0}, std::vector<double>{1, 1}, nodes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "nodes[1].demand: expected 2 resources, got 1");
  const std::vector<FractionalUser> bad{inner(), leaf({std::nan("")})};
  r = hdrf_progressive_filling(vec({4}), std::vector<std::int64_t>{-1, 0}, std::vector<double>{1, 1}, bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "nodes[1].demand[0]: expected a finite non-negative amount, got nan");
  r = hdrf_progressive_filling(vec({4}), std::vector<std::int64_t>{}, std::vector<double>{}, std::vector<FractionalUser>{});
  REQUIRE_FALSE(r.ok());
  // A leaf needing a resource of zero capacity is unservable, not an error; one wanting nothing is met.
  const std::vector<FractionalUser> odd{inner(), leaf({0, 1}), leaf({0, 0}), leaf({1, 0})};
  auto a = hdrf_progressive_filling(vec({4, 0}), std::vector<std::int64_t>{-1, 0, 0, 0}, std::vector<double>{1, 1, 1, 1}, odd);
  REQUIRE(a.ok());
  CHECK(a->stop[1] == StopReason::kUnservable);
  CHECK(a->stop[2] == StopReason::kDemandMet);
  CHECK(a->tasks[2] == 0.0);
  CHECK(a->tasks[3] == doctest::Approx(4));
}
