// gpusched/packing/detail/fgd_impl.hpp — definitions of fgd.hpp (header-only).
//
// Included at the end of fgd.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header. Helpers are in gpusched::detail, named Fgd*/fgd_*.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/packing/fgd.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace gpusched {
namespace detail {

struct FgdSlot {
  std::int32_t free;
  GpuModelId model;
  friend bool operator<(const FgdSlot& a, const FgdSlot& b) {
    return a.free != b.free ? a.free < b.free : a.model < b.model;
  }
  friend bool operator==(const FgdSlot& a, const FgdSlot& b) { return a.free == b.free && a.model == b.model; }
};

// F over explicit slots. The per-shape sums are integers and the shapes are visited in a fixed
// order, so equal multisets of slots give bit-identical doubles whatever the slot order: the cached
// (sorted) and the direct (index order) evaluations agree exactly.
GPUSCHED_DECL double fgd_fragment_of_slots(MilliCpu cpu_free, std::span<const FgdSlot> slots, const TargetWorkload& w) {
  std::int64_t total = 0;
  for (const FgdSlot& s : slots) total += s.free;
  if (total == 0) return 0.0;
  double f = 0.0;
  for (const TargetShape& m : w.shapes) {
    if (m.gpus == 0 || cpu_free < m.cpu) {
      f += m.weight * static_cast<double>(total);
      continue;
    }
    std::int32_t usable = 0;
    std::int64_t small = 0;
    bool any_allowed = false;
    for (const FgdSlot& s : slots) {
      if (!(m.models & model_bit(s.model))) {
        small += s.free;
        continue;
      }
      any_allowed = true;
      if (s.free >= m.gpu_milli)
        ++usable;
      else
        small += s.free;
    }
    f += m.weight * static_cast<double>((!any_allowed || usable < m.gpus) ? total : small);
  }
  return f;
}


// A node's GPUs as levels: `count` GPUs of one model with one free share, sorted by (free, model).
// F depends only on the multiset of (free, model), so a node of G GPUs is described (and scored) by
// its distinct levels, not its GPUs: a huge node of 65,535 GPUs being filled has a handful.
struct FgdLevel {
  std::int32_t free;
  GpuModelId model;
  std::uint32_t count;
};

// Run-length levels of sorted slots.
GPUSCHED_DECL void fgd_levels_of_sorted(std::span<const FgdSlot> sorted, std::vector<FgdLevel>& out) {
  out.clear();
  for (const FgdSlot& sl : sorted) {
    if (!out.empty() && out.back().free == sl.free && out.back().model == sl.model)
      ++out.back().count;
    else
      out.push_back({sl.free, sl.model, 1});
  }
}

// The integer sums F is made of (fgd_fragment_of_slots), per target shape, over a multiset of slots.
struct FgdSums {
  std::int64_t total = 0;
  std::vector<std::int64_t> usable, small, allowed;  // by shape: slots with share >= the shape's, the
                                                     // share of the others, slots of an allowed model
};

GPUSCHED_DECL void fgd_sums_of(std::span<const FgdLevel> levels, const TargetWorkload& w, FgdSums& s) {
  const std::size_t n = w.shapes.size();
  s.total = 0;
  s.usable.assign(n, 0);
  s.small.assign(n, 0);
  s.allowed.assign(n, 0);
  for (const FgdLevel& lv : levels) s.total += std::int64_t{lv.free} * lv.count;
  for (std::size_t k = 0; k < n; ++k) {
    const TargetShape& m = w.shapes[k];
    for (const FgdLevel& lv : levels) {
      const std::int64_t share = std::int64_t{lv.free} * lv.count;
      if (!(m.models & model_bit(lv.model))) {
        s.small[k] += share;
        continue;
      }
      s.allowed[k] += lv.count;
      if (lv.free >= m.gpu_milli)
        s.usable[k] += lv.count;
      else
        s.small[k] += share;
    }
  }
}

// `count` GPUs of `model` whose free share goes from `from` to `to`.
struct FgdMove {
  std::int32_t from, to;
  GpuModelId model;
  std::int64_t count;
};

// F of the sums after `moves`, in O(shapes x moves). The integers are exactly those
// fgd_fragment_of_slots computes on the changed slots, and the shapes are visited in the same order,
// so the double is bit-identical to it.
GPUSCHED_DECL double fgd_fragment_of_sums(MilliCpu cpu_free, const FgdSums& s, const TargetWorkload& w,
                                   std::span<const FgdMove> moves) {
  std::int64_t total = s.total;
  for (const FgdMove& mv : moves) total += (std::int64_t{mv.to} - mv.from) * mv.count;
  if (total == 0) return 0.0;
  double f = 0.0;
  for (std::size_t k = 0; k < w.shapes.size(); ++k) {
    const TargetShape& m = w.shapes[k];
    if (m.gpus == 0 || cpu_free < m.cpu) {
      f += m.weight * static_cast<double>(total);
      continue;
    }
    std::int64_t usable = s.usable[k], small = s.small[k];
    for (const FgdMove& mv : moves) {
      if (!(m.models & model_bit(mv.model))) {
        small += (std::int64_t{mv.to} - mv.from) * mv.count;
        continue;
      }
      const bool to_usable = mv.to >= m.gpu_milli, from_usable = mv.from >= m.gpu_milli;
      usable += (std::int64_t{to_usable} - std::int64_t{from_usable}) * mv.count;
      small += (std::int64_t{to_usable ? 0 : mv.to} - std::int64_t{from_usable ? 0 : mv.from}) * mv.count;
    }
    f += m.weight * static_cast<double>((s.allowed[k] == 0 || usable < m.gpus) ? total : small);
  }
  return f;
}


// FGD-OC's opportunity costs (fgd.hpp). All tables are built once; evaluation only looks them up.
struct FgdCosts {
  // A GPU that loses packing value is charged 100 milli-GPU per milli of value lost: in practice,
  // every GPU that keeps an optimal pattern beats every GPU that does not.
  static constexpr double kPackingLossWeight = 100.0;

