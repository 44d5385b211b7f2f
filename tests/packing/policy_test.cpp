#include <doctest/doctest.h>

#include "gpusched/packing/placement.hpp"
#include "test_util.hpp"

using namespace gpusched;
using gpusched::testing::make_node;

namespace {

ClusterState build(const Cluster& c) {
  auto s = ClusterState::build(c, GpuModelRegistry::builtin());
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return std::move(s).value();
}

std::string pick(const ClusterState& s, std::string_view policy, TaskShape shape) {
  auto p = make_policy(policy);
  REQUIRE(p);
  const NodeId n = p->select(s, *s.compile(shape));
  return n == kNoNode ? "none" : std::string(s.node_name(n));
}

// Nodes with 5, 3 and 8 idle GPUs of 8.
Cluster three_nodes() {
  return Cluster({make_node("five", 64000, 256 * kGiB, 8, "H100-80GB", {1000, 1000, 1000}),
                  make_node("three", 64000, 256 * kGiB, 8, "H100-80GB", {1000, 1000, 1000, 1000, 1000}),
                  make_node("eight", 64000, 256 * kGiB, 8, "H100-80GB")});
}

}  // namespace

TEST_CASE("first-fit, best-fit and worst-fit on whole GPUs") {
  const ClusterState s = build(three_nodes());
  const TaskShape two{1000, kGiB, 2, 1000, 0};
  CHECK(pick(s, "first-fit", two) == "five");
  CHECK(pick(s, "best-fit", two) == "three");
  CHECK(pick(s, "worst-fit", two) == "eight");
  CHECK(pick(s, "spread", two) == "eight");
  const TaskShape four{1000, kGiB, 4, 1000, 0};
  CHECK(pick(s, "best-fit", four) == "five");
  CHECK(pick(s, "first-fit", four) == "five");
  const TaskShape nine{1000, kGiB, 9, 1000, 0};
  for (auto name : policy_names()) CHECK(pick(s, name, nine) == "none");
}

TEST_CASE("best-fit skips a tighter node that fails on CPU") {
  Cluster c = three_nodes();
  c.nodes()[1].cpu_used = 63500;  // "three" has 0.5 core left
  const ClusterState s = build(c);
  CHECK(pick(s, "best-fit", TaskShape{1000, kGiB, 2, 1000, 0}) == "five");
}

TEST_CASE("most-allocated packs, least-allocated spreads (Kubernetes NodeResourcesFit)") {
  // Same capacity; "busy" has 4 of 8 GPUs and half its CPU in use.
  Cluster c({make_node("idle", 64000, 256 * kGiB, 8, "A100-80GB"),
             make_node("busy", 64000, 256 * kGiB, 8, "A100-80GB", {1000, 1000, 1000, 1000})});
  c.nodes()[1].cpu_used = 32000;
  const ClusterState s = build(c);
  const TaskShape one{4000, 8 * kGiB, 1, 1000, 0};
  CHECK(pick(s, "most-allocated", one) == "busy");
  CHECK(pick(s, "least-allocated", one) == "idle");
  // Scores by hand: busy after placing = cpu 36/64, mem 8/256, gpu 5/8 -> mean 0.40625.
  MostAllocatedPolicy most;
  CHECK(most.score(s, 1, *s.compile(one)) == 406250000);
  LeastAllocatedPolicy least;
  CHECK(least.score(s, 1, *s.compile(one)) == 593750000);
}

TEST_CASE("dot-product (Tetris) prefers the node whose free vector aligns with the request") {
  // Request 16 cores + 1 GPU on nodes of 32 cores and 4 GPUs:
  //   cpu-rich: 32 cores free, 1 GPU free -> 0.5*1.0 + 0.25*0.25 = 0.5625
  //   gpu-rich: 16 cores free, 4 GPUs free -> 0.5*0.5 + 0.25*1.0  = 0.5
  Cluster c({make_node("gpu-rich", 32000, 64 * kGiB, 4, "T4"),
             make_node("cpu-rich", 32000, 64 * kGiB, 4, "T4", {1000, 1000, 1000})});
  c.nodes()[0].cpu_used = 16000;
  const ClusterState s = build(c);
  const TaskShape req{16000, 0, 1, 1000, 0};
  DotProductPolicy dot;
  CHECK(dot.score(s, 1, *s.compile(req)) == 562500000);
  CHECK(dot.score(s, 0, *s.compile(req)) == 500000000);
  CHECK(pick(s, "dot-product", req) == "cpu-rich");
}

TEST_CASE("random is seeded: same seed same sequence, only fitting nodes") {
  Cluster c;
  for (int i = 0; i < 20; ++i) c.nodes().push_back(make_node(fmt::format("n{}", i), 8000, kGiB, 1, "T4"));
  c.nodes()[3].cpu_used = 8000;
  const ClusterState s = build(c);
  auto req = *s.compile(TaskShape{1000, 0, 1, 1000, 0});
  RandomPolicy a(7), b(7), other(8);
  std::vector<NodeId> seq_a, seq_b, seq_other;
  for (int i = 0; i < 50; ++i) {
    seq_a.push_back(a.select(s, req));
    seq_b.push_back(b.select(s, req));
    seq_other.push_back(other.select(s, req));
  }
  CHECK(seq_a == seq_b);
  CHECK(seq_a != seq_other);
  for (NodeId n : seq_a) CHECK(n != 3);
  std::sort(seq_a.begin(), seq_a.end());
  CHECK(std::unique(seq_a.begin(), seq_a.end()) - seq_a.begin() > 10);  // it does spread
}

