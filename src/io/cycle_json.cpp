// The scheduling cycle's inputs from JSON (running jobs, pending jobs, queues, options, or Kubernetes
// objects) and its decisions as JSON and as a table. Moved here from the `gpusched cycle` command so
// that the C API and the Python module read the same formats with the same messages.
#include "gpusched/io/cycle_json.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "gpusched/mig/packer.hpp"
#include "io/decision_json.hpp"
#include "io/json_input.hpp"

namespace gpusched::io {
// A named namespace: the io library compiles as one unit (GPUSCHED_UNITY_BUILD).
std::shared_ptr<const GpuPicker> mig_picker_named(std::string_view name) {
  if (name != "frag-aware") return nullptr;
  return std::make_shared<const mig::FragAwareMigPicker>(mig::MigDemand::uniform(mig::MigCatalog::builtin()));
}

namespace cycle_json_impl {

using nlohmann::json;
using namespace gpusched::scheduler;

// Thrown inside this file only and turned into an Error at the public functions.
struct CycleInputError {
  Error error;
  bool names_its_file = false;  // prefixed with the file it is about (not the one being read)
};
[[noreturn]] void reject(std::string message, ErrorCode code = ErrorCode::kInvalidValue, std::string field = {}) {
  throw CycleInputError{Error(std::move(message), code, std::move(field))};
}
[[noreturn]] void reject(const Error& e, std::string_view prefix = {}) {
  throw CycleInputError{Error(prefix.empty() ? e.message : fmt::format("{}: {}", prefix, e.message), e.code, e.field),
                        !prefix.empty()};
}

// Runs `body`, turning our errors and the JSON library's or an allocation's exceptions into an Error.
template <class T, class F>
Result<T> guarded(std::string_view source, F&& body) {
  try {
    return body();
  } catch (const CycleInputError& e) {
    return e.error;
  } catch (const json::exception& e) {
    return Error(fmt::format("{}: {}", source, detail::json_library_text(e.what())));
  } catch (const std::bad_alloc&) {
    return Error(fmt::format("{}: out of memory", source), ErrorCode::kLimit);
  }
}

using detail::shown;

void check_keys(const json& obj, const std::string& path, std::span<const std::string_view> known) {
  if (!obj.is_object()) reject(fmt::format("{}: expected an object, got {}", path, shown(obj)), ErrorCode::kInvalidValue, path);
  for (const auto& [key, value] : obj.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      reject(fmt::format("{}.{}: unknown field (known: {})", path, detail::shown_key(key), fmt::join(known, ", ")),
             ErrorCode::kUnknownField, path + "." + key);
}
void check_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  check_keys(obj, path, std::span<const std::string_view>(known.begin(), known.size()));
}

std::int64_t read_int(const json& v, const std::string& path, std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                      std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  if (!v.is_number_integer()) reject(fmt::format("{}: expected an integer, got {}", path, shown(v)), ErrorCode::kInvalidValue, path);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    reject(fmt::format("{}: out of range, got {}", path, shown(v)), ErrorCode::kOverflow, path);
  const auto x = v.get<std::int64_t>();
  if (x < lo) reject(fmt::format("{}: expected at least {}, got {}", path, lo, x), ErrorCode::kInvalidValue, path);
  if (x > hi) reject(fmt::format("{}: expected at most {}, got {}", path, hi, x), ErrorCode::kInvalidValue, path);
  return x;
}

// Times and durations a cycle can do arithmetic with (scheduler::kMaxCycleTime: a restart cost of
// INT64_MAX made 9.2e15 GPU-seconds of restart; a start of INT64_MIN an unevictable job).
constexpr std::int64_t kMaxTime = scheduler::kMaxCycleTime;
std::int64_t read_time(const json& v, const std::string& path, std::int64_t lo = 0) { return read_int(v, path, lo, kMaxTime); }

std::string read_string(const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty())
    reject(fmt::format("{}: expected a non-empty string, got {}", path, shown(v)), ErrorCode::kInvalidValue, path);
  return v.get<std::string>();
}

bool read_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) reject(fmt::format("{}: expected true or false, got {}", path, shown(v)), ErrorCode::kInvalidValue, path);
  return v.get<bool>();
}

// Priority: the job's "priority_class" (resolved by the queues document), else its own "priority",
// else its queue's default class, else the job's priority (0).
std::int32_t priority_of(const Job& job, bool explicit_priority, const QueuesDocument& q, const std::string& path) {
  if (!job.job_priority_class.empty()) {
    auto it = q.classes.find(job.job_priority_class);
    if (it == q.classes.end())
      reject(fmt::format("{}.priority_class: unknown class \"{}\"", path, job.job_priority_class), ErrorCode::kUnknownName,
             path + ".priority_class");
    return static_cast<std::int32_t>(it->second);
  }
  if (!explicit_priority)
    if (auto it = q.default_class.find(job.queue_name); it != q.default_class.end())
      return static_cast<std::int32_t>(q.classes.at(it->second));
  return job.job_priority;
}

