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
  const NodeInterconnect* given = state->topology().interconnect(0);
  REQUIRE(given != nullptr);
  CHECK(given->link(0, 1).cls == PairClass::kPix);
  CHECK(given->link(0, 2).cls == PairClass::kSys);
  CHECK(given->devices[2].numa_node == 1);
  const NodeInterconnect* known = state->topology().interconnect(1);
  REQUIRE(known != nullptr);
  CHECK_FALSE(*known == *given);  // the other node keeps its model's default
  // A state rebuilt from its own view keeps both.
  auto again = ClusterState::build(ClusterStateView(*state), state->registry());
  REQUIRE(again.ok());
  CHECK(*again->topology().interconnect(0) == *given);
  CHECK(*again->topology().interconnect(1) == *known);

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
  const NodeInterconnect* pcie = state->topology().interconnect(0);
  REQUIRE(pcie != nullptr);
  CHECK(pcie->gpu_count() == 8);
  CHECK(pcie->device_count() == 10);  // and two NICs
  CHECK(pcie->link(0, 1).cls == PairClass::kPix);
  CHECK(pcie->link(0, 4).cls == PairClass::kSys);
  REQUIRE(state->topology().interconnect(1) != nullptr);
  CHECK(state->topology().interconnect(1)->link(0, 1).cls == PairClass::kNvLink);  // H100's known NVSwitch default
}

// --- the writer: write_cluster_json -------------------------------------------------------------

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "gpusched/io/nvidia_smi_topo.hpp"

namespace cluster_writer_test {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(GPUSCHED_SOURCE_DIR) + "/tests/fixtures/topology/" + name);
  REQUIRE_MESSAGE(in.good(), name);
  return {(std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (std::size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) out.push_back(text.substr(at, nl - at));
  if (at < text.size()) out.push_back(text.substr(at));
  return out;
}

ClusterState state_of(const std::string& text) {
  auto doc = io::read_cluster_json(text, "written.json");
  REQUIRE_MESSAGE(doc.ok(), (doc.ok() ? "" : doc.error().message), "\n", text);
  auto state = ClusterState::build(doc->cluster, doc->registry);
  REQUIRE_MESSAGE(state.ok(), (state.ok() ? "" : state.error().message));
  return std::move(*state);
}

std::vector<std::pair<std::string, std::string>> sorted_labels(const ClusterStateView& v, std::size_t i) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t l = 0; l < v.label_count(i); ++l) out.emplace_back(v.label(i, l).first, v.label(i, l).second);
  std::sort(out.begin(), out.end());
  return out;
}

// Every fact the cluster format carries, node by node (live nodes, in order): the two states answer
// alike. Interconnects compare with their options, which the format does not carry: a state under
// test keeps them at their defaults, or compares after a first round trip.
void check_same_state(const ClusterState& a, const ClusterState& b) {
  const ClusterStateView va(a), vb(b);
  REQUIRE(va.node_count() == vb.node_count());
  for (std::size_t i = 0; i < va.node_count(); ++i) {
    const NodeId na = va.node_id(i), nb = vb.node_id(i);
    CAPTURE(a.node_name(na));
    CHECK(a.node_name(na) == b.node_name(nb));
    CHECK(a.cpu_capacity(na) == b.cpu_capacity(nb));
    CHECK(a.cpu_free(na) == b.cpu_free(nb));
    CHECK(a.memory_capacity(na) == b.memory_capacity(nb));
    CHECK(a.memory_free(na) == b.memory_free(nb));
    CHECK(a.schedulable(na) == b.schedulable(nb));
    CHECK(a.healthy(na) == b.healthy(nb));
    CHECK(sorted_labels(va, i) == sorted_labels(vb, i));
    REQUIRE(a.gpu_count(na) == b.gpu_count(nb));
    for (GpuIndex g = 0; g < a.gpu_count(na); ++g) {
      CAPTURE(g);
      CHECK(a.registry().model(a.gpu_model(na, g)).name == b.registry().model(b.gpu_model(nb, g)).name);
      CHECK(a.shares().free_milli(na, g) == b.shares().free_milli(nb, g));
      CHECK(a.shares().free_milli_if_healthy(na, g) == b.shares().free_milli_if_healthy(nb, g));
      CHECK(a.shares().free_memory(na, g) == b.shares().free_memory(nb, g));
      CHECK(a.shares().free_memory_if_healthy(na, g) == b.shares().free_memory_if_healthy(nb, g));
      CHECK(a.shares().memory_capacity(na, g) == b.shares().memory_capacity(nb, g));
      CHECK(a.gpu_healthy(na, g) == b.gpu_healthy(nb, g));
      CHECK(a.mig().mode(na, g) == b.mig().mode(nb, g));
      // Profile (its name in the model's table, and ID), start and busy flag of every instance, read
      // through the view rather than the writer under test.
      REQUIRE(va.mig_instance_count(i, g) == vb.mig_instance_count(i, g));
      for (std::size_t k = 0; k < va.mig_instance_count(i, g); ++k) {
        const MigInstanceInfo x = va.mig_instance(i, g, k), y = vb.mig_instance(i, g, k);
        CHECK(x.profile_id == y.profile_id);
        CHECK(x.start == y.start);
        CHECK(x.busy == y.busy);
        const mig::MigGpuSpec& sa = a.mig().table().spec_of(a.mig().gpu(na, g));
        const mig::MigGpuSpec& sb = b.mig().table().spec_of(b.mig().gpu(nb, g));
        CHECK(sa.profiles[static_cast<std::size_t>(sa.find_id(x.profile_id))].name ==
              sb.profiles[static_cast<std::size_t>(sb.find_id(y.profile_id))].name);
      }
    }
    const NodeInterconnect* ia = a.topology().interconnect(na);
    const NodeInterconnect* ib = b.topology().interconnect(nb);
    REQUIRE((ia == nullptr) == (ib == nullptr));
    if (ia) CHECK(*ia == *ib);
  }
}

