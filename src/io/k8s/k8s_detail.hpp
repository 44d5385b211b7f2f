// src/io/k8s/k8s_detail.hpp — private to the Kubernetes reader (not installed).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusched/core/result.hpp"

namespace gpusched::io::k8s::detail {

// The most values (scalars, mappings, sequences) one Kubernetes object may hold when read: 2^20. The
// API server stores an object in at most 1.5 MiB (etcd's default request size), which cannot hold
// more; a 50 MB pod of 25 M list items took 29 s and 2.2 GB. A List's items count one by one.
inline constexpr std::size_t kMaxObjectValues = std::size_t{1} << 20;
// More unclosed '[' and '{' than this in YAML text is nesting beyond any bound (the depth check on
// events came after yaml-cpp had queued 4 M flow starts: 1.1 GB).
inline constexpr std::size_t kMaxYamlFlowBrackets = 10'000;

// The documents of one source: JSON text (first non-blank character '{' or '[') goes through the
// hardened JSON entry point (io/json_input.hpp); anything else is YAML, read with yaml-cpp, every
// document of a multi-document stream, converted to JSON values by the YAML 1.2 core schema
// (plain `true`, `12`, `1.5`, `null` are typed; quoted scalars are strings). The same bounds as
// JSON: nesting depth 64, and aliases may not expand the document beyond a node budget
// proportional to the text (a "billion laughs" document is an error, not an allocation); each
// object (a document, or an item of a List) at most kMaxObjectValues values, counted as it is built.
Result<std::vector<nlohmann::json>> parse_documents(std::string_view text, std::string_view source);

// The elements of a JSON list object's top-level "items" array, found by one scan of the text
// (strings and escapes honoured), each with its "kind" string when it has one. nullopt when the
// text is not a JSON object with an "items" array of objects (the caller then parses it whole).
// Lets a 100,000-pod PodList be read one pod at a time instead of as one document tree (the tree
// of nlohmann::json maps is what reading costs: benchmarks/README.md, "Kubernetes objects").
struct JsonListScan {
  struct Item {
    std::size_t begin = 0, end = 0;
    std::string kind;
  };
  std::size_t array_open = 0, array_close = 0;  // offsets of the items array's '[' and ']'
  std::vector<Item> items;
};
std::optional<JsonListScan> scan_json_list(std::string_view text);

}  // namespace gpusched::io::k8s::detail