// The jobs of a jobs document as written, for the running jobs' own fields (start_time, placement,
// checkpoint facts) that the job model does not carry; jobs[i] of read_jobs_json is raw_jobs(...)[i].
std::vector<json> raw_jobs(std::string_view text, std::string_view source) {
  auto doc = detail::parse_json(text, source);
  if (!doc) reject(doc.error());
  const json* list = &*doc;
  if (doc->is_object() && doc->contains("jobs")) list = &(*doc)["jobs"];
  if (!list->is_array()) reject(fmt::format("{}: jobs: expected an array", source));
  return std::vector<json>(list->begin(), list->end());
}

// One running job: the job model plus start_time, placement and the checkpoint facts. Its tasks are
// reserved on the state; `groups` gets the group name of each task.
// A running MIG task: "gpus" names its one MIG GPU and "mig_start" its instance's start slice (left
// out: the GPU's idle instance of the profile). It takes the idle instance there, as the device plugin
// hands out an existing one, or else the instance is created (dynamic MIG, the layout allowing).
void place_running_mig(const ClusterState& st, const TaskRequest& request, const json& t, const std::string& tp,
                       TaskAssignment& a) {
  if (a.gpus.size() != 1)
    reject(fmt::format("{}.gpus: a MIG task names its one MIG GPU, got {} GPUs", tp, a.gpus.size()), ErrorCode::kInvalidValue,
           tp + ".gpus");
  const GpuIndex g = a.gpus[0];
  const mig::MigGpuId id = st.mig().gpu(a.node, g);
  if (id == mig::kNoGpu)
    reject(fmt::format("{}.gpus[0]: GPU {} of node \"{}\" is not in MIG mode", tp, g, st.node_name(a.node)),
           ErrorCode::kInvalidValue, tp + ".gpus[0]");
  const int profile = request.mig.profile[st.mig().table().model_of(id)];
  if (profile < 0)
    reject(fmt::format("{}.gpus[0]: GPU {} of node \"{}\" ({}) does not offer the group's MIG profile", tp, g,
                       st.node_name(a.node), st.mig().table().spec_of(id).model),
           ErrorCode::kInvalidValue, tp + ".gpus[0]");
  int start = -1;
  if (auto it = t.find("mig_start"); it != t.end()) {
    const std::int64_t v = read_int(*it, tp + ".mig_start", 0);
    const int slots = st.mig().table().spec_of(id).memory_slots;
    if (v >= slots)
      reject(fmt::format("{}.mig_start: the {} has memory slices 0-{}, got {}", tp, st.mig().table().spec_of(id).model, slots - 1, v),
             ErrorCode::kInvalidValue, tp + ".mig_start");
    start = static_cast<int>(v);
  } else {
    start = st.mig().table().idle_start(id, profile);
    if (start < 0)
      reject(fmt::format("{}.mig_start: missing, and GPU {} of node \"{}\" has no idle instance of the profile", tp, g,
                         st.node_name(a.node)),
             ErrorCode::kMissingField, tp + ".mig_start");
  }
  bool idle_there = false;
  for (const mig::MigSlot& slot : st.mig().table().instances(id))
    idle_there |= slot.start == start && slot.profile == profile && !slot.busy;
  a.mig_profile = static_cast<std::int8_t>(profile);
  a.mig_start = static_cast<std::int8_t>(start);
  a.mig_create = !idle_there;
}

// A running job's times and facts beside its placement: start (required), last checkpoint, checkpoint
// interval, restart cost, runtime estimate, restarts, preemptible, the jobs it was evicted for.
void read_running_facts(const json& raw, const std::string& path, RunningJob& r) {
  if (auto it = raw.find("start_time"); it != raw.end()) r.start_time = read_time(*it, path + ".start_time");
  else reject(fmt::format("{}.start_time: missing (a running job's start, seconds)", path), ErrorCode::kMissingField, path + ".start_time");
  if (auto it = raw.find("last_checkpoint"); it != raw.end()) r.last_checkpoint = read_time(*it, path + ".last_checkpoint", -1);
  if (auto it = raw.find("checkpoint_interval"); it != raw.end()) r.checkpoint_interval = read_time(*it, path + ".checkpoint_interval");
  if (auto it = raw.find("restart_cost"); it != raw.end()) r.restart_cost = read_time(*it, path + ".restart_cost");
  if (auto it = raw.find("runtime_estimate"); it != raw.end()) r.runtime_estimate = read_time(*it, path + ".runtime_estimate");
  if (auto it = raw.find("restarts"); it != raw.end()) r.restarts = static_cast<std::int32_t>(read_int(*it, path + ".restarts", 0, 1'000'000));
  if (auto it = raw.find("preemptible"); it != raw.end()) r.preemptible = read_bool(*it, path + ".preemptible");
  if (auto it = raw.find("evicted_by"); it != raw.end()) {
    if (!it->is_array())
      reject(fmt::format("{}.evicted_by: expected an array of job names, got {}", path, shown(*it)), ErrorCode::kInvalidValue, path + ".evicted_by");
    for (std::size_t k = 0; k < it->size(); ++k) {
      const json& e = (*it)[k];
      if (!e.is_string() || e.get_ref<const std::string&>().empty())
        reject(fmt::format("{}.evicted_by[{}]: expected a job name, got {}", path, k, shown(e)), ErrorCode::kInvalidValue, path + ".evicted_by");
      r.evicted_by.push_back(e.get<std::string>());
    }
  }
}

