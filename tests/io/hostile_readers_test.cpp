// The readers hardened second (nvidia-smi topo and MIG text, fabric JSON, gang fields, the cluster
// format's names): hostile and careless input becomes a short error naming the line or field, never
// an exception, an abort, an allocation sized by a claim, or a silently empty success. The inputs
// mirror fuzz/regressions/ (the fuzz build replays those files; this suite runs in every build).
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "io/gang_json.hpp"
#include "gpusched/io/mig_nvidia_smi.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "gpusched/io/topology_json.hpp"
#include "io/json_input.hpp"
#include "io/text_input.hpp"

using namespace gpusched;
using namespace gpusched::io;

namespace {

std::string topo_error(std::string_view text) {
  auto r = read_nvidia_smi_topo_matrix(text);
  return r.ok() ? std::string("(accepted)") : r.error().message;
}

const char* const kLgip =
    "|   0  MIG 1g.5gb        19     7/7        4.75       No     14     0     0   |\n"
    "|                                                             1     0     0   |\n";

ClusterState eight_nodes() {
  std::string nodes;
  for (int i = 0; i < 8; ++i)
    nodes += std::string(i ? "," : "") + R"({"name": "gb-0)" + std::to_string(i) +
             R"(", "cpu": 144, "memory": "1Ti", "gpus": 4, "gpu_model": "H100-80GB"})";
  auto doc = read_cluster_json(R"({"nodes": [)" + nodes + "]}", "c.json");
  REQUIRE(doc.ok());
  auto st = ClusterState::build(doc->cluster, doc->registry);
  REQUIRE(st.ok());
  return std::move(*st);
}

}  // namespace

TEST_CASE("text_lines: LF, CRLF and a lone CR each end a line; no phantom last line") {
  using detail::text_lines;
  CHECK(text_lines("").empty());
  CHECK(text_lines("a\nb\n") == std::vector<std::string_view>{"a", "b"});
  CHECK(text_lines("a\r\nb\r\n") == std::vector<std::string_view>{"a", "b"});
  CHECK(text_lines("a\rb\r") == std::vector<std::string_view>{"a", "b"});
  // "\n\r" is two line ends (LF, then a lone CR): an empty line between a and b.
  CHECK(text_lines("a\n\rb") == std::vector<std::string_view>{"a", "", "b"});
}

TEST_CASE("nvidia-smi topo: the header alone cannot make the reader allocate n x n cells") {
  // 3,000 devices and no rows: refused from the line count, before the 9e6-cell matrix exists.
  std::string header;
  for (int i = 0; i < 3000; ++i) header += "\tGPU" + std::to_string(i);
  CHECK(topo_error(header + "\n") == "line 1: 3000 devices in the header, more than the limit of 1024");
  // Within the device limit but with fewer lines than rows.
  CHECK(topo_error("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPIX\tPIX\n") ==
        "line 1: the header names 3 devices but only 1 lines follow (one row per device expected)");
}

TEST_CASE("nvidia-smi topo: any line ending; control characters and long names refused; empty input") {
  const std::string lf = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2\t0-3\nGPU1\tNV2\t X \t0-3\n";
  std::string cr = lf, crlf;
  for (char& c : cr) c = c == '\n' ? '\r' : c;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  for (const std::string& text : {lf, cr, crlf}) {
    auto m = read_nvidia_smi_topo_matrix(text);
    REQUIRE(m.ok());
    CHECK(m->devices.size() == 2);
    CHECK(m->devices[1].cpu_affinity == "0-3");
  }
  CHECK(topo_error(std::string("\tGPU0\tNIC\0" "0\nGPU0\t X \tPIX\nNIC\0" "0\tPIX\t X \n", 39)) ==
        "line 1: device name: control character 0x00 in name \"NIC\\x000\"");
  const std::string long_name(100, 'N');
  CHECK(topo_error("\tGPU0\t" + long_name + "\nGPU0\t X \tPIX\n" + long_name + "\tPIX\t X \n").find("longer than 64") !=
        std::string::npos);
  CHECK(topo_error("").find("no header") == 0);
  // A value in a message is cut: a 10,000-character link code does not make a 10,000-character error.
  CHECK(topo_error("\tGPU0\tGPU1\nGPU0\t X \t" + std::string(10000, 'Q') + "\nGPU1\tPIX\t X \n").size() < 200);
}

