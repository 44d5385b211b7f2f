// gpusched/cluster/detail/jobs_impl.hpp — compile_job: a JobView read once against a state.
//
// Included by cluster/jobs.hpp in header-only builds (the default), or once per program by
// gpusched/compiled.hpp under GPUSCHED_SEPARATE_COMPILATION (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"

#include <string>

#include "gpusched/cluster/jobs.hpp"

namespace gpusched {
namespace detail {

// "jobs[llm].groups[1].replicas: expected ..." with the code and the field path.
GPUSCHED_DECL Error job_error(const std::string& field, const std::string& what, ErrorCode code) {
  return Error{field + ": " + what, code, field};
}

}  // namespace detail

GPUSCHED_DECL bool CompiledJob::has_gang_constraints() const {
  if ((!topology.level.empty() && topology.mode != LevelMode::kNone) || !spread.empty() || !anti_affinity.empty())
    return true;
  for (const CompiledGroup& g : groups)
    if (g.min_replicas < g.replicas) return true;
  return false;
}

GPUSCHED_DECL Result<CompiledJob> compile_job(const ClusterState& state, const JobView& job) {
  CompiledJob out;
  out.name = job.name();
  out.queue = job.queue();
  out.priority = job.priority();
  out.priority_class = job.priority_class();
  out.submit_time = job.submit_time();
  const std::string path = "jobs[" + out.name + "]";
  const std::size_t n_groups = job.group_count();
  std::int64_t tasks = 0;
  for (std::size_t g = 0; g < n_groups; ++g) {
    const TaskGroupInfo info = job.group(g);
    const std::string gpath = path + ".groups[" + std::to_string(g) + "]";
    if (info.replicas < 0)
      return detail::job_error(gpath + ".replicas",
                                         "expected a non-negative integer, got " + std::to_string(info.replicas),
                                         ErrorCode::kInvalidValue);
    tasks += info.replicas;
    if (tasks > kMaxJobTasks)
      return detail::job_error(gpath + ".replicas",
                                         std::to_string(info.replicas) + " makes the job more than " +
                                             std::to_string(kMaxJobTasks) + " tasks, the most a job may have",
                                         ErrorCode::kLimit);
    auto request = state.compile(job, g);
    if (!request) return request.error();
    const std::int32_t min = info.min_replicas < 0 ? info.replicas : info.min_replicas;
    if (min > info.replicas)
      return detail::job_error(
          gpath + ".min_replicas", std::to_string(min) + " exceeds replicas " + std::to_string(info.replicas),
          ErrorCode::kInconsistent);
    out.groups.push_back({std::string(info.name), info.replicas, min, std::move(*request), std::string(info.mig_profile)});
  }
  auto check_group = [&](std::uint32_t g, const std::string& field) -> Status {
    if (g < n_groups) return {};
    return detail::job_error(field, "no group " + std::to_string(g) + " (the job has " +
                                                  std::to_string(n_groups) + ")",
                                       ErrorCode::kUnknownName);
  };
  const TopologyRequest topo = job.topology();
  out.topology = {std::string(topo.level), topo.mode};
  for (std::size_t s = 0; s < job.spread_count(); ++s) {
    const SpreadRequest req = job.spread(s);
    const std::string field = path + ".spread[" + std::to_string(s) + "]";
    if (req.level.empty())
      return detail::job_error(field + ".level", "must not be empty", ErrorCode::kMissingField);
    SpreadConstraint c{std::string(req.level), {}, req.max_per_domain, req.min_domains};
    for (std::size_t k = 0; k < job.spread_group_count(s); ++k) {
      const std::uint32_t g = job.spread_group(s, k);
      if (auto st = check_group(g, field + ".groups[" + std::to_string(k) + "]"); !st) return st.error();
      c.groups.push_back(g);
    }
    out.spread.push_back(std::move(c));
  }
  for (std::size_t a = 0; a < job.anti_affinity_count(); ++a) {
    const AntiAffinityRequest req = job.anti_affinity(a);
    const std::string field = path + ".anti_affinity[" + std::to_string(a) + "]";
    if (auto st = check_group(req.group_a, field + ".groups[0]"); !st) return st.error();
    if (auto st = check_group(req.group_b, field + ".groups[1]"); !st) return st.error();
    out.anti_affinity.push_back(
        {req.group_a, req.group_b, req.level.empty() ? std::string(kNodeLevel) : std::string(req.level)});
  }
  return out;
}

}  // namespace gpusched
