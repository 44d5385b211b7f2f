// Hand-worked gang cases: homogeneous, heterogeneous, elastic, topology levels, spread,
// anti-affinity, queues, explanations, and the all-or-nothing guarantee on every path.
#include <doctest/doctest.h>

#include "gang_test_util.hpp"
#include "gpusched/cluster/domains.hpp"
#include "gpusched/gang/detail/gang_capacity.hpp"
#include "gpusched/topology/cluster_topology.hpp"

using namespace gpusched;
using namespace gpusched::gang_testing;

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;
const std::string kZone = "topology.kubernetes.io/zone";

// `racks[i]` nodes of 8 idle H100s in rack "rack-i".
Cluster racked(std::vector<int> racks, int idle = -1) {
  Cluster c;
  for (std::size_t r = 0; r < racks.size(); ++r)
    for (int i = 0; i < racks[r]; ++i)
      c.nodes().push_back(gpu_node(fmt::format("r{}n{}", r, i), 8, "H100-80GB", {{kRack, fmt::format("rack-{}", r)}},
                                   idle));
  return c;
}

GangSpec one_group(const ClusterState& s, int tasks, int gpus, int min = -1, std::string name = "g") {
  GangSpec spec;
  spec.name = std::move(name);
  spec.groups.push_back(group("worker", tasks, whole(s, gpus), min));
  return spec;
}

}  // namespace

TEST_CASE("homogeneous gang: placed whole on the fewest nodes, or not at all") {
  const Cluster c = racked({4});
  ClusterState s = build(c);
  const ClusterState before = build(c);
  auto r = place_gang(s, one_group(s, 3, 8));
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(r.method == GangMethod::kGreedy);
  CHECK(r.tasks.size() == 3);
  CHECK(placement_error(c, one_group(s, 3, 8), r, s).empty());
  CHECK(detail::gang_indexed_idle_gpus(s) == 8);

  // 5 tasks of 8 GPUs on 4 nodes of 8: the index alone proves it, and nothing changes. It is
  // infeasible, not "not now": 40 GPUs exceed the cluster's 32 even when all are free.
  ClusterState s2 = build(c);
  auto spec = one_group(s2, 5, 8);
  auto bad = place_gang(s2, spec);
  CHECK(bad.verdict == Verdict::kInfeasible);
  CHECK(bad.method == GangMethod::kAggregateBound);
  CHECK(bad.explanation == "group worker needs 5 tasks x 8 GPUs; 4 nodes have 8 free GPUs (4 tasks fit); infeasible "
                           "even on the empty cluster: GPU share (milli-GPU) of the cluster (40000 needed, 32000 at "
                           "capacity)");
  REQUIRE(bad.reasons.size() == 2);  // the capacity bound first, then the bound that failed now
  CHECK(bad.reasons[0] == Reason{ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu, 40000, 32000, 0, -1});
  CHECK(bad.reasons[1] == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 5, 4, 0, 0});
  CHECK(bad.tasks.empty());
  CHECK(s2.same_allocation_as(before));
  CHECK(s2.journal_size() == 0);
}

TEST_CASE("fragmented GPUs do not make a gang of whole nodes") {
  // 16 idle GPUs in all, 4 per node: two 8-GPU tasks cannot start.
  const Cluster c = racked({4}, 4);
  ClusterState s = build(c);
  auto r = place_gang(s, one_group(s, 2, 8));
  CHECK(r.verdict == Verdict::kNotNow);
  CHECK(r.explanation == "group worker needs 2 tasks x 8 GPUs; 0 nodes have 8 free GPUs (0 tasks fit)");
  // Four 4-GPU tasks do fit, exactly.
  auto ok = place_gang(s, one_group(s, 4, 4));
  CHECK(ok.verdict == Verdict::kPlaced);
  CHECK(detail::gang_indexed_idle_gpus(s) == 0);
}

