// MIG placement benchmarks (issue #4): decision latency on 1,000 nodes x 8 A100-40GB GPUs (target:
// <= 5 µs median), and quality on a synthetic stream of mixed MIG requests: requests served by
// first-fit on the lowest free slice, by the fragmentation-aware packer, and (small instances) the
// best possible in hindsight, found by exhaustive search.
#include <benchmark/benchmark.h>

#include "bench_rng.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"
#include "instances/mig.hpp"

using namespace gpusched::mig;
using gpusched::ClusterState;

namespace {

namespace bench = gpusched::bench;
using gpusched::bench::SplitMix;

// The one cluster state (MIG GPUs of gpusched/cluster/mig_gpus.hpp); a decision is applied as a
// ClusterState reservation and a departure as a release, as an orchestrator would.
ClusterState empty_cluster(int nodes, int gpus_per_node) {
  MigClusterBuilder b;
  for (int n = 0; n < nodes; ++n) {
    const auto node = b.add_node("node-" + std::to_string(n));
    for (int g = 0; g < gpus_per_node; ++g) b.add_gpu(node, bench::mig_a100());
  }
  return b.build().value();
}

// Applies a placed decision and forgets the journal (a stream never rolls back).
void apply_now(ClusterState& st, const MigDecision& d) {
  (void)apply_decision(st, d);
  st.commit();
}

void depart(ClusterState& st, MigGpuId gpu, int start) { (void)st.release(mig_instance_assignment(st, gpu, start, true)); }

struct Running {
  std::uint64_t end;
  MigGpuId gpu;
  int start;
  friend bool operator>(const Running& a, const Running& b) { return a.end > b.end; }
};

struct StreamResult {
  std::int64_t served = 0, refused = 0, served_slices = 0, offered_slices = 0;
};

// One arrival per tick; lifetimes uniform in [1, 2 * mean]; a finished instance is destroyed.
StreamResult run_stream(ClusterState& st, const MigPlacer& placer, std::int64_t arrivals, std::uint64_t mean_life,
                        std::uint64_t seed) {
  SplitMix rng{seed};
  const auto reqs = bench::mig_mix_requests();
  const MigGpuSpec& spec = bench::mig_catalog().spec(bench::mig_a100());
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  StreamResult r;
  for (std::int64_t t = 0; t < arrivals; ++t) {
    while (!running.empty() && running.top().end <= static_cast<std::uint64_t>(t)) {
      depart(st, running.top().gpu, running.top().start);
      running.pop();
    }
    const std::size_t k = bench::draw_mig_request(rng);
    const int slices = spec.profiles[static_cast<std::size_t>(reqs[k].profile[bench::mig_a100()])].compute_slices;
    r.offered_slices += slices;
    const MigDecision d = placer.decide(st, reqs[k]);
    const std::uint64_t life = 1 + rng.below(2 * mean_life);
    if (!d.placed()) {
      ++r.refused;
      continue;
    }
    apply_now(st, d);
    ++r.served;
    r.served_slices += slices;
    running.push({static_cast<std::uint64_t>(t) + life, d.gpu, d.start});
  }
  return r;
}

// A cluster in steady state under the stream, for latency measurements.
ClusterState warm_cluster(const MigPlacer& placer) {
  ClusterState st = empty_cluster(1000, 8);
  run_stream(st, placer, 40'000, 12'000, 7);
  return st;
}

void BM_MigDecide(benchmark::State& state, bool frag) {
  FragAwarePlacer packer(MigMode::kDynamic, bench::mig_mix_demand());
  FirstFitPlacer ff(MigMode::kDynamic);
  const MigPlacer& placer = frag ? static_cast<const MigPlacer&>(packer) : ff;
  ClusterState st = warm_cluster(placer);
  const auto reqs = bench::mig_mix_requests();
  SplitMix rng{99};
  std::vector<std::size_t> seq(4096);
  for (auto& k : seq) k = bench::draw_mig_request(rng);
  std::size_t i = 0;
  for (auto _ : state) {
    MigDecision d = placer.decide(st, reqs[seq[i++ & 4095]]);
    benchmark::DoNotOptimize(d);
  }
  state.counters["gpus"] = static_cast<double>(st.mig().table().gpu_count());
  state.counters["live_classes"] = static_cast<double>(st.mig().table().live_classes().size());
}
BENCHMARK_CAPTURE(BM_MigDecide, frag_aware, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MigDecide, first_fit, false)->Unit(benchmark::kMicrosecond);

// Decide + apply + a departure: one arrival of the stream in steady state (memo misses included).
void BM_MigDecideApplyRelease(benchmark::State& state) {
  FragAwarePlacer packer(MigMode::kDynamic, bench::mig_mix_demand());
  ClusterState st = warm_cluster(packer);
  const auto reqs = bench::mig_mix_requests();
  SplitMix rng{123};
  std::vector<std::pair<MigGpuId, int>> placed;
  for (auto _ : state) {
    MigDecision d = packer.decide(st, reqs[bench::draw_mig_request(rng)]);
    if (d.placed()) {
      apply_now(st, d);
      placed.emplace_back(d.gpu, d.start);
    }
    if (!placed.empty()) {
      const std::size_t j = rng.below(placed.size());
      depart(st, placed[j].first, placed[j].second);
      placed[j] = placed.back();
      placed.pop_back();
    }
  }
}
BENCHMARK(BM_MigDecideApplyRelease)->Unit(benchmark::kMicrosecond);

// Quality on 1,000 nodes x 8 GPUs: 200,000 arrivals, mean lifetime chosen so that demand exceeds
// capacity about 1.3x (the interesting regime: someone must be refused).
void BM_MigStreamQuality(benchmark::State& state, bool frag) {
  StreamResult r;
  for (auto _ : state) {
    FragAwarePlacer packer(MigMode::kDynamic, bench::mig_mix_demand());
    FirstFitPlacer ff(MigMode::kDynamic);
    ClusterState st = empty_cluster(1000, 8);
    r = run_stream(st, frag ? static_cast<const MigPlacer&>(packer) : ff, 200'000, 24'000, 2024);
  }
  state.counters["served"] = static_cast<double>(r.served);
  state.counters["refused"] = static_cast<double>(r.refused);
  state.counters["served_slice_pct"] = 100.0 * static_cast<double>(r.served_slices) / static_cast<double>(r.offered_slices);
}
BENCHMARK_CAPTURE(BM_MigStreamQuality, frag_aware, true)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MigStreamQuality, first_fit, false)->Iterations(1)->Unit(benchmark::kMillisecond);

