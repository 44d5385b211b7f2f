// `gpusched topo parse|pick|nodes` end to end: output, JSON shape, exit status on bad input.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;

// Appended rather than chained operator+: GCC 12 at -O3 raises a false -Warray-bounds on the chain.
std::string fx(const std::string& name) {
  std::string path = GPUSCHED_FIXTURES_DIR;
  path += "/topology/";
  path += name;
  return path;
}

}  // namespace

TEST_CASE("topo parse --format json lists GPUs, NICs, affinities and every GPU pair") {
  Run r = run_tool("topo parse " + fx("pcie_2socket.txt") + " --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"].size() == 8);
  CHECK(j["nics"].size() == 2);
  CHECK(j["nics"][0]["nic_name"] == "mlx5_0");
  CHECK(j["gpus"][4]["numa_node"] == 1);
  CHECK(j["gpus"][0]["cpu_affinity"] == "0-31,64-95");
  CHECK(j["pairs"].size() == 28);
  CHECK(j["pairs"][0]["link"] == "PIX");
  CHECK(j["pairs"][0]["path_bandwidth_gbps"] == doctest::Approx(31.5));
  CHECK(j["pcie"] == "pcie-gen4");
}

TEST_CASE("topo pick: the DGX-1 NVLinked quad, and the free list is honoured") {
  Run r = run_tool("topo pick " + fx("dgx1_v100.txt") + " --gpus 4 --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"] == nlohmann::json::array({0, 1, 2, 3}));
  CHECK(j["score"]["bus_bandwidth_gbps"] == doctest::Approx(115.75));
  Run f = run_tool("topo pick " + fx("pcie_2socket.txt") + " --gpus 2 --free 1-5 --format json");
  REQUIRE(f.status == 0);
  CHECK(nlohmann::json::parse(f.out)["gpus"] == nlohmann::json::array({2, 3}));
  Run t = run_tool("topo pick " + fx("pcie_2socket.txt") + " --gpus 2");
  CHECK(t.status == 0);
  CHECK(t.out.find("gpus 0,1: span PIX") == 0);
}

