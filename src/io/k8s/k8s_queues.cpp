// Kueue ClusterQueues / LocalQueues / ResourceFlavors, Volcano Queues and KAI Queues into queues.
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s::reader {

std::string Reader::flavor_model(const Obj& o, const std::string& flavor) {
  const Obj* rf = nullptr;
  for (const Obj& x : objs_)
    if (x.kind == "ResourceFlavor" && x.name == flavor) rf = &x;
  if (!rf) {
    warn_.add(o, "spec.resourceGroups[].flavors[].name", fmt::format("ResourceFlavor \"{}\" is not in the input: its GPU quota applies to every GPU model", flavor));
    return {};
  }
  const auto labels = get_string_map(*rf, path(rf->v, {"spec", "nodeLabels"}), "spec.nodeLabels");
  if (const std::string* product = find_label(labels, "nvidia.com/gpu.product")) {
    auto m = model_of(reg_, split_product(*product).base);
    if (!m) rf->fail("spec.nodeLabels[\"nvidia.com/gpu.product\"]", fmt::format("unknown GPU model \"{}\"", *product), ErrorCode::kUnknownName);
    return *m;
  }
  for (const char* k : {"nodeTaints", "tolerations"})
    if (path(rf->v, {"spec", k}))
      warn_.add(*rf, fmt::format("spec.{}", k),
                std::string_view(k) == "nodeTaints" ? "flavor node taints are not read (the nodes' own taints are)"
                                                    : "flavor tolerations (added to admitted pods) are not read");
  std::map<std::string, std::size_t> gpus;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    bool match = true;
    for (const auto& [k, v] : labels) {
      const std::string* have = find_label(nodes_[n].labels, k);
      match = match && have && *have == v;
    }
    if (match && !node_recs_[n].model.empty()) gpus[node_recs_[n].model] += nodes_[n].gpus.size();
  }
  if (gpus.empty()) return {};
  auto best = std::max_element(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (gpus.size() > 1)
    warn_.add(*rf, "spec.nodeLabels", fmt::format("the flavor's nodes have {} GPU models; its GPU quota is read as {}", gpus.size(), best->first));
  return best->first;
}

void add_amount(std::vector<std::pair<std::string, std::int64_t>>& v, const std::string& key, std::int64_t x) {
  for (auto& [k, a] : v)
    if (k == key) {
      // Saturating: two flavors' INT64_MAX memory quotas wrapped to -2 ("expected a non-negative
      // amount, got -2"); more than int64 holds is no limit at all.
      if (a == fairness::kNoLimit || x == fairness::kNoLimit || __builtin_add_overflow(a, x, &a)) a = fairness::kNoLimit;
      return;
    }
  v.emplace_back(key, x);
}

void Reader::read_queues() {
  std::set<std::string> names;
  for (const Obj& o : objs_) {
    const bool kueue = o.kind == "ClusterQueue" && o.group == "kueue.x-k8s.io";
    const bool kai = o.kind == "Queue" && o.group == "scheduling.run.ai";
    const bool volcano = o.kind == "Queue" && o.group == "scheduling.volcano.sh";
    if (!kueue && !kai && !volcano) continue;
    if (!names.insert(o.name).second) o.fail("metadata.name", fmt::format("duplicate queue \"{}\"", o.name), ErrorCode::kDuplicate);
    const json* spec = child(o.v, "spec");
    QueueSpec q;
    q.name = o.name;
    if (kueue) read_kueue_queue(o, spec, q);
    else if (kai) read_kai_queue(o, spec, q);
    else read_volcano_queue(o, spec, q);
    in_.queues.push_back(std::move(q));
  }
  finish_kai_queues();
  finish_volcano_hierarchy();
}

// Kueue ClusterQueue (kueue.sigs.k8s.io/docs/concepts/cluster_queue): per flavor and resource
// nominalQuota, borrowingLimit, lendingLimit; a resource the queue does not cover is
// inadmissible (nominal 0). The fairness model has one CPU and one memory dimension, so CPU
// and memory quotas of several flavors add up; GPU quotas go to their flavor's GPU model.
void Reader::read_kueue_queue(const Obj& o, const json* spec, QueueSpec& q) {
  q.kind = "ClusterQueue";
  q.unlisted = 0;
  q.cohort = get_string(o, child(spec, "cohort"), "spec.cohort");
  if (q.cohort.empty()) q.cohort = get_string(o, child(spec, "cohortName"), "spec.cohortName");
  const std::string strategy = get_string(o, child(spec, "queueingStrategy"), "spec.queueingStrategy");
  if (!strategy.empty() && strategy != "BestEffortFIFO" && strategy != "StrictFIFO")
    o.fail("spec.queueingStrategy", fmt::format("expected BestEffortFIFO or StrictFIFO, got \"{}\"", strategy));
  q.strict_fifo = strategy == "StrictFIFO";
  if (const json* w = path(spec, {"fairSharing", "weight"})) {
    auto r = io::detail::read_quantity(*w, "spec.fairSharing.weight", QuantityUnit::kMilli, kMilliPerCpu);
    if (!r || *r <= 0) o.fail("spec.fairSharing.weight", fmt::format("expected a positive weight, got {}", shown(*w)));
    q.weight = static_cast<double>(*r) / 1000.0;
  }
  // Kueue's preemption policies, each Never unless set (kueue.sigs.k8s.io "Preemption"), followed
  // by the cycle for this queue's pending jobs.
  const json* pre = child(spec, "preemption");
  constexpr WithinQueue within[] = {WithinQueue::kNever, WithinQueue::kLowerPriority, WithinQueue::kLowerOrNewerEqualPriority};
  q.within_queue = within[get_choice(o, child(pre, "withinClusterQueue"), "spec.preemption.withinClusterQueue",
                                     {"Never", "LowerPriority", "LowerOrNewerEqualPriority"}, 0)];
  constexpr CohortReclaim reclaim[] = {CohortReclaim::kNever, CohortReclaim::kLowerPriority, CohortReclaim::kAny};
  q.reclaim_within_cohort = reclaim[get_choice(o, child(pre, "reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort",
                                               {"Never", "LowerPriority", "Any"}, 0)];
  if (const json* borrow = child(pre, "borrowWithinCohort")) {
    q.borrow_within_cohort.lower_priority =
        get_choice(o, child(borrow, "policy"), "spec.preemption.borrowWithinCohort.policy", {"Never", "LowerPriority"}, 0) == 1;
    if (const json* t = child(borrow, "maxPriorityThreshold"))
      q.borrow_within_cohort.max_priority_threshold =
          get_int(o, t, "spec.preemption.borrowWithinCohort.maxPriorityThreshold", std::numeric_limits<std::int32_t>::min(),
                  std::numeric_limits<std::int32_t>::max());
    if (q.borrow_within_cohort.lower_priority && q.reclaim_within_cohort == CohortReclaim::kNever)
      o.fail("spec.preemption.borrowWithinCohort.policy",
             "LowerPriority beside reclaimWithinCohort Never (Kueue refuses it: reclaimWithinCohort=Never and "
             "borrowWithinCohort.Policy!=Never)");
  }
  if (const json* ns = child(spec, "namespaceSelector"); ns && !(ns->is_object() && ns->empty()))
    warn_.add(o, "spec.namespaceSelector", "the namespace selector is not checked");
  if (child(spec, "admissionChecks") || child(spec, "admissionChecksStrategy"))
    warn_.add(o, "spec.admissionChecks", "admission checks are not modelled");
  read_kueue_resource_groups(o, spec, q);
}

// Kueue ClusterQueue spec.resourceGroups: per flavor and resource nominalQuota, borrowingLimit and
// lendingLimit, added to the queue's amounts by resource (cpu, memory, gpu/<the flavor's model>).
void Reader::read_kueue_resource_groups(const Obj& o, const json* spec, QueueSpec& q) {
  const std::vector<std::string>& models = cluster_models_;
  const json* groups = child(spec, "resourceGroups");
  if (groups) get_array(o, groups, "spec.resourceGroups");
  for (std::size_t gi = 0; groups && gi < groups->size(); ++gi) {
    const json& g = (*groups)[gi];
    const std::string gp = fmt::format("spec.resourceGroups[{}]", gi);
    const json* flavors = child(&g, "flavors");
    if (!flavors) o.fail(gp + ".flavors", "missing", ErrorCode::kMissingField);
    get_array(o, flavors, gp + ".flavors");
    for (std::size_t fi = 0; fi < flavors->size(); ++fi) {
      const json& f = (*flavors)[fi];
      const std::string fp = fmt::format("{}.flavors[{}]", gp, fi);
      const std::string fname = get_string(o, child(&f, "name"), fp + ".name", true);
      const json* resources = child(&f, "resources");
      if (!resources) o.fail(fp + ".resources", "missing", ErrorCode::kMissingField);
      get_array(o, resources, fp + ".resources");
      std::string model;
      bool model_known = false;
      for (std::size_t ri = 0; ri < resources->size(); ++ri) {
        const json& r = (*resources)[ri];
        const std::string rp = fmt::format("{}.resources[{}]", fp, ri);
        const std::string rname = get_string(o, child(&r, "name"), rp + ".name", true);
        std::vector<std::string> keys;
        QuantityUnit unit = QuantityUnit::kMilli;
        std::int64_t scale = kMilliPerCpu;
        if (rname == "cpu") keys = {"cpu"};
        else if (rname == "memory") keys = {"memory"}, unit = QuantityUnit::kBytes, scale = 1;
        else if (rname == "nvidia.com/gpu") {
          if (!model_known) model = flavor_model(o, fname), model_known = true;
          if (model.empty()) {
            if (models.size() > 1)
              warn_.add(o, rp, "a GPU quota whose flavor names no GPU model applies to every GPU model of the cluster");
            for (const auto& m : models) keys.push_back("gpu/" + m);
          } else {
            keys = {"gpu/" + model};
            if (std::find(q.flavor_order.begin(), q.flavor_order.end(), model) == q.flavor_order.end()) q.flavor_order.push_back(model);
          }
        } else {
          warn_.add(o, rp + ".name", fmt::format("quota on resource {} is not modelled", rname));
          continue;
        }
        auto amount = [&](const char* field) -> std::optional<std::int64_t> {
          const json* v = child(&r, field);
          if (!v) return std::nullopt;
          return get_quantity(o, *v, fmt::format("{}.{}", rp, field), unit, scale);
        };
        const auto nominal = amount("nominalQuota");
        if (!nominal) o.fail(rp + ".nominalQuota", "missing", ErrorCode::kMissingField);
        for (const auto& key : keys) {
          add_amount(q.nominal, key, *nominal);
          if (auto b = amount("borrowingLimit")) add_amount(q.borrowing_limit, key, *b);
          if (auto l = amount("lendingLimit")) add_amount(q.lending_limit, key, *l);
        }
      }
    }
    if (flavors->size() > 1) {
      bool host = false;
      for (const json& f : *flavors)
        if (const json* rs = child(&f, "resources"))
          for (const json& r : *rs) host = host || r.value("name", "") == "cpu" || r.value("name", "") == "memory";
      if (host) warn_.add(o, gp, "CPU and memory quotas of several flavors are added up (one CPU and one memory dimension)");
    }
  }
}

// KAI Scheduler Queue (docs/queues): per resource quota (-1 unlimited), limit (-1 none; 0 or
// unset: nothing above quota) and overQuotaWeight; CPU in millicores, memory in MB (10^6
// bytes), GPUs in devices. Every KAI queue lends what it does not use to the others: one cohort.
void Reader::read_kai_queue(const Obj& o, const json* spec, QueueSpec& q) {
  const std::vector<std::string>& models = cluster_models_;
  q.kind = "Queue (KAI)";
  q.unlisted = fairness::kNoLimit;
  q.cohort = "kai";
  q.parent = get_string(o, child(spec, "parentQueue"), "spec.parentQueue");
  const json* res = child(spec, "resources");
  bool weight_set = false;
  for (const char* rname : {"cpu", "memory", "gpu"}) {
    const json* r = child(res, rname);
    if (!r) continue;
    const std::string rp = fmt::format("spec.resources.{}", rname);
    std::vector<std::string> keys;
    if (std::string_view(rname) == "gpu")
      for (const auto& m : models) keys.push_back("gpu/" + m);
    else keys = {rname};
    auto scaled = [&](const char* field, std::int64_t dflt) -> std::int64_t {
      const json* v = child(r, field);
      if (!v) return dflt;
      if (!v->is_number()) o.fail(fmt::format("{}.{}", rp, field), fmt::format("expected a number, got {}", shown(*v)));
      const double x = v->get<double>();
      if (x == -1) return fairness::kNoLimit;
      if (x < 0 || x > 1e15) o.fail(fmt::format("{}.{}", rp, field), fmt::format("expected -1 or a non-negative amount, got {}", shown(*v)));
      const double unit = std::string_view(rname) == "memory" ? 1e6 : 1.0;  // cpu: millicores; gpu: devices -> milli
      return static_cast<std::int64_t>(std::string_view(rname) == "gpu" ? x * 1000.0 : x * unit);
    };
    const std::int64_t quota = scaled("quota", 0);
    const std::int64_t limit = scaled("limit", 0);
    std::int64_t borrow = fairness::kNoLimit;
    if (quota != fairness::kNoLimit && limit != fairness::kNoLimit) borrow = std::max<std::int64_t>(0, limit - quota);
    for (const auto& key : keys) {
      add_amount(q.nominal, key, quota);
      add_amount(q.borrowing_limit, key, borrow);
    }
    if (const json* w = child(r, "overQuotaWeight"); w && std::string_view(rname) == "gpu") {
      if (!w->is_number() || w->get<double>() <= 0)
        o.fail(rp + ".overQuotaWeight", fmt::format("expected a positive number, got {}", shown(*w)));
      q.weight = w->get<double>();
      weight_set = true;
    }
  }
  (void)weight_set;
  if (child(spec, "priority")) warn_.add(o, "spec.priority", "queue priority (over-quota order) is not modelled");
  kai_objects_.emplace(q.name, &o);
}

// Volcano Queue (volcano.sh/en/docs/queue): weight; deserved -> nominal quota; capability ->
// the most it may hold (nominal + borrowing); all Volcano queues reclaim from each other.
void Reader::read_volcano_queue(const Obj& o, const json* spec, QueueSpec& q) {
  const std::vector<std::string>& models = cluster_models_;
  q.kind = "Queue (Volcano)";
  q.unlisted = fairness::kNoLimit;
  q.cohort = "volcano";
  if (const json* w = child(spec, "weight")) q.weight = static_cast<double>(get_int(o, w, "spec.weight", 1, 1 << 20));
  std::vector<std::pair<std::string, std::int64_t>> capability;
  for (auto [field, target] : {std::pair<const char*, std::vector<std::pair<std::string, std::int64_t>>*>{"deserved", &q.nominal},
                               {"capability", &capability}}) {
    const json* m = child(spec, field);
    if (!m) continue;
    get_object(o, m, fmt::format("spec.{}", field));
    for (const auto& [rname, v] : m->items()) {
      const std::string rp = fmt::format("spec.{}[\"{}\"]", field, rname);
      if (rname == "cpu") add_amount(*target, "cpu", get_quantity(o, v, rp, QuantityUnit::kMilli, kMilliPerCpu));
      else if (rname == "memory") add_amount(*target, "memory", get_quantity(o, v, rp, QuantityUnit::kBytes, 1));
      else if (rname == "nvidia.com/gpu") {
        const auto x = get_quantity(o, v, rp, QuantityUnit::kMilli, kMilliPerGpu);
        for (const auto& m2 : models) add_amount(*target, "gpu/" + m2, x);
      } else warn_.add(o, rp, fmt::format("resource {} is not modelled", rname));
    }
  }
  for (const auto& [key, cap] : capability) {
    std::int64_t nominal = fairness::kNoLimit;
    for (const auto& [k, a] : q.nominal)
      if (k == key) nominal = a;
    if (nominal == fairness::kNoLimit) add_amount(q.nominal, key, 0), nominal = 0;
    add_amount(q.borrowing_limit, key, std::max<std::int64_t>(0, cap - nominal));
  }
  if (child(spec, "guarantee")) warn_.add(o, "spec.guarantee", "guarantee is not modelled (deserved is the nominal quota)");
  if (const json* parent = child(spec, "parent"); parent && get_string(o, parent, "spec.parent") != "root")
    q.parent = get_string(o, parent, "spec.parent");  // Volcano >= 1.11 (capacity plugin's queue tree)
  read_volcano_hierarchy(o, q);
  if (const json* r = child(spec, "reclaimable"); r && r->is_boolean() && !r->get<bool>())
    warn_.add(o, "spec.reclaimable", "reclaimable: false is not modelled");
}

// Volcano's hierarchical DRF (docs/design/hdrf.md; the drf plugin with enableHierarchy): a Queue's
// annotations volcano.sh/hierarchy "root/eng/prod" and volcano.sh/hierarchy-weights "1/2/8" place it
// in a tree of weighted inner nodes. Each inner node becomes a parent queue named by its path
// ("root/eng": no Kubernetes object has a '/' in its name) with its weight; the leaf takes the last
// weight. Volcano clamps weights below 1 to 1 and prepends "root" when missing; so does this reader.
void Reader::read_volcano_hierarchy(const Obj& o, QueueSpec& q) {
  const auto annotations = get_string_map(o, path(o.v, {"metadata", "annotations"}), "metadata.annotations");
  const std::string* h = find_label(annotations, "volcano.sh/hierarchy");
  const std::string* w = find_label(annotations, "volcano.sh/hierarchy-weights");
  const std::string hf = "metadata.annotations[\"volcano.sh/hierarchy\"]";
  const std::string wf = "metadata.annotations[\"volcano.sh/hierarchy-weights\"]";
  if (!h && !w) return;
  if (!h || !w) o.fail(h ? wf : hf, "missing: volcano.sh/hierarchy and volcano.sh/hierarchy-weights go together", ErrorCode::kMissingField);
  auto split = [](std::string_view text) {
    std::vector<std::string> out;
    for (std::size_t at = 0;;) {
      const std::size_t slash = text.find('/', at);
      out.emplace_back(text.substr(at, slash == std::string_view::npos ? std::string_view::npos : slash - at));
      if (slash == std::string_view::npos) return out;
      at = slash + 1;
    }
  };
  std::vector<std::string> names = split(*h), weights = split(*w);
  if (names.empty() || names[0] != "root") {  // Volcano's admission policy prepends both
    names.insert(names.begin(), "root");
    weights.insert(weights.begin(), "1");
  }
  if (weights.size() != names.size())
    o.fail(wf, fmt::format("{} weights for the {} levels of {}", weights.size(), names.size(), shown(*h)));
  if (names.size() > 64) o.fail(hf, "more than 64 levels", ErrorCode::kLimit);
  VolcanoPath vp;
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k].empty()) o.fail(hf, fmt::format("an empty level in {}", shown(*h)));
    const auto x = parse_decimal(weights[k]);
    if (!x || *x > 1e9) o.fail(wf, fmt::format("level {}: expected a weight, got {}", k, shown(weights[k])));
    vp.weights.push_back(std::max(1.0, *x));
  }
  vp.names = std::move(names);
  vp.object = &o;
  q.weight = vp.weights.back();
  volcano_paths_.emplace(q.name, std::move(vp));
}

