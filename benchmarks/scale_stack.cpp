// Issue 15, scale, continued (benchmarks/scale_families.cpp has the state, the packing policies, gang
// and admission): the families above the packing layer at 25,000 / 50,000 / 100,000 nodes x 8 GPUs, a
// doubling series so the ratio per doubling shows (1: index lookups; 2: linear in the nodes; 4 would
// be quadratic). Every instance is the family's own harness instance with its size made a parameter.
//
//   BM_ScaleMigDecide/P/N      MIG (benchmarks/mig_place.cpp): one decision of the fragmentation-aware
//                              packer (P = frag_aware) or first-fit on N nodes x 8 A100-40GB, a third of
//                              the GPUs empty and the rest with 1-3 random instances (mig_plan.cpp's mix)
//   BM_ScaleMigDecideApply/N   decide + apply + a departure, on the same cluster
//   BM_ScaleMigPlan/N          plan_repartition of that cluster (mig_plan.cpp's BM_MigPlan at 8N GPUs;
//                              demand per profile up to a third of the GPUs)
//   BM_ScaleTopoFromLabels/N   ClusterTopology::from_labels (blocks of 512 nodes, leaves of 32) of a state
//                              of N nodes x 8 H100, a fifth of the nodes full (topology_bench.cpp's fat tree)
//   BM_ScaleTopoGraph/N        ClusterGraph::build of that fabric
//   BM_ScaleTopoPick64/N       best 64 nodes of 8 idle GPUs inside one block (required level)
//   BM_ScaleTopoGpuPick/N      best-fit node + TopologyGpuPicker for a 4-GPU task on the N-node state
//   BM_ScaleCycle/N            scheduler (scheduler_cycle.cpp): one dry-run cycle, N nodes, 5N running
//                              one-GPU tasks, N pending jobs, four queues, default options
//   BM_ScaleBackfill/N         scheduler_backfill.cpp: EASY plan, depth 500, N nodes with 5N running tasks
//   BM_ScaleFindVictims/N      scheduler_preemption.cpp: victims for a 64-GPU gang on a full cluster of
//                              about N nodes (2N running jobs of 1, 2, 4, 8 GPUs)
//   BM_ScaleK8sRead/N          io_k8s.cpp: a NodeList of N nodes and a PodList of N pods (1 in 5 bound), JSON,
//                              read and built into the state
//   BM_ScaleSimFixedJobs/N     simulator (sim_simulate.cpp): 5,000 synthetic jobs at ~70 % offered load
//                              on N nodes (same number of events; the per-event cost against the nodes)
//
// Each size is built once, outside the timing (the 100,000-node instances take seconds to build). The
// whole run takes a few minutes on the 2-core machine; run one family with
// --benchmark_filter=ScaleMig (ScaleTopo, ScaleCycle, ScaleBackfill, ScaleFindVictims, ScaleK8s, ScaleSim).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_rng.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/gpusched.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/mig/planner.hpp"
#include "gpusched/scheduler/backfill.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/preemption.hpp"
#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/traces.hpp"
#include "gpusched/topology/cluster_graph.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/gpu_picker.hpp"

