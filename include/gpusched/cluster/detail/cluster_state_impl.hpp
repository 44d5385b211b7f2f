// gpusched/cluster/detail/cluster_state_impl.hpp — ClusterState's definitions (header-only).
//
// Included at the end of cluster_state.hpp, or once per program by gpusched/compiled.hpp
// (GPUSCHED_SEPARATE_COMPILATION, core/config.hpp); not a public header. Non-template functions are
// GPUSCHED_DECL, helpers live in gpusched::detail with names that say they are the cluster's.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/cluster/cluster_state.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace gpusched {
namespace detail {

// Error text without {fmt} (policy headers depend on no compiled library): parts are strings or
// integers, appended in order.
GPUSCHED_DECL void cluster_message_part(std::string& out, std::string_view text) { out += text; }
template <class Integer>
  requires std::is_integral_v<Integer>
void cluster_message_part(std::string& out, Integer value) {
  out += std::to_string(value);
}
template <class... Parts>
std::string cluster_message(const Parts&... parts) {
  std::string out;
  (cluster_message_part(out, parts), ...);
  return out;
}
GPUSCHED_DECL Error cluster_error(ErrorCode code, std::string field, std::string message) {
  return Error{std::move(message), code, std::move(field)};
}
GPUSCHED_DECL std::string cluster_node_field(std::size_t n) { return cluster_message("nodes[", n, "]"); }

}  // namespace detail

GPUSCHED_DECL Status ClusterState::parse_node(const ClusterView& view, std::size_t n, ParsedNode& out) {
  using detail::cluster_error;
  using detail::cluster_message;
  // Field paths and messages are built only on error: this runs once per node of every build.
  auto field = [n](const auto&... parts) { return cluster_message("nodes[", n, "]", parts...); };
  const std::string_view name = view.node_name(n);
  if (name.empty()) return cluster_error(ErrorCode::kMissingField, field(".name"), field(".name: must not be empty"));
  auto message = [&](const auto&... parts) { return field(" (", name, ")", parts...); };
  out.name = name;
  const NodeResources r = view.node_resources(n);
  const std::pair<std::int64_t, std::string_view> amounts[] = {
      {r.cpu_capacity, "cpu"}, {r.cpu_free, "cpu free"}, {r.memory_capacity, "memory"}, {r.memory_free, "memory free"}};
  for (const auto& [v, name_of_amount] : amounts)
    if (v < 0)
      return cluster_error(ErrorCode::kInvalidValue, field(".", name_of_amount),
                           message(".", name_of_amount, ": expected a non-negative quantity, got ", v));
  if (r.cpu_free > r.cpu_capacity)
    return cluster_error(ErrorCode::kInconsistent, field(".cpu"),
                         message(".cpu: free ", r.cpu_free, " exceeds capacity ", r.cpu_capacity));
  if (r.memory_free > r.memory_capacity)
    return cluster_error(ErrorCode::kInconsistent, field(".memory"),
                         message(".memory: free ", r.memory_free, " exceeds capacity ", r.memory_capacity));
  out.resources = r;
  out.flags = static_cast<std::uint8_t>((view.schedulable(n) ? 0 : kFlagCordoned) | (view.healthy(n) ? 0 : kFlagFailed));

  const std::size_t n_gpus = view.gpu_count(n);
  if (n_gpus > std::numeric_limits<GpuIndex>::max())
    return cluster_error(ErrorCode::kLimit, field(".gpus"), message(".gpus: at most 65535 GPUs per node, got ", n_gpus));
  out.gpus.resize(n_gpus);
  out.mig_instances.clear();
  for (std::size_t g = 0; g < n_gpus; ++g) {
    const GpuInfo info = view.gpu(n, g);
    // Model names repeat on every GPU: each distinct spelling is resolved by the registry once.
    GpuModelId model;
    if (auto it = model_by_spelling_.find(info.model); it != model_by_spelling_.end()) {
      model = it->second;
    } else {
      auto found = registry_.find(info.model);
      if (!found)
        return cluster_error(ErrorCode::kUnknownName, field(".gpus[", g, "].model"),
                             message(".gpus[", g, "].model: unknown GPU model \"", info.model, "\""));
      model = *found;
      model_by_spelling_.emplace(std::string(info.model), model);
    }
    if (info.free_milli < 0 || info.free_milli > kMilliPerGpu)
      return cluster_error(ErrorCode::kInvalidValue, field(".gpus[", g, "]"),
                           message(".gpus[", g, "]: free share must be in 0..1000, got ", info.free_milli));
    const Bytes capacity = registry_.model(model).memory;
    if (info.used_memory < 0 || (capacity > 0 && info.used_memory > capacity))
      return cluster_error(ErrorCode::kInvalidValue, field(".gpus[", g, "].used_memory"),
                           message(".gpus[", g, "]: used memory ", info.used_memory, " outside 0..", capacity));
    out.gpus[g] = ParsedGpu{model, static_cast<std::int32_t>(info.free_milli),
                            std::max<Bytes>(0, capacity - info.used_memory), capacity, info.healthy};
    if (info.mig_mode) {
      if (auto st = parse_mig_gpu(view, n, g, model, out); !st) return st;
      out.gpus[g].mig_layout_fixed = info.mig_layout_fixed;
    }
  }

  const std::size_t n_labels = view.label_count(n);
  out.labels.clear();
  for (std::size_t l = 0; l < n_labels; ++l) {
    const Label label = view.label(n, l);
    if (label.first.empty())
      return cluster_error(ErrorCode::kMissingField, field(".labels[", l, "]"), message(".labels[", l, "]: empty label key"));
    // Pairwise: a node has tens of labels, and this allocates nothing.
    for (const Label& earlier : out.labels)
      if (earlier.first == label.first)
        return cluster_error(ErrorCode::kDuplicate, field(".labels"), message(".labels: duplicate key \"", label.first, "\""));
    out.labels.push_back(label);
  }
  return {};
}

GPUSCHED_DECL std::uint32_t ClusterState::intern_label(LabelDictionary& ids, std::vector<std::string>& names,
                                                std::string_view text) {
  if (auto it = ids.find(text); it != ids.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names.size());
  names.emplace_back(text);
  ids.emplace(std::string(text), id);
  return id;
}

// A GPU in MIG mode: its model must have a MIG table and its instances a valid layout. It takes no
// whole-GPU or shared task, so it reads free share and free GPU memory 0 (what the view says about
// them is ignored; docs/mig.md).
GPUSCHED_DECL Status ClusterState::parse_mig_gpu(const ClusterView& view, std::size_t n, std::size_t g, GpuModelId model,
                                          ParsedNode& out) {
  using detail::cluster_error;
  using detail::cluster_message;
  const std::string_view name = view.node_name(n);
  auto field = [&](const auto&... parts) { return cluster_message("nodes[", n, "] (", name, ").gpus[", g, "].mig", parts...); };
  const std::string& model_name = registry_.model(model).name;
  const auto mig_model = mig_.catalog().find(model_name);
  if (!mig_model)
    return cluster_error(ErrorCode::kInconsistent, field(),
                         field(": GPU model ", model_name, " has no MIG profile table (not MIG-capable)"));
  const std::size_t count = view.mig_instance_count(n, g);
  if (count > static_cast<std::size_t>(mig::kMaxInstances))
    return cluster_error(ErrorCode::kLimit, field(".instances"),
                         field(".instances: at most ", mig::kMaxInstances, " instances, got ", count));
  ParsedGpu& gpu = out.gpus[g];
  gpu.free_milli = 0;
  gpu.free_memory = 0;
  gpu.mig_mode = true;
  gpu.mig_model = *mig_model;
  gpu.mig_first = static_cast<std::uint32_t>(out.mig_instances.size());
  gpu.mig_count = static_cast<std::uint32_t>(count);
  mig::MigInstance layout[mig::kMaxInstances];
  for (std::size_t i = 0; i < count; ++i) {
    const MigInstanceInfo info = view.mig_instance(n, g, i);
    out.mig_instances.push_back(info);
    layout[i] = {info.profile_id, info.start};
  }
  if (auto occ = mig::validate_layout(mig_.catalog().spec(*mig_model), std::span<const mig::MigInstance>(layout, count),
                                      mig_.rules());
      !occ)
    return cluster_error(ErrorCode::kInconsistent, field(), field(".", occ.error().message));
  return {};
}

