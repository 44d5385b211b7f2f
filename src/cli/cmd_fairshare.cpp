// `gpusched fairshare`: the admission order of pending jobs under hierarchical DRF, Kueue-style
// quotas and priorities, with per-queue usage, fair share and dominant share. Formats:
// docs/fairness.md; examples in examples/fairness/.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "io/cluster_json_detail.hpp"
#include "io/json_input.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/io/k8s.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_fairshare {

using fairness::Amounts;
using fairness::ResourceSpace;

struct FairshareOptions {
  std::string cluster_file, queues_file, jobs_file;
  std::vector<std::string> k8s_files;
  std::vector<std::string> slurm_files;
  std::string scheduler_name;
  std::string format = "table";
  std::optional<std::int64_t> now;
};

// The queues document is read by io/fairshare_json.hpp (one reader for the tool, the C API and the
// Python module).

std::string format_vector(const ResourceSpace& space, const Amounts& a) {
  std::string out = fmt::format("cpu {} mem {}", space.format(ResourceSpace::kCpu, a[ResourceSpace::kCpu]),
                                space.format(ResourceSpace::kMemory, a[ResourceSpace::kMemory]));
  for (Eigen::Index d = 2; d < space.size(); ++d)
    if (a[d] != 0) out += fmt::format(" {} {}", space.gpu_models[static_cast<std::size_t>(d - 2)], space.format(d, a[d]));
  return out;
}

// The plan of io::plan_fairshare, printed as --format asks (or its error, thrown).
int print_plan(const FairshareOptions& opt, Result<io::FairshareRun> planned);

// `gpusched fairshare --k8s FILE...`: nodes, pods (bound ones are queue usage), queues (Kueue
// ClusterQueues and LocalQueues, KAI or Volcano Queues) and PriorityClasses as Kubernetes objects.
int run_fairshare_k8s(const FairshareOptions& opt) {
  std::vector<std::string> texts;
  for (const auto& f : opt.k8s_files) texts.push_back(read_file(f));
  std::vector<io::k8s::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], opt.k8s_files[i]});
  io::k8s::Options kopt;
  kopt.scheduler_name = opt.scheduler_name;
  auto input = io::k8s::read(sources, kopt);
  if (!input) throw InputError(input.error().message);
  for (const auto& w : input->warnings) std::fprintf(stderr, "gpusched: warning: %s\n", io::detail::tidy_message(io::k8s::to_string(w)).c_str());
  auto state = ClusterState::build(input->cluster, input->registry);
  if (!state) throw InputError(fmt::format("nodes: {}", state.error().message));
  auto resources = fairness::fairness_cluster(*state);
  if (!resources) throw InputError(fmt::format("nodes: {}", resources.error().message));
  if (input->queues.empty()) throw InputError("--k8s: no queue objects (Kueue ClusterQueue, KAI or Volcano Queue) in the input");
  auto configs = io::k8s::queue_configs(*input, *state, resources->space);
  if (!configs) throw InputError(configs.error().message);
  io::QueuesDocument queues;
  queues.queues = std::move(*configs);
  queues.classes.insert(input->priority_classes.begin(), input->priority_classes.end());
  queues.aging.now = opt.now ? *opt.now : io::latest_submit_time(input->jobs);
  std::vector<const JobView*> views;
  for (const auto& j : input->jobs) views.push_back(&j);
  return print_plan(opt, io::plan_fairshare(*state, std::move(*resources), std::move(queues), views, "queues", "pods"));
}

