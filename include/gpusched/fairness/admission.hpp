// gpusched/fairness/admission.hpp — the admission order of pending jobs under fair share, quotas
// and priorities, with a reason for every job left pending.
//
// This puts the area together the way a batch admission controller (Kueue, Volcano, KAI) does:
//
//   * Queues form a tree with weights at every level; which queue is served next is decided by
//     hierarchical DRF (hdrf.hpp) over what the queues hold.
//   * Each leaf queue has Kueue-style quotas (quota.hpp): nominal quota per resource and per GPU
//     model ("flavor"), a cohort, borrowing and lending limits.
//   * Within a queue, jobs go by effective priority (highest first), then submission time (earliest
//     first), then input order. Priority classes are resolved by the caller (a class is a name for
//     a number); *aging* adds `step` to a job's priority for every `interval` seconds it has waited,
//     up to `max_boost`, so low-priority work is not starved forever.
//   * Across queues: a queue whose head job fits within its own nominal quota goes before any queue
//     whose head would borrow (Kueue admits non-borrowing workloads first); within each of those two
//     tiers the lowest hierarchical weighted dominant share goes first, ties to the queue listed
//     first. (These two rules and the flavor rule below are admission_rule.hpp's, which the
//     scheduling cycle uses too: one admission rule, two meanings of "fits".)
//   * Flavor assignment: a GPU job allowing several models tries them in the queue's flavor order
//     (else the resource space's order) and takes the first that fits without borrowing, else the
//     first that fits by borrowing. Borrowing on one flavor therefore never pushes a job that fits
//     another flavor's nominal quota behind borrowers (the failure of kueue issue #9406).
//   * A job is admitted when its quota check passes and the cluster's aggregate free resources hold
//     it (this is quota-level admission like Kueue's; node-level placement is gpusched place's job).
//     A job that does not fit stays pending with the reason; a StrictFIFO queue then stops (its later
//     jobs wait behind the head), a BestEffortFIFO queue (the default) moves on to its next job.
//
// Admission only consumes resources, so a job that does not fit never fits later in the same plan:
// one pass over the jobs suffices, O(J log J + J · depth · (m + log Q)).
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/cluster/jobs.hpp"
#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/core/preemption_policy.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/fairness/admission_rule.hpp"
#include "gpusched/fairness/drf.hpp"
#include "gpusched/fairness/quota.hpp"

