// gpusched/cluster/cluster_state.hpp — the indexed, mutable state every policy family reads and changes.
//
// `ClusterState::build` reads a `ClusterView` once into flat arrays (structure of arrays: one entry
// per node, one per GPU) and keeps, for every GPU model, the set of nodes with exactly k idle GPUs.
// With that index a best-fit decision visits a few nodes instead of all of them, and applying a
// decision updates O(1) index entries.
//
// The surface, by what a user comes for. The class's own members are the nodes (ids, names, CPU,
// memory, GPU count, model and health, flags), the reservations (check_fit, reserve, release, the
// what-if journal) and the cluster events; the rest is reached through a facet, a cheap view that
// reads the same state:
//   state.shares()    the GPUs' free shares, per GPU, per node and over the cluster (fractional
//                     placement, fair share's sums);
//   state.labels()    the node labels and their dictionaries (selectors, topology domains);
//   state.mig()       the MIG GPUs: their instance table, which GPU of a node is in MIG mode, the
//                     first-fit choice of an instance;
//   state.topology()  intra-node interconnects and the declared topology levels.
// The index that makes decisions cheap (buckets of nodes by idle GPUs, the share index) is the
// families' detail: `detail::cluster_index(state)`.
//
// What-if work: `reserve` applies a task's assignment, `checkpoint` marks the journal, `rollback`
// undoes every reservation after a mark (restoring the exact prior state, index included), `commit`
// forgets the journal. A reservation that would over-allocate anything is refused with an error and
// changes nothing, so the state is always consistent.
//
//   auto state = ClusterState::build(view, GpuModelRegistry::builtin()).value();
//   auto mark = state.checkpoint();
//   ... state.reserve(request, assignment) for each task of a gang ...
//   if (!all_placed) state.rollback(mark); else state.commit();
//
// Cluster events (issue 11 part 3). The state follows the cluster without being rebuilt: `cordon` /
// `uncordon`, `fail_node` / `recover_node`, `set_gpu_health`, `add_node` / `remove_node`, `set_label` /
// `remove_label`, and `set_mig_mode`, `apply_mig_layout`, `set_node_interconnect`. Each updates the arrays and the index in place in O(GPUs + labels of the node)
// (label storage is compacted now and then, amortised O(1)); a property test checks that after any
// sequence of events and reservations the state answers every query like one built from scratch
// from `ClusterStateView` (cluster/state_view.hpp). The rules:
//
//   * Node ids are stable. A removed node stays as a tombstone: `node_count()` is the id range
//     (tombstones included, so outstanding `TaskAssignment`s keep their meaning and per-node arrays
//     of callers stay valid), `live_node_count()` the nodes that exist, `removed(n)` tells them
//     apart. A tombstone is never eligible (check_fit says kNodeUnhealthy), has no labels, counts in
//     no total, and its name is free again: adding a node of that name gives it a new id.
//   * Events never release work. What runs on a node that fails or is removed is the caller's
//     (Kubernetes keeps the pods of a NotReady node until they are evicted). `fail_node` and
//     `remove_node` return the node's `NodeUsage` so the caller knows what to requeue. On a failed
//     node the caller releases its assignments as usual (`release` works on any live node); on a
//     removed node `release` and `rollback` of its assignments are accepted and change nothing (the
//     resources left with the node).
//   * An unhealthy GPU reads free 0 (no decision can use it), but the state remembers what was
//     free on it, so releasing work from it and marking it healthy again restore the exact share.
//   * Bad input is an Error with a code and the field: unknown node (kUnknownName, "node"), a
//     removed node (kState), a GPU index out of range (kInvalidValue, "gpu"), a duplicate name
//     (kDuplicate, "name"). A refused event changes nothing.
//
// Generations. `generation()` grows with every change (events, reserve, release, rollback, one step
// per node touched) and `node_version(n)` is the generation of node n's last change, so a cache of
// per-node facts catches up by revisiting only the nodes newer than what it saw.
// `layout_generation()` grows only with events (not allocations): caches of capacity, supply or
// labels key on it. `instance_id()` is unique per state object (a copy gets a new one), so a cache
// keyed to (instance_id, generation) can never be given a stale answer by another state.
//
// Extending the state (the hook for other families). MIG instances, intra-node topology and such
// are per-node or per-GPU facts kept beside these arrays (a member of ClusterState declared in the
// family's own header, with its accessors). Every member function that changes them ends with
// `note_node_change(n)` for each node it changed, plus `note_layout_change()` when the change is an
// event rather than an allocation; that is all the caches need.
//
// Threads. A ClusterState has no hidden mutable parts (no lazy caches, no mutable members), so any
// number of threads may call its const members (queries, copies, compile_job, a policy's scoring
// through a const reference) at once, provided no thread changes it meanwhile; reserve, release,
// rollback, commit and the events are writes and need the caller's exclusive access. What-if work
// in parallel: copy the shared state once per thread and change only the copy (tests/threads,
// run under ThreadSanitizer by ctest `thread_safety_tsan`). `instance_id()` is drawn from one
// atomic counter, so copies made concurrently still get distinct ids.
//
// Memory per node: ~90 bytes of node arrays + ~24 bytes per GPU + index bits (see
// benchmarks/README.md for the measured figure).
#pragma once

