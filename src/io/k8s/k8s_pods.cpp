// Pods, PodGroups and Volcano Jobs into the job model: gangs, their queues, priorities and topology.
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s::reader {

std::string signature_of(const PodSpecRead& s) {
  std::string out = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", s.shape.cpu, s.shape.memory, s.shape.gpus, s.shape.gpu_milli,
                                s.shape.gpu_memory, s.mig_profile, s.cls, s.models.empty() ? "" : s.models[0], s.selector.size());
  for (const auto& [k, v] : s.selector) out += fmt::format("|{}={}", k, v);
  return out;
}

std::string Reader::queue_of_pod(const Obj& o, const std::vector<std::pair<std::string, std::string>>& labels) {
  if (const std::string* lq = find_label(labels, "kueue.x-k8s.io/queue-name")) {
    auto it = local_queues_.find(o.ns + "/" + *lq);
    if (it != local_queues_.end()) return it->second;
    warn_.add(o, "metadata.labels[\"kueue.x-k8s.io/queue-name\"]",
              "LocalQueue not in the input: the local queue's name is used as the queue");
    return *lq;
  }
  for (const char* key : {"kai.scheduler/queue", "runai/queue"})
    if (const std::string* q = find_label(labels, key)) return *q;
  return {};
}

std::int32_t Reader::priority_of(const Obj& o, const PodSpecRead& s, std::string_view field) {
  if (s.priority) return *s.priority;
  if (!s.priority_class.empty()) {
    auto it = in_.priority_classes.find(s.priority_class);
    if (it != in_.priority_classes.end()) return static_cast<std::int32_t>(it->second);
    static const std::map<std::string, std::int32_t> builtin = {{"system-cluster-critical", 2000000000},
                                                                {"system-node-critical", 2000001000}};
    if (auto b = builtin.find(s.priority_class); b != builtin.end()) return b->second;
    warn_.add(o, std::string(field), fmt::format("PriorityClass \"{}\" is not in the input: priority 0", s.priority_class));
    return 0;
  }
  return static_cast<std::int32_t>(default_priority_.value_or(0));
}

TaskGroupSpec group_from(const PodSpecRead& s, std::string name) {
  TaskGroupSpec g;
  g.name = std::move(name);
  g.shape = s.shape;
  g.selector = s.selector;
  if (s.cls >= 0) g.selector.emplace_back(fmt::format("{}{}", kClassLabelPrefix, s.cls), "true");
  g.allowed_models = s.models;
  g.mig_profile = s.mig_profile;
  return g;
}

void set_topology(Job& job, const std::vector<std::pair<std::string, std::string>>& annotations) {
  if (const std::string* r = find_label(annotations, "kueue.x-k8s.io/podset-required-topology"))
    job.job_topology = {*r, LevelMode::kRequired};
  else if (const std::string* p = find_label(annotations, "kueue.x-k8s.io/podset-preferred-topology"))
    job.job_topology = {*p, LevelMode::kPreferred};
}

struct PendingPod {
  const Obj* obj;
  PodSpecRead spec;
  std::vector<std::pair<std::string, std::string>> labels, annotations;
  std::int64_t created;
};

// The gang a pod belongs to, by its annotations and labels: a PodGroup (scheduling.k8s.io's
// coscheduling or Volcano's), or a Kueue pod group (with its total count); and its Volcano Job.
struct PodGangRef {
  std::string key, kind;          // "" when it is in no gang
  std::int64_t total_count = -1;  // Kueue pod-group-total-count
  const std::string* volcano_job = nullptr;
  bool of_volcano_job = false;    // that Volcano Job is in the input
};

// One gang of pods in the input: its pending pods and its bound ones.
struct PodGang {
  std::string kind;
  std::string ns, name;
  std::vector<PendingPod> pods;
  std::int64_t running = 0;
  std::int64_t total_count = -1;  // Kueue pod-group-total-count
};

