// `gpusched place`: place jobs on a described cluster with one policy.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "io/text_input.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/io/slurm.hpp"
#include "gpusched/io/task_records.hpp"
#include "io/decision_json.hpp"
#include "gpusched/packing/placement.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_place {

struct PlaceOptions {
  std::string cluster_file;
  std::string jobs_file;
  std::string policy = "best-fit";
  std::string format = "table";
  std::uint64_t seed = 42;
  bool gang = false;  // decide every job with the gang solver (docs/gang.md)
  std::vector<std::string> k8s_files;        // Kubernetes objects instead of --cluster/--jobs
  std::vector<std::string> topology_levels;  // with --k8s: node label keys that are levels
  std::string scheduler_name;                // with --k8s: only pending pods of this scheduler
  std::vector<std::string> slurm_files;      // Slurm's JSON (sinfo, squeue) instead of --cluster/--jobs
  std::string slurm_held = "skip";           // with --slurm: held jobs skipped, or planned as if released
  std::vector<std::string> plugins;          // --plugin: shared libraries of policies
  std::string mig_placement = "first-fit";   // --mig-placement
};

// `gpusched place --k8s FILE...`: Nodes, Pods, PodGroups, Volcano Jobs, Kueue objects as JSON or
// YAML (docs/kubernetes.md); the output is the bindings (pod -> node, GPUs, MIG device).
int run_place_k8s(const PlaceOptions& opt) {
  std::vector<std::string> texts;
  for (const auto& f : opt.k8s_files) texts.push_back(read_file(f));
  std::vector<io::k8s::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], opt.k8s_files[i]});
  io::k8s::Options kopt;
  kopt.scheduler_name = opt.scheduler_name;
  kopt.add_topology_levels(opt.topology_levels);
  auto input = io::k8s::read(sources, kopt);
  if (!input) throw InputError(input.error().message);
  auto state = ClusterState::build(input->cluster, input->registry);
  if (!state) throw InputError(fmt::format("nodes: {}", state.error().message));
  const PolicyRegistry registry = policy_registry(opt.plugins);
  auto policy = make_placement_policy(registry, "--policy", opt.policy, opt.seed,
                                      [&] { return job_requests(*state, input->jobs); });
  const auto mig_picker = make_mig_picker(opt.mig_placement);
  auto decided = io::k8s::decide(*input, *state, *policy, mig_picker.get());
  check_policy(*policy);
  if (!decided) throw InputError(decided.error().message);
  const std::string text = io::k8s::bindings_json(*input, *state, *decided);
  if (opt.format == "json") {
    std::printf("%s\n", text.c_str());
    return 0;
  }
  for (const auto& w : input->warnings) std::fprintf(stderr, "gpusched: warning: %s\n", io::detail::tidy_message(io::k8s::to_string(w)).c_str());
  const nlohmann::json out = nlohmann::json::parse(text);
  std::string table = fmt::format("policy: {}\n{:<40} {:<24} {}\n", policy->name(), "POD", "NODE", "GPUS");
  for (const auto& b : out["bindings"]) {
    std::string gpus;
    if (b.contains("mig"))
      gpus = fmt::format("MIG {} on GPU {} (slice {})", b["mig"]["profile"].get<std::string>(), b["mig"]["gpu"].get<int>(),
                         b["mig"]["start"].get<int>());
    else
      for (const auto& g : b["gpus"]) gpus += fmt::format("{}{}", gpus.empty() ? "" : ",", g.get<int>());
    if (gpus.empty()) gpus = "-";
    table += fmt::format("{:<40} {:<24} {}\n", b["pod"].get<std::string>(), b["node"].get<std::string>(), gpus);
  }
  for (const auto& p : out["pending"])
    table += fmt::format("{:<40} PENDING ({}): {}\n", p["pod"].get<std::string>(), p.value("verdict", ""), p.value("message", ""));
  table += fmt::format("{} bound, {} pending, {} warnings\n", out["bindings"].size(), out["pending"].size(),
                       out["warnings"].size());
  if (out.contains("repartition")) table += repartition_table(out["repartition"].dump());
  std::fputs(table.c_str(), stdout);
  return 0;
}


nlohmann::json reasons_json(const FitDiagnosis& d) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t r = 1; r < kFitReasonCount; ++r)
    if (d.count[r]) out[std::string(fit_reason_text(static_cast<FitReason>(r)))] = d.count[r];
  return out;
}

