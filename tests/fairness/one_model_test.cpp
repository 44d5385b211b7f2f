// Fair share on the one cluster and job model (issue 11 parts 1, 2 and 5): capacity and free
// resources from a ClusterState, the planner over JobViews compiled to the one job model, per-queue usage from running
// jobs, and pending reasons in the one answer vocabulary (core/outcome.hpp).
#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fairness/test_util.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"

namespace gpusched::fairness {
namespace {

using testing::amounts;
constexpr Bytes kGi = Bytes{1} << 30;

TaskGroupSpec group(std::int32_t replicas, MilliCpu cpu, GpuCount gpus, std::vector<std::string> models = {}) {
  TaskGroupSpec g;
  g.name = "g";
  g.replicas = replicas;
  g.shape.cpu = cpu;
  g.shape.memory = kGi;
  g.shape.gpus = gpus;
  g.shape.gpu_milli = gpus > 0 ? kMilliPerGpu : 0;
  g.allowed_models = std::move(models);
  return g;
}

// n0: 32 cores, 256 GiB (8 cores, 16 GiB used), 4 A100-40GB, one half used.
// n1: cordoned: 16 cores, 2 H100 (counted in no total, but its model is in the space).
// n2: 8 cores, 64 GiB, 2 H100, one unhealthy.
Cluster three_nodes() {
  std::vector<NodeSpec> nodes(3);
  nodes[0] = {"n0", 32000, 256 * kGi, 8000, 16 * kGi, {{"A100"}, {"A100", 500}, {"A100"}, {"A100"}}, {}, true, true, {}};
  nodes[1] = {"n1", 16000, 128 * kGi, 0, 0, {{"H100"}, {"H100"}}, {}, false, true, {}};
  nodes[2] = {"n2", 8000, 64 * kGi, 0, 0, {{"H100"}, {"H100", 0, 0, false}}, {}, true, true, {}};
  return Cluster(std::move(nodes));
}

TEST_CASE("one model: capacity and free resources come from the ClusterState") {
  const auto registry = GpuModelRegistry::builtin();
  const Cluster cluster = three_nodes();
  auto state = ClusterState::build(cluster, registry);
  REQUIRE(state.ok());
  auto c = fairness_cluster(*state);
  REQUIRE(c.ok());
  REQUIRE(c->space.gpu_models == std::vector<std::string>{"A100-SXM4-40GB", "H100-80GB"});
  // Eligible nodes n0 and n2: 40 cores (32 free), 320 GiB (304 free); A100: 4 GPUs, 3.5 free;
  // H100: n2's healthy GPU only.
  CHECK(c->capacity == amounts({40000, 320 * kGi, 4000, 1000}));
  CHECK(c->free == amounts({32000, 304 * kGi, 3500, 1000}));
}

TEST_CASE("one model: the totals follow cluster events and reservations without a rebuild") {
  const auto registry = GpuModelRegistry::builtin();
  auto state = ClusterState::build(three_nodes(), registry);
  REQUIRE(state.ok());
  // Uncordon n1 (16 cores, 128 GiB, 2 idle H100), fail n2, take 2 cores and one A100 on n0.
  REQUIRE(state->uncordon(1).ok());
  REQUIRE(state->fail_node(2).ok());
  TaskRequest r;
  r.shape.cpu = 2000;
  r.shape.gpus = 1;
  r.shape.gpu_milli = kMilliPerGpu;
  TaskAssignment a;
  a.node = 0;
  a.cpu = 2000;
  a.gpus = {2};
  a.gpu_milli = kMilliPerGpu;
  REQUIRE(state->reserve(r, a).ok());
  auto c = fairness_cluster(*state);
  REQUIRE(c.ok());
  CHECK(c->space.gpu_models == std::vector<std::string>{"A100-SXM4-40GB", "H100-80GB"});
  CHECK(c->capacity == amounts({48000, 384 * kGi, 4000, 2000}));
  CHECK(c->free == amounts({38000, 368 * kGi, 2500, 2000}));
  // An unhealthy A100 leaves capacity and free; a released task and a recovered node come back.
  REQUIRE(state->set_gpu_health(0, 1, false).ok());
  REQUIRE(state->release(a).ok());
  REQUIRE(state->recover_node(2).ok());
  c = fairness_cluster(*state);
  REQUIRE(c.ok());
  CHECK(c->capacity == amounts({56000, 448 * kGi, 3000, 3000}));
  CHECK(c->free == amounts({48000, 432 * kGi, 3000, 3000}));
}

TEST_CASE("one model: a cluster total beyond 64 bits is an error naming the node where it overflows") {
  const auto registry = GpuModelRegistry::builtin();
  const MilliCpu big = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  std::vector<NodeSpec> nodes(3);
  nodes[0] = {"a", big, kGi, 0, 0, {{"A100"}}, {}, true, true, {}};
  nodes[1] = {"b", 1000, kGi, 0, 0, {{"A100"}}, {}, false, true, {}};  // cordoned: not counted
  nodes[2] = {"c", big, kGi, 0, 0, {{"A100"}}, {}, true, true, {}};
  auto state = ClusterState::build(Cluster(std::move(nodes)), registry);
  REQUIRE(state.ok());
  auto c = fairness_cluster(*state);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == ErrorCode::kOverflow);
  CHECK(c.error().message.find("nodes[2] (c).cpu") != std::string::npos);
  // Cordoning one of the two big nodes brings the total back into range.
  REQUIRE(state->cordon(2).ok());
  c = fairness_cluster(*state);
  REQUIRE(c.ok());
  CHECK(c->capacity[ResourceSpace::kCpu] == big);
}

TEST_CASE("one model: plan_jobs compiles a JobView for the planner (groups, models, class, submit time)") {
  const auto registry = GpuModelRegistry::builtin();
  auto state = ClusterState::build(three_nodes(), registry);
  REQUIRE(state.ok());
  auto c = fairness_cluster(*state);
  REQUIRE(c.ok());
  std::vector<QueueConfig> queues(1);
  queues[0].name = "vision";
  const auto planner = FairSharePlanner::build(c->space, c->capacity, c->free, queues, &state->registry()).value();
  Job job;
  job.job_name = "train";
  job.queue_name = "vision";
  job.groups = {group(2, 4000, 1, {"A100", "H100"}), group(1, 1000, 2, {"H100-SXM5-80GB"})};
  job.groups[1].min_replicas = 0;
  const WithAdmissionFields view(job, "high", 3600);
  const std::vector<const JobView*> views{&view};
  auto planned = plan_jobs(planner, *state, views, PriorityClasses{{"high", 1000}});
  REQUIRE(planned.ok());
  REQUIRE(planned->jobs.size() == 1);
  const CompiledJob& p = planned->jobs[0];
  CHECK(p.name == "train");
  CHECK(p.queue == "vision");
  CHECK(p.priority == 1000);  // the class's
  CHECK(p.submit_time == 3600);
  // 2 x 4 cores + 1 core; 3 GiB; 2 x 1 GPU + 1 x 2 GPUs = 4000 milli-GPU.
  const JobDemand demand = job_demand(p);
  CHECK(demand.cpu == 9000);
  CHECK(demand.memory == 3 * kGi);
  CHECK(demand.gpu_milli == 4000);
  CHECK(demand.elastic);
  // Allowed models: {A100-40GB, H100} ∩ {H100} by the registry's ids.
  CHECK(demand.names_models);
  CHECK(demand.models == model_bit(*registry.find("H100-80GB")));
  REQUIRE(p.groups.size() == 2);
  CHECK(p.groups[1].min_replicas == 0);
  // The intersection whatever the groups' order: {H100} then {A100-40GB, H100} is {H100} too.
  CompiledJob reversed = p;
  std::swap(reversed.groups[0], reversed.groups[1]);
  CHECK(job_demand(reversed).models == model_bit(*registry.find("H100-80GB")));
  // Pending, on the one H100 GPU n2 has healthy (n1 is cordoned): the partial admission needs the
  // 2-GPU group at 0 and both 1-GPU workers, 2 H100s.
  REQUIRE(planned->plan.pending.size() == 1);
  CHECK(planner.reason(planned->plan, planned->plan.pending[0], planned->jobs) ==
        "cluster: not enough free gpu:H100-80GB (requested 2, free 1)");

  const WithAdmissionFields vip(job, "vip", 0);
  const std::vector<const JobView*> unknown_views{&vip};
  auto unknown = plan_jobs(planner, *state, unknown_views, PriorityClasses{{"high", 1000}});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownName);
  CHECK(unknown.error().field == "jobs[0].priority_class");
}

