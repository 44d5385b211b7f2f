// The C API (include/gpusched/c/gpusched.h) over the C++ library: the same readers, the one
// ClusterState, the same policies. Every exported function catches everything at the boundary
// (no exception crosses into C) and reports failures as a status plus a message in the caller's
// gpusched_error; nothing here is global or mutable.
#include "gpusched/c/gpusched.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/io/task_records.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/io/policy_plugin.hpp"
#include "io/decision_json.hpp"
#include "io/json_input.hpp"

#ifndef GPUSCHED_VERSION_STRING
#error "GPUSCHED_VERSION_STRING is set by the build (the project's version)"
#endif

struct gpusched_state {
  gpusched::GpuModelRegistry registry;  // the state reads models through it
  gpusched::ClusterState state;
  std::vector<std::string> node_names;  // NUL-terminated copies for gpusched_state_node_name
  // The last deterministic policy used, kept for the next call (its caches key on the state's
  // generation, so reuse never changes an answer). "random" is made afresh each call: its draws
  // advance, and a call must depend only on its seed.
  std::string policy_name;
  std::unique_ptr<gpusched::PlacementPolicy> policy;
  // Jobs compiled against this state, by (jobs handle id, index): a compiled job depends only on the
  // state's layout (registry, labels, MIG tables), so the cache is dropped when the state object or
  // its layout generation changes. Kept here, not on the jobs handle, so that one jobs handle may be
  // read by threads placing on different states (the header's thread rule).
  std::uint64_t compiled_for_state = 0, compiled_for_layout = 0;
  std::map<std::pair<std::uint64_t, std::size_t>, std::shared_ptr<const gpusched::CompiledJob>> compiled;
  // The policies its calls resolve names in: the built-ins, and the caller's (gpusched_state_add_policy,
  // gpusched_state_load_plugin).
  gpusched::PolicyRegistry policies = gpusched::PolicyRegistry::with_builtins();
  // The job and victim orders likewise (gpusched_state_add_order, plugins).
  gpusched::scheduler::OrderRegistry orders = gpusched::scheduler::OrderRegistry::with_builtins();
};

struct gpusched_jobs {
  gpusched::io::JobsDocument doc;
  // Unique per handle (never reused, unlike an address): what the state's compiled-job cache keys on.
  std::uint64_t id = next_id();
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> last{0};
    return ++last;
  }
};

struct gpusched_result {
  gpusched_verdict verdict = GPUSCHED_NOT_NOW;
  struct Task {
    std::string group;
    std::int32_t replica = 0;
    std::size_t node = 0;
    std::string node_name;
    std::vector<std::uint32_t> gpus;
    std::int32_t gpu_milli = 0;
    std::int32_t mig_start = -1;
  };
  std::vector<Task> tasks;
  // What the placement keeps reserved on `held_by` (placed, not a dry run) until gpusched_release.
  std::vector<gpusched::TaskAssignment> held;
  std::uint64_t held_by = 0;  // the state's ClusterState::instance_id (never reused; 0: holds nothing)
  mutable std::string message;  // when placed, written on first request ("placed: N tasks")
  mutable std::once_flag message_once;
  // The JSON entry is written on first request (a decision should cost little more than the C++
  // call: benchmarks/README.md, "Bindings"); once_flag keeps concurrent readers safe.
  std::string job;
  std::string_view verdict_text;
  nlohmann::json reasons;  // when not placed
  nlohmann::json extra;    // gang: method, placed per group, effort, domain
  mutable std::once_flag json_once;
  mutable std::string json;
};

struct gpusched_session {
  gpusched_state* state = nullptr;  // borrowed: it must outlive the session
  std::unique_ptr<gpusched::PlacementPolicy> policy;  // the options' "policy", for every cycle
  gpusched::scheduler::Orders orders;                 // the options' "order" and "victim_order"
  std::shared_ptr<const gpusched::GpuPicker> mig_picker;  // the options' "mig_placement"
  std::optional<gpusched::io::CycleSession> session;
};

struct gpusched_cycle_result {
  struct Start {
    std::string job;
    std::size_t index = 0;
    std::vector<gpusched_result::Task> tasks;
  };
  struct Eviction {
    std::string job, for_job, reason;
    bool whole = true;
    double lost_gpu_seconds = 0;
  };
  struct Waiting {
    std::string job;
    std::size_t index = 0;
    gpusched_verdict verdict = GPUSCHED_NOT_NOW;
    std::string message;
  };
  std::vector<Start> starts;
  std::vector<Eviction> evictions;
  std::vector<Waiting> waiting;
  std::string json;
};

struct gpusched_order {
  std::vector<std::size_t> admitted;
  std::vector<std::string> admitted_queue;
  std::vector<std::size_t> pending;
  std::vector<std::string> pending_reason;
  std::string json;
};

namespace {

using gpusched::Error;
using gpusched::ErrorCode;
using nlohmann::json;

// A failure inside a call, carried to the boundary.
struct CallError {
  gpusched_status code;
  std::string message;
};

[[noreturn]] void fail(gpusched_status code, std::string message) { throw CallError{code, std::move(message)}; }

gpusched_status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidValue:
    case ErrorCode::kMissingField:
    case ErrorCode::kUnknownField:
    case ErrorCode::kDuplicate:
    case ErrorCode::kInconsistent: return GPUSCHED_ERROR_INVALID_INPUT;
    case ErrorCode::kUnknownName: return GPUSCHED_ERROR_UNKNOWN_NAME;
    case ErrorCode::kOverflow:
    case ErrorCode::kLimit: return GPUSCHED_ERROR_LIMIT;
    case ErrorCode::kParse: return GPUSCHED_ERROR_PARSE;
    case ErrorCode::kIo: return GPUSCHED_ERROR_IO;
    case ErrorCode::kState: return GPUSCHED_ERROR_STATE;
  }
  return GPUSCHED_ERROR_INVALID_INPUT;
}

[[noreturn]] void fail(const Error& e, std::string_view prefix = {}) {
  // A policy's or an order's user code failed (scheduler/cycle.hpp refuses such a cycle by these fields).
  const bool user_code = e.field == "placement.policy" || e.field == "order" || e.field == "preemption.victim_order";
  const gpusched_status code = user_code && e.code == ErrorCode::kInvalidValue ? GPUSCHED_ERROR_POLICY : status_of(e.code);
  fail(code, prefix.empty() ? e.message : fmt::format("{}: {}", prefix, e.message));
}

void set_error(gpusched_error* err, gpusched_status code, std::string_view raw) {
  if (err == nullptr) return;
  err->code = code;
  const std::string message = gpusched::io::detail::tidy_message(raw);
  constexpr std::size_t cap = GPUSCHED_ERROR_MESSAGE_SIZE - 1;
  if (message.size() <= cap) {
    std::memcpy(err->message, message.data(), message.size());
    err->message[message.size()] = '\0';
  } else {
    std::memcpy(err->message, message.data(), cap - 3);
    std::memcpy(err->message + cap - 3, "...", 4);
  }
}