// The group a running task belongs to: named, or the job's only one.
std::size_t running_task_group(const CompiledJob& c, const json& t, const std::string& tp) {
  std::size_t g = 0;
  if (auto it = t.find("group"); it != t.end()) {
    const std::string name = read_string(*it, tp + ".group");
    auto gi = std::find_if(c.groups.begin(), c.groups.end(), [&](const CompiledGroup& x) { return x.name == name; });
    if (gi == c.groups.end())
      reject(fmt::format("{}.group: unknown group \"{}\"", tp, name), ErrorCode::kUnknownName, tp + ".group");
    g = static_cast<std::size_t>(gi - c.groups.begin());
  } else if (c.groups.size() != 1) {
    reject(fmt::format("{}.group: missing (the job has {} groups)", tp, c.groups.size()), ErrorCode::kMissingField,
           tp + ".group");
  }
  return g;
}

// A running task of group g: its node, GPUs and MIG instance, reserved on the state.
TaskAssignment read_running_task(ClusterState& st, const CompiledJob& c, std::size_t g, const json& t, const std::string& tp) {
  auto node_it = t.find("node");
  if (node_it == t.end()) reject(fmt::format("{}.node: missing", tp), ErrorCode::kMissingField, tp + ".node");
  const std::string node = read_string(*node_it, tp + ".node");
  const NodeId n = st.find_node(node);
  if (n == kNoNode) reject(fmt::format("{}.node: no node named \"{}\"", tp, node), ErrorCode::kUnknownName, tp + ".node");
  const TaskRequest& request = c.groups[g].request;
  TaskAssignment a = make_assignment(n, request);
  if (auto gs = t.find("gpus"); gs != t.end()) {
    if (!gs->is_array())
      reject(fmt::format("{}.gpus: expected an array of GPU indices, got {}", tp, shown(*gs)), ErrorCode::kInvalidValue, tp + ".gpus");
    for (std::size_t x = 0; x < gs->size(); ++x) {
      const std::string gp = fmt::format("{}.gpus[{}]", tp, x);
      const std::int64_t index = read_int((*gs)[x], gp, 0);
      if (index >= static_cast<std::int64_t>(st.gpu_count(n)))
        reject(fmt::format("{}: node \"{}\" has {} GPUs, got index {}", gp, node, st.gpu_count(n), index),
               ErrorCode::kInvalidValue, gp);
      a.gpus.push_back(static_cast<GpuIndex>(index));
    }
  }
  if (request.mig.any()) {
    place_running_mig(st, request, t, tp, a);
  } else if (t.contains("mig_start")) {
    reject(fmt::format("{}.mig_start: the group asks for no MIG profile", tp), ErrorCode::kInvalidValue, tp + ".mig_start");
  }
  if (Status s = st.reserve(request, a); !s) reject(Error(fmt::format("{}: {}", tp, s.error().message), s.error().code, tp));
  return a;
}

// Every group holds what it may hold: replicas (rigid), min..replicas (elastic). (A one-replica job
// with two tasks placed was accepted.)
void check_placed_counts(const CompiledJob& c, const json& pl, const std::string& path) {
  std::vector<std::int32_t> placed(c.groups.size(), 0);
  for (std::size_t k = 0; k < pl.size(); ++k) {
    std::size_t g = 0;
    if (auto it = pl[k].find("group"); it != pl[k].end()) {
      const std::string name = it->get<std::string>();
      for (std::size_t x = 0; x < c.groups.size(); ++x)
        if (c.groups[x].name == name) g = x;
    }
    ++placed[g];
  }
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const CompiledGroup& cg = c.groups[g];
    if (placed[g] < cg.min_replicas || placed[g] > cg.replicas)
      reject(fmt::format("{}.placement: group {} has {} task(s) placed, expected {}", path, shown(cg.name), placed[g],
                         cg.min_replicas == cg.replicas ? fmt::format("{} (its replicas)", cg.replicas)
                                                        : fmt::format("{} to {} (min_replicas to replicas)", cg.min_replicas, cg.replicas)),
             ErrorCode::kInconsistent, path + ".placement");
  }
}

