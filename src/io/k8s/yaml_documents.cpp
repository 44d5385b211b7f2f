// YAML and JSON documents into JSON values (see k8s_detail.hpp).
#include "io/k8s/k8s_detail.hpp"

#include <charconv>
#include <cstdlib>
#include <new>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "io/json_input.hpp"

namespace gpusched::io::k8s::detail {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;

struct TooDeep {};
struct TooLarge {};
struct TooLargeObject {};
struct NotUtf8 {
  YAML::Mark mark;
};

// YAML 1.2 text is Unicode (section 5.2) and yaml-cpp passes scalar bytes through unchecked: a scalar
// that is not well-formed UTF-8 (io::detail::valid_utf8, RFC 3629) is refused here, so no name that
// cannot be written back as JSON reaches a ClusterState.

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

// Builds JSON values straight from yaml-cpp's parser events (no YAML::Node tree in between), with the
// bounds of parse_documents. Not YAML::LoadAll: in yaml-cpp 0.7 (Debian 12) a stray ',' at the top
// level (",", "{a: 1},") makes LoadAll loop forever, each turn adding an empty document
// (jbeder/yaml-cpp#1040, fixed upstream in #1319). Here a document that starts where the previous one
// started is that loop, reported as malformed YAML.
class JsonBuilder final : public YAML::EventHandler {
 public:
  explicit JsonBuilder(std::size_t budget) : budget_(budget) {}

  std::vector<json> documents;

  void OnDocumentStart(const YAML::Mark& mark) override {
    object_left_ = kMaxObjectValues;
    if (started_ && mark.pos == last_start_.pos)
      throw YAML::ParserException(mark, "unexpected text where a document should start (a stray ',' ?)");
    started_ = true;
    last_start_ = mark;
    have_root_ = false;
  }
  void OnDocumentEnd() override {
    if (have_root_ && !root_.is_null()) documents.push_back(std::move(root_));  // skip empty documents
    root_ = nullptr;
    anchors_.clear();
  }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    charge(1);
    add(nullptr, 1, anchor, mark, nullptr);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw YAML::ParserException(mark, "an alias to a node that is not complete yet");
    charge(it->second.second);
    add(it->second.first, it->second.second, YAML::NullAnchor, mark, nullptr);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    if (!io::detail::valid_utf8(value)) throw NotUtf8{mark};
    charge(1);
    // "?" is yaml-cpp's tag for a plain untagged scalar, "!" for a quoted one.
    const bool typed = tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
                       tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null";
    add(typed ? plain_scalar(value) : json(value), 1, anchor, mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(json::array(), anchor, mark);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open(json::object(), anchor, mark);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    json value;
    std::size_t nodes = 1;  // nodes in this subtree, what an alias to it costs
    YAML::anchor_t anchor = YAML::NullAnchor;
    YAML::Mark mark;
    bool have_key = false;
    std::string key;
  };

  void charge(std::size_t nodes) {
    if (nodes > budget_) throw TooLarge{};
    if (nodes > object_left_) throw TooLargeObject{};
    budget_ -= nodes;
    object_left_ -= nodes;
  }
  void open(json empty, YAML::anchor_t anchor, const YAML::Mark& mark) {
    if (stack_.size() + 1 >= static_cast<std::size_t>(kMaxDepth)) throw TooDeep{};
    // An item of a List's top-level "items" starts an object of its own (kMaxObjectValues each).
    if (stack_.size() == 2 && stack_[0].value.is_object() && stack_[0].have_key && stack_[0].key == "items" &&
        stack_[1].value.is_array())
      object_left_ = kMaxObjectValues;
    charge(1);
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key)
      throw YAML::ParserException(mark, "a mapping key must be a scalar");
    stack_.push_back(Frame{std::move(empty), 1, anchor, mark, false, {}});
  }
  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    add(std::move(f.value), f.nodes, f.anchor, f.mark, nullptr);
  }
  // A finished node: the document's root, a sequence element, a mapping key (scalars only) or value.
  void add(json value, std::size_t nodes, YAML::anchor_t anchor, const YAML::Mark& mark, const std::string* scalar) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {value, nodes};
    if (stack_.empty()) {
      root_ = std::move(value);
      have_root_ = true;
      return;
    }
    Frame& top = stack_.back();
    top.nodes += nodes;
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else if (!top.have_key) {
      if (scalar == nullptr) throw YAML::ParserException(mark, "a mapping key must be a scalar");
      // YAML 1.2 (3.2.1.1): the keys of a mapping are unique; kubectl refuses a repeated one
      // ("mapping key ... already defined"). With "last wins" the file said two things.
      if (top.value.contains(*scalar))
        throw YAML::ParserException(mark, fmt::format("the mapping key {} appears twice", io::detail::shown(*scalar)));
      top.key = *scalar;
      top.have_key = true;
    } else {
      top.value[top.key] = std::move(value);
      top.have_key = false;
    }
  }

  std::size_t budget_;
  std::size_t object_left_ = kMaxObjectValues;  // values the current object may still take
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, std::pair<json, std::size_t>> anchors_;
  json root_;
  bool have_root_ = false, started_ = false;
  YAML::Mark last_start_;
};

}  // namespace

Result<std::vector<json>> parse_documents(std::string_view text, std::string_view source) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) ++i;
  if (i < text.size() && (text[i] == '{' || text[i] == '[')) {
    auto doc = io::detail::parse_json(text, source, {.max_values = kMaxObjectValues});
    if (!doc) return doc.error();
    std::vector<json> out;
    out.push_back(std::move(*doc));
    return out;
  }
  if (text.size() > (std::size_t{1} << 30))
    return Error{fmt::format("{}: {} bytes of YAML, more than the limit of 1 GiB", source, text.size()), ErrorCode::kLimit};
  // yaml-cpp queues every flow start before the first event reaches the depth check: a bound on
  // unclosed brackets first (no real document comes near it; plain scalars may hold a few).
  std::size_t open = 0;
  for (const char c : text) {
    if (c == '[' || c == '{') {
      if (++open > kMaxYamlFlowBrackets)
        return Error{fmt::format("{}: YAML nested deeper than {} levels (more than {} unclosed '[' or '{{')", source, kMaxDepth,
                                 kMaxYamlFlowBrackets),
                     ErrorCode::kLimit};
    } else if ((c == ']' || c == '}') && open > 0) {
      --open;
    }
  }
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    JsonBuilder builder(text.size() * 4 + 1024);
    while (parser.HandleNextDocument(builder)) {
    }
    return std::move(builder.documents);
  } catch (const TooDeep&) {
    return Error{fmt::format("{}: YAML nested deeper than {} levels", source, kMaxDepth), ErrorCode::kLimit};
  } catch (const TooLargeObject&) {
    return Error{fmt::format("{}: a Kubernetes object of more than {} YAML values (the API server stores at most 1.5 MiB per object)",
                             source, kMaxObjectValues),
                 ErrorCode::kLimit};
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
