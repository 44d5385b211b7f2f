// gpusched/cluster/node_interconnect.hpp — each node's intra-node interconnect, held by ClusterState.
//
// What it is for. Which GPUs of a node a multi-GPU task gets matters as much as which node: four
// V100s of a DGX-1 that form an NVLink quad all-reduce several times faster than four chosen by
// index. The cluster state therefore carries, per node, the pair matrix `nvidia-smi topo -m` prints
// (NV#, PIX, PXB, PHB, NODE, SYS between every two devices, GPUs first, then NICs) with the
// devices' NUMA placement. The topology module turns it into a graph and scores GPU sets
// (gpusched/topology/node_topology.hpp, gpu_picker.hpp); this header has no graph and no Boost.
//
// Where it comes from.
//   * `ClusterState::build` gives every homogeneous node with 2+ GPUs its model's known default
//     (`known_interconnect`, the table below, each entry cited);
//   * `ClusterState::set_node_interconnect(n, ic)` sets or replaces it (an event, e.g. after
//     reading the node's `nvidia-smi topo -m` with gpusched::io::read_nvidia_smi_topo_matrix);
//   * nodes with one GPU, mixed models or a model without a known default have none
//     (`ClusterState::Topology::interconnect(n)` is nullptr) and pickers fall back to GPU index order.
//
// Stored compactly: nodes of the same shape share one interned `NodeInterconnect` (a cluster of
// 4,000 DGX nodes holds one matrix and 4,000 shape ids). Shape ids never change meaning while the
// state lives (the table only grows), so a cache keyed by the shape's content is never stale.
//
//   if (const NodeInterconnect* ic = state.topology().interconnect(n)) { ... ic->link(0, 3) ... }
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"

namespace gpusched {

// The link class `nvidia-smi topo -m` reports for a pair of devices, best first.
enum class PairClass : std::uint8_t { kSelf, kNvLink, kPix, kPxb, kPhb, kNode, kSys };

struct PairLink {
  PairClass cls = PairClass::kSys;
  std::uint8_t nvlinks = 0;  // the # of NV#
  friend bool operator==(const PairLink&, const PairLink&) = default;
};

enum class DeviceKind : std::uint8_t { kGpu, kNic };

struct NodeDevice {
  DeviceKind kind = DeviceKind::kGpu;
  std::string name;           // as in the matrix: "GPU0", "NIC0", "mlx5_0"
  std::string nic_name;       // a NIC's name from the NIC Legend ("mlx5_0"), else its matrix name
  std::string cpu_affinity;   // "0-31,64-95"; empty when absent or N/A
  std::string numa_affinity;  // "0", "0-1"; empty when absent or N/A
  std::int32_t numa_node = -1;    // the single NUMA node of numa_affinity, else -1
  std::int32_t gpu_numa_id = -1;  // the GPU NUMA ID column (GPU memory as a NUMA node), else -1
  friend bool operator==(const NodeDevice&, const NodeDevice&) = default;
};

// What the matrix cannot say: the link generations (0 = guess from the bond width, see
// topology/node_topology.hpp) and the UPI links between two sockets.
struct InterconnectOptions {
  int nvlink_generation = 0;  // 1..5, 0 = guess from the bond width
  int pcie_generation = 0;    // 3..5, 0 = follow the NVLink generation
  int upi_links = 2;          // UPI links between two sockets
  friend bool operator==(const InterconnectOptions&, const InterconnectOptions&) = default;
};

struct NodeInterconnect {
  std::vector<NodeDevice> devices;  // GPUs first (GPU i is device i), then NICs
  std::vector<PairLink> matrix;     // row-major devices.size()^2, kSelf exactly on the diagonal
  InterconnectOptions options;

  std::size_t device_count() const { return devices.size(); }
  std::size_t gpu_count() const {
    std::size_t g = 0;
    while (g < devices.size() && devices[g].kind == DeviceKind::kGpu) ++g;
    return g;
  }
  PairLink link(std::size_t a, std::size_t b) const { return matrix[a * devices.size() + b]; }
  friend bool operator==(const NodeInterconnect&, const NodeInterconnect&) = default;
};

// Per-node shapes, interned. Owned by ClusterState; read it through ClusterState::Topology (state.topology().interconnect(n)).
class InterconnectTable {
 public:
  static constexpr std::uint32_t kNoShape = ~std::uint32_t{0};

