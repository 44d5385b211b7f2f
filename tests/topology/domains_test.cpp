// One domain rule and one short-name rule (cluster/domains.hpp), as gang and topology use them.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/domains.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology_test;

namespace {


ClusterState labelled(const std::vector<std::pair<std::string, std::string>>& block_rack) {
  std::vector<NodeSpec> nodes;
  for (std::size_t i = 0; i < block_rack.size(); ++i) {
    NodeSpec n;
    n.name = fmt::format("n{:02d}", i);
    n.cpu = 1000;
    n.memory = kGiB;
    n.gpus.push_back({"H100-80GB", 0, 0, true});
    if (!block_rack[i].first.empty()) n.labels.emplace_back(kBlock, block_rack[i].first);
    if (!block_rack[i].second.empty()) n.labels.emplace_back(kRack, block_rack[i].second);
    nodes.push_back(std::move(n));
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

// The partition a map makes, as sets of node ids (ids and order aside).
std::set<std::vector<NodeId>> partition(const DomainMap& m) {
  return {m.members.begin(), m.members.end()};
}

}  // namespace

TEST_CASE("short names: any suffix after '/' or '-', the shortest one displayed") {
  CHECK(level_short_name(kRack) == "rack");
  CHECK(level_short_name("cloud.provider.com/topology-block") == "block");
  CHECK(level_short_name("rack") == "rack");
  CHECK(level_names_key(kRack, "rack"));
  CHECK(level_names_key("cloud.provider.com/topology-block", "topology-block"));
  CHECK(level_names_key("cloud.provider.com/topology-block", "block"));
  CHECK_FALSE(level_names_key("cloud.provider.com/topology-block", "lock"));
  const std::vector<std::string> keys{kBlock, kRack, "example.com/rack"};
  CHECK(find_level_key(keys, kRack) == 1u);          // the exact key wins over a short name
  CHECK(find_level_key(keys, "block") == 0u);
  CHECK_FALSE(find_level_key(keys, "rack").has_value());  // two keys answer to "rack": ambiguous
  CHECK(is_node_level("node"));
  CHECK(is_node_level("kubernetes.io/hostname"));
}

TEST_CASE("rack r1 under two blocks is two domains, named by their paths") {
  // n00, n01 in b1/r1; n02 in b2/r1; n03 in b2/r2; n04 lacks its block label (unplaced).
  ClusterState s = labelled({{"b1", "r1"}, {"b1", "r1"}, {"b2", "r1"}, {"b2", "r2"}, {"", "r1"}});
  const DomainTree t = DomainTree::from_labels(s, {kBlock, kRack});
  REQUIRE(t.domain_count(1) == 3);
  CHECK(t.path_name(1, t.node_domain(0, 1)) == "b1/r1");
  CHECK(t.path_name(1, t.node_domain(2, 1)) == "b2/r1");
  CHECK(t.node_domain(0, 1) == t.node_domain(1, 1));
  CHECK(t.node_domain(0, 1) != t.node_domain(2, 1));
  CHECK(t.node_domain(4, 1) == kNoDomain);
  CHECK(t.unplaced_nodes() == 1);

  // Gang's label-only map: the same rule once the state declares the levels.
  DomainMap undeclared = build_domains(s, "rack", Unlabelled::kExcluded);
  CHECK(undeclared.names == std::vector<std::string>{"r1", "r2"});  // a level alone: its values
  REQUIRE(s.set_topology_levels({kBlock, kRack}).ok());
  DomainMap declared = build_domains(s, "rack", Unlabelled::kExcluded);
  CHECK(declared.resolved);
  CHECK(declared.key == kRack);
  CHECK(declared.names == std::vector<std::string>{"b1/r1", "b2/r1", "b2/r2"});
  CHECK(declared.node_domain[4] == DomainMap::kNone);
  // Anti-affinity's view: an unplaced node is its own domain.
  DomainMap own = build_domains(s, "rack", Unlabelled::kOwnDomain);
  CHECK(own.names.front() == "n04");
  CHECK(own.members.front() == std::vector<NodeId>{4});

  // The topology module's levels give the same domains through the same function.
  auto topo = topology::ClusterTopology::from_labels(s, {{kBlock, topology::LinkKind::kIbNdr}, {kRack, topology::LinkKind::kIbNdr}});
  REQUIRE(topo.ok());
  DomainMap via_topology = build_domains(topo->domains(), s, "rack", Unlabelled::kExcluded);
  CHECK(via_topology.names == declared.names);
  CHECK(partition(via_topology) == partition(declared));
  CHECK(topo->level_short_name(1) == "rack");

  Status repeated = s.set_topology_levels({kRack, kRack});
  REQUIRE_FALSE(repeated.ok());
  CHECK(repeated.error().field == "topology_levels[1]");
}

TEST_CASE("property: gang's map and the topology module's tree partition the nodes the same way") {
  SplitMix64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng.next() % 24);
    std::vector<std::pair<std::string, std::string>> labels;
    for (int i = 0; i < n; ++i) {
      // Few values so that names repeat across blocks; sometimes a label is missing.
      const auto b = rng.next() % 4, r = rng.next() % 4;
      labels.emplace_back(b == 3 ? "" : fmt::format("b{}", b), r == 3 ? "" : fmt::format("r{}", r % 2));
    }
    ClusterState s = labelled(labels);
    REQUIRE(s.set_topology_levels({kBlock, kRack}).ok());
    auto topo = topology::ClusterTopology::from_labels(s, {{kBlock, topology::LinkKind::kIbNdr}, {kRack, topology::LinkKind::kIbNdr}});
    REQUIRE(topo.ok());
    for (const char* level : {"block", "rack"}) {
      INFO("trial ", trial, " level ", level);
      const DomainMap from_labels = build_domains(s, level, Unlabelled::kExcluded);
      const DomainMap from_topology = build_domains(topo->domains(), s, level, Unlabelled::kExcluded);
      CHECK(partition(from_labels) == partition(from_topology));
      CHECK(from_labels.names == from_topology.names);
      // Every domain's nodes share the whole path of values down to the level, and carry every
      // level's label (a node lacking one is in no domain of the hierarchy).
      const std::size_t l = std::string_view(level) == "block" ? 0 : 1;
      for (const auto& members : from_labels.members)
        for (NodeId m : members)
          for (std::size_t k = 0; k < 2; ++k) {
            CHECK(topo->node_domain(m, k) != kNoDomain);
            if (k <= l) CHECK(topo->node_domain(m, k) == topo->node_domain(members[0], k));
          }
    }
  }
}
