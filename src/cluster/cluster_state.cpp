#include "gpusched/cluster/cluster_state.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace gpusched {

std::string_view fit_reason_text(FitReason reason) {
  switch (reason) {
    case FitReason::kFits: return "fits";
    case FitReason::kNodeUnschedulable: return "node unschedulable";
    case FitReason::kNodeUnhealthy: return "node unhealthy";
    case FitReason::kSelectorMismatch: return "node selector mismatch";
    case FitReason::kGpuModelNotAllowed: return "GPU model not allowed";
    case FitReason::kInsufficientCpu: return "insufficient CPU";
    case FitReason::kInsufficientMemory: return "insufficient memory";
    case FitReason::kInsufficientGpus: return "insufficient GPUs";
    case FitReason::kInsufficientGpuShare: return "insufficient GPU share";
    case FitReason::kInsufficientGpuMemory: return "insufficient GPU memory";
  }
  return "?";
}

Result<ClusterState> ClusterState::build(const ClusterView& view, const GpuModelRegistry& registry) {
  ClusterState s;
  s.registry_ = registry;
  const std::size_t n_nodes = view.node_count();
  if (n_nodes >= std::numeric_limits<NodeId>::max())
    return Error{fmt::format("nodes: too many nodes ({})", n_nodes)};
  s.node_name_.reserve(n_nodes);
  s.cpu_capacity_.reserve(n_nodes);
  s.cpu_free_.reserve(n_nodes);
  s.memory_capacity_.reserve(n_nodes);
  s.memory_free_.reserve(n_nodes);
  s.flags_.reserve(n_nodes);
  s.gpu_begin_.reserve(n_nodes);
  s.gpu_end_.reserve(n_nodes);
  s.node_models_.reserve(n_nodes);
  s.node_index_model_.reserve(n_nodes);
  s.idle_gpus_.reserve(n_nodes);
  s.free_gpu_milli_.reserve(n_nodes);
  s.has_partial_.reserve(n_nodes);
  s.label_begin_.reserve(n_nodes + 1);
  s.label_begin_.push_back(0);

  // Model names repeat on every GPU: resolve each distinct spelling once.
  std::unordered_map<std::string, GpuModelId> model_cache;
  std::vector<bool> key_present(256, false);

  for (std::size_t n = 0; n < n_nodes; ++n) {
    const std::string_view name = view.node_name(n);
    if (name.empty()) return Error{fmt::format("nodes[{}].name: must not be empty", n)};
    s.node_name_.emplace_back(name);
    const NodeResources r = view.node_resources(n);
    auto check = [&](std::int64_t v, std::string_view field) -> Status {
      if (v < 0)
        return Error{fmt::format("nodes[{}] ({}).{}: expected a non-negative quantity, got {}", n, name,
                                 field, v)};
      return {};
    };
    for (auto [v, field] : {std::pair{r.cpu_capacity, "cpu"}, std::pair{r.cpu_free, "cpu free"},
                            std::pair{r.memory_capacity, "memory"},
                            std::pair{r.memory_free, "memory free"}}) {
      if (auto st = check(v, field); !st) return st.error();
    }
    if (r.cpu_free > r.cpu_capacity)
      return Error{fmt::format("nodes[{}] ({}).cpu: free {} exceeds capacity {}", n, name, r.cpu_free,
                               r.cpu_capacity)};
    if (r.memory_free > r.memory_capacity)
      return Error{fmt::format("nodes[{}] ({}).memory: free {} exceeds capacity {}", n, name,
                               r.memory_free, r.memory_capacity)};
    s.cpu_capacity_.push_back(r.cpu_capacity);
    s.cpu_free_.push_back(r.cpu_free);
    s.memory_capacity_.push_back(r.memory_capacity);
    s.memory_free_.push_back(r.memory_free);
    s.flags_.push_back(static_cast<std::uint8_t>((view.schedulable(n) ? 0 : kFlagCordoned) |
                                                 (view.healthy(n) ? 0 : kFlagFailed)));

    const std::size_t n_gpus = view.gpu_count(n);
    if (n_gpus > std::numeric_limits<GpuIndex>::max())
      return Error{fmt::format("nodes[{}] ({}).gpus: at most 65535 GPUs per node, got {}", n, name, n_gpus)};
    s.gpu_begin_.push_back(static_cast<std::uint32_t>(s.gpu_free_milli_.size()));
    GpuModelMask models = 0;
    std::int32_t idle = 0;
    MilliGpu free_sum = 0;
    bool partial = false;
    for (std::size_t g = 0; g < n_gpus; ++g) {
      const GpuInfo info = view.gpu(n, g);
      GpuModelId model;
      std::string key(info.model);
      if (auto it = model_cache.find(key); it != model_cache.end()) {
        model = it->second;
      } else {
        auto found = s.registry_.find(info.model);
        if (!found)
          return Error{fmt::format("nodes[{}] ({}).gpus[{}].model: unknown GPU model \"{}\"", n, name, g,
                                   info.model)};
        model = *found;
        model_cache.emplace(std::move(key), model);
      }
      if (info.free_milli < 0 || info.free_milli > kMilliPerGpu)
        return Error{fmt::format("nodes[{}] ({}).gpus[{}]: free share must be in 0..1000, got {}", n, name,
                                 g, info.free_milli)};
      const Bytes capacity = s.registry_.model(model).memory;
      if (info.used_memory < 0 || (capacity > 0 && info.used_memory > capacity))
        return Error{fmt::format("nodes[{}] ({}).gpus[{}]: used memory {} outside 0..{}", n, name, g,
                                 info.used_memory, capacity)};
      const bool gpu_ok = info.healthy;
      const std::int32_t free_milli = gpu_ok ? static_cast<std::int32_t>(info.free_milli) : 0;
      s.gpu_free_milli_.push_back(free_milli);
      s.gpu_free_memory_.push_back(gpu_ok ? std::max<Bytes>(0, capacity - info.used_memory) : 0);
      s.gpu_memory_capacity_.push_back(capacity);
      s.gpu_model_.push_back(model);
      s.gpu_healthy_.push_back(gpu_ok ? 1 : 0);
      models |= model_bit(model);
      if (gpu_ok) {
        s.total_gpu_capacity_ += kMilliPerGpu;
        s.total_gpu_free_ += free_milli;
      }
      if (free_milli == kMilliPerGpu) ++idle;
      if (free_milli > 0 && free_milli < kMilliPerGpu) partial = true;
      free_sum += free_milli;
    }
    s.gpu_end_.push_back(static_cast<std::uint32_t>(s.gpu_free_milli_.size()));
    s.node_models_.push_back(models);
    std::uint8_t key = kNoGpuKey;
    if (models != 0) key = std::has_single_bit(models) ? static_cast<std::uint8_t>(std::countr_zero(models))
                                                       : kMixedModels;
    s.node_index_model_.push_back(key);
    key_present[key] = true;
    s.idle_gpus_.push_back(idle);
    s.free_gpu_milli_.push_back(free_sum);
    s.has_partial_.push_back(partial ? 1 : 0);
    s.max_gpus_per_node_ = std::max<std::int32_t>(s.max_gpus_per_node_, static_cast<std::int32_t>(n_gpus));

    const std::size_t n_labels = view.label_count(n);
    for (std::size_t l = 0; l < n_labels; ++l) {
      const Label label = view.label(n, l);
      if (label.first.empty())
        return Error{fmt::format("nodes[{}] ({}).labels[{}]: empty label key", n, name, l)};
      auto intern = [](auto& ids, auto& names, std::string_view text) {
        auto [it, inserted] = ids.try_emplace(std::string(text), static_cast<std::uint32_t>(names.size()));
        if (inserted) names.emplace_back(text);
        return it->second;
      };
      s.labels_.push_back({intern(s.label_key_ids_, s.label_keys_, label.first),
                           intern(s.label_value_ids_, s.label_values_, label.second)});
    }
    auto first = s.labels_.begin() + s.label_begin_.back();
    std::sort(first, s.labels_.end(), [](auto a, auto b) { return a.key < b.key; });
    for (auto it = first; it + 1 < s.labels_.end(); ++it)
      if (it->key == (it + 1)->key)
        return Error{fmt::format("nodes[{}] ({}).labels: duplicate key \"{}\"", n, name,
                                 s.label_keys_[it->key])};
    s.label_begin_.push_back(static_cast<std::uint32_t>(s.labels_.size()));
  }

  // Names are unique: the output names nodes, so two with one name would be ambiguous.
  s.node_by_name_.reserve(n_nodes);
  for (std::size_t n = 0; n < n_nodes; ++n) {
    auto [it, inserted] = s.node_by_name_.try_emplace(s.node_name_[n], static_cast<NodeId>(n));
    if (!inserted)
      return Error{fmt::format("nodes[{}].name: duplicate node name \"{}\" (also nodes[{}])", n,
                               s.node_name_[n], it->second)};
  }

  // The index.
  s.model_slot_.assign(256, -1);
  for (std::size_t k = 0; k < 256; ++k) {
    if (!key_present[k]) continue;
    s.model_slot_[k] = static_cast<std::int16_t>(s.model_keys_.size());
    s.model_keys_.push_back(static_cast<std::uint8_t>(k));
    s.buckets_.emplace_back(static_cast<std::size_t>(s.max_gpus_per_node_) + 1,
                            NodeBitset(static_cast<std::uint32_t>(n_nodes)));
  }
  s.partial_nodes_ = NodeBitset(static_cast<std::uint32_t>(n_nodes));
  for (NodeId n = 0; n < n_nodes; ++n) {
    if (!s.eligible(n)) continue;
    s.buckets_[s.bucket_slot(s.node_index_model_[n])][s.idle_gpus_[n]].insert(n);
    if (s.has_partial_[n]) s.partial_nodes_.insert(n);
  }
  // Each homogeneous node's known interconnect (node_interconnect.hpp), interned once per
  // (model, GPU count).
  s.interconnects_.resize(n_nodes);
  std::vector<std::pair<std::pair<std::uint8_t, std::size_t>, std::uint32_t>> known;
  for (NodeId n = 0; n < n_nodes; ++n) {
    const std::uint8_t model = s.node_index_model_[n];
    if (model == kMixedModels || model == kNoGpuKey || s.gpu_count(n) < 2) continue;
    const std::pair<std::uint8_t, std::size_t> shape_key{model, s.gpu_count(n)};
    auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == shape_key; });
    if (it == known.end()) {
      auto ic = known_interconnect(registry.model(model).name, s.gpu_count(n));
      known.emplace_back(shape_key, ic ? s.interconnects_.intern(std::move(*ic)) : InterconnectTable::kNoShape);
      it = known.end() - 1;
    }
    s.interconnects_.assign(n, it->second);
  }
  return s;
}

