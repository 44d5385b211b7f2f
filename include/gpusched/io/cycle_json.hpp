// gpusched/io/cycle_json.hpp — one scheduling cycle from the JSON documents, and its decisions as JSON.
//
// The scheduling cycle (scheduler/cycle.hpp) takes running jobs with their tasks, pending jobs, queues
// and a time. Its inputs are read here, once, for every front end: the `gpusched cycle` and `gpusched
// explain` commands, the C API and the Python module (docs/cycle.md has the formats):
//
//   * the pending jobs: a jobs document (read_jobs_json) whose cycle fields (runtime_estimate,
//     not_before, restarts, preemptible, restart_cost, checkpoint_interval) are in
//     JobsDocument::cycle; priority from "priority", else "priority_class", else the queue's class;
//   * the running jobs: the jobs format plus start_time, placement and the checkpoint facts; their
//     tasks are reserved on the state (which therefore describes the cluster without them);
//   * the queues: the document of `gpusched fairshare` (read_queues_json; usage is computed from the
//     running jobs, so a queue's "usage" is ignored);
//   * or Kubernetes objects or Slurm's JSON instead of all of these (read_cycle_inputs_k8s,
//     read_cycle_inputs_slurm; docs/kubernetes.md, docs/slurm.md).
//
// `cycle_run` reads them and runs the cycle; `write_cycle_json` is the `--format json` document and
// `write_cycle_table` the table `gpusched cycle` prints. The options have a JSON form too
// (read_cycle_options_json) so that bindings take them as one document. Like the other readers'
// public headers, this one takes and gives text: no nlohmann type in the API.
//
// Errors are values (never exceptions) naming the source, the field by its JSON path and the value:
//   running.json: jobs[0].placement[1].node: no node named "nope"
//   running.json: jobs[2].start_time: missing (a running job's start, seconds)
// A failed read leaves the state as it was (its reservations are rolled back).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/io/k8s.hpp"
#include "gpusched/io/slurm.hpp"
#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/session.hpp"

namespace gpusched::io {

// Names of the inputs in error messages (file names, or "running" ... for text).
struct CycleSources {
  std::string_view cluster = "cluster";
  std::string_view pending = "jobs";
  std::string_view running = "running";
  std::string_view queues = "queues";
};

// Everything one cycle needs besides the state and the time.
struct CycleInputs {
  QueuesDocument queues;
  std::vector<scheduler::RunningJob> running;
  // The group name of each running job's tasks (running_groups[j][k] for running[j].tasks[k]): the
  // running format names groups, the cycle's RunningTask does not.
  std::vector<std::vector<std::string>> running_groups;
  std::vector<scheduler::PendingJob> pending;  // pending[k] is the jobs document's job k
};

// Reads the running jobs document `text` against `state` and appends them to `into` (its queues
// resolve priority classes), reserving their tasks on the state. On error nothing is appended and the
// state is rolled back to where it was; on success the reservations are journaled, not committed.
Status read_running_jobs_json(ClusterState& state, std::string_view text, std::string_view source, CycleInputs& into);

// The pending jobs of `jobs` compiled against `state`, with priorities resolved by `queues`.
Result<std::vector<scheduler::PendingJob>> pending_jobs(const ClusterState& state, const JobsDocument& jobs,
                                                        const QueuesDocument& queues, std::string_view source = "jobs");

// All inputs: queues (`queues_text` empty: none, every job in one queue), running jobs (empty: none)
// reserved on `state` (journaled; rolled back on error), pending jobs from `jobs`. GPU models named in
// the queues are resolved through the state's registry.
Result<CycleInputs> read_cycle_inputs(ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                                      std::string_view running_text, const CycleSources& sources = {});

// The queues document (read_queues_json) against the state's resource space.
Result<QueuesDocument> read_cycle_queues(const ClusterState& state, std::string_view text, std::string_view source = "queues");

// Another system's objects as the cycle's inputs (the `--k8s` and `--slurm` of `gpusched cycle`).
//
// Kubernetes (docs/kubernetes.md): Nodes whole, bound Pods as running jobs (one task each, on the
// lowest free GPUs of their node: the Pod does not say which), pending Pods and gangs as pending
// jobs, Kueue/KAI/Volcano queues and PriorityClasses.
//
// Slurm (docs/slurm.md): sinfo's nodes whole, squeue's running jobs reserved on the GPUs Slurm gave
// them with their end times as expected ends, pending jobs (held ones per slurm::Options::held) in
// Slurm's priority order with their time limits as run-time estimates; `slurm` keeps what the reader
// said of each job (ids, Slurm's own planned start, skipped jobs). No queues: Slurm orders one queue
// by priority (a site's fair share is in the priority already).
struct AdapterCycle {
  ClusterDocument cluster;
  std::optional<ClusterState> state;  // with the running jobs reserved (committed)
  CycleInputs inputs;
  std::vector<std::string> warnings;  // what the reader could not express
  slurm::Input slurm;                 // read_cycle_inputs_slurm only

