// Preemption victim search at scale: one 64-GPU gang (8 tasks x 8 GPUs) waiting on a full cluster
// of 10,000 running jobs of 1, 2, 4 or 8 GPUs, about half of them of lower priority. Reported beside
// a naive baseline measured in the same run: victims tried one by one (cheapest first), the
// preemptor's placement re-simulated after each, no trimming.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/scheduler/preemption.hpp"
#include "instances/scheduler.hpp"

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

using Instance = bench::PreemptInstance;

void BM_FindVictims64GpuGang(benchmark::State& st) {
  Instance in = bench::preempt_instance(static_cast<std::size_t>(st.range(0)), 42);
  const Preemptor p{&in.preemptor, "q", 5, 7200};
  std::size_t victims = 0;
  for (auto _ : st) {
    PreemptionPlan plan = find_victims(in.state, p, in.running, 7200);
    victims = plan.victims.size();
    benchmark::DoNotOptimize(plan);
  }
  st.counters["victims"] = static_cast<double>(victims);
  st.counters["running_jobs"] = static_cast<double>(in.running.size());
}
BENCHMARK(BM_FindVictims64GpuGang)->Arg(10000)->Unit(benchmark::kMillisecond);

// Baseline: victims one by one, cheapest first, the placement simulated after each, no trimming.
void BM_NaiveOneByOne64GpuGang(benchmark::State& st) {
  Instance in = bench::preempt_instance(static_cast<std::size_t>(st.range(0)), 42);
  const Preemptor p{&in.preemptor, "q", 5, 7200};
  std::vector<std::size_t> order;
  for (std::size_t j = 0; j < in.running.size(); ++j)
    if (eligible_victim(in.running[j], p, 7200, {}, false)) order.push_back(j);
  auto cost = [&](std::size_t j) {
    const RunningJob& job = in.running[j];
    return lost_work(job, 0, job.tasks.size(), 7200) + restart_work(job, 0, job.tasks.size());
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost(a) < cost(b); });
  std::size_t victims = 0;
  for (auto _ : st) {
    const auto mark = in.state.checkpoint();
    GangOptions o;
    o.dry_run = true;
    victims = 0;
    for (std::size_t j : order) {
      for (const RunningTask& t : in.running[j].tasks) (void)in.state.release_journaled(t.assignment);
      ++victims;
      if (place_gang(in.state, in.preemptor, o).placed()) break;
    }
    in.state.rollback(mark);
  }
  st.counters["victims"] = static_cast<double>(victims);
}
BENCHMARK(BM_NaiveOneByOne64GpuGang)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
