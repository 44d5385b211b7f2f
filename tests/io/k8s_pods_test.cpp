// Kubernetes Pods into the job model: requests as Kubernetes adds them up, GPUs and MIG devices,
// selectors, node affinity and tolerations as node classes, priorities, bound pods as running work.
#include <doctest/doctest.h>

#include "io/k8s_test_util.hpp"

using namespace gpusched;
using k8s_test::k8s_fixture;
using k8s_test::job;
using k8s_test::node;

namespace {

const std::string kNodes = R"(
apiVersion: v1
kind: NodeList
items:
- kind: Node
  metadata: {name: gpu, labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, rack: r1, tier: "3"}}
  spec: {taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]}
  status: {allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: "8"}}
- kind: Node
  metadata: {name: cpu, labels: {rack: r2, tier: "1"}}
  status: {allocatable: {cpu: "32", memory: 128Gi}}
)";

std::string pod(const std::string& name, const std::string& spec, const std::string& meta = "") {
  return "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: ns\n" + meta + "spec:\n" + spec +
         "status: {phase: Pending}\n";
}

}  // namespace

TEST_CASE("k8s pods: requests as Kubernetes counts them (limits default, init containers, sidecars, overhead)") {
  // App containers: 1 + 2 = 3 CPUs, 1Gi + 2Gi. Init containers run one at a time beside the
  // sidecars started before them: the sidecar (500m, 1Gi) starts first, then "migrate" asks for
  // 6 CPUs beside it: 6.5 CPUs, 1Gi + 4Gi = 5Gi. The pod asks for the larger per resource:
  // CPU max(3 + 0.5 sidecar, 6.5) = 6.5; memory max(3Gi + 1Gi, 5Gi) = 5Gi; plus overhead 250m
  // and 128Mi: 6750m and 5Gi + 128Mi. GPUs: the limit (2) stands for the request.
  const std::string spec = R"(  overhead: {cpu: 250m, memory: 128Mi}
  initContainers:
  - name: proxy
    restartPolicy: Always
    resources: {requests: {cpu: 500m, memory: 1Gi}}
  - name: migrate
    resources: {limits: {cpu: "6", memory: 4Gi}}
  containers:
  - name: a
    resources: {requests: {cpu: "1", memory: 1Gi}}
  - name: b
    resources: {requests: {cpu: "2", memory: 2Gi}, limits: {cpu: "4", nvidia.com/gpu: "2"}}
  tolerations: [{operator: Exists}]
)";
  auto in = k8s_test::read_ok({kNodes, pod("p", spec)});
  const auto& g = job(in, "ns/p").groups.at(0);
  CHECK(g.shape.cpu == 6750);
  CHECK(g.shape.memory == 5LL * 1024 * 1024 * 1024 + 128LL * 1024 * 1024);
  CHECK(g.shape.gpus == 2);
  CHECK(g.shape.gpu_milli == 1000);
  CHECK(g.selector.empty());  // tolerates everything, no affinity: no node class
}