// Runs `body` with every exception turned into a status and a message.
template <class F>
gpusched_status guarded(gpusched_error* err, F&& body) noexcept {
  try {
    body();
    set_error(err, GPUSCHED_OK, "");
    return GPUSCHED_OK;
  } catch (const CallError& e) {
    set_error(err, e.code, e.message);
    return e.code;
  } catch (const std::bad_alloc&) {
    set_error(err, GPUSCHED_ERROR_OUT_OF_MEMORY, "out of memory");
    return GPUSCHED_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_error(err, GPUSCHED_ERROR_INTERNAL, fmt::format("internal error: {}", e.what()));
    return GPUSCHED_ERROR_INTERNAL;
  } catch (...) {
    set_error(err, GPUSCHED_ERROR_INTERNAL, "internal error: unknown exception");
    return GPUSCHED_ERROR_INTERNAL;
  }
}

template <class T>
void need(const T* p, const char* what) {
  if (p == nullptr) fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("{}: NULL", what));
}

// A name, queue, model or label from C: no control characters (a newline forges a row of every
// table and JSON answer) and UTF-8 (the JSON answers would say U+FFFD instead).
void check_text(const char* text, const std::string& field) {
  const std::string_view s(text);
  if (const int u = gpusched::io::detail::first_control_character(s); u >= 0)
    fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}: control character 0x{:02x} in {}", field, u, gpusched::io::detail::shown(s)));
  if (!gpusched::io::detail::valid_utf8(s))
    fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}: not UTF-8: {}", field, gpusched::io::detail::shown(s)));
}

std::string read_whole_file(const char* path) {
  need(path, "path");
  auto text = gpusched::io::detail::read_input_file(path);
  if (!text) fail(text.error());
  return std::move(*text);
}

std::unique_ptr<gpusched_state> make_state(gpusched::GpuModelRegistry registry, const gpusched::Cluster& cluster,
                                           std::string_view source) {
  auto built = gpusched::ClusterState::build(cluster, registry);
  if (!built) fail(built.error(), source);
  auto out = std::unique_ptr<gpusched_state>(new gpusched_state{std::move(registry), std::move(*built), {}, {}, {}, 0, 0, {}});
  out->node_names.reserve(out->state.node_count());
  for (std::size_t n = 0; n < out->state.node_count(); ++n)
    out->node_names.emplace_back(out->state.node_name(static_cast<gpusched::NodeId>(n)));
  return out;
}

std::unique_ptr<gpusched_state> state_from_text(std::string_view text, std::string_view source) {
  auto doc = gpusched::io::read_cluster_json(text, source);
  if (!doc) fail(doc.error());
  return make_state(std::move(doc->registry), doc->cluster, source);
}

std::unique_ptr<gpusched_jobs> jobs_from_text(std::string_view text, std::string_view source) {
  auto doc = gpusched::io::read_jobs_json(text, source);
  if (!doc) fail(doc.error());
  return std::unique_ptr<gpusched_jobs>(new gpusched_jobs{std::move(*doc)});
}

const gpusched::Job& job_at(const gpusched_jobs* jobs, std::size_t index) {
  need(jobs, "jobs");
  if (index >= jobs->doc.jobs.size())
    fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("index: {} is out of range ({} jobs)", index, jobs->doc.jobs.size()));
  return jobs->doc.jobs[index];
}

using TaskList = std::vector<gpusched::TaskRequest>;

// Every task of the jobs that compile against `state` (FGD's target workload).
TaskList tasks_of(const gpusched::ClusterState& state, const gpusched_jobs& jobs) {
  TaskList tasks;
  for (const gpusched::Job& job : jobs.doc.jobs)
    if (auto c = gpusched::compile_job(state, job))
      gpusched::append_tasks(*c, tasks);
  return tasks;
}

// A policy by name, resolved in `registry`. FGD-family policies get `tasks()` as their target
// workload; without `tasks` (a session: its jobs come one by one) they are refused.
std::unique_ptr<gpusched::PlacementPolicy> policy_named(const gpusched::PolicyRegistry& registry, const char* name,
                                                        std::uint64_t seed, const std::function<TaskList()>& tasks) {
  const std::string n = name == nullptr || *name == '\0' ? std::string("best-fit") : std::string(name);
  if (const gpusched::PolicyEntry* e = registry.find(n); e && e->needs_workload && !tasks)
    fail(GPUSCHED_ERROR_INVALID_INPUT,
         fmt::format("policy \"{}\" packs for the tasks it is given at once; a session gets its jobs one by one "
                     "(use gpusched_cycle or gpusched_place)", e->name));
  auto policy = registry.make_for(n, seed, tasks);
  if (!policy) fail(policy.error(), "policy");
  return std::move(*policy);
}

// The orders `document` names ("" = the defaults), resolved in `registry`, applied to its options.
gpusched::scheduler::Orders orders_named(const gpusched::scheduler::OrderRegistry& registry,
                                         gpusched::io::CycleOptionsDocument& document) {
  auto made = registry.make_orders(document.order, document.victim_order);
  if (!made) fail(made.error(), made.error().field);
  document.options.order = made->order.get();
  document.options.preemption.victim_order = made->victim_order.get();
  return std::move(*made);
}

// After a call decided with `policy`: its user code's failure is the call's error (and a kept
// policy that failed is dropped, so the next call starts afresh).
void check_policy(gpusched_state* state, const gpusched::PlacementPolicy& policy) {
  if (policy.failure().empty()) return;
  const std::string message = fmt::format("policy \"{}\" failed: {}", policy.name(), policy.failure());
  if (state && state->policy.get() == &policy) {
    state->policy.reset();
    state->policy_name.clear();
  }
  fail(GPUSCHED_ERROR_POLICY, message);
}

gpusched_verdict verdict_of(gpusched::Verdict v) {
  switch (v) {
    case gpusched::Verdict::kPlaced: return GPUSCHED_PLACED;
    case gpusched::Verdict::kNotNow: return GPUSCHED_NOT_NOW;
    case gpusched::Verdict::kInfeasible: return GPUSCHED_INFEASIBLE;
    case gpusched::Verdict::kInvalid: return GPUSCHED_INVALID;
  }
  return GPUSCHED_INVALID;
}

// A task record as the C API hands it out.
gpusched_result::Task c_task(gpusched::io::TaskRecord&& t) {
  gpusched_result::Task task;
  task.group = std::move(t.group);
  task.replica = t.replica;
  task.node = t.node;
  task.node_name = std::move(t.node_name);
  task.gpus = std::move(t.gpus);
  task.gpu_milli = t.gpu_milli;
  task.mig_start = t.mig_start;
  return task;
}

void fill_task(const gpusched_result::Task& t, gpusched_task* out) {
  out->group = t.group.c_str();
  out->replica = t.replica;
  out->node = t.node;
  out->node_name = t.node_name.c_str();
  out->gpu_count = t.gpus.size();
  out->gpus = t.gpus.empty() ? nullptr : t.gpus.data();
  out->gpu_milli = t.gpu_milli;
  out->mig_start = t.mig_start;
}