namespace gpusched::fairness {

// The planner reads the one job model (cluster/jobs.hpp): a `CompiledJob` per pending job, as the
// scheduling cycle keeps it. What it charges a queue is the sum over its groups of replicas x the
// group's per-task CPU, memory and GPU share (gpus x gpu_milli), the GPU share on the flavor the job
// is admitted on. Its allowed GPU models are the intersection over its groups that need GPUs (one
// flavor per job); its priority is `priority` (a reader resolves priority classes, as for the
// cycle: plan_jobs in cluster_input.hpp), `submit_time` orders and ages it.
//
// A group with min_replicas below replicas makes the job elastic, and it may be admitted partially
// (Kueue's partial admission: PodSet minCount): when the whole job does not fit, the planner reduces
// every elastic group proportionally — at step s of S = max(replicas - min_replicas), a group keeps
// replicas - floor((replicas - min_replicas) * s / S) — and admits the least reduction (the most
// replicas) that fits, found by binary search (fitting is monotone in the request). min_replicas
// is clamped to [0, replicas] (a negative one means all replicas: rigid).

struct AgingPolicy {
  std::int64_t interval = 0;  // seconds per step; 0 = no aging
  std::int64_t step = 1;
  std::int64_t max_boost = std::numeric_limits<std::int32_t>::max();
  std::int64_t now = 0;       // the time waits are measured to
};

// The boost aging gives a job: min(max_boost, step · floor(waited / interval)), 0 when no step has
// elapsed; computed without overflow for any times (a wait beyond INT64_MAX saturates).
std::int64_t aging_boost(const CompiledJob& job, const AgingPolicy& aging);
// priority + aging_boost, or an ErrorCode::kOverflow error (field "priority") when the sum exceeds
// INT64_MAX: the planner reports such a job as invalid instead of wrapping it to the lowest priority.
Result<std::int64_t> checked_effective_priority(const CompiledJob& job, const AgingPolicy& aging);
// checked_effective_priority's value; INT64_MAX when it overflows (the planner never uses this value
// for such a job: it is reported invalid).
std::int64_t effective_priority(const CompiledJob& job, const AgingPolicy& aging);

struct AdmittedJob {
  std::size_t job;           // index into the jobs given
  std::size_t queue;         // index into the queues given
  int gpu_dim = -1;          // the flavor taken, -1 for CPU-only jobs
  bool borrowed = false;
  std::int64_t priority = 0; // effective
  bool partial = false;      // admitted with fewer replicas than asked (min_replicas)
  std::vector<std::int32_t> replicas;  // per group as admitted
};

// Why one candidate flavor of a job did not fit: its queue's quota check failed, or the quota
// passed but the cluster's aggregate free resources did not hold it.
struct CandidateMiss {
  int gpu_dim = -1;          // the flavor tried, -1 for CPU-only jobs
  bool cluster = false;      // true: not enough free in the cluster (quota passed)
  int dimension = -1;        // cluster misses: the first dimension short
  std::int64_t requested = 0, free = 0;  // cluster misses: on that dimension
  QuotaCheck quota;          // quota misses
};

// A pending job's reason is kept as a structured value and formatted only when asked for
// (FairSharePlanner::reason): a plan over 100,000 jobs leaves tens of thousands pending, and
// formatting all their texts eagerly used to cost more than planning itself.
enum class PendingKind : std::uint8_t {
  kNoSuchQueue,       // the job names no queue
  kNotLeaf,           // the job names a queue with child queues
  kNoFlavorOffered,   // a GPU job, and the queue offers no GPU flavor
  kNoAllowedFlavor,   // none of the job's allowed GPU models is offered by the queue
  kDoesNotFit,        // every candidate flavor missed: see misses
  kBehindStrictHead,  // a StrictFIFO queue stopped at its head `behind`
  kPriorityOverflow,  // priority + aging boost exceeds INT64_MAX (checked_effective_priority)
  kInvalidRequest,    // a negative request, or totals that overflow int64 (request_problem)
};

// Why a job's request cannot be used as it is: a negative replica count or amount, or a total that
// leaves 64 bits (issue 15: a job asking for ~9.2e18 cores must not wrap to a small or negative
// total). `group` and `field` name it ("groups[1].cpu": replicas x cpu, or the job's cpu total
// over its groups); no field when the request is usable.
struct RequestProblem {
  std::size_t group = 0;
  const char* field = nullptr;  // "replicas", "cpu", "memory", "gpus" (gpus x gpu_milli), "gpu_milli"
  bool overflow = false;        // false: a negative value
  std::int64_t replicas = 0;    // the group's replicas
  std::int64_t value = 0;       // the negative value, or the per-task amount the replicas multiply
  explicit operator bool() const { return field != nullptr; }
  std::string path() const { return "groups[" + std::to_string(group) + "]." + (field ? field : "request"); }
  // "2 replicas of 4700000000000000000 exceed a 64-bit total (overflow)", "expected a non-negative
  // amount, got -1".
  std::string what() const {
    if (!overflow) return "expected a non-negative amount, got " + std::to_string(value);
    return std::to_string(replicas) + " replicas of " + std::to_string(value) + " exceed a 64-bit total (overflow)";
  }
};
RequestProblem request_problem(const CompiledJob& job);

// Which replica count of each group a demand sums: the most (`replicas`, what a job asks) or the
// least (`min_replicas`: where an elastic job may start, and what the cycle judges its tier on).
enum class ReplicaBound : std::uint8_t { kMost, kLeast };

// What a job charges its queue: its CPU, memory and GPU share (milli-GPU, charged on the flavor it is
// admitted on) summed over its groups' replicas (at `bound`), the GPU models it allows (the intersection over
// its groups that need GPUs and have replicas), whether it may shrink, and the first problem
// (request_problem) — when there is one, the sums stop there.
struct JobDemand {
  std::int64_t cpu = 0, memory = 0, gpu_milli = 0;
  GpuModelMask models = kAnyGpuModel;
  bool names_models = false;  // some GPU group restricts the models
  bool elastic = false;       // some group has min_replicas below replicas (partial admission)
  RequestProblem problem;
};
JobDemand job_demand(const CompiledJob& job, ReplicaBound bound = ReplicaBound::kMost);

struct PendingJobReport {
  std::size_t job;
  std::size_t queue;         // SIZE_MAX when the job names no known leaf queue
  PendingKind kind = PendingKind::kDoesNotFit;
  std::int64_t priority = 0;
  std::size_t behind = SIZE_MAX;   // kBehindStrictHead: the head job's index
  std::uint32_t first_miss = 0;    // kDoesNotFit: AdmissionPlan::misses[first_miss, first_miss + miss_count)
  std::uint32_t miss_count = 0;
};

struct QueueReport {
  std::string name;
  bool leaf = true;
  Amounts usage;             // leaves: after the plan
  Amounts borrowed;
  double dominant_share = 0;  // of the cluster's capacity (internal nodes: sum of their leaves)
  double weighted_share = 0;  // H-DRF's share as the parent sees it (rescaled for internal nodes)
  double fair_share = 0;      // fractional weighted-DRF entitlement given the queues' demands
  std::size_t admitted = 0;
  std::size_t pending = 0;
};

struct AdmissionPlan {
  std::vector<AdmittedJob> admitted;  // in admission order
  std::vector<PendingJobReport> pending;
  std::vector<CandidateMiss> misses;  // referenced by pending[k].first_miss / miss_count
  std::vector<QueueReport> queues;    // in the order given
};

// Would one job be admitted now (before any other pending job), and if not, why.
struct AdmissionDecision {
  bool borrows = false;
  int gpu_dim = -1;
  bool partial = false;
  std::vector<std::int32_t> replicas;  // per group
  std::string reason;  // why not, or how ("fits within nominal quota on gpu:H100-80GB")
  // The answer in the one vocabulary (see FairSharePlanner::outcome): kPlaced when admitted.
  Outcome outcome{Verdict::kNotNow, {}};
  bool admitted() const { return outcome.verdict == Verdict::kPlaced; }
};

class FairSharePlanner {
 public:
  // `capacity` and `free` are the cluster's aggregate totals per dimension. Fails on unknown parents,
  // cycles, duplicate names, bad weights or quotas, or quotas on internal queues; messages name the
  // queue and the field. `registry` is the one the jobs were compiled with (their GPU model masks
  // are over its ids; a model's flavor is the space's model of the same name); without one, model id
  // k is the space's k-th GPU model (model_bit(k)).
  static Result<FairSharePlanner> build(ResourceSpace space, Amounts capacity, Amounts free,
                                        std::vector<QueueConfig> queues, const GpuModelRegistry* registry = nullptr);

