// Implementation of gpusched/scheduler/cycle.hpp (included at its end,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/scheduler/cycle.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace gpusched::scheduler {

GPUSCHED_DECL std::string_view eviction_reason_name(EvictionReason r) {
  switch (r) {
    case EvictionReason::kPriority: return "priority";
    case EvictionReason::kCohortReclaim: return "cohort reclaim";
    case EvictionReason::kFairShare: return "fair-share reclaim";
    case EvictionReason::kFailure: return "failure";
  }
  return "?";
}

GPUSCHED_DECL const Start* CycleDecisions::find_start(std::string_view job) const {
  for (const Start& s : starts)
    if (s.job == job) return &s;
  return nullptr;
}

GPUSCHED_DECL const Waiting* CycleDecisions::find_waiting(std::string_view job) const {
  for (const Waiting& w : waiting)
    if (w.job == job) return &w;
  return nullptr;
}

namespace detail {

// Lost and restart work are 64-bit milli-GPU-seconds that saturate rather than wrap (lost_work,
// restart_work): a saturated figure is not the job's work, so an answer that would report one is
// refused, naming the job. Only times near the 2^62 bound or restart costs near it reach this (a job
// of 8 GPUs overflows after 2^50 s, 36 million years).
GPUSCHED_DECL Status check_eviction_work(const Eviction& e, Seconds now) {
  constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
  if (e.lost_milli_gpu_seconds < kSaturated && e.restart_milli_gpu_seconds < kSaturated &&
      saturating_add(e.lost_milli_gpu_seconds, e.restart_milli_gpu_seconds) < kSaturated)
    return {};
  return Error{"running job \"" + e.job.substr(0, 200) + "\": the work its " +
                   (e.reason == EvictionReason::kFailure ? "failure" : "eviction") + " at now=" + std::to_string(now) +
                   " loses (since its last checkpoint, plus its restart cost) is beyond 64 bits of milli-GPU-seconds",
               ErrorCode::kOverflow, "running[" + std::to_string(e.running) + "]"};
}

}  // namespace detail

GPUSCHED_DECL Status RunningUsage::add(const ClusterState& state, std::string_view queue,
                                       std::span<const RunningTask> tasks, int sign, bool count_job) {
  if (sign != 1 && sign != -1)
    return Error{"sign: expected +1 or -1, got " + std::to_string(sign), ErrorCode::kInvalidValue, "sign"};
  auto it = std::find_if(queues_.begin(), queues_.end(), [&](const Queue& q) { return q.name == queue; });
  // Summed into a copy, kept only when no sum leaves the 64-bit range (then nothing changed).
  Queue next = it == queues_.end() ? Queue{std::string(queue), 0, 0, 0, {}} : *it;
  const auto overflow = [&](const char* what) -> Status {
    return Error{"usage of queue \"" + next.name + "\": " + what + " beyond the 64-bit range", ErrorCode::kOverflow,
                 std::string("usage.") + what};
  };
  if (count_job) next.jobs += sign;
  for (const RunningTask& t : tasks) {
    const TaskAssignment& a = t.assignment;
    if (__builtin_add_overflow(next.cpu, sign * a.cpu, &next.cpu)) return overflow("cpu");
    if (__builtin_add_overflow(next.memory, sign * a.memory, &next.memory)) return overflow("memory");
    const std::optional<GpuModelId> counted = fairness::counted_gpu_model(state, a);
    if (!counted) continue;
    const GpuModelId model = *counted;
    if (next.gpu_milli.size() <= model) next.gpu_milli.resize(static_cast<std::size_t>(model) + 1, 0);
    std::int64_t gpu = 0;
    if (__builtin_mul_overflow(static_cast<std::int64_t>(a.gpus.size()), static_cast<std::int64_t>(a.gpu_milli), &gpu) ||
        __builtin_add_overflow(next.gpu_milli[model], sign * gpu, &next.gpu_milli[model]))
      return overflow("gpu_milli");
  }
  if (it == queues_.end()) queues_.push_back(std::move(next));
  else *it = std::move(next);
  return {};
}

namespace detail {

using fairness::Amounts;

// The fairness dimension of the GPUs an assignment holds (fairness::counted_gpu_model's), -1 for a
// task without GPUs.
GPUSCHED_DECL Eigen::Index gpu_dim_of(const ClusterState& state, std::span<const Eigen::Index> dim_of_model,
                                      const TaskAssignment& a) {
  const std::optional<GpuModelId> model = fairness::counted_gpu_model(state, a);
  if (model && *model < dim_of_model.size()) return dim_of_model[*model];
  return -1;
}

// What a job charges flavor dimension `gpu_dim` (-1: none), as fair share sums it
// (fairness::job_demand) at its groups' most replicas or least (`at_min`), written into `out` (its
// buffer reused: the cycle asks this for every job it serves). A job whose sums overflow is never
// served (it waits kInvalid: detail::pending_spec), so these are exact.
GPUSCHED_DECL void job_amounts_into(Amounts& out, const CompiledJob& job, Eigen::Index dims, Eigen::Index gpu_dim, bool at_min) {
  const fairness::JobDemand demand =
      fairness::job_demand(job, at_min ? fairness::ReplicaBound::kLeast : fairness::ReplicaBound::kMost);
  out.setZero(dims);
  out[fairness::ResourceSpace::kCpu] = demand.cpu;
  out[fairness::ResourceSpace::kMemory] = demand.memory;
  if (gpu_dim >= 0) out[gpu_dim] = demand.gpu_milli;
}
GPUSCHED_DECL Amounts job_amounts(const CompiledJob& job, Eigen::Index dims, Eigen::Index gpu_dim, bool at_min) {
  Amounts out;
  job_amounts_into(out, job, dims, gpu_dim, at_min);
  return out;
}

// A pending job's gang spec, or why it can never be served: its gang does not compile
// (make_gang_spec), or what it asks sums beyond a 64-bit amount (fairness::request_problem: an
// ErrorCode::kOverflow naming the group and field). Either way it waits kInvalid.
GPUSCHED_DECL Result<GangSpec> pending_spec(const CompiledJob& job) {
  if (const fairness::RequestProblem problem = fairness::request_problem(job))
    return fairness::detail::fairness_request_error(problem, "");
  return make_gang_spec(job);
}

GPUSCHED_DECL bool needs_gpu(const GangSpec& spec) {
  for (const GangGroup& g : spec.groups)
    if (g.request.shape.needs_gpu() || g.request.mig.any()) return true;
  return false;
}

GPUSCHED_DECL GangSpec restrict_to_model(const GangSpec& spec, GpuModelId model) {
  GangSpec out = spec;
  for (GangGroup& g : out.groups)
    if (g.request.shape.needs_gpu() || g.request.mig.any()) g.request.models &= model_bit(model);
  return out;
}

GPUSCHED_DECL Reason quota_reason(const fairness::QuotaCheck& c) {
  Unit unit = Unit::kMilliGpu;
  if (c.dimension == fairness::ResourceSpace::kCpu) unit = Unit::kMilliCpu;
  if (c.dimension == fairness::ResourceSpace::kMemory) unit = Unit::kMemoryBytes;
  return {fairness::reason_kind(c.verdict), unit, c.requested, c.available, 0, c.dimension};
}

// The cycle's working set: quota book, H-DRF tree, per-queue usage, over one ClusterState.
struct CycleRun {
  ClusterState& state;
  std::span<const RunningJob> running;
  std::span<const PendingJob> pending;
  std::span<const fairness::QueueConfig> queues;
  Seconds now;
  const CycleOptions& options;
  CycleDecisions out;

  bool fair = false;  // queues given
  fairness::ResourceSpace space;
  Amounts capacity;
  Eigen::Index dims = 2;
  std::vector<Eigen::Index> dim_of_model;  // GpuModelId -> fairness dimension (-1 none)
  std::vector<GpuModelId> model_of_dim;     // dimension -> GpuModelId
  std::optional<fairness::QueueTree> tree;    // the one admission rule's pieces (fairness/admission_rule.hpp)
  std::optional<fairness::QuotaBook> book;
  std::optional<fairness::QueueOrder> order;
  std::vector<std::size_t> running_queue;  // queue index of each running job: read through queue_of()
  bool running_queue_known = false;
  std::vector<std::int64_t> queue_gpu_used;  // milli-GPU over every GPU dimension (with queues only)
  std::vector<std::uint8_t> victim_mark;   // kExcludedVictim once evicted or shrunk
  std::optional<RunningFacts> victim_facts;  // read by every preemption search; built by the first
  std::vector<ReleaseEntry> running_releases;  // running_profile(), as of
  std::size_t running_releases_at = SIZE_MAX;  // this many evictions
  std::vector<ReleaseEntry> own_releases;  // grid_releases() without a session
  std::vector<FailedShape> failed;
  // Preemption searches that found nothing, by queue and priority: a job of that queue with no more
  // priority asking for at least as much finds nothing either (evictions and starts during the
  // cycle only take candidates away), so it is not searched again.
  struct FailedPreemption {
    std::size_t queue;
    std::int32_t priority;
    ShapeKey key;
  };
  std::vector<FailedPreemption> failed_preemptions;
  std::vector<BlockedPending> blocked;  // pending jobs that did not start, in cycle order
  // Per pending job: its gang spec (the session's, kept from submit, or compiled here) and queue.
  std::span<const Result<GangSpec>> specs;
  std::vector<Result<GangSpec>> own_specs;
  std::vector<std::size_t> queue_of_pending;
  // Each queue's members in policy order (the session's, or sorted here); jobs that cannot be
  // queued (bad spec, unknown or non-leaf queue) wait kInvalid and are in no queue.
  std::span<const std::vector<std::size_t>> members;
  std::vector<std::vector<std::size_t>> own_members;
  const CycleKept* kept = nullptr;
  // Decisions only (CycleDetail::kDecisions): no kNotNow waiting records and no reasons, which the
  // decisions do not depend on (a session's hot path: the simulator throws them away).
  bool explain = true;
  // Reservations reported (CycleDetail::kActions: none, and the plan stops at the last job that
  // could start now).
  bool reserve = true;
  std::vector<std::size_t> nominated;  // pending indices honoured in stage 0 (ascending)
  // Stage 3's protected reservations, their nodes cordoned until stage 4 is done: EASY protects the
  // first blocked job's, conservative every blocked job's up to the depth.
  std::size_t guards = 0;
  std::vector<NodeId> guard_cordoned;
  std::size_t first_guard = SIZE_MAX;  // the first protected reservation (index into out.reservations)
  std::vector<GuardMemo> guard_memo;
  std::vector<std::size_t> deferred_guards;  // blocked jobs whose guard is not computed yet, in order (guard)
  // The prefix a session keeps (CyclePrefix): whether this cycle fills it, whether it resumed it,
  // whether its backfill stage made a plan; the waiting records written before any job was served.
  bool keeps = false, resuming = false, planned = false;
  bool held_by_head = false;  // a StrictFIFO head blocked: the jobs after it were not served
  std::size_t queued_records = 0;
  struct FlavorList {
    std::size_t queue;
    GpuModelMask allowed;
    std::vector<Eigen::Index> dims;
  };
  std::deque<FlavorList> flavor_lists;  // flavors() of each (queue, allowed models) seen (stable addresses)

