// Round trips: Kubernetes objects -> decisions -> bindings JSON.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "io/k8s/k8s_detail.hpp"
#include "io/k8s_test_util.hpp"

using namespace gpusched;
using k8s_test::k8s_fixture;
using nlohmann::json;

namespace {

json decide_and_bind(const io::k8s::Input& in) {
  auto state = ClusterState::build(in.cluster, in.registry);
  REQUIRE_MESSAGE(state.ok(), (state.ok() ? "" : state.error().message));
  BestFitPolicy policy;
  auto d = io::k8s::decide(in, *state, policy);
  REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.error().message));
  return json::parse(io::k8s::bindings_json(in, *state, d->placements, d->messages));
}

const json* binding(const json& out, const std::string& pod) {
  for (const auto& b : out["bindings"])
    if (b["pod"] == pod) return &b;
  return nullptr;
}

}  // namespace

TEST_CASE("k8s round trip: nodes.yaml + pods.yaml -> best-fit decisions -> bindings") {
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("pods.yaml")});
  REQUIRE(in.jobs.size() == 5);  // finetune, etl, infer, notebook, big (running-train runs, done is done)
  const json out = decide_and_bind(in);
  // finetune (priority 1000, 6 GPUs): gpu-a100-0 has 4 idle (running-train holds 4), gpu-a100-1 8.
  const json* ft = binding(out, "team-a/finetune");
  REQUIRE(ft);
  CHECK((*ft)["node"] == "gpu-a100-1");
  CHECK((*ft)["gpus"].size() == 6);
  // etl: no toleration of the GPU taint; cpu-cordoned and cpu-notready take nothing; best-fit
  // sends a CPU-only pod to the node with the fewest GPUs: cpu-0.
  const json* etl = binding(out, "team-b/etl");
  REQUIRE(etl);
  CHECK((*etl)["node"] == "cpu-0");
  CHECK((*etl)["gpus"].empty());
  // infer: a 3g.20gb device exists only on mig-mixed-0's GPU 0.
  const json* infer = binding(out, "team-b/infer");
  REQUIRE(infer);
  CHECK((*infer)["node"] == "mig-mixed-0");
  CHECK((*infer)["mig"]["profile"] == "3g.20gb");
  CHECK((*infer)["mig"]["gpu"] == 0);
  // notebook: single strategy, a 1g.5gb device on mig-single-0.
  const json* nb = binding(out, "team-b/notebook");
  REQUIRE(nb);
  CHECK((*nb)["node"] == "mig-single-0");
  CHECK((*nb)["mig"]["profile"] == "1g.5gb");
  // big: 8 GPUs outside rack r2; gpu-a100-0 has 4 idle: pending, not now.
  REQUIRE(out["pending"].size() == 1);
  CHECK(out["pending"][0]["pod"] == "team-a/big");
  CHECK(out["pending"][0]["verdict"] == "not now");
  CHECK(out["bindings"].size() == 4);
}

// No GPU is bound twice: per node, the GPU indices of all bindings and of MIG devices are distinct.
void check_no_double_booking(const json& out) {
  std::set<std::pair<std::string, int>> used;
  for (const auto& b : out["bindings"]) {
    if (b.contains("mig")) continue;
    for (const auto& g : b["gpus"]) CHECK_MESSAGE(used.insert({b["node"].get<std::string>(), g.get<int>()}).second, b.dump());
  }
}

TEST_CASE("k8s round trip: gangs are placed whole (Volcano PodGroup and Job)") {
  const std::string high = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n";
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("volcano.yaml"), high});
  const json out = decide_and_bind(in);
  // llm (priority 1000) first: 2 x 4 GPUs on 16 idle, both bound.
  CHECK(binding(out, "team-a/llm-0"));
  CHECK(binding(out, "team-a/llm-1"));
  // sweep: ps on a CPU node (it tolerates no taint) and three 1-GPU workers on the 8 GPUs left.
  const json* ps = binding(out, "team-b/sweep-ps-0");
  REQUIRE(ps);
  CHECK((*ps)["node"] == "cpu-0");
  CHECK((*ps)["gpus"].empty());
  for (int w = 0; w < 3; ++w) CHECK(binding(out, "team-b/sweep-worker-" + std::to_string(w)));
  CHECK(out["pending"].empty());
  check_no_double_booking(out);
}

