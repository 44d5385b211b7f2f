// DRF: the NSDI'11 paper's example, a weighted variant, and the properties of the fractional
// solver and the whole-task scheduler on seeded random instances.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/drf.hpp"

using namespace gpusched::fairness;
using gpusched::fairness::testing::SplitMix;
using gpusched::fairness::testing::vec;
using gpusched::fairness::testing::amounts;

namespace {

// How many tasks of `demand` fit into `bundle` (fractionally).
double tasks_in(const Vector& bundle, const Vector& demand) {
  double k = kUnlimited;
  for (Eigen::Index r = 0; r < demand.size(); ++r)
    if (demand[r] > 0) k = std::min(k, bundle[r] / demand[r]);
  return k;
}

struct RandomInstance {
  Vector capacity;
  std::vector<FractionalUser> users;
};

RandomInstance random_instance(SplitMix& rng, bool caps) {
  RandomInstance in;
  const int m = 1 + static_cast<int>(rng.below(5));
  const int n = 1 + static_cast<int>(rng.below(8));
  in.capacity = Vector(m);
  for (int r = 0; r < m; ++r) in.capacity[r] = 10.0 + static_cast<double>(rng.below(990));
  for (int i = 0; i < n; ++i) {
    FractionalUser u;
    u.demand = Vector::Zero(m);
    for (int r = 0; r < m; ++r)
      if (rng.below(4) != 0) u.demand[r] = 0.1 + static_cast<double>(rng.below(100)) / 10.0;
    if ((u.demand.array() == 0).all()) u.demand[static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(m)))] = 1.0;
    u.weight = 1.0 + static_cast<double>(rng.below(4));
    if (caps && rng.below(3) == 0) u.max_tasks = static_cast<double>(rng.below(200));
    in.users.push_back(u);
  }
  return in;
}

}  // namespace

TEST_CASE("paper example: 9 CPUs, 18 GB; A <1,4>, B <3,1> -> A 3 tasks, B 2, both shares 2/3") {
  const Amounts cap = amounts({9, 18});
  std::vector<TaskUser> users(2);
  users[0].demand = amounts({1, 4});
  users[1].demand = amounts({3, 1});
  auto alloc = drf_whole_tasks(cap, users);
  REQUIRE(alloc.ok());
  CHECK(alloc->tasks == std::vector<std::int64_t>{3, 2});
  CHECK(alloc->dominant_share[0] == doctest::Approx(2.0 / 3.0));
  CHECK(alloc->dominant_share[1] == doctest::Approx(2.0 / 3.0));
  CHECK(alloc->used == amounts({9, 14}));

  // The answer does not depend on the tie-break: swapping the users (so the other one wins ties)
  // gives the same counts.
  std::swap(users[0], users[1]);
  auto swapped = drf_whole_tasks(cap, users);
  REQUIRE(swapped.ok());
  CHECK(swapped->tasks == std::vector<std::int64_t>{2, 3});

  // The fractional reference agrees: A 3, B 2, both dominant shares exactly 2/3, CPU saturated.
  std::vector<FractionalUser> fu(2);
  fu[0].demand = vec({1, 4});
  fu[1].demand = vec({3, 1});
  auto frac = progressive_filling(vec({9, 18}), fu);
  REQUIRE(frac.ok());
  CHECK(frac->tasks[0] == doctest::Approx(3.0));
  CHECK(frac->tasks[1] == doctest::Approx(2.0));
  CHECK(frac->dominant_share[0] == doctest::Approx(2.0 / 3.0));
  CHECK(frac->saturated[0]);
  CHECK_FALSE(frac->saturated[1]);
}

