// YAML and JSON documents into JSON values (see k8s_detail.hpp).
#include "io/k8s/k8s_detail.hpp"

#include <charconv>
#include <cstdlib>
#include <new>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "io/json_input.hpp"

namespace gpusched::io::k8s::detail {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;

struct TooDeep {};
struct TooLarge {};
struct NotUtf8 {
  YAML::Mark mark;
};

// YAML 1.2 text is Unicode (section 5.2) and yaml-cpp passes scalar bytes through unchecked: a scalar
// that is not well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) is
// refused here, so no name that cannot be written back as JSON reaches a ClusterState.
bool is_utf8(const std::string& s) {
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    const unsigned char c = byte(i);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const unsigned char b = byte(i + k);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += len;
  }
  return true;
}

bool is_null_text(const std::string& s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }

// YAML 1.2 core schema for a plain (unquoted, untagged) scalar.
json plain_scalar(const std::string& s) {
  if (is_null_text(s)) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const char* digits = (*first == '-' || *first == '+') ? first + 1 : first;
  if (digits < last) {
    bool all_digits = true;
    for (const char* p = digits; p < last; ++p) all_digits = all_digits && *p >= '0' && *p <= '9';
    if (all_digits) {
      std::int64_t v = 0;
      const char* start = *first == '+' ? first + 1 : first;
      auto [end, ec] = std::from_chars(start, last, v);
      if (ec == std::errc() && end == last) return v;
      return s;  // beyond int64: kept as text, the quantity reader reports it
    }
    // A float: [-+]? digits with one '.' and/or an exponent. Kept as a number only when it is one
    // in full (strtod on a copy; "1e400" overflows to inf and stays text).
    bool floaty = true, seen_digit = false;
    for (const char* p = digits; p < last; ++p) {
      const char c = *p;
      if (c >= '0' && c <= '9') seen_digit = true;
      else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') floaty = false;
    }
    if (floaty && seen_digit) {
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (end == s.c_str() + s.size() && d - d == 0) return d;
    }
  }
  return s;
}

struct Converter {
  std::size_t budget;

  json convert(const YAML::Node& node, int depth) {
    if (depth >= kMaxDepth) throw TooDeep{};
    if (budget == 0) throw TooLarge{};
    --budget;
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return nullptr;
      case YAML::NodeType::Scalar: {
        const std::string& s = node.Scalar();
        if (!is_utf8(s)) throw NotUtf8{node.Mark()};
        const std::string& tag = node.Tag();
        if (tag == "?") return plain_scalar(s);
        if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" || tag == "tag:yaml.org,2002:bool" ||
            tag == "tag:yaml.org,2002:null")
          return plain_scalar(s);
        return s;  // quoted ("!") or !!str or any other tag: text
      }
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : node) out.push_back(convert(item, depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) throw YAML::ParserException(kv.first.Mark(), "a mapping key must be a scalar");
          if (!is_utf8(kv.first.Scalar())) throw NotUtf8{kv.first.Mark()};
          out[kv.first.Scalar()] = convert(kv.second, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }
};

}  // namespace

Result<std::vector<json>> parse_documents(std::string_view text, std::string_view source) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  if (i < text.size() && (text[i] == '{' || text[i] == '[')) {
    auto doc = io::detail::parse_json(text, source);
    if (!doc) return doc.error();
    std::vector<json> out;
    out.push_back(std::move(*doc));
    return out;
  }
  if (text.size() > (std::size_t{1} << 30))
    return Error{fmt::format("{}: {} bytes of YAML, more than the limit of 1 GiB", source, text.size()), ErrorCode::kLimit};
  try {
    const std::vector<YAML::Node> nodes = YAML::LoadAll(std::string(text));
    Converter conv{text.size() * 4 + 1024};
    std::vector<json> out;
    for (const auto& n : nodes) {
      if (n.IsNull()) continue;  // an empty document between two "---"
      out.push_back(conv.convert(n, 0));
    }
    return out;
  } catch (const TooDeep&) {
    return Error{fmt::format("{}: YAML nested deeper than {} levels", source, kMaxDepth), ErrorCode::kLimit};
  } catch (const TooLarge&) {
    return Error{fmt::format("{}: YAML aliases expand the document beyond {} nodes", source, text.size() * 4 + 1024),
                 ErrorCode::kLimit};
  } catch (const NotUtf8& e) {
    return Error{fmt::format("{}: text at line {}, column {} is not valid UTF-8", source, e.mark.line + 1, e.mark.column + 1),
                 ErrorCode::kParse};
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("{}: malformed YAML at line {}, column {}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg),
                 ErrorCode::kParse};
  } catch (const json::exception& e) {
    return Error{fmt::format("{}: {}", source, e.what()), ErrorCode::kParse};
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("{}: out of memory reading {} bytes of YAML", source, text.size()), ErrorCode::kLimit};
  }
}

std::optional<JsonListScan> scan_json_list(std::string_view t) {
  std::size_t i = 0;
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < t.size() && ws(t[i])) ++i;
  if (i == t.size() || t[i] != '{') return std::nullopt;
  JsonListScan out;
  bool found = false, in_items = false, in_string = false, escaped = false, after_colon = false, have_last = false;
  int depth = 0;
  std::size_t str_begin = 0, item_begin = 0;
  std::string_view last, key1, key3, item_kind;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') {
        in_string = false;
        const std::string_view s = t.substr(str_begin, i - str_begin);
        if (after_colon) {
          if (in_items && depth == 3 && key3 == "kind") item_kind = s;
          after_colon = false;
        } else {
          last = s;
          have_last = true;
        }
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        str_begin = i + 1;
        break;
      case ':':
        if (have_last && depth == 1) key1 = last;
        if (have_last && depth == 3) key3 = last;
        have_last = false;
        after_colon = true;
        break;
      case ',':
        after_colon = have_last = false;
        break;
      case '{':
      case '[':
        if (c == '[' && depth == 1 && after_colon && key1 == "items" && !found) {
          found = in_items = true;
          out.array_open = i;
        } else if (in_items && depth == 2) {
          if (c != '{') return std::nullopt;
          item_begin = i;
          item_kind = {};
        }
        ++depth;
        after_colon = have_last = false;
        break;
      case '}':
      case ']':
        --depth;
        after_colon = have_last = false;
        if (depth < 0) return std::nullopt;
        if (in_items && depth == 2 && c == '}') out.items.push_back({item_begin, i + 1, std::string(item_kind)});
        else if (in_items && depth == 1 && c == ']') {
          in_items = false;
          out.array_close = i;
        }
        break;
      default:
        if (!ws(c) && in_items && depth == 2) return std::nullopt;  // a scalar element or garbage
    }
  }
  if (!found || in_items || depth != 0 || in_string) return std::nullopt;
  return out;
}

}  // namespace gpusched::io::k8s::detail