  CycleRun(ClusterState& s, std::span<const RunningJob> r, std::span<const PendingJob> p,
           std::span<const fairness::QueueConfig> q, Seconds n, const CycleOptions& o, const CycleKept* k = nullptr,
           CycleDetail detail = CycleDetail::kFull)
      : state(s), running(r), pending(p), queues(q), now(n), options(o), kept(k), explain(detail == CycleDetail::kFull),
        reserve(detail != CycleDetail::kActions) {}

  std::size_t queue_count() const { return fair ? queues.size() : 1; }
  // Jobs join leaf queues (without queues: the one implicit queue).
  bool is_leaf(std::size_t q) const { return !fair || tree->leaf(q); }

  void add_amounts(Amounts& a, std::span<const RunningTask> tasks) const {
    for (const RunningTask& t : tasks) fairness::task_usage(a, state, dim_of_model, t.assignment);
  }
  Amounts assignment_amounts(std::span<const RunningTask> tasks) const {
    Amounts a = Amounts::Zero(dims);
    add_amounts(a, tasks);
    return a;
  }
  std::int64_t gpu_total(const Amounts& a) const {
    std::int64_t g = 0;
    for (Eigen::Index d = 2; d < dims; ++d) g += a[d];
    return g;
  }

  Status setup() {
    fair = !queues.empty();
    const GpuModelRegistry& registry = state.registry();
    Amounts free;
    if (fair) {
      auto cluster = fairness::fairness_cluster(state);
      if (!cluster) return cluster.error();
      space = std::move(cluster->space);
      capacity = std::move(cluster->capacity);
      free = std::move(cluster->free);
      dims = space.size();
      // The queue tree and its quotas, validated as the fairness family validates them (before any
      // running job is read, so a bad queue is reported first).
      auto t = fairness::QueueTree::build(space, queues);
      if (!t) return t.error();
      tree = std::move(*t);
      std::vector<fairness::QueueQuota> quotas;
      for (const auto& c : queues) quotas.push_back(fairness::queue_quota(c));
      auto b = fairness::QuotaBook::build(static_cast<std::size_t>(dims), std::move(quotas));
      if (!b) return b.error();
      book = std::move(*b);
    } else {
      capacity = Amounts::Zero(dims);
    }
    dim_of_model = fairness::gpu_dims_by_model(space, registry);
    model_of_dim.assign(static_cast<std::size_t>(dims), 0);
    for (Eigen::Index d = 2; d < dims; ++d)
      if (const auto id = registry.find(space.gpu_models[static_cast<std::size_t>(d - 2)]))
        model_of_dim[static_cast<std::size_t>(d)] = *id;

    const std::size_t nq = queue_count();
    queue_gpu_used.assign(nq, 0);
    victim_mark.assign(running.size(), kRulesOnly);
    std::vector<Amounts> usage(nq, Amounts::Zero(dims));
    if (fair) {
      // The caller's sums when it keeps them and they name only leaf queues (otherwise the sum over
      // the running jobs finds the job to blame).
      bool summed = options.usage != nullptr && usage_from_tally(*options.usage, usage);
#ifndef NDEBUG
      if (summed) {
        std::vector<Amounts> check(nq, Amounts::Zero(dims));
        std::vector<std::int64_t> check_gpu = queue_gpu_used;
        queue_gpu_used.assign(nq, 0);
        if (Status st = sum_running(check); !st) return st;
        for (std::size_t q = 0; q < nq; ++q)
          if (check[q] != usage[q] || check_gpu[q] != queue_gpu_used[q])
            return Error{"options.usage: queue \"" + queues[q].name + "\" differs from the sum of its running jobs",
                         ErrorCode::kInconsistent, "options.usage"};
      }
#endif
      if (!summed)
        if (Status st = sum_running(usage); !st) return st;
      for (std::size_t q = 0; q < nq; ++q)
        if (is_leaf(q)) book->admit(q, usage[q]);
      // H-DRF over the queues; a dimension saturates only when nothing of it is free (a job fits
      // here when it places on nodes, not by the aggregate amounts).
      order.emplace(*tree, queues, capacity, free, usage, Amounts::Ones(dims));
    } else {
      // One implicit queue: its GPU usage is read only by fair-share reclaim between queues, so it
      // is not summed over every running job (a cycle on a large cluster would pay for it).
    }
    return {};
  }

  // Sums the running jobs' usage per queue (and learns each one's queue): O(running tasks).
  Status sum_running(std::vector<Amounts>& usage) {
    running_queue.assign(running.size(), 0);
    // A run of jobs of one queue is looked up once; the sums go straight into the queue's usage.
    std::size_t last = SIZE_MAX;
    for (std::size_t j = 0; j < running.size(); ++j) {
      const std::string& name = running[j].queue;
      if (last == SIZE_MAX || name != queues[last].name) {
        const std::optional<std::size_t> found = tree->find(name);
        if (!found)
          return Error{"running[" + std::to_string(j) + "].queue: no queue named \"" + name + "\"",
                       ErrorCode::kUnknownName, "running[" + std::to_string(j) + "].queue"};
        last = *found;
        if (!is_leaf(last))
          return Error{"running[" + std::to_string(j) + "].queue: \"" + name + "\" has child queues",
                       ErrorCode::kInconsistent, "running[" + std::to_string(j) + "].queue"};
      }
      running_queue[j] = last;
      Amounts& u = usage[last];
      for (const RunningTask& t : running[j].tasks)
        queue_gpu_used[last] += fairness::task_usage(u, state, dim_of_model, t.assignment);
    }
    running_queue_known = true;
    return {};
  }

  // The caller's per-queue sums as usage, when every queue they name with running jobs is a leaf.
  bool usage_from_tally(const RunningUsage& tally, std::vector<Amounts>& usage) {
    for (const RunningUsage::Queue& t : tally.queues()) {
      const std::optional<std::size_t> found = tree->find(t.name);
      const bool empty = t.jobs == 0 && t.cpu == 0 && t.memory == 0 &&
                         std::all_of(t.gpu_milli.begin(), t.gpu_milli.end(), [](std::int64_t g) { return g == 0; });
      if (empty) continue;
      if (!found || !is_leaf(*found)) return false;
    }
    for (const RunningUsage::Queue& t : tally.queues()) {
      const std::optional<std::size_t> found = tree->find(t.name);
      if (!found) continue;
      Amounts& u = usage[*found];
      u[fairness::ResourceSpace::kCpu] += t.cpu;
      u[fairness::ResourceSpace::kMemory] += t.memory;
      for (std::size_t m = 0; m < t.gpu_milli.size(); ++m) {
        const Eigen::Index d = m < dim_of_model.size() ? dim_of_model[m] : -1;
        if (d < 0) continue;
        u[d] += t.gpu_milli[m];
        queue_gpu_used[*found] += t.gpu_milli[m];
      }
    }
    return true;
  }

  // The queue index of running job j (0 without queues), learnt at the first question when the
  // cycle took the caller's sums.
  std::size_t queue_of(std::size_t j) {
    if (!fair) return 0;
    if (!running_queue_known && kept != nullptr && kept->running_queue.size() == running.size()) {
      running_queue.assign(kept->running_queue.begin(), kept->running_queue.end());
      running_queue_known = true;
    }
    if (!running_queue_known) {
      running_queue.assign(running.size(), 0);
      for (std::size_t r = 0; r < running.size(); ++r) running_queue[r] = tree->find(running[r].queue).value();
      running_queue_known = true;
    }
    return running_queue[j];
  }

  // The flavors a job may be charged on, in the order tried: -1 alone for a job without GPUs.
  const std::vector<Eigen::Index>& flavors(std::size_t q, const GangSpec& spec) {
    static const std::vector<Eigen::Index> kNoFlavor{-1};
    if (!fair || !needs_gpu(spec)) return kNoFlavor;
    GpuModelMask allowed = kAnyGpuModel;
    for (const GangGroup& g : spec.groups)
      if (g.request.shape.needs_gpu() || g.request.mig.any()) allowed &= g.request.models;
    // A few (queue, allowed models) pairs recur for every job of a long queue: each list is made once.
    for (const FlavorList& f : flavor_lists)
      if (f.queue == q && f.allowed == allowed) return f.dims;
    FlavorList& f = flavor_lists.emplace_back(FlavorList{q, allowed, {}});
    for (Eigen::Index d : fairness::flavor_dims(space, queues[q]))
      if (allowed & model_bit(model_of_dim[static_cast<std::size_t>(d)])) f.dims.push_back(d);
    return f.dims;
  }

  // ---- pieces of stage 1 and 2 ----------------------------------------------------------------
  struct Attempt {
    bool started = false;
    Outcome outcome;
    bool preemption_tried = false;
    Verdict preemption = Verdict::kNotNow;
  };

  void charge(std::size_t q, const Amounts& a) {
    if (!fair) return;
    book->admit(q, a);
    order->allocate(q, a);
  }
  void refund(std::size_t q, const Amounts& a) {
    if (!fair) return;
    book->release(q, a);
    order->release(q, a);
  }

  Start make_start(std::size_t p, const GangSpec& spec, const std::vector<TaskPlacement>& placement,
                   const std::vector<std::int32_t>& per_group, Eigen::Index dim, bool borrowed) const {
    Start s;
    s.pending = p;
    s.job = pending[p].job.name;
    std::vector<const TaskPlacement*> sorted;
    for (const TaskPlacement& t : placement) sorted.push_back(&t);
    std::stable_sort(sorted.begin(), sorted.end(), [](const TaskPlacement* a, const TaskPlacement* b) {
      return a->group != b->group ? a->group < b->group : a->replica < b->replica;
    });
    for (const TaskPlacement* t : sorted)
      s.tasks.push_back({spec.groups[t->group].request, t->assignment, static_cast<std::uint32_t>(t->group)});
    s.placed_per_group = per_group;
    if (s.placed_per_group.empty()) {
      s.placed_per_group.assign(spec.groups.size(), 0);
      for (const TaskPlacement& t : placement) ++s.placed_per_group[t.group];
    }
    s.gpu_dim = static_cast<int>(dim);
    s.borrowed = borrowed;
    return s;
  }

