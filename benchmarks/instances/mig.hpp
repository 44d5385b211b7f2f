// benchmarks/instances/mig.hpp — the MIG benchmarks' request mix and random cluster (mig_place.cpp,
// mig_plan.cpp), which scale_stack.cpp measures at 25,000-100,000 nodes.
#pragma once

#include <bit>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "bench_rng.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"

namespace gpusched::bench {

inline const mig::MigCatalog& mig_catalog() { return mig::MigCatalog::builtin(); }
inline mig::MigModelId mig_a100() { return *mig_catalog().find("A100-SXM4-40GB"); }

// The request mix (per mille): small inference slices dominate, whole GPUs are rare.
struct MigMixEntry {
  const char* name;
  int permille;
};
inline constexpr MigMixEntry kMigMix[] = {{"1g.5gb", 350}, {"1g.10gb", 100}, {"2g.10gb", 200},
                                          {"3g.20gb", 200}, {"4g.20gb", 80},  {"7g.40gb", 70}};

inline std::vector<mig::MigRequest> mig_mix_requests() {
  std::vector<mig::MigRequest> out;
  for (const auto& e : kMigMix) out.push_back(mig::MigRequest::from_name(mig_catalog(), e.name).value());
  return out;
}

// An index into kMigMix drawn with the mix's weights.
inline std::size_t draw_mig_request(SplitMix& rng) {
  std::uint64_t x = rng.below(1000);
  for (std::size_t i = 0; i < std::size(kMigMix); ++i) {
    if (x < static_cast<std::uint64_t>(kMigMix[i].permille)) return i;
    x -= static_cast<std::uint64_t>(kMigMix[i].permille);
  }
  return 0;
}

// The demand the packer is told: the mix itself (FGD assumes the workload distribution is known).
inline mig::MigDemand mig_mix_demand() {
  auto reqs = mig_mix_requests();
  std::vector<std::int64_t> counts;
  for (const auto& e : kMigMix) counts.push_back(e.permille);
  return mig::MigDemand::from_requests(mig_catalog(), reqs, counts);
}

// `gpus` A100-40GB GPUs, 8 per node: a third empty, the rest with 1-3 random instances, each busy with
// probability `busy_pct` % (the others idle: left over from finished work).
inline ClusterState mig_random_cluster(int gpus, int busy_pct, std::uint64_t seed) {
  using namespace gpusched::mig;
  SplitMix rng{seed};
  MigClusterBuilder b;
  const MigGpuSpec& spec = mig_catalog().spec(mig_a100());
  std::size_t node = 0;
  for (int g = 0; g < gpus; ++g) {
    if (g % 8 == 0) node = b.add_node("node-" + std::to_string(g / 8));
    Occupancy occ;
    std::vector<MigInstance> instances;
    bool busy[kMaxInstances] = {};
    if (rng.below(3) != 0) {
      for (int k = 1 + static_cast<int>(rng.below(3)); k > 0; --k) {
        const int p = static_cast<int>(rng.below(spec.profiles.size()));
        const SlotMask s = feasible_starts(spec, occ, p);
        if (!s) continue;
        const int start =
            nth_slot(s, static_cast<int>(rng.below(static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(s))))));
        add_instance(spec, occ, p, start);
        busy[instances.size()] = static_cast<int>(rng.below(100)) < busy_pct;
        instances.push_back({spec.profiles[static_cast<std::size_t>(p)].id, static_cast<std::uint8_t>(start)});
      }
    }
    b.add_gpu(node, mig_a100(), instances, std::span<const bool>(busy, instances.size()));
  }
  return b.build().value();
}

}  // namespace gpusched::bench
