// gpusched/packing/detail/placement_impl.hpp — the inline definitions of packing/placement.hpp.
//
// Included at the end of placement.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gpusched/packing/placement.hpp"

namespace gpusched {
namespace detail {

// Whether the node's labels satisfy the request's selector (the check_fit rule, without resources).
GPUSCHED_DECL bool placement_selector_matches(const ClusterState& state, NodeId n, const TaskRequest& request) {
  for (const LabelRequirement& l : request.selector)
    if (state.labels().value_of(n, l.key) != l.value) return false;
  return true;
}

// A node's first failing check for one task if the node were empty and repaired, in check_fit's
// order (a GPU of an allowed model stands in for "idle"; a GPU in MIG mode serves MIG tasks only).
// Cordoned and failed nodes and failed GPUs count: they come back (uncordon, recover_node,
// set_gpu_health), so a job that needs them is "not now", never "infeasible". Removed nodes do not.
GPUSCHED_DECL FitReason placement_capacity_fit(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (state.removed(n)) return FitReason::kNodeUnhealthy;
  if (!placement_selector_matches(state, n, request)) return FitReason::kSelectorMismatch;
  const TaskShape& shape = request.shape;
  if (shape.needs_gpu() && !(request.models & state.node_models(n))) return FitReason::kGpuModelNotAllowed;
  if (shape.cpu > state.cpu_capacity(n)) return FitReason::kInsufficientCpu;
  if (shape.memory > state.memory_capacity(n)) return FitReason::kInsufficientMemory;
  if (request.mig.any()) {
    // A MIG GPU of an allowed model whose MIG model has the profile could hold an instance once empty
    // (a fixed layout after a re-partition: the job waits for it, GpuInfo::mig_layout_fixed).
    for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      const mig::MigGpuId id = state.mig().gpu(n, gi);
      if (id != mig::kNoGpu && (request.models & model_bit(state.gpu_model(n, gi))) &&
          request.mig.profile[state.mig().table().model_of(id)] >= 0)
        return FitReason::kFits;
    }
    return FitReason::kNoMigPlacement;
  }
  if (!shape.needs_gpu()) return FitReason::kFits;
  std::int32_t usable = 0, with_memory = 0;
  for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    // A GPU in MIG mode takes no whole-GPU or shared task until an event turns MIG off.
    if (!(request.models & model_bit(state.gpu_model(n, gi))) || state.mig().mode(n, gi)) continue;
    ++usable;
    with_memory += state.shares().memory_capacity(n, gi) >= shape.gpu_memory;
  }
  if (usable < shape.gpus) return shape.shares_gpu() ? FitReason::kInsufficientGpuShare : FitReason::kInsufficientGpus;
  if (with_memory < shape.gpus) return FitReason::kInsufficientGpuMemory;
  return FitReason::kFits;
}

// Tasks of `request` an empty node could hold (0 when one does not fit; a large number for a
// request of nothing).
GPUSCHED_DECL std::int64_t placement_tasks_at_capacity(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (placement_capacity_fit(state, n, request) != FitReason::kFits) return 0;
  const TaskShape& shape = request.shape;
  std::int64_t cap = std::numeric_limits<std::int32_t>::max();
  if (shape.cpu > 0) cap = std::min<std::int64_t>(cap, state.cpu_capacity(n) / shape.cpu);
  if (shape.memory > 0) cap = std::min<std::int64_t>(cap, state.memory_capacity(n) / shape.memory);
  if (request.mig.any()) {
    // MIG tasks count GPU capacity, not CPU: per MIG GPU that has the profile, the profile's
    // "Total" instances per GPU (nvidia-smi mig -lgip), which no layout of that GPU exceeds.
    std::int64_t instances = 0;
    for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      const mig::MigGpuId id = state.mig().gpu(n, gi);
      if (id == mig::kNoGpu || !(request.models & model_bit(state.gpu_model(n, gi))))
        continue;
      const int p = request.mig.profile[state.mig().table().model_of(id)];
      if (p < 0) continue;
      const auto& spec = state.mig().table().spec_of(id);
      instances += std::min<std::int64_t>(spec.profiles[static_cast<std::size_t>(p)].max_instances, spec.max_instances);
    }
    return std::min(cap, instances);
  }
  if (!shape.needs_gpu()) return cap;
  std::int64_t per_gpus = 0;
  for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if (!(request.models & model_bit(state.gpu_model(n, gi))) || state.shares().memory_capacity(n, gi) < shape.gpu_memory ||
        state.mig().mode(n, gi))
      continue;
    std::int64_t k = 1;
    if (shape.shares_gpu()) {
      k = kMilliPerGpu / shape.gpu_milli;
      if (shape.gpu_memory > 0) k = std::min<std::int64_t>(k, state.shares().memory_capacity(n, gi) / shape.gpu_memory);
    }
    per_gpus += k;
  }
  return std::min(cap, shape.shares_gpu() ? per_gpus : per_gpus / shape.gpus);
}

