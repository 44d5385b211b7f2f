// `gpusched bench-packing` end to end: outputs, files, exit status 2 with one message on bad input.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::slurp;
using gpusched::cli_test::temp_file;


std::string fixture(const char* name) { return std::string(GPUSCHED_FIXTURES_DIR) + "/sim/" + name; }

}  // namespace

TEST_CASE("bench-packing: JSON on a small trace, with CSV and SVG files") {
  const auto dir = std::filesystem::temp_directory_path() / "gpusched-bench-packing-test";
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "out.csv").string(), svg = (dir / "out.svg").string();
  const Run r = run_tool("bench-packing --quiet --trace " + fixture("pairs_pods.csv") + " --nodes " +
                         fixture("one_node.csv") + " --ratio 1 --policies FGD,GpuPacking --seeds 42-45 --format json" +
                         " --csv " + csv + " --svg " + svg);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"] == 2);
  REQUIRE(j["policies"].size() == 2);
  CHECK(j["policies"][0]["policy"] == "FGD");
  CHECK(j["policies"][0]["unallocated_gpu_pct_at_100"] == 0.0);
  CHECK(j["policies"][0]["unallocated_gpu_pct_at_100_stddev"] == 0.0);
  CHECK(j["seeds"].size() == 4);
  CHECK(j["lower_bound"]["unallocated_gpu_pct_at_100"].get<double>() == doctest::Approx(0.0));
  CHECK(slurp(csv).rfind("policy,arrived_gpu_pct,", 0) == 0);
  CHECK(slurp(svg).find("<svg") == 0);
}

TEST_CASE("bench-packing: the default trace runs by name, with progress on stderr") {
  const Run r = run_tool("bench-packing --trace default --policies BestFit --seeds 42 --no-bound --csv '' --svg ''",
                         true);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("bench-packing: default") != std::string::npos);  // progress (stderr)
  CHECK(r.out.find("1213 nodes, 6212 GPUs, 8152 pods") != std::string::npos);
  CHECK(r.out.find("BestFit") != std::string::npos);
}

TEST_CASE("bench-packing: bad input exits 2 with one message naming the value") {
  Run r = run_tool("bench-packing --format xml", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--format: expected json or table, got \"xml\"") != std::string::npos);
  r = run_tool("bench-packing --trace nosuch", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--trace: unknown trace \"nosuch\"") != std::string::npos);
  CHECK(r.out.find("gpushare40") != std::string::npos);  // lists the known names
  r = run_tool("bench-packing --seeds 4x", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--seeds") != std::string::npos);
  r = run_tool("bench-packing --policies FGD,Magic --seeds 42 --csv '' --svg ''", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("unknown policy \"Magic\"") != std::string::npos);
  const auto bad = std::filesystem::temp_directory_path() / "gpusched-bad-pods.csv";
  std::ofstream(bad) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,x\n";
  r = run_tool("bench-packing --trace " + bad.string(), true);
  CHECK(r.status == 2);
  CHECK(r.out.find("gpusched-bad-pods.csv:2: column 5 (gpu_milli)") != std::string::npos);
}

TEST_CASE("bench-packing: a node list without GPUs is blamed, not the trace") {
  const std::string nodes = gpusched::cli_test::temp_file("cpu_only_nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\n");
  const Run r = run_tool("bench-packing --quiet --trace " + fixture("pairs_pods.csv") + " --nodes " + nodes, true);
  CHECK(r.status == 2);
  CHECK(r.out.find(nodes + ": the node list has no GPUs") != std::string::npos);  // no empty field between
  CHECK(r.out.find("pairs_pods.csv") == std::string::npos);
}
