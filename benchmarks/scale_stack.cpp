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
#include "instances/k8s.hpp"
#include "instances/mig.hpp"
#include "instances/scheduler.hpp"
#include "instances/topology.hpp"
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
// mig_plan.cpp's random cluster at N nodes x 8 GPUs (70 % of the instances busy).
ClusterState& state(std::size_t nodes) {
  return cached<ClusterState>(nodes, [](std::size_t n) { return bench::mig_random_cluster(static_cast<int>(8 * n), 70, 42); });
}
}  // namespace migb

void BM_ScaleMigDecide(benchmark::State& st, bool frag) {
  using namespace gpusched::mig;
  const ClusterState& s = migb::state(static_cast<std::size_t>(st.range(0)));
  FragAwarePlacer packer(MigMode::kDynamic, bench::mig_mix_demand());
  FirstFitPlacer ff(MigMode::kDynamic);
  const MigPlacer& placer = frag ? static_cast<const MigPlacer&>(packer) : ff;
  const auto reqs = bench::mig_mix_requests();
  SplitMix rng{99};
  std::vector<std::size_t> seq(4096);
  for (auto& k : seq) k = bench::draw_mig_request(rng);
  std::size_t i = 0, placed = 0;
  for (auto _ : st) {
    MigDecision d = placer.decide(s, reqs[seq[i++ & 4095]]);
    placed += d.placed();
    benchmark::DoNotOptimize(d);
  }
  st.counters["placed_share"] = static_cast<double>(placed) / static_cast<double>(std::max<std::size_t>(i, 1));
  st.counters["gpus"] = static_cast<double>(s.mig().table().gpu_count());
  st.counters["live_classes"] = static_cast<double>(s.mig().table().live_classes().size());
}
BENCHMARK_CAPTURE(BM_ScaleMigDecide, frag_aware, true) SCALE_SIZES->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScaleMigDecide, first_fit, false) SCALE_SIZES->Unit(benchmark::kMicrosecond);

void BM_ScaleMigDecideApply(benchmark::State& st) {
  using namespace gpusched::mig;
  ClusterState s = migb::state(static_cast<std::size_t>(st.range(0)));  // a copy: this one changes
  FragAwarePlacer packer(MigMode::kDynamic, bench::mig_mix_demand());
  const auto reqs = bench::mig_mix_requests();
  SplitMix rng{123};
  std::vector<std::pair<MigGpuId, int>> placed;
  for (auto _ : st) {
    MigDecision d = packer.decide(s, reqs[bench::draw_mig_request(rng)]);
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
  for (const auto& e : bench::kMigMix)
    demand.push_back({e.name, MigRequest::from_name(bench::mig_catalog(), e.name).value(),
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
struct Fabric {
  ClusterState state;
  ClusterTopology topo;
};
Fabric& fabric(std::size_t n) {
  return cached<Fabric>(n, [](std::size_t k) {
    ClusterState s = bench::fat_tree(k);
    auto t = ClusterTopology::from_labels(s, bench::fat_tree_levels()).value();
    return Fabric{std::move(s), std::move(t)};
  });
}
TaskRequest gpus(const ClusterState& s, GpuCount g) { return bench::whole_gpus(s, g, 0, 0); }
}  // namespace topob

void BM_ScaleTopoFromLabels(benchmark::State& st) {
  using namespace gpusched::topology;
  const auto& f = topob::fabric(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(ClusterTopology::from_labels(f.state, bench::fat_tree_levels()));
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
    if (!p.found()) {
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

void BM_ScaleCycle(benchmark::State& st) {
  using namespace gpusched::scheduler;
  auto& in = cached<bench::CycleInstance>(static_cast<std::size_t>(st.range(0)), bench::cycle_instance);
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
  auto& in = *cached<std::unique_ptr<bench::BackfillInstance>>(
      static_cast<std::size_t>(st.range(0)), [](std::size_t n) { return bench::backfill_instance(n, 5 * n, 500, 42); });
  BackfillOptions options;
  options.mode = BackfillMode::kEasy;
  options.depth = 500;
  BackfillPlan last;
  for (auto _ : st) {
    auto plan = plan_backfill(in.state, in.running, in.blocked, bench::kBackfillNow, options);
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
  auto& in = cached<bench::PreemptInstance>(2 * static_cast<std::size_t>(st.range(0)),
                                                 [](std::size_t jobs) { return bench::preempt_instance(jobs, 42); });
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

void BM_ScaleK8sRead(benchmark::State& st) {
  const auto n = static_cast<std::size_t>(st.range(0));
  const std::string nodes = bench::k8s_node_list(n, false), pods = bench::k8s_pod_list(n, n);
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
