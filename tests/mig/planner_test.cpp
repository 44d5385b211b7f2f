// Re-partition planning: hand-worked plans, validity of every plan, optimality on one GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <map>

#include "mig/mig_test_util.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/planner.hpp"

using namespace gpusched::mig;
using gpusched::ClusterState;
using gpusched::SplitMix64;

namespace {

using namespace gpusched::mig::testing;
MigDemandItem item(std::string_view name, std::int64_t count) {
  return MigDemandItem{std::string(name), MigRequest::from_name(cat(), name).value(), count};
}

// Checks a plan against the state it was made for: untouched busy instances, valid new layouts,
// served counts consistent with the created instances.
void check_plan(const ClusterState& state, std::span<const MigDemandItem> demand, const MigPlan& plan) {
  const MigGpuTable& st = state.mig().table();
  std::vector<std::int64_t> created(demand.size(), 0);
  MigGpuId last = kNoGpu;
  for (const MigGpuChange& ch : plan.changes) {
    CHECK((last == kNoGpu || ch.gpu > last));  // each GPU at most once, sorted
    last = ch.gpu;
    CHECK(ch.before == st.layout(ch.gpu));
    REQUIRE(validate_layout(st.spec_of(ch.gpu), ch.after, st.rules()).ok());
    for (std::size_t i = 0; i < st.instances(ch.gpu).size(); ++i) {
      const MigSlot& s = st.instances(ch.gpu)[i];
      const MigInstance inst = st.layout(ch.gpu)[i];
      const bool in_after = std::find(ch.after.begin(), ch.after.end(), inst) != ch.after.end();
      if (s.busy) CHECK(in_after);  // busy instances never move
      const bool destroyed = std::find(ch.destroyed.begin(), ch.destroyed.end(), inst) != ch.destroyed.end();
      CHECK(in_after != destroyed);
    }
    CHECK(ch.after.size() == ch.before.size() - ch.destroyed.size() + ch.created.size());
    REQUIRE(ch.serves.size() == ch.created.size());
    CHECK_FALSE(ch.created.empty());
    for (std::size_t k = 0; k < ch.created.size(); ++k) {
      REQUIRE(ch.serves[k] < demand.size());
      const int p = demand[ch.serves[k]].request.profile[st.model_of(ch.gpu)];
      CHECK(st.spec_of(ch.gpu).profiles[static_cast<std::size_t>(p)].id == ch.created[k].profile_id);
      ++created[ch.serves[k]];
    }
  }
  for (std::size_t i = 0; i < demand.size(); ++i) {
    CHECK(created[i] == plan.served_created[i]);
    CHECK(plan.served_idle[i] + plan.served_created[i] + plan.unserved[i] == demand[i].count);
  }
}

}  // namespace

TEST_CASE("plan: idle instances first, then the hole that leaves nothing fragmented") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  const MigModelId a100 = model("A100-SXM4-40GB");
  b.add_gpu(n, a100);                             // gpu 0: empty
  b.add_gpu(n, a100, {{5, 0}}, {true});           // gpu 1: 4g.20gb busy, 4..7 free
  b.add_gpu(n, a100, {{9, 0}, {9, 4}});           // gpu 2: two idle 3g.20gb
  ClusterState st = b.build().value();
  const MigDemandItem demand[] = {item("3g.20gb", 3)};
  MigPlan plan = plan_repartition(st, demand);
  check_plan(st, demand, plan);
  CHECK(plan.served_idle[0] == 2);
  CHECK(plan.served_created[0] == 1);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0].gpu == 1);
  CHECK(plan.changes[0].created == std::vector<MigInstance>{{9, 4}});
  CHECK(plan.changes[0].after == std::vector<MigInstance>{{5, 0}, {9, 4}});
  // Applied, the plan is a cluster event on the one state: GPU 1 now holds the busy 4g.20gb and an
  // idle 3g.20gb at 4, so a static placement takes it without re-partitioning.
  ClusterState applied = st;
  REQUIRE(apply_plan(applied, plan).ok());
  CHECK(applied.mig().table().layout(1) == std::vector<MigInstance>{{5, 0}, {9, 4}});
  CHECK(applied.mig().table().busy_flags(1) == std::vector<bool>{true, false});
  CHECK(FirstFitPlacer(MigMode::kStatic).decide(applied, MigRequest::from_name(cat(), "3g.20gb").value()).placed());
  auto parted = mig_parted_plan(st, plan);
  REQUIRE(parted.size() == 1);
  CHECK(to_mig_parted_yaml(parted) ==
        "version: v1\nmig-configs:\n  \"gpusched-n0\":\n    - devices: [1]\n      mig-enabled: true\n      mig-devices:\n"
        "        \"3g.20gb\": 1\n        \"4g.20gb\": 1\n");
}

