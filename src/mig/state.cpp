#include "gpusched/mig/state.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace gpusched::mig {

Result<MigRequest> MigRequest::from_name(const MigCatalog& catalog, std::string_view name) {
  auto geometry = parse_profile_name(name);
  if (!geometry)
    return Error{fmt::format("profile: \"{}\" is not a MIG profile name (expected <N>g.<M>gb[+me])", name)};
  MigRequest r;
  for (std::size_t m = 0; m < catalog.size(); ++m)
    r.profile[m] = static_cast<std::int8_t>(match_profile(catalog.spec(static_cast<MigModelId>(m)), *geometry));
  if (!r.any()) return Error{fmt::format("profile: \"{}\" is not a profile of any known MIG GPU model", name)};
  return r;
}

Result<MigRequest> MigRequest::from_id(const MigCatalog& catalog, MigModelId model, std::uint32_t id) {
  if (model >= catalog.size()) return Error{fmt::format("model: index {} out of range", model)};
  const int p = catalog.spec(model).find_id(id);
  if (p < 0) return Error{fmt::format("profile_id: {} is not a profile of {}", id, catalog.spec(model).model)};
  MigRequest r;
  r.profile[model] = static_cast<std::int8_t>(p);
  return r;
}

MigRequest MigRequest::only(std::span<const MigModelId> models) const {
  MigRequest r;
  for (MigModelId m : models)
    if (m < kMaxMigModels) r.profile[m] = profile[m];
  return r;
}

bool MigRequest::any() const {
  return std::any_of(profile.begin(), profile.end(), [](std::int8_t p) { return p >= 0; });
}

MigState::MigState(const MigCatalog& catalog, LayoutRules rules) : catalog_(&catalog), rules_(rules) {}

Result<MigNodeId> MigState::add_node(std::string name) {
  if (name.empty()) return Error{"node name: must not be empty"};
  if (node_by_name_.count(name)) return Error{fmt::format("node name: duplicate \"{}\"", name)};
  const auto id = static_cast<MigNodeId>(node_names_.size());
  node_by_name_.emplace(name, id);
  node_names_.push_back(std::move(name));
  node_gpu_count_.push_back(0);
  return id;
}

std::optional<MigNodeId> MigState::find_node(std::string_view name) const {
  auto it = node_by_name_.find(std::string(name));
  if (it == node_by_name_.end()) return std::nullopt;
  return it->second;
}

Result<MigGpuId> MigState::add_gpu(MigNodeId node, MigModelId model, std::span<const MigInstance> instances,
                                   std::span<const bool> busy) {
  if (node >= node_names_.size()) return Error{fmt::format("node: id {} out of range", node)};
  if (model >= catalog_->size()) return Error{fmt::format("model: index {} out of range", model)};
  const MigGpuSpec& spec = catalog_->spec(model);
  auto occ = validate_layout(spec, instances, rules_);
  if (!occ) return occ.error();
  Gpu g;
  g.node = node;
  g.local = node_gpu_count_[node]++;
  g.model = model;
  g.all = *occ;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const int p = spec.find_id(instances[i].profile_id);
    const bool b = i < busy.size() && busy[i];
    g.slots[g.count++] = MigSlot{static_cast<std::uint8_t>(p), instances[i].start, b};
    if (b) add_instance(spec, g.busy, p, instances[i].start);
  }
  std::sort(g.slots.begin(), g.slots.begin() + g.count,
            [](const MigSlot& a, const MigSlot& b) { return a.start < b.start; });
  const auto id = static_cast<MigGpuId>(gpus_.size());
  g.cls = ~MigClassId{0};
  gpus_.push_back(g);
  reclass(id);
  return id;
}

std::vector<MigInstance> MigState::layout(MigGpuId g) const {
  std::vector<MigInstance> out;
  const MigGpuSpec& spec = spec_of(g);
  for (const MigSlot& s : instances(g)) out.push_back({spec.profiles[s.profile].id, s.start});
  return out;
}

std::uint64_t MigState::key_of(const Gpu& g) {
  // 4 bits of (profile + 1) per start slice, a busy bit per start slice, then the model.
  std::uint64_t sig = 0, busy = 0;
  for (std::uint8_t i = 0; i < g.count; ++i) {
    sig |= static_cast<std::uint64_t>(g.slots[i].profile + 1U) << (4U * g.slots[i].start);
    if (g.slots[i].busy) busy |= std::uint64_t{1} << g.slots[i].start;
  }
  return sig | (busy << 32U) | (static_cast<std::uint64_t>(g.model) << 40U);
}