TEST_CASE("the issue's explanation: needs 64 x 8 GPUs, 57 nodes have 8 free, the largest rack offers 30") {
  // Racks of 30, 20 and 7 free 8-GPU nodes, plus 10 nodes with only 4 free.
  Cluster c = racked({30, 20, 7});
  for (int i = 0; i < 10; ++i) c.nodes().push_back(gpu_node(fmt::format("half{}", i), 8, "H100-80GB", {{kRack, "rack-3"}}, 4));
  ClusterState s = build(c);
  auto spec = one_group(s, 64, 8);
  spec.topology = {kRack, LevelMode::kRequired};
  auto r = place_gang(s, spec);
  // Refused by the index-only step; no rack holds 64 even when empty (the largest, rack-0, holds
  // 30 at capacity): infeasible, told from the capacity at empty per rack.
  CHECK(r.verdict == Verdict::kInfeasible);
  CHECK(r.method == GangMethod::kAggregateBound);
  CHECK(r.explanation ==
        "group worker needs 64 tasks x 8 GPUs; 57 nodes have 8 free GPUs (57 tasks fit); the largest "
        "topology.kubernetes.io/rack (rack-0) offers 30; infeasible even on the empty cluster: group worker: tasks "
        "in one topology.kubernetes.io/rack, the largest being rack-0 (64 needed, 30 at capacity)");
  REQUIRE(r.bounds.size() == 1);
  CHECK(r.bounds[0].needed == 64);
  CHECK(r.bounds[0].available == 57);

  // 40 fit in the cluster but no rack holds them: counted per domain. Even empty, the largest rack
  // (30 nodes) holds 30 tasks: infeasible.
  auto spec40 = one_group(s, 40, 8);
  spec40.topology = {kRack, LevelMode::kRequired};
  auto r40 = place_gang(s, spec40);
  CHECK(r40.verdict == Verdict::kInfeasible);
  CHECK(r40.method == GangMethod::kCountBound);
  CHECK(r40.explanation ==
        "no topology.kubernetes.io/rack can hold the gang: group worker needs 40 tasks x 8 GPUs; the largest "
        "topology.kubernetes.io/rack (rack-0) offers 30; infeasible even on the empty cluster: group worker: "
        "tasks in one topology.kubernetes.io/rack, the largest being rack-0 (40 needed, 30 at capacity)");
  CHECK(r40.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 40, 30, 0, 0});
  // The 64-task gang: 67 nodes of 8 GPUs would hold 64 tasks once free, but no rack does (the
  // bound that failed now comes second).
  CHECK(r.reasons.front() == Reason{ReasonKind::kNoDomainFits, Unit::kTasks, 64, 30, 0, 0});
  CHECK(r.reasons[1] == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 64, 57, 0, 0});
  // Without the level it is only "not now".
  CHECK(place_gang(s, one_group(s, 64, 8)).verdict == Verdict::kNotNow);
  // Preferred: the largest rack first, then the next.
  spec40.topology.mode = LevelMode::kPreferred;
  auto p40 = place_gang(s, spec40);
  REQUIRE(p40.verdict == Verdict::kPlaced);
  CHECK(p40.domains_used == 2);
  int in_rack0 = 0;
  for (const auto& t : p40.tasks) in_rack0 += c.nodes()[t.assignment.node].labels[0].second == "rack-0";
  CHECK(in_rack0 == 30);
}

TEST_CASE("required level: best-fit domain (Kueue TAS), ranks packed inside it") {
  const Cluster c = racked({3, 5, 4});
  ClusterState s = build(c);
  // 4 tasks: racks 1 (5 free) and 2 (4 free) can hold them; the tighter one, rack-2, is chosen.
  auto spec = one_group(s, 4, 8);
  spec.topology = {"rack", LevelMode::kRequired};  // the short level name resolves to the label key
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(r.domain == "rack-2");
  CHECK(r.domains_used == 1);
  CHECK(gang_message(spec, r, s) == "4 tasks (worker 4/4) on 4 nodes in topology.kubernetes.io/rack=rack-2");
  CHECK(r.explanation.empty());  // worded on request only
  // Next, 5 tasks: only rack-1 is left that can hold them.
  auto r5 = place_gang(s, one_group(s, 5, 8));
  CHECK(r5.verdict == Verdict::kPlaced);
  // 3 nodes are left, all in rack-0 (best-fit took the lowest ids of rack-0 and rack-1 for r5).
  auto spec3 = one_group(s, 3, 8);
  spec3.topology = {kRack, LevelMode::kRequired};
  auto r3 = place_gang(s, spec3);
  std::set<std::string> racks;
  for (const auto& t : r3.tasks) racks.insert(c.nodes()[t.assignment.node].labels[0].second);
  if (r3.verdict == Verdict::kPlaced) CHECK(racks.size() == 1);
  CHECK(detail::gang_indexed_idle_gpus(s) == (r3.verdict == Verdict::kPlaced ? 0 : 24));
}