// Appends the node's arrays and totals (not the index, not the name lookup).
GPUSCHED_DECL NodeId ClusterState::append_node(const ParsedNode& p) {
  const auto n = static_cast<NodeId>(node_name_.size());
  node_name_.emplace_back(p.name);
  cpu_capacity_.push_back(p.resources.cpu_capacity);
  cpu_free_.push_back(p.resources.cpu_free);
  memory_capacity_.push_back(p.resources.memory_capacity);
  memory_free_.push_back(p.resources.memory_free);
  flags_.push_back(p.flags);
  gpu_begin_.push_back(static_cast<std::uint32_t>(gpu_free_milli_.size()));
  GpuModelMask models = 0;
  std::int32_t idle = 0;
  MilliGpu free_sum = 0;
  std::uint32_t partial = 0;
  idle_gpu_slots_.grow(static_cast<std::uint32_t>(gpu_free_milli_.size() + p.gpus.size()));
  for (const ParsedGpu& g : p.gpus) {
    if (g.mig_mode) {
      // Validated by parse_mig_gpu, so the table accepts it.
      mig::MigInstance layout[mig::kMaxInstances];
      bool busy[mig::kMaxInstances] = {};
      for (std::uint32_t i = 0; i < g.mig_count; ++i) {
        const MigInstanceInfo& info = p.mig_instances[g.mig_first + i];
        layout[i] = {info.profile_id, info.start};
        busy[i] = info.busy;
      }
      const GpuIndex local = static_cast<GpuIndex>(gpu_free_milli_.size() - gpu_begin_.back());
      const auto id = mig_.add_gpu(n, local, static_cast<std::uint32_t>(gpu_free_milli_.size()), g.mig_model,
                                   std::span<const mig::MigInstance>(layout, g.mig_count),
                                   std::span<const bool>(busy, g.mig_count), g.mig_layout_fixed);
      if (id && (!g.healthy || p.flags != 0)) mig_.set_available(*id, false);
    }
    // An unhealthy GPU reads free 0; what the view says is free on it is withheld until it recovers.
    const std::int32_t free_milli = g.healthy ? g.free_milli : 0;
    if (!g.healthy)
      withheld_.emplace(static_cast<std::uint32_t>(gpu_free_milli_.size()), WithheldGpu{g.free_milli, g.free_memory});
    if (free_milli == kMilliPerGpu) idle_gpu_slots_.insert(static_cast<std::uint32_t>(gpu_free_milli_.size()));
    gpu_free_milli_.push_back(free_milli);
    gpu_free_memory_.push_back(g.healthy ? g.free_memory : 0);
    gpu_memory_capacity_.push_back(g.memory_capacity);
    gpu_model_.push_back(g.model);
    gpu_healthy_.push_back(g.healthy ? 1 : 0);
    if (g.model >= eligible_.gpu_milli_capacity.size()) {
      eligible_.gpu_milli_capacity.resize(std::size_t{g.model} + 1, 0);
      eligible_.gpu_milli_free.resize(std::size_t{g.model} + 1, 0);
    }
    if ((models & model_bit(g.model)) == 0 && std::find(model_order_.begin(), model_order_.end(), g.model) == model_order_.end())
      model_order_.push_back(g.model);
    models |= model_bit(g.model);
    if (g.healthy) {
      total_gpu_capacity_ += kMilliPerGpu;
      total_gpu_free_ += free_milli;
    }
    if (free_milli == kMilliPerGpu) ++idle;
    if (free_milli > 0 && free_milli < kMilliPerGpu) ++partial;
    free_sum += free_milli;
  }
  gpu_end_.push_back(static_cast<std::uint32_t>(gpu_free_milli_.size()));
  if (gpu_end_.back() - gpu_begin_.back() > kShareIndexGpus)
    for (std::uint32_t gi = gpu_begin_.back(); gi < gpu_end_.back(); ++gi)
      if (share_keyed(gpu_free_milli_[gi], !std::has_single_bit(models)))
        partial_shares_.insert(share_key(n, gpu_model_[gi], gpu_free_milli_[gi], gi - gpu_begin_.back()));
  node_models_.push_back(models);
  std::uint8_t key = kNoGpuKey;
  if (models != 0)
    key = std::has_single_bit(models) ? static_cast<std::uint8_t>(std::countr_zero(models)) : kMixedModels;
  node_index_model_.push_back(key);
  idle_gpus_.push_back(idle);
  free_gpu_milli_.push_back(free_sum);
  partial_gpus_.push_back(partial);
  node_version_.push_back(generation_);
  max_gpus_per_node_ = std::max<std::int32_t>(max_gpus_per_node_, static_cast<std::int32_t>(p.gpus.size()));
  label_begin_.push_back(static_cast<std::uint32_t>(labels_.size()));
  label_count_.push_back(static_cast<std::uint32_t>(p.labels.size()));
  for (const Label& label : p.labels)
    labels_.push_back({intern_label(label_key_ids_, label_keys_, label.first), intern_label(label_value_ids_, label_values_, label.second)});
  std::sort(labels_.begin() + label_begin_.back(), labels_.end(),
            [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
  ++live_nodes_;
  return n;
}

GPUSCHED_DECL Result<ClusterState> ClusterState::build(const ClusterView& view, const GpuModelRegistry& registry,
                                                const mig::MigCatalog& mig_catalog, mig::LayoutRules mig_rules) {
  ClusterState s;
  s.registry_ = registry;
  s.mig_ = mig::MigGpuTable(mig_catalog, mig_rules);
  const std::size_t n_nodes = view.node_count();
  if (n_nodes >= std::numeric_limits<NodeId>::max())
    return detail::cluster_error(ErrorCode::kLimit, "nodes", detail::cluster_message("nodes: too many nodes (", n_nodes, ")"));
  for (auto* v : {&s.cpu_capacity_, &s.cpu_free_}) v->reserve(n_nodes);
  for (auto* v : {&s.memory_capacity_, &s.memory_free_}) v->reserve(n_nodes);
  for (auto* v : {&s.flags_, &s.node_index_model_}) v->reserve(n_nodes);
  s.partial_gpus_.reserve(n_nodes);
  for (auto* v : {&s.gpu_begin_, &s.gpu_end_, &s.label_begin_, &s.label_count_}) v->reserve(n_nodes);
  s.node_name_.reserve(n_nodes);
  s.node_models_.reserve(n_nodes);
  s.idle_gpus_.reserve(n_nodes);
  s.free_gpu_milli_.reserve(n_nodes);
  s.node_version_.reserve(n_nodes);

  std::size_t n_gpus = 0;
  for (std::size_t n = 0; n < n_nodes; ++n) {
    n_gpus += std::min<std::size_t>(view.gpu_count(n), kMaxClusterGpus + 1);
    if (n_gpus > kMaxClusterGpus)
      return detail::cluster_error(ErrorCode::kLimit, "nodes",
                                   detail::cluster_message("nodes: more than ", kMaxClusterGpus, " GPUs in the cluster"));
  }
  ParsedNode parsed;
  for (std::size_t n = 0; n < n_nodes; ++n) {
    if (auto st = s.parse_node(view, n, parsed); !st) return st.error();
    if (auto st = s.check_view_interconnect(view, n, parsed.gpus.size()); !st) return st.error();
    s.append_node(parsed);
  }

  // Names are unique: the output names nodes, so two with one name would be ambiguous.
  s.node_by_name_.reserve(n_nodes);
  for (std::size_t n = 0; n < n_nodes; ++n) {
    auto [it, inserted] = s.node_by_name_.try_emplace(s.node_name_[n], static_cast<NodeId>(n));
    if (!inserted)
      return detail::cluster_error(ErrorCode::kDuplicate, detail::cluster_node_field(n) + ".name",
                                   detail::cluster_message("nodes[", n, "].name: duplicate node name \"", s.node_name_[n],
                                                           "\" (also nodes[", it->second, "])"));
  }

  // The index.
  s.model_slot_.assign(256, -1);
  s.index_capacity_ = static_cast<std::uint32_t>(n_nodes);
  s.partial_nodes_ = NodeBitset(s.index_capacity_);
  for (NodeId n = 0; n < n_nodes; ++n) s.ensure_index_row(s.node_index_model_[n]);
  for (NodeId n = 0; n < n_nodes; ++n) s.index_insert(n);
  s.interconnects_.resize(n_nodes);
  for (NodeId n = 0; n < n_nodes; ++n) s.assign_view_interconnect(view, n, n);
  return s;
}

GPUSCHED_DECL bool ClusterState::node_interconnect_is_default(NodeId n) const {
  const std::uint8_t model = node_index_model_[n];
  std::uint32_t known = InterconnectTable::kNoShape;
  if (model != kMixedModels && model != kNoGpuKey && gpu_count(n) >= 2) {
    const std::uint64_t key = (std::uint64_t{model} << 32) | gpu_count(n);
    const auto it = std::find_if(known_shape_.begin(), known_shape_.end(), [&](const auto& k) { return k.first == key; });
    if (it != known_shape_.end()) known = it->second;
  }
  return interconnects_.shape_of(n) == known;
}

// The view's interconnect for node `index`, if it gives one, must fit the node's `gpus` GPUs.
GPUSCHED_DECL Status ClusterState::set_node_interconnect(NodeId n, NodeInterconnect interconnect) {
  if (n >= node_count()) return Error{"node: unknown node id " + std::to_string(n), ErrorCode::kUnknownName, "node"};
  if (removed(n)) return Error{"node: node " + std::to_string(n) + " was removed", ErrorCode::kState, "node"};
  if (Status ok = validate_interconnect(interconnect, gpu_count(n)); !ok) return ok;
  interconnects_.set(n, std::move(interconnect));
  note_node_change(n);
  note_layout_change();
  return {};
}

GPUSCHED_DECL Status ClusterState::set_topology_levels(std::vector<std::string> keys) {
  for (std::size_t l = 0; l < keys.size(); ++l) {
    const std::string field = "topology_levels[" + std::to_string(l) + "]";
    if (keys[l].empty()) return Error{field + ": must not be empty", ErrorCode::kInvalidValue, field};
    for (std::size_t m = 0; m < l; ++m)
      if (keys[m] == keys[l])
        return Error{field + ": '" + keys[l] + "' repeats topology_levels[" + std::to_string(m) + "]", ErrorCode::kDuplicate,
                     field};
  }
  topology_levels_ = std::move(keys);
  ++generation_;  // every node's domains may change: a layout change of the whole cluster
  note_layout_change();
  return {};
}

GPUSCHED_DECL Status ClusterState::check_view_interconnect(const ClusterView& view, std::size_t index, std::size_t gpus) const {
  const NodeInterconnect* given = view.node_interconnect(index);
  if (given == nullptr) return {};
  if (Status ok = validate_interconnect(*given, gpus); !ok)
    return detail::cluster_error(ErrorCode::kInconsistent, detail::cluster_node_field(index) + "." + ok.error().field,
                                 detail::cluster_message("nodes[", index, "] (", view.node_name(index), ").",
                                                         ok.error().message));
  return {};
}

// The view's interconnect for node `index` (checked by check_view_interconnect) when it gives one,
// else the model's known default.
GPUSCHED_DECL void ClusterState::assign_view_interconnect(const ClusterView& view, std::size_t index, NodeId n) {
  assign_known_interconnect(n);
  const NodeInterconnect* given = view.node_interconnect(index);
  if (given == nullptr) return;
  if (const NodeInterconnect* known = node_interconnect(n); known != nullptr && *known == *given) return;
  interconnects_.set(n, *given);
}

// A homogeneous node with 2+ GPUs gets its model's known interconnect (node_interconnect.hpp),
// built and interned once per (model, GPU count) and remembered, so adding a node costs a lookup.
GPUSCHED_DECL void ClusterState::assign_known_interconnect(NodeId n) {
  if (interconnects_.node_count() <= n) interconnects_.resize(n + std::size_t{1});
  const std::uint8_t model = node_index_model_[n];
  if (model == kMixedModels || model == kNoGpuKey || gpu_count(n) < 2) return;
  const std::uint64_t key = (std::uint64_t{model} << 32) | gpu_count(n);
  auto it = std::find_if(known_shape_.begin(), known_shape_.end(), [&](const auto& k) { return k.first == key; });
  if (it == known_shape_.end()) {
    auto ic = known_interconnect(registry_.model(model).name, gpu_count(n));
    known_shape_.emplace_back(key, ic ? interconnects_.intern(std::move(*ic)) : InterconnectTable::kNoShape);
    it = known_shape_.end() - 1;
  }
  interconnects_.assign(n, it->second);
}

// --- the index -------------------------------------------------------------------------------------

GPUSCHED_DECL std::size_t ClusterState::bucket_slot(std::uint8_t model_key) const {
  return static_cast<std::size_t>(model_slot_[model_key]);
}

GPUSCHED_DECL void ClusterState::ensure_index_row(std::uint8_t model_key) {
  if (model_slot_[model_key] >= 0) return;
  model_slot_[model_key] = static_cast<std::int16_t>(buckets_.size());
  model_keys_.insert(std::upper_bound(model_keys_.begin(), model_keys_.end(), model_key), model_key);
  buckets_.emplace_back(static_cast<std::size_t>(max_gpus_per_node_) + 1, NodeBitset(index_capacity_));
  levels_.emplace_back(static_cast<std::uint32_t>(max_gpus_per_node_) + 1);
}

GPUSCHED_DECL void ClusterState::ensure_index_width(std::int32_t gpus) {
  // max_gpus_per_node_ is raised by append_node; the rows follow it here.
  const auto width = static_cast<std::size_t>(std::max(gpus, max_gpus_per_node_)) + 1;
  max_gpus_per_node_ = std::max(gpus, max_gpus_per_node_);
  for (auto& row : buckets_)
    while (row.size() < width) row.emplace_back(index_capacity_);
  for (auto& levels : levels_) levels.grow(static_cast<std::uint32_t>(width));
}

GPUSCHED_DECL void ClusterState::ensure_index_capacity(std::size_t nodes) {
  if (nodes <= index_capacity_) return;
  // Doubling keeps add_node amortised O(1) in the index.
  index_capacity_ = static_cast<std::uint32_t>(std::max<std::size_t>(nodes, std::size_t{2} * index_capacity_));
  for (auto& row : buckets_)
    for (auto& bucket : row) bucket.grow(index_capacity_);
  partial_nodes_.grow(index_capacity_);
}

GPUSCHED_DECL void ClusterState::bucket_insert(std::size_t slot, std::int32_t idle, NodeId n) {
  NodeBitset& bucket = buckets_[slot][static_cast<std::size_t>(idle)];
  if (bucket.empty()) levels_[slot].insert(static_cast<std::uint32_t>(idle));
  bucket.insert(n);
}

GPUSCHED_DECL void ClusterState::bucket_erase(std::size_t slot, std::int32_t idle, NodeId n) {
  NodeBitset& bucket = buckets_[slot][static_cast<std::size_t>(idle)];
  bucket.erase(n);
  if (bucket.empty()) {
    levels_[slot].erase(static_cast<std::uint32_t>(idle));
    bucket.trim();  // an empty bucket of a big cluster holds no storage (node_bitset.hpp)
  }
}

GPUSCHED_DECL void ClusterState::eligible_add(NodeId n, int sign) {
  using detail::QuantityWide;
  eligible_.cpu_capacity += sign * QuantityWide{cpu_capacity_[n]};
  eligible_.cpu_free += sign * QuantityWide{cpu_free_[n]};
  eligible_.memory_capacity += sign * QuantityWide{memory_capacity_[n]};
  eligible_.memory_free += sign * QuantityWide{memory_free_[n]};
  for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi) {
    if (!gpu_healthy_[gi]) continue;
    eligible_.gpu_milli_capacity[gpu_model_[gi]] += sign * kMilliPerGpu;
    eligible_.gpu_milli_free[gpu_model_[gi]] += sign * gpu_free_milli_[gi];
  }
}

GPUSCHED_DECL void ClusterState::index_insert(NodeId n) {
  if (!eligible(n)) return;
  eligible_add(n, +1);
  bucket_insert(bucket_slot(node_index_model_[n]), idle_gpus_[n], n);
  if (partial_gpus_[n] != 0) partial_nodes_.insert(n);
}

GPUSCHED_DECL void ClusterState::index_erase(NodeId n) {
  if (!eligible(n)) return;
  eligible_add(n, -1);
  bucket_erase(bucket_slot(node_index_model_[n]), idle_gpus_[n], n);
  partial_nodes_.erase(n);
}

GPUSCHED_DECL void ClusterState::note_gpu_free_change(NodeId n, std::uint32_t gi, std::int32_t before, std::int32_t after) {
  const bool was_partial = before > 0 && before < kMilliPerGpu, is_partial = after > 0 && after < kMilliPerGpu;
  partial_gpus_[n] += static_cast<std::uint32_t>(is_partial) - static_cast<std::uint32_t>(was_partial);
  if (before == kMilliPerGpu && after != kMilliPerGpu) idle_gpu_slots_.erase(gi);
  if (after == kMilliPerGpu && before != kMilliPerGpu) idle_gpu_slots_.insert(gi);
  if (before != after && share_indexed(n)) {
    const std::uint32_t local = gi - gpu_begin_[n];
    const bool mixed = !std::has_single_bit(node_models_[n]);
    if (share_keyed(before, mixed)) partial_shares_.erase(share_key(n, gpu_model_[gi], before, local));
    if (share_keyed(after, mixed)) partial_shares_.insert(share_key(n, gpu_model_[gi], after, local));
  }
}

// GPU gi of node n now shows `milli` free share and `memory` free memory: the node's and the
// cluster's sums, its idle count and the share index follow (not the eligible totals or the bucket
// index: callers re-index the node).
GPUSCHED_DECL void ClusterState::set_visible_free(NodeId n, std::uint32_t gi, std::int32_t milli, Bytes memory) {
  const std::int32_t before = gpu_free_milli_[gi];
  note_gpu_free_change(n, gi, before, milli);
  gpu_free_milli_[gi] = milli;
  gpu_free_memory_[gi] = memory;
  free_gpu_milli_[n] += milli - before;
  total_gpu_free_ += milli - before;
  idle_gpus_[n] += (milli == kMilliPerGpu) - (before == kMilliPerGpu);
}

GPUSCHED_DECL std::int32_t ClusterState::most_free_share(NodeId n, GpuModelMask models) const {
  const GpuModelMask present = node_models_[n] & models;
  if (present == 0) return 0;
  if (idle_gpus_[n] > 0 && present == node_models_[n]) return kMilliPerGpu;
  if (!share_indexed(n)) {
    std::int32_t most = 0;
    for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi)
      if (present & model_bit(gpu_model_[gi])) most = std::max(most, gpu_free_milli_[gi]);
    return most;
  }
  // Per model present: the last key of (n, model), its largest free share.
  std::int32_t most = 0;
  for (GpuModelMask left = present; left != 0; left &= left - 1) {
    const auto model = static_cast<GpuModelId>(std::countr_zero(left));
    auto it = partial_shares_.lower_bound(share_key(n, model, kMilliPerGpu + 1, 0));
    if (it == partial_shares_.begin()) continue;
    --it;
    if ((*it >> 26) == ((std::uint64_t{n} << 6) | model)) most = std::max(most, static_cast<std::int32_t>((*it >> 16) & 0x3FF));
  }
  return most;
}