// Writes, reads back, checks the states alike and that the rebuilt state writes the same text.
ClusterState round_trip(const ClusterState& state) {
  const std::string text = io::write_cluster_json(state, 1);
  REQUIRE_FALSE(text.empty());
  ClusterState back = state_of(text);
  check_same_state(state, back);
  CHECK(io::write_cluster_json(back, 1) == text);
  return back;
}

}  // namespace cluster_writer_test

TEST_CASE("cluster JSON writer: a hand-written cluster reads back to the same state and the same text") {
  using namespace cluster_writer_test;
  nlohmann::json doc = nlohmann::json::parse(R"({
    "gpu_models": [{"name": "MI300X", "aliases": ["AMD-MI300X"], "memory": "192Gi", "mig": false,
                    "source": "AMD data sheet"}],
    "nodes": [
      {"name": "mixed", "cpu": "96", "memory": "1Ti", "cpu_used": "1500m", "memory_used": "16Gi", "gpu_model": "T4",
       "gpus": [{"used_milli": 500, "used_memory": "4Gi"}, {"model": "AMD-MI300X", "used_milli": 1000},
                {"used_milli": 250, "healthy": false}, {}],
       "labels": {"zone": "a", "rack": "r1"}},
      {"name": "cordoned", "cpu": 8, "memory": "64Gi", "gpus": 2, "gpu_model": "L4", "schedulable": false},
      {"name": "failed", "cpu": "2500m", "memory": 1000, "healthy": false, "labels": {"pool": "cpu"}},
      {"name": "mig", "cpu": 16, "memory": "128Gi", "gpus": [
        {"model": "A100-SXM4-40GB", "mig": {"instances": [{"profile": "3g.20gb", "start": 0, "busy": true},
                                                          {"profile_id": 19, "start": 4}]}},
        {"model": "A100", "used_milli": 300}]},
      {"name": "hgx", "cpu": 224, "memory": "2Ti", "gpus": 8, "gpu_model": "H100-80GB"},
      {"name": "dgx1", "cpu": 80, "memory": "512Gi", "gpus": 8, "gpu_model": "V100M32"},
      {"name": "h100-default", "cpu": 224, "memory": "2Ti", "gpus": 8, "gpu_model": "H100"}
    ]})");
  doc["nodes"][4]["nvidia_smi_topo"] = fixture("hgx_h100.txt");
  doc["nodes"][5]["nvidia_smi_topo"] = lines_of(fixture("dgx1_v100.txt"));
  const ClusterState state = state_of(doc.dump());
  REQUIRE(state.topology().interconnect(4) != nullptr);
  REQUIRE_FALSE(state.topology().interconnect_is_default(4));
  REQUIRE_FALSE(state.topology().interconnect_is_default(5));
  REQUIRE(state.topology().interconnect_is_default(6));

  const std::string text = io::write_cluster_json(state, 1);
  const ClusterState back = round_trip(state);
  CHECK(back.registry().find("amd-mi300x"));

  // The shortest exact forms: whole cores or milli-CPU strings, the plain count for idle GPUs of one
  // model, the custom model only, no default interconnect, no used amounts beside "mig".
  const nlohmann::json written = nlohmann::json::parse(text);
  CHECK(written["gpu_models"] == nlohmann::json::parse(R"([{"name": "MI300X", "aliases": ["AMD-MI300X"],
      "memory": 206158430208, "mig": false, "source": "AMD data sheet"}])"));
  const nlohmann::json& nodes = written["nodes"];
  CHECK(nodes[0]["cpu"] == 96);
  CHECK(nodes[0]["cpu_used"] == "1500m");
  CHECK(nodes[0]["memory_used"] == 16 * kGiB);
  CHECK(nodes[0]["gpus"] == nlohmann::json::parse(R"([{"used_milli": 500, "used_memory": 4294967296},
      {"model": "MI300X", "used_milli": 1000}, {"used_milli": 250, "healthy": false}, {}])"));
  CHECK(nodes[0]["labels"] == nlohmann::json{{"rack", "r1"}, {"zone", "a"}});
  CHECK(nodes[1]["gpus"] == 2);
  CHECK(nodes[1]["schedulable"] == false);
  CHECK(nodes[2]["cpu"] == "2500m");
  CHECK(nodes[2]["healthy"] == false);
  CHECK_FALSE(nodes[2].contains("gpus"));
  CHECK_FALSE(nodes[2].contains("cpu_used"));
  CHECK(nodes[3]["gpus"] == nlohmann::json::parse(R"([
      {"mig": {"instances": [{"profile": "3g.20gb", "profile_id": 9, "start": 0, "busy": true},
                             {"profile": "1g.5gb", "profile_id": 19, "start": 4, "busy": false}]}},
      {"used_milli": 300}])"));
  CHECK(nodes[4].contains("nvidia_smi_topo"));
  CHECK(nodes[5].contains("nvidia_smi_topo"));
  CHECK_FALSE(nodes[6].contains("nvidia_smi_topo"));
  // The keys in the reader's documented order, name first, for people reading the file.
  CHECK(text.find("\"name\": \"mixed\"") < text.find("\"cpu\": 96"));
}

