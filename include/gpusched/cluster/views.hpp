// gpusched/cluster/views.hpp — the integration boundary: `ClusterView` and `JobView`.
//
// An orchestrator keeps its own state (an informer cache, a Slurm node table, a Ray GCS view). To ask
// gpusched anything it implements these two small read-only interfaces over that state, without
// copying it: every accessor returns a small value or a `std::string_view` into the caller's memory,
// valid for the duration of the call into gpusched. The library never mutates the views.
//
//   class MyCluster : public gpusched::ClusterView { ... node_count(), node_name(n), ... };
//   auto state = gpusched::ClusterState::build(my_cluster, gpusched::GpuModelRegistry::builtin());
//
// Hot paths never go back to the views: `ClusterState::build` reads them once into an indexed
// snapshot that decisions then update incrementally (see cluster_state.hpp). examples/
// embed_orchestrator.cpp is a complete, tested implementation.
//
// The JobView is the one job model of every policy family: an orchestrator says everything about a
// job once, and packing, gangs, MIG and fair share read what they need from it (through
// `compile_job`, packing/placement.hpp, which resolves it against a state into a `CompiledJob`):
//
//   what                         accessor                               read by
//   name, queue                  name(), queue()                        all; fair share (queue)
//   priority, priority class     priority(), priority_class()           queue order, preemption
//   submit time                  submit_time()                          FIFO order, fair share
//   groups: replicas, minimum    group(g).replicas / .min_replicas      packing, gangs (elastic)
//   per task: CPU, memory, GPUs,
//     GPU share, GPU memory      group(g).shape                         packing, gangs, fair share
//   per task: a MIG profile      group(g).mig_profile ("1g.10gb")       MIG
//   allowed GPU models           allowed_model_count/allowed_model      all placement
//   node selector                selector_count/selector                all placement
//   gang: one topology domain    topology()                             gangs, topology
//   gang: spread                 spread_count/spread/spread_group...    gangs
//   gang: anti-affinity          anti_affinity_count/anti_affinity      gangs
//
// Every accessor beyond name() and the groups has a default meaning "not said", so an
// implementation only overrides what its orchestrator knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "gpusched/core/quantity.hpp"

namespace gpusched {

using Label = std::pair<std::string_view, std::string_view>;

// Host resources of one node: what it has and what is free now.
struct NodeResources {
  MilliCpu cpu_capacity = 0;
  MilliCpu cpu_free = 0;
  Bytes memory_capacity = 0;
  Bytes memory_free = 0;
};

// One GPU of a node as the orchestrator sees it now.
struct GpuInfo {
  std::string_view model;           // a name or alias known to the GpuModelRegistry
  MilliGpu free_milli = kMilliPerGpu;  // free share: 1000 = idle, 0 = fully taken
  Bytes used_memory = 0;            // GPU memory taken (free = the model's memory - this)
  bool healthy = true;
  // MIG mode on: the GPU is partitioned into GPU instances (ClusterView::mig_instance) and takes no
  // whole-GPU or shared task; `free_milli` and `used_memory` are then ignored (docs/mig.md).
  bool mig_mode = false;
  // The MIG layout is managed outside the scheduler (Kubernetes: the GPU operator's MIG manager
  // creates the instances and the device plugin advertises them; the scheduler can only bind an
  // existing idle instance). A placement then takes an idle instance and never creates one; a new
  // layout is a re-partition plan (gpusched/mig/planner.hpp) applied as the cluster event
  // ClusterState::apply_mig_layout. What could ever fit still counts what a re-partition could make:
  // a job whose profile the layout lacks is "not now" (no idle MIG instance), never "infeasible".
  // False: instances may be created in free slices (dynamic MIG).
  bool mig_layout_fixed = false;
};

// One MIG GPU instance of a GPU in MIG mode: its NVML profile ID in the GPU model's table
// (gpusched/core/mig_profiles.hpp), its first memory slice, and whether a workload holds it.
struct MigInstanceInfo {
  std::uint32_t profile_id = 0;
  std::uint8_t start = 0;
  bool busy = false;
};

struct NodeInterconnect;  // gpusched/cluster/node_interconnect.hpp

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::size_t node_count() const = 0;
  virtual std::string_view node_name(std::size_t node) const = 0;
  virtual NodeResources node_resources(std::size_t node) const = 0;
  virtual std::size_t gpu_count(std::size_t node) const = 0;
  virtual GpuInfo gpu(std::size_t node, std::size_t gpu) const = 0;
  // Cordoned nodes are not schedulable; failed nodes are not healthy. Neither takes new work.
  virtual bool schedulable(std::size_t /*node*/) const { return true; }
  virtual bool healthy(std::size_t /*node*/) const { return true; }
  virtual std::size_t label_count(std::size_t /*node*/) const { return 0; }
  virtual Label label(std::size_t /*node*/, std::size_t /*index*/) const { return {}; }
  // The GPU instances of a GPU in MIG mode (GpuInfo::mig_mode).
  virtual std::size_t mig_instance_count(std::size_t /*node*/, std::size_t /*gpu*/) const { return 0; }
  virtual MigInstanceInfo mig_instance(std::size_t /*node*/, std::size_t /*gpu*/, std::size_t /*index*/) const {
    return {};
  }
  // The node's intra-node interconnect (e.g. read from its `nvidia-smi topo -m`), or nullptr for the
  // GPU model's known default (ClusterState::build assigns it).
  virtual const NodeInterconnect* node_interconnect(std::size_t /*node*/) const { return nullptr; }
};

