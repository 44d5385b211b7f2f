// Single-task placement on clusters of 1,000, 10,000 and 100,000 nodes of 8 GPUs at about 70 %
// occupancy: the indexed best-fit decision against a naive scan over every node (the baseline the
// issue asks to keep), applying a decision to the state, and building the state from a view.
#include <benchmark/benchmark.h>

#include "gpusched/gpusched.hpp"
#include "instances/placement.hpp"

namespace {

using namespace gpusched;

const Cluster& cluster(std::size_t nodes) {
  static std::map<std::size_t, Cluster> cache;
  auto it = cache.find(nodes);
  if (it == cache.end()) it = cache.emplace(nodes, bench::occupied_cluster(nodes, false)).first;
  return it->second;
}

// Requests cycle through 1, 2, 4 and 8 GPUs.
std::vector<TaskRequest> requests(const ClusterState& s) {
  std::vector<TaskRequest> out;
  for (GpuCount g : {1, 2, 4, 8}) out.push_back(*s.compile(TaskShape{g * 10000, g * 100 * kGiB, g, 1000, 0}));
  return out;
}

// The baseline: filter and score every node, no index.
NodeId full_scan_best_fit(const ClusterState& s, const TaskRequest& r) {
  NodeId best = kNoNode;
  for (NodeId n = 0; n < s.node_count(); ++n) {
    if (s.check_fit(n, r) != FitReason::kFits) continue;
    if (best == kNoNode || s.shares().idle_gpus(n) < s.shares().idle_gpus(best)) best = n;
  }
  return best;
}

void BM_BestFitDecision(benchmark::State& st) {
  const ClusterState s = *ClusterState::build(cluster(static_cast<std::size_t>(st.range(0))), GpuModelRegistry::builtin());
  const auto reqs = requests(s);
  BestFitPolicy policy;
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(policy.select(s, reqs[i++ & 3]));
}
BENCHMARK(BM_BestFitDecision)->Arg(1000)->Arg(10000)->Arg(100000)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_FullScanBestFitDecision(benchmark::State& st) {
  const ClusterState s = *ClusterState::build(cluster(static_cast<std::size_t>(st.range(0))), GpuModelRegistry::builtin());
  const auto reqs = requests(s);
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(full_scan_best_fit(s, reqs[i++ & 3]));
}
BENCHMARK(BM_FullScanBestFitDecision)->Arg(1000)->Arg(10000)->Arg(100000)->Repetitions(5)->ReportAggregatesOnly(true);

// Other policies at 10,000 nodes, for reference.
void BM_PolicyDecision(benchmark::State& st, const char* name) {
  const ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  const auto reqs = requests(s);
  auto policy = make_policy(name);
  std::size_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(policy->select(s, reqs[i++ & 3]));
}
BENCHMARK_CAPTURE(BM_PolicyDecision, first_fit, "first-fit")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_PolicyDecision, worst_fit, "worst-fit")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_PolicyDecision, most_allocated, "most-allocated")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_CAPTURE(BM_PolicyDecision, dot_product, "dot-product")->Repetitions(5)->ReportAggregatesOnly(true);

// Applying a decision: reserve a 2-GPU task then release it; the time is for the pair.
void BM_ApplyDecisionReserveRelease(benchmark::State& st) {
  ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  const TaskRequest r = *s.compile(TaskShape{20000, 200 * kGiB, 2, 1000, 0});
  BestFitPolicy policy;
  TaskAssignment a;
  const NodeId n = policy.select(s, r);
  policy.gpu_picker().pick(s, n, r, a);
  for (auto _ : st) {
    benchmark::DoNotOptimize(s.reserve(r, a).ok());
    s.commit();
    benchmark::DoNotOptimize(s.release(a).ok());
  }
}
BENCHMARK(BM_ApplyDecisionReserveRelease)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_BuildState(benchmark::State& st) {
  const Cluster& c = cluster(static_cast<std::size_t>(st.range(0)));
  const auto registry = GpuModelRegistry::builtin();
  std::size_t bytes = 0;
  for (auto _ : st) {
    auto s = ClusterState::build(c, registry);
    bytes = s->memory_usage();
    benchmark::DoNotOptimize(s);
  }
  st.counters["state_bytes_per_node"] = static_cast<double>(bytes) / static_cast<double>(st.range(0));
}
BENCHMARK(BM_BuildState)->Arg(10000)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

// Cluster events at 10,000 nodes (issue 11 part 3; target <= 1 µs median per event). Pairs of
// opposite events keep the state steady; the time is per pair unless the name says one event.
void BM_EventCordonUncordon(benchmark::State& st) {
  ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  NodeId n = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(s.cordon(n).ok());
    benchmark::DoNotOptimize(s.uncordon(n).ok());
    n = (n + 7919) % 10000;
  }
}
BENCHMARK(BM_EventCordonUncordon)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_EventGpuUnhealthyHealthy(benchmark::State& st) {
  ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  NodeId n = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(s.set_gpu_health(n, 3, false).ok());
    benchmark::DoNotOptimize(s.set_gpu_health(n, 3, true).ok());
    n = (n + 7919) % 10000;
  }
}
BENCHMARK(BM_EventGpuUnhealthyHealthy)->Repetitions(5)->ReportAggregatesOnly(true);

// One event per iteration: the node's rack label changes value.
void BM_EventRelabel(benchmark::State& st) {
  ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  NodeId n = 0;
  bool flip = false;
  for (auto _ : st) {
    benchmark::DoNotOptimize(s.set_label(n, "topology.kubernetes.io/rack", flip ? "rack-a" : "rack-b").ok());
    n = (n + 7919) % 10000;
    flip = n < 7919;
  }
}
BENCHMARK(BM_EventRelabel)->Repetitions(5)->ReportAggregatesOnly(true);

// A node of 8 GPUs joins and leaves (the removed ones stay as tombstones, as they would in a long run).
void BM_EventAddRemoveNode(benchmark::State& st) {
  ClusterState s = *ClusterState::build(cluster(10000), GpuModelRegistry::builtin());
  NodeSpec extra = cluster(10000).nodes()[0];
  extra.name = "node-joining";
  const Cluster joining({extra});
  for (auto _ : st) {
    auto id = s.add_node(joining);
    benchmark::DoNotOptimize(s.remove_node(*id).ok());
  }
}
BENCHMARK(BM_EventAddRemoveNode)->Iterations(100000)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
