// gpusched/core/mig_profiles.hpp — MIG GPU instance profile tables: vendor facts as data.
//
// Layering. These are vendor facts, below the cluster layer: the cluster state (gpusched/cluster/
// mig_gpus.hpp) validates every GPU's MIG instances against them, and the MIG policies
// (gpusched/mig/) read them. Every GpuModelRegistry model marked `mig_capable` has a table here
// (tests/mig/data_test.cpp checks it); `MigCatalog::find` resolves registry names and aliases.
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
// table read from a real machine's `nvidia-smi` text (gpusched/io/mig_nvidia_smi.hpp) can be added
// with `MigCatalog::add` after `validate_spec`.
//
// Sources (one per row, in the tables below): NVIDIA MIG User Guide, "Supported MIG
// Profiles" tables and the "Getting Started" `-lgip`/`-lgipp` examples; real `nvidia-smi mig
// -lgip/-lgipp` captures (A30; A100 as reproduced from the guide); NVIDIA/mig-parted issue #120
// (H200 -lgip). Known doubts, kept in the rows' notes: H200 placements are inferred from the H100
// (no real -lgipp capture); A100-80GB 1g.20gb has no real capture (ID and placements by analogy);
// NVIDIA's go-nvml mock gives 3g placements size 3 where hardware reports 4 (we use 4); the
// guide's A100 table says 1/8 memory for 1g.10gb although -lgipp says {0,2,4,6}:2 (we use 2).
#pragma once

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/detail/text.hpp"
#include "gpusched/core/gpu_model.hpp"
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


// --- definitions --------------------------------------------------------------------------------
// The built-in tables. Each row cites its source; the doubts are in the notes. Checked against
// NVIDIA's MIG User Guide and real nvidia-smi captures. Memory is the -lgip GiB figure * 1024,
// rounded; engine counts are the -lgip columns where a real capture exists, else the guide's table.

