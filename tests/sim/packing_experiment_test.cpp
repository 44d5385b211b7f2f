// The trace experiment end to end on small hand-checked traces, the arrival protocol, the LP bound.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "gpusched/sim/lp_bound.hpp"
#include "gpusched/sim/packing_experiment.hpp"
#include "test_util.hpp"

using namespace gpusched;
using namespace gpusched::sim;

namespace {

std::string fixture(const char* name) { return std::string(GPUSCHED_FIXTURES_DIR) + "/sim/" + name; }

TraceWorkload pairs_workload() {
  auto nodes = io::read_alibaba_nodes(fixture("one_node.csv"));
  auto pods = io::read_alibaba_pods(fixture("pairs_pods.csv"));
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  return make_trace_workload(*nodes, *pods, "pairs").value();
}

}  // namespace

TEST_CASE("LP bound: known cutting-stock answers") {
  // 700 + 300 pair up perfectly: everything fits in 2 GPUs.
  auto a = cutting_stock_bound({{700, 2}, {300, 2}}, 2);
  REQUIRE(a.ok());
  CHECK(a->max_allocatable_milli == doctest::Approx(2000));
  // Ten 460s on two GPUs: at most two per GPU -> 4 * 460.
  auto b = cutting_stock_bound({{460, 10}}, 2);
  REQUIRE(b.ok());
  CHECK(b->max_allocatable_milli == doctest::Approx(1840));
  // 600s cannot pair; 400s can fill the rest: best is 600+400 per GPU for 3 GPUs.
  auto c = cutting_stock_bound({{600, 5}, {400, 3}}, 3);
  REQUIRE(c.ok());
  CHECK(c->max_allocatable_milli == doctest::Approx(3000));
  // Fractional optimum: 3 x 510 on 2 GPUs; LP cannot put two in one GPU -> 2 * 510.
  auto d = cutting_stock_bound({{510, 3}}, 2);
  REQUIRE(d.ok());
  CHECK(d->max_allocatable_milli == doctest::Approx(1020));
  // Column generation needs a mixed pattern: {350, 350, 300} fills a GPU exactly.
  auto e = cutting_stock_bound({{350, 20}, {300, 10}}, 10);
  REQUIRE(e.ok());
  CHECK(e->max_allocatable_milli == doctest::Approx(10000));
  CHECK(e->columns > 2);
  // Whole GPUs count 1000 each and cap at the GPU count.
  auto f = cutting_stock_bound({{1000, 7}}, 5);
  REQUIRE(f.ok());
  CHECK(f->max_allocatable_milli == doctest::Approx(5000));
  CHECK_FALSE(cutting_stock_bound({{0, 1}}, 1).ok());
  CHECK_FALSE(cutting_stock_bound({{1001, 1}}, 1).ok());
  CHECK(cutting_stock_bound({{500, -1}}, 1).error().message == "demand count of size 500: expected >= 0, got -1");
}

TEST_CASE("LP bound never exceeds a brute-force-checked greedy upper limit and bounds real packings") {
  // Property over seeded random demands: LP >= first-fit-decreasing packing (a feasible packing) and
  // LP <= min(total demand, 1000 G).
  SplitMix64 rng{7};
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<ItemDemand> dem;
    std::vector<MilliGpu> items;
    for (int k = 0; k < 4; ++k) {
      const MilliGpu size = 50 + 50 * static_cast<MilliGpu>(rng.below(20));
      const auto count = static_cast<std::int64_t>(1 + rng.below(12));
      dem.push_back({size, count});
      for (std::int64_t i = 0; i < count; ++i) items.push_back(size);
    }
    const std::int64_t g = 1 + static_cast<std::int64_t>(rng.below(10));
    std::sort(items.rbegin(), items.rend());
    std::vector<MilliGpu> bins(static_cast<std::size_t>(g), 1000);
    MilliGpu packed = 0, total = 0;
    for (MilliGpu it : items) {
      total += it;
      for (auto& b : bins)
        if (b >= it) {
          b -= it;
          packed += it;
          break;
        }
    }
    auto lp = cutting_stock_bound(dem, g);
    REQUIRE(lp.ok());
    CHECK(lp->max_allocatable_milli >= static_cast<double>(packed) - 1e-6);
    CHECK(lp->max_allocatable_milli <= static_cast<double>(std::min(total, 1000 * g)) + 1e-6);
  }
}

TEST_CASE("arrival order: a seeded shuffle, resampled up to the target ratio") {
  const TraceWorkload w = pairs_workload();
  CHECK(w.capacity == 2000);
  const auto o1 = arrival_order(w, 42, 1.0);
  CHECK(o1.size() == 4);  // 2000 requested = 100 %: nothing to resample
  CHECK(std::set<std::uint32_t>(o1.begin(), o1.end()).size() == 4);
  CHECK(arrival_order(w, 42, 1.0) == o1);
  const auto o2 = arrival_order(w, 42, 2.0);
  std::int64_t req = 0;
  for (auto i : o2) req += w.pods[i].shape.total_gpu_milli();
  CHECK(req >= 4000);
  CHECK(req - w.pods[o2.back()].shape.total_gpu_milli() < 4000);  // stops as soon as it gets there
  CHECK(std::vector<std::uint32_t>(o2.begin(), o2.begin() + 4) == o1);
}

