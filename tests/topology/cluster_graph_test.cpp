// The cluster fabric graph and the ring all-reduce estimate over it: a hand-worked fat tree with
// NVLink domains and a 2:1 leaf, and a property test over seeded random fabrics (a node set inside
// one leaf is never slower than the same number of nodes spread across leaves).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/topology/cluster_graph.hpp"
#include "gpusched/io/topology_json.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;
using namespace gpusched::io;

namespace {

using gpusched::topology_test::fixture;
using gpusched::topology_test::plain_cluster;

constexpr double kGB = 1e9;

}  // namespace

// fabric.json: spine s0 over leaf0 {nvl0: gb-00 gb-01, nvl1: gb-02 gb-03} and leaf1 {nvl2: gb-04
// gb-05, nvl3: gb-06}; gb-07 unplaced. Hosts join their NVL domain with 18 NVLink 5 = 900 GB/s;
// NVL domains join their leaf with 1 NDR port per host (50 GB/s each); leaves are 2:1 to the spine.
TEST_CASE("hand-worked fabric: edges, and all-reduce times decided by the bottleneck link") {
  auto s = plain_cluster(8);
  auto t = read_cluster_topology_json(fixture("fabric.json"), s);
  REQUIRE(t.ok());
  const ClusterGraph g = ClusterGraph::build(*t, &s);
  // 1 spine + 2 leaves + 4 NVL domains + 8 hosts (gb-07 disconnected); 7 + 4 + 2 edges.
  CHECK(g.graph().vertex_count() == 15);
  CHECK(g.graph().edge_count() == 13);
  CHECK(g.host(7) == ClusterGraph::kNoVertex);
  const auto h0 = g.host(0);
  CHECK(g.graph().vertex(h0).name == "gb-00");
  CHECK(g.up_gbps(h0) == doctest::Approx(900.0));
  const auto nvl0 = g.parent(h0);
  CHECK(g.graph().vertex(nvl0).kind == VertexKind::kNvlDomain);
  CHECK(g.up_gbps(nvl0) == doctest::Approx(100.0));  // 2 hosts x 50
  const auto leaf0 = g.parent(nvl0);
  CHECK(g.graph().vertex(leaf0).kind == VertexKind::kLeafSwitch);
  CHECK(g.up_gbps(leaf0) == doctest::Approx(100.0));  // 4 hosts x 50 / 2
  CHECK(g.up_gbps(g.domain(1, t->node_domain(4, 1))) == doctest::Approx(75.0));  // 3 x 50 / 2
  CHECK(g.up_gbps(g.domain(2, t->node_domain(6, 2))) == doctest::Approx(50.0));  // nvl3: 1 host
  CHECK(g.graph().vertex(g.parent(leaf0)).kind == VertexKind::kSpineSwitch);
  CHECK(g.hosts_below(leaf0) == 4);

  // 1 GB, one rank per node, no intra-node limit: time = 2(R-1)/R * bytes / B + 2(R-1) * alpha.
  const std::vector<NodeId> same_nvl{0, 1}, one_leaf{0, 1, 2, 3}, two_leaves{0, 1, 4, 5}, pair_far{0, 4};
  // Same NVL domain: B = 900 (the host edges), alpha = two NVLink hops = 1.0 us.
  NodeSetEstimate a = g.allreduce(same_nvl, 1, kGB);
  REQUIRE(a.valid);
  CHECK(a.bus_bandwidth_gbps == doctest::Approx(900.0));
  CHECK(a.latency_us == doctest::Approx(1.0));
  CHECK(a.allreduce_us == doctest::Approx(1e9 / 900e3 + 2.0));
  // One leaf, two NVL domains: each NVL uplink (100 GB/s, both its hosts in the set) carries one
  // ring flow each way -> 100; alpha = 0.5 + 1 + 1 + 0.5 = 3 us.
  NodeSetEstimate b = g.allreduce(one_leaf, 1, kGB);
  CHECK(b.bus_bandwidth_gbps == doctest::Approx(100.0));
  CHECK(b.latency_us == doctest::Approx(3.0));
  CHECK(b.allreduce_us == doctest::Approx(15000.0 + 18.0));
  // Same 4 nodes' worth across the 2:1 leaves: leaf0's uplink is 100 GB/s for 4 hosts, 2 in the
  // set -> 50; leaf1's 75 for 3 hosts, 2 in the set -> 50. alpha = 5 us. Twice the time.
  NodeSetEstimate c = g.allreduce(two_leaves, 1, kGB);
  CHECK(c.bus_bandwidth_gbps == doctest::Approx(50.0));
  CHECK(c.latency_us == doctest::Approx(5.0));
  CHECK(c.allreduce_us == doctest::Approx(30000.0 + 30.0));
  CHECK(c.bottleneck.find("leaf-switch 'leaf0' -> spine-switch 's0'") == 0);
  // A lone node per leaf gets a quarter/third of its leaf's oversubscribed uplink: 25 GB/s, half
  // its NDR port (the 2:1 ratio).
  NodeSetEstimate d = g.allreduce(pair_far, 1, kGB);
  CHECK(d.bus_bandwidth_gbps == doctest::Approx(25.0));
  CHECK(d.allreduce_us == doctest::Approx(1e9 / 25e3 + 10.0));
  // Order of the input does not matter (the ring follows the tree).
  const std::vector<NodeId> shuffled{5, 0, 4, 1};
  CHECK(g.allreduce(shuffled, 1, kGB).allreduce_us == doctest::Approx(c.allreduce_us));
  // 4 GPUs per node with a 450 GB/s node: the node is the bottleneck inside one NVL domain.
  NodeSetEstimate e = g.allreduce(same_nvl, 4, kGB, 450.0);
  CHECK(e.bus_bandwidth_gbps == doctest::Approx(450.0));
  CHECK(e.bottleneck == "intra-node");
  CHECK(e.allreduce_us == doctest::Approx(2.0 * 7 / 8 * 1e9 / 450e3 + 14.0));
  // An unplaced node has no estimate; one node alone costs nothing across nodes.
  const std::vector<NodeId> with_unplaced{0, 7}, alone{3};
  NodeSetEstimate u = g.allreduce(with_unplaced, 1, kGB);
  CHECK_FALSE(u.valid);
  CHECK(u.bottleneck == "node 7 has no place in the topology");
  CHECK(g.allreduce(alone, 1, kGB).allreduce_us == 0.0);
  // Without oversubscription the two-leaf set would get 4 x 50 x 2/4 = 100 on leaf0's uplink, but
  // leaf1 (3 hosts, 150 GB/s) gives 100 too: same B as one leaf, only the latency differs.
  std::string flat = fixture("fabric.json");
  flat.replace(flat.find(", \"uplink_oversubscription\": 2"), std::string_view(", \"uplink_oversubscription\": 2").size(), "");
  auto tf = read_cluster_topology_json(flat, s);
  REQUIRE(tf.ok());
  NodeSetEstimate cf = ClusterGraph::build(*tf).allreduce(two_leaves, 1, kGB);
  CHECK(cf.bus_bandwidth_gbps == doctest::Approx(100.0));
  CHECK(cf.allreduce_us > b.allreduce_us);
}

