// The cluster-topology JSON reader: the nested and generator forms against hand-worked domain
// trees, and every error naming its JSON path and value.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/io/topology_json.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;
using namespace gpusched::io;

namespace {

using gpusched::topology_test::fixture;
using gpusched::topology_test::plain_cluster;

std::string fabric_error_of(std::string_view text, int nodes = 8) {
  auto s = plain_cluster(nodes);
  auto t = read_cluster_topology_json(text, s);
  REQUIRE_FALSE(t.ok());
  return t.error().message;
}

constexpr const char* kOneLevel = R"({"levels": [{"name": "leaf", "link": "ib-ndr"}], "domains": )";

}  // namespace

TEST_CASE("nested form: levels, links, oversubscription and the domain tree") {
  auto s = plain_cluster(8);
  auto t = read_cluster_topology_json(fixture("fabric.json"), s);
  REQUIRE(t.ok());
  REQUIRE(t->level_count() == 3);
  CHECK(t->level(0).label_key == "spine");
  CHECK(t->level(1).link == LinkKind::kIbNdr);
  CHECK(t->level(1).uplink_oversubscription == 2.0);
  CHECK(t->level(0).uplink_oversubscription == 1.0);
  CHECK(t->level(2).link == LinkKind::kNvLink5);
  CHECK(t->level(2).links_per_node == 18);
  CHECK(t->domain_count(0) == 1);
  CHECK(t->domain_count(1) == 2);
  CHECK(t->domain_count(2) == 4);
  CHECK(t->unplaced_nodes() == 1);  // gb-07 is named by no domain
  CHECK(t->node_domain(7, 0) == kNoDomain);
  CHECK(t->domain_name(2, t->node_domain(3, 2)) == "nvl1");
  CHECK(t->domain_name(1, t->node_domain(3, 1)) == "leaf0");
  CHECK(t->domain_name(1, t->node_domain(6, 1)) == "leaf1");
  CHECK(t->domain_nodes(1, t->node_domain(4, 1)).size() == 3);
  const std::vector<NodeId> same_nvl{0, 1}, same_leaf{0, 3}, spine{0, 4};
  CHECK(t->span(same_nvl).level == 2);
  CHECK(t->span(same_leaf).level == 1);
  CHECK(t->span(spine).level == 0);
  // The node-set pick works on it as on labels: 3 nodes x 4 GPUs best-fit into leaf1 (3 hosts),
  // leaving leaf0's 4 whole.
  TaskShape shape;
  shape.gpus = 4;
  shape.gpu_milli = kMilliPerGpu;
  auto req = s.compile(shape).value();
  auto need = t->constraint(LevelMode::kRequired, "leaf").value();
  NodeSetPick p = t->pick_nodes(s, req, 3, need);
  REQUIRE(p.found());
  CHECK(p.nodes == std::vector<NodeId>{4, 5, 6});
}

TEST_CASE("generator form: fanout per level, nodes_per_domain in cluster order") {
  auto s = plain_cluster(8);
  auto g = read_cluster_topology_json(fixture("fabric_generated.json"), s);
  REQUIRE(g.ok());
  CHECK(g->domain_count(0) == 1);
  CHECK(g->domain_count(1) == 2);
  CHECK(g->domain_count(2) == 4);
  CHECK(g->unplaced_nodes() == 0);
  CHECK(g->domain_name(2, g->node_domain(5, 2)) == "nvl-2");  // node 5 -> slot 5/2 = 2
  CHECK(g->domain_name(1, g->node_domain(5, 1)) == "leaf-1");
  CHECK(g->domain_name(1, g->node_domain(3, 1)) == "leaf-0");
  CHECK(g->domain_name(0, g->node_domain(7, 0)) == "spine-0");
  // Fewer nodes than slots: the last domains are short. More: an error with the numbers.
  auto five = plain_cluster(5);
  auto short_tree = read_cluster_topology_json(fixture("fabric_generated.json"), five);
  REQUIRE(short_tree.ok());
  CHECK(short_tree->domain_count(2) == 3);
  CHECK(fabric_error_of(fixture("fabric_generated.json"), 9) ==
        "fat_tree: 4 domains x 2 nodes_per_domain = 8 slots, but the cluster has 9 nodes");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf"}], "fat_tree": {"fanout": [2, 2], "nodes_per_domain": 4}})") ==
        "fat_tree.fanout: expected an array of 1 counts (one per level), got [2,2]");
}

