// FGD-OC: each opportunity cost on hand-worked numbers, and the choice it changes against plain FGD.
#include <doctest/doctest.h>

#include <vector>

#include "fgd_test_util.hpp"

using namespace gpusched;
using namespace gpusched::fgd_test;

namespace {

FgdOptions only(bool packing, bool stranding, bool scarcity) {
  FgdOptions o;
  o.name = "FGD-OC";
  o.packing_loss = packing;
  o.cpu_stranding = stranding;
  o.model_scarcity = scarcity;
  return o;
}

// Prices as the cutting-stock LP gives them on the Alibaba default list (rounded): a 160 rides free in
// an 810's leftover, three 320s or two 470s fill a GPU.
TargetWorkload priced_workload() {
  TargetWorkload w;
  w.shapes = {shape(1000, 1, 1000, 1.0)};
  w.share_prices = {{160, 0.0}, {320, 1.0 / 3}, {470, 0.5}, {810, 1.0}};
  return w;
}

}  // namespace

TEST_CASE("FGD-OC packing loss: K(free) - price(share) - K(free - share), hand-worked") {
  const FgdPolicy p(priced_workload(), 42, only(true, false, false));
  CHECK(p.packing_loss(1000, 470) == doctest::Approx(0.0));   // 1 - 1/2 - K(530) = 1/2
  CHECK(p.packing_loss(530, 470) == doctest::Approx(0.0));    // two 470s: an optimal pair at these prices
  CHECK(p.packing_loss(1000, 810) == doctest::Approx(0.0));   // K(190) = 0: only a free 160 fits beside
  // Beside a 320 (680 free) a 470 leaves 210, where nothing priced fits: K(680) = 2/3 (two 320s).
  CHECK(p.packing_loss(680, 470) == doctest::Approx(1.0 / 6));
  // A size the LP never saw is worth the next smaller priced size: 400 -> 1/3; K(600) = 1/2.
  CHECK(p.packing_loss(1000, 400) == doctest::Approx(1.0 - 1.0 / 3 - 0.5));
  CHECK(p.packing_loss(300, 470) == 0.0);  // does not fit: no loss defined
  // Without prices (or without the option) there is no loss at all.
  TargetWorkload unpriced = priced_workload();
  unpriced.share_prices.clear();
  CHECK(FgdPolicy(unpriced, 42, only(true, false, false)).packing_loss(680, 470) == 0.0);
  CHECK(FgdPolicy(priced_workload(), 42).packing_loss(680, 470) == 0.0);
}

TEST_CASE("FGD-OC puts a 470 on an idle GPU rather than beside a 320, where FGD fills the fragment") {
  Cluster c({node("a", 32000, {320, 0})});  // free: [680, 1000]
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  const TaskRequest t = request(s, 1000, 1, 470);
  // FGD (whole-GPU target shape): F counts GPUs below 1000 free; 680 -> 210 gives F = 210, the idle
  // GPU gives 680 + 530 = 1210. So FGD takes GPU 0.
  const auto fgd = FgdPolicy(priced_workload(), 42).evaluate(s, 0, t);
  REQUIRE(fgd.fits);
  CHECK(fgd.gpu == 0);
  CHECK(fgd.frag_after == doctest::Approx(210.0));
  // FGD-OC charges GPU 0 100 x 1000 x 1/6 milli: the idle GPU wins, at no cost.
  const FgdPolicy oc(priced_workload(), 42, only(true, false, false));
  const auto choice = oc.evaluate(s, 0, t);
  REQUIRE(choice.fits);
  CHECK(choice.gpu == 1);
  CHECK(choice.cost == 0.0);
  CHECK(choice.frag_after == doctest::Approx(1210.0));
  TaskAssignment a;
  REQUIRE(oc.gpu_picker().pick(s, 0, t, a));
  CHECK(a.gpus == std::vector<GpuIndex>{1});
}