  // Places a gang; on success it stays reserved. A rigid one-group gang without constraints is
  // placed task by task with the placement policy (place_job: the state's idle-GPU index, no node
  // scan), which is what the gang solver's greedy step would do, at a fraction of its cost (it
  // counts every node first); everything else goes to the gang solver.
  GangResult place(const GangSpec& spec) {
    ++out.stats.placements_tried;
    const bool simple = spec.groups.size() == 1 && spec.topology.level.empty() && spec.spread.empty() &&
                        spec.anti_affinity.empty() && spec.groups[0].min_replicas == spec.groups[0].replicas;
    if (simple) {
      static const BestFitPolicy kBestFit;
      const PlacementPolicy& policy = options.placement.policy ? *options.placement.policy : kBestFit;
      CompiledJob job;
      job.name = spec.name;
      job.groups.push_back({spec.groups[0].name, spec.groups[0].replicas, spec.groups[0].min_replicas,
                            spec.groups[0].request, {}});
      JobPlacementOptions jo;
      jo.gpu_picker = options.placement.gpu_picker;
      jo.mig_picker = options.placement.mig_picker;
      jo.explain = explain;
      JobPlacement jp = place_job(state, job, policy, jo);
      GangResult r;
      r.verdict = jp.verdict;
      r.reasons = std::move(jp.reasons);
      r.tasks = std::move(jp.tasks);
      r.placed_per_group.assign(1, r.placed() ? spec.groups[0].replicas : 0);
      return r;
    }
    GangOptions o = options.placement;
    o.dry_run = false;
    return place_gang(state, spec, o);
  }

  // The quota's answer for pending job p (its spec `*chosen`) charged on flavor d. An elastic job
  // the quota does not admit whole is tried at its minimum (it may grow later, stage 4): `chosen`
  // then points at that minimum, kept in `restricted`.
  fairness::QuotaCheck check_quota(std::size_t p, std::size_t q, Eigen::Index d, const GangSpec& spec, GangSpec& restricted,
                                   const GangSpec*& chosen) {
    fairness::QuotaCheck c = book->check(q, job_amounts(pending[p].job, dims, d, false));
    if (c.admitted() || !elastic(*chosen)) return c;
    c = book->check(q, job_amounts(pending[p].job, dims, d, true));
    if (c.admitted()) {
      if (chosen == &spec) restricted = spec;
      for (GangGroup& g : restricted.groups) g.replicas = g.min_replicas;
      chosen = &restricted;
    }
    return c;
  }

  Attempt admit(std::size_t p, std::size_t q, const GangSpec& spec) {
    Attempt at;
    const std::vector<Eigen::Index>& fl = flavors(q, spec);
    if (fl.empty()) {
      at.outcome = Outcome::with(Verdict::kInfeasible, {ReasonKind::kNoFlavorOffered});
      return at;
    }
    Outcome placement_miss;
    bool have_placement_miss = false;
    Reason quota_miss{};
    bool have_quota_miss = false;
    Eigen::Index preempt_dim = -2;
    // The spec as charged on the flavor tried (a copy only when it differs from the job's own).
    GangSpec restricted;
    const GangSpec* chosen = &spec;
    const auto check = [&](Eigen::Index d) {
      chosen = &spec;
      if (d >= 0) {
        restricted = restrict_to_model(spec, model_of_dim[static_cast<std::size_t>(d)]);
        chosen = &restricted;
      }
      return fair ? check_quota(p, q, d, spec, restricted, chosen) : fairness::QuotaCheck{};  // (no queues: all nominal)
    };
    const auto refused = [&](Eigen::Index d, const fairness::QuotaCheck& c) {
      if (!have_quota_miss) quota_miss = quota_reason(c);
      have_quota_miss = true;
      if (preempt_dim == -2 && c.verdict == fairness::QuotaVerdict::kReclaimable) preempt_dim = d;
    };
    // The job fits flavor d when its gang places there (and then stays placed and charged).
    const auto fits = [&](Eigen::Index d, bool borrows) {
      if (preempt_dim == -2) preempt_dim = d;
      const auto key = shape_key(*chosen);
      if (key) {
        // Only the same shape reuses the outcome: a larger one fails too, but its own reasons
        // (its numbers; and infeasible where it fits no node at all) are its placement's to say.
        if (const FailedShape* hit = failed_shape(*key)) {
          ++out.stats.cache_hits;
          if (!have_placement_miss) placement_miss = hit->outcome;
          have_placement_miss = true;
          return false;
        }
      }
      GangResult r = place(*chosen);
      if (r.placed()) {
        const Start s = make_start(p, *chosen, r.tasks, r.placed_per_group, d, borrows);
        charge(q, assignment_amounts(s.tasks));
        out.starts.push_back(s);
        return true;
      }
      Outcome o{r.verdict, r.reasons};
      if (key && r.verdict == Verdict::kNotNow && !r.undecided()) {
        failed.push_back({*key, o});  // (not there: a hit above would have skipped the placement)
      }
      if (!have_placement_miss || placement_miss.verdict == Verdict::kInfeasible) placement_miss = std::move(o);
      have_placement_miss = true;
      return false;
    };
    at.started = fairness::choose_flavor(fl, check, refused, fits).found;
    if (at.started) return at;
    if (have_placement_miss) at.outcome = placement_miss;
    else at.outcome = Outcome::with(Verdict::kNotNow, quota_miss);
    if (!have_placement_miss && !have_quota_miss) at.outcome = Outcome::with(Verdict::kNotNow, {ReasonKind::kOther});
    // Stage 2: preemption, when the job could fit the cluster at all.
    if (options.preempt && at.outcome.verdict == Verdict::kNotNow &&
        out.stats.preemption_attempts < options.max_preemption_attempts)
      try_preemption(p, q, spec, preempt_dim == -2 ? fl.front() : preempt_dim, at);
    return at;
  }

  // The outcome of a shape whose placement failed earlier in this cycle (nullptr: none did).
  const FailedShape* failed_shape(const ShapeKey& key) const {
    for (const FailedShape& f : failed)
      if (key == f.key) return &f;
    return nullptr;
  }

  // Stage 2 for a job that did not start: a victim search on flavor `dim` (-1: the job's own spec),
  // unless one for a job of no higher priority and no larger shape already failed in this cycle.
  void try_preemption(std::size_t p, std::size_t q, const GangSpec& spec, Eigen::Index dim, Attempt& at) {
    const auto key = shape_key(dim >= 0 ? restrict_to_model(spec, model_of_dim[static_cast<std::size_t>(dim)]) : spec);
    const std::int32_t prio = pending[p].job.priority;
    if (key && hopeless_search(p, q, *key)) {
      ++out.stats.cache_hits;
      return;
    }
    at.preemption_tried = true;
    ++out.stats.preemption_attempts;
    at.preemption = preempt(p, q, spec, dim, at);
    if (key && at.preemption != Verdict::kPlaced) failed_preemptions.push_back({q, prio, *key});
  }

  // Decisions only: a job that cannot start in this cycle for a reason the cycle has found already
  // waits without being tried. Every flavor it may be charged on is a shape whose placement failed
  // in this cycle (kNotNow; the state has only lost capacity since, or `failed` was cleared), and
  // no preemption search is due for it (off, used up, or ruled out by a failed search of no more
  // priority and no larger shape). admit() would reach the same answer from the same memos (a
  // placement skipped for the cached failure, the search skipped as hopeless); what this saves is
  // the bookkeeping of saying why (copies, quota sums, reasons), per job of a long queue.
  bool known_to_wait(std::size_t p, std::size_t q, const GangSpec& spec) {
    const std::optional<ShapeKey> key = kept != nullptr && p < kept->keys.size() ? kept->keys[p] : shape_key(spec);
    if (!key) return false;
    const auto failed_shape = [&](const ShapeKey& k) {
      return std::any_of(failed.begin(), failed.end(), [&](const FailedShape& f) { return f.key == k; });
    };
    if (!fair || !needs_gpu(spec)) {
      if (!failed_shape(*key)) return false;
    } else {
      const std::vector<Eigen::Index>& fl = flavors(q, spec);
      if (fl.empty()) return false;  // kInfeasible: admit says so
      for (Eigen::Index d : fl) {
        ShapeKey k = *key;
        k.models &= model_bit(model_of_dim[static_cast<std::size_t>(d)]);
        if (!failed_shape(k)) return false;
      }
    }
    if (!options.preempt || out.stats.preemption_attempts >= options.max_preemption_attempts) return true;
    if (fair) return false;  // which flavor a search would use depends on the quotas: admit decides
    if (!hopeless_search(p, q, *key)) return false;
    ++out.stats.cache_hits;
    return true;
  }

  // A preemption search for pending job p (of this shape, in queue q) that cannot find victims: one
  // of no more priority asking for no more failed in this cycle (evictions and starts only take
  // candidates away). A job that must not evict its evictors back is searched anyway (its own
  // exclusions differ).
  bool hopeless_search(std::size_t p, std::size_t q, const ShapeKey& key) const {
    if (!pending[p].evicted_by.empty() && options.never_evict_back) return false;
    const std::int32_t prio = pending[p].job.priority;
    return std::any_of(failed_preemptions.begin(), failed_preemptions.end(), [&](const FailedPreemption& f) {
      return f.queue == q && f.priority >= prio && key.dominated_by(f.key);
    });
  }

  // A queue whose usage is within its nominal quota on every GPU dimension that has one, and that
  // has one at all: what it holds is its own (fair-share reclaim does not take it).
  bool within_own_nominal(std::size_t v) const {
    if (!fair) return false;
    const fairness::QueueConfig& c = queues[v];
    if (c.nominal.size() != static_cast<std::size_t>(dims)) return false;
    bool any = false;
    for (Eigen::Index d = 2; d < dims; ++d) {
      const std::int64_t nominal = c.nominal[static_cast<std::size_t>(d)];
      if (nominal < 0) continue;
      any = true;
      if (book->usage(v)[d] > nominal) return false;
    }
    return any;
  }

  static bool elastic(const GangSpec& spec) {
    for (const GangGroup& g : spec.groups)
      if (g.min_replicas < g.replicas) return true;
    return false;
  }

