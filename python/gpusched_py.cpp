// gpusched._core — the Python module's compiled half (pybind11). The pure-Python package
// (python/gpusched/__init__.py) builds on it: dicts and files in, dicts and DataFrames out.
//
// Everything here is a thin layer over the C++ library: the same JSON readers (so a dict is read
// exactly as a JSON file would be, with the same messages), the one ClusterState, the same policies.
// Errors become Python exceptions: bad input a ValueError whose text names the field and value; a
// job that cannot be placed is not an error (the Placement says why).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/io/slurm.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "gpusched/io/task_records.hpp"
#include "gpusched/mig/packer.hpp"
#include "io/json_input.hpp"
#include "io/text_input.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/sim/packing_experiment.hpp"
#include "gpusched/sim/sim_report.hpp"
#include "gpusched/sim/sweep.hpp"
#include "gpusched/topology/gpu_picker.hpp"
#include "gpusched/topology/node_topology.hpp"
#include "io/decision_json.hpp"
#include "py_policy.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace gpusched::python {
namespace {

// gpusched.FileError: a file that cannot be read (ErrorCode::kIo). An OSError, as Python's own
// file errors are, and a ValueError, as every input error of the module was before it (made in
// PYBIND11_MODULE; the class lives as long as the interpreter).
PyObject* file_error_class = nullptr;

[[noreturn]] void raise(const Error& e, std::string_view prefix = {}) {
  const std::string message = io::detail::tidy_message(prefix.empty() ? e.message : fmt::format("{}: {}", prefix, e.message));
  if (e.code == ErrorCode::kIo && file_error_class) {
    PyErr_SetString(file_error_class, message.c_str());
    throw py::error_already_set();
  }
  throw py::value_error(message);
}

// A cluster: the one ClusterState and the registry it reads GPU models through.
struct PyCluster {
  GpuModelRegistry registry;
  ClusterState state;
  // The last deterministic policy used, kept for the next call (its caches key on the state's
  // generation, so reuse never changes an answer); "random" is made afresh: its draws advance.
  std::string policy_name;
  std::unique_ptr<PlacementPolicy> policy;
  py::object policy_key;  // a gpusched.Policy the kept policy was made from (None: a built-in by name)
  std::uint64_t policy_seed = 0;
};

struct PyJobs {
  io::JobsDocument doc;
  // Kept between calls (benchmarks/README.md, "Bindings"): the job names' index, built on the first
  // lookup by name (the first job of a name wins, as the scan did), and each job compiled against
  // the last state it was placed on. A compiled job depends only on the state's layout (its GPU
  // model registry, labels, MIG tables: compile_job), so it is reused while the state is the same
  // object (instance_id) at the same layout_generation; any cluster event makes it afresh.
  mutable std::unordered_map<std::string, std::size_t> by_name{};
  struct Compiled {
    std::uint64_t state_id = 0, layout = 0;
    std::shared_ptr<const CompiledJob> job;
  };
  mutable std::vector<Compiled> compiled{};

  std::size_t index_of(const py::handle& job) const {
    if (PyLong_Check(job.ptr())) {  // an int (or a bool, as isinstance(job, int) is)
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(job.ptr(), &overflow);
      if (overflow != 0) throw py::index_error("job: index beyond 64 bits is out of range");
      if (i >= 0 && static_cast<unsigned long long>(i) < doc.jobs.size()) return static_cast<std::size_t>(i);
      throw py::index_error(fmt::format("job: index {} is out of range ({} jobs)", i, doc.jobs.size()));
    }
    if (!py::isinstance<py::str>(job))
      throw py::type_error(fmt::format("job: expected a job index (int) or name (str), got {}",
                                       py::str(py::type::of(job).attr("__name__")).cast<std::string>()));
    const auto name = job.cast<std::string>();
    if (by_name.empty())
      for (std::size_t i = 0; i < doc.jobs.size(); ++i) by_name.emplace(doc.jobs[i].job_name, i);
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
    throw py::key_error(fmt::format("job: no job named \"{}\"", name));
  }
};

// A decision. What Python reads is made on first access: the decision keeps the placement's tasks
// as the C++ call returned them (moved, not copied), the compiled job they name their groups by, and
// each task's node name (and MIG profile name) as the state had them when decided; the dicts of
// `tasks`, the JSON of `reasons` and the message of a placed job are built when asked for. So a
// decision costs the C++ call plus the crossing (benchmarks/README.md, "Bindings").
struct PyPlacement {
  std::shared_ptr<const CompiledJob> job;
  Verdict verdict = Verdict::kNotNow;
  std::string message;  // "" when placed (written on access)
  std::vector<TaskPlacement> tasks;
  std::vector<std::string> nodes;         // per task
  std::vector<std::string> mig_profiles;  // per task when some task is a MIG task, else empty
  std::vector<Reason> reasons;            // why not placed
  json extra;  // gang: method, placed per group, domain
  // The cluster its tasks stay reserved on (placed, not a dry run) until Cluster.release.
  std::uint64_t held_by = 0;  // the cluster's ClusterState::instance_id (never reused; 0: holds nothing)

  const std::string& job_name() const { return job->name; }

