// gpusched/io/cluster_json.hpp — reading clusters and jobs from JSON (the `gpusched place` formats).
//
// The formats are documented in docs/formats.md with examples in examples/. A quantity is a JSON
// integer in the field's natural unit or a Kubernetes quantity string:
//
//   "cpu": 8 | "8" | "500m"          cores (integers are cores; strings as Kubernetes reads them)
//   "memory": 68719476736 | "64Gi"   bytes
//   "gpu_milli": 500 | "500m" | "0.5" share of one GPU (integers are milli-GPU)
//
// Every error names the field by its JSON path and the value: `nodes[3].gpus: expected a
// non-negative integer, got -2`. Unknown keys are errors too (a typo must not be silently ignored).
// Reading is all or nothing: a document with one bad field yields no cluster at all.
// Threads: the readers keep no state between calls and may run concurrently (a reader taking a
// ClusterState only reads it). Rules for every reader (limits, unknown fields, names, line endings,
// errors as values): docs/formats.md, "Every reader".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/result.hpp"

namespace gpusched::io {

struct ClusterDocument {
  GpuModelRegistry registry;  // the built-in models plus the document's "gpu_models"
  Cluster cluster;
};

// Parses a cluster document. `source` names the input in messages (a file name).
Result<ClusterDocument> read_cluster_json(std::string_view text, std::string_view source = "cluster");

// The cluster document of `view` (docs/formats.md, "Cluster"): a state saved after its events, to
// diff, to hand to `gpusched place` or another process, or to rebuild later. read_cluster_json
// gives back a cluster that builds to a state with the same nodes, amounts, health, labels, MIG
// instances and interconnects, and writing that state again gives the same text. `registry`
// resolves the view's model names; its models that GpuModelRegistry::builtin() does not know by
// name (or alias) go into "gpu_models", since the reader starts from the built-in ones (a built-in
// name redefined with other figures comes back with the built-in's). Each node is written in the
// shortest form that reads back exactly: "gpus": N when its GPUs are idle, healthy, not in MIG mode
// and of one model, else a list; CPU as whole cores or "1500m"; what is used as capacity - free.
// Labels are sorted by key (the order the reader gives them), so the text is canonical.
// What the format cannot say is not written:
//   * InterconnectOptions (NVLink/PCIe generation, UPI links): `nvidia-smi topo -m` text has no place
//     for them, so a written interconnect comes back with the defaults;
//   * the model's default interconnect (node_interconnect() nullptr): the reader assigns it again;
//   * an interconnect the text cannot carry as it is, e.g. device names nvidia-smi would not print
//     (a GPU not named GPU<n>, a NIC named like one, blanks at either end), a numa_node that is not
//     the one of numa_affinity, a GPU with a nic_name. The text is read back to check; such a node
//     is written without "nvidia_smi_topo" (its model's default on reading) rather than with a
//     matrix the reader would refuse or change.
// Text that is not UTF-8 is written with U+FFFD in its place. `indent` as in nlohmann::json::dump:
// -1 one line, N >= 0 pretty with N spaces (at most 16; more is 16). Never throws: an empty string only when memory runs out.
std::string write_cluster_json(const ClusterView& view, const GpuModelRegistry& registry, int indent = -1);
// The state's live nodes in id order (ClusterStateView: removed nodes are left out), its registry.
std::string write_cluster_json(const ClusterState& state, int indent = -1);

// The scheduling cycle's facts of a pending job (docs/cycle.md), as the job gives them (else these
// defaults). `running_fields`: it gives start_time or placement, which only a running job has.
struct JobCycleFields {
  std::int64_t runtime_estimate = 0;
  std::int64_t not_before = 0;
  std::int64_t checkpoint_interval = 0;
  std::int64_t restart_cost = 0;
  std::int32_t restarts = 0;
  bool preemptible = true;
  bool running_fields = false;
  // The jobs that evicted this job before (an earlier answer's evictions[].for): the cycle never
  // evicts them back for it (docs/cycle.md), across calls as within a session.
  std::vector<std::string> evicted_by;
};

struct JobsDocument {
  std::vector<Job> jobs;
  // Whether jobs[i] gave "priority" itself (the fairness tool then does not apply its queue's
  // default priority class). Gang constraints, "priority_class" and "submit_time" are in the Job.
  std::vector<bool> explicit_priority;
  // cycle[i]: jobs[i]'s cycle fields. May be shorter than jobs (jobs built in code): the defaults.
  std::vector<JobCycleFields> cycle;
};

// Parses a jobs document: {"jobs": [...]} or a bare array of jobs. Job names must be unique.
Result<JobsDocument> read_jobs_json(std::string_view text, std::string_view source = "jobs");

// The "mig" object of GPU `gpu` of `node` as the cluster format writes it (docs/formats.md, MIG),
// as JSON text: {"instances": [{"profile", "profile_id", "start", "busy"}]}; "null" when the GPU
// is not in MIG mode. Reading it back gives the same instances (tests/mig/unified_state_test.cpp).
std::string write_mig_json(const ClusterState& state, NodeId node, GpuIndex gpu);

}  // namespace gpusched::io
