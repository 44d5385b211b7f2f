// gpusched/fairness/detail/admission_impl.hpp — the definitions behind gpusched/fairness/admission.hpp.
//
// Included at the end of admission.hpp, so a consumer compiles the fairness family with its own
// code and links no gpusched library (issue 11);
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/fairness/admission.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <cstdio>
#include <numeric>
#include <utility>

#include "gpusched/fairness/detail/text.hpp"

#include "gpusched/core/quantity.hpp"
#include "gpusched/fairness/hdrf.hpp"

namespace gpusched::fairness {

GPUSCHED_DECL std::int64_t aging_boost(const CompiledJob& job, const AgingPolicy& aging) {
  if (aging.interval <= 0 || aging.step <= 0 || aging.max_boost <= 0 || job.submit_time >= aging.now) return 0;
  // now - submit_time can exceed INT64_MAX (now huge, submit far negative): such a wait is longer
  // than any the boost distinguishes, so it saturates instead of wrapping to a negative wait.
  std::int64_t waited = 0;
  if (__builtin_sub_overflow(aging.now, job.submit_time, &waited)) waited = std::numeric_limits<std::int64_t>::max();
  const std::int64_t steps = waited / aging.interval;
  if (steps == 0) return 0;  // no step elapsed: no boost is due, however small max_boost / step is
  // steps · step > max_boost exactly when steps > floor(max_boost / step): compared without forming
  // the product, which could overflow.
  if (steps > aging.max_boost / aging.step) return aging.max_boost;
  return steps * aging.step;
}

namespace detail {
// priority + aging boost into `out`; false when the sum overflows (then `out` is unspecified).
GPUSCHED_DECL bool fairness_add_priority(const CompiledJob& job, const AgingPolicy& aging, std::int64_t& out) {
  return !__builtin_add_overflow(std::int64_t{job.priority}, aging_boost(job, aging), &out);
}
}  // namespace detail

GPUSCHED_DECL Result<std::int64_t> checked_effective_priority(const CompiledJob& job, const AgingPolicy& aging) {
  std::int64_t out = 0;
  if (!detail::fairness_add_priority(job, aging, out))
    return detail::fairness_error(ErrorCode::kOverflow,
                                  detail::fairness_text("priority: ", job.priority, " plus an aging boost of ",
                                                        aging_boost(job, aging), " exceeds the largest priority (",
                                                        std::numeric_limits<std::int64_t>::max(), ")"));
  return out;
}

namespace detail {

// Partial admission (admission.hpp): the replicas group g keeps at step s of S.
GPUSCHED_DECL std::int32_t replica_group_max(const CompiledGroup& g) { return std::max<std::int32_t>(0, g.replicas); }
GPUSCHED_DECL std::int32_t replica_group_min(const CompiledGroup& g) {
  return g.min_replicas < 0 ? replica_group_max(g) : std::min(g.min_replicas, replica_group_max(g));
}
// A task's GPU share: gpus x gpu_milli (0 for a task without GPUs; its product checked by job_demand).
GPUSCHED_DECL std::int64_t task_gpu_milli(const TaskShape& s) { return s.needs_gpu() ? std::int64_t{s.gpus} * s.gpu_milli : 0; }

}  // namespace detail

GPUSCHED_DECL JobDemand job_demand(const CompiledJob& job, ReplicaBound bound) {
  JobDemand d;
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    const CompiledGroup& group = job.groups[g];
    const TaskShape& s = group.request.shape;
    std::int64_t n = group.replicas;
    const auto fail = [&](const char* field, bool overflow, std::int64_t value) {
      d.problem = RequestProblem{g, field, overflow, n, value};
      return d;
    };
    if (n < 0) return fail("replicas", false, n);
    if (bound == ReplicaBound::kLeast) n = detail::replica_group_min(group);
    for (const auto& [field, value] : {std::pair<const char*, std::int64_t>{"cpu", s.cpu}, {"memory", s.memory},
                                       {"gpus", s.gpus}, {"gpu_milli", s.gpu_milli}})
      if (value < 0) return fail(field, false, value);
    std::int64_t per_task_gpu = 0, product = 0;
    if (s.needs_gpu() && __builtin_mul_overflow(std::int64_t{s.gpus}, s.gpu_milli, &per_task_gpu))
      return fail("gpus", true, s.gpus);
    if (__builtin_mul_overflow(s.cpu, n, &product) || __builtin_add_overflow(d.cpu, product, &d.cpu)) return fail("cpu", true, s.cpu);
    if (__builtin_mul_overflow(s.memory, n, &product) || __builtin_add_overflow(d.memory, product, &d.memory))
      return fail("memory", true, s.memory);
    if (__builtin_mul_overflow(per_task_gpu, n, &product) || __builtin_add_overflow(d.gpu_milli, product, &d.gpu_milli))
      return fail("gpus", true, per_task_gpu);
    if (s.needs_gpu() && n > 0 && group.request.models != kAnyGpuModel) {
      d.models &= group.request.models;
      d.names_models = true;
    }
    d.elastic = d.elastic || detail::replica_group_min(group) < detail::replica_group_max(group);
  }
  return d;
}

GPUSCHED_DECL RequestProblem request_problem(const CompiledJob& job) { return job_demand(job).problem; }

GPUSCHED_DECL std::int64_t effective_priority(const CompiledJob& job, const AgingPolicy& aging) {
  std::int64_t out = 0;
  return detail::fairness_add_priority(job, aging, out) ? out : std::numeric_limits<std::int64_t>::max();
}

