// gpusched/core/quantity.hpp — integer quantities and their Kubernetes spelling.
//
// Every quantity in gpusched is an integer in a fixed unit, so that arithmetic is exact and
// decisions are identical on every platform:
//
//   * CPU in milli-CPU            (1 core = 1000)
//   * memory in bytes             (GPU memory too)
//   * GPU share in milli-GPU      (1000 = one whole GPU; the Alibaba trace's `gpu_milli`)
//   * whole GPUs as a count
//
// `parse_quantity` reads the Kubernetes resource.Quantity forms ("8", "500m", "64Gi", "1.5G") into
// one of these units and reports malformed, negative or overflowing input as an error value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpusched/core/result.hpp"

namespace gpusched {

using MilliCpu = std::int64_t;
using Bytes = std::int64_t;
using MilliGpu = std::int64_t;
using GpuCount = std::int32_t;

inline constexpr MilliGpu kMilliPerGpu = 1000;
inline constexpr MilliCpu kMilliPerCpu = 1000;
inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;

// The unit a quantity string is converted to.
enum class QuantityUnit {
  kCount,  // plain integer count (GPUs, replicas): "8"; "500m" is rejected unless it is whole
  kMilli,  // milli-units (CPU, GPU share): "2" -> 2000, "500m" -> 500, "0.5" -> 500
  kBytes,  // bytes: "64Gi", "1G", "512Mi", "1024"
};

// Parses a Kubernetes-style quantity. Fails (with a message naming the text) on empty, negative,
// fractional-below-unit or overflowing input.
Result<std::int64_t> parse_quantity(std::string_view text, QuantityUnit unit);

// Formats bytes the way Kubernetes would print them when exact ("64Gi"), else as a plain number.
std::string format_bytes(Bytes bytes);

}  // namespace gpusched
