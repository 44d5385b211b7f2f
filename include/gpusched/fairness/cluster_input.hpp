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
//   * `plan_jobs(planner, state, views, classes, aging)`: the planner over job views, each compiled
//     against the state (`compile_job`, the one job model every family reads) with its priority class
//     resolved, checked (request_problem: a job asking for ~9.2e18 cores is an `ErrorCode::kOverflow`
//     error naming the field, never a wrapped total), and planned.
//   * what a running job charges its queue, read from the one running job model (`RunningJob`,
//     cluster/jobs.hpp): `task_usage` adds one task's assignment (its CPU and memory, its GPU share
//     on the dimension of the model its first GPU is of, `counted_gpu_model`), and
//     `queue_usage_from_running(running, state, ...)` sums every running job into its queue's usage.
//     The scheduling cycle, its kept usage (scheduler::RunningUsage) and the tools count with these,
//     so a queue's usage is one sum wherever it is asked for.
//     A reader's running work (Kubernetes bound pods, Slurm running jobs) is RunningJobs too, counted
//     the same way whether the state holds it reserved or was read with it taken off the nodes.
//
//   auto cluster = gpusched::fairness::fairness_cluster(state).value();
//   auto planner = gpusched::fairness::FairSharePlanner::build(cluster.space, cluster.capacity, cluster.free, queues,
//                                                              &state.registry());
//   auto planned = gpusched::fairness::plan_jobs(*planner, state, views, classes);
#pragma once

#include <algorithm>
#include <array>
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

// The registry's name of a GPU model ("a100" -> "A100-80GB"), or the text itself when unknown: the
// resource space names flavors by the registry's names.
std::string canonical_model_name(const GpuModelRegistry& registry, std::string_view name);

// The planner over job views: each job compiled against `state` (compile_job; `planner` built with
// `&state.registry()`), its priority class (when it names one) resolved through `classes` into its
// priority, as the readers do for the scheduling cycle, and checked (request_problem); then the plan.
// Errors name the job by index: "jobs[1].priority_class" (a class not in `classes`, or beyond a
// 32-bit priority), "jobs[1].groups[0].cpu" (a total beyond 64 bits), and compile_job's own (an
// unknown GPU model, a bad share). `jobs[k]` of the answer is job k, compiled; plan indices refer to it.
struct JobModelPlan {
  std::vector<CompiledJob> jobs;
  AdmissionPlan plan;
};
Result<JobModelPlan> plan_jobs(const FairSharePlanner& planner, const ClusterState& state, std::span<const JobView* const> jobs,
                               const PriorityClasses& classes = {}, const AgingPolicy& aging = {});

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

// The GPU model a task's GPUs are counted on: the model of its first GPU (none for a task without
// GPUs, or on a node the state does not have).
std::optional<GpuModelId> counted_gpu_model(const ClusterState& state, const TaskAssignment& a);

// Adds (sign +1) or subtracts (sign -1) what one task's assignment holds to `usage` (dimensions of
// the space `dim_of_model` was made for, gpu_dims_by_model): its CPU and memory, and its GPUs'
// share on its counted model's dimension. Returns the milli-GPUs counted (0 for none). Unchecked:
// the state's own totals bound every sum (its capacity is within 64 bits, fairness_cluster).
std::int64_t task_usage(Amounts& usage, const ClusterState& state, std::span<const Eigen::Index> dim_of_model,
                        const TaskAssignment& a, int sign = 1);

// Per-queue usage (one Amounts per queue of `queue_names`, in that order) of running jobs, counted as
// task_usage counts (the assignments' GPU models read from `state`; the tasks need not be reserved
// on it). Checked: errors name the job, "running[3].queue" for a queue not listed, kOverflow for a
// queue's usage beyond a 64-bit amount.
Result<std::vector<Amounts>> queue_usage_from_running(std::span<const RunningJob> running, const ClusterState& state,
                                                      const ResourceSpace& space, std::span<const std::string> queue_names);

// Gives each leaf queue of `queues` the usage of its running jobs (queue_usage_from_running, by the
// queues' names); a parent queue takes none (parent_queue_names: jobs run in leaf queues, so a
// reader skips or reports a job charged to one). The same errors; `queues` is unchanged on error.
Status set_usage_from_running(std::span<QueueConfig> queues, std::span<const RunningJob> running,
                              const ClusterState& state, const ResourceSpace& space);

// --- definitions -----------------------------------------------------------------------------------

inline std::string canonical_model_name(const GpuModelRegistry& registry, std::string_view name) {
  const auto id = registry.find(name);
  return id ? registry.model(*id).name : std::string(name);
}

namespace detail {

// The error of a request problem (request_problem), its field prefixed with `prefix` ("jobs[1].").
inline Error fairness_request_error(const RequestProblem& problem, const std::string& prefix) {
  return fairness_error(problem.overflow ? ErrorCode::kOverflow : ErrorCode::kInvalidValue,
                        fairness_text(prefix, problem.path(), ": ", problem.what()));
}

}  // namespace detail

