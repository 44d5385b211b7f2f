// Implementation of gpusched/scheduler/preemption.hpp (included at its end).
#pragma once

namespace gpusched::scheduler {
namespace detail {

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

// Milli-GPUs a task holds: whole GPUs count 1000 each, a share its milli.
inline std::int64_t held_milli(const TaskAssignment& a) {
  return static_cast<std::int64_t>(a.gpus.size()) * a.gpu_milli;
}

// One thing the search may take away: a whole job, or the tasks of an elastic job above its minimum.
struct CandidateUnit {
  std::size_t job = 0;
  std::uint32_t first = 0;  // tasks [first, first + count)
  std::uint32_t count = 0;
  bool whole = true;
  std::int64_t lost = 0, restart = 0, cost = 0;
  std::int64_t freed_milli = 0;
};

// Could a task of `request` ever run on node n (capacity, not free amounts)? The nodes where no group
// of the preemptor could ever run do not make victims useful.
inline bool could_ever_host(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (!state.eligible(n)) return false;
  const TaskShape& shape = request.shape;
  if (state.cpu_capacity(n) < shape.cpu || state.memory_capacity(n) < shape.memory) return false;
  for (const LabelRequirement& want : request.selector)
    if (state.node_label_value(n, want.key) != want.value) return false;
  if (!shape.needs_gpu()) return true;
  std::int64_t allowed = 0;
  for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if ((request.models & model_bit(state.gpu_model(n, gi))) && state.gpu_healthy(n, gi) &&
        state.gpu_memory_capacity(n, gi) >= shape.gpu_memory)
      ++allowed;
  }
  return allowed >= shape.gpus;
}

inline std::int64_t needed_milli(const GangSpec& spec) {
  std::int64_t total = 0;
  for (const GangGroup& g : spec.groups)
    total = saturating_add(total, saturating_mul(g.min_replicas, g.request.shape.total_gpu_milli()));
  return total;
}

inline bool preemptor_fits(ClusterState& state, const GangSpec& spec, GangOptions options,
                           std::vector<TaskPlacement>* placement, std::uint64_t& tried) {
  options.dry_run = true;
  ++tried;
  GangResult r = place_gang(state, spec, options);
  if (!r.placed()) return false;
  if (placement) *placement = std::move(r.tasks);
  return true;
}

// Releases (journaled) the tasks the chosen units take: per job, all tasks if its whole-job unit is
// chosen, else the shed tasks of its shrink unit.
inline void release_units(ClusterState& state, std::span<const RunningJob> running,
                          std::span<const CandidateUnit> units, std::span<const std::size_t> chosen) {
  std::vector<std::size_t> picked(chosen.begin(), chosen.end());
  // Whole-job units first, so a shrink of the same job is skipped.
  std::sort(picked.begin(), picked.end(), [&](std::size_t a, std::size_t b) {
    if (units[a].whole != units[b].whole) return units[a].whole;
    return a < b;
  });
  std::vector<std::size_t> done;
  for (std::size_t u : picked) {
    const CandidateUnit& unit = units[u];
    if (std::find(done.begin(), done.end(), unit.job) != done.end()) continue;
    done.push_back(unit.job);
    const RunningJob& job = running[unit.job];
    for (std::uint32_t t = unit.first; t < unit.first + unit.count; ++t)
      (void)state.release_journaled(job.tasks[t].assignment);
  }
}

}  // namespace detail

inline std::int64_t Victim::cost() const {
  return detail::saturating_add(lost_milli_gpu_seconds, restart_milli_gpu_seconds);
}

inline std::int64_t lost_work(const RunningJob& job, std::size_t first, std::size_t count, Seconds now) {
  const Seconds since = job.checkpoint_at(now);
  const Seconds elapsed = std::max<Seconds>(0, now - since);
  std::int64_t total = 0;
  for (std::size_t t = first; t < first + count && t < job.tasks.size(); ++t)
    total = detail::saturating_add(total, detail::saturating_mul(detail::held_milli(job.tasks[t].assignment), elapsed));
  return total;
}

