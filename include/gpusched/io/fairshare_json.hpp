// gpusched/io/fairshare_json.hpp — the fair-share admission order from the JSON documents.
//
// The queues document (docs/fairness.md: queues with weights, parents, Kueue-style quotas, cohorts,
// borrowing and lending limits, flavors, priority classes, aging) is read here, once, for every
// front end: the `gpusched fairshare` command, the C API and the Python module. `fairshare_plan`
// runs the planner (fairness/admission.hpp) over a cluster state and a jobs document and returns
// everything the front ends print; `write_fairshare_json` is the `--format json` document. Like the
// other readers' public headers, this one takes and gives text: no nlohmann type in the API.
//
// Errors name the file, the field by its JSON path and the value, like every reader here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/io/cluster_json.hpp"

namespace gpusched::io {

struct QueuesDocument {
  std::vector<fairness::QueueConfig> queues;
  std::map<std::string, std::string> default_class;  // queue -> priority class of jobs without one
  std::map<std::string, std::int64_t> classes;       // priority class -> priority
  fairness::AgingPolicy aging;
  bool now_given = false;
};

// Reads a queues document against the cluster's resource space (GPU flavors are the cluster's models).
Result<QueuesDocument> read_queues_json(std::string_view text, std::string_view source,
                                        const fairness::ResourceSpace& space, const GpuModelRegistry& registry);

// Aging's "now" when neither the caller nor the queues document gives one: the latest submit_time of
// the jobs (0 for none), the same rule for the JSON files, Kubernetes objects and Slurm's state.
std::int64_t latest_submit_time(std::span<const Job> jobs);

// The jobs of `jobs` as the planner reads them: the priority from "priority", else "priority_class"
// (resolved against the queues document's priority_classes), else the job's queue's class, else 0;
// "submit_time" for aging. Sets `queues.aging.now` to `now`, else the document's "now", else the
// latest submit_time. The views refer to `jobs`, which must outlive them. Errors name the file and
// the job's field (a class not defined, a job with both a priority and a class).
Result<std::vector<fairness::WithAdmissionFields>> admission_jobs(const JobsDocument& jobs, QueuesDocument& queues,
                                                                  std::optional<std::int64_t> now,
                                                                  std::string_view queues_source,
                                                                  std::string_view jobs_source);

struct FairshareRun {
  fairness::ResourceSpace space;
  fairness::Amounts capacity;
  fairness::Amounts free;
  QueuesDocument queues;
  std::vector<CompiledJob> pending;  // pending[k] is jobs document's job k, compiled
  fairness::AdmissionPlan plan;
  std::vector<std::string> pending_reasons;   // plan.pending[k]'s reason text
};

// The admission order of the jobs of `jobs` (priority from "priority", else "priority_class", else the
// queue's class; "submit_time" for aging) on `state`, with the queues document `queues` (JSON text). `now`: the time aging measures waits to; default
// the queues document's "now", else the latest submit_time. Sources name the inputs in messages.
Result<FairshareRun> fairshare_plan(const ClusterState& state, const JobsDocument& jobs, std::string_view queues,
                                    std::optional<std::int64_t> now = std::nullopt,
                                    std::string_view queues_source = "queues", std::string_view jobs_source = "jobs",
                                    std::string_view cluster_source = "cluster");

// The admission order of job views (the Kubernetes and Slurm readers' jobs, or admission_jobs') on
// `state`, whose fair-share amounts are `cluster` (fairness::fairness_cluster), under `queues` (its
// configs, priority classes and aging): the planner built, the jobs compiled and planned
// (fairness::plan_jobs), the reasons formatted. Every front end's plan is this one call; errors are
// prefixed with `queues_source` (a bad queue tree) or `jobs_source` (a bad job).
Result<FairshareRun> plan_fairshare(const ClusterState& state, fairness::FairnessCluster cluster, QueuesDocument queues,
                                    std::span<const JobView* const> jobs, std::string_view queues_source,
                                    std::string_view jobs_source);

// The `gpusched fairshare --format json` document: admitted (in order), pending (with reasons),
// queues (usage, shares), capacity, free_before; `indent` as nlohmann's dump (-1: one line; at most 16).
std::string write_fairshare_json(const FairshareRun& run, int indent = -1);

}  // namespace gpusched::io