  std::size_t node_count() const { return node_shape_.size(); }
  std::uint32_t shape_of(std::size_t node) const { return node < node_shape_.size() ? node_shape_[node] : kNoShape; }
  const NodeInterconnect* of(std::size_t node) const {
    const std::uint32_t s = shape_of(node);
    return s == kNoShape ? nullptr : &shapes_[s];
  }
  std::size_t shape_count() const { return shapes_.size(); }
  const NodeInterconnect& shape(std::uint32_t s) const { return shapes_[s]; }

  // Nodes added at the end have no interconnect until set.
  void resize(std::size_t nodes) { node_shape_.resize(nodes, kNoShape); }
  // Interns `ic` (an equal shape is shared) and gives it to `node` (< node_count()).
  void set(std::size_t node, NodeInterconnect ic) { node_shape_[node] = intern(std::move(ic)); }
  // The shape id of `ic`, added when new; assign it to many nodes without comparing again.
  std::uint32_t intern(NodeInterconnect ic) {
    std::uint32_t s = 0;
    while (s < shapes_.size() && !(shapes_[s] == ic)) ++s;
    if (s == shapes_.size()) shapes_.push_back(std::move(ic));
    return s;
  }
  void assign(std::size_t node, std::uint32_t shape) { node_shape_[node] = shape; }
  void clear(std::size_t node) { node_shape_[node] = kNoShape; }
  // Drops node `node`, moving the later nodes down by one (node removal that renumbers).
  void erase(std::size_t node) { node_shape_.erase(node_shape_.begin() + static_cast<std::ptrdiff_t>(node)); }

  // Same interconnect on every node (shape ids may differ).
  bool same_as(const InterconnectTable& other) const {
    if (node_count() != other.node_count()) return false;
    for (std::size_t n = 0; n < node_count(); ++n) {
      const NodeInterconnect *a = of(n), *b = other.of(n);
      if ((a == nullptr) != (b == nullptr) || (a && !(*a == *b))) return false;
    }
    return true;
  }
  std::size_t memory_usage() const {
    std::size_t bytes = node_shape_.capacity() * sizeof(std::uint32_t) + shapes_.capacity() * sizeof(NodeInterconnect);
    for (const auto& s : shapes_)
      bytes += s.matrix.capacity() * sizeof(PairLink) + s.devices.capacity() * sizeof(NodeDevice);
    return bytes;
  }

 private:
  std::vector<NodeInterconnect> shapes_;
  std::vector<std::uint32_t> node_shape_;
};

// Whether `ic` is a well-formed matrix for a node with `gpus` GPUs: GPUs first and exactly `gpus`
// of them, a square matrix, kSelf exactly on the diagonal, symmetric. The error names the pair.
inline Status validate_interconnect(const NodeInterconnect& ic, std::size_t gpus) {
  const std::size_t n = ic.devices.size();
  if (ic.gpu_count() != gpus)
    return Error{"interconnect.devices: " + std::to_string(ic.gpu_count()) + " GPUs listed first, the node has " +
                     std::to_string(gpus),
                 ErrorCode::kInconsistent, "interconnect.devices"};
  for (std::size_t d = gpus; d < n; ++d)
    if (ic.devices[d].kind != DeviceKind::kNic)
      return Error{"interconnect.devices[" + std::to_string(d) + "]: GPUs must come before NICs",
                   ErrorCode::kInconsistent, "interconnect.devices"};
  if (ic.matrix.size() != n * n)
    return Error{"interconnect.matrix: " + std::to_string(ic.matrix.size()) + " cells for " + std::to_string(n) +
                     " devices, expected " + std::to_string(n * n),
                 ErrorCode::kInconsistent, "interconnect.matrix"};
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      const std::string cell = "interconnect.matrix[" + std::to_string(a) + "][" + std::to_string(b) + "]";
      if ((ic.link(a, b).cls == PairClass::kSelf) != (a == b))
        return Error{cell + ": 'X' (self) must be exactly the diagonal", ErrorCode::kInconsistent, cell};
      if (!(ic.link(a, b) == ic.link(b, a)))
        return Error{cell + ": asymmetric (differs from [" + std::to_string(b) + "][" + std::to_string(a) + "])",
                     ErrorCode::kInconsistent, cell};
    }
  return {};
}

