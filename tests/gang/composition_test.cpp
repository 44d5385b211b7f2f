// Composition with the other families: the caller's policy decides inside topology domains (no
// dispatch on names), a GPU picker given in the options is used, and the one answer vocabulary
// (placed / not now / infeasible, with structured reasons).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "gang_test_util.hpp"
#include "gpusched/packing/fgd.hpp"

using namespace gpusched;
using namespace gpusched::gang_testing;

namespace {

constexpr const char* kRackKey = "topology.kubernetes.io/rack";

// rack-0: nodes 0-3, rack-1: nodes 4-7, every node 8 idle H100s (the GPU count is the only
// difference a policy could see, so any choice among them is the policy's own rule).
Cluster two_racks() {
  Cluster c;
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i)
      c.nodes().push_back(gpu_node(fmt::format("r{}n{}", r, i), 8, "H100-80GB", {{kRackKey, fmt::format("rack-{}", r)}}));
  return c;
}

// A policy that does not rank: the highest-id fitting node. Neither best-fit nor worst-fit would
// ever choose it among identical nodes (both break ties to the lowest id).
class HighestIdPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }  // a name must not change anything
  NodeId select(const ClusterState& state, const TaskRequest& request) const override {
    for (NodeId n = static_cast<NodeId>(state.node_count()); n-- > 0;)
      if (state.check_fit(n, request) == FitReason::kFits) return n;
    return kNoNode;
  }
};

// Takes the highest-index idle GPUs (the default picker takes the lowest).
class HighestGpuPicker final : public GpuPicker {
 public:
  bool pick(const ClusterState& state, NodeId node, const TaskRequest& request, TaskAssignment& out) const override {
    out = make_assignment(node, request);
    const auto free = state.shares().free_milli(node);
    for (std::size_t g = free.size(); g-- > 0 && out.gpus.size() < static_cast<std::size_t>(request.shape.gpus);)
      if (free[g] == kMilliPerGpu) out.gpus.push_back(static_cast<GpuIndex>(g));
    std::sort(out.gpus.begin(), out.gpus.end());
    return out.gpus.size() == static_cast<std::size_t>(request.shape.gpus);
  }
};

}  // namespace

TEST_CASE("inside a required rack, the caller's policy chooses the nodes, whatever its name") {
  const Cluster c = two_racks();
  ClusterState s = build(c);
  // 2 tasks x 4 GPUs in one rack. Both racks hold it; Kueue best fit ties to rack-0 (nodes 0-3).
  GangSpec spec;
  spec.name = "g";
  spec.groups.push_back(group("worker", 2, whole(s, 4)));
  spec.topology = {"rack", LevelMode::kRequired};
  HighestIdPolicy highest;
  GangOptions opt;
  opt.policy = &highest;
  opt.dry_run = true;
  const GangResult r = place_gang(s, spec, opt);
  REQUIRE(r.placed());
  CHECK(r.domain == "rack-0");
  // Highest id first: node 3 takes the first task; it has 4 idle GPUs left and is still the highest
  // fitting node, so it takes the second too.
  CHECK(nodes_of(r, 0) == std::set<NodeId>{3});
  // Best-fit on the same gang packs from the lowest id: node 0 for both.
  BestFitPolicy best;
  opt.policy = &best;
  CHECK(nodes_of(place_gang(s, spec, opt), 0) == std::set<NodeId>{0});
}

TEST_CASE("select_among's default runs the policy's own rule on the candidates alone") {
  const Cluster c = two_racks();
  ClusterState s = build(c);
  const TaskRequest r = whole(s, 2);
  HighestIdPolicy highest;
  const std::vector<NodeId> rack0{2, 0, 1, 3};
  CHECK(highest.select_among(s, r, rack0) == 3);
  CHECK(highest.select_among(s, r, std::vector<NodeId>{5, 1}) == 5);
  CHECK(highest.select_among(s, r, std::vector<NodeId>{}) == kNoNode);
  // Ranking policies answer from rank(): worst-fit prefers the node with the most idle GPUs left.
  const TaskRequest six = whole(s, 6);
  TaskAssignment a = make_assignment(6, six);
  a.gpus = {0, 1, 2, 3, 4, 5};
  REQUIRE(s.reserve(six, a).ok());  // node 6: 2 idle left
  WorstFitPolicy worst;
  BestFitPolicy best;
  CHECK(worst.select_among(s, r, std::vector<NodeId>{6, 7}) == 7);
  CHECK(best.select_among(s, r, std::vector<NodeId>{7, 6}) == 6);
}

