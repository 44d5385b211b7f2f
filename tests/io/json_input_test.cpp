// The shared JSON entry point: hostile documents become error values, never exceptions or crashes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <string>
#include <vector>

#include "io/json_input.hpp"

using namespace gpusched;
using gpusched::io::detail::check_name;
using gpusched::io::detail::parse_json;
using gpusched::io::detail::shown;

TEST_CASE("parse_json: a number beyond a double is an overflow error, not an exception") {
  auto r = parse_json(R"({"nodes": [{"cpu": 1e400}]})", "cluster.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kOverflow);
  CHECK(r.error().message.rfind("cluster.json: number out of range", 0) == 0);
  // Large but representable values still parse (readers then range-check them per field).
  auto big = parse_json(R"({"cpu": 1e300, "n": 18446744073709551615})", "x");
  REQUIRE(big.ok());
  CHECK((*big)["n"].is_number_unsigned());
}

TEST_CASE("parse_json: deep nesting is refused while parsing, without recursion") {
  const std::size_t depth = 100000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  auto r = parse_json(deep, "jobs.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kLimit);
  CHECK(r.error().message == "jobs.json: JSON nested deeper than 64 levels");
  // Exactly at the limit is fine.
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(parse_json(ok, "x").ok());
  CHECK_FALSE(parse_json(std::string(65, '[') + std::string(65, ']'), "x").ok());
}

TEST_CASE("parse_json: syntax errors name the source and position; size limit") {
  auto r = parse_json("{\"a\": 1,\n \"b\": }", "queues.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kParse);
  CHECK(r.error().message.find("queues.json: malformed JSON") == 0);
  CHECK(r.error().message.find("line 2") != std::string::npos);
  CHECK(r.error().message.find("json.exception") == std::string::npos);  // the library's labels are not the user's
  CHECK(r.error().message.rfind("queues.json: malformed JSON at line 2, column ", 0) == 0);
  CHECK_FALSE(parse_json("", "empty.json").ok());
  auto big = parse_json("[1, 2, 3]", "x", {64, 4});
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == ErrorCode::kLimit);
}

TEST_CASE("parse_json: a syntax error in a long token gives a short message") {
  // nlohmann quotes the token read so far: an unterminated string of 20,000 characters was quoted
  // whole (found by fuzz_cluster_json; fuzz/regressions/cluster_json/long-token.json).
  const std::string text = "{\"nodes\": [\"" + std::string(20000, '[') + "\n\"]}";
  auto r = parse_json(text, "cluster.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kParse);
  CHECK(r.error().message.rfind("cluster.json: malformed JSON", 0) == 0);
  CHECK(r.error().message.size() < 400);
  CHECK(r.error().message.find("chars)") != std::string::npos);
}

TEST_CASE("shown: short, escaped, cut") {
  CHECK(shown(std::string_view("a\"b\\c\n")) == "\"a\\\"b\\\\c\\x0a\"");
  CHECK(shown(std::string_view(std::string(1000, 'x')), 10) == "\"xxxxxxxxxx\"... (1000 bytes)");
  const auto doc = nlohmann::json::parse(R"({"k": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]})");
  CHECK(shown(doc, 12) == "{\"k\":[1,2,3,... (28 chars)");
  CHECK(shown(nlohmann::json(std::string("a\x01"))) == "\"a\\x01\"");
}

TEST_CASE("check_name: control characters are refused with the field named") {
  CHECK(check_name("node-1", "nodes[0].name").ok());
  const std::string with_nul("no\0de", 5);
  auto st = check_name(with_nul, "nodes[3].name");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().field == "nodes[3].name");
  CHECK(st.error().message == "nodes[3].name: control character 0x00 in name \"no\\x00de\"");
  CHECK_FALSE(check_name("a\nb", "x").ok());
  CHECK(check_name("größe", "x").ok());  // UTF-8 is not a control character
}

namespace {
bool same_types(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !same_types(*it, b.at(it.key()))) return false;
  } else if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_types(a[i], b[i])) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("parse_json_fast: the same document or the same error as parse_json") {
  using gpusched::io::detail::parse_json_fast;
  // Well-formed text of every kind (read by the direct parser) and malformed or unusual text (left to
  // nlohmann): the results must be the same, value for value and type for type, error for error.
  const std::vector<std::string> texts = {
      R"({"a": 1, "b": -2, "c": 0, "d": -0, "e": 1.5, "f": -2.5e3, "g": 1E-400, "h": 123456789012345678})",
      R"({"big": 18446744073709551615, "neg": -9223372036854775808, "over": 123456789012345678901234})",
      R"({"s": "plain", "esc": "q\"b\\s\/n\n\r\t\b\f", "u": "\u00e9\u4e2d\ud83d\ude00\u0000x", "raw": "é中😀"})",
      R"( [ true , false , null , [] , {} , [[1],[2,[3]]] , "" ] )",
      R"({"dup": 1, "dup": {"x": 2}, "k": {"dup": [1], "dup": "last"}})",
      "{\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}}}]}\n",
      // malformed or beyond what the direct parser reads
      R"({"a": 1,)", R"({"a" 1})", R"({"a": 01})", R"({"a": 1.})", R"({"a": -})", R"({"a": .5})", R"([1,])",
      R"({"a": tru})", R"({"a": "x)", "{\"a\": \"\x01\"}", R"({"a": "\x"})", R"({"a": "\ud800"})",
      R"({"a": "\udc00"})", R"({"a": "\ud800\u0041"})", R"({"a": "\u12g4"})", "{\"a\": \"\xc0\xaf\"}",
      "{\"a\": \"\xed\xa0\x80\"}", "{\"a\": \"\xf4\x90\x80\x80\"}", "{\"a\": \"\xe2\x82\"}", "\xef\xbb\xbf{\"a\": 1}",
      R"({"a": 1e400})", R"({"a": -1e400})", "", "   ", R"({"a": 1} x)", R"({"a": 1}})", "nul", "[1 2]",
      std::string(64, '[') + std::string(64, ']'), std::string(65, '[') + std::string(65, ']'),
      std::string("{\"a\": 1}\0", 9), R"({"a": 99999999999999999999})", R"({"a": -99999999999999999999})"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    const auto slow = parse_json(text, "src");
    const auto fast = parse_json_fast(text, "src");
    REQUIRE(slow.ok() == fast.ok());
    if (slow.ok()) {
      CHECK(*slow == *fast);
      CHECK(same_types(*slow, *fast));  // the same number types (unsigned, integer, float) too
    } else {
      CHECK(slow.error().message == fast.error().message);
      CHECK(slow.error().code == fast.error().code);
    }
  }
}

