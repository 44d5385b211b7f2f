// The pending pods of a Kubernetes input decided in one pass (gpusched/io/k8s.hpp, decide).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "gpusched/gang/gang.hpp"
#include "gpusched/io/k8s.hpp"

namespace gpusched::io::k8s {
namespace {

// The MIG pods left pending, per profile name, and the planner's re-partition for them on the state
// after the bindings (Decisions::repartition).
void plan_pending_mig(const std::vector<CompiledJob>& compiled, Decisions& out, const ClusterState& state) {
  for (std::size_t j = 0; j < compiled.size(); ++j) {
    const JobPlacement& p = out.placements[j];
    for (std::size_t g = 0; g < compiled[j].groups.size(); ++g) {
      const CompiledGroup& group = compiled[j].groups[g];
      if (!group.request.mig.any()) continue;
      std::int64_t placed = 0;
      if (p.placed())
        for (const TaskPlacement& t : p.tasks) placed += t.group == g;
      add_waiting_mig(out.repartition_demand, group, group.replicas - placed);
    }
  }
  if (!out.repartition_demand.empty()) out.repartition = mig::plan_repartition(state, out.repartition_demand);
}

}  // namespace

void add_waiting_mig(std::vector<mig::MigDemandItem>& demand, const CompiledGroup& group, std::int64_t waiting) {
  if (!group.request.mig.any() || waiting <= 0) return;
  auto it = std::find_if(demand.begin(), demand.end(), [&](const mig::MigDemandItem& d) { return d.label == group.mig_profile; });
  if (it == demand.end()) it = demand.insert(demand.end(), {group.mig_profile, group.request.mig, 0});
  it->count += waiting;
}

Result<Decisions> decide(const Input& input, ClusterState& state, const PlacementPolicy& policy,
                         const GpuPicker* mig_picker) {
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
  gopt.mig_picker = mig_picker;
  JobPlacementOptions jopt;
  jopt.mig_picker = mig_picker;
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
      p = place_job(state, job, policy, jopt);
      if (!p.placed()) out.messages[j] = describe(job, p);
    }
    if (p.placed()) state.commit();
  }
  plan_pending_mig(compiled, out, state);
  return out;
}

}  // namespace gpusched::io::k8s
