// Kubernetes Nodes into the cluster: capacity, GPU products (GPU Feature Discovery), MIG, taints.
#include "io/k8s/k8s_reader.hpp"

namespace gpusched::io::k8s::reader {

// ---- nodes ----

void Reader::read_node(const Obj& o) {
  NodeSpec node;
  node.name = o.name;
  if (node_index_.contains(node.name)) o.fail("metadata.name", fmt::format("duplicate node \"{}\"", node.name), ErrorCode::kDuplicate);
  node.labels = get_string_map(o, path(o.v, {"metadata", "labels"}), "metadata.labels");
  std::int64_t whole = 0;
  std::vector<std::pair<std::string, std::int64_t>> mig;
  read_node_resources(o, node, whole, mig);
  NodeRec rec;
  if (whole > 0 || !mig.empty()) read_node_gpus(o, node, rec, whole, mig);
  if (const json* u = path(o.v, {"spec", "unschedulable"})) {
    if (!u->is_boolean()) o.fail("spec.unschedulable", fmt::format("expected true or false, got {}", shown(*u)));
    node.schedulable = !u->get<bool>();
  }
  if (const json* conds = path(o.v, {"status", "conditions"})) {
    get_array(o, conds, "status.conditions");
    bool ready = false;
    for (std::size_t i = 0; i < conds->size(); ++i) {
      const json& c = (*conds)[i];
      if (get_string(o, child(&c, "type"), fmt::format("status.conditions[{}].type", i)) == "Ready")
        ready = get_string(o, child(&c, "status"), fmt::format("status.conditions[{}].status", i)) == "True";
    }
    node.healthy = ready;
  }
  if (const json* ts = path(o.v, {"spec", "taints"})) rec.taint_mask = read_node_taints(o, *ts);
  gpus_read_ += node.gpus.size();
  if (gpus_read_ > kMaxClusterGpus)
    o.fail("status.allocatable", fmt::format("the nodes so far have {} GPUs: more than the {} a cluster may have", gpus_read_,
                                             kMaxClusterGpus), ErrorCode::kLimit);
  node_index_.emplace(node.name, nodes_.size());
  nodes_.push_back(std::move(node));
  rec.source = o.source;
  node_recs_.push_back(rec);
}

// The node's allocatable (or, by option or when it has none, capacity) CPU, memory, whole GPUs
// (nvidia.com/gpu) and MIG devices by profile (nvidia.com/mig-<profile>, mixed strategy).
void Reader::read_node_resources(const Obj& o, NodeSpec& node, std::int64_t& whole,
                                 std::vector<std::pair<std::string, std::int64_t>>& mig) {
  const char* which = opt_.use_capacity ? "capacity" : "allocatable";
  const json* res = path(o.v, {"status", which});
  if (!res && !opt_.use_capacity) {
    which = "capacity";
    res = path(o.v, {"status", which});
  }
  if (!res) o.fail("status.allocatable", "missing (and no status.capacity)", ErrorCode::kMissingField);
  get_object(o, res, fmt::format("status.{}", which));
  bool has_cpu = false, has_memory = false;
  for (const auto& [key, value] : res->items()) {
    const std::string f = fmt::format("status.{}[\"{}\"]", which, key);
    if (key == "cpu") {
      node.cpu = get_quantity(o, value, f, QuantityUnit::kMilli, kMilliPerCpu);
      has_cpu = true;
    } else if (key == "memory") {
      node.memory = get_quantity(o, value, f, QuantityUnit::kBytes, 1);
      has_memory = true;
    } else if (key == "nvidia.com/gpu") {
      whole = get_quantity(o, value, f, QuantityUnit::kCount, 1);
      if (whole > 65535) o.fail(f, fmt::format("expected at most 65535 GPUs, got {}", whole));
    } else if (key.rfind("nvidia.com/mig-", 0) == 0) {
      const std::int64_t n = get_quantity(o, value, f, QuantityUnit::kCount, 1);
      if (n > 4096) o.fail(f, fmt::format("expected at most 4096 MIG devices, got {}", n));
      if (n > 0) mig.emplace_back(key.substr(15), n);
    }
  }
  if (!has_cpu) o.fail(fmt::format("status.{}.cpu", which), "missing", ErrorCode::kMissingField);
  if (!has_memory) o.fail(fmt::format("status.{}.memory", which), "missing", ErrorCode::kMissingField);

}

// The GPUs of a node that has some: their model from GPU Feature Discovery's product label, whole
// GPUs or MIG instances (single strategy: the product names the profile; mixed: per-profile devices).
void Reader::read_node_gpus(const Obj& o, NodeSpec& node, NodeRec& rec, std::int64_t whole,
                            const std::vector<std::pair<std::string, std::int64_t>>& mig) {
  const std::string* product = find_label(node.labels, "nvidia.com/gpu.product");
  const std::string field = "metadata.labels[\"nvidia.com/gpu.product\"]";
  if (!product)
    o.fail(field, fmt::format("missing: the node has {} GPU devices and GPU Feature Discovery names their model here", whole + static_cast<std::int64_t>(mig.size())),
           ErrorCode::kMissingField);
  const Product p = split_product(*product);
  auto model = model_of(reg_, p.base);
  if (!model) o.fail(field, fmt::format("unknown GPU model {} (not in the GPU model registry; add it as a gpu_models row)", shown(*product)), ErrorCode::kUnknownName);
  // "A100-SXM4-40GB-MIG-" was read as whole GPUs: GFD's single strategy names the profile.
  if (p.mig && !mig::parse_profile_name(p.mig_profile))
    o.fail(field, fmt::format("{}: no MIG profile after \"-MIG-\" (GFD's single strategy writes e.g. A100-SXM4-40GB-MIG-1g.5gb)", shown(*product)));
  rec.model = *model;
  if (p.shared)
    warn_.add(o, field, "time-sliced GPUs (-SHARED): nvidia.com/gpu counts replicas; each replica is read as a whole GPU");
  const std::string* strategy = find_label(node.labels, "nvidia.com/mig.strategy");
  std::int64_t physical = -1;
  if (const std::string* c = find_label(node.labels, "nvidia.com/gpu.count")) {
    auto q = parse_quantity(*c, QuantityUnit::kCount);
    if (!q || *q > 65535) o.fail("metadata.labels[\"nvidia.com/gpu.count\"]", fmt::format("expected a GPU count, got \"{}\"", *c));
    physical = *q;
  }
  if (!p.mig_profile.empty()) {
    // MIG single strategy: nvidia.com/gpu counts MIG devices of the product's profile.
    if (strategy && *strategy != "single")
      o.fail(field, fmt::format("a MIG product \"{}\" with nvidia.com/mig.strategy \"{}\" (expected single)", *product, *strategy));
    if (!mig.empty()) o.fail(field, "MIG single-strategy product and nvidia.com/mig-* resources together");
    build_mig(o, node, rec.model, 0, {{p.mig_profile, whole}}, -1);
    rec.mig_profile = p.mig_profile;
  } else {
    node.gpus.assign(static_cast<std::size_t>(whole), GpuSpec{rec.model});
    if (!mig.empty()) build_mig(o, node, rec.model, whole, mig, physical);
  }
}

// spec.taints as a mask over the cluster's distinct NoSchedule/NoExecute taints (PreferNoSchedule is
// a scoring preference: warned about, not modelled).
std::uint64_t Reader::read_node_taints(const Obj& o, const json& ts) {
  std::uint64_t mask = 0;
  get_array(o, &ts, "spec.taints");
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const json& t = ts[i];
    const std::string f = fmt::format("spec.taints[{}]", i);
    Taint taint{get_string(o, child(&t, "key"), f + ".key", true), get_string(o, child(&t, "value"), f + ".value"),
                get_string(o, child(&t, "effect"), f + ".effect", true)};
    if (taint.effect == "PreferNoSchedule") {
      warn_.add(o, f + ".effect", "PreferNoSchedule taints are a scoring preference, not modelled");
      continue;
    }
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute")
      o.fail(f + ".effect", fmt::format("expected NoSchedule, PreferNoSchedule or NoExecute, got \"{}\"", taint.effect));
    auto it = std::find(taints_.begin(), taints_.end(), taint);
    if (it == taints_.end()) {
      if (taints_.size() == kMaxTaints) o.fail(f, fmt::format("more than {} distinct NoSchedule/NoExecute taints in the cluster", kMaxTaints), ErrorCode::kLimit);
      taints_.push_back(taint);
      it = taints_.end() - 1;
    }
    mask |= std::uint64_t{1} << (it - taints_.begin());
  }
  return mask;
}

