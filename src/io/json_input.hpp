// src/io/json_input.hpp — the one way gpusched's readers turn JSON text into a document (private to
// the compiled io library and the tool; not installed).
//
// Why it exists. nlohmann::json throws on malformed text, on a number beyond a double's range
// (`1e400`: out_of_range 406), and a document nested 10^5 levels deep parses fine but then
// overflows the stack wherever it is walked or printed recursively (our error messages used to
// print the offending value). Every reader goes through `parse_json`, which
//   - never lets an exception out (errors are values with an ErrorCode and the source named),
//   - refuses nesting deeper than `JsonLimits::max_depth` while parsing (before anything deep is
//     built) and text larger than `max_bytes`,
//   - reports the line and column of a syntax error.
// `shown` formats a value for an error message: short, control characters escaped, so that neither
// a huge value nor a crafted one makes the message long or misleading.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpusched/core/detail/text.hpp"
#include "gpusched/core/result.hpp"

#include "io/text_input.hpp"

namespace gpusched::io::detail {

struct JsonLimits {
  std::size_t max_depth = 64;              // our formats nest at most ~8 levels
  std::size_t max_bytes = std::size_t{1} << 30;  // 1 GiB of text
  // Values (scalars and containers) in the document, counted while it is built: a bound on memory
  // the text's size alone does not give (a 50 MB array of 25 M numbers took 969 MB). 0: none.
  std::size_t max_values = 0;
};

// `source` names the input in messages (a file path, or "queues file").
Result<nlohmann::json> parse_json(std::string_view text, std::string_view source, JsonLimits limits = {});

// The same as `parse_json` (the same document, or the same error), faster on well-formed text: a
// direct parser builds the document and leaves anything it does not read (errors included) to
// `parse_json` (src/io/json_fast.cpp). Used where documents are many or large (the Kubernetes reader).
Result<nlohmann::json> parse_json_fast(std::string_view text, std::string_view source, JsonLimits limits = {});

// The indent the writers pass to nlohmann's dump: -1 (one line) to kMaxIndent; beyond it clamped.
// nlohmann 3.11's serializer grows its indent buffer by one doubling, so an indent past 1,024
// wrote from beyond the buffer (stray bytes from Python's to_json(indent=2000), a crash at 10**6).
inline constexpr int kMaxIndent = 16;
inline int clamped_indent(int indent) { return indent < 0 ? -1 : indent > kMaxIndent ? kMaxIndent : indent; }

// A JSON value as an error message shows it: compact, at most `max_chars` characters (then
// "... (N chars)"), never recursing deeper than the limits allow.
std::string shown(const nlohmann::json& value, std::size_t max_chars = 80);
// (shown(std::string_view): io/text_input.hpp.)

// A JSON object key as an error message's field path shows it: as it is when short (at most 40
// chars) and printable, else quoted and cut like `shown`, so that an unknown-field error for a
// crafted key is neither long nor able to forge a line.
std::string shown_key(std::string_view key);

// Names (nodes, jobs, queues, groups, labels) must not contain control characters: the rule of
// core/detail/text.hpp, which every reader applies (check_name, the CSV readers).
using gpusched::detail::first_control_character;
// `e` with "<context>: " before its message (as it is when `context` is empty).
Error in_context(const Error& e, std::string_view context);
// Fails naming `field` and the escaped value when `name` has a control character.
Status check_name(std::string_view name, std::string_view field);

}  // namespace gpusched::io::detail
