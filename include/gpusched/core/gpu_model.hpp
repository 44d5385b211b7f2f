// gpusched/core/gpu_model.hpp — the GPU model registry: vendor facts as data.
//
// A GPU model is a row: canonical name, aliases (the spellings clusters use: "A100-SXM4-40GB",
// "NVIDIA-A100-SXM4-40GB", the Alibaba trace's "V100M16"), memory, and whether it supports
// Multi-Instance GPU. Adding a GPU is adding a row (`GpuModelRegistry::add`), never a code path.
// The built-in rows and their sources are in `GpuModelRegistry::builtin()` below.
//
// Models are referred to by a small integer `GpuModelId`; sets of allowed models are a 64-bit
// `GpuModelMask`, so a registry holds at most 64 models (an error beyond that, not a crash).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/quantity.hpp"
#include "gpusched/core/result.hpp"

namespace gpusched {

using GpuModelId = std::uint8_t;
using GpuModelMask = std::uint64_t;
inline constexpr std::size_t kMaxGpuModels = 64;
inline constexpr GpuModelMask kAnyGpuModel = ~GpuModelMask{0};

constexpr GpuModelMask model_bit(GpuModelId id) { return GpuModelMask{1} << id; }

struct GpuModel {
  std::string name;                  // canonical name, e.g. "A100-SXM4-40GB"
  std::vector<std::string> aliases{};  // other spellings; matching is case-insensitive
  Bytes memory = 0;                  // 0 when undisclosed (the trace's G2/G3)
  bool mig_capable = false;
  std::string source{};              // where the figures come from
};

class GpuModelRegistry {
 public:
  // An empty registry.
  GpuModelRegistry() = default;
  // The built-in models (NVIDIA datacenter GPUs and the Alibaba trace's model names).
  static inline GpuModelRegistry builtin();

  // Adds a model. Fails when its name or an alias is already taken or the registry is full.
  inline Result<GpuModelId> add(GpuModel model);
  // Looks a name or alias up, ignoring case and a leading "NVIDIA-"/"NVIDIA ".
  inline std::optional<GpuModelId> find(std::string_view name) const;

  const GpuModel& model(GpuModelId id) const { return models_[id]; }
  std::size_t size() const { return models_.size(); }

 private:
  std::vector<GpuModel> models_;
};

namespace detail {

// The key two spellings of a model name are compared by: upper case, without a leading "NVIDIA-" or
// "NVIDIA " (as the device plugin's node labels and nvidia-smi print it), spaces as dashes.
inline std::string normalize_gpu_model_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (std::string_view prefix : {"NVIDIA-", "NVIDIA "}) {
    if (out.rfind(prefix, 0) == 0) out.erase(0, prefix.size());
  }
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

}  // namespace detail

GpuModelRegistry GpuModelRegistry::builtin() {
  // Memory sizes are the vendor's product figures (NVIDIA data sheets; the MIG User Guide's
  // "Supported GPUs" table for MIG capability). The Alibaba trace names (P100, T4, V100M16, V100M32,
  // A10, G2, G3) come from clusterdata/cluster-trace-gpu-v2023; G2 and G3 are undisclosed there, so
  // their memory is unknown (0).
  const char* const kDatasheet = "NVIDIA data sheet";
  const char* const kMigGuide = "NVIDIA data sheet; MIG User Guide, Supported GPUs";
  const char* const kTrace = "Alibaba cluster-trace-gpu-v2023 (model name only)";
  GpuModelRegistry r;
  auto row = [&r](std::string name, std::vector<std::string> aliases, Bytes mem, bool mig,
                  const char* source) {
    (void)r.add(GpuModel{std::move(name), std::move(aliases), mem, mig, source});
  };
  row("A100-SXM4-40GB", {"A100-40GB", "A100-PCIE-40GB", "A100"}, 40 * kGiB, true, kMigGuide);
  row("A100-80GB", {"A100-SXM4-80GB", "A100-PCIE-80GB", "A100-80GB-PCIE"}, 80 * kGiB, true, kMigGuide);
  row("H100-80GB", {"H100-SXM5-80GB", "H100-80GB-HBM3", "H100-PCIE-80GB", "H100"}, 80 * kGiB, true,
      kMigGuide);
  row("H200-141GB", {"H200", "H200-SXM-141GB", "H200-NVL"}, 141 * kGiB, true, kMigGuide);
  row("A30-24GB", {"A30"}, 24 * kGiB, true, kMigGuide);
  row("B200-180GB", {"B200"}, 180 * kGiB, true, kMigGuide);
  row("GB200", {"GB200-NVL72"}, 186 * kGiB, true, kMigGuide);
  row("L40S", {"L40S-48GB"}, 48 * kGiB, false, kDatasheet);
  row("L4", {"L4-24GB"}, 24 * kGiB, false, kDatasheet);
  row("A10", {"A10-24GB"}, 24 * kGiB, false, kDatasheet);
  row("T4", {"TESLA-T4", "T4-16GB"}, 16 * kGiB, false, kDatasheet);
  row("V100M16", {"V100-16GB", "V100-SXM2-16GB", "TESLA-V100-SXM2-16GB"}, 16 * kGiB, false, kDatasheet);
  row("V100M32", {"V100-32GB", "V100-SXM2-32GB", "TESLA-V100-SXM2-32GB", "V100"}, 32 * kGiB, false,
      kDatasheet);
  row("P100", {"P100-16GB", "TESLA-P100"}, 16 * kGiB, false, kDatasheet);
  row("G2", {}, 0, false, kTrace);
  row("G3", {}, 0, false, kTrace);
  return r;
}

Result<GpuModelId> GpuModelRegistry::add(GpuModel model) {
  if (model.name.empty())
    return Error{"gpu model: name must not be empty", ErrorCode::kMissingField, "name"};
  if (model.memory < 0)
    return Error{"gpu model " + model.name + ": memory must be non-negative, got " +
                     std::to_string(model.memory),
                 ErrorCode::kInvalidValue, "memory"};
  if (find(model.name))
    return Error{"gpu model " + model.name + ": name already defined", ErrorCode::kDuplicate, "name"};
  for (const auto& alias : model.aliases)
    if (find(alias))
      return Error{"gpu model " + model.name + ": alias " + alias + " already defined",
                   ErrorCode::kDuplicate, "aliases"};
  if (models_.size() >= kMaxGpuModels)
    return Error{"gpu model " + model.name + ": registry full (" + std::to_string(kMaxGpuModels) +
                     " models)",
                 ErrorCode::kLimit, {}};
  models_.push_back(std::move(model));
  return static_cast<GpuModelId>(models_.size() - 1);
}

std::optional<GpuModelId> GpuModelRegistry::find(std::string_view name) const {
  const std::string key = detail::normalize_gpu_model_name(name);
  for (std::size_t i = 0; i < models_.size(); ++i) {
    if (detail::normalize_gpu_model_name(models_[i].name) == key) return static_cast<GpuModelId>(i);
    for (const auto& alias : models_[i].aliases)
      if (detail::normalize_gpu_model_name(alias) == key) return static_cast<GpuModelId>(i);
  }
  return std::nullopt;
}

}  // namespace gpusched
