#include "gpusched/io/cluster_json.hpp"

#include "io/cluster_json_detail.hpp"
#include "io/gang_json.hpp"
#include "io/json_input.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <new>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpusched/cluster/state_view.hpp"
#include "gpusched/core/mig_profiles.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"

namespace gpusched::io {
namespace {

using detail::read_gang_constraints;
using detail::read_quantity;

using json = nlohmann::json;

// Errors are thrown inside this file only, as the shortest way out of a deep parse, and turned into
// an Error value at the public entry points.
struct ParseError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw ParseError{std::move(message)}; }

using detail::shown;

void check_keys(const json& obj, std::string_view path, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (auto k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
      fail(fmt::format("{}.{}: unknown field (known: {})", path, detail::shown_key(key), list));
    }
  }
}

const json& require_object(const json& v, std::string_view path) {
  if (!v.is_object()) fail(fmt::format("{}: expected an object, got {}", path, shown(v)));
  return v;
}

const json* find(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string read_string(const json& v, std::string_view path, bool allow_empty = false) {
  if (!v.is_string()) fail(fmt::format("{}: expected a string, got {}", path, shown(v)));
  std::string s = v.get<std::string>();
  if (s.empty() && !allow_empty) fail(fmt::format("{}: must not be empty", path));
  // Every string of these formats is a name, a label or a model: printed in tables and explanations,
  // where a NUL byte cuts a row and a newline forges one (docs/formats.md, "Every reader").
  if (auto st = detail::check_name(s, path); !st) fail(st.error().message);
  return s;
}

bool read_bool(const json& v, std::string_view path) {
  if (!v.is_boolean()) fail(fmt::format("{}: expected true or false, got {}", path, shown(v)));
  return v.get<bool>();
}

std::int64_t read_int(const json& v, std::string_view path, std::int64_t min, std::int64_t max) {
  if (v.is_string()) {
    auto q = parse_quantity(v.get<std::string>(), QuantityUnit::kCount);
    if (!q) fail(fmt::format("{}: {}", path, q.error().message));
    if (*q < min || *q > max) fail(fmt::format("{}: expected an integer in {}..{}, got {}", path, min, max, *q));
    return *q;
  }
  if (!v.is_number_integer()) {
    fail(fmt::format("{}: expected {} integer, got {}", path, min >= 0 ? "a non-negative" : "an", shown(v)));
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    fail(fmt::format("{}: expected an integer in {}..{}, got {}", path, min, max, shown(v)));
  const std::int64_t x = v.get<std::int64_t>();
  if (x < min) {
    if (min == 0) fail(fmt::format("{}: expected a non-negative integer, got {}", path, x));
    fail(fmt::format("{}: expected an integer in {}..{}, got {}", path, min, max, x));
  }
  if (x > max) fail(fmt::format("{}: expected an integer in {}..{}, got {}", path, min, max, x));
  return x;
}

std::int64_t quantity(const json& v, std::string_view path, QuantityUnit unit, std::int64_t integer_scale) {
  auto r = read_quantity(v, path, unit, integer_scale);
  if (!r) fail(r.error().message);
  return *r;
}

std::vector<std::pair<std::string, std::string>> read_string_map(const json& v, std::string_view path) {
  require_object(v, path);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : v.items()) {
    if (key.empty()) fail(fmt::format("{}: empty key", path));
    // A key is a name too (a label key with a newline was accepted, its value refused).
    if (auto ok = detail::check_name(key, fmt::format("{}.{}", path, detail::shown_key(key))); !ok) fail(ok.error().message);
    out.emplace_back(key, read_string(value, fmt::format("{}.{}", path, detail::shown_key(key)), true));
  }
  return out;
}

GpuModel read_gpu_model(const json& v, const std::string& path) {
  require_object(v, path);
  check_keys(v, path, {"name", "aliases", "memory", "mig", "source"});
  GpuModel m;
  const json* name = find(v, "name");
  if (!name) fail(fmt::format("{}.name: missing", path));
  m.name = read_string(*name, path + ".name");
  if (const json* a = find(v, "aliases")) {
    if (!a->is_array()) fail(fmt::format("{}.aliases: expected an array of strings, got {}", path, shown(*a)));
    for (std::size_t i = 0; i < a->size(); ++i)
      m.aliases.push_back(read_string((*a)[i], fmt::format("{}.aliases[{}]", path, i)));
  }
  if (const json* mem = find(v, "memory")) m.memory = quantity(*mem, path + ".memory", QuantityUnit::kBytes, 1);
  if (const json* mig = find(v, "mig")) m.mig_capable = read_bool(*mig, path + ".mig");
  if (const json* src = find(v, "source")) m.source = read_string(*src, path + ".source", true);
  return m;
}

// A GPU's "mig" object (docs/formats.md, "MIG"): present = MIG mode on; "instances" lists its GPU
// instances, each a profile by name ("3g.20gb", resolved by geometry on the GPU's model) or by NVML
// "profile_id", a "start" slice and "busy". The layout itself (overlaps, placements, limits) is
// validated when the state is built, against the same tables. "fixed": true says the instances are
// created outside the scheduler only (GpuInfo::mig_layout_fixed; what the Kubernetes reader sets).
void read_mig(const json& v, const std::string& path, GpuSpec& gpu, const GpuModelRegistry& registry) {
  require_object(v, path);
  check_keys(v, path, {"instances", "fixed"});
  gpu.mig_mode = true;
  if (const json* f = find(v, "fixed")) gpu.mig_layout_fixed = read_bool(*f, path + ".fixed");
  const auto model_id = registry.find(gpu.model);
  const auto mig_model = model_id ? mig::MigCatalog::builtin().find(registry.model(*model_id).name) : std::nullopt;
  if (!mig_model)
    fail(fmt::format("{}: GPU model \"{}\" has no MIG profile table (not MIG-capable)", path, gpu.model));
  const mig::MigGpuSpec& spec = mig::MigCatalog::builtin().spec(*mig_model);
  const json* instances = find(v, "instances");
  if (!instances) return;
  if (!instances->is_array()) fail(fmt::format("{}.instances: expected an array, got {}", path, shown(*instances)));
  if (instances->size() > static_cast<std::size_t>(mig::kMaxInstances))
    fail(fmt::format("{}.instances: at most {} instances, got {}", path, mig::kMaxInstances, instances->size()));
  for (std::size_t i = 0; i < instances->size(); ++i) {
    const std::string ip = fmt::format("{}.instances[{}]", path, i);
    const json& iv = require_object((*instances)[i], ip);
    check_keys(iv, ip, {"profile", "profile_id", "start", "busy"});
    MigInstanceInfo inst;
    const json* name = find(iv, "profile");
    const json* id = find(iv, "profile_id");
    if (!name && !id) fail(fmt::format("{}.profile: missing (or give profile_id)", ip));
    if (id) {
      inst.profile_id = static_cast<std::uint32_t>(read_int(*id, ip + ".profile_id", 0, 1 << 20));
      if (spec.find_id(inst.profile_id) < 0)
        fail(fmt::format("{}.profile_id: {} is not a profile of {}", ip, inst.profile_id, spec.model));
    }
    if (name) {
      const std::string text = read_string(*name, ip + ".profile");
      const auto geometry = mig::parse_profile_name(text);
      if (!geometry) fail(fmt::format("{}.profile: \"{}\" is not a MIG profile name (<N>g.<M>gb[+me])", ip, text));
      const int p = mig::match_profile(spec, *geometry);
      if (p < 0) fail(fmt::format("{}.profile: \"{}\" is not a profile of {}", ip, text, spec.model));
      const std::uint32_t by_name = spec.profiles[static_cast<std::size_t>(p)].id;
      if (id && by_name != inst.profile_id)
        fail(fmt::format("{}.profile_id: {} contradicts profile \"{}\" (ID {} on {})", ip, inst.profile_id, text,
                         by_name, spec.model));
      inst.profile_id = by_name;
    }
    const json* start = find(iv, "start");
    if (!start) fail(fmt::format("{}.start: missing", ip));
    inst.start = static_cast<std::uint8_t>(read_int(*start, ip + ".start", 0, mig::kMaxSlots - 1));
    if (const json* b = find(iv, "busy")) inst.busy = read_bool(*b, ip + ".busy");
    gpu.mig_instances.push_back(inst);
  }
}

// A node's `nvidia-smi topo -m` output: the text, or its lines as an array of strings (easier to
// read in a JSON file). Read by the same reader as the tool's topology files (nvidia_smi_topo.hpp).
NodeInterconnect read_topo_text(const json& v, const std::string& path) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) fail(fmt::format("{}[{}]: expected a line of text, got {}", path, i, shown(v[i])));
      text += v[i].get<std::string>();
      text += '\n';
    }
  } else {
    fail(fmt::format("{}: expected the text of `nvidia-smi topo -m` (a string or an array of lines), got {}", path, shown(v)));
  }
  auto ic = read_nvidia_smi_interconnect(text);
  if (!ic) fail(fmt::format("{}: {}", path, ic.error().message));
  return std::move(*ic);
}