GPUSCHED_DECL std::pair<std::int32_t, std::int32_t> ClusterState::least_share_of_model(NodeId n, GpuModelId model,
                                                                                        std::int32_t share,
                                                                                        Bytes memory) const {
  const std::uint64_t prefix = (std::uint64_t{n} << 6) | model;
  for (auto it = partial_shares_.lower_bound(share_key(n, model, share, 0));
       it != partial_shares_.end() && (*it >> 26) == prefix; ++it) {
    const auto local = static_cast<std::uint32_t>(*it & 0xFFFF);
    if (memory > 0 && gpu_free_memory_[gpu_begin_[n] + local] < memory) continue;
    return {static_cast<std::int32_t>((*it >> 16) & 0x3FF), static_cast<std::int32_t>(local)};
  }
  return {-1, -1};
}

GPUSCHED_DECL std::int32_t ClusterState::least_share_gpu(NodeId n, MilliGpu share, GpuModelMask models, Bytes memory) const {
  if (share > kMilliPerGpu) return -1;
  const auto wanted = static_cast<std::int32_t>(std::max<MilliGpu>(share, 1));
  if (std::has_single_bit(node_models_[n])) {
    // One model: its partly used GPUs are keyed, its idle ones are the idle-GPU set's.
    if ((node_models_[n] & models) == 0) return -1;
    const auto found = least_share_of_model(n, static_cast<GpuModelId>(std::countr_zero(node_models_[n])), wanted, memory);
    if (found.first >= 0) return found.second;
    std::int32_t g = next_idle_gpu(n, 0);
    while (g >= 0 && memory > 0 && gpu_free_memory_[gpu_begin_[n] + static_cast<std::uint32_t>(g)] < memory)
      g = next_idle_gpu(n, static_cast<std::size_t>(g) + 1);
    return g;
  }
  std::pair<std::int32_t, std::int32_t> best{-1, -1};
  for (GpuModelMask left = node_models_[n] & models; left != 0; left &= left - 1) {
    const auto found = least_share_of_model(n, static_cast<GpuModelId>(std::countr_zero(left)), wanted, memory);
    if (found.first >= 0 && (best.first < 0 || found < best)) best = found;
  }
  return best.second;
}

