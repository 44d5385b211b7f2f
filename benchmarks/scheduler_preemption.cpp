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

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

struct Instance {
  ClusterState state;
  std::vector<RunningJob> running;
  GangSpec preemptor;
};

TaskRequest whole(const ClusterState& state, GpuCount gpus) {
  TaskShape s;
  s.cpu = 1000;
  s.memory = kGiB;
  s.gpus = gpus;
  s.gpu_milli = kMilliPerGpu;
  return state.compile(s).value();
}

Instance make_instance(std::size_t jobs, std::uint64_t seed) {
  SplitMix64 rng{seed};
  const GpuCount sizes[] = {1, 2, 4, 8};
  std::vector<GpuCount> job_gpus(jobs);
  std::size_t total = 0;
  for (auto& g : job_gpus) total += static_cast<std::size_t>(g = sizes[rng.next() % 4]);
  const std::size_t nodes = (total + 7) / 8 + 1;
  std::vector<NodeSpec> specs(nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    specs[i].name = "n" + std::to_string(i);
    specs[i].cpu = 128 * kMilliPerCpu;
    specs[i].memory = 1024 * kGiB;
    specs[i].gpus.assign(8, GpuSpec{"H100-80GB"});
  }
  Instance in{ClusterState::build(Cluster(std::move(specs)), GpuModelRegistry::builtin()).value(), {}, {}};
  // First fit in job order: node by node, lowest GPUs first.
  std::vector<int> used(nodes, 0);
  NodeId cursor = 0;
  for (std::size_t j = 0; j < jobs; ++j) {
    const GpuCount g = job_gpus[j];
    NodeId n = cursor;
    while (used[n] + g > 8) ++n;
    RunningJob job;
    job.name = "j" + std::to_string(j);
    job.queue = "q";
    job.priority = static_cast<std::int32_t>(rng.next() % 10);
    job.start_time = static_cast<Seconds>(rng.next() % 3600);
    job.last_checkpoint = job.start_time + static_cast<Seconds>(rng.next() % 3600);
    job.restart_cost = static_cast<Seconds>(rng.next() % 300);
    RunningTask t{whole(in.state, g), {}};
    t.assignment = make_assignment(n, t.request);
    for (int k = 0; k < g; ++k) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + k));
    used[n] += g;
    (void)in.state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in.running.push_back(std::move(job));
    while (cursor < nodes && used[cursor] == 8) ++cursor;
  }
  // Fill the spare GPUs of the last nodes with one more high-priority job each, so nothing is free.
  for (NodeId n = 0; n < nodes; ++n)
    if (used[n] < 8) {
      RunningJob job;
      job.name = "fill" + std::to_string(n);
      job.queue = "q";
      job.priority = 100;
      RunningTask t{whole(in.state, 8 - used[n]), {}};
      t.assignment = make_assignment(n, t.request);
      for (int k = used[n]; k < 8; ++k) t.assignment.gpus.push_back(static_cast<GpuIndex>(k));
      (void)in.state.reserve(t.request, t.assignment);
      job.tasks.push_back(std::move(t));
      in.running.push_back(std::move(job));
    }
  in.state.commit();
  in.preemptor.name = "big";
  in.preemptor.groups.push_back({"worker", 8, 8, whole(in.state, 8)});
  return in;
}

void BM_FindVictims64GpuGang(benchmark::State& st) {
  Instance in = make_instance(static_cast<std::size_t>(st.range(0)), 42);
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
  Instance in = make_instance(static_cast<std::size_t>(st.range(0)), 42);
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
