#include "gpusched/packing/trace_policies.hpp"

#include <algorithm>
#include <cctype>

#include "gpusched/packing/fgd.hpp"

namespace gpusched {
namespace {

// The paper's normalisation constants (open-gpu-share utils: MaxSpecCpu, MaxSpecGpu).
constexpr double kMaxSpecCpu = 128000.0;
constexpr double kMaxSpecGpu = 8000.0;
constexpr std::int64_t kMaxSpecGpuInt = 8000;
constexpr std::int64_t kMaxNodeScore = 100;

bool gpu_allowed(const ClusterState& s, NodeId n, std::size_t g, const TaskRequest& r) {
  const auto gi = static_cast<GpuIndex>(g);
  return (r.models & model_bit(s.gpu_model(n, gi))) && s.gpu_free_memory(n, gi) >= r.shape.gpu_memory;
}

}  // namespace

void TieBreak::reset(std::size_t node_count) {
  order_.resize(node_count);
  for (std::size_t i = 0; i < node_count; ++i) order_[i] = static_cast<NodeId>(i);
  SplitMix64 rng{seed_};
  // Fisher-Yates from the back.
  for (std::size_t i = node_count; i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  rank_.resize(node_count);
  for (std::size_t i = 0; i < node_count; ++i) rank_[order_[i]] = static_cast<std::uint32_t>(i);
}

// --- Random -----------------------------------------------------------------------------------------

PaperRandomPolicy::PaperRandomPolicy(std::uint64_t seed) : TracePolicy(seed), rng_{seed ^ 0x5DEECE66DULL} {}

void PaperRandomPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  rng_ = SplitMix64{seed() ^ 0x5DEECE66DULL};
}

NodeId PaperRandomPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return pick_random_fitting(state, request, rng_);
}

bool PaperRandomPolicy::Picker::pick(const ClusterState& state, NodeId node, const TaskRequest& request,
                                     TaskAssignment& out) const {
  out = make_assignment(node, request);
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return true;
  const auto free = state.gpu_free_milli(node);
  std::vector<GpuIndex> ok;
  for (std::size_t g = 0; g < free.size(); ++g) {
    const bool fits = shape.shares_gpu() ? free[g] >= shape.gpu_milli : free[g] == kMilliPerGpu;
    if (fits && gpu_allowed(state, node, g, request)) ok.push_back(static_cast<GpuIndex>(g));
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

NodeId DotProdPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  const double c = static_cast<double>(request.shape.cpu) / kMaxSpecCpu;
  const double g = static_cast<double>(request.shape.total_gpu_milli()) / kMaxSpecGpu;
  return select_max(state, request, [&](NodeId n) {
    const double dot = c * static_cast<double>(state.cpu_free(n)) / kMaxSpecCpu +
                       g * static_cast<double>(state.free_gpu_milli(n)) / kMaxSpecGpu;
    // The larger the dot product, the lower the score (the paper's plugin); clamp at 0 so an
    // over-sized node cannot produce a negative score, which select_max would read as "skip".
    return std::max<std::int64_t>(0, static_cast<std::int64_t>(kMaxNodeScore * (1.0 - dot / 2.0)));
  });
}

// --- GpuClustering ----------------------------------------------------------------------------------

std::uint8_t GpuClusteringPolicy::kind_bit(const TaskShape& shape) {
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

void GpuClusteringPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  kinds_.assign(state.node_count(), 0);
}

void GpuClusteringPolicy::observe(const ClusterState& state, const TaskRequest& request, const TaskAssignment& a) {
  if (kinds_.size() != state.node_count()) kinds_.assign(state.node_count(), 0);
  if (a.node < kinds_.size()) kinds_[a.node] |= kind_bit(request.shape);
}

NodeId GpuClusteringPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  const std::uint8_t kind = kind_bit(request.shape);
  return select_max(state, request, [&](NodeId n) -> std::int64_t {
    if (kind == 0) return 0;
    const std::uint8_t have = n < kinds_.size() ? kinds_[n] : 0;
    // Graded by the used share within each quarter: 25 * (8000 - free) / 8000, integer arithmetic.
    const std::int64_t grade = kMaxNodeScore / 4 * (kMaxSpecGpuInt - state.free_gpu_milli(n)) / kMaxSpecGpuInt;
    std::int64_t base = 0;
    if (have & kind)
      base = (have == kind) ? kMaxNodeScore * 3 / 4 : kMaxNodeScore * 2 / 4;
    else
      base = (have == 0) ? kMaxNodeScore / 4 : 0;
    return std::max<std::int64_t>(0, base + grade);
  });
}

// --- GpuPacking -------------------------------------------------------------------------------------