GPUSCHED_DECL std::int32_t ClusterState::next_idle_level(std::uint8_t model_key, std::int32_t from) const {
  if (model_slot_.empty() || model_slot_[model_key] < 0) return -1;
  const std::uint32_t level = levels_[bucket_slot(model_key)].next(static_cast<std::uint32_t>(std::max(from, 0)));
  return level == NodeBitset::kEnd ? -1 : static_cast<std::int32_t>(level);
}

GPUSCHED_DECL std::int32_t ClusterState::prev_idle_level(std::uint8_t model_key, std::int32_t from) const {
  if (from < 0 || model_slot_.empty() || model_slot_[model_key] < 0) return -1;
  const std::uint32_t level = levels_[bucket_slot(model_key)].prev(static_cast<std::uint32_t>(from));
  return level == NodeBitset::kEnd ? -1 : static_cast<std::int32_t>(level);
}

GPUSCHED_DECL std::int32_t ClusterState::next_idle_gpu(NodeId n, std::size_t from) const {
  const std::size_t begin = gpu_begin_[n] + from;
  if (begin >= gpu_end_[n]) return -1;
  const std::uint32_t gi = idle_gpu_slots_.next(static_cast<std::uint32_t>(begin));
  return gi == NodeBitset::kEnd || gi >= gpu_end_[n] ? -1 : static_cast<std::int32_t>(gi - gpu_begin_[n]);
}

GPUSCHED_DECL const NodeBitset* ClusterState::idle_bucket(std::uint8_t model_key, std::int32_t idle) const {
  if (idle < 0 || idle > max_gpus_per_node_ || model_slot_.empty() || model_slot_[model_key] < 0) return nullptr;
  return &buckets_[bucket_slot(model_key)][static_cast<std::size_t>(idle)];
}

// --- lookups ---------------------------------------------------------------------------------------

GPUSCHED_DECL NodeId ClusterState::find_node(std::string_view name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? kNoNode : it->second;
}

GPUSCHED_DECL std::uint32_t ClusterState::label_key_id(std::string_view key) const {
  auto it = label_key_ids_.find(key);
  return it == label_key_ids_.end() ? kUnknownLabel : it->second;
}

GPUSCHED_DECL std::uint32_t ClusterState::label_value_id(std::string_view value) const {
  auto it = label_value_ids_.find(value);
  return it == label_value_ids_.end() ? kUnknownLabel : it->second;
}

GPUSCHED_DECL std::uint32_t ClusterState::node_label_value(NodeId n, std::uint32_t key) const {
  for (const auto& l : labels().of(n))
    if (l.key == key) return l.value;
  return kUnknownLabel;
}

GPUSCHED_DECL MilliGpu ClusterState::gpu_free_milli_if_healthy(NodeId n, GpuIndex g) const {
  const std::uint32_t gi = gpu_begin_[n] + g;
  if (gpu_healthy_[gi]) return gpu_free_milli_[gi];
  auto it = withheld_.find(gi);
  return it == withheld_.end() ? 0 : it->second.free_milli;
}

GPUSCHED_DECL Bytes ClusterState::gpu_free_memory_if_healthy(NodeId n, GpuIndex g) const {
  const std::uint32_t gi = gpu_begin_[n] + g;
  if (gpu_healthy_[gi]) return gpu_free_memory_[gi];
  auto it = withheld_.find(gi);
  return it == withheld_.end() ? 0 : it->second.free_memory;
}

// --- compile ---------------------------------------------------------------------------------------

GPUSCHED_DECL Result<TaskRequest> ClusterState::compile(const TaskShape& shape, std::span<const std::string_view> allowed_models,
                                                 std::span<const Label> selector) const {
  using detail::cluster_error;
  using detail::cluster_message;
  if (shape.cpu < 0)
    return cluster_error(ErrorCode::kInvalidValue, "cpu", cluster_message("cpu: expected a non-negative quantity, got ", shape.cpu));
  if (shape.memory < 0)
    return cluster_error(ErrorCode::kInvalidValue, "memory",
                         cluster_message("memory: expected a non-negative quantity, got ", shape.memory));
  if (shape.gpus < 0)
    return cluster_error(ErrorCode::kInvalidValue, "gpus", cluster_message("gpus: expected a non-negative integer, got ", shape.gpus));
  if (shape.gpu_memory < 0)
    return cluster_error(ErrorCode::kInvalidValue, "gpu_memory",
                         cluster_message("gpu_memory: expected a non-negative quantity, got ", shape.gpu_memory));
  if (shape.gpus > 0 && (shape.gpu_milli < 1 || shape.gpu_milli > kMilliPerGpu))
    return cluster_error(ErrorCode::kInvalidValue, "gpu_milli",
                         cluster_message("gpu_milli: expected a share in 1..1000, got ", shape.gpu_milli));
  if (shape.gpus > 1 && shape.gpu_milli != kMilliPerGpu)
    return cluster_error(ErrorCode::kInconsistent, "gpu_milli",
                         cluster_message("gpu_milli: a task of ", shape.gpus, " GPUs takes whole GPUs (1000), got ",
                                         shape.gpu_milli));
  TaskRequest req;
  req.shape = shape;
  if (shape.gpus == 0) req.shape.gpu_milli = 0;
  if (!allowed_models.empty()) {
    req.models = 0;
    for (std::size_t i = 0; i < allowed_models.size(); ++i) {
      auto id = registry_.find(allowed_models[i]);
      if (!id)
        return cluster_error(ErrorCode::kUnknownName, cluster_message("gpu_models[", i, "]"),
                             cluster_message("gpu_models[", i, "]: unknown GPU model \"", allowed_models[i], "\""));
      req.models |= model_bit(*id);
    }
  }
  for (const auto& [key, value] : selector) {
    // A selector naming a key or value no node has matches no node: not an error, a reason. Both
    // cases compile to a value no node's label can have (node_label_value answers kUnknownLabel for
    // a missing key, so an unknown value must not be kUnknownLabel itself).
    const std::uint32_t key_id = label_key_id(key), value_id = label_value_id(value);
    req.selector.push_back({key_id, key_id == kUnknownLabel || value_id == kUnknownLabel ? kUnmatchableLabel : value_id});
  }
  return req;
}

GPUSCHED_DECL Result<TaskRequest> ClusterState::compile(const JobView& job, std::size_t group) const {
  const TaskGroupInfo info = job.group(group);
  std::vector<std::string_view> models(job.allowed_model_count(group));
  for (std::size_t i = 0; i < models.size(); ++i) models[i] = job.allowed_model(group, i);
  std::vector<Label> selector(job.selector_count(group));
  for (std::size_t i = 0; i < selector.size(); ++i) selector[i] = job.selector(group, i);
  auto req = compile(info.shape, models, selector);
  if (!req) {
    const std::string prefix = detail::cluster_message("jobs[", job.name(), "].groups[", group, "]");
    return detail::cluster_error(req.error().code, prefix + "." + req.error().field,
                                 detail::cluster_message(prefix, " (", info.name, ").", req.error().message));
  }
  if (!info.mig_profile.empty()) {
    const std::string field = detail::cluster_message("jobs[", job.name(), "].groups[", group, "].mig_profile");
    const std::string where = detail::cluster_message("jobs[", job.name(), "].groups[", group, "] (", info.name, ").mig_profile");
    if (info.shape.gpus > 0)
      return detail::cluster_error(ErrorCode::kInconsistent, field,
                                   detail::cluster_message(where, ": a task takes a MIG instance or whole/shared GPUs, not both (gpus = ",
                                                           info.shape.gpus, ")"));
    auto mig = mig::MigRequest::from_name(mig_.catalog(), info.mig_profile);
    if (!mig) return detail::cluster_error(mig.error().code, field, detail::cluster_message(where, ": ", mig.error().message));
    // Keep only the MIG models whose registry model the group allows.
    for (std::size_t m = 0; m < mig_.catalog().size(); ++m) {
      auto id = registry_.find(mig_.catalog().spec(static_cast<mig::MigModelId>(m)).model);
      if (!id || !(req->models & model_bit(*id))) mig->profile[m] = -1;
    }
    req->mig = *mig;
    if (!req->mig.any())
      return detail::cluster_error(ErrorCode::kInconsistent, field,
                                   detail::cluster_message(where, ": \"", info.mig_profile, "\" exists on none of the allowed GPU models"));
  }
  return req;
}