// Small instances: 2 GPUs, 10 arrivals, no departures. Without departures the best any policy can
// do in hindsight is the largest sub-multiset of the requests that fits in two valid layouts; it is
// found exhaustively from every valid layout's profile counts.
std::vector<std::array<std::uint8_t, kMaxProfiles>> all_layout_counts(const MigGpuSpec& spec) {
  std::set<std::array<std::uint8_t, kMaxProfiles>> out;
  Occupancy occ;
  auto rec = [&](auto&& self, int min_start) -> void {
    out.insert(occ.per_profile);
    for (int s = min_start; s < spec.memory_slots; ++s)
      for (std::size_t p = 0; p < spec.profiles.size(); ++p)
        if (can_add(spec, occ, static_cast<int>(p), s)) {
          add_instance(spec, occ, static_cast<int>(p), s);
          self(self, s + 1);
          remove_instance(spec, occ, static_cast<int>(p), s);
        }
  };
  rec(rec, 0);
  return {out.begin(), out.end()};
}

// The best an online placer can do on these sequences: one that places every request it can (as both
// placers here do) and sees only the past, told the mix and that 10 requests come in all. Exact
// expectimax over the two GPUs' occupancies and the arrivals left (a few 100,000 states); the
// decision it takes for a request is the move of highest expected final count. Its total on the
// 300 sequences is the online optimum; the offline optimum (above) also sees the future and may
// refuse.
class OnlineOptimum {
 public:
  OnlineOptimum(const MigGpuSpec& spec, std::span<const int> profiles, std::span<const double> probs)
      : spec_(spec), profiles_(profiles.begin(), profiles.end()), probs_(probs.begin(), probs.end()) {}

  // Places `profile` with `left` arrivals after it; false when no GPU can take it.
  bool place(std::array<Occupancy, 2>& gpus, int profile, int left) {
    int best_gpu = -1, best_start = -1;
    double best = -1;
    for (int g = 0; g < 2; ++g)
      for (SlotMask s = feasible_starts(spec_, gpus[g], profile); s; s = static_cast<SlotMask>(s & (s - 1))) {
        std::array<Occupancy, 2> next = gpus;
        add_instance(spec_, next[g], profile, std::countr_zero(static_cast<unsigned>(s)));
        const double v = value(next, left);
        if (v > best + 1e-12) best = v, best_gpu = g, best_start = std::countr_zero(static_cast<unsigned>(s));
      }
    if (best_gpu < 0) return false;
    add_instance(spec_, gpus[best_gpu], profile, best_start);
    return true;
  }

 private:
  static std::string key(const Occupancy& o) { return std::string(reinterpret_cast<const char*>(&o.used), sizeof(o.used)) +
                                                      std::string(o.per_profile.begin(), o.per_profile.end()); }
  // Expected requests served from here on, `left` arrivals to come, placing each optimally.
  double value(const std::array<Occupancy, 2>& gpus, int left) {
    if (left == 0) return 0;
    std::string a = key(gpus[0]), b = key(gpus[1]);
    if (b < a) std::swap(a, b);  // the two GPUs are alike
    const std::string k = std::to_string(left) + a + b;
    if (auto it = memo_.find(k); it != memo_.end()) return it->second;
    double e = 0;
    for (std::size_t i = 0; i < profiles_.size(); ++i) {
      double best = -1;
      for (int g = 0; g < 2; ++g)
        for (SlotMask s = feasible_starts(spec_, gpus[g], profiles_[i]); s; s = static_cast<SlotMask>(s & (s - 1))) {
          std::array<Occupancy, 2> next = gpus;
          add_instance(spec_, next[g], profiles_[i], std::countr_zero(static_cast<unsigned>(s)));
          best = std::max(best, 1 + value(next, left - 1));
        }
      e += probs_[i] * (best < 0 ? value(gpus, left - 1) : best);
    }
    return memo_[k] = e;
  }