TEST_CASE("k8s pods: taints and required node affinity become exact node classes") {
  const std::string no_toleration = "  containers: [{name: c, resources: {requests: {cpu: '1'}}}]\n";
  const std::string tolerates = "  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}]\n" + no_toleration;
  const std::string wrong_value = "  tolerations: [{key: nvidia.com/gpu, operator: Equal, value: other}]\n" + no_toleration;
  // tier > 2 OR rack In [r2]: both nodes (gpu: tier 3; cpu: rack r2) for a tolerating pod.
  const std::string affinity = tolerates + R"(  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: tier, operator: Gt, values: ["2"]}]
        - matchExpressions: [{key: rack, operator: In, values: [r2]}, {key: gpu-free, operator: DoesNotExist}]
)";
  // One single-value In term: a plain selector, no class.
  const std::string simple = tolerates + R"(  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: rack, operator: In, values: [r1]}]
)";
  auto in = k8s_test::read_ok({kNodes, pod("plain", no_toleration), pod("tol", tolerates), pod("wrong", wrong_value),
                               pod("aff", affinity), pod("simple", simple)});
  auto class_of = [&](const std::string& name) -> std::string {
    for (const auto& [k, v] : job(in, name).groups.at(0).selector)
      if (k.rfind("gpusched.io/node-class-", 0) == 0) return k;
    return "";
  };
  const std::string plain = class_of("ns/plain");
  REQUIRE_FALSE(plain.empty());
  CHECK(class_of("ns/wrong") == plain);  // a toleration of another value tolerates nothing here
  CHECK(class_of("ns/tol").empty());     // tolerates the only taint
  CHECK(k8s_test::has_label(node(in, "cpu"), plain));
  CHECK_FALSE(k8s_test::has_label(node(in, "gpu"), plain));
  const std::string aff = class_of("ns/aff");
  REQUIRE_FALSE(aff.empty());
  CHECK(k8s_test::has_label(node(in, "cpu"), aff));
  CHECK(k8s_test::has_label(node(in, "gpu"), aff));
  CHECK(class_of("ns/simple").empty());
  const auto& sel = job(in, "ns/simple").groups.at(0).selector;
  REQUIRE(sel.size() == 1);
  CHECK(sel[0] == std::pair<std::string, std::string>{"rack", "r1"});

  // The classes decide placement through the ordinary selector check.
  auto state = ClusterState::build(in.cluster, in.registry);
  REQUIRE(state.ok());
  for (const char* name : {"ns/plain", "ns/wrong"}) {
    const auto mark = state->checkpoint();
    auto c = compile_job(*state, job(in, name));
    REQUIRE(c.ok());
    BestFitPolicy policy;
    auto p = place_job(*state, *c, policy);
    REQUIRE(p.placed());
    CHECK(state->node_name(p.tasks[0].assignment.node) == "cpu");
    state->rollback(mark);
  }
}

TEST_CASE("k8s pods: MIG devices of both strategies, GPU model from the product selector") {
  const std::string nodes = R"(
kind: Node
metadata: {name: m, labels: {nvidia.com/mig.strategy: single, nvidia.com/gpu.product: A100-SXM4-40GB-MIG-3g.20gb}}
status: {allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "2"}}
)";
  auto in = k8s_test::read_ok(
      {nodes,
       pod("mixed", "  containers: [{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]\n"),
       pod("single", "  nodeSelector: {nvidia.com/gpu.product: A100-SXM4-40GB-MIG-3g.20gb}\n"
                     "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n"),
       pod("h100", "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                   "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]\n")});
  CHECK(job(in, "ns/mixed").groups[0].mig_profile == "1g.10gb");
  CHECK(job(in, "ns/mixed").groups[0].shape.gpus == 0);
  const auto& single = job(in, "ns/single").groups[0];
  CHECK(single.mig_profile == "3g.20gb");
  CHECK(single.shape.gpus == 0);
  CHECK(single.allowed_models == std::vector<std::string>{"A100-SXM4-40GB"});
  CHECK(job(in, "ns/h100").groups[0].allowed_models == std::vector<std::string>{"H100-80GB"});
  // Two 3g.20gb devices: one A100-40GB GPU (3g at slices 0 and 4).
  REQUIRE(node(in, "m").gpus.size() == 1);
  CHECK(node(in, "m").gpus[0].mig_instances.size() == 2);

  const std::string two = k8s_test::read_error({nodes, pod("two", "  containers: [{name: c, resources: {limits: {nvidia.com/mig-1g.5gb: 2}}}]\n")});
  CHECK(two.find("Pod ns/two") != std::string::npos);
  CHECK(two.find("2 MIG devices") != std::string::npos);
}

TEST_CASE("k8s pods: priority, priority classes, submit time, scheduler filter, bound pods") {
  const std::string classes = R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-low}
value: -10
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: prod}
value: 5000
)";
  const std::string c = "  containers: [{name: c, resources: {requests: {cpu: '2', memory: 1Gi}}}]\n";
  auto in = k8s_test::read_ok({kNodes, classes, pod("by-class", "  priorityClassName: prod\n" + c),
                               pod("explicit", "  priority: 7\n  priorityClassName: prod\n" + c),
                               pod("default", c, "  creationTimestamp: \"2024-05-01T10:00:00Z\"\n"),
                               pod("unknown", "  priorityClassName: nope\n" + c),
                               pod("other", "  schedulerName: volcano\n" + c),
                               pod("bound", "  nodeName: cpu\n" + c)},
                              [] {
                                io::k8s::Options o;
                                o.scheduler_name = "default-scheduler";
                                return o;
                              }());
  CHECK(job(in, "ns/by-class").job_priority == 5000);
  CHECK(job(in, "ns/by-class").job_priority_class == "prod");
  CHECK(job(in, "ns/explicit").job_priority == 7);  // the admission-resolved spec.priority wins
  CHECK(job(in, "ns/default").job_priority == -10);  // the globalDefault class
  CHECK(job(in, "ns/default").job_submit_time == 1714557600);  // 2024-05-01T10:00:00Z
  CHECK(job(in, "ns/unknown").job_priority == 0);
  CHECK(k8s_test::has_warning(in, "spec.priorityClassName"));
  REQUIRE(in.skipped.size() == 1);
  CHECK(in.skipped[0].name == "other");
  REQUIRE(in.running.size() == 1);
  CHECK(in.running[0].node == "cpu");
  CHECK(node(in, "cpu").cpu_used == 2000);
  CHECK(node(in, "cpu").memory_used == 1LL << 30);
  CHECK(in.jobs.size() == 4);
}

