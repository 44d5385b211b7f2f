// Issue 15, scale: the families at 25,000, 50,000 and 100,000 nodes x 8 H100 (each GPU in use with
// probability 0.7; racks of 32 nodes, blocks of 1,024), a doubling series so the ratio per doubling
// shows (1 for index lookups, 2 for work linear in the nodes, 4 would be quadratic), and the memory
// the per-node state takes.
//
//   BM_ScaleBuildState/N       ClusterState::build; counters: state_bytes_per_node (memory_usage()),
//                              heap_bytes_per_node (mallinfo2 before/after, whatever the state allocated)
//   BM_ScaleBuildStateHugeNode/N  the same plus one node of 65,535 GPUs; counter huge_node_bytes
//   BM_ScaleDecision/P/N       one decision of policy P (best-fit, spread, dot-product), requests of 1,
//                              2, 4, 8 GPUs in turn, on the const state
//   BM_ScaleFgdDecision/N      FGD: select + GPU pick + reserve + observe, then release + observe (the
//                              class index kept); counter fgd_cache_bytes_per_node (mallinfo2 around attach)
//   BM_ScaleGangPlace/N        a 1,024 x 2-GPU gang, feasibility + placement, dry run (at 70 % occupancy
//                              almost no node has 8 idle GPUs)
//   (fairness: BM_PlanAdmission/J in fairness_drf.cpp, J = 25,000 / 50,000 / 100,000 pending jobs
//    over 1,000 queues in 10 cohorts; the planner's size is jobs)
//
// All are in the default run (the states are built once per size and kept; the run takes about a
// minute on the 2-core machine). Run only these with --benchmark_filter=Scale.
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_rng.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/gpusched.hpp"
#include "gpusched/packing/fgd.hpp"
#include "instances/placement.hpp"

namespace {

using namespace gpusched;

std::size_t heap_in_use() { return mallinfo2().uordblks; }

// One state per size, built once and kept (building 100,000 nodes takes a while on this machine).
ClusterState& scale_state(std::size_t nodes) {
  static std::map<std::size_t, ClusterState> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) it = cache.emplace(nodes, *ClusterState::build(bench::occupied_cluster(nodes, true), GpuModelRegistry::builtin())).first;
  return it->second;
}

std::vector<TaskRequest> scale_requests(const ClusterState& s) {
  std::vector<TaskRequest> out;
  for (GpuCount g : {1, 2, 4, 8}) out.push_back(*s.compile(TaskShape{g * 10000, g * 100 * kGiB, g, 1000, 0}));
  return out;
}

