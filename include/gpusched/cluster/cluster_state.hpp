// gpusched/cluster/cluster_state.hpp — the indexed, mutable what-if snapshot policies work on.
//
// `ClusterState::build` reads a `ClusterView` once into flat arrays (structure of arrays: one entry
// per node, one per GPU) and keeps, for every GPU model, the set of nodes with exactly k idle GPUs.
// With that index a best-fit decision visits a few nodes instead of all of them, and applying a
// decision updates O(1) index entries.
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
// Memory per node: ~80 bytes of node arrays + ~24 bytes per GPU + index bits (see
// benchmarks/README.md for the measured figure).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/cluster/node_interconnect.hpp"
#include "gpusched/cluster/views.hpp"
#include "gpusched/core/gpu_model.hpp"
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
};

// A task's request compiled against a state's dictionaries: the shape, the allowed models as a
// mask, the node selector as ids. Build it with `ClusterState::compile`.
struct TaskRequest {
  TaskShape shape;
  GpuModelMask models = kAnyGpuModel;
  std::vector<LabelRequirement> selector;
};

// Which GPUs of which node a task takes. For a shared task, one GPU index; `gpu_milli` is per GPU.
struct TaskAssignment {
  NodeId node = kNoNode;
  std::vector<GpuIndex> gpus;
  MilliGpu gpu_milli = 0;
  Bytes gpu_memory = 0;
  MilliCpu cpu = 0;
  Bytes memory = 0;
};

// Why a node cannot take a task, checked in this order; the first failing check is the reason.
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
};
inline constexpr std::size_t kFitReasonCount = 10;
std::string_view fit_reason_text(FitReason reason);

class ClusterState {
 public:
  // Reads the view once. Fails (naming the node and field) on a GPU model missing from the
  // registry, negative or inconsistent quantities, duplicate node names, or over 65,535 GPUs a node.
  static Result<ClusterState> build(const ClusterView& view, const GpuModelRegistry& registry);

  // Resolves a job's task group against this state. Fails on an allowed GPU model that the
  // registry does not know, or an invalid shape (negative amounts, share outside 1..1000, a share
  // below 1000 on several GPUs).
  Result<TaskRequest> compile(const JobView& job, std::size_t group) const;
  Result<TaskRequest> compile(const TaskShape& shape, std::span<const std::string_view> allowed_models = {},
                              std::span<const Label> selector = {}) const;

  // --- read access -------------------------------------------------------------------------------
  std::size_t node_count() const { return node_name_.size(); }
  std::size_t total_gpu_count() const { return gpu_free_milli_.size(); }
  const GpuModelRegistry& registry() const { return registry_; }
  std::string_view node_name(NodeId n) const { return node_name_[n]; }
  NodeId find_node(std::string_view name) const;

  MilliCpu cpu_capacity(NodeId n) const { return cpu_capacity_[n]; }
  MilliCpu cpu_free(NodeId n) const { return cpu_free_[n]; }
  Bytes memory_capacity(NodeId n) const { return memory_capacity_[n]; }
  Bytes memory_free(NodeId n) const { return memory_free_[n]; }
  bool eligible(NodeId n) const { return flags_[n] == 0; }
  bool schedulable(NodeId n) const { return (flags_[n] & kFlagCordoned) == 0; }
  bool healthy(NodeId n) const { return (flags_[n] & kFlagFailed) == 0; }
  std::size_t gpu_count(NodeId n) const { return gpu_end_[n] - gpu_begin_[n]; }
  // The node's GPU models as a mask, and its single model id when homogeneous (else kMixedModels).
  GpuModelMask node_models(NodeId n) const { return node_models_[n]; }
  static constexpr std::uint8_t kMixedModels = 0xff;
  std::uint8_t node_index_model(NodeId n) const { return node_index_model_[n]; }

  MilliGpu gpu_free_milli(NodeId n, GpuIndex g) const { return gpu_free_milli_[gpu_begin_[n] + g]; }
  Bytes gpu_free_memory(NodeId n, GpuIndex g) const { return gpu_free_memory_[gpu_begin_[n] + g]; }
  Bytes gpu_memory_capacity(NodeId n, GpuIndex g) const { return gpu_memory_capacity_[gpu_begin_[n] + g]; }
  GpuModelId gpu_model(NodeId n, GpuIndex g) const { return gpu_model_[gpu_begin_[n] + g]; }
  bool gpu_healthy(NodeId n, GpuIndex g) const { return gpu_healthy_[gpu_begin_[n] + g] != 0; }
  // Free shares of the node's GPUs, in GPU index order (unhealthy GPUs read 0).
  std::span<const std::int32_t> gpu_free_milli(NodeId n) const {
    return {gpu_free_milli_.data() + gpu_begin_[n], gpu_count(n)};
  }
  // Idle (free share 1000) healthy GPUs on the node, and the sum of free shares.
  std::int32_t idle_gpus(NodeId n) const { return idle_gpus_[n]; }
  MilliGpu free_gpu_milli(NodeId n) const { return free_gpu_milli_[n]; }
  // Cluster-wide sums over healthy GPUs of eligible and ineligible nodes alike.
  MilliGpu total_gpu_milli_capacity() const { return total_gpu_capacity_; }
  MilliGpu total_gpu_milli_free() const { return total_gpu_free_; }

