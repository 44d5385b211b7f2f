#include "gpusched/sim/lp_bound.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <coin/ClpSimplex.hpp>
#include <fmt/format.h>

namespace gpusched::sim {
namespace {

struct Chunk {
  std::size_t item;    // index into demand
  std::int64_t copies; // how many pieces of that size this chunk stands for
};

// Bounded knapsack by 0/1 DP over binary-split chunks: maximise Σ value[i]·a_i subject to
// Σ size_i·a_i <= 1000 and a_i <= limit_i. Returns the best value and the multiplicities.
double price(const std::vector<ItemDemand>& demand, const std::vector<double>& value, std::vector<std::int64_t>& a) {
  constexpr int kCap = static_cast<int>(kMilliPerGpu);
  std::vector<Chunk> chunks;
  for (std::size_t i = 0; i < demand.size(); ++i) {
    if (value[i] <= 1e-12) continue;  // never worth taking
    std::int64_t limit = std::min<std::int64_t>(demand[i].count, kMilliPerGpu / demand[i].size);
    for (std::int64_t k = 1; limit > 0; k *= 2) {
      const std::int64_t c = std::min(k, limit);
      chunks.push_back({i, c});
      limit -= c;
    }
  }
  std::vector<double> best(kCap + 1, 0.0);
  std::vector<std::vector<bool>> keep(chunks.size(), std::vector<bool>(kCap + 1, false));
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto w = static_cast<int>(demand[chunks[c].item].size * chunks[c].copies);
    const double v = value[chunks[c].item] * static_cast<double>(chunks[c].copies);
    for (int cap = kCap; cap >= w; --cap)
      if (best[cap - w] + v > best[cap] + 1e-12) {
        best[cap] = best[cap - w] + v;
        keep[c][static_cast<std::size_t>(cap)] = true;
      }
  }
  a.assign(demand.size(), 0);
  int cap = kCap;
  for (std::size_t c = chunks.size(); c-- > 0;)
    if (keep[c][static_cast<std::size_t>(cap)]) {
      a[chunks[c].item] += chunks[c].copies;
      cap -= static_cast<int>(demand[chunks[c].item].size * chunks[c].copies);
    }
  return best[kCap];
}

// The demand with zero counts dropped, or an error naming the bad entry.
Result<std::vector<ItemDemand>> checked_demand(const std::vector<ItemDemand>& demand_in) {
  std::vector<ItemDemand> demand;
  for (const ItemDemand& d : demand_in) {
    if (d.size < 1 || d.size > kMilliPerGpu)
      return Error{fmt::format("demand size: expected 1..1000 milli, got {}", d.size)};
    if (d.count < 0) return Error{fmt::format("demand count of size {}: expected >= 0, got {}", d.size, d.count)};
    if (d.count > 0) demand.push_back(d);
  }
  return demand;
}

// Column generation, shared by both LPs: seed one single-size pattern per size (as many pieces as fit
// and exist), then alternate a CLP solve and pricing until `improving(duals, a)` finds no pattern a
// worth adding. Returns the number of solves.
template <class AddPattern, class Improving>
Result<int> generate_columns(ClpSimplex& lp, const std::vector<ItemDemand>& demand, AddPattern&& add_pattern,
                             Improving&& improving) {
  for (std::size_t i = 0; i < demand.size(); ++i) {
    std::vector<std::int64_t> a(demand.size(), 0);
    a[i] = std::min<std::int64_t>(demand[i].count, kMilliPerGpu / demand[i].size);
    add_pattern(a);
  }
  std::vector<std::int64_t> a;
  for (int it = 0; it < 1000; ++it) {
    if (it == 0)
      lp.dual();
    else
      lp.primal(1);
    if (lp.status() != 0) return Error{fmt::format("LP solver status {} (not optimal)", lp.status())};
    if (!improving(lp.dualRowSolution(), a)) return it + 1;
    add_pattern(a);
  }
  return 1000;
}

}  // namespace

