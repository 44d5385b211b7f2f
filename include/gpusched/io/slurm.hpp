// gpusched/io/slurm.hpp — a Slurm cluster's state in, as the one model every family reads.
//
// What it is for. A Slurm site has its cluster as JSON already: `sinfo --json` (and, from Slurm 23.02,
// `scontrol show nodes --json`, the same "nodes" array) and `squeue --json`. `read` turns them into a
// `Cluster` (nodes with CPUs, memory, GPUs from the `gpu` GRES, active features and partitions as
// labels, down/drained nodes not schedulable), the pending jobs as `Job`s (one task per node, on
// distinct nodes; array jobs expanded into their tasks) and the running jobs with their nodes, GPU
// indices and end times (the backfill's expected ends). Semantics and every field read:
// docs/slurm.md.
//
//   std::vector<gpusched::io::slurm::Source> in = {{sinfo_text, "sinfo.json"}, {squeue_text, "squeue.json"}};
//   auto input = gpusched::io::slurm::read(in).value();
//   // input.cluster, input.jobs (pending), input.running; or io::read_cycle_inputs_slurm for a cycle
//
// Schema. The JSON of Slurm's OpenAPI plugins v0.0.37 (21.08) and v0.0.38 (22.05, Debian 12), and of
// the data_parser v0.0.39–v0.0.41 (23.02–24.05: numbers as {"set", "infinite", "number"}, states as
// lists). The version is read from `meta` and an unknown one is refused by name.
//
// What cannot be said in the job model is reported, never dropped: `Input::warnings` names the job
// or node and the field (a feature expression with `|`, a GRES other than gpu, an array throttle).
// Jobs Slurm itself would not start now whatever the resources (held, dependencies, a begin time,
// association or QOS limits) are listed in `skipped` with Slurm's reason. Errors name the source, the
// record ("jobs[3] (job 17)"), the field and the value; reading is all or nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/jobs.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/io/cluster_json.hpp"

namespace gpusched::io::slurm {

// Node labels the reader writes: every active feature F as (kFeatureLabel + F, "true"), every
// partition P the node is in as (kPartitionLabel + P, "true"); a pending job's constraint and
// partition are selectors on them.
inline constexpr std::string_view kFeatureLabel = "slurm.schedmd.com/feature.";
inline constexpr std::string_view kPartitionLabel = "slurm.schedmd.com/partition.";

// Held jobs (priority 0, reason JobHeldUser/JobHeldAdmin): Slurm does not start them, so neither
// does the reader (kSkip, listed in `skipped`), unless asked to plan them as if released (kPlan:
// "what would happen if I release them"), in their submission order.
enum class Held : std::uint8_t { kSkip, kPlan };

struct Options {
  const GpuModelRegistry* registry = nullptr;  // GPU models GRES types are looked up in (nullptr: builtin)
  Held held = Held::kSkip;
  // Take the running jobs' CPUs and GPUs off their nodes (true), or leave the nodes whole for a
  // caller that reserves the running jobs itself (the scheduling cycle, which may evict them).
  bool subtract_running = true;
};

// One input document: its text and a name for messages (a file name). A document with "nodes" is
// sinfo's (or scontrol's), one with "jobs" squeue's.
struct Source {
  std::string_view text;
  std::string_view name;
};

// What the scheduler needs of a pending job besides its Job, and what Slurm said of it.
struct PendingInfo {
  std::string id;                // "17", or "5_2" for task 2 of array job 5 (Slurm's notation)
  std::uint64_t job_id = 0;      // Slurm's job_id (an expanded array's tasks share it)
  std::string name;              // Slurm's job name (not unique)
  std::string partition;
  std::int64_t time_limit = -1;  // seconds; -1 = unlimited
  std::int64_t slurm_start = 0;  // Slurm's expected start (squeue --start; the backfill's plan); 0 = none
  std::string reason;            // Slurm's state_reason
  std::uint64_t slurm_priority = 0;
};

// A running job (RUNNING, COMPLETING, CONFIGURING, SUSPENDED ...): one task per node it holds.
struct RunningInfo {
  std::string id;
  std::string name;
  std::string account;
  std::string partition;
  std::uint64_t slurm_priority = 0;
  std::int32_t priority = 0;     // as the job model ranks it (see Input::priority_ranked)
  std::int64_t start_time = 0;
  std::int64_t end_time = -1;    // start + time limit; -1 = unlimited
  struct Task {
    std::string node;
    MilliCpu cpu = 0;
    Bytes memory = 0;
    std::vector<std::int32_t> gpus;  // GPU indices on the node (gres_detail IDX)
    std::string gpu_model;           // their model ("" when none)
  };
  std::vector<Task> tasks;
};

struct Skipped {
  std::string id;
  std::string reason;  // Slurm's state_reason, or why the reader does not plan it
};

struct Input {
  std::string version;  // "v0.0.38"
  GpuModelRegistry registry;  // the builtin (or Options::registry) plus any GRES type it lacks
  Cluster cluster;            // running jobs taken off when Options::subtract_running
  std::vector<Job> jobs;      // pending, in Slurm's order: priority, then job id (array tasks in order)
  std::vector<PendingInfo> pending;  // pending[j] is about jobs[j]
  std::vector<RunningInfo> running;
  std::vector<Skipped> skipped;
  std::vector<std::string> warnings;
  // Slurm priorities are 32-bit unsigned (priority/basic gives 4,294,901,7xx); the job model's are
  // int32. When one exceeds 2^31-1 every priority is replaced by its rank among the distinct
  // priorities of the input (order kept exactly), and this is true.
  bool priority_ranked = false;
};

// Reads every source (all or nothing). At least one document with nodes is needed.
Result<Input> read(std::span<const Source> sources, const Options& options = {});

// The pending jobs as a jobs document (their priorities explicit, their time limits as the cycle's
// run-time estimates, runtime_estimate below): what the C API and Python place and cycle. Moves
// input.jobs out.
JobsDocument jobs_document(Input& input);
// A pending job's run-time estimate for the backfill: its time limit; 0 (unknown) when unlimited.
inline std::int64_t runtime_estimate(const PendingInfo& job) { return job.time_limit > 0 ? job.time_limit : 0; }

// A running job as the job model: one group per node it holds (named "node0", "node1", ...), one
// task each of what it holds there (the CPUs, memory and number of its GPUs); queue = its account.
Job running_job(const RunningInfo& run);
// The name running_job gives the group of a running job's k-th node.
inline std::string running_group_name(std::size_t k) { return "node" + std::to_string(k); }
// The same as the one running job (cluster/jobs.hpp) on `state`: each task on its node and the GPUs
// Slurm gave it (gres_detail's indices), not reserved; queue = its account, with its priority, start
// and the time limit as its run-time estimate. Errors name the job ("running job 12"): a task that
// does not compile, a node `state` does not have.
Result<RunningJob> running_job_on(const ClusterState& state, const RunningInfo& run);

// A Slurm timestamp as scontrol takes it ("2026-12-04T14:30:00", UTC).
std::string slurm_time(std::int64_t epoch_seconds);

}  // namespace gpusched::io::slurm
