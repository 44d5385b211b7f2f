// gpusched/fairness/cluster_input.hpp — fair share reads the one cluster and job model.
//
// The fairness family works in its own dimensions (cpu, memory, one milli-GPU dimension per GPU
// model, see ResourceSpace) because DRF and Kueue-style quotas are defined per resource and flavor.
// This header is the translation from the library's one model to those dimensions, so an
// orchestrator (or the CLI) never re-derives it:
//
//   * `fairness_cluster(state)`: the resource space (the cluster's GPU models in order of first
//     appearance), capacity and free amounts, counted over nodes that take new work (not cordoned,
//     not failed) and healthy GPUs, from a `ClusterState`.
//   * `pending_job_from_view(job, ...)`: the planner's compact per-job record (`PendingJob`) from a
//     `JobView`: groups with replicas and min replicas, per-task requests, allowed models (the
//     intersection over GPU groups: one flavor per job), queue, priority or priority class, submit
//     time. Every total is summed with overflow checks: a job asking for ~9.2e18 cores is an
//     `ErrorCode::kOverflow` error naming the field, never a wrapped total.
//   * what a running job charges its queue, read from the one running job model (`RunningJob`,
//     cluster/jobs.hpp): `task_usage` adds one task's assignment (its CPU and memory, its GPU share
//     on the dimension of the model its first GPU is of, `counted_gpu_model`), and
//     `queue_usage_from_running(running, state, ...)` sums every running job into its queue's usage.
//     The scheduling cycle, its kept usage (scheduler::RunningUsage) and the tools count with these,
//     so a queue's usage is one sum wherever it is asked for.
//   * `queue_usage_from_running(running views, ...)`: the same sums for a reader that knows a running
//     job's request and model but placed none of it (Kubernetes bound Pods, Slurm's running jobs, read
//     with their requests taken off the nodes): `RunningJobView` names the job and its GPU model.
//
//   auto cluster = gpusched::fairness::fairness_cluster(state).value();
//   auto job = gpusched::fairness::pending_job_from_view(view, cluster.space, state.registry(), classes);
//   auto planner = gpusched::fairness::FairSharePlanner::build(cluster.space, cluster.capacity, cluster.free, queues);
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/jobs.hpp"
#include "gpusched/cluster/views.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/detail/text.hpp"

namespace gpusched::fairness {

struct FairnessCluster {
  ResourceSpace space;
  Amounts capacity;
  Amounts free;
};

// Priority classes by name (Kubernetes PriorityClass: a name for a number).
using PriorityClasses = std::map<std::string, std::int64_t, std::less<>>;

// Capacity and free resources per dimension from the one cluster state. Errors (kOverflow, naming
// the node and resource) only when a sum exceeds int64.
Result<FairnessCluster> fairness_cluster(const ClusterState& state);

// The planner's record of one pending job. Errors name the field relative to the job
// ("groups[1].cpu", "priority_class"): kOverflow for totals beyond int64, kInvalidValue for
// negative replicas or requests, kUnknownName for a priority class not in `classes`.
Result<PendingJob> pending_job_from_view(const JobView& job, const ResourceSpace& space, const GpuModelRegistry& registry,
                                         const PriorityClasses& classes = {});

// The registry's name of a GPU model ("a100" -> "A100-80GB"), or the text itself when unknown: the
// resource space names flavors by the registry's names.
std::string canonical_model_name(const GpuModelRegistry& registry, std::string_view name);

// The planner over job views: each job's record (pending_job_from_view; errors prefixed with
// "jobs[i].") and the plan made from them. `records[k]` is job k's record; plan indices refer to it.
struct JobModelPlan {
  std::vector<PendingJob> records;
  AdmissionPlan plan;
};
Result<JobModelPlan> plan_jobs(const FairSharePlanner& planner, std::span<const JobView* const> jobs,
                               const GpuModelRegistry& registry, const PriorityClasses& classes = {},
                               const AgingPolicy& aging = {});

// A job view with the two admission fields set beside it, for a caller whose own job view does not
// carry them (the CLI's jobs file keeps them outside the job model); forwards everything else.
class WithAdmissionFields final : public JobView {
 public:
  WithAdmissionFields(const JobView& job, std::string priority_class, std::int64_t submit_time)
      : job_(job), priority_class_(std::move(priority_class)), submit_time_(submit_time) {}

