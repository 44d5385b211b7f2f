// `nvidia-smi topo -m` reader: every variant of the text, and errors that name the line.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpusched/io/nvidia_smi_topo.hpp"

using namespace gpusched::topology;
using namespace gpusched::io;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(GPUSCHED_FIXTURES_DIR) + "/topology/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& text) {
  auto r = read_nvidia_smi_topo_matrix(text);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("DGX-1: tabs, ANSI header, mlx5_N NICs named directly, CPU Affinity only, legend") {
  auto m = read_nvidia_smi_topo_matrix(fixture("dgx1_v100.txt"));
  REQUIRE(m.ok());
  REQUIRE(m->devices.size() == 12);
  CHECK(m->devices[0].name == "GPU0");
  CHECK(m->devices[8].kind == DeviceKind::kNic);
  CHECK(m->devices[8].name == "mlx5_0");
  CHECK(m->devices[8].nic_name == "mlx5_0");
  CHECK(m->devices[0].cpu_affinity == "0-19,40-59");
  CHECK(m->devices[7].cpu_affinity == "20-39,60-79");
  CHECK(m->devices[8].cpu_affinity.empty());
  CHECK(m->has_cpu_affinity);
  CHECK_FALSE(m->has_numa_affinity);
  auto at = [&](int a, int b) { return pair_link_name(m->matrix[static_cast<std::size_t>(a * 12 + b)]); };
  CHECK(at(0, 0) == "X");
  CHECK(at(0, 3) == "NV2");
  CHECK(at(0, 1) == "NV1");
  CHECK(at(0, 5) == "SYS");
  CHECK(at(0, 8) == "PIX");
  CHECK(at(2, 8) == "PHB");
  CHECK(at(9, 8) == "PHB");
}

TEST_CASE("PCIe server: spaces, no ANSI, NIC# with NIC Legend, all three affinity columns") {
  auto m = read_nvidia_smi_topo_matrix(fixture("pcie_2socket.txt"));
  REQUIRE(m.ok());
  REQUIRE(m->devices.size() == 10);
  CHECK(m->devices[8].name == "NIC0");
  CHECK(m->devices[8].nic_name == "mlx5_0");
  CHECK(m->devices[9].nic_name == "mlx5_1");
  CHECK(m->devices[0].cpu_affinity == "0-31,64-95");
  CHECK(m->devices[0].numa_affinity == "0");
  CHECK(m->devices[0].numa_node == 0);
  CHECK(m->devices[5].numa_node == 1);
  CHECK(m->devices[0].gpu_numa_id == -1);  // N/A
  CHECK(m->has_gpu_numa_id);
  CHECK(pair_link_name(m->matrix[4 * 10 + 5]) == "PXB");
  CHECK(pair_link_name(m->matrix[0 * 10 + 2]) == "NODE");
}

TEST_CASE("HGX H100: NV18 everywhere, double tab before GPU NUMA ID, empty NIC affinity fields") {
  auto m = read_nvidia_smi_topo_matrix(fixture("hgx_h100.txt"));
  REQUIRE(m.ok());
  REQUIRE(m->devices.size() == 12);
  CHECK(m->devices[0].numa_node == 0);
  CHECK(m->devices[6].numa_node == 1);
  CHECK(m->devices[6].cpu_affinity == "56-111,168-223");
  CHECK(m->devices[11].nic_name == "mlx5_3");
  CHECK(m->matrix[1] == PairLink{PairClass::kNvLink, 18});
}

