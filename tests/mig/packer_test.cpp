// The MIG packer: hand-worked decisions, and property tests against brute force.
#include <doctest/doctest.h>

#include <bit>
#include <tuple>

#include "mig/mig_test_util.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"

using namespace gpusched::mig;
using gpusched::ClusterState;
using gpusched::SplitMix64;
using gpusched::Verdict;

namespace {

using namespace gpusched::mig::testing;


}  // namespace

TEST_CASE("fragmentation of an empty A100-40GB, worked by hand") {
  const MigGpuSpec& a100 = cat().spec(model("A100-SXM4-40GB"));
  const MigDemand d = MigDemand::uniform(cat());
  // Unusable slices per profile on an empty GPU: 1g.5gb {7}, 2g.10gb {6,7}, 4g.20gb {4..7}; each
  // weighted by the profile's compute slices (1, 2, 4).
  CHECK(fragmentation(a100, Occupancy{}, d.weights(model("A100-SXM4-40GB"))) == 1 * 1 + 2 * 2 + 4 * 4);
  // A 1g.5gb at 6: 1g.5gb {7}, 1g.10gb {7}, 2g {7}, 3g {4,5,7}, 4g {4,5,7}, 7g all 7.
  Occupancy o;
  add_instance(a100, o, a100.find_id(19), 6);
  CHECK(fragmentation(a100, o, d.weights(model("A100-SXM4-40GB"))) == 1 * 1 + 1 * 1 + 1 * 2 + 3 * 3 + 3 * 4 + 7 * 7);
}

TEST_CASE("dynamic: a 1g.5gb on an empty A100 goes to slice 6, keeping 4g and 3g placeable") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  b.add_gpu(n, model("A100-SXM4-40GB"));
  ClusterState st = b.build().value();
  const MigGpuId g = 0;
  FragAwarePlacer packer(MigMode::kDynamic, MigDemand::uniform(cat()));
  MigDecision d = packer.decide(st, req("1g.5gb"));
  REQUIRE(d.placed());
  CHECK(d.action == MigAction::kCreate);
  CHECK(d.gpu == g);
  CHECK(d.start == 6);
  CHECK(d.score == 74 - 21);
  // First-fit takes slice 0, which rules out the 4g.20gb.
  MigDecision ff = FirstFitPlacer(MigMode::kDynamic).decide(st, req("1g.5gb"));
  CHECK(ff.start == 0);
  REQUIRE(apply_decision(st, d).ok());
  CHECK(packer.decide(st, req("4g.20gb")).start == 0);
  CHECK(packer.decide(st, req("3g.20gb")).start == 0);
}

TEST_CASE("dynamic: a 3g.20gb fills the hole next to a 4g.20gb instead of breaking an empty GPU") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  b.add_gpu(n, model("A100-SXM4-40GB"));
  b.add_gpu(n, model("A100-SXM4-40GB"), {{5, 0}}, {true});
  ClusterState st = b.build().value();
  const MigGpuId g1 = 1;
  FragAwarePlacer packer(MigMode::kDynamic, MigDemand::uniform(cat()));
  MigDecision d = packer.decide(st, req("3g.20gb"));
  CHECK(d.gpu == g1);
  CHECK(d.start == 4);
  CHECK(d.score < 0);  // fills the GPU: fragmentation drops
  CHECK(FirstFitPlacer(MigMode::kDynamic).decide(st, req("3g.20gb")).gpu == 0);
}

TEST_CASE("static: take the idle instance that keeps a re-partitionable region") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  std::vector<MigInstance> seven;
  for (std::uint8_t s = 0; s < 7; ++s) seven.push_back({19, s});
  const bool none[7] = {};
  const bool three[7] = {true, true, true, false, false, false, false};
  b.add_gpu(n, model("A100-SXM4-40GB"), seven, none);
  b.add_gpu(n, model("A100-SXM4-40GB"), seven, three);
  ClusterState st = b.build().value();
  const MigGpuId g1 = 1;
  FragAwarePlacer packer(MigMode::kStatic, MigDemand::uniform(cat()));
  MigDecision d = packer.decide(st, req("1g.5gb"));
  REQUIRE(d.action == MigAction::kUseIdle);
  CHECK(d.gpu == g1);   // not the untouched GPU
  CHECK(d.start == 3);  // next to the busy ones: slices 4..7 stay free for a 3g.20gb
  // Static mode never creates.
  MigDecision none_left = packer.decide(st, req("3g.20gb"));
  CHECK_FALSE(none_left.placed());
  CHECK(none_left.verdict == Verdict::kNotNow);  // re-partitioning could make one
  CHECK(explain(st, req("3g.20gb"), none_left) == "0/2 GPUs can take 3g.20gb: 2 no idle instance of the profile");
}

