// `gpusched cycle` and `gpusched explain JOB`: one scheduling cycle (scheduler/cycle.hpp) over a
// cluster, its running jobs, the pending jobs and the queues at a time; and why one job waits, with
// numbers, and what would let it start. Formats: docs/cycle.md; example in examples/cycle/.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "io/text_input.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "io/decision_json.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_cycle {

using nlohmann::json;
using namespace gpusched::scheduler;

struct CycleCliOptions {
  std::string cluster_file, running_file, pending_file, queues_file;
  std::int64_t now = 0;
  std::string format = "table";
  std::string within_queue = "lower";
  std::string reclaim = "any";
  bool no_preempt = false;
  bool no_fair_share_reclaim = false;
  bool no_grow = false;
  std::int64_t min_runtime = 0;
  std::string backfill = "easy";
  std::int64_t bf_window = 86'400, bf_resolution = 60;
  std::size_t bf_depth = 500;
  std::string job;  // explain
  std::vector<std::string> k8s_files;  // Kubernetes objects instead of --cluster/--running/--pending/--queues
  std::vector<std::string> slurm_files;  // Slurm's JSON (sinfo, squeue) instead of them
  std::string slurm_held = "skip";
  std::string policy = "best-fit";    // placement policy (--policy), resolved with the --plugin ones
  std::string mig_placement = "first-fit";  // --mig-placement
  std::uint64_t seed = 42;
  std::vector<std::string> plugins;
  std::string order, victim_order;  // --order, --victim-order ("" = the defaults)
};

// Everything one cycle needs, read from the files (or Kubernetes objects) by the io library
// (gpusched/io/cycle_json.hpp: the formats and messages are the C API's and Python's too).
struct Inputs {
  io::ClusterDocument cluster;
  std::optional<ClusterState> state;
  io::CycleInputs cycle;
  std::optional<io::slurm::Input> slurm;  // --slurm: what the reader said of each job
};

Inputs adapter_inputs(io::AdapterCycle k) {
  Inputs in;
  in.cluster = std::move(k.cluster);
  in.state = std::move(k.state);
  in.cycle = std::move(k.inputs);
  return in;
}

// `--k8s FILE...` (docs/kubernetes.md): Nodes whole, bound Pods as running jobs, pending Pods and
// gangs as pending jobs, Kueue/KAI/Volcano queues and PriorityClasses.
Inputs read_inputs_k8s(const CycleCliOptions& opt) {
  const std::vector<std::string> texts = read_files(opt.k8s_files);
  std::vector<io::k8s::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], opt.k8s_files[i]});
  auto k = io::read_cycle_inputs_k8s(sources);
  if (!k) throw InputError(k.error().message);
  for (const auto& w : k->warnings) std::fprintf(stderr, "gpusched: warning: %s\n", io::detail::tidy_message(w).c_str());
  return adapter_inputs(std::move(*k));
}

// `--slurm FILE...` (docs/slurm.md): sinfo's nodes, squeue's running jobs on the GPUs Slurm gave
// them, its pending jobs in Slurm's order with their time limits.
Inputs read_inputs_slurm(const CycleCliOptions& opt) {
  const std::vector<std::string> texts = read_files(opt.slurm_files);
  auto k = io::read_cycle_inputs_slurm(slurm_sources(texts, opt.slurm_files), slurm_options(opt.slurm_held));
  if (!k) throw InputError(k.error().message);
  print_slurm_notes(k->slurm);
  io::slurm::Input slurm = std::move(k->slurm);
  Inputs in = adapter_inputs(std::move(*k));
  in.slurm = std::move(slurm);
  return in;
}

