// src/io/k8s/k8s_detail.hpp — private to the Kubernetes reader (not installed).
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusched/core/result.hpp"

namespace gpusched::io::k8s::detail {

// The documents of one source: JSON text (first non-blank character '{' or '[') goes through the
// hardened JSON entry point (io/json_input.hpp); anything else is YAML, read with yaml-cpp, every
// document of a multi-document stream, converted to JSON values by the YAML 1.2 core schema
// (plain `true`, `12`, `1.5`, `null` are typed; quoted scalars are strings). The same bounds as
// JSON: nesting depth 64, and aliases may not expand the document beyond a node budget
// proportional to the text (a "billion laughs" document is an error, not an allocation).
Result<std::vector<nlohmann::json>> parse_documents(std::string_view text, std::string_view source);

}  // namespace gpusched::io::k8s::detail
