// FGD: the fragmentation measure on hand-worked nodes, the score, the target workload, the GPU
// choice, the six policies' basic behaviour, and the class index against direct evaluation.
#include <doctest/doctest.h>

#include <vector>
#include <fmt/format.h>

#include "fgd_test_util.hpp"

using namespace gpusched;
using namespace gpusched::fgd_test;

TEST_CASE("fragmentation: the hand-worked node of the issue") {
  const TargetWorkload w = example_workload();
  const std::vector<std::int32_t> free = {1000, 1000, 1000, 1000, 1000, 1000, 300, 0};
  const std::vector<GpuModelId> model(8, 0);
  // 0.5 * 300 (the 300 GPU is below 500) + 0.3 * 300 (below 1000) + 0.2 * 6300 (CPU-only: all).
  CHECK(fragmentation(32000, free, model, w) == doctest::Approx(1500.0));
  // A 0.2-GPU task on the 300 GPU: 0.5 * 100 + 0.3 * 100 + 0.2 * 6100 = 1300.
  std::vector<std::int32_t> after = free;
  after[6] = 100;
  CHECK(fragmentation(31000, after, model, w) == doctest::Approx(1300.0));
  // Too little CPU for the GPU shapes: every shape sees all 6300 as fragment.
  CHECK(fragmentation(3000, free, model, w) == doctest::Approx(6300.0));
  // No free GPU share: nothing to fragment.
  const std::vector<std::int32_t> full(8, 0);
  CHECK(fragmentation(32000, full, model, w) == 0.0);
}

TEST_CASE("fragmentation: shapes that cannot use the node's GPU model see all of it") {
  TargetWorkload w;
  TargetShape s = shape(1000, 1, 500, 1.0);
  s.models = model_bit(3);  // some other model
  w.shapes = {s};
  const std::vector<std::int32_t> free = {1000, 200};
  CHECK(fragmentation(8000, free, std::vector<GpuModelId>{0, 0}, w) == 1200.0);
  CHECK(fragmentation(8000, free, std::vector<GpuModelId>{3, 3}, w) == 200.0);
  // Multi-GPU shape needing 2 GPUs with 1000 free: only one qualifies -> all 1200.
  w.shapes = {shape(1000, 2, 1000, 1.0)};
  CHECK(fragmentation(8000, free, std::vector<GpuModelId>{0, 0}, w) == 1200.0);
}

TEST_CASE("fgd_score: the paper's truncated sigmoid") {
  CHECK(fgd_score(1000, 1000) == 50);     // no change: sigmoid(0) = 0.5
  CHECK(fgd_score(1500, 1300) == 54);     // 100 * sigmoid(0.2) = 54.98
  CHECK(fgd_score(1300, 1500) == 45);     // 100 * sigmoid(-0.2) = 45.02
  CHECK(fgd_score(0, 100000) == 0);
  CHECK(fgd_score(5000, 0) == 99);        // 100 * sigmoid(5) = 99.33
  CHECK(fgd_score(100000, 0) == 100);     // sigmoid saturates to 1.0 in double precision
}

TEST_CASE("TargetWorkload: most frequent shapes up to the coverage, renormalised") {
  Cluster c({node("a", 64000, {0, 0})});
  const ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  std::vector<TaskRequest> reqs;
  for (int i = 0; i < 60; ++i) reqs.push_back(request(s, 4000, 1, 500));
  for (int i = 0; i < 30; ++i) reqs.push_back(request(s, 8000, 1, 1000));
  for (int i = 0; i < 6; ++i) reqs.push_back(request(s, 2000, 0, 0));
  for (int i = 0; i < 4; ++i) reqs.push_back(request(s, 1000, 2, 1000));
  const TargetWorkload w = TargetWorkload::from_requests(reqs, 0.95);
  // 60 + 30 = 90 % < 95 %, + 6 = 96 % crosses: three shapes, weights 60/96, 30/96, 6/96.
  REQUIRE(w.shapes.size() == 3);
  CHECK(w.shapes[0].gpu_milli == 500);
  CHECK(w.shapes[0].weight == doctest::Approx(60.0 / 96));
  CHECK(w.shapes[1].gpus == 1);
  CHECK(w.shapes[1].gpu_milli == 1000);
  CHECK(w.shapes[2].gpus == 0);
  CHECK(w.shapes[2].weight == doctest::Approx(6.0 / 96));
}