#include "gpusched/core/config.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/cluster/mig_gpus.hpp"
#include "gpusched/cluster/node_interconnect.hpp"
#include "gpusched/cluster/views.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/cluster/node_bitset.hpp"

namespace gpusched {

using NodeId = std::uint32_t;
using GpuIndex = std::uint16_t;
inline constexpr NodeId kNoNode = ~NodeId{0};

// A node-label requirement resolved to dictionary ids (key and value must both match).
struct LabelRequirement {
  std::uint32_t key = 0;
  std::uint32_t value = 0;
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

// A task's request compiled against a state's dictionaries: the shape, the allowed models as a
// mask, the node selector as ids. Build it with `ClusterState::compile`.
struct TaskRequest {
  TaskShape shape;
  GpuModelMask models = kAnyGpuModel;
  std::vector<LabelRequirement> selector;
  // A MIG instance per task (the group's mig_profile resolved on every MIG model, restricted to the
  // allowed models); `mig.any()` is false for whole-GPU, shared and CPU-only tasks.
  mig::MigRequest mig{};
};

// Which GPUs of which node a task takes. For a shared task, one GPU index; `gpu_milli` is per GPU.
struct TaskAssignment {
  NodeId node = kNoNode;
  std::vector<GpuIndex> gpus;
  MilliGpu gpu_milli = 0;
  Bytes gpu_memory = 0;
  MilliCpu cpu = 0;
  Bytes memory = 0;
  // A MIG task: gpus = {the MIG GPU's index}, the profile (index in that GPU model's table), the
  // instance's start slice, and whether the reservation creates the instance (dynamic MIG) or takes
  // an idle one. Releasing or rolling back undoes exactly that: destroy, or back to idle.
  std::int8_t mig_profile = -1;
  std::int8_t mig_start = -1;
  bool mig_create = false;
  bool is_mig() const { return mig_profile >= 0; }
};

// Why a node cannot take a task, checked in this order; the first failing check is the reason.
// The hot per-node filter's own small enum; every value but kFits is a ReasonKind of
// core/outcome.hpp (`fit_reason_kind`), and its text is that kind's `reason_name`.
enum class FitReason : std::uint8_t {
  kFits = 0,
  kNodeUnschedulable,
  kNodeUnhealthy,
  kSelectorMismatch,
  kGpuModelNotAllowed,
  kInsufficientCpu,
  kInsufficientMemory,
  kInsufficientGpus,       // too few idle GPUs for a whole-GPU task
  kInsufficientGpuShare,   // no GPU has the free share a shared task needs
  kInsufficientGpuMemory,  // GPUs with enough share lack the GPU memory
  kNoMigPlacement,         // no MIG GPU of the node has an idle instance or free slices for the profile
  kNoIdleMigInstance,      // only fixed-layout MIG GPUs could serve it, and none has an idle instance
};
inline constexpr std::size_t kFitReasonCount = 12;

// The outcome vocabulary's kind for a failed fit (kFits has none: it maps to kOther).
constexpr ReasonKind fit_reason_kind(FitReason reason) {
  switch (reason) {
    case FitReason::kFits: return ReasonKind::kOther;
    case FitReason::kNodeUnschedulable: return ReasonKind::kNodeUnschedulable;
    case FitReason::kNodeUnhealthy: return ReasonKind::kNodeUnhealthy;
    case FitReason::kSelectorMismatch: return ReasonKind::kSelectorMismatch;
    case FitReason::kGpuModelNotAllowed: return ReasonKind::kGpuModelNotAllowed;
    case FitReason::kInsufficientCpu: return ReasonKind::kInsufficientCpu;
    case FitReason::kInsufficientMemory: return ReasonKind::kInsufficientMemory;
    case FitReason::kInsufficientGpus: return ReasonKind::kInsufficientGpus;
    case FitReason::kInsufficientGpuShare: return ReasonKind::kInsufficientGpuShare;
    case FitReason::kInsufficientGpuMemory: return ReasonKind::kInsufficientGpuMemory;
    case FitReason::kNoMigPlacement: return ReasonKind::kNoMigPlacement;
    case FitReason::kNoIdleMigInstance: return ReasonKind::kNoIdleMigInstance;
  }
  return ReasonKind::kOther;
}
// "fits", or the reason kind's name ("insufficient GPUs").
constexpr std::string_view fit_reason_text(FitReason reason) {
  return reason == FitReason::kFits ? std::string_view("fits") : reason_name(fit_reason_kind(reason));
}

// What was still allocated on a node when it failed or was removed: the caller's running work
// (requeue it; see the event rules above).
struct NodeUsage {
  MilliCpu cpu = 0;
  Bytes memory = 0;
  MilliGpu gpu_milli = 0;  // over healthy and unhealthy GPUs
  std::int32_t busy_gpus = 0;  // GPUs with any share taken
  friend bool operator==(const NodeUsage&, const NodeUsage&) = default;
};

class ClusterState;
namespace detail {
class ClusterIndex;
// A number unique to each ClusterState object: a copy or an assignment takes a fresh one, so caches
// keyed to it never mistake one state for another (not even a later state at the same address).
class ClusterStateInstanceId {
 public:
  ClusterStateInstanceId() : id_(next()) {}
  ClusterStateInstanceId(const ClusterStateInstanceId&) : id_(next()) {}
  ClusterStateInstanceId& operator=(const ClusterStateInstanceId&) {
    id_ = next();
    return *this;
  }
  std::uint64_t value() const { return id_; }