TEST_CASE("k8s round trip: a Kueue pod group required in one rack") {
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("kueue.yaml")});
  const json out = decide_and_bind(in);
  // solo (4 GPUs, a single pod, first in input order) takes gpu-a100-0 GPUs 0-3 (best-fit tie: the
  // lower node). tas: 2 x 2 GPUs in one rack: rack r1 (gpu-a100-0) has 4 left, r2 8; both pods
  // land on one node.
  const json* solo = binding(out, "team-b/solo");
  REQUIRE(solo);
  CHECK((*solo)["node"] == "gpu-a100-0");
  const json* t0 = binding(out, "team-a/tas-0");
  const json* t1 = binding(out, "team-a/tas-1");
  REQUIRE(t0);
  REQUIRE(t1);
  CHECK((*t0)["node"] == (*t1)["node"]);
  check_no_double_booking(out);
}

TEST_CASE("k8s round trip: a gang that cannot be placed binds none of its pods, with the reason") {
  // pods.yaml leaves gpu-a100-0 4 GPUs and gpu-a100-1 2 after finetune; llm (2 x 4) cannot start.
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("pods.yaml"), k8s_fixture("volcano.yaml")});
  const json out = decide_and_bind(in);
  CHECK_FALSE(binding(out, "team-a/llm-0"));
  CHECK_FALSE(binding(out, "team-a/llm-1"));
  int waiting = 0;
  for (const auto& p : out["pending"])
    if (p["job"] == "team-a/llm") {
      ++waiting;
      CHECK_FALSE(p["message"].get<std::string>().empty());
    }
  CHECK(waiting == 2);
  check_no_double_booking(out);
}

TEST_CASE("k8s round trip: a JSON PodList (read pod by pod) gives what the YAML stream gives") {
  // The YAML documents of pods.yaml as one JSON List (kubectl get pods -o json), a label value with
  // an escaped quote and brackets in it to exercise the list scan.
  auto docs = io::k8s::detail::parse_documents(k8s_fixture("pods.yaml"), "pods.yaml");
  REQUIRE(docs.ok());
  json list{{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}, {"items", json::array()}};
  for (auto& d : *docs) {
    if (d["kind"] == "Pod") d["metadata"]["labels"]["note"] = "a \"quoted\" [value] {x}";
    list["items"].push_back(d);
  }
  auto from_yaml = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("pods.yaml")});
  auto from_json = k8s_test::read_ok({k8s_fixture("nodes.yaml"), list.dump()});
  REQUIRE(from_json.jobs.size() == from_yaml.jobs.size());
  for (std::size_t j = 0; j < from_yaml.jobs.size(); ++j) {
    CHECK(from_json.jobs[j].job_name == from_yaml.jobs[j].job_name);
    CHECK(from_json.jobs[j].job_priority == from_yaml.jobs[j].job_priority);
    CHECK(from_json.jobs[j].groups[0].shape == from_yaml.jobs[j].groups[0].shape);
  }
  REQUIRE(from_json.running.size() == 1);
  CHECK(from_json.running[0].node == "gpu-a100-0");
  CHECK(decide_and_bind(from_json)["bindings"] == decide_and_bind(from_yaml)["bindings"]);
  // A bad pod inside a JSON list still names itself.
  list["items"][3]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  const std::string err = k8s_test::read_error({k8s_fixture("nodes.yaml"), list.dump()});
  CHECK(err.find("Pod team-a/finetune: spec.containers[0].resources.requests[\"cpu\"]") != std::string::npos);
}

namespace {

// One node of two A100-40GB (GFD labels), and pods in the form KAI-Scheduler's docs give them.
const char* const kTwoA100 = R"(apiVersion: v1
kind: Node
metadata:
  name: a100
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}
status:
  allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "2"}
)";

std::string kai_pod(const std::string& name, const std::string& annotations, const std::string& node = "",
                    const std::string& labels = "{}", const std::string& limits = "{}") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: team\n  labels: " + labels +
         "\n  annotations: " + annotations + "\nspec:\n  schedulerName: kai-scheduler\n" +
         (node.empty() ? "" : "  nodeName: " + node + "\n") +
         "  containers:\n  - name: c\n    resources: {limits: " + limits + "}\nstatus: {phase: " +
         (node.empty() ? "Pending" : "Running") + "}\n";
}

}  // namespace

