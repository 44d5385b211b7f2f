#include "gpusched/core/quantity.hpp"

#include <charconv>
#include <limits>

#include <fmt/format.h>

namespace gpusched {
namespace {

// 128-bit intermediate so that mantissa x suffix never overflows before the range check.
__extension__ using Wide = __int128;

struct Suffix {
  std::string_view text;
  // value = mantissa * num / den (in the base unit before conversion to milli)
  std::int64_t num;
  std::int64_t den;
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 1LL << 10, 1}, {"Mi", 1LL << 20, 1}, {"Gi", 1LL << 30, 1}, {"Ti", 1LL << 40, 1},
    {"Pi", 1LL << 50, 1}, {"k", 1000, 1},       {"M", 1000000, 1},    {"G", 1000000000, 1},
    {"T", 1000000000000LL, 1}, {"P", 1000000000000000LL, 1}, {"m", 1, 1000},
};

bool mul_overflows(Wide v) { return v > std::numeric_limits<std::int64_t>::max(); }

}  // namespace

Result<std::int64_t> parse_quantity(std::string_view text, QuantityUnit unit) {
  auto fail = [&](std::string_view why) -> Result<std::int64_t> {
    return Error{fmt::format("{} (got \"{}\")", why, text)};
  };
  if (text.empty()) return fail("expected a quantity");
  if (text.front() == '-') return fail("expected a non-negative quantity");
  std::string_view rest = text;
  if (rest.front() == '+') rest.remove_prefix(1);

  // Mantissa: digits with an optional decimal point.
  std::size_t i = 0;
  Wide mantissa = 0;
  int frac_digits = 0;
  bool seen_digit = false, seen_point = false;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
      mantissa = mantissa * 10 + (c - '0');
      if (seen_point) ++frac_digits;
      if (mantissa > (Wide{1} << 63) || frac_digits > 9) return fail("quantity out of range");
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
    for (const auto& s : kSuffixes) {
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
  Wide scale_num = num * (unit == QuantityUnit::kMilli ? 1000 : 1);
  Wide scale_den = den;
  for (int k = 0; k < frac_digits; ++k) scale_den *= 10;
  Wide scaled = mantissa * scale_num;
  if (scaled % scale_den != 0) {
    return fail(unit == QuantityUnit::kMilli ? "quantity finer than one milli-unit"
                                             : "expected a whole number");
  }
  scaled /= scale_den;
  if (mul_overflows(scaled)) return fail("quantity out of range");
  return static_cast<std::int64_t>(scaled);
}

std::string format_bytes(Bytes bytes) {
  if (bytes > 0) {
    if (bytes % kGiB == 0) return fmt::format("{}Gi", bytes / kGiB);
    if (bytes % kMiB == 0) return fmt::format("{}Mi", bytes / kMiB);
  }
  return fmt::format("{}", bytes);
}

}  // namespace gpusched