namespace detail {

// One matrix cell written as one character, so a known topology reads like its `nvidia-smi topo -m`
// printout: 'X' self, '1'..'9' NV1..NV9, 'C' NV12, 'I' NV18, 'P' PIX, 'B' PXB, 'H' PHB, 'N' NODE,
// 'S' SYS.
inline PairLink interconnect_cell(char c) {
  switch (c) {
    case 'X': return {PairClass::kSelf, 0};
    case 'C': return {PairClass::kNvLink, 12};
    case 'I': return {PairClass::kNvLink, 18};
    case 'P': return {PairClass::kPix, 0};
    case 'B': return {PairClass::kPxb, 0};
    case 'H': return {PairClass::kPhb, 0};
    case 'N': return {PairClass::kNode, 0};
    default:
      if (c >= '1' && c <= '9') return {PairClass::kNvLink, static_cast<std::uint8_t>(c - '0')};
      return {PairClass::kSys, 0};
  }
}

// GPUs only: GPU i named "GPUi" on NUMA node i / gpus_per_socket, cell (a, b) = cell_char(a, b).
template <class CellChar>
NodeInterconnect gpu_only_interconnect(std::size_t gpus, std::size_t gpus_per_socket, int nvlink_generation,
                                       CellChar&& cell_char) {
  NodeInterconnect ic;
  for (std::size_t g = 0; g < gpus; ++g) {
    NodeDevice d;
    d.name = "GPU" + std::to_string(g);
    d.numa_node = static_cast<std::int32_t>(g / gpus_per_socket);
    d.numa_affinity = std::to_string(d.numa_node);
    ic.devices.push_back(std::move(d));
  }
  for (std::size_t a = 0; a < gpus; ++a)
    for (std::size_t b = 0; b < gpus; ++b) ic.matrix.push_back(a == b ? PairLink{PairClass::kSelf, 0} : interconnect_cell(cell_char(a, b)));
  ic.options.nvlink_generation = nvlink_generation;
  return ic;
}

// The rows of a printout, one character per cell.
inline NodeInterconnect interconnect_from_rows(std::initializer_list<std::string_view> rows, std::size_t gpus_per_socket,
                                               int nvlink_generation) {
  const std::string_view* r = rows.begin();
  return gpu_only_interconnect(rows.size(), gpus_per_socket, nvlink_generation,
                               [r](std::size_t a, std::size_t b) { return r[a][b]; });
}

// `gpus` GPUs all joined by the same NV# bond (an NVSwitch box, or HGX A100 4-GPU's direct NV4),
// half on each socket.
inline NodeInterconnect all_to_all_interconnect(std::size_t gpus, char bond, int nvlink_generation) {
  return gpu_only_interconnect(gpus, (gpus + 1) / 2, nvlink_generation, [bond](std::size_t, std::size_t) { return bond; });
}

// A PCIe two-socket server: half the GPUs per socket, consecutive pairs behind one PCIe switch
// (PIX), other GPUs of the socket across host bridges (NODE), the other socket's across UPI (SYS).
inline NodeInterconnect pcie_two_socket_interconnect(std::size_t gpus) {
  const std::size_t per_socket = (gpus + 1) / 2;
  return gpu_only_interconnect(gpus, per_socket, 0, [per_socket](std::size_t a, std::size_t b) {
    if (a / per_socket != b / per_socket) return 'S';
    return a / 2 == b / 2 ? 'P' : 'N';
  });
}

inline bool model_is_one_of(std::string_view model, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (model == n) return true;
  return false;
}

}  // namespace detail