TEST_CASE("KAI / Run:ai GPU sharing annotations: fractions and GPU memory are shares of one GPU") {
  // A pending gpu-fraction pod is a half-GPU task, not a CPU-only one; gpu-memory (MiB) a share of
  // memory (10 GiB of a 40 GiB A100: 250 milli-GPU, exact with the product selector).
  auto in = k8s_test::read_ok({kTwoA100, kai_pod("half", "{gpu-fraction: \"0.5\"}") + "---\n" +
                                             kai_pod("mem", "{gpu-memory: \"10240\"}") + "---\n" +
                                             kai_pod("third", "{gpu-fraction: \"0.3333\"}")});
  CHECK(k8s_test::job(in, "team/half").groups[0].shape == TaskShape{0, 0, 1, 500, 0});
  const TaskShape mem = k8s_test::job(in, "team/mem").groups[0].shape;
  CHECK(mem.gpus == 1);
  CHECK(mem.gpu_memory == Bytes{10240} << 20);
  CHECK(mem.gpu_milli == 250);
  CHECK(k8s_test::job(in, "team/third").groups[0].shape.gpu_milli == 334);  // rounded up

  // A running half-GPU pod holds half of a GPU: two whole-GPU pods no longer fit on the node (one
  // did before: the running pod was ignored), and a pending half takes the other half.
  auto running = k8s_test::read_ok({kTwoA100, kai_pod("run-half", "{gpu-fraction: \"0.5\"}", "a100") + "---\n" +
                                                  kai_pod("w1", "{}", "", "{}", "{nvidia.com/gpu: \"1\"}") + "---\n" +
                                                  kai_pod("w2", "{}", "", "{}", "{nvidia.com/gpu: \"1\"}") + "---\n" +
                                                  kai_pod("h2", "{gpu-fraction: \"0.5\"}")});
  const NodeSpec& n = k8s_test::node(running, "a100");
  CHECK(n.gpus[0].used_milli + n.gpus[1].used_milli == 500);
  const json out = decide_and_bind(running);
  CHECK(out["bindings"].size() == 2);  // one whole GPU pod and the half
  const json* h2 = binding(out, "team/h2");
  REQUIRE(h2);
  CHECK((*h2)["gpu_milli"] == 500);

  // Pods of one runai-gpu-group share one GPU: two 0.3 pods of group g and one 0.6 of group h on a
  // two-GPU node leave one GPU at 600 and the other at 600 (not 900 + 300).
  auto grouped = k8s_test::read_ok({kTwoA100, kai_pod("g1", "{gpu-fraction: \"0.3\"}", "a100", "{runai-gpu-group: g}") + "---\n" +
                                                  kai_pod("h1", "{gpu-fraction: \"0.6\"}", "a100", "{runai-gpu-group: h}") + "---\n" +
                                                  kai_pod("g2", "{gpu-fraction: \"0.3\"}", "a100", "{runai-gpu-group: g}")});
  const NodeSpec& gn = k8s_test::node(grouped, "a100");
  CHECK(gn.gpus[0].used_milli == 600);
  CHECK(gn.gpus[1].used_milli == 600);

  // Run:ai's legacy MIG form: the MIG resource as an annotation on a pod with no resources.
  auto mig = k8s_test::read_ok({kai_pod("m", "{nvidia.com/mig-3g.20gb: \"1\"}")});
  CHECK(k8s_test::job(mig, "team/m").groups[0].mig_profile == "3g.20gb");

  // What KAI refuses is refused, naming the annotation.
  const std::string both = k8s_test::read_error({kai_pod("b", "{gpu-fraction: \"0.5\"}", "", "{}", "{nvidia.com/gpu: \"1\"}")});
  CHECK(both.find("metadata.annotations[\"gpu-fraction\"]") != std::string::npos);
  CHECK(k8s_test::read_error({kai_pod("b", "{gpu-fraction: \"1.5\"}")}).find("(0, 1]") != std::string::npos);
  CHECK(k8s_test::read_error({kai_pod("b", "{gpu-fraction: \"half\"}")}).find("\"half\"") != std::string::npos);
  CHECK(k8s_test::read_error({kai_pod("b", "{gpu-fraction: \"0.5\", gpu-memory: \"100\"}")}).find("gpu-memory") != std::string::npos);
  CHECK(k8s_test::read_error({kai_pod("b", "{gpu-fraction-num-devices: \"2\"}")}).find("without gpu-fraction") != std::string::npos);
  // Half of each of two GPUs: read as two whole GPUs (never over-committed), reported.
  auto two = k8s_test::read_ok({kai_pod("b", "{gpu-fraction: \"0.5\", gpu-fraction-num-devices: \"2\"}")});
  CHECK(k8s_test::job(two, "team/b").groups[0].shape.gpus == 2);
  CHECK(k8s_test::job(two, "team/b").groups[0].shape.gpu_milli == 1000);
  CHECK(k8s_test::has_warning(two, "gpu-fraction-num-devices"));
  CHECK(k8s_test::read_error({kai_pod("b", "{gpu-fraction: \"0.5\", gpu-fraction-num-devices: \"0\"}")})
            .find("gpu-fraction-num-devices") != std::string::npos);
  CHECK(k8s_test::read_error({kai_pod("b", "{nvidia.com/mig-3g.20gb: \"2\"}")}).find("nvidia.com/mig-3g.20gb") != std::string::npos);
}