Inputs read_inputs(const CycleCliOptions& opt) {
  const bool files = !opt.cluster_file.empty() || !opt.running_file.empty() || !opt.pending_file.empty() || !opt.queues_file.empty();
  if (!opt.k8s_files.empty() && (files || !opt.slurm_files.empty()))
    throw InputError("--k8s: give the Kubernetes objects alone (not with --cluster, --running, --pending, --queues or --slurm)");
  if (!opt.slurm_files.empty() && files)
    throw InputError("--slurm: give Slurm's JSON alone (not with --cluster, --running, --pending or --queues)");
  if (opt.format == "slurm" && opt.slurm_files.empty()) throw InputError("--format slurm: with --slurm only");
  if (!opt.k8s_files.empty()) return read_inputs_k8s(opt);
  if (!opt.slurm_files.empty()) return read_inputs_slurm(opt);
  if (opt.cluster_file.empty() || opt.pending_file.empty())
    throw InputError("--cluster and --pending are required (or --k8s FILE... or --slurm FILE...)");
  Inputs in;
  auto cluster = io::read_cluster_json(read_file(opt.cluster_file), opt.cluster_file);
  if (!cluster) throw_input_error(opt.cluster_file, cluster.error().message);
  in.cluster = std::move(*cluster);
  auto state = ClusterState::build(in.cluster.cluster, in.cluster.registry);
  if (!state) throw InputError(fmt::format("{}: {}", opt.cluster_file, state.error().message));
  in.state.emplace(std::move(*state));
  auto jobs = io::read_jobs_json(read_file(opt.pending_file), opt.pending_file);
  if (!jobs) throw_input_error(opt.pending_file, jobs.error().message);
  const std::string queues = opt.queues_file.empty() ? std::string() : read_file(opt.queues_file);
  const std::string running = opt.running_file.empty() ? std::string() : read_file(opt.running_file);
  io::CycleSources sources{opt.cluster_file, opt.pending_file, opt.running_file, opt.queues_file};
  auto cycle = io::read_cycle_inputs(*in.state, *jobs, queues, running, sources);
  if (!cycle) throw InputError(cycle.error().message);
  in.state->commit();
  in.cycle = std::move(*cycle);
  return in;
}

CycleOptions cycle_options(const CycleCliOptions& opt) {
  CycleOptions o;
  o.preempt = !opt.no_preempt;
  o.fair_share_reclaim = !opt.no_fair_share_reclaim;
  o.grow_elastic = !opt.no_grow;
  o.preemption.min_runtime = opt.min_runtime;
  o.backfill.mode = opt.backfill == "none" ? BackfillMode::kNone
                    : opt.backfill == "conservative" ? BackfillMode::kConservative
                                                     : BackfillMode::kEasy;
  o.backfill.window = opt.bf_window;
  o.backfill.resolution = opt.bf_resolution;
  o.backfill.depth = opt.bf_depth;
  o.preemption.within_queue = opt.within_queue == "never"            ? WithinQueue::kNever
                              : opt.within_queue == "lower-or-newer" ? WithinQueue::kLowerOrNewerEqualPriority
                                                                     : WithinQueue::kLowerPriority;
  o.reclaim_within_cohort = opt.reclaim == "never" ? CohortReclaim::kNever
                            : opt.reclaim == "lower" ? CohortReclaim::kLowerPriority
                                                     : CohortReclaim::kAny;
  return o;
}

std::string gpu_seconds(std::int64_t milli) { return fmt::format("{:.1f}", static_cast<double>(milli) / 1000.0); }

// The MIG planner's re-partition for the waiting jobs' MIG tasks, on the state after the cycle.
std::string waiting_mig_plan(const ClusterState& state, const io::CycleRun& run) {
  std::vector<mig::MigDemandItem> demand;
  for (const Waiting& w : run.decisions.waiting)
    for (const CompiledGroup& g : run.inputs.pending[w.pending].job.groups) io::k8s::add_waiting_mig(demand, g, g.replicas);
  return demand.empty() ? std::string() : io::k8s::repartition_json(state, mig::plan_repartition(state, demand));
}

// `--format slurm`: the cycle as the scontrol commands an operator would run (docs/slurm.md).
std::string scontrol_commands(const ClusterState& state, const io::CycleRun& run, std::int64_t now) {
  const CycleDecisions& d = run.decisions;
  std::string out = fmt::format("# gpusched cycle at {} UTC: {} jobs start now, {} reserved, {} evicted\n", io::slurm::slurm_time(now),
                                d.starts.size(), d.reservations.size(), d.evictions.size());
  for (const Eviction& e : d.evictions) {
    if (!e.whole) out += fmt::format("# {} would shrink (shed tasks) for {}: Slurm cannot shrink a running job this way\n", e.job, e.for_job);
    else if (e.for_job.empty()) out += fmt::format("# {} is on a failed node: Slurm requeues or ends it itself\n", e.job);
    else out += fmt::format("scontrol requeue {}    # for {}\n", e.job, e.for_job);
  }
  for (const Start& s : d.starts) {
    std::vector<std::string> nodes;
    for (const RunningTask& t : s.tasks) nodes.emplace_back(state.node_name(t.assignment.node));
    out += scontrol_start(s.job, std::move(nodes));
  }
  // A reservation as the job's earliest start (scontrol takes local time: TZ=UTC says which).
  for (const CycleReservation& r : d.reservations) {
    std::vector<std::string> nodes;
    for (NodeId n : r.nodes) nodes.emplace_back(state.node_name(n));
    out += fmt::format("TZ=UTC scontrol update JobId={} StartTime={}{}{}    # planned start, in {} s\n", r.job, io::slurm::slurm_time(r.start),
                       nodes.empty() ? "" : " ReqNodeList=", fmt::join(nodes, ","), r.start - now);
  }
  return out;
}