  py::list tasks_list() const {
    py::list out(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskPlacement& t = tasks[i];
      const TaskAssignment& a = t.assignment;
      py::dict d;
      d["group"] = t.group < job->groups.size() ? job->groups[t.group].name : std::string();
      d["replica"] = static_cast<std::int32_t>(t.replica);
      d["node"] = nodes[i];
      py::list gpus(a.gpus.size());
      for (std::size_t g = 0; g < a.gpus.size(); ++g) gpus[g] = py::int_(static_cast<std::uint32_t>(a.gpus[g]));
      d["gpus"] = std::move(gpus);
      d["gpu_milli"] = static_cast<std::int32_t>(a.gpu_milli);
      if (!mig_profiles.empty() && !mig_profiles[i].empty()) {
        d["mig_profile"] = mig_profiles[i];
        d["mig_start"] = static_cast<std::int32_t>(a.mig_start);
      }
      out[i] = std::move(d);
    }
    return out;
  }
};

std::unique_ptr<PyPlacement> make_placement(const ClusterState& state, std::shared_ptr<const CompiledJob> job,
                                            Verdict verdict, std::vector<TaskPlacement>&& tasks, std::string message,
                                            std::vector<Reason>&& reasons) {
  auto p = std::make_unique<PyPlacement>();
  p->job = std::move(job);
  p->verdict = verdict;
  p->message = std::move(message);
  if (verdict == Verdict::kPlaced) {
    p->tasks = std::move(tasks);
    p->nodes.reserve(p->tasks.size());
    for (std::size_t i = 0; i < p->tasks.size(); ++i) {
      const TaskAssignment& a = p->tasks[i].assignment;
      p->nodes.emplace_back(state.node_name(a.node));
      if (a.is_mig()) {
        // io::task_record names the instance's profile (the one place every front end does).
        p->mig_profiles.resize(p->tasks.size());
        p->mig_profiles[i] = io::task_record(state, a, {}).mig_profile;
      }
    }
  } else {
    p->reasons = std::move(reasons);
  }
  return p;
}

py::object to_python(const json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// A built-in policy by name; FGD-family policies get `tasks()` as their target workload.
std::unique_ptr<PlacementPolicy> policy_named(std::string_view name, std::uint64_t seed,
                                              const std::function<std::vector<TaskRequest>()>& tasks) {
  static const PolicyRegistry builtins = PolicyRegistry::with_builtins();
  auto policy = builtins.make_for(name, seed, tasks);
  if (!policy) throw py::value_error("policy: " + io::detail::tidy_message(policy.error().message));
  return std::move(*policy);
}

// Every task of the jobs that compile against the state (FGD's target workload).
std::vector<TaskRequest> tasks_of(const ClusterState& state, const io::JobsDocument& jobs) {
  std::vector<TaskRequest> out;
  for (const Job& job : jobs.jobs)
    if (auto c = compile_job(state, job)) append_tasks(*c, out);
  return out;
}

// The policy for one call: a name (a built-in) or a gpusched.Policy. The cluster keeps the last
// deterministic one (a Python policy by its object and seed, so its memo lasts across calls); "random"
// and the FGD family (their draws, the jobs' workload) are made for the call (owned by `fresh`).
const PlacementPolicy& policy_for(PyCluster& c, const py::handle& policy, std::uint64_t seed, const PyJobs& jobs,
                                  std::unique_ptr<PlacementPolicy>& fresh) {
  if (policy.is_none()) throw py::type_error("policy: expected a policy name or a policy, got None");
  if (!py::isinstance<py::str>(policy) && !py::isinstance<py::bytes>(policy)) {  // a name, as str or bytes
    if (!c.policy || !c.policy_key.is(policy) || c.policy_seed != seed) {
      c.policy = make_python_policy(*as_policy_spec(policy), seed);
      c.policy_key = py::reinterpret_borrow<py::object>(policy);
      c.policy_seed = seed;
      c.policy_name.clear();
    }
    return *c.policy;
  }
  const std::string name = policy.cast<std::string>();
  static const PolicyRegistry builtins = PolicyRegistry::with_builtins();
  const PolicyEntry* entry = builtins.find(name);
  if (name == "random" || (entry && entry->needs_workload)) {
    fresh = policy_named(name, seed, [&] { return tasks_of(c.state, jobs.doc); });
    return *fresh;
  }
  if (!c.policy || c.policy_name != name) {
    c.policy = policy_named(name, seed, {});
    c.policy_name = name;
    c.policy_key = py::object();
  }
  return *c.policy;
}

// After a call decided with `policy`: a failed Python policy is raised (gpusched.PolicyError) and,
// when the cluster kept it, dropped so that the next call starts afresh.
void check_policy(PyCluster& c, const PlacementPolicy& policy) {
  if (policy.failure().empty()) return;
  std::unique_ptr<PlacementPolicy> failed;
  if (c.policy.get() == &policy) {
    failed = std::move(c.policy);
    c.policy_name.clear();
    c.policy_key = py::object();
  }
  raise_policy_failure(policy);
}

// The job compiled against the cluster's state: kept on `jobs` while the state's layout stays
// (PyJobs::compiled); an error is not kept, so it is raised again on every call.
std::shared_ptr<const CompiledJob> compile(const PyCluster& c, const PyJobs& jobs, std::size_t index) {
  if (jobs.compiled.size() != jobs.doc.jobs.size()) jobs.compiled.resize(jobs.doc.jobs.size());
  PyJobs::Compiled& kept = jobs.compiled[index];
  if (kept.job && kept.state_id == c.state.instance_id() && kept.layout == c.state.layout_generation()) return kept.job;
  auto compiled = compile_job(c.state, jobs.doc.jobs[index]);
  if (!compiled) raise(compiled.error(), fmt::format("jobs[{}]", index));
  kept.job = std::make_shared<const CompiledJob>(std::move(*compiled));
  kept.state_id = c.state.instance_id();
  kept.layout = c.state.layout_generation();
  return kept.job;
}

// Rolls the state back unless kept, also when converting a result throws (a Python exception).
class Undo {
 public:
  explicit Undo(ClusterState& state) : state_(state), mark_(state.checkpoint()) {}
  Undo(const Undo&) = delete;
  Undo& operator=(const Undo&) = delete;
  ~Undo() {
    if (!kept_) state_.rollback(mark_);
  }
  void keep() {
    state_.commit();
    kept_ = true;
  }

 private:
  ClusterState& state_;
  ClusterState::Checkpoint mark_;
  bool kept_ = false;
};

std::unique_ptr<PyPlacement> place(PyCluster& c, const PyJobs& jobs, const py::handle& job, const py::handle& policy_arg,
                                   std::uint64_t seed, bool dry_run, std::string_view gpu_picker,
                                   std::string_view mig_placement = "first-fit") {
  const std::size_t index = jobs.index_of(job);
  std::shared_ptr<const CompiledJob> compiled = compile(c, jobs, index);
  std::unique_ptr<PlacementPolicy> fresh;
  const PlacementPolicy& policy = policy_for(c, policy_arg, seed, jobs, fresh);
  JobPlacementOptions options;
  std::optional<topology::TopologyGpuPicker> topo;
  if (gpu_picker == "topology") {
    topo.emplace();
    options.gpu_picker = &*topo;
  } else if (gpu_picker != "default") {
    throw py::value_error(fmt::format("gpu_picker: expected \"default\" or \"topology\", got {}", io::detail::shown(gpu_picker)));
  }
  if (mig_placement != "first-fit" && mig_placement != "frag-aware")
    throw py::value_error(fmt::format("mig_placement: expected \"first-fit\" or \"frag-aware\", got {}",
                                      io::detail::shown(mig_placement)));
  const std::shared_ptr<const GpuPicker> mig_picker = io::mig_picker_named(mig_placement);
  options.mig_picker = mig_picker.get();
  Undo undo(c.state);
  JobPlacement p = place_job(c.state, *compiled, policy, options);
  check_policy(c, policy);
  std::string message = p.placed() ? std::string() : describe(*compiled, p);
  const bool keep = p.placed() && !dry_run;
  auto out = make_placement(c.state, std::move(compiled), p.verdict, std::move(p.tasks), std::move(message), std::move(p.reasons));
  if (keep) {
    undo.keep();
    out->held_by = c.state.instance_id();
  }
  return out;
}

std::unique_ptr<PyPlacement> place_gang_job(PyCluster& c, const PyJobs& jobs, const py::handle& job,
                                            const py::handle& policy_arg, std::uint64_t seed, bool dry_run) {
  const std::size_t index = jobs.index_of(job);
  std::shared_ptr<const CompiledJob> compiled = compile(c, jobs, index);
  std::unique_ptr<PlacementPolicy> fresh;
  const PlacementPolicy& policy = policy_for(c, policy_arg, seed, jobs, fresh);
  auto spec = make_gang_spec(*compiled);
  if (!spec) raise(spec.error(), fmt::format("jobs[{}]", index));
  GangOptions options;
  options.policy = &policy;
  Undo undo(c.state);
  GangResult g = place_gang(c.state, *spec, options);
  check_policy(c, policy);
  json counts = json::object();
  for (std::size_t k = 0; k < compiled->groups.size() && k < g.placed_per_group.size(); ++k)
    counts[compiled->groups[k].name] = g.placed_per_group[k];
  json extra = json{{"method", std::string(method_name(g.method))}, {"placed_per_group", counts}, {"effort", g.effort_used}};
  if (g.undecided()) extra["undecided"] = true;
  if (!g.domain.empty()) extra["domain"] = g.domain;
  std::string message = gang_message(*spec, g, c.state);
  const bool keep = g.placed() && !dry_run;
  auto out = make_placement(c.state, std::move(compiled), g.verdict, std::move(g.tasks), std::move(message), std::move(g.reasons));
  out->extra = std::move(extra);
  if (keep) {
    undo.keep();
    out->held_by = c.state.instance_id();
  }
  return out;
}

// The job a placement placed finished: its tasks go back to the cluster, all or none, once.
void release(PyCluster& c, PyPlacement& p) {
  if (p.held_by != c.state.instance_id())
    throw py::value_error(fmt::format("placement: job \"{}\" holds nothing on this cluster (not placed, a dry run, "
                                      "already released, or placed on another cluster)",
                                      p.job->name));
  Undo undo(c.state);
  for (std::size_t i = 0; i < p.tasks.size(); ++i)
    if (Status st = c.state.release_journaled(p.tasks[i].assignment); !st)
      raise(st.error(), fmt::format("placement: job \"{}\" task {}", p.job->name, i));
  undo.keep();
  p.held_by = 0;
}

py::dict mig_pick(PyCluster& c, const std::string& profile, const std::string& policy, const std::string& mode,
                  bool apply) {
  const mig::MigCatalog& catalog = mig::MigCatalog::builtin();
  auto request = mig::MigRequest::from_name(catalog, profile);
  if (!request) raise(request.error(), "profile");
  if (mode != "dynamic" && mode != "static")
    throw py::value_error(fmt::format("mode: expected \"dynamic\" or \"static\", got \"{}\"", mode));
  const mig::MigMode m = mode == "static" ? mig::MigMode::kStatic : mig::MigMode::kDynamic;
  std::unique_ptr<mig::MigPlacer> placer;
  if (policy == "first-fit") placer = std::make_unique<mig::FirstFitPlacer>(m);
  else if (policy == "frag-aware") placer = std::make_unique<mig::FragAwarePlacer>(m, mig::MigDemand::uniform(catalog));
  else throw py::value_error(fmt::format("policy: expected \"frag-aware\" or \"first-fit\", got \"{}\"", policy));
  const mig::MigDecision d = placer->decide(c.state, *request);
  py::dict out;
  out["profile"] = profile;
  out["placed"] = d.placed();
  out["verdict"] = std::string(verdict_name(d.verdict));
  if (!d.placed()) {
    out["reason"] = mig::explain(c.state, *request, d);
    return out;
  }
  const mig::MigGpuTable& gpus = c.state.mig().table();
  const mig::MigGpuSpec& spec = gpus.spec_of(d.gpu);
  const auto& prof = spec.profiles[static_cast<std::size_t>(d.profile)];
  out["node"] = std::string(c.state.node_name(gpus.node_of(d.gpu)));
  out["gpu"] = gpus.local_index(d.gpu);
  out["model"] = spec.model;
  out["action"] = d.action == mig::MigAction::kCreate ? "create" : "use-idle";
  out["profile"] = prof.name;
  out["profile_id"] = prof.id;
  out["start"] = d.start;
  out["fragmentation_delta"] = d.score;
  if (apply) {
    if (auto st = mig::apply_decision(c.state, d); !st) raise(st.error());
    c.state.commit();
  }
  return out;
}

py::object number_or_none(double v) { return std::isfinite(v) ? py::object(py::float_(v)) : py::object(py::none()); }

py::dict topology_pick(const std::string& nvidia_smi_topo, int gpus, std::optional<std::vector<int>> free,
                       double message_bytes) {
  auto topo = io::parse_nvidia_smi_topo(nvidia_smi_topo);
  if (!topo) raise(topo.error(), "topology");
  if (gpus < 1) throw py::value_error(fmt::format("gpus: expected a positive count, got {}", gpus));
  if (!(message_bytes > 0)) throw py::value_error(fmt::format("message_bytes: expected a positive size, got {}", message_bytes));
  std::vector<std::uint16_t> candidates;
  if (!free) {
    for (std::size_t g = 0; g < topo->gpu_count(); ++g) candidates.push_back(static_cast<std::uint16_t>(g));
  } else {
    for (int g : *free) {
      if (g < 0 || static_cast<std::size_t>(g) >= topo->gpu_count())
        throw py::value_error(fmt::format("free: GPU {} is not on this node (GPUs 0..{})", g, topo->gpu_count() - 1));
      candidates.push_back(static_cast<std::uint16_t>(g));
    }
  }
  topology::PickOptions options;
  options.message_bytes = message_bytes;
  const topology::GpuPick p = topo->best_gpus(candidates, static_cast<std::size_t>(gpus), options);
  py::dict out;
  out["found"] = p.found();
  if (!p.found()) {
    out["reason"] = p.reason;
    return out;
  }
  out["gpus"] = std::vector<int>(p.gpus.begin(), p.gpus.end());
  out["exact"] = p.exact;
  out["message_bytes"] = message_bytes;
  out["span"] = topology::pair_link_name(p.score.span);
  out["bus_bandwidth_gbps"] = number_or_none(p.score.bus_bandwidth_gbps);
  out["latency_us"] = p.score.latency_us;
  out["allreduce_us"] = number_or_none(p.score.allreduce_us);
  out["ring_us"] = number_or_none(p.score.ring_us);
  out["tree_us"] = number_or_none(p.score.tree_us);
  return out;
}

std::string bench_packing(const std::string& nodes_csv, const std::string& pods_csv, const std::string& name,
                          const std::vector<py::object>& policy_args, std::vector<std::uint64_t> seeds, double ratio,
                          bool lower_bound, unsigned threads) {
  if (seeds.empty()) throw py::value_error("seeds: expected at least one seed");
  if (!(ratio > 0.0 && ratio <= 10.0)) throw py::value_error(fmt::format("ratio: expected a value in (0, 10], got {}", ratio));
  std::vector<std::string> policies;
  const auto first_exception = std::make_shared<py::object>();
  const PolicyRegistry registry = registry_with(policy_args, policies, first_exception);
  const bool python = registry.names(PolicySet::kUser).size() > 0;
  Result<sim::ExperimentReport> report = Error("not run");
  {
    // A long run: other Python threads go on, unless a policy is Python code (it needs the GIL; the
    // run is then serial).
    std::optional<py::gil_scoped_release> release;
    if (!python) release.emplace();
    auto nodes = io::read_alibaba_nodes(nodes_csv);
    if (!nodes) report = nodes.error();
    auto pods = nodes ? io::read_alibaba_pods(pods_csv) : Result<std::vector<io::TracePod>>(Error("not read"));
    if (nodes && !pods) report = pods.error();
    if (nodes && pods) {
      auto w = sim::make_trace_workload(*nodes, *pods, name);
      if (!w) {
        report = Error(fmt::format("{}: {}", w.error().field == "nodes" ? nodes_csv : pods_csv, w.error().message), w.error().code);
      } else {
        sim::ExperimentConfig cfg;
        cfg.policies = std::move(policies);
        cfg.seeds = std::move(seeds);
        cfg.target_ratio = ratio;
        cfg.lower_bound = lower_bound;
        cfg.threads = threads;
        cfg.registry = &registry;
        report = sim::run_experiment(*w, cfg);
      }
    }
  }
  if (!report && *first_exception) raise_policy_error(report.error().message, *first_exception);
  if (!report) raise(report.error());
  return sim::report_json(*report);
}

// One scheduling cycle (io::cycle_run): the `gpusched cycle --format json` document. Keeps the GIL:
// the cycle changes the cluster, which other Python threads may use.
// The placement policy of a cycle: the `policy` argument (a gpusched.Policy or a name), else the
// options' "policy" name, else best-fit.
std::unique_ptr<PlacementPolicy> cycle_policy(const py::object& policy, const io::CycleOptionsDocument& options,
                                              const std::function<std::vector<TaskRequest>()>& tasks) {
  if (!policy.is_none() && !options.policy.empty())
    throw py::value_error("policy: given twice (as the argument and in the options)");
  if (auto spec = as_policy_spec(policy)) return make_python_policy(*spec, options.seed);
  const std::string name = !policy.is_none() ? policy.cast<std::string>() : options.policy.empty() ? "best-fit" : options.policy;
  if (!tasks) {
    static const PolicyRegistry builtins = PolicyRegistry::with_builtins();
    if (const PolicyEntry* e = builtins.find(name); e && e->needs_workload)
      throw py::value_error(fmt::format("policy \"{}\" packs for the tasks it is given at once; a session gets its jobs "
                                        "one by one (use gpusched.cycle)", e->name));
  }
  return policy_named(name, options.seed, tasks);
}

// The orders of a cycle or a session: the arguments (names or functions), else the options' "order"
// and "victim_order" names, else the defaults.
struct PyOrders {
  std::unique_ptr<scheduler::JobOrder> order;
  std::unique_ptr<scheduler::VictimOrder> victim_order;
  void apply(scheduler::CycleOptions& o) const {
    o.order = order.get();
    o.preemption.victim_order = victim_order.get();
  }
  void raise_failure() const { raise_order_failure(order.get(), victim_order.get()); }
};

PyOrders cycle_orders(const py::object& order, const py::object& victim_order, const io::CycleOptionsDocument& d) {
  auto pick = [](const py::object& given, const std::string& named, const char* what) -> py::object {
    if (!given.is_none() && !named.empty())
      throw py::value_error(fmt::format("{}: given twice (as the argument and in the options)", what));
    return given.is_none() && !named.empty() ? py::str(named) : given;
  };
  PyOrders out;
  out.order = make_python_order(pick(order, d.order, "order"));
  out.victim_order = make_python_victim_order(pick(victim_order, d.victim_order, "victim_order"));
  return out;
}

std::string cycle_json(PyCluster& c, const PyJobs& jobs, const std::string& queues, const std::string& running,
                       std::int64_t now, const std::string& options, bool dry_run, const py::object& policy,
                       const py::object& order, const py::object& victim_order) {
  auto o = io::read_cycle_options_document(options, "options");
  if (!o) raise(o.error());
  o->options.dry_run = o->options.dry_run || dry_run;
  const auto placement = cycle_policy(policy, *o, [&] { return tasks_of(c.state, jobs.doc); });
  o->options.placement.policy = placement.get();
  const PyOrders orders = cycle_orders(order, victim_order, *o);
  orders.apply(o->options);
  auto run = io::cycle_run(c.state, jobs.doc, queues, running, now, o->options);
  raise_policy_failure(*placement);
  orders.raise_failure();
  if (!run) raise(run.error());
  return io::write_cycle_json(c.state, *run);
}

// A scheduler session (io::CycleSession, scheduler/session.hpp) over a cluster, kept across cycles:
// the Python object holds its cluster alive (py::keep_alive). Keeps the GIL like cycle_json.
struct PySession {
  PyCluster* cluster = nullptr;
  std::unique_ptr<PlacementPolicy> policy;  // every cycle's placement policy
  PyOrders orders;  // the order within queues and the victim order (None: the defaults)
  std::shared_ptr<const GpuPicker> mig_picker;  // the options' "mig_placement"
  std::optional<io::CycleSession> session;
};

PySession open_session(PyCluster& c, const std::string& queues, const std::string& options, const py::object& policy,
                       const py::object& order, const py::object& victim_order) {
  auto document = io::read_cycle_options_document(options, "options");
  if (!document) raise(document.error());
  PySession out;
  out.policy = cycle_policy(policy, *document, {});
  out.orders = cycle_orders(order, victim_order, *document);
  out.mig_picker = document->mig_picker;
  scheduler::CycleOptions* o = &document->options;
  o->placement.policy = out.policy.get();
  out.orders.apply(*o);
  io::QueuesDocument q;
  if (!queues.empty()) {
    auto read = io::read_cycle_queues(c.state, queues, "queues");
    if (!read) raise(read.error());
    q = std::move(*read);
  }
  auto session = io::CycleSession::open(c.state, std::move(q), *o, "queues");
  if (!session) raise(session.error());
  out.cluster = &c;
  out.session.emplace(std::move(*session));
  return out;
}

void session_submit(PySession& s, const PyJobs& jobs) {
  auto pending = io::pending_jobs(s.cluster->state, jobs.doc, s.session->queues(), "jobs");
  if (!pending) raise(pending.error());
  std::vector<std::string> names;
  for (const scheduler::PendingJob& p : *pending) names.push_back(p.job.name);
  const Status st = s.session->submit(std::move(*pending), "jobs");
  // The jobs took their places in the queues by the order: if it failed, they are withdrawn (all or
  // none) and the failure raised.
  if (st && s.orders.order && !s.orders.order->failure().empty())
    for (const std::string& name : names) (void)s.session->cancel(name);
  s.orders.raise_failure();
  if (!st) raise(st.error());
}

// `detail`: 0 full, 1 decisions only, 2 actions only (scheduler::CycleDetail, from Session.cycle's flags).
std::string session_cycle(PySession& s, std::int64_t now, bool dry_run, int detail) {
  const scheduler::CycleDetail d = detail == 2   ? scheduler::CycleDetail::kActions
                                   : detail == 1 ? scheduler::CycleDetail::kDecisions
                                                 : scheduler::CycleDetail::kFull;
  auto run = s.session->cycle(now, dry_run, d);
  raise_policy_failure(*s.policy);
  s.orders.raise_failure();
  if (!run) raise(run.error());
  if (!dry_run) s.cluster->state.commit();
  return io::write_cycle_json(s.cluster->state, *run);
}

std::string default_data_dir();

// FGD's target workload of a pod list (sim::make_trace_workload's), for policies written in Python.
py::list trace_target_workload(const std::string& nodes_csv, const std::string& pods_csv) {
  auto nodes = io::read_alibaba_nodes(nodes_csv);
  if (!nodes) raise(nodes.error());
  auto pods = io::read_alibaba_pods(pods_csv);
  if (!pods) raise(pods.error());
  auto w = sim::make_trace_workload(*nodes, *pods);
  if (!w) raise(w.error(), w.error().field == "nodes" ? nodes_csv : pods_csv);
  const GpuModelRegistry& models = w->initial.registry();
  py::list out;
  for (const TargetShape& s : w->target.shapes) {
    py::dict d;
    d["cpu_milli"] = s.cpu;
    d["gpus"] = s.gpus;
    d["gpu_milli"] = s.gpu_milli;
    if (s.models == kAnyGpuModel) {
      d["models"] = py::none();
    } else {
      py::list names;
      for (std::size_t m = 0; m < models.size(); ++m)
        if (s.models & model_bit(static_cast<GpuModelId>(m))) names.append(models.model(static_cast<GpuModelId>(m)).name);
      d["models"] = py::frozenset(names);
    }
    d["weight"] = s.weight;
    d["count"] = s.count;
    out.append(std::move(d));
  }
  return out;
}

// A simulation sweep (sim::run_sweep) and its report's JSON ({"sweep", "runs"}); the GIL is released
// while it runs.
// The orders of a sweep: names stay names; a Python function joins the built-ins as "python:NAME"
// (each run makes its own instance; the first exception any raises is kept in `sink`).
scheduler::OrderRegistry sweep_orders(sim::SweepOptions& o, const py::object& order, const py::object& victim_order,
                                      const std::shared_ptr<py::object>& sink) {
  scheduler::OrderRegistry orders = scheduler::OrderRegistry::with_builtins();
  auto take = [&](const py::object& given, std::string& name, bool victim) {
    if (given.is_none()) return;
    if (py::isinstance<py::str>(given)) {
      name = given.cast<std::string>();
      const auto* e = orders.find(name);
      if (!e || !(victim ? bool(e->victim_order) : bool(e->job_order)))
        throw py::value_error(victim ? "victim_order: " + orders.make_victim_order(name).error().message
                                     : "order: " + orders.make_job_order(name).error().message);
      return;
    }
    if (victim) (void)make_python_victim_order(given);  // TypeError for what is not a function
    else (void)make_python_order(given);
    scheduler::OrderEntry e;
    // Job and victim orders apart: two lambdas (both "<lambda>") must not clash.
    e.name = (victim ? "python-victims:" : "python:") +
             py::str(py::getattr(given, "__name__", py::str(victim ? "victim_order" : "order"))).cast<std::string>();
    e.summary = "a Python order";
    py::object fn = given;
    if (victim) e.victim_order = [fn, sink] { return make_python_victim_order(fn, sink); };
    else e.job_order = [fn, sink] { return make_python_order(fn, sink); };
    name = e.name;
    if (Status ok = orders.add(std::move(e)); !ok) throw py::value_error(ok.error().message);
  };
  take(order, o.order, false);
  take(victim_order, o.victim_order, true);
  return orders;
}

std::string simulate_json(std::vector<std::string> traces, std::vector<std::string> policies, std::vector<std::uint64_t> seeds,
                          std::map<std::string, std::string> documents, std::size_t nodes, std::int32_t gpus_per_node,
                          const std::string& model, std::int64_t checkpoint_interval, std::int64_t restart_cost,
                          std::int32_t queues, std::int32_t priorities, double estimate_error, double elastic,
                          double mtbf_hours, double mttr_hours, std::int64_t cycle_period, const py::object& placement,
                          const py::object& order, const py::object& victim_order) {
  if (traces.empty()) throw py::value_error("trace: expected at least one trace");
  if (policies.empty()) throw py::value_error("policies: expected at least one policy");
  if (seeds.empty()) throw py::value_error("seeds: expected at least one seed");
  auto positive = [](std::int64_t v, const char* name) {
    if (v < 1) throw py::value_error(fmt::format("{}: expected a positive integer, got {}", name, v));
  };
  auto non_negative = [](double v, const char* name) {
    if (!(v >= 0)) throw py::value_error(fmt::format("{}: expected a non-negative number, got {}", name, v));
  };
  positive(gpus_per_node, "gpus_per_node");
  positive(queues, "queues");
  positive(priorities, "priorities");
  non_negative(static_cast<double>(cycle_period), "cycle_period");
  non_negative(static_cast<double>(checkpoint_interval), "checkpoint_interval");
  non_negative(static_cast<double>(restart_cost), "restart_cost");
  non_negative(estimate_error, "estimate_error");
  non_negative(mtbf_hours, "mtbf_hours");
  if (!(mttr_hours > 0)) throw py::value_error(fmt::format("mttr_hours: expected a positive number, got {}", mttr_hours));
  if (!(elastic >= 0 && elastic <= 1)) throw py::value_error(fmt::format("elastic: expected a share in [0, 1], got {}", elastic));
  if (!GpuModelRegistry::builtin().find(model)) throw py::value_error(fmt::format("model: unknown GPU model \"{}\"", model));
  sim::SweepOptions o;
  o.traces = std::move(traces);
  o.policies = std::move(policies);
  o.seeds = std::move(seeds);
  o.documents = std::move(documents);
  o.nodes = nodes;
  o.gpus_per_node = gpus_per_node;
  o.model = model;
  o.checkpoint_interval = checkpoint_interval;
  o.restart_cost = restart_cost;
  o.queues = queues;
  o.priorities = priorities;
  o.estimate_error = estimate_error;
  o.elastic = elastic;
  o.mtbf_hours = mtbf_hours;
  o.mttr_hours = mttr_hours;
  o.cycle_period = cycle_period;
  o.data_dir = default_data_dir();
  std::vector<std::string> placement_name;
  const auto first_exception = std::make_shared<py::object>();
  const PolicyRegistry registry =
      placement.is_none() ? PolicyRegistry::with_builtins() : registry_with({placement}, placement_name, first_exception);
  const scheduler::OrderRegistry orders = sweep_orders(o, order, victim_order, first_exception);
  const bool python = registry.names(PolicySet::kUser).size() > 0 || orders.entries().size() >
                                                                          scheduler::OrderRegistry::with_builtins().entries().size();
  if (!placement_name.empty()) {
    o.placement = placement_name.front();
    if (!registry.find(o.placement)) throw py::value_error("placement: " + registry.make(o.placement).error().message);
  }
  o.registry = &registry;
  o.orders = &orders;
  Result<sim::SweepReport> report = Error("not run");
  {
    // A long run: other Python threads go on, unless the placement policy is Python code.
    std::optional<py::gil_scoped_release> release;
    if (!python) release.emplace();
    auto runs = sim::run_sweep(o);
    if (!runs) report = runs.error();
    else report = sim::sweep_report(sim::sweep_description(o), std::move(runs->records));
  }
  if (!report && *first_exception) raise_policy_error(report.error().message, *first_exception);
  if (!report) raise(report.error());
  return report->json;
}

// ---- Kubernetes objects (io/k8s.hpp, docs/kubernetes.md) ----

// The objects read (`sources`: (text, name) pairs, JSON or YAML; `topology_levels` empty: the
// reader's default) and the state of their nodes, running pods taken off; raises on bad input.
struct K8sRead {
  io::k8s::Input input;
  std::optional<ClusterState> state;
};
K8sRead read_k8s(const std::vector<std::pair<std::string, std::string>>& sources,
                 const std::vector<std::string>& topology_levels, const std::string& scheduler_name) {
  std::vector<io::k8s::Source> in;
  for (const auto& [text, name] : sources) in.push_back({text, name});
  io::k8s::Options o;
  o.scheduler_name = scheduler_name;
  o.add_topology_levels(topology_levels);
  auto input = io::k8s::read(in, o);
  if (!input) raise(input.error());
  auto state = ClusterState::build(input->cluster, input->registry);
  if (!state) raise(state.error(), "nodes");
  return {std::move(*input), std::move(*state)};
}

// The cluster, the pending jobs, and the reader's warnings.
py::tuple load_k8s(const std::vector<std::pair<std::string, std::string>>& sources,
                   const std::vector<std::string>& topology_levels, const std::string& scheduler_name) {
  K8sRead r = read_k8s(sources, topology_levels, scheduler_name);
  PyJobs jobs;
  jobs.doc.jobs = r.input.jobs;
  jobs.doc.explicit_priority.assign(r.input.jobs.size(), true);  // resolved from PriorityClasses
  py::list warnings;
  for (const auto& w : r.input.warnings) warnings.append(io::k8s::to_string(w));
  auto cluster = std::make_unique<PyCluster>(PyCluster{std::move(r.input.registry), std::move(*r.state), {}, {}, {}, 0});
  return py::make_tuple(py::cast(std::move(cluster)), py::cast(std::move(jobs)), warnings);
}

// The bindings document of `gpusched place --k8s --format json`.
// `policy`: a name or a policy written in Python (as place's).
std::string place_k8s(const std::vector<std::pair<std::string, std::string>>& sources, const py::object& policy,
                      std::uint64_t seed, const std::vector<std::string>& topology_levels,
                      const std::string& scheduler_name) {
  K8sRead r = read_k8s(sources, topology_levels, scheduler_name);
  std::unique_ptr<PlacementPolicy> p;
  if (auto spec = as_policy_spec(policy)) p = make_python_policy(*spec, seed);
  else p = policy_named(policy.is_none() ? std::string("best-fit") : policy.cast<std::string>(), seed, [&] {
    std::vector<TaskRequest> tasks;
    for (const Job& job : r.input.jobs)
      if (auto c = compile_job(*r.state, job)) append_tasks(*c, tasks);
    return tasks;
  });
  auto decided = io::k8s::decide(r.input, *r.state, *p);
  raise_policy_failure(*p);
  if (!decided) raise(decided.error());
  return io::k8s::bindings_json(r.input, *r.state, *decided);
}

// ---- Slurm's JSON (io/slurm.hpp, docs/slurm.md) ----

std::vector<io::slurm::Source> slurm_sources(const std::vector<std::pair<std::string, std::string>>& sources) {
  std::vector<io::slurm::Source> in;
  for (const auto& [text, name] : sources) in.push_back({text, name});
  return in;
}

io::slurm::Options slurm_options(bool plan_held) {
  io::slurm::Options o;
  o.held = plan_held ? io::slurm::Held::kPlan : io::slurm::Held::kSkip;
  return o;
}

// The cluster less the running jobs, the pending jobs in Slurm's order, the warnings, and the jobs not
// planned as (id, Slurm's reason).
py::tuple load_slurm(const std::vector<std::pair<std::string, std::string>>& sources, bool plan_held) {
  auto input = io::slurm::read(slurm_sources(sources), slurm_options(plan_held));
  if (!input) raise(input.error());
  auto state = ClusterState::build(input->cluster, input->registry);
  if (!state) raise(state.error(), "nodes");
  PyJobs jobs;
  jobs.doc = io::slurm::jobs_document(*input);
  py::list warnings, skipped;
  for (const auto& w : input->warnings) warnings.append(w);
  for (const auto& k : input->skipped) skipped.append(py::make_tuple(k.id, k.reason));
  auto cluster = std::make_unique<PyCluster>(PyCluster{std::move(input->registry), std::move(*state), {}, {}, {}, 0});
  return py::make_tuple(py::cast(std::move(cluster)), py::cast(std::move(jobs)), warnings, skipped);
}

// The document of `gpusched cycle --slurm --format json` (without the "slurm" notes: load_slurm has them).
std::string cycle_slurm_json(const std::vector<std::pair<std::string, std::string>>& sources, std::int64_t now,
                             const std::string& options_json, bool plan_held) {
  // The options as the C API's gpusched_cycle_slurm reads them: "policy", "seed", "order" and
  // "victim_order" by name besides the cycle's knobs.
  auto document = io::read_cycle_options_document(options_json, "options");
  if (!document) raise(document.error());
  auto cycle = io::read_cycle_inputs_slurm(slurm_sources(sources), slurm_options(plan_held));
  if (!cycle) raise(cycle.error());
  const auto placement = policy_named(document->policy.empty() ? "best-fit" : document->policy, document->seed, [&] {
    std::vector<TaskRequest> tasks;
    for (const scheduler::PendingJob& p : cycle->inputs.pending) append_tasks(p.job, tasks);
    return tasks;
  });
  document->options.placement.policy = placement.get();
  const PyOrders orders = cycle_orders(py::none(), py::none(), *document);
  orders.apply(document->options);
  auto decisions = io::run_cycle_on(*cycle->state, cycle->inputs, now, document->options, "squeue");
  orders.raise_failure();
  if (!decisions) raise(decisions.error());
  const io::CycleRun run{std::move(cycle->inputs), std::move(*decisions)};
  return io::write_cycle_json(*cycle->state, run);
}

std::string default_data_dir() {
  if (const char* env = std::getenv("GPUSCHED_DATA_DIR")) return env;
  // An installed wheel carries the data beside the package (setup.py: gpusched/data).
  try {
    const auto file = py::module_::import("gpusched").attr("__file__").cast<std::string>();
    const auto packaged = std::filesystem::path(file).parent_path() / "data";
    if (std::filesystem::is_directory(packaged)) return packaged.string();
  } catch (const std::exception&) {
    // not imported as a package (the module alone): the paths below
  }
  if (std::filesystem::exists(GPUSCHED_DATA_DIR)) return GPUSCHED_DATA_DIR;
  return GPUSCHED_INSTALLED_DATA_DIR;
}

// ---- Cluster.place's call path ----
//
// pybind11 2.10 calls a bound function through its generic dispatcher: the arguments packed into a
// tuple, each converted by a caster that looks its C++ type up by name in a hash map, two passes
// when a conversion is needed. For `place` that was most of what a call cost beyond the decision
// (benchmarks/README.md, "Bindings"). So `Cluster.place` is a METH_FASTCALL method: the arguments as
// Python passed them, the cluster and the jobs taken from their pybind11 instances directly when
// they are exactly of these types, the strings read in place. Anything else (another type, a
// subclass, a str given as bytes, an int for dry_run, an unknown keyword, any error raised) goes
// to the pybind11 binding of the same function (`place_bound`), which converts, checks and raises
// exactly as before; an error is raised by it again, as nothing `place` did before raising changed
// the cluster (Undo) beyond its caches.
PyTypeObject* cluster_type = nullptr;
PyTypeObject* jobs_type = nullptr;
PyObject* place_bound = nullptr;  // the pybind11 function (self, jobs, job, policy, seed, dry_run, gpu_picker)
std::string place_doc;

template <class T>
T* exact_instance(PyObject* o, PyTypeObject* type) {
  if (Py_TYPE(o) != type) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(o);
  if (!inst->simple_layout || !inst->simple_holder_constructed) return nullptr;
  return static_cast<T*>(inst->simple_value_holder[0]);
}

bool read_str(PyObject* o, std::string_view& out) {
  if (!PyUnicode_Check(o)) return false;
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(o, &size);
  if (!text) {
    PyErr_Clear();
    return false;
  }
  out = std::string_view(text, static_cast<std::size_t>(size));
  return true;
}

PyObject* place_slow(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  std::vector<PyObject*> all(static_cast<std::size_t>(total) + 1);
  all[0] = self;
  for (Py_ssize_t i = 0; i < total; ++i) all[static_cast<std::size_t>(i) + 1] = args[i];
  return PyObject_Vectorcall(place_bound, all.data(), static_cast<std::size_t>(nargs) + 1, kwnames);
}

PyObject* place_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static constexpr const char* names[] = {"jobs", "job", "policy", "seed", "dry_run", "gpu_picker"};
  PyObject* a[6] = {};
  if (nargs > 6) return place_slow(self, args, nargs, kwnames);
  for (Py_ssize_t i = 0; i < nargs; ++i) a[i] = args[i];
  if (kwnames) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      int slot = -1;
      for (int n = 0; n < 6 && slot < 0; ++n)
        if (PyUnicode_CompareWithASCIIString(key, names[n]) == 0) slot = n;
      if (slot < 0 || a[slot]) return place_slow(self, args, nargs, kwnames);
      a[slot] = args[nargs + k];
    }
  }
  PyCluster* cluster = exact_instance<PyCluster>(self, cluster_type);
  const PyJobs* jobs = a[0] ? exact_instance<PyJobs>(a[0], jobs_type) : nullptr;
  std::string_view policy_text = "best-fit", picker = "default";
  std::uint64_t seed = 42;
  bool dry_run = false;
  bool plain = cluster && jobs && a[1] && (!a[2] || read_str(a[2], policy_text)) && (!a[5] || read_str(a[5], picker)) &&
               (!a[4] || a[4] == Py_True || a[4] == Py_False);
  if (plain && a[3]) {
    plain = PyLong_CheckExact(a[3]);
    if (plain) {
      seed = PyLong_AsUnsignedLongLong(a[3]);
      if (seed == static_cast<std::uint64_t>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        plain = false;
      }
    }
  }
  if (!plain) return place_slow(self, args, nargs, kwnames);
  dry_run = a[4] == Py_True;
  std::unique_ptr<PyPlacement> result;
  try {
    const py::str policy(policy_text.data(), policy_text.size());  // a name: Python policies take the slow path
    result = place(*cluster, *jobs, a[1], policy, seed, dry_run, picker);
  } catch (...) {
    // Raised again through pybind11, which translates it as it always has.
    if (PyErr_Occurred()) PyErr_Clear();
    return place_slow(self, args, nargs, kwnames);
  }
  try {
    return py::cast(std::move(result)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef place_def = {"place", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&place_fast)),
                         METH_FASTCALL | METH_KEYWORDS, nullptr};

