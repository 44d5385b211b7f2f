// gpusched/sim/lp_bound.hpp — how much GPU share could ANY policy allocate? An LP upper bound.
//
// Given the GPU requests that have arrived (shared tasks of s < 1000 milli on one GPU, and whole
// GPUs), and a cluster of G GPUs of 1000 milli each, no placement can allocate more than the optimum
// of the cutting-stock LP (Gilmore & Gomory, 1961):
//
//   maximise   Σ_p value(p) · x_p                      value(p) = Σ_s s · a_sp (milli in pattern p)
//   subject to Σ_p a_sp · x_p <= d_s   for every size s (d_s = requests of size s; whole GPUs: s=1000)
//              Σ_p x_p        <= G
//              x_p >= 0
//
// where a pattern p is a multiset of sizes fitting one GPU (Σ_s s·a_sp <= 1000). It relaxes every
// constraint a real placement has besides the GPU share: node boundaries (multi-GPU tasks need their
// GPUs on one node), CPU and memory, GPU models, and integrality. So
//
//   unallocated % >= 100 · (G·1000 − LP optimum) / (G·1000)
//
// for every policy on those arrived pods. The LP has one column per pattern — too many to list — so
// it is solved by column generation: start from single-size patterns, solve the restricted LP with
// COIN-OR CLP (Debian's coinor-libclp), price a new pattern by a bounded knapsack over the duals
// (dynamic programming over 0..1000 milli), repeat until no pattern has positive reduced cost.
#pragma once

#include <cstdint>
#include <vector>

#include "gpusched/core/quantity.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/packing/fgd.hpp"

namespace gpusched::sim {

struct ItemDemand {
  MilliGpu size = 0;       // 1..1000 milli on one GPU
  std::int64_t count = 0;  // how many such pieces (a k-GPU task counts k pieces of 1000)
};

struct LpBound {
  double max_allocatable_milli = 0;  // the LP optimum (an upper bound on any placement)
  int iterations = 0;                // column-generation rounds
  std::size_t columns = 0;
};

// Fails on a size outside 1..1000, a negative count, or a solver failure.
Result<LpBound> cutting_stock_bound(const std::vector<ItemDemand>& demand, std::int64_t gpus);

// Prices of shared GPU sizes for FGD-OC (gpusched/packing/fgd.hpp): a dual solution of the other
// cutting-stock LP, the one that packs ALL the demand into as few GPUs as possible,
//
//   minimise Σ_p x_p   subject to   Σ_p a_sp · x_p >= d_s  for every size s,   x_p >= 0,
//
// whose dual gives each size a price π_s >= 0 with Σ_s a_sp π_s <= 1 for every pattern p: what an
// item is worth in GPUs. Solved by the same column generation. Prices are rounded to 1e-9 (they are
// small fractions such as 1/3 on the Alibaba trace); the LP is degenerate, so other optimal duals
// exist, and CLP's choice is what the policy sees. Sizes of 1000 are left out (a whole GPU is worth 1).
// Fails like cutting_stock_bound.
Result<std::vector<SharePrice>> cutting_stock_prices(const std::vector<ItemDemand>& demand);

}  // namespace gpusched::sim
