// gpusched/sim/traces.hpp — job traces for the simulator: the Microsoft ITP trace, the Alibaba v2023
// pod lists with their creation and deletion times, a generic job CSV/JSON format, and a documented
// synthetic generator (docs/simulate.md has every format and default).
//
// Traces say when a job arrived, how long it ran and how many GPUs it took; what they lack (queues,
// priorities, checkpoint intervals, restart costs, runtime estimates) is added on top by `augment`,
// seeded per job so the same seed gives the same trace.
//
// Errors name the file, the line (1-based, the header is line 1) or the JSON path, the column and the
// value, e.g.
//   jobs.csv:7: column 3 (duration): expected a positive integer, got "-5"
//   jobs.json: jobs[2].tasks: expected a positive integer, got "0"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/sim/simulator.hpp"

namespace gpusched::sim {

// ---- Microsoft ITP (ElasticFlow raw traces): job_id,submission_time,duration,num_gpu ----
// A job of g GPUs is one task of g GPUs when g <= gpus_per_node, else g / gpus_per_node tasks of a
// whole node each (the trace's sizes are powers of two).
Result<std::vector<SimJob>> parse_itp_trace(std::string_view text, std::string_view file_name,
                                            std::int32_t gpus_per_node = 8);
Result<std::vector<SimJob>> read_itp_trace(const std::string& path, std::int32_t gpus_per_node = 8);
// The cluster the ElasticFlow paper simulates for ITP cluster `number` (1..10): 64, 128 or 32 nodes of
// 8 GPUs (data/itp-elasticflow/SOURCE.txt); 0 for an unknown number.
std::size_t itp_paper_nodes(int number);

// ---- Alibaba v2023 pods: creation_time -> submit, deletion_time - creation_time -> duration ----
// Pods without both times (or with deletion <= creation) are skipped; each pod is a one-task job.
std::vector<SimJob> alibaba_jobs(const std::vector<io::TracePod>& pods);

// ---- the generic format ----
// CSV with a header; columns by name, any order:
//   required: name, submit, duration, gpus (per task)
//   optional: tasks (1), gpu_milli (1000), min_tasks (-1 = rigid), cpu_milli (0), memory_mib (0),
//             queue (""), priority (0), estimate (0 = exact), checkpoint_interval (0), restart_cost (0),
//             preemptible (true|false, 1|0; default true), gpu_model ("")
// JSON: {"jobs": [{"name": ..., "submit": ..., ...}, ...]} with the same keys.
Result<std::vector<SimJob>> parse_jobs_csv(std::string_view text, std::string_view file_name);
Result<std::vector<SimJob>> parse_jobs_json(std::string_view text, std::string_view file_name);
// By extension (.json, else CSV).
Result<std::vector<SimJob>> read_jobs_file(const std::string& path);
// Writes jobs in the CSV format (every column), readable back by parse_jobs_csv.
std::string jobs_to_csv(const std::vector<SimJob>& jobs);

// ---- what traces lack, added per job from the seed ----
struct Augment {
  std::uint64_t seed = 42;
  std::int32_t queues = 1;            // queue "q0".."q{n-1}", uniform
  std::int32_t priorities = 1;        // priority 0..n-1, uniform
  Seconds checkpoint_interval = 0;    // every job (0 = none)
  Seconds restart_cost = 0;           // every job
  double estimate_error = 0;          // estimate = duration x U[1, 1 + error] (users overestimate)
  double elastic_fraction = 0;        // share of multi-task jobs made elastic (min_tasks = tasks / 2)
};
void augment(std::vector<SimJob>& jobs, const Augment& a);

// How many jobs took each option's value because their trace lacks the field (SimJob::given): what a
// report states beside the options, so that an option a trace overrides on every job is not taken
// for one the run used (keys as the report's parameters name the options).
struct OptionsApplied {
  std::size_t queues = 0, priorities = 0, estimate_error = 0, checkpoint_interval = 0, restart_cost = 0;
  std::size_t elastic_fraction = 0;  // multi-task jobs without min_tasks (the candidates the fraction draws from)
};
OptionsApplied options_applied(const std::vector<SimJob>& jobs);

// ---- synthetic workloads ----
// Poisson arrivals at `arrivals_per_hour`; GPUs per job drawn from `size_gpus` with weights `size_weights`
// (default: the ITP cluster 04 mix); durations log-normal with median `duration_median` seconds and
// log-standard-deviation `duration_sigma`, clipped to [60 s, 30 days]; then `augment`.
struct SyntheticSpec {
  std::size_t jobs = 1000;
  std::uint64_t seed = 42;
  double arrivals_per_hour = 60;
  std::vector<std::int32_t> size_gpus = {1, 2, 4, 8, 16, 32, 64};
  std::vector<double> size_weights = {0.755, 0.07, 0.06, 0.07, 0.025, 0.012, 0.008};
  double duration_median = 3600;
  double duration_sigma = 1.5;
  std::int32_t gpus_per_node = 8;
  Augment extra;
};
std::vector<SimJob> synthetic_jobs(const SyntheticSpec& spec);

}  // namespace gpusched::sim
