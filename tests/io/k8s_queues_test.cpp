// Gangs and queues: Volcano PodGroup, Job and Queue; Kueue ResourceFlavor, ClusterQueue, LocalQueue,
// Topology and pod groups; KAI queues; into the job model and the fairness family's queues.
#include <doctest/doctest.h>

#include <optional>

#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "io/k8s_test_util.hpp"

using namespace gpusched;
using k8s_test::k8s_fixture;
using k8s_test::job;

namespace {

const io::k8s::QueueSpec& queue(const io::k8s::Input& in, const std::string& name) {
  for (const auto& q : in.queues)
    if (q.name == name) return q;
  FAIL("no queue " << name);
  return in.queues.front();
}

std::int64_t amount(const std::vector<std::pair<std::string, std::int64_t>>& v, const std::string& key) {
  for (const auto& [k, a] : v)
    if (k == key) return a;
  return -99;
}

constexpr std::int64_t kGi = 1LL << 30;

// The fairness family's view of a Kubernetes input: the cluster's resources and the queue configs.
struct QueueInput {
  fairness::FairnessCluster cluster;
  std::vector<fairness::QueueConfig> configs;
  std::optional<ClusterState> state;  // the jobs compile against it (plan_jobs)
};
QueueInput queue_input(const io::k8s::Input& in) {
  auto state = ClusterState::build(in.cluster, in.registry);
  REQUIRE(state.ok());
  auto fc = fairness::fairness_cluster(*state);
  REQUIRE(fc.ok());
  auto configs = io::k8s::queue_configs(in, *state, fc->space);
  REQUIRE_MESSAGE(configs.ok(), (configs.ok() ? "" : configs.error().message));
  return {std::move(*fc), std::move(*configs), std::move(*state)};
}

}  // namespace

TEST_CASE("k8s volcano: a PodGroup is one gang job; a Job's tasks are its groups; a Queue is a quota") {
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("pods.yaml"), k8s_fixture("volcano.yaml")});
  const Job& llm = job(in, "team-a/llm");
  REQUIRE(llm.groups.size() == 1);   // the two pods ask for the same: one group of 2
  CHECK(llm.groups[0].replicas == 2);
  CHECK(llm.groups[0].min_replicas == -1);  // minMember 2 = both
  CHECK(llm.groups[0].shape.gpus == 4);
  CHECK(llm.queue_name == "research");
  CHECK(llm.job_priority == 1000);  // PodGroup priorityClassName "high" (pods.yaml's PriorityClass)
  const Job& sweep = job(in, "team-b/sweep");
  REQUIRE(sweep.groups.size() == 2);
  CHECK(sweep.groups[0].name == "ps");
  CHECK(sweep.groups[0].min_replicas == -1);
  CHECK(sweep.groups[1].name == "worker");
  CHECK(sweep.groups[1].replicas == 3);
  CHECK(sweep.groups[1].min_replicas == 2);
  CHECK(sweep.groups[1].shape.gpus == 1);
  // The pods Volcano will create, by its naming rule.
  std::size_t j = 0;
  while (in.jobs[j].job_name != "team-b/sweep") ++j;
  REQUIRE(in.sources[j].pods.size() == 2);
  CHECK(in.sources[j].pods[1][2].name == "sweep-worker-2");
  CHECK(in.sources[j].kind == "Job");
  // Queue research: deserved -> nominal, capability - deserved -> borrowing limit.
  const auto& q = queue(in, "research");
  CHECK(q.weight == 2.0);
  CHECK(amount(q.nominal, "cpu") == 64000);
  CHECK(amount(q.nominal, "gpu/A100-80GB") == 8000);
  CHECK(amount(q.borrowing_limit, "gpu/A100-80GB") == 4000);
  CHECK(amount(q.borrowing_limit, "memory") == 512 * kGi);
}

