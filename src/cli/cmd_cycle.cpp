// `gpusched cycle` and `gpusched explain JOB`: one scheduling cycle (scheduler/cycle.hpp) over a
// cluster, its running jobs, the pending jobs and the queues at a time; and why one job waits, with
// numbers, and what would let it start. Formats: docs/cycle.md; example in examples/cycle/.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "io/cluster_json_detail.hpp"
#include "io/json_input.hpp"

namespace gpusched::cli {
// A named namespace, not an anonymous one: the tool compiles as one unit (GPUSCHED_UNITY_BUILD).
namespace cmd_cycle {

using nlohmann::json;
using namespace gpusched::scheduler;
using fairness::Amounts;
using fairness::ResourceSpace;

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
};

std::string shown(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

void check_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  if (!obj.is_object()) throw InputError(fmt::format("{}: expected an object, got {}", path, shown(obj)));
  for (const auto& [key, value] : obj.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw InputError(fmt::format("{}.{}: unknown field (known: {})", path, key, fmt::join(known, ", ")));
}

std::int64_t read_int(const json& v, const std::string& path, std::int64_t lo = std::numeric_limits<std::int64_t>::min()) {
  if (!v.is_number_integer()) throw InputError(fmt::format("{}: expected an integer, got {}", path, shown(v)));
  const auto x = v.get<std::int64_t>();
  if (x < lo) throw InputError(fmt::format("{}: expected at least {}, got {}", path, lo, x));
  return x;
}

std::string read_string(const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty())
    throw InputError(fmt::format("{}: expected a non-empty string, got {}", path, shown(v)));
  return v.get<std::string>();
}

bool read_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) throw InputError(fmt::format("{}: expected true or false, got {}", path, shown(v)));
  return v.get<bool>();
}

// The queues document of `gpusched fairshare` (docs/fairness.md): name, parent, weight, cohort,
// quotas / borrowing_limits / lending_limits ({"cpu", "memory", "gpus": {model: amount}}), flavors,
// strategy, priority_class, plus top-level priority_classes. Usage is not read: the cycle computes it
// from the running jobs. (aging and now are accepted for compatibility and not used.)
// The queues file: the format of `gpusched fairshare` (docs/fairness.md), read by the same reader. The
// cycle computes each queue's usage from the running jobs, so a "usage" given here is not used.
io::QueuesDocument read_queues(const std::string& file, const ResourceSpace& space, const GpuModelRegistry& reg) {
  auto doc = io::read_queues_json(read_file(file), file, space, reg);
  if (!doc) throw InputError(doc.error().message);
  return std::move(*doc);
}

// Everything one cycle needs, read from the files.
struct Inputs {
  io::ClusterDocument cluster;
  std::optional<ClusterState> state;
  io::QueuesDocument queues;
  std::vector<RunningJob> running;
  std::vector<PendingJob> pending;
  std::vector<std::vector<std::string>> running_groups;  // group name of each running task
};

std::int32_t priority_of(const Job& job, const json& raw, const io::QueuesDocument& q, const std::string& path) {
  if (auto pc = raw.find("priority_class"); pc != raw.end()) {
    const std::string name = read_string(*pc, path + ".priority_class");
    auto it = q.classes.find(name);
    if (it == q.classes.end()) throw InputError(fmt::format("{}.priority_class: unknown class \"{}\"", path, name));
    return static_cast<std::int32_t>(it->second);
  }
  if (!raw.contains("priority"))
    if (auto it = q.default_class.find(job.queue_name); it != q.default_class.end())
      return static_cast<std::int32_t>(q.classes.at(it->second));
  return job.job_priority;
}