std::size_t ClusterState::bucket_slot(std::uint8_t model_key) const {
  return static_cast<std::size_t>(model_slot_[model_key]);
}

const NodeBitset* ClusterState::idle_bucket(std::uint8_t model_key, std::int32_t idle) const {
  if (idle < 0 || idle > max_gpus_per_node_ || model_slot_.empty() || model_slot_[model_key] < 0)
    return nullptr;
  return &buckets_[bucket_slot(model_key)][static_cast<std::size_t>(idle)];
}

NodeId ClusterState::find_node(std::string_view name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? kNoNode : it->second;
}

std::uint32_t ClusterState::label_key_id(std::string_view key) const {
  auto it = label_key_ids_.find(std::string(key));
  return it == label_key_ids_.end() ? kUnknownLabel : it->second;
}

std::uint32_t ClusterState::label_value_id(std::string_view value) const {
  auto it = label_value_ids_.find(std::string(value));
  return it == label_value_ids_.end() ? kUnknownLabel : it->second;
}

std::uint32_t ClusterState::node_label_value(NodeId n, std::uint32_t key) const {
  for (const auto& l : node_labels(n))
    if (l.key == key) return l.value;
  return kUnknownLabel;
}

Result<TaskRequest> ClusterState::compile(const TaskShape& shape,
                                          std::span<const std::string_view> allowed_models,
                                          std::span<const Label> selector) const {
  if (shape.cpu < 0) return Error{fmt::format("cpu: expected a non-negative quantity, got {}", shape.cpu)};
  if (shape.memory < 0)
    return Error{fmt::format("memory: expected a non-negative quantity, got {}", shape.memory)};
  if (shape.gpus < 0) return Error{fmt::format("gpus: expected a non-negative integer, got {}", shape.gpus)};
  if (shape.gpu_memory < 0)
    return Error{fmt::format("gpu_memory: expected a non-negative quantity, got {}", shape.gpu_memory)};
  if (shape.gpus > 0 && (shape.gpu_milli < 1 || shape.gpu_milli > kMilliPerGpu))
    return Error{fmt::format("gpu_milli: expected a share in 1..1000, got {}", shape.gpu_milli)};
  if (shape.gpus > 1 && shape.gpu_milli != kMilliPerGpu)
    return Error{fmt::format("gpu_milli: a task of {} GPUs takes whole GPUs (1000), got {}", shape.gpus,
                             shape.gpu_milli)};
  TaskRequest req;
  req.shape = shape;
  if (shape.gpus == 0) req.shape.gpu_milli = 0;
  if (!allowed_models.empty()) {
    req.models = 0;
    for (std::size_t i = 0; i < allowed_models.size(); ++i) {
      auto id = registry_.find(allowed_models[i]);
      if (!id)
        return Error{fmt::format("gpu_models[{}]: unknown GPU model \"{}\"", i, allowed_models[i])};
      req.models |= model_bit(*id);
    }
  }
  for (const auto& [key, value] : selector) {
    // A selector naming a key or value no node has matches no node: not an error, a reason.
    req.selector.push_back({label_key_id(key), label_value_id(value)});
  }
  return req;
}

