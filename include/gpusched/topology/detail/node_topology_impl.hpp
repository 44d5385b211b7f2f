// Implementation of gpusched/topology/node_topology.hpp (header-only: included at its end;
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
// Helpers live in gpusched::topology::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/topology/node_topology.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "gpusched/topology/allreduce.hpp"
#include "gpusched/topology/graph.hpp"

namespace gpusched::topology {
namespace detail {

inline constexpr double kNodeTopoInf = std::numeric_limits<double>::infinity();

// A group of the PCIe/host tree: a PCIe switch, host bridge, NUMA node, host or NVLink domain.
struct NodeGroup {
  VertexKind kind = VertexKind::kHost;
  int parent = -1;  // -1 for the root
  LinkKind up_kind = LinkKind::kPcieGen4;
  std::int32_t up_links = 1;
  std::string name;
};

// A link whose removal splits the GPUs: the GPUs below it and its bandwidth.
struct GpuCutEdge {
  std::vector<std::uint16_t> below;
  double gbps = 0;
};

// Union-find for the closure of the PCIe classes.
struct PcieClassUnionFind {
  std::vector<int> p;
  explicit PcieClassUnionFind(std::size_t n) : p(n) { std::iota(p.begin(), p.end(), 0); }
  int find(int x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
  }
  void unite(int a, int b) { p[find(a)] = find(b); }
};

}  // namespace detail

struct NodeTopology::Impl {
  std::vector<Device> devices;
  std::vector<PairLink> matrix;
  std::size_t n_dev = 0, n_gpu = 0;
  LinkKind nvlink = LinkKind::kNvLink2, pcie = LinkKind::kPcieGen4;
  bool nvswitch = false;
  std::int32_t upi_links = 2;
  std::vector<double> nv;      // n_gpu^2: direct NVLink GB/s per direction
  std::vector<double> fabric;  // n_gpu: GB/s to the NVSwitch fabric
  std::int32_t fabric_links = 0;
  std::vector<detail::NodeGroup> groups;   // groups[0] is the root
  std::vector<int> dev_parent; // group of each device's leaf link
  std::vector<std::vector<int>> group_children;                 // subgroups
  std::vector<std::vector<std::uint16_t>> group_gpus_direct;    // GPUs attached directly
  std::vector<detail::GpuCutEdge> cuts;
  TopologyGraph graph;
  std::vector<std::size_t> dev_vertex;
  std::vector<double> path_bw, path_lat;  // n_dev^2
  std::vector<double> pair_bus;           // n_gpu^2

