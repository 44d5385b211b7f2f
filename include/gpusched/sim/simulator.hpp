// gpusched/sim/simulator.hpp — a time-based, event-driven cluster simulator over the one ClusterState.
//
// What it is for. Researchers compare schedulers on job completion time, queueing delay, utilisation
// and fairness over weeks of a real trace (Tiresias, Gandiva, Themis, Pollux, ElasticFlow all do), and
// operators ask what-if questions ("backfill on or off?", "checkpoint every 30 or 60 minutes?", "what
// do node failures cost us?"). This simulator replays a job trace through time against the library's
// own policies: the same ClusterState, gang placement and preemption search an orchestrator links.
//
// The model (docs/simulate.md has it with numbers):
//   * A job is `tasks` identical tasks (one gang; elastic when `min_tasks` < `tasks`). Its demand is
//     `duration` seconds at full size, i.e. duration x tasks x the task's GPU share in milli-GPU-seconds
//     (CPU-only jobs: task-seconds). Work scales linearly with the GPUs held (Pollux/ElasticFlow's
//     linear-scaling assumption for elastic jobs; rigid jobs always run at full size).
//   * A run is a sequence of *segments* at a constant size. A segment begins with `restart_cost`
//     seconds of no progress (load, warm up), then progresses at its held share. Checkpoints are taken
//     every `checkpoint_interval` seconds of progress within a segment; a resize (elastic grow or
//     shrink) checkpoints, ends the segment and starts a new one at the new size.
//   * An eviction (preemption, or a node failure that breaks the gang) loses the work since the last
//     checkpoint; the job goes back to the queue with what was saved. After a failure it is requeued
//     with exponential backoff (failure_backoff x 2^(failures-1)).
//   * Node failures come from a given list or from seeded exponential MTBF/MTTR per node; a failed
//     node's gangs are restarted (elastic gangs above their minimum shrink instead).
//
// Events (arrival, completion, failure, repair, wake-up, sample) are processed in time order, ties
// by kind then sequence. The scheduler is the library's session (scheduler/session.hpp), kept for
// the whole run and told what happens; after each instant at which a decision can change (a
// wake-up: an arrival, an end, a failure or repair, a backoff ending, a LAS threshold or promotion,
// a job reaching the minimum runtime, an estimate overrun; docs/simulate.md) one cycle runs, and
// another at the same instant after one that evicted (or, preempting, started) a job. With
// `min_cycle_interval`, at most one cycle per interval. The state is updated incrementally (reserve
// and release of the one ClusterState, fail_node/recover_node); it is never rebuilt. Everything is
// integer seconds and milli-GPU-seconds, so a seed gives the same decisions and the same figures on
// every platform.
//
// Conservation (checked on every run, reported in SimResult::conservation):
//   GPU-seconds delivered (integrated from the state's allocated share, independently of the jobs)
//     == demand of the completed jobs + demand done by jobs still running at the end
//      + work lost to preemption + to failures + restart overhead + completion rounding,
// and at every event the state's allocated share equals the sum of the running jobs' shares and
// never exceeds the capacity (the state itself refuses an over-allocation).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/registry.hpp"
#include "gpusched/scheduler/backfill.hpp"
#include "gpusched/scheduler/orders.hpp"

namespace gpusched::sim {

using Seconds = std::int64_t;

// Bounds of a simulation's inputs (refused beyond, naming the field): times and durations up to 2^40 s
// (34,800 years; sums of a few stay far inside 64 bits), generated clusters and traces of sane size.
inline constexpr Seconds kMaxSimSeconds = Seconds{1} << 40;
inline constexpr std::size_t kMaxSimNodes = 1'000'000;
inline constexpr std::size_t kMaxSimJobs = 100'000'000;

// One job of a trace.
struct SimJob {
  std::string name;
  std::string queue;             // "" = the default queue
  std::int32_t priority = 0;     // higher first (priority order, preemption)
  Seconds submit = 0;
  Seconds duration = 1;          // true run time at full size
  Seconds estimate = 0;          // the user's runtime estimate for backfill; 0 = duration (exact)
  TaskShape shape;               // per task
  std::int32_t tasks = 1;
  std::int32_t min_tasks = -1;   // elastic: runs with min_tasks..tasks; -1 = rigid
  std::string gpu_model;         // allowed model ("" = any)
  Seconds checkpoint_interval = 0;  // 0 = never checkpoints (an eviction loses the whole segment)
  Seconds restart_cost = 0;
  bool preemptible = true;
  // The fields its trace gave (bits of SimJob::Given): what the sweep's options must not override
  // (sim::augment adds only what a trace lacks). A generated job gives none.
  enum Given : std::uint8_t {
    kGivenQueue = 1, kGivenPriority = 2, kGivenEstimate = 4, kGivenCheckpoint = 8, kGivenRestart = 16, kGivenMinTasks = 32
  };
  std::uint8_t given = 0;