TEST_CASE("node level: all tasks in one node") {
  Cluster c;
  c.nodes().push_back(gpu_node("a", 8, "H100-80GB", {}, 6));
  c.nodes().push_back(gpu_node("b", 8, "H100-80GB", {}, 7));
  ClusterState s = build(c);
  GangSpec spec = one_group(s, 3, 2);
  spec.topology = {"node", LevelMode::kRequired};
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(nodes_of(r, 0).size() == 1);
  CHECK(r.domain == "a");  // best fit: the node with the least room that holds 3 x 2 GPUs
  // 4 x 2 GPUs now: a has 0, b has 7 -> no node holds 8.
  GangSpec four = one_group(s, 4, 2);
  four.topology = {"kubernetes.io/hostname", LevelMode::kRequired};
  auto r4 = place_gang(s, four);
  CHECK(r4.verdict == Verdict::kNotNow);
  CHECK(r4.explanation == "group worker needs 4 tasks x 2 GPUs; 1 node has 2 or more free GPUs (3 tasks fit); the largest node (b) offers 3");
}

TEST_CASE("a level no node has: required is infeasible with that reason, preferred is ignored") {
  const Cluster c = racked({2});
  ClusterState s = build(c);
  auto spec = one_group(s, 1, 8);
  spec.topology = {"example.com/pod", LevelMode::kRequired};
  auto r = place_gang(s, spec);
  CHECK(r.verdict == Verdict::kNotNow);
  CHECK(r.explanation.find("example.com/pod") != std::string::npos);
  spec.topology.mode = LevelMode::kPreferred;
  CHECK(place_gang(s, spec).verdict == Verdict::kPlaced);
}

TEST_CASE("heterogeneous gang: launcher + workers, all or nothing") {
  const Cluster c = racked({2});
  ClusterState s = build(c);
  const ClusterState before = build(c);
  GangSpec spec;
  spec.name = "train";
  spec.groups.push_back(group("launcher", 1, cpu_only(s, 4000)));
  spec.groups.push_back(group("worker", 2, whole(s, 8, 32000)));
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(r.placed_per_group == std::vector<std::int32_t>{1, 2});
  CHECK(placement_error(c, spec, r, s).empty());

  // Three workers: the launcher would fit, the third worker not; nothing is held. Two 8-GPU nodes
  // never hold three 8-GPU workers: infeasible.
  ClusterState s2 = build(c);
  spec.groups[1].replicas = spec.groups[1].min_replicas = 3;
  auto bad = place_gang(s2, spec);
  CHECK(bad.verdict == Verdict::kInfeasible);
  CHECK(s2.same_allocation_as(before));
}

TEST_CASE("greedy misses, the exact search finds it") {
  // Node a: 8 GPUs, 64 CPUs; node b: 8 GPUs, 8 CPUs. Greedy puts the 8-GPU task (hardest) on the
  // lowest id, a, and the 6-GPU task needing 32 CPUs then has nowhere to go. Swapped, both fit.
  Cluster c;
  c.nodes().push_back(gpu_node("a", 8, "H100-80GB", {}, -1, 64000));
  c.nodes().push_back(gpu_node("b", 8, "H100-80GB", {}, -1, 8000));
  ClusterState s = build(c);
  GangSpec spec;
  spec.groups.push_back(group("big", 1, whole(s, 8, 2000)));
  spec.groups.push_back(group("cpu-heavy", 1, whole(s, 6, 32000)));
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(r.method == GangMethod::kSearch);
  CHECK(*nodes_of(r, 0).begin() == 1);
  CHECK(*nodes_of(r, 1).begin() == 0);
  CHECK(placement_error(c, spec, r, s).empty());
}