// The cycle's decisions as the C API hands them out (names copied, tasks as records, the JSON
// document written now: the state may change after the call).
std::unique_ptr<gpusched_cycle_result> make_cycle_result(const gpusched::ClusterState& state,
                                                         const gpusched::io::CycleRun& run) {
  auto r = std::make_unique<gpusched_cycle_result>();
  for (const gpusched::scheduler::Start& s : run.decisions.starts) {
    gpusched_cycle_result::Start start;
    start.job = s.job;
    start.index = s.pending;
    const gpusched::CompiledJob& job = run.inputs.pending[s.pending].job;
    // Tasks are by group, then replica (placed_per_group of each group).
    std::size_t k = 0;
    for (std::size_t g = 0; g < s.placed_per_group.size() && g < job.groups.size(); ++g)
      for (std::int32_t rep = 0; rep < s.placed_per_group[g] && k < s.tasks.size(); ++rep, ++k)
        start.tasks.push_back(c_task(gpusched::io::task_record(state, s.tasks[k].assignment, job.groups[g].name, rep)));
    for (std::int32_t rep = 0; k < s.tasks.size(); ++k, ++rep)  // not counted per group: the last group's
      start.tasks.push_back(c_task(gpusched::io::task_record(state, s.tasks[k].assignment,
                                                             job.groups.empty() ? "" : job.groups.back().name, rep)));
    r->starts.push_back(std::move(start));
  }
  for (const gpusched::scheduler::Eviction& e : run.decisions.evictions)
    r->evictions.push_back({e.job, e.for_job, std::string(gpusched::scheduler::eviction_reason_name(e.reason)), e.whole,
                            static_cast<double>(e.lost_milli_gpu_seconds) / 1000.0});
  for (const gpusched::scheduler::Waiting& w : run.decisions.waiting)
    r->waiting.push_back({w.job, w.pending, verdict_of(w.outcome.verdict), gpusched::io::waiting_text(run.inputs, w)});
  r->json = gpusched::io::write_cycle_json(state, run);
  return r;
}

// The result handle of a decision: tasks (when placed), the message; the JSON entry's parts that
// need the compiled job (reasons name groups) are kept, the rest is written on request.
std::unique_ptr<gpusched_result> make_result(const gpusched::ClusterState& state, const gpusched::CompiledJob& job,
                                             gpusched::Verdict verdict, const std::vector<gpusched::TaskPlacement>& tasks,
                                             std::string message, const std::vector<gpusched::Reason>& reasons,
                                             json extra) {
  auto r = std::make_unique<gpusched_result>();
  r->verdict = verdict_of(verdict);
  r->message = std::move(message);
  r->job = job.name;
  r->verdict_text = gpusched::verdict_name(verdict);
  if (verdict == gpusched::Verdict::kPlaced) {
    r->tasks.reserve(tasks.size());
    for (auto& t : gpusched::io::task_records(state, job, tasks)) r->tasks.push_back(c_task(std::move(t)));
  } else {
    r->reasons = gpusched::io::detail::reasons_json(reasons, &job);
  }
  r->extra = std::move(extra);
  return r;
}

// The placement's tasks stay reserved on `state` until gpusched_release gives them back.
void hold(gpusched_result& r, const gpusched_state& state, const std::vector<gpusched::TaskPlacement>& tasks) {
  r.held.clear();
  for (const gpusched::TaskPlacement& t : tasks) r.held.push_back(t.assignment);
  r.held_by = state.state.instance_id();
}

std::string result_json(const gpusched_result& r) {
  const char* message = gpusched_result_message(&r);
  json out{{"job", r.job}, {"verdict", std::string(r.verdict_text)}, {"message", message ? message : ""}};
  if (r.verdict == GPUSCHED_PLACED) {
    json tasks = json::array();
    for (const auto& t : r.tasks) {
      json item{{"group", t.group}, {"replica", t.replica}, {"node", t.node_name}, {"gpus", t.gpus},
                {"gpu_milli", t.gpu_milli}};
      if (t.mig_start >= 0) item["mig_start"] = t.mig_start;
      tasks.push_back(std::move(item));
    }
    out["tasks"] = std::move(tasks);
  } else {
    out["reasons"] = r.reasons;
  }
  if (!r.extra.is_null()) out.update(r.extra);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Rolls the state back to `mark` unless kept: a decision that throws half-way (out of memory while
// copying the result) leaves the state as it was.
class Undo {
 public:
  Undo(gpusched::ClusterState& state) : state_(state), mark_(state.checkpoint()) {}  // NOLINT
  Undo(const Undo&) = delete;
  Undo& operator=(const Undo&) = delete;
  ~Undo() {
    if (!kept_) state_.rollback(mark_);
  }
  // Placed and not a dry run: the reservations become the state.
  void keep() {
    state_.commit();
    kept_ = true;
  }

 private:
  gpusched::ClusterState& state_;
  gpusched::ClusterState::Checkpoint mark_;
  bool kept_ = false;
};

struct Prepared {
  std::shared_ptr<const gpusched::CompiledJob> compiled;
  const gpusched::CompiledJob& job() const { return *compiled; }
  std::unique_ptr<gpusched::PlacementPolicy> fresh;  // a policy made for this call only
  const gpusched::PlacementPolicy* policy = nullptr;
};

Prepared prepare(gpusched_state* state, const gpusched_jobs* jobs, std::size_t index, const char* policy,
                 std::uint64_t seed, gpusched_result** out) {
  need(out, "out");
  *out = nullptr;  // first: every failing call leaves *out NULL (a stale pointer survived a NULL state)
  need(state, "state");
  const gpusched::Job& job = job_at(jobs, index);
  const gpusched::ClusterState& st = state->state;
  if (state->compiled_for_state != st.instance_id() || state->compiled_for_layout != st.layout_generation()) {
    state->compiled.clear();
    state->compiled_for_state = st.instance_id();
    state->compiled_for_layout = st.layout_generation();
  }
  auto& kept = state->compiled[{jobs->id, index}];
  if (!kept) {
    auto compiled = gpusched::compile_job(st, job);
    if (!compiled) {
      state->compiled.erase({jobs->id, index});  // an error is not kept: it is reported on every call
      fail(compiled.error(), fmt::format("jobs[{}]", index));
    }
    kept = std::make_shared<const gpusched::CompiledJob>(std::move(*compiled));
  }
  Prepared prepared{kept, nullptr, nullptr};
  const std::string_view name = policy == nullptr ? std::string_view("best-fit") : std::string_view(policy);
  const gpusched::PolicyEntry* entry = state->policies.find(name);
  if (name == "random" || (entry && entry->needs_workload)) {  // its draws, its jobs' workload: this call's
    prepared.fresh = policy_named(state->policies, policy, seed, [&] { return tasks_of(st, *jobs); });
    prepared.policy = prepared.fresh.get();
  } else {
    if (!state->policy || state->policy_name != name) {
      state->policy = policy_named(state->policies, policy, seed, [&] { return tasks_of(st, *jobs); });
      state->policy_name = name;
    }
    prepared.policy = state->policy.get();
  }
  return prepared;
}

bool has_node(const gpusched_state* state, size_t node) { return state && node < state->state.node_count(); }
bool has_gpu(const gpusched_state* state, size_t node, uint32_t gpu) {
  return has_node(state, node) && gpu < state->state.gpu_count(static_cast<gpusched::NodeId>(node));
}

// The state and node of an event; GPUSCHED_ERROR_INVALID_ARGUMENT for NULL or out of range.
gpusched::NodeId event_node(const gpusched_state* state, size_t node) {
  need(state, "state");
  if (node >= state->state.node_count())
    fail(GPUSCHED_ERROR_INVALID_ARGUMENT,
         fmt::format("node: {} is out of range ({} nodes)", node, state->state.node_count()));
  return static_cast<gpusched::NodeId>(node);
}
gpusched::GpuIndex event_gpu(const gpusched_state* state, gpusched::NodeId n, uint32_t gpu) {
  if (gpu >= state->state.gpu_count(n))
    fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("gpu: {} is out of range ({} GPUs on {})", gpu,
                                                      state->state.gpu_count(n), state->state.node_name(n)));
  return static_cast<gpusched::GpuIndex>(gpu);
}
void check(const gpusched::Status& s) {
  if (!s) fail(s.error());
}

// Slurm's JSON as the reader takes it (gpusched_state_from_slurm, gpusched_cycle_slurm).
std::vector<gpusched::io::slurm::Source> slurm_sources(const char* sinfo_json, const char* squeue_json) {
  need(sinfo_json, "sinfo_json");
  std::vector<gpusched::io::slurm::Source> sources = {{sinfo_json, "sinfo"}};
  if (squeue_json && *squeue_json) sources.push_back({squeue_json, "squeue"});
  return sources;
}

gpusched::io::slurm::Options slurm_options(unsigned flags) {
  gpusched::io::slurm::Options o;
  o.held = (flags & GPUSCHED_SLURM_PLAN_HELD) ? gpusched::io::slurm::Held::kPlan : gpusched::io::slurm::Held::kSkip;
  return o;
}

}  // namespace