// The gangs in first-seen order, by "ns/name", and the bound pods of Volcano Jobs by task.
struct PodGangs {
  std::vector<PodGang> list;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::int64_t> volcano_running;  // "ns/job/task" -> bound pods
  PodGang& of(const std::string& ns, const PodGangRef& ref) {
    auto [it, fresh] = index.emplace(ns + "/" + ref.key, list.size());
    if (fresh) list.push_back({ref.kind, ns, ref.key, {}, 0, ref.total_count});
    return list[it->second];
  }
};

void Reader::read_pods() {
  PodGangs gangs;
  for (Obj& o : objs_)
    if (o.kind == "Pod") read_pod(o, gangs);
  for (PodGang& g : gangs.list)
    if (!g.pods.empty()) add_gang_job(g);
  volcano_running_ = std::move(gangs.volcano_running);
}

PodGangRef Reader::gang_of_pod(const Obj& o, const PendingPod& p) const {
  PodGangRef ref;
  if (const std::string* g = find_label(p.annotations, "scheduling.k8s.io/group-name")) ref.key = *g, ref.kind = "PodGroup";
  else if (const std::string* k = find_label(p.annotations, "pod-group-name")) ref.key = *k, ref.kind = "PodGroup";
  else if (const std::string* q = find_label(p.labels, "kueue.x-k8s.io/pod-group-name")) {
    ref.key = *q, ref.kind = "pod-group";
    if (const std::string* c = find_label(p.annotations, "kueue.x-k8s.io/pod-group-total-count")) {
      auto n = parse_quantity(*c, QuantityUnit::kCount);
      if (!n) o.fail("metadata.annotations[\"kueue.x-k8s.io/pod-group-total-count\"]", n.error().message);
      ref.total_count = *n;
    }
  }
  ref.volcano_job = find_label(p.labels, "volcano.sh/job-name");
  ref.of_volcano_job = ref.volcano_job && volcano_jobs_.contains(o.ns + "/" + *ref.volcano_job);
  return ref;
}

// One pod: a bound one runs (in_.running, counted in its gang); a pending one of this scheduler is a
// job of its own, a member of its gang, or described by its Volcano Job; a finished one holds nothing.
void Reader::read_pod(Obj& o, PodGangs& gangs) {
  json lazy_doc;  // a PodList's pod, parsed now and dropped after this pod
  if (!o.v) {
    auto doc = io::detail::parse_json_fast(o.lazy, o.source, {.max_values = detail::kMaxObjectValues});
    if (!doc) throw ParseError{doc.error()};
    lazy_doc = std::move(*doc);
    o.v = &lazy_doc;
    identify(o);
    remember(o);
  }
  struct Forget {
    Obj& o;
    ~Forget() {
      if (!o.lazy.empty()) o.v = nullptr;
    }
  } forget{o};
  const std::string phase = get_string(o, path(o.v, {"status", "phase"}), "status.phase");
  if (phase == "Succeeded" || phase == "Failed") return;  // holds nothing
  PendingPod p{&o, read_pod_spec(o, child(o.v, "spec"), "spec"), get_string_map(o, path(o.v, {"metadata", "labels"}), "metadata.labels"),
               get_string_map(o, path(o.v, {"metadata", "annotations"}), "metadata.annotations"),
               parse_timestamp(o, path(o.v, {"metadata", "creationTimestamp"}))};
  read_gpu_sharing(o, p.annotations, "metadata.annotations", p.spec);
  const std::string queue = queue_of_pod(o, p.labels);
  const PodGangRef ref = gang_of_pod(o, p);
  if (!p.spec.node_name.empty()) {
    add_running_pod(o, p, queue, ref, gangs);
    return;
  }
  if (!opt_.scheduler_name.empty() && p.spec.scheduler != opt_.scheduler_name) {
    in_.skipped.push_back({o.ns, o.name});
    return;
  }
  if (ref.of_volcano_job) return;  // the Volcano Job describes its pending pods (read_volcano_jobs)
  if (!ref.key.empty()) {
    gangs.of(o.ns, ref).pods.push_back(std::move(p));
    return;
  }
  Job job;
  job.job_name = o.ns + "/" + o.name;
  job.queue_name = queue;
  job.job_priority = priority_of(o, p.spec, "spec.priorityClassName");
  job.job_priority_class = p.spec.priority_class;
  job.job_submit_time = p.created;
  job.groups.push_back(group_from(p.spec, "pod"));
  set_topology(job, p.annotations);
  in_.jobs.push_back(std::move(job));
  in_.sources.push_back({"Pod", {o.ns, o.name}, {{{o.ns, o.name}}}});
}

