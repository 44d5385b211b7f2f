// gpusched/topology/links.hpp — the link table: bandwidth and latency of every interconnect.
//
// Topology scoring needs numbers for the links a message crosses: NVLink between GPUs, PCIe from a
// GPU to its switch and CPU, UPI between sockets, InfiniBand or Ethernet between hosts. They are
// vendor facts, so they are data — one row per link kind, each with its source — and a new
// generation is a new row (see src/topology/links.cpp for the table and its citations).
//
// Bandwidth is per direction, in GB/s (10^9 bytes per second), for ONE link as the vendor counts
// it: one NVLink (a GPU bonds several: "NV12" is 12 of them), one x16 PCIe port, one UPI link, one
// InfiniBand/Ethernet port. Latencies are the per-hop figures the model adds along a path; they
// are calibrated to NCCL's tuning model (two GPUs on one PCIe switch ~1 us apart, an NVLink hop
// ~0.5 us, a network hop ~2.7 us end to end), and only rank alternatives: they are not
// measurements.
//
//   const LinkSpec& nv = link_spec(LinkKind::kNvLink4);   // 25 GB/s per link per direction
//   double h100_pair = 18 * nv.gbytes_per_s;               // 450 GB/s each way on an HGX H100
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gpusched::topology {

enum class LinkKind : std::uint8_t {
  kNvLink1,      // P100
  kNvLink2,      // V100
  kNvLink3,      // A100
  kNvLink4,      // H100/H200
  kNvLink5,      // B200/GB200
  kPcieGen3,     // x16 port
  kPcieGen4,
  kPcieGen5,
  kUpi,          // Intel Ultra Path Interconnect, one link (10.4 GT/s)
  kIbEdr,        // InfiniBand 4x ports
  kIbHdr,
  kIbNdr,
  kIbXdr,
  kEthernet100,
  kEthernet200,
  kEthernet400,
};
inline constexpr std::size_t kLinkKindCount = 16;

struct LinkSpec {
  LinkKind kind;
  std::string_view name;      // "nvlink4", "pcie-gen5", "ib-ndr", ... (what the CLI and JSON accept)
  double gbytes_per_s;        // per direction, one link / port
  double latency_us;          // per hop, model figure (see above)
  std::string_view source;    // where the bandwidth comes from
};

// The whole table, in LinkKind order.
std::span<const LinkSpec> link_table();
const LinkSpec& link_spec(LinkKind kind);
// Looks a row up by name, ignoring case ("NVLink4", "nvlink-4" and "nvlink4" are the same).
std::optional<LinkKind> find_link_kind(std::string_view name);

// NVLink generation g (1..5) as a LinkKind; PCIe generation g (3..5). nullopt outside the range.
std::optional<LinkKind> nvlink_of_generation(int generation);
std::optional<LinkKind> pcie_of_generation(int generation);

}  // namespace gpusched::topology

#if GPUSCHED_HEADER_ONLY
#include "gpusched/topology/detail/links_impl.hpp"
#endif
