// gpusched/gang/detail/gang_spec.hpp — gang specs: building them from compiled jobs, validating
// them, naming methods. Included at the end of gang.hpp,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp);
// not a public header.
#pragma once

#include "gpusched/core/config.hpp"

#include <string>
#include <unordered_map>

#include "gpusched/gang/detail/gang_format.hpp"

#include "gpusched/gang/gang.hpp"

namespace gpusched {

GPUSCHED_DECL std::string_view method_name(GangMethod method) {
  switch (method) {
    case GangMethod::kNone: return "none";
    case GangMethod::kAggregateBound: return "aggregate bound";
    case GangMethod::kCountBound: return "per-node count";
    case GangMethod::kGreedy: return "greedy";
    case GangMethod::kSearch: return "exact search";
  }
  return "?";
}

GPUSCHED_DECL Status validate_gang(const GangSpec& spec) {
  const std::string gang = spec.name.empty() ? std::string("gang") : detail::gang_format("gang {}", spec.name);
  if (spec.groups.empty()) return Error{detail::gang_format("{}: groups: a gang needs at least one group", gang), ErrorCode::kMissingField, "groups"};
  const std::size_t n_groups = spec.groups.size();
  std::int64_t tasks = 0;
  for (std::size_t g = 0; g < n_groups; ++g) {
    const GangGroup& group = spec.groups[g];
    if (group.replicas < 0)
      return Error{detail::gang_format("{}: groups[{}] ({}).replicas: expected a non-negative integer, got {}", gang, g,
                               group.name, group.replicas), ErrorCode::kInvalidValue, detail::gang_format("groups[{}].replicas", g)};
    tasks += group.replicas;
    if (tasks > kMaxJobTasks)
      return Error{detail::gang_format("{}: groups[{}] ({}).replicas: {} makes the gang more than {} tasks, the most a job may have",
                                       gang, g, group.name, group.replicas, kMaxJobTasks),
                   ErrorCode::kLimit, detail::gang_format("groups[{}].replicas", g)};
    if (group.min_replicas < 0)
      return Error{detail::gang_format("{}: groups[{}] ({}).min_replicas: expected a non-negative integer, got {}", gang, g,
                               group.name, group.min_replicas), ErrorCode::kInvalidValue, detail::gang_format("groups[{}].min_replicas", g)};
    if (group.min_replicas > group.replicas)
      return Error{detail::gang_format("{}: groups[{}] ({}).min_replicas: {} exceeds replicas {}", gang, g, group.name,
                               group.min_replicas, group.replicas), ErrorCode::kInconsistent, detail::gang_format("groups[{}].min_replicas", g)};
  }
  for (std::size_t s = 0; s < spec.spread.size(); ++s) {
    const SpreadConstraint& c = spec.spread[s];
    if (c.level.empty()) return Error{detail::gang_format("{}: spread[{}].level: must not be empty", gang, s), ErrorCode::kMissingField, detail::gang_format("spread[{}].level", s)};
    if (c.max_per_domain < 0)
      return Error{detail::gang_format("{}: spread[{}].max_per_domain: expected a non-negative integer, got {}", gang, s,
                               c.max_per_domain), ErrorCode::kInvalidValue, detail::gang_format("spread[{}].max_per_domain", s)};
    if (c.min_domains < 0)
      return Error{detail::gang_format("{}: spread[{}].min_domains: expected a non-negative integer, got {}", gang, s,
                               c.min_domains), ErrorCode::kInvalidValue, detail::gang_format("spread[{}].min_domains", s)};
    std::int64_t covered_min = 0;
    std::vector<bool> seen(n_groups, false);
    for (std::size_t i = 0; i < c.groups.size(); ++i) {
      if (c.groups[i] >= n_groups)
        return Error{detail::gang_format("{}: spread[{}].groups[{}]: no group {} (the gang has {})", gang, s, i, c.groups[i],
                                 n_groups), ErrorCode::kUnknownName, detail::gang_format("spread[{}].groups[{}]", s, i)};
      if (seen[c.groups[i]])
        return Error{detail::gang_format("{}: spread[{}].groups[{}]: group {} listed twice", gang, s, i,
                                 spec.groups[c.groups[i]].name), ErrorCode::kDuplicate, detail::gang_format("spread[{}].groups[{}]", s, i)};
      seen[c.groups[i]] = true;
    }
    for (std::size_t g = 0; g < n_groups; ++g)
      if (c.groups.empty() || seen[g]) covered_min += spec.groups[g].min_replicas;
    // min_domains must be met by the minimum gang: it is part of what "feasible" means.
    if (c.min_domains > covered_min)
      return Error{detail::gang_format("{}: spread[{}].min_domains: {} domains need at least {} tasks, but the groups' "
                               "min_replicas add up to {}",
                               gang, s, c.min_domains, c.min_domains, covered_min), ErrorCode::kInconsistent, detail::gang_format("spread[{}].min_domains", s)};
  }
  for (std::size_t a = 0; a < spec.anti_affinity.size(); ++a) {
    const AntiAffinity& c = spec.anti_affinity[a];
    if (c.level.empty()) return Error{detail::gang_format("{}: anti_affinity[{}].level: must not be empty", gang, a), ErrorCode::kMissingField, detail::gang_format("anti_affinity[{}].level", a)};
    if (c.group_a >= n_groups || c.group_b >= n_groups)
      return Error{detail::gang_format("{}: anti_affinity[{}]: no group {} (the gang has {})", gang, a,
                               c.group_a >= n_groups ? c.group_a : c.group_b, n_groups), ErrorCode::kUnknownName, detail::gang_format("anti_affinity[{}]", a)};
  }
  return {};
}

GPUSCHED_DECL Result<GangSpec> make_gang_spec(const CompiledJob& job, const GangConstraints& constraints) {
  GangSpec spec;
  spec.name = job.name;
  // The job's own constraints (said once, in the JobView), then any given here by group name.
  spec.topology = job.topology;
  spec.spread = job.spread;
  spec.anti_affinity = job.anti_affinity;
  std::unordered_map<std::string, std::uint32_t> index;
  std::string names;
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    const CompiledGroup& group = job.groups[g];
    spec.groups.push_back({group.name, group.replicas, group.min_replicas, group.request});
    index.emplace(group.name, static_cast<std::uint32_t>(g));
    names += detail::gang_format("{}{}", names.empty() ? "" : ", ", group.name);
  }
  auto lookup = [&](const std::string& name, const std::string& field) -> Result<std::uint32_t> {
    auto it = index.find(name);
    if (it == index.end())
      return Error{detail::gang_format("jobs[{}].{}: unknown group \"{}\" (groups: {})", job.name, field, name, names), ErrorCode::kUnknownName, detail::gang_format("jobs[{}].{}", job.name, field)};
    return it->second;
  };
  if (!constraints.topology.level.empty()) spec.topology = constraints.topology;
  for (std::size_t s = 0; s < constraints.spread.size(); ++s) {
    const auto& c = constraints.spread[s];
    SpreadConstraint out;
    out.level = c.level;
    out.max_per_domain = c.max_per_domain;
    out.min_domains = c.min_domains;
    for (std::size_t i = 0; i < c.groups.size(); ++i) {
      auto g = lookup(c.groups[i], detail::gang_format("spread[{}].groups[{}]", s, i));
      if (!g) return g.error();
      out.groups.push_back(*g);
    }
    spec.spread.push_back(std::move(out));
  }
  for (std::size_t a = 0; a < constraints.anti_affinity.size(); ++a) {
    const auto& c = constraints.anti_affinity[a];
    auto ga = lookup(c.group_a, detail::gang_format("anti_affinity[{}].groups[0]", a));
    if (!ga) return ga.error();
    auto gb = lookup(c.group_b, detail::gang_format("anti_affinity[{}].groups[1]", a));
    if (!gb) return gb.error();
    spec.anti_affinity.push_back({*ga, *gb, c.level});
  }
  if (auto st = validate_gang(spec); !st) return st.error();
  return spec;
}

}  // namespace gpusched