// The restart work an eviction costs (restart_cost x the GPU share held) must be a number: a
// restart_cost near the time bound was reported saturated (9.2e15 GPU-seconds) instead of refused.
void check_restart_work(const RunningJob& r, const std::string& path) {
  std::int64_t held = 0, restart_work = 0;
  for (const RunningTask& t : r.tasks) held += static_cast<std::int64_t>(t.assignment.gpus.size()) * t.assignment.gpu_milli;  // <= 2^20 GPUs x 1000
  if (__builtin_mul_overflow(r.restart_cost, held, &restart_work))
    reject(fmt::format("{}.restart_cost: {} s x the job's {} milli-GPU is beyond 64 bits of milli-GPU-seconds", path,
                       r.restart_cost, held),
           ErrorCode::kOverflow, path + ".restart_cost");
}

RunningJob read_running_job(ClusterState& st, const Job& job, bool explicit_priority, const json& raw,
                            const QueuesDocument& queues, const std::string& path, std::vector<std::string>& groups) {
  auto compiled = compile_job(st, job);
  if (!compiled) reject(Error(fmt::format("{}.{}", path, compiled.error().message), compiled.error().code, compiled.error().field));
  RunningJob r;
  r.name = job.job_name;
  r.queue = job.queue_name;
  r.priority = priority_of(job, explicit_priority, queues, path);
  r.submit_time = raw.contains("submit_time") ? job.job_submit_time : -1;
  read_running_facts(raw, path, r);
  auto pl = raw.find("placement");
  if (pl == raw.end() || !pl->is_array() || pl->empty())
    reject(fmt::format("{}.placement: expected a non-empty array of tasks {{\"group\", \"node\", \"gpus\"}}", path),
           pl == raw.end() ? ErrorCode::kMissingField : ErrorCode::kInvalidValue, path + ".placement");
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
    check_keys(t, tp, {"group", "node", "gpus", "mig_start"});
    const std::size_t g = running_task_group(*compiled, t, tp);
    const TaskRequest& request = compiled->groups[g].request;
    TaskAssignment a = read_running_task(st, *compiled, g, t, tp);
    const auto group = static_cast<std::uint32_t>(g);
    if (!elastic || seen[g]++ < compiled->groups[g].min_replicas) {
      core.push_back({request, std::move(a), group});
      core_groups.push_back(compiled->groups[g].name);
    } else {
      extra.push_back({request, std::move(a), group});
      extra_groups.push_back(compiled->groups[g].name);
    }
  }
  check_placed_counts(*compiled, *pl, path);
  r.tasks = std::move(core);
  if (elastic) {
    r.min_tasks = static_cast<std::int32_t>(r.tasks.size());
    r.max_tasks = max_tasks;
    if (compiled->groups.size() > 1)
      for (const CompiledGroup& cg : compiled->groups) r.groups.push_back({cg.name, cg.request, cg.replicas});
  }
  r.tasks.insert(r.tasks.end(), extra.begin(), extra.end());
  core_groups.insert(core_groups.end(), extra_groups.begin(), extra_groups.end());
  check_restart_work(r, path);
  groups = std::move(core_groups);
  return r;
}

void read_running(ClusterState& st, std::string_view text, std::string_view source, CycleInputs& into) {
  auto jobs = read_jobs_json(text, source);
  if (!jobs) reject(jobs.error());
  const std::vector<json> raws = raw_jobs(text, source);
  for (std::size_t j = 0; j < jobs->jobs.size(); ++j) {
    std::vector<std::string> groups;
    RunningJob r = read_running_job(st, jobs->jobs[j], jobs->explicit_priority[j], raws[j], into.queues,
                                    fmt::format("{}: jobs[{}]", source, j), groups);
    into.running.push_back(std::move(r));
    into.running_groups.push_back(std::move(groups));
  }
}

std::vector<PendingJob> read_pending(const ClusterState& st, const JobsDocument& jobs, const QueuesDocument& queues,
                                     std::string_view source) {
  std::vector<PendingJob> out;
  out.reserve(jobs.jobs.size());
  for (std::size_t j = 0; j < jobs.jobs.size(); ++j) {
    const Job& job = jobs.jobs[j];
    const std::string path = fmt::format("{}: jobs[{}]", source, j);
    auto compiled = compile_job(st, job);
    if (!compiled) reject(Error(fmt::format("{}.{}", path, compiled.error().message), compiled.error().code, compiled.error().field));
    const JobCycleFields facts = j < jobs.cycle.size() ? jobs.cycle[j] : JobCycleFields{};
    const bool explicit_priority = j < jobs.explicit_priority.size() ? jobs.explicit_priority[j] : true;
    PendingJob p;
    p.job = std::move(*compiled);
    p.job.priority = priority_of(job, explicit_priority, queues, path);
    if (facts.running_fields)
      reject(fmt::format("{}: start_time/placement belong to running jobs (--running)", path), ErrorCode::kUnknownField, path);
    p.runtime_estimate = facts.runtime_estimate;
    p.not_before = facts.not_before;
    p.checkpoint_interval = facts.checkpoint_interval;
    p.restart_cost = facts.restart_cost;
    p.restarts = facts.restarts;
    p.preemptible = facts.preemptible;
    p.evicted_by = facts.evicted_by;
    out.push_back(std::move(p));
  }
  return out;
}

