// gpusched/gang/detail/gang_capacity.hpp — how many identical tasks fit: per node, and from the index.
//
// `gang_node_task_capacity` is exact for identical tasks: a whole-GPU task of g GPUs takes g idle GPUs
// (of an allowed model with the GPU memory), a shared task takes its share on one GPU, so k tasks fit
// on a node iff each dimension holds k requests: k = min(cpu_free / cpu, memory_free / memory,
// usable idle GPUs / g) for whole GPUs, and for shares the sum over GPUs of how many shares each GPU
// holds. Placing one task lowers k by exactly one, which is why a greedy fill reaches the count.
//
// `gang_index_bound` reads only the idle-GPU buckets (no node scan): an upper bound on the tasks of one
// request the whole cluster could hold, and the number of nodes with room for one, answered in
// microseconds on 10,000 nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/domains.hpp"

namespace gpusched::detail {

inline constexpr std::int64_t kGangUnbounded = std::numeric_limits<std::int32_t>::max();

struct GangIndexBound {
  std::int64_t tasks = 0;  // upper bound on the tasks that fit (kGangUnbounded when the index cannot tell)
  std::int64_t nodes = 0;  // nodes with room for one task by idle GPUs (whole-GPU tasks); else -1
};

// Tasks of `request` that node n alone could take now (0 when it does not fit); kGangUnbounded for a
// request of nothing.
inline std::int64_t gang_node_task_capacity(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (state.check_fit(n, request) != FitReason::kFits) return 0;
  const TaskShape& shape = request.shape;
  std::int64_t cap = kGangUnbounded;
  if (shape.cpu > 0) cap = std::min(cap, state.cpu_free(n) / shape.cpu);
  if (shape.memory > 0) cap = std::min(cap, state.memory_free(n) / shape.memory);
  if (!shape.needs_gpu()) return cap;
  const auto free = state.shares().free_milli(n);
  if (!shape.shares_gpu()) {
    std::int64_t usable = 0;
    if (gpusched::detail::cluster_index(state).node_model_key(n) != ClusterState::kMixedModels && shape.gpu_memory == 0) {
      usable = state.shares().idle_gpus(n);  // check_fit passed, so the node's one model is allowed
    } else {
      for (std::size_t g = 0; g < free.size(); ++g) {
        const auto gi = static_cast<GpuIndex>(g);
        if (free[g] == kMilliPerGpu && (request.models & model_bit(state.gpu_model(n, gi))) &&
            state.shares().free_memory(n, gi) >= shape.gpu_memory)
          ++usable;
      }
    }
    return std::min(cap, usable / shape.gpus);
  }
  std::int64_t shares = 0;
  for (std::size_t g = 0; g < free.size(); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (!(request.models & model_bit(state.gpu_model(n, gi)))) continue;
    std::int64_t k = free[g] / shape.gpu_milli;
    if (shape.gpu_memory > 0) k = std::min(k, state.shares().free_memory(n, gi) / shape.gpu_memory);
    shares += k;
  }
  return std::min(cap, shares);
}

inline GangIndexBound gang_index_bound(const ClusterState& state, const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  GangIndexBound b;
  if (!shape.needs_gpu()) return {kGangUnbounded, -1};
  if (shape.shares_gpu()) {
    b.tasks = state.shares().total_free() / shape.gpu_milli;
    b.nodes = -1;
    return b;
  }
  for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    if (key != ClusterState::kMixedModels && !(request.models & model_bit(key))) continue;
    for (std::int32_t idle = gpusched::detail::cluster_index(state).next_idle_level(key, shape.gpus); idle >= 0; idle = gpusched::detail::cluster_index(state).next_idle_level(key, idle + 1)) {
      const NodeBitset* bucket = gpusched::detail::cluster_index(state).idle_bucket(key, idle);
      if (!bucket || bucket->empty()) continue;
      b.nodes += bucket->count();
      b.tasks += static_cast<std::int64_t>(bucket->count()) * (idle / shape.gpus);
    }
  }
  return b;
}

inline std::int64_t gang_indexed_idle_gpus(const ClusterState& state) {
  std::int64_t total = 0;
  for (std::uint8_t key : gpusched::detail::cluster_index(state).model_keys()) {
    if (key == ClusterState::kNoGpuKey) continue;
    for (std::int32_t idle = gpusched::detail::cluster_index(state).next_idle_level(key, 1); idle >= 0; idle = gpusched::detail::cluster_index(state).next_idle_level(key, idle + 1)) {
      const NodeBitset* bucket = gpusched::detail::cluster_index(state).idle_bucket(key, idle);
      if (bucket) total += static_cast<std::int64_t>(bucket->count()) * idle;
    }
  }
  return total;
}

}  // namespace gpusched::detail

