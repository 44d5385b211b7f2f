#include "io/json_input.hpp"

#include <algorithm>
#include <new>

#include <fmt/format.h>

namespace gpusched::io::detail {
namespace {

struct TooDeep {};

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, std::string_view source, JsonLimits limits) {
  using json = nlohmann::json;
  if (text.size() > limits.max_bytes)
    return Error{fmt::format("{}: {} bytes of JSON, more than the limit of {}", source, text.size(), limits.max_bytes),
                 ErrorCode::kLimit};
  // The callback sees each value's depth as the parser reaches it; throwing there stops the parse
  // before the deep part is built (nlohmann's parser itself is iterative, so parsing cannot overflow).
  const auto max_depth = static_cast<int>(limits.max_depth);
  auto depth_guard = [max_depth](int depth, json::parse_event_t, json&) {
    if (depth >= max_depth) throw TooDeep{};  // depth counts from 0 at the outermost value
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), depth_guard);
  } catch (const TooDeep&) {
    return Error{fmt::format("{}: JSON nested deeper than {} levels", source, limits.max_depth), ErrorCode::kLimit};
  } catch (const json::out_of_range& e) {
    // 406: a number literal beyond a double's range, such as 1e400.
    return Error{fmt::format("{}: number out of range ({})", source, e.what()), ErrorCode::kOverflow};
  } catch (const json::parse_error& e) {
    return Error{fmt::format("{}: malformed JSON: {}", source, e.what()), ErrorCode::kParse};
  } catch (const json::exception& e) {
    return Error{fmt::format("{}: malformed JSON: {}", source, e.what()), ErrorCode::kParse};
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory reading {} bytes of JSON", source, text.size()), ErrorCode::kLimit};
  }
}

std::string shown(std::string_view text, std::size_t max_chars) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else if (text[i] == '"' || text[i] == '\\') (out += '\\') += text[i];
    else out += text[i];
  }
  out += '"';
  if (text.size() > max_chars) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

std::string shown(const nlohmann::json& value, std::size_t max_chars) {
  if (value.is_string()) return shown(std::string_view(value.get_ref<const std::string&>()), max_chars);
  // Documents reaching here passed parse_json's depth bound, so dump() recursion is bounded; its
  // "replace" handler keeps invalid UTF-8 from throwing.
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= max_chars) return text;
  const std::size_t full = text.size();
  text.resize(max_chars);
  return fmt::format("{}... ({} chars)", text, full);
}

std::string shown_key(std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 40 && std::all_of(key.begin(), key.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f && c != '"' && c != '\\';
  });
  return plain ? std::string(key) : shown(key, 40);
}

Status check_name(std::string_view name, std::string_view field) {
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      return Error{fmt::format("{}: control character 0x{:02x} in name {}", field, u, shown(name)),
                   ErrorCode::kInvalidValue, std::string(field)};
  }
  return {};
}

}  // namespace gpusched::io::detail