TEST_CASE("several top-level domains meet at a cluster root vertex") {
  auto s = plain_cluster(4);
  auto t = ClusterTopology::from_paths(s, {{"leaf", LinkKind::kIbHdr, 2, 3.0}},
                                       {{"l0"}, {"l0"}, {"l1"}, {"l1"}});
  REQUIRE(t.ok());
  const ClusterGraph g = ClusterGraph::build(*t);
  CHECK(g.graph().vertex_count() == 7);  // root + 2 leaves + 4 hosts
  CHECK(g.graph().vertex(g.parent(g.parent(g.host(0)))).name == "cluster");
  // Host edge 2 x 25 = 50; leaf uplink 2 hosts x 2 x 25 / 3.
  CHECK(g.up_gbps(g.host(0)) == doctest::Approx(50.0));
  CHECK(g.up_gbps(g.parent(g.host(0))) == doctest::Approx(100.0 / 3));
  const std::vector<NodeId> across{0, 2};
  CHECK(g.allreduce(across, 1, kGB).bus_bandwidth_gbps == doctest::Approx(50.0 / 3));
}

TEST_CASE("property: a node set inside one leaf is never slower than one spread across leaves") {
  SplitMix64 rng(0x5EED5);
  const std::array<LinkKind, 5> links{LinkKind::kIbHdr, LinkKind::kIbNdr, LinkKind::kEthernet400, LinkKind::kNvLink5,
                                      LinkKind::kIbXdr};
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int L = static_cast<int>(rng.uniform(1, 3));
    std::vector<TopologyLevel> levels;
    for (int l = 0; l < L; ++l)
      levels.push_back({fmt::format("lv{}", l), links[rng.below(links.size())], static_cast<std::int32_t>(rng.uniform(1, 8)),
                        static_cast<double>(rng.uniform(1, 4))});
    std::vector<int> fan;
    int domains = 1;
    for (int l = 0; l < L; ++l) {
      fan.push_back(static_cast<int>(rng.uniform(l == 0 ? 1 : 2, 3)));
      domains *= fan.back();
    }
    const int per = static_cast<int>(rng.uniform(2, 6));
    const int n = domains * per - static_cast<int>(rng.below(per));  // the last leaf may be short
    auto s = plain_cluster(n);
    std::vector<std::vector<std::string>> paths(n);
    for (int i = 0; i < n; ++i) {
      int leaf = i / per;
      paths[i].resize(L);
      for (int l = L - 1; l >= 0; --l) {
        paths[i][l] = fmt::format("d{}", leaf);
        leaf /= fan[l];
      }
    }
    auto t = ClusterTopology::from_paths(s, levels, paths);
    REQUIRE(t.ok());
    const ClusterGraph g = ClusterGraph::build(*t);
    const std::size_t leaves = t->domain_count(L - 1);
    if (leaves < 2) continue;
    // k nodes inside one random leaf vs k nodes spread over >= 2 leaves (random choice).
    const DomainId inside_leaf = static_cast<DomainId>(rng.below(leaves));
    const auto in_nodes = t->domain_nodes(L - 1, inside_leaf);
    if (in_nodes.size() < 2) continue;
    const int k = static_cast<int>(rng.uniform(2, static_cast<std::int64_t>(in_nodes.size())));
    std::vector<NodeId> inside(in_nodes.begin(), in_nodes.begin() + k);
    std::vector<NodeId> all(n);
    for (int i = 0; i < n; ++i) all[i] = static_cast<NodeId>(i);
    std::vector<NodeId> spread;
    for (int attempt = 0; attempt < 50; ++attempt) {
      for (int i = n - 1; i > 0; --i) std::swap(all[i], all[rng.below(static_cast<std::uint64_t>(i) + 1)]);
      spread.assign(all.begin(), all.begin() + k);
      if (t->span(spread).level < static_cast<std::size_t>(L - 1) || t->span(spread).level == NodeSpan::kClusterWide)
        break;
      spread.clear();
    }
    if (spread.empty()) continue;
    const auto gpn = static_cast<std::int32_t>(rng.uniform(1, 8));
    const double bytes = static_cast<double>(rng.uniform(1, 1 << 30));
    const double intra = rng.chance(50) ? 0.0 : static_cast<double>(rng.uniform(50, 900));
    const NodeSetEstimate ei = g.allreduce(inside, gpn, bytes, intra), es = g.allreduce(spread, gpn, bytes, intra);
    INFO("trial ", trial, " L ", L, " k ", k, " inside ", ei.allreduce_us, " spread ", es.allreduce_us, " ", es.bottleneck);
    REQUIRE(ei.valid);
    REQUIRE(es.valid);
    CHECK(ei.allreduce_us <= es.allreduce_us);
    CHECK(ei.bus_bandwidth_gbps >= es.bus_bandwidth_gbps);
    CHECK(ei.latency_us < es.latency_us);  // spreading always adds hops of positive latency
    ++compared;
  }
  CHECK(compared > 150);
}

