// gpusched/cluster/mig_gpus.hpp — the MIG part of the one cluster state: every MIG GPU's instances.
//
// What it is for. `ClusterState` (cluster_state.hpp) is the single state every policy family reads
// and changes. For a GPU in MIG mode it holds, here, the GPU's MIG model (its profile table,
// gpusched/core/mig_profiles.hpp) and its GPU instances: profile, start slice, and whether a workload
// holds it ("busy") or it is free ("idle"), validated against the tables with the layout rules of
// gpusched/core/mig_layout.hpp. A MIG reservation is a `ClusterState::reserve` like any other (the
// journal undoes it on rollback) and an applied re-partition is the cluster event
// `ClusterState::apply_mig_layout`; both update this table in place.
//
// The class index. GPUs of identical MIG state (model + instances + busy flags) form a class. A
// 1,000-node cluster of 8 GPUs usually has a few dozen classes, so a MIG policy (gpusched/mig/
// packer.hpp, planner.hpp) evaluates each class once and takes the lowest GPU of the best class
// instead of scanning 8,000 GPUs: that is what keeps a decision in microseconds. Only GPUs that can
// take work are indexed: a GPU of a cordoned or failed node, or an unhealthy GPU, is "parked" (kept
// here with its instances, in no class) until it can take work again.
//
// Ids. `MigGpuId` numbers the cluster's MIG-mode GPUs densely in the order the state met them (node
// order, then GPU order at build); `find(cluster_gpu)` maps a `ClusterState` GPU (its global index)
// to it. Whole-GPU and shared placement never see a MIG GPU: the state reports its free share as 0
// (see cluster_state.hpp and docs/mig.md).
//
// Layering: cluster/ reads the vendor tables of core/ and nothing of mig/ (the policies).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/core/detail/text.hpp"
#include "gpusched/core/mig_layout.hpp"
#include "gpusched/core/mig_profiles.hpp"
#include "gpusched/core/result.hpp"

namespace gpusched::mig {

using MigGpuId = std::uint32_t;
using MigClassId = std::uint32_t;
inline constexpr MigGpuId kNoGpu = ~MigGpuId{0};
inline constexpr MigClassId kNoClass = ~MigClassId{0};

// One instance on a GPU, by profile index in the GPU model's table.
struct MigSlot {
  std::uint8_t profile = 0;
  std::uint8_t start = 0;
  bool busy = false;
  friend bool operator==(const MigSlot&, const MigSlot&) = default;
};

// A request for one GPU instance: the profile to use on each catalog model (-1 = that model cannot
// serve it). Built from a name (resolved by geometry on every model, e.g. the job model's
// `mig_profile`) or from an NVML profile ID on one model.
struct MigRequest {
  std::array<std::int8_t, kMaxMigModels> profile;
  MigRequest() { profile.fill(-1); }

  // "3g.40gb", "nvidia.com/mig-1g.5gb+me", ...: every model with that geometry. Fails naming the
  // value when no model of the catalog has it.
  static Result<MigRequest> from_name(const MigCatalog& catalog, std::string_view name);
  // Profile ID `id` on model `model` only.
  static Result<MigRequest> from_id(const MigCatalog& catalog, MigModelId model, std::uint32_t id);
  // Restricts to the given models (the others become -1).
  MigRequest only(std::span<const MigModelId> models) const;
  bool any() const;
  friend bool operator==(const MigRequest&, const MigRequest&) = default;
};

class MigGpuTable {
 public:
  MigGpuTable() : catalog_(&MigCatalog::builtin()) {}
  // `catalog` must outlive the table and every copy of it (the built-in one is static).
  explicit MigGpuTable(const MigCatalog& catalog, LayoutRules rules = {}) : catalog_(&catalog), rules_(rules) {}

  const MigCatalog& catalog() const { return *catalog_; }
  LayoutRules rules() const { return rules_; }

