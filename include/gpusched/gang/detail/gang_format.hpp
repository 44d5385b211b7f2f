// gpusched/gang/detail/gang_format.hpp — the gang explanations' one formatting helper.
//
// The explanations need only "{}" placeholders filled with strings, integers and decimals. This
// helper does exactly that, so the gang headers depend on no formatting library (a consumer adds
// the include path and links nothing; {fmt} would need its compiled library or a define). Decimals
// print in their shortest round-trip form, as {fmt} prints them ("2.5", "40").
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace gpusched::detail {

template <class T>
void gang_format_append(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    out += value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ec == std::errc() ? result.ptr : buffer);
  } else {
    out += std::string_view(value);
  }
}

// "group {} needs {}" with ("w", 3) -> "group w needs 3". Placeholders beyond the arguments stay
// as written; arguments beyond the placeholders are ignored.
template <class... Args>
std::string gang_format(std::string_view pattern, const Args&... args) {
  std::string out;
  out.reserve(pattern.size() + 16 * sizeof...(Args));
  std::size_t pos = 0;
  auto next = [&](const auto& value) {
    const std::size_t at = pattern.find("{}", pos);
    if (at == std::string_view::npos) return;
    out.append(pattern.substr(pos, at - pos));
    gang_format_append(out, value);
    pos = at + 2;
  };
  (next(args), ...);
  out.append(pattern.substr(pos));
  return out;
}

}  // namespace gpusched::detail