TEST_CASE("FGD puts a small share on the fragment it fits, and lowers F") {
  // The node: GPUs used so that free = [1000 x6, 300, 0].
  Cluster c({node("a", 32000, {0, 0, 0, 0, 0, 0, 700, 1000})});
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  FgdPolicy fgd(example_workload(), 42);
  const TaskRequest t = request(s, 1000, 1, 200);
  CHECK(node_fragmentation(s, 0, fgd.workload()) == doctest::Approx(1500.0));
  const auto choice = fgd.evaluate(s, 0, t);
  REQUIRE(choice.fits);
  CHECK(choice.gpu == 6);
  CHECK(choice.frag_after == doctest::Approx(1300.0));
  CHECK(choice.score == fgd_score(1500.0, 1300.0));
  TaskAssignment a;
  REQUIRE(fgd.gpu_picker().pick(s, 0, t, a));
  REQUIRE(a.gpus.size() == 1);
  CHECK(a.gpus[0] == 6);
}

TEST_CASE("FGD prefers the node where fragmentation grows least") {
  // Node a has a 300 fragment; node b is idle. A 0.3 task filling a's fragment lowers F there, so a wins
  // whatever the tie-break permutation says.
  Cluster c({node("b", 32000, {0, 0}), node("a", 32000, {700, 0})});
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    FgdPolicy fgd(example_workload(), seed);
    CHECK(fgd.select(s, request(s, 1000, 1, 300)) == 1);
  }
}

TEST_CASE("paper policies: names, fit, and GpuPacking's ranges") {
  Cluster c({node("idle", 64000, {0, 0, 0, 0}), node("shared", 64000, {500, 0, 0, 0}),
             node("used", 64000, {1000, 0, 0, 0}), node("full", 64000, {1000, 1000, 1000, 1000})});
  ClusterState s = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  const TaskRequest share = request(s, 1000, 1, 400);
  const TaskRequest one = request(s, 1000, 1, 1000);
  // Shared GPU use scores 100 - 50/10 = 95; an idle GPU on a used node 50 - 1 = 49; an idle node 33 - 4.
  CHECK(GpuPackingPolicy::score(s, 1, share) == 95);
  CHECK(GpuPackingPolicy::score(s, 2, share) == 49);
  CHECK(GpuPackingPolicy::score(s, 0, share) == 29);
  CHECK(GpuPackingPolicy::score(s, 2, one) == 49);
  const TargetWorkload w = example_workload();
  for (auto name : trace_policy_names()) {
    auto p = make_trace_policy(name, 42, w);
    REQUIRE(p);
    CHECK(p->name() == name);
    p->attach(s);
    const NodeId n = p->select(s, share);
    REQUIRE(n != kNoNode);
    CHECK(n != 3);  // the full node never fits
    TaskAssignment a;
    CHECK(p->gpu_picker().pick(s, n, share, a));
    CHECK(s.validate(share, a));
  }
  CHECK(make_trace_policy("gpu-packing", 1, w)->name() == "GpuPacking");
  CHECK(make_trace_policy("no-such", 1, w) == nullptr);
  // GpuPacking takes the shared GPU.
  CHECK(make_trace_policy("GpuPacking", 7, w)->select(s, share) == 1);
}