 private:
  static std::uint64_t next() {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::uint64_t id_;
};
}  // namespace detail

class ClusterState {
 public:
  // Reads the view once. Fails (naming the node and field) on a GPU model missing from the
  // registry, negative or inconsistent quantities, duplicate node names, or over 65,535 GPUs a node.
  // GPUs in MIG mode are validated against `mig_catalog` (a model with no table there cannot be in
  // MIG mode) under `mig_rules`.
  static Result<ClusterState> build(const ClusterView& view, const GpuModelRegistry& registry,
                                    const mig::MigCatalog& mig_catalog = mig::MigCatalog::builtin(),
                                    mig::LayoutRules mig_rules = {});

  // Resolves a job's task group against this state. Fails on an allowed GPU model that the
  // registry does not know, or an invalid shape (negative amounts, share outside 1..1000, a share
  // below 1000 on several GPUs).
  Result<TaskRequest> compile(const JobView& job, std::size_t group) const;
  Result<TaskRequest> compile(const TaskShape& shape, std::span<const std::string_view> allowed_models = {},
                              std::span<const Label> selector = {}) const;

  // --- nodes (read) ------------------------------------------------------------------------------
  // The id range: live nodes and tombstones of removed ones (see the event rules above).
  std::size_t node_count() const { return node_name_.size(); }
  std::size_t live_node_count() const { return live_nodes_; }
  // GPU slots, tombstones' included (per-GPU arrays are indexed by them).
  std::size_t total_gpu_count() const { return gpu_free_milli_.size(); }
  const GpuModelRegistry& registry() const { return registry_; }
  std::string_view node_name(NodeId n) const { return node_name_[n]; }
  // The live node of that name, or kNoNode.
  NodeId find_node(std::string_view name) const;

  MilliCpu cpu_capacity(NodeId n) const { return cpu_capacity_[n]; }
  MilliCpu cpu_free(NodeId n) const { return cpu_free_[n]; }
  Bytes memory_capacity(NodeId n) const { return memory_capacity_[n]; }
  Bytes memory_free(NodeId n) const { return memory_free_[n]; }
  bool eligible(NodeId n) const { return flags_[n] == 0; }
  bool schedulable(NodeId n) const { return (flags_[n] & kFlagCordoned) == 0; }
  bool healthy(NodeId n) const { return (flags_[n] & kFlagFailed) == 0; }
  bool removed(NodeId n) const { return (flags_[n] & kFlagRemoved) != 0; }
  std::size_t gpu_count(NodeId n) const { return gpu_end_[n] - gpu_begin_[n]; }
  GpuModelId gpu_model(NodeId n, GpuIndex g) const { return gpu_model_[gpu_begin_[n] + g]; }
  bool gpu_healthy(NodeId n, GpuIndex g) const { return gpu_healthy_[gpu_begin_[n] + g] != 0; }
  // The node's GPU models as a mask.
  GpuModelMask node_models(NodeId n) const { return node_models_[n]; }
  // At least the most GPUs of any node (after removals it may stay larger).
  std::int32_t max_gpus_per_node() const { return max_gpus_per_node_; }
  // What is allocated on a node now (capacity minus free, over all its GPUs).
  NodeUsage usage(NodeId n) const;

  // The index's keys of a node's GPU models (detail::ClusterIndex): its one model's id, or these.
  static constexpr std::uint8_t kMixedModels = 0xff;
  static constexpr std::uint8_t kNoGpuKey = 0xfe;
  // Label dictionary ids (labels()): `kUnknownLabel` when the string never occurred. The dictionaries
  // only grow: a key no node has any more still has its id (and matches no node).
  static constexpr std::uint32_t kUnknownLabel = ~std::uint32_t{0};
  // The value a compiled selector requires when its key or value never occurred: no node has it.
  static constexpr std::uint32_t kUnmatchableLabel = kUnknownLabel - 1;

  // --- the facets: cheap views over this state, valid while it lives (defined below the class) ----
  class Shares;
  class Labels;
  class Mig;
  class Topology;
  // The GPUs' free shares, per GPU, per node and over the cluster (what fractional placement and
  // fair share read).
  Shares shares() const;
  // The node labels and their dictionaries (selectors, topology domains).
  Labels labels() const;
  // The MIG GPUs: their instances, which GPU of a node is in MIG mode, where a MIG task would go.
  Mig mig() const;
  // Intra-node interconnects and the declared topology levels.
  Topology topology() const;

  // --- generations (see the top of this file) -----------------------------------------------------
  std::uint64_t instance_id() const { return instance_.value(); }
  std::uint64_t generation() const { return generation_; }
  std::uint64_t layout_generation() const { return layout_generation_; }
  // Grows with the events that change what the nodes could hold when empty (nodes added or removed,
  // GPUs, MIG layouts, labels, interconnects), not with cordons, failures or GPU health: a summary of
  // capacity at empty keys on it, and a scheduling cycle cordons nodes while it plans.
  std::uint64_t capacity_generation() const { return capacity_generation_; }
  std::uint64_t node_version(NodeId n) const { return node_version_[n]; }