TEST_CASE("exact search proves infeasibility the counts cannot see; a tiny budget gives undecided") {
  // Two nodes of 8 GPUs; tasks of 5, 5 and 4 GPUs: 14 <= 16 GPUs and each fits alone, but any two
  // of them need 9 or 10 GPUs on one node.
  Cluster c;
  c.nodes().push_back(gpu_node("a", 8));
  c.nodes().push_back(gpu_node("b", 8));
  ClusterState s = build(c);
  const ClusterState before = build(c);
  GangSpec spec;
  spec.groups.push_back(group("p", 2, whole(s, 5)));
  spec.groups.push_back(group("q", 1, whole(s, 4)));
  auto r = place_gang(s, spec);
  CHECK(r.verdict == Verdict::kNotNow);
  CHECK(r.method == GangMethod::kSearch);
  CHECK(s.same_allocation_as(before));

  GangOptions tiny;
  tiny.effort = 1;
  auto u = place_gang(s, spec, tiny);
  CHECK(u.undecided());
  CHECK(u.explanation.find("budget") != std::string::npos);
  CHECK(s.same_allocation_as(before));
}

TEST_CASE("elastic: as many as fit up to replicas, never fewer than min_replicas") {
  const Cluster c = racked({4});
  ClusterState s = build(c);
  const auto elastic = one_group(s, 6, 8, 2);
  auto r = place_gang(s, elastic);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(r.placed_per_group[0] == 4);
  CHECK(gang_message(elastic, r, s) == "4 tasks (worker 4/6) on 4 nodes");

  ClusterState s2 = build(c);
  CHECK(place_gang(s2, one_group(s2, 8, 8, 5)).verdict == Verdict::kInfeasible);  // 5 > 4 nodes, ever
  // min 0: a gang that may start empty is feasible with nothing placed.
  ClusterState s3 = build(racked({1}, 0));
  auto zero = place_gang(s3, one_group(s3, 3, 8, 0));
  CHECK(zero.verdict == Verdict::kPlaced);
  CHECK(zero.tasks.empty());
}

TEST_CASE("spread: a cap per failure domain, and a minimum number of domains") {
  Cluster c;
  for (int z = 0; z < 3; ++z)
    for (int i = 0; i < 2; ++i)
      c.nodes().push_back(gpu_node(fmt::format("z{}n{}", z, i), 8, "H100-80GB", {{kZone, fmt::format("zone-{}", z)}}));
  c.nodes().push_back(gpu_node("nozone", 8));
  ClusterState s = build(c);
  GangSpec spec = one_group(s, 3, 1);
  spec.spread.push_back({kZone, {}, 1, 0});
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(placement_error(c, spec, r, s).empty());
  CHECK(nodes_of(r, 0).size() == 3);
  // Four tasks, at most one per zone, three zones (the unlabelled node does not count).
  GangSpec four = one_group(s, 4, 1);
  four.spread.push_back({kZone, {}, 1, 0});
  auto r4 = place_gang(s, four);
  CHECK(r4.verdict == Verdict::kNotNow);
  CHECK(r4.method == GangMethod::kCountBound);

  // min_domains: best-fit alone would put both 1-GPU tasks on one node.
  ClusterState s2 = build(c);
  GangSpec two = one_group(s2, 2, 1);
  two.spread.push_back({kZone, {}, 0, 2});
  auto r2 = place_gang(s2, two);
  REQUIRE(r2.verdict == Verdict::kPlaced);
  CHECK(placement_error(c, two, r2, s2).empty());
  GangSpec plain = one_group(s2, 2, 1);
  CHECK(nodes_of(place_gang(s2, plain), 0).size() == 1);  // the contrast
}

TEST_CASE("anti-affinity between groups and within a group") {
  Cluster c;
  c.nodes().push_back(gpu_node("a", 8));
  c.nodes().push_back(gpu_node("b", 8));
  ClusterState s = build(c);
  GangSpec spec;
  spec.groups.push_back(group("prefill", 1, whole(s, 4)));
  spec.groups.push_back(group("decode", 1, whole(s, 4)));
  spec.anti_affinity.push_back({0, 1});
  auto r = place_gang(s, spec);
  REQUIRE(r.verdict == Verdict::kPlaced);
  CHECK(nodes_of(r, 0) != nodes_of(r, 1));
  CHECK(placement_error(c, spec, r, s).empty());

  // One node only: the two groups cannot be apart.
  Cluster one;
  one.nodes().push_back(gpu_node("a", 8));
  ClusterState s1 = build(one);
  auto r1 = place_gang(s1, spec);
  CHECK(r1.verdict == Verdict::kNotNow);

  // A group repelling itself: one replica per node, so 3 replicas need 3 nodes.
  ClusterState s3 = build(c);
  GangSpec self = one_group(s3, 3, 1);
  self.anti_affinity.push_back({0, 0});
  auto r3 = place_gang(s3, self);
  CHECK(r3.verdict == Verdict::kNotNow);
  CHECK(r3.method == GangMethod::kCountBound);
  self.groups[0].replicas = self.groups[0].min_replicas = 2;
  auto r3b = place_gang(s3, self);
  REQUIRE(r3b.verdict == Verdict::kPlaced);
  CHECK(nodes_of(r3b, 0).size() == 2);
}