  // One function on purpose: Kueue's reclaim and borrow rules and H-DRF's sibling comparison build one victim
  // mask together.
  Verdict preempt(std::size_t p, std::size_t q, const GangSpec& spec, Eigen::Index d, Attempt& at) {
    const GangSpec flavored = d >= 0 ? restrict_to_model(spec, model_of_dim[static_cast<std::size_t>(d)]) : spec;
    const CompiledJob& job = pending[p].job;
    // Which other queues' jobs may be taken (the within-queue rule is find_victims' own).
    const Amounts need = job_amounts(job, dims, d, true);
    const std::int64_t need_gpu = gpu_total(need);
    const bool within_nominal = fair && book->within_nominal(q, need);
    const std::string& cohort = fair ? queues[q].cohort : std::string();
    // The preemptor's queue's own policy (Kueue sets it per ClusterQueue), else the cycle's.
    const CohortReclaim reclaim = fair ? queues[q].reclaim_within_cohort.value_or(options.reclaim_within_cohort)
                                       : options.reclaim_within_cohort;
    // Kueue's borrowWithinCohort: a job whose queue must borrow may take lower-priority work of the
    // cohort's borrowers (never with reclaimWithinCohort Never, which Kueue refuses beside it).
    const BorrowWithinCohort borrow = fair && reclaim != CohortReclaim::kNever ? queues[q].borrow_within_cohort
                                                                               : BorrowWithinCohort{};
    const bool cohort_victims = reclaim != CohortReclaim::kNever && (within_nominal || borrow.lower_priority);
    if (!victim_facts)
      victim_facts = running_facts(running, now, options.preemption.min_runtime, victim_order_of(options.preemption));
    std::vector<std::uint8_t> mark = victim_mark;
    std::vector<EvictionReason> why(running.size(), EvictionReason::kPriority);
    if (options.never_evict_back)
      for (const std::string& by : pending[p].evicted_by)
        for (std::size_t j = 0; j < running.size(); ++j)
          if (running[j].name == by) mark[j] = kExcludedVictim;
    // What the rules below ask of a victim's queue, once per queue, not once per running job.
    const std::size_t nq = fair ? queues.size() : 0;
    std::vector<std::uint8_t> borrows_in_cohort(nq, 0), above_nominal(nq, 0);
    // Fair-share reclaim compares the queues as H-DRF does: where their paths from the root part, the
    // two sibling subtrees holding the preemptor's queue (side_q) and the victim's (side_v), each by
    // the GPUs its leaves hold over its weight (Bhattacharya et al., H-DRF, SoCC 2013). Under one
    // parent that is the leaves themselves.
    std::vector<std::int64_t> subtree_gpu;
    std::vector<std::size_t> side_q(nq, 0), side_v(nq, 0);
    if (options.fair_share_reclaim && nq > 0) {
      // Only leaves hold work: each climbs once (a deep chain of queues has one leaf).
      subtree_gpu.assign(nq, 0);
      const auto parent = [&](std::int64_t a) { return tree->parent(static_cast<std::size_t>(a)); };
      for (std::size_t v = 0; v < nq; ++v)
        if (tree->leaf(v) && queue_gpu_used[v] != 0)
          for (std::int64_t a = static_cast<std::int64_t>(v); a >= 0; a = parent(a))
            subtree_gpu[static_cast<std::size_t>(a)] += queue_gpu_used[v];
      // below_on_path[a]: for a queue on q's path from the root, its child on that path (q: itself).
      std::vector<std::size_t> below_on_path(nq, SIZE_MAX);
      std::size_t top_q = q;
      for (std::int64_t a = static_cast<std::int64_t>(q), below = a; a >= 0; below = a, a = parent(a)) {
        below_on_path[static_cast<std::size_t>(a)] = static_cast<std::size_t>(below);
        top_q = static_cast<std::size_t>(a);
      }
      for (std::size_t v = 0; v < nq; ++v) {
        if (!tree->leaf(v) || v == q) continue;
        // Climb from v until its parent is on q's path: that parent is where the paths part.
        std::size_t cv = v;
        while (tree->parent(cv) >= 0 && below_on_path[static_cast<std::size_t>(tree->parent(cv))] == SIZE_MAX)
          cv = static_cast<std::size_t>(tree->parent(cv));
        side_v[v] = cv;
        side_q[v] = tree->parent(cv) < 0 ? top_q : below_on_path[static_cast<std::size_t>(tree->parent(cv))];
      }
    }
    for (std::size_t v = 0; v < nq; ++v) {
      if (v == q) continue;
      if (cohort_victims && !cohort.empty() && queues[v].cohort == cohort) {
        const Amounts borrowed = book->borrowed(v);
        for (Eigen::Index k = 0; k < dims; ++k)
          if (borrowed[k] > 0 && (d < 0 || k == d)) borrows_in_cohort[v] = 1;
      }
      above_nominal[v] = options.fair_share_reclaim && !within_own_nominal(v);
    }
    for (std::size_t j = 0; j < running.size(); ++j) {
      if (mark[j] == kExcludedVictim) continue;
      const std::size_t v = queue_of(j);
      if (!fair || v == q) continue;
      const RunningFacts::Job& r = victim_facts->jobs[j];
      // Kueue's reclaim within a cohort: the victim's queue borrows, the preemptor's is within its
      // nominal quota; or, borrowing within the cohort, the victim has lower priority (under the
      // threshold when one is set).
      const bool cohort_rule =
          within_nominal ? (reclaim == CohortReclaim::kAny || r.priority < job.priority)
                         : (r.priority < job.priority &&
                            (!borrow.max_priority_threshold || r.priority <= *borrow.max_priority_threshold));
      if (borrows_in_cohort[v] && cohort_rule) {
        mark[j] = kReclaimableVictim;
        why[j] = EvictionReason::kCohortReclaim;
        continue;
      }
      if (above_nominal[v]) {
        const std::int64_t held = r.whole.freed_milli;
        // (used_Q + need) / w_Q <= (used_V - held) / w_V for the sibling subtrees Q and V above:
        // after the swap the preemptor's side is still no further above its share than the
        // victim's, so the reverse swap is never allowed. Cross-multiplied (no division rounding).
        const std::size_t cq = side_q[v], cv = side_v[v];
        const double after_q = static_cast<double>(subtree_gpu[cq] + need_gpu) * queues[cv].weight;
        const double after_v = static_cast<double>(subtree_gpu[cv] - held) * queues[cq].weight;
        if (held > 0 && after_q <= after_v) {
          mark[j] = kReclaimableVictim;
          why[j] = EvictionReason::kFairShare;
        }
      }
    }
    Preemptor pre{&flavored, job.queue, job.priority, job.submit_time};
    if (!fair) {
      // Without queues every job is in the one implicit queue, whatever its queue name says: the
      // within-queue rule decides for each, as if it were in the preemptor's queue.
      for (std::size_t j = 0; j < running.size(); ++j) {
        if (mark[j] == kExcludedVictim) continue;
        Preemptor same = pre;
        same.queue = running[j].queue;
        mark[j] = eligible_victim(running[j], same, now, options.preemption, false) ? kReclaimableVictim : kExcludedVictim;
      }
    }
    PreemptionOptions po = options.preemption;
    if (po.placement.capacity_cache == nullptr) po.placement.capacity_cache = options.placement.capacity_cache;
    if (fair && queues[q].within_queue) po.within_queue = *queues[q].within_queue;
    po.classify_refusal = false;  // the placement's own verdict stands (see below)
    PreemptionPlan plan = find_victims_with(state, pre, running, *victim_facts, po, mark);
    out.stats.placements_tried += plan.placements_tried;
    // Not placed: the placement's own verdict stands (find_victims' "infeasible" counts only the
    // running jobs, not the jobs this cycle has started).
    if (plan.verdict != Verdict::kPlaced) return plan.verdict;
    // The preemptor's quota with the victims' usage returned.
    Amounts placed = Amounts::Zero(dims);
    for (const TaskPlacement& t : plan.placement) fairness::task_usage(placed, state, dim_of_model, t.assignment);
    std::vector<std::pair<std::size_t, Amounts>> returned;
    const ClusterState::Checkpoint mark_state = state.checkpoint();
    for (const Victim& v : plan.victims) {
      const RunningJob& r = running[v.job];
      const std::uint32_t first = v.whole ? 0U : static_cast<std::uint32_t>(r.tasks.size()) - v.tasks_shed;  // its last tasks
      Amounts a = assignment_amounts(std::span<const RunningTask>(r.tasks).subspan(first));
      returned.emplace_back(queue_of(v.job), a);
      refund(queue_of(v.job), a);
    }
    bool borrows = false;
    if (fair) {
      const auto c = book->check(q, placed);
      if (!c.admitted()) {
        for (auto& [vq, a] : returned) charge(vq, a);
        at.outcome = Outcome::with(Verdict::kNotNow, quota_reason(c));
        return Verdict::kNotNow;
      }
      borrows = c.borrows;
    }
    // Evict (journaled), then take the simulated placement.
    for (const Victim& v : plan.victims) {
      const RunningJob& r = running[v.job];
      Eviction e;
      e.running = v.job;
      e.job = r.name;
      e.for_job = job.name;
      e.reason = queue_of(v.job) == q ? EvictionReason::kPriority : why[v.job];
      e.whole = v.whole;
      const std::uint32_t first = v.whole ? 0U : static_cast<std::uint32_t>(r.tasks.size()) - v.tasks_shed;
      for (std::uint32_t t = first; t < r.tasks.size(); ++t) {
        e.tasks.push_back(t);
        e.released.push_back(r.tasks[t].assignment);
        (void)state.release_journaled(r.tasks[t].assignment);
        queue_gpu_used[queue_of(v.job)] -=
            static_cast<std::int64_t>(r.tasks[t].assignment.gpus.size()) * r.tasks[t].assignment.gpu_milli;
      }
      e.lost_milli_gpu_seconds = v.lost_milli_gpu_seconds;
      e.restart_milli_gpu_seconds = v.restart_milli_gpu_seconds;
      victim_mark[v.job] = kExcludedVictim;
      out.evictions.push_back(std::move(e));
    }
    for (const TaskPlacement& t : plan.placement)
      if (!state.reserve(flavored.groups[t.group].request, t.assignment).ok()) {
        // Cannot happen (the placement was simulated on this very state); never leave half of it.
        state.rollback(mark_state);
        out.evictions.resize(out.evictions.size() - plan.victims.size());
        for (const Victim& v : plan.victims) victim_mark[v.job] = mark[v.job] == kExcludedVictim ? kExcludedVictim : kRulesOnly;
        for (auto& [vq, a] : returned) charge(vq, a);
        return Verdict::kNotNow;
      }
    failed.clear();  // capacity was freed: earlier failures prove nothing any more
    guard_memo.clear();
    Start s = make_start(p, flavored, plan.placement, {}, d, borrows);
    s.preempted = true;
    charge(q, assignment_amounts(s.tasks));
    queue_gpu_used[q] += gpu_total(assignment_amounts(s.tasks));
    if (options.preemptor_starts_next_cycle) {
      Nomination n{s.job, s.tasks, s.placed_per_group, {}};
      for (const Victim& v : plan.victims) n.victims.push_back(running[v.job].name);
      out.nominations.push_back(std::move(n));
    } else {
      out.starts.push_back(std::move(s));
    }
    at.started = true;
    return Verdict::kPlaced;
  }