TEST_CASE("one model: plan_jobs plans job views; a bad job is an error naming it") {
  const auto registry = GpuModelRegistry::builtin();
  std::vector<NodeSpec> nodes(1);
  nodes[0] = {"cpu", 8000, 64 * kGi, 0, 0, {}, {}, true, true, {}};
  auto state = ClusterState::build(Cluster(std::move(nodes)), registry);
  REQUIRE(state.ok());
  std::vector<QueueConfig> queues(1);
  queues[0].name = "vision";
  const Amounts capacity = amounts({8000, 64 * kGi});
  const auto planner = FairSharePlanner::build(ResourceSpace{}, capacity, capacity, queues, &state->registry()).value();
  Job early, late;
  early.job_name = "early";
  late.job_name = "late";
  early.queue_name = late.queue_name = "vision";
  early.groups = late.groups = {group(1, 6000, 0)};  // 6 of 8 cores: only one fits
  // "late" is listed first but submitted later: the earlier submission is admitted.
  const WithAdmissionFields a(late, "", 200), b(early, "", 100);
  const std::vector<const JobView*> views{&a, &b};
  auto planned = plan_jobs(planner, *state, views);
  REQUIRE(planned.ok());
  REQUIRE(planned->jobs.size() == 2);
  REQUIRE(planned->plan.admitted.size() == 1);
  CHECK(planned->jobs[planned->plan.admitted[0].job].name == "early");
  CHECK(planned->plan.pending.at(0).job == 0);

  Job huge = late;
  huge.groups = {group(3, std::numeric_limits<std::int64_t>::max() / 2, 0)};
  const std::vector<const JobView*> bad{&a, &huge};
  auto refused = plan_jobs(planner, *state, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kOverflow);
  CHECK(refused.error().field == "jobs[1].groups[0].cpu");
}

