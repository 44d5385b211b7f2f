// The time-based simulator (gpusched/sim/simulator.hpp): a whole run per iteration.
//   BM_ItpCluster04/<policy>   ITP cluster 04 (15,802 jobs, 128 x 8 GPUs, 60 days) — issue 13: <= 2 s
//   BM_Synthetic/<policy>/<jobs>/<nodes>/<min cycle interval s>  synthetic jobs on nodes x 8 GPUs at ~70 %
//                              offered load — 1,000,000 jobs on 10,000 nodes: <= 60 s
// Counters: sim_s_per_s (simulated seconds per wall second), events, cycles.
#include <benchmark/benchmark.h>

#include <string>

#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/traces.hpp"

namespace {

using namespace gpusched::sim;

void report(benchmark::State& state, const SimResult& r) {
  state.counters["sim_s_per_s"] = benchmark::Counter(static_cast<double>(r.metrics.simulated_seconds) *
                                                             static_cast<double>(state.iterations()),
                                                         benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(r.metrics.events);
  state.counters["cycles"] = static_cast<double>(r.metrics.cycles);
  state.counters["completed"] = static_cast<double>(r.metrics.completed);
  state.counters["conservation_ok"] = r.conservation.holds() ? 1 : 0;
}

void BM_ItpCluster04(benchmark::State& state, std::string policy) {
  auto jobs = read_itp_trace(std::string(GPUSCHED_SOURCE_DIR) + "/data/itp-elasticflow/cluster04.csv");
  if (!jobs) {
    state.SkipWithError(jobs.error().message.c_str());
    return;
  }
  augment(*jobs, Augment{42, 4, 1, 1800, 60, 1.0, 0});
  const SimCluster cluster = make_uniform_cluster(128, 8, "V100M32");
  SimConfig cfg;
  cfg.policy = *parse_policy(policy);
  SimResult last;
  for (auto _ : state) {
    auto r = simulate(cluster, *jobs, cfg);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  report(state, last);
}
BENCHMARK_CAPTURE(BM_ItpCluster04, fifo, std::string("fifo"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ItpCluster04, easy, std::string("easy"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ItpCluster04, las_ckpt, std::string("las+ckpt"))->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Synthetic(benchmark::State& state, std::string policy) {
  SyntheticSpec s;
  s.jobs = static_cast<std::size_t>(state.range(0));
  const auto nodes = static_cast<std::size_t>(state.range(1));
  // Offered load ~70 %: mean job ~3 GPUs x ~11,000 s (log-normal mean) = ~33,000 GPU-seconds.
  s.arrivals_per_hour = 0.7 * static_cast<double>(nodes) * 8 * 3600 / 33000.0;
  s.extra = Augment{42, 4, 1, 1800, 60, 1.0, 0};
  const auto jobs = synthetic_jobs(s);
  const SimCluster cluster = make_uniform_cluster(nodes, 8, "V100M32");
  SimConfig cfg;
  cfg.policy = *parse_policy(policy);
  cfg.min_cycle_interval = state.range(2);
  SimResult last;
  for (auto _ : state) {
    auto r = simulate(cluster, jobs, cfg);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  report(state, last);
}
// One run per policy family: strict FIFO, EASY and conservative backfill (the availability profile
// over every running job), DRF queues with fair-share reclaim, LAS with preemption.
#define GPUSCHED_SYNTHETIC(name, policy)                                                                   \
  BENCHMARK_CAPTURE(BM_Synthetic, name, std::string(policy))                                               \
      ->Args({10'000, 100, 0})                                                                             \
      ->Args({100'000, 1'000, 0})                                                                          \
      ->Args({1'000'000, 10'000, 0})                                                                       \
      ->Args({1'000'000, 10'000, 10})                                                                      \
      ->Unit(benchmark::kMillisecond)                                                                      \
      ->UseRealTime()                                                                                      \
      ->Iterations(1)
GPUSCHED_SYNTHETIC(fifo, "fifo");
GPUSCHED_SYNTHETIC(easy, "easy");
GPUSCHED_SYNTHETIC(conservative, "conservative");
GPUSCHED_SYNTHETIC(drf, "drf");
GPUSCHED_SYNTHETIC(las, "las+ckpt");
#undef GPUSCHED_SYNTHETIC

}  // namespace

BENCHMARK_MAIN();
