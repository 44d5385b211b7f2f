// gpusched/cluster/cluster.hpp — an in-memory cluster and job list implementing the views.
//
// For tools, tests and the simulator: `Cluster` and `Job` own their data (the JSON readers in
// gpusched/io build them). An orchestrator that keeps its own structures implements the views
// directly instead (examples/embed_orchestrator.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpusched/cluster/node_interconnect.hpp"
#include "gpusched/cluster/views.hpp"

namespace gpusched {

struct GpuSpec {
  std::string model;
  MilliGpu used_milli = 0;
  Bytes used_memory = 0;
  bool healthy = true;
  bool mig_mode = false;
  std::vector<MigInstanceInfo> mig_instances{};  // when mig_mode
  bool mig_layout_fixed = false;                 // see GpuInfo::mig_layout_fixed
};

struct NodeSpec {
  std::string name;
  MilliCpu cpu = 0;           // capacity
  Bytes memory = 0;           // capacity
  MilliCpu cpu_used = 0;
  Bytes memory_used = 0;
  std::vector<GpuSpec> gpus;
  std::vector<std::pair<std::string, std::string>> labels;
  bool schedulable = true;
  bool healthy = true;
  std::optional<NodeInterconnect> interconnect;  // none: the GPU model's known default
};

class Cluster final : public ClusterView {
 public:
  Cluster() = default;
  explicit Cluster(std::vector<NodeSpec> nodes) : nodes_(std::move(nodes)) {}

  std::vector<NodeSpec>& nodes() { return nodes_; }
  const std::vector<NodeSpec>& nodes() const { return nodes_; }

  std::size_t node_count() const override { return nodes_.size(); }
  std::string_view node_name(std::size_t n) const override { return nodes_[n].name; }
  NodeResources node_resources(std::size_t n) const override {
    const auto& s = nodes_[n];
    return {s.cpu, s.cpu - s.cpu_used, s.memory, s.memory - s.memory_used};
  }
  std::size_t gpu_count(std::size_t n) const override { return nodes_[n].gpus.size(); }
  GpuInfo gpu(std::size_t n, std::size_t g) const override {
    const auto& s = nodes_[n].gpus[g];
    return {s.model, kMilliPerGpu - s.used_milli, s.used_memory, s.healthy, s.mig_mode, s.mig_layout_fixed};
  }
  std::size_t mig_instance_count(std::size_t n, std::size_t g) const override {
    return nodes_[n].gpus[g].mig_instances.size();
  }
  MigInstanceInfo mig_instance(std::size_t n, std::size_t g, std::size_t i) const override {
    return nodes_[n].gpus[g].mig_instances[i];
  }
  bool schedulable(std::size_t n) const override { return nodes_[n].schedulable; }
  bool healthy(std::size_t n) const override { return nodes_[n].healthy; }
  std::size_t label_count(std::size_t n) const override { return nodes_[n].labels.size(); }
  Label label(std::size_t n, std::size_t i) const override {
    return {nodes_[n].labels[i].first, nodes_[n].labels[i].second};
  }
  const NodeInterconnect* node_interconnect(std::size_t n) const override {
    return nodes_[n].interconnect ? &*nodes_[n].interconnect : nullptr;
  }

 private:
  std::vector<NodeSpec> nodes_;
};

struct TaskGroupSpec {
  std::string name;
  std::int32_t replicas = 1;
  std::int32_t min_replicas = -1;
  TaskShape shape;
  std::vector<std::string> allowed_models;
  std::vector<std::pair<std::string, std::string>> selector;
  std::string mig_profile = {};  // "" = none
};

// Gang constraints of a Job, owned (see JobView's TopologyRequest, SpreadRequest, AntiAffinityRequest).
struct JobTopologySpec {
  std::string level;  // "" = none
  LevelMode mode = LevelMode::kRequired;
};
struct JobSpreadSpec {
  std::string level;
  std::int32_t max_per_domain = 0;
  std::int32_t min_domains = 0;
  std::vector<std::uint32_t> groups;  // empty = every group
};
struct JobAntiAffinitySpec {
  std::uint32_t group_a = 0;
  std::uint32_t group_b = 0;
  std::string level = std::string(kNodeLevel);
};

class Job final : public JobView {
 public:
  std::string job_name;
  std::string queue_name;
  std::int32_t job_priority = 0;
  std::string job_priority_class;
  std::int64_t job_submit_time = 0;
  std::vector<TaskGroupSpec> groups;
  JobTopologySpec job_topology;
  std::vector<JobSpreadSpec> job_spread;
  std::vector<JobAntiAffinitySpec> job_anti_affinity;

  std::string_view name() const override { return job_name; }
  std::string_view queue() const override { return queue_name; }
  std::int32_t priority() const override { return job_priority; }
  std::string_view priority_class() const override { return job_priority_class; }
  std::int64_t submit_time() const override { return job_submit_time; }
  std::size_t group_count() const override { return groups.size(); }
  TaskGroupInfo group(std::size_t g) const override {
    const auto& s = groups[g];
    return {s.name, s.replicas, s.min_replicas, s.shape, s.mig_profile};
  }
  TopologyRequest topology() const override { return {job_topology.level, job_topology.mode}; }
  std::size_t spread_count() const override { return job_spread.size(); }
  SpreadRequest spread(std::size_t i) const override {
    return {job_spread[i].level, job_spread[i].max_per_domain, job_spread[i].min_domains};
  }
  std::size_t spread_group_count(std::size_t i) const override { return job_spread[i].groups.size(); }
  std::uint32_t spread_group(std::size_t i, std::size_t k) const override { return job_spread[i].groups[k]; }
  std::size_t anti_affinity_count() const override { return job_anti_affinity.size(); }
  AntiAffinityRequest anti_affinity(std::size_t i) const override {
    const auto& a = job_anti_affinity[i];
    return {a.group_a, a.group_b, a.level};
  }
  std::size_t allowed_model_count(std::size_t g) const override { return groups[g].allowed_models.size(); }
  std::string_view allowed_model(std::size_t g, std::size_t i) const override {
    return groups[g].allowed_models[i];
  }
  std::size_t selector_count(std::size_t g) const override { return groups[g].selector.size(); }
  Label selector(std::size_t g, std::size_t i) const override {
    return {groups[g].selector[i].first, groups[g].selector[i].second};
  }
};

}  // namespace gpusched