TEST_CASE("nvidia-smi mig: inf memory, CR-only endings, empty input") {
  auto inf = parse_lgip(
      "|   0  MIG 1g.5gb        19     7/7        inf       No     14     0     0   |\n"
      "|                                                             1     0     0   |\n");
  REQUIRE_FALSE(inf.ok());
  CHECK(inf.error().message == "lgip line 1: memory \"inf\" is not a number of GiB");
  std::string cr = kLgip;
  for (char& c : cr) c = c == '\n' ? '\r' : c;
  auto rows = parse_lgip(cr);
  REQUIRE(rows.ok());
  CHECK(rows->size() == 1);
  CHECK((*rows)[0].ce == 1);
  auto lgipp = parse_lgipp("GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1\r");
  REQUIRE(lgipp.ok());
  CHECK((*lgipp)[0].starts == 0x7f);
  CHECK_FALSE(parse_lgip("").ok());
  CHECK_FALSE(parse_lgipp("").ok());
}

TEST_CASE("fabric JSON: through the one JSON entry point; level count bounded; names checked") {
  const ClusterState st = eight_nodes();
  auto big = read_cluster_topology_json(R"({"levels": [{"name": "rack", "links_per_node": 1e400}]})", st);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().code == ErrorCode::kOverflow);
  auto deep = read_cluster_topology_json(R"({"levels": )" + std::string(100000, '[') + std::string(100000, ']') + "}", st);
  REQUIRE_FALSE(deep.ok());
  CHECK(deep.error().code == ErrorCode::kLimit);
  // 33 levels of fanout 1: one more than kMaxTopologyLevels, refused before any recursion.
  std::string levels, fan;
  for (int i = 0; i < 33; ++i) {
    levels += std::string(i ? "," : "") + R"({"name": "l)" + std::to_string(i) + "\"}";
    fan += std::string(i ? "," : "") + "1";
  }
  auto many = read_cluster_topology_json(R"({"levels": [)" + levels + R"(], "fat_tree": {"fanout": [)" + fan +
                                             R"(], "nodes_per_domain": 8}})", st);
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().message == "levels: 33 levels, more than the limit of 32");
  auto nul = read_cluster_topology_json(R"({"levels": [{"name": "ra\u0000ck"}], "fat_tree": {"fanout": [1], "nodes_per_domain": 8}})", st);
  REQUIRE_FALSE(nul.ok());
  CHECK(nul.error().message == "levels[0].name: control character 0x00 in name \"ra\\x00ck\"");
  // An unknown key with a crafted name is shown escaped, not raw.
  auto key = read_cluster_topology_json("{\"lev\\nels\": 1}", st);
  REQUIRE_FALSE(key.ok());
  CHECK(key.error().message.rfind("\"lev\\x0aels\": unknown field", 0) == 0);
}

TEST_CASE("gang fields: names checked, 1e400 refused by the JSON entry point, no exception escapes") {
  auto doc = detail::parse_json(R"({"topology": {"level": "ra\u0000ck"}})", "j");
  REQUIRE(doc.ok());
  auto nul = detail::read_gang_constraints(*doc, "jobs[0]");
  REQUIRE_FALSE(nul.ok());
  CHECK(nul.error().message == "jobs[0].topology.level: control character 0x00 in name \"ra\\x00ck\"");
  CHECK(detail::parse_json(R"({"spread": {"level": "rack", "max_per_domain": 1e400}})", "j").error().code ==
        ErrorCode::kOverflow);
  auto weird = detail::parse_json(R"({"spread": [1, "x", null, {"level": 3}], "anti_affinity": {"a": 1}})", "j");
  REQUIRE(weird.ok());
  CHECK_FALSE(detail::read_gang_constraints(*weird, "job").ok());
}

TEST_CASE("cluster format: control characters in any name are refused, naming the field") {
  auto r = read_cluster_json(R"({"nodes": [{"name": "a\u0000b", "cpu": 1, "memory": 1}]})", "c.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("nodes[0].name: control character 0x00 in name \"a\\x00b\"") != std::string::npos);
  auto model = read_cluster_json(R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpus": 1, "gpu_model": "T4\n"}]})", "c.json");
  REQUIRE_FALSE(model.ok());
  CHECK(model.error().message.find("nodes[0].gpu_model: control character 0x0a") != std::string::npos);
}