extern "C" {

const char* gpusched_status_name(gpusched_status code) {
  switch (code) {
    case GPUSCHED_OK: return "ok";
    case GPUSCHED_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case GPUSCHED_ERROR_INVALID_INPUT: return "invalid_input";
    case GPUSCHED_ERROR_PARSE: return "parse";
    case GPUSCHED_ERROR_UNKNOWN_NAME: return "unknown_name";
    case GPUSCHED_ERROR_IO: return "io";
    case GPUSCHED_ERROR_LIMIT: return "limit";
    case GPUSCHED_ERROR_STATE: return "state";
    case GPUSCHED_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case GPUSCHED_ERROR_INTERNAL: return "internal";
    case GPUSCHED_ERROR_POLICY: return "policy";
  }
  return "unknown_status";
}

const char* gpusched_version(void) { return GPUSCHED_VERSION_STRING; }
int gpusched_c_api_version(void) { return GPUSCHED_C_API_VERSION; }

// ---- state ----

gpusched_status gpusched_state_from_json(const char* json_text, gpusched_state** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(json_text, "json_text");
    *out = state_from_text(json_text, "cluster").release();
  });
}

gpusched_status gpusched_state_from_file(const char* path, gpusched_state** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    const std::string text = read_whole_file(path);
    *out = state_from_text(text, path).release();
  });
}

gpusched_status gpusched_state_from_nodes(const gpusched_node* nodes, size_t count, gpusched_state** out,
                                          gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    if (count > 0) need(nodes, "nodes");
    gpusched::GpuModelRegistry registry = gpusched::GpuModelRegistry::builtin();
    // count = SIZE_MAX was an internal "vector::reserve"; a cluster's GPUs are bounded too.
    constexpr std::size_t kMaxNodes = std::size_t{1} << 24;
    if (count > kMaxNodes) fail(GPUSCHED_ERROR_LIMIT, fmt::format("count: {} nodes, more than {}", count, kMaxNodes));
    std::vector<gpusched::NodeSpec> specs;
    specs.reserve(count);
    std::size_t gpus = 0;
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < count; ++i) {
      const gpusched_node& n = nodes[i];
      const std::string path = fmt::format("nodes[{}]", i);
      if (n.name == nullptr || *n.name == '\0') fail(GPUSCHED_ERROR_INVALID_INPUT, path + ".name: expected a non-empty string");
      check_text(n.name, path + ".name");
      if (!names.insert(n.name).second)
        fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.name: duplicate node name \"{}\"", path, n.name));
      if (n.cpu_milli < 0) fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.cpu_milli: expected a non-negative integer, got {}", path, n.cpu_milli));
      if (n.memory_bytes < 0)
        fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.memory_bytes: expected a non-negative integer, got {}", path, n.memory_bytes));
      gpusched::NodeSpec spec;
      spec.name = n.name;
      spec.cpu = n.cpu_milli;
      spec.memory = n.memory_bytes;
      if (n.gpu_count > 0) {
        if (n.gpu_model == nullptr || *n.gpu_model == '\0')
          fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.gpu_model: needed with gpu_count {}", path, n.gpu_count));
        if (!registry.find(n.gpu_model))
          fail(GPUSCHED_ERROR_UNKNOWN_NAME, fmt::format("{}.gpu_model: unknown GPU model \"{}\"", path, n.gpu_model));
        if (n.gpu_count > 65535) fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.gpu_count: {} is over 65535", path, n.gpu_count));
        gpus += n.gpu_count;
        if (gpus > gpusched::kMaxClusterGpus)
          fail(GPUSCHED_ERROR_LIMIT, fmt::format("{}.gpu_count: more than the {} GPUs a cluster may have", path, gpusched::kMaxClusterGpus));
        spec.gpus.assign(n.gpu_count, gpusched::GpuSpec{n.gpu_model});
      }
      specs.push_back(std::move(spec));
    }
    *out = make_state(std::move(registry), gpusched::Cluster(std::move(specs)), "nodes").release();
  });
}

void gpusched_state_free(gpusched_state* state) { delete state; }

size_t gpusched_state_node_count(const gpusched_state* state) { return state ? state->state.node_count() : 0; }

const char* gpusched_state_node_name(const gpusched_state* state, size_t node) {
  return state && node < state->node_names.size() ? state->node_names[node].c_str() : nullptr;
}

uint32_t gpusched_state_gpu_count(const gpusched_state* state, size_t node) {
  return has_node(state, node) ? static_cast<uint32_t>(state->state.gpu_count(static_cast<gpusched::NodeId>(node))) : 0;
}

uint32_t gpusched_state_idle_gpus(const gpusched_state* state, size_t node) {
  return has_node(state, node) ? static_cast<uint32_t>(state->state.shares().idle_gpus(static_cast<gpusched::NodeId>(node))) : 0;
}

