// The one all-reduce model (topology/allreduce.hpp): hand-worked values, and the intra-node,
// node-set and fabric estimates agreeing where their inputs coincide.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/topology/allreduce.hpp"
#include "gpusched/topology/cluster_graph.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/node_topology.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;

TEST_CASE("ring and tree times by hand") {
  // 4 ranks, 1 GB at 100 GB/s (1e5 bytes/us), alpha 1 us:
  //   ring = 2*3/4 * 1e9/1e5 + 2*3*1 = 15000 + 6 = 15006; tree = 2 * 1e4 + 2*2*1 = 20004.
  AllReduceTime big = allreduce_time(4, 1e9, 100, 1);
  CHECK(big.ring_us == doctest::Approx(15006));
  CHECK(big.tree_us == doctest::Approx(20004));
  CHECK(big.best_us == doctest::Approx(15006));
  // 16 ranks, 1000 bytes (0.01 us of transfer), alpha 1 us: ring = 2*15/16*0.01 + 30 = 30.01875;
  // tree = 0.02 + 2*4 = 8.02: latency-bound, the tree wins.
  AllReduceTime small = allreduce_time(16, 1000, 100, 1);
  CHECK(small.ring_us == doctest::Approx(30.01875));
  CHECK(small.best_us == doctest::Approx(8.02));
  // No bandwidth limit: latency terms only (8 ranks, alpha 0.5: ring 7, tree 3).
  AllReduceTime unlimited = allreduce_time(8, 1e9, std::numeric_limits<double>::infinity(), 0.5);
  CHECK(unlimited.ring_us == doctest::Approx(7));
  CHECK(unlimited.best_us == doctest::Approx(3));
  CHECK(std::isinf(allreduce_time(2, 1e9, 0, 0.5).best_us));  // disconnected
  CHECK(allreduce_time(1, 1e9, 100, 0.5).best_us == 0);        // one rank: nothing to reduce
}

TEST_CASE("each estimate is the model over the bandwidth and latency it reports") {
  const NodeTopology hgx = NodeTopology::build(*known_interconnect("H100-80GB", 8)).value();
  const NodeTopology pcie = NodeTopology::build(*known_interconnect("L40S", 8)).value();
  for (const NodeTopology* t : {&hgx, &pcie})
    for (std::vector<std::uint16_t> set : {std::vector<std::uint16_t>{0, 1}, {0, 1, 2, 3}, {0, 2, 5, 7}, {0, 1, 2, 3, 4, 5, 6, 7}})
      for (double bytes : {1e3, 64.0 * 1024 * 1024}) {
        const SetScore s = t->score(set, bytes).value();
        const AllReduceTime m = allreduce_time(static_cast<double>(set.size()), bytes, s.bus_bandwidth_gbps, s.latency_us);
        CHECK(s.ring_us == doctest::Approx(m.ring_us));
        CHECK(s.tree_us == doctest::Approx(m.tree_us));
        CHECK(s.allreduce_us == doctest::Approx(m.best_us));
      }
}

TEST_CASE("the span estimate and the fabric graph agree where they see the same links") {
  // Four nodes in two racks of one non-blocking level (InfiniBand NDR, 50 GB/s per port, 1 us per
  // hop). Two nodes of one rack: both models see one port each way (B = 50 GB/s, or the intra-node
  // figure if lower) and a two-hop path (alpha = 2 us); one node: only the intra-node figure and
  // the 0.5 us NVLink floor.
  const ClusterState s = topology_test::racked_cluster(
      4, "H100-80GB", 4, "rack", [](int i) { return i < 2 ? "r0" : "r1"; }, [](int, int) { return false; });
  const ClusterTopology topo = ClusterTopology::from_labels(s, {{"rack", LinkKind::kIbNdr}}).value();
  const ClusterGraph graph = ClusterGraph::build(topo, &s);
  const double bytes = 64.0 * 1024 * 1024;
  for (double intra : {30.0, 450.0}) {
    const std::vector<NodeId> pair{0, 1}, one{2};
    for (std::int32_t per_node : {1, 4}) {
      INFO("intra ", intra, " ranks per node ", per_node);
      const NodeSetEstimate e = graph.allreduce(pair, per_node, bytes, intra);
      CHECK(e.bus_bandwidth_gbps == doctest::Approx(std::min(intra, 50.0)));
      CHECK(e.latency_us == doctest::Approx(2.0));
      const double model = allreduce_time(2.0 * per_node, bytes, std::min(intra, 50.0), 2.0).best_us;
      CHECK(e.allreduce_us == doctest::Approx(model));
      CHECK(topo.allreduce_us(pair, per_node, bytes, intra) == doctest::Approx(model));
      const double alone = allreduce_time(per_node, bytes, intra, 0.5).best_us;
      CHECK(graph.allreduce(one, per_node, bytes, intra).allreduce_us == doctest::Approx(alone));
      CHECK(topo.allreduce_us(one, per_node, bytes, intra) == doctest::Approx(alone));
    }
  }
}