  bool packing = false, stranding = false, scarcity = false;
  std::vector<double> value;      // π(s), s = 0..1000: the price of the largest priced size <= s
  std::vector<double> best_fill;  // K(h), h = 0..1000: the most a free share h can still hold
  double cpu_per_gpu_milli = 0;
  std::vector<double> kappa = std::vector<double>(256, 0.0);  // by GpuModelId
  // The state and layout kappa was computed for: supply changes only with events (node added or
  // removed, cordon, failure, GPU health), so an allocation never makes it stale.
  std::uint64_t prepared_instance = 0;
  std::uint64_t prepared_layout = 0;

  bool prepared_for(const ClusterState& state) const {
    return prepared_instance == state.instance_id() && prepared_layout == state.layout_generation();
  }

  FgdCosts(const FgdOptions& o, const TargetWorkload& w, double cpu_per_gpu)
      : packing(o.packing_loss && !w.share_prices.empty()), stranding(o.cpu_stranding && cpu_per_gpu > 0),
        scarcity(o.model_scarcity), cpu_per_gpu_milli(cpu_per_gpu) {
    if (!packing) return;
    constexpr auto kCap = static_cast<std::size_t>(kMilliPerGpu);
    value.assign(kCap + 1, 0.0);
    for (const SharePrice& p : w.share_prices)
      if (p.size > 0 && p.size <= kMilliPerGpu) value[static_cast<std::size_t>(p.size)] = std::max(value[static_cast<std::size_t>(p.size)], p.price);
    // Monotone closure: a larger item can always stand in for a smaller one, so it is worth at least as
    // much; sizes the LP never saw get the price of the next smaller priced size.
    for (std::size_t i = 1; i <= kCap; ++i) value[i] = std::max(value[i], value[i - 1]);
    value[kCap] = std::max(value[kCap], 1.0);
    std::vector<std::size_t> sizes;
    for (const SharePrice& p : w.share_prices)
      if (p.size > 0 && p.size < kMilliPerGpu) sizes.push_back(static_cast<std::size_t>(p.size));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    best_fill.assign(kCap + 1, 0.0);
    for (std::size_t h = 1; h <= kCap; ++h) {
      best_fill[h] = best_fill[h - 1];
      for (std::size_t sz : sizes)
        if (sz <= h) best_fill[h] = std::max(best_fill[h], best_fill[h - sz] + value[sz]);
      if (h == kCap) best_fill[h] = std::max(best_fill[h], 1.0);
    }
  }

  double loss(std::int32_t free, MilliGpu share) const {
    if (!packing || share <= 0 || free < share || free > kMilliPerGpu) return 0.0;
    const auto h = static_cast<std::size_t>(free), sz = static_cast<std::size_t>(share);
    return std::max(0.0, best_fill[h] - value[sz] - best_fill[h - sz]);
  }

  // GPU share beyond what the free CPU can serve at c CPU milli per GPU milli (c > 0).
  static double stranded(double cpu_free, double gpu_free, double c) { return std::max(0.0, gpu_free - cpu_free / c); }

  // κ from the cluster's GPU supply by model and the restricted demand (fgd.hpp, term 3).
  void prepare(const ClusterState& state, const TargetWorkload& w) {
    prepared_instance = state.instance_id();
    prepared_layout = state.layout_generation();
    std::fill(kappa.begin(), kappa.end(), 0.0);
    if (!scarcity || w.gpu_demand <= 0) return;
    std::vector<double> supply(256, 0.0);
    GpuModelMask present = 0;
    for (NodeId n = 0; n < state.node_count(); ++n) {
      if (!state.eligible(n)) continue;
      for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
        const auto gi = static_cast<GpuIndex>(g);
        if (!state.gpu_healthy(n, gi)) continue;
        supply[state.gpu_model(n, gi)] += static_cast<double>(kMilliPerGpu);
        present |= model_bit(state.gpu_model(n, gi));
      }
    }
    std::vector<double> restricted(256, 0.0);
    for (const auto& [mask, demand] : w.gpu_demand_by_mask) {
      if ((mask & present) == present) continue;  // may use every model here: not restricted
      double allowed = 0;
      for (std::size_t m = 0; m < 64; ++m)
        if (mask & model_bit(static_cast<GpuModelId>(m))) allowed += supply[m];
      if (allowed <= 0) continue;
      for (std::size_t m = 0; m < 64; ++m)
        if (mask & model_bit(static_cast<GpuModelId>(m))) restricted[m] += static_cast<double>(demand) * supply[m] / allowed;
    }
    // Scale the list's demand to arrivals equal to the cluster's capacity.
    const double scale = static_cast<double>(state.shares().total_capacity()) / static_cast<double>(w.gpu_demand);
    for (std::size_t m = 0; m < 64; ++m)
      if (supply[m] > 0) kappa[m] = std::min(1.0, restricted[m] * scale / supply[m]);
  }
};