// Installs place_fast as Cluster.place over the pybind11 binding, which it keeps for the rest.
void install_place_fast(py::class_<PyCluster>& cls, py::class_<PyJobs>& jobs) {
  cluster_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  jobs_type = reinterpret_cast<PyTypeObject*>(jobs.ptr());
  py::object bound = cls.attr("place");  // the function itself (a pybind11 method, unbound)
  place_doc = py::str(bound.attr("__doc__")).cast<std::string>();
  place_def.ml_doc = place_doc.c_str();
  place_bound = bound.release().ptr();  // kept for the module's life
  py::object descr = py::reinterpret_steal<py::object>(PyDescr_NewMethod(cluster_type, &place_def));
  if (!descr) throw py::error_already_set();
  cls.attr("place") = descr;
}

// ---- cluster events (ClusterState's, docs/python.md) ----

// A node by index or name; raises IndexError / KeyError (a removed node is refused by the event).
NodeId node_arg(const PyCluster& c, const py::handle& node) {
  if (py::isinstance<py::str>(node)) {
    const std::string name = node.cast<std::string>();
    const NodeId n = c.state.find_node(name);
    if (n == kNoNode) throw py::key_error(fmt::format("node: no node named \"{}\"", name));
    return n;
  }
  // Python's rule for a wrong type is TypeError (a float or None was pybind11's RuntimeError).
  if (!PyLong_Check(node.ptr()))
    throw py::type_error(fmt::format("node: expected a node index (int) or name (str), got {}",
                                     py::str(py::type::of(node).attr("__name__")).cast<std::string>()));
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(node.ptr(), &overflow);
  if (overflow != 0 || i < 0 || static_cast<std::uint64_t>(i) >= c.state.node_count())
    throw py::index_error(fmt::format("node: {} is out of range ({} nodes)", i, c.state.node_count()));
  return static_cast<NodeId>(i);
}

