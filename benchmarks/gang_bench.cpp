// Gang scheduling on a 10,000-node cluster of 8-GPU nodes (80 % of the nodes idle, the rest with 1-7
// GPUs in use; racks of 32 nodes, blocks of 1,024): the figures.
//
//   BM_GangPlace/1024          feasibility + placement of a 1,024-task x 8-GPU gang (target <= 10 ms)
//   BM_GangInfeasibleBound     a 9,000 x 8-GPU gang refused by the aggregate bounds (not now), no cache
//   BM_GangInfeasibleBoundCached  the same with a GangCapacityCache kept between calls
//   BM_TaskByTask/1024         the same gang placed task by task with no gang logic (baseline)
//   BM_TaskByTaskInfeasible    the baseline on the infeasible gang: places 8,000 tasks, then fails
//   BM_PlaceJob/1024           the foundation's place_job (all or nothing, no bounds) for comparison
//   BM_GangRackRequired        24 x 8 GPUs, one rack required (best-fit rack)
//   BM_GangBlockRequired       512 x 8 GPUs, one block required
//   BM_GangHeterogeneous       1 launcher + 1,024 workers x 8 GPUs + 64 CPU parameter servers
//
// Every iteration leaves the state as it found it: the gang runs with dry_run (it rolls its own
// reservations back, included in the time); the baselines roll back to a checkpoint, also timed.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/gang/gang.hpp"

namespace {

using namespace gpusched;

ClusterState& state() {
  static ClusterState s = [] {
    SplitMix64 rng{6};
    std::vector<NodeSpec> specs(10000);
    for (std::size_t i = 0; i < specs.size(); ++i) {
      NodeSpec& n = specs[i];
      n.name = fmt::format("node-{}", i);
      n.cpu = 192000;
      n.memory = 2048 * kGiB;
      n.gpus.assign(8, GpuSpec{"H100-80GB"});
      if (rng.next() % 10 >= 8) {
        const auto used = 1 + rng.next() % 7;
        for (std::size_t g = 0; g < used; ++g) n.gpus[g].used_milli = 1000;
      }
      n.labels = {{"topology.kubernetes.io/block", fmt::format("block-{}", i / 1024)},
                  {"topology.kubernetes.io/rack", fmt::format("rack-{}", i / 32)}};
    }
    return ClusterState::build(Cluster(std::move(specs)), GpuModelRegistry::builtin()).value();
  }();
  return s;
}

TaskRequest request(int gpus, MilliCpu cpu) {
  TaskShape shape;
  shape.cpu = cpu;
  shape.memory = 64 * kGiB;
  shape.gpus = gpus;
  shape.gpu_milli = gpus > 0 ? kMilliPerGpu : 0;
  return state().compile(shape).value();
}

GangSpec workers(int tasks) {
  GangSpec spec;
  spec.name = "train";
  spec.groups.push_back({"worker", tasks, tasks, request(8, 32000)});
  return spec;
}

void run_gang(benchmark::State& bs, const GangSpec& spec, Verdict expect, GangCapacityCache* cache = nullptr) {
  ClusterState& s = state();
  GangOptions opt;
  opt.dry_run = true;
  opt.capacity_cache = cache;
  for (auto _ : bs) {
    GangResult r = place_gang(s, spec, opt);
    if (r.verdict != expect) {
      bs.SkipWithError(fmt::format("unexpected verdict: {}", r.explanation).c_str());
      break;
    }
    benchmark::DoNotOptimize(r.tasks.data());
  }
}

void BM_GangPlace(benchmark::State& bs) { run_gang(bs, workers(static_cast<int>(bs.range(0))), Verdict::kPlaced); }
BENCHMARK(BM_GangPlace)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_GangInfeasibleBound(benchmark::State& bs) { run_gang(bs, workers(9000), Verdict::kNotNow); }
BENCHMARK(BM_GangInfeasibleBound)->Unit(benchmark::kMicrosecond);

// The same refusal with a capacity summary kept between calls (GangOptions::capacity_cache, as the
// scheduling cycle, a session and place_gangs keep one): the tasks at empty are counted per node
// shape once per layout generation, so a repeated refusal costs O(node shapes).
void BM_GangInfeasibleBoundCached(benchmark::State& bs) {
  GangCapacityCache cache;
  run_gang(bs, workers(9000), Verdict::kNotNow, &cache);
}
BENCHMARK(BM_GangInfeasibleBoundCached)->Unit(benchmark::kMicrosecond);

// Task by task: select, pick GPUs, reserve, with no bound and no gang bookkeeping.
void task_by_task(benchmark::State& bs, int tasks) {
  ClusterState& s = state();
  const TaskRequest r = request(8, 32000);
  BestFitPolicy policy;
  for (auto _ : bs) {
    const auto mark = s.checkpoint();
    int placed = 0;
    for (; placed < tasks; ++placed) {
      const NodeId n = policy.select(s, r);
      TaskAssignment a;
      if (n == kNoNode || !policy.gpu_picker().pick(s, n, r, a) || !s.reserve(r, a).ok()) break;
    }
    benchmark::DoNotOptimize(placed);
    s.rollback(mark);
  }
}
void BM_TaskByTask(benchmark::State& bs) { task_by_task(bs, static_cast<int>(bs.range(0))); }
BENCHMARK(BM_TaskByTask)->Arg(1024)->Unit(benchmark::kMillisecond);
void BM_TaskByTaskInfeasible(benchmark::State& bs) { task_by_task(bs, 9000); }
BENCHMARK(BM_TaskByTaskInfeasible)->Unit(benchmark::kMillisecond);

void BM_PlaceJob(benchmark::State& bs) {
  ClusterState& s = state();
  CompiledJob job;
  job.name = "train";
  job.groups.push_back({"worker", static_cast<std::int32_t>(bs.range(0)), static_cast<std::int32_t>(bs.range(0)),
                        request(8, 32000)});
  BestFitPolicy policy;
  for (auto _ : bs) {
    const auto mark = s.checkpoint();
    JobPlacement p = place_job(s, job, policy);
    benchmark::DoNotOptimize(p.tasks.data());
    s.rollback(mark);
  }
}
BENCHMARK(BM_PlaceJob)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_GangRackRequired(benchmark::State& bs) {
  GangSpec spec = workers(24);
  spec.topology = {"rack", LevelMode::kRequired};
  run_gang(bs, spec, Verdict::kPlaced);
}
BENCHMARK(BM_GangRackRequired)->Unit(benchmark::kMillisecond);

void BM_GangBlockRequired(benchmark::State& bs) {
  GangSpec spec = workers(512);
  spec.topology = {"block", LevelMode::kRequired};
  run_gang(bs, spec, Verdict::kPlaced);
}
BENCHMARK(BM_GangBlockRequired)->Unit(benchmark::kMillisecond);

void BM_GangHeterogeneous(benchmark::State& bs) {
  GangSpec spec = workers(1024);
  spec.groups.push_back({"launcher", 1, 1, request(0, 4000)});
  spec.groups.push_back({"ps", 64, 64, request(0, 16000)});
  run_gang(bs, spec, Verdict::kPlaced);
}
BENCHMARK(BM_GangHeterogeneous)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