Result<TaskRequest> ClusterState::compile(const JobView& job, std::size_t group) const {
  const TaskGroupInfo info = job.group(group);
  std::vector<std::string_view> models(job.allowed_model_count(group));
  for (std::size_t i = 0; i < models.size(); ++i) models[i] = job.allowed_model(group, i);
  std::vector<Label> selector(job.selector_count(group));
  for (std::size_t i = 0; i < selector.size(); ++i) selector[i] = job.selector(group, i);
  auto req = compile(info.shape, models, selector);
  if (!req)
    return Error{fmt::format("jobs[{}].groups[{}] ({}).{}", job.name(), group, info.name, req.error().message)};
  return req;
}

FitReason ClusterState::check_fit(NodeId n, const TaskRequest& request) const {
  if (flags_[n] & kFlagCordoned) return FitReason::kNodeUnschedulable;
  if (flags_[n] & kFlagFailed) return FitReason::kNodeUnhealthy;
  for (const auto& req : request.selector)
    if (node_label_value(n, req.key) != req.value) return FitReason::kSelectorMismatch;
  const TaskShape& shape = request.shape;
  // A GPU-less node lacks GPUs rather than having the wrong model (what `kubectl describe` says too).
  if (shape.needs_gpu() && gpu_end_[n] == gpu_begin_[n]) return FitReason::kInsufficientGpus;
  if (shape.needs_gpu() && (node_models_[n] & request.models) == 0) return FitReason::kGpuModelNotAllowed;
  if (cpu_free_[n] < shape.cpu) return FitReason::kInsufficientCpu;
  if (memory_free_[n] < shape.memory) return FitReason::kInsufficientMemory;
  if (!shape.needs_gpu()) return FitReason::kFits;

  const std::uint32_t b = gpu_begin_[n], e = gpu_end_[n];
  const bool homogeneous = node_index_model_[n] != kMixedModels;
  if (!shape.shares_gpu()) {
    if (homogeneous && shape.gpu_memory == 0)
      return idle_gpus_[n] >= shape.gpus ? FitReason::kFits : FitReason::kInsufficientGpus;
    std::int32_t idle = 0, idle_mem = 0;
    for (std::uint32_t g = b; g < e; ++g) {
      if (gpu_free_milli_[g] != kMilliPerGpu || !(request.models & model_bit(gpu_model_[g]))) continue;
      ++idle;
      if (gpu_free_memory_[g] >= shape.gpu_memory) ++idle_mem;
    }
    if (idle < shape.gpus) return FitReason::kInsufficientGpus;
    return idle_mem >= shape.gpus ? FitReason::kFits : FitReason::kInsufficientGpuMemory;
  }
  bool share_ok = false;
  for (std::uint32_t g = b; g < e; ++g) {
    if (gpu_free_milli_[g] < shape.gpu_milli || !(request.models & model_bit(gpu_model_[g]))) continue;
    share_ok = true;
    if (gpu_free_memory_[g] >= shape.gpu_memory) return FitReason::kFits;
  }
  return share_ok ? FitReason::kInsufficientGpuMemory : FitReason::kInsufficientGpuShare;
}

