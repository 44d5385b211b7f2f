// gpusched/sim/sweep.hpp — a simulation sweep (traces x policies x seeds) from trace specs, as
// `gpusched simulate` runs it; for every front end (the tool and the Python module).
//
// A trace spec is "itp:01" .. "itp:10" (the Microsoft ITP trace, ElasticFlow's release), "alibaba:NAME"
// (an Alibaba v2023 pod list), "synthetic:N", the name of one of `SweepOptions::documents` (a jobs
// document given as text, the generic JSON format), or a path to a generic job file (.json, else CSV).
// What traces lack (queues, priorities, checkpoints, restart costs, estimates) is added per job from
// the seed (sim::augment). docs/simulate.md has every format and default.
//
// `run_sweep` runs the runs of the sweep (or of one shard of it) and returns their records
// (sim_report.hpp: run_record); `sweep_report(sweep_description(o), records)` is the report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpusched/core/result.hpp"
#include "gpusched/sim/simulator.hpp"

namespace gpusched::sim {

struct SweepOptions {
  std::vector<std::string> traces = {"itp:10"};
  std::vector<std::string> policies = {"fifo", "easy", "conservative", "drf", "las", "srtf"};
  std::vector<std::uint64_t> seeds = {42};
  std::size_t nodes = 0;  // 0 = the trace's own cluster (ITP: the paper's; Alibaba: its nodes; else 64 or 16)
  std::int32_t gpus_per_node = 8;
  std::string model = "V100M32";  // GPU model of a generated cluster
  Seconds checkpoint_interval = 1800;
  Seconds restart_cost = 60;
  std::int32_t queues = 4;
  std::int32_t priorities = 1;
  double estimate_error = 1.0;
  double elastic = 0;
  double mtbf_hours = 0, mttr_hours = 2;
  std::vector<NodeFailure> failures;  // explicit failures
  std::string failures_name;          // their file's name, for the report ("" = none)
  Seconds cycle_period = 0;        // SimConfig::cycle_period (0: wake-ups only)
  Seconds min_cycle_interval = 0;  // SimConfig::min_cycle_interval
  bool rebuild_cycles = false;     // SimConfig::rebuild_cycles (not in the report: it changes no figure)
  double arrival_rate = 0;         // synthetic traces: jobs per hour (0: SyntheticSpec's default)
  std::string placement;           // SimConfig::placement ("" = best-fit)
  const PolicyRegistry* registry = nullptr;  // SimConfig::registry
  std::string order, victim_order;           // SimConfig::order, victim_order ("" = the policy's)
  const scheduler::OrderRegistry* orders = nullptr;  // SimConfig::orders
  // DRF queues (the "drf" policies): weights, and GPU quotas (nominal on every GPU model, no
  // borrowing), by queue name (the added queues are q0, q1, ...); a queue not named: weight 1, no cap.
  std::vector<std::pair<std::string, double>> queue_weights;
  std::vector<std::pair<std::string, std::int64_t>> queue_quota_gpus;
  std::size_t shard = 0, shards = 1;  // run only the runs whose index % shards == shard
  std::string data_dir;               // where itp-elasticflow/ and alibaba-gpu-v2023/ are
  std::map<std::string, std::string> documents;  // trace name -> jobs document text (generic JSON)
  // Called while a run goes on: the run's index, the total, its trace label, policy and seed, and the
  // fraction of its jobs done. May be empty; called from the calling thread.
  std::function<void(std::size_t, std::size_t, const std::string&, const std::string&, std::uint64_t, double)> progress;
};

struct LoadedTrace {
  std::string label;  // "itp04", "alibaba-default", "synthetic100", a file's stem, a document's name
  SimCluster cluster;
  std::vector<SimJob> jobs;
  OptionsApplied applied;  // what the options added to `jobs`
};

// "q0=2,q1=1": queue=value pairs, each value a positive number (`integer`: a positive integer); errors
// name `field`, the pair and the value. Empty text: none.
Result<std::vector<std::pair<std::string, double>>> parse_queue_values(std::string_view text, std::string_view field,
                                                                       bool integer = false);

// One trace, augmented with the seed's draws. Errors name the spec or the file, line and column.
Result<LoadedTrace> load_trace(const std::string& spec, const SweepOptions& options, std::uint64_t seed);

// The sweep's description as the report carries it (traces, policies, seeds, runs, parameters).
nlohmann::ordered_json sweep_description(const SweepOptions& options);

struct SweepRuns {
  std::vector<nlohmann::ordered_json> records;  // run_record of each run of the shard (trace, seed, policy order)
  std::vector<std::string> conservation_failures;  // "itp04 fifo seed 42" for a run whose check failed
};

// Runs the shard's runs. Errors name the trace and policy ("itp:04 (fifo): ...") or the option.
Result<SweepRuns> run_sweep(const SweepOptions& options);

// "42", "42-45", "1,3,5-7" -> seeds; an error names the text.
Result<std::vector<std::uint64_t>> parse_seed_list(const std::string& text);

}  // namespace gpusched::sim
