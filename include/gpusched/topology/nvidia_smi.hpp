// gpusched/topology/nvidia_smi.hpp — reading `nvidia-smi topo -m` into a NodeTopology.
//
// The text is what administrators already have: the matrix printed by `nvidia-smi topo -m` (or
// `--matrix`). Every variant in the wild is accepted:
//   * TAB-separated (as printed) or space-separated (as pasted into tickets and docs);
//   * ANSI escape codes around the header (the underline nvidia-smi prints on a terminal);
//   * `X` on the diagonal; `NV#` for # bonded NVLinks; `PIX PXB PHB NODE SYS` for PCIe paths
//     (`SOC`, the pre-2017 name of `SYS`, too), in any letter case;
//   * NIC rows named `NIC#` with a `NIC Legend:` block mapping them to `mlx5_0`, or named `mlx5_0`
//     (or any non-GPU name) directly;
//   * trailing columns `CPU Affinity`, `NUMA Affinity`, `GPU NUMA ID`, each present or not, empty
//     or `N/A` or holding lists like `0-31,64-95`;
//   * the `Legend:` block present or not.
// Errors are values whose message names the line: "line 4: row GPU1 has 3 link cells, expected 4
// (ragged matrix)", "line 6: asymmetric: GPU2-GPU0 is SYS but GPU0-GPU2 (line 4) is PIX",
// "line 5: row GPU2, column GPU3: unknown link code 'NVX'".
//
//   auto topo = parse_nvidia_smi_topo(read_whole_file("dgx1.txt"));
//   if (!topo) report(topo.error().message);
#pragma once

#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/topology/node_topology.hpp"

namespace gpusched::topology {

// The matrix as read, before the graph is built: devices in matrix order (GPUs first; nvidia-smi
// prints them first, and the reader reorders if not) and the row-major pair matrix.
struct TopoMatrix {
  std::vector<Device> devices;
  std::vector<PairLink> matrix;
  bool has_cpu_affinity = false;
  bool has_numa_affinity = false;
  bool has_gpu_numa_id = false;
};

Result<TopoMatrix> read_nvidia_smi_topo_matrix(std::string_view text);
Result<NodeTopology> parse_nvidia_smi_topo(std::string_view text, NodeTopologyOptions options = {});

}  // namespace gpusched::topology
