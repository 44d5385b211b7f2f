// Infeasible versus not now on every path: a gang refused by the index-only step (step 1) is still
// told "infeasible" when the cluster as if empty could never hold it in one domain of a required
// level (capacity at empty per domain, cached per layout generation), and MIG task groups count MIG
// GPU capacity, not CPU.
#include <doctest/doctest.h>

#include "gang_test_util.hpp"

using namespace gpusched;
using namespace gpusched::gang_testing;

namespace {



// The composition example's H100 part: r1 = {a, b}, r2 = {c}, 8 GPUs each, `idle` free per node.
Cluster two_racks(int idle) {
  Cluster c;
  c.nodes().push_back(gpu_node("h100-a", 8, "H100-80GB", {{kRack, "r1"}}, idle));
  c.nodes().push_back(gpu_node("h100-b", 8, "H100-80GB", {{kRack, "r1"}}, idle));
  c.nodes().push_back(gpu_node("h100-c", 8, "H100-80GB", {{kRack, "r2"}}, idle));
  return c;
}

GangSpec in_one_rack(const ClusterState& s, int tasks, int gpus) {
  GangSpec spec = one_group_of(s, tasks, gpus);
  spec.topology = {kRack, LevelMode::kRequired};
  return spec;
}

}  // namespace

TEST_CASE("index-only refusal: a gang no rack holds even when empty is infeasible, naming the largest rack") {
  // Every node has 0 free GPUs, so step 1 refuses any 8-GPU gang ("0 nodes have 8 free GPUs").
  // At empty: r1 holds 2 tasks of 8 GPUs (2 nodes x 8/8), r2 holds 1. 3 tasks: no rack -> infeasible
  // (3 needed, 2 at capacity in r1); 2 tasks: r1 could hold them -> not now.
  ClusterState s = build(two_racks(0));
  const GangResult three = place_gang(s, in_one_rack(s, 3, 8));
  CHECK(three.method == GangMethod::kAggregateBound);
  CHECK(three.verdict == Verdict::kInfeasible);
  REQUIRE_FALSE(three.reasons.empty());
  CHECK(three.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 3, 2, 0, 0});
  CHECK(three.explanation.find("infeasible even on the empty cluster: group worker: tasks in one "
                               "topology.kubernetes.io/rack, the largest being r1 (3 needed, 2 at capacity)") !=
        std::string::npos);

  const GangResult two = place_gang(s, in_one_rack(s, 2, 8));
  CHECK(two.method == GangMethod::kAggregateBound);
  CHECK(two.verdict == Verdict::kNotNow);
  // 4 GPUs per task: r1 holds 4 at empty (2 nodes x 8/4); 5 -> infeasible with 4 available.
  const GangResult five = place_gang(s, in_one_rack(s, 5, 4));
  CHECK(five.verdict == Verdict::kInfeasible);
  CHECK(five.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 5, 4, 0, 0});
  // With a required level the whole cluster is counted too: 4 x 6 GPUs pass the GPU total (24 of
  // 24) but an empty node holds one 6-GPU task (8/6 = 1): 3 in all -> infeasible by the per-group
  // total (4 needed, 3 at capacity) before any rack is looked at.
  CHECK(place_gang(s, one_group_of(s, 3, 8)).verdict == Verdict::kNotNow);
  const GangResult four = place_gang(s, in_one_rack(s, 4, 6));
  CHECK(four.method == GangMethod::kAggregateBound);
  CHECK(four.verdict == Verdict::kInfeasible);
  CHECK(four.reasons.front() == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 4, 3, 0, 0});
  // Without a level too: the index-only path counts the tasks at empty from the summary (a node
  // pass once per layout generation). It kept to its O(1) bounds once and said "not now" here, for
  // ever: the simulator never rejected such a gang and FIFO queued everything behind it.
  const GangResult flat = place_gang(s, one_group_of(s, 4, 6));
  CHECK(flat.verdict == Verdict::kInfeasible);
  CHECK(flat.reasons.front() == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 4, 3, 0, 0});
  // 4 x 8 GPUs: the O(1) GPU total already rules it out (32000 milli-GPU needed, 24000 exist).
  CHECK(place_gang(s, one_group_of(s, 4, 8)).reasons.front() ==
        Reason{ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu, 32000, 24000, 0, -1});
}

TEST_CASE("the node level: a task of more GPUs than any node has holds nowhere") {
  // Level "node": the largest node holds 1 task of 8 GPUs at empty; 2 tasks on one node: infeasible.
  ClusterState s = build(two_racks(0));
  GangSpec spec = one_group_of(s, 2, 8);
  spec.topology = {"node", LevelMode::kRequired};
  const GangResult r = place_gang(s, spec);
  CHECK(r.verdict == Verdict::kInfeasible);
  CHECK(r.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 2, 1, 0, 0});
  // The first node by name among the largest is named.
  CHECK(r.explanation.find("tasks in one node, the largest being h100-a (2 needed, 1 at capacity)") != std::string::npos);
  // 2 tasks of 4 GPUs on one node: 8/4 = 2 at empty -> not now.
  GangSpec halves = one_group_of(s, 2, 4);
  halves.topology = {"node", LevelMode::kRequired};
  CHECK(place_gang(s, halves).verdict == Verdict::kNotNow);
}