// What the Slurm reader said beside the cycle's document: Slurm's own planned start of each pending
// job (squeue --start), and the jobs not planned with Slurm's reason.
nlohmann::ordered_json slurm_json(const io::slurm::Input& in) {
  nlohmann::ordered_json planned = nlohmann::ordered_json::array(), skipped = nlohmann::ordered_json::array();
  for (const io::slurm::PendingInfo& p : in.pending)
    if (p.slurm_start > 0) planned.push_back({{"job", p.id}, {"start", p.slurm_start}});
  for (const io::slurm::Skipped& s : in.skipped) skipped.push_back({{"job", s.id}, {"reason", s.reason}});
  return {{"schema", in.version}, {"slurm_planned_starts", planned}, {"skipped", skipped}};
}

// The --policy, --order and --victim-order of the cycle (the plugins loaded once): FGD-family
// policies get the pending jobs' tasks as their workload.
struct CyclePolicies {
  std::unique_ptr<PlacementPolicy> policy;
  std::shared_ptr<const GpuPicker> mig_picker;
  Orders orders;
  void apply(CycleOptions& o) const {
    o.placement.policy = policy.get();
    o.placement.mig_picker = mig_picker.get();
    o.order = orders.order.get();
    o.preemption.victim_order = orders.victim_order.get();
  }
  // After deciding: a user order that failed is the command's error, naming its option.
  void check_orders() const {
    if (const JobOrder* j = orders.order.get(); j && !j->failure().empty())
      throw InputError(fmt::format("--order: job order {} failed: {}", io::detail::shown(j->name()), j->failure()));
    if (const VictimOrder* v = orders.victim_order.get(); v && !v->failure().empty())
      throw InputError(fmt::format("--victim-order: victim order {} failed: {}", io::detail::shown(v->name()), v->failure()));
  }
};

CyclePolicies cycle_policies(const CycleCliOptions& opt, const Inputs& in) {
  const PluginRegistries registries = plugin_registries(opt.plugins);
  CyclePolicies out;
  out.policy = make_placement_policy(registries.policies, "--policy", opt.policy, opt.seed, [&] {
    std::vector<TaskRequest> tasks;
    for (const PendingJob& p : in.cycle.pending) append_tasks(p.job, tasks);
    return tasks;
  });
  out.mig_picker = make_mig_picker(opt.mig_placement);
  out.orders = make_orders(registries.orders, opt.order, opt.victim_order);
  return out;
}

