#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/state_view.hpp"
#include "gpusched/io/cluster_json.hpp"

using namespace gpusched;

namespace {

std::string cluster_error(const std::string& text) {
  auto r = io::read_cluster_json(text, "cluster.json");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

std::string jobs_error(const std::string& text) {
  auto r = io::read_jobs_json(text, "jobs.json");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("cluster JSON: quantities in both spellings, GPU lists, labels, custom models") {
  auto r = io::read_cluster_json(R"({
    "gpu_models": [{"name": "MI300X", "aliases": ["AMD-MI300X"], "memory": "192Gi"}],
    "nodes": [
      {"name": "a", "cpu": "500m", "memory": "64Gi", "gpus": 2, "gpu_model": "H100-80GB",
       "labels": {"rack": "r1"}, "cpu_used": 0.25},
      {"name": "b", "cpu": 8, "memory": 1024, "gpu_model": "T4",
       "gpus": [{"used_milli": "250m"}, {"model": "MI300X", "used_milli": 1000, "healthy": false}],
       "schedulable": false}
    ]})");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  const auto& nodes = r->cluster.nodes();
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].cpu == 500);
  CHECK(nodes[0].cpu_used == 250);
  CHECK(nodes[0].memory == 64 * kGiB);
  CHECK(nodes[0].gpus.size() == 2);
  CHECK(nodes[0].labels == std::vector<std::pair<std::string, std::string>>{{"rack", "r1"}});
  CHECK(nodes[1].cpu == 8000);
  CHECK(nodes[1].memory == 1024);
  CHECK(nodes[1].gpus[0].used_milli == 250);
  CHECK(nodes[1].gpus[1].model == "MI300X");
  CHECK_FALSE(nodes[1].gpus[1].healthy);
  CHECK_FALSE(nodes[1].schedulable);
  CHECK(r->registry.find("amd-mi300x"));
}

TEST_CASE("cluster JSON: every bad input names the field and the value") {
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1}, {"name": "b", "cpu": 1, "memory": 1},
      {"name": "c", "cpu": 1, "memory": 1}, {"name": "d", "cpu": 1, "memory": 1, "gpus": -2, "gpu_model": "T4"}]})") ==
        "nodes[3].gpus: expected a non-negative integer, got -2");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": -1, "memory": 1}]})") ==
        "nodes[0].cpu: expected a non-negative quantity, got -1");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": "-1", "memory": 1}]})") ==
        "nodes[0].cpu: expected a non-negative quantity (got \"-1\")");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "memory": 1}]})") == "nodes[0].cpu: missing");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": "12Qi"}]})") ==
        "nodes[0].memory: unknown quantity suffix (got \"12Qi\")");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpus": 1, "gpu_model": "Z9000"}]})") ==
        "nodes[0].gpu_model: unknown GPU model \"Z9000\" (define it in gpu_models)");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1}, {"name": "a", "cpu": 1, "memory": 1}]})") ==
        "nodes[1].name: duplicate node name \"a\"");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpu": 2}]})").rfind("nodes[0].gpu: unknown field", 0) == 0);
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpus": 2}]})") ==
        "nodes[0].gpu_model: missing (the node has 2 GPUs)");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "cpu_used": 2}]})") ==
        "nodes[0].cpu_used: 2000m exceeds the node's cpu 1000m");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpu_model": "T4", "gpus": [{"used_milli": 1500}]}]})") ==
        "nodes[0].gpus[0].used_milli: expected a share in 0..1000, got 1500");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 99999999999999999999, "memory": 1}]})").find("nodes[0].cpu") == 0);
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 9223372036854775807, "memory": 1}]})") ==
        "nodes[0].cpu: quantity out of range, got 9223372036854775807");
  CHECK(cluster_error(R"({"nodes": {}})") == "nodes: expected an array, got {}");
  CHECK(cluster_error(R"({"nodes": [)").rfind("cluster.json: malformed JSON", 0) == 0);
  CHECK(cluster_error(R"({"gpu_models": [{"name": "T4"}], "nodes": []})") == "gpu_models[0]: gpu model T4: name already defined");
  CHECK(cluster_error(R"({"nodes": [{"name": "", "cpu": 1, "memory": 1}]})") == "nodes[0].name: must not be empty");
  CHECK(cluster_error(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "labels": {"k": 3}}]})") ==
        "nodes[0].labels.k: expected a string, got 3");
}