// `gpus_before`: the GPUs of the nodes read before this one (the cluster's bound, kMaxClusterGpus).
NodeSpec read_node(const json& v, const std::string& path, const GpuModelRegistry& registry, std::size_t gpus_before) {
  require_object(v, path);
  check_keys(v, path, {"name", "cpu", "memory", "cpu_used", "memory_used", "gpus", "gpu_model", "labels",
                       "schedulable", "healthy", "nvidia_smi_topo"});
  NodeSpec node;
  const json* name = find(v, "name");
  if (!name) fail(fmt::format("{}.name: missing", path));
  node.name = read_string(*name, path + ".name");
  const json* cpu = find(v, "cpu");
  if (!cpu) fail(fmt::format("{}.cpu: missing", path));
  node.cpu = quantity(*cpu, path + ".cpu", QuantityUnit::kMilli, kMilliPerCpu);
  const json* mem = find(v, "memory");
  if (!mem) fail(fmt::format("{}.memory: missing", path));
  node.memory = quantity(*mem, path + ".memory", QuantityUnit::kBytes, 1);
  if (const json* u = find(v, "cpu_used")) node.cpu_used = quantity(*u, path + ".cpu_used", QuantityUnit::kMilli, kMilliPerCpu);
  if (const json* u = find(v, "memory_used")) node.memory_used = quantity(*u, path + ".memory_used", QuantityUnit::kBytes, 1);
  if (node.cpu_used > node.cpu)
    fail(fmt::format("{}.cpu_used: {}m exceeds the node's cpu {}m", path, node.cpu_used, node.cpu));
  if (node.memory_used > node.memory)
    fail(fmt::format("{}.memory_used: {} exceeds the node's memory {}", path, node.memory_used, node.memory));

  std::string default_model;
  if (const json* m = find(v, "gpu_model")) {
    default_model = read_string(*m, path + ".gpu_model");
    if (!registry.find(default_model))
      fail(fmt::format("{}.gpu_model: unknown GPU model \"{}\" (define it in gpu_models)", path, default_model));
  }
  if (const json* gpus = find(v, "gpus")) {
    const std::string gpath = path + ".gpus";
    const auto bound = [&](std::size_t count) {
      if (count > kMaxClusterGpus - gpus_before)
        fail(fmt::format("{}: {} GPUs after the {} of the nodes before: more than the {} GPUs a cluster may have", gpath,
                         count, gpus_before, kMaxClusterGpus));
    };
    if (gpus->is_array()) {
      bound(gpus->size());
      for (std::size_t g = 0; g < gpus->size(); ++g) {
        const std::string p = fmt::format("{}[{}]", gpath, g);
        const json& gv = require_object((*gpus)[g], p);
        check_keys(gv, p, {"model", "used_milli", "used_memory", "healthy", "mig"});
        GpuSpec spec;
        spec.model = default_model;
        if (const json* m = find(gv, "model")) spec.model = read_string(*m, p + ".model");
        if (spec.model.empty()) fail(fmt::format("{}.model: missing (and the node has no gpu_model)", p));
        if (!registry.find(spec.model))
          fail(fmt::format("{}.model: unknown GPU model \"{}\" (define it in gpu_models)", p, spec.model));
        if (const json* u = find(gv, "used_milli")) {
          spec.used_milli = quantity(*u, p + ".used_milli", QuantityUnit::kMilli, 1);
          if (spec.used_milli > kMilliPerGpu)
            fail(fmt::format("{}.used_milli: expected a share in 0..1000, got {}", p, spec.used_milli));
        }
        if (const json* u = find(gv, "used_memory")) spec.used_memory = quantity(*u, p + ".used_memory", QuantityUnit::kBytes, 1);
        if (const json* h = find(gv, "healthy")) spec.healthy = read_bool(*h, p + ".healthy");
        if (const json* m = find(gv, "mig")) {
          if (find(gv, "used_milli") || find(gv, "used_memory"))
            fail(fmt::format("{}.mig: a GPU in MIG mode has no shared use (drop used_milli/used_memory)", p));
          read_mig(*m, p + ".mig", spec, registry);
        }
        node.gpus.push_back(std::move(spec));
      }
    } else {
      const std::int64_t count = read_int(*gpus, gpath, 0, 65535);
      bound(static_cast<std::size_t>(count));
      if (count > 0 && default_model.empty())
        fail(fmt::format("{}.gpu_model: missing (the node has {} GPUs)", path, count));
      node.gpus.assign(static_cast<std::size_t>(count), GpuSpec{default_model});
    }
  }
  if (const json* labels = find(v, "labels")) node.labels = read_string_map(*labels, path + ".labels");
  if (const json* s = find(v, "schedulable")) node.schedulable = read_bool(*s, path + ".schedulable");
  if (const json* h = find(v, "healthy")) node.healthy = read_bool(*h, path + ".healthy");
  if (const json* t = find(v, "nvidia_smi_topo")) node.interconnect = read_topo_text(*t, path + ".nvidia_smi_topo");
  return node;
}

