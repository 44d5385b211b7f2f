// The placement policy options every command shares: `--policy NAME` (or simulate's `--placement`)
// resolved in a registry of the built-ins and the `--plugin` libraries (docs/policies.md).
#include <fmt/format.h>

#include "cli/command.hpp"
#include "gpusched/io/policy_plugin.hpp"
#include "io/text_input.hpp"

namespace gpusched::cli {

void add_plugin_option(CLI::App* sub, std::vector<std::string>& plugins) {
  sub->add_option("--plugin", plugins,
                  "A shared library of placement policies (gpusched/c/policy.h; docs/policies.md); repeatable: "
                  "its policies become names --policy accepts");
}

PolicyRegistry policy_registry(const std::vector<std::string>& plugins) {
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  for (const std::string& p : plugins)
    if (Status ok = io::load_policy_plugin(registry, p); !ok) throw InputError(ok.error().message);
  return registry;
}

std::string policy_help(PolicySet set) {
  const PolicyRegistry builtins = PolicyRegistry::with_builtins();  // the names are views into it
  std::string names;
  for (std::string_view n : builtins.names(set)) names.append(names.empty() ? "" : ", ").append(n);
  return names;
}

std::vector<TaskRequest> job_requests(const ClusterState& state, const std::vector<Job>& jobs) {
  std::vector<TaskRequest> out;
  for (const Job& job : jobs)
    if (auto c = compile_job(state, job))
      for (const CompiledGroup& g : c->groups)
        for (std::int32_t r = 0; r < g.replicas; ++r) out.push_back(g.request);
  return out;
}

std::unique_ptr<PlacementPolicy> make_placement_policy(const PolicyRegistry& registry, std::string_view option,
                                                       const std::string& name, std::uint64_t seed,
                                                       const std::function<std::vector<TaskRequest>()>& tasks,
                                                       PolicySet prefer) {
  TargetWorkload workload;
  if (const PolicyEntry* e = registry.find(name, prefer); e && e->needs_workload)
    workload = TargetWorkload::from_requests(tasks());
  auto p = registry.make(name, {seed, &workload}, prefer);
  if (!p) throw InputError(fmt::format("{}: {}", option, p.error().message));
  return std::move(*p);
}

void check_policy(const PlacementPolicy& policy) {
  if (!policy.failure().empty())
    throw InputError(fmt::format("policy {} failed: {}", io::detail::shown(policy.name()), policy.failure()));
}

}  // namespace gpusched::cli