TEST_CASE("one model: per-queue usage from the running jobs' assignments, as the cycle counts it") {
  const auto registry = GpuModelRegistry::builtin();
  auto state = ClusterState::build(three_nodes(), registry);
  REQUIRE(state.ok());
  auto c = fairness_cluster(*state);
  REQUIRE(c.ok());
  const std::vector<Eigen::Index> dims = gpu_dims_by_model(c->space, registry);
  // Each id of the registry by its name: A100-40GB is dimension 2, H100 3, a model the cluster lacks -1.
  CHECK(dims.at(*registry.find("A100-SXM4-40GB")) == 2);
  CHECK(dims.at(*registry.find("H100-80GB")) == 3);
  CHECK(dims.at(*registry.find("T4")) == -1);

  // vision: a 2-GPU task on n0's A100s 2-3 (4 cores) and a half-GPU task on n2's H100 0 (1 core);
  // nlp: a CPU-only task (3 cores, 2 GiB). A task counts its GPUs on its first GPU's model.
  const auto task = [](NodeId node, std::vector<GpuIndex> gpus, MilliGpu milli, MilliCpu cpu, Bytes memory) {
    RunningTask t;
    t.assignment.node = node;
    t.assignment.gpus = std::move(gpus);
    t.assignment.gpu_milli = milli;
    t.assignment.cpu = cpu;
    t.assignment.memory = memory;
    return t;
  };
  std::vector<RunningJob> running(2);
  running[0].name = "train";
  running[0].queue = "vision";
  running[0].tasks = {task(0, {2, 3}, 1000, 4000, 0), task(2, {0}, 500, 1000, kGi)};
  running[1].name = "etl";
  running[1].queue = "nlp";
  running[1].tasks = {task(0, {}, 0, 3000, 2 * kGi)};
  const std::vector<std::string> queues{"nlp", "vision"};
  auto usage = queue_usage_from_running(running, *state, c->space, queues);
  REQUIRE(usage.ok());
  CHECK((*usage)[0] == amounts({3000, 2 * kGi, 0, 0}));
  CHECK((*usage)[1] == amounts({5000, kGi, 2000, 500}));

  // One task's share, added and taken back: the milli-GPUs counted are returned.
  Amounts u = Amounts::Zero(c->space.size());
  CHECK(task_usage(u, *state, dims, running[0].tasks[1].assignment) == 500);
  CHECK(u == amounts({1000, kGi, 0, 500}));
  CHECK(task_usage(u, *state, dims, running[0].tasks[1].assignment, -1) == 500);
  CHECK(u == Amounts::Zero(c->space.size()));

  running[1].queue = "audio";
  auto bad = queue_usage_from_running(running, *state, c->space, queues);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().field == "running[1].queue");

  // A reader's running work need not be reserved on the state (Kubernetes and Slurm jobs read with
  // their requests taken off the nodes, capped): the sums are checked, never wrapped.
  running[1].queue = "vision";
  running[1].tasks = {task(1, {}, 0, std::numeric_limits<std::int64_t>::max() - 1000, 0)};
  auto wrapped = queue_usage_from_running(running, *state, c->space, queues);
  REQUIRE_FALSE(wrapped.ok());
  CHECK(wrapped.error().code == ErrorCode::kOverflow);
  CHECK(wrapped.error().field == "running[1].queue");
}