// A pod bound to a node runs: a one-pod job in its queue (its PodGroup's when the pod names none),
// counted among its gang's and its Volcano Job task's bound pods.
void Reader::add_running_pod(const Obj& o, const PendingPod& p, const std::string& queue, const PodGangRef& ref,
                             PodGangs& gangs) {
  RunningPod r;
  r.pod = {o.ns, o.name};
  r.source = o.source;
  r.node = p.spec.node_name;
  r.job.job_name = o.ns + "/" + o.name;
  r.job.queue_name = queue;
  if (ref.kind == "PodGroup") {
    auto pg = podgroups_.find(o.ns + "/" + ref.key);
    if (pg != podgroups_.end() && r.job.queue_name.empty())
      r.job.queue_name = get_string(*pg->second, path(pg->second->v, {"spec", "queue"}), "spec.queue");
  }
  r.job.groups.push_back(group_from(p.spec, "pod"));
  r.priority = priority_of(o, p.spec, "spec.priorityClassName");
  r.start_time = parse_timestamp(o, path(o.v, {"status", "startTime"}), "status.startTime");
  if (r.start_time == 0) r.start_time = p.created;
  in_.running.push_back(std::move(r));
  const std::string* gpu_group = find_label(p.labels, "runai-gpu-group");
  running_gpu_group_.push_back(gpu_group ? *gpu_group : std::string());
  if (!ref.key.empty()) ++gangs.of(o.ns, ref).running;
  if (ref.of_volcano_job) {
    const std::string* task = find_label(p.annotations, "volcano.sh/task-spec");
    ++gangs.volcano_running[o.ns + "/" + *ref.volcano_job + "/" + (task ? *task : std::string())];
  }
}

// A gang's pending pods as one job. Task groups: pods with the same request, selectors and task
// name (Volcano's volcano.sh/task-spec annotation) are replicas of one group. Its minimum comes from
// its PodGroup (minMember, minTaskMember) or Kueue's total count; without one it is rigid.
void Reader::add_gang_job(PodGang& g) {
  const Obj& first = *g.pods.front().obj;
  Job job;
  JobSource src;
  src.kind = g.kind;
  src.object = {g.ns, g.name};
  job.job_name = g.ns + "/" + g.name;
  std::map<std::string, std::size_t> by_sig;
  std::int64_t created = std::numeric_limits<std::int64_t>::max();
  std::int32_t priority = std::numeric_limits<std::int32_t>::min();
  for (PendingPod& p : g.pods) {
    const std::string* task = find_label(p.annotations, "volcano.sh/task-spec");
    const std::string sig = (task ? *task : std::string()) + "#" + signature_of(p.spec);
    auto [it, fresh] = by_sig.emplace(sig, job.groups.size());
    if (fresh) {
      job.groups.push_back(group_from(p.spec, task ? *task : fmt::format("group-{}", job.groups.size())));
      job.groups.back().replicas = 0;
      src.pods.emplace_back();
    }
    ++job.groups[it->second].replicas;
    src.pods[it->second].push_back({p.obj->ns, p.obj->name});
    created = std::min(created, p.created);
    priority = std::max(priority, priority_of(*p.obj, p.spec, "spec.priorityClassName"));
    if (job.queue_name.empty()) job.queue_name = queue_of_pod(*p.obj, p.labels);
    if (job.job_priority_class.empty()) job.job_priority_class = p.spec.priority_class;
  }
  set_topology(job, g.pods.front().annotations);
  job.job_submit_time = created;
  job.job_priority = priority;
  std::int64_t pending = 0;
  for (const auto& grp : job.groups) pending += grp.replicas;
  std::int64_t min_member = pending + g.running;  // rigid unless the group says otherwise
  std::map<std::string, std::int64_t> min_task;
  if (g.kind == "PodGroup") read_pod_group(g, first, job, min_member, min_task);
  else if (g.total_count >= 0) min_member = g.total_count;
  const std::int64_t need = std::max<std::int64_t>(0, min_member - g.running);
  if (!min_task.empty()) {
    for (auto& grp : job.groups)
      if (auto it = min_task.find(grp.name); it != min_task.end()) grp.min_replicas = static_cast<std::int32_t>(std::min<std::int64_t>(it->second, grp.replicas));
  } else if (need < pending) {
    if (job.groups.size() == 1) job.groups[0].min_replicas = static_cast<std::int32_t>(need);
    else
      warn_.add(first, "spec.minMember", "a minimum over several task groups is not expressible per group: the gang is read as rigid");
  } else if (need > pending) {
    warn_.add(first, "spec.minMember", fmt::format("minMember {} exceeds the gang's {} pods in the input; read as rigid", min_member, pending + g.running));
  }
  in_.jobs.push_back(std::move(job));
  in_.sources.push_back(std::move(src));
}