struct FgdEvaluation {
  bool fits = false;
  double before = 0, after = 0;
  double cost = 0;  // FGD-OC's opportunity cost (milli-GPU)
  int slot = -1;    // shared: the chosen slot
};

// A GPU level a shared task may take, and the GPU reported for it (the first such GPU in the order
// the caller scans: index order on a state, level order in a class).
struct FgdCandidate {
  std::size_t level;
  int slot;
};

// Evaluates a task on a node given as levels (with their sums) whose host fit (CPU, memory, selector)
// was already checked. A shared task: `shared` lists the levels it may take, in the caller's order;
// the least F after (plus FGD-OC's cost) wins, ties to the smaller free share, then the earlier
// candidate. Whole GPUs: `taken` are the idle GPUs it takes (by model, in the caller's order), and
// `whole_fits` says whether there were enough. `costs` (FGD-OC) may be null: plain FGD.
//
// Every GPU of one level gives the same F after and cost, so this is what evaluating every GPU gives
// (the first GPU of the best level is the first best GPU), in O(levels x shapes) per candidate.
GPUSCHED_DECL FgdEvaluation fgd_evaluate_levels(MilliCpu cpu_free, std::span<const FgdLevel> levels, const FgdSums& sums,
                                         const TaskRequest& r, const TargetWorkload& w, const FgdCosts* costs,
                                         std::span<const FgdCandidate> shared, std::span<const FgdMove> taken,
                                         bool whole_fits) {
  FgdEvaluation e;
  const TaskShape& shape = r.shape;
  e.before = fgd_fragment_of_sums(cpu_free, sums, w, {});
  const MilliCpu cpu_after = cpu_free - shape.cpu;
  // Terms that depend on the node, not on the GPU: CPU stranding.
  double node_cost = 0;
  if (costs && costs->stranding) {
    const double c = costs->cpu_per_gpu_milli;
    node_cost = FgdCosts::stranded(static_cast<double>(cpu_after), static_cast<double>(sums.total - shape.total_gpu_milli()), c) -
                FgdCosts::stranded(static_cast<double>(cpu_free), static_cast<double>(sums.total), c);
  }
  auto scarcity = [&](GpuModelId model, MilliGpu milli) {
    return costs && costs->scarcity ? costs->kappa[model] * static_cast<double>(milli) : 0.0;
  };
  if (!shape.needs_gpu()) {
    e.fits = true;
    e.after = fgd_fragment_of_sums(cpu_after, sums, w, {});
    e.cost = node_cost;
    return e;
  }
  if (shape.shares_gpu()) {
    double best_total = 0;
    std::int32_t best_free = 0;
    for (const FgdCandidate& cand : shared) {
      const FgdLevel& lv = levels[cand.level];
      const double cost = node_cost + scarcity(lv.model, shape.gpu_milli) +
                          (costs ? FgdCosts::kPackingLossWeight * static_cast<double>(kMilliPerGpu) *
                                       costs->loss(lv.free, shape.gpu_milli)
                                 : 0.0);
      const FgdMove mv{lv.free, static_cast<std::int32_t>(lv.free - shape.gpu_milli), lv.model, 1};
      const double after = fgd_fragment_of_sums(cpu_after, sums, w, {&mv, 1});
      const double total = after + cost;
      if (!e.fits || total < best_total || (total == best_total && lv.free < best_free)) {
        e.fits = true;
        e.after = after;
        e.cost = cost;
        e.slot = cand.slot;
        best_total = total;
        best_free = lv.free;
      }
    }
    return e;
  }
  // Whole GPUs: which idle GPUs does not change F.
  if (!whole_fits) return e;
  e.cost = node_cost;
  for (const FgdMove& mv : taken)
    for (std::int64_t k = 0; k < mv.count; ++k) e.cost += scarcity(mv.model, kMilliPerGpu);
  e.after = fgd_fragment_of_sums(cpu_after, sums, w, taken);
  e.fits = true;
  return e;
}

// A class's evaluation: every GPU of a level is usable when its model is allowed; whole GPUs take
// the idle levels in (model) order.
GPUSCHED_DECL FgdEvaluation fgd_evaluate_class(MilliCpu cpu_free, std::span<const FgdLevel> levels, const TaskRequest& r,
                                        const TargetWorkload& w, const FgdCosts* costs, FgdSums& sums,
                                        std::vector<FgdCandidate>& shared, std::vector<FgdMove>& taken) {
  fgd_sums_of(levels, w, sums);
  shared.clear();
  taken.clear();
  const TaskShape& shape = r.shape;
  bool whole_fits = false;
  if (shape.shares_gpu()) {
    for (std::size_t i = 0; i < levels.size(); ++i)
      if (levels[i].free >= shape.gpu_milli && (r.models & model_bit(levels[i].model)))
        shared.push_back({i, static_cast<int>(i)});
  } else if (shape.needs_gpu()) {
    std::int64_t need = shape.gpus;
    for (const FgdLevel& lv : levels) {
      if (need == 0) break;
      if (lv.free != kMilliPerGpu || !(r.models & model_bit(lv.model))) continue;
      const std::int64_t k = std::min<std::int64_t>(need, lv.count);
      taken.push_back({lv.free, 0, lv.model, k});
      need -= k;
    }
    whole_fits = need == 0;
  }
  return fgd_evaluate_levels(cpu_free, levels, sums, r, w, costs, shared, taken, whole_fits);
}