  std::span<const LabelRequirement> node_labels(NodeId n) const {
    return {labels_.data() + label_begin_[n], label_begin_[n + 1] - label_begin_[n]};
  }
  // Dictionary lookups; std::nullopt-like `kUnknownLabel` when the string never occurs.
  static constexpr std::uint32_t kUnknownLabel = ~std::uint32_t{0};
  std::uint32_t label_key_id(std::string_view key) const;
  std::uint32_t label_value_id(std::string_view value) const;
  std::string_view label_key(std::uint32_t id) const { return label_keys_[id]; }
  std::string_view label_value(std::uint32_t id) const { return label_values_[id]; }
  // The value of a label on a node, or kUnknownLabel.
  std::uint32_t node_label_value(NodeId n, std::uint32_t key) const;

  // --- intra-node topology and topology levels (cluster/node_interconnect.hpp, cluster/domains.hpp) ---
  // Node n's interconnect (its model's known default after `build`, or what was set), or nullptr.
  const NodeInterconnect* node_interconnect(NodeId n) const { return interconnects_.of(n); }
  const InterconnectTable& interconnects() const { return interconnects_; }
  // Event "node topology set": sets or replaces node n's interconnect (e.g. from its `nvidia-smi
  // topo -m`). Refused, changing nothing, for an unknown node or a matrix that does not fit it.
  Status set_node_interconnect(NodeId n, NodeInterconnect interconnect) {
    if (n >= node_count())
      return Error{"node: unknown node id " + std::to_string(n), ErrorCode::kState, "node"};
    if (Status ok = validate_interconnect(interconnect, gpu_count(n)); !ok) return ok;
    interconnects_.set(n, std::move(interconnect));
    return {};
  }
  // The declared topology levels (node label keys, outermost first) that every family's domain
  // rule uses for levels not given a hierarchy of their own (see cluster/domains.hpp).
  std::span<const std::string> topology_levels() const { return topology_levels_; }
  // Event "topology levels set". Refused for an empty or repeated key.
  Status set_topology_levels(std::vector<std::string> keys) {
    for (std::size_t l = 0; l < keys.size(); ++l) {
      const std::string field = "topology_levels[" + std::to_string(l) + "]";
      if (keys[l].empty()) return Error{field + ": must not be empty", ErrorCode::kInvalidValue, field};
      for (std::size_t m = 0; m < l; ++m)
        if (keys[m] == keys[l])
          return Error{field + ": '" + keys[l] + "' repeats topology_levels[" + std::to_string(m) + "]",
                       ErrorCode::kDuplicate, field};
    }
    topology_levels_ = std::move(keys);
    return {};
  }

  // --- the index ---------------------------------------------------------------------------------
  // Nodes whose index model is `model_key` (a GpuModelId, or kMixedModels, or kNoGpuKey for GPU-less
  // nodes) and that have exactly `idle` idle GPUs. Only eligible nodes are indexed.
  static constexpr std::uint8_t kNoGpuKey = 0xfe;
  const NodeBitset* idle_bucket(std::uint8_t model_key, std::int32_t idle) const;
  std::int32_t max_gpus_per_node() const { return max_gpus_per_node_; }
  // The index model keys present in this state.
  std::span<const std::uint8_t> model_keys() const { return model_keys_; }
  // Eligible nodes with at least one GPU that is partly used (0 < free < 1000).
  const NodeBitset& partial_nodes() const { return partial_nodes_; }

  // --- fit and mutation --------------------------------------------------------------------------
  // Can node n take one task of `request` now? kFits or the first failing reason.
  FitReason check_fit(NodeId n, const TaskRequest& request) const;
  // Would `assignment` be valid for `request` (node fits, GPUs exist, are distinct, allowed, free)?
  Status validate(const TaskRequest& request, const TaskAssignment& assignment) const;
  // Applies an assignment built by a GPU picker (see gpusched/packing). Refused with an error if
  // invalid; then nothing changes.
  Status reserve(const TaskRequest& request, const TaskAssignment& assignment);
  // Gives back what an earlier reservation took (a task finishing, in the simulator). Refused if it
  // would free more than is used.
  Status release(const TaskAssignment& assignment);

  using Checkpoint = std::size_t;
  Checkpoint checkpoint() const { return journal_.size(); }
  void rollback(Checkpoint mark);
  void commit() { journal_.clear(); }
  std::size_t journal_size() const { return journal_.size(); }

  // Heap bytes held by the snapshot (arrays, dictionaries' strings excluded), for capacity planning.
  std::size_t memory_usage() const;

  // Exact equality of all mutable state (for rollback tests).
  bool same_allocation_as(const ClusterState& other) const;

 private:
  static constexpr std::uint8_t kFlagCordoned = 1;
  static constexpr std::uint8_t kFlagFailed = 2;

  void apply(const TaskAssignment& a, int sign);
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
  std::vector<std::uint8_t> has_partial_;

  std::vector<std::int32_t> gpu_free_milli_;
  std::vector<Bytes> gpu_free_memory_, gpu_memory_capacity_;
  std::vector<GpuModelId> gpu_model_;
  std::vector<std::uint8_t> gpu_healthy_;

  std::vector<std::string> label_keys_, label_values_;
  std::unordered_map<std::string, std::uint32_t> label_key_ids_, label_value_ids_;
  std::vector<std::uint32_t> label_begin_;
  std::vector<LabelRequirement> labels_;

  std::int32_t max_gpus_per_node_ = 0;
  std::vector<std::uint8_t> model_keys_;
  std::vector<std::int16_t> model_slot_;          // model key -> slot in buckets_, -1 if absent
  std::vector<std::vector<NodeBitset>> buckets_;  // [slot][idle]
  NodeBitset partial_nodes_;
  MilliGpu total_gpu_capacity_ = 0, total_gpu_free_ = 0;

  std::vector<TaskAssignment> journal_;

  InterconnectTable interconnects_;
  std::vector<std::string> topology_levels_;
};

}  // namespace gpusched