  std::string_view name() const override { return job_.name(); }
  std::string_view queue() const override { return job_.queue(); }
  std::int32_t priority() const override { return job_.priority(); }
  std::int64_t submit_time() const override { return submit_time_; }
  std::string_view priority_class() const override { return priority_class_; }
  std::size_t group_count() const override { return job_.group_count(); }
  TaskGroupInfo group(std::size_t g) const override { return job_.group(g); }
  std::size_t allowed_model_count(std::size_t g) const override { return job_.allowed_model_count(g); }
  std::string_view allowed_model(std::size_t g, std::size_t k) const override { return job_.allowed_model(g, k); }
  std::size_t selector_count(std::size_t g) const override { return job_.selector_count(g); }
  Label selector(std::size_t g, std::size_t k) const override { return job_.selector(g, k); }

 private:
  const JobView& job_;
  std::string priority_class_;
  std::int64_t submit_time_;
};

// A running job a reader knows by its request and the GPU model it runs on (empty for a CPU-only
// job), without an assignment on a state.
struct RunningJobView {
  const JobView* job = nullptr;
  std::string_view gpu_model;
};

// Per-queue usage (one Amounts per queue of `queue_names`, in that order) of the running jobs.
// Errors name the job by index ("running[3].queue", "running[3].gpu_model", "running[3].groups[0].cpu").
Result<std::vector<Amounts>> queue_usage_from_running(std::span<const RunningJobView> running, const ResourceSpace& space,
                                                      const GpuModelRegistry& registry,
                                                      std::span<const std::string> queue_names);

// The fairness dimension of each GPU model id of `registry` (2 + the model's index in the space, by
// name: two ids of one name share it), -1 for a model the space does not have.
std::vector<Eigen::Index> gpu_dims_by_model(const ResourceSpace& space, const GpuModelRegistry& registry);

// The GPU model a task's GPUs are counted on: the model of its first GPU (none for a task without
// GPUs, or on a node the state does not have).
std::optional<GpuModelId> counted_gpu_model(const ClusterState& state, const TaskAssignment& a);

// Adds (sign +1) or subtracts (sign -1) what one task's assignment holds to `usage` (dimensions of
// the space `dim_of_model` was made for, gpu_dims_by_model): its CPU and memory, and its GPUs'
// share on its counted model's dimension. Returns the milli-GPUs counted (0 for none). Unchecked:
// the state's own totals bound every sum (its capacity is within 64 bits, fairness_cluster).
std::int64_t task_usage(Amounts& usage, const ClusterState& state, std::span<const Eigen::Index> dim_of_model,
                        const TaskAssignment& a, int sign = 1);

// Per-queue usage (one Amounts per queue of `queue_names`, in that order) of jobs running on
// `state`, counted by task_usage. Errors name the job: "running[3].queue" for a queue not listed.
Result<std::vector<Amounts>> queue_usage_from_running(std::span<const RunningJob> running, const ClusterState& state,
                                                      const ResourceSpace& space, std::span<const std::string> queue_names);

// --- definitions -----------------------------------------------------------------------------------

inline std::string canonical_model_name(const GpuModelRegistry& registry, std::string_view name) {
  const auto id = registry.find(name);
  return id ? registry.model(*id).name : std::string(name);
}

namespace detail {

// What all replicas of all groups of a job ask for, summed with overflow checks.
struct FairnessJobTotals {
  std::int64_t cpu = 0, memory = 0, gpu_milli = 0;
  std::vector<ReplicaGroup> groups;  // per replica, for partial admission
};

inline Result<FairnessJobTotals> fairness_job_totals(const JobView& job) {
  FairnessJobTotals out;
  const auto overflow = [](std::size_t g, const char* field, std::int64_t per_task, std::int32_t replicas) {
    return fairness_error(ErrorCode::kOverflow,
                          fairness_text("groups[", g, "].", field, ": ", replicas, " replicas of ", per_task,
                                        " exceed a 64-bit total (overflow)"));
  };
  for (std::size_t g = 0; g < job.group_count(); ++g) {
    const TaskGroupInfo info = job.group(g);
    const TaskShape& s = info.shape;
    if (info.replicas < 0)
      return fairness_error(ErrorCode::kInvalidValue, fairness_text("groups[", g, "].replicas: expected a non-negative count, got ", info.replicas));
    for (const auto& [field, value] : {std::pair<const char*, std::int64_t>{"cpu", s.cpu}, {"memory", s.memory},
                                       {"gpus", s.gpus}, {"gpu_milli", s.gpu_milli}})
      if (value < 0)
        return fairness_error(ErrorCode::kInvalidValue, fairness_text("groups[", g, "].", field, ": expected a non-negative amount, got ", value));
    std::int64_t per_task_gpu = 0;
    if (s.needs_gpu() && __builtin_mul_overflow(std::int64_t{s.gpus}, s.gpu_milli, &per_task_gpu))
      return fairness_error(ErrorCode::kOverflow, fairness_text("groups[", g, "].gpus: ", s.gpus, " GPUs of ", s.gpu_milli, " milli-GPU overflow"));
    std::int64_t cpu = 0, memory = 0, gpu = 0;
    if (__builtin_mul_overflow(s.cpu, std::int64_t{info.replicas}, &cpu) || __builtin_add_overflow(out.cpu, cpu, &out.cpu))
      return overflow(g, "cpu", s.cpu, info.replicas);
    if (__builtin_mul_overflow(s.memory, std::int64_t{info.replicas}, &memory) ||
        __builtin_add_overflow(out.memory, memory, &out.memory))
      return overflow(g, "memory", s.memory, info.replicas);
    if (__builtin_mul_overflow(per_task_gpu, std::int64_t{info.replicas}, &gpu) ||
        __builtin_add_overflow(out.gpu_milli, gpu, &out.gpu_milli))
      return overflow(g, "gpus", per_task_gpu, info.replicas);
    out.groups.push_back({info.replicas, info.min_replicas, s.cpu, s.memory, per_task_gpu});
  }
  return out;
}

}  // namespace detail

inline Result<FairnessCluster> fairness_cluster(const ClusterState& state) {
  FairnessCluster out;
  const GpuModelRegistry& registry = state.registry();
  // The models in order of first appearance, and each model id's dimension (two ids of one name
  // share it). Every scheduling cycle calls this: the state keeps the order and the sums, so it
  // costs O(models), not a scan of every GPU.
  std::vector<Eigen::Index> dim_of(registry.size(), -1);
  for (const GpuModelId id : state.gpu_models_in_order()) {
    const std::string& model = registry.model(id).name;
    if (std::find(out.space.gpu_models.begin(), out.space.gpu_models.end(), model) == out.space.gpu_models.end())
      out.space.gpu_models.push_back(model);
    if (id < dim_of.size()) dim_of[id] = *out.space.gpu_dim(model);
  }
  out.capacity = Amounts::Zero(out.space.size());
  out.free = Amounts::Zero(out.space.size());
  const ClusterState::EligibleTotals& totals = state.eligible_totals();
  bool in_range = true;
  const auto add = [&](Eigen::Index d, gpusched::detail::QuantityWide capacity, gpusched::detail::QuantityWide free) {
    const gpusched::detail::QuantityWide c = capacity + out.capacity[d], f = free + out.free[d];
    const gpusched::detail::QuantityWide max = std::numeric_limits<std::int64_t>::max();
    if (c > max || f > max) {
      in_range = false;
      return;
    }
    out.capacity[d] = static_cast<std::int64_t>(c);
    out.free[d] = static_cast<std::int64_t>(f);
  };
  add(ResourceSpace::kCpu, totals.cpu_capacity, totals.cpu_free);
  add(ResourceSpace::kMemory, totals.memory_capacity, totals.memory_free);
  for (const GpuModelId id : state.gpu_models_in_order())
    if (id < dim_of.size() && id < totals.gpu_milli_capacity.size())
      add(dim_of[id], totals.gpu_milli_capacity[id], totals.gpu_milli_free[id]);
  if (in_range) return out;

  // Beyond a 64-bit amount: find the node at which the running total overflows, for the message.
  out.capacity.setZero();
  out.free.setZero();
  for (NodeId n = 0; n < state.node_count(); ++n) {
    if (!state.eligible(n)) continue;  // cordoned or failed nodes take no new work
    const auto overflow = [&](Eigen::Index d, std::int64_t capacity, std::int64_t free) {
      return __builtin_add_overflow(out.capacity[d], capacity, &out.capacity[d]) ||
             __builtin_add_overflow(out.free[d], free, &out.free[d]);
    };
    std::optional<Eigen::Index> bad;
    if (overflow(ResourceSpace::kCpu, state.cpu_capacity(n), state.cpu_free(n))) bad = ResourceSpace::kCpu;
    else if (overflow(ResourceSpace::kMemory, state.memory_capacity(n), state.memory_free(n))) bad = ResourceSpace::kMemory;
    for (GpuIndex g = 0; !bad && g < static_cast<GpuIndex>(state.gpu_count(n)); ++g) {
      if (!state.gpu_healthy(n, g)) continue;
      const Eigen::Index d = dim_of[state.gpu_model(n, g)];
      if (overflow(d, kMilliPerGpu, state.gpu_free_milli(n, g))) bad = d;
    }
    if (bad)
      return detail::fairness_error(ErrorCode::kOverflow,
                                    detail::fairness_text("nodes[", n, "] (", state.node_name(n), ").", out.space.name(*bad),
                                                          ": the cluster's total exceeds a 64-bit amount (overflow)"));
  }
  return out;
}

inline Result<PendingJob> pending_job_from_view(const JobView& job, const ResourceSpace& space,
                                                const GpuModelRegistry& registry, const PriorityClasses& classes) {
  PendingJob p;
  p.name = std::string(job.name());
  p.queue = std::string(job.queue());
  p.priority = job.priority();
  if (const std::string_view pc = job.priority_class(); !pc.empty()) {
    const auto it = classes.find(pc);
    if (it == classes.end())
      return detail::fairness_error(ErrorCode::kUnknownName,
                                    detail::fairness_text("priority_class: unknown class \"", pc, "\""));
    p.priority = it->second;
  }
  p.submit_time = job.submit_time();
  auto totals = detail::fairness_job_totals(job);
  if (!totals) return totals.error();
  p.base = Amounts::Zero(space.size());
  p.base[ResourceSpace::kCpu] = totals->cpu;
  p.base[ResourceSpace::kMemory] = totals->memory;
  p.gpu_milli = totals->gpu_milli;
  p.groups = std::move(totals->groups);
  // Allowed models: the intersection over the groups that need GPUs and list models (one flavor
  // per job: groups allowing disjoint models can never be admitted together).
  bool listed = false;
  std::vector<std::string> allowed;
  for (std::size_t g = 0; g < job.group_count(); ++g) {
    const TaskGroupInfo info = job.group(g);
    if (!info.shape.needs_gpu() || info.replicas == 0 || job.allowed_model_count(g) == 0) continue;
    std::vector<std::string> models;
    for (std::size_t k = 0; k < job.allowed_model_count(g); ++k)
      models.push_back(canonical_model_name(registry, job.allowed_model(g, k)));
    std::sort(models.begin(), models.end());
    models.erase(std::unique(models.begin(), models.end()), models.end());
    if (!listed) {
      allowed = std::move(models);
      listed = true;
    } else {
      std::vector<std::string> both;
      std::set_intersection(allowed.begin(), allowed.end(), models.begin(), models.end(), std::back_inserter(both));
      allowed = std::move(both);
    }
  }
  if (listed) {
    p.gpu_models = std::move(allowed);
    if (p.gpu_models.empty()) p.gpu_models.push_back("(no model every group allows)");
  }
  return p;
}

inline Result<std::vector<Amounts>> queue_usage_from_running(std::span<const RunningJobView> running,
                                                             const ResourceSpace& space, const GpuModelRegistry& registry,
                                                             std::span<const std::string> queue_names) {
  std::vector<Amounts> usage(queue_names.size(), Amounts::Zero(space.size()));
  for (std::size_t i = 0; i < running.size(); ++i) {
    const auto prefixed = [i](const Error& e) {
      return detail::fairness_error(e.code, detail::fairness_text("running[", i, "].", e.message));
    };
    const JobView& job = *running[i].job;
    const auto q = std::find(queue_names.begin(), queue_names.end(), job.queue());
    if (q == queue_names.end())
      return prefixed(detail::fairness_error(ErrorCode::kUnknownName, detail::fairness_text("queue: no queue named \"", job.queue(), "\"")));
    auto totals = detail::fairness_job_totals(job);
    if (!totals) return prefixed(totals.error());
    Amounts& u = usage[static_cast<std::size_t>(q - queue_names.begin())];
    std::int64_t* target[] = {&u[ResourceSpace::kCpu], &u[ResourceSpace::kMemory], nullptr};
    const std::int64_t amount[] = {totals->cpu, totals->memory, totals->gpu_milli};
    if (totals->gpu_milli > 0) {
      const auto d = space.gpu_dim(canonical_model_name(registry, running[i].gpu_model));
      if (!d)
        return prefixed(detail::fairness_error(
            ErrorCode::kUnknownName, detail::fairness_text("gpu_model: \"", running[i].gpu_model, "\" is not a GPU model of the cluster")));
      target[2] = &u[*d];
    }
    for (int k = 0; k < 3; ++k)
      if (target[k] && __builtin_add_overflow(*target[k], amount[k], target[k]))
        return prefixed(detail::fairness_error(ErrorCode::kOverflow,
                                               detail::fairness_text("queue: usage of queue \"", job.queue(), "\" exceeds a 64-bit amount (overflow)")));
  }
  return usage;
}

inline std::vector<Eigen::Index> gpu_dims_by_model(const ResourceSpace& space, const GpuModelRegistry& registry) {
  std::vector<Eigen::Index> out(registry.size(), -1);
  for (GpuModelId id = 0; id < registry.size(); ++id)
    if (const auto d = space.gpu_dim(registry.model(id).name)) out[id] = *d;
  return out;
}

inline std::optional<GpuModelId> counted_gpu_model(const ClusterState& state, const TaskAssignment& a) {
  if (a.gpus.empty() || a.node >= state.node_count()) return std::nullopt;
  return state.gpu_model(a.node, a.gpus.front());
}

inline std::int64_t task_usage(Amounts& usage, const ClusterState& state, std::span<const Eigen::Index> dim_of_model,
                               const TaskAssignment& a, int sign) {
  usage[ResourceSpace::kCpu] += sign * a.cpu;
  usage[ResourceSpace::kMemory] += sign * a.memory;
  const std::optional<GpuModelId> model = counted_gpu_model(state, a);
  if (!model || *model >= dim_of_model.size() || dim_of_model[*model] < 0) return 0;
  const std::int64_t gpu = static_cast<std::int64_t>(a.gpus.size()) * a.gpu_milli;
  usage[dim_of_model[*model]] += sign * gpu;
  return gpu;
}

inline Result<std::vector<Amounts>> queue_usage_from_running(std::span<const RunningJob> running, const ClusterState& state,
                                                             const ResourceSpace& space,
                                                             std::span<const std::string> queue_names) {
  std::vector<Amounts> usage(queue_names.size(), Amounts::Zero(space.size()));
  const std::vector<Eigen::Index> dims = gpu_dims_by_model(space, state.registry());
  for (std::size_t i = 0; i < running.size(); ++i) {
    const auto q = std::find(queue_names.begin(), queue_names.end(), running[i].queue);
    if (q == queue_names.end())
      return detail::fairness_error(ErrorCode::kUnknownName,
                                    detail::fairness_text("running[", i, "].queue: no queue named \"", running[i].queue, "\""));
    Amounts& u = usage[static_cast<std::size_t>(q - queue_names.begin())];
    for (const RunningTask& t : running[i].tasks) task_usage(u, state, dims, t.assignment);
  }
  return usage;
}

inline Result<JobModelPlan> plan_jobs(const FairSharePlanner& planner, std::span<const JobView* const> jobs,
                                      const GpuModelRegistry& registry, const PriorityClasses& classes,
                                      const AgingPolicy& aging) {
  JobModelPlan out;
  out.records.reserve(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    auto record = pending_job_from_view(*jobs[j], planner.space(), registry, classes);
    if (!record)
      return detail::fairness_error(record.error().code, detail::fairness_text("jobs[", j, "].", record.error().message));
    out.records.push_back(std::move(*record));
  }
  out.plan = planner.plan(out.records, aging);
  return out;
}

}  // namespace gpusched::fairness
