// gpusched/fairness/detail/text.hpp — message text for the fairness headers without {fmt}.
//
// The fairness family is header-only and depends on Eigen alone (issue 11: "fmt only where it can be
// header-only, or not at all in policy code"), so its error and reason texts are built by plain
// concatenation. Numbers are written with std::to_chars: integers exactly, doubles in their shortest
// round-trip form, which is what {fmt}'s "{}" printed before, so the texts did not change.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpusched/core/result.hpp"

namespace gpusched::fairness::detail {

inline void fairness_append(std::string& out, std::string_view text) { out += text; }
inline void fairness_append(std::string& out, const char* text) { out += text; }
inline void fairness_append(std::string& out, const std::string& text) { out += text; }
inline void fairness_append(std::string& out, char c) { out += c; }

template <class T>
  requires(std::integral<T> && !std::same_as<T, char> && !std::same_as<T, bool>)
void fairness_append(std::string& out, T value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

inline void fairness_append(std::string& out, double value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  out.append(buffer, end);
}

// fairness_text("queues[", 3, "].weight: got ", 0.5) == "queues[3].weight: got 0.5"
template <class... Parts>
std::string fairness_text(const Parts&... parts) {
  std::string out;
  (fairness_append(out, parts), ...);
  return out;
}

// The items joined by `separator` ("a, b, c"); items are anything fairness_append writes.
template <class Item>
std::string fairness_join(std::span<const Item> items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    fairness_append(out, items[i]);
  }
  return out;
}
template <class Item>
std::string fairness_join(const std::vector<Item>& items, std::string_view separator) {
  return fairness_join(std::span<const Item>(items), separator);
}

// Every fairness message starts with the path of the field it is about ("queues[3] (gpu).weight:
// expected a positive number, got 0"); the Error's `field` is that path without the queue's name in
// parentheses ("queues[3].weight"), so a program can branch on it without parsing the text.
inline Error fairness_error(ErrorCode code, std::string message) {
  const auto colon = message.find(": ");
  std::string field = message.substr(0, colon == std::string::npos ? 0 : colon);
  if (const auto open = field.find(" ("); open != std::string::npos) {
    const auto close = field.find(')', open);
    if (close != std::string::npos) field.erase(open, close + 1 - open);
  }
  return Error{std::move(message), code, std::move(field)};
}

}  // namespace gpusched::fairness::detail