  double nvl(std::size_t a, std::size_t b) const { return nv[a * n_gpu + b]; }
  void finish();
  void build_pcie_tree(const std::vector<Device>& devices, const std::vector<PairLink>& matrix);
  double bus_bandwidth(std::span<const std::uint16_t> set) const;
  SetScore score_of(std::span<const std::uint16_t> set, double bytes) const;
};

GPUSCHED_DECL std::string pair_link_name(PairLink link) {
  switch (link.cls) {
    case PairClass::kSelf: return "X";
    case PairClass::kNvLink: return fmt::format("NV{}", link.nvlinks);
    case PairClass::kPix: return "PIX";
    case PairClass::kPxb: return "PXB";
    case PairClass::kPhb: return "PHB";
    case PairClass::kNode: return "NODE";
    case PairClass::kSys: return "SYS";
  }
  return "?";
}

GPUSCHED_DECL int pair_link_rank(PairLink link) {
  switch (link.cls) {
    case PairClass::kSelf: return 0;
    case PairClass::kNvLink: return 1 + (255 - link.nvlinks);  // 1..256, more links = lower
    case PairClass::kPix: return 300;
    case PairClass::kPxb: return 301;
    case PairClass::kPhb: return 302;
    case PairClass::kNode: return 303;
    case PairClass::kSys: return 304;
  }
  return 305;
}

// --- building ------------------------------------------------------------------------------------

GPUSCHED_DECL void NodeTopology::Impl::finish() {
  const std::size_t G = groups.size();
  group_children.assign(G, {});
  group_gpus_direct.assign(G, {});
  for (std::size_t g = 1; g < G; ++g) group_children[static_cast<std::size_t>(groups[g].parent)].push_back(static_cast<int>(g));
  for (std::size_t d = 0; d < n_gpu; ++d) group_gpus_direct[static_cast<std::size_t>(dev_parent[d])].push_back(static_cast<std::uint16_t>(d));

  // Cut candidates: each GPU's own PCIe link, and each group's uplink, when they split the GPUs.
  std::vector<std::vector<std::uint16_t>> below(G);
  for (std::size_t d = 0; d < n_gpu; ++d)
    for (int g = dev_parent[d]; g >= 0; g = groups[static_cast<std::size_t>(g)].parent)
      below[static_cast<std::size_t>(g)].push_back(static_cast<std::uint16_t>(d));
  cuts.clear();
  for (std::size_t d = 0; d < n_gpu && n_gpu > 1; ++d)
    cuts.push_back({{static_cast<std::uint16_t>(d)}, link_spec(pcie).gbytes_per_s});
  for (std::size_t g = 1; g < G; ++g)
    if (!below[g].empty() && below[g].size() < n_gpu)
      cuts.push_back({below[g], link_spec(groups[g].up_kind).gbytes_per_s * groups[g].up_links});

  // The Boost graph.
  graph = TopologyGraph{};
  dev_vertex.assign(n_dev, 0);
  for (std::size_t d = 0; d < n_dev; ++d)
    dev_vertex[d] = graph.add_vertex(devices[d].kind == DeviceKind::kGpu ? VertexKind::kGpu : VertexKind::kNic,
                                     devices[d].name, static_cast<std::int32_t>(d));
  std::vector<std::size_t> group_vertex(G);
  for (std::size_t g = 0; g < G; ++g) group_vertex[g] = graph.add_vertex(groups[g].kind, groups[g].name);
  for (std::size_t g = 1; g < G; ++g)
    graph.add_link(group_vertex[g], group_vertex[static_cast<std::size_t>(groups[g].parent)], groups[g].up_kind,
                   groups[g].up_links);
  for (std::size_t d = 0; d < n_dev; ++d)
    graph.add_link(dev_vertex[d], group_vertex[static_cast<std::size_t>(dev_parent[d])], pcie, 1);
  if (nvswitch) {
    const auto sw = graph.add_vertex(VertexKind::kNvSwitch, "nvswitch");
    // Half the NVLink hop latency on each side: GPU -> NVSwitch -> GPU is one NVLink hop.
    const LinkSpec& spec = link_spec(nvlink);
    for (std::size_t d = 0; d < n_gpu; ++d)
      graph.add_link(dev_vertex[d], sw, nvlink, fabric_links, spec.gbytes_per_s * fabric_links, spec.latency_us / 2);
  }
  for (std::size_t a = 0; a < n_gpu; ++a)
    for (std::size_t b = a + 1; b < n_gpu; ++b)
      if (nvl(a, b) > 0) graph.add_link(dev_vertex[a], dev_vertex[b], nvlink, matrix[a * n_dev + b].nvlinks);

  path_bw.assign(n_dev * n_dev, 0);
  path_lat.assign(n_dev * n_dev, 0);
  for (std::size_t a = 0; a < n_dev; ++a) {
    const auto bw = graph.widest_from(dev_vertex[a]);
    const auto lat = graph.latency_from(dev_vertex[a]);
    for (std::size_t b = 0; b < n_dev; ++b) {
      path_bw[a * n_dev + b] = bw[dev_vertex[b]];
      path_lat[a * n_dev + b] = lat[dev_vertex[b]];
    }
  }
  pair_bus.assign(n_gpu * n_gpu, detail::kNodeTopoInf);
  for (std::size_t a = 0; a < n_gpu; ++a)
    for (std::size_t b = a + 1; b < n_gpu; ++b) {
      const std::uint16_t set[2] = {static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b)};
      pair_bus[a * n_gpu + b] = pair_bus[b * n_gpu + a] = bus_bandwidth(set);
    }
}

namespace detail {
// The link matrix as the node's devices read it: X exactly on the diagonal, symmetric, NVLink only
// between GPUs and with at least one link.
GPUSCHED_DECL Status check_pair_matrix(const std::vector<Device>& devices, const std::vector<PairLink>& matrix,
                                       std::size_t n_gpu) {
  const std::size_t n = devices.size();
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      const PairLink l = matrix[a * n + b];
      if ((a == b) != (l.cls == PairClass::kSelf))
        return Error{fmt::format("matrix[{}][{}] ({}-{}): '{}' {}", a, b, devices[a].name, devices[b].name,
                                 pair_link_name(l), a == b ? "on the diagonal, expected X" : "off the diagonal"), ErrorCode::kInvalidValue, "matrix"};
      if (l != matrix[b * n + a])
        return Error{fmt::format("matrix[{}][{}]: asymmetric: {}-{} is {} but {}-{} is {}", a, b, devices[a].name,
                                 devices[b].name, pair_link_name(l), devices[b].name, devices[a].name,
                                 pair_link_name(matrix[b * n + a])), ErrorCode::kInconsistent, "matrix"};
      if (l.cls == PairClass::kNvLink && (a >= n_gpu || b >= n_gpu))
        return Error{fmt::format("matrix[{}][{}] ({}-{}): NVLink to a NIC", a, b, devices[a].name, devices[b].name), ErrorCode::kInvalidValue, "matrix"};
      if (l.cls == PairClass::kNvLink && l.nvlinks == 0)
        return Error{fmt::format("matrix[{}][{}] ({}-{}): NV0", a, b, devices[a].name, devices[b].name), ErrorCode::kInvalidValue, "matrix"};
    }
  return {};
}
}  // namespace detail

