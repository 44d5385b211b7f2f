// `gpusched topo parse|pick|nodes` end to end: output, JSON shape, exit status on bad input.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

struct Run {
  int status = -1;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(GPUSCHED_TOOL) + " " + args + " 2>/dev/null";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) r.out += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string fx(const std::string& name) { return std::string(GPUSCHED_FIXTURES_DIR) + "/topology/" + name; }

}  // namespace

TEST_CASE("topo parse --format json lists GPUs, NICs, affinities and every GPU pair") {
  Run r = run("topo parse " + fx("pcie_2socket.txt") + " --format json");
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
  Run r = run("topo pick " + fx("dgx1_v100.txt") + " --gpus 4 --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpus"] == nlohmann::json::array({0, 1, 2, 3}));
  CHECK(j["score"]["bus_bandwidth_gbps"] == doctest::Approx(115.75));
  Run f = run("topo pick " + fx("pcie_2socket.txt") + " --gpus 2 --free 1-5 --format json");
  REQUIRE(f.status == 0);
  CHECK(nlohmann::json::parse(f.out)["gpus"] == nlohmann::json::array({2, 3}));
  Run t = run("topo pick " + fx("pcie_2socket.txt") + " --gpus 2");
  CHECK(t.status == 0);
  CHECK(t.out.find("gpus 0,1: span PIX") == 0);
}

TEST_CASE("topo nodes: required rack picks the best-fit rack; impossible requests exit 1 with a reason") {
  const std::string base = "topo nodes " + fx("cluster_racks.json") +
                           " --level topology.kubernetes.io/block --level topology.kubernetes.io/rack";
  Run r = run(base + " --tasks 2 --gpus-per-task 8 --required rack --format json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["nodes"].size() == 2);
  CHECK(j["nodes"][0]["node"] == "node-04");  // rack r1 has exactly 2 free nodes
  CHECK(j["span"] == "rack r1");
  Run no = run(base + " --tasks 5 --gpus-per-task 8 --required rack --format json");
  CHECK(no.status == 1);
  CHECK(nlohmann::json::parse(no.out)["reason"] ==
        "no rack has room for 5 tasks: the largest free one holds 4 (rack 'r0'); 1 nodes lack topology labels");
  Run pref = run(base + " --tasks 5 --gpus-per-task 8 --preferred rack");
  CHECK(pref.status == 0);
  CHECK(pref.out.find("5 tasks on 5 nodes within block b0 (preferred level not met)") == 0);
}

TEST_CASE("topo: bad input exits 2") {
  CHECK(run("topo pick " + fx("dgx1_v100.txt") + " --gpus 0").status == 2);
  CHECK(run("topo pick " + fx("dgx1_v100.txt") + " --gpus 2 --free 3-1").status == 2);
  CHECK(run("topo pick " + fx("dgx1_v100.txt") + " --gpus 2 --message-size lots").status == 2);
  CHECK(run("topo parse " + fx("dgx1_v100.txt") + " --format xml").status == 2);
  CHECK(run("topo parse " + fx("dgx1_v100.txt") + " --nvlink-gen 7").status == 2);
  CHECK(run("topo parse " + fx("cluster_racks.json")).status == 2);  // not nvidia-smi output
  CHECK(run("topo nodes " + fx("cluster_racks.json") + " --level rack --tasks 1 --required row").status == 2);
  // More GPUs than free is a "no pick" answer, not an input error.
  CHECK(run("topo pick " + fx("dgx1_v100.txt") + " --gpus 3 --free 0,1").status == 1);
}
