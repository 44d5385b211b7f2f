// gpusched/core/mig_layout.hpp — a GPU's MIG layout: validation, incremental occupancy, enumeration.
//
// What it is for. A layout is the set of GPU instances on one GPU, each a profile (by NVML profile
// ID) and a start slice. It is valid when, per the profile table (gpusched/core/mig_profiles.hpp):
//   1. every instance starts at one of its profile's placement starts;
//   2. no two instances share a memory slice ([start, start + size) ranges are disjoint);
//   3. the compute slices add up to at most the GPU's (7 on A100/H100/H200, 4 on A30);
//   4. no profile exceeds its instance limit and the GPU holds at most `max_instances`;
//   5. media engines (NVDEC, JPEG, OFA) add up to at most the GPU's, so one `+me` per GPU;
//   6. optionally (drivers before R510, MIG User Guide "Concepts"): a (4 memory, 4 compute) and
//      a (4 memory, 3 compute) instance may not coexist (4g.20gb + 3g.20gb).
// Layering: vendor rules, below the cluster layer (the cluster state validates layouts with them).
// Rules 1 and 2 are NVML's own (a creation "will fail if there is overlap with the already
// occupied memory slices"); 3-5 follow from the table's totals.
//
// How to use it. `validate_layout` checks a described layout and names the offending instance.
// Policies keep an `Occupancy` (occupied slices, compute, counts) and ask `can_add` /
// `feasible_starts` in O(1); `maximal_layouts` lists every valid layout to which no instance can
// be added (what `gpusched mig layouts` prints), in a stable order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/core/mig_profiles.hpp"

namespace gpusched::mig {

struct MigInstance {
  std::uint32_t profile_id = 0;  // NVML profile ID in the GPU's table
  std::uint8_t start = 0;        // first memory slice
  friend constexpr bool operator==(const MigInstance&, const MigInstance&) = default;
};

// Driver behaviour that changes which layouts are valid.
struct LayoutRules {
  bool pre_r510 = false;  // forbid (4 memory, 4 compute) with (4 memory, 3 compute)
};

// The resources a set of instances takes, by profile index in the GPU's table.
struct Occupancy {
  SlotMask used = 0;
  std::uint8_t compute = 0;
  std::uint8_t count = 0;
  std::uint8_t decoders = 0, jpeg = 0, ofa = 0;
  std::uint8_t big4 = 0, big3 = 0;  // (4 mem, 4 compute) and (4 mem, 3 compute) instances, for rule 6
  std::array<std::uint8_t, kMaxProfiles> per_profile{};
  friend bool operator==(const Occupancy&, const Occupancy&) = default;
};

// Can profile `p` (an index into spec.profiles) start at slice `start` given `occ`?
bool can_add(const MigGpuSpec& spec, const Occupancy& occ, int p, int start, LayoutRules rules = {});
// Every start at which `p` can be added now (bit s = start s).
SlotMask feasible_starts(const MigGpuSpec& spec, const Occupancy& occ, int p, LayoutRules rules = {});
// Adds / removes an instance (no checks: call can_add first).
void add_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start);
void remove_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start);
// True when no profile fits anywhere.
bool is_maximal(const MigGpuSpec& spec, const Occupancy& occ, LayoutRules rules = {});

// Checks a described layout. Errors name the instance: "instances[1]: 3g.20gb (ID 9) at 4
// overlaps instances[0] (4g.20gb at 0..3)"; "instances[0].profile_id: 42 is not a profile of
// A30-24GB"; "instances[2].start: 3 is not a placement of 2g.10gb (allowed {0,2,4})".
Result<Occupancy> validate_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances,
                                  LayoutRules rules = {});

// Every valid maximal layout, each sorted by start; layouts in lexicographic order of their
// (start, table index) sequences. A100-40GB has a few hundred; the search visits each valid
// layout once.
std::vector<std::vector<MigInstance>> maximal_layouts(const MigGpuSpec& spec, LayoutRules rules = {});

