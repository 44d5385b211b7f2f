// benchmarks/instances/scheduler.hpp — the scheduler benchmarks' instances with their size a parameter:
// scheduler_cycle.cpp, scheduler_backfill.cpp and scheduler_preemption.cpp record them at one size,
// scale_stack.cpp measures the same instances at 25,000-100,000 nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_rng.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/scheduler/backfill.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/preemption.hpp"

namespace gpusched::bench {

// `n` nodes of 128 cores, `memory` and 8 H100s, named n0, n1, ...
inline Cluster h100_nodes(std::size_t n, Bytes memory) {
  std::vector<NodeSpec> specs(n);
  for (std::size_t i = 0; i < n; ++i) {
    specs[i].name = fmt::format("n{}", i);  // (std::to_string trips GCC 12's -Wrestrict false positive at -O3)
    specs[i].cpu = 128 * kMilliPerCpu;
    specs[i].memory = memory;
    specs[i].gpus.assign(8, GpuSpec{"H100-80GB"});
  }
  return Cluster(std::move(specs));
}

inline TaskRequest whole_gpus(const ClusterState& state, GpuCount gpus, MilliCpu cpu, Bytes memory) {
  TaskShape s;
  s.cpu = cpu;
  s.memory = memory;
  s.gpus = gpus;
  s.gpu_milli = kMilliPerGpu;
  return state.compile(s).value();
}

// One scheduling cycle (scheduler_cycle.cpp at 10,000 nodes): 5N running one-GPU tasks on GPUs 0-4 of
// every node (N/16 gangs of 8 tasks first, the rest single), N pending jobs (a tenth gangs of 4 x 8
// GPUs, the rest one task of 1, 2 or 4 GPUs), four queues of one cohort, each nominal 2N GPUs.
struct CycleInstance {
  Cluster cluster;  // the description, for the baseline that rebuilds the state every cycle
  ClusterState state;
  std::vector<scheduler::RunningJob> running;
  std::vector<scheduler::PendingJob> pending;
  std::vector<fairness::QueueConfig> queues;
};

inline CycleInstance cycle_instance(std::size_t nodes) {
  using namespace gpusched::scheduler;
  SplitMix rng{2024};
  Cluster cluster = h100_nodes(nodes, 1024 * kGiB);
  ClusterState state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
  CycleInstance in{std::move(cluster), std::move(state), {}, {}, {}};
  const char* queue_names[] = {"a", "b", "c", "d"};
  const TaskRequest one = whole_gpus(in.state, 1, 1000, kGiB);
  std::size_t slot = 0;
  const std::size_t gangs = nodes / 16, singles = 5 * nodes - 8 * gangs;
  for (std::size_t j = 0; j < gangs + singles; ++j) {
    RunningJob r;
    r.name = fmt::format("r{}", j);
    r.queue = queue_names[rng.below(4)];
    r.priority = static_cast<std::int32_t>(rng.below(2));
    r.start_time = static_cast<Seconds>(rng.below(3600));
    r.submit_time = r.start_time;
    r.checkpoint_interval = 600;
    r.restart_cost = 30;
    r.runtime_estimate = 3600 + static_cast<Seconds>(rng.below(7200));
    for (std::size_t t = 0, k = j < gangs ? 8 : 1; t < k; ++t, ++slot) {
      TaskAssignment a = make_assignment(static_cast<NodeId>(slot / 5), one);
      a.gpus.push_back(static_cast<GpuIndex>(slot % 5));
      (void)in.state.reserve(one, a);
      r.tasks.push_back({one, std::move(a)});
    }
    in.running.push_back(std::move(r));
  }
  in.state.commit();
  for (std::size_t j = 0; j < nodes; ++j) {
    PendingJob p;
    p.job.name = fmt::format("p{}", j);
    p.job.queue = queue_names[rng.below(4)];
    p.job.priority = static_cast<std::int32_t>(rng.below(3));
    p.job.submit_time = 3600 + static_cast<std::int64_t>(j % 400);
    p.runtime_estimate = 600 + static_cast<Seconds>(rng.below(3600));
    if (j % 10 == 0) p.job.groups.push_back({"worker", 4, 4, whole_gpus(in.state, 8, 1000, kGiB), {}});
    else p.job.groups.push_back({"task", 1, 1, whole_gpus(in.state, GpuCount{1} << rng.below(3), 1000, kGiB), {}});
    in.pending.push_back(std::move(p));
  }
  auto space = fairness::fairness_cluster(in.state).value().space;
  for (const char* name : queue_names) {
    fairness::QueueConfig q;
    q.name = name;
    q.cohort = "all";
    q.nominal.assign(static_cast<std::size_t>(space.size()), fairness::kNoLimit);
    q.nominal[2] = static_cast<std::int64_t>(2 * nodes) * kMilliPerGpu;  // 20,000 GPUs at 10,000 nodes
    in.queues.push_back(std::move(q));
  }
  return in;
}

// A backfill plan (scheduler_backfill.cpp: 10,000 nodes, 50,000 tasks, 500 blocked jobs): `tasks`
// running tasks of 1 or 2 GPUs dealt over the nodes in a random order (about 94 % of the GPUs at 5
// per node), expected ends uniform over the next day, 2 % past their estimate; `blocked` jobs (70 %
// one task of 1-2 GPUs, 20 % one 8-GPU task, 10 % gangs of 2-8 x 8 GPUs), estimates 10 min-8 h.
inline constexpr scheduler::Seconds kBackfillNow = 100'000;
struct BackfillInstance {
  ClusterState state;
  std::vector<scheduler::RunningJob> running;
  std::vector<GangSpec> specs;
  std::vector<scheduler::BlockedJob> blocked;  // point into `specs`: keep the instance in place
};

inline std::unique_ptr<BackfillInstance> backfill_instance(std::size_t nodes, std::size_t tasks, std::size_t blocked,
                                                           std::uint64_t seed) {
  using namespace gpusched::scheduler;
  SplitMix64 rng{seed};
  auto in = std::make_unique<BackfillInstance>(BackfillInstance{
      ClusterState::build(h100_nodes(nodes, 2048 * kGiB), GpuModelRegistry::builtin()).value(), {}, {}, {}});
  std::vector<int> used(nodes, 0);
  in->running.reserve(tasks);
  for (std::size_t k = 0; k < tasks; ++k) {
    const GpuCount g = rng.chance(40) ? 2 : 1;
    NodeId n = static_cast<NodeId>(rng.below(nodes));
    for (std::size_t probe = 0; used[n] + g > 8 && probe < nodes; ++probe) n = static_cast<NodeId>((n + 1) % nodes);
    if (used[n] + g > 8) break;
    RunningJob job;
    job.name = fmt::format("r{}", k);
    job.queue = "q";
    job.start_time = kBackfillNow - static_cast<Seconds>(rng.uniform(0, 36'000));
    const Seconds end = rng.chance(2) ? kBackfillNow - rng.uniform(1, 600) : kBackfillNow + rng.uniform(1, 86'400);
    job.runtime_estimate = std::max<Seconds>(1, end - job.start_time);
    RunningTask t{whole_gpus(in->state, g, 4000, 16 * kGiB), {}};
    t.assignment = make_assignment(n, t.request);
    for (int i = 0; i < g; ++i) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + i));
    used[n] += g;
    (void)in->state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in->running.push_back(std::move(job));
  }
  in->state.commit();
  in->specs.reserve(blocked);
  for (std::size_t b = 0; b < blocked; ++b) {
    GangSpec spec;
    spec.name = fmt::format("b{}", b);
    const auto kind = rng.uniform(0, 99);
    if (kind < 70)
      spec.groups.push_back({"w", 1, 1, whole_gpus(in->state, static_cast<GpuCount>(rng.uniform(1, 2)), 4000, 16 * kGiB)});
    else if (kind < 90)
      spec.groups.push_back({"w", 1, 1, whole_gpus(in->state, 8, 4000, 16 * kGiB)});
    else {
      const auto k = static_cast<std::int32_t>(rng.uniform(2, 8));
      spec.groups.push_back({"w", k, k, whole_gpus(in->state, 8, 4000, 16 * kGiB)});
    }
    in->specs.push_back(std::move(spec));
  }
  for (const GangSpec& spec : in->specs) in->blocked.push_back({&spec, rng.uniform(600, 8 * 3600)});
  return in;
}

// Preemption (scheduler_preemption.cpp: 10,000 jobs): `jobs` running jobs of 1, 2, 4 or 8 GPUs
// first-fit on just enough nodes (priorities 0-9, random start, checkpoint and restart cost), the
// spare GPUs of every node filled by a priority-100 job, so nothing is free; the preemptor is a gang
// of 8 tasks x 8 GPUs.
struct PreemptInstance {
  ClusterState state;
  std::vector<scheduler::RunningJob> running;
  GangSpec preemptor;
};

inline PreemptInstance preempt_instance(std::size_t jobs, std::uint64_t seed) {
  using namespace gpusched::scheduler;
  SplitMix64 rng{seed};
  const GpuCount sizes[] = {1, 2, 4, 8};
  std::vector<GpuCount> job_gpus(jobs);
  std::size_t total = 0;
  for (auto& g : job_gpus) total += static_cast<std::size_t>(g = sizes[rng.next() % 4]);
  const std::size_t nodes = (total + 7) / 8 + 1;
  PreemptInstance in{ClusterState::build(h100_nodes(nodes, 1024 * kGiB), GpuModelRegistry::builtin()).value(), {}, {}};
  std::vector<int> used(nodes, 0);
  auto add = [&](RunningJob job, NodeId n, GpuCount g) {
    RunningTask t{whole_gpus(in.state, g, 1000, kGiB), {}};
    t.assignment = make_assignment(n, t.request);
    for (int k = 0; k < g; ++k) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + k));
    used[n] += g;
    (void)in.state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in.running.push_back(std::move(job));
  };
  NodeId cursor = 0;  // first fit in job order: node by node, lowest GPUs first
  for (std::size_t j = 0; j < jobs; ++j) {
    NodeId n = cursor;
    while (used[n] + job_gpus[j] > 8) ++n;
    RunningJob job;
    job.name = fmt::format("j{}", j);
    job.queue = std::string("q");  // (assigning the literal trips GCC 12's bogus -Wrestrict, PR 105329)
    job.priority = static_cast<std::int32_t>(rng.next() % 10);
    job.start_time = static_cast<Seconds>(rng.next() % 3600);
    job.last_checkpoint = job.start_time + static_cast<Seconds>(rng.next() % 3600);
    job.restart_cost = static_cast<Seconds>(rng.next() % 300);
    add(std::move(job), n, job_gpus[j]);
    while (cursor < nodes && used[cursor] == 8) ++cursor;
  }
  for (NodeId n = 0; n < nodes; ++n)
    if (used[n] < 8) {
      RunningJob fill;
      fill.name = fmt::format("fill{}", n);
      fill.queue = "q";
      fill.priority = 100;
      add(std::move(fill), n, 8 - used[n]);
    }
  in.state.commit();
  in.preemptor.name = "big";
  in.preemptor.groups.push_back({"worker", 8, 8, whole_gpus(in.state, 8, 1000, kGiB)});
  return in;
}

}  // namespace gpusched::bench