// --- fit and mutation ------------------------------------------------------------------------------

// check_fit's steps before any GPU is looked at (flags, selector, GPU models, CPU, memory).
GPUSCHED_DECL FitReason ClusterState::check_host_fit(NodeId n, const TaskRequest& request) const {
  if (flags_[n] & kFlagCordoned) return FitReason::kNodeUnschedulable;
  if (flags_[n] & kFlagFailed) return FitReason::kNodeUnhealthy;  // removed nodes carry it too
  for (const auto& req : request.selector)
    if (node_label_value(n, req.key) != req.value) return FitReason::kSelectorMismatch;
  const TaskShape& shape = request.shape;
  // A GPU-less node lacks GPUs rather than having the wrong model (what `kubectl describe` says too).
  if (shape.needs_gpu() && gpu_end_[n] == gpu_begin_[n]) return FitReason::kInsufficientGpus;
  if (shape.needs_gpu() && (node_models_[n] & request.models) == 0) return FitReason::kGpuModelNotAllowed;
  if (cpu_free_[n] < shape.cpu) return FitReason::kInsufficientCpu;
  if (memory_free_[n] < shape.memory) return FitReason::kInsufficientMemory;
  return FitReason::kFits;
}

GPUSCHED_DECL FitReason ClusterState::check_fit(NodeId n, const TaskRequest& request) const {
  if (const FitReason host = check_host_fit(n, request); host != FitReason::kFits) return host;
  const TaskShape& shape = request.shape;
  if (request.mig.any()) return node_can_serve_mig(n, request);
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
  // A node of many GPUs: its most free share of the allowed models answers (O(models x log G)), and
  // with GPU memory asked the least share that also has the memory (ClusterState::least_share_gpu).
  if (share_indexed(n)) {
    if (most_free_share(n, request.models) < shape.gpu_milli) return FitReason::kInsufficientGpuShare;
    if (shape.gpu_memory == 0 || least_share_gpu(n, shape.gpu_milli, request.models, shape.gpu_memory) >= 0)
      return FitReason::kFits;
    return FitReason::kInsufficientGpuMemory;
  }
  bool share_ok = false;
  for (std::uint32_t g = b; g < e; ++g) {
    if (gpu_free_milli_[g] < shape.gpu_milli || !(request.models & model_bit(gpu_model_[g]))) continue;
    share_ok = true;
    if (gpu_free_memory_[g] >= shape.gpu_memory) return FitReason::kFits;
  }
  return share_ok ? FitReason::kInsufficientGpuMemory : FitReason::kInsufficientGpuShare;
}

GPUSCHED_DECL Status ClusterState::validate(const TaskRequest& request, const TaskAssignment& a) const {
  using detail::cluster_error;
  using detail::cluster_message;
  if (a.node >= node_count())
    return cluster_error(ErrorCode::kUnknownName, "assignment.node", cluster_message("assignment: no node ", a.node));
  const std::string_view name = node_name_[a.node];
  // A MIG task's GPU is checked by validate_mig (that GPU, that profile and start); check_fit's MIG
  // step would ask every MIG GPU of the node for a feasible start first, which made a MIG
  // reservation 24 % slower than the old MigState update (benchmarks/README.md).
  const bool mig_task = request.mig.any() || a.is_mig();
  if (const FitReason why = mig_task ? check_host_fit(a.node, request) : check_fit(a.node, request); why != FitReason::kFits)
    return cluster_error(ErrorCode::kState, "assignment.node", cluster_message("assignment on ", name, ": ", fit_reason_text(why)));
  const TaskShape& shape = request.shape;
  if (a.cpu != shape.cpu || a.memory != shape.memory || a.gpu_memory != shape.gpu_memory || a.gpu_milli != shape.gpu_milli)
    return cluster_error(ErrorCode::kInconsistent, "assignment",
                         cluster_message("assignment on ", name, ": amounts differ from the request"));
  if (mig_task) return validate_mig(request, a);
  const std::size_t want = shape.needs_gpu() ? static_cast<std::size_t>(shape.gpus) : 0;
  if (a.gpus.size() != want)
    return cluster_error(ErrorCode::kInconsistent, "assignment.gpus",
                         cluster_message("assignment on ", name, ": ", a.gpus.size(), " GPUs given, ", want, " requested"));
  // The first index whose GPU was given before it: pairwise for a few GPUs, by sorting for many (a
  // task of 65,535 GPUs made the pairwise check quadratic; issue 15).
  std::size_t repeat = a.gpus.size();
  if (a.gpus.size() <= 32) {
    for (std::size_t i = 1; i < a.gpus.size() && repeat == a.gpus.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (a.gpus[j] == a.gpus[i]) {
          repeat = i;
          break;
        }
  } else {
    std::vector<std::pair<GpuIndex, std::size_t>> sorted(a.gpus.size());
    for (std::size_t i = 0; i < a.gpus.size(); ++i) sorted[i] = {a.gpus[i], i};
    std::sort(sorted.begin(), sorted.end());
    // Within a run of equal GPUs, the second smallest index is that GPU's first repeat.
    for (std::size_t k = 1; k < sorted.size(); ++k)
      if (sorted[k].first == sorted[k - 1].first && (k < 2 || sorted[k - 2].first != sorted[k].first))
        repeat = std::min(repeat, sorted[k].second);
  }
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuIndex g = a.gpus[i];
    // Built only on error: reserve is the decision hot path.
    auto field = [i] { return cluster_message("assignment.gpus[", i, "]"); };
    if (g >= gpu_count(a.node))
      return cluster_error(ErrorCode::kInvalidValue, field(), cluster_message("assignment on ", name, ": no GPU ", g));
    if (i == repeat)
      return cluster_error(ErrorCode::kDuplicate, field(), cluster_message("assignment on ", name, ": GPU ", g, " given twice"));
    const std::uint32_t gi = gpu_begin_[a.node] + g;
    if (!(request.models & model_bit(gpu_model_[gi])))
      return cluster_error(ErrorCode::kState, field(), cluster_message("assignment on ", name, ": GPU ", g, " model not allowed"));
    if (gpu_free_milli_[gi] < shape.gpu_milli || gpu_free_memory_[gi] < shape.gpu_memory)
      return cluster_error(ErrorCode::kState, field(),
                           cluster_message("assignment on ", name, ": GPU ", g, " has ", gpu_free_milli_[gi], " free, ",
                                           shape.gpu_milli, " requested"));
  }
  return {};
}

GPUSCHED_DECL bool ClusterState::acceptable(const TaskRequest& request, const TaskAssignment& a) const {
  if (a.node >= node_count()) return false;
  if (request.mig.any() || a.is_mig()) return validate(request, a).ok();
  if (check_fit(a.node, request) != FitReason::kFits) return false;
  const TaskShape& shape = request.shape;
  if (a.cpu != shape.cpu || a.memory != shape.memory || a.gpu_memory != shape.gpu_memory || a.gpu_milli != shape.gpu_milli)
    return false;
  const std::size_t want = shape.needs_gpu() ? static_cast<std::size_t>(shape.gpus) : 0;
  if (a.gpus.size() != want) return false;
  if (a.gpus.size() > 32) return validate(request, a).ok();  // the sorting duplicate check
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuIndex g = a.gpus[i];
    if (g >= gpu_count(a.node)) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (a.gpus[j] == g) return false;
    const std::uint32_t gi = gpu_begin_[a.node] + g;
    if (!(request.models & model_bit(gpu_model_[gi])) || gpu_free_milli_[gi] < shape.gpu_milli ||
        gpu_free_memory_[gi] < shape.gpu_memory)
      return false;
  }
  return true;
}

GPUSCHED_DECL bool ClusterState::try_reserve(const TaskRequest& request, const TaskAssignment& assignment) {
  if (!acceptable(request, assignment)) return false;
  apply(assignment, -1);
  journal(assignment, false);
  return true;
}

GPUSCHED_DECL Status ClusterState::reserve(const TaskRequest& request, const TaskAssignment& assignment) {
  if (auto st = validate(request, assignment); !st) return st;
  apply(assignment, -1);
  journal(assignment, false);
  return {};
}

GPUSCHED_DECL Status ClusterState::release_journaled(const TaskAssignment& a) {
  if (auto st = release(a); !st) return st;
  journal(a, true);
  return {};
}