TEST_CASE("weighted variant: A weight 2, B weight 1") {
  // Fractional, worked by hand: equal weighted shares x_A·(2/9)/2 = x_B·(1/3) give x_A = 3·x_B;
  // memory saturates first (4·x_A + x_B = 18), so x_B = 18/13 and x_A = 54/13.
  std::vector<FractionalUser> fu(2);
  fu[0].demand = vec({1, 4});
  fu[0].weight = 2;
  fu[1].demand = vec({3, 1});
  auto frac = progressive_filling(vec({9, 18}), fu);
  REQUIRE(frac.ok());
  CHECK(frac->tasks[0] == doctest::Approx(54.0 / 13.0));
  CHECK(frac->tasks[1] == doctest::Approx(18.0 / 13.0));
  CHECK(frac->dominant_share[0] / 2 == doctest::Approx(frac->dominant_share[1]));
  CHECK(frac->saturated[1]);

  // Whole tasks, worked by hand with the stated tie-break (lower id wins a tie): A1 B1 A2 A3, then
  // A and B tie at 1/3 and A takes A4; B's second task no longer fits the CPU (4 + 6 > 9) and A's
  // fifth not the memory (20 > 18).
  std::vector<TaskUser> users(2);
  users[0].demand = amounts({1, 4});
  users[0].weight = 2;
  users[1].demand = amounts({3, 1});
  auto alloc = drf_whole_tasks(amounts({9, 18}), users);
  REQUIRE(alloc.ok());
  CHECK(alloc->tasks == std::vector<std::int64_t>{4, 1});
  CHECK(alloc->sequence == std::vector<std::uint32_t>{0, 1, 0, 0, 0});
}

TEST_CASE("demand caps and unservable users") {
  std::vector<FractionalUser> fu(3);
  fu[0].demand = vec({1, 4});
  fu[0].max_tasks = 1;  // stops early; the rest goes to B
  fu[1].demand = vec({3, 1});
  fu[2].demand = vec({0, 1, 1});
  fu[2].demand = vec({1, 1});
  auto frac = progressive_filling(vec({9, 18}), std::span(fu).first(2));
  REQUIRE(frac.ok());
  CHECK(frac->tasks[0] == doctest::Approx(1.0));
  CHECK(frac->stop[0] == StopReason::kDemandMet);
  CHECK(frac->tasks[1] == doctest::Approx(8.0 / 3.0));  // CPU: 1 + 3·x_B = 9
  CHECK(frac->stop[1] == StopReason::kResourceSaturated);
  CHECK(frac->bottleneck[1] == 0);

  std::vector<FractionalUser> gpu(1);
  gpu[0].demand = vec({1, 1});
  auto none = progressive_filling(vec({4, 0}), gpu);  // needs a resource of zero capacity
  REQUIRE(none.ok());
  CHECK(none->tasks[0] == 0.0);
  CHECK(none->stop[0] == StopReason::kUnservable);
}

TEST_CASE("bad input is an error naming the field") {
  std::vector<FractionalUser> fu(1);
  fu[0].demand = vec({1});
  auto r = progressive_filling(vec({9, 18}), fu);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "users[0].demand: expected 2 resources, got 1");
  fu[0].demand = vec({0, 0});
  r = progressive_filling(vec({9, 18}), fu);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("users[0].demand: all zero") == 0);
  fu[0].demand = vec({1, 1});
  fu[0].weight = -1;
  r = progressive_filling(vec({9, 18}), fu);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "users[0].weight: expected a positive finite number, got -1");
  std::vector<TaskUser> tu(1);
  tu[0].demand = amounts({0, 0});
  auto w = drf_whole_tasks(amounts({9, 18}), tu);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().message.find("users[0].demand: all zero with unbounded max_tasks") == 0);
}

