// libFuzzer: the `nvidia-smi topo -m` text reader (docs/topology.md) on arbitrary bytes; a matrix it
// accepts must also build a NodeTopology or be refused with an error, never crash.
#include "fuzz_harness.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"

GPUSCHED_FUZZ_TARGET(nvidia_smi_topo, data, size) {
  const auto text = gpusched::fuzz::as_text(data, size);
  gpusched::fuzz::check_result(gpusched::io::read_nvidia_smi_topo_matrix(text));
  gpusched::fuzz::check_result(gpusched::io::parse_nvidia_smi_topo(text));
  return 0;
}
