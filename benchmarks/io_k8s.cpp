// Reading Kubernetes objects into the cluster state (issue 14): a 10,000-node NodeList and a
// 100,000-pod PodList, generated as `kubectl get ... -o json` prints them (and the NodeList also
// as YAML). Target: both into the state in <= 1 s. Recorded in benchmarks/README.md.
#include <benchmark/benchmark.h>

#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/k8s.hpp"
#include "io/k8s/k8s_detail.hpp"

namespace {

// 10,000 nodes: 8 A100-80GB GPUs each, GFD labels, zone/rack labels, a GPU taint on every node,
// a Ready condition. About 900 bytes of JSON per node.
std::string node_list(int nodes, bool yaml) {
  std::string out;
  if (yaml) {
    out = "apiVersion: v1\nkind: NodeList\nitems:\n";
    for (int n = 0; n < nodes; ++n)
      out += fmt::format(
          "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-{0}\n    labels:\n      kubernetes.io/hostname: node-{0}\n"
          "      topology.kubernetes.io/zone: zone-{1}\n      example.com/rack: rack-{2}\n"
          "      nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n      nvidia.com/gpu.count: \"8\"\n"
          "      nvidia.com/gpu.memory: \"81920\"\n      nvidia.com/mig.strategy: none\n"
          "  spec:\n    taints:\n    - {{key: nvidia.com/gpu, value: present, effect: NoSchedule}}\n"
          "  status:\n    capacity: {{cpu: \"128\", memory: 1056Gi, nvidia.com/gpu: \"8\", pods: \"110\"}}\n"
          "    allocatable: {{cpu: 127500m, memory: 1048Gi, nvidia.com/gpu: \"8\", pods: \"110\"}}\n"
          "    conditions:\n    - {{type: Ready, status: \"True\"}}\n",
          n, n / 2500, n / 32);
    return out;
  }
  out = R"({"apiVersion":"v1","kind":"NodeList","items":[)";
  for (int n = 0; n < nodes; ++n)
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"node-{}","labels":{{"kubernetes.io/hostname":"node-{}",)"
        R"("topology.kubernetes.io/zone":"zone-{}","example.com/rack":"rack-{}","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB",)"
        R"("nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"81920","nvidia.com/mig.strategy":"none"}}}},)"
        R"("spec":{{"taints":[{{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}}]}},)"
        R"("status":{{"capacity":{{"cpu":"128","memory":"1056Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("allocatable":{{"cpu":"127500m","memory":"1048Gi","nvidia.com/gpu":"8","pods":"110"}},)"
        R"("conditions":[{{"type":"Ready","status":"True"}}]}}}})",
        n ? "," : "", n, n, n / 2500, n / 32);
  return out + "]}";
}

// 100,000 pods: 1 in 5 bound (running), the rest pending; 1, 2, 4 or 8 GPUs, two containers (one
// an init container), a toleration, a Kueue queue label. About 700 bytes of JSON per pod.
std::string pod_list(int pods, int nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"PodList","items":[)";
  for (int p = 0; p < pods; ++p) {
    const int gpus = 1 << (p % 4);
    const std::string bound = p % 5 == 0 ? fmt::format(R"("nodeName":"node-{}",)", (p / 5) % nodes) : std::string();
    out += fmt::format(
        R"({}{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"pod-{}","namespace":"team-{}",)"
        R"("labels":{{"kueue.x-k8s.io/queue-name":"lq","app":"train"}},"creationTimestamp":"2024-05-01T10:00:00Z"}},)"
        R"("spec":{{{}"schedulerName":"default-scheduler","priorityClassName":"","tolerations":[{{"key":"nvidia.com/gpu","operator":"Exists"}}],)"
        R"("initContainers":[{{"name":"init","resources":{{"requests":{{"cpu":"1","memory":"1Gi"}}}}}}],)"
        R"("containers":[{{"name":"main","image":"trainer:1","resources":{{"requests":{{"cpu":"{}","memory":"{}Gi"}},)"
        R"("limits":{{"nvidia.com/gpu":"{}"}}}}}}]}},"status":{{"phase":"{}"}}}})",
        p ? "," : "", p, p % 8, bound, 4 * gpus, 32 * gpus, gpus, bound.empty() ? "Pending" : "Running");
  }
  return out + "]}";
}

void read_into_state(benchmark::State& st, const std::string& nodes, const std::string& pods) {
  for (auto _ : st) {
    std::vector<gpusched::io::k8s::Source> in = {{nodes, "nodes"}};
    if (!pods.empty()) in.push_back({pods, "pods"});
    auto input = gpusched::io::k8s::read(in);
    if (!input) {
      st.SkipWithError(input.error().message.c_str());
      return;
    }
    auto state = gpusched::ClusterState::build(input->cluster, input->registry);
    if (!state) {
      st.SkipWithError(state.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(state->node_count());
  }
  st.counters["MB"] = static_cast<double>(nodes.size() + pods.size()) / 1e6;
}

void BM_K8sNodeListJson10k(benchmark::State& st) {
  static const std::string nodes = node_list(10000, false);
  read_into_state(st, nodes, "");
}
BENCHMARK(BM_K8sNodeListJson10k)->Unit(benchmark::kMillisecond);

void BM_K8sNodeListYaml10k(benchmark::State& st) {
  static const std::string nodes = node_list(10000, true);
  read_into_state(st, nodes, "");
}
BENCHMARK(BM_K8sNodeListYaml10k)->Unit(benchmark::kMillisecond);

// The issue's target: 10,000 nodes and 100,000 pods into the state.
void BM_K8sNodes10kPods100kJson(benchmark::State& st) {
  static const std::string nodes = node_list(10000, false);
  static const std::string pods = pod_list(100000, 10000);
  read_into_state(st, nodes, pods);
}
BENCHMARK(BM_K8sNodes10kPods100kJson)->Unit(benchmark::kMillisecond);

// The share of the JSON parse alone (the DOM the reader walks) in the target above.
void BM_K8sParseOnlyNodes10kPods100k(benchmark::State& st) {
  static const std::string nodes = node_list(10000, false);
  static const std::string pods = pod_list(100000, 10000);
  for (auto _ : st) {
    auto a = gpusched::io::k8s::detail::parse_documents(nodes, "nodes");
    auto b = gpusched::io::k8s::detail::parse_documents(pods, "pods");
    benchmark::DoNotOptimize(a.ok() && b.ok());
  }
}
BENCHMARK(BM_K8sParseOnlyNodes10kPods100k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
