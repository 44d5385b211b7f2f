// `gpusched place --k8s` and `gpusched fairshare --k8s` end to end.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_util.hpp"

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;

const std::string kK8s = std::string(GPUSCHED_FIXTURES_DIR) + "/k8s/";

}  // namespace

TEST_CASE("place --k8s: nodes and pods in, bindings out (JSON and table)") {
  const Run r = run_tool("place --k8s " + kK8s + "nodes.yaml " + kK8s + "pods.yaml --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  REQUIRE(out["bindings"].size() == 4);  // tests/io/k8s_roundtrip_test.cpp works the decisions out
  CHECK(out["bindings"][0]["pod"] == "team-a/finetune");
  CHECK(out["bindings"][0]["node"] == "gpu-a100-1");
  CHECK(out["pending"][0]["pod"] == "team-a/big");

  const Run t = run_tool("place --k8s " + kK8s + "nodes.yaml " + kK8s + "pods.yaml");
  REQUIRE(t.status == 0);
  CHECK(t.out.find("team-b/infer                             mig-mixed-0              MIG 3g.20gb on GPU 0") != std::string::npos);
  CHECK(t.out.find("4 bound, 1 pending") != std::string::npos);
}

TEST_CASE("place --k8s: topology levels from the command line, warnings on stderr") {
  const Run r = run_tool("place --k8s " + kK8s + "nodes.yaml " + kK8s + "kueue.yaml --topology-level example.com/rack", true);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("gpusched: warning: ") != std::string::npos);
  CHECK(r.out.find("spec.preemption.reclaimWithinCohort") != std::string::npos);
  CHECK(r.out.find("team-a/tas-0") != std::string::npos);
}

TEST_CASE("fairshare --k8s: Kueue ClusterQueues admit the pods") {
  const Run r = run_tool("fairshare --k8s " + kK8s + "nodes.yaml " + kK8s + "kueue.yaml --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  REQUIRE(out["admitted"].size() == 2);
  CHECK(out["admitted"][0]["job"] == "team-a/tas");
  CHECK(out["admitted"][0]["queue"] == "team-a-cq");
  CHECK(out["admitted"][0]["flavor"] == "A100-80GB");
}

TEST_CASE("--k8s: bad objects exit 2 with one message naming object, field and value") {
  const std::string bad = temp_file("bad-node.yaml", R"(
kind: Node
metadata: {name: n0, labels: {nvidia.com/gpu.product: Quantum-GPU}}
status: {allocatable: {cpu: "8", memory: 8Gi, nvidia.com/gpu: "1"}}
)");
  const Run r = run_tool("place --k8s " + bad, true);
  CHECK(r.status == 2);
  CHECK(r.out.find("Node n0: metadata.labels[\"nvidia.com/gpu.product\"]: unknown GPU model \"Quantum-GPU\"") != std::string::npos);
  const Run both = run_tool("place --k8s " + bad + " --cluster x.json", true);
  CHECK(both.status == 2);
  const Run none = run_tool("place", true);
  CHECK(none.status == 2);
  const Run no_queues = run_tool("fairshare --k8s " + kK8s + "nodes.yaml", true);
  CHECK(no_queues.status == 2);
  CHECK(no_queues.out.find("no queue objects") != std::string::npos);
}