constexpr std::string_view kTaskKeys[] = {
    "cpu", "memory", "gpus", "gpu_milli", "gpu_memory", "gpu_models", "node_selector", "mig_profile"};

// Reads the task request fields of a group (or of a job written without groups).
void read_task_fields(const json& v, const std::string& path, TaskGroupSpec& group) {
  if (const json* c = find(v, "cpu")) group.shape.cpu = quantity(*c, path + ".cpu", QuantityUnit::kMilli, kMilliPerCpu);
  if (const json* m = find(v, "memory")) group.shape.memory = quantity(*m, path + ".memory", QuantityUnit::kBytes, 1);
  if (const json* g = find(v, "gpus")) group.shape.gpus = static_cast<GpuCount>(read_int(*g, path + ".gpus", 0, 65535));
  group.shape.gpu_milli = group.shape.gpus > 0 ? kMilliPerGpu : 0;
  if (const json* s = find(v, "gpu_milli")) {
    const std::int64_t share = quantity(*s, path + ".gpu_milli", QuantityUnit::kMilli, 1);
    if (share < 1 || share > kMilliPerGpu)
      fail(fmt::format("{}.gpu_milli: expected a share in 1..1000 (1000 = a whole GPU), got {}", path, share));
    if (group.shape.gpus == 0) group.shape.gpus = 1;  // a share alone means one shared GPU
    if (group.shape.gpus > 1 && share != kMilliPerGpu)
      fail(fmt::format("{}.gpu_milli: a task of {} GPUs takes whole GPUs; a share below 1000 needs gpus = 1, got {}",
                       path, group.shape.gpus, share));
    group.shape.gpu_milli = share;
  }
  if (const json* gm = find(v, "gpu_memory")) group.shape.gpu_memory = quantity(*gm, path + ".gpu_memory", QuantityUnit::kBytes, 1);
  if (const json* models = find(v, "gpu_models")) {
    if (!models->is_array()) fail(fmt::format("{}.gpu_models: expected an array of strings, got {}", path, shown(*models)));
    for (std::size_t i = 0; i < models->size(); ++i)
      group.allowed_models.push_back(read_string((*models)[i], fmt::format("{}.gpu_models[{}]", path, i)));
  }
  if (const json* sel = find(v, "node_selector")) group.selector = read_string_map(*sel, path + ".node_selector");
  if (const json* mp = find(v, "mig_profile")) {
    // Resolved against the cluster's MIG models when the job is compiled (ClusterState::compile);
    // here only the spelling is checked.
    group.mig_profile = read_string(*mp, path + ".mig_profile");
    if (!mig::parse_profile_name(group.mig_profile))
      fail(fmt::format("{}.mig_profile: \"{}\" is not a MIG profile name (<N>g.<M>gb[+me])", path, group.mig_profile));
  }
}