TEST_CASE("topo nodes: required rack picks the best-fit rack; impossible requests exit 1 with a reason") {
  const std::string base = "topo nodes " + fx("cluster_racks.json") +
                           " --level topology.kubernetes.io/block --level topology.kubernetes.io/rack";
  Run r = run_tool(base + " --tasks 2 --gpus-per-task 8 --required rack --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["nodes"].size() == 2);
  CHECK(j["nodes"][0]["node"] == "node-04");  // rack r1 has exactly 2 free nodes
  CHECK(j["span"] == "rack r1");
  Run no = run_tool(base + " --tasks 5 --gpus-per-task 8 --required rack --format json");
  CHECK(no.status == 1);
  CHECK(nlohmann::json::parse(no.out)["reason"] ==
        "no rack has room for 5 tasks: the largest free one holds 4 (rack 'r0'); 1 nodes lack topology labels");
  Run pref = run_tool(base + " --tasks 5 --gpus-per-task 8 --preferred rack");
  CHECK(pref.status == 0);
  CHECK(pref.out.find("5 tasks on 5 nodes within block b0 (preferred level not met)") == 0);
}

TEST_CASE("topo: bad input exits 2") {
  CHECK(run_tool("topo pick " + fx("dgx1_v100.txt") + " --gpus 0").status == 2);
  CHECK(run_tool("topo pick " + fx("dgx1_v100.txt") + " --gpus 2 --free 3-1").status == 2);
  CHECK(run_tool("topo pick " + fx("dgx1_v100.txt") + " --gpus 2 --message-size lots").status == 2);
  CHECK(run_tool("topo parse " + fx("dgx1_v100.txt") + " --format xml").status == 2);
  CHECK(run_tool("topo parse " + fx("dgx1_v100.txt") + " --nvlink-gen 7").status == 2);
  CHECK(run_tool("topo parse " + fx("cluster_racks.json")).status == 2);  // not nvidia-smi output
  CHECK(run_tool("topo nodes " + fx("cluster_racks.json") + " --level rack --tasks 1 --required row").status == 2);
  // More GPUs than free is a "no pick" answer, not an input error.
  CHECK(run_tool("topo pick " + fx("dgx1_v100.txt") + " --gpus 3 --free 0,1").status == 1);
}

namespace {

// Like run_tool(), with stderr merged into the output (error messages are checked).
Run run_merged(const std::string& args) { return run_tool(args, true); }

}  // namespace

TEST_CASE("topo nodes --topology: a fabric JSON instead of labels, with the all-reduce estimate") {
  const std::string base = "topo nodes " + fx("fabric_cluster.json") + " --topology ";
  // Best fit puts 3 x 4-GPU tasks in leaf1 (3 hosts: nvl2 {gb-04, gb-05}, nvl3 {gb-06}). The ring
  // 4 -> 5 -> 6 -> 4 crosses nvl3's uplink (one host, one NDR port: 50 GB/s) once each way; R = 12,
  // alpha = 0.5 + 1 + 1 + 0.5 us: 2 * 11/12 * 64 MiB / 50 GB/s + 2 * 11 * 3 us = 2526.66 us.
  Run r = run_tool(base + fx("fabric.json") + " --tasks 3 --gpus-per-task 4 --required leaf --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["nodes"].size() == 3);
  CHECK(j["nodes"][0]["node"] == "gb-04");
  CHECK(j["nodes"][2]["node"] == "gb-06");
  CHECK(j["span"] == "leaf leaf1");
  CHECK(j["allreduce"]["ranks_per_node"] == 4);
  CHECK(j["allreduce"]["bus_bandwidth_gbps"].get<double>() == doctest::Approx(50.0));
  CHECK(j["allreduce"]["latency_us"].get<double>() == doctest::Approx(3.0));
  CHECK(j["allreduce"]["allreduce_us"].get<double>() == doctest::Approx(2526.6584));
  CHECK(j["allreduce"]["bottleneck"].get<std::string>().find("nvlink-domain 'nvl3' -> leaf-switch 'leaf1'") == 0);
  // Generator form: two tasks fit the first NVL domain; with a 450 GB/s node bus that is the
  // bottleneck: 2 * 7/8 * 64 MiB / 450 GB/s + 2 * 7 * 1 us = 274.98 us.
  Run g = run_tool(base + fx("fabric_generated.json") +
              " --tasks 2 --gpus-per-task 4 --required nvl --node-bus-gbps 450 --format json");
  REQUIRE(g.status == 0);
  auto gj = nlohmann::json::parse(g.out);
  CHECK(gj["nodes"][0]["node"] == "gb-00");
  CHECK(gj["nodes"][1]["node"] == "gb-01");
  CHECK(gj["span"] == "nvl nvl-0");
  CHECK(gj["allreduce"]["bottleneck"] == "intra-node");
  CHECK(gj["allreduce"]["allreduce_us"].get<double>() == doctest::Approx(274.9789));
  Run t = run_tool(base + fx("fabric.json") + " --tasks 2 --gpus-per-task 4");
  CHECK(t.status == 0);
  CHECK(t.out.find("2 tasks on 2 nodes within nvl nvl0\n  gb-00 x1\n  gb-01 x1\nall-reduce of 67108864 bytes, 4 ranks "
                   "per node: ") == 0);
}

TEST_CASE("topo nodes --topology: bad fabric JSON exits 2 naming the JSON path") {
  const std::string base = "topo nodes " + fx("fabric_cluster.json");
  Run bad = run_merged(base + " --topology " + fx("fabric_bad_node.json") + " --tasks 1");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("domains[1].nodes[1]: unknown node \"gb-99\" (not in the cluster)") != std::string::npos);
  CHECK(run_tool(base + " --topology " + fx("fabric.json") + " --level rack --tasks 1").status == 2);  // both
  CHECK(run_tool(base + " --tasks 1").status == 2);                                                      // neither
  CHECK(run_tool(base + " --topology " + fx("missing.json") + " --tasks 1").status == 2);
  CHECK(run_tool(base + " --topology " + fx("fabric.json") + " --tasks 1 --node-bus-gbps -3").status == 2);
  CHECK(run_tool(base + " --topology " + fx("fabric.json") + " --tasks 1 --required rack").status == 2);  // no such level
}

TEST_CASE("topo parse: hostile text is refused with one message; invalid UTF-8 in a name cannot break the JSON") {
  using gpusched::cli_test::temp_file;
  // A NUL byte in a device name: exit 2, the file and the escaped name in the message.
  const Run nul = run_tool("topo parse " + temp_file("nul.txt", std::string("\tGPU0\tNIC\0" "0\nGPU0\t X \tPIX\nNIC\0" "0\tPIX\t X \n", 39)));
  CHECK(nul.status == 2);
  CHECK(nul.out.find("nul.txt: line 1: device name: control character 0x00") != std::string::npos);
  // A header claiming 3,000 devices and no rows: refused before allocating.
  std::string header;
  for (int i = 0; i < 3000; ++i) header += "\tGPU" + std::to_string(i);
  const Run huge = run_tool("topo parse " + temp_file("huge.txt", header + "\n"));
  CHECK(huge.status == 2);
  CHECK(huge.out.find("more than the limit of 1024") != std::string::npos);
  // A NIC named with a byte that is not UTF-8: the JSON writer replaces it (U+FFFD), exit 0.
  const Run latin1 = run_tool("topo parse --format json " +
                              temp_file("latin1.txt", "\tGPU0\tNIC\xff\nGPU0\t X \tPIX\nNIC\xff\tPIX\t X \n"));
  CHECK(latin1.status == 0);
  CHECK(latin1.out.find("NIC\xef\xbf\xbd") != std::string::npos);
}