TEST_CASE("parse_json: a key twice in one object is refused, naming its path") {
  // nlohmann keeps the last of repeated keys; {"gpus": 100, "gpus": 1} then said 1 to one reader
  // and 100 to another. Both parsers refuse it with the key's path.
  using gpusched::io::detail::parse_json_fast;
  const std::string text = R"({"spec": {"containers": [{"name": "a"}, {"name": "b", "resources": {"gpu": 100, "gpu": 1}}]}})";
  for (const auto& r : {parse_json(text, "pod.json"), parse_json_fast(text, "pod.json")}) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "pod.json: spec.containers[1].resources.gpu: the key appears twice in its object");
    CHECK(r.error().code == gpusched::ErrorCode::kDuplicate);
  }
  const auto top = parse_json(R"([{"a": 1}, {"a": 1, "b": 2, "a": 3}])", "x");
  REQUIRE_FALSE(top.ok());
  CHECK(top.error().message == "x: [1].a: the key appears twice in its object");
  // The same key in two objects, or in an array of objects, is no duplicate.
  CHECK(parse_json(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]})", "x").ok());
}

TEST_CASE("read_input_file: bounded before the memory is spent, directories and empty files refused") {
  using gpusched::io::detail::read_input_file;
  // /dev/zero never ends: read in chunks and refused at the bound (the tool's is 1 GiB).
  const auto zero = read_input_file("/dev/zero", 1 << 20);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "/dev/zero: more than the limit of 1048576 bytes (not a regular file)");
  CHECK(zero.error().code == gpusched::ErrorCode::kLimit);
  const auto dir = std::filesystem::temp_directory_path() / ("gpusched-read-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto is_dir = read_input_file(dir.string());
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.error().code == gpusched::ErrorCode::kIo);
  CHECK(is_dir.error().message.ends_with(": is a directory, expected a file"));
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  };
  // A regular file past the bound is refused by its size, without reading it.
  const auto big = read_input_file(write("big.json", std::string(100, ' ') + "{}"), 64);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.ends_with("big.json: more than the limit of 64 bytes"));
  const auto blank = read_input_file(write("blank.json", " \r\n\t"));
  REQUIRE_FALSE(blank.ok());
  CHECK(blank.error().message.ends_with("blank.json: empty file"));
  const auto ok = read_input_file(write("ok.json", "{\"a\": 1}"), 9);
  REQUIRE(ok.ok());
  CHECK(*ok == "{\"a\": 1}");
  CHECK(read_input_file((dir / "missing.json").string()).error().code == gpusched::ErrorCode::kIo);
  std::filesystem::remove_all(dir);
}

TEST_CASE("parse_json: a bound on the values a document holds, counted while it is built") {
  using gpusched::io::detail::parse_json_fast;
  const std::string text = R"({"a": [1, 2, 3], "b": {"c": null}})";  // 7 values: {}, [], 1, 2, 3, {}, null
  for (std::size_t bound : {7u, 100u}) {
    CHECK(parse_json(text, "x", {.max_values = bound}).ok());
    CHECK(parse_json_fast(text, "x", {.max_values = bound}).ok());
  }
  for (const auto& r : {parse_json(text, "x.json", {.max_values = 6}), parse_json_fast(text, "x.json", {.max_values = 6})}) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "x.json: more than 6 JSON values in one document");
    CHECK(r.error().code == gpusched::ErrorCode::kLimit);
  }
}

TEST_CASE("tidy_message: control bytes and bytes that are not UTF-8 escaped, long quoted values cut") {
  using gpusched::io::detail::tidy_message;
  CHECK(tidy_message("a.json: nodes[0].name: \"ok\"") == "a.json: nodes[0].name: \"ok\"");
  CHECK(tidy_message(std::string("Node a\nb\0c: x", 13)) == "Node a\\x0ab\\x00c: x");
  CHECK(tidy_message("model \"T4\xfe\"") == "model \"T4\\xfe\"");
  CHECK(tidy_message("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 stays
  const std::string huge = "cpu: expected a quantity (got \"" + std::string(1 << 20, '9') + "\")";
  const std::string t = tidy_message(huge);
  CHECK(t.size() < 200);
  CHECK(t.find("9\"... (1048576 bytes))") != std::string::npos);
  CHECK(tidy_message(t) == t);
}