// What one task (one replica of a task group) asks for.
//
// `gpus` whole GPUs, each with `gpu_milli` of its share. A shared-GPU task has gpus == 1 and
// 0 < gpu_milli < 1000 (the Alibaba trace's num_gpu/gpu_milli); a multi-GPU task takes whole GPUs
// (gpu_milli == 1000). `gpu_memory` is per GPU and optional (0 = no memory constraint).
struct TaskShape {
  MilliCpu cpu = 0;
  Bytes memory = 0;
  GpuCount gpus = 0;
  MilliGpu gpu_milli = 0;
  Bytes gpu_memory = 0;

  constexpr bool needs_gpu() const { return gpus > 0 && gpu_milli > 0; }
  constexpr bool shares_gpu() const { return gpus == 1 && gpu_milli > 0 && gpu_milli < kMilliPerGpu; }
  constexpr MilliGpu total_gpu_milli() const { return needs_gpu() ? gpus * gpu_milli : 0; }
  friend constexpr bool operator==(const TaskShape&, const TaskShape&) = default;
};

// The most tasks one job may have (all its groups' replicas together): 2^20, beyond any GPU job (the
// largest training runs are tens of thousands of ranks). The bound keeps place_job linear in what a
// cluster can hold: a group of 10^9 zero-sized tasks is an error, not a billion placements.
inline constexpr std::int32_t kMaxJobTasks = 1 << 20;

// The most GPUs one cluster may have: 2^20, ten times the largest AI clusters known (10^5 GPUs). A
// reader refuses more before it allocates them (200 nodes of "65535" GPUs, 40 KB of text, took
// 1.3 GB), and ClusterState::build refuses a view beyond it.
inline constexpr std::size_t kMaxClusterGpus = std::size_t{1} << 20;

struct TaskGroupInfo {
  std::string_view name;
  std::int32_t replicas = 1;
  std::int32_t min_replicas = -1;  // -1 = all replicas (a rigid gang)
  TaskShape shape;
  // A MIG instance per task, by profile name as nvidia-smi prints it ("1g.10gb", "3g.40gb"); empty =
  // none. The MIG family resolves the name against the GPU models' profile tables.
  std::string_view mig_profile = {};
};

// The level name meaning "one node" (each node is its own domain). "kubernetes.io/hostname" is
// accepted as a synonym.
inline constexpr std::string_view kNodeLevel = "node";

// Whether a topology level is a requirement (else the job cannot run) or a preference (one domain
// if any can hold the job, else as few as possible) — Kueue's required/preferred topology — or
// not a constraint at all (kNone: the level is ignored; the topology family's topology-unaware
// baseline). The one LevelMode of every family (topology::LevelMode is this type).
enum class LevelMode : std::uint8_t { kNone, kRequired, kPreferred };

// All tasks of the job in one domain of `level`: kNodeLevel or a node label key (or its last
// component, "rack"); empty level = no topology constraint.
struct TopologyRequest {
  std::string_view level;
  LevelMode mode = LevelMode::kRequired;
};

// Tasks spread over failure domains of `level`: at most `max_per_domain` in any domain and/or at
// least `min_domains` distinct domains (0 = no bound). Which groups it counts is given by
// spread_group_count/spread_group (none = every group).
struct SpreadRequest {
  std::string_view level;
  std::int32_t max_per_domain = 0;
  std::int32_t min_domains = 0;
};

// Two groups (or a group with itself) never share a domain of `level` (empty = kNodeLevel).
struct AntiAffinityRequest {
  std::uint32_t group_a = 0;
  std::uint32_t group_b = 0;
  std::string_view level;
};

class JobView {
 public:
  virtual ~JobView() = default;
  virtual std::string_view name() const = 0;
  // The fair-share queue ("" = the default queue).
  virtual std::string_view queue() const { return {}; }
  // Higher runs first.
  virtual std::int32_t priority() const { return 0; }
  // When the job was submitted, in seconds on the caller's clock (only the order matters, and fair
  // share's aging measures waits from it; 0 = unknown), and its priority class, a name the caller's
  // classes resolve to a number (empty = none: priority() is used).
  virtual std::int64_t submit_time() const { return 0; }
  virtual std::string_view priority_class() const { return {}; }
  virtual std::size_t group_count() const = 0;
  virtual TaskGroupInfo group(std::size_t group) const = 0;
  // Allowed GPU models of a group (an OR-list); none listed = any model.
  virtual std::size_t allowed_model_count(std::size_t /*group*/) const { return 0; }
  virtual std::string_view allowed_model(std::size_t /*group*/, std::size_t /*index*/) const { return {}; }
  // Node-label selector of a group: every (key, value) must be a label of the node.
  virtual std::size_t selector_count(std::size_t /*group*/) const { return 0; }
  virtual Label selector(std::size_t /*group*/, std::size_t /*index*/) const { return {}; }

  // --- gang constraints (docs/gang.md); group indices refer to group(g) ---
  virtual TopologyRequest topology() const { return {}; }
  virtual std::size_t spread_count() const { return 0; }
  virtual SpreadRequest spread(std::size_t /*index*/) const { return {}; }
  virtual std::size_t spread_group_count(std::size_t /*index*/) const { return 0; }
  virtual std::uint32_t spread_group(std::size_t /*index*/, std::size_t /*k*/) const { return 0; }
  virtual std::size_t anti_affinity_count() const { return 0; }
  virtual AntiAffinityRequest anti_affinity(std::size_t /*index*/) const { return {}; }
};

}  // namespace gpusched
