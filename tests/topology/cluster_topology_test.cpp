// Cluster topology: domains from labels (Kueue TAS semantics) and node-set picks, hand-worked and
// against a brute-force oracle over seeded random clusters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;
using namespace gpusched::topology_test;

namespace {

constexpr const char* kHost = "kubernetes.io/hostname";

NodeSpec gpu_node(std::string name, int gpus, int used, std::string block, std::string rack) {
  NodeSpec n;
  n.name = name;
  n.cpu = 128000;
  n.memory = 1024 * kGiB;
  for (int g = 0; g < gpus; ++g) n.gpus.push_back({"H100-SXM5-80GB", g < used ? kMilliPerGpu : 0, 0, true});
  if (!block.empty()) n.labels.emplace_back(kBlock, block);
  if (!rack.empty()) n.labels.emplace_back(kRack, rack);
  n.labels.emplace_back(kHost, name);
  return n;
}

ClusterState state_of(const Cluster& c) { return ClusterState::build(c, GpuModelRegistry::builtin()).value(); }

std::vector<TopologyLevel> three_levels() { return {{kBlock, LinkKind::kIbNdr, 8}, {kRack, LinkKind::kIbNdr, 8}, {kHost}}; }

int sum(const std::vector<std::int32_t>& v) { return std::accumulate(v.begin(), v.end(), 0); }

}  // namespace

TEST_CASE("domains follow Kueue semantics: a rack name repeated in two blocks is two domains") {
  Cluster c({gpu_node("a", 8, 0, "b1", "r1"), gpu_node("b", 8, 0, "b1", "r1"), gpu_node("c", 8, 0, "b2", "r1"),
             gpu_node("d", 8, 0, "", "r2")});
  auto s = state_of(c);
  auto t = ClusterTopology::from_labels(s, three_levels());
  REQUIRE(t.ok());
  CHECK(t->domain_count(0) == 2);
  CHECK(t->domain_count(1) == 2);  // b1/r1 and b2/r1
  CHECK(t->unplaced_nodes() == 1);  // "d" has no block label
  CHECK(t->node_domain(3, 0) == kNoDomain);
  CHECK(t->node_domain(0, 1) == t->node_domain(1, 1));
  CHECK(t->node_domain(0, 1) != t->node_domain(2, 1));
  CHECK(t->domain_name(1, t->node_domain(2, 1)) == "r1");
  CHECK(t->find_level("rack") == 1u);
  CHECK(t->find_level(kHost) == 2u);
  CHECK_FALSE(t->find_level("row").has_value());
  auto bad = t->constraint(LevelMode::kRequired, "row");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("'row'") != std::string::npos);
  const std::vector<NodeId> ab{0, 1}, ac{0, 2}, aa{0, 0};
  CHECK(t->span(ab).level == 1);
  CHECK(t->span(ac).level == NodeSpan::kClusterWide);
  CHECK(t->span(aa).level == NodeSpan::kSingleNode);
}

TEST_CASE("bad levels are errors naming the field") {
  Cluster c({gpu_node("a", 8, 0, "b1", "r1")});
  auto s = state_of(c);
  CHECK_FALSE(ClusterTopology::from_labels(s, {}).ok());
  auto dup = ClusterTopology::from_labels(s, {{kRack}, {kRack}});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message.find("levels[1].label_key") != std::string::npos);
  auto paths = ClusterTopology::from_paths(s, {{"block"}, {"rack"}}, {{"b1"}});
  REQUIRE_FALSE(paths.ok());
  CHECK(paths.error().message.find("paths[0]") != std::string::npos);
}