TEST_CASE("the capacity cache follows events: cordon and failures wait, removal and relabel count") {
  ClusterState s = build(two_racks(0));
  GangCapacityCache cache;
  GangOptions options;
  options.capacity_cache = &cache;
  const GangSpec two = in_one_rack(s, 2, 8);
  CHECK(place_gang(s, two, options).verdict == Verdict::kNotNow);  // r1: 2 at empty
  // Cordoned h100-b, or a GPU of it failed: r1 holds 1 task now, but the node comes back, so the
  // gang waits (not now) instead of being turned away for good.
  REQUIRE(s.cordon(1).ok());
  CHECK(place_gang(s, two, options).verdict == Verdict::kNotNow);
  REQUIRE(s.uncordon(1).ok());
  REQUIRE(s.set_gpu_health(1, 3, false).ok());
  CHECK(place_gang(s, two, options).verdict == Verdict::kNotNow);
  REQUIRE(s.set_gpu_health(1, 3, true).ok());
  // Removed for good (a tombstone): r1 holds only h100-a -> infeasible (2 needed, 1).
  ClusterState removed = s;
  REQUIRE(removed.remove_node(1).ok());
  const GangResult gone = place_gang(removed, two);
  CHECK(gone.verdict == Verdict::kInfeasible);
  CHECK(gone.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 2, 1, 0, 0});
  // h100-c moves to r1: r1 holds 3 -> a 3-task gang is only "not now" any more.
  const GangSpec three = in_one_rack(s, 3, 8);
  const GangResult before_relabel = place_gang(s, three, options);
  CHECK(before_relabel.verdict == Verdict::kInfeasible);
  REQUIRE(s.set_label(2, kRack, "r1").ok());
  CHECK(place_gang(s, three, options).verdict == Verdict::kNotNow);
  REQUIRE(s.set_label(2, kRack, "r2").ok());
  // The same answers without a cache (computed per call).
  CHECK(place_gang(s, three).reasons.front() == before_relabel.reasons.front());
  CHECK(before_relabel.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 3, 2, 0, 0});
}

TEST_CASE("a queue of gangs shares one capacity summary and gets the same verdicts") {
  ClusterState s = build(two_racks(0));
  const std::vector<GangSpec> gangs{in_one_rack(s, 3, 8), in_one_rack(s, 2, 8), in_one_rack(s, 5, 4)};
  const QueueResult q = place_gangs(s, gangs);
  REQUIRE(q.results.size() == 3);
  CHECK(q.results[0].verdict == Verdict::kInfeasible);
  CHECK(q.results[1].verdict == Verdict::kNotNow);
  CHECK(q.results[2].verdict == Verdict::kInfeasible);
}

TEST_CASE("MIG task groups count MIG capacity, not CPU") {
  // Two racks, one node each: an A100-SXM4-40GB in MIG mode whose whole GPU is one busy 7g.40gb
  // (profile ID 0 at slice 0). A 1g.5gb fits nowhere now; an empty A100-40GB holds 7 of them
  // ("Total" 7 in nvidia-smi mig -lgip). In one rack: 7 tasks -> not now, 8 -> infeasible (8 needed,
  // 7 at capacity), although 96 CPUs would hold 96 tasks of 1 CPU (the old CPU-only count).
  Cluster c;
  for (const char* rack : {"r1", "r2"}) {
    NodeSpec n = gpu_node(std::string("mig-") + rack, 1, "A100-SXM4-40GB", {{kRack, rack}});
    n.gpus[0].mig_mode = true;
    n.gpus[0].mig_instances = {MigInstanceInfo{0, 0, true}};
    c.nodes().push_back(n);
  }
  ClusterState s = build(c);
  TaskShape shape;
  shape.cpu = 1000;
  TaskRequest r = s.compile(shape).value();
  r.mig = mig::MigRequest::from_name(s.mig().table().catalog(), "1g.5gb").value();
  auto gang = [&](int tasks) {
    GangSpec spec;
    spec.name = "infer";
    spec.groups.push_back(group("server", tasks, r));
    spec.topology = {kRack, LevelMode::kRequired};
    return spec;
  };
  const GangResult seven = place_gang(s, gang(7));
  CHECK(seven.verdict == Verdict::kNotNow);
  const GangResult eight = place_gang(s, gang(8));
  CHECK(eight.verdict == Verdict::kInfeasible);
  CHECK(eight.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 8, 7, 0, 0});
  // Over both racks (no level): 14 at capacity; 15 -> infeasible by the per-group total.
  GangSpec anywhere = gang(15);
  anywhere.topology = {};
  const GangResult fifteen = place_gang(s, anywhere);
  CHECK(fifteen.verdict == Verdict::kInfeasible);
  CHECK(fifteen.reasons.front() == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 15, 14, 0, 0});
  // The summary at empty (the index-only path's) says the same: 7 per MIG GPU, 0 for a whole GPU.
  detail::GangEmptyCapacity empty;
  empty.refresh(s);
  REQUIRE(empty.shape_count() == 1);  // both nodes have the same shape
  CHECK(empty.total(empty.shape_capacities(s, r)) == 14);
  CHECK(empty.total(empty.shape_capacities(s, whole(s, 1))) == 0);  // a MIG GPU takes no whole-GPU task
}
