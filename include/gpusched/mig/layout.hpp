// gpusched/mig/layout.hpp — a GPU's MIG layout: validation, incremental occupancy, enumeration.
//
// What it is for. A layout is the set of GPU instances on one GPU, each a profile (by NVML profile
// ID) and a start slice. It is valid when, per the profile table (gpusched/mig/profiles.hpp):
//   1. every instance starts at one of its profile's placement starts;
//   2. no two instances share a memory slice ([start, start + size) ranges are disjoint);
//   3. the compute slices add up to at most the GPU's (7 on A100/H100/H200, 4 on A30);
//   4. no profile exceeds its instance limit and the GPU holds at most `max_instances`;
//   5. media engines (NVDEC, JPEG, OFA) add up to at most the GPU's, so one `+me` per GPU;
//   6. optionally (drivers before R510, MIG User Guide "Concepts"): a (4 memory, 4 compute) and
//      a (4 memory, 3 compute) instance may not coexist (4g.20gb + 3g.20gb).
// Rules 1 and 2 are NVML's own (a creation "will fail if there is overlap with the already
// occupied memory slices"); 3-5 follow from the table's totals.
//
// How to use it. `validate_layout` checks a described layout and names the offending instance.
// Policies keep an `Occupancy` (occupied slices, compute, counts) and ask `can_add` /
// `feasible_starts` in O(1); `maximal_layouts` lists every valid layout to which no instance can
// be added (what `gpusched mig layouts` prints), in a stable order.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/mig/profiles.hpp"

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

// "{0,2,4}" for a start mask.
std::string format_starts(SlotMask starts);
// "3g.20gb@0 4g.20gb@4" (names from the table, IDs when unknown).
std::string format_layout(const MigGpuSpec& spec, std::span<const MigInstance> instances);

}  // namespace gpusched::mig