// The gang constraints of a job (io/gang_json.hpp reads them by group name) resolved to the job's
// group indices, so the Job says them through the JobView like every other field.
void read_job_gang_constraints(const json& v, const std::string& path, Job& job) {
  auto constraints = read_gang_constraints(v, path);
  if (!constraints) fail(constraints.error().message);
  auto index_of = [&](const std::string& name, const std::string& field) {
    for (std::size_t g = 0; g < job.groups.size(); ++g)
      if (job.groups[g].name == name) return static_cast<std::uint32_t>(g);
    std::string names;
    for (const auto& g : job.groups) names += (names.empty() ? "" : ", ") + g.name;
    fail(fmt::format("{}.{}: unknown group \"{}\" (groups: {})", path, field, name, names));
  };
  job.job_topology = {constraints->topology.level, constraints->topology.mode};
  for (std::size_t s = 0; s < constraints->spread.size(); ++s) {
    const auto& c = constraints->spread[s];
    JobSpreadSpec spread{c.level, c.max_per_domain, c.min_domains, {}};
    for (std::size_t i = 0; i < c.groups.size(); ++i)
      spread.groups.push_back(index_of(c.groups[i], fmt::format("spread[{}].groups[{}]", s, i)));
    job.job_spread.push_back(std::move(spread));
  }
  for (std::size_t a = 0; a < constraints->anti_affinity.size(); ++a) {
    const auto& c = constraints->anti_affinity[a];
    job.job_anti_affinity.push_back({index_of(c.group_a, fmt::format("anti_affinity[{}].groups[0]", a)),
                                     index_of(c.group_b, fmt::format("anti_affinity[{}].groups[1]", a)), c.level});
  }
}

// Keys the gang module reads from the job (io/gang_json.hpp).
constexpr std::string_view kGangJobKeys[] = {"topology", "spread", "anti_affinity"};
constexpr std::string_view kGangGroupKeys[] = {"topology", "spread", "anti_affinity", "affinity_group"};
// Keys the scheduling cycle (`gpusched cycle`, docs/cycle.md) reads from the raw job: runtime and
// checkpoint facts of pending and running jobs, and where a running job's tasks are.
constexpr std::string_view kCycleJobKeys[] = {"runtime_estimate", "not_before",  "preemptible",
                                              "restart_cost",     "checkpoint_interval", "restarts",
                                              "start_time",       "last_checkpoint",     "placement",
                                              "evicted_by"};