// The PCIe tree: close "class <= c" for c = PIX, PXB, PHB, NODE; NUMA affinity joins at NODE. A group
// per closed set of several devices that is not the set below it (and per NUMA node); each device
// and group hangs from the next group above it, else the root.
GPUSCHED_DECL void NodeTopology::Impl::build_pcie_tree(const std::vector<Device>& devices, const std::vector<PairLink>& matrix) {
  const std::size_t n = devices.size();
  groups.push_back({VertexKind::kHost, -1, pcie, 1, "host"});
  const PairClass levels[4] = {PairClass::kPix, PairClass::kPxb, PairClass::kPhb, PairClass::kNode};
  const VertexKind kinds[4] = {VertexKind::kPcieSwitch, VertexKind::kPcieSwitch, VertexKind::kHostBridge,
                               VertexKind::kNumaNode};
  detail::PcieClassUnionFind dsu(n);
  std::vector<std::vector<int>> comp_group(4, std::vector<int>(n, -1));  // [level][root] -> group
  std::vector<std::vector<int>> root_at(4, std::vector<int>(n, 0));      // [level][device] -> root
  std::vector<int> prev_size(n, 1);
  for (int lv = 0; lv < 4; ++lv) {
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) {
        const PairClass c = matrix[a * n + b].cls;
        if (c != PairClass::kNvLink && c != PairClass::kSelf && c <= levels[lv])
          dsu.unite(static_cast<int>(a), static_cast<int>(b));
      }
    if (lv == 3)
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = a + 1; b < n; ++b)
          if (devices[a].numa_node >= 0 && devices[a].numa_node == devices[b].numa_node)
            dsu.unite(static_cast<int>(a), static_cast<int>(b));
    std::vector<int> size(n, 0);
    for (std::size_t d = 0; d < n; ++d) {
      root_at[lv][d] = dsu.find(static_cast<int>(d));
      ++size[static_cast<std::size_t>(root_at[lv][d])];
    }
    for (std::size_t d = 0; d < n; ++d) {
      const auto r = static_cast<std::size_t>(root_at[lv][d]);
      if (comp_group[lv][r] >= 0) continue;
      // A new group when it has several members and is not the same set as one group below it
      // (NUMA nodes always: sockets are real even with one device).
      bool create = lv == 3 || size[r] >= 2;
      if (create && lv > 0) {
        const auto below_root = static_cast<std::size_t>(root_at[lv - 1][d]);
        int below_size = 0;
        for (std::size_t e = 0; e < n; ++e) below_size += root_at[lv - 1][e] == static_cast<int>(below_root);
        if (below_size == size[r] && lv < 3) create = false;
      }
      if (!create) continue;
      comp_group[lv][r] = static_cast<int>(groups.size());
      const LinkKind up = lv == 3 ? LinkKind::kUpi : pcie;
      std::string name;
      if (lv == 3) {
        int numa = -1;
        for (std::size_t e = 0; e < n; ++e)
          if (root_at[lv][e] == static_cast<int>(r) && devices[e].numa_node >= 0) numa = devices[e].numa_node;
        name = numa >= 0 ? fmt::format("numa{}", numa) : fmt::format("numa?{}", groups.size());
      } else {
        name = fmt::format("{}{}", lv == 2 ? "hostbridge" : lv == 1 ? "pcie-upper" : "pcie-switch", groups.size());
      }
      groups.push_back({kinds[lv], 0, up, lv == 3 ? upi_links : 1, name});
    }
  }
  // Parents: the next created group above, else the root.
  auto group_above = [&](std::size_t d, int from_level) {
    for (int lv = from_level; lv < 4; ++lv) {
      const int g = comp_group[lv][static_cast<std::size_t>(root_at[lv][d])];
      if (g >= 0) return g;
    }
    return 0;
  };
  for (int lv = 0; lv < 4; ++lv)
    for (std::size_t d = 0; d < n; ++d) {
      const int g = comp_group[lv][static_cast<std::size_t>(root_at[lv][d])];
      if (g >= 0) groups[static_cast<std::size_t>(g)].parent = group_above(d, lv + 1);
    }
  dev_parent.assign(n, 0);
  for (std::size_t d = 0; d < n; ++d) dev_parent[d] = group_above(d, 0);
}

