// Kubernetes Nodes into the cluster model: quantities, GPUs through GFD labels, MIG strategies,
// cordon, taints, readiness; JSON and YAML; errors naming object, field and value.
#include <doctest/doctest.h>

#include "gpusched/core/mig_profiles.hpp"
#include "io/k8s_test_util.hpp"
#include "test_util.hpp"

using namespace gpusched;
using k8s_test::k8s_fixture;
using k8s_test::node;

namespace {

std::string node_yaml(const std::string& name, const std::string& labels, const std::string& allocatable,
                      const std::string& extra = "") {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  labels: " + labels + "\n" + extra +
         "status:\n  allocatable: " + allocatable + "\n";
}

}  // namespace

TEST_CASE("k8s nodes: the fixture NodeList (GFD labels, both MIG strategies, cordon, readiness)") {
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml")});
  REQUIRE(in.cluster.nodes().size() == 7);
  const auto& a = node(in, "gpu-a100-0");
  CHECK(a.cpu == 127500);                         // allocatable "127500m", not capacity "128"
  CHECK(a.memory == 1048LL * 1024 * 1024 * 1024);  // "1048Gi"
  REQUIRE(a.gpus.size() == 8);
  CHECK(a.gpus[0].model == "A100-80GB");  // "NVIDIA-A100-SXM4-80GB" through the registry's aliases
  CHECK_FALSE(a.gpus[0].mig_mode);
  CHECK(a.schedulable);
  CHECK(a.healthy);
  CHECK(k8s_test::has_label(a, "example.com/rack"));

  // Single strategy: 14 MIG devices of 1g.5gb; an A100-40GB holds 7 (slices 0..6): 2 GPUs.
  const auto& spec = mig::MigCatalog::builtin().spec(*mig::MigCatalog::builtin().find("A100-SXM4-40GB"));
  const auto profile_id = [&](const char* name) {
    return spec.profiles[static_cast<std::size_t>(mig::match_profile(spec, *mig::parse_profile_name(name)))].id;
  };
  const auto& s = node(in, "mig-single-0");
  REQUIRE(s.gpus.size() == 2);
  for (const auto& g : s.gpus) {
    CHECK(g.mig_mode);
    CHECK(g.model == "A100-SXM4-40GB");
    REQUIRE(g.mig_instances.size() == 7);
    for (std::size_t i = 0; i < 7; ++i) {
      CHECK(g.mig_instances[i].profile_id == profile_id("1g.5gb"));
      CHECK(g.mig_instances[i].start == i);
    }
  }
  // Mixed strategy: gpu.count 2, nvidia.com/gpu 0: both GPUs in MIG mode; the 3g.20gb pair fills
  // GPU 0 at slices 0 and 4 (its allowed starts), the two 1g.5gb go on GPU 1 at slices 0 and 1.
  const auto& m = node(in, "mig-mixed-0");
  REQUIRE(m.gpus.size() == 2);
  REQUIRE(m.gpus[0].mig_instances.size() == 2);
  CHECK(m.gpus[0].mig_instances[0].profile_id == profile_id("3g.20gb"));
  CHECK(m.gpus[0].mig_instances[0].start == 0);
  CHECK(m.gpus[0].mig_instances[1].start == 4);
  REQUIRE(m.gpus[1].mig_instances.size() == 2);
  CHECK(m.gpus[1].mig_instances[0].profile_id == profile_id("1g.5gb"));
  CHECK(m.gpus[1].mig_instances[1].start == 1);
  // Kubernetes binds only the devices the node advertises: every MIG layout read is fixed.
  for (const auto* n : {&s, &m})
    for (const auto& g : n->gpus) CHECK(g.mig_layout_fixed);

  CHECK_FALSE(node(in, "cpu-cordoned").schedulable);
  CHECK(node(in, "cpu-cordoned").healthy);
  CHECK_FALSE(node(in, "cpu-notready").healthy);  // Ready "Unknown"
  CHECK(node(in, "cpu-0").gpus.empty());

  // The state accepts it (MIG layouts valid against the profile tables).
  auto state = ClusterState::build(in.cluster, in.registry);
  REQUIRE_MESSAGE(state.ok(), (state.ok() ? "" : state.error().message));
  CHECK(state->node_count() == 7);
}