namespace detail {

struct MigTableRow {
  std::uint32_t id;
  const char* name;
  std::uint8_t compute, memory;
  SlotMask starts;
  std::uint8_t max_instances;
  bool me;
  std::int32_t mib, sm;
  std::uint8_t ce, dec, jpeg, ofa;
  const char* source;
  const char* notes;
};

// Start masks as -lgipp prints them.
inline constexpr SlotMask k0to6 = 0x7F;    // {0,1,2,3,4,5,6}
inline constexpr SlotMask kEven4 = 0x55;   // {0,2,4,6}
inline constexpr SlotMask kEven3 = 0x15;   // {0,2,4}
inline constexpr SlotMask kHalves = 0x11;  // {0,4}
inline constexpr SlotMask kZero = 0x01;    // {0}
inline constexpr SlotMask k0to3 = 0x0F;    // {0,1,2,3}
inline constexpr SlotMask kA30Halves = 0x05;  // {0,2}

inline constexpr const char* kGuideA100 =
    "NVIDIA MIG User Guide, Supported MIG Profiles, 'GPU Instance Profiles on A100' table; "
    "Getting Started -lgip and -lgipp examples (A100-SXM4-40GB)";
inline constexpr const char* kA100_80 =
    "NVIDIA MIG User Guide, A100 table (80GB names per its note) and -lgipp example; real "
    "A100-80GB -lgip captures in public notes (SM, memory, totals)";
inline constexpr const char* kH100 =
    "NVIDIA MIG User Guide, Supported MIG Profiles, 'GPU Instance Profiles on H100' table; real "
    "'NVIDIA H100 80GB HBM3' -lgip/-lgipp capture; NVIDIA/k8s-test-infra mock-nvml H100 placements";
inline constexpr const char* kH200 =
    "NVIDIA MIG User Guide, 'GPU Instance Profiles on H200' table; NVIDIA/mig-parted issue #120 "
    "-lgip rows (IDs, totals, memory, SM, engines)";
inline constexpr const char* kH200Inferred =
    "placements INFERRED from H100 (same memory fractions, IDs and totals); no real H200 -lgipp seen";
inline constexpr const char* kA30 =
    "NVIDIA MIG User Guide, A30 table; real A30 24GB -lgip/-lgipp capture "
    "(github.com/Summer-Lo/Docker_configuration, 000-MIG/README.md)";

inline constexpr MigTableRow kA100_40Rows[] = {
    {19, "1g.5gb", 1, 1, k0to6, 7, false, 4864, 14, 1, 0, 0, 0, kGuideA100, ""},
    {20, "1g.5gb+me", 1, 1, k0to6, 1, true, 4864, 14, 1, 1, 1, 1, kGuideA100,
     "media extensions; one per GPU"},
    {15, "1g.10gb", 1, 2, kEven4, 4, false, 9851, 14, 1, 1, 0, 0, kGuideA100,
     "guide table says 1/8 memory but -lgipp says {0,2,4,6}:2 and 4 instances; -lgipp used. "
     "Absent on older drivers"},
    {14, "2g.10gb", 2, 2, kEven3, 3, false, 9851, 28, 2, 1, 0, 0, kGuideA100, ""},
    {9, "3g.20gb", 3, 4, kHalves, 2, false, 19968, 42, 3, 2, 0, 0, kGuideA100,
     "3 compute slices on 4 memory slices"},
    {5, "4g.20gb", 4, 4, kZero, 1, false, 19968, 56, 4, 2, 0, 0, kGuideA100,
     "with 3g.20gb at 4 only from driver R510 on (guide, Concepts)"},
    {0, "7g.40gb", 7, 8, kZero, 1, false, 40192, 98, 7, 5, 1, 1, kGuideA100, ""},
};

inline constexpr MigTableRow kA100_80Rows[] = {
    {19, "1g.10gb", 1, 1, k0to6, 7, false, 9728, 14, 1, 0, 0, 0, kA100_80, ""},
    {20, "1g.10gb+me", 1, 1, k0to6, 1, true, 9728, 14, 1, 1, 1, 1, kA100_80, "one per GPU"},
    {15, "1g.20gb", 1, 2, kEven4, 4, false, 0, 14, 1, 1, 0, 0, kA100_80,
     "no real capture: ID and placements by analogy with A100-40GB/H100; memory unknown"},
    {14, "2g.20gb", 2, 2, kEven3, 3, false, 19968, 28, 2, 1, 0, 0, kA100_80, ""},
    {9, "3g.40gb", 3, 4, kHalves, 2, false, 40192, 42, 3, 2, 0, 0, kA100_80,
     "named 3g.39gb by drivers 535.x/545.x (NVIDIA/mig-parted#31)"},
    {5, "4g.40gb", 4, 4, kZero, 1, false, 40192, 56, 4, 2, 0, 0, kA100_80, ""},
    {0, "7g.80gb", 7, 8, kZero, 1, false, 80896, 98, 7, 5, 1, 1, kA100_80,
     "79.00 or 78.75 GiB depending on the driver"},
};

inline constexpr MigTableRow kH100Rows[] = {
    {19, "1g.10gb", 1, 1, k0to6, 7, false, 9984, 16, 1, 1, 1, 0, kH100, ""},
    {20, "1g.10gb+me", 1, 1, k0to6, 1, true, 9984, 16, 1, 1, 1, 1, kH100, "one per GPU"},
    {15, "1g.20gb", 1, 2, kEven4, 4, false, 20091, 26, 1, 1, 1, 0, kH100,
     "26 SMs per real -lgip (the go-nvml mock's 16 is wrong)"},
    {14, "2g.20gb", 2, 2, kEven3, 3, false, 20091, 32, 2, 2, 2, 0, kH100, ""},
    {9, "3g.40gb", 3, 4, kHalves, 2, false, 40448, 60, 3, 3, 3, 0, kH100,
     "size 4 per real -lgipp (the go-nvml mock's size 3 is wrong)"},
    {5, "4g.40gb", 4, 4, kZero, 1, false, 40448, 64, 4, 4, 4, 0, kH100, ""},
    {0, "7g.80gb", 7, 8, kZero, 1, false, 81152, 132, 8, 7, 7, 1, kH100,
     "SM counts are an SXM5 part's; H100 PCIe has fewer SMs, same geometry"},
};

inline constexpr MigTableRow kH200Rows[] = {
    {19, "1g.18gb", 1, 1, k0to6, 7, false, 16384, 16, 1, 1, 1, 0, kH200, kH200Inferred},
    {20, "1g.18gb+me", 1, 1, k0to6, 1, true, 16384, 16, 1, 1, 1, 1, kH200, kH200Inferred},
    {15, "1g.35gb", 1, 2, kEven4, 4, false, 33024, 26, 1, 1, 1, 0, kH200, kH200Inferred},
    {14, "2g.35gb", 2, 2, kEven3, 3, false, 33024, 32, 2, 2, 2, 0, kH200, kH200Inferred},
    {9, "3g.71gb", 3, 4, kHalves, 2, false, 71168, 60, 3, 3, 3, 0, kH200, kH200Inferred},
    {5, "4g.71gb", 4, 4, kZero, 1, false, 71168, 64, 4, 4, 4, 0, kH200, kH200Inferred},
    {0, "7g.141gb", 7, 8, kZero, 1, false, 143104, 132, 8, 7, 7, 1, kH200, kH200Inferred},
};

inline constexpr MigTableRow kA30Rows[] = {
    {14, "1g.6gb", 1, 1, k0to3, 4, false, 5949, 14, 1, 1, 0, 0, kA30,
     "the guide says 0 NVDEC; real -lgip shows 1 (used)"},
    {21, "1g.6gb+me", 1, 1, k0to3, 1, true, 5949, 14, 1, 1, 1, 1, kA30, "R470+; one per GPU"},
    {5, "2g.12gb", 2, 2, kA30Halves, 2, false, 11971, 28, 2, 2, 0, 0, kA30, ""},
    {6, "2g.12gb+me", 2, 2, kA30Halves, 1, true, 11971, 28, 2, 2, 1, 1, kA30,
     "R525+ (guide note); not in the captured (older-driver) -lgip; engines from the guide table"},
    {0, "4g.24gb", 4, 4, kZero, 1, false, 24064, 56, 4, 4, 1, 1, kA30, "23.50 or 23.44 GiB by driver"},
};

template <std::size_t N>
MigGpuSpec make_mig_spec(const char* model, std::uint8_t slots, std::uint8_t compute, std::uint8_t max_gi,
                     const MigTableRow (&rows)[N], const char* source) {
  MigGpuSpec spec;
  spec.model = model;
  spec.memory_slots = slots;
  spec.compute_slices = compute;
  spec.max_instances = max_gi;
  spec.source = source;
  for (const MigTableRow& r : rows) {
    MigProfile p;
    p.id = r.id;
    p.name = r.name;
    p.compute_slices = r.compute;
    p.memory_slices = r.memory;
    p.starts = r.starts;
    p.max_instances = r.max_instances;
    p.media_extensions = r.me;
    p.memory_mib = r.mib;
    p.sm_count = r.sm;
    p.copy_engines = r.ce;
    p.decoders = r.dec;
    p.jpeg = r.jpeg;
    p.ofa = r.ofa;
    p.source = r.source;
    p.notes = r.notes;
    // The GPU's media engines are those of its full-GPU profile (the one with every slice).
    if (r.memory == slots) {
      spec.decoders = r.dec;
      spec.jpeg = r.jpeg;
      spec.ofa = r.ofa;
    }
    spec.profiles.push_back(std::move(p));
  }
  return spec;
}

inline std::string mig_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline bool mig_iequal(std::string_view a, std::string_view b) { return mig_lower(a) == mig_lower(b); }

}  // namespace detail

