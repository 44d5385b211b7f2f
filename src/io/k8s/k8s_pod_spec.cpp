// What a pod spec asks for: containers, node selection and affinity classes, GPU sharing.
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s::reader {

// ---- pods ----

Req Reader::read_container(const Obj& o, const json& c, const std::string& prefix, std::string_view list, std::size_t index) {
  Req out;
  const json* res = child(&c, "resources");
  if (!res) return out;
  const json* requests = child(res, "requests");
  const json* limits = child(res, "limits");
  // Kubernetes: a request defaults to the limit when only the limit is given; extended resources
  // (nvidia.com/*) are given as limits and may not be overcommitted (request == limit). So every
  // request, then every limit without a request.
  auto entry = [&](const std::string& name, const json* v) {
    // "spec.containers[0].resources.requests[\"cpu\"]", made only for a message.
    auto f = [&] {
      return fmt::format("{}{}[{}].resources.{}[\"{}\"]", prefix, list, index,
                         requests && child(requests, name) ? "requests" : "limits", name);
    };
    if (name == "cpu") out.cpu = get_quantity(o, *v, f, QuantityUnit::kMilli, kMilliPerCpu);
    else if (name == "memory") out.memory = get_quantity(o, *v, f, QuantityUnit::kBytes, 1);
    else if (name == "nvidia.com/gpu") {
      out.gpu = get_quantity(o, *v, f, QuantityUnit::kCount, 1);
      if (out.gpu > 65535) o.fail(f(), fmt::format("expected at most 65535 GPUs, got {}", out.gpu));
    } else if (name.rfind("nvidia.com/mig-", 0) == 0) {
      const auto n = get_quantity(o, *v, f, QuantityUnit::kCount, 1);
      if (n > 0) out.mig[name.substr(15)] = n;
    } else {
      const auto r = io::detail::read_quantity(*v, f(), QuantityUnit::kBytes, 1);
      if (!r || *r != 0) warn_.add(o, fmt::format("spec.containers[].resources[\"{}\"]", name),
                                   fmt::format("resource {} is not modelled: nodes are not checked for it", name));
    }
  };
  const Field resources{prefix, list, static_cast<std::int64_t>(index), ".resources"};
  if (requests) get_object(o, requests, resources);
  if (limits) get_object(o, limits, resources);
  if (requests)
    for (auto it = requests->begin(); it != requests->end(); ++it) entry(it.key(), &*it);
  if (limits)
    for (auto it = limits->begin(); it != limits->end(); ++it)
      if (!requests || !child(requests, it.key())) entry(it.key(), &*it);
  return out;
}

bool Reader::term_matches(const json& term, std::size_t node) const {
  const NodeSpec& n = nodes_[node];
  for (const char* part : {"matchExpressions", "matchFields"}) {
    const json* exprs = child(&term, part);
    if (!exprs) continue;
    const bool fields = part[5] == 'F';
    for (const json& e : *exprs) {
      const std::string key = e.value("key", "");
      const std::string op = e.value("operator", "");
      const std::string* have = fields ? (key == "metadata.name" ? &n.name : nullptr) : find_label(n.labels, key);
      const json* values = child(&e, "values");
      auto in_values = [&](const std::string& s) {
        if (!values) return false;
        for (const json& x : *values)
          if (x.is_string() && x.get_ref<const std::string&>() == s) return true;
        return false;
      };
      bool ok = false;
      if (op == "In") ok = have && in_values(*have);
      else if (op == "NotIn") ok = !have || !in_values(*have);
      else if (op == "Exists") ok = have != nullptr;
      else if (op == "DoesNotExist") ok = have == nullptr;
      else if (op == "Gt" || op == "Lt") {
        if (!have || !values || values->size() != 1 || !(*values)[0].is_string()) return false;
        auto a = parse_quantity(*have, QuantityUnit::kCount);
        auto b = parse_quantity((*values)[0].get_ref<const std::string&>(), QuantityUnit::kCount);
        ok = a && b && (op == "Gt" ? *a > *b : *a < *b);
      }
      if (!ok) return false;
    }
  }
  return true;
}

// The class of a pod's node constraints that plain label equalities cannot say: which of the
// cluster's NoSchedule/NoExecute taints it tolerates ("Taints and Tolerations": a toleration
// matches a taint when the keys are equal (or the toleration's key is empty with Exists), the
// operator is Exists or the values are equal, and the effect is equal or empty), and its required
// node affinity terms (OR of terms, AND of expressions; In, NotIn, Exists, DoesNotExist, Gt, Lt;
// matchFields on metadata.name). Every class becomes a node label "gpusched.io/node-class-<k>"
// on the nodes it admits, and the pod selects it: exact, with the job model's selector.
int Reader::constraint_class(const Obj& o, const json* spec, const std::string& prefix, bool has_complex_affinity,
                             const json* terms) {
  std::uint64_t all = taints_.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << taints_.size()) - 1;
  std::uint64_t tolerated = 0;
  if (const json* tols = child(spec, "tolerations")) {
    get_array(o, tols, Field{prefix, ".tolerations"});
    for (std::size_t i = 0; i < tols->size(); ++i) {
      const json& t = (*tols)[i];
      const auto at = static_cast<std::int64_t>(i);
      const std::string key = get_string(o, child(&t, "key"), Field{prefix, ".tolerations", at, ".key"});
      std::string op = get_string(o, child(&t, "operator"), Field{prefix, ".tolerations", at, ".operator"});
      if (op.empty()) op = "Equal";
      if (op != "Equal" && op != "Exists")
        o.fail(Field{prefix, ".tolerations", at, ".operator"}.str(), fmt::format("expected Equal or Exists, got \"{}\"", op));
      const std::string value = get_string(o, child(&t, "value"), Field{prefix, ".tolerations", at, ".value"});
      const std::string effect = get_string(o, child(&t, "effect"), Field{prefix, ".tolerations", at, ".effect"});
      if (child(&t, "tolerationSeconds") && effect == "NoExecute")
        warn_.add(o, Field{prefix, ".tolerations", at, ".tolerationSeconds"}.str(), "tolerationSeconds (eviction after a delay) is not modelled");
      for (std::size_t k = 0; k < taints_.size(); ++k) {
        const Taint& tt = taints_[k];
        const bool key_ok = key.empty() ? op == "Exists" : key == tt.key;
        const bool value_ok = op == "Exists" || value == tt.value;
        const bool effect_ok = effect.empty() || effect == tt.effect;
        if (key_ok && value_ok && effect_ok) tolerated |= std::uint64_t{1} << k;
      }
    }
  }
  // Taints only matter on nodes that carry them: a class is needed when some node has a taint the
  // pod does not tolerate.
  const bool blocked = (taint_union_ & ~tolerated) != 0;
  if (!blocked && !has_complex_affinity) return -1;
  const std::string key = fmt::format("{:x}|{}", tolerated & all, has_complex_affinity ? terms->dump() : std::string());
  auto it = class_index_.find(key);
  if (it != class_index_.end()) return it->second;
  if (classes_.size() == kMaxClasses)
    o.fail(prefix, fmt::format("more than {} distinct combinations of tolerations and node affinity in the input", kMaxClasses),
           ErrorCode::kLimit);
  classes_.emplace_back(tolerated, has_complex_affinity ? std::make_shared<const json>(*terms) : nullptr);
  class_index_.emplace(key, static_cast<int>(classes_.size() - 1));
  return static_cast<int>(classes_.size() - 1);
}

