// libFuzzer: the jobs JSON reader (docs/formats.md, gang constraints included) on arbitrary bytes.
#include "fuzz_harness.hpp"
#include <nlohmann/json.hpp>  // JobsDocument keeps the raw job objects

#include "gpusched/io/cluster_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpusched::fuzz::check_result(gpusched::io::read_jobs_json(gpusched::fuzz::as_text(data, size), "fuzz.json"));
  return 0;
}