GPUSCHED_DECL Result<NodeTopology> NodeTopology::build(std::vector<Device> devices, std::vector<PairLink> matrix,
                                         NodeTopologyOptions options) {
  const std::size_t n = devices.size();
  if (n == 0) return Error{"devices: no GPUs", ErrorCode::kInvalidValue, "devices"};
  if (matrix.size() != n * n) return Error{fmt::format("matrix: {} entries for {} devices", matrix.size(), n), ErrorCode::kInconsistent, "matrix"};
  std::size_t n_gpu = 0;
  while (n_gpu < n && devices[n_gpu].kind == DeviceKind::kGpu) ++n_gpu;
  for (std::size_t d = n_gpu; d < n; ++d)
    if (devices[d].kind == DeviceKind::kGpu)
      return Error{fmt::format("devices[{}] ({}): GPUs must come before NICs", d, devices[d].name), ErrorCode::kInvalidValue, "devices"};
  if (n_gpu == 0) return Error{"devices: no GPUs", ErrorCode::kInvalidValue, "devices"};
  if (n_gpu > 4096) return Error{fmt::format("devices: {} GPUs, at most 4096", n_gpu), ErrorCode::kInvalidValue, "devices"};
  if (Status st = detail::check_pair_matrix(devices, matrix, n_gpu); !st) return st.error();
  if (options.nvlink_generation != 0 && !nvlink_of_generation(options.nvlink_generation))
    return Error{fmt::format("nvlink_generation: expected 1..5, got {}", options.nvlink_generation), ErrorCode::kInvalidValue, "nvlink_generation"};
  if (options.pcie_generation != 0 && !pcie_of_generation(options.pcie_generation))
    return Error{fmt::format("pcie_generation: expected 3..5, got {}", options.pcie_generation), ErrorCode::kInvalidValue, "pcie_generation"};
  if (options.upi_links < 1 || options.upi_links > 6)
    return Error{fmt::format("upi_links: expected 1..6, got {}", options.upi_links), ErrorCode::kInvalidValue, "upi_links"};

  NodeTopology t;
  Impl& m = *t.impl_;
  m.n_dev = n;
  m.n_gpu = n_gpu;
  m.upi_links = options.upi_links;
  int max_nv = 0;
  for (std::size_t a = 0; a < n_gpu; ++a)
    for (std::size_t b = 0; b < n_gpu; ++b)
      if (matrix[a * n + b].cls == PairClass::kNvLink) max_nv = std::max<int>(max_nv, matrix[a * n + b].nvlinks);
  int nv_gen = options.nvlink_generation;
  if (nv_gen == 0) nv_gen = max_nv >= 18 ? 4 : max_nv >= 7 ? 3 : 2;
  m.nvlink = *nvlink_of_generation(nv_gen);
  int pcie_gen = options.pcie_generation;
  if (pcie_gen == 0) pcie_gen = max_nv == 0 ? 4 : nv_gen <= 2 ? 3 : nv_gen == 3 ? 4 : 5;
  m.pcie = *pcie_of_generation(pcie_gen);

  // NVSwitch: every GPU pair bonded with the same width >= 6 (on 3 or more GPUs).
  bool uniform = n_gpu >= 3 && max_nv >= 6;
  for (std::size_t a = 0; a < n_gpu && uniform; ++a)
    for (std::size_t b = 0; b < n_gpu && uniform; ++b)
      if (a != b && !(matrix[a * n + b].cls == PairClass::kNvLink && matrix[a * n + b].nvlinks == max_nv))
        uniform = false;
  m.nvswitch = uniform;
  m.nv.assign(n_gpu * n_gpu, 0.0);
  m.fabric.assign(n_gpu, 0.0);
  const double per_link = link_spec(m.nvlink).gbytes_per_s;
  if (m.nvswitch) {
    m.fabric_links = max_nv;
    std::fill(m.fabric.begin(), m.fabric.end(), per_link * max_nv);
  } else {
    for (std::size_t a = 0; a < n_gpu; ++a)
      for (std::size_t b = 0; b < n_gpu; ++b)
        if (matrix[a * n + b].cls == PairClass::kNvLink) m.nv[a * n_gpu + b] = per_link * matrix[a * n + b].nvlinks;
  }

  m.build_pcie_tree(devices, matrix);
  m.devices = std::move(devices);
  m.matrix = std::move(matrix);
  m.finish();
  return t;
}