GPUSCHED_DECL Result<FairSharePlanner> FairSharePlanner::build(ResourceSpace space, Amounts capacity, Amounts free,
                                                 std::vector<QueueConfig> queues, const GpuModelRegistry* registry) {
  const Eigen::Index m = space.size();
  if (capacity.size() != m || free.size() != m)
    return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("capacity: expected ", m, " dimensions, got ", capacity.size(), " (free ", free.size(), ")"));
  for (Eigen::Index r = 0; r < m; ++r)
    if (capacity[r] < 0 || free[r] < 0 || free[r] > capacity[r])
      return detail::fairness_error(ErrorCode::kInconsistent, detail::fairness_text("capacity: ", space.name(r), " has capacity ", capacity[r], " and free ", free[r], " (expected 0 <= free <= capacity)"));
  auto tree = QueueTree::build(space, queues);
  if (!tree) return tree.error();
  FairSharePlanner p;
  p.tree_ = std::move(*tree);
  for (std::size_t q = 0; q < queues.size(); ++q) {  // (the usage given: the planner's own input)
    if (!p.tree_.leaf(q) && queues[q].usage.size() != 0) return detail::internal_queue_error(q, queues[q]);
    if (queues[q].usage.size() != 0 && queues[q].usage.size() != static_cast<std::size_t>(m))
      return detail::fairness_error(ErrorCode::kInvalidValue, detail::fairness_text("queues[", q, "] (", queues[q].name, ").usage: expected ", m, " dimensions, got ", queues[q].usage.size()));
  }
  std::vector<QueueQuota> quotas;
  for (const QueueConfig& queue : queues)
    quotas.push_back(queue_quota(queue));
  auto book = QuotaBook::build(static_cast<std::size_t>(m), std::move(quotas));
  if (!book) return book.error();
  p.book_ = std::move(book.value());
  for (std::size_t q = 0; q < queues.size(); ++q)
    if (queues[q].usage.size() == static_cast<std::size_t>(m)) p.book_.admit(q, amounts_of(queues[q].usage));
  // The jobs' model ids as flavors: the registry's by name, else the space's own order.
  if (registry != nullptr) {
    p.dim_of_model_ = gpu_dims_by_model(space, *registry);
    for (GpuModelId id = 0; id < registry->size(); ++id) p.model_names_.push_back(registry->model(id).name);
  } else {
    for (std::size_t k = 0; k < space.gpu_models.size() && k < 64; ++k) {
      p.dim_of_model_.push_back(static_cast<Eigen::Index>(k) + 2);
      p.model_names_.push_back(space.gpu_models[k]);
    }
  }
  p.space_ = std::move(space);
  p.capacity_ = std::move(capacity);
  p.free_ = std::move(free);
  p.queues_ = std::move(queues);
  return p;
}

GPUSCHED_DECL std::optional<std::size_t> FairSharePlanner::find_queue(std::string_view name) const {
  return tree_.find(name);
}

namespace detail {

// Allowed GPU dimensions of a job as a bit mask over the space's GPU models (bit k = dimension
// 2 + k), from its allowed model ids (`dim_of_model`: each id's dimension); a job naming no model
// allows all. Resolved once per job, so the hot loop compares no strings.
GPUSCHED_DECL std::uint64_t fairness_allowed_mask(std::span<const Eigen::Index> dim_of_model, const JobDemand& demand) {
  if (!demand.names_models) return ~std::uint64_t{0};
  std::uint64_t mask = 0;
  for (GpuModelMask ids = demand.models; ids != 0; ids &= ids - 1) {
    const auto id = static_cast<std::size_t>(std::countr_zero(ids));
    if (id < dim_of_model.size() && dim_of_model[id] >= 2 && dim_of_model[id] - 2 < 64)
      mask |= std::uint64_t{1} << (dim_of_model[id] - 2);
  }
  return mask;
}

// The flavors a job may be charged on, walked without building a list: the queue's flavors the job
// allows (a bit per GPU dimension below 2 + 64; those above are always allowed), or -1 alone.
struct CandidateRange {
  const Eigen::Index* first;
  const Eigen::Index* last;
  std::uint64_t allowed;

  static bool allows(std::uint64_t allowed, Eigen::Index d) { return d < 2 || d - 2 >= 64 || ((allowed >> (d - 2)) & 1); }
  struct iterator {
    const Eigen::Index* at;
    const Eigen::Index* last;
    std::uint64_t allowed;
    void skip() {
      while (at != last && !allows(allowed, *at)) ++at;
    }
    Eigen::Index operator*() const { return *at; }
    iterator& operator++() {
      ++at;
      skip();
      return *this;
    }
    bool operator==(const iterator& o) const { return at == o.at; }
  };
  iterator begin() const {
    iterator it{first, last, allowed};
    it.skip();
    return it;
  }
  iterator end() const { return {last, last, allowed}; }
  bool empty() const { return begin() == end(); }
};

// A job's candidate flavors (admission_rule.hpp): -1 alone for a job without GPUs, else the queue's
// flavors the job allows, in the queue's order; and the request charged on each.
struct FlavorCandidates {
  const std::vector<Eigen::Index>& flavors;
  // The request without GPUs: cpu and memory (the other entries zero).
  std::int64_t cpu, memory;
  std::int64_t gpu_milli;
  std::uint64_t allowed;
  bool names_models;          // the job lists allowed GPU models