TEST_CASE("FGD decides inside a domain: its choice among a rack is its choice on that rack alone") {
  // Two racks of T4 nodes with different free shares: FGD's fragmentation score differs per node.
  Cluster c;
  const std::vector<std::vector<MilliGpu>> used{{0, 0, 0, 0}, {500, 0, 0, 0}, {1000, 1000, 1000, 500},
                                                {250, 750, 0, 0}, {0, 0, 0, 0}, {1000, 0, 0, 0}};
  for (std::size_t i = 0; i < used.size(); ++i) {
    NodeSpec n = gpu_node(fmt::format("n{}", i), 4, "T4", {{kRackKey, i < 3 ? "rack-a" : "rack-b"}});
    for (std::size_t g = 0; g < 4; ++g) n.gpus[g].used_milli = used[i][g];
    c.nodes().push_back(n);
  }
  ClusterState s = build(c);
  TaskShape half;
  half.cpu = 4000;
  half.gpus = 1;
  half.gpu_milli = 500;
  const TaskRequest r = s.compile(half).value();
  TargetWorkload w;
  w.shapes.resize(2);
  w.shapes[0].cpu = 4000;
  w.shapes[0].gpus = 1;
  w.shapes[0].gpu_milli = 500;
  w.shapes[0].weight = 0.6;
  w.shapes[1].cpu = 8000;
  w.shapes[1].gpus = 1;
  w.shapes[1].gpu_milli = 1000;
  w.shapes[1].weight = 0.4;
  FgdPolicy fgd(w, 7);
  // The reference: FGD's select on a cluster made of rack-b alone (nodes 3, 4, 5 in order).
  Cluster rack_b;
  for (std::size_t i = 3; i < used.size(); ++i) rack_b.nodes().push_back(c.nodes()[i]);
  ClusterState only_b = build(rack_b);
  FgdPolicy reference(w, 7);
  const NodeId expected = reference.select(only_b, only_b.compile(half).value());
  REQUIRE(expected != kNoNode);
  CHECK(fgd.select_among(s, r, std::vector<NodeId>{5, 3, 4}) == static_cast<NodeId>(3 + expected));

  // And the gang solver asks it: a 1-task gang required in rack-b lands where FGD chose.
  GangSpec spec;
  spec.name = "fgd";
  spec.groups.push_back(group("t", 1, r));
  spec.topology = {kRackKey, LevelMode::kRequired};
  GangOptions opt;
  opt.policy = &fgd;
  opt.dry_run = true;
  // Fill rack-a, so that rack-b is the one domain that holds the task.
  ClusterState busy = s;
  for (NodeId n = 0; n < 3; ++n) {
    const auto free = busy.shares().free_milli(n);
    for (std::size_t g = 0; g < free.size(); ++g) {
      if (free[g] == 0) continue;
      TaskShape rest;
      rest.gpus = 1;
      rest.gpu_milli = free[g];
      const TaskRequest fill = busy.compile(rest).value();
      TaskAssignment a = make_assignment(n, fill);
      a.gpus = {static_cast<GpuIndex>(g)};
      REQUIRE(busy.reserve(fill, a).ok());
    }
  }
  FgdPolicy fgd2(w, 7);
  opt.policy = &fgd2;
  const GangResult placed = place_gang(busy, spec, opt);
  REQUIRE(placed.placed());
  CHECK(placed.domain == "rack-b");
  CHECK(placed.tasks[0].assignment.node == static_cast<NodeId>(3 + expected));
}

TEST_CASE("a GPU picker in the options replaces the policy's picker, for gangs and for place_job") {
  const Cluster c = two_racks();
  ClusterState s = build(c);
  HighestGpuPicker highest_gpus;
  GangOptions opt;
  opt.gpu_picker = &highest_gpus;
  opt.dry_run = true;
  const GangResult r = place_gang(s, one_group_of(s, 1, 2), opt);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].assignment.gpus == std::vector<GpuIndex>{6, 7});
  opt.gpu_picker = nullptr;
  CHECK(place_gang(s, one_group_of(s, 1, 2), opt).tasks[0].assignment.gpus == std::vector<GpuIndex>{0, 1});

  CompiledJob job;
  job.name = "j";
  job.groups.push_back({"t", 1, 1, whole(s, 3), ""});
  BestFitPolicy best;
  const auto mark = s.checkpoint();
  JobPlacementOptions popt;
  popt.gpu_picker = &highest_gpus;
  const JobPlacement p = place_job(s, job, best, popt);
  REQUIRE(p.placed());
  CHECK(p.tasks[0].assignment.gpus == std::vector<GpuIndex>{5, 6, 7});
  s.rollback(mark);
}