  // --- reservations: fit, reserve, release, what-if journal ---------------------------------------
  // Can node n take one task of `request` now? kFits or the first failing reason.
  FitReason check_fit(NodeId n, const TaskRequest& request) const;
  // Would `assignment` be valid for `request` (node fits, GPUs exist, are distinct, allowed, free)?
  Status validate(const TaskRequest& request, const TaskAssignment& assignment) const;
  // Applies an assignment built by a GPU picker (see gpusched/packing). Refused with an error if
  // invalid; then nothing changes.
  Status reserve(const TaskRequest& request, const TaskAssignment& assignment);
  // reserve() for what-if searches that expect refusals: false, nothing changed and no message
  // built, where reserve() would refuse (a refusal's message cost a third of a backfill plan).
  bool try_reserve(const TaskRequest& request, const TaskAssignment& assignment);
  // Gives back what an earlier reservation took (a task finishing, in the simulator). Refused if it
  // would free more than is used. On a removed node: accepted, nothing changes.
  Status release(const TaskAssignment& assignment);
  // A release that `rollback` undoes (the assignment is taken again): what-if eviction, e.g. the
  // preemption search frees victims, tries the preemptor and rolls back.
  Status release_journaled(const TaskAssignment& assignment);

  using Checkpoint = std::size_t;
  Checkpoint checkpoint() const { return journal_.size(); }
  void rollback(Checkpoint mark);
  void commit() {
    journal_.clear();
    journal_gpus_.clear();
  }
  std::size_t journal_size() const { return journal_.size(); }

  // --- cluster events (see the rules at the top) ---------------------------------------------------
  Status cordon(NodeId n);
  Status uncordon(NodeId n);
  Result<NodeUsage> fail_node(NodeId n);
  Status recover_node(NodeId n);
  Status set_gpu_health(NodeId n, std::size_t gpu, bool healthy);
  // Adds node `index` of `view` (validated like `build` does) and returns its new id.
  Result<NodeId> add_node(const ClusterView& view, std::size_t index = 0);
  Result<NodeUsage> remove_node(NodeId n);
  // Sets (adds or changes) or removes one label of a node.
  Status set_label(NodeId n, std::string_view key, std::string_view value);
  Status remove_label(NodeId n, std::string_view key);
  // Event "re-partition applied": GPU g of node n now has exactly `instances` (busy[i] for each).
  // Fails, changing nothing, on a GPU not in MIG mode or an invalid layout. Not journaled.
  Status apply_mig_layout(NodeId n, GpuIndex g, std::span<const mig::MigInstance> instances,
                          std::span<const bool> busy);
  // Event "MIG mode enabled/disabled" on GPU g of node n (`nvidia-smi -i g -mig 1|0`): on, the GPU
  // leaves whole-GPU and shared placement (its free share reads 0) and starts with no instances;
  // off, its idle instances are dropped and it is one whole GPU again. As on the device, the switch
  // needs an idle GPU: refused, changing nothing, while any task holds a share of it or a busy
  // instance, or (on) when its model has no MIG profile table. Setting the mode it has is a no-op
  // (informers repeat events).
  Status set_mig_mode(NodeId n, GpuIndex g, bool enabled);
  // Event "node topology set": sets or replaces node n's interconnect (e.g. from its `nvidia-smi
  // topo -m`). Refused, changing nothing, for an unknown node or a matrix that does not fit it.
  // A node added later gets its model's default like the nodes of `build`; a removed node's is
  // dropped. Setting it is an event: the node's version and both generations advance.
  Status set_node_interconnect(NodeId n, NodeInterconnect interconnect);
  // Event "topology levels set" (topology().levels()). Refused for an empty or repeated key.
  Status set_topology_levels(std::vector<std::string> keys);

  // --- diagnostics -------------------------------------------------------------------------------
  // Heap bytes held by the snapshot (arrays, dictionaries' strings excluded), for capacity planning.
  std::size_t memory_usage() const;
  // Exact equality of all mutable state (for rollback tests).
  bool same_allocation_as(const ClusterState& other) const;

  // Sums over the eligible nodes (neither cordoned, failed nor removed) and their healthy GPUs
  // (Shares::eligible_totals), kept by every change like the index. 128-bit, so they cannot wrap;
  // a reader that needs 64-bit amounts checks the range.
  struct EligibleTotals {
    detail::QuantityWide cpu_capacity = 0, cpu_free = 0, memory_capacity = 0, memory_free = 0;
    std::vector<detail::QuantityWide> gpu_milli_capacity, gpu_milli_free;  // by GpuModelId
    friend bool operator==(const EligibleTotals&, const EligibleTotals&) = default;
  };