TEST_CASE("jobs JSON: groups, single-group shorthand, shares, constraints") {
  auto r = io::read_jobs_json(R"({"jobs": [
    {"name": "train", "queue": "q", "priority": 5, "groups": [
      {"name": "w", "replicas": 4, "min_replicas": 2, "cpu": "8", "memory": "64Gi", "gpus": 8,
       "gpu_models": ["H100-80GB"], "node_selector": {"rack": "r1"}}]},
    {"name": "nb", "cpu": 2, "gpu_milli": "500m"},
    {"name": "half", "gpu_milli": 0.5}
  ]})");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  REQUIRE(r->jobs.size() == 3);
  const Job& train = r->jobs[0];
  CHECK(train.job_priority == 5);
  CHECK(train.groups[0].replicas == 4);
  CHECK(train.groups[0].min_replicas == 2);
  CHECK(train.groups[0].shape == TaskShape{8000, 64 * kGiB, 8, 1000, 0});
  CHECK(train.groups[0].allowed_models == std::vector<std::string>{"H100-80GB"});
  CHECK(r->jobs[1].groups[0].shape == TaskShape{2000, 0, 1, 500, 0});
  CHECK(r->jobs[2].groups[0].shape.gpu_milli == 500);
  // Only "train" gave a priority itself (the fairness tool applies queue default classes to the others).
  CHECK(r->explicit_priority == std::vector<bool>{true, false, false});
  // A bare array works too.
  CHECK(io::read_jobs_json(R"([{"name": "x"}])").ok());
}

TEST_CASE("jobs JSON: bad input names the field and the value") {
  CHECK(jobs_error(R"({"jobs": [{"name": "a"}, {"name": "a"}]})") == "jobs[1].name: duplicate job name \"a\"");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "gpus": -1}]})") == "jobs[0].gpus: expected a non-negative integer, got -1");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "gpus": 2, "gpu_milli": 500}]})") ==
        "jobs[0].gpu_milli: a task of 2 GPUs takes whole GPUs; a share below 1000 needs gpus = 1, got 500");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "gpu_milli": 0}]})") ==
        "jobs[0].gpu_milli: expected a share in 1..1000 (1000 = a whole GPU), got 0");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "replicas": 2, "min_replicas": 3}]})") ==
        "jobs[0].min_replicas: 3 exceeds replicas 2");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "groups": []}]})").rfind("jobs[0].groups: expected a non-empty array", 0) == 0);
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "groups": [{"cpus": 1}]}]})") == "jobs[0].groups[0].cpus: unknown field");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "groups": [{"name": "g"}, {"name": "g"}]}]})") ==
        "jobs[0].groups[1].name: duplicate group name \"g\"");
  CHECK(jobs_error(R"({"jobs": [{"cpu": 1}]})") == "jobs[0].name: missing");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "priority": 1.5}]})") == "jobs[0].priority: expected an integer, got 1.5");
  CHECK(jobs_error(R"({"jobs": [{"name": "a", "gpu_models": "T4"}]})") ==
        "jobs[0].gpu_models: expected an array of strings, got \"T4\"");
  CHECK(jobs_error(R"(nope)").rfind("jobs.json: malformed JSON", 0) == 0);
}