// A pod's spec: requests as Kubernetes counts them ("Resource Management for Pods and Containers",
// "Init Containers", "Sidecar Containers"): the app containers' requests add up; an init container
// runs alone (beside the sidecars started before it), so the pod asks for the larger of the two;
// sidecars (init containers with restartPolicy Always) run on beside the app containers; the
// RuntimeClass overhead (spec.overhead) adds on top.
PodSpecRead Reader::read_pod_spec(const Obj& o, const json* spec, const std::string& prefix) {
  PodSpecRead out;
  if (!spec) o.fail(prefix, "missing", ErrorCode::kMissingField);
  get_object(o, spec, prefix);
  read_pod_requests(o, spec, prefix, out);
  read_gpu_product_selector(o, spec, prefix, out);
  out.scheduler = get_string(o, child(spec, "schedulerName"), Field{prefix, ".schedulerName"});
  if (out.scheduler.empty()) out.scheduler = "default-scheduler";
  if (const json* p = child(spec, "priority"))
    out.priority = static_cast<std::int32_t>(get_int(o, p, Field{prefix, ".priority"}, std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max()));
  out.priority_class = get_string(o, child(spec, "priorityClassName"), Field{prefix, ".priorityClassName"});
  out.node_name = get_string(o, child(spec, "nodeName"), Field{prefix, ".nodeName"});

  bool complex = false;
  const json* terms = nullptr;
  read_node_affinity(o, spec, prefix, out, complex, terms);
  if (child(spec, "topologySpreadConstraints"))
    warn_.add(o, prefix + ".topologySpreadConstraints", "topology spread constraints of single pods are not modelled");
  out.cls = constraint_class(o, spec, prefix, complex, terms);
  return out;
}