  void load_base(Amounts& scratch) const {
    scratch.setZero();
    scratch[ResourceSpace::kCpu] = cpu;
    scratch[ResourceSpace::kMemory] = memory;
  }
  // The request charged on flavor d, written into `scratch` (no allocation).
  void request(Eigen::Index d, Amounts& scratch) const {
    load_base(scratch);
    if (d >= 0) scratch[d] += gpu_milli;
  }
  CandidateRange list() const {
    static constexpr Eigen::Index kNoGpu[] = {-1};
    if (gpu_milli <= 0) return {kNoGpu, kNoGpu + 1, ~std::uint64_t{0}};
    return {flavors.data(), flavors.data() + flavors.size(), allowed};
  }
};

GPUSCHED_DECL std::string fairness_quota_reason(const ResourceSpace& space, const QuotaBook& book, std::size_t q, const QuotaCheck& c) {
  std::string text = fairness_text("queue ", book.queue(q).name, ": ", verdict_text(c.verdict), " on ", space.name(c.dimension), " (requested ", space.format(c.dimension, c.requested), ", available ", space.format(c.dimension, c.available), ")");
  if (!c.borrowers.empty()) {
    std::string list;
    for (const auto& b : c.borrowers)
      list += fairness_text(list.empty() ? "" : ", ", book.queue(b.queue).name, " borrows ", space.format(c.dimension, b.amount));
    text += fairness_text("; reclaim from: ", list);
  }
  return text;
}

// The tier of a queue whose head has these candidates (admission_rule.hpp's head_tier).
GPUSCHED_DECL std::uint8_t fairness_tier_of(const FlavorCandidates& cands, std::size_t q, const QuotaBook& book, Amounts& scratch) {
  return head_tier(cands.list(), [&](Eigen::Index d) {
    cands.request(d, scratch);
    return book.within_nominal(q, scratch);
  });
}

// What decide_flavor() found: admitted (with the flavor), or why not; the misses of every candidate go to
// the caller's vector, so nothing is formatted or allocated per job on the planning path.
struct FlavorDecision {
  bool admitted = false;
  bool borrows = false;
  int gpu_dim = -1;
  PendingKind kind = PendingKind::kDoesNotFit;
};

// Chooses the flavor for a job by the one rule (admission_rule.hpp's choose_flavor: a candidate fits
// when the cluster's aggregate free amounts hold its request) and fills `request` with what it takes.
// When nothing fits, `misses` gains one entry per candidate, in the candidates' order; when something
// fits, `misses` is left as it was.
GPUSCHED_DECL FlavorDecision decide_flavor(const FlavorCandidates& cands, std::size_t q, const QuotaBook& book, const Amounts& free, Amounts& request,
               Amounts& scratch, std::vector<CandidateMiss>& misses) {
  const std::size_t mark = misses.size();
  const CandidateRange candidates = cands.list();
  if (candidates.empty())
    return {false, false, -1, !cands.names_models ? PendingKind::kNoFlavorOffered : PendingKind::kNoAllowedFlavor};
  const auto check = [&](Eigen::Index d) {
    cands.request(d, scratch);
    return book.check(q, scratch);
  };
  const auto refused = [&](Eigen::Index d, QuotaCheck&& c) {
    CandidateMiss miss;
    miss.gpu_dim = static_cast<int>(d);
    miss.quota = std::move(c);
    misses.push_back(std::move(miss));
  };
  const auto fits = [&](Eigen::Index d, bool) {  // (scratch holds d's request: check(d) came just before)
    for (Eigen::Index r = 0; r < scratch.size(); ++r)
      if (scratch[r] > free[r]) {
        CandidateMiss miss;
        miss.gpu_dim = static_cast<int>(d);
        miss.cluster = true;
        miss.dimension = static_cast<int>(r);
        miss.requested = scratch[r];
        miss.free = free[r];
        misses.push_back(std::move(miss));
        return false;
      }
    request = scratch;
    return true;
  };
  const FlavorChoice choice = choose_flavor(candidates, check, refused, fits);
  if (choice.found) {
    misses.resize(mark);
    return {true, choice.borrows, static_cast<int>(choice.gpu_dim), PendingKind::kDoesNotFit};
  }
  // Quota refusals come from the first pass, a borrowing flavor's cluster miss from the second: one
  // miss per candidate, put in the candidates' order (an insertion sort: a few flavors, mostly in order).
  const auto position = [&](const CandidateMiss& m) {
    std::size_t k = 0;
    for (auto it = candidates.begin(); it != candidates.end() && *it != m.gpu_dim; ++it) ++k;
    return k;
  };
  for (std::size_t i = mark + 1; i < misses.size(); ++i)
    for (std::size_t k = i; k > mark && position(misses[k]) < position(misses[k - 1]); --k) std::swap(misses[k], misses[k - 1]);
  return {false, false, -1, PendingKind::kDoesNotFit};
}

GPUSCHED_DECL std::int64_t replica_elastic_steps(const CompiledJob& job) {
  std::int64_t steps = 0;
  for (const auto& g : job.groups) steps = std::max<std::int64_t>(steps, replica_group_max(g) - replica_group_min(g));
  return steps;
}
GPUSCHED_DECL std::int32_t replicas_at_step(const CompiledGroup& g, std::int64_t step, std::int64_t steps) {
  if (steps <= 0) return replica_group_max(g);
  return static_cast<std::int32_t>(replica_group_max(g) - (std::int64_t{replica_group_max(g) - replica_group_min(g)} * step) / steps);
}

// decide_flavor(), and for an elastic job that does not fit whole, the least reduction that fits (binary
// search over the step: a smaller request never fits worse). Returns the step taken (0 = whole);
// `out` is the outcome at that step, `request` what it takes. When even the minimum does not fit,
// `misses` holds the misses of the minimum.
GPUSCHED_DECL std::int64_t decide_flavor_elastic(const CompiledJob& job, const FlavorCandidates& whole, std::size_t q, const QuotaBook& book,
                            const Amounts& free, Amounts& request, Amounts& scratch, std::vector<CandidateMiss>& misses,
                            FlavorDecision& out) {
  const std::size_t mark = misses.size();
  out = decide_flavor(whole, q, book, free, request, scratch, misses);
  if (out.admitted || out.kind != PendingKind::kDoesNotFit) return 0;
  const std::int64_t steps = replica_elastic_steps(job);
  if (steps == 0) return 0;
  Amounts base(scratch.size());
  auto at = [&](std::int64_t step) {
    whole.load_base(base);
    std::int64_t gpu = whole.gpu_milli;
    for (const auto& g : job.groups) {
      const std::int64_t dropped = replica_group_max(g) - replicas_at_step(g, step, steps);
      base[ResourceSpace::kCpu] -= dropped * g.request.shape.cpu;
      base[ResourceSpace::kMemory] -= dropped * g.request.shape.memory;
      gpu -= dropped * task_gpu_milli(g.request.shape);
    }
    base = base.cwiseMax(0);
    const FlavorCandidates reduced{whole.flavors, base[ResourceSpace::kCpu], base[ResourceSpace::kMemory],
                                   std::max<std::int64_t>(0, gpu), whole.allowed, whole.names_models};
    return decide_flavor(reduced, q, book, free, request, scratch, misses);
  };
  misses.resize(mark);
  out = at(steps);
  if (!out.admitted) return 0;
  std::int64_t lo = 1, hi = steps;  // hi fits
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (at(mid).admitted) {
      hi = mid;
    } else {
      misses.resize(mark);
      lo = mid + 1;
    }
  }
  out = at(hi);
  return hi;
}