  void wait(std::size_t p, Outcome o, const Attempt* at = nullptr, std::size_t behind = SIZE_MAX) {
    if (!explain && o.verdict == Verdict::kNotNow) return;
    if (o.verdict == Verdict::kNotNow) blame_guards(o);
    Waiting w;
    w.pending = p;
    w.job = pending[p].job.name;
    w.outcome = std::move(o);
    if (at) {
      w.preemption_tried = at->preemption_tried;
      w.preemption = at->preemption;
    }
    w.behind = behind;
    out.waiting.push_back(std::move(w));
  }

  // ---- stage 0 ----------------------------------------------------------------------------------
  bool is_nominated(std::size_t p) const { return std::binary_search(nominated.begin(), nominated.end(), p); }

  void honour(std::span<const Nomination> held) {
    if (held.empty()) return;
    std::unordered_map<std::string_view, std::size_t> by_name;
    for (std::size_t p = 0; p < pending.size(); ++p) by_name.emplace(pending[p].job.name, p);
    for (const Nomination& n : held) {
      auto it = by_name.find(n.job);
      if (it == by_name.end() || is_nominated(it->second)) continue;
      const std::size_t p = it->second;
      const ClusterState::Checkpoint mark = state.checkpoint();
      bool ok = true;
      for (const RunningTask& t : n.tasks)
        if (!state.reserve(t.request, t.assignment).ok()) {
          ok = false;
          break;
        }
      if (!ok) {
        state.rollback(mark);  // the capacity is gone (a failure): the job competes as usual
        continue;
      }
      Start s;
      s.pending = p;
      s.job = n.job;
      s.tasks = n.tasks;
      s.placed_per_group = n.placed_per_group;
      s.nominated = true;
      s.preempted = true;
      const Amounts a = assignment_amounts(s.tasks);
      for (Eigen::Index d = 2; d < dims; ++d)
        if (a[d] > 0) s.gpu_dim = static_cast<int>(d);
      if (fair) {
        const auto q = std::find_if(queues.begin(), queues.end(),
                                    [&](const fairness::QueueConfig& c) { return c.name == pending[p].job.queue; });
        if (q != queues.end()) {
          charge(static_cast<std::size_t>(q - queues.begin()), a);
          queue_gpu_used[static_cast<std::size_t>(q - queues.begin())] += gpu_total(a);
        }
      }
      out.starts.push_back(std::move(s));
      nominated.insert(std::lower_bound(nominated.begin(), nominated.end(), p), p);
    }
  }

  // ---- stage 3 ----------------------------------------------------------------------------------
  bool backfill_on() const { return options.backfill.mode != BackfillMode::kNone; }

  // The running work whose end the backfill profile can know: running jobs with an estimate (not
  // evicted or shrunk this cycle: their tasks are released now), each task's release at its job's
  // expected end on the grid (grid_end), by (that end, job index). Work without an estimate stays
  // on the state and holds its resources for ever, as the profile assumes of unknown estimates.
  // The filtered copy is kept between plans (conservative plans once per blocked job) until another
  // eviction changes it.
  std::span<const ReleaseEntry> running_profile() {
    const std::span<const ReleaseEntry> all = grid_releases();
    if (out.evictions.empty()) return all;  // (only an eviction excludes a job)
    if (running_releases_at == out.evictions.size()) return running_releases;
    running_releases_at = out.evictions.size();
    running_releases.clear();
    for (const ReleaseEntry& e : all)
      if (victim_mark[e.job] != kExcludedVictim) running_releases.push_back(e);
    return running_releases;
  }
  // Every running task's release on this cycle's grid: the session keeps them (kept->releases,
  // changed by each event and brought to this `now` before the cycle); a one-shot cycle makes them
  // here. The grid is absolute, so that a session need not round them again at every cycle.
  std::span<const ReleaseEntry> grid_releases() {
    if (kept != nullptr && kept->releases) return *kept->releases;
    if (own_releases.empty()) {
      const Seconds resolution = std::max<Seconds>(options.backfill.resolution, 1);
      std::vector<std::pair<Seconds, std::size_t>> order;
      for (std::size_t j = 0; j < running.size(); ++j)
        if (const std::optional<Seconds> end = estimated_end(running[j])) order.emplace_back(grid_end(*end, now, resolution), j);
      std::sort(order.begin(), order.end());
      add_job_releases(own_releases, running, order);
    }
    return own_releases;
  }
  // The releases read with running_profile() as one list: the session's fresh ones (less an
  // excluded victim's) and this cycle's starts with an estimate, as the profile releases them.
  std::vector<ReleaseEntry> more_releases() const {
    std::vector<ReleaseEntry> releases;
    if (kept != nullptr)
      for (const ReleaseEntry& e : kept->fresh_releases)
        if (out.evictions.empty() || victim_mark[e.job] != kExcludedVictim) releases.push_back(e);
    for (const Start& s : out.starts)
      if (const Seconds estimate = pending[s.pending].runtime_estimate; estimate > 0) {
        const Seconds end = grid_end(saturating_add_time(now, estimate), now, std::max<Seconds>(options.backfill.resolution, 1));
        add_releases(releases, end, s.tasks, UINT32_MAX);  // (not a running job)
      }
    return releases;
  }
  BackfillOptions backfill_options() const {
    BackfillOptions bo = options.backfill;
    bo.placement = options.placement;
    bo.explain = explain;
    return bo;
  }

  // A job that blocks: reserve it now and close its nodes to the rest of the cycle, so that no job
  // admitted after it can delay it. EASY does this for the first blocked job only; conservative for
  // every one up to the depth, each planned on the nodes the earlier ones left open (so it delays none
  // of them either). Stage 4 then plans all blocked jobs together on every node (backfill_stage).
  //
  // Conservative without reasons, queues or preemption defers them: a guard only closes nodes to
  // the jobs served after it, and a job that cannot start with some of the guards before it in
  // place cannot start with all of them (they only close more). So a guard is computed, in order,
  // only when a later job would start without it (admit_guarded), and the guards behind the last
  // job that starts, most of them in a contended queue, never are. (Stage 4's grows and a resumed
  // cycle take them in as they are needed too; the joint plan replaces them either way.) With
  // reasons, every guard is computed: a job kept off a guard's nodes says so (blame_guards).
  void guard(std::size_t p) {
    if (!backfill_on()) return;
    const bool conservative = options.backfill.mode == BackfillMode::kConservative;
    if (guards + deferred_guards.size() >= (conservative ? options.backfill.depth : std::size_t{1})) return;
    if (conservative && !explain && !fair && !options.preempt) {
      deferred_guards.push_back(p);
      return;
    }
    place_guard(p);
  }
  // Computes deferred guards, the first `count` of them, in order.
  void take_in_guards(std::size_t count = SIZE_MAX) {
    count = std::min(count, deferred_guards.size());
    for (std::size_t k = 0; k < count; ++k) place_guard(deferred_guards[k]);
    deferred_guards.erase(deferred_guards.begin(), deferred_guards.begin() + static_cast<std::ptrdiff_t>(count));
  }
  // admit() as if every deferred guard were in place: a job that would start without them is
  // taken back (its placement rolled back) and tried again with the next one in place, until it
  // cannot start or none is left. Without queues or preemption a start changes nothing else.
  Attempt admit_guarded(std::size_t p, std::size_t q, const GangSpec& spec) {
    for (;;) {
      const ClusterState::Checkpoint mark = state.checkpoint();
      const std::size_t starts = out.starts.size();
      Attempt at = admit(p, q, spec);
      if (!at.started || deferred_guards.empty()) return at;
      state.rollback(mark);
      out.starts.resize(starts);
      take_in_guards(1);
    }
  }
  void place_guard(std::size_t p) {
    ++guards;
    const BlockedJob b{&*specs[p], pending[p].runtime_estimate};
    BackfillOptions bo = backfill_options();
    bo.mode = BackfillMode::kEasy;
    const std::optional<ShapeKey> key = shape_key(*specs[p]);
    const std::int64_t replicas = key ? specs[p]->groups.front().replicas : 0;
    const Seconds duration = grid_duration(b.runtime_estimate, std::max<Seconds>(bo.resolution, 1));
    Seconds not_before = now;
    if (key)
      for (const GuardMemo& m : guard_memo)
        if (m.key == *key && m.replicas == replicas && m.duration <= duration) not_before = std::max(not_before, m.earliest);
    if (not_before == kForever) return;
    auto plan = plan_backfill_on(state, running_profile(), more_releases(), std::span<const BlockedJob>(&b, 1), now, bo, not_before);
    if (!plan) return;
    out.stats.placements_tried += plan->placements_tried;
    if (key) {
      Seconds earliest = kForever;
      if (!plan->startable.empty()) earliest = now;
      if (!plan->reservations.empty()) earliest = plan->reservations.front().start;
      guard_memo.push_back({*key, replicas, duration, earliest});
    }
    if (plan->reservations.empty()) return;
    const Reservation& r = plan->reservations.front();
    if (first_guard == SIZE_MAX) first_guard = out.reservations.size();
    out.reservations.push_back({p, pending[p].job.name, r.start, r.end, r.nodes()});
    for (NodeId n : r.nodes())
      if (!state.removed(n) && state.schedulable(n) && state.cordon(n).ok()) guard_cordoned.push_back(n);
  }

  // A node a reservation holds is closed (cordoned) while later jobs are tried: a job kept off it
  // waits for that reservation, not for an unschedulable node. Up to the number of closed nodes, the
  // "node unschedulable" count becomes kReservedForOther naming the first protected reservation's job
  // (subject: its pending index) and start (`needed`).
  void blame_guards(Outcome& o) const {
    if (guard_cordoned.empty() || first_guard >= out.reservations.size()) return;
    auto it = std::find_if(o.reasons.begin(), o.reasons.end(), [](const Reason& r) { return r.kind == ReasonKind::kNodeUnschedulable; });
    if (it == o.reasons.end()) return;
    const std::uint64_t held = std::min<std::uint64_t>(it->count, guard_cordoned.size());
    it->count -= held;
    if (it->count == 0) o.reasons.erase(it);
    const CycleReservation& r = out.reservations[first_guard];
    o.reasons.push_back({ReasonKind::kReservedForOther, Unit::kNone, r.start, -1, 0, static_cast<std::int32_t>(r.pending)});
  }

  void unguard() {
    for (NodeId n : guard_cordoned) (void)state.uncordon(n);
    guard_cordoned.clear();
    deferred_guards.clear();
    first_guard = SIZE_MAX;
  }