Job read_job(const json& v, const std::string& path, std::set<std::string>& names) {
  require_object(v, path);
  Job job;
  const json* name = find(v, "name");
  if (!name) fail(fmt::format("{}.name: missing", path));
  job.job_name = read_string(*name, path + ".name");
  if (!names.insert(job.job_name).second)
    fail(fmt::format("{}.name: duplicate job name \"{}\"", path, job.job_name));
  if (const json* q = find(v, "queue")) job.queue_name = read_string(*q, path + ".queue", true);
  if (const json* pc = find(v, "priority_class")) job.job_priority_class = read_string(*pc, path + ".priority_class");
  if (const json* t = find(v, "submit_time"))
    job.job_submit_time = read_int(*t, path + ".submit_time", 0, std::numeric_limits<std::int64_t>::max());
  if (const json* p = find(v, "priority"))
    job.job_priority = static_cast<std::int32_t>(read_int(*p, path + ".priority", std::numeric_limits<std::int32_t>::min(),
                                                          std::numeric_limits<std::int32_t>::max()));
  auto known_job_key = [](std::string_view key, bool with_task_fields) {
    for (auto k : {"name", "queue", "priority", "groups", "submit_time", "priority_class", "replicas", "min_replicas"})
      if (key == k) return true;
    for (auto k : kGangJobKeys)
      if (key == k) return true;
    for (auto k : kCycleJobKeys)
      if (key == k) return true;
    if (with_task_fields)
      for (auto k : kTaskKeys)
        if (key == k) return true;
    return false;
  };
  const json* groups = find(v, "groups");
  for (const auto& [key, value] : v.items())
    if (!known_job_key(key, groups == nullptr)) fail(fmt::format("{}.{}: unknown field", path, detail::shown_key(key)));

  auto read_replicas = [&](const json& obj, const std::string& p, TaskGroupSpec& group) {
    if (const json* r = find(obj, "replicas")) group.replicas = static_cast<std::int32_t>(read_int(*r, p + ".replicas", 0, kMaxJobTasks));
    if (const json* m = find(obj, "min_replicas")) {
      group.min_replicas = static_cast<std::int32_t>(read_int(*m, p + ".min_replicas", 0, kMaxJobTasks));
      if (group.min_replicas > group.replicas)
        fail(fmt::format("{}.min_replicas: {} exceeds replicas {}", p, group.min_replicas, group.replicas));
    }
  };
  if (groups) {
    if (!groups->is_array() || groups->empty())
      fail(fmt::format("{}.groups: expected a non-empty array of task groups, got {}", path, shown(*groups)));
    std::set<std::string> group_names;
    for (std::size_t g = 0; g < groups->size(); ++g) {
      const std::string p = fmt::format("{}.groups[{}]", path, g);
      const json& gv = require_object((*groups)[g], p);
      for (const auto& [key, value] : gv.items()) {
        bool known = key == "name" || key == "replicas" || key == "min_replicas";
        for (auto k : kTaskKeys) known = known || key == k;
        for (auto k : kGangGroupKeys) known = known || key == k;
        if (!known) fail(fmt::format("{}.{}: unknown field", p, detail::shown_key(key)));
      }
      TaskGroupSpec group;
      group.name = fmt::format("group-{}", g);
      if (const json* n = find(gv, "name")) group.name = read_string(*n, p + ".name");
      if (!group_names.insert(group.name).second) fail(fmt::format("{}.name: duplicate group name \"{}\"", p, group.name));
      read_replicas(gv, p, group);
      read_task_fields(gv, p, group);
      job.groups.push_back(std::move(group));
    }
  } else {
    TaskGroupSpec group;
    group.name = "task";
    read_replicas(v, path, group);
    read_task_fields(v, path, group);
    job.groups.push_back(std::move(group));
  }
  read_job_gang_constraints(v, path, job);
  return job;
}

// The cycle's fields of a job (kCycleJobKeys; read_job accepted the keys).
JobCycleFields read_cycle_fields(const json& v, const std::string& path) {
  // Times and durations the cycle can do arithmetic with: scheduler::kMaxCycleTime, 2^62 s.
  constexpr std::int64_t kMax = std::int64_t{1} << 62;
  JobCycleFields f;
  if (const json* x = find(v, "runtime_estimate")) f.runtime_estimate = read_int(*x, path + ".runtime_estimate", 0, kMax);
  if (const json* x = find(v, "not_before")) f.not_before = read_int(*x, path + ".not_before", -kMax, kMax);
  if (const json* x = find(v, "checkpoint_interval")) f.checkpoint_interval = read_int(*x, path + ".checkpoint_interval", 0, kMax);
  if (const json* x = find(v, "restart_cost")) f.restart_cost = read_int(*x, path + ".restart_cost", 0, kMax);
  if (const json* x = find(v, "restarts"))
    f.restarts = static_cast<std::int32_t>(read_int(*x, path + ".restarts", 0, std::numeric_limits<std::int32_t>::max()));
  if (const json* x = find(v, "preemptible")) f.preemptible = read_bool(*x, path + ".preemptible");
  if (const json* x = find(v, "evicted_by")) {
    if (!x->is_array()) fail(fmt::format("{}.evicted_by: expected an array of job names, got {}", path, shown(*x)));
    for (std::size_t k = 0; k < x->size(); ++k) {
      const std::string name = read_string((*x)[k], fmt::format("{}.evicted_by[{}]", path, k));
      if (auto ok = detail::check_name(name, fmt::format("{}.evicted_by[{}]", path, k)); !ok) fail(ok.error().message);
      f.evicted_by.push_back(name);
    }
  }
  f.running_fields = find(v, "start_time") || find(v, "placement");
  return f;
}

// No exception leaves the reader: our own located errors become Error values, and anything the JSON
// library or an allocation could still throw is caught too, naming the source.
template <class F>
auto guarded(F&& f, std::string_view source) -> decltype(f()) {
  try {
    return f();
  } catch (const ParseError& e) {
    return Error{e.message};
  } catch (const json::exception& e) {
    return Error{fmt::format("{}: {}", source, detail::json_library_text(e.what())), ErrorCode::kInvalidValue};
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory", source), ErrorCode::kLimit};
  }
}

// The one JSON entry point (io/json_input.hpp): depth and size bounds, numbers beyond a double
// (1e400) an error, never an exception.
Result<json> parse_document(std::string_view text, std::string_view source) {
  return detail::parse_json(text, source);
}

}  // namespace

