// gpusched/sim/packing_experiment.hpp — the FGD paper's trace experiment, as a library call.
//
// Weng et al. (USENIX ATC'23, §6) replay the Alibaba GPU trace against a cluster of 1,213 nodes /
// 6,212 GPUs and plot the unallocated GPU share against the arrived workload. The protocol, which we
// follow (details decide the result):
//
//   1. the pods are shuffled with a seed, then pods drawn with replacement (same seed) are appended
//      until the GPUs requested reach `target_ratio` (130 %) of the cluster's GPU capacity;
//   2. one pass in that order: each pod is placed by the policy or, when no node fits, dropped;
//      nothing departs;
//   3. after each pod: the allocated GPU share and the arrived GPU request (both in milli-GPU);
//   4. the metric: unallocated GPU % = 100 · (capacity − allocated) / capacity, sampled when the
//      arrived request first reaches x % of capacity, for x on a grid (50 … 130); the headline is
//      x = 100, mean and standard deviation over seeds 42–51.
//
// The arrival order depends only on the seed, so every policy sees the same pods in the same order
// for a seed, and policies compare *paired* by seed (`PolicySummary::paired_vs_reference`).
//
// Beyond the paper: `lower_bound_pct_at_100` is a bound no policy can beat on the same arrived pods
// (see lp_bound.hpp): the LP relaxation of packing the arrived GPU requests into 1000-milli GPUs.
//
//   auto w = gpusched::sim::make_trace_workload(nodes, pods).value();
//   gpusched::sim::ExperimentConfig cfg;   // 130 %, seeds 42..51, all policies
//   auto report = gpusched::sim::run_experiment(w, cfg).value();
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/packing/fgd.hpp"
#include "gpusched/packing/registry.hpp"
#include "gpusched/sim/lp_bound.hpp"

namespace gpusched::sim {

// A trace compiled against its cluster.
struct TraceWorkload {
  ClusterState initial;
  std::vector<TaskRequest> pods;  // in file order
  TargetWorkload target;          // FGD's M, from all pods of the list
  MilliGpu capacity = 0;          // cluster GPU capacity (milli)
  std::string name;               // e.g. "default"
};

// Fails naming the pod when a pod's gpu_spec names a model the registry does not know.
Result<TraceWorkload> make_trace_workload(const std::vector<io::TraceNode>& nodes,
                                          const std::vector<io::TracePod>& pods, std::string name = "");

// The arrival order for a seed: indices into `w.pods` (step 1 of the protocol).
std::vector<std::uint32_t> arrival_order(const TraceWorkload& w, std::uint64_t seed, double target_ratio);

// The GPU requests of the pods of `order` up to and including the one whose arrival makes the
// requested total reach the cluster's capacity (100 % arrived): pieces by size (a k-GPU pod counts k
// pieces of 1000), ascending — the demand the LP bound packs (lp_bound.hpp).
std::vector<ItemDemand> arrived_gpu_demand(const TraceWorkload& w, const std::vector<std::uint32_t>& order);

struct ExperimentConfig {
  std::vector<std::string> policies;  // empty = trace_policy_names()
  // Where the names are resolved (the paper's trace policies preferred, packing/registry.hpp);
  // nullptr = the built-ins. A user policy whose entry is not thread_safe makes the run use one thread.
  const PolicyRegistry* registry = nullptr;
  std::vector<std::uint64_t> seeds = {42, 43, 44, 45, 46, 47, 48, 49, 50, 51};
  double target_ratio = 1.3;
  std::vector<double> curve_points;   // empty = 50, 51, ..., 130
  bool lower_bound = true;
  unsigned threads = 0;               // 0 = hardware concurrency
  std::string reference_policy = "FGD";  // paired comparisons are against this one
  // Called after each finished run (from worker threads, serialised): done, total, policy, seed.
  std::function<void(std::size_t, std::size_t, const std::string&, std::uint64_t)> progress;
};

struct RunResult {
  std::string policy;
  std::uint64_t seed = 0;
  std::vector<double> curve;          // unallocated GPU % at config.curve_points
  double unallocated_pct_at_100 = 0;
  std::size_t pods_arrived = 0, pods_placed = 0, pods_failed = 0;  // whole run
  std::string failure;                // the policy's failure (user code), "" when none
};

// One policy over one arrival order. `points` ascending, in % of capacity. A policy that fails
// (user code: PlacementPolicy::failure) ends the run; its message is in `failure`.
RunResult run_once(const TraceWorkload& w, const std::vector<std::uint32_t>& order, PlacementPolicy& policy,
                   const std::vector<double>& points, std::uint64_t seed = 0);

struct PolicySummary {
  std::string policy;
  double mean_at_100 = 0, stddev_at_100 = 0;  // sample standard deviation over seeds
  std::vector<double> per_seed_at_100;
  std::vector<double> mean_curve;
  // Paired over seeds against the reference policy: mean of (this - reference) and its standard
  // error (sample sd / sqrt(seeds)); 0 for the reference itself or when it was not run.
  double paired_diff_mean = 0, paired_diff_stderr = 0;
  double mean_placed = 0, mean_failed = 0;
};

struct ExperimentReport {
  std::string trace;
  std::size_t nodes = 0, gpus = 0, pods = 0;
  std::vector<std::uint64_t> seeds;
  std::vector<double> curve_points;
  double target_ratio = 0;
  std::vector<PolicySummary> policies;
  std::vector<RunResult> runs;              // policy-major, then seed order
  std::vector<double> lower_bound_per_seed; // at 100 %; empty when not computed
  double lower_bound_mean = 0, lower_bound_stddev = 0;
  std::string reference_policy;
  double seconds = 0;

  // Whether the reference policy was among those run; without it there are no paired comparisons
  // (the table prints "-", JSON null).
  bool has_reference() const {
    return std::any_of(policies.begin(), policies.end(),
                       [&](const PolicySummary& p) { return p.policy == reference_policy; });
  }
};

// Fails on an unknown policy name or an empty seed list.
Result<ExperimentReport> run_experiment(const TraceWorkload& w, const ExperimentConfig& config);

// Writers (the CLI's outputs).
std::string report_table(const ExperimentReport& r);
std::string report_json(const ExperimentReport& r);
std::string report_csv(const ExperimentReport& r);  // policy,arrived_pct,mean,stddev
std::string report_svg(const ExperimentReport& r);

// Mean and sample standard deviation (0 for fewer than two values).
double mean_of(const std::vector<double>& v);
double stddev_of(const std::vector<double>& v);

}  // namespace gpusched::sim
