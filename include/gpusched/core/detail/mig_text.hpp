// gpusched/core/detail/mig_text.hpp — message building for the MIG vendor tables and the MIG state.
//
// Why it exists. The MIG tables, layout rules and state are header-only policy-side code, which must
// not pull {fmt} into an embedding program (issue 11: "fmt only where it can be header-only, or not at
// all in policy code") and GCC 12 has no std::format. Messages are built only on the error path, so a
// plain concatenation of strings and integers is enough.
#pragma once

#include <concepts>
#include <string>
#include <utility>
#include <string_view>

#include "gpusched/core/result.hpp"

namespace gpusched::mig::detail {

inline void mig_append(std::string& out, std::string_view s) { out += s; }
inline void mig_append(std::string& out, const char* s) { out += s; }
inline void mig_append(std::string& out, const std::string& s) { out += s; }
inline void mig_append(std::string& out, char c) { out += c; }
template <std::integral T>
  requires(!std::same_as<T, char> && !std::same_as<T, bool>)
void mig_append(std::string& out, T v) {
  // uint8_t fields (slots, counts) must print as numbers, not characters.
  if constexpr (std::is_signed_v<T>) out += std::to_string(static_cast<long long>(v));
  else out += std::to_string(static_cast<unsigned long long>(v));
}

// mig_cat("instances[", 2, "].start: ", 3) == "instances[2].start: 3"
template <class... Parts>
std::string mig_cat(const Parts&... parts) {
  std::string out;
  (mig_append(out, parts), ...);
  return out;
}

// An input error of the MIG tables, layouts or state: the message (which names the field), the field
// path alone, and the code.
inline Error mig_error(std::string message, std::string field = {},
                       ErrorCode code = ErrorCode::kInvalidValue) {
  return Error{std::move(message), code, std::move(field)};
}

}  // namespace gpusched::mig::detail