QueuesDocument read_queues(const ClusterState& st, std::string_view text, std::string_view queues_source,
                           std::string_view cluster_source) {
  auto fc = fairness::fairness_cluster(st);
  if (!fc) reject(fc.error(), cluster_source);
  auto doc = read_queues_json(text, queues_source, fc->space, st.registry());
  if (!doc) reject(doc.error());
  return std::move(*doc);
}

std::string choice_list(std::initializer_list<std::string_view> names) { return fmt::format("{}", fmt::join(names, ", ")); }

// A string option that must be one of `names`: its index.
std::size_t read_choice(const json& v, const std::string& path, std::initializer_list<std::string_view> names) {
  const std::string s = read_string(v, path);
  std::size_t i = 0;
  for (auto n : names) {
    if (n == s) return i;
    ++i;
  }
  reject(fmt::format("{}: expected one of {}, got \"{}\"", path, choice_list(names), s), ErrorCode::kUnknownName, path);
}

std::string gpu_seconds(std::int64_t milli) { return fmt::format("{:.1f}", static_cast<double>(milli) / 1000.0); }

json task_json(const ClusterState& state, const RunningTask& t, const std::string& group) {
  const TaskRecord r = task_record(state, t.assignment, group);
  json out{{"group", r.group}, {"node", r.node_name}, {"gpus", r.gpus}};
  if (r.partial_gpu()) out["gpu_milli"] = r.gpu_milli;
  if (r.is_mig()) out["mig"] = {{"profile_index", r.mig_profile_index}, {"start", r.mig_start}, {"create", r.mig_create}};
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

json decisions_json(const ClusterState& st, const CycleRun& run) {
  const CycleInputs& in = run.inputs;
  const CycleDecisions& d = run.decisions;
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
    const auto& names = in.running_groups[g.running];
    const std::string& last = names.empty() ? std::string() : names.back();
    for (const RunningTask& t : g.tasks)
      tasks.push_back(task_json(st, t, g.groups.empty() || t.group >= g.groups.size() ? last : g.groups[t.group]));
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
              {"message", waiting_text(in, w)}, {"reasons", detail::reasons_json(w.outcome.reasons)}};
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


Status read_running_jobs_impl(ClusterState& state, std::string_view text, std::string_view source, CycleInputs& into) {
  const ClusterState::Checkpoint mark = state.checkpoint();
  const std::size_t running = into.running.size(), groups = into.running_groups.size();
  auto r = guarded<bool>(source, [&] {
    read_running(state, text, source, into);
    return true;
  });
  if (r) return {};
  state.rollback(mark);
  into.running.resize(running);
  into.running_groups.resize(groups);
  return r.error();
}

Result<std::vector<scheduler::PendingJob>> pending_jobs_impl(const ClusterState& state, const JobsDocument& jobs,
                                                        const QueuesDocument& queues, std::string_view source) {
  return guarded<std::vector<scheduler::PendingJob>>(source, [&] { return read_pending(state, jobs, queues, source); });
}

Result<CycleInputs> read_cycle_inputs_impl(ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                                      std::string_view running_text, const CycleSources& sources) {
  const ClusterState::Checkpoint mark = state.checkpoint();
  // Each file's errors name it (a pending job's "jobs[0].runtime_estimate: ..." named no file).
  const auto from = [](std::string_view source, auto&& read) {
    try {
      read();
    } catch (CycleInputError& e) {
      const std::string prefix = std::string(source) + ":";
      if (!source.empty() && !e.names_its_file && !e.error.message.starts_with(prefix))
        e.error.message = prefix + " " + e.error.message;
      throw;
    }
  };
  auto r = guarded<CycleInputs>(sources.running, [&] {
    CycleInputs in;
    if (!queues_text.empty()) from(sources.queues, [&] { in.queues = read_queues(state, queues_text, sources.queues, sources.cluster); });
    // Running jobs: their tasks are reserved on the cluster (which therefore describes what runs
    // outside these jobs only).
    if (!running_text.empty()) from(sources.running, [&] { read_running(state, running_text, sources.running, in); });
    from(sources.pending, [&] { in.pending = read_pending(state, jobs, in.queues, sources.pending); });
    return in;
  });
  if (!r) state.rollback(mark);
  return r;
}

Result<CycleOptionsDocument> read_cycle_options_impl(std::string_view text, std::string_view source, bool policy_keys) {
  CycleOptionsDocument out;
  CycleOptions& o = out.options;
  if (text.empty()) return out;
  auto doc = detail::parse_json(text, source);
  if (!doc) return doc.error();
  return guarded<CycleOptionsDocument>(source, [&] {
    const std::string p(source);
    std::vector<std::string_view> keys = {"preempt", "within_queue", "reclaim_within_cohort", "fair_share_reclaim", "grow",
                                          "min_runtime", "backfill", "backfill_window", "backfill_resolution",
                                          "backfill_depth", "dry_run"};
    if (policy_keys) keys.insert(keys.end(), {"policy", "seed", "order", "victim_order", "mig_placement"});
    check_keys(*doc, p, keys);
    const json& d = *doc;
    if (auto it = d.find("policy"); it != d.end()) out.policy = read_string(*it, p + ".policy");
    if (auto it = d.find("order"); it != d.end()) out.order = read_string(*it, p + ".order");
    if (auto it = d.find("victim_order"); it != d.end()) out.victim_order = read_string(*it, p + ".victim_order");
    if (auto it = d.find("mig_placement"); it != d.end()) {
      static constexpr const char* kNames[] = {"first-fit", "frag-aware"};
      out.mig_picker = mig_picker_named(kNames[read_choice(*it, p + ".mig_placement", {"first-fit", "frag-aware"})]);
      o.placement.mig_picker = out.mig_picker.get();
    }
    if (auto it = d.find("seed"); it != d.end()) out.seed = static_cast<std::uint64_t>(read_int(*it, p + ".seed", 0));
    if (auto it = d.find("preempt"); it != d.end()) o.preempt = read_bool(*it, p + ".preempt");
    if (auto it = d.find("fair_share_reclaim"); it != d.end()) o.fair_share_reclaim = read_bool(*it, p + ".fair_share_reclaim");
    if (auto it = d.find("grow"); it != d.end()) o.grow_elastic = read_bool(*it, p + ".grow");
    if (auto it = d.find("dry_run"); it != d.end()) o.dry_run = read_bool(*it, p + ".dry_run");
    if (auto it = d.find("min_runtime"); it != d.end()) o.preemption.min_runtime = read_int(*it, p + ".min_runtime", 0);
    if (auto it = d.find("within_queue"); it != d.end()) {
      constexpr WithinQueue kinds[] = {WithinQueue::kNever, WithinQueue::kLowerPriority, WithinQueue::kLowerOrNewerEqualPriority};
      o.preemption.within_queue = kinds[read_choice(*it, p + ".within_queue", {"never", "lower", "lower-or-newer"})];
    }
    if (auto it = d.find("reclaim_within_cohort"); it != d.end()) {
      constexpr CohortReclaim kinds[] = {CohortReclaim::kNever, CohortReclaim::kLowerPriority, CohortReclaim::kAny};
      o.reclaim_within_cohort = kinds[read_choice(*it, p + ".reclaim_within_cohort", {"never", "lower", "any"})];
    }
    if (auto it = d.find("backfill"); it != d.end()) {
      constexpr BackfillMode kinds[] = {BackfillMode::kNone, BackfillMode::kEasy, BackfillMode::kConservative};
      o.backfill.mode = kinds[read_choice(*it, p + ".backfill", {"none", "easy", "conservative"})];
    }
    if (auto it = d.find("backfill_window"); it != d.end()) o.backfill.window = read_int(*it, p + ".backfill_window", 0);
    if (auto it = d.find("backfill_resolution"); it != d.end()) o.backfill.resolution = read_int(*it, p + ".backfill_resolution", 1);
    if (auto it = d.find("backfill_depth"); it != d.end())
      o.backfill.depth = static_cast<std::size_t>(read_int(*it, p + ".backfill_depth", 0));
    return out;
  });
}

}  // namespace cycle_json_impl