TEST_CASE("unplaceable requests explain themselves") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  b.add_gpu(n, model("A100-SXM4-40GB"), {{0, 0}}, {true});
  b.add_gpu(n, model("A30-24GB"));
  ClusterState st = b.build().value();
  FragAwarePlacer packer(MigMode::kDynamic, MigDemand::uniform(cat()));
  MigDecision d = packer.decide(st, req("1g.5gb"));
  CHECK_FALSE(d.placed());
  // The A100 offers 1g.5gb but is full (a busy 7g.40gb): not now, with one reason per cause.
  CHECK(d.verdict == Verdict::kNotNow);
  REQUIRE(d.reasons.size() == 2);
  CHECK(d.reasons[0].kind == gpusched::ReasonKind::kNoMigPlacement);
  CHECK(d.reasons[0].count == 1);
  CHECK(d.reasons[1].kind == gpusched::ReasonKind::kNoMigProfile);
  CHECK(d.reasons[1].count == 1);
  CHECK(explain(st, req("1g.5gb"), d) ==
        "0/2 GPUs can take 1g.5gb: 1 no free placement (slices taken or limits reached), 1 GPU model "
        "without the profile");
  CHECK(to_string(d) == "not now: 1 no free MIG placement, 1 no GPU model offers the MIG profile");
  // A 3g.40gb exists on A100-80GB/H100 only: no GPU of this cluster can ever serve it.
  MigDecision never = packer.decide(st, req("3g.40gb"));
  CHECK(never.verdict == Verdict::kInfeasible);
  CHECK(packer.decide(st, req("1g.6gb")).placed());
  CHECK_FALSE(MigRequest::from_name(cat(), "5g.10gb").ok());
  CHECK(MigRequest::from_name(cat(), "bogus").error().message.find("profile: \"bogus\"") == 0);
}

namespace {

std::string fmt_node(int g) { return "node-" + std::to_string(g / 4); }

// A random cluster of mixed models with random valid layouts, some instances busy.
ClusterState random_state(SplitMix64& rng, int gpus) {
  MigClusterBuilder b;
  const MigModelId models[] = {model("A100-SXM4-40GB"), model("H100-80GB"), model("A30-24GB")};
  std::size_t node = 0;
  for (int g = 0; g < gpus; ++g) {
    if (g % 4 == 0) node = b.add_node(fmt_node(g));
    const MigModelId m = models[rng.below(3)];
    const MigGpuSpec& spec = cat().spec(m);
    Occupancy occ;
    std::vector<MigInstance> instances;
    bool busy[kMaxInstances] = {};
    const int tries = static_cast<int>(rng.below(6));
    for (int t = 0; t < tries; ++t) {
      const int p = static_cast<int>(rng.below(static_cast<std::uint32_t>(spec.profiles.size())));
      const SlotMask s = feasible_starts(spec, occ, p);
      if (!s) continue;
      const int start =
          nth_slot(s, static_cast<int>(rng.below(static_cast<std::uint32_t>(std::popcount(static_cast<unsigned>(s))))));
      add_instance(spec, occ, p, start);
      busy[instances.size()] = rng.below(2) == 0;
      instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
    }
    b.add_gpu(node, m, instances, std::span<const bool>(busy, instances.size()));
  }
  return b.build().value();
}

}  // namespace