TEST_CASE("k8s volcano: minMember below the gang's pods makes the group elastic; running members count") {
  const std::string text = R"(
kind: Node
metadata: {name: n, labels: {nvidia.com/gpu.product: H100}}
status: {allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ns}
spec: {minMember: 3}
)";
  std::string pods;
  for (int i = 0; i < 4; ++i)
    pods += "---\nkind: Pod\nmetadata: {name: p" + std::to_string(i) +
            ", namespace: ns, annotations: {scheduling.k8s.io/group-name: g}}\nspec:\n" + (i == 0 ? "  nodeName: n\n" : "") +
            "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n";
  auto in = k8s_test::read_ok({text + pods});
  // 1 member runs, 3 pending; minMember 3 - 1 running = 2 more needed.
  const Job& g = job(in, "ns/g");
  CHECK(g.groups[0].replicas == 3);
  CHECK(g.groups[0].min_replicas == 2);
  CHECK(in.running.size() == 1);
}

TEST_CASE("k8s kueue: flavors, quotas, cohort, local queues, topology levels, pod groups") {
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("kueue.yaml")});
  CHECK(in.topology_levels == std::vector<std::string>{"topology.kubernetes.io/zone", "example.com/rack", "kubernetes.io/hostname"});
  const auto& a = queue(in, "team-a-cq");
  CHECK(a.cohort == "org");
  CHECK(a.unlisted == 0);
  CHECK(amount(a.nominal, "cpu") == 64000);
  CHECK(amount(a.nominal, "memory") == 512 * kGi);
  CHECK(amount(a.nominal, "gpu/A100-80GB") == 8000);  // flavor a100-80 -> its product label's model
  CHECK(amount(a.borrowing_limit, "gpu/A100-80GB") == 4000);
  CHECK(a.flavor_order == std::vector<std::string>{"A100-80GB"});
  CHECK(queue(in, "team-b-cq").strict_fifo);
  CHECK(amount(queue(in, "team-b-cq").lending_limit, "gpu/A100-80GB") == 4000);
  // spec.preemption is followed (Kueue's defaults are Never), not reported.
  CHECK(a.within_queue == WithinQueue::kLowerPriority);
  CHECK(a.reclaim_within_cohort == CohortReclaim::kAny);
  CHECK(queue(in, "team-b-cq").within_queue == WithinQueue::kNever);
  CHECK(queue(in, "team-b-cq").reclaim_within_cohort == CohortReclaim::kNever);
  CHECK_FALSE(k8s_test::has_warning(in, "spec.preemption.withinClusterQueue"));
  CHECK_FALSE(k8s_test::has_warning(in, "spec.preemption.reclaimWithinCohort"));
  CHECK_FALSE(a.borrow_within_cohort.lower_priority);
  // borrowWithinCohort as Kueue's API has it; beside reclaimWithinCohort Never it is refused.
  const std::string cq = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  cohort: org
  preemption:
    reclaimWithinCohort: RECLAIM
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
)";
  auto with = k8s_test::read_ok({std::string(cq).replace(cq.find("RECLAIM"), 7, "Any")});
  CHECK(queue(with, "cq").borrow_within_cohort.lower_priority);
  CHECK(queue(with, "cq").borrow_within_cohort.max_priority_threshold == 100);
  const std::string never = k8s_test::read_error({std::string(cq).replace(cq.find("RECLAIM"), 7, "Never")});
  CHECK(never.find("spec.preemption.borrowWithinCohort.policy") != std::string::npos);
  // The pod group: both pods, rigid (total count 2), in team-a-cq through LocalQueue team-a/lq,
  // required to share a rack.
  const Job& tas = job(in, "team-a/tas");
  CHECK(tas.queue_name == "team-a-cq");
  CHECK(tas.groups[0].replicas == 2);
  CHECK(tas.job_topology.level == "example.com/rack");
  CHECK(tas.job_topology.mode == LevelMode::kRequired);
  CHECK(job(in, "team-b/solo").queue_name == "team-b-cq");

  // Into the fairness family: dimensions cpu, memory, A100-80GB, A100-SXM4-40GB (first appearance).
  const QueueInput qi = queue_input(in);
  REQUIRE(qi.configs.size() == 2);
  const auto& c = qi.configs[0];
  CHECK(c.reclaim_within_cohort == CohortReclaim::kAny);  // the queue's policy reaches the cycle
  CHECK(c.within_queue == WithinQueue::kLowerPriority);
  const auto a100 = *qi.cluster.space.gpu_dim("A100-80GB");
  const auto a40 = *qi.cluster.space.gpu_dim("A100-SXM4-40GB");
  CHECK(c.nominal[a100] == 8000);
  CHECK(c.nominal[a40] == 0);  // not covered by the ClusterQueue: inadmissible there
  CHECK(c.borrowing_limit[a100] == 4000);
  CHECK(c.borrowing_limit[fairness::ResourceSpace::kCpu] == fairness::kNoLimit);

  // Admission: team-a's 4 GPUs and team-b's 4 GPUs are within nominal quota: both admitted.
  auto planner = fairness::FairSharePlanner::build(qi.cluster.space, qi.cluster.capacity, qi.cluster.free, qi.configs,
                                                   &qi.state->registry());
  REQUIRE_MESSAGE(planner.ok(), (planner.ok() ? "" : planner.error().message));
  std::vector<const JobView*> views;
  for (const auto& j : in.jobs) views.push_back(&j);
  auto plan = fairness::plan_jobs(*planner, *qi.state, views, in.priority_classes);
  REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? "" : plan.error().message));
  CHECK(plan->plan.admitted.size() == 2);
  CHECK(plan->plan.pending.empty());
}