TEST_CASE("kNone packs task by task best fit; kPreferred looks for the tightest domain") {
  auto s = plain_cluster(8);
  auto t = read_cluster_topology_json(fixture("fabric.json"), s);
  REQUIRE(t.ok());
  const ClusterGraph g = ClusterGraph::build(*t);
  // Free task slots per node; gb-07 is unplaced, so its 4 never count.
  const std::vector<std::int32_t> cap{4, 4, 4, 4, 1, 4, 2, 4};
  const LevelConstraint none{}, pref_spine{LevelMode::kPreferred, 0};
  // 4 tasks. Best fit task by task: gb-04 (1 slot), gb-06 (2), then gb-00 -> three nodes over both
  // leaves. Preferred: gb-00 alone holds them (the first node with exactly 4).
  NodeSetPick a = t->pick_nodes(cap, 4, none);
  REQUIRE(a.found());
  CHECK(a.nodes == std::vector<NodeId>{4, 6, 0});
  CHECK(a.tasks_per_node == std::vector<std::int32_t>{1, 2, 1});
  CHECK(a.span.level == 0);
  NodeSetPick b = t->pick_nodes(cap, 4, pref_spine);
  REQUIRE(b.found());
  CHECK(b.nodes == std::vector<NodeId>{0});
  CHECK(b.span.level == NodeSpan::kSingleNode);
  CHECK(g.allreduce(b.nodes, 4, kGB, 450.0).allreduce_us < g.allreduce(a.nodes, 4, kGB, 450.0).allreduce_us);
  // 6 tasks. Preferred: nvl0 (8 slots, the smallest NVL domain that holds 6; nvl1 ties and comes
  // later) as gb-00 x4 + gb-01 x2. None: gb-04 x1, gb-06 x2, gb-00 x3.
  NodeSetPick c = t->pick_nodes(cap, 6, pref_spine);
  REQUIRE(c.found());
  CHECK(c.nodes == std::vector<NodeId>{0, 1});
  CHECK(c.tasks_per_node == std::vector<std::int32_t>{4, 2});
  CHECK(c.span.level == 2);
  NodeSetPick d = t->pick_nodes(cap, 6, none);
  REQUIRE(d.found());
  CHECK(d.nodes == std::vector<NodeId>{4, 6, 0});
  CHECK(d.tasks_per_node == std::vector<std::int32_t>{1, 2, 3});
  // More than the placed nodes hold (1+2+4*5 = 23): not found in either mode.
  CHECK_FALSE(t->pick_nodes(cap, 24, none).found());
  CHECK(t->pick_nodes(cap, 24, none).reason == "only 23 tasks fit in the cluster, 24 requested; 1 nodes lack topology labels");
  CHECK(t->pick_nodes(cap, 23, none).found());
}