GPUSCHED_DECL NodeTopology NodeTopology::nvlink_domain(std::size_t hosts, std::size_t gpus_per_host, LinkKind nvlink,
                                         std::int32_t links_per_gpu, LinkKind pcie) {
  hosts = std::max<std::size_t>(hosts, 1);
  gpus_per_host = std::max<std::size_t>(gpus_per_host, 1);
  links_per_gpu = std::clamp<std::int32_t>(links_per_gpu, 1, 255);
  NodeTopology t;
  Impl& m = *t.impl_;
  const std::size_t n = hosts * gpus_per_host;
  m.n_dev = m.n_gpu = n;
  m.nvlink = nvlink;
  m.pcie = pcie;
  m.nvswitch = n >= 2;
  m.fabric_links = links_per_gpu;
  m.nv.assign(n * n, 0.0);
  m.fabric.assign(n, m.nvswitch ? link_spec(nvlink).gbytes_per_s * links_per_gpu : 0.0);
  m.matrix.assign(n * n, PairLink{PairClass::kNvLink, static_cast<std::uint8_t>(links_per_gpu)});
  for (std::size_t d = 0; d < n; ++d) m.matrix[d * n + d] = PairLink{PairClass::kSelf, 0};
  m.groups.push_back({VertexKind::kNvlDomain, -1, pcie, 1, "nvlink-domain"});
  m.dev_parent.assign(n, 0);
  const std::size_t per_socket = std::max<std::size_t>(1, (gpus_per_host + 1) / 2);
  for (std::size_t h = 0; h < hosts; ++h) {
    const int host = static_cast<int>(m.groups.size());
    // Hosts reach each other over their network rails, one NDR port per GPU.
    m.groups.push_back({VertexKind::kHost, 0, LinkKind::kIbNdr, static_cast<std::int32_t>(gpus_per_host),
                        fmt::format("host{}", h)});
    int socket = -1;
    for (std::size_t g = 0; g < gpus_per_host; ++g) {
      if (g % per_socket == 0) {
        socket = static_cast<int>(m.groups.size());
        m.groups.push_back({VertexKind::kNumaNode, host, LinkKind::kUpi, 1, fmt::format("host{}-numa{}", h, g / per_socket)});
      }
      const std::size_t d = h * gpus_per_host + g;
      Device dev;
      dev.name = fmt::format("GPU{}", d);
      dev.numa_node = static_cast<std::int32_t>(g / per_socket);
      m.devices.push_back(std::move(dev));
      m.dev_parent[d] = socket;
    }
  }
  m.finish();
  return t;
}

GPUSCHED_CTOR_DECL NodeTopology::NodeTopology() : impl_(std::make_unique<Impl>()) {}
GPUSCHED_CTOR_DECL NodeTopology::~NodeTopology() = default;
GPUSCHED_CTOR_DECL NodeTopology::NodeTopology(const NodeTopology& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
GPUSCHED_DECL NodeTopology& NodeTopology::operator=(const NodeTopology& o) {
  if (this != &o) impl_ = std::make_unique<Impl>(*o.impl_);
  return *this;
}
GPUSCHED_CTOR_DECL NodeTopology::NodeTopology(NodeTopology&&) noexcept = default;
GPUSCHED_DECL NodeTopology& NodeTopology::operator=(NodeTopology&&) noexcept = default;

GPUSCHED_DECL std::size_t NodeTopology::gpu_count() const { return impl_->n_gpu; }
GPUSCHED_DECL std::size_t NodeTopology::nic_count() const { return impl_->n_dev - impl_->n_gpu; }
GPUSCHED_DECL std::size_t NodeTopology::device_count() const { return impl_->n_dev; }
GPUSCHED_DECL const Device& NodeTopology::device(std::size_t d) const { return impl_->devices[d]; }
GPUSCHED_DECL PairLink NodeTopology::link(std::size_t a, std::size_t b) const { return impl_->matrix[a * impl_->n_dev + b]; }
GPUSCHED_DECL LinkKind NodeTopology::nvlink_kind() const { return impl_->nvlink; }
GPUSCHED_DECL LinkKind NodeTopology::pcie_kind() const { return impl_->pcie; }
GPUSCHED_DECL bool NodeTopology::has_nvswitch() const { return impl_->nvswitch; }
GPUSCHED_DECL const TopologyGraph& NodeTopology::graph() const { return impl_->graph; }
GPUSCHED_DECL std::size_t NodeTopology::device_vertex(std::size_t d) const { return impl_->dev_vertex[d]; }
GPUSCHED_DECL double NodeTopology::path_bandwidth_gbps(std::size_t a, std::size_t b) const {
  return impl_->path_bw[a * impl_->n_dev + b];
}
GPUSCHED_DECL double NodeTopology::path_latency_us(std::size_t a, std::size_t b) const {
  return impl_->path_lat[a * impl_->n_dev + b];
}
GPUSCHED_DECL double NodeTopology::pair_bus_bandwidth_gbps(std::size_t a, std::size_t b) const {
  return impl_->pair_bus[a * impl_->n_gpu + b];
}

// --- scoring -------------------------------------------------------------------------------------

GPUSCHED_DECL double NodeTopology::Impl::bus_bandwidth(std::span<const std::uint16_t> set) const {
  if (set.size() < 2) return detail::kNodeTopoInf;
  std::vector<char> in(n_gpu, 0), side(n_gpu, 0);
  for (auto g : set) in[g] = 1;
  double best = detail::kNodeTopoInf;
  for (const detail::GpuCutEdge& cut : cuts) {
    std::size_t a_count = 0;
    for (auto g : cut.below) {
      side[g] = in[g];
      a_count += in[g];
    }
    if (a_count != 0 && a_count != set.size()) {
      double nvsum = 0, fa = 0, fc = 0;
      for (auto a : set) {
        if (side[a]) {
          fa += fabric[a];
          for (auto c : set)
            if (!side[c]) nvsum += nvl(a, c);
        } else {
          fc += fabric[a];
        }
      }
      best = std::min(best, nvsum + std::min(fa, fc) + cut.gbps);
    }
    for (auto g : cut.below) side[g] = 0;
  }
  return best;
}

namespace detail {

// Minimax spanning latency: the slowest link Prim's algorithm needs to connect the set.
template <class Lat>
GPUSCHED_DECL double minimax_spanning_latency(std::size_t k, Lat&& lat) {
  if (k < 2) return 0.0;
  std::vector<double> key(k, kNodeTopoInf);
  std::vector<char> done(k, 0);
  key[0] = 0;
  double worst = 0;
  for (std::size_t step = 0; step < k; ++step) {
    std::size_t u = k;
    for (std::size_t i = 0; i < k; ++i)
      if (!done[i] && (u == k || key[i] < key[u])) u = i;
    done[u] = 1;
    worst = std::max(worst, key[u]);
    for (std::size_t i = 0; i < k; ++i)
      if (!done[i]) key[i] = std::min(key[i], lat(u, i));
  }
  return worst;
}

// The one all-reduce model (allreduce.hpp) over the set's B and alpha.
GPUSCHED_DECL void fill_allreduce_times(SetScore& s, double bytes) {
  const AllReduceTime t = allreduce_time(static_cast<double>(s.gpus), bytes, s.bus_bandwidth_gbps, s.latency_us);
  s.ring_us = t.ring_us;
  s.tree_us = t.tree_us;
  s.allreduce_us = t.best_us;
}

}  // namespace detail

GPUSCHED_DECL SetScore NodeTopology::Impl::score_of(std::span<const std::uint16_t> set, double bytes) const {
  SetScore s;
  s.gpus = set.size();
  s.bus_bandwidth_gbps = bus_bandwidth(set);
  s.latency_us = detail::minimax_spanning_latency(set.size(), [&](std::size_t a, std::size_t b) {
    return path_lat[static_cast<std::size_t>(set[a]) * n_dev + set[b]];
  });
  for (std::size_t a = 0; a < set.size(); ++a)
    for (std::size_t b = a + 1; b < set.size(); ++b) {
      const PairLink l = matrix[static_cast<std::size_t>(set[a]) * n_dev + set[b]];
      if (pair_link_rank(l) > pair_link_rank(s.span)) s.span = l;
    }
  detail::fill_allreduce_times(s, bytes);
  return s;
}

GPUSCHED_DECL Result<SetScore> NodeTopology::score(std::span<const std::uint16_t> gpus, double message_bytes) const {
  if (!(message_bytes >= 0) || std::isinf(message_bytes))
    return Error{fmt::format("message_bytes: expected a non-negative size, got {}", message_bytes), ErrorCode::kInvalidValue, "message_bytes"};
  std::vector<char> seen(impl_->n_gpu, 0);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] >= impl_->n_gpu)
      return Error{fmt::format("gpus[{}]: GPU {} out of range (the node has {})", i, gpus[i], impl_->n_gpu), ErrorCode::kInvalidValue, "gpus"};
    if (seen[gpus[i]]) return Error{fmt::format("gpus[{}]: GPU {} repeated", i, gpus[i]), ErrorCode::kDuplicate, "gpus"};
    seen[gpus[i]] = 1;
  }
  return impl_->score_of(gpus, message_bytes);
}

