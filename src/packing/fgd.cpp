#include "gpusched/packing/fgd.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

namespace gpusched {
namespace {

struct Slot {
  std::int32_t free;
  GpuModelId model;
  friend bool operator<(const Slot& a, const Slot& b) {
    return a.free != b.free ? a.free < b.free : a.model < b.model;
  }
  friend bool operator==(const Slot& a, const Slot& b) { return a.free == b.free && a.model == b.model; }
};

// F over explicit slots. The per-shape sums are integers and the shapes are visited in a fixed
// order, so equal multisets of slots give bit-identical doubles whatever the slot order: the cached
// (sorted) and the direct (index order) evaluations agree exactly.
double frag_slots(MilliCpu cpu_free, std::span<const Slot> slots, const TargetWorkload& w) {
  std::int64_t total = 0;
  for (const Slot& s : slots) total += s.free;
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
    for (const Slot& s : slots) {
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

struct Evaluation {
  bool fits = false;
  double before = 0, after = 0;
  int slot = -1;  // shared: the chosen slot
};

// Evaluates a task on explicit slots whose host fit (CPU, memory, selector) was already checked.
// `usable(i)` says whether slot i may take the task's share (model, GPU memory).
template <class Usable>
Evaluation evaluate_slots(MilliCpu cpu_free, std::vector<Slot>& slots, const TaskRequest& r,
                          const TargetWorkload& w, Usable&& usable) {
  Evaluation e;
  const TaskShape& shape = r.shape;
  e.before = frag_slots(cpu_free, slots, w);
  const MilliCpu cpu_after = cpu_free - shape.cpu;
  if (!shape.needs_gpu()) {
    e.fits = true;
    e.after = frag_slots(cpu_after, slots, w);
    return e;
  }
  if (shape.shares_gpu()) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].free < shape.gpu_milli || !usable(i)) continue;
      slots[i].free -= static_cast<std::int32_t>(shape.gpu_milli);
      const double after = frag_slots(cpu_after, slots, w);
      slots[i].free += static_cast<std::int32_t>(shape.gpu_milli);
      if (!e.fits || after < e.after ||
          (after == e.after && slots[i].free < slots[static_cast<std::size_t>(e.slot)].free)) {
        e.fits = true;
        e.after = after;
        e.slot = static_cast<int>(i);
      }
    }
    return e;
  }
  // Whole GPUs: which idle GPUs does not change F; take the first usable ones.
  std::vector<std::size_t> taken;
  for (std::size_t i = 0; i < slots.size() && taken.size() < static_cast<std::size_t>(shape.gpus); ++i)
    if (slots[i].free == kMilliPerGpu && usable(i)) taken.push_back(i);
  if (taken.size() < static_cast<std::size_t>(shape.gpus)) return e;
  for (std::size_t i : taken) slots[i].free = 0;
  e.after = frag_slots(cpu_after, slots, w);
  for (std::size_t i : taken) slots[i].free = kMilliPerGpu;
  e.fits = true;
  return e;
}

std::int64_t exact_score(double before, double after) { return std::llround((before - after) * 1e6); }