Status read_running_jobs_json(ClusterState& state, std::string_view text, std::string_view source, CycleInputs& into) {
  return cycle_json_impl::read_running_jobs_impl(state, text, source, into);
}

Result<std::vector<scheduler::PendingJob>> pending_jobs(const ClusterState& state, const JobsDocument& jobs,
                                                        const QueuesDocument& queues, std::string_view source) {
  return cycle_json_impl::pending_jobs_impl(state, jobs, queues, source);
}

Result<CycleInputs> read_cycle_inputs(ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                                      std::string_view running_text, const CycleSources& sources) {
  return cycle_json_impl::read_cycle_inputs_impl(state, jobs, queues_text, running_text, sources);
}

Result<QueuesDocument> read_cycle_queues(const ClusterState& state, std::string_view text, std::string_view source) {
  return cycle_json_impl::guarded<QueuesDocument>(source, [&] { return cycle_json_impl::read_queues(state, text, source, "cluster"); });
}

Result<scheduler::CycleOptions> read_cycle_options_json(std::string_view text, std::string_view source) {
  auto d = cycle_json_impl::read_cycle_options_impl(text, source, false);
  if (!d) return d.error();
  return d->options;
}

Result<CycleOptionsDocument> read_cycle_options_document(std::string_view text, std::string_view source) {
  return cycle_json_impl::read_cycle_options_impl(text, source, true);
}

