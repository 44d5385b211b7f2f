// src/io/text_input.hpp — what the line-oriented text readers (nvidia-smi topo -m, nvidia-smi mig
// -lgip/-lgipp) share (private to the compiled io library; not installed).
//
// Why it exists. Output pasted from a terminal, a Windows editor or an old Mac tool ends lines with
// "\n", "\r\n" or a lone "\r"; a reader splitting on '\n' alone sees a CR-only file as one line and
// reports "no header" (or, worse, reads nothing and succeeds). And a reader must bound what it
// allocates from what the text claims before it allocates it (a 10^5-column header with no rows once
// reserved a 10^10-cell matrix).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"

namespace gpusched::io::detail {

// A string as an error message shows it: quoted, control characters and quotes escaped, cut to
// `max_chars` (then "... (N bytes)"). Defined in json_input.cpp; every reader's messages use it.
std::string shown(std::string_view text, std::size_t max_chars = 80);
inline std::string shown(const std::string& text, std::size_t max_chars = 80) {
  return shown(std::string_view(text), max_chars);
}

// What the JSON library says of an error, without its own labels: "[json.exception.parse_error.101]
// parse error at line 2, column 1: syntax error ..." becomes "at line 2, column 1: syntax error ..."
// (a user reads the position and the cause, not the library's exception class and number), cut.
std::string json_library_text(std::string_view what);

// A message as it is shown to a person (the tool's stderr, the C API's error, Python's exception):
// bytes below 0x20, 0x7f and bytes that are not UTF-8 written as \xNN (a NUL cut the message, a newline
// forged a line), and any quoted value longer than 100 bytes cut there ("... (N bytes)"), so that
// no message echoes a megabyte a reader quoted whole. Idempotent on what it returns.
std::string tidy_message(std::string_view message);
// Whether `text` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF).
bool valid_utf8(std::string_view text);

// A whole input file, the one way every reader of the tool, the C API and the simulator opens one:
// a directory is refused (it opened and read as empty), a file that is not regular (a pipe,
// /dev/zero) is read in chunks and refused past `max_bytes` before more is spent, a regular file
// larger than `max_bytes` is refused without reading it, and a file of only white space is refused as
// empty (docs/formats.md: empty input is an error, never an empty success). Errors name the path,
// code kIo (cannot open, a directory, a read error), kLimit or kMissingField (empty).
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;
Result<std::string> read_input_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);

// The text's lines without their terminators; "\n", "\r\n" and a lone "\r" each end a line. A
// final terminator does not start another (empty) line; empty text is no lines.
inline std::vector<std::string_view> text_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t b = 0;
  while (b < text.size()) {
    const std::size_t e = text.find_first_of("\r\n", b);
    if (e == std::string_view::npos) {
      lines.push_back(text.substr(b));
      break;
    }
    lines.push_back(text.substr(b, e - b));
    b = e + 1;
    if (text[e] == '\r' && b < text.size() && text[b] == '\n') ++b;
  }
  return lines;
}

// `s` without leading and trailing blanks (space, tab, CR, LF, VT, FF: what isspace() says in the C locale).
inline std::string_view trim(std::string_view s) {
  constexpr std::string_view blanks = " \t\r\n\v\f";
  while (!s.empty() && blanks.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && blanks.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

// Text readers refuse more than this (nvidia-smi prints a few KiB; a GiB is no longer its output).
inline constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;

}  // namespace gpusched::io::detail
