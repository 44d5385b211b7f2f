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
#include <algorithm>
#include <limits>
#include <optional>
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

// A Kubernetes resource.Quantity suffix: value = mantissa * 2^binary * 10^decimal in the base unit.
// Binary (Ki..Ei) and decimal (m, k..E) suffixes as in k8s.io/apimachinery/pkg/api/resource.
struct QuantitySuffix {
  std::string_view text;
  int binary;
  int decimal;
};

inline constexpr QuantitySuffix kQuantitySuffixes[] = {
    {"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0}, {"Ti", 40, 0}, {"Pi", 50, 0}, {"Ei", 60, 0},
    {"m", 0, -3},  {"k", 0, 3},   {"M", 0, 6},   {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15}, {"E", 0, 18},
};

// A decimal exponent suffix ("e3", "E-2", "e+9"): its value, or nullopt when `suffix` is not one
// (a lone "E" is exa). Exponents are clamped to +-999: no int64 quantity needs more.
inline std::optional<int> quantity_exponent(std::string_view suffix) {
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return std::nullopt;
  std::size_t i = 1;
  const bool negative = suffix[i] == '-';
  if (suffix[i] == '-' || suffix[i] == '+') ++i;
  if (i == suffix.size()) return std::nullopt;
  int value = 0;
  for (; i < suffix.size(); ++i) {
    if (suffix[i] < '0' || suffix[i] > '9') return std::nullopt;
    value = std::min(999, value * 10 + (suffix[i] - '0'));
  }
  return negative ? -value : value;
}

// Divides `x` by `p` `times` times; false (x unchanged in meaning) when a division leaves a remainder.
inline bool quantity_divide(QuantityWide& x, int p, int times) {
  for (int k = 0; k < times; ++k) {
    if (x % p != 0) return false;
    x /= p;
  }
  return true;
}

// Multiplies `x` by `p` `times` times; false on overflow past int64.
inline bool quantity_multiply(QuantityWide& x, int p, int times) {
  for (int k = 0; k < times && x != 0; ++k) {
    x *= p;
    if (x > std::numeric_limits<std::int64_t>::max()) return false;
  }
  return true;
}

}  // namespace detail

// Parses a Kubernetes-style quantity: <number><suffix> with the number "5", "5.", ".5" or "1.5" and
// the suffix a binary (Ki..Ei) or decimal (m, k..E) one or a decimal exponent ("1e3", "8e0",
// "5E-1"), as resource.Quantity's grammar has it. Fails (with a message naming the text) on empty,
// negative, finer-than-the-unit or overflowing input; Kubernetes would round a finer value up,
// gpusched refuses it so that a typo is not read as a different amount.
inline Result<std::int64_t> parse_quantity(std::string_view text, QuantityUnit unit) {
  using detail::QuantityWide;
  auto fail = [&](std::string_view why, ErrorCode code = ErrorCode::kInvalidValue)
      -> Result<std::int64_t> {
    std::string message(why);
    message += " (got \"";
    message += text.substr(0, 100);
    message += '"';
    // Cut as every reader's messages cut a long value: its first 100 bytes, then its whole size.
    if (text.size() > 100) message += "... (" + std::to_string(text.size()) + " bytes)";
    message += ')';
    return Error{std::move(message), code, {}};
  };
  if (text.empty()) return fail("expected a quantity");
  if (text.front() == '-') return fail("expected a non-negative quantity");
  std::string_view rest = text;
  if (rest.front() == '+') rest.remove_prefix(1);

  // Mantissa: digits with an optional decimal point. Leading zeros and a fraction's trailing zeros
  // are free (a fraction's zeros count once a nonzero digit follows them); more than 30 other
  // digits are more than any int64 quantity holds.
  std::size_t i = 0;
  QuantityWide mantissa = 0;
  int frac_digits = 0, significant = 0, fraction_zeros = 0;
  bool seen_digit = false, seen_point = false;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
      if (seen_point && c == '0') {
        ++fraction_zeros;
        continue;
      }
      const int digits = 1 + fraction_zeros;
      if (mantissa != 0) significant += digits;
      else if (c != '0') significant = 1;
      if (significant > 30) return fail("quantity has more than 30 significant digits", ErrorCode::kOverflow);
      for (int k = 0; k < digits; ++k) mantissa *= 10;
      mantissa += c - '0';
      if (seen_point) frac_digits += digits;
      fraction_zeros = 0;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return fail("expected a quantity");
  const std::string_view suffix = rest.substr(i);
  // value = mantissa * 2^binary * 10^decimal in the target unit.
  int binary = 0, decimal = -frac_digits + (unit == QuantityUnit::kMilli ? 3 : 0);
  if (const auto exponent = detail::quantity_exponent(suffix)) {
    decimal += *exponent;
  } else if (!suffix.empty()) {
    const auto* s = std::find_if(std::begin(detail::kQuantitySuffixes), std::end(detail::kQuantitySuffixes),
                                 [&](const detail::QuantitySuffix& q) { return q.text == suffix; });
    if (s == std::end(detail::kQuantitySuffixes)) return fail("unknown quantity suffix");
    binary = s->binary;
    decimal += s->decimal;
  }
  if (mantissa == 0) return std::int64_t{0};
  // Divide before multiplying, so that nothing overflows on the way: 10^-decimal must divide
  // mantissa * 2^binary, its fives from the mantissa and its twos from either.
  const char* finer = unit == QuantityUnit::kMilli ? "quantity finer than one milli-unit" : "expected a whole number";
  if (decimal < 0) {
    if (!detail::quantity_divide(mantissa, 5, -decimal)) return fail(finer);
    const int twos = std::min(binary, -decimal);
    binary -= twos;
    if (!detail::quantity_divide(mantissa, 2, -decimal - twos)) return fail(finer);
    decimal = 0;
  }
  if (!detail::quantity_multiply(mantissa, 10, decimal) || !detail::quantity_multiply(mantissa, 2, binary) ||
      mantissa > std::numeric_limits<std::int64_t>::max())
    return fail("quantity out of range", ErrorCode::kOverflow);
  return static_cast<std::int64_t>(mantissa);
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
