#include "io/json_input.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <new>
#include <vector>

#include <fmt/format.h>

namespace gpusched::io::detail {
namespace {

struct TooDeep {};
struct TooManyValues {};
struct DuplicateKey {
  std::string path;
};

// nlohmann's DOM parser (json_sax_dom_parser) with one rule added: a key repeated in an object is
// refused, naming its path, where nlohmann keeps the last (RFC 8259 leaves duplicates to the
// reader; the API server's strict field validation and every gpusched format treat them as
// errors: with "last wins" two readers of one file could see two different objects).
class StrictDomBuilder {
 public:
  using json = nlohmann::json;
  StrictDomBuilder(json& root, std::size_t max_values) : root_(root), values_left_(max_values == 0 ? kUnbounded : max_values) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return value(v); }
  bool string(json::string_t& v) { return value(std::move(v)); }
  bool binary(json::binary_t& v) { return value(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool key(json::string_t& k) {
    auto [it, fresh] = stack_.back().value->get_ptr<json::object_t*>()->emplace(std::move(k), nullptr);
    stack_.back().key = &it->first;
    slot_ = &it->second;
    if (!fresh) throw DuplicateKey{path()};
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    // As json_sax_dom_parser does: rethrow as the exception's own type.
    if (ex.id / 100 == 4) throw *static_cast<const json::out_of_range*>(&ex);
    throw *static_cast<const json::parse_error*>(&ex);
  }

 private:
  struct Level {
    json* value;
    const std::string* key = nullptr;  // an object's current key
  };
  template <class V>
  json* place(V&& v) {
    if (values_left_ != kUnbounded && values_left_-- == 0) throw TooManyValues{};
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& top = *stack_.back().value;
    if (top.is_array()) return &top.get_ptr<json::array_t*>()->emplace_back(std::forward<V>(v));
    *slot_ = json(std::forward<V>(v));
    return slot_;
  }
  template <class V>
  bool value(V&& v) {
    place(std::forward<V>(v));
    return true;
  }
  bool open(json empty) {
    stack_.push_back({place(std::move(empty))});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // "spec.containers[0].name", each key shown as error messages show keys.
  std::string path() const {
    std::string out;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const json& v = *stack_[i].value;
      if (v.is_array()) {
        out += fmt::format("[{}]", v.size() - 1);
      } else if (stack_[i].key) {
        if (!out.empty()) out += '.';
        out += shown_key(*stack_[i].key);
      }
    }
    return out;
  }

  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);
  json& root_;
  std::size_t values_left_;
  std::vector<Level> stack_;
  json* slot_ = nullptr;  // where an object's next value goes
};

// nlohmann's messages quote the token read so far ("last read: '...'"), which for an unterminated
// string is the rest of the line, or of the file: cut to a readable length.
std::string cut(std::string_view what, std::size_t max_chars = 300) {
  if (what.size() <= max_chars) return std::string(what);
  return fmt::format("{}... ({} chars)", what.substr(0, max_chars), what.size());
}

}  // namespace

std::string json_library_text(std::string_view what) {
  if (what.starts_with("[json.exception.")) {
    const auto close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  if (what.starts_with("parse error ")) what.remove_prefix(12);
  if (what.starts_with("parse error: ")) what.remove_prefix(13);
  return cut(what);
}

Result<nlohmann::json> parse_json(std::string_view text, std::string_view source, JsonLimits limits) {
  using json = nlohmann::json;
  if (text.size() > limits.max_bytes)
    return Error{fmt::format("{}: {} bytes of JSON, more than the limit of {}", source, text.size(), limits.max_bytes),
                 ErrorCode::kLimit};
  // The nesting depth is checked by a linear scan of the text before anything is built (strings
  // skipped, escapes honoured), then the text is parsed without a callback. A parser callback did
  // this before, but nlohmann's callback parser scans the parent container at the end of every
  // object (json_sax_dom_callback_parser::end_object, looking for a discarded value), which is
  // quadratic in the length of an array of objects: 40 % of reading a 100,000-pod PodList
  // (benchmarks/README.md, "Kubernetes objects"). Parsing itself is iterative and cannot overflow.
  try {
    std::size_t open = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++open > limits.max_depth) throw TooDeep{};  // max_depth containers nested is the most
      } else if ((c == ']' || c == '}') && open > 0) {
        --open;
      }
    }
    json out;
    StrictDomBuilder builder(out, limits.max_values);
    json::sax_parse(text.begin(), text.end(), &builder);
    return out;
  } catch (const DuplicateKey& d) {
    return Error{fmt::format("{}: {}: the key appears twice in its object", source, d.path), ErrorCode::kDuplicate, d.path};
  } catch (const TooManyValues&) {
    return Error{fmt::format("{}: more than {} JSON values in one document", source, limits.max_values), ErrorCode::kLimit};
  } catch (const TooDeep&) {
    return Error{fmt::format("{}: JSON nested deeper than {} levels", source, limits.max_depth), ErrorCode::kLimit};
  } catch (const json::out_of_range& e) {
    // 406: a number literal beyond a double's range, such as 1e400.
    return Error{fmt::format("{}: number out of range ({})", source, json_library_text(e.what())), ErrorCode::kOverflow};
  } catch (const json::parse_error& e) {
    return Error{fmt::format("{}: malformed JSON {}", source, json_library_text(e.what())), ErrorCode::kParse};
  } catch (const json::exception& e) {
    return Error{fmt::format("{}: malformed JSON: {}", source, json_library_text(e.what())), ErrorCode::kParse};
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory reading {} bytes of JSON", source, text.size()), ErrorCode::kLimit};
  }
}

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if (k == 1 ? (b(i + k) < lo || b(i + k) > hi) : (b(i + k) < 0x80 || b(i + k) > 0xBF)) return 0;
  return len;
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8_length(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string tidy_message(std::string_view message) {
  constexpr std::size_t kQuoted = 100;
  std::string out;
  out.reserve(std::min<std::size_t>(message.size(), 4096));
  bool quoted = false;
  std::size_t quote_start = 0;  // where the quoted value began in `message`
  for (std::size_t i = 0; i < message.size();) {
    const char c = message[i];
    if (c == '"' && (i == 0 || message[i - 1] != '\\')) {
      quoted = !quoted;
      quote_start = i + 1;
      out += c;
      ++i;
      continue;
    }
    if (quoted && i - quote_start >= kQuoted) {
      // Skip to the closing quote (or the end) and say how long the value was.
      std::size_t end = i;
      while (end < message.size() && !(message[end] == '"' && message[end - 1] != '\\')) ++end;
      out += fmt::format("\"... ({} bytes)", end - quote_start);  // as shown() cuts: "<100 bytes>"... (N bytes)
      quoted = false;
      i = end + 1;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    const std::size_t len = utf8_length(message, i);
    if (len == 0 || u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
      ++i;
    } else {
      out.append(message.substr(i, len));
      i += len;
    }
  }
  return out;
}

Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) return Error{fmt::format("{}: is a directory, expected a file", path), ErrorCode::kIo, "path"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot open file", path), ErrorCode::kIo, "path"};
  auto too_large = [&] {
    return Error{fmt::format("{}: more than the limit of {} bytes{}", path, max_bytes,
                             fs::is_regular_file(status) ? "" : " (not a regular file)"),
                 ErrorCode::kLimit, "path"};
  };
  std::string text;
  if (fs::is_regular_file(status)) {
    const auto size = fs::file_size(path, ec);
    if (!ec && size > max_bytes) return too_large();
    if (!ec) text.reserve(static_cast<std::size_t>(size));
  }
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    if (text.size() + got > max_bytes) return too_large();
    text.append(chunk, got);
  }
  if (in.bad()) return Error{fmt::format("{}: read error", path), ErrorCode::kIo, "path"};
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return Error{fmt::format("{}: empty file", path), ErrorCode::kMissingField, "path"};
  return text;
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

Error in_context(const Error& e, std::string_view context) {
  return context.empty() ? e : Error(fmt::format("{}: {}", context, e.message), e.code, e.field);
}

Status check_name(std::string_view name, std::string_view field) {
  if (const int u = first_control_character(name); u >= 0)
    return Error{fmt::format("{}: control character 0x{:02x} in name {}", field, u, shown(name)),
                 ErrorCode::kInvalidValue, std::string(field)};
  return {};
}

}  // namespace gpusched::io::detail
