// The pending pods of a Kubernetes input decided in one pass (gpusched/io/k8s.hpp, decide).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "gpusched/gang/gang.hpp"
#include "gpusched/io/k8s.hpp"

namespace gpusched::io::k8s {

Result<Decisions> decide(const Input& input, ClusterState& state, const PlacementPolicy& policy) {
  if (!input.topology_levels.empty()) {
    auto levels = state.set_topology_levels(input.topology_levels);
    if (!levels) return Error{fmt::format("topology levels: {}", levels.error().message), levels.error().code};
  }
  // Compile every job before placing any: bad input fails the whole run, never half of it.
  std::vector<CompiledJob> compiled;
  compiled.reserve(input.jobs.size());
  for (const Job& job : input.jobs) {
    auto c = compile_job(state, job);
    if (!c) return Error{fmt::format("job {}: {}", job.job_name, c.error().message), c.error().code, c.error().field};
    compiled.push_back(std::move(*c));
  }
  Decisions out;
  out.placements.resize(compiled.size());
  out.messages.resize(compiled.size());
  out.gang.assign(compiled.size(), false);
  std::vector<std::size_t> order(compiled.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return compiled[a].priority > compiled[b].priority; });
  GangOptions gopt;
  gopt.policy = &policy;
  for (std::size_t j : order) {
    const CompiledJob& job = compiled[j];
    const bool gang = input.sources[j].kind != "Pod" || job.has_gang_constraints();
    out.gang[j] = gang;
    JobPlacement& p = out.placements[j];
    if (gang) {
      auto spec = make_gang_spec(job);
      if (!spec) return Error{fmt::format("job {}: {}", job.name, spec.error().message), spec.error().code};
      GangResult g = place_gang(state, *spec, gopt);
      p.verdict = g.verdict;
      p.reasons = g.reasons;
      p.tasks = std::move(g.tasks);
      if (!p.placed()) out.messages[j] = gang_message(*spec, g, state);
    } else {
      p = place_job(state, job, policy);
      if (!p.placed()) out.messages[j] = describe(job, p);
    }
    if (p.placed()) state.commit();
  }
  return out;
}

}  // namespace gpusched::io::k8s