TEST_CASE("a queue of gangs never leaves a partial gang holding resources") {
  const Cluster c = racked({4});
  ClusterState s = build(c);
  std::vector<GangSpec> q{one_group(s, 3, 8, -1, "a"), one_group(s, 3, 8, -1, "b"), one_group(s, 1, 8, -1, "c")};
  auto out = place_gangs(s, q);
  REQUIRE(out.results.size() == 3);
  CHECK(out.placed == 2);
  CHECK(out.results[0].verdict == Verdict::kPlaced);
  CHECK(out.results[1].verdict == Verdict::kNotNow);
  CHECK(out.results[1].explanation == "group worker needs 3 tasks x 8 GPUs; 1 node has 8 free GPUs (1 task fit)");
  CHECK(out.results[2].verdict == Verdict::kPlaced);
  CHECK(s.journal_size() == 4);  // 3 + 1 reservations, none of b's
  CHECK(detail::gang_indexed_idle_gpus(s) == 0);
  // b fits the cluster once a's tasks finish: not now.
  CHECK(describe(q[1], out.results[1], s).rfind("b: not now (aggregate bound): group worker", 0) == 0);
}

TEST_CASE("dry run decides and reports, and leaves the state alone") {
  const Cluster c = racked({2});
  ClusterState s = build(c);
  const ClusterState before = build(c);
  GangOptions opt;
  opt.dry_run = true;
  auto r = place_gang(s, one_group(s, 2, 8), opt);
  CHECK(r.verdict == Verdict::kPlaced);
  CHECK(r.tasks.size() == 2);
  CHECK(s.same_allocation_as(before));
  CHECK(s.journal_size() == 0);
}

TEST_CASE("the placement policy chooses the nodes: worst-fit spreads, best-fit packs") {
  const Cluster c = racked({4});
  ClusterState s = build(c);
  WorstFitPolicy spread;
  GangOptions opt;
  opt.policy = &spread;
  auto r = place_gang(s, one_group(s, 4, 2), opt);
  CHECK(nodes_of(r, 0).size() == 4);
  ClusterState s2 = build(c);
  auto packed = place_gang(s2, one_group(s2, 4, 2));
  CHECK(nodes_of(packed, 0).size() == 1);
}

TEST_CASE("specs: validation and building from a compiled job name the field and value") {
  const Cluster c = racked({1});
  ClusterState s = build(c);
  GangSpec bad = one_group(s, 2, 8);
  bad.groups[0].min_replicas = 3;
  auto r = place_gang(s, bad);
  CHECK(r.verdict == Verdict::kInvalid);
  CHECK(r.explanation == "gang g: groups[0] (worker).min_replicas: 3 exceeds replicas 2");
  GangSpec none;
  CHECK(validate_gang(none).error().message == "gang: groups: a gang needs at least one group");
  GangSpec spread = one_group(s, 2, 1);
  spread.spread.push_back({kZone, {}, 0, 3});
  CHECK(validate_gang(spread).error().message ==
        "gang g: spread[0].min_domains: 3 domains need at least 3 tasks, but the groups' min_replicas add up to 2");
  spread.spread[0] = {kZone, {7}, 1, 0};
  CHECK(validate_gang(spread).error().message == "gang g: spread[0].groups[0]: no group 7 (the gang has 1)");
  // At most kMaxJobTasks tasks in all: two groups of 2^19 + 1 are one task too many (not a search
  // over a million zero-sized tasks).
  GangSpec wide = one_group(s, (1 << 19) + 1, 0);
  wide.groups.push_back(wide.groups[0]);
  const auto too_many = validate_gang(wide);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.error().code == ErrorCode::kLimit);
  CHECK(too_many.error().field == "groups[1].replicas");
  wide.groups.pop_back();
  CHECK(validate_gang(wide).ok());

  Job job;
  job.job_name = "llm";
  job.groups.push_back({"launcher", 1, -1, TaskShape{4000, 0, 0, 0, 0}, {}, {}});
  job.groups.push_back({"worker", 4, 2, TaskShape{8000, 0, 8, 1000, 0}, {}, {}});
  auto compiled = compile_job(s, job);
  REQUIRE(compiled.ok());
  GangConstraints cons;
  cons.anti_affinity.push_back({"launcher", "wrker", "node"});
  auto spec = make_gang_spec(*compiled, cons);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.error().message == "jobs[llm].anti_affinity[0].groups[1]: unknown group \"wrker\" (groups: launcher, worker)");
  cons.anti_affinity[0].group_b = "worker";
  cons.topology = {"rack", LevelMode::kPreferred};
  auto good = make_gang_spec(*compiled, cons);
  REQUIRE(good.ok());
  CHECK(good->groups[1].min_replicas == 2);
  CHECK(good->groups[0].min_replicas == 1);
  CHECK(good->anti_affinity[0].group_b == 1);
}