// A GPU index of node `n`; raises IndexError (checked here: GpuIndex is narrower than a Python int).
GpuIndex gpu_arg(const PyCluster& c, NodeId n, std::size_t gpu) {
  if (gpu >= c.state.gpu_count(n))
    throw py::index_error(fmt::format("gpu: {} is out of range ({} GPUs)", gpu, c.state.gpu_count(n)));
  return static_cast<GpuIndex>(gpu);
}

void check(const Status& s) {
  if (!s) raise(s.error());
}

// What a failed node holds: events never release work (ClusterState's rule), the caller does.
py::dict usage_dict(const NodeUsage& u) {
  py::dict d;
  d["cpu_milli"] = u.cpu;
  d["memory"] = u.memory;
  d["gpu_milli"] = u.gpu_milli;
  d["busy_gpus"] = u.busy_gpus;
  return d;
}

void install_events(py::class_<PyCluster>& cls) {
  cls.def_property_readonly("generation", [](const PyCluster& c) { return c.state.generation(); },
                            "Grows with every change of the state (placements and events).")
      .def("cordon", [](PyCluster& c, const py::handle& node) { check(c.state.cordon(node_arg(c, node))); },
           py::arg("node"), "Marks a node unschedulable; its running work stays.")
      .def("uncordon", [](PyCluster& c, const py::handle& node) { check(c.state.uncordon(node_arg(c, node))); },
           py::arg("node"))
      .def("fail_node",
           [](PyCluster& c, const py::handle& node) {
             auto u = c.state.fail_node(node_arg(c, node));
             if (!u) raise(u.error());
             return usage_dict(*u);
           },
           py::arg("node"),
           "A node failure: it takes no new work; what runs on it stays reserved, as Kubernetes keeps a "
           "NotReady node's pods (returned: what it holds).")
      .def("recover_node", [](PyCluster& c, const py::handle& node) { check(c.state.recover_node(node_arg(c, node))); },
           py::arg("node"))
      .def("set_gpu_health",
           [](PyCluster& c, const py::handle& node, std::size_t gpu, bool healthy) {
             const NodeId n = node_arg(c, node);
             check(c.state.set_gpu_health(n, gpu_arg(c, n, gpu), healthy));
           },
           py::arg("node"), py::arg("gpu"), py::arg("healthy"))
      .def("set_mig_mode",
           [](PyCluster& c, const py::handle& node, std::size_t gpu, bool enabled) {
             const NodeId n = node_arg(c, node);
             check(c.state.set_mig_mode(n, gpu_arg(c, n, gpu), enabled));
           },
           py::arg("node"), py::arg("gpu"), py::arg("enabled"),
           "Turns MIG mode on (no instances yet) or off on an idle GPU, as `nvidia-smi -mig 1|0` does.")
      .def("set_label",
           [](PyCluster& c, const py::handle& node, const std::string& key, const std::string& value) {
             check(c.state.set_label(node_arg(c, node), key, value));
           },
           py::arg("node"), py::arg("key"), py::arg("value"))
      .def("remove_label",
           [](PyCluster& c, const py::handle& node, const std::string& key) {
             check(c.state.remove_label(node_arg(c, node), key));
           },
           py::arg("node"), py::arg("key"));
}

}  // namespace
}  // namespace gpusched::python