GPUSCHED_DECL std::int64_t fgd_exact_score(double before, double after) { return std::llround((before - after) * 1e6); }

struct FgdTaskKey {
  MilliCpu cpu;
  Bytes memory;
  GpuCount gpus;
  MilliGpu milli;
  GpuModelMask models;
  friend bool operator<(const FgdTaskKey& a, const FgdTaskKey& b) {
    return std::tie(a.cpu, a.memory, a.gpus, a.milli, a.models) <
           std::tie(b.cpu, b.memory, b.gpus, b.milli, b.models);
  }
};

// The picker: the GPU with the least F after (see evaluate), or the lowest-index idle GPUs.
class FgdGpuPicker final : public GpuPicker {
 public:
  explicit FgdGpuPicker(const FgdPolicy& policy) : policy_(policy) {}
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override {
    if (!request.shape.shares_gpu()) return LowestIndexGpuPicker{}.pick(state, node, request, out);
    const FgdPolicy::NodeChoice c = policy_.evaluate(state, node, request);
    if (!c.fits || c.gpu < 0) return false;
    out = make_assignment(node, request);
    out.gpus.push_back(static_cast<GpuIndex>(c.gpu));
    return true;
  }

 private:
  const FgdPolicy& policy_;
};

}  // namespace detail

// --- the target workload ----------------------------------------------------------------------------

GPUSCHED_DECL TargetWorkload TargetWorkload::from_requests(std::span<const TaskRequest> requests, double coverage) {
  std::map<std::tuple<GpuCount, MilliGpu, MilliCpu, GpuModelMask>, std::int64_t> counts;
  std::map<GpuModelMask, std::int64_t> by_mask;
  std::int64_t gpu_demand = 0;
  for (const TaskRequest& r : requests) {
    const bool gpu = r.shape.needs_gpu();
    ++counts[{gpu ? r.shape.gpus : 0, gpu ? r.shape.gpu_milli : 0, r.shape.cpu, gpu ? r.models : kAnyGpuModel}];
    if (gpu) {
      by_mask[r.models] += r.shape.total_gpu_milli();
      gpu_demand += r.shape.total_gpu_milli();
    }
  }
  std::vector<TargetShape> all;
  for (const auto& [k, n] : counts) {
    TargetShape s;
    std::tie(s.gpus, s.gpu_milli, s.cpu, s.models) = k;
    s.count = n;
    all.push_back(s);
  }
  // Most frequent first; the map order (gpus, milli, cpu, models) breaks ties (stable sort).
  std::stable_sort(all.begin(), all.end(), [](const TargetShape& a, const TargetShape& b) { return a.count > b.count; });
  const double total = static_cast<double>(requests.size());
  TargetWorkload w;
  w.gpu_demand = gpu_demand;
  w.gpu_demand_by_mask.assign(by_mask.begin(), by_mask.end());
  double cum = 0;
  for (const TargetShape& s : all) {
    if (cum >= coverage * total) break;
    cum += static_cast<double>(s.count);
    w.shapes.push_back(s);
  }
  for (TargetShape& s : w.shapes) s.weight = static_cast<double>(s.count) / cum;
  return w;
}

GPUSCHED_DECL double fragmentation(MilliCpu cpu_free, std::span<const std::int32_t> gpu_free, std::span<const GpuModelId> gpu_model,
                     const TargetWorkload& workload) {
  std::vector<detail::FgdSlot> slots(gpu_free.size());
  for (std::size_t i = 0; i < gpu_free.size(); ++i)
    slots[i] = {gpu_free[i], i < gpu_model.size() ? gpu_model[i] : GpuModelId{0}};
  return detail::fgd_fragment_of_slots(cpu_free, slots, workload);
}

GPUSCHED_DECL double node_fragmentation(const ClusterState& state, NodeId node, const TargetWorkload& workload) {
  std::vector<detail::FgdSlot> slots(state.gpu_count(node));
  for (std::size_t g = 0; g < slots.size(); ++g)
    slots[g] = {static_cast<std::int32_t>(state.shares().free_milli(node, static_cast<GpuIndex>(g))), state.gpu_model(node, static_cast<GpuIndex>(g))};
  return detail::fgd_fragment_of_slots(state.cpu_free(node), slots, workload);
}

GPUSCHED_DECL std::int64_t fgd_score(double before, double after) {
  const double x = (before - after) / 1000.0;
  return static_cast<std::int64_t>(100.0 / (1.0 + std::exp(-x)));
}

// --- the class index --------------------------------------------------------------------------------