TEST_CASE("cluster JSON: a node's nvidia-smi topo -m text sets its interconnect in the one state") {
  // A PCIe box of 4 GPUs on two sockets: the topo text says GPU0-GPU1 share a PCIe switch (PIX) and
  // the two pairs meet across sockets (SYS); without it, the model's known default would apply.
  const std::string topo =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tPIX\tSYS\tSYS\t0-15\t0\n"
      "GPU1\tPIX\t X \tSYS\tSYS\t0-15\t0\n"
      "GPU2\tSYS\tSYS\t X \tPIX\t16-31\t1\n"
      "GPU3\tSYS\tSYS\tPIX\t X \t16-31\t1\n";
  nlohmann::json doc = {{"nodes",
                         {{{"name", "pcie"}, {"cpu", 32}, {"memory", "256Gi"}, {"gpus", 4}, {"gpu_model", "A100-80GB"},
                           {"nvidia_smi_topo", topo}},
                          {{"name", "plain"}, {"cpu", 32}, {"memory", "256Gi"}, {"gpus", 4}, {"gpu_model", "A100-80GB"}}}}};
  auto r = io::read_cluster_json(doc.dump(), "cluster.json");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  auto state = ClusterState::build(r->cluster, r->registry);
  REQUIRE_MESSAGE(state.ok(), (state.ok() ? "" : state.error().message));
  const NodeInterconnect* given = state->node_interconnect(0);
  REQUIRE(given != nullptr);
  CHECK(given->link(0, 1).cls == PairClass::kPix);
  CHECK(given->link(0, 2).cls == PairClass::kSys);
  CHECK(given->devices[2].numa_node == 1);
  const NodeInterconnect* known = state->node_interconnect(1);
  REQUIRE(known != nullptr);
  CHECK_FALSE(*known == *given);  // the other node keeps its model's default
  // A state rebuilt from its own view keeps both.
  auto again = ClusterState::build(ClusterStateView(*state), state->registry());
  REQUIRE(again.ok());
  CHECK(*again->node_interconnect(0) == *given);
  CHECK(*again->node_interconnect(1) == *known);

  // The lines as an array read the same.
  nlohmann::json lines = nlohmann::json::array();
  for (std::size_t at = 0, nl; (nl = topo.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(topo.substr(at, nl - at));
  doc["nodes"][0]["nvidia_smi_topo"] = lines;
  auto from_lines = io::read_cluster_json(doc.dump(), "cluster.json");
  REQUIRE(from_lines.ok());
  CHECK(from_lines->cluster.nodes()[0].interconnect == r->cluster.nodes()[0].interconnect);

  // Bad input names the field: not text, a matrix the reader refuses, one that does not fit the node.
  doc["nodes"][0]["nvidia_smi_topo"] = 3;
  CHECK(cluster_error(doc.dump()).rfind("nodes[0].nvidia_smi_topo: expected the text of `nvidia-smi topo -m`", 0) == 0);
  doc["nodes"][0]["nvidia_smi_topo"] = "no header here";
  CHECK(cluster_error(doc.dump()).rfind("nodes[0].nvidia_smi_topo: ", 0) == 0);
  doc["nodes"][0]["nvidia_smi_topo"] = topo;
  doc["nodes"][0]["gpus"] = 8;
  auto read = io::read_cluster_json(doc.dump(), "cluster.json");
  REQUIRE(read.ok());
  auto refused = ClusterState::build(read->cluster, read->registry);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().field == "nodes[0].interconnect.devices");
  CHECK(refused.error().message == "nodes[0] (pcie).interconnect.devices: 4 GPUs listed first, the node has 8");
  // add_node checks it too, and a refused add changes nothing.
  doc["nodes"][0]["name"] = "pcie-2";
  auto renamed = io::read_cluster_json(doc.dump(), "cluster.json");
  REQUIRE(renamed.ok());
  ClusterState s = std::move(*again);
  const std::size_t before = s.node_count();
  const std::uint64_t generation = s.generation();
  auto added = s.add_node(renamed->cluster, 0);
  REQUIRE_FALSE(added.ok());
  CHECK(added.error().message == "nodes[0] (pcie-2).interconnect.devices: 4 GPUs listed first, the node has 8");
  CHECK(s.node_count() == before);
  CHECK(s.generation() == generation);
}

TEST_CASE("cluster JSON: the shipped fixture with a node's topo lines builds, that node PCIe-only") {
  std::ifstream in(std::string(GPUSCHED_SOURCE_DIR) + "/tests/fixtures/topology/cluster_nvidia_smi_topo.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = io::read_cluster_json(text, "cluster_nvidia_smi_topo.json");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  auto state = ClusterState::build(r->cluster, r->registry);
  REQUIRE_MESSAGE(state.ok(), (state.ok() ? "" : state.error().message));
  const NodeInterconnect* pcie = state->node_interconnect(0);
  REQUIRE(pcie != nullptr);
  CHECK(pcie->gpu_count() == 8);
  CHECK(pcie->device_count() == 10);  // and two NICs
  CHECK(pcie->link(0, 1).cls == PairClass::kPix);
  CHECK(pcie->link(0, 4).cls == PairClass::kSys);
  REQUIRE(state->node_interconnect(1) != nullptr);
  CHECK(state->node_interconnect(1)->link(0, 1).cls == PairClass::kNvLink);  // H100's known NVSwitch default
}