TEST_CASE("k8s nodes: JSON (kubectl -o json) and YAML give the same cluster; a single Node and kind: List") {
  const std::string json_text = R"({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "Tesla-T4"}},
     "status": {"allocatable": {"cpu": "7910m", "memory": "32Gi", "nvidia.com/gpu": "1"}}}]})";
  const std::string yaml_text = node_yaml("n1", "{nvidia.com/gpu.product: Tesla-T4}",
                                          "{cpu: 7910m, memory: 32Gi, nvidia.com/gpu: 1}");
  auto j = k8s_test::read_ok({json_text});
  auto y = k8s_test::read_ok({yaml_text});
  REQUIRE(j.cluster.nodes().size() == 1);
  REQUIRE(y.cluster.nodes().size() == 1);
  const auto& a = j.cluster.nodes()[0];
  const auto& b = y.cluster.nodes()[0];
  CHECK(a.cpu == 7910);
  CHECK(a.cpu == b.cpu);
  CHECK(a.memory == b.memory);
  REQUIRE(a.gpus.size() == 1);
  CHECK(a.gpus[0].model == "T4");  // "Tesla-T4": the Tesla- prefix GFD writes for older boards
  CHECK(b.gpus[0].model == "T4");
  CHECK(a.labels == b.labels);
}

TEST_CASE("k8s nodes: Kubernetes quantities (resource.Quantity suffixes and exponents)") {
  // 1.5Gi = 1610612736 B; 129M = 129e6 B; 1e3 (cpu) = 1000 cores = 1000000 m.
  auto in = k8s_test::read_ok({node_yaml("q", "{}", "{cpu: 1e3, memory: 1.5Gi}"), node_yaml("r", "{}", "{cpu: 250m, memory: 129M}")});
  CHECK(node(in, "q").cpu == 1000000);
  CHECK(node(in, "q").memory == 1610612736);
  CHECK(node(in, "r").cpu == 250);
  CHECK(node(in, "r").memory == 129000000);
}

TEST_CASE("k8s nodes: errors name the object, the field and the value") {
  const std::string unknown = k8s_test::read_error(
      {node_yaml("gpu-x", "{nvidia.com/gpu.product: Foo-GPU-9000}", "{cpu: 8, memory: 8Gi, nvidia.com/gpu: 2}")});
  CHECK(unknown.find("Node gpu-x") != std::string::npos);
  CHECK(unknown.find("metadata.labels[\"nvidia.com/gpu.product\"]") != std::string::npos);
  CHECK(unknown.find("\"Foo-GPU-9000\"") != std::string::npos);

  const std::string no_product = k8s_test::read_error({node_yaml("g", "{}", "{cpu: 8, memory: 8Gi, nvidia.com/gpu: 2}")});
  CHECK(no_product.find("Node g: metadata.labels[\"nvidia.com/gpu.product\"]: missing") != std::string::npos);

  const std::string bad_qty = k8s_test::read_error({node_yaml("b", "{}", "{cpu: 8, memory: 12Qi}")});
  CHECK(bad_qty.find("Node b") != std::string::npos);
  CHECK(bad_qty.find("status.allocatable[\"memory\"]") != std::string::npos);
  CHECK(bad_qty.find("12Qi") != std::string::npos);

  const std::string no_cpu = k8s_test::read_error({node_yaml("c", "{}", "{memory: 8Gi}")});
  CHECK(no_cpu.find("Node c: status.allocatable.cpu: missing") != std::string::npos);

  const std::string dup = k8s_test::read_error({node_yaml("d", "{}", "{cpu: 1, memory: 1Gi}"), node_yaml("d", "{}", "{cpu: 1, memory: 1Gi}")});
  CHECK(dup.find("duplicate Node \"d\"") != std::string::npos);

  const std::string taint = k8s_test::read_error(
      {node_yaml("t", "{}", "{cpu: 1, memory: 1Gi}", "spec:\n  taints: [{key: k, effect: Sometimes}]\n")});
  CHECK(taint.find("Node t: spec.taints[0].effect") != std::string::npos);
  CHECK(taint.find("\"Sometimes\"") != std::string::npos);

  const std::string not_mig = k8s_test::read_error(
      {node_yaml("m", "{nvidia.com/gpu.product: NVIDIA-L4}", "{cpu: 8, memory: 8Gi, nvidia.com/mig-1g.5gb: 2}")});
  CHECK(not_mig.find("Node m") != std::string::npos);
  CHECK(not_mig.find("no MIG profile table") != std::string::npos);

  const std::string no_kind = k8s_test::read_error({"apiVersion: v1\nmetadata: {name: x}\n"});
  CHECK(no_kind.find("kind: missing") != std::string::npos);
}