TEST_CASE("minimal variants: no legend, no affinity columns, lower-case codes, SOC, CRLF, list affinities") {
  const std::string bare = "\tGPU0\tGPU1\nGPU0\t X \tnv4\nGPU1\tNV4\t X \n";
  auto m = read_nvidia_smi_topo_matrix(bare);
  REQUIRE(m.ok());
  CHECK(m->matrix[1] == PairLink{PairClass::kNvLink, 4});
  CHECK_FALSE(m->has_cpu_affinity);

  const std::string old = "        GPU0    GPU1    CPU Affinity\r\nGPU0     X      SOC     0-7,16-23\r\nGPU1    SOC      X      8-15,24-31\r\n";
  auto o = read_nvidia_smi_topo_matrix(old);
  REQUIRE(o.ok());
  CHECK(o->matrix[1] == PairLink{PairClass::kSys, 0});
  CHECK(o->devices[1].cpu_affinity == "8-15,24-31");

  // NUMA affinity listing two nodes: kept as text, no single node.
  const std::string two = "GPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\tX\tPHB\t0-63\t0-1\nGPU1\tPHB\tX\t0-63\t0-1\n";
  auto t = read_nvidia_smi_topo_matrix(two);
  REQUIRE(t.ok());
  CHECK(t->devices[0].numa_affinity == "0-1");
  CHECK(t->devices[0].numa_node == -1);

  // A NIC column before the GPUs is moved after them.
  const std::string nic_first = "\tmlx5_0\tGPU0\nmlx5_0\t X \tPIX\nGPU0\tPIX\t X \n";
  auto nf = read_nvidia_smi_topo_matrix(nic_first);
  REQUIRE(nf.ok());
  CHECK(nf->devices[0].name == "GPU0");
  CHECK(nf->devices[1].name == "mlx5_0");
}

TEST_CASE("errors name the line and the value") {
  CHECK(error_of("hello\nworld\n").find("no header") != std::string::npos);
  // Ragged: GPU1's row lacks a cell.
  CHECK(error_of("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tSYS\nGPU1\tPIX\t X \nGPU2\tSYS\tSYS\t X \n") ==
        "line 3: row GPU1 has 2 link cells, expected 3 (ragged matrix)");
  CHECK(error_of("GPU0 GPU1 CPU Affinity\nGPU0 X PIX 0-3\nGPU1 PIX 0-3\n") ==
        "line 3: row GPU1 has 1 link cells, expected 2 (ragged matrix)");
  // Asymmetric.
  CHECK(error_of("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tSYS\nGPU1\tPIX\t X \tPHB\nGPU2\tSYS\tNODE\t X \n") ==
        "line 4: asymmetric: GPU2-GPU1 is NODE but GPU1-GPU2 (line 3) is PHB");
  // Unknown link code.
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNVX\t X \n") ==
        "line 2: row GPU0, column GPU1: unknown link code \"NVX\" (expected X, NV#, PIX, PXB, PHB, NODE or SYS)");
  // Diagonal.
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n") ==
        "line 2: row GPU0, column GPU0: expected X on the diagonal, got \"PIX\"");
  // Missing row.
  CHECK(error_of("\tGPU0\tGPU1\nGPU0\t X \tPIX\n\nLegend:\n") == "line 3: the matrix has 1 rows, expected 2 (row GPU1 missing)");
  // Rows out of order.
  CHECK(error_of("\tGPU0\tGPU1\nGPU1\tPIX\t X \nGPU0\t X \tPIX\n") == "line 2: row \"GPU1\" where \"GPU0\" was expected");
  // Bad affinity list.
  CHECK(error_of("GPU0\tGPU1\tCPU Affinity\nGPU0\tX\tPIX\t0-3x\nGPU1\tPIX\tX\t0-3\n") ==
        "line 2: row GPU0, CPU Affinity: expected a CPU list like 0-31,64-95, got \"0-3x\"");
  // Too many trailing values.
  CHECK(error_of("GPU0\tGPU1\tCPU Affinity\nGPU0\tX\tPIX\t0-3\t7\nGPU1\tPIX\tX\t0-3\n").find("line 2: row GPU0 has 2 values") == 0);
  // Unknown header column after the affinities.
  CHECK(error_of("GPU0 GPU1 CPU Affinity Foo\n").find("unknown column \"Foo\"") != std::string::npos);
  // Repeated device.
  CHECK(error_of("GPU0 GPU0\n").find("appears twice") != std::string::npos);
}