int64_t gpusched_state_free_gpu_milli(const gpusched_state* state, size_t node) {
  return has_node(state, node) ? state->state.shares().node_free_milli(static_cast<gpusched::NodeId>(node)) : 0;
}

int64_t gpusched_state_free_cpu_milli(const gpusched_state* state, size_t node) {
  return has_node(state, node) ? state->state.cpu_free(static_cast<gpusched::NodeId>(node)) : 0;
}

int gpusched_state_schedulable(const gpusched_state* state, size_t node) {
  return has_node(state, node) && state->state.schedulable(static_cast<gpusched::NodeId>(node)) ? 1 : 0;
}

int gpusched_state_healthy(const gpusched_state* state, size_t node) {
  return has_node(state, node) && state->state.healthy(static_cast<gpusched::NodeId>(node)) ? 1 : 0;
}

int gpusched_state_gpu_healthy(const gpusched_state* state, size_t node, uint32_t gpu) {
  return has_gpu(state, node, gpu) &&
                 state->state.gpu_healthy(static_cast<gpusched::NodeId>(node), static_cast<gpusched::GpuIndex>(gpu))
             ? 1
             : 0;
}

int gpusched_state_mig_mode(const gpusched_state* state, size_t node, uint32_t gpu) {
  return has_gpu(state, node, gpu) &&
                 state->state.mig().mode(static_cast<gpusched::NodeId>(node), static_cast<gpusched::GpuIndex>(gpu))
             ? 1
             : 0;
}

uint64_t gpusched_state_generation(const gpusched_state* state) { return state ? state->state.generation() : 0; }

// ---- cluster events ----

gpusched_status gpusched_state_cordon(gpusched_state* state, size_t node, int cordoned, gpusched_error* err) {
  return guarded(err, [&] {
    const gpusched::NodeId n = event_node(state, node);
    check(cordoned ? state->state.cordon(n) : state->state.uncordon(n));
  });
}

gpusched_status gpusched_state_set_node_health(gpusched_state* state, size_t node, int healthy,
                                               int64_t* held_gpu_milli, gpusched_error* err) {
  return guarded(err, [&] {
    const gpusched::NodeId n = event_node(state, node);
    if (healthy) {
      check(state->state.recover_node(n));
    } else {
      auto held = state->state.fail_node(n);
      if (!held) fail(held.error());
      if (held_gpu_milli) *held_gpu_milli = held->gpu_milli;
    }
  });
}

gpusched_status gpusched_state_set_gpu_health(gpusched_state* state, size_t node, uint32_t gpu, int healthy,
                                              gpusched_error* err) {
  return guarded(err, [&] {
    const gpusched::NodeId n = event_node(state, node);
    check(state->state.set_gpu_health(n, event_gpu(state, n, gpu), healthy != 0));
  });
}

gpusched_status gpusched_state_set_mig_mode(gpusched_state* state, size_t node, uint32_t gpu, int enabled,
                                            gpusched_error* err) {
  return guarded(err, [&] {
    const gpusched::NodeId n = event_node(state, node);
    check(state->state.set_mig_mode(n, event_gpu(state, n, gpu), enabled != 0));
  });
}

gpusched_status gpusched_state_set_label(gpusched_state* state, size_t node, const char* key, const char* value,
                                         gpusched_error* err) {
  return guarded(err, [&] {
    const gpusched::NodeId n = event_node(state, node);
    need(key, "key");
    check_text(key, "key");
    if (value) check_text(value, "value");
    check(value ? state->state.set_label(n, key, value) : state->state.remove_label(n, key));
  });
}

// ---- jobs ----

gpusched_status gpusched_jobs_from_json(const char* json_text, gpusched_jobs** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(json_text, "json_text");
    *out = jobs_from_text(json_text, "jobs").release();
  });
}

gpusched_status gpusched_jobs_from_file(const char* path, gpusched_jobs** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    const std::string text = read_whole_file(path);
    *out = jobs_from_text(text, path).release();
  });
}

gpusched_status gpusched_jobs_new(gpusched_jobs** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = new gpusched_jobs{};
  });
}

gpusched_status gpusched_jobs_add(gpusched_jobs* jobs, const gpusched_job_spec* spec, gpusched_error* err) {
  return guarded(err, [&] {
    need(jobs, "jobs");
    need(spec, "spec");
    const std::string path = fmt::format("jobs[{}]", jobs->doc.jobs.size());
    if (spec->name == nullptr || *spec->name == '\0') fail(GPUSCHED_ERROR_INVALID_INPUT, path + ".name: expected a non-empty string");
    check_text(spec->name, path + ".name");
    if (spec->queue) check_text(spec->queue, path + ".queue");
    if (spec->gpu_model) check_text(spec->gpu_model, path + ".gpu_model");
    for (const auto& j : jobs->doc.jobs)
      if (j.job_name == spec->name)
        fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.name: duplicate job name \"{}\"", path, spec->name));
    auto bad = [&](const char* field, std::int64_t v, const char* expected) {
      fail(GPUSCHED_ERROR_INVALID_INPUT, fmt::format("{}.{}: expected {}, got {}", path, field, expected, v));
    };
    if (spec->replicas < 1) bad("replicas", spec->replicas, "at least 1");
    if (spec->cpu_milli < 0) bad("cpu_milli", spec->cpu_milli, "a non-negative integer");
    if (spec->memory_bytes < 0) bad("memory_bytes", spec->memory_bytes, "a non-negative integer");
    if (spec->gpus < 0 || spec->gpus > 65535) bad("gpus", spec->gpus, "0..65535");
    if (spec->gpu_milli < 0 || spec->gpu_milli > gpusched::kMilliPerGpu) bad("gpu_milli", spec->gpu_milli, "0..1000 (0 = whole GPUs)");
    if (spec->gpu_milli > 0 && spec->gpu_milli < gpusched::kMilliPerGpu && spec->gpus != 1)
      bad("gpus", spec->gpus, fmt::format("1 with a GPU share of {} milli-GPU", spec->gpu_milli).c_str());
    gpusched::Job job;
    job.job_name = spec->name;
    job.queue_name = spec->queue && *spec->queue ? spec->queue : "default";
    job.job_priority = spec->priority;
    gpusched::TaskGroupSpec group;
    group.name = "main";
    group.replicas = spec->replicas;
    group.shape.cpu = spec->cpu_milli;
    group.shape.memory = spec->memory_bytes;
    group.shape.gpus = static_cast<gpusched::GpuCount>(spec->gpus);
    group.shape.gpu_milli = spec->gpus > 0 ? (spec->gpu_milli > 0 ? spec->gpu_milli : gpusched::kMilliPerGpu) : 0;
    if (spec->gpu_model && *spec->gpu_model) group.allowed_models.emplace_back(spec->gpu_model);
    job.groups.push_back(std::move(group));
    jobs->doc.explicit_priority.push_back(true);  // the spec's priority is the job's own
    jobs->doc.jobs.push_back(std::move(job));
  });
}