TEST_CASE("k8s nodes: hostile YAML is an error, not a crash or an allocation") {
  const std::string malformed = k8s_test::read_error({"kind: Node\nmetadata: {name: [unclosed\n"});
  CHECK(malformed.find("0.yaml: malformed YAML at line") != std::string::npos);

  std::string deep = "kind: Node\nx: ";
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  CHECK(k8s_test::read_error({deep}).find("nested deeper than") != std::string::npos);

  // yaml-cpp queued every flow start before the depth check saw one (4 M '[': 1.1 GB): a bound on
  // unclosed brackets comes first.
  const std::string flood = k8s_test::read_error({"kind: Node\nx: " + std::string(20000, '[')});
  CHECK(flood.find("0.yaml: YAML nested deeper than 64 levels (more than 10000 unclosed '[' or '{')") != std::string::npos);
  if (!gpusched::testing::sanitized) {
    // One object of more values than the API server could store (a 50 MB pod of 25 M items took
    // 29 s and 2.2 GB): refused once the count passes 2^20. (Release only: 2 MB of YAML.)
    std::string big = "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, args: [";
    for (int i = 0; i < (1 << 20); ++i) big += "1,";
    big += "1]}]}\n";
    CHECK(k8s_test::read_error({big}).find("0.yaml: a Kubernetes object of more than 1048576 YAML values") != std::string::npos);
  }

  // YAML 1.2: keys of a mapping are unique (kubectl: "mapping key already defined"); the last one won.
  const std::string dup_key = k8s_test::read_error(
      {"kind: Node\nmetadata: {name: n}\nstatus:\n  allocatable: {cpu: 1, memory: 1Gi, nvidia.com/gpu: \"100\", nvidia.com/gpu: \"1\"}\n"});
  CHECK(dup_key.find("0.yaml: malformed YAML at line 4") != std::string::npos);
  CHECK(dup_key.find("the mapping key \"nvidia.com/gpu\" appears twice") != std::string::npos);

  // "Billion laughs": nine levels of aliases each repeating the last nine times.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const std::string name(1, c), prev(1, static_cast<char>(c - 1));
    std::string line = name + ": &" + name + " [";
    for (int k = 0; k < 9; ++k) line += (k ? ", *" : "*") + prev;
    laughs += line + "]\n";
  }
  CHECK(k8s_test::read_error({laughs}).find("aliases expand") != std::string::npos);

  // A stray ',' outside a flow collection loops forever in yaml-cpp 0.7's LoadAll (jbeder/yaml-cpp#1040);
  // the reader reports it instead. A mapping key that is not a scalar is refused too.
  for (const std::string stray : {",", "# flow\n{a: 1},", "kind: Node\n---\n,\n"})
    CHECK(k8s_test::read_error({stray}).find("0.yaml: malformed YAML at line") != std::string::npos);
  CHECK(k8s_test::read_error({"# flow\n{[a]: 1}"}).find("a mapping key must be a scalar") != std::string::npos);

  // YAML is Unicode text; bytes that are not UTF-8 in a value or a key are refused with their position
  // (a name the JSON writers cannot write must not get in). Lone continuation byte, overlong "/",
  // UTF-16 surrogate, truncated sequence.
  for (const std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xE2\x82"}) {
    CHECK(k8s_test::read_error({"kind: Node\nmetadata:\n  name: gpu" + bad + "\n"}) ==
          "0.yaml: text at line 3, column 9 is not valid UTF-8");
    CHECK(k8s_test::read_error({"kind: Node\nmetadata:\n  n" + bad + ": x\n"}).find("is not valid UTF-8") != std::string::npos);
  }
  // Well-formed multi-byte text is kept as it is.
  const auto ok = k8s_test::read_ok({node_yaml("gpu-\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "{}", "{cpu: 8, memory: 64Gi}")});
  CHECK(node(ok, "gpu-\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80").name.size() == 13);
}

TEST_CASE("k8s nodes: taints, PreferNoSchedule reported, topology labels checked") {
  const std::string text = node_yaml("p", "{}", "{cpu: 1, memory: 1Gi}", "spec:\n  taints: [{key: k, effect: PreferNoSchedule}]\n");
  auto in = k8s_test::read_ok({text});
  CHECK(k8s_test::has_warning(in, "spec.taints[0].effect"));
  // The default topology level (zone) is missing on the node: reported.
  CHECK(k8s_test::has_warning(in, "topology.kubernetes.io/zone"));
  io::k8s::Options opt;
  opt.topology_levels = {};
  auto quiet = k8s_test::read_ok({text}, opt);
  CHECK_FALSE(k8s_test::has_warning(quiet, "topology.kubernetes.io/zone"));
}

TEST_CASE("k8s options: extra topology levels follow the defaults, each key once") {
  io::k8s::Options opt;
  const std::vector<std::string> extra = {"example.com/block", "topology.kubernetes.io/zone", "example.com/rack",
                                          "example.com/block"};
  opt.add_topology_levels(extra);
  CHECK(opt.topology_levels ==
        std::vector<std::string>{"topology.kubernetes.io/zone", "example.com/block", "example.com/rack"});
}

TEST_CASE("k8s nodes: MIG products and counts as GFD writes them; a cluster's GPUs are bounded before they are built") {
  // "A100-SXM4-40GB-MIG-" (no profile) was read as 14 whole GPUs.
  const std::string no_profile = k8s_test::read_error(
      {node_yaml("m", "{nvidia.com/gpu.product: A100-SXM4-40GB-MIG-, nvidia.com/mig.strategy: single}", "{cpu: 1, memory: 1Gi, nvidia.com/gpu: \"14\"}")});
  CHECK(no_profile.find("Node m: metadata.labels[\"nvidia.com/gpu.product\"]: \"A100-SXM4-40GB-MIG-\": no MIG profile after \"-MIG-\"") !=
        std::string::npos);
  // Mixed strategy with gpu.count "0" and MIG devices: the devices need a GPU the count does not
  // give; it is added, with a warning (it was added without a word).
  auto in = k8s_test::read_ok({node_yaml("x", "{nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, nvidia.com/mig.strategy: mixed, nvidia.com/gpu.count: \"0\"}",
                                         "{cpu: 1, memory: 1Gi, nvidia.com/gpu: \"0\", nvidia.com/mig-3g.20gb: \"2\"}")});
  CHECK(node(in, "x").gpus.size() == 1);
  bool warned = false;
  for (const auto& w : in.warnings) warned = warned || w.field == "metadata.labels[\"nvidia.com/gpu.count\"]";
  CHECK(warned);
  // 17 nodes of 65,535 GPUs pass the cluster's 2^20: refused at the 17th (200 such nodes, 40 KB of
  // YAML, took 1.3 GB).
  std::vector<std::string> many;
  for (int i = 0; i < 17; ++i) {
    std::string name = "g";  // appended: GCC 12 warns falsely (-Wstringop-overflow) on "g" + to_string at -O3
    name += std::to_string(i);
    many.push_back(node_yaml(name, "{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}", "{cpu: 1, memory: 1Gi, nvidia.com/gpu: \"65535\"}"));
  }
  const std::string over = k8s_test::read_error(many);
  CHECK(over.find("16.yaml: Node g16: status.allocatable: the nodes so far have 1114095 GPUs: more than the 1048576") != std::string::npos);
}