TEST_CASE("internals: per-node task capacity is exact, levels resolve by their last component") {
  Cluster c;
  NodeSpec n = gpu_node("n", 4, "A100-80GB", {{kRack, "r"}, {"example.com/topology-block", "b"}});
  n.gpus[1].used_milli = 500;
  n.gpus[2].used_milli = 750;
  n.cpu = 10000;
  c.nodes().push_back(n);
  ClusterState s = build(c);
  CHECK(detail::gang_node_task_capacity(s, 0, whole(s, 1, 0)) == 2);
  CHECK(detail::gang_node_task_capacity(s, 0, whole(s, 2, 0)) == 1);
  CHECK(detail::gang_node_task_capacity(s, 0, whole(s, 1, 6000)) == 1);  // CPU binds
  TaskShape share;
  share.gpus = 1;
  share.gpu_milli = 250;
  // Shares of 250m: 4 + 2 + 1 + 4.
  CHECK(detail::gang_node_task_capacity(s, 0, s.compile(share).value()) == 11);
  CHECK(resolve_level(s, "rack") == kRack);
  CHECK(resolve_level(s, "block") == "example.com/topology-block");
  CHECK(resolve_level(s, "zone").empty());
  auto m = build_domains(s, "node", Unlabelled::kExcluded);
  CHECK(m.per_node);
  CHECK(m.names == std::vector<std::string>{"n"});
}

TEST_CASE("with the topology module's levels, a rack is a rack within its block") {
  // Rack names repeat under two blocks: by labels alone "r0" has 4 nodes, in the hierarchy two
  // racks of 2.
  Cluster c;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i)
      c.nodes().push_back(gpu_node(fmt::format("b{}n{}", b, i), 8, "H100-80GB",
                                   {{"topology.kubernetes.io/block", fmt::format("b{}", b)}, {kRack, "r0"}}));
  ClusterState s = build(c);
  auto topo = topology::ClusterTopology::from_labels(
      s, {{"topology.kubernetes.io/block", topology::LinkKind::kIbNdr}, {kRack, topology::LinkKind::kIbNdr}});
  REQUIRE(topo.ok());
  auto spec = one_group(s, 3, 8);
  spec.topology = {"rack", LevelMode::kRequired};
  GangOptions opt;
  opt.dry_run = true;
  CHECK(place_gang(s, spec, opt).verdict == Verdict::kPlaced);  // labels: one rack "r0" of 4
  opt.domains = &topo->domains();
  auto r = place_gang(s, spec, opt);
  CHECK(r.verdict == Verdict::kInfeasible);  // a rack of 2 nodes never holds 3 tasks of 8 GPUs
  CHECK(r.explanation.find("(b0/r0) offers 2") != std::string::npos);
  spec.groups[0].replicas = spec.groups[0].min_replicas = 2;
  auto r2 = place_gang(s, spec, opt);
  REQUIRE(r2.verdict == Verdict::kPlaced);
  CHECK(r2.domain == "b0/r0");
}