 private:
  friend class detail::ClusterIndex;
  // The facets' out-of-line parts (the facets below say what each answers).
  MilliGpu gpu_free_milli_if_healthy(NodeId n, GpuIndex g) const;
  Bytes gpu_free_memory_if_healthy(NodeId n, GpuIndex g) const;
  std::uint32_t label_key_id(std::string_view key) const;
  std::uint32_t label_value_id(std::string_view value) const;
  std::uint32_t node_label_value(NodeId n, std::uint32_t key) const;
  bool pick_mig_instance(NodeId n, const TaskRequest& request, TaskAssignment& out) const;
  bool node_interconnect_is_default(NodeId n) const;
  const NodeBitset* idle_bucket(std::uint8_t model_key, std::int32_t idle) const;
  std::int32_t next_idle_level(std::uint8_t model_key, std::int32_t from) const;
  std::int32_t prev_idle_level(std::uint8_t model_key, std::int32_t from) const;
  std::int32_t next_idle_gpu(NodeId n, std::size_t from) const;
  std::int32_t most_free_share(NodeId n, GpuModelMask models) const;
  std::int32_t least_share_gpu(NodeId n, MilliGpu share, GpuModelMask models, Bytes memory) const;
  static constexpr std::size_t kShareIndexGpus = 64;  // detail::ClusterIndex::kShareIndexGpus
  bool share_indexed(NodeId n) const { return gpu_end_[n] - gpu_begin_[n] > kShareIndexGpus; }
  // (Used inside the implementation by their old names.)
  std::int32_t idle_gpus(NodeId n) const { return idle_gpus_[n]; }
  MilliGpu gpu_free_milli(NodeId n, GpuIndex g) const { return gpu_free_milli_[gpu_begin_[n] + g]; }
  mig::MigGpuId mig_gpu(NodeId n, GpuIndex g) const { return mig_.find(gpu_begin_[n] + g); }
  const NodeInterconnect* node_interconnect(NodeId n) const { return interconnects_.of(n); }

  static constexpr std::uint8_t kFlagCordoned = 1;
  static constexpr std::uint8_t kFlagFailed = 2;
  static constexpr std::uint8_t kFlagRemoved = 4;

  // One node as read from a view, validated, before it is appended.
  struct ParsedGpu {
    GpuModelId model = 0;
    std::int32_t free_milli = 0;  // as the view says, whatever the health
    Bytes free_memory = 0;
    Bytes memory_capacity = 0;
    bool healthy = true;
    // MIG mode (cluster/mig_gpus.hpp): the model's table and the GPU's instances in
    // ParsedNode::mig_instances[mig_first, mig_first + mig_count).
    bool mig_mode = false;
    bool mig_layout_fixed = false;
    mig::MigModelId mig_model = 0;
    std::uint32_t mig_first = 0, mig_count = 0;
  };
  struct ParsedNode {
    std::string_view name;
    NodeResources resources;
    std::uint8_t flags = 0;
    std::vector<ParsedGpu> gpus;
    std::vector<Label> labels;
    std::vector<MigInstanceInfo> mig_instances;
  };
  // Validates node n of the view into `out` (whose buffers are reused). Not const: it remembers the
  // model ids of the spellings it resolved.
  Status parse_node(const ClusterView& view, std::size_t n, ParsedNode& out);
  void assign_known_interconnect(NodeId n);
  Status check_view_interconnect(const ClusterView& view, std::size_t index, std::size_t gpus) const;
  void assign_view_interconnect(const ClusterView& view, std::size_t index, NodeId n);
  NodeId append_node(const ParsedNode& node);

  // Index maintenance for events: make room for a model key, a GPU count, a node id.
  void ensure_index_row(std::uint8_t model_key);
  void ensure_index_width(std::int32_t gpus);
  void ensure_index_capacity(std::size_t nodes);
  void index_insert(NodeId n);
  void index_erase(NodeId n);
  void eligible_add(NodeId n, int sign);  // node n's capacity and free resources into eligible_
  void bucket_insert(std::size_t slot, std::int32_t idle, NodeId n);
  void bucket_erase(std::size_t slot, std::int32_t idle, NodeId n);
  // A GPU's free share changed from `before` to `after` (both as read: 0 when unhealthy): the
  // node's count of partly used GPUs and the idle-GPU set follow.
  void note_gpu_free_change(NodeId n, std::uint32_t gi, std::int32_t before, std::int32_t after);
  void set_visible_free(NodeId n, std::uint32_t gi, std::int32_t milli, Bytes memory);
  Status check_live_node(NodeId n, std::string_view event) const;
  Status set_flag(NodeId n, std::uint8_t flag, bool on, std::string_view event);
  void compact_labels_if_sparse();
  FitReason check_host_fit(NodeId n, const TaskRequest& request) const;

  // The hook every mutation ends with (see "Extending the state" above).
  void note_node_change(NodeId n) { node_version_[n] = ++generation_; }
  void note_layout_change() {
    ++layout_generation_;
    ++capacity_generation_;
  }
  void note_availability_change() { ++layout_generation_; }  // cordon, failure, GPU health

  void apply(const TaskAssignment& a, int sign);
  // Cluster events that change whether node n takes work (cordon, failure, GPU health) call this so
  // that its MIG GPUs leave or rejoin the MIG class index.
  void sync_mig_availability(NodeId n);
  Status parse_mig_gpu(const ClusterView& view, std::size_t n, std::size_t g, GpuModelId model, ParsedNode& out);
  Status validate_mig(const TaskRequest& request, const TaskAssignment& a) const;
  // validate() without messages: whether it would accept (MIG tasks: by validate itself).
  bool acceptable(const TaskRequest& request, const TaskAssignment& a) const;
  FitReason node_can_serve_mig(NodeId n, const TaskRequest& request) const;
  void apply_mig(const TaskAssignment& a, int sign);
  void reindex(NodeId n, std::int32_t old_idle, bool old_partial);
  std::size_t bucket_slot(std::uint8_t model_key) const;