  // Adds a MIG-mode GPU with its instances (busy[i] for instances[i]; missing = idle). `node`,
  // `local` and `cluster_gpu` are the ClusterState's node id, GPU index on the node and global GPU
  // index. Fails, naming the instance, on an invalid layout.
  // `layout_fixed`: instances are created outside the scheduler only (GpuInfo::mig_layout_fixed):
  // `create` refuses, `can_serve` counts idle instances only; `set_layout` (a re-partition) applies.
  Result<MigGpuId> add_gpu(std::uint32_t node, std::uint16_t local, std::uint32_t cluster_gpu, MigModelId model,
                           std::span<const MigInstance> instances = {}, std::span<const bool> busy = {},
                           bool layout_fixed = false);

  std::size_t gpu_count() const { return gpus_.size(); }
  // The MIG id of a ClusterState GPU (global index), kNoGpu when that GPU is not in MIG mode.
  MigGpuId find(std::uint32_t cluster_gpu) const {
    return cluster_gpu < by_cluster_gpu_.size() ? by_cluster_gpu_[cluster_gpu] : kNoGpu;
  }
  std::uint32_t node_of(MigGpuId g) const { return gpus_[g].node; }
  // The GPU's index on its node (what a TaskAssignment names).
  std::uint16_t local_index(MigGpuId g) const { return gpus_[g].local; }
  MigModelId model_of(MigGpuId g) const { return gpus_[g].model; }
  bool layout_fixed(MigGpuId g) const { return gpus_[g].layout_fixed; }
  const MigGpuSpec& spec_of(MigGpuId g) const { return catalog_->spec(gpus_[g].model); }
  std::span<const MigSlot> instances(MigGpuId g) const { return {gpus_[g].slots.data(), gpus_[g].count}; }
  const Occupancy& occupancy(MigGpuId g) const { return gpus_[g].all; }        // every instance
  const Occupancy& busy_occupancy(MigGpuId g) const { return gpus_[g].busy; }  // busy ones only
  std::vector<MigInstance> layout(MigGpuId g) const;
  std::vector<bool> busy_flags(MigGpuId g) const;
  // False while the GPU is parked (its node cordoned or failed, or the GPU unhealthy).
  bool available(MigGpuId g) const { return gpus_[g].available; }
  // MIG GPUs of catalog model m, parked or not.
  std::size_t model_gpu_count(MigModelId m) const { return m < per_model_.size() ? per_model_[m] : 0; }

  // --- changes (ClusterState calls these; policies read) -------------------------------------
  // Creates an instance (busy or idle). Fails when the layout would become invalid.
  Status create(MigGpuId g, int profile, int start, bool busy);
  // A workload takes the idle instance of `profile` at `start`.
  Status take(MigGpuId g, int profile, int start);
  // The workload on the instance at `start` finished: it becomes idle, or is destroyed.
  Status release(MigGpuId g, int start, bool destroy);
  // Destroys an idle instance.
  Status destroy(MigGpuId g, int start);
  // Replaces the GPU's layout (a re-partition applied). Fails, changing nothing, on an invalid
  // layout.
  Status set_layout(MigGpuId g, std::span<const MigInstance> instances, std::span<const bool> busy);
  // Parks a GPU out of the class index, or brings it back.
  void set_available(MigGpuId g, bool available);
  // The GPU left the cluster (its node was removed): parked for good and no longer counted by
  // model_gpu_count, so a profile only it offered becomes infeasible.
  void retire(MigGpuId g);
  // The GPU left MIG mode: retired, and `find` no longer maps its ClusterState GPU to it (MIG mode
  // on again adds it under a new id). Its instances must all be idle; they are dropped.
  void detach(MigGpuId g, std::uint32_t cluster_gpu);
  // Could the GPU take one instance of `profile` (an index in its table) now: an idle one, or
  // (when `may_create`) free slices at a valid start? Parked GPUs cannot.
  bool can_serve(MigGpuId g, int profile, bool may_create) const;
  // The start of an idle instance of `profile`, or -1.
  int idle_start(MigGpuId g, int profile) const;