// `--k8s FILE...` (docs/kubernetes.md): Nodes whole, bound Pods as running jobs (one task each,
// reserved on the lowest free GPUs of their node: the Pod object does not say which), pending Pods
// and gangs as pending jobs, Kueue/KAI/Volcano queues and PriorityClasses.
// The jobs of a jobs file as written, for the cycle's own fields (start_time, placement, checkpoint
// facts) that the job model does not carry; jobs[i] of read_jobs_json is raw_jobs(...)[i].
std::vector<json> raw_jobs(const std::string& text, const std::string& file) {
  auto doc = io::detail::parse_json(text, file);
  if (!doc) throw InputError(doc.error().message);
  const json* list = &*doc;
  if (doc->is_object() && doc->contains("jobs")) list = &(*doc)["jobs"];
  if (!list->is_array()) throw InputError(fmt::format("{}: jobs: expected an array", file));
  return std::vector<json>(list->begin(), list->end());
}

Inputs read_inputs_k8s(const CycleCliOptions& opt) {
  if (!opt.cluster_file.empty() || !opt.running_file.empty() || !opt.pending_file.empty() || !opt.queues_file.empty())
    throw InputError("--k8s: give the Kubernetes objects alone (not with --cluster, --running, --pending or --queues)");
  std::vector<std::string> texts;
  for (const auto& f : opt.k8s_files) texts.push_back(read_file(f));
  std::vector<io::k8s::Source> sources;
  for (std::size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], opt.k8s_files[i]});
  io::k8s::Options kopt;
  kopt.subtract_running = false;
  auto input = io::k8s::read(sources, kopt);
  if (!input) throw InputError(input.error().message);
  for (const auto& w : input->warnings) std::fprintf(stderr, "gpusched: warning: %s\n", io::k8s::to_string(w).c_str());
  Inputs in;
  in.cluster.registry = input->registry;
  in.cluster.cluster = input->cluster;
  auto state = ClusterState::build(in.cluster.cluster, in.cluster.registry);
  if (!state) throw InputError(fmt::format("nodes: {}", state.error().message));
  in.state.emplace(std::move(*state));
  ClusterState& st = *in.state;
  if (!input->topology_levels.empty())
    if (Status s = st.set_topology_levels(input->topology_levels); !s) throw InputError(s.error().message);
  if (!input->queues.empty()) {
    auto fc = fairness::fairness_cluster(st);
    if (!fc) throw InputError(fmt::format("nodes: {}", fc.error().message));
    auto configs = io::k8s::queue_configs(*input, fc->space);
    if (!configs) throw InputError(configs.error().message);
    in.queues.queues = std::move(*configs);
    in.queues.classes.insert(input->priority_classes.begin(), input->priority_classes.end());
  }
  for (const io::k8s::RunningPod& r : input->running) {
    const std::string what = fmt::format("Pod {}/{}", r.pod.ns, r.pod.name);
    const NodeId n = st.find_node(r.node);
    if (n == kNoNode) continue;  // reported by the reader
    auto compiled = compile_job(st, r.job);
    if (!compiled) throw InputError(fmt::format("{}: {}", what, compiled.error().message));
    const TaskRequest& request = compiled->groups[0].request;
    if (request.mig.any()) throw InputError(fmt::format("{}: running MIG pods are not supported by the cycle yet", what));
    TaskAssignment a = make_assignment(n, request);
    if (compiled->groups[0].request.shape.gpus > 0) {
      for (GpuIndex g = 0; g < st.gpu_count(n) && a.gpus.size() < static_cast<std::size_t>(request.shape.gpus); ++g)
        if (st.gpu_free_milli(n, g) == kMilliPerGpu) a.gpus.push_back(g);
    }
    if (Status s = st.reserve(request, a); !s) throw InputError(fmt::format("{} on node {}: {}", what, r.node, s.error().message));
    RunningJob job;
    job.name = r.job.job_name;
    job.queue = r.job.queue_name;
    job.priority = r.priority;
    job.start_time = r.start_time;
    job.tasks.push_back({request, std::move(a)});
    in.running.push_back(std::move(job));
    in.running_groups.push_back({"pod"});
  }
  st.commit();
  for (const Job& job : input->jobs) {
    auto compiled = compile_job(st, job);
    if (!compiled) throw InputError(fmt::format("job {}: {}", job.job_name, compiled.error().message));
    PendingJob p;
    p.job = std::move(*compiled);
    in.pending.push_back(std::move(p));
  }
  return in;
}

