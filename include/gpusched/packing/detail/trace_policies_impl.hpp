// gpusched/packing/detail/trace_policies_impl.hpp — definitions of trace_policies.hpp (header-only).
//
// Included at the end of trace_policies.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header. `make_trace_policy` is defined
// with FGD (detail/fgd_impl.hpp), which it constructs.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/packing/trace_policies.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpusched {
namespace detail {

// The paper's normalisation constants (open-gpu-share utils: MaxSpecCpu, MaxSpecGpu).
inline constexpr double kTraceMaxSpecCpu = 128000.0;
inline constexpr double kTraceMaxSpecGpu = 8000.0;
inline constexpr std::int64_t kTraceMaxSpecGpuInt = 8000;
inline constexpr std::int64_t kTraceMaxNodeScore = 100;

GPUSCHED_DECL bool trace_gpu_allowed(const ClusterState& s, NodeId n, std::size_t g, const TaskRequest& r) {
  const auto gi = static_cast<GpuIndex>(g);
  return (r.models & model_bit(s.gpu_model(n, gi))) && s.shares().free_memory(n, gi) >= r.shape.gpu_memory;
}

}  // namespace detail

GPUSCHED_DECL void TieBreak::reset(std::size_t node_count) {
  order_.resize(node_count);
  for (std::size_t i = 0; i < node_count; ++i) order_[i] = static_cast<NodeId>(i);
  SplitMix64 rng{seed_};
  // Fisher-Yates from the back.
  for (std::size_t i = node_count; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  rank_.resize(node_count);
  for (std::size_t i = 0; i < node_count; ++i) rank_[order_[i]] = static_cast<std::uint32_t>(i);
}

// --- Random -----------------------------------------------------------------------------------------

GPUSCHED_CTOR_DECL PaperRandomPolicy::PaperRandomPolicy(std::uint64_t seed) : TracePolicy(seed), rng_{seed ^ 0x5DEECE66DULL} {}

GPUSCHED_DECL void PaperRandomPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  rng_ = SplitMix64{seed() ^ 0x5DEECE66DULL};
}

GPUSCHED_DECL NodeId PaperRandomPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return pick_random_fitting(state, request, rng_);
}

GPUSCHED_DECL bool PaperRandomPolicy::Picker::pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                                     TaskAssignment& out) const {
  out = make_assignment(node, request);
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return true;
  const auto free = state.shares().free_milli(node);
  std::vector<GpuIndex> ok;
  for (std::size_t g = 0; g < free.size(); ++g) {
    const bool fits = shape.shares_gpu() ? free[g] >= shape.gpu_milli : free[g] == kMilliPerGpu;
    if (fits && detail::trace_gpu_allowed(state, node, g, request)) ok.push_back(static_cast<GpuIndex>(g));
  }
  const auto want = static_cast<std::size_t>(shape.gpus);
  if (ok.size() < want) return false;
  // A uniformly random subset of `want` GPUs (partial Fisher-Yates), reported in index order.
  for (std::size_t i = 0; i < want; ++i) std::swap(ok[i], ok[i + rng_.below(ok.size() - i)]);
  out.gpus.assign(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(want));
  std::sort(out.gpus.begin(), out.gpus.end());
  return true;
}

// --- DotProd ----------------------------------------------------------------------------------------

GPUSCHED_DECL NodeId DotProdPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  const double c = static_cast<double>(request.shape.cpu) / detail::kTraceMaxSpecCpu;
  const double g = static_cast<double>(request.shape.total_gpu_milli()) / detail::kTraceMaxSpecGpu;
  return select_max(state, request, [&](NodeId n) {
    const double dot = c * static_cast<double>(state.cpu_free(n)) / detail::kTraceMaxSpecCpu +
                       g * static_cast<double>(state.shares().node_free_milli(n)) / detail::kTraceMaxSpecGpu;
    // The larger the dot product, the lower the score (the paper's plugin); clamp at 0 so an
    // over-sized node cannot produce a negative score, which select_max would read as "skip".
    return std::max<std::int64_t>(0, static_cast<std::int64_t>(detail::kTraceMaxNodeScore * (1.0 - dot / 2.0)));
  });
}

// --- GpuClustering ----------------------------------------------------------------------------------

GPUSCHED_DECL std::uint8_t GpuClusteringPolicy::kind_bit(const TaskShape& shape) {
  if (!shape.needs_gpu()) return 0;
  if (shape.shares_gpu()) return 1;
  switch (shape.gpus) {
    case 1: return 2;
    case 2: return 4;
    case 4: return 8;
    case 8: return 16;
    default: return 32;
  }
}

GPUSCHED_DECL void GpuClusteringPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  kinds_.assign(state.node_count(), 0);
}