// --- picking -------------------------------------------------------------------------------------

namespace detail {

// The exhaustive search over k-subsets of m <= 16 free GPUs, on local bitmasks.
struct GpuSetSearch {
  std::size_t m = 0;
  std::vector<std::uint16_t> ids;           // local -> GPU index
  std::vector<double> nv, lat, pair_time;   // m x m
  std::vector<int> rank;                    // m x m span ranks
  std::vector<double> fab;                  // m
  std::vector<std::pair<std::uint32_t, double>> cuts;  // (mask of local GPUs below, bandwidth)
  double bytes = 0;

  double bandwidth(std::uint32_t s) const {
    double best = kNodeTopoInf;
    for (auto [mask, gbps] : cuts) {
      const std::uint32_t a = s & mask;
      if (a == 0 || a == s) continue;
      const std::uint32_t c = s ^ a;
      double nvsum = 0, fa = 0, fc = 0;
      for (std::uint32_t x = a; x; x &= x - 1) {
        const auto i = static_cast<std::size_t>(std::countr_zero(x));
        fa += fab[i];
        for (std::uint32_t y = c; y; y &= y - 1) nvsum += nv[i * m + static_cast<std::size_t>(std::countr_zero(y))];
      }
      for (std::uint32_t y = c; y; y &= y - 1) fc += fab[static_cast<std::size_t>(std::countr_zero(y))];
      best = std::min(best, nvsum + std::min(fa, fc) + gbps);
    }
    return best;
  }

