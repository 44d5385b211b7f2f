// gpusched/topology/node_topology.hpp — one server's GPUs, NICs and links; scoring GPU sets and
// picking the best k free GPUs.
//
// What it is for. An 8-GPU job whose ranks sit on GPUs joined by NVLink all-reduces many times
// faster than one spread over PCIe switches and sockets. Kubernetes picks GPUs in the device plugin,
// after the node is chosen; Slurm reads `gres.conf Links=`. Here the choice is made at decision
// time, on the node's graph.
//
// Where it comes from. `parse_nvidia_smi_topo` (io/nvidia_smi_topo.hpp) reads `nvidia-smi topo -m` into the
// pair matrix (NV#, PIX, PXB, PHB, NODE, SYS) plus affinities; `NodeTopology::build` turns the matrix
// into a graph (graph.hpp):
//   * NV# pairs become direct NVLink edges of # links; when every GPU pair shows the same NV# (>= 6)
//     the box has NVSwitches (DGX-2/A100/H100/B200) and each GPU gets one edge of # links to a
//     non-blocking NVSwitch vertex instead — a pairwise NV12 would otherwise count 12 links per peer;
//   * the PCIe classes nest (PIX within PXB within PHB within NODE within SYS), so closing the
//     relation "class <= c" for c = PIX, PXB, PHB, NODE gives the PCIe switches, upper switches,
//     host bridges and NUMA nodes as groups; NUMA affinity, when given, also joins devices into a
//     NUMA node. Groups become vertices joined by x16 PCIe links, NUMA nodes by UPI links to a host
//     vertex. NV# pairs carry no PCIe information in nvidia-smi's output; their PCIe place comes
//     from the other pairs.
//   The NVLink generation is guessed from the bond width (NV1/NV2/NV4/NV6 -> NVLink 2 (V100),
//   NV12 -> 3 (A100), NV18 -> 4 (H100)) unless given; PCIe follows the NVLink generation (Gen3
//   with V100, Gen4 with A100, Gen5 later; Gen4 for PCIe-only boxes) unless given.
//
// Scoring a GPU set S (`score`), the alpha-beta model of NCCL's algorithms:
//   bus bandwidth B(S) = the capacity of the weakest cut that splits S, over the cuts a single
//     graph link induces (a GPU's own links, a PCIe switch uplink, the socket link): NVLink across
//     the split + NVSwitch capacity min(sum of either side) + the PCIe/UPI link. This is the
//     bottleneck a ring (or several rings, as NCCL builds) must cross twice; it is exact on trees
//     and NVSwitch boxes and an upper bound elsewhere (checked against Boost max-flow in the tests);
//   alpha(S) = the latency of the slowest link needed to connect S (minimax spanning tree of the
//     pair path latencies);
//   ring  = 2 (k-1)/k * bytes / B + 2 (k-1) * alpha       (Patarasuk & Yuan 2009; NCCL ring)
//   tree  = 2 * bytes / B + 2 * ceil(log2 k) * alpha       (reduce + broadcast, pipelined)
//   all-reduce estimate = min(ring, tree); the span = the worst pair class inside S.
//
// Picking the best k of a node's free GPUs (`best_gpus`):
//   up to 16 free GPUs: every k-subset is scored (exact); the best is the lowest all-reduce time
//   at the given message size, then the tightest span, then the subset that leaves the free GPUs
//   it does not take best connected (the least sum, over the leftover GPUs, of the pair all-reduce
//   time with their best leftover partner), then the first in enumeration order (increasing
//   bitmask of free-list positions). More free GPUs: hierarchical best fit over the PCIe/host/domain groups (as in
//   cluster_topology.hpp): the smallest group with k free GPUs, filled largest child first — the
//   answer on NVSwitch domains, where every set has the same bandwidth and keeping whole trays
//   free is what matters.
//
//   auto topo = NodeTopology::build(*state.topology().interconnect(n)).value();   // or io::parse_nvidia_smi_topo(text)
//   std::vector<std::uint16_t> free{0, 1, 2, 3, 5, 6};
//   GpuPick pick = topo.best_gpus(free, 4);                     // pick.gpus, pick.score.allreduce_us
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/node_interconnect.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/topology/links.hpp"