Status ClusterState::validate(const TaskRequest& request, const TaskAssignment& a) const {
  if (a.node >= node_count()) return Error{fmt::format("assignment: no node {}", a.node)};
  const std::string_view name = node_name_[a.node];
  if (const FitReason why = check_fit(a.node, request); why != FitReason::kFits)
    return Error{fmt::format("assignment on {}: {}", name, fit_reason_text(why))};
  const TaskShape& shape = request.shape;
  if (a.cpu != shape.cpu || a.memory != shape.memory || a.gpu_memory != shape.gpu_memory ||
      a.gpu_milli != shape.gpu_milli)
    return Error{fmt::format("assignment on {}: amounts differ from the request", name)};
  const std::size_t want = shape.needs_gpu() ? static_cast<std::size_t>(shape.gpus) : 0;
  if (a.gpus.size() != want)
    return Error{fmt::format("assignment on {}: {} GPUs given, {} requested", name, a.gpus.size(), want)};
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuIndex g = a.gpus[i];
    if (g >= gpu_count(a.node)) return Error{fmt::format("assignment on {}: no GPU {}", name, g)};
    for (std::size_t j = 0; j < i; ++j)
      if (a.gpus[j] == g) return Error{fmt::format("assignment on {}: GPU {} given twice", name, g)};
    const std::uint32_t gi = gpu_begin_[a.node] + g;
    if (!(request.models & model_bit(gpu_model_[gi])))
      return Error{fmt::format("assignment on {}: GPU {} model not allowed", name, g)};
    if (gpu_free_milli_[gi] < shape.gpu_milli || gpu_free_memory_[gi] < shape.gpu_memory)
      return Error{fmt::format("assignment on {}: GPU {} has {} free, {} requested", name, g,
                               gpu_free_milli_[gi], shape.gpu_milli)};
  }
  return {};
}