inline int MigProfile::start_count() const { return std::popcount(static_cast<unsigned>(starts)); }

inline int MigGpuSpec::find_id(std::uint32_t id) const {
  for (std::size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].id == id) return static_cast<int>(i);
  return -1;
}

inline Status validate_spec(const MigGpuSpec& spec) {
  const std::string& m = spec.model;
  if (m.empty()) return gpusched::detail::input_error("model: must not be empty");
  if (spec.memory_slots < 1 || spec.memory_slots > kMaxSlots)
    return gpusched::detail::input_error(gpusched::detail::concat_text(m, ": memory_slots must be 1..", kMaxSlots, ", got ", spec.memory_slots));
  if (spec.compute_slices < 1)
    return gpusched::detail::input_error(gpusched::detail::concat_text(m, ": compute_slices must be positive, got ", spec.compute_slices));
  if (spec.max_instances < 1 || spec.max_instances > kMaxInstances)
    return gpusched::detail::input_error(gpusched::detail::concat_text(m, ": max_instances must be 1..", kMaxInstances, ", got ", spec.max_instances));
  if (spec.profiles.empty()) return gpusched::detail::input_error(gpusched::detail::concat_text(m, ": profiles: none"));
  if (spec.profiles.size() > static_cast<std::size_t>(kMaxProfiles))
    return gpusched::detail::input_error(gpusched::detail::concat_text(m, ": profiles: at most ", kMaxProfiles, ", got ", spec.profiles.size()));
  for (std::size_t i = 0; i < spec.profiles.size(); ++i) {
    const MigProfile& p = spec.profiles[i];
    const std::string where = gpusched::detail::concat_text(m, ": profile ", p.name, " (ID ", p.id, ")");
    if (spec.find_id(p.id) != static_cast<int>(i)) return gpusched::detail::input_error(where + ": duplicate profile ID");
    if (p.memory_slices < 1 || p.memory_slices > spec.memory_slots)
      return gpusched::detail::input_error(gpusched::detail::concat_text(where, ": memory_slices must be 1..", spec.memory_slots, ", got ", p.memory_slices));
    if (p.compute_slices < 1 || p.compute_slices > spec.compute_slices)
      return gpusched::detail::input_error(gpusched::detail::concat_text(where, ": compute_slices must be 1..", spec.compute_slices, ", got ", p.compute_slices));
    if (p.starts == 0) return gpusched::detail::input_error(where + ": placements: no start slot");
    for (int s = 0; s < 16; ++s)
      if ((p.starts >> s) & 1U)
        if (s + p.memory_slices > spec.memory_slots)
          return gpusched::detail::input_error(gpusched::detail::concat_text(where, ": placement start ", s, " with size ", p.memory_slices, " exceeds ", spec.memory_slots, " memory slices"));
    if (p.max_instances < 1) return gpusched::detail::input_error(where + ": max_instances must be positive");
  }
  return {};
}