  GpuModelRegistry registry_;
  std::vector<std::string> node_name_;
  // Owns its keys (a copied state must not point into another state's names); looked up by
  // string_view without allocating.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, NodeId, NameHash, std::equal_to<>> node_by_name_;
  std::vector<MilliCpu> cpu_capacity_, cpu_free_;
  std::vector<Bytes> memory_capacity_, memory_free_;
  std::vector<std::uint8_t> flags_;
  std::vector<std::uint32_t> gpu_begin_, gpu_end_;
  std::vector<GpuModelMask> node_models_;
  std::vector<std::uint8_t> node_index_model_;
  std::vector<std::int32_t> idle_gpus_;
  std::vector<MilliGpu> free_gpu_milli_;
  std::vector<std::uint32_t> partial_gpus_;  // GPUs with 0 < free < 1000 (kept, not recounted: O(1) per change)
  // Share-indexed nodes' partly used GPUs, and on nodes of several models their idle GPUs too (a
  // node of one model finds its lowest idle GPU in idle_gpu_slots_; keying every idle GPU made
  // filling a 65,535-GPU node 1.3-2.4x slower): (node << 32 | model << 26 | free << 16 | local
  // index), kept by note_gpu_free_change. Model ids are below 64 and free shares at most 1000, so
  // the fields do not overlap.
  std::set<std::uint64_t> partial_shares_;
  static bool share_keyed(std::int32_t free, bool mixed_models) {
    return free > 0 && (free < kMilliPerGpu || mixed_models);
  }
  static std::uint64_t share_key(NodeId n, GpuModelId model, std::int32_t free, std::uint32_t local) {
    return (std::uint64_t{n} << 32) | (std::uint64_t{model} << 26) | (static_cast<std::uint64_t>(free) << 16) | local;
  }
  // The least (free, local index) >= `share` with `memory` free among node n's keyed GPUs of one
  // model; {-1, -1} when none.
  std::pair<std::int32_t, std::int32_t> least_share_of_model(NodeId n, GpuModelId model, std::int32_t share,
                                                             Bytes memory) const;
  std::vector<std::uint64_t> node_version_;
  std::size_t live_nodes_ = 0;

  std::vector<std::int32_t> gpu_free_milli_;
  std::vector<Bytes> gpu_free_memory_, gpu_memory_capacity_;
  std::vector<GpuModelId> gpu_model_;
  std::vector<std::uint8_t> gpu_healthy_;
  // What is free on each unhealthy GPU (by global GPU slot), kept aside while it reads 0.
  struct WithheldGpu {
    std::int32_t free_milli = 0;
    Bytes free_memory = 0;
    friend bool operator==(const WithheldGpu&, const WithheldGpu&) = default;
  };
  std::unordered_map<std::uint32_t, WithheldGpu> withheld_;

  std::vector<std::string> label_keys_, label_values_;
  using LabelDictionary = std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>>;
  // The id of a label key or value, added to the dictionary when new.
  static std::uint32_t intern_label(LabelDictionary& ids, std::vector<std::string>& names, std::string_view text);
  LabelDictionary label_key_ids_, label_value_ids_;
  // Node n's labels are labels_[label_begin_[n], +label_count_[n]); a node whose label set grows
  // moves its run to the end, and the holes are compacted away when they are half the array.
  std::vector<std::uint32_t> label_begin_, label_count_;
  std::vector<LabelRequirement> labels_;
  std::size_t label_holes_ = 0;

  std::int32_t max_gpus_per_node_ = 0;
  std::vector<std::uint8_t> model_keys_;
  std::vector<std::int16_t> model_slot_;          // model key -> slot in buckets_, -1 if absent
  std::vector<std::vector<NodeBitset>> buckets_;  // [slot][idle]
  std::vector<NodeBitset> levels_;                // [slot]: the idle counts whose bucket is non-empty
  NodeBitset idle_gpu_slots_;                     // GPU slots with free share 1000
  NodeBitset partial_nodes_;
  std::uint32_t index_capacity_ = 0;              // id range of every bitset of the index
  MilliGpu total_gpu_capacity_ = 0, total_gpu_free_ = 0;
  EligibleTotals eligible_;
  std::vector<GpuModelId> model_order_;

  // The journal of reservations and journaled releases since the last commit, flat (an entry's GPU
  // indices in journal_gpus_): what-if searches journal and roll back thousands of tasks, and a
  // vector of TaskAssignments allocated once per entry (a fifth of a backfill plan's time went to
  // malloc). `scratch_` is the assignment a rollback rebuilds an entry into.
  struct JournalEntry {
    NodeId node = kNoNode;
    std::uint32_t gpus_begin = 0, gpus_count = 0;
    MilliGpu gpu_milli = 0;
    Bytes gpu_memory = 0;
    MilliCpu cpu = 0;
    Bytes memory = 0;
    std::int8_t mig_profile = -1, mig_start = -1;
    bool mig_create = false;
    bool released = false;  // a journaled release (else a reservation)
  };
  void journal(const TaskAssignment& a, bool released);
  std::vector<JournalEntry> journal_;
  std::vector<GpuIndex> journal_gpus_;
  TaskAssignment scratch_;
  mig::MigGpuTable mig_;

