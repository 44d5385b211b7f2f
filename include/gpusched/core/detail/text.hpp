// gpusched/core/detail/text.hpp — error messages in header-only code, without {fmt}.
//
// Why it exists. Header-only policy code must not pull {fmt} into an embedding program (issue 11:
// "fmt only where it can be header-only, or not at all in policy code") and GCC 12 has no std::format.
// Messages are built only on the error path, so a plain concatenation of strings and integers is
// enough. Used by the MIG tables, layouts and state (core/mig_*.hpp, cluster/mig_gpus.hpp, mig/); the
// cluster state's `cluster_message` and fairness's `fairness_append` are older copies of the same idea
// that can move here.
#pragma once

#include <concepts>
#include <string>
#include <utility>
#include <string_view>

#include "gpusched/core/result.hpp"

namespace gpusched::detail {

inline void text_append(std::string& out, std::string_view s) { out += s; }
inline void text_append(std::string& out, const char* s) { out += s; }
inline void text_append(std::string& out, const std::string& s) { out += s; }
inline void text_append(std::string& out, char c) { out += c; }
template <std::integral T>
  requires(!std::same_as<T, char> && !std::same_as<T, bool>)
void text_append(std::string& out, T v) {
  // uint8_t fields (slots, counts) must print as numbers, not characters.
  if constexpr (std::is_signed_v<T>) out += std::to_string(static_cast<long long>(v));
  else out += std::to_string(static_cast<unsigned long long>(v));
}

// concat_text("instances[", 2, "].start: ", 3) == "instances[2].start: 3"
template <class... Parts>
std::string concat_text(const Parts&... parts) {
  std::string out;
  (text_append(out, parts), ...);
  return out;
}

// Names and labels must not contain control characters: a NUL byte cuts a table row, a newline
// forges one. The first such byte of `text` (below 0x20, or 0x7f), or -1: the one rule every reader
// (io::detail::check_name) and the cluster state's label event apply.
inline int first_control_character(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return u;
  }
  return -1;
}

// A byte as two lower-case hex digits ("0a").
inline std::string hex_byte(unsigned char u) {
  static constexpr char kHex[] = "0123456789abcdef";
  return {kHex[u >> 4], kHex[u & 0xf]};
}

// `text` as a YAML double-quoted scalar (YAML 1.2, 7.3.1): '"' and '\\' escaped, control characters
// (NUL, newline, ...) and DEL written as \xNN, so that a crafted name can neither end the scalar nor
// start a line of its own (a node named `x: {}\n  evil:` must not rewrite a generated config).
inline std::string yaml_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x" + hex_byte(u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// An input error: the message (which names the field), the field path alone, and the code.
inline Error input_error(std::string message, std::string field = {},
                       ErrorCode code = ErrorCode::kInvalidValue) {
  return Error{std::move(message), code, std::move(field)};
}

}  // namespace gpusched::detail
