// One replay of the default Alibaba trace (seed 42, arrivals to 130 %) per policy, and the LP bound.
// The default `gpusched bench-packing` run is 7 policies x 10 seeds of these plus 10 LPs, on all cores.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "gpusched/sim/lp_bound.hpp"
#include "gpusched/sim/packing_experiment.hpp"
#include "trace_workload.hpp"

namespace {

using namespace gpusched;

const sim::TraceWorkload& workload() { return bench::default_trace_workload(); }

void BM_Replay(benchmark::State& st) {
  const auto& w = workload();
  const auto order = sim::arrival_order(w, 42, 1.3);
  const std::string name(trace_policy_names()[static_cast<std::size_t>(st.range(0))]);
  std::vector<double> points;
  for (int x = 50; x <= 130; ++x) points.push_back(x);
  double unalloc = 0;
  for (auto _ : st) {
    auto p = make_trace_policy(name, 42, w.target);
    unalloc = sim::run_once(w, order, *p, points).unallocated_pct_at_100;
  }
  st.SetLabel(name);
  st.counters["unalloc_at_100_pct"] = unalloc;
  st.counters["pods"] = static_cast<double>(order.size());
}
BENCHMARK(BM_Replay)->DenseRange(0, 6)->Unit(benchmark::kMillisecond);

void BM_LpBound(benchmark::State& st) {
  const auto& w = workload();
  const auto order = sim::arrival_order(w, 42, 1.3);
  std::map<MilliGpu, std::int64_t> sizes;
  std::int64_t arrived = 0;
  for (auto i : order) {
    const auto& s = w.pods[i].shape;
    if (s.needs_gpu()) sizes[s.gpu_milli] += s.gpus;
    arrived += s.total_gpu_milli();
    if (arrived >= w.capacity) break;
  }
  std::vector<sim::ItemDemand> demand;
  for (auto [k, v] : sizes) demand.push_back({k, v});
  double value = 0;
  for (auto _ : st) value = sim::cutting_stock_bound(demand, w.capacity / 1000).value().max_allocatable_milli;
  st.counters["bound_pct"] = 100.0 * (static_cast<double>(w.capacity) - value) / static_cast<double>(w.capacity);
}
BENCHMARK(BM_LpBound)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