GPUSCHED_DECL void GpuClusteringPolicy::observe(const ClusterState& state, const TaskRequest& request, const TaskAssignment& a) {
  // Nodes added since attach start with no history; the history of the others stays.
  if (kinds_.size() < state.node_count()) kinds_.resize(state.node_count(), 0);
  if (a.node < kinds_.size()) kinds_[a.node] |= kind_bit(request.shape);
}

GPUSCHED_DECL NodeId GpuClusteringPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  const std::uint8_t kind = kind_bit(request.shape);
  return select_max(state, request, [&](NodeId n) -> std::int64_t {
    if (kind == 0) return 0;
    const std::uint8_t have = n < kinds_.size() ? kinds_[n] : 0;
    // Graded by the used share within each quarter: 25 * (8000 - free) / 8000, integer arithmetic.
    const std::int64_t grade = detail::kTraceMaxNodeScore / 4 * (detail::kTraceMaxSpecGpuInt - state.shares().node_free_milli(n)) / detail::kTraceMaxSpecGpuInt;
    std::int64_t base = 0;
    if (have & kind)
      base = (have == kind) ? detail::kTraceMaxNodeScore * 3 / 4 : detail::kTraceMaxNodeScore * 2 / 4;
    else
      base = (have == 0) ? detail::kTraceMaxNodeScore / 4 : 0;
    return std::max<std::int64_t>(0, base + grade);
  });
}

// --- GpuPacking -------------------------------------------------------------------------------------

GPUSCHED_DECL std::int64_t GpuPackingPolicy::score(const ClusterState& state, NodeId n, const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return 0;
  const auto idle = static_cast<std::int64_t>(state.shares().idle_gpus(n));
  const auto gpus = static_cast<std::int64_t>(state.gpu_count(n));
  if (idle == gpus) return std::max<std::int64_t>(detail::kTraceMaxNodeScore / 3 - idle, idle);
  // Take the GPUs with the least free share that fit, as the GPU step will.
  const auto free = state.shares().free_milli(n);
  std::vector<std::pair<std::int32_t, std::size_t>> order;
  for (std::size_t g = 0; g < free.size(); ++g)
    if (free[g] >= shape.gpu_milli && detail::trace_gpu_allowed(state, n, g, request)) order.emplace_back(free[g], g);
  std::sort(order.begin(), order.end());
  if (order.size() < static_cast<std::size_t>(shape.gpus)) return -1;
  std::int64_t idle_used = 0, free_pct = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(shape.gpus); ++i) {
    if (order[i].first == kMilliPerGpu) ++idle_used;
    free_pct += order[i].first * 100 / kMilliPerGpu;
  }
  if (idle_used > 0) return std::max<std::int64_t>(detail::kTraceMaxNodeScore / 2 - idle_used, detail::kTraceMaxNodeScore / 3);
  return std::max<std::int64_t>(detail::kTraceMaxNodeScore - free_pct / 10, detail::kTraceMaxNodeScore / 2);
}

GPUSCHED_DECL NodeId GpuPackingPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return select_max(state, request, [&](NodeId n) { return score(state, n, request); });
}

// --- BestFit ----------------------------------------------------------------------------------------

GPUSCHED_DECL NodeId PaperBestFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  struct Scored {
    NodeId node;
    std::int64_t raw;
  };
  std::vector<Scored> scored;
  const double c = static_cast<double>(request.shape.cpu);
  const double g = static_cast<double>(request.shape.total_gpu_milli());
  for_each_candidate(state, request, [&](NodeId n) {
    if (state.check_fit(n, request) != FitReason::kFits) return true;
    const double left = 0.5 * (static_cast<double>(state.cpu_free(n)) - c) / detail::kTraceMaxSpecCpu +
                        0.5 * (static_cast<double>(state.shares().node_free_milli(n)) - g) / detail::kTraceMaxSpecGpu;
    scored.push_back({n, static_cast<std::int64_t>((1.0 - left) * static_cast<double>(detail::kTraceMaxNodeScore))});
    return true;
  });
  if (scored.empty()) return kNoNode;
  std::int64_t lo = scored[0].raw, hi = scored[0].raw;
  for (const auto& s : scored) {
    lo = std::min(lo, s.raw);
    hi = std::max(hi, s.raw);
  }
  const TieBreak& t = tie(state);
  NodeId best = kNoNode;
  std::int64_t best_score = 0;
  std::uint32_t best_rank = 0;
  for (const auto& s : scored) {
    const std::int64_t v = hi == lo ? 0 : (s.raw - lo) * detail::kTraceMaxNodeScore / (hi - lo);
    const std::uint32_t r = t.rank(s.node);
    if (best == kNoNode || v > best_score || (v == best_score && r < best_rank)) {
      best = s.node;
      best_score = v;
      best_rank = r;
    }
  }
  return best;
}

GPUSCHED_DECL std::vector<std::string_view> trace_policy_names() {
  return {"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "FGD-OC"};
}

}  // namespace gpusched