struct FgdPolicy::Index {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  // Nodes of more GPUs than this keep their GPUs' free shares here, so that an observed reservation
  // or release changes the node's levels by its own GPUs instead of a sort of all of them.
  static constexpr std::size_t kTrackedGpus = 64;
  struct Memo {
    std::int64_t score = 0;
    std::int64_t secondary = 0;
    std::uint8_t state = 0;  // 0 unknown, 1 fits, 2 does not fit
  };
  struct Class {
    MilliCpu cpu = 0;
    Bytes memory = 0;
    std::vector<detail::FgdLevel> levels;  // sorted by (free, model)
    NodeBitset members;       // by tie-break rank
    std::uint32_t count = 0;
    std::int32_t active_pos = -1;
    std::vector<Memo> memo;   // by task id
  };
  std::unordered_map<std::string, std::uint32_t> by_key;
  std::vector<Class> classes;
  std::vector<std::uint32_t> active;
  std::vector<std::uint32_t> node_class;
  std::map<detail::FgdTaskKey, std::uint32_t> task_ids;
  // Nodes of more than kTrackedGpus GPUs: the free share of each GPU as the node's class has it.
  std::unordered_map<NodeId, std::vector<std::int32_t>> tracked_free;
  std::string key_buf;
  std::vector<detail::FgdSlot> slot_buf;
  std::vector<detail::FgdLevel> level_buf;
  // Scratch of the evaluations.
  detail::FgdSums sums;
  std::vector<detail::FgdCandidate> shared;
  std::vector<detail::FgdMove> taken;
  // The state generation the classes reflect (ClusterState::generation): a newer state is caught up
  // before any decision, so the cache never answers for a state it has not seen.
  std::uint64_t seen_generation = 0;
  // The layout generation (events) the classes reflect: an observed change of a tracked node is
  // applied by its GPUs only when no event came in between.
  std::uint64_t seen_layout = 0;

  void make_key(const ClusterState& s, NodeId n) {
    const MilliCpu cpu = s.cpu_free(n);
    const Bytes mem = s.memory_free(n);
    key_buf.assign(reinterpret_cast<const char*>(&cpu), sizeof cpu);
    key_buf.append(reinterpret_cast<const char*>(&mem), sizeof mem);
    for (const detail::FgdLevel& lv : level_buf) {
      key_buf.append(reinterpret_cast<const char*>(&lv.free), sizeof lv.free);
      key_buf.push_back(static_cast<char>(lv.model));
      key_buf.append(reinterpret_cast<const char*>(&lv.count), sizeof lv.count);
    }
  }

  // The node's levels and key from all its GPUs.
  void snapshot(const ClusterState& s, NodeId n) {
    const std::size_t g_count = s.gpu_count(n);
    slot_buf.resize(g_count);
    for (std::size_t g = 0; g < g_count; ++g)
      slot_buf[g] = {static_cast<std::int32_t>(s.shares().free_milli(n, static_cast<GpuIndex>(g))), s.gpu_model(n, static_cast<GpuIndex>(g))};
    if (g_count > kTrackedGpus) {
      auto& f = tracked_free[n];
      f.resize(g_count);
      for (std::size_t g = 0; g < g_count; ++g) f[g] = slot_buf[g].free;
    }
    std::sort(slot_buf.begin(), slot_buf.end());
    detail::fgd_levels_of_sorted(slot_buf, level_buf);
    make_key(s, n);
  }

  // The node's levels and key from its class's levels, when only `gpus` changed since (an observed
  // reservation or release). False when the node is not tracked or has no class: snapshot instead.
  bool snapshot_changed(const ClusterState& s, NodeId n, std::span<const GpuIndex> gpus) {
    if (node_class[n] == kNone) return false;
    auto it = tracked_free.find(n);
    if (it == tracked_free.end() || it->second.size() != s.gpu_count(n)) return false;
    std::vector<std::int32_t>& f = it->second;
    level_buf = classes[node_class[n]].levels;
    auto find = [&](std::int32_t free, GpuModelId model) {
      return std::lower_bound(level_buf.begin(), level_buf.end(), std::pair{free, model},
                              [](const detail::FgdLevel& lv, const std::pair<std::int32_t, GpuModelId>& k) {
                                return lv.free != k.first ? lv.free < k.first : lv.model < k.second;
                              });
    };
    for (const GpuIndex g : gpus) {
      if (g >= f.size()) return false;
      const auto now = static_cast<std::int32_t>(s.shares().free_milli(n, g));
      if (now == f[g]) continue;
      const GpuModelId model = s.gpu_model(n, g);
      auto from = find(f[g], model);
      if (from == level_buf.end() || from->free != f[g] || from->model != model) return false;
      if (--from->count == 0) level_buf.erase(from);
      auto to = find(now, model);
      if (to != level_buf.end() && to->free == now && to->model == model)
        ++to->count;
      else
        level_buf.insert(to, detail::FgdLevel{now, model, 1});
      f[g] = now;
    }
    make_key(s, n);
    return true;
  }

  // Puts the node in the class of the last snapshot.
  void insert_snapshot(const ClusterState& s, NodeId n, std::uint32_t rank) {
    auto [it, added] = by_key.try_emplace(key_buf, static_cast<std::uint32_t>(classes.size()));
    if (added) {
      Class c;
      c.cpu = s.cpu_free(n);
      c.memory = s.memory_free(n);
      c.levels = level_buf;
      c.members = NodeBitset(static_cast<std::uint32_t>(s.node_count()));
      classes.push_back(std::move(c));
    }
    const std::uint32_t id = it->second;
    Class& c = classes[id];
    c.members.insert(rank);
    if (c.count++ == 0) {
      c.active_pos = static_cast<std::int32_t>(active.size());
      active.push_back(id);
    }
    node_class[n] = id;
  }

  void insert(const ClusterState& s, NodeId n, std::uint32_t rank) {
    snapshot(s, n);
    insert_snapshot(s, n, rank);
  }

  void erase(NodeId n, std::uint32_t rank) {
    const std::uint32_t id = node_class[n];
    if (id == kNone) return;
    Class& c = classes[id];
    c.members.erase(rank);
    if (--c.count == 0) {
      const auto pos = static_cast<std::size_t>(c.active_pos);
      active[pos] = active.back();
      classes[active[pos]].active_pos = static_cast<std::int32_t>(pos);
      active.pop_back();
      c.active_pos = -1;
      // A class that empties rarely comes back (no departures in the trace replay): drop its memo.
      std::vector<Memo>().swap(c.memo);
    }
    node_class[n] = kNone;
  }
};

