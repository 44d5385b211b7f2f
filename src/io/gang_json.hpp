// src/io/gang_json.hpp — the gang constraints of a job in the jobs JSON (docs/gang.md). Private to the
// io library: the public entry point is `read_jobs_json`, which returns them compiled into each Job.
//
// The jobs reader (cluster_json.cpp) reads the gang fields here into `GangConstraints`, which
// `make_gang_spec` resolves against the job's groups:
//
//   "topology": "rack"                                  one rack, required
//   "topology": {"level": "rack", "mode": "preferred"}  "required" (default) or "preferred";
//                                                       level "node" = all tasks on one node
//   "spread": {"level": "topology.kubernetes.io/zone", "max_per_domain": 1, "min_domains": 2,
//              "groups": ["decode"]}                    or an array of such objects
//   "anti_affinity": [{"groups": ["prefill", "decode"], "level": "node"}]   level defaults to node
//
// and on a group: "spread": {...} (that group only) and "anti_affinity": ["other-group", ...] or
// [{"group": "other-group", "level": "rack"}]. Errors name the JSON path and the value.
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "gpusched/core/result.hpp"
#include "gpusched/gang/gang.hpp"

namespace gpusched::io::detail {

// `path` names the job in messages ("jobs[3]").
Result<GangConstraints> read_gang_constraints(const nlohmann::json& job, std::string_view path);

// Whether a job carries a gang constraint field (topology, spread, anti_affinity). Elastic groups
// (min_replicas below replicas) are visible in the compiled job itself.
bool has_gang_fields(const nlohmann::json& job);

}  // namespace gpusched::io::detail
