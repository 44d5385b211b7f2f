// gpusched/mig/profiles.hpp — MIG GPU instance profile tables: vendor facts as data.
//
// What it is for. Multi-Instance GPU (MIG) splits a GPU into isolated GPU instances, but not
// freely. NVML describes a GPU as a row of memory slices (8 on A100/H100/H200, 4 on A30); a GPU
// instance profile occupies `memory_slices` consecutive slices and may only *start* at certain
// slices (`nvmlDeviceGetGpuInstancePossiblePlacements`, printed by `nvidia-smi mig -lgipp` as
// `{0,4}:4` = starts {0,4}, size 4). An instance holds memory slices [start, start + size). Two
// instances conflict iff those ranges overlap; on top of that a GPU has 7 (A30: 4) compute slices,
// a per-profile instance limit, and a fixed number of media engines (NVDEC, JPEG, OFA), which is
// why only one `+me` (media extensions) instance fits on a GPU.
//
// How to use it. `MigCatalog::builtin()` holds the tables of A100-SXM4-40GB, A100-80GB,
// H100-80GB, H200-141GB and A30-24GB, compiled in (no I/O). Look a GPU model up with
// `catalog.find("NVIDIA-A100-SXM4-40GB")` (the core GpuModelRegistry's aliases apply), then a
// profile by NVML profile ID (`spec.find_id(9)`) or by geometry parsed from a name
// (`parse_profile_name("3g.39gb")` then `match_profile`). Names are never keys: drivers print the
// same profile differently (`3g.40gb` vs `3g.39gb` on A100-80GB, mig-parted#31) and the same ID
// means different geometries on different GPUs (ID 14 is 2g.10gb on A100 but 1g.6gb on A30). A
// table read from a real machine's `nvidia-smi` text (gpusched/mig/nvidia_smi.hpp) can be added
// with `MigCatalog::add` after `validate_spec`.
//
// Sources (one per row, in src/mig/profiles.cpp): NVIDIA MIG User Guide, "Supported MIG
// Profiles" tables and the "Getting Started" `-lgip`/`-lgipp` examples; real `nvidia-smi mig
// -lgip/-lgipp` captures (A30; A100 as reproduced from the guide); NVIDIA/mig-parted issue #120
// (H200 -lgip). Known doubts, kept in the rows' notes: H200 placements are inferred from the H100
// (no real -lgipp capture); A100-80GB 1g.20gb has no real capture (ID and placements by analogy);
// NVIDIA's go-nvml mock gives 3g placements size 3 where hardware reports 4 (we use 4); the
// guide's A100 table says 1/8 memory for 1g.10gb although -lgipp says {0,2,4,6}:2 (we use 2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"

namespace gpusched::mig {

// A set of memory slices (bit s = slice s), or a set of start slots.
using SlotMask = std::uint16_t;
inline constexpr int kMaxSlots = 8;       // memory slices of the largest MIG GPUs
inline constexpr int kMaxProfiles = 15;   // profiles per GPU model (4 bits in state keys)
inline constexpr int kMaxInstances = 8;   // GPU instances per GPU (7 on every known model)

constexpr SlotMask slot_window(int start, int size) {
  return static_cast<SlotMask>(((1U << size) - 1U) << start);
}

struct MigProfile {
  std::uint32_t id = 0;              // NVML GPU instance profile ID (-lgip "ID" column)
  std::string name;                  // as the reference driver prints it; informative only
  std::uint8_t compute_slices = 0;   // the "Ng" of the name: SM slices out of the GPU's total
  std::uint8_t memory_slices = 0;    // placement size on the memory-slice axis (-lgipp ":size")
  SlotMask starts = 0;               // allowed start slices (-lgipp "{...}")
  std::uint8_t max_instances = 0;    // -lgip "Total" instances
  bool media_extensions = false;     // a "+me" variant
  std::int32_t memory_mib = 0;       // -lgip memory (GiB * 1024, rounded); 0 = unknown
  std::int32_t sm_count = 0;         // -lgip SM; 0 = unknown
  std::uint8_t copy_engines = 0, decoders = 0, jpeg = 0, ofa = 0;
  std::string source;                // where the row comes from
  std::string notes;                 // doubts and driver differences

  SlotMask window(int start) const { return slot_window(start, memory_slices); }
  int start_count() const;
};

// One MIG-capable GPU model: its slice axis, limits and profiles.
struct MigGpuSpec {
  std::string model;                 // the core GpuModelRegistry's canonical name
  std::uint8_t memory_slots = 8;
  std::uint8_t compute_slices = 7;
  std::uint8_t max_instances = 7;    // GPU instances per GPU
  // Media engines of the whole GPU (those of its full-GPU profile); the sum over a layout's
  // instances may not exceed them.
  std::uint8_t decoders = 0, jpeg = 0, ofa = 0;
  std::vector<MigProfile> profiles;  // in -lgip order
  std::string source;

  // Index of the profile with NVML profile ID `id`, or -1.
  int find_id(std::uint32_t id) const;
  SlotMask all_slots() const { return slot_window(0, memory_slots); }
};

// Checks a table: sizes within the axis, starts within bounds, unique IDs, non-empty profiles,
// at most kMaxProfiles profiles and kMaxSlots slices. Messages name the profile and the field.
Status validate_spec(const MigGpuSpec& spec);

// A profile name's geometry: "3g.40gb" -> {3, 40, false}; "1g.5gb+me" -> {1, 5, true}. Accepts
// the forms clusters use: "MIG 3g.20gb", "nvidia.com/mig-3g.20gb", "mig-3g.20gb", any case.
struct ProfileGeometry {
  int compute_slices = 0;
  int memory_gb = 0;
  bool media_extensions = false;
};
std::optional<ProfileGeometry> parse_profile_name(std::string_view name);

// The profile of `spec` with the geometry's compute slices and media flag whose nominal memory
// (the GB figure of its table name) is nearest the requested GB, within 10% (so "3g.39gb" finds
// 3g.40gb). -1 when none.
int match_profile(const MigGpuSpec& spec, const ProfileGeometry& geometry);

// The MIG models known to a program. Models are referred to by their index (`MigModelId`).
using MigModelId = std::uint8_t;
inline constexpr std::size_t kMaxMigModels = 32;

class MigCatalog {
 public:
  MigCatalog() = default;
  // A100-SXM4-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB (in that order).
  static const MigCatalog& builtin();

  // Adds a validated spec. Fails on an invalid table, a model name already present, or a full
  // catalog.
  Result<MigModelId> add(MigGpuSpec spec);
  // Finds a model by name: exact (case-insensitive) match first, then through the core
  // GpuModelRegistry's aliases ("NVIDIA-A100-SXM4-40GB", "A100-PCIE-40GB", "H100").
  std::optional<MigModelId> find(std::string_view name) const;

  const MigGpuSpec& spec(MigModelId id) const { return specs_[id]; }
  std::size_t size() const { return specs_.size(); }

 private:
  std::vector<MigGpuSpec> specs_;
};

}  // namespace gpusched::mig
