#include "gpusched/mig/layout.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

namespace gpusched::mig {
namespace {

bool is_big4(const MigProfile& p) { return p.memory_slices == 4 && p.compute_slices == 4; }
bool is_big3(const MigProfile& p) { return p.memory_slices == 4 && p.compute_slices == 3; }

// The start-independent checks: instance counts, compute, media engines, the pre-R510 rule.
bool limits_ok(const MigGpuSpec& spec, const Occupancy& occ, int p, LayoutRules rules) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  if (occ.count >= spec.max_instances) return false;
  if (occ.per_profile[static_cast<std::size_t>(p)] >= prof.max_instances) return false;
  if (occ.compute + prof.compute_slices > spec.compute_slices) return false;
  if (occ.decoders + prof.decoders > spec.decoders || occ.jpeg + prof.jpeg > spec.jpeg ||
      occ.ofa + prof.ofa > spec.ofa)
    return false;
  if (rules.pre_r510 && ((is_big4(prof) && occ.big3) || (is_big3(prof) && occ.big4))) return false;
  return true;
}

}  // namespace

bool can_add(const MigGpuSpec& spec, const Occupancy& occ, int p, int start, LayoutRules rules) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  if (start < 0 || start >= kMaxSlots || !((prof.starts >> start) & 1U)) return false;
  if (occ.used & prof.window(start)) return false;
  return limits_ok(spec, occ, p, rules);
}

SlotMask feasible_starts(const MigGpuSpec& spec, const Occupancy& occ, int p, LayoutRules rules) {
  if (!limits_ok(spec, occ, p, rules)) return 0;
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  SlotMask out = 0;
  for (SlotMask s = prof.starts; s; s = static_cast<SlotMask>(s & (s - 1))) {
    const int start = std::countr_zero(static_cast<unsigned>(s));
    if (!(occ.used & prof.window(start))) out = static_cast<SlotMask>(out | (1U << start));
  }
  return out;
}

void add_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  occ.used = static_cast<SlotMask>(occ.used | prof.window(start));
  occ.compute = static_cast<std::uint8_t>(occ.compute + prof.compute_slices);
  occ.count = static_cast<std::uint8_t>(occ.count + 1);
  occ.decoders = static_cast<std::uint8_t>(occ.decoders + prof.decoders);
  occ.jpeg = static_cast<std::uint8_t>(occ.jpeg + prof.jpeg);
  occ.ofa = static_cast<std::uint8_t>(occ.ofa + prof.ofa);
  if (is_big4(prof)) ++occ.big4;
  if (is_big3(prof)) ++occ.big3;
  ++occ.per_profile[static_cast<std::size_t>(p)];
}

void remove_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  occ.used = static_cast<SlotMask>(occ.used & ~prof.window(start));
  occ.compute = static_cast<std::uint8_t>(occ.compute - prof.compute_slices);
  occ.count = static_cast<std::uint8_t>(occ.count - 1);
  occ.decoders = static_cast<std::uint8_t>(occ.decoders - prof.decoders);
  occ.jpeg = static_cast<std::uint8_t>(occ.jpeg - prof.jpeg);
  occ.ofa = static_cast<std::uint8_t>(occ.ofa - prof.ofa);
  if (is_big4(prof)) --occ.big4;
  if (is_big3(prof)) --occ.big3;
  --occ.per_profile[static_cast<std::size_t>(p)];
}

bool is_maximal(const MigGpuSpec& spec, const Occupancy& occ, LayoutRules rules) {
  for (std::size_t p = 0; p < spec.profiles.size(); ++p)
    if (feasible_starts(spec, occ, static_cast<int>(p), rules)) return false;
  return true;
}

std::string format_starts(SlotMask starts) {
  std::string out = "{";
  bool first = true;
  for (int s = 0; s < 16; ++s) {
    if (!((starts >> s) & 1U)) continue;
    if (!first) out += ',';
    out += std::to_string(s);
    first = false;
  }
  return out + "}";
}