// ---- the session every front end uses -----------------------------------------------------------

using detail::in_context;

Result<CycleSession> CycleSession::open(ClusterState& state, QueuesDocument queues, const scheduler::CycleOptions& options,
                                        std::string_view context) {
  auto s = scheduler::Session::open(state, queues.queues, options);
  if (!s) return in_context(s.error(), context);
  CycleSession out;
  out.state_ = &state;
  out.queues_ = std::move(queues);
  out.session_.emplace(std::move(*s));
  return out;
}

Status CycleSession::submit(std::vector<scheduler::PendingJob> jobs, std::string_view source) {
  // All or nothing: a name taken (pending or running, or twice in `jobs`) refuses the whole call.
  std::set<std::string_view> seen;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const std::string& name = jobs[k].job.name;
    if (!seen.insert(name).second || session_->find_pending(name) || session_->find_running(name))
      return Error(fmt::format("{}: jobs[{}].name: {} is already pending or running", source, k, detail::shown(name)),
                   ErrorCode::kDuplicate, fmt::format("jobs[{}].name", k));
  }
  for (scheduler::PendingJob& j : jobs) (void)session_->submit(std::move(j));
  return {};
}

Status CycleSession::add_running(CycleInputs running, std::string_view source) {
  std::set<std::string_view> seen;
  for (std::size_t k = 0; k < running.running.size(); ++k) {
    const std::string& name = running.running[k].name;
    if (!seen.insert(name).second || session_->find_pending(name) || session_->find_running(name))
      return Error(fmt::format("{}: jobs[{}].name: {} is already pending or running", source, k, detail::shown(name)),
                   ErrorCode::kDuplicate, fmt::format("jobs[{}].name", k));
  }
  for (std::size_t k = 0; k < running.running.size(); ++k) {
    const auto& groups = running.running_groups[k];
    grow_group_[running.running[k].name] = groups.empty() ? std::string() : groups.back();
    if (Status st = session_->add_running(std::move(running.running[k])); !st) {
      const Error e = st.error();
      return Error(fmt::format("{}: jobs[{}]: {}", source, k, e.message), e.code, fmt::format("jobs[{}].{}", k, e.field));
    }
  }
  return {};
}

Status CycleSession::add_running_json(std::string_view text, std::string_view source) {
  CycleInputs in;
  in.queues = queues_;
  const ClusterState::Checkpoint mark = state_->checkpoint();
  if (Status st = read_running_jobs_json(*state_, text, source, in); !st) return st;
  if (Status st = add_running(std::move(in), source); !st) {
    state_->rollback(mark);  // the reservations read_running_jobs_json made
    return st;
  }
  return {};
}

Result<CycleRun> CycleSession::cycle(std::int64_t now, bool dry_run, scheduler::CycleDetail detail, std::string_view context) {
  CycleRun run;
  // What the writers read of the lists as they were: the pending jobs, each running job's group.
  run.inputs.queues = queues_;
  run.inputs.pending.assign(session_->pending().begin(), session_->pending().end());
  for (const scheduler::RunningJob& r : session_->running()) {
    const auto g = grow_group_.find(r.name);
    run.inputs.running_groups.push_back({g == grow_group_.end() ? std::string() : g->second});
  }
  if (Status st = scheduler::check_cycle_time(now); !st) return st.error();  // the caller's time: no file named
  auto d = session_->cycle(now, dry_run ? scheduler::CycleApply::kPlan : scheduler::CycleApply::kCommit, detail);
  if (!d) return in_context(d.error(), context);
  if (!dry_run)
    for (const scheduler::Start& s : d->starts) {
      const auto& groups = run.inputs.pending[s.pending].job.groups;
      grow_group_[s.job] = groups.empty() ? std::string() : groups.back().name;
    }
  run.decisions = std::move(*d);
  return run;
}

Status CycleSession::finish(std::string_view job) {
  Status st = session_->finish(job);
  if (st) grow_group_.erase(std::string(job));
  return st;
}

Status CycleSession::cancel(std::string_view job) {
  Status st = session_->cancel(job);
  if (st) grow_group_.erase(std::string(job));
  return st;
}