namespace {

using namespace gpusched;
using gpusched::bench::SplitMix;

#define SCALE_SIZES ->Arg(25000)->Arg(50000)->Arg(100000)

// Builds T for a size once and keeps it (the states are reused by the benchmarks of one family).
template <class T, class F>
T& cached(std::size_t n, F make) {
  static std::map<std::size_t, std::unique_ptr<T>> cache;
  auto& slot = cache[n];
  if (!slot) slot = std::make_unique<T>(make(n));
  return *slot;
}

// ---------------------------------------------------------------------------------------------- MIG
namespace migb {
using namespace gpusched::mig;
const MigCatalog& cat() { return MigCatalog::builtin(); }
MigModelId a100() { return *cat().find("A100-SXM4-40GB"); }
constexpr const char* kNames[] = {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};
constexpr int kPermille[] = {350, 100, 200, 200, 80, 70};

std::vector<MigRequest> requests() {
  std::vector<MigRequest> out;
  for (const char* n : kNames) out.push_back(MigRequest::from_name(cat(), n).value());
  return out;
}
std::size_t draw(SplitMix& rng) {
  std::uint64_t x = rng.below(1000);
  for (std::size_t i = 0; i < std::size(kPermille); ++i) {
    if (x < static_cast<std::uint64_t>(kPermille[i])) return i;
    x -= static_cast<std::uint64_t>(kPermille[i]);
  }
  return 0;
}
MigDemand demand() {
  auto reqs = requests();
  std::vector<std::int64_t> counts(std::begin(kPermille), std::end(kPermille));
  return MigDemand::from_requests(cat(), reqs, counts);
}

// mig_plan.cpp's random cluster: a third of the GPUs empty, the rest 1-3 random instances, 70 % busy.
ClusterState random_cluster(std::size_t nodes) {
  SplitMix rng{42};
  MigClusterBuilder b;
  const MigGpuSpec& spec = cat().spec(a100());
  for (std::size_t n = 0; n < nodes; ++n) {
    const auto node = b.add_node(fmt::format("node-{}", n));
    for (int g = 0; g < 8; ++g) {
      Occupancy occ;
      std::vector<MigInstance> instances;
      bool busy[kMaxInstances] = {};
      if (rng.below(3) != 0)
        for (int k = 1 + static_cast<int>(rng.below(3)); k > 0; --k) {
          const int p = static_cast<int>(rng.below(spec.profiles.size()));
          const SlotMask s = feasible_starts(spec, occ, p);
          if (!s) continue;
          const int start = nth_slot(
              s, static_cast<int>(rng.below(static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(s))))));
          add_instance(spec, occ, p, start);
          busy[instances.size()] = rng.below(100) < 70;
          instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
        }
      b.add_gpu(node, a100(), instances, std::span<const bool>(busy, instances.size()));
    }
  }
  return b.build().value();
}
ClusterState& state(std::size_t nodes) { return cached<ClusterState>(nodes, random_cluster); }
}  // namespace migb

void BM_ScaleMigDecide(benchmark::State& st, bool frag) {
  using namespace gpusched::mig;
  const ClusterState& s = migb::state(static_cast<std::size_t>(st.range(0)));
  FragAwarePlacer packer(MigMode::kDynamic, migb::demand());
  FirstFitPlacer ff(MigMode::kDynamic);
  const MigPlacer& placer = frag ? static_cast<const MigPlacer&>(packer) : ff;
  const auto reqs = migb::requests();
  SplitMix rng{99};
  std::vector<std::size_t> seq(4096);
  for (auto& k : seq) k = migb::draw(rng);
  std::size_t i = 0, placed = 0;
  for (auto _ : st) {
    MigDecision d = placer.decide(s, reqs[seq[i++ & 4095]]);
    placed += d.placed();
    benchmark::DoNotOptimize(d);
  }
  st.counters["placed_share"] = static_cast<double>(placed) / static_cast<double>(std::max<std::size_t>(i, 1));
  st.counters["gpus"] = static_cast<double>(s.mig().gpu_count());
  st.counters["live_classes"] = static_cast<double>(s.mig().live_classes().size());
}
BENCHMARK_CAPTURE(BM_ScaleMigDecide, frag_aware, true) SCALE_SIZES->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScaleMigDecide, first_fit, false) SCALE_SIZES->Unit(benchmark::kMicrosecond);

void BM_ScaleMigDecideApply(benchmark::State& st) {
  using namespace gpusched::mig;
  ClusterState s = migb::state(static_cast<std::size_t>(st.range(0)));  // a copy: this one changes
  FragAwarePlacer packer(MigMode::kDynamic, migb::demand());
  const auto reqs = migb::requests();
  SplitMix rng{123};
  std::vector<std::pair<MigGpuId, int>> placed;
  for (auto _ : st) {
    MigDecision d = packer.decide(s, reqs[migb::draw(rng)]);
    if (d.placed()) {
      (void)apply_decision(s, d);
      s.commit();
      placed.emplace_back(d.gpu, d.start);
    }
    if (placed.size() > 64) {
      const std::size_t j = rng.below(placed.size());
      (void)s.release(mig_instance_assignment(s, placed[j].first, placed[j].second, true));
      s.commit();
      placed[j] = placed.back();
      placed.pop_back();
    }
  }
}
BENCHMARK(BM_ScaleMigDecideApply) SCALE_SIZES->Unit(benchmark::kMicrosecond);

