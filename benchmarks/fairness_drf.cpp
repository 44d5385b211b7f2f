// Fairness benchmarks (issue #7 targets): next-job pick among 10,000 queues with incremental updates
// (<= 1 µs amortized), against a full re-sort in the same run; progressive filling for 1,000 users x
// 8 resources (<= 5 ms); ordering 100,000 pending jobs (<= 50 ms).
#include <benchmark/benchmark.h>

#include "bench_rng.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/drf.hpp"
#include "gpusched/fairness/hdrf.hpp"

using namespace gpusched;
using namespace gpusched::fairness;

namespace {

using gpusched::bench::SplitMix;

constexpr int kResources = 8;

Amounts big_total() { return Amounts::Constant(kResources, std::int64_t{1} << 50); }

std::vector<Amounts> task_shapes(std::size_t n, SplitMix& rng) {
  std::vector<Amounts> out(n, Amounts::Zero(kResources));
  for (auto& t : out)
    for (int r = 0; r < kResources; ++r) t[r] = 1 + static_cast<std::int64_t>(rng.below(1000));
  return out;
}

// Pick the lowest-share queue and give it one task: the DrfSorter re-sorts only that queue.
void BM_DrfPickIncremental(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  SplitMix rng{1};
  const auto tasks = task_shapes(n, rng);
  DrfSorter sorter(big_total());
  for (std::size_t i = 0; i < n; ++i) sorter.add(1.0 + static_cast<double>(rng.below(4)));
  for (auto _ : state) {
    const auto c = static_cast<std::uint32_t>(sorter.front());
    sorter.allocate(c, tasks[c]);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DrfPickIncremental)->Arg(10000);

// The same loop with a full re-sort of all queues by (share, id) before every pick.
void BM_DrfPickFullResort(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  SplitMix rng{1};
  const auto tasks = task_shapes(n, rng);
  const Amounts total = big_total();
  std::vector<Amounts> alloc(n, Amounts::Zero(kResources));
  std::vector<double> weight(n), share(n, 0.0);
  for (auto& w : weight) w = 1.0 + static_cast<double>(rng.below(4));
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (auto _ : state) {
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return share[a] < share[b] || (share[a] == share[b] && a < b);
    });
    const std::uint32_t c = order.front();
    alloc[c] += tasks[c];
    share[c] = dominant_share(alloc[c], total) / weight[c];
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DrfPickFullResort)->Arg(10000);

// H-DRF with 10,000 leaf queues under 100 internal nodes (two levels): pick + allocate.
void BM_HdrfPickTwoLevel(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  SplitMix rng{2};
  const auto tasks = task_shapes(n, rng);
  HdrfScheduler s(big_total());
  std::vector<HdrfScheduler::NodeId> groups;
  for (int g = 0; g < 100; ++g) groups.push_back(s.add_node(HdrfScheduler::kRoot, 1.0 + static_cast<double>(g % 3)).value());
  std::vector<std::size_t> task_of(n + groups.size() + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto leaf = s.add_node(groups[i % groups.size()], 1.0).value();
    task_of[leaf] = i;
  }
  for (auto _ : state) {
    const auto leaf = *s.pick();
    s.allocate(leaf, tasks[task_of[leaf]]);
    benchmark::DoNotOptimize(leaf);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HdrfPickTwoLevel)->Arg(10000);

void BM_ProgressiveFilling(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  SplitMix rng{3};
  Vector cap(kResources);
  for (int r = 0; r < kResources; ++r) cap[r] = 1e6 + static_cast<double>(rng.below(1000000));
  std::vector<FractionalUser> users(n);
  for (auto& u : users) {
    u.demand = Vector(kResources);
    for (int r = 0; r < kResources; ++r) u.demand[r] = 1.0 + static_cast<double>(rng.below(100));
    u.weight = 1.0 + static_cast<double>(rng.below(4));
    if (rng.below(2) == 0) u.max_tasks = static_cast<double>(rng.below(2000));
  }
  for (auto _ : state) {
    auto a = progressive_filling(cap, users);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_ProgressiveFilling)->Arg(1000)->Unit(benchmark::kMillisecond);

// Admission order of 100,000 pending jobs over 1,000 queues in 10 cohorts with quotas, priorities and
// aging, on a cluster that holds about half of them.
void BM_PlanAdmission(benchmark::State& state) {
  const auto n_jobs = static_cast<std::size_t>(state.range(0));
  SplitMix rng{4};
  ResourceSpace space{{"A100", "H100", "T4"}};
  const Eigen::Index m = space.size();
  Amounts cap(m);
  cap << std::int64_t{400000} * 1000, std::int64_t{4000000} << 30, 20000 * 1000, 20000 * 1000, 10000 * 1000;
  std::vector<QueueConfig> queues;
  for (int q = 0; q < 1000; ++q) {
    QueueConfig c;
    c.name = fmt::format("q{}", q);
    c.cohort = fmt::format("c{}", q % 10);
    c.weight = 1.0 + static_cast<double>(q % 4);
    c.nominal.assign(static_cast<std::size_t>(m), kNoLimit);
    for (std::size_t d = 2; d < c.nominal.size(); ++d) c.nominal[d] = 20 * 1000;
    queues.push_back(std::move(c));
  }
  auto planner = FairSharePlanner::build(space, cap, cap, queues).value();
  // Jobs of one task (the one job model, cluster/jobs.hpp): 1-16 cores, 1-64 GiB, 0-2 GPUs, half of
  // them restricted to one model (model id k is the space's k-th: the planner is built without a
  // registry).
  std::vector<CompiledJob> jobs(n_jobs);
  for (std::size_t j = 0; j < n_jobs; ++j) {
    auto& job = jobs[j];
    job.name = fmt::format("j{}", j);
    job.queue = queues[rng.below(queues.size())].name;
    job.priority = static_cast<std::int32_t>(rng.below(5));
    job.submit_time = static_cast<std::int64_t>(rng.below(100000));
    CompiledGroup& task = job.groups.emplace_back();
    task.request.shape.cpu = 1000 * static_cast<std::int64_t>(1 + rng.below(16));
    task.request.shape.memory = static_cast<std::int64_t>(1 + rng.below(64)) << 30;
    task.request.shape.gpus = static_cast<GpuCount>(rng.below(3));
    task.request.shape.gpu_milli = task.request.shape.gpus > 0 ? kMilliPerGpu : 0;
    if (rng.below(2) == 0) task.request.models = model_bit(static_cast<GpuModelId>(rng.below(3)));
  }
  const AgingPolicy aging{3600, 1, 10, 100000};
  std::size_t admitted = 0;
  for (auto _ : state) {
    const auto plan = planner.plan(jobs, aging);
    admitted = plan.admitted.size();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["admitted"] = static_cast<double>(admitted);
}
BENCHMARK(BM_PlanAdmission)->Arg(25000)->Arg(50000)->Arg(100000)->Unit(benchmark::kMillisecond);  // (the doubling series: issue 15, scale)

}  // namespace
BENCHMARK_MAIN();
