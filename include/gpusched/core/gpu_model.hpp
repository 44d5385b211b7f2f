// gpusched/core/gpu_model.hpp — the GPU model registry: vendor facts as data.
//
// A GPU model is a row: canonical name, aliases (the spellings clusters use: "A100-SXM4-40GB",
// "NVIDIA-A100-SXM4-40GB", the Alibaba trace's "V100M16"), memory, and whether it supports
// Multi-Instance GPU. Adding a GPU is adding a row (`GpuModelRegistry::add`), never a code path.
// The built-in rows and their sources are in src/core/gpu_model.cpp.
//
// Models are referred to by a small integer `GpuModelId`; sets of allowed models are a 64-bit
// `GpuModelMask`, so a registry holds at most 64 models (an error beyond that, not a crash).
#pragma once

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
  static GpuModelRegistry builtin();

  // Adds a model. Fails when its name or an alias is already taken or the registry is full.
  Result<GpuModelId> add(GpuModel model);
  // Looks a name or alias up, ignoring case and a leading "NVIDIA-"/"NVIDIA ".
  std::optional<GpuModelId> find(std::string_view name) const;

  const GpuModel& model(GpuModelId id) const { return models_[id]; }
  std::size_t size() const { return models_.size(); }

 private:
  std::vector<GpuModel> models_;
};

}  // namespace gpusched
