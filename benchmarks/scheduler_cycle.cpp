// One scheduling cycle at scale (issue 12): 10,000 nodes x 8 H100s, 50,000 running tasks (45,000
// one-GPU jobs and 625 gangs of 8 one-GPU tasks: 50,000 of the 80,000 GPUs busy), 10,000 pending jobs
// (9,000 of 1, 2 or 4 GPUs and 1,000 gangs of 4 tasks x 8 GPUs: 50,000 GPUs asked for, 30,000 free),
// four queues of one cohort (nominal 20,000 GPUs each), priorities 0-2 pending vs 0-1 running, so the
// cycle places, refuses, and preempts (up to its 32 preemption searches); every job has a runtime
// estimate, so the EASY backfill stage (default options: depth 500) plans reservations too.
//
//   BM_Cycle           the cycle on the one state, changed incrementally and rolled back (dry run)
//   BM_CycleRebuild    the naive baseline measured in the same run: rebuild the state from the cluster
//                      description and re-reserve every running task each cycle, then the same cycle
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "gpusched/scheduler/cycle.hpp"
#include "instances/scheduler.hpp"

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

constexpr std::size_t kNodes = 10'000;

using Instance = bench::CycleInstance;

// The running tasks of the instance reserved on `state` (the baseline's rebuild).
void reserve_running(ClusterState& state, const std::vector<RunningJob>& running) {
  for (const RunningJob& r : running)
    for (const RunningTask& t : r.tasks) (void)state.reserve(t.request, t.assignment);
}

Instance& instance() {
  static Instance in = bench::cycle_instance(kNodes);
  return in;
}

void report(benchmark::State& st, const CycleDecisions& d) {
  st.counters["starts"] = static_cast<double>(d.starts.size());
  st.counters["evictions"] = static_cast<double>(d.evictions.size());
  st.counters["waiting"] = static_cast<double>(d.waiting.size());
  st.counters["preemption_searches"] = static_cast<double>(d.stats.preemption_attempts);
  st.counters["placements"] = static_cast<double>(d.stats.placements_tried);
}

void BM_Cycle(benchmark::State& st) {
  Instance& in = instance();
  CycleOptions o;
  o.dry_run = true;
  CycleDecisions last;
  for (auto _ : st) {
    auto d = run_cycle(in.state, in.running, in.pending, in.queues, 4000, o);
    benchmark::DoNotOptimize(d);
    last = std::move(*d);
  }
  report(st, last);
}

void BM_CycleRebuild(benchmark::State& st) {
  Instance& in = instance();
  CycleOptions o;
  CycleDecisions last;
  for (auto _ : st) {
    ClusterState state = ClusterState::build(in.cluster, GpuModelRegistry::builtin()).value();
    reserve_running(state, in.running);
    state.commit();
    auto d = run_cycle(state, in.running, in.pending, in.queues, 4000, o);
    benchmark::DoNotOptimize(d);
    last = std::move(*d);
  }
  report(st, last);
}

}  // namespace

BENCHMARK(BM_Cycle)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(5)->Repetitions(3);
BENCHMARK(BM_CycleRebuild)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(3)->Repetitions(3);

BENCHMARK_MAIN();
