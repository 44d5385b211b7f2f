// MIG re-partition planning benchmarks (issue #4): a plan for 1,000 GPUs (target <= 50 ms), and
// its quality (demand served, GPUs re-partitioned) against first-fit on the lowest free slice and
// the fragmentation-aware packer used request by request, and on small clusters against the best
// plan found by exhaustive search (dynamic programming over every GPU's possible fills).
#include <benchmark/benchmark.h>

#include "bench_rng.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/planner.hpp"
#include "instances/mig.hpp"

using namespace gpusched::mig;
using gpusched::ClusterState;

namespace {

namespace bench = gpusched::bench;
using gpusched::bench::SplitMix;

constexpr const char* kNames[] = {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};

std::vector<MigDemandItem> random_demand(std::int64_t max_per_profile, std::uint64_t seed) {
  SplitMix rng{seed};
  std::vector<MigDemandItem> d;
  for (const char* n : kNames)
    d.push_back({n, MigRequest::from_name(bench::mig_catalog(), n).value(), static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(max_per_profile) + 1))});
  return d;
}

struct Outcome {
  std::int64_t served = 0, slices = 0, touched = 0;
};

std::int64_t slices_of(const MigDemandItem& d) {
  return bench::mig_catalog().spec(bench::mig_a100()).profiles[static_cast<std::size_t>(d.request.profile[bench::mig_a100()])].compute_slices;
}

Outcome of_plan(const MigPlan& plan, std::span<const MigDemandItem> demand) {
  Outcome o;
  for (std::size_t i = 0; i < demand.size(); ++i) {
    o.served += plan.served_idle[i] + plan.served_created[i];
    o.slices += (plan.served_idle[i] + plan.served_created[i]) * slices_of(demand[i]);
  }
  o.touched = static_cast<std::int64_t>(plan.changes.size());
  return o;
}

// A placer used as a planner: each pending request in turn (largest first), idle instances first,
// else a creation; a GPU is "touched" when something is created on it.
Outcome sequential(const ClusterState& start, std::span<const MigDemandItem> demand, const MigPlacer& placer) {
  ClusterState st = start;
  std::vector<std::size_t> order(demand.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return slices_of(demand[a]) > slices_of(demand[b]); });
  std::set<MigGpuId> touched;
  Outcome o;
  for (std::size_t i : order)
    for (std::int64_t k = 0; k < demand[i].count; ++k) {
      const MigDecision d = placer.decide(st, demand[i].request);
      if (!d.placed()) break;
      if (d.action == MigAction::kCreate) touched.insert(d.gpu);
      (void)apply_decision(st, d);
      ++o.served;
      o.slices += slices_of(demand[i]);
    }
  o.touched = static_cast<std::int64_t>(touched.size());
  return o;
}

void BM_MigPlan(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const ClusterState st = bench::mig_random_cluster(gpus, 70, 42);
  const auto demand = random_demand(gpus / 3, 7);
  MigPlan plan;
  for (auto _ : state) {
    plan = plan_repartition(st, demand);
    benchmark::DoNotOptimize(plan);
  }
  const Outcome o = of_plan(plan, demand);
  std::int64_t wanted = 0;
  for (const auto& d : demand) wanted += d.count;
  state.counters["demand"] = static_cast<double>(wanted);
  state.counters["served"] = static_cast<double>(o.served);
  state.counters["served_slices"] = static_cast<double>(o.slices);
  state.counters["gpus_touched"] = static_cast<double>(o.touched);
}
BENCHMARK(BM_MigPlan)->Arg(1000)->Unit(benchmark::kMillisecond);

void BM_MigPlanOverload(benchmark::State& state) {
  const ClusterState st = bench::mig_random_cluster(1000, 70, 42);
  const auto demand = random_demand(1000, 7);
  MigPlan plan;
  for (auto _ : state) {
    plan = plan_repartition(st, demand);
    benchmark::DoNotOptimize(plan);
  }
  state.counters["served"] = static_cast<double>(plan.total_served());
  state.counters["gpus_touched"] = static_cast<double>(plan.changes.size());
}
BENCHMARK(BM_MigPlanOverload)->Unit(benchmark::kMillisecond);

// The same cluster and demand, keeping idle instances (what the sequential baselines can do).
// `max_per_profile` 333: the demand fits (about 860 instances); 1000: it does not (about 2,600).
void BM_MigPlanQuality(benchmark::State& state, int which, std::int64_t max_per_profile) {
  const ClusterState st = bench::mig_random_cluster(1000, 70, 42);
  const auto demand = random_demand(max_per_profile, 7);
  Outcome o;
  for (auto _ : state) {
    if (which == 0) o = of_plan(plan_repartition(st, demand, MigPlanOptions{.destroy_idle = false}), demand);
    if (which == 1) o = sequential(st, demand, FirstFitPlacer(MigMode::kDynamic));
    if (which == 2) o = sequential(st, demand, FragAwarePlacer(MigMode::kDynamic, MigDemand::uniform(bench::mig_catalog())));
  }
  state.counters["served"] = static_cast<double>(o.served);
  state.counters["served_slices"] = static_cast<double>(o.slices);
  state.counters["gpus_touched"] = static_cast<double>(o.touched);
}
BENCHMARK_CAPTURE(BM_MigPlanQuality, fits_planner_keep_idle, 0, 333)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigPlanQuality, fits_first_fit, 1, 333)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigPlanQuality, fits_frag_aware_sequential, 2, 333)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigPlanQuality, overload_planner_keep_idle, 0, 1000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigPlanQuality, overload_first_fit, 1, 1000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigPlanQuality, overload_frag_aware_sequential, 2, 1000)->Iterations(1)->Unit(benchmark::kMillisecond);