TEST_CASE("k8s pods: what the job model cannot say is reported, aggregated") {
  const std::string spec = R"(  containers: [{name: c, resources: {requests: {cpu: '1', ephemeral-storage: 10Gi}}}]
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: rack, whenUnsatisfiable: DoNotSchedule}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname}]
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: rack, operator: In, values: [r1]}]}}]
)";
  auto in = k8s_test::read_ok({kNodes, pod("a", spec), pod("b", spec), pod("c", spec)});
  for (const char* field : {"ephemeral-storage", "topologySpreadConstraints", "podAntiAffinity", "preferredDuringScheduling"}) {
    bool found = false;
    for (const auto& w : in.warnings)
      if (w.field.find(field) != std::string::npos) {
        found = true;
        CHECK(w.count == 3);  // one warning for the three pods
        CHECK(w.object.find("Pod ns/a") != std::string::npos);
      }
    CHECK_MESSAGE(found, field);
  }
}

TEST_CASE("k8s pods: bad pods name the pod, the field and the value") {
  const std::string qty = k8s_test::read_error({kNodes, pod("q", "  containers: [{name: c, resources: {requests: {cpu: 2 cores}}}]\n")});
  CHECK(qty.find("Pod ns/q") != std::string::npos);
  CHECK(qty.find("spec.containers[0].resources.requests[\"cpu\"]") != std::string::npos);
  CHECK(qty.find("2 cores") != std::string::npos);
  const std::string op = k8s_test::read_error({kNodes, pod("o", R"(  containers: [{name: c}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: rack, operator: Near, values: [r1]}]}]
)")});
  CHECK(op.find("Pod ns/o") != std::string::npos);
  CHECK(op.find("matchExpressions[0].operator") != std::string::npos);
  CHECK(op.find("\"Near\"") != std::string::npos);
  const std::string missing = k8s_test::read_error({kNodes, pod("m", "  nodeName: ''\n")});
  CHECK(missing.find("Pod ns/m: spec.containers: missing") != std::string::npos);
  const std::string ts = k8s_test::read_error({kNodes, pod("t", "  containers: [{name: c}]\n", "  creationTimestamp: yesterday\n")});
  CHECK(ts.find("metadata.creationTimestamp") != std::string::npos);
  CHECK(ts.find("yesterday") != std::string::npos);
}

TEST_CASE("k8s pods: sums that pass int64, duplicate objects and names a path cannot hold are refused") {
  // Two containers of 2^63-1 bytes wrapped to a tiny request, and 65,538 x 65,535 GPUs to 2 GPUs.
  const std::string huge = k8s_test::read_error({kNodes, pod("big", R"(  containers:
  - {name: a, resources: {requests: {memory: "9223372036854775807"}}}
  - {name: b, resources: {requests: {memory: "9223372036854775807"}}}
)")});
  CHECK(huge.find("Pod ns/big") != std::string::npos);
  CHECK(huge.find("memory requests add up past 2^63") != std::string::npos);
  const std::string gpus = k8s_test::read_error({kNodes, pod("wide", R"(  containers:
  - {name: a, resources: {limits: {nvidia.com/gpu: "65535"}}}
  - {name: b, resources: {limits: {nvidia.com/gpu: "65535"}}}
)")});
  CHECK(gpus.find("asks for 131070 GPUs; at most 65535") != std::string::npos);
  const std::string overhead = k8s_test::read_error({kNodes, pod("oh", R"(  overhead: {cpu: "9223372036854775"}
  containers: [{name: a, resources: {requests: {cpu: "1"}}}]
)")});
  CHECK(overhead.find("cpu requests add up past 2^63") != std::string::npos);

  // The API server keeps one object per kind, namespace and name.
  const std::string twice = k8s_test::read_error({kNodes, pod("p", "  containers: [{name: c}]\n"), pod("p", "  containers: [{name: c}]\n")});
  CHECK(twice.find("2.yaml: Pod ns/p: metadata.name: duplicate Pod \"ns/p\" (the first is in 1.yaml)") != std::string::npos);
  // ...but the same name in another namespace or of another kind is another object.
  auto other = k8s_test::read_ok({kNodes, pod("p", "  containers: [{name: c}]\n"),
                                  "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns2}\nspec: {containers: [{name: c}]}\n"});
  CHECK(other.jobs.size() == 2);
  // "a/b" in "c" and "b" in "c/a" were both "c/a/b": names are path segments.
  const std::string slash = k8s_test::read_error({kNodes, pod("a/b", "  containers: [{name: c}]\n")});
  CHECK(slash.find("metadata.name: \"a/b\" is not a valid Kubernetes name") != std::string::npos);
  const std::string ns = k8s_test::read_error(
      {kNodes, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: c/a}\nspec: {containers: [{name: c}]}\n"});
  CHECK(ns.find("metadata.namespace: \"c/a\" is not a valid Kubernetes name") != std::string::npos);
}

TEST_CASE("k8s pods: quantities with exponents and exa suffixes, as resource.Quantity reads them") {
  auto in = k8s_test::read_ok({kNodes, pod("e", R"(  containers:
  - {name: a, resources: {requests: {cpu: 1e0, memory: 2e9}, limits: {nvidia.com/gpu: 8e0}}}
)"), pod("f", R"(  containers:
  - {name: a, resources: {requests: {cpu: "5e-1", memory: 0.5Ki}}}
)")});
  const auto& e = job(in, "ns/e").groups.at(0).shape;
  CHECK(e.cpu == 1000);
  CHECK(e.memory == 2000000000);
  CHECK(e.gpus == 8);
  const auto& f = job(in, "ns/f").groups.at(0).shape;
  CHECK(f.cpu == 500);
  CHECK(f.memory == 512);
}

TEST_CASE("k8s pods: timestamps are RFC 3339 as the API server writes them; impossible dates are refused") {
  const auto created = [&](const std::string& ts) {
    return pod("t", "  containers: [{name: c}]\n", "  creationTimestamp: \"" + ts + "\"\n");
  };
  const auto submit = [&](const std::string& ts) { return job(k8s_test::read_ok({kNodes, created(ts)}), "ns/t").job_submit_time; };
  CHECK(submit("2024-05-01T10:00:00Z") == 1714557600);
  CHECK(submit("2024-05-01T10:00:00.123456Z") == 1714557600);
  CHECK(submit("2024-05-01T12:00:00+02:00") == 1714557600);  // an offset is applied
  CHECK(submit("2024-05-01T08:30:00-01:30") == 1714557600);
  CHECK(submit("2024-02-29T00:00:00Z") == 1709164800);        // a leap day
  // 2024-02-30 was read as March 1 and 2024-04-31 as May 1; no zone, or text after it, is no RFC 3339 time.
  for (const char* bad : {"2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-05-01T10:00:00",
                          "2024-05-01T10:00:00Zjunk", "2024-05-01T10:00:00.Z", "2024-05-01T10:00:00+2:00"}) {
    CAPTURE(bad);
    const std::string e = k8s_test::read_error({kNodes, created(bad)});
    CHECK(e.find("metadata.creationTimestamp: expected an RFC 3339 time") != std::string::npos);
  }
}