TEST_CASE("not now versus infeasible: fits the empty cluster or not") {
  // 4 nodes x 8 GPUs; nodes 0-2 fully used, node 3 idle: 8 GPUs free now, 32 at capacity.
  Cluster c;
  for (int i = 0; i < 4; ++i) c.nodes().push_back(gpu_node(fmt::format("n{}", i), 8, "H100-80GB", {}, i < 3 ? 0 : 8));
  ClusterState s = build(c);
  // 3 x 8 GPUs: 1 task fits now, 4 at capacity -> not now (aggregate bound, then capacity).
  const GangResult later = place_gang(s, one_group_of(s, 3, 8));
  CHECK(later.verdict == Verdict::kNotNow);
  CHECK_FALSE(later.undecided());
  REQUIRE_FALSE(later.reasons.empty());
  CHECK(later.reasons[0] == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 3, 1, 0, 0});
  // 5 x 8 GPUs: more GPUs than the cluster has (40 > 32) -> infeasible.
  const GangResult never = place_gang(s, one_group_of(s, 5, 8));
  CHECK(never.verdict == Verdict::kInfeasible);
  CHECK(never.reasons.front() == Reason{ReasonKind::kInsufficientGpuShare, Unit::kMilliGpu, 40000, 32000, 0, -1});
  // 1 x 16 GPUs: larger than every node -> infeasible, named by the GPUs per task.
  const GangResult huge = place_gang(s, one_group_of(s, 1, 16));
  CHECK(huge.verdict == Verdict::kInfeasible);
  CHECK(huge.reasons.front() == Reason{ReasonKind::kInsufficientGpus, Unit::kGpus, 16, 8, 0, 0});
  CHECK(describe(one_group_of(s, 1, 16), huge, s).find("infeasible even on the empty cluster") != std::string::npos);
  // CPU-only: 4 tasks of 60 CPUs on 96-CPU nodes (one per node): 4 fit now and at capacity.
  GangSpec cpu;
  cpu.name = "cpu";
  cpu.groups.push_back(group("t", 5, cpu_only(s, 60000)));
  const GangResult cpu_result = place_gang(s, cpu);
  CHECK(cpu_result.verdict == Verdict::kInfeasible);  // 5 > the 4 that fit at capacity
  CHECK(cpu_result.reasons.front() == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 5, 4, 0, 0});

  // place_job says the same: not now for a task that fits an empty node, infeasible otherwise.
  BestFitPolicy best;
  CompiledJob job;
  job.name = "j";
  job.groups.push_back({"t", 2, 2, whole(s, 8), ""});
  JobPlacement p = place_job(s, job, best);
  CHECK(p.verdict == Verdict::kNotNow);
  CHECK(p.reasons.front() == Reason{ReasonKind::kInsufficientGpus, Unit::kGpus, 8, 0, 4, 0});
  job.groups[0].request = whole(s, 9);
  p = place_job(s, job, best);
  CHECK(p.verdict == Verdict::kInfeasible);
  // At capacity every node offers 8 GPUs, 9 needed: 4 nodes fail that way.
  CHECK(p.reasons.front() == Reason{ReasonKind::kInsufficientGpus, Unit::kGpus, 9, 8, 4, 0});
  CHECK(describe(job, p) ==
        "group t replica 0: infeasible (node capacities, as if the cluster were empty): 0/4 nodes: 4 insufficient GPUs");
  job.groups[0] = {"t", 5, 5, whole(s, 8), ""};
  p = place_job(s, job, best);
  CHECK(p.verdict == Verdict::kInfeasible);  // 5 replicas, 4 fit at capacity
  CHECK(p.reasons.front() == Reason{ReasonKind::kTooFewTasksFit, Unit::kTasks, 5, 4, 0, 0});
}