TEST_CASE("plan: at equal compute served, whole GPUs go to the profile that needs them") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  for (int i = 0; i < 3; ++i) b.add_gpu(n, model("A100-SXM4-40GB"));
  ClusterState st = b.build().value();
  // Seven 1g.5gb on one GPU serve as many compute slices as a 7g.40gb there; the 1g.5gb could use
  // other GPUs' leftovers but the 7g cannot, so the 7g take all three GPUs.
  const MigDemandItem demand[] = {item("1g.5gb", 7), item("7g.40gb", 3)};
  MigPlan plan = plan_repartition(st, demand);
  check_plan(st, demand, plan);
  CHECK(plan.served_created[1] == 3);
  CHECK(plan.unserved[0] == 7);
  CHECK(plan.changes.size() == 3);
  // With room for both, the 1g.5gb share one GPU instead of spreading.
  b.add_gpu(n, model("A100-SXM4-40GB"));
  st = b.build().value();
  plan = plan_repartition(st, demand);
  check_plan(st, demand, plan);
  CHECK(plan.total_unserved() == 0);
  CHECK(plan.changes.size() == 4);
  CHECK(plan.changes[3].created.size() == 7);
}

TEST_CASE("plan: busy instances stay; idle ones in the way are destroyed only when allowed") {
  MigClusterBuilder b;
  auto n = b.add_node("n0");
  std::vector<MigInstance> sevens;
  for (std::uint8_t s = 0; s < 7; ++s) sevens.push_back({19, s});
  const bool busy[7] = {true, false, false, false, false, false, false};
  b.add_gpu(n, model("A100-SXM4-40GB"), sevens, busy);
  ClusterState st = b.build().value();
  const MigDemandItem demand[] = {item("3g.20gb", 1)};
  MigPlan plan = plan_repartition(st, demand);
  check_plan(st, demand, plan);
  REQUIRE(plan.changes.size() == 1);
  CHECK(plan.changes[0].created == std::vector<MigInstance>{{9, 4}});
  CHECK(plan.changes[0].destroyed.size() == 3);  // the 1g.5gb at 4, 5, 6
  MigPlan keep = plan_repartition(st, demand, MigPlanOptions{.destroy_idle = false});
  CHECK(keep.changes.empty());
  CHECK(keep.unserved[0] == 1);
}