// The gang's PodGroup object: minMember, minTaskMember, its queue and priority class, its network
// topology; what it says that is not read is warned about. A PodGroup missing from the input leaves
// the gang rigid.
void Reader::read_pod_group(const PodGang& g, const Obj& first, Job& job, std::int64_t& min_member,
                            std::map<std::string, std::int64_t>& min_task) {
  auto pg = podgroups_.find(g.ns + "/" + g.name);
  if (pg == podgroups_.end()) {
    warn_.add(first, "metadata.annotations[\"scheduling.k8s.io/group-name\"]",
              "the pod's PodGroup is not in the input: its pending pods are read as one rigid gang");
    return;
  }
  const Obj& po = *pg->second;
  if (const json* m = path(po.v, {"spec", "minMember"})) min_member = get_int(po, m, "spec.minMember", 0, 1 << 20);
  if (const json* q = path(po.v, {"spec", "queue"})) job.queue_name = get_string(po, q, "spec.queue");
  if (const json* pc = path(po.v, {"spec", "priorityClassName"})) {
    PodSpecRead s;
    s.priority_class = get_string(po, pc, "spec.priorityClassName");
    job.job_priority_class = s.priority_class;
    job.job_priority = priority_of(po, s, "spec.priorityClassName");
  }
  if (const json* mt = path(po.v, {"spec", "minTaskMember"})) {
    get_object(po, mt, "spec.minTaskMember");
    for (const auto& [task, n] : mt->items()) min_task[task] = get_int(po, &n, fmt::format("spec.minTaskMember[\"{}\"]", task), 0, 1 << 20);
  }
  read_network_topology(po, child(po.v, "spec"), job);
  if (path(po.v, {"spec", "subGroupPolicy"}))
    warn_.add(po, "spec.subGroupPolicy",
              "Volcano sub-groups (subGroupSize, minSubGroups, their networkTopology) are not read: the gang is "
              "placed whole by its minMember");
  if (path(po.v, {"spec", "minResources"})) warn_.add(po, "spec.minResources", "minResources is not read (the gang's pods are)");
}