// --- capacity at empty, per domain (cached per capacity generation) --------------------------------
//
// Whether a gang that does not fit now could ever fit is a question about the cluster as if every
// allocation were gone and every node repaired: the capacities of all nodes not removed (CPU,
// memory, GPUs by model and GPU memory, MIG GPUs by MIG model). A cordoned or failed node, or a
// failed GPU, comes back (uncordon, recover_node, set_gpu_health): a gang that needs it waits ("not
// now", kNodeUnschedulable/kNodeUnhealthy in its reasons) rather than being turned away for good.
// That changes only with cluster events (not cordons or failures), never with allocations, so it is
// summarised once per capacity generation of the state (cluster_state.hpp) as
// classes of identical empty nodes, and per domain of a level as (class, count) pairs: a 10,000-node
// cluster has a handful of node shapes, so a bound per domain costs O(domains x shapes), not a node
// scan. The counts ignore node selectors (an upper bound, which is what a proof of infeasibility
// needs: a gang above it fits nowhere, whatever is freed).
namespace gpusched::detail {

struct GangEmptyGpu {
  GpuModelId model = 0;
  Bytes memory = 0;
  std::int16_t mig_model = -1;  // the GPU's MIG model when it is in MIG mode, else -1
  friend auto operator<=>(const GangEmptyGpu&, const GangEmptyGpu&) = default;
};

// One class of identical nodes, as if empty (healthy GPUs only).
struct GangEmptyShape {
  MilliCpu cpu = 0;
  Bytes memory = 0;
  std::vector<GangEmptyGpu> gpus;  // sorted
  friend auto operator<=>(const GangEmptyShape&, const GangEmptyShape&) = default;
};

// Tasks of `request` one empty node of `shape` could hold, selectors aside. A whole-GPU or shared
// task counts the GPUs not in MIG mode (a MIG GPU takes neither until an event turns MIG off); a MIG
// task counts, per MIG GPU of an allowed model that has the profile, the profile's "Total" instances
// per GPU (nvidia-smi mig -lgip; NVIDIA MIG user guide, "Supported MIG Profiles"), which no layout
// exceeds.
inline std::int64_t gang_empty_shape_capacity(const mig::MigCatalog& catalog, const GangEmptyShape& node,
                                              const TaskRequest& request) {
  const TaskShape& shape = request.shape;
  if (shape.cpu > node.cpu || shape.memory > node.memory) return 0;
  std::int64_t cap = kGangUnbounded;
  if (shape.cpu > 0) cap = std::min<std::int64_t>(cap, node.cpu / shape.cpu);
  if (shape.memory > 0) cap = std::min<std::int64_t>(cap, node.memory / shape.memory);
  if (request.mig.any()) {
    std::int64_t instances = 0;
    for (const GangEmptyGpu& g : node.gpus) {
      if (g.mig_model < 0 || !(request.models & model_bit(g.model))) continue;
      const int p = request.mig.profile[static_cast<std::size_t>(g.mig_model)];
      if (p < 0) continue;
      const auto& spec = catalog.spec(static_cast<mig::MigModelId>(g.mig_model));
      instances += std::min<std::int64_t>(spec.profiles[static_cast<std::size_t>(p)].max_instances, spec.max_instances);
    }
    return std::min(cap, instances);
  }
  if (!shape.needs_gpu()) return cap;
  std::int64_t per_gpus = 0;
  for (const GangEmptyGpu& g : node.gpus) {
    if (g.mig_model >= 0 || !(request.models & model_bit(g.model)) || g.memory < shape.gpu_memory) continue;
    std::int64_t k = 1;
    if (shape.shares_gpu()) {
      k = kMilliPerGpu / shape.gpu_milli;
      if (shape.gpu_memory > 0) k = std::min<std::int64_t>(k, g.memory / shape.gpu_memory);
    }
    per_gpus += k;
  }
  return std::min(cap, shape.shares_gpu() ? per_gpus : per_gpus / shape.gpus);
}

class GangEmptyCapacity {
 public:
  static constexpr std::uint32_t kNoShape = ~std::uint32_t{0};

  // One level's domains at empty: per domain, (shape, nodes) pairs.
  struct Level {
    std::string level;           // as asked
    const void* topology = nullptr;  // the ClusterTopology it came from, or nullptr (labels)
    bool resolved = false;
    bool per_node = false;
    std::string key;             // the resolved label key ("" for the node level)
    std::vector<std::string> names;
    std::vector<std::vector<std::pair<std::uint32_t, std::int64_t>>> shapes;  // per domain
  };