inline std::int64_t restart_work(const RunningJob& job, std::size_t first, std::size_t count) {
  std::int64_t total = 0;
  for (std::size_t t = first; t < first + count && t < job.tasks.size(); ++t)
    total = detail::saturating_add(
        total, detail::saturating_mul(detail::held_milli(job.tasks[t].assignment), std::max<Seconds>(0, job.restart_cost)));
  return total;
}

inline bool eligible_victim(const RunningJob& job, const Preemptor& preemptor, Seconds now,
                            const PreemptionOptions& options, bool reclaimable) {
  if (!job.preemptible || job.tasks.empty()) return false;
  if (now - job.start_time < options.min_runtime) return false;
  if (job.queue != preemptor.queue) return reclaimable;
  switch (options.within_queue) {
    case WithinQueue::kNever: return reclaimable;
    case WithinQueue::kLowerPriority: return job.priority < preemptor.priority || reclaimable;
    case WithinQueue::kLowerOrNewerEqualPriority:
      return job.priority < preemptor.priority ||
             (job.priority == preemptor.priority && job.queued_since() > preemptor.submit_time) || reclaimable;
  }
  return false;
}

inline PreemptionPlan find_victims(ClusterState& state, const Preemptor& preemptor,
                                   std::span<const RunningJob> running, Seconds now,
                                   const PreemptionOptions& options, std::span<const std::uint8_t> reclaimable) {
  using detail::CandidateUnit;
  PreemptionPlan plan;
  if (preemptor.spec == nullptr || preemptor.spec->groups.empty()) {
    plan.verdict = Verdict::kInvalid;
    plan.reasons.push_back({ReasonKind::kOther});
    return plan;
  }
  const GangSpec& spec = *preemptor.spec;

  // Nodes where some group of the preemptor could ever run.
  std::vector<std::uint8_t> useful(state.node_count(), 0);
  for (NodeId n = 0; n < state.node_count(); ++n)
    for (const GangGroup& g : spec.groups)
      if (detail::could_ever_host(state, n, g.request)) {
        useful[n] = 1;
        break;
      }
  auto on_useful_node = [&](const RunningJob& job, std::size_t first, std::size_t count) {
    for (std::size_t t = first; t < first + count; ++t) {
      const NodeId n = job.tasks[t].assignment.node;
      if (n < useful.size() && useful[n]) return true;
    }
    return false;
  };

  std::vector<CandidateUnit> units;
  for (std::size_t j = 0; j < running.size(); ++j) {
    const RunningJob& job = running[j];
    if (j < reclaimable.size() && reclaimable[j] == kExcludedVictim) continue;
    const bool reclaim = j < reclaimable.size() && reclaimable[j] == kReclaimableVictim;
    if (!eligible_victim(job, preemptor, now, options, reclaim)) continue;
    const auto n = static_cast<std::uint32_t>(job.tasks.size());
    auto add = [&](std::uint32_t first, std::uint32_t count, bool whole) {
      if (!on_useful_node(job, first, count)) return;
      CandidateUnit u{j, first, count, whole, lost_work(job, first, count, now),
                      whole ? restart_work(job, first, count) : 0, 0, 0};
      u.cost = detail::saturating_add(u.lost, u.restart);
      for (std::uint32_t t = first; t < first + count; ++t)
        u.freed_milli = detail::saturating_add(u.freed_milli, detail::held_milli(job.tasks[t].assignment));
      units.push_back(u);
    };
    if (job.elastic()) add(static_cast<std::uint32_t>(job.min_tasks), n - static_cast<std::uint32_t>(job.min_tasks), false);
    add(0, n, true);
  }
  plan.candidates = units.size();

  const ClusterState::Checkpoint base = state.checkpoint();
  const std::int64_t needed = detail::needed_milli(spec);
  std::vector<std::size_t> all(units.size());
  std::iota(all.begin(), all.end(), std::size_t{0});

  // Not even with every candidate gone: say whether it could ever run (on the cluster emptied of
  // every running job) — not now — or never — infeasible.
  auto refuse = [&]() {
    for (std::size_t j = 0; j < running.size(); ++j)
      if (j >= reclaimable.size() || reclaimable[j] != kExcludedVictim)
        for (const RunningTask& t : running[j].tasks) (void)state.release_journaled(t.assignment);
    const bool ever = detail::preemptor_fits(state, spec, options.placement, nullptr, plan.placements_tried);
    state.rollback(base);
    plan.verdict = ever ? Verdict::kNotNow : Verdict::kInfeasible;
    plan.reasons.push_back({ReasonKind::kTooFewTasksFit, Unit::kMilliGpu, needed, -1, units.size()});
    return plan;
  };

  // Does the set `chosen` suffice? (Leaves the state at `base`.)
  std::vector<TaskPlacement> placement;
  auto suffices = [&](std::span<const std::size_t> chosen, std::vector<TaskPlacement>* out) {
    detail::release_units(state, running, units, chosen);
    const bool ok = state.total_gpu_milli_free() >= needed &&
                    detail::preemptor_fits(state, spec, options.placement, out, plan.placements_tried);
    state.rollback(base);
    return ok;
  };

  std::vector<std::size_t> chosen;
  if (options.checkpoint_aware && units.size() <= options.exact_limit) {
    if (!suffices(all, nullptr)) return refuse();
    // Best-first over all subsets: cheapest first, then fewer victims, then the lowest mask. The
    // first that suffices is the cheapest set, and no proper subset of it suffices (a subset costs no
    // more and has fewer victims, so it was tried before).
    const std::size_t n = units.size();
    struct Subset {
      std::uint32_t mask;
      std::int64_t cost;
      int size;
      std::int64_t freed;
    };
    std::vector<Subset> subsets;
    subsets.reserve(std::size_t{1} << n);
    for (std::uint32_t mask = 0; mask < (std::uint32_t{1} << n); ++mask) {
      Subset s{mask, 0, 0, 0};
      bool dominated = false;
      for (std::size_t u = 0; u < n; ++u) {
        if (!(mask >> u & 1U)) continue;
        // A job's shrink and its whole eviction together: the eviction alone frees the same.
        for (std::size_t v = 0; v < u; ++v)
          if ((mask >> v & 1U) && units[v].job == units[u].job) dominated = true;
        s.cost = detail::saturating_add(s.cost, units[u].cost);
        s.freed = detail::saturating_add(s.freed, units[u].freed_milli);
        ++s.size;
      }
      if (!dominated) subsets.push_back(s);
    }
    std::sort(subsets.begin(), subsets.end(), [](const Subset& a, const Subset& b) {
      if (a.cost != b.cost) return a.cost < b.cost;
      if (a.size != b.size) return a.size < b.size;
      return a.mask < b.mask;
    });
    const std::int64_t free_now = state.total_gpu_milli_free();
    for (const Subset& s : subsets) {
      if (detail::saturating_add(free_now, s.freed) < needed) continue;
      std::vector<std::size_t> set;
      for (std::size_t u = 0; u < n; ++u)
        if (s.mask >> u & 1U) set.push_back(u);
      if (suffices(set, &placement)) {
        chosen = std::move(set);
        plan.exact = true;
        break;
      }
    }
  } else {
    // Greedy: elastic shrinks first, then whole jobs in cost order (or Kueue's order), released one
    // after another until the preemptor places. The placement is simulated only once the free total
    // could hold the gang, and then after 1, 2, 4, ... more victims (a few simulations, not one per
    // victim), so a 64-GPU gang among thousands of candidates costs a handful of placements.
    std::vector<std::size_t> order = all;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const CandidateUnit& x = units[a];
      const CandidateUnit& y = units[b];
      if (x.whole != y.whole) return !x.whole;
      if (options.checkpoint_aware && x.cost != y.cost) return x.cost < y.cost;
      const RunningJob& jx = running[x.job];
      const RunningJob& jy = running[y.job];
      if (jx.priority != jy.priority) return jx.priority < jy.priority;
      if (jx.start_time != jy.start_time) return jx.start_time > jy.start_time;
      return a < b;
    });
    std::vector<std::uint8_t> job_released(running.size(), 0);  // 1: shed tasks, 2: all tasks
    std::size_t since_bound = 0, next_check = 1;
    bool found = false;
    for (std::size_t u : order) {
      const CandidateUnit& unit = units[u];
      const RunningJob& job = running[unit.job];
      const std::uint8_t level = unit.whole ? 2 : 1;
      if (job_released[unit.job] >= level) continue;
      // A whole eviction after a shrink releases only the tasks still held.
      const std::uint32_t last = job_released[unit.job] == 1 ? static_cast<std::uint32_t>(job.min_tasks)
                                                             : unit.first + unit.count;
      for (std::uint32_t t = unit.first; t < last; ++t) (void)state.release_journaled(job.tasks[t].assignment);
      job_released[unit.job] = level;
      chosen.push_back(u);
      if (state.total_gpu_milli_free() < needed) continue;
      if (++since_bound < next_check) continue;
      next_check *= 2;
      if (detail::preemptor_fits(state, spec, options.placement, &placement, plan.placements_tried)) {
        found = true;
        break;
      }
    }
    if (!found) found = detail::preemptor_fits(state, spec, options.placement, &placement, plan.placements_tried);
    state.rollback(base);
    if (!found) return refuse();
    // Victims on nodes the simulated placement does not use cannot matter to it: give them back at
    // once (checked), then trim the rest like Kueue's reverse pass: every victim the preemptor can do
    // without returns.
    std::vector<std::uint8_t> placement_node(state.node_count(), 0);
    for (const TaskPlacement& t : placement)
      if (t.assignment.node < placement_node.size()) placement_node[t.assignment.node] = 1;
    std::vector<std::size_t> near;
    for (std::size_t u : chosen) {
      const RunningJob& job = running[units[u].job];
      for (std::uint32_t t = units[u].first; t < units[u].first + units[u].count; ++t)
        if (placement_node[job.tasks[t].assignment.node]) {
          near.push_back(u);
          break;
        }
    }
    if (found && near.size() < chosen.size() && suffices(near, nullptr)) chosen = std::move(near);
    for (std::size_t k = chosen.size(); k-- > 0;) {
      std::vector<std::size_t> without = chosen;
      without.erase(without.begin() + static_cast<std::ptrdiff_t>(k));
      if (suffices(without, nullptr)) chosen = std::move(without);
    }
    placement.clear();
    if (!suffices(chosen, &placement)) chosen.clear();
  }

  if (chosen.empty() && placement.empty()) {
    // Unreachable in practice (the full set sufficed), but never report a plan that does not place.
    plan.verdict = Verdict::kNotNow;
    plan.reasons.push_back({ReasonKind::kSearchBudget});
    return plan;
  }
  // One victim per job: the whole eviction when chosen, else the shrink.
  std::sort(chosen.begin(), chosen.end(), [&](std::size_t a, std::size_t b) {
    if (units[a].job != units[b].job) return units[a].job < units[b].job;
    return units[a].whole && !units[b].whole;
  });
  for (std::size_t u : chosen) {
    const CandidateUnit& unit = units[u];
    if (!plan.victims.empty() && plan.victims.back().job == unit.job) continue;
    plan.victims.push_back({unit.job, unit.count, unit.whole, unit.lost, unit.restart});
    plan.cost = detail::saturating_add(plan.cost, unit.cost);
  }
  plan.placement = std::move(placement);
  plan.verdict = Verdict::kPlaced;
  return plan;
}

}  // namespace gpusched::scheduler