// MIG devices as GPU instances on physical GPUs. The device plugin reports only counts per
// profile, not the layout, so the instances are laid out here: largest profile first, each on
// the first GPU with a free allowed placement (the profile table's start slices, NVIDIA MIG User
// Guide "Supported MIG Profiles"); GPUs beyond the whole ones come from nvidia.com/gpu.count when
// GFD gives it (mixed strategy: every physical GPU), else as many as the instances need.
void Reader::build_mig(const Obj& o, NodeSpec& node, const std::string& model, std::int64_t whole,
                       const std::vector<std::pair<std::string, std::int64_t>>& mig, std::int64_t physical_label) {
  const std::string field = mig.size() == 1 && whole == 0 && physical_label < 0 ? "metadata.labels[\"nvidia.com/gpu.product\"]"
                                                                               : "status.allocatable";
  const auto& catalog = mig::MigCatalog::builtin();
  const auto mid = catalog.find(model);
  if (!mid) o.fail(field, fmt::format("MIG devices on GPU model {}, which has no MIG profile table", model));
  const mig::MigGpuSpec& spec = catalog.spec(*mid);
  std::vector<std::pair<int, std::int64_t>> wanted;  // profile index, count
  for (const auto& [name, count] : mig) {
    const auto g = mig::parse_profile_name(name);
    const int pi = g ? mig::match_profile(spec, *g) : -1;
    if (pi < 0) o.fail(field, fmt::format("\"{}\" is not a MIG profile of {}", name, spec.model));
    wanted.emplace_back(pi, count);
  }
  std::sort(wanted.begin(), wanted.end(), [&](const auto& a, const auto& b) {
    return spec.profiles[static_cast<std::size_t>(a.first)].memory_slices > spec.profiles[static_cast<std::size_t>(b.first)].memory_slices;
  });
  struct Build {
    mig::SlotMask used = 0;
    std::vector<MigInstanceInfo> instances;
  };
  std::vector<Build> gpus;
  // GFD's nvidia.com/gpu.count counts every physical GPU (mixed strategy): those beyond the whole
  // ones carry the MIG devices. A count that leaves too few (0 with MIG devices, say) is reported.
  const std::int64_t fixed = physical_label >= 0 ? std::max<std::int64_t>(0, physical_label - whole) : -1;
  if (fixed > 0) gpus.resize(static_cast<std::size_t>(fixed));
  std::int64_t total = 0;
  for (const auto& [pi, count] : wanted) {
    const mig::MigProfile& prof = spec.profiles[static_cast<std::size_t>(pi)];
    // GPUs only fill up: a GPU that had no room for this profile has none for its next instance,
    // so the scan resumes where the last one was placed (it restarted at GPU 0: 65,535 devices
    // were quadratic, over 20 s for 100 such nodes).
    std::size_t from = 0;
    for (std::int64_t k = 0; k < count; ++k) {
      if (++total > 65535) o.fail(field, "too many MIG devices");
      bool placed = false;
      for (std::size_t g = from; g <= gpus.size() && !placed; ++g) {
        from = g;
        if (g == gpus.size()) {
          if (fixed >= 0)
            warn_.add(o, "metadata.labels[\"nvidia.com/gpu.count\"]",
                      "the MIG devices do not fit on the GPUs nvidia.com/gpu.count leaves for MIG; GPUs added");
          gpus.emplace_back();
        }
        Build& b = gpus[g];
        if (b.instances.size() >= spec.max_instances) continue;
        for (int s = 0; s < spec.memory_slots; ++s) {
          if (!((prof.starts >> s) & 1u) || (prof.window(s) & b.used)) continue;
          b.used |= prof.window(s);
          b.instances.push_back({prof.id, static_cast<std::uint8_t>(s), false});
          placed = true;
          break;
        }
      }
    }
  }
  for (auto& b : gpus) {
    GpuSpec g{model};
    g.mig_mode = true;
    g.mig_layout_fixed = true;  // the device plugin advertises instances; only the MIG manager makes them
    g.mig_instances = std::move(b.instances);
    node.gpus.push_back(std::move(g));
  }
}


}  // namespace gpusched::io::k8s::reader