TEST_CASE("FGD-OC CPU stranding sends a CPU-only task to the node whose CPU would idle") {
  // Workload: 8 CPUs per whole GPU, so c = 8 milli-CPU per milli-GPU. Node "tight" has exactly that
  // (64 CPUs, 8 GPUs); node "rich" has 104 CPUs for 2 GPUs.
  TargetWorkload w;
  w.shapes = {shape(8000, 1, 1000, 1.0)};
  Cluster c({node("tight", 64000, std::vector<MilliGpu>(8, 0)), node("rich", 104000, {0, 0})});
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  const TaskRequest cpu_only = request(s, 4000, 0, 0);
  const FgdPolicy probe(w, 1, only(false, true, false));
  CHECK(probe.stranded_gpu_milli(64000, 8000) == doctest::Approx(0.0));
  CHECK(probe.stranded_gpu_milli(60000, 8000) == doctest::Approx(500.0));  // 8000 - 60000 / 8
  CHECK(probe.evaluate(s, 0, cpu_only).cost == doctest::Approx(500.0));
  CHECK(probe.evaluate(s, 1, cpu_only).cost == 0.0);
  // F sees no difference (the GPU shape still fits on both), so FGD follows its permutation; FGD-OC
  // always picks "rich".
  bool fgd_took_tight = false;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    FgdPolicy oc(w, seed, only(false, true, false)), fgd(w, seed);
    oc.attach(s);
    fgd.attach(s);
    CHECK(oc.select(s, cpu_only) == 1);
    fgd_took_tight = fgd_took_tight || fgd.select(s, cpu_only) == 0;
  }
  CHECK(fgd_took_tight);
}

TEST_CASE("FGD-OC model scarcity: the share of a model that restricted tasks need") {
  // 4 T4 GPUs and 4 G2 GPUs. The list asks for 2 GPUs that must be T4 and 6 that may be anything:
  // 8,000 milli against a capacity of 8,000, so kappa(T4) = 2000 / 4000 = 0.5 and kappa(G2) = 0.
  Cluster c({node("t4", 64000, {0, 0, 0, 0}, "T4"), node("g2", 64000, {0, 0, 0, 0}, "G2")});
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  const GpuModelId t4 = s.registry().find("T4").value(), g2 = s.registry().find("G2").value();
  std::vector<TaskRequest> reqs;
  for (int i = 0; i < 2; ++i) {
    reqs.push_back(request(s, 1000, 1, 1000));
    reqs.back().models = model_bit(t4);
  }
  for (int i = 0; i < 6; ++i) reqs.push_back(request(s, 1000, 1, 1000));
  // A mask naming every model present is not a restriction.
  reqs.push_back(request(s, 1000, 1, 500));
  reqs.back().models = model_bit(t4) | model_bit(g2);
  const TargetWorkload w = TargetWorkload::from_requests(reqs);
  CHECK(w.gpu_demand == 8500);
  FgdPolicy oc(w, 42, only(false, false, true));
  oc.attach(s);
  // The list asks for 8,500 milli; scaled to arrivals of 8,000: 2000 x 8000 / 8500 / 4000.
  CHECK(oc.model_scarcity(t4) == doctest::Approx(2000.0 * 8000 / 8500 / 4000));
  CHECK(oc.model_scarcity(g2) == 0.0);
  const TaskRequest any = request(s, 1000, 1, 1000);
  CHECK(oc.evaluate(s, 0, any).cost == doctest::Approx(1000.0 * oc.model_scarcity(t4)));
  CHECK(oc.evaluate(s, 1, any).cost == 0.0);
  // Restricted demand beyond a model's supply caps kappa at 1.
  std::vector<TaskRequest> heavy(20, reqs[0]);
  heavy.push_back(request(s, 1000, 1, 1000));
  FgdPolicy capped(TargetWorkload::from_requests(heavy), 42, only(false, false, true));
  capped.attach(s);
  CHECK(capped.model_scarcity(t4) == 1.0);
}