// A Volcano Job (batch.volcano.sh/v1alpha1): one gang job whose groups are its tasks, each task's
// pod template read like a pod; replicas already bound (pods labelled volcano.sh/job-name and
// annotated volcano.sh/task-spec) are running work and leave the task. Pods Volcano would create
// are named <job>-<task>-<index>.
// Volcano's spec.networkTopology on a PodGroup or a Volcano Job (network-topology-aware scheduling,
// Volcano 1.12): mode "hard" (the default) puts every task inside one HyperNode of tier at most
// highestTierAllowed (or of the tier named highestTierName), else the job waits; "soft" prefers one,
// by that tier when given (Volcano's scheduler reads it as the preferred tier), else the lowest.
// HyperNode objects are not read: tier t is the reader's t-th topology level counted from the
// innermost (tier 1 = the last of Options::topology_levels and Kueue's levels), a tier name is a
// level name; reported as that approximation. Kueue's topology annotations, when given, win.
void Reader::read_network_topology(const Obj& o, const json* spec, Job& job) {
  const json* nt = child(spec, "networkTopology");
  if (!nt) return;
  get_object(o, nt, "spec.networkTopology");
  const std::string mode = get_string(o, child(nt, "mode"), "spec.networkTopology.mode");
  if (!mode.empty() && mode != "hard" && mode != "soft")
    o.fail("spec.networkTopology.mode", fmt::format("expected hard or soft, got {}", shown(mode)));
  const bool hard = mode != "soft";
  const std::string tier_name = get_string(o, child(nt, "highestTierName"), "spec.networkTopology.highestTierName");
  std::int64_t tier = 0;
  if (const json* t = child(nt, "highestTierAllowed")) tier = get_int(o, t, "spec.networkTopology.highestTierAllowed", 1, 1 << 20);
  const std::vector<std::string>& levels = in_.topology_levels;
  std::string level = tier_name;
  if (level.empty() && tier > 0 && static_cast<std::size_t>(tier) <= levels.size()) level = levels[levels.size() - static_cast<std::size_t>(tier)];
  if (level.empty() && tier == 0 && !hard && !levels.empty()) level = levels.back();
  if (level.empty()) {
    warn_.add(o, "spec.networkTopology",
              tier > 0 ? fmt::format("tier {} is above the {} topology levels read (--topology-level): no domain constraint", tier, levels.size())
                       : std::string("hard mode without highestTierAllowed (or highestTierName) constrains nothing, as in Volcano"));
    return;
  }
  if (!job.job_topology.level.empty()) {
    warn_.add(o, "spec.networkTopology", "Kueue's topology annotation is given too: it is the one followed");
    return;
  }
  job.job_topology = {level, hard ? LevelMode::kRequired : LevelMode::kPreferred};
  warn_.add(o, "spec.networkTopology",
            fmt::format("read as {} topology level {} (HyperNode objects are not read: tier 1 is the innermost --topology-level)",
                        hard ? "required" : "preferred", shown(level)));
}