GPUSCHED_DECL std::vector<std::int32_t> replicas_of_job(const CompiledJob& job, std::int64_t step) {
  std::vector<std::int32_t> out;
  out.reserve(job.groups.size());
  const std::int64_t steps = step > 0 ? replica_elastic_steps(job) : 0;
  for (const auto& g : job.groups) out.push_back(replicas_at_step(g, step, steps));
  return out;
}

// The per-job fields the planning loop reads, compact and contiguous (see plan()).
inline constexpr std::uint8_t kJobNamesModels = 1;  // the job lists allowed GPU models
inline constexpr std::uint8_t kJobElastic = 4;      // some group may shrink (partial admission)
struct PlannerJobRecord {  // trivially constructible: arrays of it are allocated without zero-filling
  std::int64_t gpu_milli;
  std::uint64_t allowed;
  std::int64_t priority;  // effective
  std::int64_t cpu, memory;
  std::uint32_t job;      // input index
  std::uint8_t flags;
};
struct PlannerSortKey {
  std::int64_t priority;
  std::int64_t submit;
  std::uint32_t job;  // position in the queue's bucket (input order)
};

GPUSCHED_DECL std::string fairness_miss_text(const ResourceSpace& space, const QuotaBook& book, std::size_t q, const CandidateMiss& m) {
  if (!m.cluster) return fairness_quota_reason(space, book, q, m.quota);
  const auto r = static_cast<Eigen::Index>(m.dimension);
  return fairness_text("cluster: not enough free ", space.name(r), " (requested ", space.format(r, m.requested), ", free ", space.format(r, m.free), ")");
}

// The names of the GPU models a job allows (the registry's, sorted), for a reason.
GPUSCHED_DECL std::string fairness_allowed_names(const CompiledJob& job, std::span<const std::string> model_names) {
  std::vector<std::string> names;
  for (GpuModelMask ids = job_demand(job).models; ids != 0; ids &= ids - 1) {
    const auto id = static_cast<std::size_t>(std::countr_zero(ids));
    if (id < model_names.size()) names.push_back(model_names[id]);
  }
  if (names.empty()) return "(no model every group allows)";
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return fairness_join(names, ", ");
}

// The text of a reason; `queue_name` is the queue the job names (it may not exist).
GPUSCHED_DECL std::string fairness_pending_text(const ResourceSpace& space, const QuotaBook& book, PendingKind kind, std::size_t q,
                         const CompiledJob& job, std::span<const CandidateMiss> misses, const CompiledJob* behind,
                         std::span<const std::string> model_names) {
  switch (kind) {
    case PendingKind::kNoSuchQueue: return fairness_text("queue \"", job.queue, "\": no such queue");
    case PendingKind::kNotLeaf: return fairness_text("queue ", job.queue, ": has child queues; jobs go to leaf queues");
    case PendingKind::kNoFlavorOffered: return fairness_text("queue ", job.queue, ": offers no GPU flavor");
    case PendingKind::kNoAllowedFlavor:
      return fairness_text("queue ", job.queue, ": none of the allowed GPU models (", fairness_allowed_names(job, model_names), ") is offered");
    case PendingKind::kBehindStrictHead:
      return fairness_text("queue ", job.queue, ": waits behind ", behind ? behind->name : std::string("?"), " (StrictFIFO)");
    case PendingKind::kPriorityOverflow:
      return fairness_text("job ", job.name, ": priority ", job.priority,
                           " plus its aging boost exceeds the largest priority (overflow)");
    case PendingKind::kInvalidRequest: {
      const RequestProblem problem = request_problem(job);
      if (!problem) return fairness_text("job ", job.name, ": request is negative or its total overflows a 64-bit amount");
      return fairness_text("job ", job.name, ": ", problem.path(), ": ", problem.what());
    }
    case PendingKind::kDoesNotFit: break;
  }
  std::string text;
  for (const auto& m : misses) {
    if (!text.empty()) text += "; ";
    text += fairness_miss_text(space, book, q, m);
  }
  return text;
}

// The unit of a fairness dimension in the one vocabulary.
GPUSCHED_DECL Unit fairness_unit(Eigen::Index dim) {
  if (dim == ResourceSpace::kCpu) return Unit::kMilliCpu;
  if (dim == ResourceSpace::kMemory) return Unit::kMemoryBytes;
  return Unit::kMilliGpu;
}

// One candidate flavor's miss as a structured reason; `never` is set when that candidate cannot fit
// however much frees up (more than the cluster's capacity, or than the queue's quota ceiling).
GPUSCHED_DECL Reason fairness_miss_reason(const QuotaBook& book, const Amounts& capacity, std::size_t q, const CandidateMiss& m,
                                   bool& never) {
  Reason r;
  if (m.cluster) {
    const auto d = static_cast<Eigen::Index>(m.dimension);
    never = m.requested > capacity[d];
    r = Reason{ReasonKind::kClusterFull, fairness_unit(d), m.requested, never ? capacity[d] : m.free, 0, m.dimension};
  } else {
    const auto d = static_cast<Eigen::Index>(m.quota.dimension);
    never = m.quota.requested > capacity[d] || m.quota.requested > book.ceiling(q, static_cast<std::size_t>(d));
    r = Reason{reason_kind(m.quota.verdict), fairness_unit(d), m.quota.requested, m.quota.available, 0, m.quota.dimension};
  }
  return r;
}