GPUSCHED_DECL void ClusterState::journal(const TaskAssignment& a, bool released) {
  journal_.push_back({a.node, static_cast<std::uint32_t>(journal_gpus_.size()), static_cast<std::uint32_t>(a.gpus.size()),
                      a.gpu_milli, a.gpu_memory, a.cpu, a.memory, a.mig_profile, a.mig_start, a.mig_create, released});
  journal_gpus_.insert(journal_gpus_.end(), a.gpus.begin(), a.gpus.end());
}

GPUSCHED_DECL Status ClusterState::release(const TaskAssignment& a) {
  using detail::cluster_error;
  using detail::cluster_message;
  if (a.node >= node_count())
    return cluster_error(ErrorCode::kUnknownName, "assignment.node", cluster_message("release: no node ", a.node));
  if (removed(a.node)) return {};  // its resources left with the node
  const std::string_view name = node_name_[a.node];
  if (cpu_free_[a.node] + a.cpu > cpu_capacity_[a.node] || memory_free_[a.node] + a.memory > memory_capacity_[a.node])
    return cluster_error(ErrorCode::kState, "assignment",
                         cluster_message("release on ", name, ": frees more host resources than are used"));
  if (a.is_mig()) {
    const mig::MigGpuId id = a.gpus.size() == 1 && a.gpus[0] < gpu_count(a.node) ? mig_.find(gpu_begin_[a.node] + a.gpus[0])
                                                                                  : mig::kNoGpu;
    bool busy_there = false;
    if (id != mig::kNoGpu)
      for (const mig::MigSlot& s : mig_.instances(id))
        busy_there |= s.start == a.mig_start && s.busy && s.profile == a.mig_profile;
    if (!busy_there)
      return cluster_error(ErrorCode::kState, "assignment",
                           cluster_message("release on ", name, ": no busy MIG instance of that profile at slice ", a.mig_start));
    apply(a, +1);
    return {};
  }
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const GpuIndex g = a.gpus[i];
    auto field = [i] { return cluster_message("assignment.gpus[", i, "]"); };
    if (g >= gpu_count(a.node))
      return cluster_error(ErrorCode::kInvalidValue, field(), cluster_message("release on ", name, ": no GPU ", g));
    if (gpu_free_milli_if_healthy(a.node, g) + a.gpu_milli > kMilliPerGpu ||
        gpu_free_memory_if_healthy(a.node, g) + a.gpu_memory > shares().memory_capacity(a.node, g))
      return cluster_error(ErrorCode::kState, field(), cluster_message("release on ", name, ": GPU ", g, " frees more than is used"));
  }
  apply(a, +1);
  return {};
}

GPUSCHED_DECL void ClusterState::apply(const TaskAssignment& a, int sign) {
  const NodeId n = a.node;
  if (flags_[n] & kFlagRemoved) return;  // a rollback or release after the node left
  const std::int32_t old_idle = idle_gpus_[n];
  const bool old_partial = partial_gpus_[n] != 0;
  cpu_free_[n] += sign * a.cpu;
  memory_free_[n] += sign * a.memory;
  const bool counted = eligible(n);
  if (counted) {
    eligible_.cpu_free += sign * detail::QuantityWide{a.cpu};
    eligible_.memory_free += sign * detail::QuantityWide{a.memory};
  }
  if (a.is_mig()) {
    // A MIG GPU's free share stays 0: only its instances change.
    apply_mig(a, sign);
    note_node_change(n);
    return;
  }
  for (GpuIndex g : a.gpus) {
    const std::uint32_t gi = gpu_begin_[n] + g;
    if (!gpu_healthy_[gi]) {
      // The GPU reads 0 while unhealthy: the share comes back when it recovers.
      WithheldGpu& w = withheld_[gi];
      w.free_milli += sign * static_cast<std::int32_t>(a.gpu_milli);
      w.free_memory += sign * a.gpu_memory;
      continue;
    }
    const std::int32_t delta = sign * static_cast<std::int32_t>(a.gpu_milli);
    set_visible_free(n, gi, gpu_free_milli_[gi] + delta, gpu_free_memory_[gi] + sign * a.gpu_memory);
    if (counted) eligible_.gpu_milli_free[gpu_model_[gi]] += delta;
  }
  reindex(n, old_idle, old_partial);
  note_node_change(n);
}

GPUSCHED_DECL void ClusterState::reindex(NodeId n, std::int32_t old_idle, bool old_partial) {
  if (!eligible(n)) return;
  const std::size_t slot = bucket_slot(node_index_model_[n]);
  if (old_idle != idle_gpus_[n]) {
    bucket_erase(slot, old_idle, n);
    bucket_insert(slot, idle_gpus_[n], n);
  }
  const bool partial = partial_gpus_[n] != 0;
  if (partial != old_partial) {
    if (partial) partial_nodes_.insert(n);
    else partial_nodes_.erase(n);
  }
}

GPUSCHED_DECL void ClusterState::rollback(Checkpoint mark) {
  while (journal_.size() > mark) {
    const JournalEntry& e = journal_.back();
    scratch_.node = e.node;
    scratch_.gpus.assign(journal_gpus_.begin() + e.gpus_begin, journal_gpus_.begin() + e.gpus_begin + e.gpus_count);
    scratch_.gpu_milli = e.gpu_milli;
    scratch_.gpu_memory = e.gpu_memory;
    scratch_.cpu = e.cpu;
    scratch_.memory = e.memory;
    scratch_.mig_profile = e.mig_profile;
    scratch_.mig_start = e.mig_start;
    scratch_.mig_create = e.mig_create;
    apply(scratch_, e.released ? -1 : +1);
    journal_gpus_.resize(e.gpus_begin);
    journal_.pop_back();
  }
}

// --- MIG (cluster/mig_gpus.hpp) -------------------------------------------------------------------

GPUSCHED_DECL void ClusterState::sync_mig_availability(NodeId n) {
  for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi)
    if (const mig::MigGpuId id = mig_.find(gi); id != mig::kNoGpu)
      mig_.set_available(id, eligible(n) && gpu_healthy_[gi] != 0);
}

GPUSCHED_DECL Status ClusterState::apply_mig_layout(NodeId n, GpuIndex g, std::span<const mig::MigInstance> instances,
                                      std::span<const bool> busy) {
  if (n >= node_count() || g >= gpu_count(n))
    return Error{detail::cluster_message("mig layout: no GPU ", g, " on node ", n), ErrorCode::kState, ""};
  const mig::MigGpuId id = mig_gpu(n, g);
  if (id == mig::kNoGpu)
    return Error{detail::cluster_message("mig layout: GPU ", g, " of ", node_name_[n], " is not in MIG mode"), ErrorCode::kState, ""};
  if (removed(n)) return Error{detail::cluster_message("mig layout: node ", node_name_[n], " was removed"), ErrorCode::kState, "node"};
  if (auto st = mig_.set_layout(id, instances, busy); !st)
    return Error{detail::cluster_message("mig layout on ", node_name_[n], " GPU ", g, ": ", st.error().message),
                 ErrorCode::kInconsistent, st.error().field};
  // An event, not an allocation: caches of capacity or supply must see it (see "Generations").
  note_node_change(n);
  note_layout_change();
  return {};
}

GPUSCHED_DECL Status ClusterState::set_mig_mode(NodeId n, GpuIndex g, bool enabled) {
  using detail::cluster_message;
  if (auto st = check_live_node(n, "set_mig_mode"); !st) return st;
  if (g >= gpu_count(n))
    return detail::cluster_error(ErrorCode::kInvalidValue, "gpu",
                                 cluster_message("set_mig_mode on ", node_name_[n], ": no GPU ", g, " (node has ", gpu_count(n), ")"));
  const std::uint32_t gi = gpu_begin_[n] + g;
  const mig::MigGpuId id = mig_.find(gi);
  if ((id != mig::kNoGpu) == enabled) return {};
  const bool healthy = gpu_healthy_[gi] != 0;
  std::optional<mig::MigModelId> mig_model;
  if (enabled) {
    const std::string& model_name = registry_.model(gpu_model_[gi]).name;
    mig_model = mig_.catalog().find(model_name);
    if (!mig_model)
      return detail::cluster_error(ErrorCode::kInconsistent, "gpu",
                                   cluster_message("set_mig_mode on ", node_name_[n], " GPU ", g, ": GPU model ", model_name,
                                                   " has no MIG profile table (not MIG-capable)"));
    const MilliGpu free = healthy ? gpu_free_milli_[gi] : withheld_[gi].free_milli;
    const Bytes free_memory = healthy ? gpu_free_memory_[gi] : withheld_[gi].free_memory;
    if (free != kMilliPerGpu || free_memory != gpu_memory_capacity_[gi])
      return detail::cluster_error(ErrorCode::kState, "gpu",
                                   cluster_message("set_mig_mode on ", node_name_[n], " GPU ", g, ": the GPU is in use (",
                                                   kMilliPerGpu - free, " milli-GPU held); MIG mode changes on an idle GPU only"));
  } else {
    for (const mig::MigSlot& s : mig_.instances(id))
      if (s.busy)
        return detail::cluster_error(ErrorCode::kState, "gpu",
                                     cluster_message("set_mig_mode on ", node_name_[n], " GPU ", g, ": instance at start ",
                                                     int{s.start}, " is busy; MIG mode changes on an idle GPU only"));
  }
  // Whole-GPU view of the switch: an idle GPU (free 1000, all its memory) becomes a MIG GPU (free 0),
  // or back. An unhealthy GPU keeps reading 0; what it will have once healthy changes instead.
  const std::int32_t after = enabled ? 0 : kMilliPerGpu;
  const Bytes memory_after = enabled ? 0 : gpu_memory_capacity_[gi];
  index_erase(n);
  if (healthy)
    set_visible_free(n, gi, after, memory_after);
  else
    withheld_[gi] = WithheldGpu{after, memory_after};
  if (enabled)
    (void)mig_.add_gpu(n, g, gi, *mig_model);  // an empty layout is valid on every model
  else
    mig_.detach(id, gi);
  index_insert(n);
  sync_mig_availability(n);
  note_node_change(n);
  note_layout_change();
  return {};
}