  // The cluster document of a reader's nodes (whole) and the state built from it; errors name "nodes".
  Status build_state(GpuModelRegistry registry, Cluster nodes);
};
Result<AdapterCycle> read_cycle_inputs_k8s(std::span<const k8s::Source> sources);
Result<AdapterCycle> read_cycle_inputs_slurm(std::span<const slurm::Source> sources, const slurm::Options& options = {});

// The options as one JSON object (every key optional; docs/cycle.md, the CLI's flags):
//   {"preempt": true, "within_queue": "lower" | "never" | "lower-or-newer",
//    "reclaim_within_cohort": "any" | "lower" | "never", "fair_share_reclaim": true, "grow": true,
//    "min_runtime": 0, "backfill": "easy" | "conservative" | "none", "backfill_window": 86400,
//    "backfill_resolution": 60, "backfill_depth": 500, "dry_run": false}
// Empty text: the defaults.
Result<scheduler::CycleOptions> read_cycle_options_json(std::string_view text, std::string_view source = "options");
// The same, for front ends that resolve policies by name (the C API, Python): more keys, "policy" (a
// name in their PolicyRegistry; "" = best-fit), "seed" (42), "order" and "victim_order" (names in
// their scheduler::OrderRegistry; "" = the defaults), "mig_placement" ("first-fit", the default, or
// "frag-aware": docs/mig.md; the document owns the picker options.placement.mig_picker points to, so
// keep it, or a copy of `mig_picker`, while the options are used).
struct CycleOptionsDocument {
  scheduler::CycleOptions options;
  std::shared_ptr<const GpuPicker> mig_picker;
  std::string policy;
  std::uint64_t seed = 42;
  std::string order, victim_order;
};
Result<CycleOptionsDocument> read_cycle_options_document(std::string_view text, std::string_view source = "options");
// The MIG choice named "first-fit" (nullptr: ClusterState's first fit) or "frag-aware"
// (mig::FragAwareMigPicker, uniform demand); any other name is refused by the callers' checks.
std::shared_ptr<const GpuPicker> mig_picker_named(std::string_view name);

struct CycleRun {
  CycleInputs inputs;
  scheduler::CycleDecisions decisions;
};

// Reads the inputs (read_cycle_inputs) and runs one cycle at `now`. Without options.dry_run the state
// keeps the running jobs' tasks and the decisions (evictions released, starts and grows reserved);
// with it the state is left exactly as it was (the running jobs' reservations are rolled back too).
Result<CycleRun> cycle_run(ClusterState& state, const JobsDocument& jobs, std::string_view queues_text,
                           std::string_view running_text, std::int64_t now, const scheduler::CycleOptions& options = {},
                           const CycleSources& sources = {});

// The scheduler session (scheduler/session.hpp) every front end sits on — `gpusched cycle`, the C
// API's gpusched_session and gpusched_cycle, Python's Session and Cluster.cycle — with the documents
// as its inputs: pending jobs as read by pending_jobs(), running jobs from their document (their
// tasks reserved on the state), and what the JSON and table writers need of them. A caller that
// keeps one across calls pays for what changed; gpusched_cycle and cycle_run open a fresh one.
class CycleSession {
 public:
  // Errors (the queues the fairness family refuses) are prefixed with `context` (their source).
  static Result<CycleSession> open(ClusterState& state, QueuesDocument queues, const scheduler::CycleOptions& options,
                                   std::string_view context = {});
  // Pending jobs join their queues; refused whole (kDuplicate, naming `source` and the job) when a
  // name is pending or running already, or twice among them.
  Status submit(std::vector<scheduler::PendingJob> jobs, std::string_view source = "jobs");
  // Running jobs whose tasks are reserved on the state already (read_running_jobs_json), or their
  // document, read and reserved here; refused whole like submit.
  Status add_running(CycleInputs running, std::string_view source = "running");
  Status add_running_json(std::string_view text, std::string_view source = "running");
  Status finish(std::string_view job);  // a running job ended: its tasks released
  Status cancel(std::string_view job);  // a pending job withdrawn, or a running one stopped
  // One cycle at `now` (a plan with dry_run: nothing changes), as the writers take it.
  Result<CycleRun> cycle(std::int64_t now, bool dry_run, scheduler::CycleDetail detail = scheduler::CycleDetail::kFull,
                         std::string_view context = {});
  const QueuesDocument& queues() const { return queues_; }
  scheduler::Session& session() { return *session_; }
  const scheduler::Session& session() const { return *session_; }

 private:
  ClusterState* state_ = nullptr;
  QueuesDocument queues_;
  std::optional<scheduler::Session> session_;
  std::map<std::string, std::string, std::less<>> grow_group_;  // running job -> the group its grows join
};

// Runs one cycle on inputs already read (their running tasks reserved on `state`): a fresh session
// (CycleSession), one cycle, with every waiting job's reasons. `context` prefixes an error of the
// cycle (the queues' or running jobs' source).
Result<scheduler::CycleDecisions> run_cycle_on(ClusterState& state, const CycleInputs& inputs, std::int64_t now,
                                               const scheduler::CycleOptions& options, std::string_view context = {},
                                               std::string_view pending_source = "jobs",
                                               std::string_view running_source = "running");

// "not now: behind big (the head of its StrictFIFO queue)", "not now: backing off after a failure
// until t=3900", else the outcome's words.
std::string waiting_text(const CycleInputs& inputs, const scheduler::Waiting& waiting);

// The `gpusched cycle --format json` document (docs/cycle.md, "Output"): now, starts, evictions,
// shrinks, grows, reservations, nominations, pending; `indent` as nlohmann's dump (-1: one line; at most 16).
// Node names are read from `state` (the state the cycle ran on).
std::string write_cycle_json(const ClusterState& state, const CycleRun& run, int indent = -1);
// The table `gpusched cycle` prints.
std::string write_cycle_table(const ClusterState& state, const CycleRun& run);

}  // namespace gpusched::io