  // --- the class index ---------------------------------------------------------------------
  std::size_t class_count() const { return classes_.size(); }  // ever created (ids are stable)
  std::span<const MigClassId> live_classes() const { return live_; }
  MigClassId class_of(MigGpuId g) const { return gpus_[g].cls; }
  MigModelId class_model(MigClassId c) const { return classes_[c].model; }
  // The class's identity: model, instances and busy flags. Never changes for a class id.
  std::uint64_t class_key(MigClassId c) const { return classes_[c].key; }
  // A GPU of the class (all are interchangeable), the lowest id; kNoGpu when empty.
  MigGpuId class_first(MigClassId c) const {
    return classes_[c].gpus.empty() ? kNoGpu : *classes_[c].gpus.begin();
  }
  const std::set<MigGpuId>& class_gpus(MigClassId c) const { return classes_[c].gpus; }

  // Same GPUs with the same instances, busy flags and availability (class ids may differ: they
  // depend on history). For rollback and rebuild tests.
  bool same_as(const MigGpuTable& other) const;
  // Heap bytes (0 without MIG GPUs), for ClusterState::memory_usage.
  std::size_t memory_usage() const;

 private:
  struct Gpu {
    std::uint32_t node = 0;
    std::uint16_t local = 0;
    MigModelId model = 0;
    bool available = true;
    bool retired = false;
    bool layout_fixed = false;
    std::uint8_t count = 0;
    std::array<MigSlot, kMaxInstances> slots{};
    Occupancy all, busy;
    MigClassId cls = kNoClass;
  };
  struct Class {
    std::uint64_t key = 0;
    MigModelId model = 0;
    std::set<MigGpuId> gpus;
    std::size_t live_pos = 0;
  };

  static std::uint64_t key_of(const Gpu& g);
  void reclass(MigGpuId g);
  void unclass(MigGpuId g);
  static int slot_at(const Gpu& g, int start);
  static Error no_such_gpu(MigGpuId id) {
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu: MIG id ", id, " out of range"), "gpu", ErrorCode::kState);
  }
  Result<Gpu> make_gpu(MigModelId model, std::span<const MigInstance> instances, std::span<const bool> busy) const;

  const MigCatalog* catalog_;
  LayoutRules rules_{};
  std::vector<Gpu> gpus_;
  std::vector<MigGpuId> by_cluster_gpu_;  // empty until the first MIG GPU
  std::array<std::uint32_t, kMaxMigModels> per_model_{};
  std::vector<Class> classes_;
  std::unordered_map<std::uint64_t, MigClassId> class_by_key_;
  std::vector<MigClassId> live_;
};

// --- definitions ---------------------------------------------------------------------------------

inline Result<MigRequest> MigRequest::from_name(const MigCatalog& catalog, std::string_view name) {
  auto geometry = parse_profile_name(name);
  if (!geometry)
    return gpusched::detail::input_error(
        gpusched::detail::concat_text("profile: \"", name, "\" is not a MIG profile name (expected <N>g.<M>gb[+me])"), "profile");
  MigRequest r;
  for (std::size_t m = 0; m < catalog.size(); ++m)
    r.profile[m] = static_cast<std::int8_t>(match_profile(catalog.spec(static_cast<MigModelId>(m)), *geometry));
  if (!r.any())
    return gpusched::detail::input_error(gpusched::detail::concat_text("profile: \"", name, "\" is not a profile of any known MIG GPU model"),
                             "profile", ErrorCode::kUnknownName);
  return r;
}

inline Result<MigRequest> MigRequest::from_id(const MigCatalog& catalog, MigModelId model, std::uint32_t id) {
  if (model >= catalog.size()) return gpusched::detail::input_error(gpusched::detail::concat_text("model: index ", model, " out of range"), "model");
  const int p = catalog.spec(model).find_id(id);
  if (p < 0)
    return gpusched::detail::input_error(gpusched::detail::concat_text("profile_id: ", id, " is not a profile of ", catalog.spec(model).model),
                             "profile_id", ErrorCode::kUnknownName);
  MigRequest r;
  r.profile[model] = static_cast<std::int8_t>(p);
  return r;
}

inline MigRequest MigRequest::only(std::span<const MigModelId> models) const {
  MigRequest r;
  for (MigModelId m : models)
    if (m < kMaxMigModels) r.profile[m] = profile[m];
  return r;
}

inline bool MigRequest::any() const {
  // Called by ClusterState::check_fit for every task, MIG or not: "no model" is every byte -1 (0xff),
  // so compare whole words instead of looping over the models.
  static_assert(kMaxMigModels % sizeof(std::uint64_t) == 0);
  std::uint64_t all = ~std::uint64_t{0};
  for (std::size_t i = 0; i < kMaxMigModels; i += sizeof(std::uint64_t)) {
    std::uint64_t word;
    std::memcpy(&word, profile.data() + i, sizeof word);
    all &= word;
  }
  return all != ~std::uint64_t{0};
}

inline Result<MigGpuTable::Gpu> MigGpuTable::make_gpu(MigModelId model, std::span<const MigInstance> instances,
                                                      std::span<const bool> busy) const {
  if (model >= catalog_->size()) return gpusched::detail::input_error(gpusched::detail::concat_text("model: index ", model, " out of range"), "model");
  const MigGpuSpec& spec = catalog_->spec(model);
  auto occ = validate_layout(spec, instances, rules_);
  if (!occ) return occ.error();
  Gpu g;
  g.model = model;
  g.all = *occ;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const int p = spec.find_id(instances[i].profile_id);
    const bool b = i < busy.size() && busy[i];
    g.slots[g.count++] = MigSlot{static_cast<std::uint8_t>(p), instances[i].start, b};
    if (b) add_instance(spec, g.busy, p, instances[i].start);
  }
  std::sort(g.slots.begin(), g.slots.begin() + g.count,
            [](const MigSlot& a, const MigSlot& b) { return a.start < b.start; });
  return g;
}

