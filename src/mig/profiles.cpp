// The built-in MIG profile tables. Each row cites its source; the doubts are in the notes.
//
// Checked against /work/shared/data/nvidia-mig (tables gathered from NVIDIA's MIG User Guide and
// real nvidia-smi captures). Memory is the -lgip GiB figure * 1024, rounded; engine counts are the
// -lgip columns where a real capture exists, else the guide's table.
#include "gpusched/mig/profiles.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "gpusched/core/gpu_model.hpp"

namespace gpusched::mig {
namespace {

struct Row {
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
constexpr SlotMask k0to6 = 0x7F;    // {0,1,2,3,4,5,6}
constexpr SlotMask kEven4 = 0x55;   // {0,2,4,6}
constexpr SlotMask kEven3 = 0x15;   // {0,2,4}
constexpr SlotMask kHalves = 0x11;  // {0,4}
constexpr SlotMask kZero = 0x01;    // {0}
constexpr SlotMask k0to3 = 0x0F;    // {0,1,2,3}
constexpr SlotMask kA30Halves = 0x05;  // {0,2}

constexpr const char* kGuideA100 =
    "NVIDIA MIG User Guide, Supported MIG Profiles, 'GPU Instance Profiles on A100' table; "
    "Getting Started -lgip and -lgipp examples (A100-SXM4-40GB)";
constexpr const char* kA100_80 =
    "NVIDIA MIG User Guide, A100 table (80GB names per its note) and -lgipp example; real "
    "A100-80GB -lgip captures in public notes (SM, memory, totals)";
constexpr const char* kH100 =
    "NVIDIA MIG User Guide, Supported MIG Profiles, 'GPU Instance Profiles on H100' table; real "
    "'NVIDIA H100 80GB HBM3' -lgip/-lgipp capture; NVIDIA/k8s-test-infra mock-nvml H100 placements";
constexpr const char* kH200 =
    "NVIDIA MIG User Guide, 'GPU Instance Profiles on H200' table; NVIDIA/mig-parted issue #120 "
    "-lgip rows (IDs, totals, memory, SM, engines)";
constexpr const char* kH200Inferred =
    "placements INFERRED from H100 (same memory fractions, IDs and totals); no real H200 -lgipp seen";
constexpr const char* kA30 =
    "NVIDIA MIG User Guide, A30 table; real A30 24GB -lgip/-lgipp capture "
    "(github.com/Summer-Lo/Docker_configuration, 000-MIG/README.md)";

constexpr Row kA100_40Rows[] = {
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

constexpr Row kA100_80Rows[] = {
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

constexpr Row kH100Rows[] = {
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

constexpr Row kH200Rows[] = {
    {19, "1g.18gb", 1, 1, k0to6, 7, false, 16384, 16, 1, 1, 1, 0, kH200, kH200Inferred},
    {20, "1g.18gb+me", 1, 1, k0to6, 1, true, 16384, 16, 1, 1, 1, 1, kH200, kH200Inferred},
    {15, "1g.35gb", 1, 2, kEven4, 4, false, 33024, 26, 1, 1, 1, 0, kH200, kH200Inferred},
    {14, "2g.35gb", 2, 2, kEven3, 3, false, 33024, 32, 2, 2, 2, 0, kH200, kH200Inferred},
    {9, "3g.71gb", 3, 4, kHalves, 2, false, 71168, 60, 3, 3, 3, 0, kH200, kH200Inferred},
    {5, "4g.71gb", 4, 4, kZero, 1, false, 71168, 64, 4, 4, 4, 0, kH200, kH200Inferred},
    {0, "7g.141gb", 7, 8, kZero, 1, false, 143104, 132, 8, 7, 7, 1, kH200, kH200Inferred},
};

constexpr Row kA30Rows[] = {
    {14, "1g.6gb", 1, 1, k0to3, 4, false, 5949, 14, 1, 1, 0, 0, kA30,
     "the guide says 0 NVDEC; real -lgip shows 1 (used)"},
    {21, "1g.6gb+me", 1, 1, k0to3, 1, true, 5949, 14, 1, 1, 1, 1, kA30, "R470+; one per GPU"},
    {5, "2g.12gb", 2, 2, kA30Halves, 2, false, 11971, 28, 2, 2, 0, 0, kA30, ""},
    {6, "2g.12gb+me", 2, 2, kA30Halves, 1, true, 11971, 28, 2, 2, 1, 1, kA30,
     "R525+ (guide note); not in the captured (older-driver) -lgip; engines from the guide table"},
    {0, "4g.24gb", 4, 4, kZero, 1, false, 24064, 56, 4, 4, 1, 1, kA30, "23.50 or 23.44 GiB by driver"},
};

template <std::size_t N>
MigGpuSpec make_spec(const char* model, std::uint8_t slots, std::uint8_t compute, std::uint8_t max_gi,
                     const Row (&rows)[N], const char* source) {
  MigGpuSpec spec;
  spec.model = model;
  spec.memory_slots = slots;
  spec.compute_slices = compute;
  spec.max_instances = max_gi;
  spec.source = source;
  for (const Row& r : rows) {
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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequal(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

}  // namespace

int MigProfile::start_count() const { return std::popcount(static_cast<unsigned>(starts)); }

int MigGpuSpec::find_id(std::uint32_t id) const {
  for (std::size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].id == id) return static_cast<int>(i);
  return -1;
}

Status validate_spec(const MigGpuSpec& spec) {
  const std::string& m = spec.model;
  if (m.empty()) return Error{"model: must not be empty"};
  if (spec.memory_slots < 1 || spec.memory_slots > kMaxSlots)
    return Error{fmt::format("{}: memory_slots must be 1..{}, got {}", m, kMaxSlots, spec.memory_slots)};
  if (spec.compute_slices < 1)
    return Error{fmt::format("{}: compute_slices must be positive, got {}", m, spec.compute_slices)};
  if (spec.max_instances < 1 || spec.max_instances > kMaxInstances)
    return Error{fmt::format("{}: max_instances must be 1..{}, got {}", m, kMaxInstances, spec.max_instances)};
  if (spec.profiles.empty()) return Error{fmt::format("{}: profiles: none", m)};
  if (spec.profiles.size() > static_cast<std::size_t>(kMaxProfiles))
    return Error{fmt::format("{}: profiles: at most {}, got {}", m, kMaxProfiles, spec.profiles.size())};
  for (std::size_t i = 0; i < spec.profiles.size(); ++i) {
    const MigProfile& p = spec.profiles[i];
    const std::string where = fmt::format("{}: profile {} (ID {})", m, p.name, p.id);
    if (spec.find_id(p.id) != static_cast<int>(i)) return Error{where + ": duplicate profile ID"};
    if (p.memory_slices < 1 || p.memory_slices > spec.memory_slots)
      return Error{fmt::format("{}: memory_slices must be 1..{}, got {}", where, spec.memory_slots, p.memory_slices)};
    if (p.compute_slices < 1 || p.compute_slices > spec.compute_slices)
      return Error{fmt::format("{}: compute_slices must be 1..{}, got {}", where, spec.compute_slices,
                               p.compute_slices)};
    if (p.starts == 0) return Error{where + ": placements: no start slot"};
    for (int s = 0; s < 16; ++s)
      if ((p.starts >> s) & 1U)
        if (s + p.memory_slices > spec.memory_slots)
          return Error{fmt::format("{}: placement start {} with size {} exceeds {} memory slices", where, s,
                                   p.memory_slices, spec.memory_slots)};
    if (p.max_instances < 1) return Error{where + ": max_instances must be positive"};
  }
  return {};
}

std::optional<ProfileGeometry> parse_profile_name(std::string_view name) {
  std::string s = lower(name);
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

int match_profile(const MigGpuSpec& spec, const ProfileGeometry& geometry) {
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

const MigCatalog& MigCatalog::builtin() {
  static const MigCatalog catalog = [] {
    MigCatalog c;
    // Model names are the core registry's canonical names (src/core/gpu_model.cpp).
    const MigGpuSpec specs[] = {
        make_spec("A100-SXM4-40GB", 8, 7, 7, kA100_40Rows, kGuideA100),
        make_spec("A100-80GB", 8, 7, 7, kA100_80Rows, kA100_80),
        make_spec("H100-80GB", 8, 7, 7, kH100Rows, kH100),
        make_spec("H200-141GB", 8, 7, 7, kH200Rows, kH200),
        make_spec("A30-24GB", 4, 4, 4, kA30Rows, kA30),
    };
    for (const MigGpuSpec& s : specs) {
      auto id = c.add(s);
      (void)id;  // the built-in rows are validated by tests/mig/profiles_test.cpp
    }
    return c;
  }();
  return catalog;
}

Result<MigModelId> MigCatalog::add(MigGpuSpec spec) {
  if (Status st = validate_spec(spec); !st) return st.error();
  for (const MigGpuSpec& s : specs_)
    if (iequal(s.model, spec.model)) return Error{fmt::format("model {}: already in the catalog", spec.model)};
  if (specs_.size() >= kMaxMigModels)
    return Error{fmt::format("model {}: catalog full ({} models)", spec.model, kMaxMigModels)};
  specs_.push_back(std::move(spec));
  return static_cast<MigModelId>(specs_.size() - 1);
}

std::optional<MigModelId> MigCatalog::find(std::string_view name) const {
  for (std::size_t i = 0; i < specs_.size(); ++i)
    if (iequal(specs_[i].model, name)) return static_cast<MigModelId>(i);
  static const GpuModelRegistry registry = GpuModelRegistry::builtin();
  if (auto id = registry.find(name)) {
    const std::string& canonical = registry.model(*id).name;
    for (std::size_t i = 0; i < specs_.size(); ++i)
      if (iequal(specs_[i].model, canonical)) return static_cast<MigModelId>(i);
  }
  return std::nullopt;
}

}  // namespace gpusched::mig