TEST_CASE("k8s kai: quota, limit, over-quota weight, parent queues; usage from running pods") {
  const std::string running = R"(
kind: Pod
metadata: {name: r, namespace: ml, labels: {kai.scheduler/queue: ml-team}}
spec:
  nodeName: gpu-a100-0
  tolerations: [{operator: Exists}]
  containers: [{name: c, resources: {requests: {cpu: "4", memory: 8Gi}, limits: {nvidia.com/gpu: 3}}}]
status: {phase: Running}
)";
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("kai.yaml"), running});
  // department is ml-team's parent: it divides by weight, the leaves hold the quotas; its GPU quota
  // of 16 is reported by field (cpu and memory say "none": quota -1, limit -1).
  const auto& d = queue(in, "department");
  CHECK(d.nominal.empty());
  CHECK(d.cohort.empty());
  CHECK(k8s_test::has_warning(in, "spec.resources.gpu.quota"));
  CHECK_FALSE(k8s_test::has_warning(in, "spec.resources.cpu.quota"));
  // The capacity no leaf's quota covers is KAI's over-quota pool, a cohort member without jobs:
  // 16 A100-80GB GPUs less ml-team's 4; the cluster's CPUs less ml-team's 32.
  const auto& pool = queue(in, "(kai over-quota pool)");
  CHECK(pool.cohort == "kai");
  CHECK(amount(pool.nominal, "gpu/A100-80GB") == 12000);
  std::int64_t cpus = 0;
  for (const auto& n : in.cluster.nodes()) cpus += n.cpu;
  CHECK(amount(pool.nominal, "cpu") == cpus - 32000);
  CHECK(amount(pool.borrowing_limit, "gpu/A100-80GB") == 0);
  const auto& m = queue(in, "ml-team");
  CHECK(m.parent == "department");
  CHECK(m.weight == 2.0);
  CHECK(amount(m.nominal, "cpu") == 32000);                      // millicores
  CHECK(amount(m.borrowing_limit, "cpu") == 32000);              // limit 64000 - quota 32000
  CHECK(amount(m.nominal, "memory") == 262144LL * 1000000);      // MB = 10^6 bytes
  CHECK(amount(m.nominal, "gpu/A100-80GB") == 4000);
  CHECK(amount(m.borrowing_limit, "gpu/A100-80GB") == 4000);     // limit 8 - quota 4
  CHECK(job(in, "ml/kai-train").queue_name == "ml-team");

  const QueueInput qi = queue_input(in);
  // The running pod's 3 A100-80GB GPUs, 4 CPUs and 8Gi count in ml-team's usage.
  const auto& ml = qi.configs[1];
  REQUIRE(ml.usage.size() == qi.cluster.space.size());
  CHECK(ml.usage[*qi.cluster.space.gpu_dim("A100-80GB")] == 3000);
  CHECK(ml.usage[fairness::ResourceSpace::kCpu] == 4000);
  CHECK(ml.usage[fairness::ResourceSpace::kMemory] == 8 * kGi);
  const auto charged_to_parent = [](const io::k8s::Input& input) {
    for (const auto& w : input.warnings)
      if (w.field == "queue" && w.message.find("usage counts in no queue") != std::string::npos) return true;
    return false;
  };
  CHECK_FALSE(charged_to_parent(in));

  // The same pod charged to the parent queue: counted in no queue's usage, and reported.
  std::string on_parent = running;
  on_parent.replace(on_parent.find("kai.scheduler/queue: ml-team"), 28, "kai.scheduler/queue: department");
  auto parent_in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), k8s_fixture("kai.yaml"), on_parent});
  CHECK(charged_to_parent(parent_in));
  const QueueInput parent_qi = queue_input(parent_in);
  CHECK(parent_qi.configs[1].usage[fairness::ResourceSpace::kCpu] == 0);
}