// The answer for a job whose every candidate missed: infeasible when none could ever fit.
GPUSCHED_DECL Outcome fairness_misses_outcome(const QuotaBook& book, const Amounts& capacity, std::size_t q,
                                       std::span<const CandidateMiss> misses) {
  Outcome out{Verdict::kInfeasible, {}};
  for (const auto& m : misses) {
    bool never = false;
    out.reasons.push_back(fairness_miss_reason(book, capacity, q, m, never));
    if (!never) out.verdict = Verdict::kNotNow;
  }
  if (misses.empty()) out.verdict = Verdict::kNotNow;
  return out;
}

// The answer for the kinds that are not capacity misses.
GPUSCHED_DECL Outcome fairness_kind_outcome(PendingKind kind, std::size_t behind) {
  switch (kind) {
    case PendingKind::kNoSuchQueue: return Outcome::with(Verdict::kInvalid, Reason{ReasonKind::kNoSuchQueue});
    case PendingKind::kNotLeaf: return Outcome::with(Verdict::kInvalid, Reason{ReasonKind::kNotLeafQueue});
    case PendingKind::kNoFlavorOffered:
    case PendingKind::kNoAllowedFlavor: return Outcome::with(Verdict::kInfeasible, Reason{ReasonKind::kNoFlavorOffered});
    case PendingKind::kBehindStrictHead: {
      Reason r{ReasonKind::kBehindStrictHead};
      r.subject = behind > static_cast<std::size_t>(INT32_MAX) ? -1 : static_cast<std::int32_t>(behind);
      return Outcome::with(Verdict::kNotNow, r);
    }
    case PendingKind::kPriorityOverflow: return Outcome::with(Verdict::kInvalid, Reason{ReasonKind::kInvalidAmount});
    case PendingKind::kInvalidRequest: return Outcome::with(Verdict::kInvalid, Reason{ReasonKind::kInvalidAmount});
    case PendingKind::kDoesNotFit: break;
  }
  return Outcome{Verdict::kNotNow, {}};
}

}  // namespace detail

GPUSCHED_DECL AdmissionDecision FairSharePlanner::query(const CompiledJob& job) const {
  auto q = find_queue(job.queue);
  if (!q || !tree_.leaf(*q)) {
    AdmissionDecision d;
    const PendingKind kind = q ? PendingKind::kNotLeaf : PendingKind::kNoSuchQueue;
    d.reason = detail::fairness_pending_text(space_, book_, kind, SIZE_MAX, job, {}, nullptr, model_names_);
    d.outcome = detail::fairness_kind_outcome(kind, SIZE_MAX);
    return d;
  }
  const JobDemand demand = job_demand(job);
  if (demand.problem) {
    AdmissionDecision d;
    d.reason = detail::fairness_pending_text(space_, book_, PendingKind::kInvalidRequest, *q, job, {}, nullptr, model_names_);
    d.outcome = detail::fairness_kind_outcome(PendingKind::kInvalidRequest, SIZE_MAX);
    return d;
  }
  const auto flavors = flavor_dims(space_, queues_[*q]);
  const detail::FlavorCandidates cands{flavors, demand.cpu, demand.memory, demand.gpu_milli,
                                       detail::fairness_allowed_mask(dim_of_model_, demand), demand.names_models};
  Amounts request(space_.size()), scratch(space_.size());
  std::vector<CandidateMiss> misses;
  detail::FlavorDecision o;
  const std::int64_t step = detail::decide_flavor_elastic(job, cands, *q, book_, free_, request, scratch, misses, o);
  AdmissionDecision d;
  d.borrows = o.borrows;
  d.gpu_dim = o.gpu_dim;
  d.partial = step > 0;
  if (o.admitted) d.outcome = {};  // admitted
  if (o.admitted) d.replicas = detail::replicas_of_job(job, step);
  if (!o.admitted) {
    d.reason = detail::fairness_pending_text(space_, book_, o.kind, *q, job, misses, nullptr, model_names_);
    d.outcome = o.kind == PendingKind::kDoesNotFit ? detail::fairness_misses_outcome(book_, capacity_, *q, misses)
                                                   : detail::fairness_kind_outcome(o.kind, SIZE_MAX);
  } else if (step > 0) {
    d.reason = detail::fairness_text("fits partially (", detail::fairness_join(d.replicas, "+"), " of ", detail::fairness_join(detail::replicas_of_job(job, 0), "+"), " replicas)", o.borrows ? " by borrowing from the cohort" : "");
  } else if (!o.borrows) {
    d.reason = o.gpu_dim < 0 ? "fits within nominal quota" : detail::fairness_text("fits within nominal quota on ", space_.name(o.gpu_dim));
  } else {
    d.reason = o.gpu_dim < 0 ? "fits by borrowing from the cohort"
                             : detail::fairness_text("fits by borrowing ", space_.name(o.gpu_dim), " from the cohort");
  }
  return d;
}

GPUSCHED_DECL Outcome FairSharePlanner::outcome(const AdmissionPlan& plan, const PendingJobReport& p) const {
  if (p.kind != PendingKind::kDoesNotFit) return detail::fairness_kind_outcome(p.kind, p.behind);
  if (p.queue >= queues_.size() || std::size_t{p.first_miss} + p.miss_count > plan.misses.size()) return {Verdict::kNotNow, {}};
  return detail::fairness_misses_outcome(book_, capacity_, p.queue,
                                         std::span<const CandidateMiss>(plan.misses).subspan(p.first_miss, p.miss_count));
}

