// The placement policy options every command shares: `--policy NAME` (or simulate's `--placement`)
// resolved in a registry of the built-ins and the `--plugin` libraries (docs/policies.md).
#include <fmt/format.h>

#include "cli/command.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/policy_plugin.hpp"
#include "io/text_input.hpp"

namespace gpusched::cli {

void add_plugin_option(CLI::App* sub, std::vector<std::string>& plugins) {
  sub->add_option("--plugin", plugins,
                  "A shared library of placement policies and orders (gpusched/c/policy.h; docs/policies.md); "
                  "repeatable: its policies become names --policy accepts, its orders names --order and "
                  "--victim-order accept");
}

PluginRegistries plugin_registries(const std::vector<std::string>& plugins) {
  PluginRegistries r{PolicyRegistry::with_builtins(), scheduler::OrderRegistry::with_builtins()};
  for (const std::string& p : plugins)
    if (Status ok = io::load_policy_plugin(r.policies, p, &r.orders); !ok) throw InputError(ok.error().message);
  return r;
}

PolicyRegistry policy_registry(const std::vector<std::string>& plugins) {
  return std::move(plugin_registries(plugins).policies);
}

void add_order_options(CLI::App* sub, std::string& order, std::string& victim_order) {
  const auto builtins = scheduler::OrderRegistry::with_builtins();
  auto names = [](const std::vector<std::string_view>& list) {
    std::string out;
    for (std::string_view n : list) out.append(out.empty() ? "" : ", ").append(n);
    return out;
  };
  sub->add_option("--order", order,
                  "Order of the pending jobs within a queue, before priority (default: priority, then submit time): " +
                      names(builtins.job_order_names()) + "; or a --plugin's (docs/policies.md)");
  sub->add_option("--victim-order", victim_order,
                  "Which running jobs a preemption evicts first (the cheapest set by its cost): " +
                      names(builtins.victim_order_names()) + "; or a --plugin's (docs/policies.md)");
}

Orders make_orders(const scheduler::OrderRegistry& orders, const std::string& order, const std::string& victim_order) {
  auto made = orders.make_orders(order, victim_order);
  if (!made) throw InputError((made.error().field == "order" ? "--order: " : "--victim-order: ") + made.error().message);
  return std::move(*made);
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
    if (auto c = compile_job(state, job)) append_tasks(*c, out);
  return out;
}

std::unique_ptr<PlacementPolicy> make_placement_policy(const PolicyRegistry& registry, std::string_view option,
                                                       const std::string& name, std::uint64_t seed,
                                                       const std::function<std::vector<TaskRequest>()>& tasks,
                                                       PolicySet prefer) {
  auto p = registry.make_for(name, seed, tasks, prefer);
  if (!p) throw InputError(fmt::format("{}: {}", option, p.error().message));
  return std::move(*p);
}

void add_mig_placement_option(CLI::App* sub, std::string& choice) {
  sub->add_option("--mig-placement", choice,
                  "Where a task with a MIG profile goes on its node: first-fit (an idle instance on the lowest GPU, "
                  "else the lowest free start) or frag-aware (keeps big profiles placeable; docs/mig.md)")
      ->check(CLI::IsMember({"first-fit", "frag-aware"}))
      ->capture_default_str();
}

std::shared_ptr<const GpuPicker> make_mig_picker(const std::string& choice) { return io::mig_picker_named(choice); }

void check_policy(const PlacementPolicy& policy) {
  if (!policy.failure().empty())
    throw InputError(fmt::format("policy {} failed: {}", io::detail::shown(policy.name()), policy.failure()));
}

}  // namespace gpusched::cli