TEST_CASE("errors name the JSON path and the value") {
  CHECK(fabric_error_of(fixture("fabric_bad_node.json")) == "domains[1].nodes[1]: unknown node \"gb-99\" (not in the cluster)");
  CHECK(fabric_error_of(std::string(kOneLevel) +
                 R"([{"name": "a", "nodes": ["gb-00"]}, {"name": "b", "nodes": ["gb-01", "gb-00"]}]})") ==
        "domains[1].nodes[1]: node \"gb-00\" is in two domains (also domains[0].nodes[0])");
  CHECK(fabric_error_of(std::string(kOneLevel) + R"([{"name": "a", "nodes": []}, {"name": "a", "nodes": []}]})") ==
        "domains[1].name: duplicate leaf id \"a\" (also domains[0])");
  const std::string two = R"({"levels": [{"name": "spine"}, {"name": "leaf"}], "domains": [)";
  // Ids are unique per level across the whole file, not only among siblings.
  CHECK(fabric_error_of(two + R"({"name": "s0", "children": [{"name": "l0", "nodes": []}]},
                          {"name": "s1", "children": [{"name": "l0", "nodes": []}]}]})") ==
        "domains[1].children[0].name: duplicate leaf id \"l0\" (also domains[0].children[0])");
  CHECK(fabric_error_of(two + R"({"name": "s0", "nodes": ["gb-00"]}]})") ==
        "domains[0].nodes: a spine domain holds \"children\" (leaf domains), not nodes");
  CHECK(fabric_error_of(std::string(kOneLevel) + R"([{"name": "a", "children": []}]})") ==
        "domains[0].children: leaf is the last level; its domains hold \"nodes\"");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf", "link": "ib-qdr"}], "domains": []})").starts_with(
      "levels[0].link: unknown link kind \"ib-qdr\" (known: nvlink1, "));
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf", "uplink_oversubscription": 0.5}], "domains": []})") ==
        "levels[0].uplink_oversubscription: expected a ratio >= 1, got 0.5");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf", "links_per_node": 0}], "domains": []})") ==
        "levels[0].links_per_node: expected an integer >= 1, got 0");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf"}, {"name": "leaf"}], "domains": []})") ==
        "levels[1].name: \"leaf\" repeats levels[0].name");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf", "lnik": "ib-ndr"}], "domains": []})") ==
        "levels[0].lnik: unknown field (expected one of: name, link, links_per_node, uplink_oversubscription)");
  CHECK(fabric_error_of(R"({"levels": []})") == "levels: expected a non-empty array, got []");
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf"}]})") == "domains, fat_tree: give exactly one of the two");
  CHECK(fabric_error_of(std::string(kOneLevel) + R"([{"name": "a", "nodes": [3]}]})") ==
        "domains[0].nodes[0]: expected a node name, got 3");
  CHECK(fabric_error_of("{\"levels\": [").starts_with("topology JSON: "));
  CHECK(fabric_error_of(R"({"levels": [{"name": "leaf"}], "fat_tree": {"fanout": [2], "nodes_per_domain": 0}})") ==
        "fat_tree.nodes_per_domain: expected an integer from 1 to 10^9, got 0");
  // The library entry point validates the ratio too (for callers that build levels in code).
  auto s = plain_cluster(2);
  auto bad = ClusterTopology::from_paths(s, {{"leaf", LinkKind::kIbNdr, 1, 0.5}}, {{"l0"}, {"l0"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "levels[0].uplink_oversubscription: expected a finite ratio >= 1, got 0.5");
}