// What the pod asks for, as Kubernetes adds it up: the app containers' requests plus the sidecars
// (restartPolicy Always init containers), at least the peak of the init containers, plus the
// overhead; GPUs whole, or one MIG device.
void Reader::read_pod_requests(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out) {
  const json* containers = child(spec, "containers");
  if (!containers) o.fail(prefix + ".containers", "missing", ErrorCode::kMissingField);
  get_array(o, containers, Field{prefix, ".containers"});
  // Requests add up in int64; a sum past it is refused (65,538 containers of 65,535 GPUs wrapped to 2).
  auto add = [&](Req& to, const Req& r) {
    if (const char* resource = to.add(r))
      o.fail(prefix + ".containers[].resources", fmt::format("the pod's {} requests add up past 2^63", resource), ErrorCode::kOverflow);
  };
  Req app;
  for (std::size_t i = 0; i < containers->size(); ++i) add(app, read_container(o, (*containers)[i], prefix, ".containers", i));
  Req init_peak, sidecars;
  if (const json* inits = child(spec, "initContainers")) {
    get_array(o, inits, Field{prefix, ".initContainers"});
    for (std::size_t i = 0; i < inits->size(); ++i) {
      const json& c = (*inits)[i];
      Req r = read_container(o, c, prefix, ".initContainers", i);
      const json* rp = child(&c, "restartPolicy");
      if (rp && rp->is_string() && rp->get_ref<const std::string&>() == "Always") {
        add(sidecars, r);
        init_peak.max_with(sidecars);
      } else {
        add(r, sidecars);
        init_peak.max_with(r);
      }
    }
  }
  add(app, sidecars);
  app.max_with(init_peak);
  if (const json* oh = child(spec, "overhead")) {
    get_object(o, oh, prefix + ".overhead");
    Req overhead;
    if (const json* c = child(oh, "cpu")) overhead.cpu = get_quantity(o, *c, prefix + ".overhead.cpu", QuantityUnit::kMilli, kMilliPerCpu);
    if (const json* m = child(oh, "memory")) overhead.memory = get_quantity(o, *m, prefix + ".overhead.memory", QuantityUnit::kBytes, 1);
    add(app, overhead);
  }
  if (app.gpu > 65535)
    o.fail(prefix + ".containers[].resources", fmt::format("the pod asks for {} GPUs; at most 65535", app.gpu), ErrorCode::kLimit);
  out.shape.cpu = app.cpu;
  out.shape.memory = app.memory;
  std::int64_t mig_devices = 0;
  for (const auto& [p, n] : app.mig) mig_devices += n;
  if (mig_devices > 0) {
    if (mig_devices > 1 || app.gpu > 0)
      o.fail(prefix + ".containers[].resources", fmt::format("asks for {} GPUs and {} MIG devices; the job model gives a task one MIG instance or whole GPUs", app.gpu, mig_devices));
    out.mig_profile = app.mig.begin()->first;
    if (!mig::parse_profile_name(out.mig_profile))
      o.fail(prefix + ".containers[].resources", fmt::format("\"nvidia.com/mig-{}\" is not a MIG profile", out.mig_profile));
  } else if (app.gpu > 0) {
    out.shape.gpus = static_cast<GpuCount>(app.gpu);
    out.shape.gpu_milli = kMilliPerGpu;
  }
}