  AdmissionDecision query(const CompiledJob& job) const;
  // `jobs`: a span of CompiledJob, or the records that hold them, read in place (JobSpan,
  // cluster/jobs.hpp: the scheduling cycle's pending jobs are JobSpan(pending, &PendingJob::job)).
  AdmissionPlan plan(JobSpan jobs, const AgingPolicy& aging = {}) const;
  // The text of a pending job's reason ("queue q: exceeds nominal quota ... on gpu:H100 (requested 8,
  // available 4)"); `jobs` are the jobs the plan was made from.
  std::string reason(const AdmissionPlan& plan, const PendingJobReport& pending, JobSpan jobs) const;

  // A pending job's answer in the one vocabulary (core/outcome.hpp), built from the plan's
  // structured reasons without formatting any text:
  //   kInvalid     the job names no queue (kNoSuchQueue) or a queue with children (kNotLeafQueue), or
  //                its priority or request overflows / is negative (kOverflow, kNegativeAmount);
  //   kInfeasible  the queue offers no flavor the job may use (kNoFlavorOffered), or on every
  //                candidate flavor the request is larger than the cluster's capacity or than the
  //                queue's quota could ever give (nominal, plus borrowing limit and cohort pool);
  //   kNotNow      it waits behind a StrictFIFO head (kBehindStrictHead), or some candidate would fit
  //                once resources or quota free up: kClusterFull, kOverNominalQuota,
  //                kOverBorrowingLimit, kCohortExhausted or kReclaimable.
  // One reason per candidate flavor tried; `unit` is the dimension's (milli-CPU, bytes, milli-GPU),
  // `needed`/`available` the request and what was available on the first dimension short, and
  // `subject` that dimension's index in space() (the job's index for kBehindStrictHead: the head).
  Outcome outcome(const AdmissionPlan& plan, const PendingJobReport& pending) const;

  const ResourceSpace& space() const { return space_; }
  std::optional<std::size_t> find_queue(std::string_view name) const;

 private:
  ResourceSpace space_;
  Amounts capacity_, free_;
  std::vector<QueueConfig> queues_;
  QueueTree tree_;
  QuotaBook book_;
  std::vector<Eigen::Index> dim_of_model_;  // by the jobs' GpuModelId: the flavor's dimension, -1 none
  std::vector<std::string> model_names_;    // by GpuModelId, for reasons

  FairSharePlanner() = default;
};

}  // namespace gpusched::fairness

#if GPUSCHED_HEADER_ONLY
#include "gpusched/fairness/detail/admission_impl.hpp"
#endif