GPUSCHED_CTOR_DECL FgdPolicy::FgdPolicy(TargetWorkload workload, std::uint64_t seed, FgdOptions options)
    : TracePolicy(seed), workload_(std::move(workload)), options_(std::move(options)),
      picker_(std::make_unique<detail::FgdGpuPicker>(*this)) {
  double cpu = 0, gpu = 0;
  for (const TargetShape& m : workload_.shapes)
    if (m.gpus > 0) {
      cpu += m.weight * static_cast<double>(m.cpu);
      gpu += m.weight * static_cast<double>(m.gpus * m.gpu_milli);
    }
  cpu_per_gpu_milli_ = gpu > 0 ? cpu / gpu : 0.0;
  if (options_.packing_loss || options_.cpu_stranding || options_.model_scarcity)
    costs_ = std::make_unique<detail::FgdCosts>(options_, workload_, cpu_per_gpu_milli_);
}

GPUSCHED_CTOR_DECL FgdPolicy::~FgdPolicy() = default;

GPUSCHED_DECL double FgdPolicy::packing_loss(MilliGpu free, MilliGpu share) const {
  return costs_ ? costs_->loss(static_cast<std::int32_t>(free), share) : 0.0;
}

GPUSCHED_DECL double FgdPolicy::model_scarcity(GpuModelId model) const { return costs_ ? costs_->kappa[model] : 0.0; }

GPUSCHED_DECL double FgdPolicy::stranded_gpu_milli(MilliCpu cpu_free, MilliGpu gpu_free) const {
  if (cpu_per_gpu_milli_ <= 0) return 0.0;
  return detail::FgdCosts::stranded(static_cast<double>(cpu_free), static_cast<double>(gpu_free), cpu_per_gpu_milli_);
}

GPUSCHED_DECL const GpuPicker& FgdPolicy::gpu_picker() const { return *picker_; }

GPUSCHED_DECL std::int64_t FgdPolicy::score_of(double before, double after) const {
  return options_.integer_sigmoid_score ? fgd_score(before, after) : detail::fgd_exact_score(before, after);
}

GPUSCHED_DECL std::size_t FgdPolicy::active_classes() const { return index_ ? index_->active.size() : 0; }

GPUSCHED_DECL void FgdPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  attached_instance_ = state.instance_id();
  rebuild_index(state);
}

GPUSCHED_DECL void FgdPolicy::rebuild_index(const ClusterState& state) const {
  index_ = std::make_unique<Index>();
  index_->node_class.assign(state.node_count(), Index::kNone);
  if (costs_) costs_->prepare(state, workload_);
  const TieBreak& t = tie(state);
  for (NodeId n = 0; n < state.node_count(); ++n)
    if (state.eligible(n)) index_->insert(state, n, t.rank(n));
  index_->seen_generation = state.generation();
  index_->seen_layout = state.layout_generation();
}

GPUSCHED_DECL void FgdPolicy::refresh_node(const ClusterState& state, NodeId n, std::span<const GpuIndex> changed) const {
  const std::uint32_t rank = tie(state).rank(n);
  Index& ix = *index_;
  if (!state.eligible(n)) {
    ix.erase(n, rank);
    return;
  }
  // A node of many GPUs whose only change is `changed`: its levels from its class's (no sort of all
  // its GPUs); any other node from all its GPUs.
  if (changed.empty() || !ix.snapshot_changed(state, n, changed)) ix.snapshot(state, n);
  ix.erase(n, rank);
  ix.insert_snapshot(state, n, rank);
}

GPUSCHED_DECL void FgdPolicy::catch_up(const ClusterState& state) const {
  Index& ix = *index_;
  if (ix.seen_generation == state.generation()) return;
  // A node added or removed changes the tie-break permutation (drawn for the node count): start over.
  if (ix.node_class.size() != state.node_count()) {
    rebuild_index(state);
    return;
  }
  if (costs_ && !costs_->prepared_for(state)) costs_->prepare(state, workload_);
  // Changes nobody told us about (place_job, place_gang, events): revisit exactly the nodes whose
  // version is newer than what the index saw. O(nodes) compares, no per-node rebuild otherwise.
  for (NodeId n = 0; n < state.node_count(); ++n)
    if (state.node_version(n) > ix.seen_generation) refresh_node(state, n);
  ix.seen_generation = state.generation();
  ix.seen_layout = state.layout_generation();
}

GPUSCHED_DECL void FgdPolicy::observe(const ClusterState& state, const TaskRequest& /*request*/, const TaskAssignment& a) {
  if (!index_ || attached_instance_ != state.instance_id() || a.node >= state.node_count()) return;
  Index& ix = *index_;
  // The simulator's hot path: the only change since the index was current is this reservation.
  if (state.generation() == ix.seen_generation + 1 && state.node_version(a.node) == state.generation() &&
      ix.node_class.size() == state.node_count()) {
    // Its GPUs are all that changed on the node unless an event came too (then all are read).
    refresh_node(state, a.node,
                 state.layout_generation() == ix.seen_layout ? std::span<const GpuIndex>(a.gpus) : std::span<const GpuIndex>());
    ix.seen_layout = state.layout_generation();
    ix.seen_generation = state.generation();
    return;
  }
  catch_up(state);
}