Result<LpBound> cutting_stock_bound(const std::vector<ItemDemand>& demand_in, std::int64_t gpus) {
  if (gpus < 0) return Error{fmt::format("gpus: expected a non-negative count, got {}", gpus)};
  auto checked = checked_demand(demand_in);
  if (!checked) return checked.error();
  const std::vector<ItemDemand>& demand = *checked;
  LpBound out;
  if (demand.empty() || gpus == 0) return out;

  // Minimise -value so that CLP's duals have the textbook sign for a minimisation with <= rows.
  const int rows = static_cast<int>(demand.size()) + 1;  // sizes, then the GPU count
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.resize(rows, 0);
  for (int r = 0; r + 1 < rows; ++r) {
    lp.setRowLower(r, -COIN_DBL_MAX);
    lp.setRowUpper(r, static_cast<double>(demand[static_cast<std::size_t>(r)].count));
  }
  lp.setRowLower(rows - 1, -COIN_DBL_MAX);
  lp.setRowUpper(rows - 1, static_cast<double>(gpus));

  auto add_pattern = [&](const std::vector<std::int64_t>& a) {
    std::vector<int> idx;
    std::vector<double> el;
    double value = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] > 0) {
        idx.push_back(static_cast<int>(i));
        el.push_back(static_cast<double>(a[i]));
        value += static_cast<double>(a[i] * demand[i].size);
      }
    idx.push_back(rows - 1);
    el.push_back(1.0);
    lp.addColumn(static_cast<int>(idx.size()), idx.data(), el.data(), 0.0, COIN_DBL_MAX, -value);
    ++out.columns;
  };
  std::vector<double> value(demand.size());
  auto iterations = generate_columns(lp, demand, add_pattern, [&](const double* y, std::vector<std::int64_t>& a) {
    // Reduced cost of pattern a: -value(a) - Σ y_i a_i - y_G; improving when negative, i.e. when
    // Σ (size_i + y_i) a_i > -y_G.
    for (std::size_t i = 0; i < demand.size(); ++i) value[i] = static_cast<double>(demand[i].size) + y[i];
    return price(demand, value, a) > -y[rows - 1] + 1e-7;
  });
  if (!iterations) return iterations.error();
  out.iterations = *iterations;
  out.max_allocatable_milli = -lp.objectiveValue();
  return out;
}

Result<std::vector<SharePrice>> cutting_stock_prices(const std::vector<ItemDemand>& demand_in) {
  auto checked = checked_demand(demand_in);
  if (!checked) return checked.error();
  std::vector<ItemDemand> demand;
  for (const ItemDemand& d : *checked)
    if (d.size < kMilliPerGpu) demand.push_back(d);
  std::vector<SharePrice> out;
  if (demand.empty()) return out;

  const int rows = static_cast<int>(demand.size());
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.resize(rows, 0);
  for (int r = 0; r < rows; ++r) {
    lp.setRowLower(r, static_cast<double>(demand[static_cast<std::size_t>(r)].count));
    lp.setRowUpper(r, COIN_DBL_MAX);
  }
  auto add_pattern = [&](const std::vector<std::int64_t>& a) {
    std::vector<int> idx;
    std::vector<double> el;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] > 0) {
        idx.push_back(static_cast<int>(i));
        el.push_back(static_cast<double>(a[i]));
      }
    lp.addColumn(static_cast<int>(idx.size()), idx.data(), el.data(), 0.0, COIN_DBL_MAX, 1.0);
  };
  std::vector<double> pi(demand.size(), 0.0);
  auto solved = generate_columns(lp, demand, add_pattern, [&](const double* y, std::vector<std::int64_t>& a) {
    for (std::size_t i = 0; i < demand.size(); ++i) pi[i] = std::max(0.0, y[i]);
    // A pattern worth more than one GPU at these prices improves the LP.
    return price(demand, pi, a) > 1.0 + 1e-9;
  });
  if (!solved) return solved.error();
  for (std::size_t i = 0; i < demand.size(); ++i)
    out.push_back({demand[i].size, std::round(pi[i] * 1e9) / 1e9});
  return out;
}

}  // namespace gpusched::sim
