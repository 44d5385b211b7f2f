// Issue 15, scale: queue trees 20,000 levels deep. HdrfScheduler's leaf-to-root pass stops at the
// first ancestor whose state did not change, so adding a queue under a deep chain costs O(1) levels
// (building a D-deep tree was O(D^2)); nothing recurses over the depth (these tests run under the
// sanitizer build's small-stack ASan too). Checked: the deep chain gives the answers a flat queue
// gives, and the early stop never leaves an ancestor stale (every node's share and consumption equal
// those of a scheduler built afresh from the same leaf states).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "fairness/test_util.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/hdrf.hpp"

using namespace gpusched::fairness;
using gpusched::CompiledJob;
using gpusched::fairness::testing::SplitMix;
using gpusched::fairness::testing::amounts;

TEST_CASE("H-DRF on a chain of 20,000 queues: the leaf is served, every level holds its consumption") {
  constexpr std::size_t kDepth = 20000;
  HdrfScheduler s(amounts({1000, 1000}));
  HdrfScheduler::NodeId n = HdrfScheduler::kRoot;
  for (std::size_t d = 0; d < kDepth; ++d) n = s.add_node(n, 1.0 + static_cast<double>(d % 3)).value();
  const HdrfScheduler::NodeId leaf = n;
  REQUIRE(s.node_count() == kDepth + 1);
  for (int k = 0; k < 10; ++k) {
    REQUIRE(s.pick() == leaf);
    s.allocate(leaf, amounts({30, 10}));
  }
  // One child per level: each level's consumption is its child's (rescaling a single child changes
  // nothing but rounding), and its share that consumption's dominant share over its own weight.
  for (HdrfScheduler::NodeId q : {HdrfScheduler::NodeId{1}, HdrfScheduler::NodeId{kDepth / 2}, leaf}) {
    const Vector v = s.consumption(q);
    CHECK(v[0] == doctest::Approx(300));
    CHECK(v[1] == doctest::Approx(100));
    CHECK(s.share(q) == doctest::Approx(0.3 / (1.0 + static_cast<double>((q - 1) % 3))));
  }
  for (int k = 0; k < 10; ++k) s.release(leaf, amounts({30, 10}));
  CHECK(s.consumption(1)[0] == 0);
  CHECK(s.share(1) == 0);
}

TEST_CASE("admission through a 20,000-deep queue chain: same order and flavors as one flat queue") {
  ResourceSpace space{{"A100", "H100"}};
  Amounts cap(4);
  cap << 64000, std::int64_t{512} << 30, 16000, 16000;
  std::vector<QueueConfig> chain(20000);
  for (std::size_t q = 0; q < chain.size(); ++q) {
    chain[q].name = fmt::format("q{}", q);
    if (q > 0) chain[q].parent = chain[q - 1].name;
  }
  QueueConfig flat;
  flat.name = chain.back().name;
  std::vector<CompiledJob> jobs;
  SplitMix rng(20000);
  for (std::size_t j = 0; j < 300; ++j) {
    const auto priority = static_cast<std::int32_t>(rng.below(3));
    const auto submit = static_cast<std::int64_t>(rng.below(1000));
    const std::int64_t cpu = 1000 * static_cast<std::int64_t>(1 + rng.below(4));
    const std::int64_t gpu = 1000 * static_cast<std::int64_t>(rng.below(3));
    std::vector<std::string> models;
    if (rng.below(2) == 0) models = {space.gpu_models[rng.below(2)]};
    jobs.push_back(testing::job_of(fmt::format("j{}", j), chain.back().name, cpu, std::int64_t{4} << 30, gpu, space, models,
                                   priority, submit));
  }
  auto deep = FairSharePlanner::build(space, cap, cap, chain);
  REQUIRE(deep.ok());
  auto one = FairSharePlanner::build(space, cap, cap, {flat});
  REQUIRE(one.ok());
  const AdmissionPlan a = deep->plan(jobs), b = one->plan(jobs);
  REQUIRE(a.admitted.size() == b.admitted.size());
  CHECK(a.admitted.size() > 10);
  CHECK(a.pending.size() > 10);
  for (std::size_t k = 0; k < a.admitted.size(); ++k) {
    CHECK(a.admitted[k].job == b.admitted[k].job);
    CHECK(a.admitted[k].gpu_dim == b.admitted[k].gpu_dim);
  }
  // The root's child sums its one leaf's usage.
  CHECK(a.queues.front().dominant_share == doctest::Approx(a.queues.back().dominant_share));
  CHECK(a.queues.back().admitted == a.admitted.size());
}