std::int64_t GpuPackingPolicy::score(const ClusterState& state, NodeId n, const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  if (!shape.needs_gpu()) return 0;
  const auto idle = static_cast<std::int64_t>(state.idle_gpus(n));
  const auto gpus = static_cast<std::int64_t>(state.gpu_count(n));
  if (idle == gpus) return std::max<std::int64_t>(kMaxNodeScore / 3 - idle, idle);
  // Take the GPUs with the least free share that fit, as the GPU step will.
  const auto free = state.gpu_free_milli(n);
  std::vector<std::pair<std::int32_t, std::size_t>> order;
  for (std::size_t g = 0; g < free.size(); ++g)
    if (free[g] >= shape.gpu_milli && gpu_allowed(state, n, g, request)) order.emplace_back(free[g], g);
  std::sort(order.begin(), order.end());
  if (order.size() < static_cast<std::size_t>(shape.gpus)) return -1;
  std::int64_t idle_used = 0, free_pct = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(shape.gpus); ++i) {
    if (order[i].first == kMilliPerGpu) ++idle_used;
    free_pct += order[i].first * 100 / kMilliPerGpu;
  }
  if (idle_used > 0) return std::max<std::int64_t>(kMaxNodeScore / 2 - idle_used, kMaxNodeScore / 3);
  return std::max<std::int64_t>(kMaxNodeScore - free_pct / 10, kMaxNodeScore / 2);
}

NodeId GpuPackingPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  return select_max(state, request, [&](NodeId n) { return score(state, n, request); });
}

// --- BestFit ----------------------------------------------------------------------------------------

NodeId PaperBestFitPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  struct Scored {
    NodeId node;
    std::int64_t raw;
  };
  std::vector<Scored> scored;
  const double c = static_cast<double>(request.shape.cpu);
  const double g = static_cast<double>(request.shape.total_gpu_milli());
  for_each_candidate(state, request, [&](NodeId n) {
    if (state.check_fit(n, request) != FitReason::kFits) return true;
    const double left = 0.5 * (static_cast<double>(state.cpu_free(n)) - c) / kMaxSpecCpu +
                        0.5 * (static_cast<double>(state.free_gpu_milli(n)) - g) / kMaxSpecGpu;
    scored.push_back({n, static_cast<std::int64_t>((1.0 - left) * static_cast<double>(kMaxNodeScore))});
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
    const std::int64_t v = hi == lo ? 0 : (s.raw - lo) * kMaxNodeScore / (hi - lo);
    const std::uint32_t r = t.rank(s.node);
    if (best == kNoNode || v > best_score || (v == best_score && r < best_rank)) {
      best = s.node;
      best_score = v;
      best_rank = r;
    }
  }
  return best;
}

// --- factory ----------------------------------------------------------------------------------------

std::vector<std::string_view> trace_policy_names() {
  return {"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "FGD-OC"};
}

namespace {
std::string canonical(std::string_view name) {
  std::string out;
  for (char ch : name)
    if (ch != '-' && ch != '_' && ch != ' ') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  return out;
}
}  // namespace

std::unique_ptr<TracePolicy> make_trace_policy(std::string_view name, std::uint64_t seed,
                                               const TargetWorkload& workload) {
  const std::string n = canonical(name);
  if (n == "random") return std::make_unique<PaperRandomPolicy>(seed);
  if (n == "dotprod" || n == "dotproduct") return std::make_unique<DotProdPolicy>(seed);
  if (n == "gpuclustering") return std::make_unique<GpuClusteringPolicy>(seed);
  if (n == "gpupacking") return std::make_unique<GpuPackingPolicy>(seed);
  if (n == "bestfit") return std::make_unique<PaperBestFitPolicy>(seed);
  if (n == "fgd") return std::make_unique<FgdPolicy>(workload, seed);
  if (n == "fgdoc") {
    FgdOptions o;
    o.name = "FGD-OC";
    o.packing_loss = o.cpu_stranding = o.model_scarcity = true;
    return std::make_unique<FgdPolicy>(workload, seed, o);
  }
  // Our variants (docs/bench-packing.md has their measured results): FGD-Pack breaks FGD's score
  // ties by the least GPU share left on the node; FGD-BF also replaces the truncated sigmoid by the
  // exact change of F; FGD-Bal breaks ties by keeping free CPU in proportion to free GPU share.
  if (n == "fgdpack" || n == "fgdbf" || n == "fgdbal") {
    FgdOptions o;
    o.name = n == "fgdpack" ? "FGD-Pack" : n == "fgdbf" ? "FGD-BF" : "FGD-Bal";
    o.tie_rule = n == "fgdbal" ? 2 : 1;
    o.integer_sigmoid_score = n != "fgdbf";
    return std::make_unique<FgdPolicy>(workload, seed, o);
  }
  return nullptr;
}

}  // namespace gpusched
