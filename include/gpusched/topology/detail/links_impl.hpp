// Implementation of gpusched/topology/links.hpp (header-only: included at its end;
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
// Helpers live in gpusched::topology::detail.
#pragma once

#include "gpusched/core/config.hpp"

#include "gpusched/topology/links.hpp"
// The link table. Bandwidths are per direction for one link/port; see links.hpp for the units.
//
// NVLink: NVIDIA counts "bidirectional bandwidth per GPU" = links x per-link bidirectional rate;
// per direction is half of the per-link figure.
//   NVLink 1 (P100): 4 links, 160 GB/s total  -> 20 GB/s per link per direction
//     (NVIDIA Tesla P100 whitepaper, 2016, "NVLink High Speed Interconnect").
//   NVLink 2 (V100): 6 links, 300 GB/s total  -> 25 GB/s (NVIDIA Tesla V100 whitepaper, 2017;
//     DGX-1 with Tesla V100 System Architecture whitepaper, hybrid cube-mesh).
//   NVLink 3 (A100): 12 links, 600 GB/s total -> 25 GB/s (NVIDIA A100 Tensor Core GPU
//     Architecture whitepaper, 2020).
//   NVLink 4 (H100): 18 links, 900 GB/s total -> 25 GB/s (NVIDIA H100 Tensor Core GPU Architecture
//     whitepaper, 2022; nvidia.com/en-us/data-center/nvlink: "50 GB/s per link" bidirectional).
//   NVLink 5 (B200): 18 links of 100 GB/s, 1.8 TB/s total -> 50 GB/s (nvidia.com/en-us/data-center/
//     nvlink, "fifth generation NVLink"; GB200 NVL72 product page).
// PCIe x16, per direction, after line coding (PCI-SIG base specifications):
//   Gen3 8 GT/s x16 x 128b/130b = 15.75 GB/s; Gen4 16 GT/s = 31.5 GB/s; Gen5 32 GT/s = 63.0 GB/s.
// UPI: 10.4 GT/s x 2 bytes = 20.8 GB/s per link per direction (Intel Xeon Scalable processor
//   product briefs; a 2-socket Skylake/Cascade Lake board has 2 or 3 links).
// InfiniBand 4x ports (InfiniBand Trade Association roadmap; NVIDIA ConnectX-6/7 datasheets):
//   EDR 100 Gb/s = 12.5 GB/s; HDR 200 Gb/s = 25 GB/s; NDR 400 Gb/s = 50 GB/s; XDR 800 Gb/s = 100 GB/s.
// Ethernet (IEEE 802.3): 100/200/400 GbE = 12.5/25/50 GB/s.
//
// Latencies are model figures, calibrated to NCCL's src/graph/tuning.cc hardware latencies (ring,
// LL protocol: NVLink ~0.5 us, PCI ~1 us, network ~2.7 us): an NVLink hop 0.5 us (a path through an
// NVSwitch counts as one hop), each PCIe hop 0.5 us (so two GPUs on one switch, two hops, are 1 us
// apart, and each bridge further adds 1 us), a UPI hop 0.5 us, an InfiniBand cable hop (NIC or
// switch port) 1.0 us, Ethernet 1.5 us.

#include <array>
#include <cctype>
#include <string>