  std::int64_t demand() const;   // milli-GPU-seconds (CPU-only: task-seconds x 1000)
  std::int64_t full_rate() const;  // milli-GPU per second at full size (CPU-only: 1000 x tasks)
  Seconds runtime_estimate() const { return estimate > 0 ? estimate : duration; }
};

// Power and price of a node (energy and cost metrics, energy-aware placement).
struct NodeEnergy {
  double idle_watts = 0;      // drawn while the node is powered (has work, or always if !power_off_idle)
  double gpu_watts = 0;       // per fully busy GPU (a share draws its fraction)
  double price_per_hour = 0;  // while powered
};

struct SimCluster {
  Cluster nodes;                   // idle at the start
  std::vector<NodeEnergy> energy;  // per node, or empty (no energy figures)
  std::string name;
};

// A node failure: node (by index) down at `time` for `duration` seconds.
struct NodeFailure {
  Seconds time = 0;
  std::uint32_t node = 0;
  Seconds duration = 0;
};

struct FailureModel {
  std::vector<NodeFailure> list;  // explicit failures (used as given)
  double mtbf_hours = 0;          // > 0: seeded exponential failures per node, in addition
  double mttr_hours = 1;
};

// ---- the policy: a configuration of the library's scheduling building blocks --------------------

enum class QueueOrder : std::uint8_t {
  kFifo,      // submit time, then trace order
  kPriority,  // priority, then FIFO
  kLas,       // Tiresias discretised 2D-LAS: queue by attained GPU-service, FIFO inside a queue
  kSrtf,      // shortest remaining time first (known durations: an oracle bound)
  kDrf,       // queues by weighted dominant share (DRF), FIFO inside a queue; quotas cap a queue
};
// The cycle's backfill modes (scheduler/backfill.hpp): one vocabulary, not a copy.
using scheduler::BackfillMode;

struct PolicyConfig {
  std::string name = "fifo";
  QueueOrder order = QueueOrder::kFifo;
  BackfillMode backfill = BackfillMode::kNone;
  // kFifo/kPriority without backfill: strict (the first job that does not fit blocks the queue).
  // With kNone and !strict: first-fit down the queue (greedy, no reservation).
  bool strict = true;
  bool preempt = false;           // evict lower-order jobs (LAS, SRTF, priority)
  bool checkpoint_aware = false;  // victim choice by lost work + restart cost (else Kueue's order)
  bool topology_aware = false;    // multi-node gangs prefer one rack (Kueue TAS preferred level)
  bool energy_aware = false;      // place on powered, cheaper nodes first
  std::size_t backfill_depth = 100;    // jobs examined past the first blocked one (Slurm bf_max_job_test)
  Seconds min_runtime = 300;           // no preemption of a job younger than this (anti-thrashing)
  std::vector<std::int64_t> las_thresholds = {3600LL * 1000, 36000LL * 1000};  // milli-GPU-seconds
  // LAS starvation (Tiresias' PROMOTE_KNOB; "+promoteK"): a pending job that has waited K times its
  // executed time goes to the top queue, its attained service counted from its restart. 0: off.
  double las_promote_knob = 0;
  std::vector<std::pair<std::string, double>> queue_weights;  // DRF weights (default 1)
  std::vector<std::pair<std::string, std::int64_t>> queue_quota_gpus;  // DRF caps in GPUs (none = no cap)
};

// Parses "fifo", "easy", "conservative", "drf", "las", "srtf", "priority", "greedy", each optionally
// followed by modifiers "+ckpt" (checkpoint-aware victims), "+topo" (topology-aware), "+energy",
// "+preempt", "+promoteK" (LAS only: Tiresias' starvation knob K, a positive number). Unknown names
// fail naming the word.
Result<PolicyConfig> parse_policy(std::string_view spec);
std::vector<std::string> policy_names();

// ---- the simulation ------------------------------------------------------------------------------

struct SimConfig {
  PolicyConfig policy;
  // Cycles run at wake-ups: after every instant with an event that can change a decision (an
  // arrival, an end, a failure or repair, a backoff ending, a LAS queue change or promotion, a
  // running job reaching the minimum runtime, an estimate overrun). A period > 0 adds a cycle every
  // period while jobs wait, which by those rules changes nothing (a check anyone can run).
  Seconds cycle_period = 0;
  // Rebuild the scheduler from scratch at every cycle (a fresh session from the lists) instead of
  // keeping it: the same decisions, at the cost of rebuilding (`simulate --rebuild-cycles`).
  bool rebuild_cycles = false;
  // At most one cycle per this many seconds (0: after every batch of events): an event sooner after
  // the last cycle defers the next one to the interval's end, as Slurm's sched_min_interval and a
  // Volcano/KAI session period batch the work of many events into one cycle. Large clusters need it:
  // every cycle reads every running job (scheduler/cycle.hpp).
  Seconds min_cycle_interval = 0;
  Seconds sample_period = 0;       // utilisation samples; 0 = span / 200 (at least 60 s)
  FailureModel failures;
  Seconds failure_backoff = 60;
  std::uint64_t seed = 42;
  Seconds horizon = 0;             // stop at this time (0 = when every job completed)
  std::string rack_label = "rack"; // the label key of the rack level (topology-aware option)
  bool power_off_idle = true;      // an idle node draws nothing (energy-aware consolidation pays)
  // The placement policy by name, resolved in `registry` (packing/registry.hpp; nullptr = the
  // built-ins): "" = best-fit (or, with "+energy", the cost-aware policy; the two are exclusive).
  // FGD-family policies get the trace's task shapes as their target workload.
  std::string placement;
  const PolicyRegistry* registry = nullptr;
  // The order within each queue and the victim order, by name, resolved in `orders`
  // (scheduler/orders.hpp; nullptr = the built-ins): "" = the policy's own (its priorities: LAS,
  // SRTF, the trace's; the victim cost of "+ckpt" or Kueue's order). An order's key goes before the
  // policy's priority within a queue; DRF's choice between queues does not change.
  std::string order, victim_order;
  const scheduler::OrderRegistry* orders = nullptr;
  std::function<void(double)> progress;  // called with the fraction of jobs done (may be empty)
};

struct JobOutcome {
  Seconds submit = 0, first_start = -1, end = -1;
  std::int32_t preemptions = 0, failures = 0;
  std::string queue;
};

struct Sample {
  Seconds time = 0;
  double utilisation = 0;     // allocated GPU share / capacity of live nodes
  std::int64_t queue_length = 0;
  std::int64_t running = 0;
  double fragmentation = 0;   // idle GPUs not on a fully idle node / idle GPUs
  std::int64_t failed_nodes = 0;
};

struct Conservation {
  std::int64_t delivered = 0;        // milli-GPU-seconds, integrated from the state
  std::int64_t demand_done = 0;      // completed jobs' demand + progress of jobs still running
  std::int64_t lost_preemption = 0;
  std::int64_t lost_failure = 0;
  std::int64_t restart_overhead = 0;
  std::int64_t rounding = 0;
  std::int64_t max_overcommit = 0;   // the most the state's share exceeded the jobs' sum (must be 0)
  std::uint64_t checks = 0;          // instants checked
  bool holds() const {
    return max_overcommit == 0 &&
           delivered == demand_done + lost_preemption + lost_failure + restart_overhead + rounding;
  }
};

struct SimMetrics {
  // rejected: can never fit the cluster (infeasible at capacity); unfinished: neither, at the end
  // (cut by the horizon, or stranded: pending when nothing left to happen could start them).
  std::size_t jobs = 0, completed = 0, rejected = 0, unfinished = 0;
  double jct_mean = 0, jct_p50 = 0, jct_p95 = 0, jct_p99 = 0;
  double wait_mean = 0, wait_p50 = 0, wait_p95 = 0, wait_p99 = 0;
  double slowdown_mean = 0, slowdown_p50 = 0, slowdown_p95 = 0;  // bounded: JCT / max(duration, 10 s)
  Seconds makespan = 0;
  double utilisation_mean = 0;        // time-weighted over [first submit, makespan end]
  double fragmentation_mean = 0;      // mean over samples
  double jain_fairness = 1;           // Jain's index over the queues' mean slowdowns
  double gpu_hours_delivered = 0;
  double gpu_hours_lost_preemption = 0, gpu_hours_lost_failure = 0, gpu_hours_restart = 0;
  std::int64_t preemptions = 0, failure_restarts = 0, node_failures = 0;
  double preemptions_per_job = 0;
  std::int32_t max_preemptions_of_a_job = 0;
  double energy_kwh = 0, cost = 0;
  std::uint64_t cycles = 0, events = 0;
  Seconds simulated_seconds = 0;
};

struct SimResult {
  std::string policy, trace;
  std::uint64_t seed = 0;
  SimMetrics metrics;
  Conservation conservation;
  std::vector<Sample> samples;
  std::vector<JobOutcome> jobs;  // in trace order
  std::vector<double> jct_sorted;  // completed jobs' JCTs, ascending (the CDF)
};

// Runs one simulation. Fails (naming the job and field) when a job cannot compile against the cluster
// (an unknown GPU model) or can never fit an empty cluster (more GPUs than it has).
Result<SimResult> simulate(const SimCluster& cluster, const std::vector<SimJob>& jobs, const SimConfig& config);

// Nodes x GPUs of one model, `nodes_per_rack` per rack (label "rack"), with per-node energy figures.
SimCluster make_uniform_cluster(std::size_t nodes, std::int32_t gpus_per_node, std::string model,
                                std::size_t nodes_per_rack = 16, MilliCpu cpu = 96'000,
                                Bytes memory = Bytes{768} << 30);

// Built-in power and price figures per GPU model (docs/simulate.md cites them); zeros when unknown.
NodeEnergy default_energy(std::string_view model, std::int32_t gpus);

}  // namespace gpusched::sim
