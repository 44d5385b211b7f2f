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
#include <limits>
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

namespace detail {

// 128-bit intermediate so that mantissa x suffix never overflows before the range check.
__extension__ typedef __int128 QuantityWide;

// A Kubernetes resource.Quantity suffix: value = mantissa * num / den in the base unit (before the
// conversion to milli-units). Binary (Ki..Pi) and decimal (k..P) suffixes as in
// k8s.io/apimachinery/pkg/api/resource; "m" is milli.
struct QuantitySuffix {
  std::string_view text;
  std::int64_t num;
  std::int64_t den;
};

inline constexpr QuantitySuffix kQuantitySuffixes[] = {
    {"Ki", 1LL << 10, 1}, {"Mi", 1LL << 20, 1}, {"Gi", 1LL << 30, 1}, {"Ti", 1LL << 40, 1},
    {"Pi", 1LL << 50, 1}, {"k", 1000, 1},       {"M", 1000000, 1},    {"G", 1000000000, 1},
    {"T", 1000000000000LL, 1}, {"P", 1000000000000000LL, 1}, {"m", 1, 1000},
};

}  // namespace detail

// Parses a Kubernetes-style quantity. Fails (with a message naming the text) on empty, negative,
// fractional-below-unit or overflowing input.
inline Result<std::int64_t> parse_quantity(std::string_view text, QuantityUnit unit) {
  using detail::QuantityWide;
  auto fail = [&](std::string_view why, ErrorCode code = ErrorCode::kInvalidValue)
      -> Result<std::int64_t> {
    std::string message(why);
    message += " (got \"";
    message += text;
    message += "\")";
    return Error{std::move(message), code, {}};
  };
  if (text.empty()) return fail("expected a quantity");
  if (text.front() == '-') return fail("expected a non-negative quantity");
  std::string_view rest = text;
  if (rest.front() == '+') rest.remove_prefix(1);

  // Mantissa: digits with an optional decimal point.
  std::size_t i = 0;
  QuantityWide mantissa = 0;
  int frac_digits = 0;
  bool seen_digit = false, seen_point = false;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
      mantissa = mantissa * 10 + (c - '0');
      if (seen_point) ++frac_digits;
      if (mantissa > (QuantityWide{1} << 63) || frac_digits > 9)
        return fail("quantity out of range", ErrorCode::kOverflow);
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return fail("expected a quantity");
  std::string_view suffix = rest.substr(i);
  std::int64_t num = 1, den = 1;
  if (!suffix.empty()) {
    bool found = false;
    for (const auto& s : detail::kQuantitySuffixes) {
      if (s.text == suffix) {
        num = s.num;
        den = s.den;
        found = true;
        break;
      }
    }
    if (!found) return fail("unknown quantity suffix");
  }
  // Target scale: milli units multiply by 1000.
  QuantityWide scale_num = num * (unit == QuantityUnit::kMilli ? 1000 : 1);
  QuantityWide scale_den = den;
  for (int k = 0; k < frac_digits; ++k) scale_den *= 10;
  QuantityWide scaled = mantissa * scale_num;
  if (scaled % scale_den != 0) {
    return fail(unit == QuantityUnit::kMilli ? "quantity finer than one milli-unit"
                                             : "expected a whole number");
  }
  scaled /= scale_den;
  if (scaled > std::numeric_limits<std::int64_t>::max())
    return fail("quantity out of range", ErrorCode::kOverflow);
  return static_cast<std::int64_t>(scaled);
}

// Formats bytes the way Kubernetes would print them when exact ("64Gi"), else as a plain number.
inline std::string format_bytes(Bytes bytes) {
  if (bytes > 0) {
    if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "Gi";
    if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "Mi";
  }
  return std::to_string(bytes);
}

}  // namespace gpusched