  // Forgets everything when the state (instance) or its capacity generation changed, and summarises
  // the nodes again: O(nodes x GPUs) once per generation. (Not per layout generation: a scheduling
  // cycle's reservations cordon nodes, and the summary was made again after each; a one-shot cycle
  // at 10,000 nodes spent half its time there.)
  void refresh(const ClusterState& state) {
    if (valid_ && instance_ == state.instance_id() && capacity_generation_ == state.capacity_generation()) return;
    valid_ = true;
    instance_ = state.instance_id();
    capacity_generation_ = state.capacity_generation();
    shapes_.clear();
    count_.clear();
    rep_.clear();
    levels_.clear();
    node_shape_.assign(state.node_count(), kNoShape);
    std::map<GangEmptyShape, std::uint32_t> ids;
    GangEmptyShape s;
    for (NodeId n = 0; n < state.node_count(); ++n) {
      if (state.removed(n)) continue;
      s.cpu = state.cpu_capacity(n);
      s.memory = state.memory_capacity(n);
      s.gpus.clear();
      for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
        const auto gi = static_cast<GpuIndex>(g);
        const mig::MigGpuId id = state.mig().gpu(n, gi);
        s.gpus.push_back({state.gpu_model(n, gi), state.shares().memory_capacity(n, gi),
                          static_cast<std::int16_t>(id == mig::kNoGpu ? -1 : state.mig().table().model_of(id))});
      }
      std::sort(s.gpus.begin(), s.gpus.end());
      auto [it, inserted] = ids.try_emplace(s, static_cast<std::uint32_t>(shapes_.size()));
      if (inserted) {
        shapes_.push_back(s);
        count_.push_back(0);
        rep_.push_back(n);
      }
      node_shape_[n] = it->second;
      ++count_[it->second];
      if (state.node_name(n) < state.node_name(rep_[it->second])) rep_[it->second] = n;
    }
  }

  std::size_t shape_count() const { return shapes_.size(); }
  // Tasks of `request` an empty node of each shape holds.
  std::vector<std::int64_t> shape_capacities(const ClusterState& state, const TaskRequest& request) const {
    std::vector<std::int64_t> caps(shapes_.size());
    for (std::size_t s = 0; s < shapes_.size(); ++s)
      caps[s] = gang_empty_shape_capacity(state.mig().table().catalog(), shapes_[s], request);
    return caps;
  }
  // The whole cluster's capacity for those per-shape figures (saturating).
  std::int64_t total(std::span<const std::int64_t> caps) const {
    std::int64_t sum = 0;
    for (std::size_t s = 0; s < caps.size(); ++s) sum = std::min(kGangUnbounded, sum + caps[s] * count_[s]);
    return sum;
  }
  std::int64_t domain_total(const Level& level, std::size_t d, std::span<const std::int64_t> caps) const {
    std::int64_t sum = 0;
    for (const auto& [s, k] : level.shapes[d]) sum = std::min(kGangUnbounded, sum + caps[s] * k);
    return sum;
  }

  // The level's summary, made from `map` (the caller's domains, e.g. build_domains) on first use.
  template <class MakeMap>
  const Level& level(const std::string& name, const void* topology, MakeMap&& make_map) {
    for (const Level& l : levels_)
      if (l.level == name && l.topology == topology) return l;
    const DomainMap& m = make_map();
    Level l;
    l.level = name;
    l.topology = topology;
    l.resolved = m.resolved;
    l.per_node = m.per_node;
    l.key = m.key;
    if (m.per_node) {
      // Every node its own domain: one domain per shape is enough (they are identical), named by
      // the shape's node that sorts first.
      for (std::size_t s = 0; s < shapes_.size(); ++s) {
        l.names.emplace_back(rep_name(s, m));
        l.shapes.push_back({{static_cast<std::uint32_t>(s), 1}});
      }
    } else if (m.resolved) {
      for (std::size_t d = 0; d < m.domain_count(); ++d) {
        std::vector<std::pair<std::uint32_t, std::int64_t>> per;
        for (NodeId n : m.members[d])
          if (n < node_shape_.size() && node_shape_[n] != kNoShape) per.emplace_back(node_shape_[n], 1);
        std::sort(per.begin(), per.end());
        std::vector<std::pair<std::uint32_t, std::int64_t>> merged;
        for (const auto& p : per) {
          if (!merged.empty() && merged.back().first == p.first) ++merged.back().second;
          else merged.push_back(p);
        }
        l.names.push_back(m.names[d]);
        l.shapes.push_back(std::move(merged));
      }
    }
    levels_.push_back(std::move(l));
    return levels_.back();
  }

 private:
  std::string rep_name(std::size_t s, const DomainMap& m) const { return m.names[m.node_domain[rep_[s]]]; }

  bool valid_ = false;
  std::uint64_t instance_ = 0, capacity_generation_ = 0;
  std::vector<GangEmptyShape> shapes_;
  std::vector<std::int64_t> count_;  // nodes per shape
  std::vector<NodeId> rep_;          // per shape, its node whose name sorts first
  std::vector<std::uint32_t> node_shape_;
  std::deque<Level> levels_;         // stable references
};

}  // namespace gpusched::detail