TEST_CASE("property: the packer's choice equals a brute-force scan of every GPU and start") {
  const char* names[] = {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.6gb", "2g.12gb",
                         "3g.40gb", "1g.5gb+me", "2g.20gb"};
  for (std::uint64_t trial = 0; trial < 60; ++trial) {
    SplitMix64 rng(trial * 7919 + 1);
    ClusterState st = random_state(rng, 24);
    const MigGpuTable& mig = st.mig().table();
    for (MigMode mode : {MigMode::kDynamic, MigMode::kStatic}) {
      FragAwarePlacer packer(mode, MigDemand::uniform(cat()));
      for (int step = 0; step < 40; ++step) {
        const MigRequest r = req(names[rng.below(std::size(names))]);
        const MigDecision d = packer.decide(st, r);
        // Oracle: the stated rule over every GPU directly, no classes, no memo.
        auto oracle = [&](bool take) {
          std::tuple<std::int64_t, int, MigGpuId, int> best{0, 0, kNoGpu, -1};
          bool found = false;
          for (MigGpuId g = 0; g < mig.gpu_count(); ++g) {
            const int p = r.profile[mig.model_of(g)];
            if (p < 0) continue;
            const MigGpuSpec& spec = mig.spec_of(g);
            const auto w = packer.demand().weights(mig.model_of(g));
            for (int s = 0; s < spec.memory_slots; ++s) {
              Occupancy base = take ? mig.busy_occupancy(g) : mig.occupancy(g);
              if (take) {
                bool idle_here = false;
                for (const MigSlot& x : mig.instances(g)) idle_here |= (!x.busy && x.profile == p && x.start == s);
                if (!idle_here) continue;
              } else if (!can_add(spec, base, p, s)) {
                continue;
              }
              Occupancy after = base;
              add_instance(spec, after, p, s);
              const std::int64_t delta = fragmentation(spec, after, w) - fragmentation(spec, base, w);
              const int left = take ? std::popcount(static_cast<unsigned>(mig.occupancy(g).used & ~after.used))
                                    : std::popcount(static_cast<unsigned>(spec.all_slots() & ~after.used));
              auto key = std::make_tuple(delta, left, g, s);
              if (!found || key < best) best = key;
              found = true;
            }
          }
          return std::make_pair(found, best);
        };
        auto [found_take, best_take] = oracle(true);
        auto [found_create, best_create] = oracle(false);
        if (found_take) {
          REQUIRE(d.action == MigAction::kUseIdle);
          CHECK(d.gpu == std::get<2>(best_take));
          CHECK(d.start == std::get<3>(best_take));
        } else if (mode == MigMode::kDynamic && found_create) {
          // Never refuses while a valid placement exists; and picks the rule's optimum.
          REQUIRE(d.action == MigAction::kCreate);
          CHECK(d.gpu == std::get<2>(best_create));
          CHECK(d.start == std::get<3>(best_create));
        } else {
          CHECK_FALSE(d.placed());
          CHECK_FALSE(d.reasons.empty());
          CHECK(d.verdict != Verdict::kPlaced);
        }
        if (d.placed()) REQUIRE(apply_decision(st, d).ok());
        // Occasionally a workload finishes.
        if (rng.below(3) == 0) {
          const MigGpuId g = rng.below(static_cast<std::uint32_t>(mig.gpu_count()));
          for (const MigSlot& x : mig.instances(g))
            if (x.busy) {
              REQUIRE(st.release(mig_instance_assignment(st, g, x.start, rng.below(2) == 0)).ok());
              break;
            }
        }
      }
      // Every layout the packer produced is valid, and the class index is consistent.
      std::size_t indexed = 0;
      for (MigClassId c : mig.live_classes()) indexed += mig.class_gpus(c).size();
      CHECK(indexed == mig.gpu_count());
      for (MigGpuId g = 0; g < mig.gpu_count(); ++g) {
        auto occ = validate_layout(mig.spec_of(g), mig.layout(g));
        REQUIRE(occ.ok());
        CHECK(*occ == mig.occupancy(g));
        CHECK(mig.class_gpus(mig.class_of(g)).count(g) == 1);
      }
    }
  }
}

TEST_CASE("first-fit: lowest GPU, lowest start, idle instances first") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  b.add_gpu(n, model("A100-SXM4-40GB"));
  b.add_gpu(n, model("A100-SXM4-40GB"), {{19, 3}}, {false});
  ClusterState st = b.build().value();
  FirstFitPlacer ff(MigMode::kDynamic);
  MigDecision d = ff.decide(st, req("1g.5gb"));
  CHECK(d.gpu == 1);
  CHECK(d.action == MigAction::kUseIdle);
  CHECK(d.start == 3);
  d = ff.decide(st, req("2g.10gb"));
  CHECK(d.gpu == 0);
  CHECK(d.start == 0);
}
