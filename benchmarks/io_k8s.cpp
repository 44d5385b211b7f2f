// Reading Kubernetes objects into the cluster state (issue 14): a 10,000-node NodeList and a
// 100,000-pod PodList, generated as `kubectl get ... -o json` prints them (and the NodeList also
// as YAML). Target: both into the state in <= 1 s. Recorded in benchmarks/README.md.
#include <benchmark/benchmark.h>

#include <string>


#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/k8s.hpp"
#include "instances/k8s.hpp"
#include "io/k8s/k8s_detail.hpp"

namespace {

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
  static const std::string nodes = gpusched::bench::k8s_node_list(10000, false);
  read_into_state(st, nodes, "");
}
BENCHMARK(BM_K8sNodeListJson10k)->Unit(benchmark::kMillisecond);

void BM_K8sNodeListYaml10k(benchmark::State& st) {
  static const std::string nodes = gpusched::bench::k8s_node_list(10000, true);
  read_into_state(st, nodes, "");
}
BENCHMARK(BM_K8sNodeListYaml10k)->Unit(benchmark::kMillisecond);

// The target: 10,000 nodes and 100,000 pods into the state.
void BM_K8sNodes10kPods100kJson(benchmark::State& st) {
  static const std::string nodes = gpusched::bench::k8s_node_list(10000, false);
  static const std::string pods = gpusched::bench::k8s_pod_list(100000, 10000);
  read_into_state(st, nodes, pods);
}
BENCHMARK(BM_K8sNodes10kPods100kJson)->Unit(benchmark::kMillisecond);

// The share of the JSON parse alone (the DOM the reader walks) in the target above.
void BM_K8sParseOnlyNodes10kPods100k(benchmark::State& st) {
  static const std::string nodes = gpusched::bench::k8s_node_list(10000, false);
  static const std::string pods = gpusched::bench::k8s_pod_list(100000, 10000);
  for (auto _ : st) {
    auto a = gpusched::io::k8s::detail::parse_documents(nodes, "nodes");
    auto b = gpusched::io::k8s::detail::parse_documents(pods, "pods");
    benchmark::DoNotOptimize(a.ok() && b.ok());
  }
}
BENCHMARK(BM_K8sParseOnlyNodes10kPods100k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