  // Caches of the readers (build and add_node), not state: each GPU model spelling met and its id,
  // and the buffers of the node being added.
  std::unordered_map<std::string, GpuModelId, NameHash, std::equal_to<>> model_by_spelling_;
  ParsedNode add_node_scratch_;

  detail::ClusterStateInstanceId instance_;
  std::uint64_t generation_ = 0;
  std::uint64_t layout_generation_ = 0;
  std::uint64_t capacity_generation_ = 0;

  InterconnectTable interconnects_;
  // Cache of the readers: (model << 32 | GPU count) -> interned known interconnect, or kNoShape.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> known_shape_;
  std::vector<std::string> topology_levels_;
};

// --- the facets ------------------------------------------------------------------------------------
// Each is a pointer to the state: take one where it is needed (`state.shares().idle_gpus(n)`); it
// sees every later change and must not outlive the state.

// The GPUs' free shares (a whole GPU is 1000 milli; an unhealthy GPU or one in MIG mode reads 0).
class ClusterState::Shares {
 public:
  explicit Shares(const ClusterState& state) : s_(&state) {}
  MilliGpu free_milli(NodeId n, GpuIndex g) const { return s_->gpu_free_milli(n, g); }
  Bytes free_memory(NodeId n, GpuIndex g) const { return s_->gpu_free_memory_[s_->gpu_begin_[n] + g]; }
  Bytes memory_capacity(NodeId n, GpuIndex g) const { return s_->gpu_memory_capacity_[s_->gpu_begin_[n] + g]; }
  // Free shares of the node's GPUs, in GPU index order.
  std::span<const std::int32_t> free_milli(NodeId n) const {
    return {s_->gpu_free_milli_.data() + s_->gpu_begin_[n], s_->gpu_count(n)};
  }
  // What is free on a GPU whatever its health (an unhealthy GPU reads 0 above; this is the share it
  // will have again once healthy). For views and reports, not for decisions.
  MilliGpu free_milli_if_healthy(NodeId n, GpuIndex g) const { return s_->gpu_free_milli_if_healthy(n, g); }
  Bytes free_memory_if_healthy(NodeId n, GpuIndex g) const { return s_->gpu_free_memory_if_healthy(n, g); }
  // Idle (free share 1000) healthy GPUs on the node, and the sum of its free shares.
  std::int32_t idle_gpus(NodeId n) const { return s_->idle_gpus(n); }
  MilliGpu node_free_milli(NodeId n) const { return s_->free_gpu_milli_[n]; }
  // Cluster-wide sums over healthy GPUs of eligible and ineligible (cordoned, failed) nodes alike;
  // removed nodes count in none.
  MilliGpu total_capacity() const { return s_->total_gpu_capacity_; }
  MilliGpu total_free() const { return s_->total_gpu_free_; }
  // The sums over eligible nodes that fair share reads every cycle in O(GPU models) instead of
  // scanning every GPU (EligibleTotals).
  const EligibleTotals& eligible_totals() const { return s_->eligible_; }
  // The GPU models of the nodes in order of first appearance (node by node, GPU by GPU, removed
  // nodes included): the order in which fair share gives the models their dimensions.
  std::span<const GpuModelId> models_in_order() const { return s_->model_order_; }

 private:
  const ClusterState* s_;
};

// The node labels, as dictionary ids (a selector compiles to them: TaskRequest::selector).
class ClusterState::Labels {
 public:
  explicit Labels(const ClusterState& state) : s_(&state) {}
  // Node n's labels.
  std::span<const LabelRequirement> of(NodeId n) const {
    return {s_->labels_.data() + s_->label_begin_[n], s_->label_count_[n]};
  }
  // The value of label `key` on node n, or kUnknownLabel.
  std::uint32_t value_of(NodeId n, std::uint32_t key) const { return s_->node_label_value(n, key); }
  // Dictionary lookups (kUnknownLabel when the string never occurred) and their strings.
  std::uint32_t key_id(std::string_view key) const { return s_->label_key_id(key); }
  std::uint32_t value_id(std::string_view value) const { return s_->label_value_id(value); }
  std::string_view key(std::uint32_t id) const { return s_->label_keys_[id]; }
  std::string_view value(std::uint32_t id) const { return s_->label_values_[id]; }

 private:
  const ClusterState* s_;
};

// The MIG GPUs (cluster/mig_gpus.hpp). MIG tasks (TaskRequest::mig) go through reserve/release; the
// mode and layout change by the events set_mig_mode and apply_mig_layout.
class ClusterState::Mig {
 public:
  explicit Mig(const ClusterState& state) : s_(&state) {}
  // The MIG GPUs, their instances and class index.
  const mig::MigGpuTable& table() const { return s_->mig_; }
  // The MIG id of GPU g of node n, mig::kNoGpu when it is not in MIG mode.
  mig::MigGpuId gpu(NodeId n, GpuIndex g) const { return s_->mig_gpu(n, g); }
  // Whether GPU g of node n is in MIG mode.
  bool mode(NodeId n, GpuIndex g) const { return gpu(n, g) != mig::kNoGpu; }
  // Whether its instances are created outside the scheduler only (GpuInfo::mig_layout_fixed).
  bool layout_fixed(NodeId n, GpuIndex g) const {
    const mig::MigGpuId id = gpu(n, g);
    return id != mig::kNoGpu && s_->mig_.layout_fixed(id);
  }
  // Fills the MIG part of `out` (GPU, profile, start, create) for a MIG request on node n: an idle
  // instance on the lowest GPU first, else the lowest free valid start (first fit; the
  // fragmentation-aware choice is mig::MigPlacer's). False when none can serve.
  bool pick_instance(NodeId n, const TaskRequest& request, TaskAssignment& out) const {
    return s_->pick_mig_instance(n, request, out);
  }