Status ClusterState::reserve(const TaskRequest& request, const TaskAssignment& assignment) {
  if (auto st = validate(request, assignment); !st) return st;
  apply(assignment, -1);
  journal_.push_back(assignment);
  return {};
}

Status ClusterState::release(const TaskAssignment& a) {
  if (a.node >= node_count()) return Error{fmt::format("release: no node {}", a.node)};
  if (cpu_free_[a.node] + a.cpu > cpu_capacity_[a.node] ||
      memory_free_[a.node] + a.memory > memory_capacity_[a.node])
    return Error{fmt::format("release on {}: frees more host resources than are used", node_name_[a.node])};
  for (GpuIndex g : a.gpus) {
    if (g >= gpu_count(a.node)) return Error{fmt::format("release on {}: no GPU {}", node_name_[a.node], g)};
    const std::uint32_t gi = gpu_begin_[a.node] + g;
    if (gpu_free_milli_[gi] + a.gpu_milli > kMilliPerGpu ||
        gpu_free_memory_[gi] + a.gpu_memory > gpu_memory_capacity_[gi])
      return Error{fmt::format("release on {}: GPU {} frees more than is used", node_name_[a.node], g)};
  }
  apply(a, +1);
  return {};
}

void ClusterState::apply(const TaskAssignment& a, int sign) {
  const NodeId n = a.node;
  const std::int32_t old_idle = idle_gpus_[n];
  const bool old_partial = has_partial_[n] != 0;
  cpu_free_[n] += sign * a.cpu;
  memory_free_[n] += sign * a.memory;
  bool partial_may_change = false;
  for (GpuIndex g : a.gpus) {
    const std::uint32_t gi = gpu_begin_[n] + g;
    const std::int32_t before = gpu_free_milli_[gi];
    const std::int32_t after = before + sign * static_cast<std::int32_t>(a.gpu_milli);
    gpu_free_milli_[gi] = after;
    gpu_free_memory_[gi] += sign * a.gpu_memory;
    free_gpu_milli_[n] += after - before;
    total_gpu_free_ += after - before;
    idle_gpus_[n] += (after == kMilliPerGpu) - (before == kMilliPerGpu);
    partial_may_change = true;
  }
  if (partial_may_change) {
    bool partial = false;
    for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi)
      if (gpu_free_milli_[gi] > 0 && gpu_free_milli_[gi] < kMilliPerGpu) {
        partial = true;
        break;
      }
    has_partial_[n] = partial ? 1 : 0;
  }
  reindex(n, old_idle, old_partial);
}