TEST_CASE("end to end: FGD pairs 700s with 300s and leaves nothing; GpuPacking can strand a 700") {
  const TraceWorkload w = pairs_workload();
  ExperimentConfig cfg;
  cfg.policies = {"FGD", "GpuPacking"};
  cfg.target_ratio = 1.0;
  cfg.threads = 2;
  cfg.curve_points = {50, 100};
  auto rep = run_experiment(w, cfg);
  REQUIRE(rep.ok());
  REQUIRE(rep->policies.size() == 2);
  const PolicySummary& fgd = rep->policies[0];
  CHECK(fgd.policy == "FGD");
  // Hand-worked: whatever the order, FGD keeps every GPU able to take a 700 or a 300, so all four fit.
  for (double v : fgd.per_seed_at_100) CHECK(v == 0.0);
  CHECK(fgd.mean_failed == 0.0);
  // GpuPacking fills the tightest GPU: when both 300s come first they share GPU 0 (400 left), and
  // the second 700 finds no room: 700 / 2000 = 35 %. Otherwise everything fits.
  const PolicySummary& gp = rep->policies[1];
  for (double v : gp.per_seed_at_100) CHECK((v == 0.0 || v == doctest::Approx(35.0)));
  // The LP bound: the four pieces fit exactly.
  REQUIRE(rep->lower_bound_per_seed.size() == 10);
  for (double b : rep->lower_bound_per_seed) CHECK(b == doctest::Approx(0.0).epsilon(1e-9));
  // Paired difference against FGD = GpuPacking's own mean here.
  CHECK(gp.paired_diff_mean == doctest::Approx(gp.mean_at_100));
  // Curves are sampled at the first pod reaching the point: at 50 % that is after two pods, so at
  // most 70 % (two 700s) has arrived and at least 30 % is unallocated.
  for (const auto& run : rep->runs) {
    CHECK(run.curve[0] >= 30.0 - 1e-9);
    CHECK(run.curve[1] == doctest::Approx(run.unallocated_pct_at_100));
  }

  const auto j = nlohmann::json::parse(report_json(*rep));
  CHECK(j["policies"][0]["unallocated_gpu_pct_at_100"] == 0.0);
  CHECK(j["policies"][1].contains("unallocated_gpu_pct_at_100_stddev"));
  CHECK(j["lower_bound"]["unallocated_gpu_pct_at_100"].get<double>() == doctest::Approx(0.0));
  const std::string csv = report_csv(*rep);
  CHECK(csv.find("FGD,100,0.0000,0.0000") != std::string::npos);
  const std::string svg = report_svg(*rep);
  CHECK(svg.find("Arrived GPU request") != std::string::npos);
  CHECK(svg.find("Unallocated GPUs") != std::string::npos);
  CHECK(report_table(*rep).find("FGD") != std::string::npos);
}

TEST_CASE("experiment: deterministic, and bad configuration is an error value") {
  const TraceWorkload w = pairs_workload();
  ExperimentConfig cfg;
  cfg.policies = {"Random", "BestFit"};
  cfg.target_ratio = 3.0;
  auto a = run_experiment(w, cfg);
  cfg.threads = 1;
  auto b = run_experiment(w, cfg);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (std::size_t i = 0; i < a->runs.size(); ++i) CHECK(a->runs[i].curve == b->runs[i].curve);
  // Without the reference policy there is nothing to pair with: "-" in the table, null in JSON.
  REQUIRE_FALSE(a->has_reference());
  CHECK(report_table(*a).find("+0.00") == std::string::npos);
  CHECK(nlohmann::json::parse(report_json(*a))["policies"][0]["paired_diff_vs_reference"].is_null());
  cfg.policies = {"Nope"};
  auto bad = run_experiment(w, cfg);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("policies: unknown policy \"Nope\"") == 0);
  cfg.policies = {};
  cfg.seeds = {};
  CHECK_FALSE(run_experiment(w, cfg).ok());
}

TEST_CASE("make_trace_workload: an unknown gpu_spec model names the pod") {
  auto nodes = io::read_alibaba_nodes(fixture("one_node.csv"));
  auto pods = io::parse_alibaba_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nx9,1,1,1,100,H900\n", "p.csv");
  REQUIRE(pods.ok());
  auto w = make_trace_workload(*nodes, *pods);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().message.find("pod x9:") == 0);
}

TEST_CASE("make_trace_workload: an empty pod list or a node list without GPUs is an error") {
  auto nodes = io::read_alibaba_nodes(fixture("one_node.csv"));
  REQUIRE(nodes.ok());
  auto no_pods = make_trace_workload(*nodes, {}, "empty");
  REQUIRE_FALSE(no_pods.ok());
  CHECK(no_pods.error().message == "the pod list has no pods");  // the caller names the file (field "pods")
  CHECK(no_pods.error().field == "pods");
  auto pods = io::read_alibaba_pods(fixture("pairs_pods.csv"));
  REQUIRE(pods.ok());
  auto cpu_nodes = io::parse_alibaba_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,1000,100,0,\n", "n.csv");
  REQUIRE(cpu_nodes.ok());
  auto no_gpus = make_trace_workload(*cpu_nodes, *pods, "cpu");
  REQUIRE_FALSE(no_gpus.ok());
  CHECK(no_gpus.error().field == "nodes");
  CHECK(no_gpus.error().message == "the node list has no GPUs (1 nodes)");
}

