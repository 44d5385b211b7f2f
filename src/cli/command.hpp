// The gpusched tool's subcommand registry.
//
// Each src/cli/cmd_*.cpp registers its subcommands with a static `register_command(setup)`; main()
// builds the CLI11 app from the registry. A command reports bad input by throwing `InputError`
// (exit status 2, message on stderr, nothing on stdout); its callback sets the exit status otherwise.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpusched/io/slurm.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/registry.hpp"
#include "gpusched/scheduler/orders.hpp"

namespace gpusched::cli {

using CommandSetup = void (*)(CLI::App& app);

// Adds a subcommand setup function; returns true so it can initialise a static.
bool register_command(CommandSetup setup);

// Bad input: message to stderr, exit status 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The exit status main() returns after the chosen subcommand's callback ran.
void set_exit_status(int status);

// An error a reader returned for `file`, as an InputError whose message names the file first (the
// readers name the field path; with several input files the path alone would not say which one).
[[noreturn]] void throw_input_error(std::string_view file, std::string_view message);

// Reads a whole file; throws InputError naming the path when it cannot.
std::string read_file(const std::string& path);
std::vector<std::string> read_files(const std::vector<std::string>& paths);

// Where the shipped data (data/) is: the source tree's at build time, else the installed copy.
std::string data_dir();

// A MIG re-partition plan (io::k8s::repartition_json's text) as the table's lines: what `place --k8s`
// and `cycle --k8s` print beside their decisions; "" for "".
std::string repartition_table(const std::string& plan_json);

// Slurm (docs/slurm.md, src/cli/slurm_output.cpp): the reader's warnings, and the jobs it does not
// plan counted by Slurm's reason, on stderr; and the scontrol command that starts job `id` on
// `nodes` (its required nodes set to where gpusched places it).
void print_slurm_notes(const io::slurm::Input& input);
// `--slurm FILE...` (the JSON `instead` of the command's other inputs) and, when `held` is given,
// `--slurm-held skip|plan`; and what they become for the reader: the files' texts as its sources
// (views into `texts`), the option as its Options.
void add_slurm_options(CLI::App* sub, std::vector<std::string>& files, std::string* held, const std::string& instead);
std::vector<io::slurm::Source> slurm_sources(const std::vector<std::string>& texts, const std::vector<std::string>& files);
io::slurm::Options slurm_options(std::string_view held);
std::string scontrol_start(std::string_view id, std::vector<std::string> nodes);

// Placement policies (src/cli/policy_options.cpp, docs/policies.md): `--plugin LIB` (repeatable);
// the registry of the built-ins and the plugins' policies (InputError naming a bad plugin); the
// built-in names of one set, for --help; every task of the jobs that compile (FGD's target workload);
// a policy by name, with the workload of `tasks` when it needs one (InputError naming `option`); and,
// after deciding, a failed user policy as an InputError naming it.
void add_plugin_option(CLI::App* sub, std::vector<std::string>& plugins);
PolicyRegistry policy_registry(const std::vector<std::string>& plugins);
std::string policy_help(PolicySet set);
std::vector<TaskRequest> job_requests(const ClusterState& state, const std::vector<Job>& jobs);
std::unique_ptr<PlacementPolicy> make_placement_policy(const PolicyRegistry& registry, std::string_view option,
                                                       const std::string& name, std::uint64_t seed,
                                                       const std::function<std::vector<TaskRequest>()>& tasks,
                                                       PolicySet prefer = PolicySet::kPlacement);
void check_policy(const PlacementPolicy& policy);
// `--mig-placement first-fit|frag-aware`: which MIG instance a task with a MIG profile takes on the
// node the policy chose (docs/mig.md); nullptr for first-fit (the default), else the MIG family's
// FragAwareMigPicker with uniform demand (as `gpusched mig place`).
void add_mig_placement_option(CLI::App* sub, std::string& choice);
std::shared_ptr<const GpuPicker> make_mig_picker(const std::string& choice);

// Orders (docs/policies.md): `--order NAME` and `--victim-order NAME` (both optional), resolved in the
// built-in orders and the --plugin libraries' (InputError naming the option); the policies and orders
// of the built-ins and the plugins, loading each plugin once.
struct PluginRegistries {
  PolicyRegistry policies;
  scheduler::OrderRegistry orders;
};
PluginRegistries plugin_registries(const std::vector<std::string>& plugins);
void add_order_options(CLI::App* sub, std::string& order, std::string& victim_order);
using scheduler::Orders;
Orders make_orders(const scheduler::OrderRegistry& orders, const std::string& order, const std::string& victim_order);

}  // namespace gpusched::cli
