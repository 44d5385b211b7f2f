// A backfill plan at scale: 10,000 nodes x 8 H100s nearly full with 50,000 running tasks (1 or 2
// GPUs; expected ends spread over the next day, 2 % already past their estimate), and 500 blocked
// jobs in priority order (70 % one task of 1-2 GPUs, 20 % one task of 8 GPUs, 10 % gangs of 2-8
// tasks x 8 GPUs; estimates 10 min to 8 h). Slurm's defaults: window 1 day, resolution 60 s, depth
// 500. EASY and conservative, beside a naive baseline measured in the same run: for each blocked job,
// every grid step from now is tried by rebuilding the profile from scratch (the running tasks that
// ended by then released from the base state, every reservation overlapping re-taken), then the gang
// placed — what a backfill pass without an event list and an incremental cursor does.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/scheduler/backfill.hpp"

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

constexpr Seconds kNow = 100'000;

struct Instance {
  ClusterState state;
  std::vector<RunningJob> running;
  std::vector<GangSpec> specs;
  std::vector<BlockedJob> blocked;
};

TaskRequest whole(const ClusterState& state, GpuCount gpus) {
  TaskShape s;
  s.cpu = 4000;
  s.memory = 16 * kGiB;
  s.gpus = gpus;
  s.gpu_milli = kMilliPerGpu;
  return state.compile(s).value();
}