GPUSCHED_DECL std::int64_t FgdPolicy::secondary_key(const ClusterState& state, NodeId n, const TaskRequest& request) const {
  return secondary_of(state.cpu_free(n), state.shares().node_free_milli(n), request);
}

GPUSCHED_DECL std::int64_t FgdPolicy::secondary_of(MilliCpu cpu_free, MilliGpu gpu_free, const TaskRequest& request) const {
  const MilliGpu g = gpu_free - request.shape.total_gpu_milli();
  const MilliCpu c = cpu_free - request.shape.cpu;
  switch (options_.tie_rule) {
    case 1: return -g;  // least free GPU share left: packs
    case 2: {
      // Keep free CPU in proportion to free GPU share, at the workload's CPU per GPU milli, so that
      // neither runs out first and strands the other.
      const double gap = static_cast<double>(c) - cpu_per_gpu_milli_ * static_cast<double>(g);
      return -std::llround(std::abs(gap));
    }
    default: return 0;
  }
}

// The choice an evaluation makes on GPU (or level's GPU) `gpu`.
GPUSCHED_DECL FgdPolicy::NodeChoice FgdPolicy::choice_of(const detail::FgdEvaluation& e, std::int32_t gpu) const {
  NodeChoice c;
  c.fits = true;
  c.frag_before = e.before;
  c.frag_after = e.after;
  c.cost = e.cost;
  c.gpu = gpu;
  c.score = score_of(e.before, e.after + e.cost);
  return c;
}

// evaluate() of a shared task from the node's class levels and the state's share index (its
// conditions hold: see evaluate).
GPUSCHED_DECL FgdPolicy::NodeChoice FgdPolicy::evaluate_indexed(const ClusterState& state, NodeId node,
                                                                const TaskRequest& request) const {
  Index& ix = *index_;
  const Index::Class& cl = ix.classes[ix.node_class[node]];
  detail::FgdEvaluation e;
  std::int32_t gpu = -1;
  if (std::has_single_bit(state.node_models(node))) {
    e = detail::fgd_evaluate_class(cl.cpu, cl.levels, request, workload_, costs_.get(), ix.sums, ix.shared, ix.taken);
    gpu = e.fits ? gpusched::detail::cluster_index(state).least_share_gpu(node, cl.levels[static_cast<std::size_t>(e.slot)].free) : -1;
  } else {
    detail::fgd_sums_of(cl.levels, workload_, ix.sums);
    ix.shared.clear();
    ix.taken.clear();
    for (std::size_t i = 0; i < cl.levels.size(); ++i) {
      const detail::FgdLevel& lv = cl.levels[i];
      if (lv.free < request.shape.gpu_milli || !(request.models & model_bit(lv.model))) continue;
      const std::int32_t lowest = gpusched::detail::cluster_index(state).least_share_gpu(node, lv.free, model_bit(lv.model));
      if (lowest >= 0) ix.shared.push_back({i, lowest});
    }
    std::sort(ix.shared.begin(), ix.shared.end(),
              [](const detail::FgdCandidate& a, const detail::FgdCandidate& b) { return a.slot < b.slot; });
    e = detail::fgd_evaluate_levels(cl.cpu, cl.levels, ix.sums, request, workload_, costs_.get(), ix.shared, ix.taken,
                                    false);
    gpu = e.fits ? e.slot : -1;
  }
  return gpu < 0 ? NodeChoice{} : choice_of(e, gpu);
}

GPUSCHED_DECL FgdPolicy::NodeChoice FgdPolicy::evaluate(const ClusterState& state, NodeId node, const TaskRequest& request) const {
  NodeChoice c;
  if (state.check_fit(node, request) != FitReason::kFits) return c;
  if (costs_ && !costs_->prepared_for(state)) costs_->prepare(state, workload_);
  // A shared task on a node of many GPUs, no GPU memory asked, the index current: the node's class
  // levels give the best (free share, model), and the state's share index the lowest GPU of a level
  // (no read of every GPU). One model makes the levels distinct shares, so the best level's lowest GPU
  // is the first best GPU of the scan below. With several models, levels of equal share can tie: each
  // candidate level is given its lowest GPU and the candidates go in that order, as the scan meets
  // them, so the tie goes to the same GPU.
  if (request.shape.shares_gpu() && index_ && attached_instance_ == state.instance_id() &&
      index_->seen_generation == state.generation() && node < index_->node_class.size() &&
      index_->node_class[node] != Index::kNone && detail::policy_share_index_answers(state, node, request) &&
      request.shape.gpu_memory == 0) {
    return evaluate_indexed(state, node, request);
  }
  // The node as levels (sorted (free, model) runs); the GPUs the task may use are scanned in index
  // order, so the reported GPU is the first best one. O(G log G), not a re-evaluation per GPU.
  const std::size_t g_count = state.gpu_count(node);
  std::vector<detail::FgdSlot> sorted(g_count);
  for (std::size_t g = 0; g < g_count; ++g)
    sorted[g] = {static_cast<std::int32_t>(state.shares().free_milli(node, static_cast<GpuIndex>(g))), state.gpu_model(node, static_cast<GpuIndex>(g))};
  const std::vector<detail::FgdSlot> by_index = sorted;
  std::sort(sorted.begin(), sorted.end());
  std::vector<detail::FgdLevel> levels;
  detail::fgd_levels_of_sorted(sorted, levels);
  detail::FgdSums sums;
  detail::fgd_sums_of(levels, workload_, sums);
  auto usable = [&](std::size_t g) {
    const auto gi = static_cast<GpuIndex>(g);
    return (request.models & model_bit(by_index[g].model)) && state.shares().free_memory(node, gi) >= request.shape.gpu_memory;
  };
  std::vector<detail::FgdCandidate> shared;
  std::vector<detail::FgdMove> taken;
  bool whole_fits = false;
  const TaskShape& shape = request.shape;
  if (shape.shares_gpu()) {
    std::vector<bool> seen(levels.size(), false);
    for (std::size_t g = 0; g < g_count; ++g) {
      if (by_index[g].free < shape.gpu_milli || !usable(g)) continue;
      const auto lv = static_cast<std::size_t>(
          std::lower_bound(levels.begin(), levels.end(), by_index[g],
                           [](const detail::FgdLevel& l, const detail::FgdSlot& k) {
                             return l.free != k.free ? l.free < k.free : l.model < k.model;
                           }) -
          levels.begin());
      if (seen[lv]) continue;
      seen[lv] = true;
      shared.push_back({lv, static_cast<int>(g)});
    }
  } else if (shape.needs_gpu()) {
    for (std::size_t g = 0; g < g_count && taken.size() < static_cast<std::size_t>(shape.gpus); ++g)
      if (by_index[g].free == kMilliPerGpu && usable(g)) taken.push_back({kMilliPerGpu, 0, by_index[g].model, 1});
    whole_fits = taken.size() >= static_cast<std::size_t>(shape.gpus);
  }
  const detail::FgdEvaluation e = detail::fgd_evaluate_levels(state.cpu_free(node), levels, sums, request, workload_,
                                                              costs_.get(), shared, taken, whole_fits);
  return e.fits ? choice_of(e, e.slot) : c;
}

