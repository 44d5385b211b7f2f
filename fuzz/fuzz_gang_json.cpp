// libFuzzer: the gang constraints reader (docs/gang.md: topology, spread, anti_affinity on a job and
// its groups) on arbitrary bytes: the text through the one JSON entry point, then every object in it
// (the document, or each element of a "jobs" array) read as a job's gang fields.
#include "fuzz_harness.hpp"
#include <nlohmann/json.hpp>

#include "io/gang_json.hpp"
#include "io/json_input.hpp"

GPUSCHED_FUZZ_TARGET(gang_json, data, size) {
  auto doc = gpusched::io::detail::parse_json(gpusched::fuzz::as_text(data, size), "fuzz.json");
  gpusched::fuzz::check_result(doc);
  if (!doc.ok()) return 0;
  gpusched::fuzz::check_result(gpusched::io::detail::read_gang_constraints(*doc, "job"));
  if (doc->is_object() && doc->contains("jobs") && (*doc)["jobs"].is_array())
    for (const auto& job : (*doc)["jobs"]) gpusched::fuzz::check_result(gpusched::io::detail::read_gang_constraints(job, "jobs[i]"));
  return 0;
}