struct TaskKey {
  MilliCpu cpu;
  Bytes memory;
  GpuCount gpus;
  MilliGpu milli;
  GpuModelMask models;
  friend bool operator<(const TaskKey& a, const TaskKey& b) {
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

}  // namespace

// --- the target workload ----------------------------------------------------------------------------

TargetWorkload TargetWorkload::from_requests(std::span<const TaskRequest> requests, double coverage) {
  std::map<std::tuple<GpuCount, MilliGpu, MilliCpu, GpuModelMask>, std::int64_t> counts;
  for (const TaskRequest& r : requests) {
    const bool gpu = r.shape.needs_gpu();
    ++counts[{gpu ? r.shape.gpus : 0, gpu ? r.shape.gpu_milli : 0, r.shape.cpu, gpu ? r.models : kAnyGpuModel}];
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
  double cum = 0;
  for (const TargetShape& s : all) {
    if (cum >= coverage * total) break;
    cum += static_cast<double>(s.count);
    w.shapes.push_back(s);
  }
  for (TargetShape& s : w.shapes) s.weight = static_cast<double>(s.count) / cum;
  return w;
}

double fragmentation(MilliCpu cpu_free, std::span<const std::int32_t> gpu_free, std::span<const GpuModelId> gpu_model,
                     const TargetWorkload& workload) {
  std::vector<Slot> slots(gpu_free.size());
  for (std::size_t i = 0; i < gpu_free.size(); ++i)
    slots[i] = {gpu_free[i], i < gpu_model.size() ? gpu_model[i] : GpuModelId{0}};
  return frag_slots(cpu_free, slots, workload);
}

double node_fragmentation(const ClusterState& state, NodeId node, const TargetWorkload& workload) {
  std::vector<Slot> slots(state.gpu_count(node));
  for (std::size_t g = 0; g < slots.size(); ++g)
    slots[g] = {static_cast<std::int32_t>(state.gpu_free_milli(node, static_cast<GpuIndex>(g))), state.gpu_model(node, static_cast<GpuIndex>(g))};
  return frag_slots(state.cpu_free(node), slots, workload);
}

std::int64_t fgd_score(double before, double after) {
  const double x = (before - after) / 1000.0;
  return static_cast<std::int64_t>(100.0 / (1.0 + std::exp(-x)));
}

// --- the class index --------------------------------------------------------------------------------

struct FgdPolicy::Index {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Memo {
    std::int64_t score = 0;
    std::int64_t secondary = 0;
    std::uint8_t state = 0;  // 0 unknown, 1 fits, 2 does not fit
  };
  struct Class {
    MilliCpu cpu = 0;
    Bytes memory = 0;
    std::vector<Slot> slots;  // sorted
    NodeBitset members;       // by tie-break rank
    std::uint32_t count = 0;
    std::int32_t active_pos = -1;
    std::vector<Memo> memo;   // by task id
  };
  std::unordered_map<std::string, std::uint32_t> by_key;
  std::vector<Class> classes;
  std::vector<std::uint32_t> active;
  std::vector<std::uint32_t> node_class;
  std::map<TaskKey, std::uint32_t> task_ids;
  std::string key_buf;
  std::vector<Slot> slot_buf;

  void snapshot(const ClusterState& s, NodeId n) {
    slot_buf.resize(s.gpu_count(n));
    for (std::size_t g = 0; g < slot_buf.size(); ++g)
      slot_buf[g] = {static_cast<std::int32_t>(s.gpu_free_milli(n, static_cast<GpuIndex>(g))), s.gpu_model(n, static_cast<GpuIndex>(g))};
    std::sort(slot_buf.begin(), slot_buf.end());
    const MilliCpu cpu = s.cpu_free(n);
    const Bytes mem = s.memory_free(n);
    key_buf.assign(reinterpret_cast<const char*>(&cpu), sizeof cpu);
    key_buf.append(reinterpret_cast<const char*>(&mem), sizeof mem);
    for (const Slot& sl : slot_buf) {
      key_buf.append(reinterpret_cast<const char*>(&sl.free), sizeof sl.free);
      key_buf.push_back(static_cast<char>(sl.model));
    }
  }

  void insert(const ClusterState& s, NodeId n, std::uint32_t rank) {
    snapshot(s, n);
    auto [it, added] = by_key.try_emplace(key_buf, static_cast<std::uint32_t>(classes.size()));
    if (added) {
      Class c;
      c.cpu = s.cpu_free(n);
      c.memory = s.memory_free(n);
      c.slots = slot_buf;
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

FgdPolicy::FgdPolicy(TargetWorkload workload, std::uint64_t seed, FgdOptions options)
    : TracePolicy(seed), workload_(std::move(workload)), options_(std::move(options)),
      picker_(std::make_unique<FgdGpuPicker>(*this)) {
  double cpu = 0, gpu = 0;
  for (const TargetShape& m : workload_.shapes)
    if (m.gpus > 0) {
      cpu += m.weight * static_cast<double>(m.cpu);
      gpu += m.weight * static_cast<double>(m.gpus * m.gpu_milli);
    }
  cpu_per_gpu_milli_ = gpu > 0 ? cpu / gpu : 0.0;
}

FgdPolicy::~FgdPolicy() = default;

const GpuPicker& FgdPolicy::gpu_picker() const { return *picker_; }

std::size_t FgdPolicy::active_classes() const { return index_ ? index_->active.size() : 0; }

void FgdPolicy::attach(const ClusterState& state) {
  TracePolicy::attach(state);
  attached_ = &state;
  index_ = std::make_unique<Index>();
  index_->node_class.assign(state.node_count(), Index::kNone);
  const TieBreak& t = tie(state);
  for (NodeId n = 0; n < state.node_count(); ++n)
    if (state.eligible(n)) index_->insert(state, n, t.rank(n));
}

void FgdPolicy::observe(const ClusterState& state, const TaskRequest& /*request*/, const TaskAssignment& a) {
  if (!index_ || attached_ != &state || a.node >= state.node_count()) return;
  const std::uint32_t rank = tie(state).rank(a.node);
  index_->erase(a.node, rank);
  if (state.eligible(a.node)) index_->insert(state, a.node, rank);
}

std::int64_t FgdPolicy::secondary_key(const ClusterState& state, NodeId n, const TaskRequest& request) const {
  return secondary_of(state.cpu_free(n), state.free_gpu_milli(n), request);
}

std::int64_t FgdPolicy::secondary_of(MilliCpu cpu_free, MilliGpu gpu_free, const TaskRequest& request) const {
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

FgdPolicy::NodeChoice FgdPolicy::evaluate(const ClusterState& state, NodeId node, const TaskRequest& request) const {
  NodeChoice c;
  if (state.check_fit(node, request) != FitReason::kFits) return c;
  std::vector<Slot> slots(state.gpu_count(node));
  for (std::size_t g = 0; g < slots.size(); ++g)
    slots[g] = {static_cast<std::int32_t>(state.gpu_free_milli(node, static_cast<GpuIndex>(g))), state.gpu_model(node, static_cast<GpuIndex>(g))};
  const Evaluation e = evaluate_slots(state.cpu_free(node), slots, request, workload_, [&](std::size_t g) {
    const auto gi = static_cast<GpuIndex>(g);
    return (request.models & model_bit(state.gpu_model(node, gi))) &&
           state.gpu_free_memory(node, gi) >= request.shape.gpu_memory;
  });
  if (!e.fits) return c;
  c.fits = true;
  c.frag_before = e.before;
  c.frag_after = e.after;
  c.gpu = e.slot;
  c.score = options_.integer_sigmoid_score ? fgd_score(e.before, e.after) : exact_score(e.before, e.after);
  return c;
}

NodeId FgdPolicy::select_scan(const ClusterState& state, const TaskRequest& request) const {
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

NodeId FgdPolicy::select(const ClusterState& state, const TaskRequest& request) const {
  if (!index_ || attached_ != &state || !request.selector.empty() || request.shape.gpu_memory != 0)
    return select_scan(state, request);
  Index& ix = *index_;
  const TaskShape& shape = request.shape;
  const TaskKey key{shape.cpu, shape.memory, shape.needs_gpu() ? shape.gpus : 0, shape.needs_gpu() ? shape.gpu_milli : 0,
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
        const Evaluation e = evaluate_slots(c.cpu, c.slots, request, workload_, [&](std::size_t g) {
          return (request.models & model_bit(c.slots[g].model)) != 0;
        });
        if (e.fits) {
          m.state = 1;
          m.score = options_.integer_sigmoid_score ? fgd_score(e.before, e.after) : exact_score(e.before, e.after);
          std::int64_t free = 0;
          for (const Slot& s : c.slots) free += s.free;
          m.secondary = secondary_of(c.cpu, free, request);
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

}  // namespace gpusched