Inputs read_inputs(const CycleCliOptions& opt) {
  if (!opt.k8s_files.empty()) return read_inputs_k8s(opt);
  if (opt.cluster_file.empty() || opt.pending_file.empty())
    throw InputError("--cluster and --pending are required (or --k8s FILE...)");
  Inputs in;
  auto cluster = io::read_cluster_json(read_file(opt.cluster_file), opt.cluster_file);
  if (!cluster) throw InputError(cluster.error().message);
  in.cluster = std::move(*cluster);
  auto state = ClusterState::build(in.cluster.cluster, in.cluster.registry);
  if (!state) throw InputError(fmt::format("{}: {}", opt.cluster_file, state.error().message));
  in.state.emplace(std::move(*state));
  ClusterState& st = *in.state;
  if (!opt.queues_file.empty()) {
    auto fc = fairness::fairness_cluster(st);
    if (!fc) throw InputError(fmt::format("{}: {}", opt.cluster_file, fc.error().message));
    in.queues = read_queues(opt.queues_file, fc->space, in.cluster.registry);
  }
  // Running jobs: the jobs format plus start_time, placement and the checkpoint facts. Their tasks
  // are reserved on the cluster (which therefore describes what runs outside these jobs only).
  if (!opt.running_file.empty()) {
    const std::string text = read_file(opt.running_file);
    auto jobs = io::read_jobs_json(text, opt.running_file);
    if (!jobs) throw InputError(jobs.error().message);
    const std::vector<json> raws = raw_jobs(text, opt.running_file);
    for (std::size_t j = 0; j < jobs->jobs.size(); ++j) {
      const Job& job = jobs->jobs[j];
      const json& raw = raws[j];
      const std::string path = fmt::format("{}: jobs[{}]", opt.running_file, j);
      auto compiled = compile_job(st, job);
      if (!compiled) throw InputError(fmt::format("{}.{}", path, compiled.error().message));
      RunningJob r;
      r.name = job.job_name;
      r.queue = job.queue_name;
      r.priority = priority_of(job, raw, in.queues, path);
      r.submit_time = raw.contains("submit_time") ? job.job_submit_time : -1;
      if (auto it = raw.find("start_time"); it != raw.end()) r.start_time = read_int(*it, path + ".start_time");
      else throw InputError(fmt::format("{}.start_time: missing (a running job's start, seconds)", path));
      if (auto it = raw.find("last_checkpoint"); it != raw.end()) r.last_checkpoint = read_int(*it, path + ".last_checkpoint");
      if (auto it = raw.find("checkpoint_interval"); it != raw.end()) r.checkpoint_interval = read_int(*it, path + ".checkpoint_interval", 0);
      if (auto it = raw.find("restart_cost"); it != raw.end()) r.restart_cost = read_int(*it, path + ".restart_cost", 0);
      if (auto it = raw.find("runtime_estimate"); it != raw.end()) r.runtime_estimate = read_int(*it, path + ".runtime_estimate", 0);
      if (auto it = raw.find("restarts"); it != raw.end()) r.restarts = static_cast<std::int32_t>(read_int(*it, path + ".restarts", 0));
      if (auto it = raw.find("preemptible"); it != raw.end()) r.preemptible = read_bool(*it, path + ".preemptible");
      auto pl = raw.find("placement");
      if (pl == raw.end() || !pl->is_array() || pl->empty())
        throw InputError(fmt::format("{}.placement: expected a non-empty array of tasks {{\"group\", \"node\", \"gpus\"}}", path));
      // Tasks a group needs first, the elastic extras (beyond min_replicas) last: what a shrink sheds.
      std::vector<RunningTask> core, extra;
      std::vector<std::string> core_groups, extra_groups;
      std::vector<std::int32_t> seen(compiled->groups.size(), 0);
      bool elastic = false;
      std::int32_t max_tasks = 0;
      for (const CompiledGroup& g : compiled->groups) {
        elastic = elastic || g.min_replicas < g.replicas;
        max_tasks += g.replicas;
      }
      for (std::size_t k = 0; k < pl->size(); ++k) {
        const json& t = (*pl)[k];
        const std::string tp = fmt::format("{}.placement[{}]", path, k);
        check_keys(t, tp, {"group", "node", "gpus"});
        std::size_t g = 0;
        if (auto it = t.find("group"); it != t.end()) {
          const std::string name = read_string(*it, tp + ".group");
          auto gi = std::find_if(compiled->groups.begin(), compiled->groups.end(), [&](const CompiledGroup& x) { return x.name == name; });
          if (gi == compiled->groups.end()) throw InputError(fmt::format("{}.group: unknown group \"{}\"", tp, name));
          g = static_cast<std::size_t>(gi - compiled->groups.begin());
        } else if (compiled->groups.size() != 1) {
          throw InputError(fmt::format("{}.group: missing (the job has {} groups)", tp, compiled->groups.size()));
        }
        auto node_it = t.find("node");
        if (node_it == t.end()) throw InputError(fmt::format("{}.node: missing", tp));
        const std::string node = read_string(*node_it, tp + ".node");
        const NodeId n = st.find_node(node);
        if (n == kNoNode) throw InputError(fmt::format("{}.node: no node named \"{}\"", tp, node));
        const TaskRequest& request = compiled->groups[g].request;
        if (request.mig.any()) throw InputError(fmt::format("{}: running MIG tasks are not supported by this file format yet", tp));
        TaskAssignment a = make_assignment(n, request);
        if (auto gs = t.find("gpus"); gs != t.end()) {
          if (!gs->is_array()) throw InputError(fmt::format("{}.gpus: expected an array of GPU indices, got {}", tp, shown(*gs)));
          for (std::size_t x = 0; x < gs->size(); ++x)
            a.gpus.push_back(static_cast<GpuIndex>(read_int((*gs)[x], fmt::format("{}.gpus[{}]", tp, x), 0)));
        }
        if (Status s = st.reserve(request, a); !s) throw InputError(fmt::format("{}: {}", tp, s.error().message));
        if (!elastic || seen[g]++ < compiled->groups[g].min_replicas) {
          core.push_back({request, std::move(a)});
          core_groups.push_back(compiled->groups[g].name);
        } else {
          extra.push_back({request, std::move(a)});
          extra_groups.push_back(compiled->groups[g].name);
        }
      }
      r.tasks = std::move(core);
      if (elastic) {
        r.min_tasks = static_cast<std::int32_t>(r.tasks.size());
        r.max_tasks = max_tasks;
      }
      r.tasks.insert(r.tasks.end(), extra.begin(), extra.end());
      core_groups.insert(core_groups.end(), extra_groups.begin(), extra_groups.end());
      in.running_groups.push_back(std::move(core_groups));
      in.running.push_back(std::move(r));
    }
  }
  st.commit();
  const std::string pending_text = read_file(opt.pending_file);
  auto jobs = io::read_jobs_json(pending_text, opt.pending_file);
  if (!jobs) throw InputError(jobs.error().message);
  const std::vector<json> pending_raws = raw_jobs(pending_text, opt.pending_file);
  for (std::size_t j = 0; j < jobs->jobs.size(); ++j) {
    const Job& job = jobs->jobs[j];
    const json& raw = pending_raws[j];
    const std::string path = fmt::format("{}: jobs[{}]", opt.pending_file, j);
    auto compiled = compile_job(st, job);
    if (!compiled) throw InputError(fmt::format("{}.{}", path, compiled.error().message));
    PendingJob p;
    p.job = std::move(*compiled);
    p.job.priority = priority_of(job, raw, in.queues, path);
    if (raw.contains("start_time") || raw.contains("placement"))
      throw InputError(fmt::format("{}: start_time/placement belong to running jobs (--running)", path));
    if (auto it = raw.find("runtime_estimate"); it != raw.end()) p.runtime_estimate = read_int(*it, path + ".runtime_estimate", 0);
    if (auto it = raw.find("not_before"); it != raw.end()) p.not_before = read_int(*it, path + ".not_before");
    if (auto it = raw.find("checkpoint_interval"); it != raw.end()) p.checkpoint_interval = read_int(*it, path + ".checkpoint_interval", 0);
    if (auto it = raw.find("restart_cost"); it != raw.end()) p.restart_cost = read_int(*it, path + ".restart_cost", 0);
    if (auto it = raw.find("restarts"); it != raw.end()) p.restarts = static_cast<std::int32_t>(read_int(*it, path + ".restarts", 0));
    if (auto it = raw.find("preemptible"); it != raw.end()) p.preemptible = read_bool(*it, path + ".preemptible");
    in.pending.push_back(std::move(p));
  }
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

json task_json(const ClusterState& state, const RunningTask& t, const std::string& group) {
  json out{{"group", group}, {"node", std::string(state.node_name(t.assignment.node))}, {"gpus", t.assignment.gpus}};
  if (t.assignment.gpu_milli > 0 && t.assignment.gpu_milli < kMilliPerGpu) out["gpu_milli"] = t.assignment.gpu_milli;
  if (t.assignment.is_mig()) out["mig"] = {{"profile_index", t.assignment.mig_profile}, {"start", t.assignment.mig_start},
                                           {"create", t.assignment.mig_create}};
  return out;
}

// Group names of a start's tasks (tasks are by group, then replica).
std::vector<std::string> start_groups(const PendingJob& p, const std::vector<RunningTask>& tasks,
                                      const std::vector<std::int32_t>& per_group) {
  std::vector<std::string> out;
  for (std::size_t g = 0; g < per_group.size() && g < p.job.groups.size(); ++g)
    for (std::int32_t k = 0; k < per_group[g]; ++k) out.push_back(p.job.groups[g].name);
  while (out.size() < tasks.size()) out.push_back(p.job.groups.empty() ? "" : p.job.groups.back().name);
  return out;
}

json reasons_json(const std::vector<Reason>& reasons) {
  json out = json::array();
  for (const Reason& r : reasons) {
    json item{{"kind", std::string(reason_name(r.kind))}, {"text", to_string(r)}};
    if (r.unit != Unit::kNone) item["unit"] = std::string(unit_name(r.unit));
    if (r.needed >= 0) item["needed"] = r.needed;
    if (r.available >= 0) item["available"] = r.available;
    if (r.count > 0) item["count"] = r.count;
    out.push_back(std::move(item));
  }
  return out;
}

// "not now: 1 too few tasks fit (need 16000, have 8000 milli-GPU)"; a StrictFIFO wait names its head.
std::string outcome_text(const Inputs& in, const Waiting& w) {
  if (!w.outcome.reasons.empty() && w.outcome.reasons[0].kind == ReasonKind::kBehindStrictHead && w.behind < in.pending.size())
    return fmt::format("not now: behind {} (the head of its StrictFIFO queue)", in.pending[w.behind].job.name);
  if (!w.outcome.reasons.empty() && w.outcome.reasons[0].kind == ReasonKind::kBackoff)
    return fmt::format("not now: backing off after a failure until t={}", w.outcome.reasons[0].needed);
  return to_string(w.outcome);
}

json decisions_json(const Inputs& in, const CycleDecisions& d) {
  const ClusterState& st = *in.state;
  json out{{"now", d.now}};
  json starts = json::array();
  for (const Start& s : d.starts) {
    const PendingJob& p = in.pending[s.pending];
    const auto groups = start_groups(p, s.tasks, s.placed_per_group);
    json tasks = json::array();
    for (std::size_t k = 0; k < s.tasks.size(); ++k) tasks.push_back(task_json(st, s.tasks[k], groups[k]));
    json item{{"job", s.job}, {"queue", p.job.queue}, {"priority", p.job.priority}, {"tasks", tasks}};
    if (s.preempted) item["preempted"] = true;
    if (s.nominated) item["nominated"] = true;
    if (s.borrowed) item["borrowed"] = true;
    if (s.backfilled) item["backfilled"] = true;
    starts.push_back(std::move(item));
  }
  json evictions = json::array(), shrinks = json::array();
  for (const Eviction& e : d.evictions) {
    json item{{"job", e.job}, {"for", e.for_job}, {"reason", std::string(eviction_reason_name(e.reason))},
              {"lost_gpu_seconds", static_cast<double>(e.lost_milli_gpu_seconds) / 1000.0},
              {"restart_gpu_seconds", static_cast<double>(e.restart_milli_gpu_seconds) / 1000.0}, {"tasks", e.tasks}};
    (e.whole ? evictions : shrinks).push_back(std::move(item));
  }
  json grows = json::array();
  for (const Grow& g : d.grows) {
    json tasks = json::array();
    for (const RunningTask& t : g.tasks) tasks.push_back(task_json(st, t, in.running_groups[g.running].empty() ? "" : in.running_groups[g.running].back()));
    grows.push_back({{"job", g.job}, {"tasks", tasks}});
  }
  json reservations = json::array();
  for (const CycleReservation& r : d.reservations) {
    json nodes = json::array();
    for (NodeId n : r.nodes) nodes.push_back(std::string(st.node_name(n)));
    reservations.push_back({{"job", r.job}, {"start", r.start}, {"nodes", nodes}});
  }
  json nominations = json::array();
  for (const Nomination& n : d.nominations) nominations.push_back({{"job", n.job}, {"victims", n.victims}});
  json waiting = json::array();
  for (const Waiting& w : d.waiting) {
    json item{{"job", w.job}, {"queue", in.pending[w.pending].job.queue}, {"verdict", std::string(verdict_name(w.outcome.verdict))},
              {"message", outcome_text(in, w)}, {"reasons", reasons_json(w.outcome.reasons)}};
    if (w.preemption_tried) item["preemption"] = std::string(verdict_name(w.preemption));
    waiting.push_back(std::move(item));
  }
  out["starts"] = starts;
  out["evictions"] = evictions;
  out["shrinks"] = shrinks;
  out["grows"] = grows;
  out["reservations"] = reservations;
  out["nominations"] = nominations;
  out["pending"] = waiting;
  return out;
}

std::string decisions_table(const Inputs& in, const CycleDecisions& d) {
  const ClusterState& st = *in.state;
  std::string text = fmt::format("Cycle at t={}\n", d.now);
  text += fmt::format("\nStarts ({})\n", d.starts.size());
  for (const Start& s : d.starts) {
    std::map<std::string, std::vector<std::string>> per_node;
    std::vector<std::string> order;
    for (const RunningTask& t : s.tasks) {
      const std::string node(st.node_name(t.assignment.node));
      if (!per_node.contains(node)) order.push_back(node);
      per_node[node].push_back(fmt::format("[{}]", fmt::join(t.assignment.gpus, ",")));
    }
    std::string where;
    for (const auto& n : order) where += fmt::format("{}{} {}", where.empty() ? "" : ", ", n, fmt::join(per_node[n], " "));
    std::string how = s.nominated ? " (nominated)" : s.preempted ? " (after evictions)" : s.borrowed ? " (borrowing)" : "";
    text += fmt::format("  {:<20} {} task(s) on {}{}\n", s.job, s.tasks.size(), where, how);
  }
  text += fmt::format("\nEvictions ({})\n", d.evictions.size());
  for (const Eviction& e : d.evictions)
    text += fmt::format("  {:<20} {} for {} ({}): loses {} GPU-s since its checkpoint + {} GPU-s restart\n", e.job,
                        e.whole ? "evicted" : fmt::format("shrinks by {} task(s)", e.tasks.size()), e.for_job,
                        eviction_reason_name(e.reason), gpu_seconds(e.lost_milli_gpu_seconds),
                        gpu_seconds(e.restart_milli_gpu_seconds));
  if (!d.grows.empty()) {
    text += fmt::format("\nGrows ({})\n", d.grows.size());
    for (const Grow& g : d.grows) text += fmt::format("  {:<20} +{} task(s)\n", g.job, g.tasks.size());
  }
  if (!d.reservations.empty()) {
    text += fmt::format("\nReservations ({})\n", d.reservations.size());
    for (const CycleReservation& r : d.reservations) {
      std::vector<std::string> nodes;
      for (NodeId n : r.nodes) nodes.emplace_back(st.node_name(n));
      text += fmt::format("  {:<20} at t={} on {}\n", r.job, r.start, fmt::join(nodes, ", "));
    }
  }
  if (!d.nominations.empty()) {
    text += fmt::format("\nNominations ({})\n", d.nominations.size());
    for (const Nomination& n : d.nominations) text += fmt::format("  {:<20} held after evicting {}\n", n.job, fmt::join(n.victims, ", "));
  }
  text += fmt::format("\nPending ({})\n", d.waiting.size());
  for (const Waiting& w : d.waiting) text += fmt::format("  {:<20} {}\n", w.job, outcome_text(in, w));
  return text;
}

int run_cycle_command(const CycleCliOptions& opt) {
  Inputs in = read_inputs(opt);
  auto d = run_cycle(*in.state, in.running, in.pending, in.queues.queues, opt.now, cycle_options(opt));
  if (!d) throw InputError(fmt::format("{}: {}", opt.queues_file.empty() ? opt.running_file : opt.queues_file, d.error().message));
  if (opt.format == "json") std::fputs((decisions_json(in, *d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  else std::fputs(decisions_table(in, *d).c_str(), stdout);
  return 0;
}

// `explain JOB`: the cycle's answer for one job, then what would let it start if it waits.
int run_explain(const CycleCliOptions& opt) {
  Inputs in = read_inputs(opt);
  auto it = std::find_if(in.pending.begin(), in.pending.end(), [&](const PendingJob& p) { return p.job.name == opt.job; });
  if (it == in.pending.end()) throw InputError(fmt::format("{}: no pending job named \"{}\"", opt.pending_file, opt.job));
  const PendingJob& job = *it;
  CycleOptions o = cycle_options(opt);
  o.dry_run = true;
  auto d = run_cycle(*in.state, in.running, in.pending, in.queues.queues, opt.now, o);
  if (!d) throw InputError(d.error().message);
  json out{{"job", job.job.name}, {"queue", job.job.queue}, {"priority", job.job.priority}, {"submit_time", job.job.submit_time}};
  std::string text = fmt::format("job {} (queue {}, priority {}, submitted t={})\n", job.job.name,
                                 job.job.queue.empty() ? "-" : job.job.queue, job.job.priority, job.job.submit_time);
  if (const Start* s = d->find_start(job.job.name)) {
    std::vector<std::string> nodes;
    for (const RunningTask& t : s->tasks) nodes.emplace_back(in.state->node_name(t.assignment.node));
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    out["status"] = "starts";
    out["nodes"] = nodes;
    text += fmt::format("  starts this cycle on {}{}\n", fmt::join(nodes, ", "), s->preempted ? " (after evictions)" : "");
    int evicted = 0;
    for (const Eviction& e : d->evictions)
      if (e.for_job == job.job.name) {
        text += fmt::format("  evicting {} ({}): it loses {} GPU-s since its checkpoint + {} GPU-s restart\n", e.job,
                            eviction_reason_name(e.reason), gpu_seconds(e.lost_milli_gpu_seconds), gpu_seconds(e.restart_milli_gpu_seconds));
        ++evicted;
      }
  } else if (const Waiting* w = d->find_waiting(job.job.name)) {
    out["status"] = "waits";
    out["verdict"] = std::string(verdict_name(w->outcome.verdict));
    out["message"] = outcome_text(in, *w);
    out["reasons"] = reasons_json(w->outcome.reasons);
    text += fmt::format("  waits: {}\n", outcome_text(in, *w));
    // Who goes before it in its queue this cycle.
    std::size_t ahead = 0;
    for (const PendingJob& p : in.pending)
      if (&p != &job && p.job.queue == job.job.queue &&
          (p.job.priority > job.job.priority || (p.job.priority == job.job.priority && p.job.submit_time < job.job.submit_time)))
        ++ahead;
    out["ahead_in_queue"] = ahead;
    text += fmt::format("  {} job(s) of its queue go before it (higher priority, or submitted earlier)\n", ahead);
    if (w->preemption_tried)
      text += fmt::format("  preemption was tried this cycle: {}\n", verdict_name(w->preemption));
    for (const CycleReservation& r : d->reservations)
      if (r.job == job.job.name) {
        out["reservation"] = {{"start", r.start}};
        text += fmt::format("  reserved: expected to start at t={} (in {} s)\n", r.start, r.start - opt.now);
      }
    // What would let it start now: the victims the search would take if every preemptible job were
    // a candidate (the state as it is, before this cycle's other starts), and which the rules allow.
    auto spec = make_gang_spec(job.job);
    if (spec && w->outcome.verdict == Verdict::kNotNow) {
      Preemptor pre{&*spec, job.job.queue, job.job.priority, job.job.submit_time};
      std::vector<std::uint8_t> all(in.running.size(), kReclaimableVictim);
      PreemptionPlan plan = find_victims(*in.state, pre, in.running, opt.now, o.preemption, all);
      json victims = json::array();
      if (plan.verdict == Verdict::kPlaced) {
        text += "  it would start now if these were evicted:\n";
        for (const Victim& v : plan.victims) {
          const RunningJob& r = in.running[v.job];
          Preemptor rule = pre;
          if (in.queues.queues.empty()) rule.queue = r.queue;  // without queues: one queue for all
          const bool allowed = eligible_victim(r, rule, opt.now, o.preemption, false);
          text += fmt::format("    {} (queue {}, priority {}): {}loses {} GPU-s since its checkpoint + {} GPU-s restart{}\n", r.name,
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
        text += "  not even evicting every preemptible job lets it start now\n";
      }
      out["would_evict"] = victims;
    }
  } else {
    out["status"] = "nominated";
    text += "  nominated: its victims are evicted this cycle, it starts first next cycle\n";
  }
  if (opt.format == "json") std::fputs((out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  else std::fputs(text.c_str(), stdout);
  return 0;
}

void add_common(CLI::App* sub, const std::shared_ptr<CycleCliOptions>& opt) {
  sub->add_option("--cluster", opt->cluster_file, "Cluster JSON (docs/formats.md): the nodes, without the running jobs' usage");
  sub->add_option("--k8s", opt->k8s_files,
                  "Kubernetes objects instead of --cluster/--running/--pending/--queues: JSON or YAML files of Nodes, "
                  "Pods (bound = running), PodGroups, Volcano Jobs, queues (docs/kubernetes.md)");
  sub->add_option("--running", opt->running_file, "Running jobs JSON (docs/cycle.md: jobs with start_time and placement)");
  sub->add_option("--pending", opt->pending_file, "Pending jobs JSON (docs/formats.md, plus docs/cycle.md's fields)");
  sub->add_option("--queues", opt->queues_file, "Queues JSON (docs/fairness.md); none: one queue, priority order");
  sub->add_option("--now", opt->now, "The time of the cycle (seconds, the clock of start_time and submit_time)")->required();
  sub->add_option("--format", opt->format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
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