inline Result<FairnessCluster> fairness_cluster(const ClusterState& state) {
  FairnessCluster out;
  const GpuModelRegistry& registry = state.registry();
  // The models in order of first appearance, and each model id's dimension (two ids of one name
  // share it). Every scheduling cycle calls this: the state keeps the order and the sums, so it
  // costs O(models), not a scan of every GPU.
  std::vector<Eigen::Index> dim_of(registry.size(), -1);
  for (const GpuModelId id : state.shares().models_in_order()) {
    const std::string& model = registry.model(id).name;
    if (std::find(out.space.gpu_models.begin(), out.space.gpu_models.end(), model) == out.space.gpu_models.end())
      out.space.gpu_models.push_back(model);
    if (id < dim_of.size()) dim_of[id] = *out.space.gpu_dim(model);
  }
  out.capacity = Amounts::Zero(out.space.size());
  out.free = Amounts::Zero(out.space.size());
  const ClusterState::EligibleTotals& totals = state.shares().eligible_totals();
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
  for (const GpuModelId id : state.shares().models_in_order())
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
      if (overflow(d, kMilliPerGpu, state.shares().free_milli(n, g))) bad = d;
    }
    if (bad)
      return detail::fairness_error(ErrorCode::kOverflow,
                                    detail::fairness_text("nodes[", n, "] (", state.node_name(n), ").", out.space.name(*bad),
                                                          ": the cluster's total exceeds a 64-bit amount (overflow)"));
  }
  return out;
}

inline std::optional<GpuModelId> counted_gpu_model(const ClusterState& state, const TaskAssignment& a) {
  if (a.gpus.empty() || a.node >= state.node_count()) return std::nullopt;
  return state.gpu_model(a.node, a.gpus.front());
}

namespace detail {
// What one task's assignment adds to a usage vector, as (dimension, amount): its CPU, its memory and
// its GPUs' share on its counted model's dimension (-1 when that is not counted: no GPU, a model
// the space does not have). task_usage adds them unchecked, queue_usage_from_running checked.
inline std::array<std::pair<Eigen::Index, std::int64_t>, 3> task_usage_terms(const ClusterState& state,
                                                                             std::span<const Eigen::Index> dim_of_model,
                                                                             const TaskAssignment& a) {
  const std::optional<GpuModelId> model = counted_gpu_model(state, a);
  const Eigen::Index gpu_dim = model && *model < dim_of_model.size() ? dim_of_model[*model] : -1;
  return {{{ResourceSpace::kCpu, a.cpu},
           {ResourceSpace::kMemory, a.memory},
           {gpu_dim, static_cast<std::int64_t>(a.gpus.size()) * a.gpu_milli}}};
}
}  // namespace detail

inline std::int64_t task_usage(Amounts& usage, const ClusterState& state, std::span<const Eigen::Index> dim_of_model,
                               const TaskAssignment& a, int sign) {
  const auto terms = detail::task_usage_terms(state, dim_of_model, a);
  for (const auto& [d, x] : terms)
    if (d >= 0) usage[d] += sign * x;
  return terms[2].first >= 0 ? terms[2].second : 0;
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
    for (const RunningTask& t : running[i].tasks) {
      // task_usage's sums, checked: a reader's running work is not bounded by the state's totals
      // (it may have been taken off the nodes, capped, rather than reserved).
      for (const auto& [d, x] : detail::task_usage_terms(state, dims, t.assignment))
        if (d >= 0 && __builtin_add_overflow(u[d], x, &u[d]))
          return detail::fairness_error(ErrorCode::kOverflow, detail::fairness_text("running[", i, "].queue: usage of queue \"", running[i].queue,
                                                                                    "\" exceeds a 64-bit amount (overflow)"));
    }
  }
  return usage;
}

inline Status set_usage_from_running(std::span<QueueConfig> queues, std::span<const RunningJob> running,
                                     const ClusterState& state, const ResourceSpace& space) {
  std::vector<std::string> names;
  for (const QueueConfig& q : queues) names.push_back(q.name);
  auto usage = queue_usage_from_running(running, state, space, names);
  if (!usage) return usage.error();
  const auto parents = parent_queue_names(queues);
  for (std::size_t q = 0; q < queues.size(); ++q)
    if (!parents.contains(queues[q].name)) queues[q].usage = queue_amounts((*usage)[q]);
  return {};
}

inline Result<JobModelPlan> plan_jobs(const FairSharePlanner& planner, const ClusterState& state,
                                      std::span<const JobView* const> jobs, const PriorityClasses& classes,
                                      const AgingPolicy& aging) {
  JobModelPlan out;
  out.jobs.reserve(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const auto error = [j](ErrorCode code, const std::string& field, const std::string& what) {
      return detail::fairness_error(code, detail::fairness_text("jobs[", j, "].", field, ": ", what));
    };
    auto compiled = compile_job(state, *jobs[j]);
    if (!compiled) return compiled.error();
    if (const std::string_view pc = jobs[j]->priority_class(); !pc.empty()) {
      const auto it = classes.find(pc);
      if (it == classes.end()) return error(ErrorCode::kUnknownName, "priority_class", detail::fairness_text("unknown class \"", pc, "\""));
      if (it->second < std::numeric_limits<std::int32_t>::min() || it->second > std::numeric_limits<std::int32_t>::max())
        return error(ErrorCode::kOverflow, "priority_class", detail::fairness_text("class \"", pc, "\" has priority ", it->second, ", beyond a 32-bit priority"));
      compiled->priority = static_cast<std::int32_t>(it->second);
    }
    if (const RequestProblem problem = request_problem(*compiled))
      return detail::fairness_request_error(problem, detail::fairness_text("jobs[", j, "]."));
    out.jobs.push_back(std::move(*compiled));
  }
  out.plan = planner.plan(out.jobs, aging);
  return out;
}

}  // namespace gpusched::fairness