namespace gpusched::topology {

class TopologyGraph;

// The pair classes, devices and options are the cluster model's (cluster/node_interconnect.hpp):
// a ClusterState holds them per node, and a NodeTopology is built from them.
using gpusched::DeviceKind;
using gpusched::PairClass;
using gpusched::PairLink;
using Device = gpusched::NodeDevice;
using NodeTopologyOptions = gpusched::InterconnectOptions;

// "X", "NV12", "PIX", ...
std::string pair_link_name(PairLink link);
// Ranks links worst-last: NV# (more links better) < PIX < PXB < PHB < NODE < SYS.
int pair_link_rank(PairLink link);

struct SetScore {
  std::size_t gpus = 0;
  double bus_bandwidth_gbps = 0;  // B(S), GB/s per direction; +inf for a single GPU
  double latency_us = 0;          // alpha(S)
  double ring_us = 0;
  double tree_us = 0;
  double allreduce_us = 0;        // min(ring, tree); 0 for a single GPU
  PairLink span{PairClass::kSelf, 0};  // worst pair inside the set
};

struct PickOptions {
  double message_bytes = 64.0 * 1024 * 1024;  // the all-reduce size the choice optimises
};

struct GpuPick {
  std::vector<std::uint16_t> gpus;  // increasing GPU indices
  SetScore score;
  // The tie-break measure of the GPUs left free: the sum over them of the all-reduce time with
  // their best free partner (lower = better connected). Exact search only.
  double leftover_us = 0;
  bool exact = false;               // every subset was scored
  std::string reason;               // when not found
  // The same answer in the common vocabulary (core/outcome.hpp): kPlaced when found; kInvalid for
  // bad arguments; kNotNow when fewer than k of the node's GPUs are free, kInfeasible when the node
  // has fewer than k GPUs (reason kInsufficientGpus, needed k, available the free count).
  Outcome outcome{Verdict::kNotNow, {}};  // until a pick is made
  // Whether the GPUs were found: the outcome says it (one vocabulary, no second flag).
  bool found() const { return outcome.verdict == Verdict::kPlaced; }
};

class NodeTopology {
 public:
  NodeTopology();
  ~NodeTopology();
  NodeTopology(const NodeTopology&);
  NodeTopology& operator=(const NodeTopology&);
  NodeTopology(NodeTopology&&) noexcept;
  NodeTopology& operator=(NodeTopology&&) noexcept;

  // From devices (GPUs first, then NICs; GPU i is device i) and the row-major pair matrix
  // (devices.size()^2, kSelf exactly on the diagonal, symmetric). Fails naming the pair or field.
  static Result<NodeTopology> build(std::vector<Device> devices, std::vector<PairLink> matrix,
                                    NodeTopologyOptions options = {});
  // A multi-node NVLink domain (GB200 NVL72: 18 hosts x 4 GPUs, NVLink 5 x 18) as one graph:
  // every GPU on one NVSwitch fabric, each host's GPUs on its own PCIe tree (two per socket).
  // From the cluster model's per-node interconnect (ClusterState::Topology::interconnect).
  static Result<NodeTopology> build(const NodeInterconnect& interconnect) {
    return build(interconnect.devices, interconnect.matrix, interconnect.options);
  }
  static NodeTopology nvlink_domain(std::size_t hosts, std::size_t gpus_per_host, LinkKind nvlink,
                                    std::int32_t links_per_gpu, LinkKind pcie = LinkKind::kPcieGen5);

  std::size_t gpu_count() const;
  std::size_t nic_count() const;
  std::size_t device_count() const;
  const Device& device(std::size_t d) const;
  PairLink link(std::size_t a, std::size_t b) const;
  LinkKind nvlink_kind() const;
  LinkKind pcie_kind() const;
  bool has_nvswitch() const;
  const TopologyGraph& graph() const;
  // The graph vertex of device d.
  std::size_t device_vertex(std::size_t d) const;

  // Widest-path bandwidth and lowest path latency between two devices (no transit through other
  // GPUs or NICs).
  double path_bandwidth_gbps(std::size_t a, std::size_t b) const;
  double path_latency_us(std::size_t a, std::size_t b) const;
  // B({a, b}) for two GPUs: what the pair gets for an all-reduce.
  double pair_bus_bandwidth_gbps(std::size_t a, std::size_t b) const;

  // The score of a set of distinct GPU indices. An out-of-range or repeated index is an error.
  Result<SetScore> score(std::span<const std::uint16_t> gpus, double message_bytes) const;
  // The best k of the free GPUs (see the essay). k == 0, k > free, or a bad free index -> not
  // found with a reason.
  GpuPick best_gpus(std::span<const std::uint16_t> free, std::size_t k, const PickOptions& options = {}) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpusched::topology

#if GPUSCHED_HEADER_ONLY
#include "gpusched/topology/detail/node_topology_impl.hpp"
#endif