TEST_CASE("bound KAI shared pods hold the GPUs the reader gave them, in place --k8s and in the cycle alike") {
  // Two 0.3 pods of one runai-gpu-group share GPU 0 of the two-GPU node (KAI's binder puts a group
  // on one device); GPU 1 stays idle, so a pending whole-GPU pod starts there. The cycle's reader
  // gave each shared pod an idle GPU of its own before (both GPUs held, the pod waited "insufficient
  // GPUs"), where `place --k8s`, which takes the same pods off the node, bound it.
  const std::string objects = kTwoA100 + std::string("---\n") +
                              kai_pod("g1", "{gpu-fraction: \"0.3\"}", "a100", "{runai-gpu-group: g}") + "---\n" +
                              kai_pod("g2", "{gpu-fraction: \"0.3\"}", "a100", "{runai-gpu-group: g}") + "---\n" +
                              kai_pod("whole", "{}", "", "{}", "{nvidia.com/gpu: \"1\"}");
  const json placed = decide_and_bind(k8s_test::read_ok({objects}));
  REQUIRE(binding(placed, "team/whole"));
  const std::vector<io::k8s::Source> sources{{objects, "objects.yaml"}};
  auto in = io::read_cycle_inputs_k8s(sources);
  REQUIRE_MESSAGE(in.ok(), (in.ok() ? "" : in.error().message));
  REQUIRE(in->inputs.running.size() == 2);
  for (const scheduler::RunningJob& r : in->inputs.running) {
    REQUIRE(r.tasks.size() == 1);
    CHECK(r.tasks[0].assignment.gpus == std::vector<GpuIndex>{0});
  }
  ClusterState& state = *in->state;
  CHECK(state.shares().free_milli(0, 0) == 400);
  CHECK(state.shares().free_milli(0, 1) == 1000);
  auto d = scheduler::run_cycle(state, in->inputs.running, in->inputs.pending, {}, 100);
  REQUIRE(d.ok());
  REQUIRE(d->starts.size() == 1);
  CHECK(d->starts[0].job == "team/whole");
  CHECK(d->starts[0].tasks[0].assignment.gpus == std::vector<GpuIndex>{1});
}

TEST_CASE("property: bound pods hold the same GPUs whether taken off the nodes or reserved by the cycle") {
  // 150 random sets of bound pods on two 4-GPU A100 nodes: whole-GPU pods (1-2 GPUs), KAI fractions
  // with and without a runai-gpu-group (several pods per group), CPU-only pods. `place --k8s` and
  // `fairshare --k8s` read the nodes with the pods taken off (subtract_running); `cycle --k8s`
  // reserves them on the nodes read whole. Both must see the same free share on every GPU and the
  // same free CPU and memory on every node (the bug this guards: the cycle put each shared pod of a
  // group on an idle GPU of its own). Sets the nodes cannot hold are skipped (the reader warns).
  std::mt19937 rng(20261207);
  int compared = 0;
  for (int instance = 0; instance < 150; ++instance) {
    std::string objects;
    for (const char* node : {"n0", "n1"})
      objects += std::string("apiVersion: v1\nkind: Node\nmetadata:\n  name: ") + node +
                 "\n  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}\nstatus:\n"
                 "  allocatable: {cpu: \"64\", memory: 256Gi, nvidia.com/gpu: \"4\"}\n---\n";
    const int pods = std::uniform_int_distribution<int>(1, 7)(rng);
    for (int k = 0; k < pods; ++k) {
      std::string name = "p";
      name += std::to_string(k);
      const std::string node = rng() % 2 ? "n1" : "n0";
      switch (rng() % 4) {
        case 0:
          objects += kai_pod(name, "{}", node, "{}", "{nvidia.com/gpu: \"" + std::to_string(1 + rng() % 2) + "\"}");
          break;
        case 1:
          objects += kai_pod(name, "{gpu-fraction: \"0." + std::to_string(1 + rng() % 5) + "\"}", node);
          break;
        case 2:
          objects += kai_pod(name, "{gpu-fraction: \"0." + std::to_string(1 + rng() % 4) + "\"}", node,
                             "{runai-gpu-group: g" + std::to_string(rng() % 2) + "}");
          break;
        default:
          objects += kai_pod(name, "{}", node);
      }
      objects += "---\n";
    }
    const io::k8s::Input taken_off = k8s_test::read_ok({objects});
    const bool over = std::any_of(taken_off.warnings.begin(), taken_off.warnings.end(),
                                  [](const io::k8s::Warning& w) { return w.field == "spec.nodeName"; });
    if (over) continue;  // more than the nodes hold (the reader warns): not a state both can have
    auto subtracted = ClusterState::build(taken_off.cluster, taken_off.registry);
    REQUIRE(subtracted.ok());
    const std::vector<io::k8s::Source> sources{{objects, "objects.yaml"}};
    auto reserved = io::read_cycle_inputs_k8s(sources);
    REQUIRE_MESSAGE(reserved.ok(), (reserved.ok() ? "" : reserved.error().message));
    const ClusterState& a = *subtracted;
    const ClusterState& b = *reserved->state;
    REQUIRE(a.node_count() == b.node_count());
    for (NodeId n = 0; n < a.node_count(); ++n) {
      CHECK(a.cpu_free(n) == b.cpu_free(n));
      CHECK(a.memory_free(n) == b.memory_free(n));
      for (GpuIndex g = 0; g < a.gpu_count(n); ++g) CHECK(a.shares().free_milli(n, g) == b.shares().free_milli(n, g));
    }
    ++compared;
  }
  CHECK(compared > 100);
}