void gpusched_jobs_free(gpusched_jobs* jobs) { delete jobs; }

size_t gpusched_jobs_count(const gpusched_jobs* jobs) { return jobs ? jobs->doc.jobs.size() : 0; }

const char* gpusched_jobs_name(const gpusched_jobs* jobs, size_t index) {
  return jobs && index < jobs->doc.jobs.size() ? jobs->doc.jobs[index].job_name.c_str() : nullptr;
}

size_t gpusched_jobs_find(const gpusched_jobs* jobs, const char* name) {
  if (jobs == nullptr || name == nullptr) return static_cast<size_t>(-1);
  for (std::size_t i = 0; i < jobs->doc.jobs.size(); ++i)
    if (jobs->doc.jobs[i].job_name == name) return i;
  return static_cast<size_t>(-1);
}

// ---- placement ----

// ---- policies of the caller's (gpusched/c/policy.h) ----

gpusched_status gpusched_state_add_policy(gpusched_state* state, const gpusched_policy_def* policy, gpusched_error* err) {
  return guarded(err, [&] {
    need(state, "state");
    need(policy, "policy");
    if (gpusched::Status ok = gpusched::io::add_c_policy(state->policies, *policy, "policy"); !ok) fail(ok.error());
  });
}

gpusched_status gpusched_state_add_order(gpusched_state* state, const gpusched_order_def* order, gpusched_error* err) {
  return guarded(err, [&] {
    need(state, "state");
    need(order, "order");
    if (gpusched::Status ok = gpusched::io::add_c_order(state->orders, *order, "order"); !ok) fail(ok.error());
  });
}

gpusched_status gpusched_state_load_plugin(gpusched_state* state, const char* path, gpusched_error* err) {
  return guarded(err, [&] {
    need(state, "state");
    need(path, "path");
    if (gpusched::Status ok = gpusched::io::load_policy_plugin(state->policies, path, &state->orders); !ok)
      fail(ok.error());
  });
}

gpusched_status gpusched_place(gpusched_state* state, const gpusched_jobs* jobs, size_t index, const char* policy,
                               uint64_t seed, unsigned flags, gpusched_result** out, gpusched_error* err) {
  return guarded(err, [&] {
    Prepared p = prepare(state, jobs, index, policy, seed, out);
    gpusched::ClusterState& s = state->state;
    Undo undo(s);
    gpusched::JobPlacement placement = gpusched::place_job(s, p.job(), *p.policy);
    check_policy(state, *p.policy);
    auto result = make_result(s, p.job(), placement.verdict, placement.tasks,
                              placement.placed() ? std::string() : gpusched::describe(p.job(), placement),
                              placement.reasons, json());
    if (placement.placed() && !(flags & GPUSCHED_PLACE_DRY_RUN)) {
      undo.keep();
      hold(*result, *state, placement.tasks);
    }
    *out = result.release();
  });
}

gpusched_status gpusched_place_gang(gpusched_state* state, const gpusched_jobs* jobs, size_t index, const char* policy,
                                    uint64_t seed, unsigned flags, gpusched_result** out, gpusched_error* err) {
  return guarded(err, [&] {
    Prepared p = prepare(state, jobs, index, policy, seed, out);
    auto spec = gpusched::make_gang_spec(p.job());
    if (!spec) fail(spec.error(), fmt::format("jobs[{}]", index));
    gpusched::ClusterState& s = state->state;
    Undo undo(s);
    gpusched::GangOptions options;
    options.policy = p.policy;
    gpusched::GangResult g = gpusched::place_gang(s, *spec, options);
    check_policy(state, *p.policy);
    json counts = json::object();
    for (std::size_t k = 0; k < p.job().groups.size() && k < g.placed_per_group.size(); ++k)
      counts[p.job().groups[k].name] = g.placed_per_group[k];
    json extra{{"method", std::string(gpusched::method_name(g.method))}, {"placed", counts}, {"effort", g.effort_used}};
    if (g.undecided()) extra["undecided"] = true;
    if (!g.domain.empty()) extra["domain"] = g.domain;
    auto result = make_result(s, p.job(), g.verdict, g.tasks, gpusched::gang_message(*spec, g, s), g.reasons, std::move(extra));
    if (g.placed() && !(flags & GPUSCHED_PLACE_DRY_RUN)) {
      undo.keep();
      hold(*result, *state, g.tasks);
    }
    *out = result.release();
  });
}

gpusched_status gpusched_release(gpusched_state* state, gpusched_result* result, gpusched_error* err) {
  return guarded(err, [&] {
    if (!state) fail(GPUSCHED_ERROR_INVALID_ARGUMENT, "state: NULL");
    if (!result) fail(GPUSCHED_ERROR_INVALID_ARGUMENT, "result: NULL");
    if (result->held_by != state->state.instance_id())
      fail(GPUSCHED_ERROR_STATE,
           fmt::format("result: job \"{}\" holds nothing on this state (not placed, a dry run, already released, "
                       "or placed on another state)",
                       result->job));
    // All tasks or none: a refused release rolls the earlier ones back.
    gpusched::ClusterState& s = state->state;
    Undo undo(s);
    for (std::size_t i = 0; i < result->held.size(); ++i)
      if (gpusched::Status st = s.release_journaled(result->held[i]); !st)
        fail(st.error(), fmt::format("result: job \"{}\" task {}", result->job, i));
    undo.keep();
    result->held.clear();
    result->held_by = 0;
  });
}

gpusched_verdict gpusched_result_verdict(const gpusched_result* result) {
  return result ? result->verdict : GPUSCHED_INVALID;
}

size_t gpusched_result_task_count(const gpusched_result* result) { return result ? result->tasks.size() : 0; }

gpusched_status gpusched_result_task(const gpusched_result* result, size_t index, gpusched_task* out,
                                     gpusched_error* err) {
  return guarded(err, [&] {
    need(result, "result");
    need(out, "out");
    if (index >= result->tasks.size())
      fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("index: {} is out of range ({} tasks)", index, result->tasks.size()));
    fill_task(result->tasks[index], out);
  });
}

const char* gpusched_result_message(const gpusched_result* result) {
  if (result == nullptr) return nullptr;
  try {
    std::call_once(result->message_once, [&] {
      if (result->message.empty() && result->verdict == GPUSCHED_PLACED)
        result->message = fmt::format("placed: {} tasks", result->tasks.size());  // describe()'s words
    });
  } catch (...) {
    return nullptr;  // out of memory: no exception crosses into C
  }
  return result->message.c_str();
}
const char* gpusched_result_json(const gpusched_result* result) {
  if (result == nullptr) return nullptr;
  try {
    std::call_once(result->json_once, [&] { result->json = result_json(*result); });
  } catch (...) {
    return nullptr;  // out of memory: no exception crosses into C
  }
  return result->json.c_str();
}
void gpusched_result_free(gpusched_result* result) { delete result; }