GPUSCHED_DECL FitReason ClusterState::node_can_serve_mig(NodeId n, const TaskRequest& request) const {
  // "No idle instance" when a fixed layout could hold the instance after a re-partition (free
  // slices at a valid start), so the answer points at the MIG planner rather than at busy slices.
  bool repartition_would_serve = false;
  for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi) {
    const mig::MigGpuId id = mig_.find(gi);
    if (id == mig::kNoGpu || !(request.models & model_bit(gpu_model_[gi]))) continue;
    const int p = request.mig.profile[mig_.model_of(id)];
    if (mig_.can_serve(id, p, true)) return FitReason::kFits;
    repartition_would_serve = repartition_would_serve ||
                              (p >= 0 && mig_.available(id) && mig_.layout_fixed(id) &&
                               mig::feasible_starts(mig_.spec_of(id), mig_.busy_occupancy(id), p, mig_.rules()) != 0);
  }
  return repartition_would_serve ? FitReason::kNoIdleMigInstance : FitReason::kNoMigPlacement;
}

GPUSCHED_DECL bool ClusterState::pick_mig_instance(NodeId n, const TaskRequest& request, TaskAssignment& out) const {
  // Within one node: an idle instance of the profile on the lowest GPU first (no re-partition),
  // else a new instance at the lowest free valid start of the lowest GPU. Cluster-wide choices that
  // keep big profiles placeable are the MIG packer's (gpusched/mig/packer.hpp).
  for (const bool take : {true, false}) {
    for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi) {
      const mig::MigGpuId id = mig_.find(gi);
      if (id == mig::kNoGpu || !mig_.available(id) || !(request.models & model_bit(gpu_model_[gi]))) continue;
      const int p = request.mig.profile[mig_.model_of(id)];
      if (p < 0) continue;
      int start = -1;
      if (take) {
        start = mig_.idle_start(id, p);
      } else if (mig_.layout_fixed(id)) {
        continue;  // its instances are the MIG manager's to create
      } else if (const mig::SlotMask s = mig::feasible_starts(mig_.spec_of(id), mig_.occupancy(id), p, mig_.rules())) {
        start = std::countr_zero(static_cast<unsigned>(s));
      }
      if (start < 0) continue;
      out.node = n;
      out.gpus = {static_cast<GpuIndex>(gi - gpu_begin_[n])};
      out.mig_profile = static_cast<std::int8_t>(p);
      out.mig_start = static_cast<std::int8_t>(start);
      out.mig_create = !take;
      return true;
    }
  }
  return false;
}

GPUSCHED_DECL Status ClusterState::validate_mig(const TaskRequest& request, const TaskAssignment& a) const {
  const std::string_view name = node_name_[a.node];
  if (!request.mig.any() || a.gpus.size() != 1)
    return Error{detail::cluster_message("assignment on ", name, ": a MIG assignment names one GPU and needs a MIG request"),
                 ErrorCode::kInconsistent, ""};
  const GpuIndex g = a.gpus[0];
  if (g >= gpu_count(a.node)) return Error{detail::cluster_message("assignment on ", name, ": no GPU ", g), ErrorCode::kState, ""};
  const mig::MigGpuId id = mig_.find(gpu_begin_[a.node] + g);
  if (id == mig::kNoGpu || !mig_.available(id))
    return Error{detail::cluster_message("assignment on ", name, ": GPU ", g, " is not an available MIG GPU"), ErrorCode::kState, ""};
  if (!(request.models & model_bit(gpu_model_[gpu_begin_[a.node] + g])) ||
      request.mig.profile[mig_.model_of(id)] != a.mig_profile)
    return Error{detail::cluster_message("assignment on ", name, ": GPU ", g, " does not serve the requested MIG profile"),
                 ErrorCode::kState, ""};
  const mig::MigGpuSpec& spec = mig_.spec_of(id);
  if (a.mig_create && mig_.layout_fixed(id))
    return Error{detail::cluster_message("assignment on ", name, ": GPU ", g,
                                         " has a fixed MIG layout (its instances are created outside the scheduler): a "
                                         "placement takes an idle instance, a new one is a re-partition"),
                 ErrorCode::kState, ""};
  const bool ok = a.mig_create ? mig::can_add(spec, mig_.occupancy(id), a.mig_profile, a.mig_start, mig_.rules())
                               : [&] {
                                   for (const mig::MigSlot& s : mig_.instances(id))
                                     if (s.start == a.mig_start) return !s.busy && s.profile == a.mig_profile;
                                   return false;
                                 }();
  if (!ok)
    return Error{detail::cluster_message("assignment on ", name, ": GPU ", g, " cannot ", a.mig_create ? "create" : "take", " an instance of ", spec.profiles[static_cast<std::size_t>(a.mig_profile)].name, " at slice ", a.mig_start),
                 ErrorCode::kState, ""};
  return {};
}

GPUSCHED_DECL void ClusterState::apply_mig(const TaskAssignment& a, int sign) {
  const mig::MigGpuId id = mig_.find(gpu_begin_[a.node] + a.gpus[0]);
  Status st;
  if (sign < 0) {
    st = a.mig_create ? mig_.create(id, a.mig_profile, a.mig_start, true) : mig_.take(id, a.mig_profile, a.mig_start);
  } else {
    st = mig_.release(id, a.mig_start, a.mig_create);
  }
  (void)st;  // validated before (reserve) or the exact inverse of a journaled reservation (rollback)
}

// --- cluster events --------------------------------------------------------------------------------

GPUSCHED_DECL Status ClusterState::check_live_node(NodeId n, std::string_view event) const {
  using detail::cluster_message;
  if (n >= node_count())
    return detail::cluster_error(ErrorCode::kUnknownName, "node",
                                 cluster_message(event, ": no node ", n, " (", node_count(), " node ids)"));
  if (removed(n))
    return detail::cluster_error(ErrorCode::kState, "node",
                                 cluster_message(event, ": node ", n, " (", node_name_[n], ") was removed"));
  return {};
}

GPUSCHED_DECL Status ClusterState::set_flag(NodeId n, std::uint8_t flag, bool on, std::string_view event) {
  if (auto st = check_live_node(n, event); !st) return st;
  const auto flags = static_cast<std::uint8_t>(on ? (flags_[n] | flag) : (flags_[n] & ~flag));
  if (flags == flags_[n]) return {};  // informers repeat events: applying one twice changes nothing
  index_erase(n);
  flags_[n] = flags;
  index_insert(n);
  sync_mig_availability(n);
  note_node_change(n);
  note_availability_change();
  return {};
}

GPUSCHED_DECL Status ClusterState::cordon(NodeId n) { return set_flag(n, kFlagCordoned, true, "cordon"); }
GPUSCHED_DECL Status ClusterState::uncordon(NodeId n) { return set_flag(n, kFlagCordoned, false, "uncordon"); }
GPUSCHED_DECL Status ClusterState::recover_node(NodeId n) { return set_flag(n, kFlagFailed, false, "recover_node"); }

GPUSCHED_DECL Result<NodeUsage> ClusterState::fail_node(NodeId n) {
  if (auto st = set_flag(n, kFlagFailed, true, "fail_node"); !st) return st.error();
  return usage(n);
}

GPUSCHED_DECL NodeUsage ClusterState::usage(NodeId n) const {
  NodeUsage u;
  u.cpu = cpu_capacity_[n] - cpu_free_[n];
  u.memory = memory_capacity_[n] - memory_free_[n];
  for (std::size_t g = 0; g < gpu_count(n); ++g) {
    const MilliGpu free = gpu_free_milli_if_healthy(n, static_cast<GpuIndex>(g));
    u.gpu_milli += kMilliPerGpu - free;
    if (free < kMilliPerGpu) ++u.busy_gpus;
  }
  return u;
}

GPUSCHED_DECL Status ClusterState::set_gpu_health(NodeId n, std::size_t gpu, bool healthy_now) {
  if (auto st = check_live_node(n, "set_gpu_health"); !st) return st;
  if (gpu >= gpu_count(n))
    return detail::cluster_error(ErrorCode::kInvalidValue, "gpu",
                                 detail::cluster_message("set_gpu_health on ", node_name_[n], ": no GPU ", gpu, " (node has ",
                                                         gpu_count(n), ")"));
  const std::uint32_t gi = gpu_begin_[n] + static_cast<std::uint32_t>(gpu);
  if ((gpu_healthy_[gi] != 0) == healthy_now) return {};
  index_erase(n);
  if (healthy_now) {
    const WithheldGpu w = withheld_[gi];
    withheld_.erase(gi);
    set_visible_free(n, gi, w.free_milli, w.free_memory);
    gpu_healthy_[gi] = 1;
    total_gpu_capacity_ += kMilliPerGpu;
  } else {
    withheld_[gi] = WithheldGpu{gpu_free_milli_[gi], gpu_free_memory_[gi]};
    set_visible_free(n, gi, 0, 0);
    gpu_healthy_[gi] = 0;
    total_gpu_capacity_ -= kMilliPerGpu;
  }
  index_insert(n);
  sync_mig_availability(n);
  note_node_change(n);
  note_availability_change();
  return {};
}