GPUSCHED_DECL std::string FairSharePlanner::reason(const AdmissionPlan& plan, const PendingJobReport& p,
                                     JobSpan jobs) const {
  if (p.job >= jobs.size()) return "?";
  std::span<const CandidateMiss> misses;
  if (p.kind == PendingKind::kDoesNotFit && std::size_t{p.first_miss} + p.miss_count <= plan.misses.size())
    misses = std::span<const CandidateMiss>(plan.misses).subspan(p.first_miss, p.miss_count);
  const CompiledJob* behind = p.behind < jobs.size() ? &jobs[p.behind] : nullptr;
  return detail::fairness_pending_text(space_, book_, p.kind, p.queue, jobs[p.job], misses, behind, model_names_);
}

namespace detail {

// One plan (FairSharePlanner::plan): the jobs bucketed by queue in queue order, then admitted by the
// one rule (admission_rule.hpp: QueueOrder picks the queue, choose_flavor the flavor; a job fits when
// the cluster's aggregate free amounts hold it), then the per-queue report.
struct PlanRun {
  const ResourceSpace& space;
  const QueueTree& tree;
  std::span<const QueueConfig> queues;
  const Amounts& capacity;
  JobSpan jobs;
  std::span<const Eigen::Index> dim_of_model;  // the jobs' model ids as dimensions (FairSharePlanner)
  const AgingPolicy& aging;
  AdmissionPlan plan;
  QuotaBook book;
  Amounts free;

  static constexpr std::uint32_t kNoQueue = ~std::uint32_t{0};
  std::vector<std::uint32_t> queue_of;   // per job: its queue, or kNoQueue (reported at once)
  std::vector<std::size_t> start;        // queue q's jobs are records [start[q], start[q + 1])
  Amounts threshold;                     // saturation: the smallest positive request per dimension
  std::int64_t pmin = 0, pmax = 0, smin = 0, smax = 0;  // spreads of priority and submit time
  std::size_t max_bucket = 0;
  std::unique_ptr<PlannerJobRecord[]> hot;  // the queued jobs' records, each queue's in queue order
  // Per job in input order, written by bucket() for queued jobs so that no later pass reads a job
  // again (its CompiledJob and groups sit apart on the heap: a cache miss or two each): its record,
  // its submit time, and its one group's replicas (-1 when it has several, read from the job).
  std::unique_ptr<PlannerJobRecord[]> input_records;
  std::unique_ptr<std::int64_t[]> submit_of;
  std::unique_ptr<std::int32_t[]> one_group_replicas;
  std::size_t miss_bound = 0;  // every candidate of every job missing: misses never reallocates
  std::vector<std::vector<Eigen::Index>> flavors;  // per queue, flavor_dims

  PlanRun(const ResourceSpace& s, const QueueTree& t, std::span<const QueueConfig> q, const Amounts& c,
          JobSpan j, std::span<const Eigen::Index> dm, const AgingPolicy& a, const QuotaBook& b,
          const Amounts& f)
      : space(s), tree(t), queues(q), capacity(c), jobs(j), dim_of_model(dm), aging(a), book(b), free(f) {}

  std::size_t total() const { return start.back(); }
  FlavorCandidates candidates(std::size_t q, std::size_t k) {
    const PlannerJobRecord& h = hot[k];
    return FlavorCandidates{flavors[q], h.cpu, h.memory, h.gpu_milli, h.allowed, (h.flags & kJobNamesModels) != 0};
  }

  // Pass 1 (input order): each job's queue, per-queue counts, the spreads of effective priority and
  // submit time among queued jobs (for the packed sort keys) and the saturation thresholds. Jobs
  // naming no leaf queue, or whose priority or request is unusable, are reported here, in input order.
  void bucket(const FairSharePlanner& planner) {
    const Eigen::Index m = space.size();
    std::vector<char> seen(static_cast<std::size_t>(m), 0);
    threshold = Amounts::Ones(m);
    auto note = [&](Eigen::Index d, std::int64_t v) {
      if (v <= 0) return;
      auto& sd = seen[static_cast<std::size_t>(d)];
      threshold[d] = sd ? std::min(threshold[d], v) : v;
      sd = 1;
    };
    std::int64_t min_gpu = 0;
    bool any_queued = false;
    queue_of.reserve(jobs.size());
    start.assign(queues.size() + 1, 0);
    input_records = std::make_unique_for_overwrite<PlannerJobRecord[]>(jobs.size());
    submit_of = std::make_unique_for_overwrite<std::int64_t[]>(jobs.size());
    one_group_replicas = std::make_unique_for_overwrite<std::int32_t[]>(jobs.size());
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const CompiledJob& job = jobs[j];
      const JobDemand demand = job_demand(job);
      std::int64_t p = 0;
      const bool priority_overflows = !fairness_add_priority(job, aging, p);
      if (priority_overflows) p = std::numeric_limits<std::int64_t>::max();
      const auto q = planner.find_queue(job.queue);
      const bool leaf = q && tree.leaf(*q);
      if (priority_overflows || demand.problem) {
        // Reported, never planned: a wrapped priority or request total would be a wrong answer.
        plan.pending.push_back({j, leaf ? *q : SIZE_MAX,
                                priority_overflows ? PendingKind::kPriorityOverflow : PendingKind::kInvalidRequest, p});
        queue_of.push_back(kNoQueue);
      } else if (!leaf) {
        plan.pending.push_back({j, SIZE_MAX, !q ? PendingKind::kNoSuchQueue : PendingKind::kNotLeaf, p});
        queue_of.push_back(kNoQueue);
      } else {
        queue_of.push_back(static_cast<std::uint32_t>(*q));
        ++start[*q + 1];
        input_records[j] = record(j, demand, p);
        submit_of[j] = job.submit_time;
        one_group_replicas[j] = job.groups.size() == 1 ? job.groups[0].replicas : -1;
        pmin = any_queued ? std::min(pmin, p) : p;
        pmax = any_queued ? std::max(pmax, p) : p;
        smin = any_queued ? std::min(smin, job.submit_time) : job.submit_time;
        smax = any_queued ? std::max(smax, job.submit_time) : job.submit_time;
        any_queued = true;
      }
      note(ResourceSpace::kCpu, demand.cpu);
      note(ResourceSpace::kMemory, demand.memory);
      if (demand.gpu_milli > 0) min_gpu = min_gpu > 0 ? std::min(min_gpu, demand.gpu_milli) : demand.gpu_milli;
    }
    for (Eigen::Index d = 2; d < m; ++d) note(d, min_gpu);
    for (std::size_t q = 0; q < queues.size(); ++q) {
      max_bucket = std::max(max_bucket, start[q + 1]);
      start[q + 1] += start[q];
    }
    flavors.resize(queues.size());
    for (std::size_t q = 0; q < queues.size(); ++q) flavors[q] = flavor_dims(space, queues[q]);
  }

