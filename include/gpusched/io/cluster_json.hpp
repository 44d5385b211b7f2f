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