TEST_CASE("fractional DRF properties on random instances") {
  SplitMix rng(7);
  for (int iter = 0; iter < 400; ++iter) {
    const RandomInstance in = random_instance(rng, /*caps=*/true);
    auto res = progressive_filling(in.capacity, in.users);
    REQUIRE(res.ok());
    const auto& a = *res;
    const std::size_t n = in.users.size();
    const Eigen::Index m = in.capacity.size();
    double total_weight = 0;
    for (const auto& u : in.users) total_weight += u.weight;
    // Feasible.
    for (Eigen::Index r = 0; r < m; ++r) CHECK(a.used[r] <= in.capacity[r] * (1 + 1e-9));
    for (std::size_t i = 0; i < n; ++i) {
      const auto& u = in.users[i];
      CHECK(a.tasks[i] <= u.max_tasks * (1 + 1e-9));
      // Sharing incentive: at least what w_i/W of every resource would give.
      const double alone = std::min(u.max_tasks, tasks_in(in.capacity * (u.weight / total_weight), u.demand));
      CHECK(a.tasks[i] >= alone * (1 - 1e-9));
      // Pareto efficiency: either its demand is met or it needs a saturated resource.
      bool blocked = a.tasks[i] >= u.max_tasks * (1 - 1e-9);
      for (Eigen::Index r = 0; r < m; ++r)
        if (u.demand[r] > 0 && a.saturated[static_cast<std::size_t>(r)]) blocked = true;
      CHECK(blocked);
      // Envy-freeness (weighted): i does not prefer j's bundle scaled by w_i / w_j.
      for (std::size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        const Vector bundle = in.users[j].demand * (a.tasks[j] * u.weight / in.users[j].weight);
        CHECK(std::min(u.max_tasks, tasks_in(bundle, u.demand)) <= a.tasks[i] * (1 + 1e-9) + 1e-9);
      }
    }
  }
}

TEST_CASE("fractional DRF is strategy-proof: lying about the demand never gains") {
  SplitMix rng(11);
  int lies = 0;
  for (int iter = 0; iter < 300; ++iter) {
    RandomInstance in = random_instance(rng, /*caps=*/false);
    auto truth = progressive_filling(in.capacity, in.users);
    REQUIRE(truth.ok());
    const std::size_t liar = rng.below(in.users.size());
    const Vector true_demand = in.users[liar].demand;
    for (int k = 0; k < 5; ++k) {
      // Inflate, deflate or invent needs on random resources.
      Vector lie = true_demand;
      for (Eigen::Index r = 0; r < lie.size(); ++r) {
        const auto roll = rng.below(4);
        if (roll == 0) lie[r] *= 1.0 + static_cast<double>(rng.below(300)) / 100.0;
        else if (roll == 1) lie[r] *= static_cast<double>(rng.below(100)) / 100.0;
        else if (roll == 2 && lie[r] == 0) lie[r] = static_cast<double>(1 + rng.below(50)) / 10.0;
      }
      if ((lie.array() == 0).all()) continue;
      in.users[liar].demand = lie;
      auto lied = progressive_filling(in.capacity, in.users);
      in.users[liar].demand = true_demand;
      REQUIRE(lied.ok());
      // What the liar can really run with the bundle it got.
      const double real = tasks_in(lie * lied->tasks[liar], true_demand);
      CHECK(real <= truth->tasks[liar] * (1 + 1e-9) + 1e-9);
      ++lies;
    }
  }
  CHECK(lies > 1000);
}

TEST_CASE("whole-task DRF: non-wasteful and envy-free up to one task") {
  SplitMix rng(3);
  int ef1_checked = 0, envy_after_set_aside = 0;
  for (int iter = 0; iter < 500; ++iter) {
    const int m = 1 + static_cast<int>(rng.below(4));
    const int n = 1 + static_cast<int>(rng.below(6));
    Amounts cap(m);
    for (int r = 0; r < m; ++r) cap[r] = 20 + static_cast<std::int64_t>(rng.below(200));
    std::vector<TaskUser> users(static_cast<std::size_t>(n));
    for (auto& u : users) {
      u.demand = Amounts::Zero(m);
      for (int r = 0; r < m; ++r)
        if (rng.below(3) != 0) u.demand[r] = 1 + static_cast<std::int64_t>(rng.below(15));
      if ((u.demand.array() == 0).all()) u.demand[0] = 1;
      u.weight = 1.0 + static_cast<double>(rng.below(3));
      if (rng.below(4) == 0) u.max_tasks = static_cast<std::int64_t>(rng.below(10));
    }
    auto res = drf_whole_tasks(cap, users);
    REQUIRE(res.ok());
    const Amounts free = cap - res->used;
    CHECK((free.array() >= 0).all());
    for (std::size_t i = 0; i < users.size(); ++i) {
      const auto& u = users[i];
      const bool capped = u.max_tasks >= 0 && res->tasks[i] >= u.max_tasks;
      // Non-wasteful: no remaining task of any user fits what is left.
      if (!capped) CHECK_FALSE((u.demand.array() <= free.array()).all());
      // EF1 (weighted): if i was still served when j got its last task, i does not prefer j's
      // bundle minus one of j's tasks, scaled by w_i / w_j. (Proof: j had the lowest weighted share
      // then, so s(bundle) <= s_i, and k tasks of i in a bundle need k·d_i <= s(bundle).)
      for (std::size_t j = 0; j < users.size(); ++j) {
        if (i == j || res->tasks[j] == 0 || capped) continue;
        std::size_t last_of_j = 0;
        for (std::size_t t = 0; t < res->sequence.size(); ++t)
          if (res->sequence[t] == j) last_of_j = t;
        const Vector bundle = (users[j].demand.cast<double>() * static_cast<double>(res->tasks[j] - 1)) *
                              (u.weight / users[j].weight);
        const double fit = std::floor(tasks_in(bundle, u.demand.cast<double>()) + 1e-9);
        if (last_of_j < res->set_aside_at[i]) {
          ++ef1_checked;
          CHECK(fit <= static_cast<double>(res->tasks[i]));
        } else if (fit > static_cast<double>(res->tasks[i])) {
          ++envy_after_set_aside;  // allowed: i was set aside before j's last task
        }
      }
    }
  }
  CHECK(ef1_checked > 2000);
  // EF1 genuinely fails for users set aside early; the instances do exercise it (so the guard above
  // is needed and is not hiding a bug in the served case).
  CHECK(envy_after_set_aside > 0);
}

