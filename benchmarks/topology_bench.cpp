// Topology picks: best k of an 8-GPU node, best 32 of a 72-GPU NVLink domain, best 64 nodes of a
// 4,096-node two-level fat tree. Targets (issue #5): <= 20 us, <= 1 ms, <= 5 ms.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>


#include "gpusched/cluster/cluster.hpp"
#include "gpusched/topology/cluster_graph.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/gpu_picker.hpp"
#include "gpusched/io/topology_json.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "instances/topology.hpp"

using namespace gpusched;
using namespace gpusched::topology;
using namespace gpusched::io;

namespace {

NodeTopology load(const char* name) {
  std::ifstream in(std::string(GPUSCHED_SOURCE_DIR) + "/tests/fixtures/topology/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return parse_nvidia_smi_topo(s.str()).value();
}

void BM_BestKof8_Dgx1(benchmark::State& st) {
  const NodeTopology t = load("dgx1_v100.txt");
  const std::vector<std::uint16_t> free{0, 1, 2, 3, 4, 5, 6, 7};
  const auto k = static_cast<std::size_t>(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(t.best_gpus(free, k));
}
BENCHMARK(BM_BestKof8_Dgx1)->Arg(2)->Arg(4)->Arg(6)->Unit(benchmark::kMicrosecond);

void BM_BestKof8_Pcie(benchmark::State& st) {
  const NodeTopology t = load("pcie_2socket.txt");
  const std::vector<std::uint16_t> free{0, 1, 2, 3, 4, 5, 6, 7};
  const auto k = static_cast<std::size_t>(st.range(0));
  for (auto _ : st) benchmark::DoNotOptimize(t.best_gpus(free, k));
}
BENCHMARK(BM_BestKof8_Pcie)->Arg(4)->Unit(benchmark::kMicrosecond);

void BM_Best32of72_Nvl72(benchmark::State& st) {
  const NodeTopology t = NodeTopology::nvlink_domain(18, 4, LinkKind::kNvLink5, 18);
  std::vector<std::uint16_t> free;
  for (std::uint16_t g = 0; g < 72; ++g)
    if (g % 7 != 3) free.push_back(g);  // some GPUs busy
  for (auto _ : st) benchmark::DoNotOptimize(t.best_gpus(free, 32));
}
BENCHMARK(BM_Best32of72_Nvl72)->Unit(benchmark::kMicrosecond);

// 4,096 nodes x 8 GPUs, 32 nodes per leaf, 16 leaves per spine block (8 blocks); some busy nodes.
struct FatTree {
  ClusterState state;
  ClusterTopology topo;
  TaskRequest request;
};

FatTree make_fat_tree() {
  auto state = bench::fat_tree(4096);
  auto topo = ClusterTopology::from_labels(state, bench::fat_tree_levels()).value();
  TaskShape shape;
  shape.gpus = 8;
  shape.gpu_milli = kMilliPerGpu;
  auto request = state.compile(shape).value();
  return {std::move(state), std::move(topo), std::move(request)};
}

void BM_Best64Nodes_FatTree4096(benchmark::State& st) {
  static const FatTree ft = make_fat_tree();
  const auto constraint = ft.topo.constraint(LevelMode::kRequired, "topology.kubernetes.io/block").value();
  for (auto _ : st) {
    auto p = ft.topo.pick_nodes(ft.state, ft.request, 64, constraint);
    if (!p.found()) st.SkipWithError("no pick");
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_Best64Nodes_FatTree4096)->Unit(benchmark::kMillisecond);

// The fabric graph of the same cluster (8 blocks, 128 leaves, 4,096 hosts) and the ring estimate
// for the 64-node pick above.
void BM_ClusterGraphBuild_FatTree4096(benchmark::State& st) {
  static const FatTree ft = make_fat_tree();
  for (auto _ : st) benchmark::DoNotOptimize(ClusterGraph::build(ft.topo));
}
BENCHMARK(BM_ClusterGraphBuild_FatTree4096)->Unit(benchmark::kMillisecond);

void BM_Allreduce64Nodes_FatTree4096(benchmark::State& st) {
  static const FatTree ft = make_fat_tree();
  static const ClusterGraph g = ClusterGraph::build(ft.topo);
  const auto constraint = ft.topo.constraint(LevelMode::kRequired, "topology.kubernetes.io/block").value();
  const auto pick = ft.topo.pick_nodes(ft.state, ft.request, 64, constraint);
  for (auto _ : st) benchmark::DoNotOptimize(g.allreduce(pick.nodes, 8, 64.0 * (1 << 20), 450.0));
}
BENCHMARK(BM_Allreduce64Nodes_FatTree4096)->Unit(benchmark::kMicrosecond);

// Reading a generated fabric JSON for 4,096 nodes (8 x 16 leaves x 32 nodes).
void BM_ReadFabricJson_FatTree4096(benchmark::State& st) {
  static const FatTree ft = make_fat_tree();
  const std::string text = R"({"levels": [{"name": "spine", "link": "ib-ndr", "links_per_node": 8},
      {"name": "leaf", "link": "ib-ndr", "links_per_node": 8, "uplink_oversubscription": 2}],
      "fat_tree": {"fanout": [8, 16], "nodes_per_domain": 32}})";
  for (auto _ : st) {
    auto t = read_cluster_topology_json(text, ft.state);
    if (!t) st.SkipWithError("bad fabric");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_ReadFabricJson_FatTree4096)->Unit(benchmark::kMillisecond);

void BM_ParseNvidiaSmi_Dgx1(benchmark::State& st) {
  std::ifstream in(std::string(GPUSCHED_SOURCE_DIR) + "/tests/fixtures/topology/dgx1_v100.txt");
  std::ostringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  for (auto _ : st) benchmark::DoNotOptimize(parse_nvidia_smi_topo(text));
}
BENCHMARK(BM_ParseNvidiaSmi_Dgx1)->Unit(benchmark::kMicrosecond);

// The topology-aware GPU step on a DGX-1 node of a ClusterState (its known default interconnect),
// GPUs 1 and 2 busy, a 4-GPU task: the graph is cached after the first pick, so this is best_gpus
// over 6 free GPUs plus the picker's lookup.
void BM_TopologyGpuPicker_Dgx1(benchmark::State& st) {
  NodeSpec n;
  n.name = "dgx1";
  n.cpu = 80000;
  n.memory = 512 * kGiB;
  for (int g = 0; g < 8; ++g) n.gpus.push_back({"V100-SXM2-32GB", g == 1 || g == 2 ? kMilliPerGpu : 0, 0, true});
  const ClusterState state = ClusterState::build(Cluster({n}), GpuModelRegistry::builtin()).value();
  TaskShape shape;
  shape.gpus = 4;
  shape.gpu_milli = kMilliPerGpu;
  const TaskRequest request = state.compile(shape).value();
  const TopologyGpuPicker picker;
  TaskAssignment out;
  for (auto _ : st) {
    if (!picker.pick(state, 0, request, out)) st.SkipWithError("no pick");
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_TopologyGpuPicker_Dgx1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