TEST_CASE("k8s kai: the quickstart's queues (a parent and a child of quota 0, limit -1) admit by over-quota") {
  // NVIDIA/KAI-Scheduler docs/quickstart: default-parent-queue and default-queue, every resource
  // {quota: 0, limit: -1, overQuotaWeight: 1}. They were refused ("a queue with child queues takes
  // no quota"), and flattened quota 0 / limit -1 was an empty cohort that admitted nothing.
  std::string queues;
  for (const std::string name : {"default-parent-queue", "default-queue"}) {
    queues += "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: " + name + "}\nspec:\n";
    if (name == "default-queue") queues += "  parentQueue: default-parent-queue\n";
    queues += "  resources:\n";
    for (const char* r : {"cpu", "gpu", "memory"}) queues += std::string("    ") + r + ": {quota: 0, limit: -1, overQuotaWeight: 1}\n";
    queues += "---\n";
  }
  const std::string pod = R"(apiVersion: v1
kind: Pod
metadata: {name: gpu-pod, namespace: default, labels: {kai.scheduler/queue: default-queue}}
spec:
  schedulerName: kai-scheduler
  tolerations: [{operator: Exists}]
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
status: {phase: Pending}
)";
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), queues + pod});
  CHECK_FALSE(k8s_test::has_warning(in, "spec.resources"));
  const QueueInput qi = queue_input(in);
  auto planner = fairness::FairSharePlanner::build(qi.cluster.space, qi.cluster.capacity, qi.cluster.free, qi.configs);
  REQUIRE_MESSAGE(planner.ok(), (planner.ok() ? "" : planner.error().message));
  const auto& leaf = qi.configs[1];
  REQUIRE(leaf.name == "default-queue");
  CHECK(leaf.nominal[*qi.cluster.space.gpu_dim("A100-80GB")] == 0);
  CHECK(leaf.cohort == "kai");
  // The pool lends the whole cluster: the pod is admitted, borrowing.
  CompiledJob job;
  job.name = "default/gpu-pod";
  job.queue = "default-queue";
  TaskShape& task = job.groups.emplace_back().request.shape;
  task.gpus = 1;
  task.gpu_milli = kMilliPerGpu;
  const auto plan = planner->plan(std::vector<CompiledJob>{job});
  REQUIRE(plan.admitted.size() == 1);
  CHECK(plan.admitted[0].borrowed);
}

namespace {

std::string volcano_queue(const std::string& name, const std::string& hierarchy, const std::string& weights) {
  return "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: " + name +
         "\n  annotations: {volcano.sh/hierarchy: \"" + hierarchy + "\", volcano.sh/hierarchy-weights: \"" + weights +
         "\"}\nspec: {weight: 1, reclaimable: true}\n---\n";
}

}  // namespace

