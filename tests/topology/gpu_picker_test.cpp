// The per-node interconnect held by ClusterState and the topology-aware GpuPicker.
#include <doctest/doctest.h>

#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/topology/gpu_picker.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;
using namespace gpusched::topology_test;

namespace {

NodeSpec gpu_box(const std::string& name, const std::string& model, int gpus, std::vector<int> busy = {}) {
  NodeSpec n;
  n.name = name;
  n.cpu = 96000;
  n.memory = 512 * kGiB;
  for (int g = 0; g < gpus; ++g) n.gpus.push_back({model, 0, 0, true});
  for (int g : busy) n.gpus[static_cast<std::size_t>(g)].used_milli = kMilliPerGpu;
  return n;
}

ClusterState build_state(std::vector<NodeSpec> nodes) {
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

// Best fit for the node, the topology-aware picker for the GPUs: what an orchestrator would pass.
class TopologyAwareBestFit final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit+topology"; }
  NodeId select(const ClusterState& state, const TaskRequest& request) const override {
    return best_fit_.select(state, request);
  }
  const GpuPicker& gpu_picker() const override { return picker_; }

 private:
  BestFitPolicy best_fit_;
  TopologyGpuPicker picker_;
};

}  // namespace

TEST_CASE("the state gives each node its model's known interconnect, interned per shape") {
  ClusterState s = build_state({gpu_box("dgx1-a", "V100-SXM2-32GB", 8), gpu_box("dgx1-b", "V100-SXM2-32GB", 8),
                                gpu_box("h100", "H100-SXM5-80GB", 8), gpu_box("t4", "T4", 4),
                                gpu_box("single", "A100-80GB", 1), gpu_box("cpu", "T4", 0)});
  REQUIRE(s.topology().interconnect(0) != nullptr);
  // Both DGX-1 nodes share one interned matrix.
  CHECK(s.topology().interconnect(0) == s.topology().interconnect(1));
  CHECK(s.topology().interconnects().shape_of(0) == s.topology().interconnects().shape_of(1));
  CHECK(s.topology().interconnects().shape_count() == 3);  // DGX-1, HGX H100, PCIe T4 box
  // DGX-1 (WP-08437-002): GPU0-GPU3 NV2, GPU0-GPU4 NV2, GPU0-GPU5 SYS.
  const NodeInterconnect& dgx1 = *s.topology().interconnect(0);
  CHECK(dgx1.gpu_count() == 8);
  CHECK(dgx1.link(0, 3) == PairLink{PairClass::kNvLink, 2});
  CHECK(dgx1.link(0, 4) == PairLink{PairClass::kNvLink, 2});
  CHECK(dgx1.link(0, 5) == PairLink{PairClass::kSys, 0});
  // HGX H100: NV18 between every pair, NVLink 4.
  const NodeInterconnect& h100 = *s.topology().interconnect(2);
  for (std::size_t a = 0; a < 8; ++a)
    for (std::size_t b = 0; b < 8; ++b)
      CHECK(h100.link(a, b) == (a == b ? PairLink{PairClass::kSelf, 0} : PairLink{PairClass::kNvLink, 18}));
  CHECK(h100.options.nvlink_generation == 4);
  // 4 T4s: two per socket, each pair behind one switch.
  const NodeInterconnect& t4 = *s.topology().interconnect(3);
  CHECK(t4.link(0, 1).cls == PairClass::kPix);
  CHECK(t4.link(1, 2).cls == PairClass::kSys);
  CHECK(s.topology().interconnect(4) == nullptr);  // one GPU: nothing to choose
  CHECK(s.topology().interconnect(5) == nullptr);  // no GPU
}

TEST_CASE("the known DGX-1 default is the GPU block of the machine's own nvidia-smi topo -m") {
  auto parsed = io::read_nvidia_smi_interconnect(fixture("dgx1_v100.txt"));
  REQUIRE(parsed.ok());
  const auto known = known_interconnect("V100M32", 8);
  REQUIRE(known.has_value());
  for (std::size_t a = 0; a < 8; ++a)
    for (std::size_t b = 0; b < 8; ++b) {
      INFO("GPU", a, " GPU", b);
      CHECK(known->link(a, b) == parsed->link(a, b));
    }
}