Result<std::int64_t> detail::read_quantity(const json& v, std::string_view path, QuantityUnit unit, std::int64_t integer_scale) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return Error{fmt::format("{}: quantity out of range, got {}", path, shown(v))};
    const std::int64_t x = v.get<std::int64_t>();
    if (x < 0) return Error{fmt::format("{}: expected a non-negative quantity, got {}", path, x)};
    if (integer_scale > 1 && x > std::numeric_limits<std::int64_t>::max() / integer_scale)
      return Error{fmt::format("{}: quantity out of range, got {}", path, x)};
    return x * integer_scale;
  }
  if (v.is_string()) {
    auto q = parse_quantity(v.get_ref<const std::string&>(), unit);
    if (!q) return Error{fmt::format("{}: {}", path, q.error().message)};
    return *q;
  }
  if (v.is_number_float()) {
    // A JSON fraction is read in whole units through its decimal text, exactly: "cpu": 0.5 is 500m,
    // "gpu_milli": 0.5 is half a GPU.
    auto q = parse_quantity(v.dump(), unit);
    if (!q) return Error{fmt::format("{}: {}", path, q.error().message)};
    return *q;
  }
  return Error{fmt::format("{}: expected a quantity (a number or a string like \"500m\" or \"64Gi\"), got {}", path, shown(v))};
}

Result<ClusterDocument> detail::cluster_from_json(const json& doc, std::string_view source) {
  return guarded([&]() -> Result<ClusterDocument> {
    const std::string root(source);
    require_object(doc, root);
    check_keys(doc, root, {"gpu_models", "nodes"});
    ClusterDocument out;
    out.registry = GpuModelRegistry::builtin();
    if (const json* models = find(doc, "gpu_models")) {
      if (!models->is_array()) fail(fmt::format("gpu_models: expected an array, got {}", shown(*models)));
      for (std::size_t i = 0; i < models->size(); ++i) {
        const std::string path = fmt::format("gpu_models[{}]", i);
        auto added = out.registry.add(read_gpu_model((*models)[i], path));
        if (!added) fail(fmt::format("{}: {}", path, added.error().message));
      }
    }
    const json* nodes = find(doc, "nodes");
    if (!nodes) fail("nodes: missing");
    if (!nodes->is_array()) fail(fmt::format("nodes: expected an array, got {}", shown(*nodes)));
    std::set<std::string> names;
    std::vector<NodeSpec> specs;
    specs.reserve(nodes->size());
    std::size_t gpus = 0;
    for (std::size_t n = 0; n < nodes->size(); ++n) {
      const std::string path = fmt::format("nodes[{}]", n);
      NodeSpec node = read_node((*nodes)[n], path, out.registry, gpus);
      gpus += node.gpus.size();
      if (!names.insert(node.name).second) fail(fmt::format("{}.name: duplicate node name \"{}\"", path, node.name));
      specs.push_back(std::move(node));
    }
    out.cluster = Cluster(std::move(specs));
    return out;
  }, source);
}

namespace {

// A GPU's "mig" object, for write_mig_json (the state's instances) and write_cluster_json (a view's),
// so both write the one form read_mig reads: each instance by profile name (from `spec`, the
// model's MIG table, when it has that ID) and NVML ID, its start slice and busy flag.
template <class Json, class InstanceAt>
Json mig_object(const mig::MigGpuSpec* spec, bool fixed, std::size_t count, InstanceAt&& instance_at) {
  Json instances = Json::array();
  for (std::size_t i = 0; i < count; ++i) {
    const MigInstanceInfo inst = instance_at(i);
    Json v = Json::object();
    const int p = spec ? spec->find_id(inst.profile_id) : -1;
    if (p >= 0) v["profile"] = spec->profiles[static_cast<std::size_t>(p)].name;
    v["profile_id"] = inst.profile_id;
    v["start"] = inst.start;
    v["busy"] = inst.busy;
    instances.push_back(std::move(v));
  }
  Json out = Json::object();
  out["instances"] = std::move(instances);
  if (fixed) out["fixed"] = true;
  return out;
}

}  // namespace

json detail::mig_to_json(const ClusterState& state, NodeId node, GpuIndex gpu) {
  const mig::MigGpuId id = state.mig().gpu(node, gpu);
  if (id == mig::kNoGpu) return json();
  const mig::MigGpuSpec& spec = state.mig().table().spec_of(id);
  const auto slots = state.mig().table().instances(id);
  return mig_object<json>(&spec, state.mig().table().layout_fixed(id), slots.size(), [&](std::size_t i) {
    return MigInstanceInfo{spec.profiles[slots[i].profile].id, slots[i].start, slots[i].busy};
  });
}

std::string write_mig_json(const ClusterState& state, NodeId node, GpuIndex gpu) {
  return detail::mig_to_json(state, node, gpu).dump();
}