  const MigGpuSpec& spec_;
  std::vector<int> profiles_;
  std::vector<double> probs_;
  std::map<std::string, double> memo_;
};

void BM_MigSmallVsExhaustive(benchmark::State& state) {
  const MigGpuSpec& spec = bench::mig_catalog().spec(bench::mig_a100());
  const auto counts = all_layout_counts(spec);
  const auto reqs = bench::mig_mix_requests();
  std::int64_t best_total = 0, frag_total = 0, ff_total = 0, frag_opt = 0, ff_opt = 0;
  std::int64_t best_slices = 0, frag_slices = 0, ff_slices = 0;
  std::int64_t online_total = 0, online_below_ff = 0, frag_below_ff = 0;
  std::vector<int> mix_profiles;
  std::vector<double> mix_probs;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    mix_profiles.push_back(reqs[i].profile[bench::mig_a100()]);
    mix_probs.push_back(bench::kMigMix[i].permille / 1000.0);
  }
  OnlineOptimum online(spec, mix_profiles, mix_probs);
  constexpr int kTrials = 300;
  for (auto _ : state) {
    best_total = frag_total = ff_total = frag_opt = ff_opt = 0;
    best_slices = frag_slices = ff_slices = 0;
    online_total = online_below_ff = frag_below_ff = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      SplitMix rng{static_cast<std::uint64_t>(trial) + 1};
      std::vector<std::size_t> seq(10);
      std::array<int, kMaxProfiles> want{};
      for (auto& k : seq) {
        k = bench::draw_mig_request(rng);
        ++want[static_cast<std::size_t>(reqs[k].profile[bench::mig_a100()])];
      }
      // Two optima: most requests, and most compute slices (they differ: big profiles).
      std::int64_t best = 0, best_sl = 0;
      for (const auto& c1 : counts)
        for (const auto& c2 : counts) {
          std::int64_t v = 0, sl = 0;
          for (std::size_t p = 0; p < spec.profiles.size(); ++p) {
            const std::int64_t n = std::min<std::int64_t>(want[p], c1[p] + c2[p]);
            v += n;
            sl += n * spec.profiles[p].compute_slices;
          }
          best = std::max(best, v);
          best_sl = std::max(best_sl, sl);
        }
      auto served_by = [&](const MigPlacer& placer, std::int64_t& slices) {
        ClusterState st = empty_cluster(1, 2);
        std::int64_t s = 0;
        for (std::size_t k : seq) {
          MigDecision d = placer.decide(st, reqs[k]);
          if (d.placed()) {
            apply_now(st, d);
            ++s;
            slices += spec.profiles[static_cast<std::size_t>(d.profile)].compute_slices;
          }
        }
        return s;
      };
      const std::int64_t f = served_by(FragAwarePlacer(MigMode::kDynamic, bench::mig_mix_demand()), frag_slices);
      const std::int64_t g = served_by(FirstFitPlacer(MigMode::kDynamic), ff_slices);
      std::int64_t o = 0;
      std::array<Occupancy, 2> gpus{};
      for (std::size_t j = 0; j < seq.size(); ++j)
        o += online.place(gpus, mix_profiles[seq[j]], static_cast<int>(seq.size() - j - 1)) ? 1 : 0;
      online_total += o;
      online_below_ff += o < g;
      frag_below_ff += f < g;
      best_slices += best_sl;
      best_total += best;
      frag_total += f;
      ff_total += g;
      frag_opt += f == best;
      ff_opt += g == best;
    }
  }
  state.counters["exhaustive_served"] = static_cast<double>(best_total);
  state.counters["frag_served"] = static_cast<double>(frag_total);
  state.counters["ff_served"] = static_cast<double>(ff_total);
  state.counters["online_optimum_served"] = static_cast<double>(online_total);
  state.counters["online_optimum_cases_below_ff"] = static_cast<double>(online_below_ff);
  state.counters["frag_cases_below_ff"] = static_cast<double>(frag_below_ff);
  state.counters["frag_optimal_pct"] = 100.0 * static_cast<double>(frag_opt) / kTrials;
  state.counters["ff_optimal_pct"] = 100.0 * static_cast<double>(ff_opt) / kTrials;
  state.counters["exhaustive_slices"] = static_cast<double>(best_slices);
  state.counters["frag_slices"] = static_cast<double>(frag_slices);
  state.counters["ff_slices"] = static_cast<double>(ff_slices);
}
BENCHMARK(BM_MigSmallVsExhaustive)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