// The known interconnect of a node with `gpus` GPUs of the registry model named `model` (its
// canonical name, core/gpu_model.hpp), or nullopt. The registry does not tell SXM from PCIe boards
// (one row per chip), so 8 A100/H100/H200/B200 are taken to be the HGX/DGX board; a PCIe box of those
// chips should be given its `nvidia-smi topo -m` instead.
//   * V100 x 8: DGX-1's hybrid cube-mesh (NVIDIA, "DGX-1 With Tesla V100 System Architecture",
//     WP-08437-002, fig. 4 and the `nvidia-smi topo -m` listing): two quads with NV1/NV2 inside a quad
//     and one bond from each GPU to its twin in the other quad, SYS otherwise; GPUs 0-3 on socket 0.
//     The rows below are that listing (tests/fixtures/topology/dgx1_v100.txt).
//   * A100 x 8: DGX/HGX A100, six NVSwitches, NV12 between every pair (DGX A100 User Guide,
//     "nvidia-smi topo -m"; A100 whitepaper: 12 NVLink 3 links per GPU). A100 x 4: HGX A100 4-GPU,
//     NV4 between every pair, no NVSwitch (HGX A100 datasheet: 4 links to each of 3 peers).
//   * H100 / H200 x 8: DGX/HGX H100, four NVSwitches, NV18 (DGX H100 User Guide; H100 whitepaper:
//     18 NVLink 4 links per GPU).
//   * B200 x 8: DGX/HGX B200, NV18 of NVLink 5 (NVIDIA Blackwell datasheet: 18 links, 1.8 TB/s).
//     GB200 x 4 per compute tray: NV18 of NVLink 5 to the rack's NVLink switches (GB200 NVL72 spec).
//   * any other model with 2 to 64 GPUs (PCIe cards: L40S, L4, A10, T4, A30, P100, the trace's
//     G2/G3): a two-socket PCIe server, half the GPUs per socket, pairs behind one PCIe switch — the
//     common 4-GPU-per-CPU layout of 8-GPU PCIe servers (e.g. tests/fixtures/topology/pcie_2socket.txt).
//     No PCIe server holds more than 64 GPUs; a larger node gets no default (its pair matrix grew as
//     the square of its GPUs: a 65,535-GPU node of T4 took 2 GB and 15 s to read).
inline constexpr std::size_t kMaxPcieServerGpus = 64;
inline std::optional<NodeInterconnect> known_interconnect(std::string_view model, std::size_t gpus) {
  using detail::model_is_one_of;
  if (gpus < 2) return std::nullopt;
  if (gpus == 8 && model_is_one_of(model, {"V100M16", "V100M32"}))
    return detail::interconnect_from_rows({"X1122SSS", "1X21S2SS", "12X2SS1S", "212XSSS1",
                                           "2SSSX112", "S2SS1X21", "SS1S12X2", "SSS1212X"},
                                          4, 2);
  if (model_is_one_of(model, {"A100-SXM4-40GB", "A100-80GB"})) {
    if (gpus == 8) return detail::all_to_all_interconnect(8, 'C', 3);
    if (gpus == 4) return detail::all_to_all_interconnect(4, '4', 3);
  }
  if (gpus == 8 && model_is_one_of(model, {"H100-80GB", "H200-141GB"})) return detail::all_to_all_interconnect(8, 'I', 4);
  if (gpus == 8 && model == "B200-180GB") return detail::all_to_all_interconnect(8, 'I', 5);
  if (gpus == 4 && model == "GB200") return detail::all_to_all_interconnect(4, 'I', 5);
  if (model_is_one_of(model, {"V100M16", "V100M32", "A100-SXM4-40GB", "A100-80GB", "H100-80GB", "H200-141GB",
                              "B200-180GB", "GB200"}))
    return std::nullopt;  // NVLink boards of another size: no default we can cite
  if (gpus > kMaxPcieServerGpus) return std::nullopt;
  return detail::pcie_two_socket_interconnect(gpus);
}

}  // namespace gpusched