inline Result<MigGpuId> MigGpuTable::add_gpu(std::uint32_t node, std::uint16_t local, std::uint32_t cluster_gpu,
                                             MigModelId model, std::span<const MigInstance> instances,
                                             std::span<const bool> busy, bool layout_fixed) {
  if (find(cluster_gpu) != kNoGpu)
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu ", cluster_gpu, ": already in MIG mode"), "", ErrorCode::kDuplicate);
  auto made = make_gpu(model, instances, busy);
  if (!made) return made.error();
  made->node = node;
  made->local = local;
  made->layout_fixed = layout_fixed;
  const auto id = static_cast<MigGpuId>(gpus_.size());
  gpus_.push_back(*made);
  ++per_model_[model];
  if (by_cluster_gpu_.size() <= cluster_gpu) by_cluster_gpu_.resize(cluster_gpu + 1U, kNoGpu);
  by_cluster_gpu_[cluster_gpu] = id;
  reclass(id);
  return id;
}

inline std::vector<MigInstance> MigGpuTable::layout(MigGpuId g) const {
  std::vector<MigInstance> out;
  const MigGpuSpec& spec = spec_of(g);
  for (const MigSlot& s : instances(g)) out.push_back({spec.profiles[s.profile].id, s.start});
  return out;
}

inline std::vector<bool> MigGpuTable::busy_flags(MigGpuId g) const {
  std::vector<bool> out;
  for (const MigSlot& s : instances(g)) out.push_back(s.busy);
  return out;
}

inline std::uint64_t MigGpuTable::key_of(const Gpu& g) {
  // 4 bits of (profile + 1) per start slice, a busy bit per start slice, the model, and whether
  // the layout is fixed (bit 63: such a GPU serves differently, so it is never in a class with
  // one that may create instances).
  std::uint64_t sig = 0, busy = 0;
  for (std::uint8_t i = 0; i < g.count; ++i) {
    sig |= static_cast<std::uint64_t>(g.slots[i].profile + 1U) << (4U * g.slots[i].start);
    if (g.slots[i].busy) busy |= std::uint64_t{1} << g.slots[i].start;
  }
  return sig | (busy << 32U) | (static_cast<std::uint64_t>(g.model) << 40U) |
         (static_cast<std::uint64_t>(g.layout_fixed) << 63U);
}