TEST_CASE("share prices: the min-GPU cutting-stock LP's duals on hand-worked demands") {
  auto price_of = [](const std::vector<SharePrice>& p, MilliGpu size) {
    for (const SharePrice& x : p)
      if (x.size == size) return x.price;
    FAIL("size not priced: " << size);
    return -1.0;
  };
  // Two 400s fill a GPU as well as anything can: each is worth half of one.
  auto a = cutting_stock_prices({{400, 3}});
  REQUIRE(a.ok());
  CHECK(price_of(*a, 400) == doctest::Approx(0.5));
  auto b = cutting_stock_prices({{300, 7}});
  REQUIRE(b.ok());
  CHECK(price_of(*b, 300) == doctest::Approx(1.0 / 3));
  // Every 600 needs its own GPU, and the 300s ride in the 600s' leftovers: the 300s are free.
  // (Dual: max 5 p600 + 2 p300 with p600 + p300 <= 1 and 3 p300 <= 1; the optimum 5 forces p300 = 0.)
  auto c = cutting_stock_prices({{600, 5}, {300, 2}});
  REQUIRE(c.ok());
  CHECK(price_of(*c, 600) == doctest::Approx(1.0));
  CHECK(price_of(*c, 300) == doctest::Approx(0.0));
  // Whole GPUs are not priced (worth 1 by definition); an empty demand has no prices.
  auto d = cutting_stock_prices({{1000, 4}, {500, 2}});
  REQUIRE(d.ok());
  CHECK(d->size() == 1);
  CHECK(cutting_stock_prices({}).value().empty());
  CHECK(cutting_stock_prices({{0, 1}}).error().message == "demand size: expected 1..1000 milli, got 0");
  CHECK_FALSE(cutting_stock_prices({{500, -2}}).ok());
  // Dual feasibility on a mixed demand: no pattern is worth more than one GPU.
  auto e = cutting_stock_prices({{470, 75}, {320, 33}, {810, 108}, {160, 7}, {230, 14}, {650, 25}});
  REQUIRE(e.ok());
  for (int n470 = 0; n470 <= 2; ++n470)
    for (int n320 = 0; n320 <= 3; ++n320)
      for (int n230 = 0; n230 <= 4; ++n230)
        for (int n160 = 0; n160 <= 6; ++n160) {
          const int fill = 470 * n470 + 320 * n320 + 230 * n230 + 160 * n160;
          if (fill > 1000) continue;
          const double v = n470 * price_of(*e, 470) + n320 * price_of(*e, 320) + n230 * price_of(*e, 230) +
                           n160 * price_of(*e, 160);
          CHECK(v <= 1.0 + 1e-9);
        }
}

TEST_CASE("FGD-OC leaves fewer GPUs unallocated than FGD on the shipped default trace") {
  // The project's main claim (docs/bench-packing.md), checked seed by seed on three of the ten seeds.
  const std::string dir = std::string(GPUSCHED_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";
  auto nodes = io::read_alibaba_nodes(dir + "openb_node_list_gpu_node.csv");
  auto pods = io::read_alibaba_pods(dir + "openb_pod_list_default.csv");
  REQUIRE(nodes.ok());
  REQUIRE(pods.ok());
  // The sanitized run checks the same code for memory errors on the trace's first 200 nodes and one
  // seed (the whole cluster took it 18 s); the claim itself is the Release run's.
  if (gpusched::testing::sanitized) nodes->resize(200);
  const TraceWorkload w = make_trace_workload(*nodes, *pods, "default").value();
  CHECK_FALSE(w.target.share_prices.empty());
  ExperimentConfig cfg;
  cfg.policies = {"FGD", "FGD-OC"};
  cfg.seeds = {42, 43, 44};
  if (gpusched::testing::sanitized) cfg.seeds = {42};
  cfg.lower_bound = false;
  cfg.curve_points = {100};
  auto rep = run_experiment(w, cfg);
  REQUIRE(rep.ok());
  const PolicySummary& fgd = rep->policies[0];
  const PolicySummary& oc = rep->policies[1];
  REQUIRE(oc.policy == "FGD-OC");
  if (gpusched::testing::sanitized) return;
  for (std::size_t s = 0; s < cfg.seeds.size(); ++s) {
    INFO("seed " << cfg.seeds[s]);
    // Measured: FGD 4.5-5.0 %, FGD-OC 3.7-3.8 %; the LP bound is about 3.1 %.
    CHECK(oc.per_seed_at_100[s] < 0.9 * fgd.per_seed_at_100[s]);
    CHECK(oc.per_seed_at_100[s] > 3.0);
  }
}