namespace {

using ordered_json = nlohmann::ordered_json;

// A quantity of milli-CPU as the reader reads it back exactly: whole cores as an integer (as people
// write them), else the Kubernetes string "1500m".
ordered_json cpu_quantity(MilliCpu milli) {
  if (milli % kMilliPerCpu == 0) return milli / kMilliPerCpu;
  return fmt::format("{}m", milli);
}

// A node's interconnect as `nvidia-smi topo -m` prints it, one string per line: the header, a row
// per device (GPUs first), the affinity columns any device fills ("N/A" where a device has none,
// since the reader takes the values in column order and skips empty ones), and a NIC Legend for
// the NICs whose name differs from their matrix name. Columns are padded with spaces like the
// captures pasted into tickets (easier to read in JSON than tabs); tabs only when a device name has
// a blank inside, which spaces could not delimit.
std::vector<std::string> topo_lines(const NodeInterconnect& ic) {
  const std::size_t n = ic.devices.size();
  bool cpu = false, numa = false, gpu_numa = false, legend = false, tabs = false;
  for (const NodeDevice& d : ic.devices) {
    cpu |= !d.cpu_affinity.empty();
    numa |= !d.numa_affinity.empty();
    gpu_numa |= d.gpu_numa_id >= 0;
    legend |= d.kind == DeviceKind::kNic && d.nic_name != d.name;
    tabs |= std::any_of(d.name.begin(), d.name.end(), [](char c) { return c == ' '; });
  }
  std::vector<std::vector<std::string>> rows;
  rows.reserve(n + 1);
  std::vector<std::string> header{""};
  for (const NodeDevice& d : ic.devices) header.push_back(d.name);
  if (cpu) header.emplace_back("CPU Affinity");
  if (numa) header.emplace_back("NUMA Affinity");
  if (gpu_numa) header.emplace_back("GPU NUMA ID");
  rows.push_back(std::move(header));
  for (std::size_t a = 0; a < n; ++a) {
    const NodeDevice& d = ic.devices[a];
    std::vector<std::string> row{d.name};
    for (std::size_t b = 0; b < n; ++b) row.push_back(topology::pair_link_name(ic.link(a, b)));
    auto value = [](const std::string& v) { return v.empty() ? std::string("N/A") : v; };
    if (cpu) row.push_back(value(d.cpu_affinity));
    if (numa) row.push_back(value(d.numa_affinity));
    if (gpu_numa) row.push_back(d.gpu_numa_id >= 0 ? std::to_string(d.gpu_numa_id) : std::string("N/A"));
    // Missing trailing values read as empty: a NIC row ends with its matrix, as nvidia-smi prints it.
    while (row.size() > n + 1 && row.back() == "N/A") row.pop_back();
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::vector<std::string> lines;
  lines.reserve(rows.size() + 3 + n);
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (tabs) {
        line += c == 0 ? "" : "\t";
        line += row[c];
      } else {
        line += row[c];
        if (c + 1 < row.size()) line.append(width[c] + 2 - row[c].size(), ' ');
      }
    }
    lines.push_back(std::move(line));
  }
  if (legend) {
    lines.insert(lines.end(), {"", "NIC Legend:", ""});
    for (const NodeDevice& d : ic.devices)
      if (d.kind == DeviceKind::kNic && d.nic_name != d.name) lines.push_back(fmt::format("  {}: {}", d.name, d.nic_name));
  }
  return lines;
}

// The "nvidia_smi_topo" field of an interconnect, or null when its text would not read back to the
// same matrix (see write_cluster_json). Nodes share few shapes (a cluster of DGX nodes has one), so
// each distinct shape is written and checked once; shapes are compared by content, not address,
// since a view may hand out one buffer for every node.
class TopoWriter {
 public:
  const ordered_json& field(const NodeInterconnect& ic) {
    for (const auto& [shape, text] : done_)
      if (shape == ic) return text;
    std::vector<std::string> lines = topo_lines(ic);
    std::string text;
    for (const std::string& l : lines) text += l + '\n';
    auto back = read_nvidia_smi_interconnect(text, ic.options);
    ordered_json out = back && *back == ic ? ordered_json(std::move(lines)) : ordered_json();
    done_.emplace_back(ic, std::move(out));
    return done_.back().second;
  }

 private:
  std::vector<std::pair<NodeInterconnect, ordered_json>> done_;
};

// Whether two model names of a view are one model: by the registry (spellings and aliases), else
// as text (a name the registry does not know, which the reader will report).
bool same_model(const GpuModelRegistry& registry, std::string_view a, std::string_view b) {
  if (a == b) return true;
  const auto ia = registry.find(a), ib = registry.find(b);
  return ia && ib && *ia == *ib;
}