TEST_CASE("cluster JSON writer: a state after reservations and events reads back with the same free amounts") {
  using namespace cluster_writer_test;
  ClusterState s = state_of(R"({"nodes": [
      {"name": "a", "cpu": 32, "memory": "256Gi", "gpus": 4, "gpu_model": "A100-SXM4-40GB", "labels": {"rack": "r1"}},
      {"name": "b", "cpu": 32, "memory": "256Gi", "gpus": 4, "gpu_model": "T4"},
      {"name": "c", "cpu": 16, "memory": "64Gi", "gpus": 2, "gpu_model": "L4"},
      {"name": "d", "cpu": 16, "memory": "64Gi", "gpus": 8, "gpu_model": "H100-80GB"},
      {"name": "e", "cpu": 16, "memory": "64Gi", "gpus": 8, "gpu_model": "H100-80GB"}]})");
  // A shared task on b's GPU 1 and a two-GPU task on a.
  TaskShape shared{1500, 4 * kGiB, 1, 300, 2 * kGiB};
  const TaskRequest shared_request = s.compile(shared).value();
  REQUIRE(s.reserve(shared_request, TaskAssignment{1, {1}, 300, 2 * kGiB, 1500, 4 * kGiB}).ok());
  TaskShape two{4000, 16 * kGiB, 2, kMilliPerGpu, 0};
  const TaskRequest two_request = s.compile(two).value();
  REQUIRE(s.reserve(two_request, TaskAssignment{0, {0, 2}, kMilliPerGpu, 0, 4000, 16 * kGiB}).ok());
  s.commit();
  // Events: cordon, failure, an unhealthy GPU with work on it, labels, MIG, a topology, a removal.
  REQUIRE(s.cordon(2).ok());
  REQUIRE(s.fail_node(0).ok());
  REQUIRE(s.set_gpu_health(1, 1, false).ok());
  REQUIRE(s.set_gpu_health(1, 3, false).ok());
  REQUIRE(s.set_label(1, "rack", "r2").ok());
  REQUIRE(s.set_mig_mode(0, 3, true).ok());
  const bool busy[] = {true, false};
  REQUIRE(s.apply_mig_layout(0, 3, std::vector<mig::MigInstance>{{9, 0}, {19, 4}}, busy).ok());
  REQUIRE(s.set_node_interconnect(4, io::read_nvidia_smi_interconnect(fixture("hgx_h100.txt")).value()).ok());
  REQUIRE(s.remove_node(3).ok());

  const ClusterState back = round_trip(s);
  REQUIRE(back.live_node_count() == 4);
  CHECK(back.find_node("d") == kNoNode);  // removed nodes are left out
  CHECK(back.cpu_free(0) == 28000);
  CHECK(back.shares().free_milli_if_healthy(1, 1) == 700);
  CHECK(back.shares().free_milli(1, 1) == 0);  // unhealthy reads 0, and recovers to 700
  CHECK(back.shares().free_memory_if_healthy(1, 1) == 14 * kGiB);
}