// Exhaustive optimum on small clusters (6 GPUs, all instances busy, demand <= 3 per profile):
// most compute slices served, then fewest GPUs touched, by dynamic programming over the GPUs with
// the served vector (capped by the demand) as state and every possible fill of each GPU as move.
Outcome exhaustive(const ClusterState& state, std::span<const MigDemandItem> demand) {
  const MigGpuSpec& spec = bench::mig_catalog().spec(bench::mig_a100());
  const std::size_t np = spec.profiles.size();
  std::array<int, kMaxProfiles> cap{};
  for (const auto& d : demand) cap[static_cast<std::size_t>(d.request.profile[bench::mig_a100()])] += static_cast<int>(d.count);
  auto encode = [&](const std::array<int, kMaxProfiles>& v) {
    std::uint64_t k = 0;
    for (std::size_t p = 0; p < np; ++p) k = k * 8 + static_cast<std::uint64_t>(v[p]);
    return k;
  };
  struct Entry {
    std::array<int, kMaxProfiles> v;
    int touched;
  };
  std::unordered_map<std::uint64_t, Entry> layer{{0, Entry{{}, 0}}};
  const MigGpuTable& st = state.mig().table();
  for (MigGpuId g = 0; g < st.gpu_count(); ++g) {
    // Every set of instances that can be added to this GPU, as counts.
    std::set<std::array<int, kMaxProfiles>> fills;
    Occupancy occ = st.occupancy(g);
    std::array<int, kMaxProfiles> added{};
    auto rec = [&](auto&& self, int min_start) -> void {
      fills.insert(added);
      for (int s = min_start; s < spec.memory_slots; ++s)
        for (std::size_t p = 0; p < np; ++p)
          if (added[p] < cap[p] && can_add(spec, occ, static_cast<int>(p), s)) {
            add_instance(spec, occ, static_cast<int>(p), s);
            ++added[p];
            self(self, s + 1);
            --added[p];
            remove_instance(spec, occ, static_cast<int>(p), s);
          }
    };
    rec(rec, 0);
    std::unordered_map<std::uint64_t, Entry> next;
    for (const auto& [key, e] : layer)
      for (const auto& f : fills) {
        Entry n = e;
        bool any = false;
        for (std::size_t p = 0; p < np; ++p) {
          n.v[p] = std::min(cap[p], e.v[p] + f[p]);
          any |= f[p] > 0;
        }
        n.touched += any ? 1 : 0;
        auto [it, ins] = next.try_emplace(encode(n.v), n);
        if (!ins && n.touched < it->second.touched) it->second = n;
      }
    layer = std::move(next);
  }
  Outcome best;
  bool have = false;
  for (const auto& [key, e] : layer) {
    Outcome o;
    for (std::size_t p = 0; p < np; ++p) {
      o.served += e.v[p];
      o.slices += e.v[p] * spec.profiles[p].compute_slices;
    }
    o.touched = e.touched;
    if (!have || o.slices > best.slices || (o.slices == best.slices && o.touched < best.touched)) best = o;
    have = true;
  }
  return best;
}

void BM_MigPlanSmallVsExhaustive(benchmark::State& state) {
  constexpr int kTrials = 100;
  Outcome ex, pl, ff;
  int plan_optimal = 0;
  for (auto _ : state) {
    ex = pl = ff = Outcome{};
    plan_optimal = 0;
    for (int t = 0; t < kTrials; ++t) {
      const ClusterState st = bench::mig_random_cluster(6, 100, 1000 + static_cast<std::uint64_t>(t));
      const auto demand = random_demand(3, 5000 + static_cast<std::uint64_t>(t));
      const Outcome e = exhaustive(st, demand);
      const Outcome p = of_plan(plan_repartition(st, demand), demand);
      const Outcome f = sequential(st, demand, FirstFitPlacer(MigMode::kDynamic));
      plan_optimal += (p.slices == e.slices && p.touched == e.touched) ? 1 : 0;
      for (auto [acc, o] : {std::pair{&ex, e}, std::pair{&pl, p}, std::pair{&ff, f}}) {
        acc->served += o.served;
        acc->slices += o.slices;
        acc->touched += o.touched;
      }
    }
  }
  state.counters["exhaustive_slices"] = static_cast<double>(ex.slices);
  state.counters["exhaustive_touched"] = static_cast<double>(ex.touched);
  state.counters["plan_slices"] = static_cast<double>(pl.slices);
  state.counters["plan_touched"] = static_cast<double>(pl.touched);
  state.counters["ff_slices"] = static_cast<double>(ff.slices);
  state.counters["ff_touched"] = static_cast<double>(ff.touched);
  state.counters["plan_optimal_pct"] = 100.0 * plan_optimal / kTrials;
}
BENCHMARK(BM_MigPlanSmallVsExhaustive)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