// `gpusched fairshare --slurm FILE... --queues FILE`: sinfo's nodes, squeue's jobs (running ones are
// their account's usage), and the queues document naming the accounts: Slurm's JSON carries no
// fair-share tree (its shares live in the accounting database, sacctmgr), so the queues say it.
int run_fairshare_slurm(const FairshareOptions& opt) {
  if (!opt.cluster_file.empty() || !opt.jobs_file.empty())
    throw InputError("--slurm: give Slurm's JSON alone (not with --cluster or --jobs)");
  if (opt.queues_file.empty())
    throw InputError("--slurm: give --queues FILE too: Slurm's JSON holds no fair-share tree (sacctmgr does); name each account as a queue (docs/slurm.md)");
  const std::vector<std::string> texts = read_files(opt.slurm_files);
  auto input = io::slurm::read(slurm_sources(texts, opt.slurm_files));
  if (!input) throw InputError(input.error().message);
  print_slurm_notes(*input);
  auto state = ClusterState::build(input->cluster, input->registry);
  if (!state) throw InputError(fmt::format("nodes: {}", state.error().message));
  auto resources = fairness::fairness_cluster(*state);
  if (!resources) throw InputError(fmt::format("nodes: {}", resources.error().message));
  auto queues = io::read_queues_json(read_file(opt.queues_file), opt.queues_file, resources->space, input->registry);
  if (!queues) throw InputError(queues.error().message);
  // Each account's usage: what its running jobs hold (a job of an account no queue names counts nowhere).
  std::vector<RunningJob> running;
  std::vector<std::string> names;
  for (const auto& q : queues->queues) names.push_back(q.name);
  // Jobs run in leaf queues only: a parent queue takes no usage (its leaves' sum is its own), so a
  // running job charged to a parent account is reported and counted nowhere.
  const auto parents = fairness::parent_queue_names(queues->queues);
  for (const io::slurm::RunningInfo& r : input->running) {
    if (std::find(names.begin(), names.end(), r.account) == names.end() || r.tasks.empty()) continue;
    if (parents.contains(r.account)) {
      std::fprintf(stderr, "gpusched: warning: running job %s: account \"%s\" is a parent queue in %s; its usage counts in no queue (jobs run in leaf queues)\n",
                   io::detail::tidy_message(r.id).c_str(), io::detail::tidy_message(r.account).c_str(), opt.queues_file.c_str());
      continue;
    }
    auto job = io::slurm::running_job_on(*state, r);
    if (!job) throw InputError(job.error().message);
    running.push_back(std::move(*job));
  }
  if (auto st = fairness::set_usage_from_running(queues->queues, running, *state, resources->space); !st)
    throw InputError(fmt::format("running jobs: {}", st.error().message));
  if (opt.now) queues->aging.now = *opt.now;
  else if (!queues->now_given) queues->aging.now = io::latest_submit_time(input->jobs);
  std::vector<const JobView*> views;
  for (const auto& j : input->jobs) views.push_back(&j);
  return print_plan(opt, io::plan_fairshare(*state, std::move(*resources), std::move(*queues), views, opt.queues_file,
                                            "slurm jobs"));
}

int run_fairshare(const FairshareOptions& opt) {
  if (!opt.slurm_files.empty()) {
    if (!opt.k8s_files.empty()) throw InputError("--slurm: not with --k8s");
    return run_fairshare_slurm(opt);
  }
  if (!opt.k8s_files.empty()) {
    if (!opt.cluster_file.empty() || !opt.queues_file.empty() || !opt.jobs_file.empty())
      throw InputError("--k8s: give the Kubernetes objects alone (not with --cluster, --queues or --jobs)");
    return run_fairshare_k8s(opt);
  }
  if (opt.cluster_file.empty() || opt.queues_file.empty() || opt.jobs_file.empty())
    throw InputError("--cluster, --queues and --jobs are required (or --k8s FILE...)");
  auto cluster = io::read_cluster_json(read_file(opt.cluster_file), opt.cluster_file);
  if (!cluster) throw_input_error(opt.cluster_file, cluster.error().message);
  auto jobs = io::read_jobs_json(read_file(opt.jobs_file), opt.jobs_file);
  if (!jobs) throw_input_error(opt.jobs_file, jobs.error().message);
  // Parsed here for the tool's message on malformed JSON (throw_input_error), then read by io.
  const std::string queues_text = read_file(opt.queues_file);
  auto queues_parsed = io::detail::parse_json(queues_text, opt.queues_file);
  if (!queues_parsed) throw_input_error(opt.queues_file, queues_parsed.error().message);
  auto state = ClusterState::build(cluster->cluster, cluster->registry);
  if (!state) throw InputError(fmt::format("{}: {}", opt.cluster_file, state.error().message));
  return print_plan(opt, io::fairshare_plan(*state, *jobs, queues_text, opt.now, opt.queues_file, opt.jobs_file, opt.cluster_file));
}