// The inner nodes of the Volcano paths read (read_volcano_hierarchy) as parent queues, outermost
// first; a path that is another's inner node, or an inner node given two weights, is an error.
void Reader::finish_volcano_hierarchy() {
  std::map<std::string, std::pair<double, const Obj*>> inner;  // "root/eng" -> weight, first object
  std::map<std::string, std::string> leaf_at;                   // "root/eng/prod" -> queue
  for (const auto& [queue, vp] : volcano_paths_) {
    std::string at = vp.names[0];
    for (std::size_t k = 1; k < vp.names.size(); ++k) {
      at += "/" + vp.names[k];
      if (k + 1 == vp.names.size()) {
        if (auto [it, fresh] = leaf_at.emplace(at, queue); !fresh)
          vp.object->fail("metadata.annotations[\"volcano.sh/hierarchy\"]",
                          fmt::format("the path {} is also queue {}'s", shown(at), it->second), ErrorCode::kDuplicate);
        continue;
      }
      auto [it, fresh] = inner.emplace(at, std::pair{vp.weights[k], vp.object});
      if (!fresh && it->second.first != vp.weights[k])
        vp.object->fail("metadata.annotations[\"volcano.sh/hierarchy-weights\"]",
                        fmt::format("{} has weight {} here and {} in Queue {}", shown(at), vp.weights[k], it->second.first,
                                    it->second.second->name));
    }
  }
  for (const auto& [at, queue] : leaf_at)
    if (inner.contains(at))
      volcano_paths_.at(queue).object->fail("metadata.annotations[\"volcano.sh/hierarchy\"]",
                                            fmt::format("{} is a leaf here and an inner node of another queue's path", shown(at)));
  for (const auto& [at, wo] : inner) {  // map order: a parent's path sorts before its children's
    QueueSpec p;
    p.name = at;
    p.kind = "Queue (Volcano)";
    p.weight = wo.first;
    const std::size_t slash = at.rfind('/');
    if (const std::string up = at.substr(0, slash); up.find('/') != std::string::npos) p.parent = up;
    in_.queues.push_back(std::move(p));
  }
  for (QueueSpec& q : in_.queues)
    if (auto it = volcano_paths_.find(q.name); it != volcano_paths_.end() && it->second.names.size() > 2) {
      const auto& n = it->second.names;
      std::string parent = n[0];
      for (std::size_t k = 1; k + 1 < n.size(); ++k) parent += "/" + n[k];
      q.parent = parent;
    }
}