// One function on purpose: the module's binding table: one .def per name Python sees.
PYBIND11_MODULE(_core, m) {
  using namespace gpusched;
  using namespace gpusched::python;
  m.doc() = "gpusched's compiled core (use the `gpusched` package: it reads dicts and files)";
  m.attr("__version__") = GPUSCHED_VERSION_STRING;
  {
    py::tuple bases = py::make_tuple(py::handle(PyExc_OSError), py::handle(PyExc_ValueError));
    file_error_class = PyErr_NewExceptionWithDoc("gpusched.FileError",
                                                 "A file that cannot be read (missing, a directory, over the size bound): "
                                                 "an OSError and a ValueError.",
                                                 bases.ptr(), nullptr);
    if (!file_error_class) throw py::error_already_set();
    m.attr("FileError") = py::handle(file_error_class);
  }

  auto jobs_class = py::class_<PyJobs>(m, "Jobs", "Jobs read from a jobs document (docs/formats.md).")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& source) {
            auto doc = io::read_jobs_json(text, source);
            if (!doc) raise(doc.error());
            return PyJobs{std::move(*doc)};
          },
          py::arg("text"), py::arg("source") = "jobs", "Reads a jobs document from JSON text.")
      .def("__len__", [](const PyJobs& j) { return j.doc.jobs.size(); })
      .def_property_readonly(
          "names", [](const PyJobs& j) {
            std::vector<std::string> out;
            for (const auto& job : j.doc.jobs) out.push_back(job.job_name);
            return out;
          },
          "The job names in document order.")
      .def("__repr__", [](const PyJobs& j) { return fmt::format("<gpusched.Jobs: {} jobs>", j.doc.jobs.size()); });

  py::class_<PyPlacement>(m, "Placement",
                          "One decision: `placed`, `verdict` ('placed', 'not now', 'infeasible', 'invalid'), "
                          "`message`, `tasks` (node and GPUs per task), `reasons` (structured, with numbers).")
      .def_property_readonly("job", &PyPlacement::job_name)
      .def_property_readonly("placed", [](const PyPlacement& p) { return p.verdict == Verdict::kPlaced; })
      .def_property_readonly("verdict", [](const PyPlacement& p) { return std::string(verdict_name(p.verdict)); })
      .def_property_readonly("message", [](const PyPlacement& p) {
        // describe()'s words for a placement, written on request.
        return p.message.empty() && p.verdict == Verdict::kPlaced ? fmt::format("placed: {} tasks", p.tasks.size())
                                                                    : p.message;
      })
      .def_property_readonly("tasks", &PyPlacement::tasks_list,
                             "A list of dicts: group, replica, node, gpus, gpu_milli (and mig_profile, mig_start).")
      .def_property_readonly("reasons", [](const PyPlacement& p) { return to_python(io::detail::reasons_json(p.reasons, p.job.get())); },
                             "Why not placed: dicts with kind, text, unit, needed, available, count, group.")
      .def_property_readonly("gang", [](const PyPlacement& p) { return p.extra.is_null() ? py::object(py::none()) : to_python(p.extra); },
                             "For place_gang: method, placed_per_group, effort (and domain); else None.")
      .def("__repr__", [](const PyPlacement& p) {
        return fmt::format("<gpusched.Placement {}: {}>", p.job->name, p.verdict == Verdict::kPlaced ? fmt::format("{} tasks", p.tasks.size()) : p.message);
      });

  auto cluster_class = py::class_<PyCluster>(m, "Cluster",
                        "A cluster state (the library's ClusterState): read from a cluster document, changed by "
                        "placements, queried per node.")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& source) {
            auto doc = io::read_cluster_json(text, source);
            if (!doc) raise(doc.error());
            auto state = ClusterState::build(doc->cluster, doc->registry);
            if (!state) raise(state.error(), source);
            return std::make_unique<PyCluster>(PyCluster{std::move(doc->registry), std::move(*state), {}, {}, {}, 0});
          },
          py::arg("text"), py::arg("source") = "cluster", "Reads a cluster document from JSON text.")
      .def_property_readonly("node_count", [](const PyCluster& c) { return c.state.node_count(); })
      .def(
          "nodes",
          [](const PyCluster& c) {
            py::list out;
            for (std::size_t i = 0; i < c.state.node_count(); ++i) {
              const auto n = static_cast<NodeId>(i);
              py::dict d;
              d["name"] = std::string(c.state.node_name(n));
              d["cpu_milli"] = c.state.cpu_capacity(n);
              d["cpu_free_milli"] = c.state.cpu_free(n);
              d["memory"] = c.state.memory_capacity(n);
              d["memory_free"] = c.state.memory_free(n);
              d["gpus"] = c.state.gpu_count(n);
              d["idle_gpus"] = c.state.shares().idle_gpus(n);
              d["free_gpu_milli"] = c.state.shares().node_free_milli(n);
              std::vector<std::string> models;
              for (std::size_t g = 0; g < c.state.gpu_count(n); ++g)
                models.push_back(c.state.registry().model(c.state.gpu_model(n, static_cast<GpuIndex>(g))).name);
              d["gpu_models"] = models;
              d["schedulable"] = c.state.schedulable(n);
              d["healthy"] = c.state.healthy(n);
              std::vector<bool> gpu_healthy, mig_mode;
              for (std::size_t g = 0; g < c.state.gpu_count(n); ++g) {
                gpu_healthy.push_back(c.state.gpu_healthy(n, static_cast<GpuIndex>(g)));
                mig_mode.push_back(c.state.mig().mode(n, static_cast<GpuIndex>(g)));
              }
              d["gpu_healthy"] = gpu_healthy;
              d["mig_mode"] = mig_mode;
              out.append(std::move(d));
            }
            return out;
          },
          "One dict per node: capacity and free CPU, memory, GPUs, GPU models, flags, per-GPU health and MIG mode.")
      .def("place", &place, py::arg("jobs"), py::arg("job"), py::arg("policy") = "best-fit", py::arg("seed") = 42,
           py::arg("dry_run") = false, py::arg("gpu_picker") = "default", py::arg("mig_placement") = "first-fit",
           "Places one job (index or name) with a placement policy, all replicas or none, and keeps it on the "
           "cluster unless dry_run. gpu_picker='topology' picks GPU sets by the node's interconnect; "
           "mig_placement='frag-aware' places a MIG task where it keeps big profiles placeable (docs/mig.md).")
      .def("place_gang", &place_gang_job, py::arg("jobs"), py::arg("job"), py::arg("policy") = "best-fit",
           py::arg("seed") = 42, py::arg("dry_run") = false,
           "Decides one job as a gang (docs/gang.md): minimum members, topology, spread, anti-affinity.")
      .def(
          "to_json",
          [](const PyCluster& c, int indent) {
            if (indent < -1 || indent > 16)
              throw py::value_error(fmt::format("indent: expected -1 (one line) to 16 spaces, got {}", indent));
            std::string text = io::write_cluster_json(c.state, indent);
            if (text.empty()) throw std::bad_alloc();
            return text;
          },
          py::arg("indent") = -1,
          "The cluster document of the state as it is now (docs/formats.md, 'Cluster'): placements, events and "
          "MIG instances included; Cluster.from_json reads it back to the same state.")
      .def("release", &release, py::arg("placement"),
           "The job of a placement (from place or place_gang on this cluster, not a dry run) finished: gives "
           "its tasks back, all or none. Once; otherwise ValueError, nothing changed.")
      .def("mig_pick", &mig_pick, py::arg("profile"), py::arg("policy") = "frag-aware", py::arg("mode") = "dynamic",
           py::arg("apply") = true,
           "Picks a GPU and slot for one MIG instance of `profile` (e.g. '1g.10gb'), docs/mig.md; kept unless "
           "apply=False.")
      .def(
          "fairshare_json",
          [](const PyCluster& c, const std::string& queues, const PyJobs& jobs, std::optional<std::int64_t> now) {
            auto run = io::fairshare_plan(c.state, jobs.doc, queues, now);
            if (!run) raise(run.error());
            return io::write_fairshare_json(*run);
          },
          py::arg("queues"), py::arg("jobs"), py::arg("now") = py::none(),
          "The fair-share admission order as the JSON text of `gpusched fairshare --format json`.")
      .def("cycle_json", &cycle_json, py::arg("jobs"), py::arg("queues"), py::arg("running"), py::arg("now"),
           py::arg("options") = "", py::arg("dry_run") = false, py::arg("policy") = py::none(),
           py::arg("order") = py::none(), py::arg("victim_order") = py::none(),
           "One scheduling cycle (docs/cycle.md) as the JSON text of `gpusched cycle --format json`; the cluster "
           "keeps the running jobs and the decisions unless dry_run.");
  py::class_<PySession>(m, "_Session", "A scheduler session (docs/cycle.md, 'Sessions'); use gpusched.Session.")
      .def(py::init(&open_session), py::arg("cluster"), py::arg("queues"), py::arg("options"),
           py::arg("policy") = py::none(), py::arg("order") = py::none(), py::arg("victim_order") = py::none(),
           py::keep_alive<1, 2>())
      .def("submit", &session_submit, py::arg("jobs"))
      .def(
          "add_running",
          [](PySession& s, const std::string& text) {
            if (Status st = s.session->add_running_json(text, "running"); !st) raise(st.error());
            s.cluster->state.commit();
          },
          py::arg("running"))
      .def(
          "finish",
          [](PySession& s, const std::string& job) {
            if (Status st = s.session->finish(job); !st) raise(st.error());
          },
          py::arg("job"))
      .def(
          "cancel",
          [](PySession& s, const std::string& job) {
            if (Status st = s.session->cancel(job); !st) raise(st.error());
          },
          py::arg("job"))
      .def("cycle_json", &session_cycle, py::arg("now"), py::arg("dry_run"), py::arg("detail"))
      .def_property_readonly("pending", [](const PySession& s) {
        std::vector<std::string> out;
        for (const auto& p : s.session->session().pending()) out.push_back(p.job.name);
        return out;
      })
      .def_property_readonly("running", [](const PySession& s) {
        std::vector<std::string> out;
        for (const auto& r : s.session->session().running()) out.push_back(r.name);
        return out;
      });
  install_place_fast(cluster_class, jobs_class);
  install_events(cluster_class);

  m.def("policy_names", [] {
    std::vector<std::string> out;
    for (auto n : policy_names()) out.emplace_back(n);
    return out;
  }, "The placement policy names, in a stable order.");
  m.def("topology_pick", &topology_pick, py::arg("nvidia_smi_topo"), py::arg("gpus"), py::arg("free") = py::none(),
        py::arg("message_bytes") = 64.0 * 1024 * 1024,
        "The best `gpus` GPUs of one node, from `nvidia-smi topo -m` text (docs/topology.md).");
  m.def("bench_packing_json", &bench_packing, py::arg("nodes_csv"), py::arg("pods_csv"), py::arg("name"),
        py::arg("policies"), py::arg("seeds"), py::arg("ratio") = 1.3, py::arg("lower_bound") = true,
        py::arg("threads") = 0u, "The bench-packing experiment over one trace, as its JSON report.");
  m.def("simulate_json", &simulate_json, py::arg("traces"), py::arg("policies"), py::arg("seeds"), py::arg("documents"),
        py::arg("nodes"), py::arg("gpus_per_node"), py::arg("model"), py::arg("checkpoint_interval"),
        py::arg("restart_cost"), py::arg("queues"), py::arg("priorities"), py::arg("estimate_error"), py::arg("elastic"),
        py::arg("mtbf_hours"), py::arg("mttr_hours"), py::arg("cycle_period"), py::arg("placement") = py::none(),
        py::arg("order") = py::none(), py::arg("victim_order") = py::none(),
        "A simulation sweep (docs/simulate.md) as the JSON text of its report.");
  m.def("trace_target_workload", &trace_target_workload, py::arg("nodes_csv"), py::arg("pods_csv"),
        "FGD's target workload of an Alibaba pod list, as bench-packing computes it: one dict per task shape.");
  install_policies(m);
  m.def("default_data_dir", &default_data_dir, "Where the shipped traces are ($GPUSCHED_DATA_DIR first).");
  m.def("load_k8s", &load_k8s, py::arg("sources"), py::arg("topology_levels"), py::arg("scheduler_name"),
        "(Cluster, Jobs, warnings) from Kubernetes objects: (text, name) pairs of JSON or YAML.");
  m.def("load_slurm", &load_slurm, py::arg("sources"), py::arg("plan_held"),
        "(cluster, jobs, warnings, skipped) from Slurm's JSON (docs/slurm.md).");
  m.def("cycle_slurm_json", &cycle_slurm_json, py::arg("sources"), py::arg("now"), py::arg("options"), py::arg("plan_held"),
        "The document of `gpusched cycle --slurm --format json`.");
  m.def("place_k8s_json", &place_k8s, py::arg("sources"), py::arg("policy"), py::arg("seed"),
        py::arg("topology_levels"), py::arg("scheduler_name"),
        "The bindings document of `gpusched place --k8s --format json`.");
}