void BM_ScaleMigPlan(benchmark::State& st) {
  using namespace gpusched::mig;
  const ClusterState& s = migb::state(static_cast<std::size_t>(st.range(0)));
  const std::int64_t gpus = st.range(0) * 8;
  SplitMix rng{7};
  std::vector<MigDemandItem> demand;
  for (const char* n : migb::kNames)
    demand.push_back({n, MigRequest::from_name(migb::cat(), n).value(),
                      static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(gpus / 3) + 1))});
  MigPlan plan;
  for (auto _ : st) {
    plan = plan_repartition(s, demand);
    benchmark::DoNotOptimize(plan);
  }
  std::int64_t served = 0;
  for (std::size_t i = 0; i < demand.size(); ++i) served += plan.served_idle[i] + plan.served_created[i];
  st.counters["served"] = static_cast<double>(served);
  st.counters["gpus_changed"] = static_cast<double>(plan.changes.size());
}
BENCHMARK(BM_ScaleMigPlan) SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

// ----------------------------------------------------------------------------------------- topology
namespace topob {
using namespace gpusched::topology;
const std::vector<TopologyLevel>& levels() {
  static const std::vector<TopologyLevel> l = {{"topology.kubernetes.io/block", LinkKind::kIbNdr, 8},
                                           {"topology.kubernetes.io/rack", LinkKind::kIbNdr, 8}};
  return l;
}
// topology_bench.cpp's fat tree at N nodes: blocks of 512 nodes, leaves of 32, a fifth of the nodes full.
ClusterState fat_tree(std::size_t count) {
  std::vector<NodeSpec> nodes(count);
  for (std::size_t i = 0; i < count; ++i) {
    NodeSpec& n = nodes[i];
    n.name = fmt::format("n{:06d}", i);
    n.cpu = 128000;
    n.memory = 1024 * kGiB;
    const int used = (i * 2654435761u) % 5 == 0 ? 8 : 0;
    for (int g = 0; g < 8; ++g) n.gpus.push_back({"H100-SXM5-80GB", g < used ? kMilliPerGpu : 0, 0, true});
    n.labels = {{"topology.kubernetes.io/block", fmt::format("b{}", i / 512)},
                {"topology.kubernetes.io/rack", fmt::format("leaf{}", i / 32)}};
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}
struct Fabric {
  ClusterState state;
  ClusterTopology topo;
};
Fabric& fabric(std::size_t n) {
  return cached<Fabric>(n, [](std::size_t k) {
    ClusterState s = fat_tree(k);
    auto t = ClusterTopology::from_labels(s, levels()).value();
    return Fabric{std::move(s), std::move(t)};
  });
}
TaskRequest gpus(const ClusterState& s, GpuCount g) {
  TaskShape shape;
  shape.gpus = g;
  shape.gpu_milli = kMilliPerGpu;
  return s.compile(shape).value();
}
}  // namespace topob

void BM_ScaleTopoFromLabels(benchmark::State& st) {
  using namespace gpusched::topology;
  const auto& f = topob::fabric(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(ClusterTopology::from_labels(f.state, topob::levels()));
}
BENCHMARK(BM_ScaleTopoFromLabels) SCALE_SIZES->Unit(benchmark::kMillisecond);

void BM_ScaleTopoGraph(benchmark::State& st) {
  using namespace gpusched::topology;
  const auto& f = topob::fabric(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(ClusterGraph::build(f.topo));
}
BENCHMARK(BM_ScaleTopoGraph) SCALE_SIZES->Unit(benchmark::kMillisecond);

void BM_ScaleTopoPick64(benchmark::State& st) {
  using namespace gpusched::topology;
  const auto& f = topob::fabric(static_cast<std::size_t>(st.range(0)));
  const TaskRequest r = topob::gpus(f.state, 8);
  const auto constraint = f.topo.constraint(LevelMode::kRequired, "topology.kubernetes.io/block").value();
  for (auto _ : st) {
    auto p = f.topo.pick_nodes(f.state, r, 64, constraint);
    if (!p.found) {
      st.SkipWithError("no pick");
      break;
    }
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_ScaleTopoPick64) SCALE_SIZES->Unit(benchmark::kMillisecond);

void BM_ScaleTopoGpuPick(benchmark::State& st) {
  using namespace gpusched::topology;
  const auto& f = topob::fabric(static_cast<std::size_t>(st.range(0)));
  const TaskRequest r = topob::gpus(f.state, 4);
  BestFitPolicy policy;
  const TopologyGpuPicker picker;
  TaskAssignment out;
  for (auto _ : st) {
    const NodeId n = policy.select(f.state, r);
    if (n == kNoNode || !picker.pick(f.state, n, r, out)) {
      st.SkipWithError("no pick");
      break;
    }
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_ScaleTopoGpuPick) SCALE_SIZES->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------------------- scheduler
namespace schedb {
using namespace gpusched::scheduler;
TaskRequest whole(const ClusterState& state, GpuCount gpus, std::int64_t cpu, std::int64_t mem) {
  TaskShape s;
  s.cpu = cpu;
  s.memory = mem;
  s.gpus = gpus;
  s.gpu_milli = kMilliPerGpu;
  return state.compile(s).value();
}
Cluster h100_nodes(std::size_t n, std::int64_t memory) {
  std::vector<NodeSpec> specs(n);
  for (std::size_t i = 0; i < n; ++i) {
    specs[i].name = fmt::format("n{}", i);
    specs[i].cpu = 128 * kMilliPerCpu;
    specs[i].memory = memory;
    specs[i].gpus.assign(8, GpuSpec{"H100-80GB"});
  }
  return Cluster(std::move(specs));
}

// scheduler_cycle.cpp's instance with N nodes (there N = 10,000): 5N running one-GPU tasks on GPUs 0-4
// of every node (N/16 gangs of 8, the rest single), N pending jobs (a tenth gangs of 4 x 8 GPUs).
struct CycleInstance {
  ClusterState state;
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;
  std::vector<fairness::QueueConfig> queues;
};
CycleInstance cycle_instance(std::size_t nodes) {
  SplitMix rng{2024};
  CycleInstance in{ClusterState::build(h100_nodes(nodes, 1024 * kGiB), GpuModelRegistry::builtin()).value(), {}, {}, {}};
  const char* queue_names[] = {"a", "b", "c", "d"};
  const TaskRequest one = whole(in.state, 1, 1000, kGiB);
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
    if (j % 10 == 0) p.job.groups.push_back({"worker", 4, 4, whole(in.state, 8, 1000, kGiB), {}});
    else p.job.groups.push_back({"task", 1, 1, whole(in.state, GpuCount{1} << rng.below(3), 1000, kGiB), {}});
    in.pending.push_back(std::move(p));
  }
  auto space = fairness::fairness_cluster(in.state).value().space;
  for (const char* name : queue_names) {
    fairness::QueueConfig q;
    q.name = name;
    q.cohort = "all";
    q.nominal = fairness::Amounts::Constant(space.size(), fairness::kNoLimit);
    q.nominal[2] = static_cast<std::int64_t>(2 * nodes) * kMilliPerGpu;  // 20,000 GPUs at 10,000 nodes
    in.queues.push_back(std::move(q));
  }
  return in;
}

// scheduler_backfill.cpp's instance: 5N tasks of 1-2 GPUs dealt at random (about 94 % of the GPUs
// taken), 500 blocked jobs.
struct BackfillInstance {
  ClusterState state;
  std::vector<RunningJob> running;
  std::vector<GangSpec> specs;
  std::vector<BlockedJob> blocked;
};
constexpr Seconds kNow = 100'000;
std::unique_ptr<BackfillInstance> backfill_instance(std::size_t nodes) {
  SplitMix64 rng{42};
  auto in = std::make_unique<BackfillInstance>(BackfillInstance{
      ClusterState::build(h100_nodes(nodes, 2048 * kGiB), GpuModelRegistry::builtin()).value(), {}, {}, {}});
  std::vector<int> used(nodes, 0);
  const std::size_t tasks = 5 * nodes;
  in->running.reserve(tasks);
  for (std::size_t k = 0; k < tasks; ++k) {
    const GpuCount g = rng.chance(40) ? 2 : 1;
    NodeId n = static_cast<NodeId>(rng.below(nodes));
    for (std::size_t probe = 0; used[n] + g > 8 && probe < nodes; ++probe) n = static_cast<NodeId>((n + 1) % nodes);
    if (used[n] + g > 8) break;
    RunningJob job;
    job.name = fmt::format("r{}", k);
    job.queue = "q";
    job.start_time = kNow - static_cast<Seconds>(rng.uniform(0, 36'000));
    const Seconds end = rng.chance(2) ? kNow - rng.uniform(1, 600) : kNow + rng.uniform(1, 86'400);
    job.runtime_estimate = std::max<Seconds>(1, end - job.start_time);
    RunningTask t{whole(in->state, g, 4000, 16 * kGiB), {}};
    t.assignment = make_assignment(n, t.request);
    for (int i = 0; i < g; ++i) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + i));
    used[n] += g;
    (void)in->state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in->running.push_back(std::move(job));
  }
  in->state.commit();
  in->specs.reserve(500);
  for (std::size_t b = 0; b < 500; ++b) {
    GangSpec spec;
    spec.name = fmt::format("b{}", b);
    const auto kind = rng.uniform(0, 99);
    if (kind < 70)
      spec.groups.push_back({"w", 1, 1, whole(in->state, static_cast<GpuCount>(rng.uniform(1, 2)), 4000, 16 * kGiB)});
    else if (kind < 90)
      spec.groups.push_back({"w", 1, 1, whole(in->state, 8, 4000, 16 * kGiB)});
    else {
      const auto k = static_cast<std::int32_t>(rng.uniform(2, 8));
      spec.groups.push_back({"w", k, k, whole(in->state, 8, 4000, 16 * kGiB)});
    }
    in->specs.push_back(std::move(spec));
  }
  for (const GangSpec& spec : in->specs) in->blocked.push_back({&spec, rng.uniform(600, 8 * 3600)});
  return in;
}

// scheduler_preemption.cpp's instance: `jobs` running jobs of 1, 2, 4, 8 GPUs first-fit on just
// enough nodes, the rest of every node filled by a high-priority job; a 64-GPU gang waits.
struct PreemptInstance {
  ClusterState state;
  std::vector<RunningJob> running;
  GangSpec preemptor;
};
PreemptInstance preempt_instance(std::size_t jobs) {
  SplitMix64 rng{42};
  const GpuCount sizes[] = {1, 2, 4, 8};
  std::vector<GpuCount> job_gpus(jobs);
  std::size_t total = 0;
  for (auto& g : job_gpus) total += static_cast<std::size_t>(g = sizes[rng.next() % 4]);
  const std::size_t nodes = (total + 7) / 8 + 1;
  PreemptInstance in{ClusterState::build(h100_nodes(nodes, 1024 * kGiB), GpuModelRegistry::builtin()).value(), {}, {}};
  std::vector<int> used(nodes, 0);
  NodeId cursor = 0;
  auto add = [&](std::string name, std::int32_t priority, NodeId n, GpuCount g) {
    RunningJob job;
    job.name = std::move(name);
    job.queue = "q";
    job.priority = priority;
    job.start_time = static_cast<Seconds>(rng.next() % 3600);
    job.last_checkpoint = job.start_time + static_cast<Seconds>(rng.next() % 3600);
    job.restart_cost = static_cast<Seconds>(rng.next() % 300);
    RunningTask t{whole(in.state, g, 1000, kGiB), {}};
    t.assignment = make_assignment(n, t.request);
    for (int k = 0; k < g; ++k) t.assignment.gpus.push_back(static_cast<GpuIndex>(used[n] + k));
    used[n] += g;
    (void)in.state.reserve(t.request, t.assignment);
    job.tasks.push_back(std::move(t));
    in.running.push_back(std::move(job));
  };
  for (std::size_t j = 0; j < jobs; ++j) {
    NodeId n = cursor;
    while (used[n] + job_gpus[j] > 8) ++n;
    add(fmt::format("j{}", j), static_cast<std::int32_t>(rng.next() % 10), n, job_gpus[j]);
    while (cursor < nodes && used[cursor] == 8) ++cursor;
  }
  for (NodeId n = 0; n < nodes; ++n)
    if (used[n] < 8) add(fmt::format("fill{}", n), 100, n, 8 - used[n]);
  in.state.commit();
  in.preemptor.name = "big";
  in.preemptor.groups.push_back({"worker", 8, 8, whole(in.state, 8, 1000, kGiB)});
  return in;
}
}  // namespace schedb

void BM_ScaleCycle(benchmark::State& st) {
  using namespace gpusched::scheduler;
  auto& in = cached<schedb::CycleInstance>(static_cast<std::size_t>(st.range(0)), schedb::cycle_instance);
  CycleOptions o;
  o.dry_run = true;
  CycleDecisions last;
  for (auto _ : st) {
    auto d = run_cycle(in.state, in.running, in.pending, in.queues, 4000, o);
    benchmark::DoNotOptimize(d);
    last = std::move(*d);
  }
  st.counters["starts"] = static_cast<double>(last.starts.size());
  st.counters["evictions"] = static_cast<double>(last.evictions.size());
  st.counters["waiting"] = static_cast<double>(last.waiting.size());
  st.counters["preemption_searches"] = static_cast<double>(last.stats.preemption_attempts);
}
BENCHMARK(BM_ScaleCycle) SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

void BM_ScaleBackfill(benchmark::State& st) {
  using namespace gpusched::scheduler;
  auto& in = *cached<std::unique_ptr<schedb::BackfillInstance>>(static_cast<std::size_t>(st.range(0)),
                                                                schedb::backfill_instance);
  BackfillOptions options;
  options.mode = BackfillMode::kEasy;
  options.depth = 500;
  BackfillPlan last;
  for (auto _ : st) {
    auto plan = plan_backfill(in.state, in.running, in.blocked, schedb::kNow, options);
    benchmark::DoNotOptimize(plan);
    last = std::move(plan.value());
  }
  st.counters["started"] = static_cast<double>(last.startable.size());
  st.counters["reserved"] = static_cast<double>(last.reservations.size());
  st.counters["running"] = static_cast<double>(in.running.size());
}
BENCHMARK(BM_ScaleBackfill) SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

void BM_ScaleFindVictims(benchmark::State& st) {
  using namespace gpusched::scheduler;
  // 2N jobs of 3.75 GPUs on average fill about 0.94 N nodes.
  auto& in = cached<schedb::PreemptInstance>(2 * static_cast<std::size_t>(st.range(0)), schedb::preempt_instance);
  const Preemptor p{&in.preemptor, "q", 5, 7200};
  std::size_t victims = 0;
  for (auto _ : st) {
    PreemptionPlan plan = find_victims(in.state, p, in.running, 7200);
    victims = plan.victims.size();
    benchmark::DoNotOptimize(plan);
  }
  st.counters["victims"] = static_cast<double>(victims);
  st.counters["running_jobs"] = static_cast<double>(in.running.size());
  st.counters["nodes"] = static_cast<double>(in.state.node_count());
}
BENCHMARK(BM_ScaleFindVictims) SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

// --------------------------------------------------------------------------------------- Kubernetes
namespace k8sb {
// io_k8s.cpp's NodeList (8 A100-80GB, GFD labels, a taint, a Ready condition) and PodList.
std::string node_list(std::size_t nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"NodeList","items":[)";
  for (std::size_t n = 0; n < nodes; ++n)
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"node-{}","labels":{{"kubernetes.io/hostname":"node-{}",)"
        R"("topology.kubernetes.io/zone":"zone-{}","example.com/rack":"rack-{}","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB",)"
        R"("nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"81920","nvidia.com/mig.strategy":"none"}}}},)"
        R"("spec":{{"taints":[{{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}}]}},)"
        R"("status":{{"capacity":{{"cpu":"128","memory":"1056Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("allocatable":{{"cpu":"127500m","memory":"1048Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("conditions":[{{"type":"Ready","status":"True"}}]}}}})",
        n ? "," : "", n, n, n / 2500, n / 32);
  return out + "]}";
}
std::string pod_list(std::size_t pods, std::size_t nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"PodList","items":[)";
  for (std::size_t p = 0; p < pods; ++p) {
    const int gpus = 1 << (p % 4);
    const std::string bound = p % 5 == 0 ? fmt::format(R"("nodeName":"node-{}",)", (p / 5) % nodes) : std::string();
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{}","namespace":"team-{}",)"
        R"("labels":{{"kueue.x-k8s.io/queue-name":"lq","app":"train"}},"creationTimestamp":"2024-05-01T10:00:00Z"}},)"
        R"("spec":{{{}"schedulerName":"default-scheduler","priorityClassName":"","tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],)"
        R"("initContainers":[{{"name":"init","resources":{{"requests":{{"cpu":"1","memory":"1Gi"}}}}}}],)"
        R"("containers":[{{"name":"main","image":"trainer:1","resources":{{"requests":{{"cpu":"{}","memory":"{}Gi"}},)"
        R"("limits":{{"nvidia.com/gpu":"{}"}}}}}}]}},"status":{{"phase":"{}"}}}})",
        p ? "," : "", p, p % 8, bound, 4 * gpus, 32 * gpus, gpus, bound.empty() ? "Pending" : "Running");
  }
  return out + "]}";
}
}  // namespace k8sb