inline std::optional<ProfileGeometry> parse_profile_name(std::string_view name) {
  std::string s = detail::mig_lower(name);
  // Trim spaces.
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  std::string_view v = std::string_view(s).substr(b);
  for (std::string_view prefix : {"nvidia.com/mig-", "mig-", "mig "}) {
    if (v.starts_with(prefix)) {
      v.remove_prefix(prefix.size());
      break;
    }
  }
  auto read_int = [&v](int& out) {
    std::size_t i = 0;
    long long value = 0;
    while (i < v.size() && i < 6 && std::isdigit(static_cast<unsigned char>(v[i]))) {
      value = value * 10 + (v[i] - '0');
      ++i;
    }
    if (i == 0 || (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])))) return false;
    out = static_cast<int>(value);
    v.remove_prefix(i);
    return true;
  };
  ProfileGeometry g;
  if (!read_int(g.compute_slices) || !v.starts_with("g.")) return std::nullopt;
  v.remove_prefix(2);
  if (!read_int(g.memory_gb) || !v.starts_with("gb")) return std::nullopt;
  v.remove_prefix(2);
  if (v == "+me") {
    g.media_extensions = true;
  } else if (!v.empty()) {
    return std::nullopt;
  }
  if (g.compute_slices < 1 || g.memory_gb < 1) return std::nullopt;
  return g;
}

inline int match_profile(const MigGpuSpec& spec, const ProfileGeometry& geometry) {
  int best = -1;
  int best_diff = 0;
  for (std::size_t i = 0; i < spec.profiles.size(); ++i) {
    const MigProfile& p = spec.profiles[i];
    if (p.compute_slices != geometry.compute_slices || p.media_extensions != geometry.media_extensions) continue;
    int nominal = 0;
    if (auto own = parse_profile_name(p.name)) nominal = own->memory_gb;
    else nominal = (p.memory_mib + 512) / 1024;
    if (nominal <= 0) continue;
    const int diff = std::abs(nominal - geometry.memory_gb);
    if (diff * 10 > nominal) continue;  // beyond 10%: another profile
    if (best < 0 || diff < best_diff) {
      best = static_cast<int>(i);
      best_diff = diff;
    }
  }
  return best;
}

inline const MigCatalog& MigCatalog::builtin() {
  static const MigCatalog catalog = [] {
    MigCatalog c;
    // Model names are the core registry's canonical names (core/gpu_model).
    const MigGpuSpec specs[] = {
        detail::make_mig_spec("A100-SXM4-40GB", 8, 7, 7, detail::kA100_40Rows, detail::kGuideA100),
        detail::make_mig_spec("A100-80GB", 8, 7, 7, detail::kA100_80Rows, detail::kA100_80),
        detail::make_mig_spec("H100-80GB", 8, 7, 7, detail::kH100Rows, detail::kH100),
        detail::make_mig_spec("H200-141GB", 8, 7, 7, detail::kH200Rows, detail::kH200),
        detail::make_mig_spec("A30-24GB", 4, 4, 4, detail::kA30Rows, detail::kA30),
    };
    for (const MigGpuSpec& s : specs) {
      auto id = c.add(s);
      (void)id;  // the built-in rows are validated by tests/mig/data_test.cpp
    }
    return c;
  }();
  return catalog;
}

inline Result<MigModelId> MigCatalog::add(MigGpuSpec spec) {
  if (Status st = validate_spec(spec); !st) return st.error();
  for (const MigGpuSpec& s : specs_)
    if (detail::mig_iequal(s.model, spec.model)) return gpusched::detail::input_error(gpusched::detail::concat_text("model ", spec.model, ": already in the catalog"), "model", ErrorCode::kDuplicate);
  if (specs_.size() >= kMaxMigModels)
    return gpusched::detail::input_error(gpusched::detail::concat_text("model ", spec.model, ": catalog full (", kMaxMigModels, " models)"));
  specs_.push_back(std::move(spec));
  return static_cast<MigModelId>(specs_.size() - 1);
}

inline std::optional<MigModelId> MigCatalog::find(std::string_view name) const {
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (detail::mig_iequal(specs_[i].model, name)) return static_cast<MigModelId>(i);
  static const GpuModelRegistry registry = GpuModelRegistry::builtin();
  if (auto id = registry.find(name)) {
    const std::string& canonical = registry.model(*id).name;
    for (std::size_t i = 0; i < specs_.size(); ++i)
      if (detail::mig_iequal(specs_[i].model, canonical)) return static_cast<MigModelId>(i);
  }
  return std::nullopt;
}

}  // namespace gpusched::mig