ordered_json node_to_json(const ClusterView& view, std::size_t n, const GpuModelRegistry& registry, TopoWriter& topo) {
  ordered_json node = ordered_json::object();
  node["name"] = std::string(view.node_name(n));
  const NodeResources r = view.node_resources(n);
  node["cpu"] = cpu_quantity(r.cpu_capacity);
  node["memory"] = r.memory_capacity;
  if (r.cpu_capacity != r.cpu_free) node["cpu_used"] = cpu_quantity(r.cpu_capacity - r.cpu_free);
  if (r.memory_capacity != r.memory_free) node["memory_used"] = r.memory_capacity - r.memory_free;

  const std::size_t gpus = view.gpu_count(n);
  if (gpus > 0) {
    const std::string model(view.gpu(n, 0).model);
    node["gpu_model"] = model;
    bool plain = true;
    for (std::size_t g = 0; g < gpus && plain; ++g) {
      const GpuInfo info = view.gpu(n, g);
      plain = same_model(registry, info.model, model) && info.free_milli == kMilliPerGpu && info.used_memory == 0 &&
              info.healthy && !info.mig_mode;
    }
    if (plain) {
      node["gpus"] = gpus;
    } else {
      ordered_json list = ordered_json::array();
      for (std::size_t g = 0; g < gpus; ++g) {
        const GpuInfo info = view.gpu(n, g);
        ordered_json gpu = ordered_json::object();
        if (!same_model(registry, info.model, model)) gpu["model"] = std::string(info.model);
        // A MIG GPU has no shared use: the reader rejects used_milli/used_memory beside "mig".
        if (!info.mig_mode && info.free_milli != kMilliPerGpu) gpu["used_milli"] = kMilliPerGpu - info.free_milli;
        if (!info.mig_mode && info.used_memory != 0) gpu["used_memory"] = info.used_memory;
        if (!info.healthy) gpu["healthy"] = false;
        if (info.mig_mode) {
          const auto id = registry.find(info.model);
          const auto mig_model = id ? mig::MigCatalog::builtin().find(registry.model(*id).name) : std::nullopt;
          const mig::MigGpuSpec* spec = mig_model ? &mig::MigCatalog::builtin().spec(*mig_model) : nullptr;
          gpu["mig"] = mig_object<ordered_json>(spec, info.mig_layout_fixed, view.mig_instance_count(n, g),
                                                [&](std::size_t k) { return view.mig_instance(n, g, k); });
        }
        list.push_back(std::move(gpu));
      }
      node["gpus"] = std::move(list);
    }
  }

  if (const std::size_t count = view.label_count(n); count > 0) {
    std::vector<Label> labels;
    labels.reserve(count);
    for (std::size_t l = 0; l < count; ++l) labels.push_back(view.label(n, l));
    std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.first < b.first; });
    ordered_json obj = ordered_json::object();
    for (const auto& [key, value] : labels) obj[std::string(key)] = std::string(value);
    node["labels"] = std::move(obj);
  }
  if (!view.schedulable(n)) node["schedulable"] = false;
  if (!view.healthy(n)) node["healthy"] = false;
  if (const NodeInterconnect* ic = view.node_interconnect(n)) {
    if (const ordered_json& text = topo.field(*ic); !text.is_null()) node["nvidia_smi_topo"] = text;
  }
  return node;
}

}  // namespace

std::string write_cluster_json(const ClusterView& view, const GpuModelRegistry& registry, int indent) {
  try {
    ordered_json doc = ordered_json::object();
    const GpuModelRegistry builtin = GpuModelRegistry::builtin();
    ordered_json models = ordered_json::array();
    for (std::size_t m = 0; m < registry.size(); ++m) {
      const GpuModel& model = registry.model(static_cast<GpuModelId>(m));
      if (builtin.find(model.name)) continue;
      ordered_json v = ordered_json::object();
      v["name"] = model.name;
      if (!model.aliases.empty()) v["aliases"] = model.aliases;
      v["memory"] = model.memory;
      v["mig"] = model.mig_capable;
      if (!model.source.empty()) v["source"] = model.source;
      models.push_back(std::move(v));
    }
    if (!models.empty()) doc["gpu_models"] = std::move(models);
    ordered_json nodes = ordered_json::array();
    TopoWriter topo;
    for (std::size_t n = 0; n < view.node_count(); ++n) nodes.push_back(node_to_json(view, n, registry, topo));
    doc["nodes"] = std::move(nodes);
    return doc.dump(detail::clamped_indent(indent), ' ', false, ordered_json::error_handler_t::replace);
  } catch (const ordered_json::exception&) {
    return {};  // not expected: strings are replaced, not refused; kept so that nothing escapes
  } catch (const std::bad_alloc&) {
    return {};
  }
}

std::string write_cluster_json(const ClusterState& state, int indent) {
  return write_cluster_json(ClusterStateView(state), state.registry(), indent);
}

Result<ClusterDocument> read_cluster_json(std::string_view text, std::string_view source) {
  auto doc = parse_document(text, source);
  if (!doc) return doc.error();
  return detail::cluster_from_json(*doc, source);
}

Result<JobsDocument> read_jobs_json(std::string_view text, std::string_view source) {
  auto parsed = parse_document(text, source);
  if (!parsed) return parsed.error();
  const json& doc = *parsed;
  return guarded([&]() -> Result<JobsDocument> {
    const json* jobs = &doc;
    if (doc.is_object()) {
      check_keys(doc, std::string(source), {"jobs"});
      jobs = find(doc, "jobs");
      if (!jobs) fail("jobs: missing");
    }
    if (!jobs->is_array()) fail(fmt::format("jobs: expected an array, got {}", shown(*jobs)));
    JobsDocument out;
    std::set<std::string> names;
    for (std::size_t j = 0; j < jobs->size(); ++j) {
      out.jobs.push_back(read_job((*jobs)[j], fmt::format("jobs[{}]", j), names));
      out.explicit_priority.push_back(find((*jobs)[j], "priority") != nullptr);
      out.cycle.push_back(read_cycle_fields((*jobs)[j], fmt::format("jobs[{}]", j)));
    }
    return out;
  }, source);
}

}  // namespace gpusched::io
