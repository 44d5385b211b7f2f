// Kubernetes objects into the one cluster and job model (gpusched/io/k8s.hpp, docs/kubernetes.md).
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s {
namespace reader {

// ---- documents and objects ----

void Reader::collect(const json& doc, const std::string& source, int depth) {
  Obj o;
  o.v = &doc;
  o.source = source;
  o.kind = "object";
  if (!doc.is_object()) o.fail("kind", fmt::format("expected a Kubernetes object, got {}", shown(doc)));
  o.kind = get_string(o, child(&doc, "kind"), "kind", true);
  const std::string api = get_string(o, child(&doc, "apiVersion"), "apiVersion");
  if (auto slash = api.find('/'); slash != std::string::npos) o.group = api.substr(0, slash);
  if (o.kind == "List" || (o.kind.size() > 4 && o.kind.substr(o.kind.size() - 4) == "List")) {
    if (depth > 0) o.fail("items", "a list inside a list");
    const json* items = child(&doc, "items");
    if (!items) return;
    get_array(o, items, "items");
    for (const auto& item : *items) collect(item, source, depth + 1);
    return;
  }
  identify(o);
  remember(o);
  objs_.push_back(std::move(o));
}

// The API server holds one object per kind, group, namespace and name: a second one in the input is
// a mistake (two pods of one name were both bound), refused naming both files.
void Reader::remember(const Obj& o) {
  auto [it, fresh] = identities_.try_emplace(fmt::format("{} {} {}/{}", o.kind, o.group, o.ns, o.name), o.source);
  if (!fresh) o.fail("metadata.name", fmt::format("duplicate {} \"{}\" (the first is in {})", o.kind, o.ns.empty() ? o.name : o.ns + "/" + o.name, it->second), ErrorCode::kDuplicate);
}

void identify(Obj& o) {
  o.name = get_string(o, path(o.v, {"metadata", "name"}), "metadata.name", true);
  if (o.name.empty()) o.fail("metadata.name", "must not be empty");
  o.ns = get_string(o, path(o.v, {"metadata", "namespace"}), "metadata.namespace");
  for (const auto& [field, s] : {std::pair{"metadata.name", &o.name}, std::pair{"metadata.namespace", &o.ns}})
    if (const int u = io::detail::first_control_character(*s); u >= 0)
      o.fail(field, fmt::format("control character 0x{:02x} in name {}", u, io::detail::shown(*s)));
  // The API server's path segment rule (apimachinery's IsValidPathSegmentName) for every object
  // name: no "/" or "%", not "." or "..". Without it pod "a/b" in namespace "c" and pod "b" in
  // namespace "c/a" were one binding "c/a/b".
  for (const auto& [field, s] : {std::pair{"metadata.name", &o.name}, std::pair{"metadata.namespace", &o.ns}}) {
    if (s->find_first_of("/%") != std::string::npos || *s == "." || *s == "..")
      o.fail(field, fmt::format("{} is not a valid Kubernetes name (no \"/\" or \"%\", not \".\" or \"..\")", io::detail::shown(*s)));
  }
  const bool namespaced = o.kind == "Pod" || o.kind == "PodGroup" || o.kind == "LocalQueue" ||
                          (o.kind == "Job" && o.group == "batch.volcano.sh");
  if (namespaced && o.ns.empty()) o.ns = "default";
}

// One input: a JSON List's envelope checked on its own and its items one by one (its Pods parsed
// only when the pods are read, one at a time: see scan_json_list), or every YAML / JSON document.
void Reader::collect_source(const Source& s) {
  const std::string name(s.name);
  if (auto scan = detail::scan_json_list(s.text)) {
    const std::string envelope =
        std::string(s.text.substr(0, scan->array_open + 1)) + std::string(s.text.substr(scan->array_close));
    auto env = io::detail::parse_json(envelope, s.name);
    if (!env) throw ParseError{env.error()};
    const json* kind = child(&*env, "kind");
    if (kind && kind->is_string() && kind->get_ref<const std::string&>().ends_with("List")) {
      for (const auto& item : scan->items) {
        const std::string_view text = s.text.substr(item.begin, item.end - item.begin);
        if (item.kind == "Pod") {
          Obj o;
          o.source = name;
          o.kind = "Pod";
          o.lazy = text;
          objs_.push_back(std::move(o));
          continue;
        }
        auto doc = io::detail::parse_json_fast(text, s.name, {.max_values = detail::kMaxObjectValues});
        if (!doc) throw ParseError{doc.error()};
        docs_.push_back(std::move(*doc));
        collect(docs_.back(), name, 1);
      }
      return;
    }
  }
  auto parsed = detail::parse_documents(s.text, s.name);
  if (!parsed) throw ParseError{parsed.error()};
  // docs/formats.md: empty input is an error, never an empty success ("0 bound", exit 0).
  if (parsed->empty())
    throw ParseError{Error{fmt::format("{}: no Kubernetes object (no YAML or JSON document in the file)", name),
                           ErrorCode::kMissingField, "kind"}};
  for (auto& d : *parsed) {
    docs_.push_back(std::move(d));
    collect(docs_.back(), name, 0);
  }
}

// A Kueue Topology: its levels' node labels, in order, after those of the options.
void Reader::read_topology_levels(const Obj& o) {
  const json* levels = path(o.v, {"spec", "levels"});
  if (!levels) o.fail("spec.levels", "missing", ErrorCode::kMissingField);
  get_array(o, levels, "spec.levels");
  for (std::size_t l = 0; l < levels->size(); ++l) {
    const std::string key = get_string(o, child(&(*levels)[l], "nodeLabel"), fmt::format("spec.levels[{}].nodeLabel", l), true);
    if (std::find(in_.topology_levels.begin(), in_.topology_levels.end(), key) == in_.topology_levels.end())
      in_.topology_levels.push_back(key);
  }
}

Input Reader::run(std::span<const Source> sources) {
  in_.registry = reg_;
  in_.topology_levels = opt_.topology_levels;
  for (const Source& s : sources) collect_source(s);

  // Order of reading: what others refer to first.
  for (const Obj& o : objs_) {
    if (o.kind == "PriorityClass") read_priority_class(o);
    else if (o.kind == "Topology" && o.group == "kueue.x-k8s.io") read_topology_levels(o);
  }
  for (const Obj& o : objs_)
    if (o.kind == "Node") read_node(o);
  for (const NodeRec& r : node_recs_) {
    taint_union_ |= r.taint_mask;
    if (!r.model.empty() && std::find(cluster_models_.begin(), cluster_models_.end(), r.model) == cluster_models_.end())
      cluster_models_.push_back(r.model);
  }
  for (const Obj& o : objs_) {
    if (o.kind == "PodGroup") podgroups_[o.ns + "/" + o.name] = &o;
    else if (o.kind == "Job" && o.group == "batch.volcano.sh") volcano_jobs_[o.ns + "/" + o.name] = &o;
    else if (o.kind == "LocalQueue") {
      local_queues_[o.ns + "/" + o.name] = get_string(o, path(o.v, {"spec", "clusterQueue"}), "spec.clusterQueue", true);
    }
  }
  read_queues();
  read_pods();
  read_volcano_jobs();
  for (const Obj& o : objs_) {
    static const std::set<std::string> known = {"Node", "Pod", "PriorityClass", "PodGroup", "LocalQueue", "ClusterQueue",
                                                "ResourceFlavor", "Queue", "Topology"};
    if (known.contains(o.kind) || (o.kind == "Job" && o.group == "batch.volcano.sh")) continue;
    warn_.add(o, "kind", fmt::format("kind {} is not read", o.kind));
  }
  apply_running();
  apply_classes();
  for (std::size_t n = 0; n < nodes_.size(); ++n)
    for (const auto& level : in_.topology_levels)
      if (!find_label(nodes_[n].labels, level)) {
        Obj o{nullptr, node_recs_[n].source, "Node", "", "", nodes_[n].name, {}};
        warn_.add(o, fmt::format("metadata.labels[\"{}\"]", level),
                  fmt::format("node has no label of topology level {}: it is in no domain of that level", level));
      }
  // Jobs run in leaf queues (KAI, Volcano): a bound pod charged to a parent queue counts in no
  // queue's usage (queue_configs gives parents none), so it is reported rather than dropped.
  const auto parents = fairness::parent_queue_names(in_.queues);
  for (const RunningPod& r : in_.running)
    if (parents.contains(r.job.queue_name))
      warn_.add(Obj{nullptr, r.source, "Pod", "", r.pod.ns, r.pod.name, {}}, "queue",
                fmt::format("queue {} has child queues: a bound pod's usage counts in no queue (jobs run in leaf queues)",
                            io::detail::shown(r.job.queue_name, 200)));
  // A class the input does not define was reported and resolved to a number already; the job keeps
  // the number only, so that consumers resolving classes (fair share) do not fail on it.
  for (Job& j : in_.jobs)
    if (!j.job_priority_class.empty() && !in_.priority_classes.contains(j.job_priority_class)) j.job_priority_class.clear();
  in_.cluster = Cluster(std::move(nodes_));
  in_.warnings = std::move(warn_.list);
  return std::move(in_);
}

void Reader::read_priority_class(const Obj& o) {
  const json* v = child(o.v, "value");
  if (!v) o.fail("value", "missing", ErrorCode::kMissingField);
  const auto value = get_int(o, v, "value", std::numeric_limits<std::int32_t>::min(), 1000000000);
  in_.priority_classes[o.name] = value;
  if (const json* d = child(o.v, "globalDefault"); d && d->is_boolean() && d->get<bool>()) default_priority_ = value;
}


// Bound pods: which GPUs each holds (RunningPod::gpus, one choice for every reader of them), and,
// with Options::subtract_running, their requests taken off their nodes. Without it the choice is
// made on a copy of the nodes' GPUs, which stay as read (the scheduling cycle reserves the pods).
void Reader::apply_running() {
  std::map<std::pair<std::size_t, std::string>, std::size_t> shared_gpu;  // (node, runai-gpu-group) -> GPU
  std::vector<std::vector<GpuSpec>> gpu_copies;  // without subtract_running: per node, the GPUs the choice takes from
  if (!opt_.subtract_running)
    for (const NodeSpec& n : nodes_) gpu_copies.push_back(n.gpus);
  for (std::size_t ri = 0; ri < in_.running.size(); ++ri) {
    RunningPod& r = in_.running[ri];
    Obj o{nullptr, r.source, "Pod", "", r.pod.ns, r.pod.name, {}};
    auto it = node_index_.find(r.node);
    if (it == node_index_.end()) {
      warn_.add(o, "spec.nodeName", "bound to a node that is not in the input: its usage is not counted");
      continue;
    }
    NodeSpec& node = nodes_[it->second];
    std::vector<GpuSpec>& gpus = opt_.subtract_running ? node.gpus : gpu_copies[it->second];
    TaskGroupSpec& g = r.job.groups[0];
    if (const std::string& single = node_recs_[it->second].mig_profile; !single.empty() && g.shape.gpus > 0) {
      // MIG single strategy: the pod's nvidia.com/gpu are MIG devices of the node's profile (a
      // pending pod says so by its nodeSelector; a bound one by its node).
      if (g.shape.gpus == 1) {
        g.mig_profile = single;
        g.shape.gpus = 0;
        g.shape.gpu_milli = 0;
      } else {
        warn_.add(o, "spec.nodeName", fmt::format("bound to a MIG single-strategy node with {} nvidia.com/gpu: the job model gives a task one MIG device; its GPU usage is not counted", g.shape.gpus));
        g.shape.gpus = 0;
        g.shape.gpu_milli = 0;
      }
    }
    if (g.shape.gpus > 0 || !g.mig_profile.empty()) r.gpu_model = node_recs_[it->second].model;
    if (g.shape.shares_gpu() && g.shape.gpu_memory > 0 && !r.gpu_model.empty())
      g.shape.gpu_milli = memory_share({r.gpu_model}, g.shape.gpu_memory);  // KAI: of this node's GPU
    if (opt_.subtract_running) take_host_share(o, node, g.shape);
    if (g.shape.shares_gpu()) {
      take_shared_gpu(o, gpus, it->second, running_gpu_group_[ri], g, shared_gpu, r);
      continue;
    }
    take_whole_gpus(o, gpus, g, r);
  }
}

// A bound pod's CPU and memory taken off its node (saturating, then capped at capacity: bound pods'
// requests may add up past int64 or past what the node has).
void Reader::take_host_share(const Obj& o, NodeSpec& node, const TaskShape& shape) {
  if (__builtin_add_overflow(node.cpu_used, shape.cpu, &node.cpu_used)) node.cpu_used = std::numeric_limits<std::int64_t>::max();
  if (__builtin_add_overflow(node.memory_used, shape.memory, &node.memory_used))
    node.memory_used = std::numeric_limits<std::int64_t>::max();
  if (node.cpu_used > node.cpu || node.memory_used > node.memory) {
    warn_.add(o, "spec.nodeName", "the node's bound pods ask for more CPU or memory than it has: usage capped at capacity");
    node.cpu_used = std::min(node.cpu_used, node.cpu);
    node.memory_used = std::min(node.memory_used, node.memory);
  }
}

// A bound pod's whole GPUs (the lowest idle ones) or its MIG device (the first idle instance of its
// profile, GPU by GPU), taken on `gpus` and recorded in r.gpus / r.mig_start.
void Reader::take_whole_gpus(const Obj& o, std::vector<GpuSpec>& gpus, const TaskGroupSpec& g, RunningPod& r) {
  GpuCount left = g.shape.gpus;
  for (std::size_t k = 0; k < gpus.size() && left > 0; ++k)
    if (!gpus[k].mig_mode && gpus[k].used_milli == 0) {
      gpus[k].used_milli = kMilliPerGpu;
      r.gpus.push_back(static_cast<std::uint16_t>(k));
      --left;
    }
  if (left > 0) {
    warn_.add(o, "spec.nodeName", "the node's bound pods use more GPUs than it has: this pod's GPUs are not counted");
    r.gpus.clear();  // (no choice: the cycle's reservation of it is refused, naming the pod)
  }
  if (g.mig_profile.empty()) return;
  const auto geometry = mig::parse_profile_name(g.mig_profile);
  for (std::size_t k = 0; k < gpus.size() && geometry && r.gpus.empty(); ++k) {
    if (!gpus[k].mig_mode) continue;
    const auto mid = mig::MigCatalog::builtin().find(gpus[k].model);
    if (!mid) continue;
    const auto& spec = mig::MigCatalog::builtin().spec(*mid);
    const int pi = mig::match_profile(spec, *geometry);
    for (auto& inst : gpus[k].mig_instances)
      if (r.gpus.empty() && pi >= 0 && !inst.busy && inst.profile_id == spec.profiles[static_cast<std::size_t>(pi)].id) {
        inst.busy = true;
        r.gpus.push_back(static_cast<std::uint16_t>(k));
        r.mig_start = static_cast<std::int8_t>(inst.start);
      }
  }
  if (r.gpus.empty()) warn_.add(o, "spec.nodeName", fmt::format("no idle MIG device {} left on the node for a bound pod", g.mig_profile));
}

// A bound pod's GPU share (a KAI fraction). The Pod object does not say which device it got, but
// KAI's binder labels the pods of one shared GPU with one runai-gpu-group: a group's pods share its
// GPU, and a new group takes a GPU no other group holds (an idle one first). A pod without the
// label takes the first GPU already shared that has room, else the first idle one.
void Reader::take_shared_gpu(const Obj& o, std::vector<GpuSpec>& gpus, std::size_t node_index, const std::string& group,
                             const TaskGroupSpec& g, std::map<std::pair<std::size_t, std::string>, std::size_t>& shared_gpu,
                             RunningPod& r) {
  auto fits = [&](const GpuSpec& gpu) {
    const auto id = reg_.find(gpu.model);
    const Bytes capacity = id ? reg_.model(*id).memory : 0;
    return !gpu.mig_mode && gpu.used_milli + g.shape.gpu_milli <= kMilliPerGpu &&
           (capacity == 0 || gpu.used_memory + g.shape.gpu_memory <= capacity);
  };
  std::optional<std::size_t> pick;
  auto of_a_group = [&](std::size_t k) {  // the map is ordered by node: this node's groups only
    for (auto it = shared_gpu.lower_bound({node_index, std::string()}); it != shared_gpu.end() && it->first.first == node_index; ++it)
      if (it->second == k) return true;
    return false;
  };
  if (!group.empty())
    if (auto it = shared_gpu.find({node_index, group}); it != shared_gpu.end()) pick = it->second;
  for (int pass = 0; pass < 2 && !pick; ++pass)
    for (std::size_t k = 0; k < gpus.size() && !pick; ++k) {
      if (!fits(gpus[k])) continue;
      const bool shared = gpus[k].used_milli > 0;
      if (group.empty() ? (pass == 1 || shared) : (!of_a_group(k) && (pass == 1 || !shared))) pick = k;
    }
  if (!pick || !fits(gpus[*pick])) {
    warn_.add(o, "spec.nodeName", "no GPU of the node has room for the bound pod's GPU fraction: its share is not counted");
    return;
  }
  if (!group.empty()) shared_gpu.emplace(std::pair{node_index, group}, *pick);
  gpus[*pick].used_milli += g.shape.gpu_milli;
  gpus[*pick].used_memory += g.shape.gpu_memory;
  r.gpus.assign(1, static_cast<std::uint16_t>(*pick));
}

void Reader::apply_classes() {
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    const auto& [tolerated, terms] = classes_[c];
    const std::string key = fmt::format("{}{}", kClassLabelPrefix, c);
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (node_recs_[n].taint_mask & ~tolerated) continue;
      bool ok = !terms;
      for (std::size_t t = 0; terms && t < terms->size() && !ok; ++t) ok = term_matches((*terms)[t], n);
      if (ok) nodes_[n].labels.emplace_back(key, "true");
    }
  }
}

}  // namespace reader