TEST_CASE("cluster JSON writer: random clusters round trip (property, seeded)") {
  using namespace cluster_writer_test;
  std::mt19937_64 rng(20240611);
  auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  const std::vector<std::string> models = {"T4", "A100-SXM4-40GB", "H100-80GB", "L4", "V100M32", "Custom-X"};
  const std::vector<std::string> keys = {"rack", "zone", "topology.kubernetes.io/rack", "pool", "a\"b"};
  const std::vector<std::string> values = {"r1", "r2", "", "gpu \\ cpu", "x"};
  const std::vector<std::vector<mig::MigInstance>> layouts = {{}, {{9, 0}}, {{9, 4}}, {{9, 0}, {19, 4}}, {{9, 0}, {9, 4}}};
  const std::vector<std::string> cpu_lists = {"0-31,64-95", "32-63", "0", ""};
  const std::vector<std::string> numa_lists = {"0", "1", "0-1", ""};

  // A matrix of `gpus` GPUs and 0..2 NICs: random symmetric links, affinities and NIC legend names,
  // as nvidia-smi could print them (numa_node derived as the reader derives it).
  auto random_interconnect = [&](std::size_t gpus) {
    NodeInterconnect ic;
    const std::size_t nics = below(3);
    for (std::size_t d = 0; d < gpus + nics; ++d) {
      NodeDevice dev;
      dev.kind = d < gpus ? DeviceKind::kGpu : DeviceKind::kNic;
      dev.name = d < gpus ? "GPU" + std::to_string(d) : "NIC" + std::to_string(d - gpus);
      if (d >= gpus) dev.nic_name = chance(50) ? "mlx5_" + std::to_string(d - gpus) : dev.name;
      dev.cpu_affinity = cpu_lists[below(cpu_lists.size())];
      dev.numa_affinity = numa_lists[below(numa_lists.size())];
      dev.numa_node = dev.numa_affinity == "0" ? 0 : dev.numa_affinity == "1" ? 1 : -1;
      dev.gpu_numa_id = chance(30) ? static_cast<std::int32_t>(below(16)) : -1;
      ic.devices.push_back(dev);
    }
    const std::size_t n = ic.devices.size();
    ic.matrix.assign(n * n, PairLink{});
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a; b < n; ++b) {
        PairLink l{PairClass::kSelf, 0};
        if (a != b) {
          l.cls = static_cast<PairClass>(1 + below(6));
          if (l.cls == PairClass::kNvLink) l.nvlinks = static_cast<std::uint8_t>(1 + below(18));
        }
        ic.matrix[a * n + b] = ic.matrix[b * n + a] = l;
      }
    return ic;
  };

  for (int instance = 0; instance < 200; ++instance) {
    CAPTURE(instance);
    GpuModelRegistry registry = GpuModelRegistry::builtin();
    if (chance(50)) REQUIRE(registry.add(GpuModel{"Custom-X", {"CX"}, 48 * kGiB, false, "test"}).ok());
    std::vector<NodeSpec> nodes;
    const std::size_t node_count = 1 + below(6);
    for (std::size_t n = 0; n < node_count; ++n) {
      NodeSpec node;
      node.name = "node-" + std::to_string(n) + (chance(20) ? " \"q\\" : "");
      node.cpu = static_cast<MilliCpu>(1 + below(128'000));
      node.cpu_used = chance(50) ? static_cast<MilliCpu>(below(static_cast<std::size_t>(node.cpu) + 1)) : 0;
      node.memory = static_cast<Bytes>(1 + below(std::size_t{1} << 40));
      node.memory_used = chance(50) ? static_cast<Bytes>(below(static_cast<std::size_t>(node.memory) + 1)) : 0;
      auto pick_model = [&] {
        for (;;) {
          const std::string& m = models[below(models.size())];
          if (registry.find(m)) return m;
        }
      };
      const std::string m1 = pick_model(), m2 = chance(30) ? pick_model() : m1;
      const std::size_t gpus = below(9);
      for (std::size_t g = 0; g < gpus; ++g) {
        GpuSpec gpu{chance(50) ? m1 : m2};
        if (chance(40)) gpu.used_milli = static_cast<MilliGpu>(below(1001));
        if (chance(30)) gpu.used_memory = static_cast<Bytes>(below(8 * static_cast<std::size_t>(kGiB)));
        gpu.healthy = !chance(15);
        if (gpu.model == "A100-SXM4-40GB" && chance(30)) {
          gpu.used_milli = 0;
          gpu.used_memory = 0;
          gpu.mig_mode = true;
          for (const mig::MigInstance& inst : layouts[below(layouts.size())])
            gpu.mig_instances.push_back(MigInstanceInfo{inst.profile_id, inst.start, chance(50)});
        }
        node.gpus.push_back(std::move(gpu));
      }
      node.schedulable = !chance(20);
      node.healthy = !chance(15);
      for (std::size_t k = 0; k < keys.size(); ++k)
        if (chance(30)) node.labels.emplace_back(keys[k], values[below(values.size())]);
      std::shuffle(node.labels.begin(), node.labels.end(), rng);
      if (gpus > 0 && chance(30)) node.interconnect = random_interconnect(gpus);
      nodes.push_back(std::move(node));
    }
    const Cluster cluster(std::move(nodes));
    auto built = ClusterState::build(cluster, registry);
    REQUIRE_MESSAGE(built.ok(), (built.ok() ? "" : built.error().message));
    round_trip(*built);
    // The view overload over the caller's own view writes a document that builds to the same state.
    check_same_state(*built, state_of(io::write_cluster_json(cluster, registry)));
  }
}

TEST_CASE("cluster JSON writer: quotes and backslashes survive; control characters are escaped, then refused") {
  using namespace cluster_writer_test;
  GpuModelRegistry registry = GpuModelRegistry::builtin();
  REQUIRE(registry.add(GpuModel{"My\"GPU\\1", {"alias\\\""}, kGiB, false, "lab \"notes\""}).ok());
  NodeSpec node;
  node.name = "a\"b\\c";
  node.cpu = 4000;
  node.memory = kGiB;
  node.gpus = {GpuSpec{"alias\\\""}, GpuSpec{"T4"}};
  node.labels = {{"k\"\\", "v\\\"x"}};
  const Cluster cluster({node});
  const ClusterState state = ClusterState::build(cluster, registry).value();
  const ClusterState back = round_trip(state);
  CHECK(back.node_name(0) == "a\"b\\c");
  CHECK(back.registry().model(back.gpu_model(0, 0)).name == "My\"GPU\\1");
  CHECK(back.labels().key(back.labels().of(0)[0].key) == "k\"\\");
  CHECK(back.labels().value(back.labels().of(0)[0].value) == "v\\\"x");

  // A name with a control character (docs/formats.md, "Every reader": names refuse them) is written
  // as valid JSON, and the reader refuses it naming the field; bytes that are not UTF-8 are replaced.
  NodeSpec control;
  control.name = std::string("a\x01z", 3);
  control.cpu = 1000;
  control.memory = 1;
  Cluster bad({control});
  const std::string text = io::write_cluster_json(bad, registry);
  CHECK(text.find("\\u0001") != std::string::npos);
  CHECK(cluster_error(text).rfind("nodes[0].name: control character 0x01", 0) == 0);
  // 17 nodes of 65,535 GPUs pass a cluster's 2^20 GPUs: refused before the 17th is built.
  std::string wide = R"({"nodes": [)";
  for (int i = 0; i < 17; ++i) {
    if (i > 0) wide += ", ";
    wide += R"({"name": "n)";
    wide += std::to_string(i);
    wide += R"(", "cpu": 1, "memory": 1, "gpu_model": "H100-80GB", "gpus": 65535})";
  }
  wide += "]}";
  CHECK(cluster_error(wide).rfind("nodes[16].gpus: 65535 GPUs after the 1048560 of the nodes before: more than the 1048576", 0) == 0);
  // A label key too (it was accepted with a newline while a value with one was refused).
  const std::string key_nl = R"({"nodes": [{"name": "n", "cpu": 1, "memory": 1, "labels": {"a\nb": "v"}}]})";
  CHECK(cluster_error(key_nl).rfind("nodes[0].labels.\"a\\x0ab\": control character 0x0a", 0) == 0);
  bad.nodes()[0].name = "a\xff" "b";
  const ClusterState odd = state_of(io::write_cluster_json(bad, registry));
  CHECK(odd.node_name(0) == "a\xef\xbf\xbd" "b");
}