TEST_CASE("one vocabulary: pending reasons map onto Verdict and ReasonKind") {
  ResourceSpace space;
  const Amounts capacity = amounts({40000, 64 * kGi});
  std::vector<QueueConfig> queues(2);
  queues[0].name = "small";
  queues[0].nominal = queue_amounts(amounts({2000, -1}));  // 2 cores, memory unconstrained
  queues[0].usage = queue_amounts(amounts({1000, 0}));
  queues[1].name = "open";
  auto planner = FairSharePlanner::build(space, capacity, capacity - amounts_of(queues[0].usage), queues);
  REQUIRE(planner.ok());
  const std::vector<CompiledJob> jobs{
      testing::job_of("over-now", "small", 1500, 0, 0),   // 1000 + 1500 > 2000, 1500 <= 2000
      testing::job_of("over-ever", "small", 4000, 0, 0),  // above nominal itself
      testing::job_of("too-big", "open", 100000, 0, 0),   // above the cluster
      testing::job_of("lost", "nowhere", 1000, 0, 0)};
  const AdmissionPlan plan = planner->plan(jobs);
  CHECK(plan.admitted.empty());
  REQUIRE(plan.pending.size() == 4);
  std::map<std::string, Outcome> by_job;
  for (const auto& p : plan.pending) by_job[jobs[p.job].name] = planner->outcome(plan, p);

  const Outcome& now = by_job["over-now"];
  CHECK(now.verdict == Verdict::kNotNow);
  REQUIRE(now.reasons.size() == 1);
  CHECK(now.reasons[0] == Reason{ReasonKind::kOverNominalQuota, Unit::kMilliCpu, 1500, 1000, 0, ResourceSpace::kCpu});
  CHECK(to_string(now) == "not now: over nominal quota (need 1500, have 1000 milli-CPU)");

  CHECK(by_job["over-ever"].verdict == Verdict::kInfeasible);
  CHECK(by_job["over-ever"].reasons[0].kind == ReasonKind::kOverNominalQuota);

  const Outcome& big = by_job["too-big"];
  CHECK(big.verdict == Verdict::kInfeasible);
  CHECK(big.reasons[0] == Reason{ReasonKind::kClusterFull, Unit::kMilliCpu, 100000, 40000, 0, ResourceSpace::kCpu});

  CHECK(by_job["lost"].verdict == Verdict::kInvalid);
  CHECK(by_job["lost"].reasons[0].kind == ReasonKind::kNoSuchQueue);

  // query() gives the same answer for one job.
  CHECK(planner->query(jobs[0]).outcome.verdict == Verdict::kNotNow);
  CHECK(planner->query(jobs[2]).outcome.verdict == Verdict::kInfeasible);
}

}  // namespace
}  // namespace gpusched::fairness
