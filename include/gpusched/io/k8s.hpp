// gpusched/io/k8s.hpp — Kubernetes objects in, bindings out.
//
// What it is for. A platform team already has its cluster as Kubernetes objects: `kubectl get nodes
// -o json`, the pending and running Pods, Volcano PodGroups and Jobs, Kueue ClusterQueues, KAI
// queues. `read` turns any mix of them (JSON or YAML, multi-document YAML, `kind: List` and the
// `*List` kinds) into the one model every policy family reads: a `Cluster` (nodes with allocatable
// CPU, memory and GPUs, MIG instances of both device-plugin strategies, labels, cordon and health),
// the pending pods as `Job`s (a PodGroup or a Volcano Job is one gang job), the running pods'
// usage subtracted from their nodes, and the queues as fair-share queue configurations.
// `bindings_json` turns the decisions back into pod -> node (GPU indices or a MIG device) bindings.
//
//   std::vector<gpusched::io::k8s::Source> in = {{nodes_text, "nodes.yaml"}, {pods_text, "pods.yaml"}};
//   auto input = gpusched::io::k8s::read(in).value();
//   auto state = gpusched::ClusterState::build(input.cluster, input.registry).value();
//   ... place input.jobs[j] (compile_job, place_job / place_gang), keep each JobPlacement ...
//   std::string out = gpusched::io::k8s::bindings_json(input, state, placements);
//
// What cannot be said in the job model is reported, never dropped silently: `Input::warnings` lists
// every field that would change a decision and is not modelled (preferred affinity, pod affinity,
// topology spread, preemption policies, ...), aggregated per (kind, field, message) with a count and
// the first object. Errors name the object ("Pod team-a/train-0"), the field path and the value, and
// reading is all or nothing. The mapping is documented in docs/kubernetes.md.
//
// Sources followed (each fixture in tests/fixtures/k8s/ cites its page): Kubernetes API reference
// (Node, Pod, PriorityClass; resource.Quantity; "Resource Management for Pods and Containers" and
// "Init Containers" for how requests add up; "Taints and Tolerations"; "Assigning Pods to Nodes"),
// NVIDIA k8s-device-plugin and GPU Feature Discovery README (MIG strategies and labels), Volcano
// (PodGroup, Job), Kueue (ClusterQueue, LocalQueue, ResourceFlavor, Topology), KAI Scheduler
// (docs/queues). No nlohmann or yaml-cpp type appears here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/jobs.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/mig/planner.hpp"
#include "gpusched/packing/placement.hpp"