GPUSCHED_DECL Result<NodeId> ClusterState::add_node(const ClusterView& view, std::size_t index) {
  if (index >= view.node_count())
    return detail::cluster_error(ErrorCode::kInvalidValue, "index",
                                 detail::cluster_message("add_node: the view has no node ", index));
  ParsedNode& parsed = add_node_scratch_;
  if (auto st = parse_node(view, index, parsed); !st) return st.error();
  if (node_by_name_.find(parsed.name) != node_by_name_.end())
    return detail::cluster_error(ErrorCode::kDuplicate, detail::cluster_node_field(index) + ".name",
                                 detail::cluster_message("add_node: a node named \"", parsed.name, "\" exists"));
  if (node_count() + 1 >= std::numeric_limits<NodeId>::max())
    return detail::cluster_error(ErrorCode::kLimit, "nodes", "add_node: too many nodes");
  if (auto st = check_view_interconnect(view, index, parsed.gpus.size()); !st) return st.error();
  if (model_slot_.empty()) model_slot_.assign(256, -1);  // a default-constructed state
  const NodeId n = append_node(parsed);
  node_by_name_.emplace(node_name_[n], n);
  ensure_index_capacity(node_count());
  ensure_index_row(node_index_model_[n]);
  ensure_index_width(static_cast<std::int32_t>(gpu_count(n)));
  index_insert(n);
  assign_view_interconnect(view, index, n);
  note_node_change(n);
  note_layout_change();
  return n;
}

GPUSCHED_DECL Result<NodeUsage> ClusterState::remove_node(NodeId n) {
  if (auto st = check_live_node(n, "remove_node"); !st) return st.error();
  const NodeUsage in_use = usage(n);
  index_erase(n);
  flags_[n] = kFlagFailed | kFlagRemoved;
  for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi)
    if (const mig::MigGpuId id = mig_.find(gi); id != mig::kNoGpu) mig_.retire(id);
  for (std::uint32_t gi = gpu_begin_[n]; gi < gpu_end_[n]; ++gi) {
    if (!gpu_healthy_[gi]) continue;
    total_gpu_capacity_ -= kMilliPerGpu;
    total_gpu_free_ -= gpu_free_milli_[gi];
  }
  node_by_name_.erase(node_by_name_.find(std::string_view(node_name_[n])));
  label_holes_ += label_count_[n];
  label_count_[n] = 0;
  --live_nodes_;
  interconnects_.clear(n);
  compact_labels_if_sparse();
  note_node_change(n);
  note_layout_change();
  return in_use;
}

GPUSCHED_DECL Status ClusterState::set_label(NodeId n, std::string_view key, std::string_view value) {
  if (auto st = check_live_node(n, "set_label"); !st) return st;
  if (key.empty())
    return detail::cluster_error(ErrorCode::kMissingField, "key", detail::cluster_message("set_label on ", node_name_[n], ": empty label key"));
  // The readers refuse control characters in names and labels (a newline forges a table row); an
  // event may not bring in what no input could (Python's set_label("v\nw") was accepted, and then
  // from_json(to_json()) refused the state it wrote).
  for (const auto& [field, text] : {std::pair{"key", key}, std::pair{"value", value}})
    if (const int u = detail::first_control_character(text); u >= 0)
      return detail::cluster_error(ErrorCode::kInvalidValue, field,
                                   detail::cluster_message("set_label on ", node_name_[n], ": control character 0x",
                                                           detail::hex_byte(static_cast<unsigned char>(u)), " in the label ", field));
  const std::uint32_t key_id = intern_label(label_key_ids_, label_keys_, key);
  const std::uint32_t value_id = intern_label(label_value_ids_, label_values_, value);
  const std::uint32_t begin = label_begin_[n], count = label_count_[n];
  for (std::uint32_t i = begin; i < begin + count; ++i) {
    if (labels_[i].key != key_id) continue;
    if (labels_[i].value == value_id) return {};
    labels_[i].value = value_id;
    note_node_change(n);
    note_layout_change();
    return {};
  }
  if (begin + count != labels_.size()) {
    // Not the last run: move it to the end, leaving a hole.
    const auto new_begin = static_cast<std::uint32_t>(labels_.size());
    for (std::uint32_t i = begin; i < begin + count; ++i) labels_.push_back(labels_[i]);
    label_begin_[n] = new_begin;
    label_holes_ += count;
  }
  labels_.push_back({key_id, value_id});
  ++label_count_[n];
  compact_labels_if_sparse();
  note_node_change(n);
  note_layout_change();
  return {};
}

GPUSCHED_DECL Status ClusterState::remove_label(NodeId n, std::string_view key) {
  if (auto st = check_live_node(n, "remove_label"); !st) return st;
  const std::uint32_t key_id = label_key_id(key);
  const std::uint32_t begin = label_begin_[n], count = label_count_[n];
  for (std::uint32_t i = begin; i < begin + count; ++i) {
    if (labels_[i].key != key_id) continue;
    labels_[i] = labels_[begin + count - 1];
    --label_count_[n];
    ++label_holes_;
    compact_labels_if_sparse();
    note_node_change(n);
    note_layout_change();
    return {};
  }
  return {};  // not set: nothing to remove
}

GPUSCHED_DECL void ClusterState::compact_labels_if_sparse() {
  // Rewrite the runs contiguously once holes are half the array: O(labels), so amortised O(1)
  // per event that made a hole.
  if (label_holes_ < 1024 || 2 * label_holes_ < labels_.size()) return;
  std::vector<LabelRequirement> packed;
  packed.reserve(labels_.size() - label_holes_);
  for (std::size_t n = 0; n < node_count(); ++n) {
    const std::uint32_t begin = label_begin_[n];
    label_begin_[n] = static_cast<std::uint32_t>(packed.size());
    packed.insert(packed.end(), labels_.begin() + begin, labels_.begin() + begin + label_count_[n]);
  }
  labels_ = std::move(packed);
  label_holes_ = 0;
}

// --- reports ---------------------------------------------------------------------------------------

GPUSCHED_DECL std::size_t ClusterState::memory_usage() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t total = bytes(node_name_) + bytes(cpu_capacity_) + bytes(cpu_free_) + bytes(memory_capacity_) +
                      bytes(memory_free_) + bytes(flags_) + bytes(gpu_begin_) + bytes(gpu_end_) + bytes(node_models_) +
                      bytes(node_index_model_) + bytes(idle_gpus_) + bytes(free_gpu_milli_) + bytes(partial_gpus_) +
                      bytes(node_version_) + bytes(gpu_free_milli_) + bytes(gpu_free_memory_) +
                      bytes(gpu_memory_capacity_) + bytes(gpu_model_) + bytes(gpu_healthy_) + bytes(label_begin_) +
                      bytes(label_count_) + bytes(labels_) + bytes(model_slot_);
  for (const auto& name : node_name_) total += name.capacity() > 15 ? name.capacity() + 1 : 0;
  total += node_by_name_.size() * (sizeof(std::string) + sizeof(NodeId) + 2 * sizeof(void*)) +
           node_by_name_.bucket_count() * sizeof(void*);
  total += withheld_.size() * (sizeof(std::uint32_t) + sizeof(WithheldGpu) + 2 * sizeof(void*));
  // Each index bitset: the object, and one bit per node plus a summary bit per 64 nodes while it
  // holds storage (a bucket does only while it has held a node; node_bitset.hpp).
  for (const auto& row : buckets_) {
    total += row.capacity() * sizeof(NodeBitset);
    for (const NodeBitset& bucket : row) total += bucket.storage_bytes();
  }
  total += partial_nodes_.storage_bytes();
  // The non-empty levels of each row and the idle-GPU set: one bit per idle count and per GPU slot.
  for (const auto& levels : levels_) total += sizeof(NodeBitset) + levels.storage_bytes();
  total += partial_shares_.size() * (sizeof(std::uint64_t) + 4 * sizeof(void*));
  total += idle_gpu_slots_.storage_bytes();
  return total + mig_.memory_usage();  // 0 without MIG GPUs
}

GPUSCHED_DECL bool ClusterState::same_allocation_as(const ClusterState& o) const {
  return cpu_free_ == o.cpu_free_ && memory_free_ == o.memory_free_ && gpu_free_milli_ == o.gpu_free_milli_ &&
         gpu_free_memory_ == o.gpu_free_memory_ && idle_gpus_ == o.idle_gpus_ && free_gpu_milli_ == o.free_gpu_milli_ &&
         partial_gpus_ == o.partial_gpus_ && buckets_ == o.buckets_ && levels_ == o.levels_ && partial_nodes_ == o.partial_nodes_ && partial_shares_ == o.partial_shares_ &&
         total_gpu_free_ == o.total_gpu_free_ && eligible_ == o.eligible_ && flags_ == o.flags_ && withheld_ == o.withheld_ &&
         mig_.same_as(o.mig_);
}

}  // namespace gpusched
