// gpusched/mig/cluster_builder.hpp — a cluster of MIG GPUs written in code, for tools, tests and
// benchmarks.
//
// What it is for. MIG policies work on the one cluster state (`ClusterState`, whose MIG GPUs live in
// gpusched/cluster/mig_gpus.hpp). A program that has no orchestrator state to wrap, and does not read
// the cluster JSON (gpusched/io/cluster_json.hpp), describes nodes and MIG GPUs here and builds the
// state once:
//
//   MigClusterBuilder b;
//   const auto n = b.add_node("dgx-1");
//   b.add_gpu(n, *MigCatalog::builtin().find("A100-SXM4-40GB"), {{9, 0}}, {true});  // busy 3g.20gb@0
//   ClusterState state = b.build().value();
//
// GPUs added with `add_gpu` are in MIG mode; `add_plain_gpu` adds a GPU that is not.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::mig {

class MigClusterBuilder {
 public:
  explicit MigClusterBuilder(const MigCatalog& catalog = MigCatalog::builtin()) : catalog_(&catalog) {}

  // A node (CPU in milli-CPU, memory in bytes; both may be 0 for MIG-only what-ifs). Returns its index.
  std::size_t add_node(std::string name, MilliCpu cpu = 0, Bytes memory = 0) {
    NodeSpec node;
    node.name = std::move(name);
    node.cpu = cpu;
    node.memory = memory;
    cluster_.nodes().push_back(std::move(node));
    return cluster_.nodes().size() - 1;
  }
  // A GPU in MIG mode with its instances (busy[i] for instances[i]; missing = idle). The layout is
  // validated by build().
  void add_gpu(std::size_t node, MigModelId model, std::span<const MigInstance> instances = {},
               std::span<const bool> busy = {}) {
    GpuSpec gpu;
    gpu.model = catalog_->spec(model).model;
    gpu.mig_mode = true;
    for (std::size_t i = 0; i < instances.size(); ++i)
      gpu.mig_instances.push_back({instances[i].profile_id, instances[i].start, i < busy.size() && busy[i]});
    cluster_.nodes()[node].gpus.push_back(std::move(gpu));
  }
  void add_gpu(std::size_t node, MigModelId model, std::initializer_list<MigInstance> instances,
               std::initializer_list<bool> busy = {}) {
    const std::vector<MigInstance> list(instances);
    bool flags[kMaxInstances] = {};
    std::size_t n = 0;
    for (bool b : busy)
      if (n < static_cast<std::size_t>(kMaxInstances)) flags[n++] = b;
    add_gpu(node, model, std::span<const MigInstance>(list), std::span<const bool>(flags, n));
  }
  // A GPU not in MIG mode (whole-GPU and shared tasks only).
  void add_plain_gpu(std::size_t node, std::string model) {
    GpuSpec gpu;
    gpu.model = std::move(model);
    cluster_.nodes()[node].gpus.push_back(std::move(gpu));
  }

  Cluster& cluster() { return cluster_; }
  const Cluster& cluster() const { return cluster_; }

  // The state, with the built-in GPU model registry. Fails, naming the GPU and instance, on an
  // invalid layout.
  Result<ClusterState> build(LayoutRules rules = {}) const {
    return ClusterState::build(cluster_, GpuModelRegistry::builtin(), *catalog_, rules);
  }

 private:
  const MigCatalog* catalog_;
  Cluster cluster_;
};

}  // namespace gpusched::mig