namespace gpusched::topology {
namespace detail {

inline constexpr std::string_view kLinkSrcNvP100 = "NVIDIA Tesla P100 whitepaper (2016): 4 NVLinks, 160 GB/s bidirectional";
inline constexpr std::string_view kLinkSrcNvV100 = "NVIDIA Tesla V100 whitepaper (2017): 6 NVLinks, 300 GB/s bidirectional";
inline constexpr std::string_view kLinkSrcNvA100 = "NVIDIA A100 architecture whitepaper (2020): 12 NVLinks, 600 GB/s bidirectional";
inline constexpr std::string_view kLinkSrcNvH100 = "NVIDIA H100 architecture whitepaper (2022): 18 NVLinks, 900 GB/s bidirectional";
inline constexpr std::string_view kLinkSrcNvB200 = "nvidia.com NVLink page: 18 NVLinks of 100 GB/s, 1.8 TB/s (Blackwell)";
inline constexpr std::string_view kLinkSrcPcie = "PCI-SIG PCI Express Base Specification: GT/s x16 lanes x 128b/130b";
inline constexpr std::string_view kLinkSrcUpi = "Intel Xeon Scalable product brief: UPI 10.4 GT/s, 20.8 GB/s per link";
inline constexpr std::string_view kLinkSrcIb = "InfiniBand Trade Association roadmap (4x port data rate)";
inline constexpr std::string_view kLinkSrcEth = "IEEE 802.3 (100/200/400GBASE) line rate";

inline constexpr std::array<LinkSpec, kLinkKindCount> kLinkTable{{
    {LinkKind::kNvLink1, "nvlink1", 20.0, 0.5, kLinkSrcNvP100},
    {LinkKind::kNvLink2, "nvlink2", 25.0, 0.5, kLinkSrcNvV100},
    {LinkKind::kNvLink3, "nvlink3", 25.0, 0.5, kLinkSrcNvA100},
    {LinkKind::kNvLink4, "nvlink4", 25.0, 0.5, kLinkSrcNvH100},
    {LinkKind::kNvLink5, "nvlink5", 50.0, 0.5, kLinkSrcNvB200},
    {LinkKind::kPcieGen3, "pcie-gen3", 15.75, 0.5, kLinkSrcPcie},
    {LinkKind::kPcieGen4, "pcie-gen4", 31.5, 0.5, kLinkSrcPcie},
    {LinkKind::kPcieGen5, "pcie-gen5", 63.0, 0.5, kLinkSrcPcie},
    {LinkKind::kUpi, "upi", 20.8, 0.5, kLinkSrcUpi},
    {LinkKind::kIbEdr, "ib-edr", 12.5, 1.0, kLinkSrcIb},
    {LinkKind::kIbHdr, "ib-hdr", 25.0, 1.0, kLinkSrcIb},
    {LinkKind::kIbNdr, "ib-ndr", 50.0, 1.0, kLinkSrcIb},
    {LinkKind::kIbXdr, "ib-xdr", 100.0, 1.0, kLinkSrcIb},
    {LinkKind::kEthernet100, "eth-100g", 12.5, 1.5, kLinkSrcEth},
    {LinkKind::kEthernet200, "eth-200g", 25.0, 1.5, kLinkSrcEth},
    {LinkKind::kEthernet400, "eth-400g", 50.0, 1.5, kLinkSrcEth},
}};

// Lower-cased, without '-', '_' and spaces: "NVLink-4" -> "nvlink4".
GPUSCHED_DECL std::string squash_link_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

}  // namespace detail

GPUSCHED_DECL std::span<const LinkSpec> link_table() { return detail::kLinkTable; }

GPUSCHED_DECL const LinkSpec& link_spec(LinkKind kind) { return detail::kLinkTable[static_cast<std::size_t>(kind)]; }

GPUSCHED_DECL std::optional<LinkKind> find_link_kind(std::string_view name) {
  const std::string key = detail::squash_link_name(name);
  for (const LinkSpec& row : detail::kLinkTable)
    if (detail::squash_link_name(row.name) == key) return row.kind;
  return std::nullopt;
}

GPUSCHED_DECL std::optional<LinkKind> nvlink_of_generation(int generation) {
  if (generation < 1 || generation > 5) return std::nullopt;
  return static_cast<LinkKind>(static_cast<int>(LinkKind::kNvLink1) + generation - 1);
}

GPUSCHED_DECL std::optional<LinkKind> pcie_of_generation(int generation) {
  if (generation < 3 || generation > 5) return std::nullopt;
  return static_cast<LinkKind>(static_cast<int>(LinkKind::kPcieGen3) + generation - 3);
}

}  // namespace gpusched::topology
