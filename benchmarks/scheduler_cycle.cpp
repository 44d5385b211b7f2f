// One scheduling cycle at scale (issue 12): 10,000 nodes x 8 H100s, 50,000 running tasks (45,000
// one-GPU jobs and 625 gangs of 8 one-GPU tasks: 50,000 of the 80,000 GPUs busy), 10,000 pending jobs
// (9,000 of 1, 2 or 4 GPUs and 1,000 gangs of 4 tasks x 8 GPUs: 50,000 GPUs asked for, 30,000 free),
// four queues of one cohort (nominal 20,000 GPUs each), priorities 0-2 pending vs 0-1 running, so the
// cycle places, refuses, and preempts (up to its 32 preemption searches).
//
//   BM_Cycle           the cycle on the one state, changed incrementally and rolled back (dry run)
//   BM_CycleRebuild    the naive baseline measured in the same run: rebuild the state from the cluster
//                      description and re-reserve every running task each cycle, then the same cycle
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_rng.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/scheduler/cycle.hpp"

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

constexpr std::size_t kNodes = 10'000;

struct Instance {
  Cluster cluster;
  ClusterState state;
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;
  std::vector<fairness::QueueConfig> queues;
};

TaskRequest whole(const ClusterState& state, GpuCount gpus) {
  TaskShape s;
  s.cpu = 1000;
  s.memory = kGiB;
  s.gpus = gpus;
  s.gpu_milli = kMilliPerGpu;
  return state.compile(s).value();
}

Cluster make_cluster() {
  std::vector<NodeSpec> specs(kNodes);
  for (std::size_t i = 0; i < kNodes; ++i) {
    specs[i].name = "n" + std::to_string(i);
    specs[i].cpu = 128 * kMilliPerCpu;
    specs[i].memory = 1024 * kGiB;
    specs[i].gpus.assign(8, GpuSpec{"H100-80GB"});
  }
  return Cluster(std::move(specs));
}

// Running tasks reserved on `state`: GPU g of node n is busy for the first 5 of every 8 GPUs, so
// every node has 3 idle GPUs (50,000 busy, 30,000 idle).
void reserve_running(ClusterState& state, const std::vector<RunningJob>& running) {
  for (const RunningJob& r : running)
    for (const RunningTask& t : r.tasks) (void)state.reserve(t.request, t.assignment);
}

Instance make_instance() {
  bench::SplitMix rng{2024};
  Cluster cluster = make_cluster();
  ClusterState state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
  Instance in{std::move(cluster), std::move(state), {}, {}, {}};
  const char* queue_names[] = {"a", "b", "c", "d"};
  const TaskRequest one = whole(in.state, 1);
  // 50,000 one-GPU tasks: node n, GPUs 0..4. Gangs first (625 x 8 tasks on 8 consecutive GPU slots),
  // then 45,000 single-task jobs.
  std::size_t slot = 0;
  auto next_slot = [&]() {
    const NodeId n = static_cast<NodeId>(slot / 5);
    const GpuIndex g = static_cast<GpuIndex>(slot % 5);
    ++slot;
    TaskAssignment a = make_assignment(n, one);
    a.gpus.push_back(g);
    return a;
  };
  for (std::size_t j = 0; j < 625 + 45'000; ++j) {
    RunningJob r;
    r.name = "r" + std::to_string(j);
    r.queue = queue_names[rng.below(4)];
    r.priority = static_cast<std::int32_t>(rng.below(2));
    r.start_time = static_cast<Seconds>(rng.below(3600));
    r.submit_time = r.start_time;
    r.checkpoint_interval = 600;
    r.restart_cost = 30;
    const std::size_t tasks = j < 625 ? 8 : 1;
    for (std::size_t t = 0; t < tasks; ++t) r.tasks.push_back({one, next_slot()});
    in.running.push_back(std::move(r));
  }
  reserve_running(in.state, in.running);
  for (std::size_t j = 0; j < 10'000; ++j) {
    PendingJob p;
    p.job.name = "p" + std::to_string(j);
    p.job.queue = queue_names[rng.below(4)];
    p.job.priority = static_cast<std::int32_t>(rng.below(3));
    p.job.submit_time = 3600 + static_cast<std::int64_t>(j);
    if (j % 10 == 0) p.job.groups.push_back({"worker", 4, 4, whole(in.state, 8), {}});
    else p.job.groups.push_back({"task", 1, 1, whole(in.state, GpuCount{1} << rng.below(3)), {}});
    in.pending.push_back(std::move(p));
  }
  auto space = fairness::fairness_cluster(in.state).value().space;
  for (const char* name : queue_names) {
    fairness::QueueConfig q;
    q.name = name;
    q.cohort = "all";
    q.nominal = fairness::Amounts::Constant(space.size(), fairness::kNoLimit);
    q.nominal[2] = 20'000 * kMilliPerGpu;
    in.queues.push_back(std::move(q));
  }
  return in;
}

Instance& instance() {
  static Instance in = make_instance();
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