namespace gpusched::io::k8s {

struct Options {
  // Node label keys that are topology levels, outermost first ("rack" and "block" keys are
  // site-specific: add yours, e.g. {"topology.kubernetes.io/zone", "example.com/block",
  // "example.com/rack"}). Kueue Topology objects in the input add their levels after these.
  std::vector<std::string> topology_levels = {"topology.kubernetes.io/zone"};
  // Appends the keys not listed yet, in their order (the tool's --topology-level, Python's
  // topology_levels: the defaults stay outermost).
  void add_topology_levels(std::span<const std::string> keys) {
    for (const std::string& key : keys)
      if (std::find(topology_levels.begin(), topology_levels.end(), key) == topology_levels.end())
        topology_levels.push_back(key);
  }
  // Read only pending pods (and Volcano Jobs) whose spec.schedulerName is this; empty = every pod.
  // Bound pods of any scheduler always count as running work.
  std::string scheduler_name;
  // Size nodes by status.capacity instead of status.allocatable (what kube-scheduler uses).
  bool use_capacity = false;
  // GPU models the product labels are looked up in (nullptr = GpuModelRegistry::builtin()).
  const GpuModelRegistry* registry = nullptr;
  // Take bound pods' requests off their nodes (true), or leave the nodes whole for a caller that
  // reserves the running pods itself (the scheduling cycle, which may evict them).
  bool subtract_running = true;
};

// One input document: its text (JSON or YAML) and a name for messages (a file name).
struct Source {
  std::string_view text;
  std::string_view name;
};

// A field that changes decisions and is not modelled (or is approximated). Aggregated: `count`
// objects had it; `object` is the first ("Pod ns/name").
struct Warning {
  std::string object;
  std::string field;
  std::string message;
  std::size_t count = 1;
};
std::string to_string(const Warning& w);

struct PodRef {
  std::string ns;
  std::string name;
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

// Where a pending job came from and which pod each of its tasks is: pods[g][r] is group g's
// replica r (a Volcano Job's tasks that have no Pod yet are named <job>-<task>-<index>, the
// names Volcano gives them).
struct JobSource {
  std::string kind;  // "Pod", "PodGroup" (Volcano or KAI), "Job" (Volcano), "pod-group" (Kueue)
  PodRef object;     // the pod, the PodGroup or the Job
  std::vector<std::vector<PodRef>> pods;
};

// A pod bound to a node (spec.nodeName): its request is taken from the node, and counts in its
// queue's usage.
struct RunningPod {
  PodRef pod;
  std::string node;
  Job job;                // one group, one replica: the pod's request and queue
  std::string gpu_model;  // the node's GPU model when the pod uses GPUs, else ""
  // The node's GPUs (local indices) the reader gave it — the Pod object names no device: its whole
  // GPUs (the lowest idle ones), its shared GPU (KAI's runai-gpu-group: one GPU per group), or its
  // MIG GPU with the instance's start slice in `mig_start` (the first idle instance of its profile).
  // Every reader of bound pods uses this one choice: the nodes' usage taken off
  // (Options::subtract_running) and the scheduling cycle's reservations (read_cycle_inputs_k8s).
  // Empty when the node had no room left for it (a warning says so).
  std::vector<std::uint16_t> gpus;
  std::int8_t mig_start = -1;
  std::int32_t priority = 0;
  std::int64_t start_time = 0;  // status.startTime, else metadata.creationTimestamp (seconds; 0 = unknown)
  std::string source;           // the file it was read from, for messages
};

// A fair-share queue from a Kueue ClusterQueue, a KAI Queue or a Volcano Queue. Amounts are keyed
// "cpu" (milli-CPU), "memory" (bytes) and "gpu/<model>" (milli-GPU, the registry's model name); a
// key that is not listed gets `unlisted` (Kueue: 0, a resource the queue does not cover; KAI:
// fairness::kNoLimit). fairness::kNoLimit = unconstrained.
struct QueueSpec {
  std::string name;
  std::string kind;     // "ClusterQueue", "Queue (KAI)", "Queue (Volcano)"
  std::string parent;   // hierarchical queues (KAI parentQueue)
  std::string cohort;
  double weight = 1.0;
  bool strict_fifo = false;
  std::vector<std::string> flavor_order;  // GPU models in the queue's flavor order
  std::vector<std::pair<std::string, std::int64_t>> nominal, borrowing_limit, lending_limit;
  std::int64_t unlisted = 0;
  // Kueue's spec.preemption (unset for KAI and Volcano queues: the cycle's options decide).
  std::optional<WithinQueue> within_queue;
  std::optional<CohortReclaim> reclaim_within_cohort;
  BorrowWithinCohort borrow_within_cohort;
};

struct Input {
  GpuModelRegistry registry;
  Cluster cluster;                           // running pods already subtracted
  std::vector<std::string> topology_levels;  // Options::topology_levels + Kueue Topology levels
  std::vector<Job> jobs;                     // pending work, in input order
  std::vector<JobSource> sources;            // sources[j] is where jobs[j] came from
  std::vector<RunningPod> running;
  std::vector<QueueSpec> queues;
  fairness::PriorityClasses priority_classes;  // PriorityClass objects: name -> value
  std::vector<PodRef> skipped;               // pending pods of another scheduler (Options::scheduler_name)
  std::vector<Warning> warnings;
};

// Reads every source (all or nothing). Errors name the source, the object, the field and the value.
Result<Input> read(std::span<const Source> sources, const Options& options = {});

// A bound pod as the one running job (cluster/jobs.hpp): one task of its request on its node, on the
// GPUs the reader gave it (RunningPod::gpus; none when the node had no room left, which the reader
// reported), not reserved on `state`; queue, priority and start time from the pod. Errors name the
// pod: a node `state` does not have, a request that does not compile.
Result<RunningJob> running_job_on(const ClusterState& state, const RunningPod& pod);

// The queues as the fairness family's configuration over `space` (fairness::fairness_cluster of
// `state`, built from input.cluster), with each leaf queue's usage from the running pods (as
// running_job_on gives them, counted by fairness::queue_usage_from_running). Errors name the queue
// and the field.
Result<std::vector<fairness::QueueConfig>> queue_configs(const Input& input, const ClusterState& state,
                                                         const fairness::ResourceSpace& space);

// Every pending job decided on `state` (built from input.cluster and input.registry): the state's
// topology levels are set to input.topology_levels, then jobs go in priority order (higher first,
// input order among equals), each committed when placed. Gangs (a PodGroup, a Volcano Job, a Kueue
// pod group) and jobs with a topology request or elastic groups go through the gang solver (all or
// nothing at the gang's minimum); single pods through place_job with `policy`. placements[j] and
// messages[j] (why it waits; "" when placed) are about input.jobs[j]. Errors: a job the state
// refuses to compile (names the job).
//
// MIG: Kubernetes binds a pod only to a MIG device the node advertises (the reader marks every MIG
// layout fixed, GpuInfo::mig_layout_fixed), so a pod whose profile has no idle instance waits.
// What a re-partition would serve is then a plan, never a binding: `repartition` is the MIG
// planner's answer (gpusched/mig/planner.hpp) for the MIG pods left pending, one demand item per
// profile (`repartition_demand`, in the plan's item order).
struct Decisions {
  std::vector<JobPlacement> placements;
  std::vector<std::string> messages;
  std::vector<bool> gang;  // decided by the gang solver
  std::vector<mig::MigDemandItem> repartition_demand;
  mig::MigPlan repartition;
};
// `mig_picker`: where a MIG pod goes on its node (JobPlacementOptions::mig_picker; nullptr: first fit).
Result<Decisions> decide(const Input& input, ClusterState& state, const PlacementPolicy& policy,
                         const GpuPicker* mig_picker = nullptr);

// Decisions back as bindings JSON (docs/kubernetes.md):
//   {"bindings": [{"pod": "ns/name", "namespace", "name", "node", "gpus": [..],
//                  "mig": {"gpu", "profile", "start"}?}],
//    "pending":  [{"pod", "job", "verdict", "message"}]}
// placements[j] is the decision for input.jobs[j] (a placed job binds each placed task's pod; the
// rest of its pods stay pending). `state` is the state the decisions were made on.
std::string bindings_json(const Input& input, const ClusterState& state, std::span<const JobPlacement> placements,
                          std::span<const std::string> messages = {});
// MIG tasks left waiting as planner demand: `waiting` tasks of `group` join the item of its profile
// (one item per profile, in first-seen order), for mig::plan_repartition.
void add_waiting_mig(std::vector<mig::MigDemandItem>& demand, const CompiledGroup& group, std::int64_t waiting);
// A re-partition plan as JSON text ({"served", "unserved", "gpus": [...]}, as below), "" when it
// changes no GPU: what `place --k8s` and `cycle --k8s` print beside their decisions.
std::string repartition_json(const ClusterState& state, const mig::MigPlan& plan);

// The same with the re-partition plan, when it changes a GPU:
//   "repartition": {"served": N, "unserved": M, "gpus": [{"node", "gpu", "destroy": [{"profile",
//                   "start"}], "create": [{"profile", "start"}], "after": [...]}]}
std::string bindings_json(const Input& input, const ClusterState& state, const Decisions& decisions);

}  // namespace gpusched::io::k8s