// ---- fair share ----

gpusched_status gpusched_fairshare(const gpusched_state* state, const char* queues_json, const gpusched_jobs* jobs,
                                   const int64_t* now, gpusched_order** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(state, "state");
    need(queues_json, "queues_json");
    need(jobs, "jobs");
    auto run = gpusched::io::fairshare_plan(state->state, jobs->doc, queues_json,
                                            now ? std::optional<std::int64_t>(*now) : std::nullopt);
    if (!run) fail(run.error());
    auto order = std::make_unique<gpusched_order>();
    auto queue_name = [&](std::size_t q) { return q < run->queues.queues.size() ? run->queues.queues[q].name : std::string(); };
    for (const auto& a : run->plan.admitted) {
      order->admitted.push_back(a.job);
      order->admitted_queue.push_back(queue_name(a.queue));
    }
    for (std::size_t k = 0; k < run->plan.pending.size(); ++k) {
      order->pending.push_back(run->plan.pending[k].job);
      order->pending_reason.push_back(run->pending_reasons[k]);
    }
    order->json = gpusched::io::write_fairshare_json(*run);
    *out = order.release();
  });
}

size_t gpusched_order_admitted_count(const gpusched_order* order) { return order ? order->admitted.size() : 0; }
size_t gpusched_order_admitted_job(const gpusched_order* order, size_t k) {
  return order && k < order->admitted.size() ? order->admitted[k] : static_cast<size_t>(-1);
}
const char* gpusched_order_admitted_queue(const gpusched_order* order, size_t k) {
  return order && k < order->admitted_queue.size() ? order->admitted_queue[k].c_str() : nullptr;
}
size_t gpusched_order_pending_count(const gpusched_order* order) { return order ? order->pending.size() : 0; }
size_t gpusched_order_pending_job(const gpusched_order* order, size_t k) {
  return order && k < order->pending.size() ? order->pending[k] : static_cast<size_t>(-1);
}
const char* gpusched_order_pending_reason(const gpusched_order* order, size_t k) {
  return order && k < order->pending_reason.size() ? order->pending_reason[k].c_str() : nullptr;
}
const char* gpusched_order_json(const gpusched_order* order) { return order ? order->json.c_str() : nullptr; }
void gpusched_order_free(gpusched_order* order) { delete order; }

// ---- the scheduling cycle ----

gpusched_status gpusched_cycle(gpusched_state* state, const gpusched_jobs* jobs, const char* queues_json,
                               const char* running_json, int64_t now, const char* options_json, unsigned flags,
                               gpusched_cycle_result** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(state, "state");
    need(jobs, "jobs");
    auto document = gpusched::io::read_cycle_options_document(options_json ? options_json : "", "options");
    if (!document) fail(document.error());
    gpusched::scheduler::CycleOptions* options = &document->options;
    const auto policy = policy_named(state->policies, document->policy.c_str(), document->seed, [&] { return tasks_of(state->state, *jobs); });
    options->placement.policy = policy.get();
    const gpusched::scheduler::Orders orders = orders_named(state->orders, *document);
    const bool dry_run = (flags & GPUSCHED_CYCLE_DRY_RUN) || options->dry_run;
    options->dry_run = dry_run;  // a plan changes nothing; the running jobs' reservations are undone below
    const std::string_view queues = queues_json ? queues_json : "", running = running_json ? running_json : "";
    gpusched::ClusterState& s = state->state;
    // Before the running jobs are reserved: a refused time changes nothing, not even the generation.
    if (gpusched::Status st = gpusched::scheduler::check_cycle_time(now); !st) fail(st.error());
    Undo undo(s);  // the running jobs' reservations and the decisions, kept only when all went well
    auto inputs = gpusched::io::read_cycle_inputs(s, jobs->doc, queues, running);
    if (!inputs) fail(inputs.error());
    auto decisions = gpusched::io::run_cycle_on(s, *inputs, now, *options, queues.empty() ? "running" : "queues");
    if (!decisions) fail(decisions.error());
    const gpusched::io::CycleRun run{std::move(*inputs), std::move(*decisions)};
    auto result = make_cycle_result(s, run);
    if (!dry_run) undo.keep();
    *out = result.release();
  });
}

// ---- Slurm state in ----


gpusched_status gpusched_state_from_slurm(const char* sinfo_json, const char* squeue_json, unsigned flags,
                                          gpusched_state** state_out, gpusched_jobs** jobs_out, gpusched_error* err) {
  if (state_out) *state_out = nullptr;
  if (jobs_out) *jobs_out = nullptr;
  return guarded(err, [&] {
    auto input = gpusched::io::slurm::read(slurm_sources(sinfo_json, squeue_json), slurm_options(flags));
    if (!input) fail(input.error());
    auto state = make_state(std::move(input->registry), input->cluster, "sinfo");
    auto jobs = std::unique_ptr<gpusched_jobs>(new gpusched_jobs{gpusched::io::slurm::jobs_document(*input)});
    if (state_out) *state_out = state.release();
    if (jobs_out) *jobs_out = jobs.release();
  });
}

gpusched_status gpusched_cycle_slurm(const char* sinfo_json, const char* squeue_json, int64_t now, const char* options_json,
                                     unsigned flags, gpusched_cycle_result** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    auto document = gpusched::io::read_cycle_options_document(options_json ? options_json : "", "options");
    if (!document) fail(document.error());
    gpusched::scheduler::CycleOptions* options = &document->options;
    auto cycle = gpusched::io::read_cycle_inputs_slurm(slurm_sources(sinfo_json, squeue_json), slurm_options(flags));
    if (!cycle) fail(cycle.error());
    const auto policy = policy_named(gpusched::PolicyRegistry::with_builtins(), document->policy.c_str(), document->seed, [&] {
      TaskList tasks;
      for (const gpusched::scheduler::PendingJob& p : cycle->inputs.pending) gpusched::append_tasks(p.job, tasks);
      return tasks;
    });
    options->placement.policy = policy.get();
    const gpusched::scheduler::Orders orders = orders_named(gpusched::scheduler::OrderRegistry::with_builtins(), *document);
    auto decisions = gpusched::io::run_cycle_on(*cycle->state, cycle->inputs, now, *options, "squeue");
    if (!decisions) fail(decisions.error());
    const gpusched::io::CycleRun run{std::move(cycle->inputs), std::move(*decisions)};
    *out = make_cycle_result(*cycle->state, run).release();
  });
}

// ---- the scheduler session ----