int run_cycle_command(const CycleCliOptions& opt) {
  Inputs in = read_inputs(opt);
  const CyclePolicies policies = cycle_policies(opt, in);
  CycleOptions o = cycle_options(opt);
  policies.apply(o);
  auto d = io::run_cycle_on(*in.state, in.cycle, opt.now, o, opt.queues_file.empty() ? opt.running_file : opt.queues_file,
                            opt.pending_file, opt.running_file.empty() ? std::string("running") : opt.running_file);
  check_policy(*policies.policy);
  policies.check_orders();
  if (!d) throw InputError(d.error().message);
  const io::CycleRun run{std::move(in.cycle), std::move(*d)};
  // Kubernetes: MIG tasks that wait get the re-partition that would serve them, as a plan.
  const std::string plan = opt.k8s_files.empty() ? std::string() : waiting_mig_plan(*in.state, run);
  if (opt.format == "slurm") {
    std::fputs(scontrol_commands(*in.state, run, opt.now).c_str(), stdout);
  } else if (opt.format == "json") {
    std::string text = io::write_cycle_json(*in.state, run, 2);
    if (!plan.empty() || in.slurm) {
      auto doc = nlohmann::ordered_json::parse(text);
      if (!plan.empty()) doc["repartition"] = nlohmann::ordered_json::parse(plan);
      if (in.slurm) doc["slurm"] = slurm_json(*in.slurm);
      text = doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
    std::fputs((text + "\n").c_str(), stdout);
  } else {
    std::fputs((io::write_cycle_table(*in.state, run) + repartition_table(plan)).c_str(), stdout);
  }
  return 0;
}

// Why `explain JOB` has no pending job to explain: it runs, or (Slurm) the reader did not plan it and
// why, or no input names it.
std::string not_pending(const CycleCliOptions& opt, const Inputs& in) {
  for (const RunningJob& r : in.cycle.running)
    if (r.name == opt.job) return fmt::format("job \"{}\" is running, not pending", opt.job);
  if (in.slurm)
    for (const io::slurm::Skipped& s : in.slurm->skipped)
      if (s.id == opt.job)
        return fmt::format("slurm: job {} is not planned: Slurm would not start it now ({}){}", s.id, io::detail::shown(s.reason, 60),
                           opt.slurm_held == "plan" ? "" : "; --slurm-held plan plans held jobs as if released");
  const std::string source = !opt.pending_file.empty() ? opt.pending_file : !opt.slurm_files.empty() ? "squeue" : "pods";
  return fmt::format("{}: no pending job named {}", source, io::detail::shown(opt.job, 60));
}

// `explain JOB`: the cycle's answer for one job, then what would let it start if it waits.
// What `explain` says of the job, as text and as JSON.
struct Explanation {
  json out;
  std::string text;
};

// It starts this cycle: where, and whom it evicts.
void explain_start(Explanation& e, const Inputs& in, const CycleDecisions& d, const Start& s, const PendingJob& job) {
  std::vector<std::string> nodes;
  for (const RunningTask& t : s.tasks) nodes.emplace_back(in.state->node_name(t.assignment.node));
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  e.out["status"] = "starts";
  e.out["nodes"] = nodes;
  e.text += fmt::format("  starts this cycle on {}{}\n", fmt::join(nodes, ", "), s.preempted ? " (after evictions)" : "");
  for (const Eviction& ev : d.evictions)
    if (ev.for_job == job.job.name)
      e.text += fmt::format("  evicting {} ({}): it loses {} GPU-s since its checkpoint + {} GPU-s restart\n", ev.job,
                            eviction_reason_name(ev.reason), gpu_seconds(ev.lost_milli_gpu_seconds),
                            gpu_seconds(ev.restart_milli_gpu_seconds));
}

// It waits: why, who goes before it in its queue, its reservation.
void explain_waiting(Explanation& e, const CycleCliOptions& opt, const Inputs& in, const CycleDecisions& d, const Waiting& w,
                     const PendingJob& job, const CyclePolicies& policies) {
  e.out["status"] = "waits";
  e.out["verdict"] = std::string(verdict_name(w.outcome.verdict));
  const std::string message = io::waiting_text(in.cycle, w);
  e.out["message"] = message;
  e.out["reasons"] = io::detail::reasons_json(w.outcome.reasons);
  e.text += fmt::format("  waits: {}\n", message);
  // Who goes before it in its queue this cycle (by --order's key first, when given).
  std::size_t ahead = 0;
  const JobOrder* order = policies.orders.order.get();
  const std::size_t mine = static_cast<std::size_t>(&job - in.cycle.pending.data());
  const std::int64_t my_key = order ? order->key(job) : 0;
  for (std::size_t k = 0; k < in.cycle.pending.size(); ++k) {
    const PendingJob& p = in.cycle.pending[k];
    if (k != mine && p.job.queue == job.job.queue &&
        scheduler::detail::queue_order_before(p, k, order ? order->key(p) : 0, job, mine, my_key))
      ++ahead;
  }
  policies.check_orders();
  e.out["ahead_in_queue"] = ahead;
  e.text += fmt::format("  {} job(s) of its queue go before it ({})\n", ahead,
                        order ? fmt::format("by --order {}, then priority and submit time", order->name())
                              : std::string("higher priority, or submitted earlier"));
  if (w.preemption_tried)
    e.text += fmt::format("  preemption was tried this cycle: {}\n", verdict_name(w.preemption));
  for (const CycleReservation& r : d.reservations)
    if (r.job == job.job.name) {
      e.out["reservation"] = {{"start", r.start}};
      e.text += fmt::format("  reserved: expected to start at t={} (in {} s)\n", r.start, r.start - opt.now);
    }
}

// What would let a job that waits start now: the victims the search would take if every preemptible
// job were a candidate (the state as it is, before this cycle's other starts), and which the rules
// allow.
void explain_would_evict(Explanation& e, const CycleCliOptions& opt, Inputs& in, const PendingJob& job,
                         const CyclePolicies& policies, const CycleOptions& o) {
  auto spec = make_gang_spec(job.job);
  if (!spec) return;
  Preemptor pre{&*spec, job.job.queue, job.job.priority, job.job.submit_time};
  std::vector<std::uint8_t> all(in.cycle.running.size(), kReclaimableVictim);
  PreemptionPlan plan = find_victims(*in.state, pre, in.cycle.running, opt.now, o.preemption, all);
  policies.check_orders();  // a victim order that failed here priced nothing: no list
  json victims = json::array();
  if (plan.verdict == Verdict::kPlaced && plan.victims.empty()) {
    // The free capacity holds it: what keeps it waiting is the queue order or a reservation
    // above, not running work (an empty "if these were evicted:" list said nothing).
    e.text += "  the free capacity holds it now: it waits for the order or reservation above, not for running work\n";
    e.out["fits_free_capacity"] = true;
  } else if (plan.verdict == Verdict::kPlaced) {
    e.text += "  it would start now if these were evicted:\n";
    for (const Victim& v : plan.victims) {
      const RunningJob& r = in.cycle.running[v.job];
      Preemptor rule = pre;
      if (in.cycle.queues.queues.empty()) rule.queue = r.queue;  // without queues: one queue for all
      const bool allowed = eligible_victim(r, rule, opt.now, o.preemption, false);
      e.text += fmt::format("    {} (queue {}, priority {}): {}loses {} GPU-s since its checkpoint + {} GPU-s restart{}\n", r.name,
                            r.queue.empty() ? "-" : r.queue, r.priority,
                            v.whole ? "" : fmt::format("shrinks by {} task(s), ", v.tasks_shed), gpu_seconds(v.lost_milli_gpu_seconds),
                            gpu_seconds(v.restart_milli_gpu_seconds),
                            allowed ? " [the priority rule allows it]" : " [only by quota or fair-share reclaim]");
      victims.push_back({{"job", r.name}, {"queue", r.queue}, {"priority", r.priority}, {"whole", v.whole},
                         {"lost_gpu_seconds", static_cast<double>(v.lost_milli_gpu_seconds) / 1000.0},
                         {"restart_gpu_seconds", static_cast<double>(v.restart_milli_gpu_seconds) / 1000.0},
                         {"priority_rule_allows", allowed}});
    }
  } else {
    e.text += "  not even evicting every preemptible job lets it start now\n";
  }
  e.out["would_evict"] = victims;
}

int run_explain(const CycleCliOptions& opt) {
  Inputs in = read_inputs(opt);
  auto it = std::find_if(in.cycle.pending.begin(), in.cycle.pending.end(), [&](const PendingJob& p) { return p.job.name == opt.job; });
  if (it == in.cycle.pending.end()) throw InputError(not_pending(opt, in));
  const PendingJob& job = *it;
  const CyclePolicies policies = cycle_policies(opt, in);
  CycleOptions o = cycle_options(opt);
  policies.apply(o);
  o.dry_run = true;
  auto d = io::run_cycle_on(*in.state, in.cycle, opt.now, o, opt.queues_file.empty() ? opt.running_file : opt.queues_file,
                            opt.pending_file, opt.running_file.empty() ? std::string("running") : opt.running_file);
  check_policy(*policies.policy);
  policies.check_orders();
  if (!d) throw InputError(d.error().message);
  Explanation e;
  e.out = json{{"job", job.job.name}, {"queue", job.job.queue}, {"priority", job.job.priority}, {"submit_time", job.job.submit_time}};
  e.text = fmt::format("job {} (queue {}, priority {}, submitted t={})\n", job.job.name,
                       job.job.queue.empty() ? "-" : job.job.queue, job.job.priority, job.job.submit_time);
  if (const Start* s = d->find_start(job.job.name)) {
    explain_start(e, in, *d, *s, job);
  } else if (const Waiting* w = d->find_waiting(job.job.name)) {
    explain_waiting(e, opt, in, *d, *w, job, policies);
    if (w->outcome.verdict == Verdict::kNotNow) explain_would_evict(e, opt, in, job, policies, o);
  } else {
    e.out["status"] = "nominated";
    e.text += "  nominated: its victims are evicted this cycle, it starts first next cycle\n";
  }
  if (opt.format == "json") std::fputs((e.out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  else std::fputs(e.text.c_str(), stdout);
  return 0;
}

void add_common(CLI::App* sub, const std::shared_ptr<CycleCliOptions>& opt) {
  sub->add_option("--cluster", opt->cluster_file, "Cluster JSON (docs/formats.md): the nodes, without the running jobs' usage");
  sub->add_option("--k8s", opt->k8s_files,
                  "Kubernetes objects instead of --cluster/--running/--pending/--queues: JSON or YAML files of Nodes, "
                  "Pods (bound = running), PodGroups, Volcano Jobs, queues (docs/kubernetes.md)");
  add_slurm_options(sub, opt->slurm_files, &opt->slurm_held, "Slurm's JSON instead of --cluster/--running/--pending/--queues");
  sub->add_option("--running", opt->running_file, "Running jobs JSON (docs/cycle.md: jobs with start_time and placement)");
  sub->add_option("--pending", opt->pending_file, "Pending jobs JSON (docs/formats.md, plus docs/cycle.md's fields)");
  sub->add_option("--queues", opt->queues_file, "Queues JSON (docs/fairness.md); none: one queue, priority order");
  sub->add_option("--now", opt->now, "The time of the cycle (seconds, the clock of start_time and submit_time)")->required();
  sub->add_option("--format", opt->format, "Output format (slurm: the scontrol commands, with --slurm)")
      ->check(CLI::IsMember({"json", "table", "slurm"}))->capture_default_str();
  sub->add_option("--within-queue", opt->within_queue, "Preemption within a queue")
      ->check(CLI::IsMember({"never", "lower", "lower-or-newer"}))->capture_default_str();
  sub->add_option("--reclaim-within-cohort", opt->reclaim, "Kueue reclaimWithinCohort")
      ->check(CLI::IsMember({"never", "lower", "any"}))->capture_default_str();
  sub->add_flag("--no-preempt", opt->no_preempt, "Never evict");
  sub->add_flag("--no-fair-share-reclaim", opt->no_fair_share_reclaim, "No reclaim between queues by fair share");
  sub->add_flag("--no-grow", opt->no_grow, "Elastic jobs do not grow");
  sub->add_option("--min-runtime", opt->min_runtime, "Seconds a job runs before it may be preempted")->capture_default_str();
  sub->add_option("--backfill", opt->backfill, "Reservations and backfill (docs/cycle.md)")
      ->check(CLI::IsMember({"none", "easy", "conservative"}))->capture_default_str();
  sub->add_option("--backfill-window", opt->bf_window, "Seconds ahead reservations are looked for (Slurm bf_window)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sub->add_option("--backfill-resolution", opt->bf_resolution, "Time grid, seconds (Slurm bf_resolution)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub->add_option("--backfill-depth", opt->bf_depth, "Blocked jobs tested (Slurm bf_max_job_test)")->capture_default_str();
  sub->add_option("--policy", opt->policy,
                  "Placement policy of every task: " + policy_help(PolicySet::kPlacement) + "; the FGD paper's (" +
                      policy_help(PolicySet::kTrace) + "); or a --plugin's (docs/policies.md)")
      ->capture_default_str();
  sub->add_option("--seed", opt->seed, "Seed of the random policies")->capture_default_str();
  add_mig_placement_option(sub, opt->mig_placement);
  add_order_options(sub, opt->order, opt->victim_order);
  add_plugin_option(sub, opt->plugins);
}

void setup(CLI::App& app) {
  auto opt = std::make_shared<CycleCliOptions>();
  auto* sub = app.add_subcommand("cycle", "One scheduling cycle: starts, evictions, shrinks and grows, and why every other job waits");
  add_common(sub, opt);
  sub->callback([opt] { set_exit_status(run_cycle_command(*opt)); });

  auto eopt = std::make_shared<CycleCliOptions>();
  auto* ex = app.add_subcommand("explain", "Why a pending job waits, with numbers, and what would let it start");
  ex->add_option("job", eopt->job, "The pending job's name")->required();
  add_common(ex, eopt);
  ex->callback([eopt] { set_exit_status(run_explain(*eopt)); });
}

[[maybe_unused]] const bool registered = register_command(setup);

}  // namespace cmd_cycle
}  // namespace gpusched::cli
