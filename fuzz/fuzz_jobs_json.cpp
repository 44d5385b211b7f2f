// libFuzzer: the jobs JSON reader (docs/formats.md, gang constraints included) on arbitrary bytes.
#include "fuzz_harness.hpp"
#include <nlohmann/json.hpp>  // JobsDocument keeps the raw job objects

#include "gpusched/io/cluster_json.hpp"

GPUSCHED_FUZZ_TARGET(jobs_json, data, size) {
  gpusched::fuzz::check_result(gpusched::io::read_jobs_json(gpusched::fuzz::as_text(data, size), "fuzz.json"));
  return 0;
}