// nodeSelector, and the GPU model (and MIG single-strategy profile) its GPU product label names.
void Reader::read_gpu_product_selector(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out) {
  out.selector = get_string_map(o, child(spec, "nodeSelector"), Field{prefix, ".nodeSelector"});
  if (const std::string* product = find_label(out.selector, "nvidia.com/gpu.product")) {
    const Product p = split_product(*product);
    if (p.mig && !mig::parse_profile_name(p.mig_profile))
      o.fail(prefix + ".nodeSelector[\"nvidia.com/gpu.product\"]",
             fmt::format("{}: no MIG profile after \"-MIG-\" (GFD's single strategy writes e.g. A100-SXM4-40GB-MIG-1g.5gb)", shown(*product)));
    if (auto model = model_of(reg_, p.base)) out.models.push_back(*model);
    if (!p.mig_profile.empty() && out.shape.gpus == 1 && out.mig_profile.empty()) {
      // MIG single strategy: nvidia.com/gpu on a MIG product's nodes is one MIG device.
      out.mig_profile = p.mig_profile;
      out.shape.gpus = 0;
      out.shape.gpu_milli = 0;
    }
  }
}

// Node affinity: a single term of single-value In expressions is a plain selector; anything else
// a constraint class.
void Reader::read_node_affinity(const Obj& o, const json* spec, const std::string& prefix, PodSpecRead& out, bool& complex,
                                const json*& terms) {
  if (const json* aff = child(spec, "affinity")) {
    const std::string ap = prefix + ".affinity";
    for (const char* k : {"podAffinity", "podAntiAffinity"})
      if (child(aff, k)) warn_.add(o, fmt::format("{}.{}", ap, k), fmt::format("{} is not modelled (pods are placed without it)", k));
    if (const json* na = child(aff, "nodeAffinity")) {
      if (child(na, "preferredDuringSchedulingIgnoredDuringExecution"))
        warn_.add(o, ap + ".nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                  "preferred node affinity is a scoring preference, not modelled");
      if (const json* req = child(na, "requiredDuringSchedulingIgnoredDuringExecution")) {
        const std::string rp = ap + ".nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
        terms = child(req, "nodeSelectorTerms");
        if (!terms) o.fail(rp, "missing", ErrorCode::kMissingField);
        get_array(o, terms, rp);
        if (terms->empty()) o.fail(rp, "an empty list matches no node");
        std::vector<std::pair<std::string, std::string>> simple;
        for (std::size_t t = 0; t < terms->size(); ++t) {
          const json& term = (*terms)[t];
          const std::string tp = fmt::format("{}[{}]", rp, t);
          get_object(o, &term, tp);
          for (const char* part : {"matchExpressions", "matchFields"}) {
            const json* exprs = child(&term, part);
            if (!exprs) continue;
            get_array(o, exprs, fmt::format("{}.{}", tp, part));
            for (std::size_t e = 0; e < exprs->size(); ++e) {
              const json& ex = (*exprs)[e];
              const std::string ep = fmt::format("{}.{}[{}]", tp, part, e);
              const std::string key = get_string(o, child(&ex, "key"), ep + ".key", true);
              const std::string op = get_string(o, child(&ex, "operator"), ep + ".operator", true);
              const json* values = child(&ex, "values");
              check_selector_requirement(o, ex, ep, key, op, part[5] == 'F');
              if (terms->size() == 1 && part[5] == 'E' && op == "In" && values->size() == 1)
                simple.emplace_back(key, (*values)[0].get<std::string>());
              else
                complex = true;
            }
          }
        }
        if (!complex) {
          for (auto& kv : simple) {
            if (!find_label(out.selector, kv.first)) out.selector.push_back(std::move(kv));
            else if (*find_label(out.selector, kv.first) != kv.second) complex = true;  // contradicts: no node fits
          }
        }
      }
    }
  }
}

// One requirement of a nodeSelectorTerm (matchExpressions or matchFields; its key and operator read),
// checked as the API server validates it: a known operator, string values, Gt/Lt with one value,
// In/NotIn with at least one, matchFields on metadata.name only.
void Reader::check_selector_requirement(const Obj& o, const json& ex, const std::string& ep, const std::string& key,
                                        const std::string& op, bool match_fields) {
  static const std::set<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
  if (!ops.contains(op))
    o.fail(ep + ".operator", fmt::format("expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got \"{}\"", op));
  const json* values = child(&ex, "values");
  if (values) {
    get_array(o, values, ep + ".values");
    for (std::size_t k = 0; k < values->size(); ++k) get_string(o, &(*values)[k], fmt::format("{}.values[{}]", ep, k));
  }
  if (match_fields && key != "metadata.name")
    o.fail(ep + ".key", fmt::format("matchFields supports metadata.name only, got \"{}\"", key));
  if ((op == "Gt" || op == "Lt") && (!values || values->size() != 1))
    o.fail(ep + ".values", fmt::format("{} takes exactly one value", op));
  if ((op == "In" || op == "NotIn") && (!values || values->empty()))
    o.fail(ep + ".values", fmt::format("{} needs at least one value", op));
}

// GPU sharing by annotation, as KAI-Scheduler (and Run:ai) read it from a pod with no GPU resources
// (KAI pkg/common/constants, docs/gpu-sharing): `gpu-fraction: "0.5"` is that share of one GPU,
// `gpu-memory: "2000"` that many MiB of one GPU's memory (its share is the memory's part of the GPU:
// KAI counts gpu-memory / the node's GPU memory), `gpu-fraction-num-devices` the number of such
// devices (1 unless given). Run:ai's legacy MIG form puts the MIG resource in an annotation
// (`nvidia.com/mig-1g.5gb: "1"`, resources {}): one MIG instance of that profile. KAI refuses a
// fraction beside nvidia.com/gpu, and gpu-memory beside either; so does this reader, naming the field.
void Reader::read_gpu_sharing(const Obj& o, const std::vector<std::pair<std::string, std::string>>& annotations,
                              const std::string& prefix, PodSpecRead& s) {
  const std::string* fraction = find_label(annotations, "gpu-fraction");
  const std::string* memory = find_label(annotations, "gpu-memory");
  const std::string* devices = find_label(annotations, "gpu-fraction-num-devices");
  auto field = [&](std::string_view key) { return fmt::format("{}[\"{}\"]", prefix, key); };
  for (const auto& [key, value] : annotations) {
    if (key.rfind("nvidia.com/mig-", 0) != 0) continue;
    const auto count = parse_quantity(value, QuantityUnit::kCount);
    if (!count || *count != 1)
      o.fail(field(key), fmt::format("expected \"1\" (a task holds one MIG instance), got {}", shown(value)));
    if (s.shape.needs_gpu() || !s.mig_profile.empty() || fraction || memory)
      o.fail(field(key), "a MIG annotation beside GPU resources, another MIG device or a GPU fraction");
    s.mig_profile = key.substr(15);
    if (!mig::parse_profile_name(s.mig_profile)) o.fail(field(key), fmt::format("\"{}\" is not a MIG profile", key));
  }
  if (devices && !fraction && !memory) o.fail(field("gpu-fraction-num-devices"), "given without gpu-fraction or gpu-memory");
  if (!fraction && !memory) return;
  const std::string_view key = fraction ? "gpu-fraction" : "gpu-memory";
  if (fraction && memory) o.fail(field("gpu-memory"), "beside gpu-fraction (KAI: cannot request both GPU and GPU memory)");
  if (s.shape.needs_gpu() || !s.mig_profile.empty())
    o.fail(field(key), "beside nvidia.com/gpu or a MIG device (KAI: cannot have both GPU fraction request and whole GPU resource request)");
  std::int64_t num_devices = 1;
  if (devices) {
    const auto n = parse_quantity(*devices, QuantityUnit::kCount);
    if (!n || *n < 1 || *n > 1024)
      o.fail(field("gpu-fraction-num-devices"), fmt::format("expected a count of GPUs (1 to 1024), got {}", shown(*devices)));
    num_devices = *n;
  }
  s.shape.gpus = 1;
  if (fraction) {
    // A decimal in (0, 1]; KAI's webhook takes (0, 1), its scheduler (0, 1]. Rounded up to milli-GPU.
    const auto v = parse_decimal(*fraction);
    if (!v || !(*v > 0) || *v > 1) o.fail(field(key), fmt::format("expected a fraction of one GPU in (0, 1], got {}", shown(*fraction)));
    s.shape.gpu_milli = static_cast<MilliGpu>(std::clamp(std::ceil(*v * kMilliPerGpu - 1e-9), 1.0, double{kMilliPerGpu}));
  } else {
    const auto mib = parse_quantity(*memory, QuantityUnit::kCount);
    if (!mib || *mib < 1 || *mib > (std::int64_t{1} << 30))
      o.fail(field(key), fmt::format("expected GPU memory in MiB (a positive integer), got {}", shown(*memory)));
    s.shape.gpu_memory = *mib << 20;
    s.shape.gpu_milli = memory_share(s.models, s.shape.gpu_memory);
    if (s.models.empty() && s.node_name.empty())
      warn_.add(o, field(key),
                "GPU memory read as a share of the smallest GPU that holds it (a pod on a larger GPU holds more share "
                "than KAI counts there; a nvidia.com/gpu.product nodeSelector makes it exact)");
  }
  // A share of each of N GPUs: the job model shares one GPU per task, so the task takes N whole GPUs
  // (never over-committed: it holds at least what KAI gives it; it packs less densely), reported.
  if (num_devices > 1) {
    warn_.add(o, field("gpu-fraction-num-devices"),
              "a share of each of several GPUs is read as that many whole GPUs (the job model shares one GPU per task)");
    s.shape.gpus = static_cast<GpuCount>(num_devices);
    s.shape.gpu_milli = kMilliPerGpu;
  }
}

// The share of one GPU that `memory` is: of the pod's GPU model when it names one, else of the
// smallest GPU of the cluster that holds it (never less than KAI reserves on any node it may use;
// on a larger GPU the pod holds more share than KAI would, which is reported).
MilliGpu Reader::memory_share(const std::vector<std::string>& models, Bytes memory) const {
  Bytes of = 0;
  auto consider = [&](const std::string& model) {
    const auto id = reg_.find(model);
    const Bytes m = id ? reg_.model(*id).memory : 0;
    if (m >= memory && (of == 0 || m < of)) of = m;
  };
  // (The cluster's distinct models, not every node: this runs for every pod that asks by memory.)
  for (const std::string& m : models.empty() ? cluster_models_ : std::vector<std::string>{models[0]}) consider(m);
  if (of == 0) return kMilliPerGpu;  // no GPU holds it: it fits nowhere either way
  return static_cast<MilliGpu>(std::clamp<std::int64_t>((memory * kMilliPerGpu + of - 1) / of, 1, kMilliPerGpu));
}

// Shape and selectors, for grouping a gang's pods into task groups (only gangs need it).

}  // namespace gpusched::io::k8s::reader