TEST_CASE("required rack: the best-fit rack, largest nodes first") {
  // Rack r1: 4 nodes with 8 free GPUs (32); rack r2: 3 nodes with 8 free (24); rack r3: 2 free nodes.
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(gpu_node(fmt::format("r1n{}", i), 8, 0, "b1", "r1"));
  for (int i = 0; i < 3; ++i) nodes.push_back(gpu_node(fmt::format("r2n{}", i), 8, 0, "b1", "r2"));
  nodes.push_back(gpu_node("r2n3", 8, 8, "b1", "r2"));  // full
  for (int i = 0; i < 2; ++i) nodes.push_back(gpu_node(fmt::format("r3n{}", i), 8, 0, "b2", "r3"));
  Cluster c(nodes);
  auto s = state_of(c);
  auto t = ClusterTopology::from_labels(s, three_levels()).value();
  const TaskRequest req = whole_gpus(s, 8);
  CHECK(ClusterTopology::task_capacity(s, 0, req) == 1);
  CHECK(ClusterTopology::task_capacity(s, 7, req) == 0);

  SUBCASE("3 tasks go to r2 (24 free GPUs) not r1 (32): the smallest rack that holds them") {
    auto pick = t.pick_nodes(s, req, 3, t.constraint(LevelMode::kRequired, kRack).value());
    REQUIRE(pick.found());
    CHECK(pick.nodes == std::vector<NodeId>{4, 5, 6});
    CHECK(pick.span.level == 1);
    CHECK(t.domain_name(1, pick.span.domain) == "r2");
  }
  SUBCASE("2 tasks: r3 fits exactly") {
    auto pick = t.pick_nodes(s, req, 2, t.constraint(LevelMode::kRequired, kRack).value());
    REQUIRE(pick.found());
    CHECK(pick.nodes == std::vector<NodeId>{8, 9});
  }
  SUBCASE("5 tasks cannot be in one rack: required fails with numbers, preferred spreads in block b1") {
    auto req_pick = t.pick_nodes(s, req, 5, t.constraint(LevelMode::kRequired, kRack).value());
    CHECK_FALSE(req_pick.found());
    CHECK(req_pick.reason == "no rack has room for 5 tasks: the largest free one holds 4 (rack 'r1')");
    auto pref = t.pick_nodes(s, req, 5, t.constraint(LevelMode::kPreferred, kRack).value());
    REQUIRE(pref.found());
    CHECK_FALSE(pref.preference_met);
    CHECK(pref.span.level == 0);  // block b1
    CHECK(pref.nodes.size() == 5);
    // All of r1 (the larger rack) and one node of r2.
    CHECK(std::count_if(pref.nodes.begin(), pref.nodes.end(), [](NodeId n) { return n < 4; }) == 4);
  }
  SUBCASE("more than the cluster holds") {
    auto pick = t.pick_nodes(s, req, 10, {});
    CHECK_FALSE(pick.found());
    CHECK(pick.reason == "only 9 tasks fit in the cluster, 10 requested");
  }
  SUBCASE("1-GPU tasks pack onto a single node when one holds them all") {
    auto pick = t.pick_nodes(s, whole_gpus(s, 1), 8, t.constraint(LevelMode::kRequired, kBlock).value());
    REQUIRE(pick.found());
    CHECK(pick.nodes.size() == 1);
    CHECK(pick.span.level == NodeSpan::kSingleNode);
  }
  SUBCASE("bad task count is a reason, not a crash") {
    auto pick = t.pick_nodes(s, req, 0, {});
    CHECK_FALSE(pick.found());
    CHECK(pick.reason.find("tasks") != std::string::npos);
  }
}

TEST_CASE("property: picks respect capacity and the required level, and are optimal in domain count") {
  // Oracle: a required-level pick is found iff some domain at that level (or a node) holds the
  // tasks; the chosen nodes never exceed their capacities and sum to the tasks.
  SplitMix64 rng{0x5eed};
  for (int round = 0; round < 200; ++round) {
    std::vector<NodeSpec> nodes;
    const int n = 1 + static_cast<int>(rng.next() % 24);
    for (int i = 0; i < n; ++i)
      nodes.push_back(gpu_node(fmt::format("n{}", i), 8, static_cast<int>(rng.next() % 9),
                               fmt::format("b{}", rng.next() % 2), fmt::format("r{}", rng.next() % 3)));
    Cluster c(nodes);
    auto s = state_of(c);
    auto t = ClusterTopology::from_labels(s, three_levels()).value();
    const int per_task = 1 + static_cast<int>(rng.next() % 4);
    const TaskRequest req = whole_gpus(s, per_task);
    const int tasks = 1 + static_cast<int>(rng.next() % 12);
    const std::size_t level = rng.next() % 2;
    auto pick = t.pick_nodes(s, req, tasks, {LevelMode::kRequired, level});
    // Oracle by brute force over domains.
    bool fits = false;
    for (DomainId d = 0; d < t.domain_count(level); ++d) {
      int cap = 0;
      for (NodeId node : t.domain_nodes(level, d)) cap += ClusterTopology::task_capacity(s, node, req);
      fits = fits || cap >= tasks;
    }
    CHECK(pick.found() == fits);
    if (!pick.found()) continue;
    CHECK(sum(pick.tasks_per_node) == tasks);
    std::set<NodeId> distinct(pick.nodes.begin(), pick.nodes.end());
    CHECK(distinct.size() == pick.nodes.size());
    for (std::size_t i = 0; i < pick.nodes.size(); ++i) {
      CHECK(pick.tasks_per_node[i] >= 1);
      CHECK(pick.tasks_per_node[i] <= ClusterTopology::task_capacity(s, pick.nodes[i], req));
    }
    CHECK((pick.span.level == NodeSpan::kSingleNode ||
           (pick.span.level != NodeSpan::kClusterWide && pick.span.level >= level)));
    // Fewest nodes within the chosen deepest domain: no smaller node count could hold the tasks.
    std::vector<int> caps;
    const std::size_t sl = pick.span.level == NodeSpan::kSingleNode ? 2 : pick.span.level;
    const DomainId sd = t.node_domain(pick.nodes[0], sl);
    for (NodeId node : t.domain_nodes(sl, sd)) caps.push_back(ClusterTopology::task_capacity(s, node, req));
    std::sort(caps.rbegin(), caps.rend());
    std::size_t min_nodes = 0;
    for (int acc = 0; acc < tasks; ++min_nodes) acc += caps[min_nodes];
    if (sl == 1 || sl == 2) CHECK(pick.nodes.size() == min_nodes);
  }
}