GPUSCHED_DECL NodeId FgdPolicy::select_scan(const ClusterState& state, const TaskRequest& request) const {
  const TieBreak& t = tie(state);
  NodeId best = kNoNode;
  std::int64_t best_score = 0, best_secondary = 0;
  std::uint32_t best_rank = 0;
  for_each_candidate(state, request, [&](NodeId n) {
    const NodeChoice c = evaluate(state, n, request);
    if (!c.fits) return true;
    const std::int64_t sec = secondary_key(state, n, request);
    const std::uint32_t r = t.rank(n);
    if (best == kNoNode || c.score > best_score || (c.score == best_score && sec > best_secondary) ||
        (c.score == best_score && sec == best_secondary && r < best_rank)) {
      best = n;
      best_score = c.score;
      best_secondary = sec;
      best_rank = r;
    }
    return true;
  });
  return best;
}

GPUSCHED_DECL NodeId FgdPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (!index_ || attached_instance_ != state.instance_id() || !request.selector.empty() ||
      request.shape.gpu_memory != 0)
    return select_scan(state, request);
  catch_up(state);
  Index& ix = *index_;
  const TaskShape& shape = request.shape;
  const detail::FgdTaskKey key{shape.cpu, shape.memory, shape.needs_gpu() ? shape.gpus : 0, shape.needs_gpu() ? shape.gpu_milli : 0,
                    shape.needs_gpu() ? request.models : kAnyGpuModel};
  const auto [tit, added] = ix.task_ids.try_emplace(key, static_cast<std::uint32_t>(ix.task_ids.size()));
  (void)added;
  const std::uint32_t tid = tit->second;
  const TieBreak& t = tie(state);

  std::uint32_t best_class = Index::kNone;
  std::int64_t best_score = 0, best_secondary = 0;
  std::uint32_t best_rank = 0;
  for (const std::uint32_t id : ix.active) {
    Index::Class& c = ix.classes[id];
    if (c.memo.size() <= tid) c.memo.resize(tid + 1);
    Index::Memo& m = c.memo[tid];
    if (m.state == 0) {
      m.state = 2;
      if (c.cpu >= shape.cpu && c.memory >= shape.memory) {
        const detail::FgdEvaluation e =
            detail::fgd_evaluate_class(c.cpu, c.levels, request, workload_, costs_.get(), ix.sums, ix.shared, ix.taken);
        if (e.fits) {
          m.state = 1;
          m.score = score_of(e.before, e.after + e.cost);
          m.secondary = secondary_of(c.cpu, ix.sums.total, request);
        }
      }
    }
    if (m.state != 1) continue;
    const std::uint32_t r = c.members.first();
    if (best_class == Index::kNone || m.score > best_score || (m.score == best_score && m.secondary > best_secondary) ||
        (m.score == best_score && m.secondary == best_secondary && r < best_rank)) {
      best_class = id;
      best_score = m.score;
      best_secondary = m.secondary;
      best_rank = r;
    }
  }
  return best_class == Index::kNone ? kNoNode : t.node_at(best_rank);
}

// --- the trace policies' factory (declared in trace_policies.hpp) ---------------------------------

namespace detail {
GPUSCHED_DECL std::string trace_policy_canonical_name(std::string_view name) {
  std::string out;
  for (char ch : name)
    if (ch != '-' && ch != '_' && ch != ' ') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  return out;
}
}  // namespace detail

GPUSCHED_DECL std::unique_ptr<TracePolicy> make_trace_policy(std::string_view name, std::uint64_t seed,
                                               const TargetWorkload& workload) {
  const std::string n = detail::trace_policy_canonical_name(name);
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
