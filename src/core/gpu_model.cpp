#include "gpusched/core/gpu_model.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace gpusched {
namespace {

std::string normalize(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (std::string_view prefix : {"NVIDIA-", "NVIDIA "}) {
    if (out.rfind(prefix, 0) == 0) out.erase(0, prefix.size());
  }
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

}  // namespace

GpuModelRegistry GpuModelRegistry::builtin() {
  // Memory sizes are the vendor's product figures (NVIDIA data sheets; the MIG User Guide's
  // "Supported GPUs" table for MIG capability). The Alibaba trace names (P100, T4, V100M16, V100M32,
  // A10, G2, G3) come from clusterdata/cluster-trace-gpu-v2023; G2 and G3 are undisclosed there, so
  // their memory is unknown (0).
  static const char* kDatasheet = "NVIDIA data sheet";
  static const char* kMigGuide = "NVIDIA data sheet; MIG User Guide, Supported GPUs";
  static const char* kTrace = "Alibaba cluster-trace-gpu-v2023 (model name only)";
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
  if (model.name.empty()) return Error{"gpu model: name must not be empty"};
  if (model.memory < 0)
    return Error{fmt::format("gpu model {}: memory must be non-negative, got {}", model.name, model.memory)};
  if (find(model.name))
    return Error{fmt::format("gpu model {}: name already defined", model.name)};
  for (const auto& alias : model.aliases)
    if (find(alias)) return Error{fmt::format("gpu model {}: alias {} already defined", model.name, alias)};
  if (models_.size() >= kMaxGpuModels)
    return Error{fmt::format("gpu model {}: registry full ({} models)", model.name, kMaxGpuModels)};
  models_.push_back(std::move(model));
  return static_cast<GpuModelId>(models_.size() - 1);
}

std::optional<GpuModelId> GpuModelRegistry::find(std::string_view name) const {
  const std::string key = normalize(name);
  for (std::size_t i = 0; i < models_.size(); ++i) {
    if (normalize(models_[i].name) == key) return static_cast<GpuModelId>(i);
    for (const auto& alias : models_[i].aliases)
      if (normalize(alias) == key) return static_cast<GpuModelId>(i);
  }
  return std::nullopt;
}

}  // namespace gpusched
