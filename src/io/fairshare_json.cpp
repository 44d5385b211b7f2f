// The queues document and the fair-share admission order (moved here from the `gpusched fairshare`
// command so the C API and the Python module read the same format with the same messages).
#include "gpusched/io/fairshare_json.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/cluster_json_detail.hpp"
#include "io/json_input.hpp"

namespace gpusched::io {
namespace {

using nlohmann::json;
using fairness::Amounts;
using fairness::ResourceSpace;

// Thrown inside this file only and turned into an Error at the public functions.
struct FairshareInputError {
  std::string message;
};
[[noreturn]] void reject(std::string message) { throw FairshareInputError{std::move(message)}; }

using detail::shown;

// `path` is a field's ("f.json: queues[0]") or the document's ("f.json: ", the file then the field).
void check_keys(const json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  const bool document = path.ends_with(": ");
  if (!obj.is_object())
    reject(fmt::format("{}: expected an object, got {}", document ? path.substr(0, path.size() - 2) : path, shown(obj)));
  for (const auto& [key, value] : obj.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      reject(fmt::format("{}{}{}: unknown field (known: {})", path, document ? "" : ".", detail::shown_key(key), fmt::join(known, ", ")));
}

std::int64_t read_int(const json& v, const std::string& path, std::int64_t lo = std::numeric_limits<std::int64_t>::min()) {
  if (!v.is_number_integer()) reject(fmt::format("{}: expected an integer, got {}", path, shown(v)));
  const auto x = v.get<std::int64_t>();
  if (x < lo) reject(fmt::format("{}: expected at least {}, got {}", path, lo, x));
  return x;
}

std::string read_string(const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty())
    reject(fmt::format("{}: expected a non-empty string, got {}", path, shown(v)));
  return v.get<std::string>();
}

// A quantity in the dimension's unit: cpu and GPUs as cores/GPUs (integers) or strings, memory bytes.
std::int64_t dim_quantity(const json& v, const std::string& path, Eigen::Index dim) {
  auto r = dim == ResourceSpace::kMemory ? detail::read_quantity(v, path, QuantityUnit::kBytes, 1)
                                         : detail::read_quantity(v, path, QuantityUnit::kMilli, 1000);
  if (!r) reject(r.error().message);
  return *r;
}

// {"cpu": Q, "memory": Q, "gpus": {"<model>": Q}} -> amounts (unlisted: `unlisted`). When "gpus" is
// present, models it does not list get `unlisted_gpu`.
Amounts read_resource_map(const json& v, const std::string& path, const ResourceSpace& space,
                          const GpuModelRegistry& reg, std::int64_t unlisted, std::int64_t unlisted_gpu,
                          const std::function<std::int64_t(const json&, const std::string&, Eigen::Index)>& read) {
  check_keys(v, path, {"cpu", "memory", "gpus"});
  Amounts out = Amounts::Constant(space.size(), unlisted);
  if (auto it = v.find("cpu"); it != v.end()) out[ResourceSpace::kCpu] = read(*it, path + ".cpu", ResourceSpace::kCpu);
  if (auto it = v.find("memory"); it != v.end())
    out[ResourceSpace::kMemory] = read(*it, path + ".memory", ResourceSpace::kMemory);
  if (auto it = v.find("gpus"); it != v.end()) {
    if (!it->is_object()) reject(fmt::format("{}.gpus: expected an object of GPU model -> amount, got {}", path, shown(*it)));
    for (Eigen::Index d = 2; d < space.size(); ++d) out[d] = unlisted_gpu;
    for (const auto& [model, q] : it->items()) {
      const std::string p = fmt::format("{}.gpus.{}", path, model);
      auto d = space.gpu_dim(fairness::canonical_model_name(reg, model));
      if (!d) reject(fmt::format("{}: unknown GPU model \"{}\" (the cluster has: {})", p, model, fmt::join(space.gpu_models, ", ")));
      out[*d] = read(q, p, *d);
    }
  }
  return out;
}

// priority_classes: name -> a 32-bit priority, as Kubernetes' PriorityClass values.
std::map<std::string, std::int64_t> read_priority_classes(const json& doc, const std::string& file) {
  std::map<std::string, std::int64_t> classes;
  if (auto it = doc.find("priority_classes"); it != doc.end()) {
    if (!it->is_object()) reject(fmt::format("{}priority_classes: expected an object of name -> integer, got {}", file, shown(*it)));
    // A PriorityClass's value is an int32 in Kubernetes (scheduling.k8s.io/v1), as is every job
    // priority here: a larger one wrapped when a job took it (INT64_MAX sorted last).
    for (const auto& [name, value] : it->items()) {
      const std::string path = fmt::format("{}priority_classes.{}", file, detail::shown_key(name));
      const std::int64_t v = read_int(value, path, std::numeric_limits<std::int32_t>::min());
      if (v > std::numeric_limits<std::int32_t>::max())
        reject(fmt::format("{}: expected a 32-bit priority (at most {}), got {}", path, std::numeric_limits<std::int32_t>::max(), v));
      classes[name] = v;
    }
  }
  return classes;
}

// aging: a pending job's priority grows by `step` every `interval` seconds, up to `max_boost`.
void read_aging(const json& doc, const std::string& file, QueuesDocument& out) {
  if (auto it = doc.find("aging"); it != doc.end()) {
    const std::string p = file + "aging";
    check_keys(*it, p, {"interval", "step", "max_boost"});
    if (auto i = it->find("interval"); i != it->end()) out.aging.interval = read_int(*i, p + ".interval", 1);
    else reject(fmt::format("{}.interval: missing (seconds per aging step)", p));
    if (auto s = it->find("step"); s != it->end()) out.aging.step = read_int(*s, p + ".step", 0);
    if (auto m = it->find("max_boost"); m != it->end()) out.aging.max_boost = read_int(*m, p + ".max_boost", 0);
  }
}

// One queue of "queues": its place in the tree, weight, cohort, GPU flavors, strategy, default
// priority class, quotas and limits, usage.
fairness::QueueConfig read_queue(const json& v, const std::string& p, const ResourceSpace& space, const GpuModelRegistry& reg,
                                 const std::map<std::string, std::int64_t>& classes, QueuesDocument& out) {
  check_keys(v, p, {"name", "parent", "weight", "cohort", "quotas", "borrowing_limits", "lending_limits", "flavors",
                    "strategy", "priority_class", "usage"});
  fairness::QueueConfig q;
  if (auto n = v.find("name"); n != v.end()) q.name = read_string(*n, p + ".name");
  else reject(fmt::format("{}.name: missing", p));
  if (auto n = v.find("parent"); n != v.end()) q.parent = read_string(*n, p + ".parent");
  if (auto w = v.find("weight"); w != v.end()) {
    if (!w->is_number() || !(w->get<double>() > 0))
      reject(fmt::format("{}.weight: expected a positive number, got {}", p, shown(*w)));
    q.weight = w->get<double>();
  }
  if (auto c = v.find("cohort"); c != v.end()) q.cohort = read_string(*c, p + ".cohort");
  if (auto f = v.find("flavors"); f != v.end()) {
    if (!f->is_array()) reject(fmt::format("{}.flavors: expected an array of GPU models, got {}", p, shown(*f)));
    for (std::size_t k = 0; k < f->size(); ++k) {
      const std::string fp = fmt::format("{}.flavors[{}]", p, k);
      const std::string model = fairness::canonical_model_name(reg, read_string((*f)[k], fp));
      if (!space.gpu_dim(model))
        reject(fmt::format("{}: unknown GPU model \"{}\" (the cluster has: {})", fp, (*f)[k].get<std::string>(),
                                     fmt::join(space.gpu_models, ", ")));
      q.flavor_order.push_back(model);
    }
  }
  if (auto s = v.find("strategy"); s != v.end()) {
    const std::string st = read_string(*s, p + ".strategy");
    if (st != "StrictFIFO" && st != "BestEffortFIFO")
      reject(fmt::format("{}.strategy: expected \"BestEffortFIFO\" or \"StrictFIFO\", got \"{}\"", p, st));
    q.strict_fifo = st == "StrictFIFO";
  }
  if (auto pc = v.find("priority_class"); pc != v.end()) {
    const std::string name = read_string(*pc, p + ".priority_class");
    auto it = classes.find(name);
    if (it == classes.end()) reject(fmt::format("{}.priority_class: unknown class \"{}\" (define it in priority_classes)", p, name));
    out.default_class[q.name] = name;
  }
  const auto read_amount = [](const json& x, const std::string& path, Eigen::Index d) { return dim_quantity(x, path, d); };
  const bool has_quota = v.contains("quotas");
  if (has_quota) {
    const json& quotas = v["quotas"];
    // Unlisted cpu/memory: unconstrained; with "gpus", unlisted models: no quota (0).
    q.nominal = fairness::queue_amounts(read_resource_map(quotas, p + ".quotas", space, reg, fairness::kNoLimit, 0, read_amount));
    if (!quotas.contains("gpus") && !q.flavor_order.empty())
      for (Eigen::Index d = 2; d < space.size(); ++d)
        if (std::find(q.flavor_order.begin(), q.flavor_order.end(), space.gpu_models[static_cast<std::size_t>(d - 2)]) ==
            q.flavor_order.end())
          q.nominal[static_cast<std::size_t>(d)] = 0;
    if (q.flavor_order.empty() && quotas.contains("gpus"))
      for (const auto& [model, unused] : quotas["gpus"].items()) q.flavor_order.push_back(fairness::canonical_model_name(reg, model));
  }
  for (auto [key, target] : {std::pair<const char*, fairness::QueueAmounts*>{"borrowing_limits", &q.borrowing_limit}, {"lending_limits", &q.lending_limit}}) {
    if (auto it = v.find(key); it != v.end()) {
      if (!has_quota) reject(fmt::format("{}.{}: needs \"quotas\" to limit", p, key));
      if (q.cohort.empty()) reject(fmt::format("{}.{}: only meaningful with a \"cohort\"", p, key));
      *target = fairness::queue_amounts(read_resource_map(*it, fmt::format("{}.{}", p, key), space, reg, fairness::kNoLimit, fairness::kNoLimit, read_amount));
    }
  }
  if (auto u = v.find("usage"); u != v.end())
    q.usage = fairness::queue_amounts(read_resource_map(*u, p + ".usage", space, reg, 0, 0, read_amount));
  return q;
}

QueuesDocument read_queues(const json& doc, const std::string& file, const ResourceSpace& space, const GpuModelRegistry& reg) {
  QueuesDocument out;
  check_keys(doc, file, {"queues", "priority_classes", "aging", "now"});
  const std::map<std::string, std::int64_t> classes = read_priority_classes(doc, file);
  out.classes = classes;
  read_aging(doc, file, out);
  if (auto it = doc.find("now"); it != doc.end()) {
    out.aging.now = read_int(*it, file + "now");
    out.now_given = true;
  }
  auto qs = doc.find("queues");
  if (qs == doc.end() || !qs->is_array() || qs->empty())
    reject(fmt::format("{}queues: expected a non-empty array of queues", file));
  for (std::size_t i = 0; i < qs->size(); ++i) {
    const std::string p = fmt::format("{}queues[{}]", file, i);
    out.queues.push_back(read_queue((*qs)[i], p, space, reg, classes, out));
  }
  return out;
}

json vector_json(const ResourceSpace& space, const Amounts& a) {
  json gpus = json::object();
  for (Eigen::Index d = 2; d < space.size(); ++d)
    if (a[d] != 0) gpus[space.gpu_models[static_cast<std::size_t>(d - 2)]] = static_cast<double>(a[d]) / 1000.0;
  return json{{"cpu", static_cast<double>(a[ResourceSpace::kCpu]) / 1000.0}, {"memory", a[ResourceSpace::kMemory]}, {"gpus", gpus}};
}

}  // namespace

Result<QueuesDocument> read_queues_json(std::string_view text, std::string_view source, const ResourceSpace& space,
                                        const GpuModelRegistry& registry) {
  auto doc = detail::parse_json(text, source);
  if (!doc) return doc.error();
  try {
    // Paths read "q.json: queues[0].weight" (file, then field), as every reader writes them.
    return read_queues(*doc, std::string(source) + ": ", space, registry);
  } catch (const FairshareInputError& e) {
    return Error(e.message);
  }
}

std::int64_t latest_submit_time(std::span<const Job> jobs) {
  std::int64_t latest = 0;
  for (const Job& j : jobs) latest = std::max(latest, j.job_submit_time);
  return latest;
}

Result<std::vector<fairness::WithAdmissionFields>> admission_jobs(const JobsDocument& jobs, QueuesDocument& queues,
                                                                  std::optional<std::int64_t> now,
                                                                  std::string_view queues_source,
                                                                  std::string_view jobs_source) {
  // The document's job model plus the two admission fields only fair share reads (submit_time and
  // priority_class); the library turns each into the planner's record.
  const fairness::PriorityClasses classes(queues.classes.begin(), queues.classes.end());
  std::vector<fairness::WithAdmissionFields> views;
  views.reserve(jobs.jobs.size());
  for (std::size_t j = 0; j < jobs.jobs.size(); ++j) {
    const Job& job = jobs.jobs[j];
    const bool explicit_priority = j < jobs.explicit_priority.size() && jobs.explicit_priority[j];
    std::string klass = job.job_priority_class;
    if (!klass.empty()) {
      const std::string path = fmt::format("{}: jobs[{}].priority_class", jobs_source, j);
      if (explicit_priority) return Error(fmt::format("{}: give \"priority\" or \"priority_class\", not both", path));
      if (!classes.contains(klass))
        return Error(fmt::format("{}: unknown class {} (define it in {} priority_classes)", path, detail::shown(klass),
                                 queues_source));
    } else if (!explicit_priority) {
      if (auto it = queues.default_class.find(job.queue_name); it != queues.default_class.end()) klass = it->second;
    }
    views.emplace_back(job, std::move(klass), job.job_submit_time);
  }
  if (now) queues.aging.now = *now;
  else if (!queues.now_given) queues.aging.now = latest_submit_time(jobs.jobs);
  return views;
}

Result<FairshareRun> plan_fairshare(const ClusterState& state, fairness::FairnessCluster cluster, QueuesDocument queues,
                                    std::span<const JobView* const> jobs, std::string_view queues_source,
                                    std::string_view jobs_source) {
  FairshareRun run{std::move(cluster.space), std::move(cluster.capacity), std::move(cluster.free), std::move(queues), {}, {}, {}};
  auto planner = fairness::FairSharePlanner::build(run.space, run.capacity, run.free, run.queues.queues, &state.registry());
  if (!planner) return Error(fmt::format("{}: {}", queues_source, planner.error().message), planner.error().code);
  const fairness::PriorityClasses classes(run.queues.classes.begin(), run.queues.classes.end());
  auto planned = fairness::plan_jobs(*planner, state, jobs, classes, run.queues.aging);
  if (!planned) return Error(fmt::format("{}: {}", jobs_source, planned.error().message), planned.error().code);
  run.pending = std::move(planned->jobs);
  run.plan = std::move(planned->plan);
  for (const auto& p : run.plan.pending) run.pending_reasons.push_back(planner->reason(run.plan, p, run.pending));
  return run;
}

Result<FairshareRun> fairshare_plan(const ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                                    std::optional<std::int64_t> now, std::string_view queues_source,
                                    std::string_view jobs_source, std::string_view cluster_source) {
  try {
    // Capacity and free resources come from the one cluster model (fairness/cluster_input.hpp).
    auto resources = fairness::fairness_cluster(state);
    if (!resources) return Error(fmt::format("{}: {}", cluster_source, resources.error().message), resources.error().code);
    auto queues_doc = detail::parse_json(queues_text, queues_source);
    if (!queues_doc) return queues_doc.error();
    QueuesDocument queues = read_queues(*queues_doc, std::string(queues_source) + ": ", resources->space, state.registry());
    auto views = admission_jobs(jobs, queues, now, queues_source, jobs_source);
    if (!views) return views.error();
    std::vector<const JobView*> job_views;
    for (const auto& v : *views) job_views.push_back(&v);
    return plan_fairshare(state, std::move(*resources), std::move(queues), job_views, queues_source, jobs_source);
  } catch (const FairshareInputError& e) {
    return Error(e.message);
  }
}

std::string write_fairshare_json(const FairshareRun& run, int indent) {
  const ResourceSpace& space = run.space;
  const auto& plan = run.plan;
  const auto& qf = run.queues;
  auto flavor = [&](int d) { return space.gpu_models[static_cast<std::size_t>(d - 2)]; };
  auto queue_name = [&](std::size_t q) { return q == SIZE_MAX ? std::string("-") : qf.queues[q].name; };
  json out;
  json admitted = json::array(), waiting = json::array(), queues = json::array();
  for (std::size_t k = 0; k < plan.admitted.size(); ++k) {
    const auto& a = plan.admitted[k];
    admitted.push_back({{"order", k + 1}, {"job", run.pending[a.job].name}, {"queue", queue_name(a.queue)},
                        {"flavor", a.gpu_dim < 0 ? json(nullptr) : json(flavor(a.gpu_dim))}, {"borrowed", a.borrowed},
                        {"priority", a.priority}, {"partial", a.partial}, {"replicas", a.replicas}});
  }
  for (std::size_t k = 0; k < plan.pending.size(); ++k) {
    const auto& p = plan.pending[k];
    waiting.push_back({{"job", run.pending[p.job].name}, {"queue", queue_name(p.queue)}, {"reason", run.pending_reasons[k]},
                       {"priority", p.priority}});
  }
  for (std::size_t q = 0; q < plan.queues.size(); ++q) {
    const auto& r = plan.queues[q];
    queues.push_back({{"name", r.name}, {"parent", qf.queues[q].parent.empty() ? json(nullptr) : json(qf.queues[q].parent)},
                      {"leaf", r.leaf}, {"weight", qf.queues[q].weight}, {"usage", vector_json(space, r.usage)},
                      {"borrowed", vector_json(space, r.borrowed)}, {"dominant_share", r.dominant_share},
                      {"fair_share", r.fair_share}, {"weighted_share", r.weighted_share}, {"admitted", r.admitted},
                      {"pending", r.pending}});
  }
  out["admitted"] = admitted;
  out["pending"] = waiting;
  out["queues"] = queues;
  out["capacity"] = vector_json(space, run.capacity);
  out["free_before"] = vector_json(space, run.free);
  return out.dump(detail::clamped_indent(indent), ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpusched::io