TEST_CASE("TieBreak: a permutation, fixed by the seed") {
  TieBreak a(5), b(5), c(6);
  a.reset(1000);
  b.reset(1000);
  c.reset(1000);
  std::vector<int> seen(1000, 0);
  bool differs = false;
  for (NodeId n = 0; n < 1000; ++n) {
    ++seen[a.rank(n)];
    CHECK(a.rank(n) == b.rank(n));
    CHECK(a.node_at(a.rank(n)) == n);
    differs = differs || a.rank(n) != c.rank(n);
  }
  for (int k : seen) CHECK(k == 1);
  CHECK(differs);
}

TEST_CASE("FGD class index gives the same decisions as evaluating every node (seeded random replay)") {
  // Oracle test: two FGD policies with the same seed, one attached (class index + memo), one not
  // (direct evaluation of every fitting node), replay the same random tasks on two copies of a
  // random cluster. Every decision and every GPU must agree.
  SplitMix64 rng{2024};
  std::vector<NodeSpec> nodes;
  const char* models[] = {"T4", "P100", "V100M16"};
  for (int i = 0; i < 60; ++i) {
    const int g = 1 << rng.below(4);  // 1, 2, 4, 8 GPUs
    nodes.push_back(node(fmt::format("n{}", i), 16000 + 16000 * static_cast<MilliCpu>(rng.below(4)),
                         std::vector<MilliGpu>(static_cast<std::size_t>(g), 0), models[rng.below(3)]));
  }
  Cluster c(nodes);
  ClusterState s1 = ClusterState::build(c, GpuModelRegistry::builtin()).value();
  ClusterState s2 = s1;
  std::vector<TaskRequest> pool;
  const MilliGpu shares[] = {100, 250, 300, 460, 500, 700, 1000};
  for (int i = 0; i < 25; ++i) {
    const int kind = static_cast<int>(rng.below(10));
    if (kind == 0)
      pool.push_back(request(s1, 1000 + 1000 * static_cast<MilliCpu>(rng.below(8)), 0, 0));
    else if (kind == 1)
      pool.push_back(request(s1, 4000, static_cast<GpuCount>(1 << rng.below(3)), 1000));
    else
      pool.push_back(request(s1, 1000 * static_cast<MilliCpu>(1 + rng.below(6)), 1, shares[rng.below(7)]));
  }
  pool[3].models = model_bit(s1.registry().find("T4").value());
  const TargetWorkload w = TargetWorkload::from_requests(pool);
  TargetWorkload priced = w;  // FGD-OC needs share prices: these are the ones of the sim tests
  priced.share_prices = {{100, 0.0}, {250, 0.25}, {300, 1.0 / 3}, {460, 0.5}, {500, 0.5}, {700, 2.0 / 3}};
  for (int variant = 0; variant < 4; ++variant) {
    FgdOptions o;
    if (variant == 3) o.packing_loss = o.cpu_stranding = o.model_scarcity = true;
    if (variant == 1) {
      o.integer_sigmoid_score = false;
      o.tie_rule = 1;
    }
    if (variant == 2) o.tie_rule = 2;
    const TargetWorkload& tw = variant == 3 ? priced : w;
    FgdPolicy indexed(tw, 99, o), direct(tw, 99, o);
    ClusterState a = s1, b = s2;
    indexed.attach(a);
    std::size_t placed = 0;
    for (int step = 0; step < 400; ++step) {
      const TaskRequest& t = pool[rng.below(pool.size())];
      const NodeId n1 = indexed.select(a, t);
      const NodeId n2 = direct.select(b, t);
      REQUIRE(n1 == n2);
      if (n1 == kNoNode) continue;
      TaskAssignment x, y;
      REQUIRE(indexed.gpu_picker().pick(a, n1, t, x));
      REQUIRE(direct.gpu_picker().pick(b, n2, t, y));
      CHECK(x.gpus == y.gpus);
      REQUIRE(a.reserve(t, x));
      REQUIRE(b.reserve(t, y));
      indexed.observe(a, t, x);
      ++placed;
    }
    CHECK(placed > 50);
    CHECK(indexed.active_classes() > 1);
    CHECK(a.same_allocation_as(b));
  }
}
