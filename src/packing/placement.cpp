#include "gpusched/packing/placement.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace gpusched {

std::string FitDiagnosis::to_string() const {
  std::string out = fmt::format("{}/{} nodes", fitting(), total_nodes);
  std::vector<std::size_t> order(kFitReasonCount - 1);
  std::iota(order.begin(), order.end(), std::size_t{1});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return count[a] > count[b]; });
  const char* sep = ": ";
  for (std::size_t r : order) {
    if (count[r] == 0) continue;
    out += fmt::format("{}{} {}", sep, count[r], fit_reason_text(static_cast<FitReason>(r)));
    sep = ", ";
  }
  return out;
}

FitDiagnosis diagnose(const ClusterState& state, const TaskRequest& request) {
  FitDiagnosis d;
  d.total_nodes = state.node_count();
  for (NodeId n = 0; n < state.node_count(); ++n) ++d.count[static_cast<std::size_t>(state.check_fit(n, request))];
  return d;
}

Result<CompiledJob> compile_job(const ClusterState& state, const JobView& job) {
  CompiledJob out;
  out.name = job.name();
  out.queue = job.queue();
  out.priority = job.priority();
  for (std::size_t g = 0; g < job.group_count(); ++g) {
    const TaskGroupInfo info = job.group(g);
    if (info.replicas < 0)
      return Error{fmt::format("jobs[{}].groups[{}].replicas: expected a non-negative integer, got {}", job.name(),
                               g, info.replicas)};
    auto request = state.compile(job, g);
    if (!request) return request.error();
    const std::int32_t min = info.min_replicas < 0 ? info.replicas : info.min_replicas;
    if (min > info.replicas)
      return Error{fmt::format("jobs[{}].groups[{}].min_replicas: {} exceeds replicas {}", job.name(), g, min,
                               info.replicas)};
    out.groups.push_back({std::string(info.name), info.replicas, min, std::move(*request)});
  }
  return out;
}

JobPlacement place_job(ClusterState& state, const CompiledJob& job, const PlacementPolicy& policy) {
  JobPlacement result;
  const auto mark = state.checkpoint();
  for (std::uint32_t g = 0; g < job.groups.size(); ++g) {
    const CompiledGroup& group = job.groups[g];
    for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(group.replicas); ++r) {
      const NodeId node = policy.select(state, group.request);
      TaskAssignment assignment;
      bool ok = node != kNoNode && policy.gpu_picker().pick(state, node, group.request, assignment) &&
                state.reserve(group.request, assignment).ok();
      if (!ok) {
        result.failed_group = g;
        result.failed_replica = r;
        result.diagnosis = diagnose(state, group.request);
        result.reason = fmt::format("group {} replica {}: {}", group.name, r, result.diagnosis.to_string());
        if (node != kNoNode) result.reason += " (the chosen node's GPU pick failed)";
        result.tasks.clear();
        state.rollback(mark);
        return result;
      }
      result.tasks.push_back({g, r, std::move(assignment)});
    }
  }
  result.placed = true;
  return result;
}

}  // namespace gpusched