TEST_CASE("shared GPUs: best-fit takes the tightest GPU, worst-fit an idle one") {
  Cluster c({make_node("a", 16000, 64 * kGiB, 3, "T4", {0, 400, 700}),
             make_node("b", 16000, 64 * kGiB, 3, "T4", {0, 0, 800})});
  ClusterState s = build(c);
  auto quarter = *s.compile(TaskShape{1000, kGiB, 1, 250, 0});
  BestFitPolicy best;
  const NodeId n = best.select(s, quarter);
  CHECK(s.node_name(n) == "a");  // GPU 2 of a has 300 free: 50 left, tighter than b's 200
  TaskAssignment out;
  REQUIRE(best.gpu_picker().pick(s, n, quarter, out));
  CHECK(out.gpus == std::vector<GpuIndex>{2});
  CHECK(out.gpu_milli == 250);
  WorstFitPolicy worst;
  CHECK(s.node_name(worst.select(s, quarter)) == "b");  // b has two idle GPUs, a one
  auto big = *s.compile(TaskShape{1000, kGiB, 1, 700, 0});
  CHECK(s.node_name(best.select(s, big)) == "a");
  REQUIRE(best.gpu_picker().pick(s, 0, big, out));
  CHECK(out.gpus == std::vector<GpuIndex>{0});
}

TEST_CASE("CPU-only tasks under best-fit keep GPU nodes free") {
  Cluster c({make_node("gpu", 64000, 64 * kGiB, 8, "T4"), make_node("cpu", 128000, 64 * kGiB, 0, "")});
  const ClusterState s = build(c);
  CHECK(pick(s, "best-fit", TaskShape{8000, kGiB, 0, 0, 0}) == "cpu");
  CHECK(pick(s, "first-fit", TaskShape{8000, kGiB, 0, 0, 0}) == "gpu");
}

TEST_CASE("GPU model constraints and mixed-model nodes") {
  Cluster c({make_node("t4", 8000, kGiB, 2, "T4"), make_node("a100", 8000, kGiB, 2, "A100-80GB")});
  NodeSpec mixed = make_node("mixed", 8000, kGiB, 2, "T4");
  mixed.gpus[1].model = "A100-80GB";
  c.nodes().push_back(mixed);
  const ClusterState s = build(c);
  CHECK(gpusched::detail::cluster_index(s).node_model_key(2) == ClusterState::kMixedModels);
  const std::string_view a100[] = {"A100-80GB"};
  auto one = *s.compile(TaskShape{1000, 0, 1, 1000, 0}, a100);
  auto two = *s.compile(TaskShape{1000, 0, 2, 1000, 0}, a100);
  BestFitPolicy best;
  CHECK(s.node_name(best.select(s, two)) == "a100");
  // The mixed node has one A100: it fits one, and the picker takes GPU 1.
  FirstFitPolicy first;
  auto cs = s;
  TaskAssignment out;
  REQUIRE(best.gpu_picker().pick(s, 2, one, out));
  CHECK(out.gpus == std::vector<GpuIndex>{1});
  CHECK(s.check_fit(2, two) == FitReason::kInsufficientGpus);
  CHECK(s.check_fit(0, one) == FitReason::kGpuModelNotAllowed);
  CHECK(s.node_name(first.select(s, one)) == "a100");
}

TEST_CASE("place_job is all or nothing and explains itself") {
  ClusterState s = build(three_nodes());
  const ClusterState before = s;
  Job job;
  job.job_name = "train";
  job.groups.push_back(TaskGroupSpec{"worker", 3, -1, TaskShape{1000, kGiB, 6, 1000, 0}, {}, {}});
  auto compiled = compile_job(s, job);
  REQUIRE(compiled.ok());
  BestFitPolicy best;
  JobPlacement p = place_job(s, *compiled, best);
  CHECK_FALSE(p.placed());
  CHECK(p.tasks.empty());
  CHECK(p.failed_replica == 1);  // the 8-idle node takes replica 0, then no node has 6 idle
  CHECK(p.diagnosis.to_string() == "0/3 nodes: 3 insufficient GPUs");
  CHECK(describe(*compiled, p) == "group worker replica 1: 0/3 nodes: 3 insufficient GPUs");
  CHECK(s.same_allocation_as(before));

  job.groups[0].replicas = 1;
  job.groups.push_back(TaskGroupSpec{"ps", 2, -1, TaskShape{1000, kGiB, 2, 1000, 0}, {}, {}});
  compiled = compile_job(s, job);
  p = place_job(s, *compiled, best);
  REQUIRE(p.placed());
  REQUIRE(p.tasks.size() == 3);
  CHECK(s.node_name(p.tasks[0].assignment.node) == "eight");
  CHECK(p.tasks[0].assignment.gpus == std::vector<GpuIndex>{0, 1, 2, 3, 4, 5});
  CHECK(s.node_name(p.tasks[1].assignment.node) == "eight");  // 2 idle left there: the tightest
  CHECK(s.node_name(p.tasks[2].assignment.node) == "three");
}

TEST_CASE("diagnosis counts every reason and sorts by count") {
  Cluster c({make_node("a", 1000, kGiB, 1, "T4"), make_node("b", 1000, kGiB, 1, "T4"),
             make_node("c", 64000, kGiB, 1, "A100-80GB"), make_node("d", 64000, kGiB, 0, "")});
  c.nodes()[0].schedulable = false;
  const ClusterState s = build(c);
  const std::string_view t4[] = {"T4"};
  auto r = *s.compile(TaskShape{8000, 0, 1, 1000, 0}, t4);
  const FitDiagnosis d = diagnose(s, r);
  CHECK(d.to_string() == "0/4 nodes: 1 node unschedulable, 1 GPU model not allowed, 1 insufficient CPU, 1 insufficient GPUs");
  CHECK(d.count[static_cast<std::size_t>(FitReason::kInsufficientCpu)] == 1);
}