void ClusterState::reindex(NodeId n, std::int32_t old_idle, bool old_partial) {
  if (!eligible(n)) return;
  auto& row = buckets_[bucket_slot(node_index_model_[n])];
  if (old_idle != idle_gpus_[n]) {
    row[static_cast<std::size_t>(old_idle)].erase(n);
    row[static_cast<std::size_t>(idle_gpus_[n])].insert(n);
  }
  const bool partial = has_partial_[n] != 0;
  if (partial != old_partial) {
    if (partial) partial_nodes_.insert(n);
    else partial_nodes_.erase(n);
  }
}

void ClusterState::rollback(Checkpoint mark) {
  while (journal_.size() > mark) {
    apply(journal_.back(), +1);
    journal_.pop_back();
  }
}

std::size_t ClusterState::memory_usage() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t total = bytes(node_name_) + bytes(cpu_capacity_) + bytes(cpu_free_) + bytes(memory_capacity_) +
                      bytes(memory_free_) + bytes(flags_) + bytes(gpu_begin_) + bytes(gpu_end_) +
                      bytes(node_models_) + bytes(node_index_model_) + bytes(idle_gpus_) + bytes(free_gpu_milli_) +
                      bytes(has_partial_) + bytes(gpu_free_milli_) + bytes(gpu_free_memory_) +
                      bytes(gpu_memory_capacity_) + bytes(gpu_model_) + bytes(gpu_healthy_) + bytes(label_begin_) +
                      bytes(labels_) + bytes(model_slot_);
  for (const auto& name : node_name_) total += name.capacity() > 15 ? name.capacity() + 1 : 0;
  total += node_by_name_.size() * (sizeof(std::string) + sizeof(NodeId) + 2 * sizeof(void*)) +
           node_by_name_.bucket_count() * sizeof(void*);
  // Each index bitset: one bit per node plus a summary bit per 64 nodes.
  const std::size_t bitset_bytes = (node_count() + 63) / 64 * 8 + (node_count() + 4095) / 4096 * 8;
  for (const auto& row : buckets_) total += row.size() * bitset_bytes;
  total += bitset_bytes;
  return total;
}

bool ClusterState::same_allocation_as(const ClusterState& o) const {
  return cpu_free_ == o.cpu_free_ && memory_free_ == o.memory_free_ && gpu_free_milli_ == o.gpu_free_milli_ &&
         gpu_free_memory_ == o.gpu_free_memory_ && idle_gpus_ == o.idle_gpus_ &&
         free_gpu_milli_ == o.free_gpu_milli_ && has_partial_ == o.has_partial_ && buckets_ == o.buckets_ &&
         partial_nodes_ == o.partial_nodes_ && total_gpu_free_ == o.total_gpu_free_;
}

}  // namespace gpusched