  // A queued job's compact record (`priority`: its effective priority).
  PlannerJobRecord record(std::size_t j, const JobDemand& demand, std::int64_t priority) const {
    return PlannerJobRecord{demand.gpu_milli, fairness_allowed_mask(dim_of_model, demand), priority,
                            demand.cpu, demand.memory, static_cast<std::uint32_t>(j),
                            static_cast<std::uint8_t>((demand.names_models ? kJobNamesModels : 0) | (demand.elastic ? kJobElastic : 0))};
  }

  // Pass 2 (input order again): each queued job's compact record, written straight into its queue's
  // bucket (a counting sort; within a bucket, input order), with its sort key beside it. Then each
  // bucket is sorted by (effective priority desc, submit time asc, input order) and its records
  // permuted to match, so the admission loop walks each queue's jobs through adjacent memory (chasing
  // each job's own heap vectors in queue order was mostly cache misses). When the spreads of priority
  // and submit time and the position in the bucket fit in 64 bits together (any realistic input) the
  // key is one order-preserving integer, (pmax - p, submit - smin, position) packed high to low;
  // otherwise the three fields are compared. Positions are distinct, so an unstable sort gives the
  // stable order. The arrays are written before they are read: allocated without zero-filling (fresh
  // pages are a visible part of the cost on the VMs this runs on).
  void pack() {
    hot = std::make_unique_for_overwrite<PlannerJobRecord[]>(total());
    const auto bits = [](std::uint64_t v) { return static_cast<unsigned>(std::bit_width(v)); };
    const unsigned bl = bits(max_bucket), bp = bits(static_cast<std::uint64_t>(pmax) - static_cast<std::uint64_t>(pmin)),
                   bs = bits(static_cast<std::uint64_t>(smax) - static_cast<std::uint64_t>(smin));
    const bool packed = bl + bp + bs <= 64;
    std::unique_ptr<std::uint64_t[]> keys;
    std::unique_ptr<PlannerSortKey[]> wide_keys;
    if (packed) keys = std::make_unique_for_overwrite<std::uint64_t[]>(total());
    else wide_keys = std::make_unique_for_overwrite<PlannerSortKey[]>(total());
    std::vector<std::size_t> cursor(start.begin(), start.end() - 1);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const std::uint32_t q = queue_of[j];
      if (q == kNoQueue) continue;
      const std::size_t pos = cursor[q]++;
      const std::uint64_t local = pos - start[q];
      hot[pos] = input_records[j];
      miss_bound += hot[pos].gpu_milli > 0 ? flavors[q].size() : 1;
      if (packed) {
        const std::uint64_t dp = static_cast<std::uint64_t>(pmax) - static_cast<std::uint64_t>(hot[pos].priority);
        const std::uint64_t ds = static_cast<std::uint64_t>(submit_of[j]) - static_cast<std::uint64_t>(smin);
        // A zero-width field contributes nothing (and is not shifted by the full width).
        std::uint64_t key = bp ? dp << (bs + bl) : 0;
        if (bs) key |= ds << bl;
        keys[pos] = key | local;
      } else {
        wide_keys[pos] = PlannerSortKey{hot[pos].priority, submit_of[j], static_cast<std::uint32_t>(local)};
      }
    }
    const std::uint64_t mask = bl >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bl) - 1;
    std::vector<PlannerJobRecord> bucket;
    bucket.reserve(max_bucket);
    for (std::size_t q = 0; q < queues.size(); ++q) {
      const std::size_t b = start[q], e = start[q + 1];
      bucket.assign(hot.get() + b, hot.get() + e);
      if (packed) {
        std::sort(keys.get() + b, keys.get() + e);
        for (std::size_t k = b; k < e; ++k) hot[k] = bucket[keys[k] & mask];
      } else {
        std::sort(wide_keys.get() + b, wide_keys.get() + e, [](const PlannerSortKey& x, const PlannerSortKey& y) {
          if (x.priority != y.priority) return x.priority > y.priority;
          if (x.submit != y.submit) return x.submit < y.submit;
          return x.job < y.job;
        });
        for (std::size_t k = b; k < e; ++k) hot[k] = bucket[wide_keys[k].job];
      }
    }
  }

  // Serves the queues in QueueOrder's order, each its head job, until every queue is done.
  void admit_all(QueueOrder& order_of_queues) {
    const Eigen::Index m = space.size();
    Amounts request(m), scratch(m);
    plan.admitted.reserve(total());
    plan.pending.reserve(jobs.size());
    plan.misses.reserve(miss_bound);
    // head[q]: the position (in queue order) of queue q's next job.
    std::vector<std::size_t> head(start.begin(), start.end() - 1);
    const auto head_tier = [&](std::size_t q) -> std::optional<std::uint8_t> {
      if (head[q] >= start[q + 1]) return std::nullopt;
      return fairness_tier_of(candidates(q, head[q]), q, book, scratch);
    };
    for (std::size_t q = 0; q < queues.size(); ++q)
      if (tree.leaf(q)) order_of_queues.update(q, nullptr, head_tier(q));
    while (const std::optional<std::size_t> next = order_of_queues.pick()) {
      const std::size_t q = *next;
      const std::size_t k = head[q]++;
      const PlannerJobRecord& h = hot[k];
      const std::size_t mark = plan.misses.size();
      FlavorDecision d;
      std::int64_t step = 0;
      if (h.flags & kJobElastic) step = decide_flavor_elastic(jobs[h.job], candidates(q, k), q, book, free, request, scratch, plan.misses, d);
      else d = decide_flavor(candidates(q, k), q, book, free, request, scratch, plan.misses);
      if (d.admitted) {
        book.admit(q, request);
        free -= request;
        plan.admitted.push_back({h.job, q, d.gpu_dim, d.borrows, h.priority, step > 0, {}});
        if (step == 0 && one_group_replicas[h.job] >= 0)
          plan.admitted.back().replicas.assign(1, std::max<std::int32_t>(0, one_group_replicas[h.job]));
        else
          plan.admitted.back().replicas = replicas_of_job(jobs[h.job], step);
        order_of_queues.update(q, &request, head_tier(q));  // (one H-DRF update for both)
        continue;
      }
      PendingJobReport report{h.job, q, d.kind, h.priority};
      report.first_miss = static_cast<std::uint32_t>(mark);
      report.miss_count = static_cast<std::uint32_t>(plan.misses.size() - mark);
      plan.pending.push_back(report);
      if (queues[q].strict_fifo) {
        for (; head[q] < start[q + 1]; ++head[q]) {
          PendingJobReport behind{hot[head[q]].job, q, PendingKind::kBehindStrictHead, hot[head[q]].priority};
          behind.behind = h.job;
          plan.pending.push_back(behind);
        }
      }
      order_of_queues.update(q, nullptr, head_tier(q));
    }
  }

  // Per queue: usage after the plan (internal queues: their subtree's), borrowed, shares, counts.
  void report_queues(const QueueOrder& order_of_queues) {
    const Eigen::Index m = space.size();
    const std::size_t nq = queues.size();
    plan.queues.resize(nq);
    std::vector<Amounts> usage(nq, Amounts::Zero(m));
    for (std::size_t q = 0; q < nq; ++q)
      if (tree.leaf(q)) usage[q] = book.usage(q);
    const std::span<const std::size_t> topo = tree.parents_first();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      if (tree.parent(*it) >= 0) usage[static_cast<std::size_t>(tree.parent(*it))] += usage[*it];
    for (const auto& a : plan.admitted) ++plan.queues[a.queue].admitted;
    for (const auto& p : plan.pending)
      if (p.queue != SIZE_MAX) ++plan.queues[p.queue].pending;
    for (std::size_t q = 0; q < nq; ++q) {
      auto& r = plan.queues[q];
      r.name = queues[q].name;
      r.leaf = tree.leaf(q);
      r.usage = usage[q];
      r.borrowed = r.leaf ? book.borrowed(q) : Amounts::Zero(m);
      r.dominant_share = dominant_share(usage[q], capacity);
      r.weighted_share = order_of_queues.share(q);
    }
  }

  // Fair share: each queue's fractional H-DRF entitlement (static H-DRF by progressive filling over
  // the queue tree, hdrf_progressive_filling) given its demand: what it held before the plan
  // (`before`) plus everything it has pending, GPU work on its first flavor. Internal queues report
  // their subtree's total.
  void fair_shares(const QuotaBook& before) {
    const Eigen::Index m = space.size();
    const std::size_t nq = queues.size();
    std::vector<std::int64_t> tree_parent{-1};
    std::vector<double> tree_weight{1.0};
    std::vector<FractionalUser> tree_nodes(1);
    std::vector<std::size_t> tree_node(nq, 0);
    Amounts scratch(m);
    for (const std::size_t q : tree.parents_first()) {
      tree_node[q] = tree_parent.size();
      tree_parent.push_back(tree.parent(q) < 0 ? 0 : static_cast<std::int64_t>(tree_node[static_cast<std::size_t>(tree.parent(q))]));
      tree_weight.push_back(queues[q].weight);
      FractionalUser node{Vector::Zero(m), queues[q].weight, 1.0};
      if (tree.leaf(q)) {
        node.demand = before.usage(q).cast<double>();
        for (std::size_t k = start[q]; k < start[q + 1]; ++k) {
          const FlavorCandidates c = candidates(q, k);
          const CandidateRange first = c.list();
          if (first.empty()) continue;
          c.request(*first.begin(), scratch);
          node.demand += scratch.cast<double>();
        }
      }
      tree_nodes.push_back(std::move(node));
    }
    // Inputs are validated in build(); an error here would be a bug, reported as no fair share.
    if (auto frac = hdrf_progressive_filling(capacity.cast<double>(), tree_parent, tree_weight, tree_nodes))
      for (std::size_t q = 0; q < nq; ++q) plan.queues[q].fair_share = frac->dominant_share[tree_node[q]];
  }
};

}  // namespace detail

GPUSCHED_DECL AdmissionPlan FairSharePlanner::plan(JobSpan jobs, const AgingPolicy& aging) const {
  detail::PlanRun run(space_, tree_, queues_, capacity_, jobs, dim_of_model_, aging, book_, free_);
  run.bucket(*this);
  run.pack();
  std::vector<Amounts> usage(queues_.size());
  for (std::size_t q = 0; q < queues_.size(); ++q) usage[q] = tree_.leaf(q) ? book_.usage(q) : Amounts::Zero(space_.size());
  QueueOrder order(tree_, queues_, capacity_, free_, usage, run.threshold);
  run.admit_all(order);
  run.report_queues(order);
  run.fair_shares(book_);
  return std::move(run.plan);
}

}  // namespace gpusched::fairness
