// gpusched/mig/state.hpp — the MIG state of a cluster: every GPU's instances, indexed.
//
// What it is for. MIG placement decisions (gpusched/mig/packer.hpp) and re-partition plans
// (gpusched/mig/planner.hpp) read a cluster's MIG-enabled GPUs: for each, its model and its GPU
// instances (profile, start slice, and whether a workload holds it: "busy", or it is free:
// "idle"). `MigState` holds that, validated against the profile tables, and groups GPUs into
// classes of identical state (model + instances + busy flags). A 1,000-node cluster of 8 GPUs
// usually has a few dozen classes, so a policy evaluates each class once and picks the lowest GPU
// of the best class, instead of scanning 8,000 GPUs: that is what keeps a decision in
// microseconds.
//
// How to use it.
//   MigState state(MigCatalog::builtin());
//   auto node = state.add_node("node-a").value();
//   auto gpu = state.add_gpu(node, *catalog.find("A100-SXM4-40GB"), {{9, 0}}, {true}).value();
//   auto req = MigRequest::from_name(catalog, "1g.5gb").value();
//   MigDecision d = placer.decide(state, req);     // a value: where, or why not
//   state.apply(d);                                 // creates or takes the instance
//   state.release(gpu, start, /*destroy=*/true);    // the workload finished
// The state never does I/O; the CLI builds it from JSON (docs/mig.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/mig/layout.hpp"
#include "gpusched/mig/profiles.hpp"

namespace gpusched::mig {

using MigNodeId = std::uint32_t;
using MigGpuId = std::uint32_t;   // global GPU index in insertion order
using MigClassId = std::uint32_t;
inline constexpr MigGpuId kNoGpu = ~MigGpuId{0};

// One instance on a GPU, by profile index in the GPU model's table.
struct MigSlot {
  std::uint8_t profile = 0;
  std::uint8_t start = 0;
  bool busy = false;
};

// A request for one GPU instance: the profile to use on each catalog model (-1 = that model
// cannot serve it). Built from a name (resolved by geometry on every model) or from an NVML
// profile ID on one model.
struct MigRequest {
  std::array<std::int8_t, kMaxMigModels> profile;
  MigRequest() { profile.fill(-1); }

  // "3g.40gb", "nvidia.com/mig-1g.5gb+me", ...: every model with that geometry. Fails naming
  // the value when no model of the catalog has it.
  static Result<MigRequest> from_name(const MigCatalog& catalog, std::string_view name);
  // Profile ID `id` on model `model` only.
  static Result<MigRequest> from_id(const MigCatalog& catalog, MigModelId model, std::uint32_t id);
  // Restricts to the given models (the others become -1).
  MigRequest only(std::span<const MigModelId> models) const;
  bool any() const;
};

enum class MigAction : std::uint8_t {
  kNone = 0,   // not placeable now; see `reason`
  kUseIdle,    // take an existing idle instance (no re-partition)
  kCreate,     // create a new instance in free memory slices (dynamic MIG)
};

struct MigDecision {
  MigAction action = MigAction::kNone;
  MigGpuId gpu = kNoGpu;
  int profile = -1;  // index in the GPU model's table
  int start = -1;
  std::int64_t score = 0;  // the policy's cost (lower is better), for explanations
  std::string reason;      // when kNone
  bool placed() const { return action != MigAction::kNone; }
};

class MigState {
 public:
  explicit MigState(const MigCatalog& catalog, LayoutRules rules = {});

  const MigCatalog& catalog() const { return *catalog_; }
  LayoutRules rules() const { return rules_; }

  // Adds a node; fails on an empty or duplicate name.
  Result<MigNodeId> add_node(std::string name);
  // Adds a GPU with its instances (busy[i] for instances[i]; missing = idle). Fails, naming the
  // instance, on an invalid layout.
  Result<MigGpuId> add_gpu(MigNodeId node, MigModelId model, std::span<const MigInstance> instances = {},
                           std::span<const bool> busy = {});

  std::size_t node_count() const { return node_names_.size(); }
  std::size_t gpu_count() const { return gpus_.size(); }
  std::string_view node_name(MigNodeId n) const { return node_names_[n]; }
  std::optional<MigNodeId> find_node(std::string_view name) const;
  MigNodeId node_of(MigGpuId g) const { return gpus_[g].node; }
  // The GPU's index on its node (0-based, insertion order).
  std::uint32_t local_index(MigGpuId g) const { return gpus_[g].local; }
  MigModelId model_of(MigGpuId g) const { return gpus_[g].model; }
  const MigGpuSpec& spec_of(MigGpuId g) const { return catalog_->spec(gpus_[g].model); }
  std::span<const MigSlot> instances(MigGpuId g) const { return {gpus_[g].slots.data(), gpus_[g].count}; }
  const Occupancy& occupancy(MigGpuId g) const { return gpus_[g].all; }        // every instance
  const Occupancy& busy_occupancy(MigGpuId g) const { return gpus_[g].busy; }  // busy ones only
  std::vector<MigInstance> layout(MigGpuId g) const;

  // Applies a decision made on this state: marks the idle instance busy, or creates a busy one.
  Status apply(const MigDecision& d);
  // Creates an instance (busy or idle). Fails when the layout would become invalid.
  Status create(MigGpuId g, int profile, int start, bool busy);
  // The workload on the instance at `start` finished: it becomes idle, or is destroyed.
  Status release(MigGpuId g, int start, bool destroy);
  // Destroys an idle instance.
  Status destroy(MigGpuId g, int start);

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

 private:
  struct Gpu {
    MigNodeId node = 0;
    std::uint32_t local = 0;
    MigModelId model = 0;
    std::uint8_t count = 0;
    std::array<MigSlot, kMaxInstances> slots{};
    Occupancy all, busy;
    MigClassId cls = 0;
  };
  struct Class {
    std::uint64_t key = 0;
    MigModelId model = 0;
    std::set<MigGpuId> gpus;
    std::size_t live_pos = 0;
  };

  static std::uint64_t key_of(const Gpu& g);
  void reclass(MigGpuId g);
  int slot_at(const Gpu& g, int start) const;

  const MigCatalog* catalog_;
  LayoutRules rules_;
  std::vector<std::string> node_names_;
  std::vector<std::uint32_t> node_gpu_count_;
  std::unordered_map<std::string, MigNodeId> node_by_name_;
  std::vector<Gpu> gpus_;
  std::vector<Class> classes_;
  std::unordered_map<std::uint64_t, MigClassId> class_by_key_;
  std::vector<MigClassId> live_;
};

}  // namespace gpusched::mig