// Whether some node could hold one task of `request` once empty (diagnose_capacity(...).fitting() > 0).
GPUSCHED_DECL bool placement_some_node_holds(const ClusterState& state, const TaskRequest& request) {
  for (NodeId n = 0; n < state.node_count(); ++n)
    if (placement_capacity_fit(state, n, request) == FitReason::kFits) return true;
  return false;
}

// What a node offers in the unit of a failing reason (now), for FitDiagnosis::best_available.
GPUSCHED_DECL std::int64_t placement_offered(const ClusterState& state, NodeId n, FitReason reason) {
  switch (reason) {
    case FitReason::kInsufficientCpu: return state.cpu_free(n);
    case FitReason::kInsufficientMemory: return state.memory_free(n);
    case FitReason::kInsufficientGpus: return state.shares().idle_gpus(n);
    case FitReason::kInsufficientGpuShare: {
      std::int64_t most = 0;
      for (auto f : state.shares().free_milli(n)) most = std::max<std::int64_t>(most, f);
      return most;
    }
    case FitReason::kInsufficientGpuMemory: {
      std::int64_t most = 0;
      for (std::size_t g = 0; g < state.gpu_count(n); ++g)
        most = std::max<std::int64_t>(most, state.shares().free_memory(n, static_cast<GpuIndex>(g)));
      return most;
    }
    default: return -1;
  }
}

// The same at capacity (every node empty).
GPUSCHED_DECL std::int64_t placement_offered_at_capacity(const ClusterState& state, NodeId n, FitReason reason) {
  switch (reason) {
    case FitReason::kInsufficientCpu: return state.cpu_capacity(n);
    case FitReason::kInsufficientMemory: return state.memory_capacity(n);
    case FitReason::kInsufficientGpus: return static_cast<std::int64_t>(state.gpu_count(n));
    case FitReason::kInsufficientGpuShare: return state.gpu_count(n) > 0 ? kMilliPerGpu : 0;
    case FitReason::kInsufficientGpuMemory: {
      std::int64_t most = 0;
      for (std::size_t g = 0; g < state.gpu_count(n); ++g)
        most = std::max<std::int64_t>(most, state.shares().memory_capacity(n, static_cast<GpuIndex>(g)));
      return most;
    }
    default: return -1;
  }
}

template <class Check, class Offered>
FitDiagnosis placement_diagnose_with(const ClusterState& state, Check&& check, Offered&& offered) {
  FitDiagnosis d;
  d.total_nodes = state.node_count();
  d.best_available.fill(-1);
  for (NodeId n = 0; n < state.node_count(); ++n) {
    const FitReason r = check(n);
    const auto i = static_cast<std::size_t>(r);
    ++d.count[i];
    if (r != FitReason::kFits) d.best_available[i] = std::max(d.best_available[i], offered(n, r));
  }
  return d;
}

GPUSCHED_DECL Unit placement_reason_unit(FitReason reason) {
  switch (reason) {
    case FitReason::kInsufficientCpu: return Unit::kMilliCpu;
    case FitReason::kInsufficientMemory: return Unit::kMemoryBytes;
    case FitReason::kInsufficientGpus: return Unit::kGpus;
    case FitReason::kInsufficientGpuShare: return Unit::kMilliGpu;
    case FitReason::kInsufficientGpuMemory: return Unit::kGpuMemoryBytes;
    default: return Unit::kNone;
  }
}

GPUSCHED_DECL std::int64_t placement_reason_need(FitReason reason, const TaskShape& shape) {
  switch (reason) {
    case FitReason::kInsufficientCpu: return shape.cpu;
    case FitReason::kInsufficientMemory: return shape.memory;
    case FitReason::kInsufficientGpus: return shape.gpus;
    case FitReason::kInsufficientGpuShare: return shape.gpu_milli;
    case FitReason::kInsufficientGpuMemory: return shape.gpu_memory;
    default: return -1;
  }
}

}  // namespace detail

GPUSCHED_DECL std::string FitDiagnosis::to_string() const {
  std::string out = std::to_string(fitting()) + "/" + std::to_string(total_nodes) + " nodes";
  std::vector<std::size_t> order(kFitReasonCount - 1);
  std::iota(order.begin(), order.end(), std::size_t{1});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return count[a] > count[b]; });
  const char* sep = ": ";
  for (std::size_t r : order) {
    if (count[r] == 0) continue;
    out += sep + std::to_string(count[r]) + " ";
    out += fit_reason_text(static_cast<FitReason>(r));
    sep = ", ";
  }
  return out;
}

GPUSCHED_DECL FitDiagnosis diagnose(const ClusterState& state, const TaskRequest& request) {
  return detail::placement_diagnose_with(
      state, [&](NodeId n) { return state.check_fit(n, request); },
      [&](NodeId n, FitReason r) { return detail::placement_offered(state, n, r); });
}