void MigState::reclass(MigGpuId id) {
  Gpu& g = gpus_[id];
  const std::uint64_t key = key_of(g);
  if (g.cls != ~MigClassId{0}) {
    Class& old = classes_[g.cls];
    if (old.key == key) return;
    old.gpus.erase(id);
    if (old.gpus.empty()) {
      // Swap-remove from the live list.
      const std::size_t pos = old.live_pos;
      live_[pos] = live_.back();
      classes_[live_[pos]].live_pos = pos;
      live_.pop_back();
    }
  }
  auto [it, inserted] = class_by_key_.try_emplace(key, static_cast<MigClassId>(classes_.size()));
  if (inserted) {
    Class c;
    c.key = key;
    c.model = g.model;
    classes_.push_back(std::move(c));
  }
  Class& cls = classes_[it->second];
  if (cls.gpus.empty()) {
    cls.live_pos = live_.size();
    live_.push_back(it->second);
  }
  cls.gpus.insert(id);
  g.cls = it->second;
}

int MigState::slot_at(const Gpu& g, int start) const {
  for (std::uint8_t i = 0; i < g.count; ++i)
    if (g.slots[i].start == start) return i;
  return -1;
}

Status MigState::create(MigGpuId id, int profile, int start, bool busy) {
  if (id >= gpus_.size()) return Error{fmt::format("gpu: id {} out of range", id)};
  Gpu& g = gpus_[id];
  const MigGpuSpec& spec = catalog_->spec(g.model);
  if (profile < 0 || static_cast<std::size_t>(profile) >= spec.profiles.size())
    return Error{fmt::format("profile: index {} out of range on {}", profile, spec.model)};
  if (!can_add(spec, g.all, profile, start, rules_))
    return Error{fmt::format("gpu {}: cannot create {} at {} (layout {})", id, spec.profiles[profile].name, start,
                             format_layout(spec, layout(id)))};
  add_instance(spec, g.all, profile, start);
  if (busy) add_instance(spec, g.busy, profile, start);
  MigSlot s{static_cast<std::uint8_t>(profile), static_cast<std::uint8_t>(start), busy};
  auto* end = g.slots.begin() + g.count;
  auto* pos = std::find_if(g.slots.begin(), end, [&](const MigSlot& x) { return x.start > start; });
  std::move_backward(pos, end, end + 1);
  *pos = s;
  ++g.count;
  reclass(id);
  return {};
}

Status MigState::apply(const MigDecision& d) {
  if (d.action == MigAction::kNone) return Error{"decision: nothing to apply (not placed)"};
  if (d.gpu >= gpus_.size()) return Error{fmt::format("decision.gpu: id {} out of range", d.gpu)};
  if (d.action == MigAction::kCreate) return create(d.gpu, d.profile, d.start, true);
  Gpu& g = gpus_[d.gpu];
  const int i = slot_at(g, d.start);
  if (i < 0 || g.slots[i].busy || g.slots[i].profile != d.profile)
    return Error{fmt::format("decision: gpu {} has no idle instance of that profile at {}", d.gpu, d.start)};
  g.slots[i].busy = true;
  add_instance(catalog_->spec(g.model), g.busy, d.profile, d.start);
  reclass(d.gpu);
  return {};
}

Status MigState::release(MigGpuId id, int start, bool destroy_it) {
  if (id >= gpus_.size()) return Error{fmt::format("gpu: id {} out of range", id)};
  Gpu& g = gpus_[id];
  const int i = slot_at(g, start);
  if (i < 0 || !g.slots[i].busy) return Error{fmt::format("gpu {}: no busy instance at {}", id, start)};
  g.slots[i].busy = false;
  remove_instance(catalog_->spec(g.model), g.busy, g.slots[i].profile, start);
  if (destroy_it) return destroy(id, start);
  reclass(id);
  return {};
}

Status MigState::destroy(MigGpuId id, int start) {
  if (id >= gpus_.size()) return Error{fmt::format("gpu: id {} out of range", id)};
  Gpu& g = gpus_[id];
  const int i = slot_at(g, start);
  if (i < 0 || g.slots[i].busy) return Error{fmt::format("gpu {}: no idle instance at {}", id, start)};
  remove_instance(catalog_->spec(g.model), g.all, g.slots[i].profile, start);
  std::move(g.slots.begin() + i + 1, g.slots.begin() + g.count, g.slots.begin() + i);
  --g.count;
  reclass(id);
  return {};
}

}  // namespace gpusched::mig