TEST_CASE("cluster JSON writer: a node's topo text reads back to the same interconnect; what it cannot say") {
  using namespace cluster_writer_test;
  const NodeInterconnect hgx = io::read_nvidia_smi_interconnect(fixture("hgx_h100.txt")).value();
  const NodeInterconnect dgx1 = io::read_nvidia_smi_interconnect(fixture("dgx1_v100.txt")).value();
  auto node_with = [](const NodeInterconnect& ic, const std::string& model) {
    NodeSpec n;
    n.name = "n";
    n.cpu = 8000;
    n.memory = kGiB;
    n.gpus.assign(ic.gpu_count(), GpuSpec{model});
    n.interconnect = ic;
    return n;
  };
  auto written_topo = [](const Cluster& c) {
    const nlohmann::json doc = nlohmann::json::parse(io::write_cluster_json(c, GpuModelRegistry::builtin()));
    std::string text;
    for (const auto& line : doc["nodes"][0].value("nvidia_smi_topo", nlohmann::json::array())) text += line.get<std::string>() + "\n";
    return text;
  };

  const std::string hgx_text = written_topo(Cluster({node_with(hgx, "H100-80GB")}));
  auto hgx_back = io::read_nvidia_smi_interconnect(hgx_text);
  REQUIRE_MESSAGE(hgx_back.ok(), hgx_text);
  CHECK(*hgx_back == hgx);
  CHECK(hgx_text.find("NIC Legend:") != std::string::npos);  // NIC0..3 are mlx5_0..3
  CHECK(hgx_text.find("GPU NUMA ID") == std::string::npos);  // every value N/A: the column is left out
  const std::string dgx1_text = written_topo(Cluster({node_with(dgx1, "V100M32")}));
  CHECK(io::read_nvidia_smi_interconnect(dgx1_text).value() == dgx1);
  CHECK(dgx1_text.find("NIC Legend:") == std::string::npos);  // its NICs are named mlx5_* in the matrix

  // A name with a blank inside is written tab-separated, which keeps it whole.
  NodeInterconnect spaced = hgx;
  spaced.devices[9].name = "NIC one";
  spaced.devices[9].nic_name = "mlx5 one";
  const std::string spaced_text = written_topo(Cluster({node_with(spaced, "H100-80GB")}));
  CHECK(spaced_text.find('\t') != std::string::npos);
  CHECK(io::read_nvidia_smi_interconnect(spaced_text).value() == spaced);

  // The options are not in the text: they come back as the defaults.
  NodeInterconnect with_options = hgx;
  with_options.options.nvlink_generation = 4;
  const ClusterState from_options = state_of(io::write_cluster_json(Cluster({node_with(with_options, "H100-80GB")}),
                                                                     GpuModelRegistry::builtin()));
  REQUIRE(from_options.topology().interconnect(0) != nullptr);
  CHECK(*from_options.topology().interconnect(0) == hgx);

  // A matrix the text cannot carry (a GPU not named GPU<n> would read as a NIC) is left out rather
  // than written wrong: the document reads and the node gets its model's default.
  NodeInterconnect unnamed = hgx;
  unnamed.devices[0].name = "accelerator-0";
  const Cluster odd({node_with(unnamed, "H100-80GB")});
  CHECK(written_topo(odd).empty());
  const ClusterState from_odd = state_of(io::write_cluster_json(odd, GpuModelRegistry::builtin()));
  CHECK(from_odd.topology().interconnect_is_default(0));
}