TEST_CASE("property: plans are valid; on one empty GPU the plan serves the optimum") {
  const char* names[] = {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.5gb+me"};
  const MigGpuSpec& spec = cat().spec(model("A100-SXM4-40GB"));
  const auto layouts = maximal_layouts(spec);
  for (std::uint64_t trial = 0; trial < 200; ++trial) {
    SplitMix64 rng(trial + 11);
    std::vector<MigDemandItem> demand;
    for (const char* nm : names)
      if (rng.below(2)) demand.push_back(item(nm, rng.below(4)));
    MigClusterBuilder b;
    auto n = b.add_node("n");
    b.add_gpu(n, model("A100-SXM4-40GB"));
    ClusterState st = b.build().value();
    MigPlan plan = plan_repartition(st, demand);
    check_plan(st, demand, plan);
    // Oracle: the best compute slices served by any maximal layout, counts capped by demand.
    std::int64_t best = 0;
    for (const auto& l : layouts) {
      std::map<std::uint32_t, std::int64_t> have;
      for (const MigInstance& x : l) ++have[x.profile_id];
      std::int64_t v = 0;
      for (const MigDemandItem& d : demand) {
        const auto& prof = spec.profiles[static_cast<std::size_t>(d.request.profile[model("A100-SXM4-40GB")])];
        const std::int64_t take = std::min(have[prof.id], d.count);
        have[prof.id] -= take;
        v += take * prof.compute_slices;
      }
      best = std::max(best, v);
    }
    std::int64_t got = 0;
    for (std::size_t i = 0; i < demand.size(); ++i)
      got += plan.served_created[i] *
             spec.profiles[static_cast<std::size_t>(demand[i].request.profile[model("A100-SXM4-40GB")])].compute_slices;
    CHECK_MESSAGE(got == best, "trial ", trial);
  }
}

TEST_CASE("property: plans on random mixed clusters are valid") {
  const char* names[] = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.10gb", "3g.40gb", "1g.6gb",
                         "2g.12gb"};
  const MigModelId models[] = {model("A100-SXM4-40GB"), model("H100-80GB"), model("A30-24GB")};
  for (std::uint64_t trial = 0; trial < 40; ++trial) {
    SplitMix64 rng(trial * 31 + 5);
    MigClusterBuilder b;
    std::size_t node = 0;
    for (int g = 0; g < 16; ++g) {
      if (g % 4 == 0) node = b.add_node("node-" + std::to_string(g / 4));
      const MigModelId m = models[rng.below(3)];
      const MigGpuSpec& spec = cat().spec(m);
      Occupancy occ;
      std::vector<MigInstance> instances;
      bool busy[kMaxInstances] = {};
      for (int t = static_cast<int>(rng.below(5)); t > 0; --t) {
        const int p = static_cast<int>(rng.below(static_cast<std::uint32_t>(spec.profiles.size())));
        const SlotMask s = feasible_starts(spec, occ, p);
        if (!s) continue;
        const int start = std::countr_zero(static_cast<unsigned>(s));
        add_instance(spec, occ, p, start);
        busy[instances.size()] = rng.below(2) == 0;
        instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
      }
      b.add_gpu(node, m, instances, std::span<const bool>(busy, instances.size()));
    }
    ClusterState st = b.build().value();
    std::vector<MigDemandItem> demand;
    for (const char* nm : names) demand.push_back(item(nm, rng.below(5)));
    for (bool destroy : {true, false}) {
      MigPlan plan = plan_repartition(st, demand, MigPlanOptions{.destroy_idle = destroy});
      check_plan(st, demand, plan);
      if (!destroy)
        for (const auto& ch : plan.changes) CHECK(ch.destroyed.empty());
    }
  }
}

TEST_CASE("mig-parted YAML: a crafted node or profile name cannot inject keys or lines") {
  // A node name (the library's MigClusterBuilder takes any string) that, written raw, would close
  // the config key and start a sibling config `evil` at the same indentation.
  MigPartedNode n{"x", "gpusched-x: {}\n  evil", {{{0}, {{"1g.5gb\"\\", 2}, {std::string("a\0b", 3), 1}}}}};
  const std::string y = to_mig_parted_yaml({n});
  CHECK(y ==
        "version: v1\nmig-configs:\n  \"gpusched-x: {}\\x0a  evil\":\n    - devices: [0]\n      mig-enabled: true\n"
        "      mig-devices:\n        \"1g.5gb\\\"\\\\\": 2\n        \"a\\x00b\": 1\n");
  // Eight lines, as for any one-config, one-entry, two-profile plan: nothing was injected.
  CHECK(std::count(y.begin(), y.end(), '\n') == 8);
  CHECK(y.find('\0') == std::string::npos);
}