using reader::ParseError;
using reader::Reader;
using json = nlohmann::json;

std::string to_string(const Warning& w) {
  std::string out = fmt::format("{}: {}: {}", w.object, w.field, w.message);
  if (w.count > 1) out += fmt::format(" ({} objects)", w.count);
  return out;
}

Result<Input> read(std::span<const Source> sources, const Options& options) {
  try {
    Reader reader(options);
    return reader.run(sources);
  } catch (const ParseError& e) {
    return e.error;
  } catch (const json::exception& e) {
    return Error{fmt::format("kubernetes objects: {}", e.what()), ErrorCode::kInvalidValue};
  } catch (const std::bad_alloc&) {
    return Error{"kubernetes objects: out of memory", ErrorCode::kLimit};
  }
}

Result<std::vector<fairness::QueueConfig>> queue_configs(const Input& input, const ClusterState& state,
                                                         const fairness::ResourceSpace& space) {
  std::vector<fairness::QueueConfig> out;
  std::vector<std::string> names;
  for (const QueueSpec& q : input.queues) names.push_back(q.name);
  auto fill = [&](const QueueSpec& q, const std::vector<std::pair<std::string, std::int64_t>>& amounts,
                  std::int64_t unlisted) -> Result<fairness::Amounts> {
    fairness::Amounts a = fairness::Amounts::Constant(space.size(), unlisted);
    for (const auto& [key, x] : amounts) {
      std::optional<Eigen::Index> d;
      if (key == "cpu") d = fairness::ResourceSpace::kCpu;
      else if (key == "memory") d = fairness::ResourceSpace::kMemory;
      else if (key.rfind("gpu/", 0) == 0) d = space.gpu_dim(key.substr(4));
      if (!d) continue;  // a GPU model the cluster does not have
      a[*d] = x;
    }
    (void)q;
    return a;
  };
  const auto parents = fairness::parent_queue_names(input.queues);
  for (const QueueSpec& q : input.queues) {
    fairness::QueueConfig c;
    c.name = q.name;
    c.parent = q.parent;
    c.weight = q.weight;
    c.cohort = q.cohort;
    c.strict_fifo = q.strict_fifo;
    c.within_queue = q.within_queue;
    c.reclaim_within_cohort = q.reclaim_within_cohort;
    c.borrow_within_cohort = q.borrow_within_cohort;
    for (const auto& m : q.flavor_order)
      if (space.gpu_dim(m)) c.flavor_order.push_back(m);
    if (parents.contains(q.name)) {  // a parent queue divides by weight; its leaves hold the quotas
      out.push_back(std::move(c));
      continue;
    }
    c.nominal = fairness::queue_amounts(*fill(q, q.nominal, q.unlisted));
    if (!q.borrowing_limit.empty()) c.borrowing_limit = fairness::queue_amounts(*fill(q, q.borrowing_limit, fairness::kNoLimit));
    if (!q.lending_limit.empty()) c.lending_limit = fairness::queue_amounts(*fill(q, q.lending_limit, fairness::kNoLimit));
    out.push_back(std::move(c));
  }
  std::vector<RunningJob> running;  // bound pods of listed queues, on nodes the input has
  for (const RunningPod& r : input.running) {
    if (std::find(names.begin(), names.end(), r.job.queue_name) == names.end() || state.find_node(r.node) == kNoNode) continue;
    auto job = running_job_on(state, r);
    if (!job) return job.error();
    running.push_back(std::move(*job));
  }
  if (auto st = fairness::set_usage_from_running(out, running, state, space); !st)
    return Error{fmt::format("running pods: {}", st.error().message), st.error().code, st.error().field};
  return out;
}

}  // namespace gpusched::io::k8s
