// Numbers in the simulator's option strings (`--policies las+promote2`, `--queue-weights q0=2.5`), read
// with std::from_chars: exact, and the same in every locale (std::strtod reads the C locale's decimal
// point, so "2.5" could mean 2 where a program embedding the library set a German locale).
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace gpusched::sim::detail {

// A positive number no larger than `max` that is the whole of `text`; nullopt otherwise.
inline std::optional<double> parse_positive(std::string_view text, double max) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !(v > 0) || v > max) return std::nullopt;
  return v;
}

}  // namespace gpusched::sim::detail