TEST_CASE("node topology set: an event that replaces a node's interconnect, refused when it does not fit") {
  ClusterState s = build_state({gpu_box("n0", "L4", 8), gpu_box("n1", "L4", 8)});
  const std::uint32_t pcie_shape = s.topology().interconnects().shape_of(0);
  auto dgx1 = io::read_nvidia_smi_interconnect(fixture("dgx1_v100.txt"));
  REQUIRE(dgx1.ok());
  REQUIRE(s.set_node_interconnect(1, *dgx1).ok());
  CHECK(s.topology().interconnect(1)->device_count() == 12);  // 8 GPUs + 4 NICs, as read
  CHECK(s.topology().interconnects().shape_of(0) == pcie_shape);   // the other node is untouched
  // A second node with the same text shares the shape.
  REQUIRE(s.set_node_interconnect(0, *dgx1).ok());
  CHECK(s.topology().interconnects().shape_of(0) == s.topology().interconnects().shape_of(1));

  // An event: the node's version and the generations advance (caches keyed to them see it).
  const std::uint64_t generation = s.generation(), layout = s.layout_generation();
  REQUIRE(s.set_node_interconnect(0, *known_interconnect("L4", 8)).ok());
  CHECK(s.generation() > generation);
  CHECK(s.layout_generation() > layout);
  CHECK(s.node_version(0) == s.generation());
  CHECK(s.topology().interconnects().shape_of(0) == pcie_shape);  // the interned default again
  // A node added later gets its model's default; a removed node's is dropped.
  auto added = s.add_node(Cluster({gpu_box("dgx1", "V100-SXM2-32GB", 8)}));
  REQUIRE(added.ok());
  REQUIRE(s.topology().interconnect(*added) != nullptr);
  CHECK(*s.topology().interconnect(*added) == *known_interconnect("V100M32", 8));
  REQUIRE(s.remove_node(*added).ok());
  CHECK(s.topology().interconnect(*added) == nullptr);

  // PCIe servers: the default up to 64 GPUs; a larger node (no such server exists) gets none, so
  // reading a 65,535-GPU node of T4 does not build a 65,535 x 65,535 pair matrix.
  CHECK(known_interconnect("T4", 64).has_value());
  CHECK_FALSE(known_interconnect("T4", 65).has_value());
  ClusterState huge = build_state({gpu_box("big", "T4", 65535)});
  CHECK(huge.topology().interconnect(0) == nullptr);

  ClusterState four = build_state({gpu_box("n0", "L4", 4)});
  Status wrong = four.set_node_interconnect(0, *dgx1);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::kInconsistent);
  CHECK(wrong.error().field == "interconnect.devices");
  Status unknown = four.set_node_interconnect(7, *dgx1);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownName);
  NodeInterconnect asymmetric = *known_interconnect("L4", 4);
  asymmetric.matrix[1] = PairLink{PairClass::kNvLink, 4};  // GPU0-GPU1 NV4, GPU1-GPU0 PIX
  Status bad = four.set_node_interconnect(0, asymmetric);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "interconnect.matrix[0][1]");
}

TEST_CASE("on a DGX-1 with GPUs 1 and 2 busy a 4-GPU task gets an NVLinked quad, not the lowest indices") {
  // Free: 0, 3, 4, 5, 6, 7. Lowest index takes {0, 3, 4, 5}: NVLinks 0-3 (NV2), 0-4 (NV2), 4-5 (NV1)
  // only, so 3 and 5 reach each other over SYS and any ring crosses the sockets. {4, 5, 6, 7} is
  // the second quad of the hybrid cube-mesh: every pair NVLinked (4-5 NV1, 4-6 NV1, 4-7 NV2,
  // 5-6 NV2, 5-7 NV1, 6-7 NV2), all on socket 1.
  ClusterState s = build_state({gpu_box("dgx1", "V100-SXM2-32GB", 8, {1, 2})});
  const TaskRequest four = whole_gpus(s, 4);
  TaskAssignment lowest, topo;
  REQUIRE(LowestIndexGpuPicker{}.pick(s, 0, four, lowest));
  CHECK(lowest.gpus == std::vector<GpuIndex>{0, 3, 4, 5});
  TopologyGpuPicker picker;
  REQUIRE(picker.pick(s, 0, four, topo));
  CHECK(topo.gpus == std::vector<GpuIndex>{4, 5, 6, 7});
  CHECK(s.validate(four, topo).ok());
  // The estimate agrees with the choice: the quad all-reduces faster than the lowest-index set.
  const NodeTopology graph = NodeTopology::build(*s.topology().interconnect(0)).value();
  const std::vector<std::uint16_t> quad{4, 5, 6, 7}, by_index{0, 3, 4, 5};
  CHECK(graph.score(quad, 64.0 * 1024 * 1024)->allreduce_us < graph.score(by_index, 64.0 * 1024 * 1024)->allreduce_us);
  CHECK(picker.cached_topologies() == 1);

  // The same through plain placement with any policy whose GPU step is the picker.
  Job job;
  job.job_name = "train";
  job.groups.push_back({"w", 1, -1, four.shape, {}, {}});
  auto compiled = compile_job(s, job);
  REQUIRE(compiled.ok());
  const JobPlacement placed = place_job(s, *compiled, TopologyAwareBestFit{});
  REQUIRE(placed.placed());
  CHECK(placed.tasks[0].assignment.gpus == std::vector<GpuIndex>{4, 5, 6, 7});
}

TEST_CASE("the picker keeps the default's answers where topology has nothing to add") {
  ClusterState s = build_state({gpu_box("h100", "H100-SXM5-80GB", 8, {0}), gpu_box("one", "A100-80GB", 1)});
  TopologyGpuPicker picker;
  TaskAssignment a, b;
  // One GPU, a shared GPU, or a node without an interconnect: exactly the default picker.
  for (int gpus : {1}) {
    const TaskRequest r = whole_gpus(s, gpus);
    REQUIRE(picker.pick(s, 0, r, a));
    REQUIRE(LowestIndexGpuPicker{}.pick(s, 0, r, b));
    CHECK(a.gpus == b.gpus);
  }
  TaskShape share;
  share.gpus = 1;
  share.gpu_milli = 300;
  const TaskRequest shared = s.compile(share).value();
  REQUIRE(picker.pick(s, 0, shared, a));
  REQUIRE(LowestIndexGpuPicker{}.pick(s, 0, shared, b));
  CHECK(a.gpus == b.gpus);
  // On an NVSwitch box every set of k scores the same; the tie-breaks keep whole groups free, and
  // the pick is never a busy GPU and never too few.
  REQUIRE(picker.pick(s, 0, whole_gpus(s, 7), a));
  CHECK(a.gpus == std::vector<GpuIndex>{1, 2, 3, 4, 5, 6, 7});
  CHECK_FALSE(picker.pick(s, 0, whole_gpus(s, 8), a));  // GPU0 is busy
}