TEST_CASE("k8s round trip: Volcano networkTopology keeps a gang in one domain of the tier's level") {
  // Racks ra (a1, a2) and rb (b1), 8 GPUs each; a 3-pod gang of 8 GPUs each. Tier 1 is the innermost
  // topology level (example.com/rack): hard mode needs 3 nodes in one rack and waits; soft mode
  // prefers one and spreads when none holds it; tier 2 (the zone) holds it.
  std::string nodes;
  for (const char* n : {"a1", "a2", "b1"})
    nodes += std::string("---\nkind: Node\nmetadata: {name: ") + n + ", labels: {nvidia.com/gpu.product: H100, topology.kubernetes.io/zone: z, " +
             "example.com/rack: r" + n[0] + "}}\nstatus: {allocatable: {cpu: \"64\", memory: 512Gi, nvidia.com/gpu: \"8\"}}\n";
  auto gang = [](const std::string& topology) {
    std::string text = "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ns}\nspec:\n  minMember: 3\n" + topology;
    for (int i = 0; i < 3; ++i)
      text += "---\nkind: Pod\nmetadata: {name: p" + std::to_string(i) + ", namespace: ns, annotations: {scheduling.k8s.io/group-name: g}}\n" +
              "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]}\n";
    return text;
  };
  io::k8s::Options o;
  o.add_topology_levels(std::vector<std::string>{"example.com/rack"});
  auto hard = k8s_test::read_ok({nodes + gang("  networkTopology: {mode: hard, highestTierAllowed: 1}\n")}, o);
  CHECK(hard.jobs[0].job_topology.level == "example.com/rack");
  CHECK(hard.jobs[0].job_topology.mode == LevelMode::kRequired);
  CHECK(k8s_test::has_warning(hard, "spec.networkTopology"));
  CHECK(decide_and_bind(hard)["bindings"].empty());
  auto soft = k8s_test::read_ok({nodes + gang("  networkTopology: {mode: soft}\n")}, o);
  CHECK(soft.jobs[0].job_topology.mode == LevelMode::kPreferred);
  CHECK(decide_and_bind(soft)["bindings"].size() == 3);
  auto zone = k8s_test::read_ok({nodes + gang("  networkTopology: {mode: hard, highestTierAllowed: 2}\n")}, o);
  CHECK(zone.jobs[0].job_topology.level == "topology.kubernetes.io/zone");
  CHECK(decide_and_bind(zone)["bindings"].size() == 3);
  // Beyond the levels read: no constraint, said so.
  auto above = k8s_test::read_ok({nodes + gang("  networkTopology: {mode: hard, highestTierAllowed: 3}\n")}, o);
  CHECK(above.jobs[0].job_topology.level.empty());
  CHECK(decide_and_bind(above)["bindings"].size() == 3);
  CHECK(k8s_test::read_error({nodes + gang("  networkTopology: {mode: strict}\n")}, o).find("spec.networkTopology.mode: expected hard or soft") !=
        std::string::npos);
}
