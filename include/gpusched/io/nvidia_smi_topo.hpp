// gpusched/io/nvidia_smi_topo.hpp — reading `nvidia-smi topo -m` into a node's interconnect.
//
// The reader is compiled (src/io, part of gpusched::io); what it returns is the cluster model's
// NodeInterconnect (give it to ClusterState::set_node_interconnect) or, for a one-node question, the
// topology module's NodeTopology (header-only).
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
//   auto ic = gpusched::io::read_nvidia_smi_interconnect(read_whole_file("dgx1.txt"));
//   if (!ic) report(ic.error().message); else state.set_node_interconnect(node, std::move(*ic));
//   auto topo = gpusched::io::parse_nvidia_smi_topo(text);   // a NodeTopology to score GPU sets
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/cluster/node_interconnect.hpp"
#include "gpusched/topology/node_topology.hpp"

namespace gpusched::io {

// The matrix as read, before the graph is built: devices in matrix order (GPUs first; nvidia-smi
// prints them first, and the reader reorders if not) and the row-major pair matrix.
struct TopoMatrix {
  std::vector<NodeDevice> devices;
  std::vector<PairLink> matrix;
  bool has_cpu_affinity = false;
  bool has_numa_affinity = false;
  bool has_gpu_numa_id = false;
};

Result<TopoMatrix> read_nvidia_smi_topo_matrix(std::string_view text);
// The matrix as the cluster model's per-node interconnect.
Result<NodeInterconnect> read_nvidia_smi_interconnect(std::string_view text, InterconnectOptions options = {});
// The matrix as a graph, ready to score GPU sets.
Result<topology::NodeTopology> parse_nvidia_smi_topo(std::string_view text, InterconnectOptions options = {});

}  // namespace gpusched::io