void BM_ScaleBuildState(benchmark::State& st) {
  const auto nodes = static_cast<std::size_t>(st.range(0));
  const Cluster c = bench::occupied_cluster(nodes, true);
  const auto registry = GpuModelRegistry::builtin();
  std::size_t bytes = 0, heap = 0;
  for (auto _ : st) {
    const std::size_t before = heap_in_use();
    auto s = ClusterState::build(c, registry);
    heap = heap_in_use() - before;
    bytes = s->memory_usage();
    benchmark::DoNotOptimize(s);
  }
  st.counters["state_bytes_per_node"] = static_cast<double>(bytes) / static_cast<double>(nodes);
  st.counters["heap_bytes_per_node"] = static_cast<double>(heap) / static_cast<double>(nodes);
}
BENCHMARK(BM_ScaleBuildState)->Arg(25000)->Arg(50000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The same N nodes plus one node of 65,535 GPUs: the index has one node set per idle count (65,536
// of them), of which only the buckets in use hold storage (node_bitset.hpp). Counter state_bytes
// (memory_usage()) and huge_node_bytes, what the big node added over BM_ScaleBuildState's state.
void BM_ScaleBuildStateHugeNode(benchmark::State& st) {
  const auto nodes = static_cast<std::size_t>(st.range(0));
  Cluster c = bench::occupied_cluster(nodes, true);
  const std::size_t without = ClusterState::build(c, GpuModelRegistry::builtin())->memory_usage();
  NodeSpec huge;
  huge.name = "huge";
  huge.cpu = 65535 * 2000;
  huge.memory = Bytes{65535} * 2 * kGiB;
  huge.gpus.assign(65535, GpuSpec{"H100-80GB"});
  std::vector<NodeSpec> specs(c.nodes().begin(), c.nodes().end());
  specs.push_back(std::move(huge));
  const Cluster with(std::move(specs));
  const auto registry = GpuModelRegistry::builtin();
  std::size_t bytes = 0;
  for (auto _ : st) {
    auto s = ClusterState::build(with, registry);
    bytes = s->memory_usage();
    benchmark::DoNotOptimize(s);
  }
  st.counters["state_bytes"] = static_cast<double>(bytes);
  st.counters["huge_node_bytes"] = static_cast<double>(bytes - without);
}
BENCHMARK(BM_ScaleBuildStateHugeNode)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_ScaleDecision(benchmark::State& st, const char* name) {
  const ClusterState& s = scale_state(static_cast<std::size_t>(st.range(0)));
  const auto reqs = scale_requests(s);
  auto policy = make_policy(name);
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(policy->select(s, reqs[i++ & 3]));
}
BENCHMARK_CAPTURE(BM_ScaleDecision, best_fit, "best-fit")->Arg(25000)->Arg(50000)->Arg(100000);
BENCHMARK_CAPTURE(BM_ScaleDecision, spread, "spread")->Arg(25000)->Arg(50000)->Arg(100000);
BENCHMARK_CAPTURE(BM_ScaleDecision, dot_product, "dot-product")
    ->Arg(25000)->Arg(50000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_ScaleFgdDecision(benchmark::State& st) {
  const auto nodes = static_cast<std::size_t>(st.range(0));
  ClusterState s = scale_state(nodes);
  const auto reqs = scale_requests(s);
  FgdPolicy fgd(TargetWorkload::from_requests(reqs));
  const std::size_t before = heap_in_use();
  fgd.attach(s);
  const std::size_t cache = heap_in_use() - before;
  std::size_t i = 0;
  for (auto _ : st) {
    const TaskRequest& r = reqs[i++ & 3];
    const NodeId n = fgd.select(s, r);
    TaskAssignment a;
    if (n == kNoNode || !fgd.gpu_picker().pick(s, n, r, a) || !s.reserve(r, a)) {
      st.SkipWithError("FGD placed nothing");
      break;
    }
    fgd.observe(s, r, a);
    s.commit();
    benchmark::DoNotOptimize(s.release(a).ok());
    fgd.observe(s, r, a);
  }
  st.counters["fgd_cache_bytes_per_node"] = static_cast<double>(cache) / static_cast<double>(nodes);
  st.counters["classes"] = static_cast<double>(fgd.active_classes());
}
BENCHMARK(BM_ScaleFgdDecision)->Arg(25000)->Arg(50000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_ScaleGangPlace(benchmark::State& st) {
  ClusterState& s = scale_state(static_cast<std::size_t>(st.range(0)));
  GangSpec spec;
  spec.name = "train";
  spec.groups.push_back({"worker", 1024, 1024, *s.compile(TaskShape{8000, 64 * kGiB, 2, 1000, 0})});
  GangOptions opt;
  opt.dry_run = true;
  for (auto _ : st) {
    GangResult r = place_gang(s, spec, opt);
    if (r.verdict != Verdict::kPlaced) {
      st.SkipWithError(r.explanation.c_str());
      break;
    }
    benchmark::DoNotOptimize(r.tasks.data());
  }
}
BENCHMARK(BM_ScaleGangPlace)->Arg(25000)->Arg(50000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The fairness family's series (the admission order of 25k / 50k / 100k jobs) is BM_PlanAdmission in
// benchmarks/fairness_drf.cpp, registered there at the three sizes.

}  // namespace

BENCHMARK_MAIN();
