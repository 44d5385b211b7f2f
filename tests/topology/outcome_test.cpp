// GPU-set and node-set picks answer in the common vocabulary (core/outcome.hpp): placed, not now,
// infeasible, invalid, with structured reasons.
#include <doctest/doctest.h>

#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/topology/cluster_topology.hpp"
#include "gpusched/topology/node_topology.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched;
using namespace gpusched::topology;

TEST_CASE("best_gpus: not now while GPUs are busy, infeasible beyond the node, invalid arguments") {
  const NodeTopology dgx1 = NodeTopology::build(*known_interconnect("V100M32", 8)).value();
  const std::vector<std::uint16_t> two_free{0, 3}, all{0, 1, 2, 3, 4, 5, 6, 7}, bad{0, 9};
  const GpuPick ok = dgx1.best_gpus(two_free, 2);
  REQUIRE(ok.found());
  CHECK(ok.outcome.placed());
  const GpuPick busy = dgx1.best_gpus(two_free, 4);
  CHECK_FALSE(busy.found());
  CHECK(busy.outcome.verdict == Verdict::kNotNow);
  REQUIRE(busy.outcome.reasons.size() == 1);
  CHECK(busy.outcome.reasons[0] == Reason{ReasonKind::kInsufficientGpus, Unit::kGpus, 4, 2, 1, -1});
  CHECK(to_string(busy.outcome) == "not now: 1 insufficient GPUs (need 4, have 2 GPUs)");
  CHECK(dgx1.best_gpus(all, 9).outcome.verdict == Verdict::kInfeasible);  // the node has 8
  CHECK(dgx1.best_gpus(bad, 1).outcome.verdict == Verdict::kInvalid);
  CHECK(dgx1.best_gpus(all, 0).outcome.verdict == Verdict::kInvalid);
}

TEST_CASE("pick_nodes: a rack that is full now is not now; a job larger than any rack is infeasible") {
  // Racks r0 = {n0, n1}, r1 = {n2, n3}, 4 GPUs per node, tasks of 1 GPU. n0 and n2 have 3 GPUs
  // busy, so each rack has 1 + 4 = 5 free slots now and 8 when everything is free.
  const ClusterState s = topology_test::racked_cluster(
      4, "H100-80GB", 4, "example.com/rack", [](int i) { return i < 2 ? "r0" : "r1"; },
      [](int i, int g) { return (i == 0 || i == 2) && g < 3; });
  const ClusterTopology t = ClusterTopology::from_labels(s, {{"example.com/rack", LinkKind::kIbNdr}}).value();
  TaskShape one;
  one.gpus = 1;
  one.gpu_milli = kMilliPerGpu;
  const TaskRequest req = s.compile(one).value();
  const LevelConstraint rack = t.constraint(LevelMode::kRequired, "rack").value();

  const NodeSetPick five = t.pick_nodes(s, req, 5, rack);
  REQUIRE(five.found());
  CHECK(five.outcome.placed());

  const NodeSetPick six = t.pick_nodes(s, req, 6, rack);
  CHECK_FALSE(six.found());
  CHECK(six.outcome.verdict == Verdict::kNotNow);
  REQUIRE(six.outcome.reasons.size() == 1);
  // need 6 tasks, the largest rack holds 5, 2 racks at level 0.
  CHECK(six.outcome.reasons[0] == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 6, 5, 2, 0});

  const NodeSetPick nine = t.pick_nodes(s, req, 9, rack);
  CHECK(nine.outcome.verdict == Verdict::kInfeasible);  // 8 per rack even when all is free
  CHECK(nine.outcome.reasons[0].kind == ReasonKind::kNoDomainFits);

  const NodeSetPick seventeen = t.pick_nodes(s, req, 17, LevelConstraint{});
  CHECK(seventeen.outcome.verdict == Verdict::kInfeasible);  // 16 GPUs in the cluster
  CHECK(seventeen.outcome.reasons[0] == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 17, 10, 0, -1});

  // The caller's own capacities: the library cannot know what would free up.
  const std::vector<std::int32_t> caps{1, 1, 1, 1};
  CHECK(t.pick_nodes(caps, 9, rack).outcome.verdict == Verdict::kNotNow);
  CHECK(t.pick_nodes(caps, 0, rack).outcome.verdict == Verdict::kInvalid);
}