inline void MigGpuTable::unclass(MigGpuId id) {
  Gpu& g = gpus_[id];
  if (g.cls == kNoClass) return;
  Class& old = classes_[g.cls];
  old.gpus.erase(id);
  if (old.gpus.empty()) {
    // Swap-remove from the live list.
    const std::size_t pos = old.live_pos;
    live_[pos] = live_.back();
    classes_[live_[pos]].live_pos = pos;
    live_.pop_back();
  }
  g.cls = kNoClass;
}

inline void MigGpuTable::reclass(MigGpuId id) {
  Gpu& g = gpus_[id];
  if (!g.available) {
    unclass(id);
    return;
  }
  const std::uint64_t key = key_of(g);
  if (g.cls != kNoClass && classes_[g.cls].key == key) return;
  unclass(id);
  auto [it, inserted] = class_by_key_.try_emplace(key, static_cast<MigClassId>(classes_.size()));
  if (inserted) {
    Class c;
    c.key = key;
    c.model = g.model;
    classes_.push_back(std::move(c));
  }
  Class& cls = classes_[it->second];
  if (cls.gpus.empty()) {
    cls.live_pos = live_.size();
    live_.push_back(it->second);
  }
  cls.gpus.insert(id);
  g.cls = it->second;
}

inline int MigGpuTable::slot_at(const Gpu& g, int start) {
  for (std::uint8_t i = 0; i < g.count; ++i)
    if (g.slots[i].start == start) return i;
  return -1;
}

inline Status MigGpuTable::create(MigGpuId id, int profile, int start, bool busy) {
  if (id >= gpus_.size()) return no_such_gpu(id);
  Gpu& g = gpus_[id];
  const MigGpuSpec& spec = catalog_->spec(g.model);
  if (g.layout_fixed)
    return gpusched::detail::input_error(
        gpusched::detail::concat_text("gpu ", id, ": the MIG layout is fixed (instances are created outside the scheduler)"),
        "gpu", ErrorCode::kState);
  if (profile < 0 || static_cast<std::size_t>(profile) >= spec.profiles.size())
    return gpusched::detail::input_error(gpusched::detail::concat_text("profile: index ", profile, " out of range on ", spec.model), "profile");
  if (!can_add(spec, g.all, profile, start, rules_))
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu ", id, ": cannot create ", spec.profiles[static_cast<std::size_t>(profile)].name,
                                             " at ", start, " (layout ", format_layout(spec, layout(id)), ")"),
                             "start", ErrorCode::kState);
  add_instance(spec, g.all, profile, start);
  if (busy) add_instance(spec, g.busy, profile, start);
  MigSlot s{static_cast<std::uint8_t>(profile), static_cast<std::uint8_t>(start), busy};
  auto* end = g.slots.begin() + g.count;
  auto* pos = std::find_if(g.slots.begin(), end, [&](const MigSlot& x) { return x.start > start; });
  std::move_backward(pos, end, end + 1);
  *pos = s;
  ++g.count;
  reclass(id);
  return {};
}

inline Status MigGpuTable::take(MigGpuId id, int profile, int start) {
  if (id >= gpus_.size()) return no_such_gpu(id);
  Gpu& g = gpus_[id];
  const int i = slot_at(g, start);
  if (i < 0 || g.slots[i].busy || g.slots[i].profile != profile)
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu ", id, ": no idle instance of that profile at ", start), "start",
                             ErrorCode::kState);
  g.slots[i].busy = true;
  add_instance(catalog_->spec(g.model), g.busy, profile, start);
  reclass(id);
  return {};
}

inline Status MigGpuTable::release(MigGpuId id, int start, bool destroy_it) {
  if (id >= gpus_.size()) return no_such_gpu(id);
  Gpu& g = gpus_[id];
  const int i = slot_at(g, start);
  if (i < 0 || !g.slots[i].busy)
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu ", id, ": no busy instance at ", start), "start", ErrorCode::kState);
  g.slots[i].busy = false;
  remove_instance(catalog_->spec(g.model), g.busy, g.slots[i].profile, start);
  if (destroy_it) return destroy(id, start);
  reclass(id);
  return {};
}