Instance make_instance(std::size_t nodes, std::size_t tasks, std::size_t blocked, std::uint64_t seed) {
  SplitMix64 rng{seed};
  std::vector<NodeSpec> specs(nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    specs[i].name = "n" + std::to_string(i);
    specs[i].cpu = 128 * kMilliPerCpu;
    specs[i].memory = 2048 * kGiB;
    specs[i].gpus.assign(8, GpuSpec{"H100-80GB"});
  }
  Instance in{ClusterState::build(Cluster(std::move(specs)), GpuModelRegistry::builtin()).value(), {}, {}, {}};
  // Tasks of 1 or 2 GPUs dealt over the nodes in a random order, lowest free GPUs first; with
  // 50,000 tasks on 80,000 GPUs about 94 % of the GPUs are taken, the rest scattered.
  std::vector<int> used(nodes, 0);
  in.running.reserve(tasks);
  for (std::size_t k = 0; k < tasks; ++k) {
    const GpuCount g = rng.chance(40) ? 2 : 1;
    NodeId n = static_cast<NodeId>(rng.below(nodes));
    for (std::size_t probe = 0; used[n] + g > 8 && probe < nodes; ++probe) n = static_cast<NodeId>((n + 1) % nodes);
    if (used[n] + g > 8) break;
    RunningJob job;
    job.name = "r" + std::to_string(k);
    job.queue = "q";
    job.start_time = kNow - static_cast<Seconds>(rng.uniform(0, 36'000));
    // Expected end uniform over the next day; 2 % already past their estimate.
    const Seconds end = rng.chance(2) ? kNow - rng.uniform(1, 600) : kNow + rng.uniform(1, 86'400);
    job.runtime_estimate = std::max<Seconds>(1, end - job.start_time);
    RunningTask t{whole(in.state, g), {}};
    t.assignment = make_assignment(n, t.request);
    for (int i = 0; i < g; ++i) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + i));
    used[n] += g;
    (void)in.state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in.running.push_back(std::move(job));
  }
  in.state.commit();
  in.specs.reserve(blocked);
  for (std::size_t b = 0; b < blocked; ++b) {
    GangSpec spec;
    spec.name = "b" + std::to_string(b);
    const auto kind = rng.uniform(0, 99);
    if (kind < 70)
      spec.groups.push_back({"w", 1, 1, whole(in.state, static_cast<GpuCount>(rng.uniform(1, 2)))});
    else if (kind < 90)
      spec.groups.push_back({"w", 1, 1, whole(in.state, 8)});
    else {
      const auto n = static_cast<std::int32_t>(rng.uniform(2, 8));
      spec.groups.push_back({"w", n, n, whole(in.state, 8)});
    }
    in.specs.push_back(std::move(spec));
  }
  for (const GangSpec& spec : in.specs) in.blocked.push_back({&spec, rng.uniform(600, 8 * 3600)});
  return in;
}

Instance& instance() {
  static Instance in = make_instance(10'000, 50'000, 500, 42);
  return in;
}

void report(benchmark::State& st, const BackfillPlan& plan) {
  st.counters["started"] = static_cast<double>(plan.startable.size());
  st.counters["reserved"] = static_cast<double>(plan.reservations.size());
  st.counters["waiting"] = static_cast<double>(plan.waiting.size());
  st.counters["placements"] = static_cast<double>(plan.placements_tried);
  st.counters["time_points"] = static_cast<double>(plan.time_points);
  st.counters["cursor_steps"] = static_cast<double>(plan.cursor_steps);
  st.counters["overlaid"] = static_cast<double>(plan.overlaid_tasks);
}

void BM_Backfill(benchmark::State& st) {
  Instance& in = instance();
  BackfillOptions options;
  options.mode = st.range(0) == 0 ? BackfillMode::kEasy : BackfillMode::kConservative;
  options.depth = static_cast<std::size_t>(st.range(1));
  BackfillPlan last;
  for (auto _ : st) {
    auto plan = plan_backfill(in.state, in.running, in.blocked, kNow, options);
    benchmark::DoNotOptimize(plan);
    last = std::move(plan.value());
  }
  report(st, last);
}
BENCHMARK(BM_Backfill)->ArgNames({"conservative", "depth"})->Args({0, 500})->Args({1, 500})->Unit(benchmark::kMillisecond);

// The naive baseline (conservative semantics): every grid step, the profile rebuilt from the base.
BackfillPlan naive_conservative(Instance& in, std::size_t depth, Seconds window, Seconds resolution) {
  ClusterState& state = in.state;
  const ClusterState::Checkpoint base = state.checkpoint();
  GangOptions options;
  options.dry_run = true;
  BackfillPlan plan;
  struct Held {
    std::size_t job;
    Seconds start, end;
  };
  std::vector<Held> held;  // started (start == now) and reserved jobs
  std::vector<std::vector<TaskPlacement>> placements(in.blocked.size());
  for (std::size_t i = 0; i < in.blocked.size() && i < depth; ++i) {
    const GangSpec& spec = *in.blocked[i].spec;
    const Seconds duration = (in.blocked[i].runtime_estimate + resolution - 1) / resolution * resolution;
    bool done = false;
    for (Seconds t = kNow; t <= kNow + window && !done; t += resolution) {
      state.rollback(base);
      for (const RunningJob& job : in.running) {
        if (expected_end(job, kNow, resolution) > t) continue;
        for (const RunningTask& task : job.tasks) (void)state.release_journaled(task.assignment);
      }
      for (const Held& h : held)
        if (h.start < t + duration && h.end > t)
          for (const TaskPlacement& p : placements[h.job])
            (void)state.reserve(in.blocked[h.job].spec->groups[p.group].request, p.assignment);
      ++plan.placements_tried;
      GangResult r = place_gang(state, spec, options);
      if (!r.placed()) continue;
      placements[i] = std::move(r.tasks);
      held.push_back({i, t, t + duration});
      if (t == kNow)
        plan.startable.push_back({i, t + duration, placements[i]});
      else
        plan.reservations.push_back({i, t, t + duration, placements[i]});
      done = true;
    }
    if (!done) plan.waiting.push_back({i, Verdict::kNotNow, {}});
  }
  state.rollback(base);
  return plan;
}

void BM_NaiveRebuildPerStep(benchmark::State& st) {
  Instance& in = instance();
  const auto depth = static_cast<std::size_t>(st.range(0));
  BackfillPlan last;
  for (auto _ : st) {
    last = naive_conservative(in, depth, 86'400, 60);
    benchmark::DoNotOptimize(last);
  }
  report(st, last);
}
BENCHMARK(BM_NaiveRebuildPerStep)->ArgName("depth")->Arg(500)->Unit(benchmark::kMillisecond)->Iterations(1);

// What the profile's what-if copy of the state costs (made once per plan when a later time is tested).
void BM_StateCopy(benchmark::State& st) {
  Instance& in = instance();
  for (auto _ : st) {
    ClusterState copy = in.state;
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_StateCopy)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
