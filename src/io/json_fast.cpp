// A faster way to the same JSON document as `parse_json` (io/json_input.hpp, `parse_json_fast`).
//
// nlohmann's lexer reads through an input adapter one character at a time and builds every string
// character by character; on the Kubernetes reader's 100,000-pod PodList it was the largest part of
// the profile (benchmarks/README.md, "Kubernetes objects"). This parser reads the text directly:
// runs of plain characters are appended at once, integers are read without a token buffer. It
// accepts only what nlohmann accepts and builds the same values (numbers typed the same way, the
// last of duplicate keys kept, escapes and \u surrogate pairs to UTF-8); everything unusual (any
// syntax error, nesting beyond the bound, a byte-order mark, integers of more than 18 digits, a
// floating-point number beyond a double, ill-formed UTF-8) is left to `parse_json`, so every error
// and its message stay exactly as they were.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "io/json_input.hpp"

namespace gpusched::io::detail {
namespace {

using fast_json = nlohmann::json;

class FastJsonReader {
 public:
  FastJsonReader(std::string_view text, std::size_t max_depth, std::size_t max_values)
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth), values_left_(max_values) {}

  // False: not read here (the caller parses with nlohmann, which says why or reads it).
  bool document(fast_json& out) {
    skip_ws();
    if (!value(out)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool value(fast_json& out) {
    if (p_ == end_) return false;
    if (values_left_ != kUnbounded && values_left_-- == 0) return false;  // parse_json reports it
    switch (*p_) {
      case '{': return object(out);
      case '[': return array(out);
      case '"': {
        std::string s;
        if (!string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't':
        if (!literal("true")) return false;
        out = true;
        return true;
      case 'f':
        if (!literal("false")) return false;
        out = false;
        return true;
      case 'n':
        if (!literal("null")) return false;
        out = nullptr;
        return true;
      default: return number(out);
    }
  }

  bool object(fast_json& out) {
    if (++depth_ > max_depth_) return false;
    ++p_;  // '{'
    out = fast_json::object();
    auto& members = *out.get_ptr<fast_json::object_t*>();
    skip_ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      --depth_;
      return true;
    }
    std::string key;
    while (true) {
      if (p_ == end_ || *p_ != '"') return false;
      key.clear();
      if (!string(key)) return false;
      skip_ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_ws();
      // A duplicate key is parse_json's to report (it names the path).
      auto [it, fresh] = members.try_emplace(key);
      if (!fresh || !value(it->second)) return false;
      if (const After a = after_item('}'); a != After::kMore) return a == After::kClosed;
    }
  }

  // After a member or an element: ',' (another follows) or the container's `close`.
  enum class After { kMore, kClosed, kBad };
  After after_item(char close) {
    skip_ws();
    if (p_ == end_) return After::kBad;
    if (*p_ == ',') {
      ++p_;
      skip_ws();
      return After::kMore;
    }
    if (*p_ != close) return After::kBad;
    ++p_;
    --depth_;
    return After::kClosed;
  }

  bool array(fast_json& out) {
    if (++depth_ > max_depth_) return false;
    ++p_;  // '['
    out = fast_json::array();
    auto& elements = *out.get_ptr<fast_json::array_t*>();
    skip_ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      --depth_;
      return true;
    }
    while (true) {
      elements.emplace_back();
      if (!value(elements.back())) return false;
      if (const After a = after_item(']'); a != After::kMore) return a == After::kClosed;
    }
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(std::uint32_t& cp) {
    if (end_ - p_ < 4) return false;
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hex(p_[k]);
      if (h < 0) return false;
      cp = cp * 16 + static_cast<std::uint32_t>(h);
    }
    p_ += 4;
    return true;
  }
  static void put_utf8(std::string& s, std::uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // One well-formed UTF-8 sequence of 2 to 4 bytes (Unicode Table 3-7, which nlohmann's lexer
  // checks byte by byte), appended; false when ill-formed.
  bool utf8(std::string& s) {
    const auto b = [&](std::ptrdiff_t k) { return static_cast<unsigned char>(p_[k]); };
    const unsigned char c = b(0);
    std::ptrdiff_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else return false;
    if (end_ - p_ < n) return false;
    if (b(1) < lo || b(1) > hi) return false;
    for (std::ptrdiff_t k = 2; k < n; ++k)
      if (b(k) < 0x80 || b(k) > 0xBF) return false;
    s.append(p_, static_cast<std::size_t>(n));
    p_ += n;
    return true;
  }

  bool string(std::string& s) {
    ++p_;  // '"'
    while (true) {
      const char* run = p_;
      while (p_ != end_) {
        const auto u = static_cast<unsigned char>(*p_);
        if (u == '"' || u == '\\' || u < 0x20 || u >= 0x80) break;
        ++p_;
      }
      s.append(run, static_cast<std::size_t>(p_ - run));
      if (p_ == end_) return false;
      const auto u = static_cast<unsigned char>(*p_);
      if (u == '"') {
        ++p_;
        return true;
      }
      if (u < 0x20) return false;  // a control character must be escaped
      if (u >= 0x80) {
        if (!utf8(s)) return false;
        continue;
      }
      // '\\'
      ++p_;
      if (p_ == end_) return false;
      const char e = *p_++;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          put_utf8(s, cp);
          break;
        }
        default: return false;
      }
    }
  }

  // JSON's number grammar. Integers of up to 18 digits are read here (typed as nlohmann types them:
  // unsigned when not negative); fractions and exponents through strtod as nlohmann does, unless
  // the value is beyond a double (nlohmann's out_of_range error); longer integers are left to it.
  bool number(fast_json& out) {
    const char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    const char* digits = p_;
    if (*p_ == '0') ++p_;
    else
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    const std::size_t n_digits = static_cast<std::size_t>(p_ - digits);
    bool is_float = false;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      is_float = true;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      is_float = true;
    }
    if (!is_float) {
      if (n_digits > 18) return false;
      std::uint64_t x = 0;
      for (const char* d = digits; d != p_; ++d) x = x * 10 + static_cast<std::uint64_t>(*d - '0');
      if (negative) out = -static_cast<std::int64_t>(x);
      else out = x;
      return true;
    }
    const std::string token(start, p_);
    errno = 0;
    char* stop = nullptr;
    const double x = std::strtod(token.c_str(), &stop);
    if (stop != token.c_str() + token.size() || !std::isfinite(x)) return false;
    out = x;
    return true;
  }

  const char* p_;
  const char* end_;
  std::size_t depth_ = 0;
  std::size_t max_depth_;
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);
  std::size_t values_left_;
};

}  // namespace

Result<nlohmann::json> parse_json_fast(std::string_view text, std::string_view source, JsonLimits limits) {
  if (text.size() <= limits.max_bytes) {
    try {
      nlohmann::json out;
      FastJsonReader reader(text, limits.max_depth, limits.max_values == 0 ? static_cast<std::size_t>(-1) : limits.max_values);
      if (reader.document(out)) return out;
    } catch (const std::bad_alloc&) {
      // parse_json below says so, naming the source.
    }
  }
  return parse_json(text, source, limits);
}

}  // namespace gpusched::io::detail