  // After stage 4: the blocked jobs planned together; those that fit without delaying a reservation
  // start now (within their queue's quota).
  void backfill_stage() {
    if (!backfill_on() || blocked.empty()) return;
    std::vector<std::size_t> cand;
    std::vector<BlockedJob> jobs;
    for (const BlockedPending& b : blocked) {
      if (!b.candidate) continue;  // StrictFIFO keeps its meaning; infeasible and invalid jobs wait
      // Without reasons the jobs past the plan's depth are not given to it: it would only record
      // that they were not tested (kBeyondDepth).
      if (!explain && cand.size() >= options.backfill.depth) break;
      cand.push_back(b.pending);
      jobs.push_back({&*specs[b.pending], pending[b.pending].runtime_estimate});
    }
    if (cand.empty()) return;
    // The kept plan is resumed when this cycle resumes the prefix and no job started before the plan:
    // a start (a new job that fit on the nodes the guards left open) is running work the plan meets.
    PlanPrefix* carry = keeps ? &kept->prefix->plan : nullptr;
    if (carry != nullptr && !out.starts.empty()) *carry = PlanPrefix{};
    BackfillOptions bo = backfill_options();
    bo.starts_only = !reserve;
    auto plan = plan_backfill_on(state, running_profile(), more_releases(), jobs, now, bo, 0, carry);
    if (!plan) return;
    planned = true;
    out.stats.placements_tried += plan->placements_tried;
    out.reservations.clear();
    if (reserve)
      for (const Reservation& r : plan->reservations)
        out.reservations.push_back({cand[r.job], pending[cand[r.job]].job.name, r.start, r.end, r.nodes()});
    std::vector<std::size_t> started;  // pending indices, ascending
    for (const BackfillStart& b : plan->startable) {
      const std::size_t p = cand[b.job];
      const std::size_t q = queue_of_pending[p];
      Start s = make_start(p, *specs[p], b.placement, {}, -1, false);
      const Amounts a = assignment_amounts(s.tasks);
      if (fair) {
        const auto c = book->check(q, a);
        if (!c.admitted()) continue;  // the quota says no: it keeps waiting with its reason
        s.borrowed = c.borrows;
      }
      for (Eigen::Index d = 2; d < dims; ++d)
        if (a[d] > 0) s.gpu_dim = static_cast<int>(d);
      const ClusterState::Checkpoint mark = state.checkpoint();
      bool ok = true;
      for (const RunningTask& t : s.tasks)
        if (!state.reserve(t.request, t.assignment).ok()) {
          ok = false;
          break;
        }
      if (!ok) {
        state.rollback(mark);
        continue;
      }
      s.backfilled = true;
      charge(q, a);
      queue_gpu_used[q] += gpu_total(a);
      out.starts.push_back(std::move(s));
      started.insert(std::lower_bound(started.begin(), started.end(), p), p);
    }
    if (carry != nullptr) {
      carry->reservations = std::move(plan->reservations);
      carry->waiting = std::move(plan->waiting);
    }
    if (!explain) return;  // no waiting records to amend
    std::unordered_map<std::size_t, std::size_t> waiting_of;  // pending index -> its waiting record
    for (std::size_t k = 0; k < out.waiting.size(); ++k) waiting_of.emplace(out.waiting[k].pending, k);
    for (const BackfillWait& w : plan->waiting) {
      const auto k = waiting_of.find(cand[w.job]);
      if (k == waiting_of.end()) continue;
      for (const Reason& r : w.reasons)
        if (r.kind == ReasonKind::kReservedForOther || r.kind == ReasonKind::kBeyondWindow || r.kind == ReasonKind::kBeyondDepth) {
          Reason copy = r;
          if (copy.kind == ReasonKind::kReservedForOther && copy.subject >= 0 && static_cast<std::size_t>(copy.subject) < cand.size())
            copy.subject = static_cast<std::int32_t>(cand[static_cast<std::size_t>(copy.subject)]);  // a pending index
          out.waiting[k->second].outcome.reasons.push_back(copy);
        }
    }
    std::erase_if(out.waiting, [&](const Waiting& w) { return std::binary_search(started.begin(), started.end(), w.pending); });
  }

  // ---- stage 4 ----------------------------------------------------------------------------------
  // On the nodes the guards leave open: the deferred ones are taken in when a job may grow.
  void grow_stage() {
    if (!options.grow_elastic) return;
    if (!kept || !kept->elastic || !kept->elastic->empty()) take_in_guards();
    grow();
  }
  void grow() {
    std::vector<std::size_t> order;
    auto consider = [&](std::size_t j) {
      const RunningJob& r = running[j];
      if (victim_mark[j] != kExcludedVictim && !r.tasks.empty() && r.max_tasks > static_cast<std::int32_t>(r.tasks.size()))
        order.push_back(j);
    };
    if (kept != nullptr && kept->elastic != nullptr) {  // a session knows which jobs may ever grow
      for (const std::size_t j : *kept->elastic) consider(j);
    } else {
      for (std::size_t j = 0; j < running.size(); ++j) consider(j);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (running[a].priority != running[b].priority) return running[a].priority > running[b].priority;
      if (running[a].queued_since() != running[b].queued_since()) return running[a].queued_since() < running[b].queued_since();
      return a < b;
    });
    for (std::size_t j : order) {
      const RunningJob& r = running[j];
      // The GPUs it grows on are of the model it runs on (one flavor per job).
      const Eigen::Index d = gpu_dim_of(state, dim_of_model, r.tasks.back().assignment);
      Grow gr{j, r.name, {}, {}};
      for (const ElasticGroup& g : r.groups) gr.groups.push_back(g.name);
      if (r.groups.empty()) {
        grow_group(j, r.tasks.back().request, r.max_tasks - static_cast<std::int32_t>(r.tasks.size()), 0, d, gr);
      } else {
        // Each group below its replicas, in the job's order, with its own request.
        std::vector<std::int32_t> held(r.groups.size(), 0);
        for (const RunningTask& t : r.tasks)
          if (t.group < held.size()) ++held[t.group];
        for (std::size_t k = 0; k < r.groups.size(); ++k)
          grow_group(j, r.groups[k].request, r.groups[k].max_tasks - held[k], static_cast<std::uint32_t>(k), d, gr);
      }
      if (!gr.tasks.empty()) out.grows.push_back(std::move(gr));
    }
  }

  // Adds up to `want` tasks of `request` (GPUs of dimension d's model) to running job j's group
  // `group`, within its queue's quota, into `gr`.
  void grow_group(std::size_t j, TaskRequest request, std::int32_t want, std::uint32_t group, Eigen::Index d, Grow& gr) {
    if (d >= 0) request.models &= model_bit(model_of_dim[static_cast<std::size_t>(d)]);
    if (fair) {
      Amounts one = Amounts::Zero(dims);
      one[fairness::ResourceSpace::kCpu] = request.shape.cpu;
      one[fairness::ResourceSpace::kMemory] = request.shape.memory;
      if (d >= 0) one[d] = request.shape.total_gpu_milli();
      while (want > 0 && !book->check(queue_of(j), (one * want).eval()).admitted()) --want;
    }
    if (want <= 0) return;
    GangSpec spec;
    spec.name = running[j].name;
    spec.groups.push_back({"grow", want, 1, request});
    GangResult g = place(spec);
    if (!g.placed()) return;
    std::vector<RunningTask> added;
    for (const TaskPlacement& t : g.tasks) added.push_back({request, t.assignment, group});
    const Amounts a = assignment_amounts(added);
    charge(queue_of(j), a);
    queue_gpu_used[queue_of(j)] += gpu_total(a);
    gr.tasks.insert(gr.tasks.end(), added.begin(), added.end());
  }

  // ---- the cycle --------------------------------------------------------------------------------
  // Why pending job p cannot be queued (kOther: its gang spec; kNoSuchQueue, kNotLeafQueue), or its
  // queue index.
  struct Queuing {
    bool queued = true;
    ReasonKind invalid = ReasonKind::kOther;  // when not queued
    std::size_t queue = 0;
  };
  Queuing queuing(std::size_t p) const {
    if (!specs[p]) return {false, specs[p].error().code == ErrorCode::kOverflow ? ReasonKind::kInvalidAmount : ReasonKind::kOther};
    if (!fair) return {};
    const std::optional<std::size_t> found = tree->find(pending[p].job.queue);
    if (!found) return {false, ReasonKind::kNoSuchQueue};
    if (!is_leaf(*found)) return {false, ReasonKind::kNotLeafQueue};
    return {true, ReasonKind::kOther, *found};
  }
  bool backing_off(std::size_t p) const { return pending[p].not_before > now; }

  // Specs, queue membership in policy order, and the records of the jobs that wait before any is
  // served (invalid; and, with reasons, those backing off), in pending order.
  void queue_up() {
    const std::size_t np = pending.size();
    queue_of_pending.assign(np, 0);
    if (kept != nullptr) {
      specs = kept->specs;
      members = kept->members;
    } else {
      own_specs.reserve(np);
      for (std::size_t p = 0; p < np; ++p) own_specs.push_back(pending_spec(pending[p].job));
      specs = own_specs;
      own_members.assign(queue_count(), {});
      for (std::size_t p = 0; p < np; ++p)
        if (const Queuing qu = queuing(p); qu.queued) own_members[qu.queue].push_back(p);
      std::vector<std::int64_t> order_key(np, 0);
      if (options.order)
        for (std::size_t p = 0; p < np; ++p) order_key[p] = options.order->key(pending[p]);
      for (auto& m : own_members)
        std::sort(m.begin(), m.end(), [&](std::size_t a, std::size_t b) {
          return detail::queue_order_before(pending[a], a, order_key[a], pending[b], b, order_key[b]);
        });
      members = own_members;
    }
    for (std::size_t q = 0; q < members.size(); ++q)
      for (std::size_t p : members[q]) queue_of_pending[p] = q;
    const auto record = [&](std::size_t p) {
      if (is_nominated(p)) return;
      const Queuing qu = queuing(p);
      if (!qu.queued) wait(p, Outcome::with(Verdict::kInvalid, {qu.invalid}));
      else if (backing_off(p))
        wait(p, Outcome::with(Verdict::kNotNow, {ReasonKind::kBackoff, Unit::kNone, pending[p].not_before, now}));
    };
    if (explain || kept == nullptr) {
      for (std::size_t p = 0; p < np; ++p) record(p);
    } else {
      for (std::size_t p : kept->unqueued) record(p);  // without reasons only the invalid ones wait on record
    }
  }