inline Status MigGpuTable::destroy(MigGpuId id, int start) {
  if (id >= gpus_.size()) return no_such_gpu(id);
  Gpu& g = gpus_[id];
  const int i = slot_at(g, start);
  if (i < 0 || g.slots[i].busy)
    return gpusched::detail::input_error(gpusched::detail::concat_text("gpu ", id, ": no idle instance at ", start), "start", ErrorCode::kState);
  remove_instance(catalog_->spec(g.model), g.all, g.slots[i].profile, start);
  std::move(g.slots.begin() + i + 1, g.slots.begin() + g.count, g.slots.begin() + i);
  --g.count;
  reclass(id);
  return {};
}

inline Status MigGpuTable::set_layout(MigGpuId id, std::span<const MigInstance> instances, std::span<const bool> busy) {
  if (id >= gpus_.size()) return no_such_gpu(id);
  auto made = make_gpu(gpus_[id].model, instances, busy);
  if (!made) return made.error();
  Gpu& g = gpus_[id];
  g.count = made->count;
  g.slots = made->slots;
  g.all = made->all;
  g.busy = made->busy;
  reclass(id);
  return {};
}

inline void MigGpuTable::retire(MigGpuId id) {
  if (gpus_[id].retired) return;
  set_available(id, false);
  gpus_[id].retired = true;
  --per_model_[gpus_[id].model];
}

inline void MigGpuTable::detach(MigGpuId id, std::uint32_t cluster_gpu) {
  retire(id);
  gpus_[id].count = 0;
  gpus_[id].all = gpus_[id].busy = Occupancy{};
  if (cluster_gpu < by_cluster_gpu_.size() && by_cluster_gpu_[cluster_gpu] == id) by_cluster_gpu_[cluster_gpu] = kNoGpu;
}

inline void MigGpuTable::set_available(MigGpuId id, bool available) {
  if (gpus_[id].retired || gpus_[id].available == available) return;
  gpus_[id].available = available;
  reclass(id);
}

inline int MigGpuTable::idle_start(MigGpuId id, int profile) const {
  for (const MigSlot& s : instances(id))
    if (!s.busy && s.profile == profile) return s.start;
  return -1;
}

inline bool MigGpuTable::can_serve(MigGpuId id, int profile, bool may_create) const {
  if (!gpus_[id].available || profile < 0) return false;
  if (idle_start(id, profile) >= 0) return true;
  return may_create && !gpus_[id].layout_fixed && feasible_starts(spec_of(id), gpus_[id].all, profile, rules_) != 0;
}

inline bool MigGpuTable::same_as(const MigGpuTable& o) const {
  if (gpus_.size() != o.gpus_.size() || by_cluster_gpu_ != o.by_cluster_gpu_) return false;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& a = gpus_[i];
    const Gpu& b = o.gpus_[i];
    if (a.node != b.node || a.local != b.local || a.model != b.model || a.available != b.available ||
        a.retired != b.retired || a.layout_fixed != b.layout_fixed ||
        a.count != b.count || !(a.all == b.all) || !(a.busy == b.busy) ||
        !std::equal(a.slots.begin(), a.slots.begin() + a.count, b.slots.begin()))
      return false;
    // Equal state must mean the same class population.
    if ((a.cls == kNoClass) != (b.cls == kNoClass)) return false;
    if (a.cls != kNoClass && classes_[a.cls].key != o.classes_[b.cls].key) return false;
  }
  return live_.size() == o.live_.size();
}

inline std::size_t MigGpuTable::memory_usage() const {
  if (gpus_.empty()) return 0;
  std::size_t total = gpus_.capacity() * sizeof(Gpu) + by_cluster_gpu_.capacity() * sizeof(MigGpuId) +
                      classes_.capacity() * sizeof(Class) + live_.capacity() * sizeof(MigClassId);
  // std::set and unordered_map nodes: about three pointers and a color word per set entry.
  total += gpus_.size() * (sizeof(MigGpuId) + 4 * sizeof(void*));
  total += class_by_key_.size() * (sizeof(std::uint64_t) + sizeof(MigClassId) + 2 * sizeof(void*));
  return total;
}

}  // namespace gpusched::mig