// KAI's queue tree (docs/queues, docs/fairness): only leaf queues hold jobs; a parent divides what it
// gets among its children by their quotas, then by overQuotaWeight. In the one queue model a parent
// carries its weight only (the children's quotas apply), so a parent's quota or limit other than
// "none" (quota 0 or -1, limit -1) is reported by field. The cluster's capacity that no leaf's quota
// covers is KAI's over-quota pool, shared by weight: it joins the "kai" cohort as a member that holds
// no jobs ("(kai over-quota pool)"), so a queue of quota 0 and limit -1 (the quickstart's) may use
// what nobody's quota holds instead of nothing.
void Reader::finish_kai_queues() {
  if (kai_objects_.empty()) return;
  const auto parents = fairness::parent_queue_names(in_.queues);
  std::map<std::string, std::int64_t> quota_sum;  // per key, over leaves with a finite quota
  bool finite = false;
  for (QueueSpec& q : in_.queues) {
    if (q.kind != "Queue (KAI)") continue;
    if (!parents.contains(q.name)) {
      for (const auto& [key, x] : q.nominal)
        if (x != fairness::kNoLimit) {
          finite = true;
          std::int64_t& s = quota_sum[key];
          s = x > std::numeric_limits<std::int64_t>::max() - s ? std::numeric_limits<std::int64_t>::max() : s + x;
        }
      continue;
    }
    const Obj& o = *kai_objects_.at(q.name);
    for (const char* rname : {"cpu", "memory", "gpu"}) {
      const json* r = path(o.v, {"spec", "resources", rname});
      for (const char* field : {"quota", "limit"}) {
        const json* v = child(r, field);
        const double x = v && v->is_number() ? v->get<double>() : (std::string_view(field) == "quota" ? 0.0 : -1.0);
        if (std::string_view(field) == "quota" ? (x != 0 && x != -1) : x != -1)
          warn_.add(o, fmt::format("spec.resources.{}.{}", rname, field),
                    "a parent queue's quota and limit are not modelled: its child queues' quotas and limits apply, "
                    "and it divides by weight");
      }
    }
    q.nominal.clear();
    q.borrowing_limit.clear();
    q.cohort.clear();
  }
  if (!finite) return;
  std::map<std::string, std::int64_t> capacity;
  for (const NodeSpec& n : nodes_) {
    capacity["cpu"] += n.cpu;
    capacity["memory"] = n.memory > std::numeric_limits<std::int64_t>::max() - capacity["memory"]
                             ? std::numeric_limits<std::int64_t>::max()
                             : capacity["memory"] + n.memory;
    for (const GpuSpec& g : n.gpus)
      if (const auto id = reg_.find(g.model)) capacity["gpu/" + reg_.model(*id).name] += kMilliPerGpu;
  }
  QueueSpec pool;
  pool.name = "(kai over-quota pool)";
  pool.kind = "Queue (KAI)";
  pool.cohort = "kai";
  for (const auto& [key, cap] : capacity) {
    add_amount(pool.nominal, key, std::max<std::int64_t>(0, cap - quota_sum[key]));
    add_amount(pool.borrowing_limit, key, 0);
  }
  in_.queues.push_back(std::move(pool));
}

// Bound pods take their requests from their nodes: CPU and memory, whole GPUs on the lowest
// indices that are free (the device plugin's device IDs are not in the Pod object), a MIG device
// on the first idle instance of its profile.

}  // namespace gpusched::io::k8s::reader