TEST_CASE("H-DRF: after any sequence of changes every node equals a scheduler built afresh from the leaves") {
  // Narrow trees (every internal node re-sums its children exactly), so the values must be identical,
  // not just close: an ancestor left stale by the early stop would show.
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SplitMix rng(seed);
    const std::size_t nodes = 2 + rng.below(60);
    std::vector<std::int64_t> parents{-1};
    std::vector<double> weights{1.0};
    for (std::size_t i = 1; i < nodes; ++i) {
      // Often the last node (deep chains), otherwise any earlier one.
      parents.push_back(rng.below(3) == 0 ? static_cast<std::int64_t>(rng.below(i)) : static_cast<std::int64_t>(i - 1));
      weights.push_back(1.0 + static_cast<double>(rng.below(4)));
    }
    const Amounts cap = amounts({1000000, 1000000, 1000000});
    auto make = [&] {
      HdrfScheduler s(cap);
      for (std::size_t i = 1; i < nodes; ++i)
        REQUIRE(s.add_node(static_cast<HdrfScheduler::NodeId>(parents[i]), weights[i]).ok());
      return s;
    };
    HdrfScheduler s = make();
    std::vector<HdrfScheduler::NodeId> leaves;
    for (HdrfScheduler::NodeId n = 1; n < nodes; ++n)
      if (s.is_leaf(n)) leaves.push_back(n);
    std::vector<Amounts> held(nodes, amounts({0, 0, 0}));
    std::vector<std::uint8_t> tier(nodes, 0);
    std::vector<char> blocked(nodes, 0);
    for (int step = 0; step < 400; ++step) {
      const HdrfScheduler::NodeId leaf = leaves[rng.below(leaves.size())];
      const Amounts task = amounts({static_cast<std::int64_t>(rng.below(50)), static_cast<std::int64_t>(rng.below(50)),
                                    static_cast<std::int64_t>(rng.below(50))});
      switch (rng.below(5)) {
        case 0:
        case 1:
          s.allocate(leaf, task);
          held[leaf] += task;
          break;
        case 2:
          if ((held[leaf].array() >= task.array()).all()) {
            s.release(leaf, task);
            held[leaf] -= task;
          }
          break;
        case 3:
          tier[leaf] = static_cast<std::uint8_t>(rng.below(2));
          s.set_tier(leaf, tier[leaf]);
          break;
        default:
          blocked[leaf] = !blocked[leaf];
          if (blocked[leaf]) s.block(leaf);
          else s.unblock(leaf);
      }
    }
    HdrfScheduler fresh = make();
    for (HdrfScheduler::NodeId leaf : leaves) {
      fresh.apply(leaf, HdrfScheduler::LeafChange{&held[leaf], nullptr, tier[leaf], blocked[leaf] != 0});
    }
    for (HdrfScheduler::NodeId n = 1; n < nodes; ++n) {
      INFO("seed ", seed, " node ", n);
      CHECK(s.share(n) == fresh.share(n));
      CHECK(s.blocked(n) == fresh.blocked(n));
      CHECK(s.consumption(n) == fresh.consumption(n));
    }
    CHECK(s.pick() == fresh.pick());
  }
}