 private:
  const ClusterState* s_;
};

// Intra-node interconnects (cluster/node_interconnect.hpp) and the declared topology levels
// (cluster/domains.hpp).
class ClusterState::Topology {
 public:
  explicit Topology(const ClusterState& state) : s_(&state) {}
  // Node n's interconnect (its model's known default after `build`, or what was set), or nullptr.
  const NodeInterconnect* interconnect(NodeId n) const { return s_->node_interconnect(n); }
  // Whether node n has what `build` gives it: its model's known default (or none without one), not
  // an interconnect set by event or given by the view.
  bool interconnect_is_default(NodeId n) const { return s_->node_interconnect_is_default(n); }
  const InterconnectTable& interconnects() const { return s_->interconnects_; }
  // The declared topology levels (node label keys, outermost first) that every family's domain rule
  // uses for levels not given a hierarchy of their own.
  std::span<const std::string> levels() const { return s_->topology_levels_; }

 private:
  const ClusterState* s_;
};

inline ClusterState::Shares ClusterState::shares() const { return Shares(*this); }
inline ClusterState::Labels ClusterState::labels() const { return Labels(*this); }
inline ClusterState::Mig ClusterState::mig() const { return Mig(*this); }
inline ClusterState::Topology ClusterState::topology() const { return Topology(*this); }

namespace detail {
// The state's index, for the families' hot paths (packing's bucket walks, gang's capacity bounds,
// the shared-GPU pickers): not a user's API, and free to change with the index.
class ClusterIndex {
 public:
  explicit ClusterIndex(const ClusterState& state) : s_(&state) {}
  // Node n's key in the index: its single GPU model id when homogeneous, else
  // ClusterState::kMixedModels (or kNoGpuKey for a GPU-less node).
  std::uint8_t node_model_key(NodeId n) const { return s_->node_index_model_[n]; }
  // The index model keys present in this state, ascending (a key whose nodes were all removed stays).
  std::span<const std::uint8_t> model_keys() const { return s_->model_keys_; }
  // Eligible nodes whose index key is `model_key` and that have exactly `idle` idle GPUs (nullptr
  // when there is no such bucket).
  const NodeBitset* idle_bucket(std::uint8_t model_key, std::int32_t idle) const { return s_->idle_bucket(model_key, idle); }
  // The smallest idle count >= `from` (next) or largest <= `from` (prev) whose bucket of `model_key`
  // holds a node, or -1. Walks over the buckets skip empty ones through these, so a walk costs the
  // non-empty buckets, not max_gpus_per_node() (65,535 buckets for one node of 65,535 GPUs).
  std::int32_t next_idle_level(std::uint8_t model_key, std::int32_t from) const { return s_->next_idle_level(model_key, from); }
  std::int32_t prev_idle_level(std::uint8_t model_key, std::int32_t from) const { return s_->prev_idle_level(model_key, from); }
  // Eligible nodes with at least one GPU that is partly used (0 < free < 1000).
  const NodeBitset& partial_nodes() const { return s_->partial_nodes_; }
  // The lowest GPU index >= `from` of node n that is idle (free share 1000: healthy, not MIG), or
  // -1 when none. O(1) per idle GPU skipped to, not per busy GPU passed.
  std::int32_t next_idle_gpu(NodeId n, std::size_t from) const { return s_->next_idle_gpu(n, from); }
  // Nodes of more than kShareIndexGpus GPUs keep their GPUs that have free share ordered by (model,
  // free share, index), so a shared task's questions cost O(models x log G) there instead of a scan
  // of every GPU (issue 15: filling one node of thousands of GPUs with shared tasks was quadratic).
  static constexpr std::size_t kShareIndexGpus = ClusterState::kShareIndexGpus;
  bool share_indexed(NodeId n) const { return s_->share_indexed(n); }
  // The most free share on one GPU of node n of the `models` given (1000 with such an idle GPU, 0
  // without), any GPU memory.
  std::int32_t most_free_share(NodeId n, GpuModelMask models = ~GpuModelMask{0}) const { return s_->most_free_share(n, models); }
  // A share-indexed node: the GPU of the `models` given with the least free share >= `share` and at
  // least `memory` free GPU memory (a partly used GPU first, by share, then the lowest idle one; the
  // lowest index among equal shares); -1 when none. Without memory asked O(models x log G); with it,
  // GPUs whose memory is short are stepped over in that order (a scan only when most are short).
  std::int32_t least_share_gpu(NodeId n, MilliGpu share, GpuModelMask models = ~GpuModelMask{0}, Bytes memory = 0) const {
    return s_->least_share_gpu(n, share, models, memory);
  }

 private:
  const ClusterState* s_;
};
inline ClusterIndex cluster_index(const ClusterState& state) { return ClusterIndex(state); }
}  // namespace detail

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/cluster/detail/cluster_state_impl.hpp"
#endif