// The k-th (0-based) slot of a mask in increasing order, -1 when it has no k-th slot: a uniformly drawn
// start is nth_slot(starts, draw below popcount(starts)) (random layouts in tests and benchmarks).
constexpr int nth_slot(SlotMask mask, int k) {
  for (unsigned m = mask; m != 0; m &= m - 1, --k)
    if (k == 0) return std::countr_zero(m);
  return -1;
}

// "{0,2,4}" for a start mask.
std::string format_starts(SlotMask starts);
// "3g.20gb@0 4g.20gb@4" (names from the table, IDs when unknown).
std::string format_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances);


// --- definitions --------------------------------------------------------------------------------

namespace detail {

inline bool mig_is_big4(const MigProfile& p) { return p.memory_slices == 4 && p.compute_slices == 4; }
inline bool mig_is_big3(const MigProfile& p) { return p.memory_slices == 4 && p.compute_slices == 3; }

// The start-independent checks: instance counts, compute, media engines, the pre-R510 rule.
inline bool mig_limits_ok(const MigGpuSpec& spec, const Occupancy& occ, int p, LayoutRules rules) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  if (occ.count >= spec.max_instances) return false;
  if (occ.per_profile[static_cast<std::size_t>(p)] >= prof.max_instances) return false;
  if (occ.compute + prof.compute_slices > spec.compute_slices) return false;
  if (occ.decoders + prof.decoders > spec.decoders || occ.jpeg + prof.jpeg > spec.jpeg ||
      occ.ofa + prof.ofa > spec.ofa)
    return false;
  if (rules.pre_r510 && ((mig_is_big4(prof) && occ.big3) || (mig_is_big3(prof) && occ.big4))) return false;
  return true;
}

}  // namespace detail

inline bool can_add(const MigGpuSpec& spec, const Occupancy& occ, int p, int start, LayoutRules rules) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  if (start < 0 || start >= kMaxSlots || !((prof.starts >> start) & 1U)) return false;
  if (occ.used & prof.window(start)) return false;
  return detail::mig_limits_ok(spec, occ, p, rules);
}

inline SlotMask feasible_starts(const MigGpuSpec& spec, const Occupancy& occ, int p, LayoutRules rules) {
  if (!detail::mig_limits_ok(spec, occ, p, rules)) return 0;
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  SlotMask out = 0;
  for (SlotMask s = prof.starts; s; s = static_cast<SlotMask>(s & (s - 1))) {
    const int start = std::countr_zero(static_cast<unsigned>(s));
    if (!(occ.used & prof.window(start))) out = static_cast<SlotMask>(out | (1U << start));
  }
  return out;
}

inline void add_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  occ.used = static_cast<SlotMask>(occ.used | prof.window(start));
  occ.compute = static_cast<std::uint8_t>(occ.compute + prof.compute_slices);
  occ.count = static_cast<std::uint8_t>(occ.count + 1);
  occ.decoders = static_cast<std::uint8_t>(occ.decoders + prof.decoders);
  occ.jpeg = static_cast<std::uint8_t>(occ.jpeg + prof.jpeg);
  occ.ofa = static_cast<std::uint8_t>(occ.ofa + prof.ofa);
  if (detail::mig_is_big4(prof)) ++occ.big4;
  if (detail::mig_is_big3(prof)) ++occ.big3;
  ++occ.per_profile[static_cast<std::size_t>(p)];
}

inline void remove_instance(const MigGpuSpec& spec, Occupancy& occ, int p, int start) {
  const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
  occ.used = static_cast<SlotMask>(occ.used & ~prof.window(start));
  occ.compute = static_cast<std::uint8_t>(occ.compute - prof.compute_slices);
  occ.count = static_cast<std::uint8_t>(occ.count - 1);
  occ.decoders = static_cast<std::uint8_t>(occ.decoders - prof.decoders);
  occ.jpeg = static_cast<std::uint8_t>(occ.jpeg - prof.jpeg);
  occ.ofa = static_cast<std::uint8_t>(occ.ofa - prof.ofa);
  if (detail::mig_is_big4(prof)) --occ.big4;
  if (detail::mig_is_big3(prof)) --occ.big3;
  --occ.per_profile[static_cast<std::size_t>(p)];
}