  SetScore score(std::uint32_t s, int& span_rank) const {
    std::size_t idx[32];
    std::size_t k = 0;
    for (std::uint32_t x = s; x; x &= x - 1) idx[k++] = static_cast<std::size_t>(std::countr_zero(x));
    SetScore out;
    out.gpus = k;
    out.bus_bandwidth_gbps = k < 2 ? kNodeTopoInf : bandwidth(s);
    out.latency_us = minimax_spanning_latency(k, [&](std::size_t a, std::size_t b) { return lat[idx[a] * m + idx[b]]; });
    span_rank = 0;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = a + 1; b < k; ++b) span_rank = std::max(span_rank, rank[idx[a] * m + idx[b]]);
    fill_allreduce_times(out, bytes);
    return out;
  }

  // Sum over the leftover GPUs of the all-reduce time with their best leftover partner (lower =
  // the free GPUs stay better connected); a GPU left alone counts nothing.
  double leftover(std::uint32_t rest) const {
    double q = 0;
    for (std::uint32_t x = rest; x; x &= x - 1) {
      const auto i = static_cast<std::size_t>(std::countr_zero(x));
      double best = kNodeTopoInf;
      for (std::uint32_t y = rest & ~(std::uint32_t{1} << i); y; y &= y - 1)
        best = std::min(best, pair_time[i * m + static_cast<std::size_t>(std::countr_zero(y))]);
      if (best < kNodeTopoInf) q += best;
    }
    return q;
  }
};

GPUSCHED_DECL bool nearly_equal_times(double a, double b) {
  if (a == b) return true;
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

}  // namespace detail