void Reader::read_volcano_jobs() {
  for (const Obj& o : objs_) {
    if (o.kind != "Job" || o.group != "batch.volcano.sh") continue;
    const json* spec = child(o.v, "spec");
    if (!spec) o.fail("spec", "missing", ErrorCode::kMissingField);
    const std::string scheduler = get_string(o, child(spec, "schedulerName"), "spec.schedulerName");
    if (!opt_.scheduler_name.empty() && scheduler != opt_.scheduler_name) {
      in_.skipped.push_back({o.ns, o.name});
      continue;
    }
    const json* tasks = child(spec, "tasks");
    if (!tasks) o.fail("spec.tasks", "missing", ErrorCode::kMissingField);
    get_array(o, tasks, "spec.tasks");
    if (tasks->empty()) o.fail("spec.tasks", "expected at least one task");
    Job job;
    JobSource src;
    src.kind = "Job";
    src.object = {o.ns, o.name};
    job.job_name = o.ns + "/" + o.name;
    job.queue_name = get_string(o, child(spec, "queue"), "spec.queue");
    job.job_submit_time = parse_timestamp(o, path(o.v, {"metadata", "creationTimestamp"}));
    std::int64_t total = 0, running = 0;
    bool per_task_min = false;
    std::set<std::string> names;
    for (std::size_t t = 0; t < tasks->size(); ++t) {
      const json& task = (*tasks)[t];
      const std::string tp = fmt::format("spec.tasks[{}]", t);
      std::string name = get_string(o, child(&task, "name"), tp + ".name");
      if (name.empty()) name = fmt::format("task-{}", t);
      if (!names.insert(name).second) o.fail(tp + ".name", fmt::format("duplicate task \"{}\"", name), ErrorCode::kDuplicate);
      std::int64_t replicas = 1;
      // Kubernetes' documented scale ("Considerations for large clusters": at most 150,000 pods in
      // a cluster) bounds a job's replicas; 10^6 of them (268 bytes of YAML) took 1.75 GB here.
      if (const json* r = child(&task, "replicas")) replicas = get_int(o, r, tp + ".replicas", 0, kMaxPodsPerCluster);
      if (total + replicas > kMaxPodsPerCluster)
        o.fail(tp + ".replicas", fmt::format("the job's tasks have {} replicas: more than the {} pods a Kubernetes cluster holds",
                                             total + replicas, kMaxPodsPerCluster), ErrorCode::kLimit);
      PodSpecRead s = read_pod_spec(o, path(&task, {"template", "spec"}), tp + ".template.spec");
      const auto annotations = get_string_map(o, path(&task, {"template", "metadata", "annotations"}), tp + ".template.metadata.annotations");
      read_gpu_sharing(o, annotations, tp + ".template.metadata.annotations", s);
      if (job.job_topology.level.empty()) set_topology(job, annotations);
      const std::int64_t bound = volcano_running_[o.ns + "/" + o.name + "/" + name];
      running += bound;
      total += replicas;
      TaskGroupSpec g = group_from(s, name);
      g.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(0, replicas - bound));
      if (const json* m = child(&task, "minAvailable")) {
        g.min_replicas = static_cast<std::int32_t>(std::clamp<std::int64_t>(get_int(o, m, tp + ".minAvailable", 0, 1 << 20) - bound, 0, g.replicas));
        per_task_min = true;
      }
      job.job_priority_class = get_string(o, child(spec, "priorityClassName"), "spec.priorityClassName");
      if (job.job_priority_class.empty()) job.job_priority_class = s.priority_class;
      std::vector<PodRef> pods;
      for (std::int64_t r = bound; r < replicas; ++r) pods.push_back({o.ns, fmt::format("{}-{}-{}", o.name, name, r)});
      if (g.replicas == 0) continue;
      job.groups.push_back(std::move(g));
      src.pods.push_back(std::move(pods));
    }
    if (job.groups.empty()) continue;  // everything runs
    PodSpecRead klass;
    klass.priority_class = job.job_priority_class;
    job.job_priority = priority_of(o, klass, "spec.priorityClassName");
    std::int64_t min_available = total;
    if (const json* m = child(spec, "minAvailable")) min_available = get_int(o, m, "spec.minAvailable", 0, 1 << 20);
    const std::int64_t need = std::max<std::int64_t>(0, min_available - running);
    std::int64_t pending = total - running;
    if (!per_task_min && need < pending) {
      if (job.groups.size() == 1) job.groups[0].min_replicas = static_cast<std::int32_t>(need);
      else warn_.add(o, "spec.minAvailable", "a minimum over several tasks without per-task minAvailable is read as rigid");
    }
    read_network_topology(o, spec, job);
    for (const char* k : {"policies", "plugins"})
      if (child(spec, k)) warn_.add(o, fmt::format("spec.{}", k), fmt::format("spec.{} is not modelled", k));
    in_.jobs.push_back(std::move(job));
    in_.sources.push_back(std::move(src));
  }
}

// A ResourceFlavor's GPU model: its nvidia.com/gpu.product node label, else the model of the nodes
// its nodeLabels select (the one with the most GPUs when they select several; reported).

}  // namespace gpusched::io::k8s::reader