Result<scheduler::CycleDecisions> run_cycle_on(ClusterState& state, const CycleInputs& inputs, std::int64_t now,
                                               const scheduler::CycleOptions& options, std::string_view context,
                                               std::string_view pending_source, std::string_view running_source) {
  // The time is the caller's (--now, now=), not a file's: its error names no file.
  if (Status st = scheduler::check_cycle_time(now); !st) return st.error();
  // A running job that starts after `now` would never have run long enough to be a victim, nor end.
  for (std::size_t j = 0; j < inputs.running.size(); ++j)
    if (inputs.running[j].start_time > now)
      return Error(fmt::format("{}: jobs[{}].start_time: {} is after now ({})", running_source, j, inputs.running[j].start_time, now),
                   ErrorCode::kInconsistent, fmt::format("jobs[{}].start_time", j));
  // A fresh session, one cycle: the one-shot form (its running jobs are already reserved on the state).
  auto session = CycleSession::open(state, inputs.queues, options, context);
  if (!session) return session.error();
  CycleInputs running;
  running.running = inputs.running;
  running.running_groups = inputs.running_groups;
  running.running_groups.resize(running.running.size());
  if (Status st = session->add_running(std::move(running), running_source); !st) return st.error();
  if (Status st = session->submit(inputs.pending, pending_source); !st) return st.error();
  // An error about a running job (its work beyond 64 bits: field "running[j]") is the running file's,
  // jobs[j] there (added in file order); any other is the context's (the queues' quotas and tree).
  auto run = session->cycle(now, options.dry_run, scheduler::CycleDetail::kFull, {});
  if (!run) {
    const Error& e = run.error();
    if (e.field.starts_with("running["))
      return Error(fmt::format("{}: {}", running_source, e.message), e.code, "jobs" + e.field.substr(std::string_view("running").size()));
    return in_context(e, context);
  }
  return std::move(run->decisions);
}

Result<CycleRun> cycle_run(ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                           std::string_view running_text, std::int64_t now, const scheduler::CycleOptions& options,
                           const CycleSources& sources) {
  // Before the running jobs are reserved: a refused time changes nothing, not even the generation.
  if (Status st = scheduler::check_cycle_time(now); !st) return st.error();
  const ClusterState::Checkpoint mark = state.checkpoint();
  auto inputs = read_cycle_inputs(state, jobs, queues_text, running_text, sources);
  if (!inputs) return inputs.error();
  CycleRun run;
  run.inputs = std::move(*inputs);
  // A plan with options.dry_run (it changes nothing); then the running jobs' reservations go too.
  auto d = run_cycle_on(state, run.inputs, now, options, queues_text.empty() ? sources.running : sources.queues,
                        sources.pending, sources.running);
  if (!d || options.dry_run) state.rollback(mark);
  else if (mark == 0) state.commit();
  if (!d) return d.error();
  run.decisions = std::move(*d);
  return run;
}

std::string waiting_text(const CycleInputs& in, const scheduler::Waiting& w) {
  if (!w.outcome.reasons.empty() && w.outcome.reasons[0].kind == ReasonKind::kBehindStrictHead && w.behind < in.pending.size())
    return fmt::format("not now: behind {} (the head of its StrictFIFO queue)", in.pending[w.behind].job.name);
  if (!w.outcome.reasons.empty() && w.outcome.reasons[0].kind == ReasonKind::kBackoff)
    return fmt::format("not now: backing off after a failure until t={}", w.outcome.reasons[0].needed);
  // Capacity held for a reservation: name the job it is held for and when that job starts.
  std::string text = to_string(w.outcome);
  for (const Reason& r : w.outcome.reasons)
    if (r.kind == ReasonKind::kReservedForOther && r.subject >= 0 && static_cast<std::size_t>(r.subject) < in.pending.size()) {
      text += fmt::format(" (held for {}", in.pending[static_cast<std::size_t>(r.subject)].job.name);
      text += r.needed >= 0 ? fmt::format(", which is reserved to start at t={})", r.needed) : std::string(")");
      break;
    }
  return text;
}

Status AdapterCycle::build_state(GpuModelRegistry registry, Cluster nodes) {
  cluster.registry = std::move(registry);
  cluster.cluster = std::move(nodes);
  auto built = ClusterState::build(cluster.cluster, cluster.registry);
  if (!built) return detail::in_context(built.error(), "nodes");
  state.emplace(std::move(*built));
  return {};
}

std::string write_cycle_json(const ClusterState& state, const CycleRun& run, int indent) {
  return cycle_json_impl::decisions_json(state, run).dump(detail::clamped_indent(indent), ' ', false,
                                                          nlohmann::json::error_handler_t::replace);
}

std::string write_cycle_table(const ClusterState& st, const CycleRun& run) {
  using namespace scheduler;
  using cycle_json_impl::gpu_seconds;
  const CycleDecisions& d = run.decisions;
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
  for (const Waiting& w : d.waiting) text += fmt::format("  {:<20} {}\n", w.job, waiting_text(run.inputs, w));
  return text;
}

}  // namespace gpusched::io