gpusched_status gpusched_session_open(gpusched_state* state, const char* queues_json, const char* options_json,
                                      gpusched_session** out, gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(state, "state");
    auto document = gpusched::io::read_cycle_options_document(options_json ? options_json : "", "options");
    if (!document) fail(document.error());
    gpusched::scheduler::CycleOptions* options = &document->options;
    auto s = std::make_unique<gpusched_session>();
    s->policy = policy_named(state->policies, document->policy.c_str(), document->seed, nullptr);
    options->placement.policy = s->policy.get();
    s->orders = orders_named(state->orders, *document);
    s->mig_picker = document->mig_picker;
    gpusched::io::QueuesDocument queues;
    if (queues_json && *queues_json) {
      auto q = gpusched::io::read_cycle_queues(state->state, queues_json, "queues");
      if (!q) fail(q.error());
      queues = std::move(*q);
    }
    auto session = gpusched::io::CycleSession::open(state->state, std::move(queues), *options, "queues");
    if (!session) fail(session.error());
    s->state = state;
    s->session.emplace(std::move(*session));
    *out = s.release();
  });
}

gpusched_status gpusched_session_submit(gpusched_session* session, const gpusched_jobs* jobs, gpusched_error* err) {
  return guarded(err, [&] {
    need(session, "session");
    need(jobs, "jobs");
    auto pending = gpusched::io::pending_jobs(session->state->state, jobs->doc, session->session->queues(), "jobs");
    if (!pending) fail(pending.error());
    std::vector<std::string> names;
    for (const gpusched::scheduler::PendingJob& p : *pending) names.push_back(p.job.name);
    if (gpusched::Status st = session->session->submit(std::move(*pending), "jobs"); !st) fail(st.error());
    // The jobs took their places by the session's order: if it failed, they are withdrawn (all or
    // none) and the failure reported; the order is asked again next time.
    if (const gpusched::scheduler::JobOrder* o = session->orders.order.get(); o && !o->failure().empty()) {
      for (const std::string& name : names) (void)session->session->cancel(name);
      const std::string message = fmt::format("job order \"{}\" failed: {}", o->name(), o->failure());
      o->clear_failure();
      fail(GPUSCHED_ERROR_POLICY, message);
    }
  });
}

gpusched_status gpusched_session_add_running(gpusched_session* session, const char* running_json, gpusched_error* err) {
  return guarded(err, [&] {
    need(session, "session");
    need(running_json, "running_json");
    if (gpusched::Status st = session->session->add_running_json(running_json, "running"); !st) fail(st.error());
    session->state->state.commit();
  });
}

gpusched_status gpusched_session_finish(gpusched_session* session, const char* job, gpusched_error* err) {
  return guarded(err, [&] {
    need(session, "session");
    need(job, "job");
    if (gpusched::Status st = session->session->finish(job); !st) fail(st.error());
  });
}

gpusched_status gpusched_session_cancel(gpusched_session* session, const char* job, gpusched_error* err) {
  return guarded(err, [&] {
    need(session, "session");
    need(job, "job");
    if (gpusched::Status st = session->session->cancel(job); !st) fail(st.error());
  });
}

gpusched_status gpusched_session_cycle(gpusched_session* session, int64_t now, unsigned flags, gpusched_cycle_result** out,
                                       gpusched_error* err) {
  return guarded(err, [&] {
    need(out, "out");
    *out = nullptr;
    need(session, "session");
    const bool dry_run = (flags & GPUSCHED_CYCLE_DRY_RUN) != 0;
    const auto detail = (flags & GPUSCHED_CYCLE_ACTIONS_ONLY)     ? gpusched::scheduler::CycleDetail::kActions
                        : (flags & GPUSCHED_CYCLE_DECISIONS_ONLY) ? gpusched::scheduler::CycleDetail::kDecisions
                                                                  : gpusched::scheduler::CycleDetail::kFull;
    auto run = session->session->cycle(now, dry_run, detail);
    if (!run) {
      // A failed order is reported once: the session asks it again next cycle.
      if (session->orders.order) session->orders.order->clear_failure();
      if (session->orders.victim_order) session->orders.victim_order->clear_failure();
      fail(run.error());
    }
    auto result = make_cycle_result(session->state->state, *run);
    if (!dry_run) session->state->state.commit();
    *out = result.release();
  });
}

size_t gpusched_session_pending_count(const gpusched_session* session) {
  return session ? session->session->session().pending().size() : 0;
}
size_t gpusched_session_running_count(const gpusched_session* session) {
  return session ? session->session->session().running().size() : 0;
}
void gpusched_session_free(gpusched_session* session) { delete session; }

size_t gpusched_cycle_start_count(const gpusched_cycle_result* r) { return r ? r->starts.size() : 0; }
const char* gpusched_cycle_start_job(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->starts.size() ? r->starts[k].job.c_str() : nullptr;
}
size_t gpusched_cycle_start_index(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->starts.size() ? r->starts[k].index : static_cast<size_t>(-1);
}
size_t gpusched_cycle_start_task_count(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->starts.size() ? r->starts[k].tasks.size() : 0;
}
gpusched_status gpusched_cycle_start_task(const gpusched_cycle_result* r, size_t k, size_t index, gpusched_task* out,
                                          gpusched_error* err) {
  return guarded(err, [&] {
    need(r, "result");
    need(out, "out");
    if (k >= r->starts.size())
      fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("k: {} is out of range ({} starts)", k, r->starts.size()));
    const auto& tasks = r->starts[k].tasks;
    if (index >= tasks.size())
      fail(GPUSCHED_ERROR_INVALID_ARGUMENT, fmt::format("index: {} is out of range ({} tasks)", index, tasks.size()));
    fill_task(tasks[index], out);
  });
}

size_t gpusched_cycle_eviction_count(const gpusched_cycle_result* r) { return r ? r->evictions.size() : 0; }
const char* gpusched_cycle_eviction_job(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->evictions.size() ? r->evictions[k].job.c_str() : nullptr;
}
const char* gpusched_cycle_eviction_for(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->evictions.size() ? r->evictions[k].for_job.c_str() : nullptr;
}
const char* gpusched_cycle_eviction_reason(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->evictions.size() ? r->evictions[k].reason.c_str() : nullptr;
}
int gpusched_cycle_eviction_whole(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->evictions.size() && r->evictions[k].whole ? 1 : 0;
}
double gpusched_cycle_eviction_lost_gpu_seconds(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->evictions.size() ? r->evictions[k].lost_gpu_seconds : 0.0;
}

size_t gpusched_cycle_waiting_count(const gpusched_cycle_result* r) { return r ? r->waiting.size() : 0; }
const char* gpusched_cycle_waiting_job(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->waiting.size() ? r->waiting[k].job.c_str() : nullptr;
}
size_t gpusched_cycle_waiting_index(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->waiting.size() ? r->waiting[k].index : static_cast<size_t>(-1);
}
gpusched_verdict gpusched_cycle_waiting_verdict(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->waiting.size() ? r->waiting[k].verdict : GPUSCHED_INVALID;
}
const char* gpusched_cycle_waiting_message(const gpusched_cycle_result* r, size_t k) {
  return r && k < r->waiting.size() ? r->waiting[k].message.c_str() : nullptr;
}
const char* gpusched_cycle_json(const gpusched_cycle_result* r) { return r ? r->json.c_str() : nullptr; }
void gpusched_cycle_result_free(gpusched_cycle_result* r) { delete r; }

}  // extern "C"