std::string format_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances) {
  std::string out;
  for (const MigInstance& inst : instances) {
    if (!out.empty()) out += ' ';
    const int p = spec.find_id(inst.profile_id);
    if (p >= 0)
      out += fmt::format("{}@{}", spec.profiles[static_cast<std::size_t>(p)].name, inst.start);
    else
      out += fmt::format("id{}@{}", inst.profile_id, inst.start);
  }
  return out;
}

Result<Occupancy> validate_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances,
                                  LayoutRules rules) {
  Occupancy occ;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const MigInstance& inst = instances[i];
    const int p = spec.find_id(inst.profile_id);
    if (p < 0)
      return Error{fmt::format("instances[{}].profile_id: {} is not a profile of {}", i, inst.profile_id,
                               spec.model)};
    const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
    if (inst.start >= kMaxSlots || !((prof.starts >> inst.start) & 1U))
      return Error{fmt::format("instances[{}].start: {} is not a placement of {} (ID {}) on {} (allowed {})", i,
                               inst.start, prof.name, prof.id, spec.model, format_starts(prof.starts))};
    const SlotMask w = prof.window(inst.start);
    if (occ.used & w) {
      for (std::size_t j = 0; j < i; ++j) {
        const int q = spec.find_id(instances[j].profile_id);
        const MigProfile& other = spec.profiles[static_cast<std::size_t>(q)];
        if (other.window(instances[j].start) & w)
          return Error{fmt::format("instances[{}]: {} at {} overlaps instances[{}] ({} at {}..{})", i, prof.name,
                                   inst.start, j, other.name, instances[j].start,
                                   instances[j].start + other.memory_slices - 1)};
      }
    }
    if (occ.per_profile[static_cast<std::size_t>(p)] >= prof.max_instances)
      return Error{fmt::format("instances[{}]: more than {} instance(s) of {} on {}", i, prof.max_instances,
                               prof.name, spec.model)};
    if (occ.count >= spec.max_instances)
      return Error{fmt::format("instances[{}]: more than {} GPU instances on {}", i, spec.max_instances, spec.model)};
    if (occ.compute + prof.compute_slices > spec.compute_slices)
      return Error{fmt::format("instances[{}]: {} needs {} compute slices, only {} of {} left", i, prof.name,
                               prof.compute_slices, spec.compute_slices - occ.compute, spec.compute_slices)};
    if (occ.decoders + prof.decoders > spec.decoders || occ.jpeg + prof.jpeg > spec.jpeg ||
        occ.ofa + prof.ofa > spec.ofa)
      return Error{fmt::format("instances[{}]: {} exceeds the GPU's media engines (one +me instance per GPU)", i,
                               prof.name)};
    if (!can_add(spec, occ, p, inst.start, rules))
      return Error{fmt::format("instances[{}]: {} cannot coexist with a 4-memory-slice instance of other compute "
                               "size before driver R510",
                               i, prof.name)};
    add_instance(spec, occ, p, inst.start);
  }
  return occ;
}

namespace {

void enumerate(const MigGpuSpec& spec, LayoutRules rules, Occupancy& occ, int min_start,
               std::vector<MigInstance>& current, std::vector<std::vector<MigInstance>>& out) {
  if (is_maximal(spec, occ, rules)) {
    out.push_back(current);
    return;
  }
  // Instances are added in increasing start order (two instances never share a start), so each
  // set is generated once.
  for (int start = min_start; start < spec.memory_slots; ++start) {
    if ((occ.used >> start) & 1U) continue;
    for (std::size_t p = 0; p < spec.profiles.size(); ++p) {
      if (!can_add(spec, occ, static_cast<int>(p), start, rules)) continue;
      add_instance(spec, occ, static_cast<int>(p), start);
      current.push_back({spec.profiles[p].id, static_cast<std::uint8_t>(start)});
      enumerate(spec, rules, occ, start + 1, current, out);
      current.pop_back();
      remove_instance(spec, occ, static_cast<int>(p), start);
    }
  }
}

}  // namespace

std::vector<std::vector<MigInstance>> maximal_layouts(const MigGpuSpec& spec, LayoutRules rules) {
  std::vector<std::vector<MigInstance>> out;
  Occupancy occ;
  std::vector<MigInstance> current;
  enumerate(spec, rules, occ, 0, current, out);
  return out;
}

}  // namespace gpusched::mig
