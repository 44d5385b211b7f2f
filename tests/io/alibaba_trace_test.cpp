// The Alibaba trace readers: every column layout, and errors that name file, line and column.
#include <doctest/doctest.h>

#include <string>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/alibaba_trace.hpp"

using namespace gpusched;
using namespace gpusched::io;

namespace {
const std::string kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

std::string pod_error(const std::string& text) {
  auto r = parse_alibaba_pods(text, "pods.csv");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}
}  // namespace

TEST_CASE("pod list: full layout, gpu_spec OR-list, times") {
  auto r = parse_alibaba_pods(kPodHeader +
                                  "p0,12000,16384,1,460,,LS,Running,0,12537496,0\r\n"
                                  "p1,88000,65536,8,1000,V100M32|G3,BE,Succeeded,5,,7\n"
                                  "\n"
                                  "p2,4000,1024,0,0,,LS,Running,1,2,3\n",
                              "pods.csv");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  const TracePod& p0 = (*r)[0];
  CHECK(p0.cpu == 12000);
  CHECK(p0.memory == 16384 * kMiB);
  CHECK(p0.gpus == 1);
  CHECK(p0.gpu_milli == 460);
  CHECK(p0.gpu_spec.empty());
  CHECK(p0.shape().shares_gpu());
  const TracePod& p1 = (*r)[1];
  CHECK(p1.gpu_spec == std::vector<std::string>{"V100M32", "G3"});
  CHECK(p1.deletion_time == -1);
  CHECK(p1.scheduled_time == 7);
  CHECK(p1.shape().total_gpu_milli() == 8000);
  CHECK_FALSE((*r)[2].shape().needs_gpu());
}

TEST_CASE("pod list: the short multigpu layout reads") {
  auto r = parse_alibaba_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,2,2,1000\n", "m.csv");
  REQUIRE(r.ok());
  CHECK((*r)[0].gpus == 2);
  CHECK((*r)[0].qos.empty());
  CHECK((*r)[0].creation_time == -1);
}

TEST_CASE("pod list: malformed rows name file, line and column") {
  CHECK(pod_error(kPodHeader + "p0,12000,16384,1,460,,LS,Running,0,1,0\np1,12000,16384,-1,460,,LS,Running,0,1,0\n") ==
        "pods.csv:3: column 4 (num_gpu): expected a non-negative integer, got \"-1\"");
  CHECK(pod_error(kPodHeader + "p0,12x,16384,1,460,,LS,Running,0,1,0\n") ==
        "pods.csv:2: column 2 (cpu_milli): expected a non-negative integer, got \"12x\"");
  CHECK(pod_error(kPodHeader + "p0,1,1,1,1200,,LS,Running,0,1,0\n") ==
        "pods.csv:2: column 5 (gpu_milli): value 1200 exceeds the maximum 1000");
  CHECK(pod_error(kPodHeader + "p0,1,1,2,500,,LS,Running,0,1,0\n").find("pods.csv:2: column 5 (gpu_milli)") == 0);
  CHECK(pod_error(kPodHeader + "p0,1,1,0,500,,LS,Running,0,1,0\n").find("gpu_milli 500 with num_gpu 0") !=
        std::string::npos);
  CHECK(pod_error(kPodHeader + "p0,1,1,1,500,T4||G2,LS,Running,0,1,0\n") ==
        "pods.csv:2: column 6 (gpu_spec): empty model name in \"T4||G2\"");
  CHECK(pod_error(kPodHeader + "p0,1,1,1,500\n") == "pods.csv:2: expected 11 columns as in the header, got 5");
  CHECK(pod_error(kPodHeader + "p0,1,1,1,500,,LS,Running,x,1,0\n").find("column 9 (creation_time)") !=
        std::string::npos);
  CHECK(pod_error("name,cpu_milli,memory_mib,num_gpu\n") == "pods.csv:1: missing column \"gpu_milli\" in the header");
  CHECK(pod_error("") == "pods.csv: empty file (expected a header line)");
  CHECK(pod_error(kPodHeader + ",1,1,1,500,,LS,Running,0,1,0\n") == "pods.csv:2: column 1 (name): empty pod name");
  CHECK(pod_error(kPodHeader + "\"p0\",1,1,1,500,,LS,Running,0,1,0\n").find("column 1 (name): quoted") !=
        std::string::npos);
}