  // ---- the prefix a session keeps (cycle.hpp, CyclePrefix) ----------------------------------------
  // Whether this cycle keeps a prefix, and the last one's resumed when the session says it may be:
  // the queue's members served already (0: none).
  std::size_t take_up_prefix(std::span<const Nomination> held) {
    queued_records = out.waiting.size();
    keeps = kept != nullptr && kept->prefix != nullptr && !fair && held.empty() && !explain && !options.preempt &&
            !options.dry_run;
    const std::size_t served = keeps && kept->resume ? resume_prefix() : 0;
    if (kept != nullptr && kept->prefix != nullptr) kept->prefix->ready = false;  // (until this cycle has filled it)
    return served;
  }
  bool decided_nothing() const {
    return out.starts.empty() && out.evictions.empty() && out.grows.empty() && out.nominations.empty();
  }
  // Takes up the last cycle's prefix: its serving of the queue's first members as it left the cycle
  // (records, blocked jobs, guards with their nodes closed again, memos). Returns how many members
  // it served (0, and nothing taken, when the queue no longer begins with them).
  std::size_t resume_prefix() {
    CyclePrefix& k = *kept->prefix;
    const std::vector<std::size_t>& m = members[0];
    if (!k.ready || k.order.size() > m.size() || !std::equal(k.order.begin(), k.order.end(), m.begin())) return 0;
    resuming = true;
    out.waiting.insert(out.waiting.end(), k.waiting.begin(), k.waiting.end());
    blocked = std::move(k.blocked);
    guards = k.guards;
    guard_cordoned = std::move(k.guard_cordoned);
    for (NodeId n : guard_cordoned) (void)state.cordon(n);  // (the same state: they were open before the guards)
    guard_memo = std::move(k.guard_memo);
    deferred_guards = std::move(k.deferred_guards);
    failed = std::move(k.failed);
    out.stats = k.stats;
    out.stats.resumed = k.order.size();
    held_by_head = k.held_by_head;
    return held_by_head ? m.size() : k.order.size();  // (behind a blocked StrictFIFO head, new jobs wait too)
  }
  // Keeps what serving the queue left, for the next cycle to resume (the plan's part: backfill_stage).
  // Its guards' reservations are not kept: when there are guards, the plan replaces them.
  void keep_served() {
    CyclePrefix& k = *kept->prefix;
    k.now = now;
    k.order.assign(members[0].begin(), members[0].end());
    k.waiting.assign(out.waiting.begin() + static_cast<std::ptrdiff_t>(queued_records), out.waiting.end());
    k.blocked = blocked;
    k.guards = guards;
    k.guard_cordoned = guard_cordoned;
    k.guard_memo = guard_memo;
    k.deferred_guards = deferred_guards;
    k.failed = failed;
    k.stats = out.stats;
    k.held_by_head = held_by_head;
    if (!resuming) k.plan = PlanPrefix{};
  }

  // Steps queue q's head past the jobs that are not served this cycle (nominated, backing off).
  void skip_unserved(std::size_t q, std::vector<std::size_t>& head) const {
    const std::vector<std::size_t>& m = members[q];
    while (head[q] < m.size() && (backing_off(m[head[q]]) || is_nominated(m[head[q]]))) ++head[q];
  }

  void run(std::span<const Nomination> held) {
    honour(held);
    queue_up();
    const std::size_t nq = queue_count();
    std::vector<std::size_t> head(nq, 0);
    head[0] = take_up_prefix(held);

    Amounts need;  // head_tier's request, its buffer reused (an allocation per served job)
    // The head's tier (fairness::head_tier) on its smallest request: an elastic job starts at its
    // minimum when its quota does not hold more (check_quota).
    auto tier_of = [&](std::size_t q) -> std::optional<std::uint8_t> {
      if (head[q] >= members[q].size()) return std::nullopt;
      const std::size_t p = members[q][head[q]];
      const GangSpec& spec = *specs[p];
      return fairness::head_tier(flavors(q, spec), [&](Eigen::Index d) {
        job_amounts_into(need, pending[p].job, dims, d, true);
        return book->within_nominal(q, need);
      });
    };
    auto refresh = [&](std::size_t q) {
      if (!fair) return;
      skip_unserved(q, head);
      order->update(q, nullptr, tier_of(q));
    };
    for (std::size_t q = 0; q < nq; ++q)
      if (is_leaf(q)) refresh(q);

    auto serve = [&](std::size_t q) {
      const std::size_t p = members[q][head[q]++];
      Attempt at;
      if (!explain && known_to_wait(p, q, *specs[p])) at.outcome.verdict = Verdict::kNotNow;
      else at = admit_guarded(p, q, *specs[p]);
      if (!at.started) {
        wait(p, at.outcome, &at);
        blocked.push_back({p, at.outcome.verdict == Verdict::kNotNow});
        if (at.outcome.verdict == Verdict::kNotNow) guard(p);
        if (fair ? queues[q].strict_fifo : options.strict_fifo) {
          // Everyone behind the head waits for it (only on record: they are not planned either).
          for (; explain && head[q] < members[q].size(); ++head[q]) {
            const std::size_t b = members[q][head[q]];
            if (backing_off(b) || is_nominated(b)) continue;
            wait(b, Outcome::with(Verdict::kNotNow, {ReasonKind::kBehindStrictHead, Unit::kNone, -1, -1, 0,
                                                     static_cast<std::int32_t>(p)}), nullptr, p);
          }
          head[q] = members[q].size();
          held_by_head = true;
        }
      }
      refresh(q);
    };
    if (fair) {
      while (const std::optional<std::size_t> q = order->pick()) {
        skip_unserved(*q, head);
        if (head[*q] >= members[*q].size()) {
          order->block(*q);
          continue;
        }
        serve(*q);
      }
    } else {
      for (skip_unserved(0, head); head[0] < members[0].size(); skip_unserved(0, head)) serve(0);
    }
    if (keeps) keep_served();

    // Stage 4 on the nodes the protected reservation leaves open, then stage 3's plan over every
    // blocked job (backfill.hpp): reservations, and the starts that delay none of them.
    grow_stage();
    const bool guarded = guards > 0 || !deferred_guards.empty();
    unguard();
    backfill_stage();
    if (keeps) kept->prefix->ready = decided_nothing() && (!guarded || planned);

    // Nominated placements were reserved to hold them through this cycle; between cycles they are
    // free again and the next cycle's stage 0 takes them first.
    if (!options.dry_run)
      for (const Nomination& n : out.nominations)
        for (const RunningTask& t : n.tasks) (void)state.release(t.assignment);
  }
};

}  // namespace detail

GPUSCHED_DECL Status check_cycle_time(Seconds now) {
  if (now >= 0 && now <= kMaxCycleTime) return {};
  return Error{"now: expected seconds in [0, " + std::to_string(kMaxCycleTime) + "], got " + std::to_string(now),
               ErrorCode::kInvalidValue, "now"};
}

GPUSCHED_DECL Result<CycleDecisions> detail::run_cycle_with(ClusterState& state, std::span<const RunningJob> running,
                                                       std::span<const PendingJob> pending,
                                                       std::span<const fairness::QueueConfig> queues, Seconds now,
                                                       const CycleOptions& options, std::span<const Nomination> held,
                                                       const CycleKept* kept, CycleDetail detail) {
  if (Status st = check_cycle_time(now); !st) return st.error();
  const ClusterState::Checkpoint base = state.checkpoint();
  // One capacity-at-empty summary for the cycle's gangs when the caller keeps none (a gang that
  // does not fit now is classified against it: one node pass per cycle, not one per gang).
  GangCapacityCache cycle_cache;
  const CycleOptions* opts = &options;
  CycleOptions with_cache;
  if (options.placement.capacity_cache == nullptr) {
    with_cache = options;
    with_cache.placement.capacity_cache = &cycle_cache;
    opts = &with_cache;
  }
  detail::CycleRun run(state, running, pending, queues, now, *opts, kept, detail);
  if (Status s = run.setup(); !s) return s.error();
  run.out.now = now;
  run.run(held);
  if (detail == CycleDetail::kActions) run.out.reservations.clear();  // (the guards' of a cycle that made no plan)
  for (const Eviction& e : run.out.evictions)
    if (Status s = detail::check_eviction_work(e, now); !s) {
      state.rollback(base);
      return s.error();
    }
  // A placement policy running user code failed (packing/score_function.hpp): it refused every node
  // from the failure on, so the decisions are not the policy's. None is kept; the error says why.
  if (const PlacementPolicy* p = options.placement.policy; p && !p->failure().empty()) {
    state.rollback(base);
    return Error{"placement policy \"" + std::string(p->name()) + "\" failed: " + std::string(p->failure()),
                 ErrorCode::kInvalidValue, "placement.policy"};
  }
  if (const JobOrder* o = options.order; o && !o->failure().empty()) {
    state.rollback(base);
    return Error{"job order \"" + std::string(o->name()) + "\" failed: " + std::string(o->failure()),
                 ErrorCode::kInvalidValue, "order"};
  }
  if (const VictimOrder* o = options.preemption.victim_order; o && !o->failure().empty()) {
    state.rollback(base);
    return Error{"victim order \"" + std::string(o->name()) + "\" failed: " + std::string(o->failure()),
                 ErrorCode::kInvalidValue, "preemption.victim_order"};
  }
  if (options.dry_run) state.rollback(base);
  else if (base == 0) state.commit();
  return std::move(run.out);
}

GPUSCHED_DECL Result<CycleDecisions> run_cycle(ClusterState& state, std::span<const RunningJob> running,
                                        std::span<const PendingJob> pending,
                                        std::span<const fairness::QueueConfig> queues, Seconds now,
                                        const CycleOptions& options, std::span<const Nomination> held) {
  return detail::run_cycle_with(state, running, pending, queues, now, options, held, nullptr, CycleDetail::kFull);
}

GPUSCHED_DECL Status apply(ClusterState& state, const CycleDecisions& decisions) {
  const ClusterState::Checkpoint base = state.checkpoint();
  auto fail = [&](const Status& s, const std::string& what) -> Status {
    state.rollback(base);
    return Error{what + ": " + s.error().message, ErrorCode::kState, what};
  };
  for (const Eviction& e : decisions.evictions)
    for (const TaskAssignment& a : e.released)
      if (Status s = state.release_journaled(a); !s) return fail(s, "evictions[" + e.job + "]");
  for (const Start& st : decisions.starts)
    for (const RunningTask& t : st.tasks)
      if (Status s = state.reserve(t.request, t.assignment); !s) return fail(s, "starts[" + st.job + "]");
  for (const Grow& g : decisions.grows)
    for (const RunningTask& t : g.tasks)
      if (Status s = state.reserve(t.request, t.assignment); !s) return fail(s, "grows[" + g.job + "]");
  if (base == 0) state.commit();
  return {};
}