TEST_CASE("DrfSorter: front is the lowest weighted share; only the changed client moves") {
  DrfSorter s(amounts({100, 100}));
  const auto a = s.add(1.0), b = s.add(2.0), c = s.add(1.0);
  CHECK(s.front() == a);  // all zero: lowest id
  s.allocate(a, amounts({10, 0}));
  CHECK(s.front() == b);
  s.allocate(b, amounts({0, 20}));  // weighted 0.1, same as a; b's id is higher
  CHECK(s.front() == c);
  s.allocate(c, amounts({30, 0}));
  CHECK(s.front() == a);
  CHECK(s.share(b) == doctest::Approx(0.1));
  s.deactivate(a);
  CHECK(s.front() == b);
  s.unallocate(c, amounts({30, 0}));
  CHECK(s.front() == c);
  s.activate(a);
  CHECK(s.front() == c);
  CHECK(s.allocation(a)[0] == 10);
  DrfSorter copy = s;  // copies keep working independently
  copy.allocate(c, amounts({50, 0}));
  CHECK(copy.front() == a);
  CHECK(s.front() == c);
}

TEST_CASE("DrfSorter agrees with a full sort on random operation sequences") {
  SplitMix rng(5);
  DrfSorter s(amounts({1000, 2000, 300}));
  std::vector<Amounts> alloc;
  std::vector<double> weight;
  std::vector<bool> active;
  for (int i = 0; i < 50; ++i) {
    weight.push_back(1.0 + static_cast<double>(rng.below(4)));
    s.add(weight.back());
    alloc.push_back(Amounts::Zero(3));
    active.push_back(true);
  }
  const Amounts total = amounts({1000, 2000, 300});
  for (int step = 0; step < 3000; ++step) {
    const auto c = static_cast<std::uint32_t>(rng.below(50));
    const auto op = rng.below(10);
    if (op < 6) {
      Amounts d(3);
      for (int r = 0; r < 3; ++r) d[r] = static_cast<std::int64_t>(rng.below(10));
      s.allocate(c, d);
      alloc[c] += d;
    } else if (op < 8) {
      if (active[c]) s.deactivate(c); else s.activate(c);
      active[c] = !active[c];
    } else {
      const Amounts d = alloc[c] / 2;
      s.unallocate(c, d);
      alloc[c] -= d;
    }
    std::int64_t best = -1;
    double best_share = 0;
    for (std::uint32_t i = 0; i < 50; ++i) {
      if (!active[i]) continue;
      const double sh = dominant_share(alloc[i], total) / weight[i];
      if (best < 0 || sh < best_share) {
        best = i;
        best_share = sh;
      }
    }
    REQUIRE(s.front() == best);
  }
}