// One function on purpose: the exhaustive k-subset search and the hierarchical best fit score candidates the
// same way in one loop.
GPUSCHED_DECL GpuPick NodeTopology::best_gpus(std::span<const std::uint16_t> free, std::size_t k, const PickOptions& options) const {
  const Impl& im = *impl_;
  GpuPick out;
  if (!(options.message_bytes >= 0) || std::isinf(options.message_bytes)) {
    out.reason = fmt::format("message_bytes: expected a non-negative size, got {}", options.message_bytes);
    out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
    return out;
  }
  std::vector<std::uint16_t> f(free.begin(), free.end());
  std::sort(f.begin(), f.end());
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] >= im.n_gpu) {
      out.reason = fmt::format("free: GPU {} out of range (the node has {})", f[i], im.n_gpu);
      out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
      return out;
    }
    if (i > 0 && f[i] == f[i - 1]) {
      out.reason = fmt::format("free: GPU {} repeated", f[i]);
      out.outcome = Outcome::with(Verdict::kInvalid, Reason{});
      return out;
    }
  }
  if (k == 0 || k > f.size()) {
    out.reason = fmt::format("gpus: cannot take {} of {} free GPUs", k, f.size());
    // k GPUs of this node: not now while others are busy, never when the node has fewer.
    out.outcome = k == 0 ? Outcome::with(Verdict::kInvalid, Reason{})
                         : Outcome::with(k > im.n_gpu ? Verdict::kInfeasible : Verdict::kNotNow,
                                         Reason{ReasonKind::kInsufficientGpus, Unit::kGpus, static_cast<std::int64_t>(k),
                                                static_cast<std::int64_t>(f.size()), 1, -1});
    return out;
  }

  if (f.size() <= 16) {
    detail::GpuSetSearch ls;
    ls.m = f.size();
    ls.ids = f;
    ls.bytes = options.message_bytes;
    const std::size_t m = ls.m;
    ls.nv.assign(m * m, 0);
    ls.lat.assign(m * m, 0);
    ls.pair_time.assign(m * m, 0);
    ls.rank.assign(m * m, 0);
    ls.fab.assign(m, 0);
    std::vector<int> local(im.n_gpu, -1);
    for (std::size_t i = 0; i < m; ++i) {
      local[f[i]] = static_cast<int>(i);
      ls.fab[i] = im.fabric[f[i]];
      for (std::size_t j = 0; j < m; ++j) {
        ls.nv[i * m + j] = im.nvl(f[i], f[j]);
        ls.lat[i * m + j] = im.path_lat[static_cast<std::size_t>(f[i]) * im.n_dev + f[j]];
        if (i != j) {
          SetScore pair;
          pair.gpus = 2;
          pair.bus_bandwidth_gbps = im.pair_bus[static_cast<std::size_t>(f[i]) * im.n_gpu + f[j]];
          pair.latency_us = ls.lat[i * m + j];
          detail::fill_allreduce_times(pair, options.message_bytes);
          ls.pair_time[i * m + j] = pair.allreduce_us;
        }
        ls.rank[i * m + j] = pair_link_rank(im.matrix[static_cast<std::size_t>(f[i]) * im.n_dev + f[j]]);
      }
    }
    const std::uint32_t full = m == 32 ? ~0U : ((std::uint32_t{1} << m) - 1);
    for (const detail::GpuCutEdge& c : im.cuts) {
      std::uint32_t mask = 0;
      for (auto g : c.below)
        if (local[g] >= 0) mask |= std::uint32_t{1} << local[g];
      if (mask == 0 || mask == full) continue;
      auto same = std::find_if(ls.cuts.begin(), ls.cuts.end(), [&](const auto& e) { return e.first == mask; });
      if (same != ls.cuts.end())
        same->second = std::min(same->second, c.gbps);
      else
        ls.cuts.emplace_back(mask, c.gbps);
    }
    // Gosper's hack: k-subsets of m bits in increasing numeric order.
    std::uint32_t best = 0;
    SetScore best_score;
    int best_rank = 0;
    double best_left = -1;
    for (std::uint32_t s = (std::uint32_t{1} << k) - 1; s <= full && s != 0;) {
      int r = 0;
      const SetScore sc = ls.score(s, r);
      bool better = best == 0;
      if (!better) {
        if (!detail::nearly_equal_times(sc.allreduce_us, best_score.allreduce_us)) {
          better = sc.allreduce_us < best_score.allreduce_us;
        } else if (r != best_rank) {
          better = r < best_rank;
        } else {
          if (best_left < 0) best_left = ls.leftover(full & ~best);
          const double left = ls.leftover(full & ~s);
          better = left < best_left && !detail::nearly_equal_times(left, best_left);
          if (better) best_left = left;
        }
      }
      if (better) {
        if (best == 0 || best_left < 0 || !detail::nearly_equal_times(sc.allreduce_us, best_score.allreduce_us) || r != best_rank)
          best_left = -1;
        best = s;
        best_score = sc;
        best_rank = r;
      }
      const std::uint32_t c = s & -s;
      const std::uint32_t nx = s + c;
      if (nx == 0 || nx > full) break;
      s = (((nx ^ s) >> 2) / c) | nx;
    }
    out.outcome = {};  // placed
    out.exact = true;
    for (std::uint32_t x = best; x; x &= x - 1) out.gpus.push_back(f[static_cast<std::size_t>(std::countr_zero(x))]);
    out.leftover_us = ls.leftover(full & ~best);
  } else {
    // Hierarchical best fit over the groups.
    const std::size_t G = im.groups.size();
    std::vector<char> is_free(im.n_gpu, 0);
    for (auto g : f) is_free[g] = 1;
    std::vector<std::int64_t> cap(G, 0);
    std::vector<int> depth(G, 0);
    for (std::size_t g = 1; g < G; ++g) depth[g] = depth[static_cast<std::size_t>(im.groups[g].parent)] + 1;
    for (auto g : f)
      for (int x = im.dev_parent[g]; x >= 0; x = im.groups[static_cast<std::size_t>(x)].parent) ++cap[static_cast<std::size_t>(x)];
    std::size_t start = 0;
    for (std::size_t g = 0; g < G; ++g) {
      if (cap[g] < static_cast<std::int64_t>(k)) continue;
      if (cap[g] < cap[start] || (cap[g] == cap[start] && depth[g] > depth[start])) start = g;
    }
    struct Kid {
      std::int64_t cap;
      bool group;
      std::size_t id;
    };
    auto take = [&](auto&& self, std::size_t g, std::int64_t count) -> void {
      std::vector<Kid> kids;
      for (int c : im.group_children[g]) kids.push_back({cap[static_cast<std::size_t>(c)], true, static_cast<std::size_t>(c)});
      for (auto d : im.group_gpus_direct[g])
        if (is_free[d]) kids.push_back({1, false, d});
      std::stable_sort(kids.begin(), kids.end(), [](const Kid& a, const Kid& b) { return a.cap > b.cap; });
      std::size_t i = 0;
      while (count > 0 && i < kids.size()) {
        std::size_t fit = kids.size();
        for (std::size_t j = i; j < kids.size() && kids[j].cap >= count; ++j)
          if (fit == kids.size() || kids[j].cap < kids[fit].cap) fit = j;
        const std::size_t pick = fit != kids.size() ? fit : i;
        if (kids[pick].cap <= 0) break;
        const std::int64_t n = std::min(count, kids[pick].cap);
        if (kids[pick].group)
          self(self, kids[pick].id, n);
        else
          out.gpus.push_back(static_cast<std::uint16_t>(kids[pick].id));
        count -= n;
        if (fit != kids.size()) break;
        ++i;
      }
    };
    take(take, start, static_cast<std::int64_t>(k));
    std::sort(out.gpus.begin(), out.gpus.end());
    if (out.gpus.size() == k) out.outcome = {};  // placed
    else {
      out.reason = "internal: hierarchical pick fell short";
      out.outcome = Outcome::with(Verdict::kNotNow, Reason{ReasonKind::kOther, Unit::kGpus, static_cast<std::int64_t>(k), -1, 1, -1});
      out.gpus.clear();
      return out;
    }
  }
  out.score = im.score_of(out.gpus, options.message_bytes);
  return out;
}

}  // namespace gpusched::topology