// The one vocabulary's reasons as JSON: kind, unit, numbers, and the group they are about.
nlohmann::json reasons_json(const std::vector<Reason>& reasons, const CompiledJob& job) {
  return io::detail::reasons_json(reasons, &job);
}

// The jobs to place and the cluster they go on, from --cluster/--jobs or from Slurm's JSON.
struct PlaceInputs {
  io::ClusterDocument cluster;
  std::vector<Job> jobs;
  std::string cluster_source, jobs_source;
};

// `--slurm FILE...` (docs/slurm.md): sinfo's nodes less squeue's running jobs, its pending jobs in
// Slurm's order; the reader's warnings and the jobs it does not plan (held, dependencies, limits) on
// stderr.
PlaceInputs read_place_slurm(const PlaceOptions& opt) {
  if (!opt.cluster_file.empty() || !opt.jobs_file.empty())
    throw InputError("--slurm: give Slurm's JSON alone (not with --cluster or --jobs)");
  const std::vector<std::string> texts = read_files(opt.slurm_files);
  auto input = io::slurm::read(slurm_sources(texts, opt.slurm_files), slurm_options(opt.slurm_held));
  if (!input) throw InputError(input.error().message);
  print_slurm_notes(*input);
  PlaceInputs in;
  in.cluster.registry = std::move(input->registry);
  in.cluster.cluster = std::move(input->cluster);
  in.jobs = std::move(input->jobs);
  in.cluster_source = in.jobs_source = "slurm";
  return in;
}

PlaceInputs read_place_inputs(const PlaceOptions& opt) {
  if (!opt.slurm_files.empty()) return read_place_slurm(opt);
  if (opt.cluster_file.empty() || opt.jobs_file.empty())
    throw InputError("--cluster and --jobs are required (or --k8s FILE... or --slurm FILE...)");
  auto cluster = io::read_cluster_json(read_file(opt.cluster_file), opt.cluster_file);
  if (!cluster) throw_input_error(opt.cluster_file, cluster.error().message);
  auto jobs = io::read_jobs_json(read_file(opt.jobs_file), opt.jobs_file);
  if (!jobs) throw_input_error(opt.jobs_file, jobs.error().message);
  return {std::move(*cluster), std::move(jobs->jobs), opt.cluster_file, opt.jobs_file};
}

// The gang solver's answer for one job, as `place` prints it.
nlohmann::json gang_json(const GangSpec& spec, const GangResult& g, const CompiledJob& job, const ClusterState& state) {
  nlohmann::json bounds = nlohmann::json::array();
  for (const auto& b : g.bounds) bounds.push_back(nlohmann::json{{"what", b.what}, {"needed", b.needed}, {"available", b.available}});
  nlohmann::json counts = nlohmann::json::object();
  for (std::size_t k = 0; k < job.groups.size(); ++k) counts[job.groups[k].name] = g.placed_per_group[k];
  nlohmann::json out{{"verdict", std::string(verdict_name(g.verdict))},
                     {"method", std::string(method_name(g.method))},
                     {"placed", counts},
                     {"message", gang_message(spec, g, state)},
                     {"bounds", bounds},
                     {"reasons", reasons_json(g.reasons, job)},
                     {"effort", g.effort_used}};
  if (g.undecided()) out["undecided"] = true;
  if (!g.domain.empty()) out["domain"] = g.domain;
  if (g.domains_used > 0) out["domains_used"] = g.domains_used;
  return out;
}

// What `place` answers, in its three formats at once: JSON records, the table, scontrol lines.
struct PlaceReport {
  nlohmann::json placed = nlohmann::json::array();
  nlohmann::json unplaced = nlohmann::json::array();
  std::string table, scontrol;