inline bool is_maximal(const MigGpuSpec& spec, const Occupancy& occ, LayoutRules rules) {
  for (std::size_t p = 0; p < spec.profiles.size(); ++p)
    if (feasible_starts(spec, occ, static_cast<int>(p), rules)) return false;
  return true;
}

inline std::string format_starts(SlotMask starts) {
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

inline std::string format_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances) {
  std::string out;
  for (const MigInstance& inst : instances) {
    if (!out.empty()) out += ' ';
    const int p = spec.find_id(inst.profile_id);
    if (p >= 0)
      out += gpusched::detail::concat_text(spec.profiles[static_cast<std::size_t>(p)].name, "@", inst.start);
    else
      out += gpusched::detail::concat_text("id", inst.profile_id, "@", inst.start);
  }
  return out;
}

inline Result<Occupancy> validate_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances,
                                  LayoutRules rules) {
  Occupancy occ;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const MigInstance& inst = instances[i];
    const int p = spec.find_id(inst.profile_id);
    if (p < 0)
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "].profile_id: ", inst.profile_id, " is not a profile of ", spec.model));
    const MigProfile& prof = spec.profiles[static_cast<std::size_t>(p)];
    if (inst.start >= kMaxSlots || !((prof.starts >> inst.start) & 1U))
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "].start: ", inst.start, " is not a placement of ", prof.name, " (ID ", prof.id, ") on ", spec.model, " (allowed ", format_starts(prof.starts), ")"));
    const SlotMask w = prof.window(inst.start);
    if (occ.used & w) {
      for (std::size_t j = 0; j < i; ++j) {
        const int q = spec.find_id(instances[j].profile_id);
        const MigProfile& other = spec.profiles[static_cast<std::size_t>(q)];
        if (other.window(instances[j].start) & w)
          return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: ", prof.name, " at ", inst.start, " overlaps instances[", j, "] (", other.name, " at ", instances[j].start, "..", instances[j].start + other.memory_slices - 1, ")"));
      }
    }
    if (occ.per_profile[static_cast<std::size_t>(p)] >= prof.max_instances)
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: more than ", prof.max_instances, " instance(s) of ", prof.name, " on ", spec.model));
    if (occ.count >= spec.max_instances)
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: more than ", spec.max_instances, " GPU instances on ", spec.model));
    if (occ.compute + prof.compute_slices > spec.compute_slices)
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: ", prof.name, " needs ", prof.compute_slices, " compute slices, only ", spec.compute_slices - occ.compute, " of ", spec.compute_slices, " left"));
    if (occ.decoders + prof.decoders > spec.decoders || occ.jpeg + prof.jpeg > spec.jpeg ||
        occ.ofa + prof.ofa > spec.ofa)
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: ", prof.name, " exceeds the GPU's media engines (one +me instance per GPU)"));
    if (!can_add(spec, occ, p, inst.start, rules))
      return gpusched::detail::input_error(gpusched::detail::concat_text("instances[", i, "]: ", prof.name, " cannot coexist with a 4-memory-slice instance of other compute size before driver R510"));
    add_instance(spec, occ, p, inst.start);
  }
  return occ;
}

namespace detail {

inline void mig_enumerate_layouts(const MigGpuSpec& spec, LayoutRules rules, Occupancy& occ, int min_start,
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
      mig_enumerate_layouts(spec, rules, occ, start + 1, current, out);
      current.pop_back();
      remove_instance(spec, occ, static_cast<int>(p), start);
    }
  }
}

}  // namespace detail

inline std::vector<std::vector<MigInstance>> maximal_layouts(const MigGpuSpec& spec, LayoutRules rules) {
  std::vector<std::vector<MigInstance>> out;
  Occupancy occ;
  std::vector<MigInstance> current;
  detail::mig_enumerate_layouts(spec, rules, occ, 0, current, out);
  return out;
}

}  // namespace gpusched::mig