void BM_ScaleK8sRead(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const std::string nodes = k8sb::node_list(n), pods = k8sb::pod_list(n, n);
  for (auto _ : st) {
    std::vector<io::k8s::Source> in = {{nodes, "nodes"}, {pods, "pods"}};
    auto input = io::k8s::read(in);
    if (!input) {
      st.SkipWithError(input.error().message.c_str());
      return;
    }
    auto state = ClusterState::build(input->cluster, input->registry);
    if (!state) {
      st.SkipWithError(state.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(state->node_count());
  }
  st.counters["MB"] = static_cast<double>(nodes.size() + pods.size()) / 1e6;
}
BENCHMARK(BM_ScaleK8sRead) SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

// ---------------------------------------------------------------------------------------- simulator
void BM_ScaleSimFixedJobs(benchmark::State& st, std::string policy) {
  using namespace gpusched::sim;
  const auto nodes = static_cast<std::size_t>(st.range(0));
  SyntheticSpec s;
  s.jobs = 5000;
  // ~70 % offered load, as sim_simulate.cpp's BM_Synthetic: mean job ~33,000 GPU-seconds.
  s.arrivals_per_hour = 0.7 * static_cast<double>(nodes) * 8 * 3600 / 33000.0;
  s.extra = Augment{42, 4, 1, 1800, 60, 1.0, 0};
  const auto jobs = synthetic_jobs(s);
  const SimCluster cluster = make_uniform_cluster(nodes, 8, "V100M32");
  SimConfig cfg;
  cfg.policy = *parse_policy(policy);
  SimResult last;
  for (auto _ : st) {
    auto r = simulate(cluster, jobs, cfg);
    if (!r) {
      st.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  st.counters["events"] = static_cast<double>(last.metrics.events);
  st.counters["cycles"] = static_cast<double>(last.metrics.cycles);
  st.counters["completed"] = static_cast<double>(last.metrics.completed);
}
BENCHMARK_CAPTURE(BM_ScaleSimFixedJobs, fifo, std::string("fifo"))
    SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(BM_ScaleSimFixedJobs, easy, std::string("easy"))
    SCALE_SIZES->Unit(benchmark::kMillisecond)->Iterations(1);

#undef SCALE_SIZES

}  // namespace

BENCHMARK_MAIN();