// The plan printed: shared by the JSON files, the Kubernetes objects and Slurm's state.
int print_plan(const FairshareOptions& opt, Result<io::FairshareRun> planned) {
  if (!planned) throw InputError(planned.error().message);
  const io::FairshareRun& run = *planned;
  const ResourceSpace& space = run.space;
  const std::vector<CompiledJob>& pending = run.pending;
  const fairness::AdmissionPlan& plan = run.plan;
  const io::QueuesDocument& qf = run.queues;
  if (opt.format == "json") {  // the document io::write_fairshare_json writes for the library's callers
    std::fputs((io::write_fairshare_json(run, 2) + "\n").c_str(), stdout);
    return 0;
  }
  auto flavor = [&](int d) { return d < 0 ? std::string("-") : space.gpu_models[static_cast<std::size_t>(d - 2)]; };
  auto queue_name = [&](std::size_t q) { return q == SIZE_MAX ? std::string("-") : qf.queues[q].name; };
  std::string text = "Admission order\n";
  text += fmt::format("{:>4}  {:<24} {:<16} {:<16} {:>9} {:>8}\n", "#", "job", "queue", "flavor", "borrowed", "priority");
  for (std::size_t k = 0; k < plan.admitted.size(); ++k) {
    const auto& a = plan.admitted[k];
    text += fmt::format("{:>4}  {:<24} {:<16} {:<16} {:>9} {:>8}", k + 1, pending[a.job].name, queue_name(a.queue),
                        flavor(a.gpu_dim), a.borrowed ? "yes" : "no", a.priority);
    if (a.partial) {
      std::vector<std::int32_t> asked;
      for (const auto& g : pending[a.job].groups) asked.push_back(g.replicas);
      text += fmt::format("  partial: {} of {} replicas", fmt::join(a.replicas, "+"), fmt::join(asked, "+"));
    }
    text += "\n";
  }
  text += fmt::format("\nPending ({})\n", plan.pending.size());
  for (std::size_t k = 0; k < plan.pending.size(); ++k)
    text += fmt::format("  {:<24} {:<16} {}\n", pending[plan.pending[k].job].name, queue_name(plan.pending[k].queue),
                        run.pending_reasons[k]);
  text += "\nQueues\n";
  text += fmt::format("  {:<16} {:>6} {:>9} {:>9} {:>9} {:>5} {:>5}  {}\n", "queue", "weight", "dominant", "fair", "weighted",
                      "adm", "pend", "usage");
  for (std::size_t q = 0; q < plan.queues.size(); ++q) {
    const auto& r = plan.queues[q];
    std::string name = r.name;
    if (!qf.queues[q].parent.empty()) name = fmt::format("{}/{}", qf.queues[q].parent, r.name);
    text += fmt::format("  {:<16} {:>6.2f} {:>9.4f} {:>9.4f} {:>9.4f} {:>5} {:>5}  {}", name, qf.queues[q].weight,
                        r.dominant_share, r.fair_share, r.weighted_share, r.admitted, r.pending, format_vector(space, r.usage));
    if (!r.borrowed.isZero()) text += fmt::format("  (borrowed: {})", format_vector(space, r.borrowed));
    text += "\n";
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

void setup(CLI::App& app) {
  auto opt = std::make_shared<FairshareOptions>();
  auto* sub = app.add_subcommand("fairshare",
                                 "Admission order of pending jobs under hierarchical DRF, quotas (cohorts, borrowing, "
                                 "lending) and priorities, with per-queue usage and shares");
  sub->add_option("--cluster", opt->cluster_file, "Cluster JSON (docs/formats.md)");
  sub->add_option("--queues", opt->queues_file, "Queues JSON (docs/fairness.md)");
  sub->add_option("--jobs", opt->jobs_file, "Jobs JSON (docs/formats.md; submit_time in seconds)");
  auto* k8s = sub->add_option("--k8s", opt->k8s_files,
                  "Kubernetes objects instead (JSON or YAML files: Nodes, Pods, ClusterQueues/LocalQueues/"
                  "ResourceFlavors, KAI or Volcano Queues, PriorityClasses; docs/kubernetes.md)");
  add_slurm_options(sub, opt->slurm_files, nullptr,
                    "Slurm's JSON instead of --cluster/--jobs, with --queues naming the accounts (running jobs are their "
                    "account's usage)");
  sub->add_option("--scheduler-name", opt->scheduler_name, "With --k8s: read only pending pods of this schedulerName")
      ->needs(k8s);
  sub->add_option("--format", opt->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  sub->add_option("--now", opt->now, "Time (seconds) aging measures waits to; default: the queues file's \"now\", else the latest submit_time");
  sub->callback([opt] { set_exit_status(run_fairshare(*opt)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace cmd_fairshare
}  // namespace gpusched::cli