  void add_placed(const ClusterState& state, const CompiledJob& job, const JobPlacement& p, const nlohmann::json* gang) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const io::TaskRecord& t : io::task_records(state, job, p.tasks)) {
      tasks.push_back(io::detail::placed_task_json(t));
      std::string gpu_text = t.gpus.empty() ? "-" : fmt::format("{}", fmt::join(t.gpus, ","));
      if (t.partial_gpu()) gpu_text += fmt::format(" ({}m)", t.gpu_milli);
      table += fmt::format("{:<24} {:<16} {:>4}  {:<24} {}\n", job.name, t.group, t.replica, t.node_name, gpu_text);
    }
    placed.push_back(nlohmann::json{{"job", job.name}, {"queue", job.queue}, {"priority", job.priority}, {"tasks", tasks}});
    std::vector<std::string> nodes;
    for (const TaskPlacement& t : p.tasks) nodes.emplace_back(state.node_name(t.assignment.node));
    scontrol += scontrol_start(job.name, std::move(nodes));
    if (gang != nullptr) {
      placed.back()["gang"] = *gang;
      table += fmt::format("{:<24} gang: {}\n", job.name, (*gang)["message"].get<std::string>());
    }
  }
  void add_unplaced_gang(const CompiledJob& job, const nlohmann::json& gang) {
    nlohmann::json entry{{"job", job.name}};
    entry.update(gang);
    unplaced.push_back(entry);
    table += fmt::format("{:<24} {} ({}): {}\n", job.name, gang.contains("undecided") ? "UNDECIDED" : "UNSCHEDULABLE",
                         gang["verdict"].get<std::string>(), gang["message"].get<std::string>());
  }
  void add_unplaced_job(const CompiledJob& job, const JobPlacement& p) {
    const std::string message = describe(job, p);
    unplaced.push_back(nlohmann::json{{"job", job.name},
                                      {"verdict", std::string(verdict_name(p.verdict))},
                                      {"group", job.groups[p.failed_group].name},
                                      {"replica", p.failed_replica},
                                      {"message", message},
                                      {"nodes_total", p.diagnosis.total_nodes},
                                      {"nodes_fitting", p.diagnosis.fitting()},
                                      {"reasons", reasons_json(p.diagnosis)},
                                      {"structured_reasons", reasons_json(p.reasons, job)}});
    table += fmt::format("{:<24} UNSCHEDULABLE ({}): {}\n", job.name, verdict_name(p.verdict), message);
  }
  void print(const std::string& format, std::string_view policy) {
    const std::string name(policy);
    if (format == "slurm") {
      for (const auto& u : unplaced)
        scontrol += fmt::format("# {} waits ({}): {}\n", u["job"].get<std::string>(), u.value("verdict", ""), u.value("message", ""));
      std::printf("# gpusched place --policy %s: %zu jobs start now, %zu wait\n%s", name.c_str(), placed.size(), unplaced.size(),
                  scontrol.c_str());
    } else if (format == "json") {
      nlohmann::json out = nlohmann::json{{"policy", name}, {"placed", placed}, {"unschedulable", unplaced}};
      std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("policy: %s\n%-24s %-16s %4s  %-24s %s\n%s", name.c_str(), "JOB", "GROUP", "TASK", "NODE", "GPUS", table.c_str());
      std::printf("%zu placed, %zu unschedulable\n", placed.size(), unplaced.size());
    }
  }
};

int run_place(const PlaceOptions& opt) {
  if (!opt.k8s_files.empty()) {
    if (!opt.cluster_file.empty() || !opt.jobs_file.empty() || !opt.slurm_files.empty())
      throw InputError("--k8s: give the Kubernetes objects alone (not with --cluster, --jobs or --slurm)");
    return run_place_k8s(opt);
  }
  if (opt.format == "slurm" && opt.slurm_files.empty()) throw InputError("--format slurm: with --slurm only");
  PlaceInputs in = read_place_inputs(opt);
  auto state = ClusterState::build(in.cluster.cluster, in.cluster.registry);
  if (!state) throw InputError(fmt::format("{}: {}", in.cluster_source, state.error().message));
  const PolicyRegistry registry = policy_registry(opt.plugins);
  auto policy = make_placement_policy(registry, "--policy", opt.policy, opt.seed,
                                      [&] { return job_requests(*state, in.jobs); });

  // Compile every job before placing any: bad input fails the whole run, never half of it.
  std::vector<CompiledJob> compiled;
  for (const Job& job : in.jobs) {
    auto c = compile_job(*state, job);
    if (!c) throw InputError(fmt::format("{}: {}", in.jobs_source, c.error().message));
    compiled.push_back(std::move(*c));
  }
  // Gang jobs: constraints or elastic groups (or --gang) go through the gang solver. The job model
  // carries the constraints (the reader resolved them), so the spec comes from the compiled job.
  std::vector<GangSpec> gangs(compiled.size());
  std::vector<bool> is_gang(compiled.size(), false);
  for (std::size_t j = 0; j < compiled.size(); ++j) {
    auto spec = make_gang_spec(compiled[j]);
    if (!spec) throw InputError(fmt::format("{}: {}", in.jobs_source, spec.error().message));
    gangs[j] = std::move(*spec);
    is_gang[j] = opt.gang || compiled[j].has_gang_constraints();
  }
  // Higher priority first; equal priorities keep the file's order.
  std::vector<std::size_t> order(compiled.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return compiled[a].priority > compiled[b].priority; });

  const auto mig_picker = make_mig_picker(opt.mig_placement);
  JobPlacementOptions job_options;
  job_options.mig_picker = mig_picker.get();
  PlaceReport report;
  for (std::size_t j : order) {
    const CompiledJob& job = compiled[j];
    JobPlacement p;
    nlohmann::json gang_out;
    if (is_gang[j]) {
      GangOptions gopt;
      gopt.policy = policy.get();
      gopt.mig_picker = mig_picker.get();
      GangResult g = place_gang(*state, gangs[j], gopt);
      gang_out = gang_json(gangs[j], g, job, *state);
      p.verdict = g.verdict;
      p.tasks = std::move(g.tasks);
    } else {
      p = place_job(*state, job, *policy, job_options);
    }
    if (p.placed()) {
      state->commit();
      report.add_placed(*state, job, p, is_gang[j] ? &gang_out : nullptr);
    } else if (is_gang[j]) {
      report.add_unplaced_gang(job, gang_out);
    } else {
      report.add_unplaced_job(job, p);
    }
  }
  check_policy(*policy);
  report.print(opt.format, policy->name());
  return 0;
}