TEST_CASE("node list: rows and errors") {
  auto r = parse_alibaba_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,G2\nc0,64000,1024,0,\n", "n.csv");
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].gpus == 8);
  CHECK((*r)[0].memory == 393216 * kMiB);
  CHECK((*r)[1].model.empty());
  const Cluster c = to_cluster(*r);
  CHECK(c.gpu_count(0) == 8);
  CHECK(c.gpu(0, 3).model == "G2");
  auto bad = parse_alibaba_nodes("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,\n", "n.csv");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "n.csv:2: column 5 (model): 8 GPUs but no model");
  CHECK(read_alibaba_nodes("/no/such/file.csv").error().message == "/no/such/file.csv: cannot open file");
}

TEST_CASE("the shipped trace reads completely and its models are known") {
  const std::string dir = std::string(GPUSCHED_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";
  auto nodes = read_alibaba_nodes(dir + "openb_node_list_gpu_node.csv");
  REQUIRE(nodes.ok());
  CHECK(nodes->size() == 1213);
  std::int64_t gpus = 0;
  for (const auto& n : *nodes) gpus += n.gpus;
  CHECK(gpus == 6212);  // SOURCE.txt: 1213 GPU nodes, 6212 GPUs
  auto state = ClusterState::build(to_cluster(*nodes), GpuModelRegistry::builtin());
  REQUIRE(state.ok());
  auto pods = read_alibaba_pods(dir + "openb_pod_list_default.csv");
  REQUIRE(pods.ok());
  CHECK(pods->size() == 8152);
  auto multi = read_alibaba_pods(dir + "openb_pod_list_multigpu50.csv");
  REQUIRE(multi.ok());
  CHECK(multi->size() == 9061);
  auto spec = read_alibaba_pods(dir + "openb_pod_list_gpuspec33.csv");
  REQUIRE(spec.ok());
  std::size_t constrained = 0;
  for (const auto& p : *spec) {
    constrained += p.gpu_spec.empty() ? 0 : 1;
    for (const auto& m : p.gpu_spec) CHECK(state->registry().find(m).has_value());
  }
  CHECK(constrained > 0);
}

TEST_CASE("pod list: CR-only, CRLF and LF line endings read the same records") {
  const std::string lf = kPodHeader + "p0,1000,10,1,500,,LS,Running,0,10,0\np1,2000,20,0,0,,BE,Running,1,,\n";
  std::string cr = lf, crlf;
  for (char& c : cr)
    if (c == '\n') c = '\r';
  for (char c : lf) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (const std::string& text : {lf, cr, crlf}) {
    auto r = parse_alibaba_pods(text, "pods.csv");
    REQUIRE(r.ok());
    REQUIRE(r->size() == 2);
    CHECK((*r)[0].gpu_milli == 500);
    CHECK((*r)[1].cpu == 2000);
  }
  // Line numbers in errors count a lone CR as a line end too.
  std::string bad = kPodHeader + "p0,1000,10,1,500,,LS,Running,0,10,0\rp1,-5,20,0,0,,BE,Running,1,,\r";
  bad[kPodHeader.size() - 1] = '\r';
  CHECK(pod_error(bad) == "pods.csv:3: column 2 (cpu_milli): expected a non-negative integer, got \"-5\"");
}

TEST_CASE("pod list: control characters in names are refused, long values are cut in messages") {
  std::string nul_name = kPodHeader + "p0,1000,10,1,500,,LS,Running,0,10,0\n";
  nul_name[kPodHeader.size() + 1] = '\0';
  CHECK(pod_error(nul_name) == "pods.csv:2: column 1 (name): control character 0x00 in \"p\\x00\"");
  auto r = parse_alibaba_pods(nul_name, "pods.csv");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidValue);
  CHECK(r.error().field == "name");

  const std::string huge(100000, '9');
  const std::string msg = pod_error(kPodHeader + "p0,x" + huge + ",10,1,500,,LS,Running,0,10,0\n");
  CHECK(msg.size() < 200);
  CHECK(msg.find("... (100001 bytes)") != std::string::npos);
}

TEST_CASE("empty inputs are errors, not empty results that print percentages of nothing") {
  CHECK(pod_error("") == "pods.csv: empty file (expected a header line)");
  auto nodes = parse_alibaba_nodes("", "nodes.csv");
  REQUIRE_FALSE(nodes.ok());
  CHECK(nodes.error().code == ErrorCode::kMissingField);
  // A header alone is a valid, empty list for the reader; the replay refuses it (tests/sim).
  auto only_header = parse_alibaba_pods(kPodHeader, "pods.csv");
  REQUIRE(only_header.ok());
  CHECK(only_header->empty());
}