GPUSCHED_DECL RunningJob running_from_start(const PendingJob& p, const Start& start, Seconds now) {
  RunningJob r;
  r.name = p.job.name;
  r.queue = p.job.queue;
  r.priority = p.job.priority;
  r.start_time = now;
  r.restart_cost = p.restart_cost;
  r.preemptible = p.preemptible;
  r.submit_time = p.job.submit_time;
  r.checkpoint_interval = p.checkpoint_interval;
  r.runtime_estimate = p.runtime_estimate;
  r.restarts = p.restarts;
  r.evicted_by = p.evicted_by;
  // Tasks a group needs (replica < min_replicas) first, the elastic extras last: the extras are
  // what a shrink sheds and what a grow adds (of the last extra's request).
  bool elastic = false;
  std::int32_t max_tasks = 0;
  for (const CompiledGroup& g : p.job.groups) {
    elastic = elastic || g.min_replicas < g.replicas;
    max_tasks += g.replicas;
  }
  std::vector<RunningTask> core, extra;
  std::vector<std::int32_t> seen(p.job.groups.size(), 0);
  for (std::size_t i = 0; i < start.tasks.size(); ++i) {
    // Tasks arrive group by group in placement order (a nomination carried across cycles says how
    // many of each, not which): count per group by their place.
    std::size_t g = 0;
    std::int32_t budget = 0;
    for (std::size_t k = 0; k < start.placed_per_group.size(); ++k) {
      budget += start.placed_per_group[k];
      if (static_cast<std::int32_t>(i) < budget) {
        g = k;
        break;
      }
    }
    RunningTask t = start.tasks[i];
    t.group = static_cast<std::uint32_t>(g);
    const std::int32_t min = g < p.job.groups.size() ? p.job.groups[g].min_replicas : 0;
    if (!elastic || seen[g]++ < min) core.push_back(std::move(t));
    else extra.push_back(std::move(t));
  }
  r.tasks = std::move(core);
  if (elastic) r.min_tasks = static_cast<std::int32_t>(r.tasks.size());
  r.tasks.insert(r.tasks.end(), extra.begin(), extra.end());
  if (elastic) r.max_tasks = max_tasks;
  if (elastic && p.job.groups.size() > 1)
    for (const CompiledGroup& g : p.job.groups) r.groups.push_back({g.name, g.request, g.replicas});
  return r;
}

GPUSCHED_DECL void advance(std::vector<RunningJob>& running, std::vector<PendingJob>& pending, const CycleDecisions& decisions,
                    std::span<const PendingJob> requeue_of) {
  std::vector<char> drop_running(running.size(), 0), drop_pending(pending.size(), 0);
  std::vector<PendingJob> requeued;
  for (const Eviction& e : decisions.evictions) {
    if (e.running >= running.size()) continue;
    if (e.whole) {
      drop_running[e.running] = 1;
      for (const PendingJob& p : requeue_of)
        if (p.job.name == e.job) {
          requeued.push_back(p);
          requeued.back().evicted_by = running[e.running].evicted_by;
          requeued.back().restarts = running[e.running].restarts;
          if (!e.for_job.empty()) requeued.back().evicted_by.push_back(e.for_job);
          break;
        }
    } else {
      std::vector<std::uint32_t> idx = e.tasks;
      std::sort(idx.rbegin(), idx.rend());
      for (std::uint32_t t : idx)
        if (t < running[e.running].tasks.size()) running[e.running].tasks.erase(running[e.running].tasks.begin() + t);
    }
  }
  for (const Grow& g : decisions.grows)
    if (g.running < running.size())
      running[g.running].tasks.insert(running[g.running].tasks.end(), g.tasks.begin(), g.tasks.end());
  std::vector<RunningJob> started;
  for (const Start& s : decisions.starts)
    if (s.pending < pending.size()) {
      started.push_back(running_from_start(pending[s.pending], s, decisions.now));
      drop_pending[s.pending] = 1;
    }
  std::vector<RunningJob> kept_running;
  for (std::size_t j = 0; j < running.size(); ++j)
    if (!drop_running[j]) kept_running.push_back(std::move(running[j]));
  for (RunningJob& r : started) kept_running.push_back(std::move(r));
  running = std::move(kept_running);
  std::vector<PendingJob> kept_pending;
  for (std::size_t p = 0; p < pending.size(); ++p)
    if (!drop_pending[p]) kept_pending.push_back(std::move(pending[p]));
  for (PendingJob& p : requeued) kept_pending.push_back(std::move(p));
  pending = std::move(kept_pending);
}

// --- failures ------------------------------------------------------------------------------------

namespace detail {
// A job stopped by a failure restarts after an exponential backoff: base * 2^(restarts - 1), capped
// (the shift is bounded so it cannot overflow).
GPUSCHED_DECL Restart restart_after_failure(const Eviction& e, const RunningJob& r, Seconds now, const FailureOptions& options) {
  Restart rs;
  rs.running = e.running;
  rs.job = r.name;
  rs.lost_milli_gpu_seconds = e.lost_milli_gpu_seconds;
  rs.restart_milli_gpu_seconds = e.restart_milli_gpu_seconds;
  rs.restarts = r.restarts + 1;
  const int shift = std::min(rs.restarts - 1, 30);
  const Seconds backoff = std::min(options.backoff_max, saturating_mul(options.backoff_base, Seconds{1} << shift));
  rs.not_before = saturating_add(now, backoff);
  return rs;
}

// The node's failure at `now` joins its history (failures older than the window forgotten); true when
// it has failed cordon_after times within the window.
GPUSCHED_DECL bool note_failure(FailureHistory& history, std::string_view node, Seconds now, const FailureOptions& options) {
  auto it = std::find_if(history.nodes.begin(), history.nodes.end(), [&](const auto& e) { return e.first == node; });
  if (it == history.nodes.end()) {
    history.nodes.push_back({std::string(node), {}});
    it = history.nodes.end() - 1;
  }
  std::erase_if(it->second, [&](Seconds t) { return t <= now - options.window; });
  it->second.push_back(now);
  return static_cast<std::int32_t>(it->second.size()) >= options.cordon_after;
}
}  // namespace detail

GPUSCHED_DECL Result<FailureResponse> on_failure(ClusterState& state, std::span<const RunningJob> running, NodeId node, int gpu,
                                          Seconds now, FailureHistory& history, const FailureOptions& options) {
  if (node >= state.node_count() || state.removed(node))
    return Error{"node: unknown node id " + std::to_string(node), ErrorCode::kUnknownName, "node"};
  if (gpu >= static_cast<int>(state.gpu_count(node)))
    return Error{"gpu: node " + std::string(state.node_name(node)) + " has " + std::to_string(state.gpu_count(node)) +
                     " GPUs, got index " + std::to_string(gpu),
                 ErrorCode::kInvalidValue, "gpu"};
  // The same clock as a cycle's (not_before = now + backoff must not wrap).
  if (Status st = check_cycle_time(now); !st) return st.error();
  // The response is worked out before anything changes: a refused one (its work beyond 64 bits)
  // leaves the state as it was.
  FailureResponse out;
  std::vector<TaskAssignment> released;  // in the order the tasks are found (the state's journal order)
  auto hit = [&](const TaskAssignment& a) {
    if (a.node != node) return false;
    if (gpu < 0) return true;
    return std::find(a.gpus.begin(), a.gpus.end(), static_cast<GpuIndex>(gpu)) != a.gpus.end();
  };
  for (std::size_t j = 0; j < running.size(); ++j) {
    const RunningJob& r = running[j];
    std::vector<std::uint32_t> affected;
    for (std::uint32_t t = 0; t < r.tasks.size(); ++t)
      if (hit(r.tasks[t].assignment)) affected.push_back(t);
    if (affected.empty()) continue;
    Eviction e;
    e.running = j;
    e.job = r.name;
    e.reason = EvictionReason::kFailure;
    const bool shrink = r.min_tasks >= 0 && r.tasks.size() - affected.size() >= static_cast<std::size_t>(r.min_tasks) &&
                        r.tasks.size() > affected.size();
    if (shrink) {
      e.whole = false;
      e.tasks = affected;
    } else {
      e.tasks.resize(r.tasks.size());
      std::iota(e.tasks.begin(), e.tasks.end(), 0U);
    }
    for (std::uint32_t t : e.tasks) {
      e.released.push_back(r.tasks[t].assignment);
      released.push_back(r.tasks[t].assignment);
      e.lost_milli_gpu_seconds = detail::saturating_add(e.lost_milli_gpu_seconds, lost_work(r, t, 1, now));
      if (!shrink) e.restart_milli_gpu_seconds = detail::saturating_add(e.restart_milli_gpu_seconds, restart_work(r, t, 1));
    }
    if (Status st = detail::check_eviction_work(e, now); !st) return st.error();
    if (shrink) {
      out.shrinks.push_back(std::move(e));
      continue;
    }
    out.restarts.push_back(detail::restart_after_failure(e, r, now, options));
    out.stopped.push_back(std::move(e));
  }
  if (gpu < 0) {
    if (state.healthy(node)) {
      auto r = state.fail_node(node);
      if (!r) return r.error();
    }
  } else if (Status s = state.set_gpu_health(node, static_cast<std::size_t>(gpu), false); !s) {
    return s.error();
  }
  for (const TaskAssignment& a : released) (void)state.release(a);
  if (options.cordon_after > 0 && detail::note_failure(history, state.node_name(node), now, options) && state.schedulable(node))
    if (Status s = state.cordon(node); s) out.cordoned.push_back(node);
  return out;
}

GPUSCHED_DECL void apply_failure(std::vector<RunningJob>& running, std::vector<PendingJob>& pending,
                          const FailureResponse& response, std::span<const PendingJob> requeue_of) {
  std::vector<char> drop(running.size(), 0);
  for (const Eviction& e : response.shrinks) {
    if (e.running >= running.size()) continue;
    std::vector<std::uint32_t> idx = e.tasks;
    std::sort(idx.rbegin(), idx.rend());
    for (std::uint32_t t : idx)
      if (t < running[e.running].tasks.size()) running[e.running].tasks.erase(running[e.running].tasks.begin() + t);
  }
  for (const Restart& r : response.restarts) {
    if (r.running >= running.size()) continue;
    drop[r.running] = 1;
    for (const PendingJob& p : requeue_of)
      if (p.job.name == r.job) {
        PendingJob q = p;
        q.evicted_by = running[r.running].evicted_by;
        q.not_before = r.not_before;
        q.restarts = r.restarts;
        pending.push_back(std::move(q));
        break;
      }
  }
  std::vector<RunningJob> kept;
  for (std::size_t j = 0; j < running.size(); ++j)
    if (!drop[j]) kept.push_back(std::move(running[j]));
  running = std::move(kept);
}

}  // namespace gpusched::scheduler