GPUSCHED_DECL FitDiagnosis diagnose_capacity(const ClusterState& state, const TaskRequest& request) {
  return detail::placement_diagnose_with(
      state, [&](NodeId n) { return detail::placement_capacity_fit(state, n, request); },
      [&](NodeId n, FitReason r) { return detail::placement_offered_at_capacity(state, n, r); });
}

GPUSCHED_DECL std::vector<Reason> fit_reasons(const FitDiagnosis& d, const TaskRequest& request, std::int32_t group) {
  std::vector<Reason> out;
  for (std::size_t i = 1; i < kFitReasonCount; ++i) {
    if (d.count[i] == 0) continue;
    const auto r = static_cast<FitReason>(i);
    out.push_back({fit_reason_kind(r), detail::placement_reason_unit(r), detail::placement_reason_need(r, request.shape),
                   detail::placement_reason_unit(r) == Unit::kNone ? -1 : d.best_available[i], d.count[i], group});
  }
  std::stable_sort(out.begin(), out.end(), [](const Reason& a, const Reason& b) { return a.count > b.count; });
  return out;
}

GPUSCHED_DECL JobPlacement place_job(ClusterState& state, const CompiledJob& job, const PlacementPolicy& policy,
                              const JobPlacementOptions& options) {
  JobPlacement result;
  const detail::MigRoutedPicker picker(options.gpu_picker ? *options.gpu_picker : policy.gpu_picker(), options.mig_picker);
  const auto mark = state.checkpoint();
  for (std::uint32_t g = 0; g < job.groups.size(); ++g) {
    const CompiledGroup& group = job.groups[g];
    for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(group.replicas); ++r) {
      const NodeId node = policy.select(state, group.request);
      TaskAssignment assignment;
      const bool ok =
          node != kNoNode && picker.pick(state, node, group.request, assignment) && state.reserve(group.request, assignment).ok();
      if (ok) {
        result.tasks.push_back({g, r, std::move(assignment)});
        continue;
      }
      result.failed_group = g;
      result.failed_replica = r;
      result.gpu_pick_failed = node != kNoNode;
      result.tasks.clear();
      // Infeasible when proved on the empty cluster: one task fits no node's capacity, or some
      // group has more replicas than every node's capacity together holds. The first test stops at
      // the first node that holds the task; every node's reason is counted only for an infeasible
      // job, whose reasons are those counts (a one-event cycle at 10,000 nodes spent a fifth of its
      // time counting them for jobs that merely wait).
      if (!detail::placement_some_node_holds(state, group.request)) {
        const FitDiagnosis at_capacity = diagnose_capacity(state, group.request);
        result.verdict = Verdict::kInfeasible;
        result.diagnosis = at_capacity;
        result.reasons = fit_reasons(at_capacity, group.request, static_cast<std::int32_t>(g));
        state.rollback(mark);
        return result;
      }
      if (options.explain) result.diagnosis = diagnose(state, group.request);
      state.rollback(mark);
      for (std::uint32_t k = 0; k < job.groups.size(); ++k) {
        std::int64_t fit = 0;
        for (NodeId n = 0; n < state.node_count() && fit < job.groups[k].replicas; ++n)
          fit += detail::placement_tasks_at_capacity(state, n, job.groups[k].request);
        if (fit < job.groups[k].replicas) {
          result.verdict = Verdict::kInfeasible;
          result.reasons.push_back({ReasonKind::kTooFewTasksFit, Unit::kTasks, job.groups[k].replicas, fit, 0,
                                    static_cast<std::int32_t>(k)});
        }
      }
      if (result.verdict != Verdict::kInfeasible) result.verdict = Verdict::kNotNow;
      if (!options.explain) return result;
      const auto now = fit_reasons(result.diagnosis, group.request, static_cast<std::int32_t>(g));
      result.reasons.insert(result.reasons.end(), now.begin(), now.end());
      return result;
    }
  }
  result.verdict = Verdict::kPlaced;
  return result;
}

GPUSCHED_DECL std::string describe(const CompiledJob& job, const JobPlacement& p) {
  if (p.placed()) return "placed: " + std::to_string(p.tasks.size()) + " tasks";
  std::string out = "group " + job.groups[p.failed_group].name + " replica " + std::to_string(p.failed_replica) + ": ";
  const bool capacity = p.verdict == Verdict::kInfeasible && p.diagnosis.fitting() == 0;
  if (capacity) out += "infeasible (node capacities, as if the cluster were empty): ";
  out += p.diagnosis.to_string();
  if (!capacity && p.gpu_pick_failed) out += " (the chosen node's GPU pick failed)";
  for (const Reason& r : p.reasons)
    if (r.kind == ReasonKind::kTooFewTasksFit)
      out += "; infeasible: group " + job.groups[static_cast<std::size_t>(r.subject)].name + " needs " +
             std::to_string(r.needed) + " tasks, the cluster's capacity holds " + std::to_string(r.available);
  return out;
}

}  // namespace gpusched