TEST_CASE("k8s volcano: hierarchy annotations build the H-DRF queue tree with their weights") {
  // Volcano's example/hierarchical-jobs queues (docs/design/hdrf.md): eng 2 and sci 8 under root,
  // each with prod 8 and dev 2.
  const std::string queues = volcano_queue("root-eng-prod", "root/eng/prod", "1/2/8") +
                             volcano_queue("root-eng-dev", "root/eng/dev", "1/2/2") +
                             volcano_queue("root-sci-prod", "root/sci/prod", "1/8/8") +
                             volcano_queue("root-sci-dev", "sci/dev", "8/2");  // "root/" and "1/" prepended
  auto in = k8s_test::read_ok({k8s_fixture("nodes.yaml"), queues});
  CHECK(queue(in, "root/eng").weight == 2.0);
  CHECK(queue(in, "root/eng").parent.empty());
  CHECK(queue(in, "root/sci").weight == 8.0);
  CHECK(queue(in, "root-eng-prod").parent == "root/eng");
  CHECK(queue(in, "root-eng-prod").weight == 8.0);
  CHECK(queue(in, "root-sci-dev").parent == "root/sci");
  CHECK(queue(in, "root-sci-dev").weight == 2.0);
  CHECK(queue(in, "root-sci-dev").cohort == "volcano");
  // The tree is a valid queue tree of the fairness family (parents hold weight only).
  const QueueInput qi = queue_input(in);
  auto planner = fairness::FairSharePlanner::build(qi.cluster.space, qi.cluster.capacity, qi.cluster.free, qi.configs);
  REQUIRE_MESSAGE(planner.ok(), (planner.ok() ? "" : planner.error().message));

  // Inconsistent trees are refused by annotation.
  const std::string counts = k8s_test::read_error({volcano_queue("a", "root/x/a", "1/2")});
  CHECK(counts.find("volcano.sh/hierarchy-weights") != std::string::npos);
  const std::string two = k8s_test::read_error({volcano_queue("a", "root/x/a", "1/2/1") + volcano_queue("b", "root/x/b", "1/3/1")});
  CHECK(two.find("\"root/x\" has weight") != std::string::npos);
  const std::string both = k8s_test::read_error({volcano_queue("a", "root/x", "1/2") + volcano_queue("b", "root/x/b", "1/2/1")});
  CHECK(both.find("a leaf here and an inner node") != std::string::npos);
  const std::string bad = k8s_test::read_error({volcano_queue("a", "root/x/a", "1/heavy/1")});
  CHECK(bad.find("\"heavy\"") != std::string::npos);
}

TEST_CASE("k8s queues: bad queue objects name the object, field and value") {
  const std::string kai = k8s_test::read_error({R"(
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec: {resources: {gpu: {quota: "lots"}}}
)"});
  CHECK(kai.find("Queue q: spec.resources.gpu.quota") != std::string::npos);
  CHECK(kai.find("lots") != std::string::npos);
  const std::string cq = k8s_test::read_error({R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: -4}]}]
)"});
  CHECK(cq.find("ClusterQueue cq: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota") != std::string::npos);
  CHECK(cq.find("-4") != std::string::npos);
  const std::string lq = k8s_test::read_error({"apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: l, namespace: x}\nspec: {}\n"});
  CHECK(lq.find("LocalQueue x/l: spec.clusterQueue: missing") != std::string::npos);
}

TEST_CASE("k8s volcano: a job's replicas are bounded by what a Kubernetes cluster holds") {
  // replicas: 1000000 (268 bytes) took 1.75 GB; Kubernetes documents at most 150,000 pods a cluster.
  const std::string job = R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: big, namespace: d}
spec:
  tasks:
  - {name: a, replicas: 100000, template: {spec: {containers: [{name: c}]}}}
  - {name: b, replicas: 50001, template: {spec: {containers: [{name: c}]}}}
)";
  const std::string e = k8s_test::read_error({job});
  CHECK(e.find("Job d/big: spec.tasks[1].replicas: the job's tasks have 150001 replicas: more than the 150000 pods") != std::string::npos);
}