void setup(CLI::App& app) {
  auto opt = std::make_shared<PlaceOptions>();
  auto* sub = app.add_subcommand("place", "Place jobs on a cluster and explain the jobs that cannot be placed");
  sub->add_option("--cluster", opt->cluster_file, "Cluster JSON (docs/formats.md)");
  sub->add_option("--jobs", opt->jobs_file, "Jobs JSON (docs/formats.md)");
  auto* k8s = sub->add_option("--k8s", opt->k8s_files,
                  "Kubernetes objects instead of --cluster/--jobs: JSON or YAML files of Nodes, Pods, PodGroups, "
                  "Volcano Jobs, Kueue objects (docs/kubernetes.md); prints bindings");
  sub->add_option("--topology-level", opt->topology_levels,
                  "With --k8s: a node label key that is a topology level (rack, block), outermost first; repeatable")
      ->needs(k8s);
  sub->add_option("--scheduler-name", opt->scheduler_name, "With --k8s: read only pending pods of this schedulerName")
      ->needs(k8s);
  sub->add_option("--policy", opt->policy,
                  "Placement policy: " + policy_help(PolicySet::kPlacement) + "; the FGD paper's (" +
                      policy_help(PolicySet::kTrace) + "); or a --plugin's (docs/policies.md)")
      ->capture_default_str();
  add_plugin_option(sub, opt->plugins);
  add_mig_placement_option(sub, opt->mig_placement);
  add_slurm_options(sub, opt->slurm_files, &opt->slurm_held, "Slurm's JSON instead of --cluster/--jobs");
  sub->add_option("--format", opt->format, "Output format (slurm: the scontrol commands, with --slurm)")
      ->check(CLI::IsMember({"json", "table", "slurm"}))->capture_default_str();
  sub->add_option("--seed", opt->seed, "Seed of the random policy")->capture_default_str();
  sub->add_flag("--gang", opt->gang,
                "Decide every job as a gang (bounds, exact search, explanations); jobs with topology, spread, "
                "anti_affinity or elastic groups always are");
  sub->callback([opt] { set_exit_status(run_place(*opt)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace cmd_place

std::string repartition_table(const std::string& plan_json) {
  if (plan_json.empty()) return {};
  // Not bindings: the MIG manager creates instances (docs/kubernetes.md, "MIG").
  const nlohmann::json r = nlohmann::json::parse(plan_json);
  std::string out = fmt::format("re-partition plan (not applied): {} waiting MIG tasks served by new instances, {} not\n",
                                r["served"].get<std::int64_t>(), r["unserved"].get<std::int64_t>());
  auto list = [](const nlohmann::json& v) {
    std::string s;
    for (const auto& i : v) s += fmt::format("{}{}@{}", s.empty() ? "" : " ", i["profile"].get<std::string>(), i["start"].get<int>());
    return s.empty() ? std::string("-") : s;
  };
  for (const auto& g : r["gpus"])
    out += fmt::format("  {} GPU {}: destroy {}; create {}\n", g["node"].get<std::string>(), g["gpu"].get<int>(),
                       list(g["destroy"]), list(g["create"]));
  return out;
}

}  // namespace gpusched::cli
