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
#include <vector>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/fairshare_json.hpp"

namespace gpusched::cli {
namespace {

using fairness::Amounts;
using fairness::ResourceSpace;

struct FairshareOptions {
  std::string cluster_file, queues_file, jobs_file;
  std::string format = "table";
  std::optional<std::int64_t> now;
};

std::string format_vector(const ResourceSpace& space, const Amounts& a) {
  std::string out = fmt::format("cpu {} mem {}", space.format(ResourceSpace::kCpu, a[ResourceSpace::kCpu]),
                                space.format(ResourceSpace::kMemory, a[ResourceSpace::kMemory]));
  for (Eigen::Index d = 2; d < space.size(); ++d)
    if (a[d] != 0) out += fmt::format(" {} {}", space.gpu_models[static_cast<std::size_t>(d - 2)], space.format(d, a[d]));
  return out;
}

int run_fairshare(const FairshareOptions& opt) {
  auto cluster = io::read_cluster_json(read_file(opt.cluster_file), opt.cluster_file);
  if (!cluster) throw InputError(cluster.error().message);
  auto jobs = io::read_jobs_json(read_file(opt.jobs_file), opt.jobs_file);
  if (!jobs) throw InputError(jobs.error().message);
  const std::string queues_text = read_file(opt.queues_file);

  // Capacity and free resources come from the one cluster model; the queues document and the plan
  // from io/fairshare_json.hpp (shared with the C API and the Python module).
  auto state = ClusterState::build(cluster->cluster, cluster->registry);
  if (!state) throw InputError(fmt::format("{}: {}", opt.cluster_file, state.error().message));
  auto run = io::fairshare_plan(*state, *jobs, queues_text, opt.now, opt.queues_file, opt.jobs_file,
                                opt.cluster_file);
  if (!run) throw InputError(run.error().message);
  if (opt.format == "json") {
    std::fputs((io::write_fairshare_json(*run, 2) + "\n").c_str(), stdout);
    return 0;
  }
  const ResourceSpace& space = run->space;
  const fairness::AdmissionPlan& plan = run->plan;
  const std::vector<fairness::PendingJob>& pending = run->pending;
  const io::QueuesDocument& qf = run->queues;
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
  for (std::size_t k = 0; k < plan.pending.size(); ++k) {
    const auto& p = plan.pending[k];
    text += fmt::format("  {:<24} {:<16} {}\n", pending[p.job].name, queue_name(p.queue), run->pending_reasons[k]);
  }
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
  sub->add_option("--cluster", opt->cluster_file, "Cluster JSON (docs/formats.md)")->required();
  sub->add_option("--queues", opt->queues_file, "Queues JSON (docs/fairness.md)")->required();
  sub->add_option("--jobs", opt->jobs_file, "Jobs JSON (docs/formats.md; submit_time in seconds)")->required();
  sub->add_option("--format", opt->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  sub->add_option("--now", opt->now, "Time (seconds) aging measures waits to; default: the queues file's \"now\", else the latest submit_time");
  sub->callback([opt] { set_exit_status(run_fairshare(*opt)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace
}  // namespace gpusched::cli
