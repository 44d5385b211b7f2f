// `gpusched place --k8s` and `gpusched fairshare --k8s` end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_util.hpp"

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;

const std::string kK8s = std::string(GPUSCHED_FIXTURES_DIR) + "/k8s/";
const std::string kExampleDir = std::string(GPUSCHED_SOURCE_DIR) + "/examples/";

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
  CHECK(r.out.find("spec.preemption.reclaimWithinCohort") == std::string::npos);  // followed, not reported
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
  // Options of --k8s alone were ignored without it.
  for (const char* cmd : {"place --cluster x.json --jobs y.json --scheduler-name foo", "place --cluster x.json --jobs y.json --topology-level rack",
                          "fairshare --cluster x.json --jobs y.json --queues q.json --scheduler-name foo"}) {
    const Run alone = run_tool(cmd, true);
    CHECK(alone.status == 2);
    CHECK(alone.out.find("requires --k8s") != std::string::npos);
  }
  const Run no_queues = run_tool("fairshare --k8s " + kK8s + "nodes.yaml", true);
  CHECK(no_queues.status == 2);
  CHECK(no_queues.out.find("no queue objects") != std::string::npos);
}

TEST_CASE("cycle --k8s: bound pods are running jobs, pending pods start") {
  // running-train holds 4 GPUs of gpu-a100-0 (reserved by the cycle, evictable); finetune (6 GPUs,
  // priority 1000) fits gpu-a100-1 without evicting anyone.
  const Run r = run_tool("cycle --k8s " + kK8s + "nodes.yaml " + kK8s + "pods.yaml --now 1714560000 --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  bool finetune = false;
  for (const auto& s : out["starts"]) finetune = finetune || s["job"] == "team-a/finetune";
  CHECK(finetune);
  CHECK(out["evictions"].empty());
  const Run both = run_tool("cycle --k8s " + kK8s + "nodes.yaml --cluster x.json --now 0", true);
  CHECK(both.status == 2);
}

namespace {

// `bound` pods bound to mig-single-0 (A100-40GB, MIG single strategy 1g.5gb: 14 devices on two GPUs),
// each asking nvidia.com/gpu: 1 (one MIG device there), and one pending pod asking the same through
// the product's nodeSelector.
std::string single_strategy_pods(int bound) {
  std::string out;
  for (int i = 0; i < bound; ++i)
    out += "apiVersion: v1\nkind: Pod\nmetadata: {name: s" + std::to_string(i) +
           ", namespace: team-b}\nspec:\n  nodeName: mig-single-0\n  containers:\n  - name: c\n"
           "    resources: {limits: {nvidia.com/gpu: \"1\"}}\nstatus: {phase: Running}\n---\n";
  out += "apiVersion: v1\nkind: Pod\nmetadata: {name: wait, namespace: team-b}\nspec:\n"
         "  nodeSelector: {nvidia.com/gpu.product: A100-SXM4-40GB-MIG-1g.5gb}\n  containers:\n  - name: c\n"
         "    resources: {limits: {nvidia.com/gpu: \"1\"}}\nstatus: {phase: Pending}\n";
  return out;
}

}  // namespace

TEST_CASE("cycle --k8s and place --k8s: bound MIG pods hold their devices") {
  // Mixed strategy: infer-a and infer-b hold the two 3g.20gb devices the layout puts on GPU 0
  // (slices 0 and 4); GPU 1 holds the two 1g.5gb devices at slices 0 and 1. The node advertises no
  // third 3g.20gb device, and Kubernetes binds only advertised devices: the pending 3g.20gb pod
  // waits ("no idle MIG instance"). A new instance (GPU 1 at slice 4, the only 3g start left free)
  // is a re-partition plan, printed beside the bindings, never a binding.
  std::string mixed;
  for (const char* name : {"infer-a", "infer-b"})
    mixed += std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: ") + name +
             ", namespace: team-b}\nspec:\n  nodeName: mig-mixed-0\n  containers:\n  - name: c\n"
             "    resources: {limits: {nvidia.com/mig-3g.20gb: \"1\"}}\nstatus: {phase: Running}\n---\n";
  mixed += "apiVersion: v1\nkind: Pod\nmetadata: {name: infer-c, namespace: team-b}\nspec:\n  containers:\n"
           "  - name: c\n    resources: {limits: {nvidia.com/mig-3g.20gb: \"1\"}}\nstatus: {phase: Pending}\n";
  const std::string mixed_file = temp_file("mig-mixed-pods.yaml", mixed);
  const Run r = run_tool("cycle --k8s " + kK8s + "nodes.yaml " + mixed_file + " --now 1714560000 --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  CHECK(out["starts"].empty());
  REQUIRE(out.contains("repartition"));  // the cycle prints the same plan for its waiting MIG jobs
  CHECK(out["repartition"]["gpus"][0]["create"] == nlohmann::json::parse(R"([{"profile": "3g.20gb", "start": 4}])"));
  const Run cycle_table = run_tool("cycle --k8s " + kK8s + "nodes.yaml " + mixed_file + " --now 1714560000");
  CHECK(cycle_table.out.find("mig-mixed-0 GPU 1: destroy -; create 3g.20gb@4") != std::string::npos);
  const Run placed = run_tool("place --k8s " + kK8s + "nodes.yaml " + mixed_file + " --format json");
  REQUIRE(placed.status == 0);
  const auto p = nlohmann::json::parse(placed.out);
  CHECK(p["bindings"].empty());
  REQUIRE(p["pending"].size() == 1);
  CHECK(p["pending"][0]["verdict"] == "not now");
  CHECK(p["pending"][0]["message"].get<std::string>().find("no idle MIG instance") != std::string::npos);
  REQUIRE(p["repartition"]["gpus"].size() == 1);
  const auto& change = p["repartition"]["gpus"][0];
  CHECK(change["node"] == "mig-mixed-0");
  CHECK(change["gpu"] == 1);
  CHECK(change["destroy"].empty());
  CHECK(change["create"] == nlohmann::json::parse(R"([{"profile": "3g.20gb", "start": 4}])"));
  CHECK(p["repartition"]["served"] == 1);
  const Run table = run_tool("place --k8s " + kK8s + "nodes.yaml " + mixed_file);
  CHECK(table.out.find("re-partition plan (not applied)") != std::string::npos);
  CHECK(table.out.find("mig-mixed-0 GPU 1: destroy -; create 3g.20gb@4") != std::string::npos);

  // A mixed-strategy A100 node advertising two 1g.5gb devices binds two of four 1g.5gb pods, never
  // four (the other two wait for the MIG manager); the plan serves them with new instances.
  std::string four =
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: a100-mixed\n  labels: {nvidia.com/mig.strategy: mixed, "
      "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.count: \"1\"}\nstatus:\n  capacity: {cpu: \"32\", "
      "memory: 128Gi, nvidia.com/mig-1g.5gb: \"3\"}\n  allocatable: {cpu: \"32\", memory: 128Gi, nvidia.com/mig-1g.5gb: \"2\"}\n---\n";
  for (int i = 0; i < 4; ++i)
    four += "apiVersion: v1\nkind: Pod\nmetadata: {name: small-" + std::to_string(i) +
            ", namespace: team-b}\nspec:\n  containers:\n  - name: c\n"
            "    resources: {limits: {nvidia.com/mig-1g.5gb: \"1\"}}\nstatus: {phase: Pending}\n---\n";
  const Run small = run_tool("place --k8s " + temp_file("mig-four.yaml", four) + " --format json");
  REQUIRE(small.status == 0);
  const auto s4 = nlohmann::json::parse(small.out);
  REQUIRE(s4["bindings"].size() == 2);
  for (const auto& b : s4["bindings"]) {
    CHECK(b["node"] == "a100-mixed");
    CHECK(b["mig"]["profile"] == "1g.5gb");
  }
  CHECK(s4["pending"].size() == 2);
  CHECK(s4["repartition"]["served"] == 2);

  // Single strategy: with all 14 devices bound the pending pod waits, in the cycle and in place;
  // with 13 bound it takes the last one.
  for (const std::string cmd : {"cycle", "place"}) {
    const std::string now = cmd == "cycle" ? " --now 1714560000" : "";
    const Run full = run_tool(cmd + " --k8s " + kK8s + "nodes.yaml " + temp_file("single-14.yaml", single_strategy_pods(14)) +
                              now + " --format json");
    REQUIRE(full.status == 0);
    const auto f = nlohmann::json::parse(full.out);
    CHECK(f[cmd == "cycle" ? "starts" : "bindings"].empty());
    CHECK(f.value("warnings", nlohmann::json::array()).empty());
    const Run room = run_tool(cmd + " --k8s " + kK8s + "nodes.yaml " + temp_file("single-13.yaml", single_strategy_pods(13)) +
                              now + " --format json");
    REQUIRE(room.status == 0);
    const auto s = nlohmann::json::parse(room.out);
    const auto& started = s[cmd == "cycle" ? "starts" : "bindings"];
    REQUIRE(started.size() == 1);
    if (cmd == "cycle") {
      CHECK(started[0]["tasks"][0]["node"] == "mig-single-0");
      CHECK(started[0]["tasks"][0]["mig"]["create"] == false);
    } else {
      CHECK(started[0]["node"] == "mig-single-0");
    }
  }
}

TEST_CASE("every input file: a directory, an empty file, an endless device and a file of no objects are refused") {
  const std::string dir = std::filesystem::path(temp_file("marker", "x")).parent_path().string();
  const std::string nodes = kK8s + "nodes.yaml";
  struct Case {
    std::string args, message;
  };
  const std::string empty = temp_file("empty.yaml", ""), blank = temp_file("blank.json", " \n\t\r\n");
  const std::string comments = temp_file("comments.yaml", "# nothing here\n---\n---\n");
  const std::vector<Case> cases = {
      {"place --k8s " + dir, dir + ": is a directory, expected a file"},
      {"place --k8s " + nodes + " " + empty, empty + ": empty file"},
      {"place --k8s " + nodes + " " + comments, comments + ": no Kubernetes object"},
      {"place --cluster " + dir + " --jobs " + blank, dir + ": is a directory"},
      {"cycle --cluster " + kExampleDir + "cycle/cluster.json --pending " + blank + " --now 0", blank + ": empty file"},
      {"cycle --cluster " + kExampleDir + "cycle/cluster.json --pending " + kExampleDir + "cycle/pending.json --running " + blank + " --now 0",
       blank + ": empty file"},
      {"simulate --trace " + dir + " --nodes 2 --policies fifo --quiet --out " + dir + "/o", dir + ": is a directory"},
      {"simulate --trace " + empty + " --nodes 2 --policies fifo --quiet --out " + dir + "/o", empty + ": empty file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Run r = run_tool(c.args, true);
    CHECK(r.status == 2);
    CHECK(r.out.find(c.message) != std::string::npos);
  }
}

TEST_CASE("messages: a megabyte value is cut, a name's control bytes are escaped, on every reader") {
  const std::string big(1 << 20, 'x');
  const std::string cluster = temp_file("big_model.json", R"({"nodes": [{"name": "n", "cpu": 1, "memory": 1, "gpu_model": ")" + big + R"(", "gpus": 1}]})");
  const std::string jobs = temp_file("one_job.json", R"({"jobs": [{"name": "j", "cpu": 1, "memory": 1}]})");
  const Run r = run_tool("place --cluster " + cluster + " --jobs " + jobs, true);
  CHECK(r.status == 2);
  CHECK(r.out.size() < 400);
  CHECK(r.out.find("nodes[0].gpu_model") != std::string::npos);
  const std::string nul = temp_file("nul.yaml", std::string("kind: Node\nmetadata: {name: \"a\\0b\\e\\nc\"}\nstatus: {allocatable: {cpu: 1}}\n"));
  const Run n = run_tool("place --k8s " + nul, true);
  CHECK(n.status == 2);
  CHECK(n.out.find("Node a\\x00b\\x1b\\x0ac") != std::string::npos);
  CHECK(std::count(n.out.begin(), n.out.end(), '\n') == 1);
}

TEST_CASE("fairshare --k8s: quotas that add up past int64 are no limit, not a wrapped negative") {
  // Two flavors of INT64_MAX bytes of memory each: their sum wrapped to -2 ("expected a
  // non-negative amount, got -2", with internal paths).
  const std::string queues = temp_file("kq_ovf.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f1}
spec: {nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f2}
spec: {nodeLabels: {x: y}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: f1
      resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: "9223372036854775807"}, {name: nvidia.com/gpu, nominalQuota: 8}]
    - name: f2
      resources: [{name: cpu, nominalQuota: 64}, {name: memory, nominalQuota: "9223372036854775807"}, {name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: d}
spec: {clusterQueue: cq}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: d, labels: {kueue.x-k8s.io/queue-name: lq}}
spec: {containers: [{name: a, resources: {requests: {memory: 1Gi, cpu: "1"}, limits: {nvidia.com/gpu: 1}}}]}
)");
  const Run r = run_tool("fairshare --k8s " + kK8s + "nodes.yaml " + queues + " --format json", true);
  CHECK(r.status == 0);
  CHECK(r.out.find("got -2") == std::string::npos);
}
