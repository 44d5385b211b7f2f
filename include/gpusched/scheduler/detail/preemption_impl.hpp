// Implementation of gpusched/scheduler/preemption.hpp (included at its end,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/scheduler/preemption.hpp"

namespace gpusched::scheduler {
namespace detail {

GPUSCHED_DECL std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

GPUSCHED_DECL std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<std::int64_t>::max() : out;
}

// Milli-GPUs a task holds: whole GPUs count 1000 each, a share its milli.
GPUSCHED_DECL std::int64_t held_milli(const TaskAssignment& a) {
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
GPUSCHED_DECL bool could_ever_host(const ClusterState& state, NodeId n, const TaskRequest& request) {
  if (!state.eligible(n)) return false;
  const TaskShape& shape = request.shape;
  if (state.cpu_capacity(n) < shape.cpu || state.memory_capacity(n) < shape.memory) return false;
  for (const LabelRequirement& want : request.selector)
    if (state.labels().value_of(n, want.key) != want.value) return false;
  if (!shape.needs_gpu()) return true;
  std::int64_t allowed = 0;
  for (std::size_t g = 0; g < state.gpu_count(n); ++g) {
    const auto gi = static_cast<GpuIndex>(g);
    if ((request.models & model_bit(state.gpu_model(n, gi))) && state.gpu_healthy(n, gi) &&
        state.shares().memory_capacity(n, gi) >= shape.gpu_memory)
      ++allowed;
  }
  return allowed >= shape.gpus;
}

GPUSCHED_DECL std::int64_t needed_milli(const GangSpec& spec) {
  std::int64_t total = 0;
  for (const GangGroup& g : spec.groups)
    total = saturating_add(total, saturating_mul(g.min_replicas, g.request.shape.total_gpu_milli()));
  return total;
}

GPUSCHED_DECL bool preemptor_fits(ClusterState& state, const GangSpec& spec, GangOptions options,
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
GPUSCHED_DECL void release_units(ClusterState& state, std::span<const RunningJob> running,
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

// What the search reads of the running jobs, computed once for a set of running jobs at one time:
// the scheduling cycle searches for many preemptors over the same jobs, and reading tens of
// thousands of RunningJob records (names, task vectors) per search was most of a cycle's time.
struct RunningFacts {
  struct Job {
    bool runnable_victim = false;  // preemptible, has tasks, and has run options.min_runtime
    std::int32_t priority = 0;
    Seconds queued_since = 0, start_time = 0;
    std::uint32_t queue = 0;       // index into queues
    std::uint32_t first_node = 0;  // its tasks' nodes: task_nodes[first_node, + tasks.size())
    CandidateUnit shrink;          // count 0: not elastic
    CandidateUnit whole;
  };
  std::vector<Job> jobs;
  std::vector<NodeId> task_nodes;
  Seconds now = 0;  // the time the units' lost work is counted at
  std::unordered_map<std::string_view, std::uint32_t> queues;  // the running jobs' queue names (views into them)

  // The index of queue `name` among the running jobs' queues; none: no running job is in it.
  std::uint32_t queue_index(std::string_view name) const {
    const auto it = queues.find(name);
    return it == queues.end() ? std::numeric_limits<std::uint32_t>::max() : it->second;
  }
};

// `order`: the victim order pricing the units (nullptr: Kueue's order, units cost lost + restart).
GPUSCHED_DECL RunningFacts running_facts(std::span<const RunningJob> running, Seconds now, Seconds min_runtime,
                                         const VictimOrder* order);

// The order a search with `options` prices by: the caller's, else the default (checkpoint-aware),
// else none (Kueue's order).
GPUSCHED_DECL const VictimOrder* victim_order_of(const PreemptionOptions& options) {
  static const CheckpointCostOrder checkpoint_cost;  // stateless: no shared state between callers
  if (options.victim_order != nullptr) return options.victim_order;
  return options.checkpoint_aware ? &checkpoint_cost : nullptr;
}

}  // namespace detail

GPUSCHED_DECL std::int64_t CheckpointCostOrder::cost(const VictimCandidate& c) const {
  return detail::saturating_add(c.lost_milli_gpu_seconds, c.restart_milli_gpu_seconds);
}

GPUSCHED_DECL std::int64_t Victim::cost() const {
  return detail::saturating_add(lost_milli_gpu_seconds, restart_milli_gpu_seconds);
}

GPUSCHED_DECL std::int64_t lost_work(const RunningJob& job, std::size_t first, std::size_t count, Seconds now) {
  const Seconds since = job.checkpoint_at(now);
  const Seconds elapsed = std::max<Seconds>(0, now - since);
  std::int64_t total = 0;
  for (std::size_t t = first; t < first + count && t < job.tasks.size(); ++t)
    total = detail::saturating_add(total, detail::saturating_mul(detail::held_milli(job.tasks[t].assignment), elapsed));
  return total;
}

GPUSCHED_DECL std::int64_t restart_work(const RunningJob& job, std::size_t first, std::size_t count) {
  std::int64_t total = 0;
  for (std::size_t t = first; t < first + count && t < job.tasks.size(); ++t)
    total = detail::saturating_add(
        total, detail::saturating_mul(detail::held_milli(job.tasks[t].assignment), std::max<Seconds>(0, job.restart_cost)));
  return total;
}

namespace detail {

// May `job` be a victim at all: preemptible, running tasks, and run for at least `min_runtime`.
GPUSCHED_DECL bool runnable_victim(const RunningJob& job, Seconds now, Seconds min_runtime) {
  return job.preemptible && !job.tasks.empty() && now - job.start_time >= min_runtime;
}

// The queue rules for a job that may be a victim at all (runnable_victim).
GPUSCHED_DECL bool eligible_by_rules(bool same_queue, std::int32_t priority, Seconds queued_since, const Preemptor& preemptor,
                              const PreemptionOptions& options, bool reclaimable) {
  if (!same_queue) return reclaimable;
  switch (options.within_queue) {
    case WithinQueue::kNever: return reclaimable;
    case WithinQueue::kLowerPriority: return priority < preemptor.priority || reclaimable;
    case WithinQueue::kLowerOrNewerEqualPriority:
      return priority < preemptor.priority ||
             (priority == preemptor.priority && queued_since > preemptor.submit_time) || reclaimable;
  }
  return false;
}

// Evicting tasks [first, first + count) of running job j (all of them when `whole`; else an elastic
// shrink, which restarts nothing) at `now`: what it frees and what it costs.
GPUSCHED_DECL CandidateUnit candidate_unit(std::span<const RunningJob> running, std::size_t j, std::uint32_t first,
                                           std::uint32_t count, bool whole, Seconds now, const VictimOrder* order) {
  const RunningJob& job = running[j];
  CandidateUnit u{j, first, count, whole, lost_work(job, first, count, now), whole ? restart_work(job, first, count) : 0, 0, 0};
  for (std::uint32_t t = first; t < first + count; ++t) u.freed_milli = saturating_add(u.freed_milli, held_milli(job.tasks[t].assignment));
  if (order != nullptr)
    u.cost = std::max<std::int64_t>(0, order->cost({&job, first, count, whole, u.lost, u.restart, u.freed_milli, now}));
  else
    u.cost = saturating_add(u.lost, u.restart);
  return u;
}

GPUSCHED_DECL RunningFacts running_facts(std::span<const RunningJob> running, Seconds now, Seconds min_runtime,
                                         const VictimOrder* order) {
  RunningFacts out;
  out.now = now;
  out.jobs.resize(running.size());
  for (std::size_t j = 0; j < running.size(); ++j) {
    const RunningJob& job = running[j];
    RunningFacts::Job& f = out.jobs[j];
    f.runnable_victim = runnable_victim(job, now, min_runtime);
    f.priority = job.priority;
    // (A run of jobs of one queue is looked up once.)
    f.queue = j > 0 && job.queue == running[j - 1].queue
                  ? out.jobs[j - 1].queue
                  : out.queues.try_emplace(job.queue, static_cast<std::uint32_t>(out.queues.size())).first->second;
    f.queued_since = job.queued_since();
    f.start_time = job.start_time;
    f.first_node = static_cast<std::uint32_t>(out.task_nodes.size());
    for (const RunningTask& t : job.tasks) out.task_nodes.push_back(t.assignment.node);
    const auto n = static_cast<std::uint32_t>(job.tasks.size());
    // Only a job that may be a victim is priced (a user order is never asked about the others).
    const VictimOrder* pricing = f.runnable_victim ? order : nullptr;
    if (job.elastic())
      f.shrink = candidate_unit(running, j, static_cast<std::uint32_t>(job.min_tasks),
                                n - static_cast<std::uint32_t>(job.min_tasks), false, now, pricing);
    f.whole = candidate_unit(running, j, 0, n, true, now, pricing);
  }
  return out;
}

GPUSCHED_DECL PreemptionPlan find_victims_with(ClusterState& state, const Preemptor& preemptor,
                                        std::span<const RunningJob> running, const RunningFacts& facts,
                                        const PreemptionOptions& options, std::span<const std::uint8_t> reclaimable);

}  // namespace detail

GPUSCHED_DECL bool eligible_victim(const RunningJob& job, const Preemptor& preemptor, Seconds now,
                            const PreemptionOptions& options, bool reclaimable) {
  if (!detail::runnable_victim(job, now, options.min_runtime)) return false;
  return detail::eligible_by_rules(job.queue == preemptor.queue, job.priority, job.queued_since(), preemptor, options,
                                   reclaimable);
}

GPUSCHED_DECL PreemptionPlan find_victims(ClusterState& state, const Preemptor& preemptor,
                                   std::span<const RunningJob> running, Seconds now,
                                   const PreemptionOptions& options, std::span<const std::uint8_t> reclaimable) {
  return detail::find_victims_with(state, preemptor, running,
                                   detail::running_facts(running, now, options.min_runtime, detail::victim_order_of(options)),
                                   options, reclaimable);
}

namespace detail {

// One victim search (find_victims_with): the candidates, the what-ifs on the state, and the two
// searches — exact over subsets of the order's costs, greedy in order and then trimmed — with what
// they share. `facts` is running_facts(running, now, options.min_runtime, victim_order_of(options)).
class VictimSearch {
 public:
  VictimSearch(ClusterState& state, const Preemptor& preemptor, std::span<const RunningJob> running,
               const RunningFacts& facts, const PreemptionOptions& options, std::span<const std::uint8_t> reclaimable)
      : state_(state), pre_(preemptor), spec_(*preemptor.spec), running_(running), facts_(facts), options_(options),
        reclaimable_(reclaimable), order_(victim_order_of(options)), base_(state.checkpoint()),
        needed_(needed_milli(spec_)), gang_options_(options.placement) {
    // Every what-if places the preemptor: one capacity-at-empty summary for all of them when the
    // caller keeps none (else each placement made its own: half of a 10,000-node cycle's time).
    if (gang_options_.capacity_cache == nullptr) gang_options_.capacity_cache = &capacity_cache_;
  }
  VictimSearch(const VictimSearch&) = delete;  // (gang_options_ points into it)
  VictimSearch& operator=(const VictimSearch&) = delete;

  PreemptionPlan run() {
    collect_candidates();
    std::vector<std::size_t> chosen;
    // Cheapest sets by the order's costs (else Kueue's order): exactly while the subsets are few.
    const bool exact = order_ != nullptr && units_.size() <= options_.exact_limit;
    if (!(exact ? search_exact(chosen) : search_greedy(chosen))) return refuse();
    if (!chosen.empty()) trim_shrinks(chosen);
    return finish(std::move(chosen));
  }

 private:
  bool excluded(std::size_t j) const { return j < reclaimable_.size() && reclaimable_[j] == kExcludedVictim; }

  // The candidate units: eligible jobs' shrinks and whole evictions on nodes where some group of the
  // preemptor could ever run.
  void collect_candidates() {
    std::vector<std::uint8_t> useful(state_.node_count(), 0);
    for (NodeId n = 0; n < state_.node_count(); ++n)
      for (const GangGroup& g : spec_.groups)
        if (could_ever_host(state_, n, g.request)) {
          useful[n] = 1;
          break;
        }
    auto on_useful_node = [&](const RunningFacts::Job& f, const CandidateUnit& u) {
      for (std::uint32_t t = u.first; t < u.first + u.count; ++t) {
        const NodeId n = facts_.task_nodes[f.first_node + t];
        if (n < useful.size() && useful[n]) return true;
      }
      return false;
    };
    const std::uint32_t preemptor_queue = facts_.queue_index(pre_.queue);
    for (std::size_t j = 0; j < running_.size(); ++j) {
      const RunningFacts::Job& f = facts_.jobs[j];
      if (!f.runnable_victim || excluded(j)) continue;
      const bool reclaim = j < reclaimable_.size() && reclaimable_[j] == kReclaimableVictim;
      if (!eligible_by_rules(f.queue == preemptor_queue, f.priority, f.queued_since, pre_, options_, reclaim)) continue;
      if (f.shrink.count > 0 && on_useful_node(f, f.shrink)) units_.push_back(f.shrink);
      if (on_useful_node(f, f.whole)) units_.push_back(f.whole);
    }
    plan_.candidates = units_.size();
  }

  // Not even with every candidate gone: say whether it could ever run (on the cluster emptied of
  // every running job) — not now — or never — infeasible.
  PreemptionPlan refuse() {
    const Reason why{ReasonKind::kTooFewTasksFit, Unit::kMilliGpu, needed_, -1, units_.size()};
    if (!options_.classify_refusal) {
      plan_.verdict = Verdict::kNotNow;
      plan_.reasons.push_back(why);
      return std::move(plan_);
    }
    for (std::size_t j = 0; j < running_.size(); ++j)
      if (!excluded(j))
        for (const RunningTask& t : running_[j].tasks) (void)state_.release_journaled(t.assignment);
    const bool ever = preemptor_fits(state_, spec_, gang_options_, nullptr, plan_.placements_tried);
    state_.rollback(base_);
    plan_.verdict = ever ? Verdict::kNotNow : Verdict::kInfeasible;
    plan_.reasons.push_back(why);
    return std::move(plan_);
  }

  // Does the set `chosen` suffice? (Leaves the state at the base.)
  bool suffices(std::span<const std::size_t> chosen, std::vector<TaskPlacement>* out) {
    release_units(state_, running_, units_, chosen);
    const bool ok = state_.shares().total_free() >= needed_ &&
                    preemptor_fits(state_, spec_, gang_options_, out, plan_.placements_tried);
    state_.rollback(base_);
    return ok;
  }

  // Best-first over all subsets: cheapest first, then fewer victims, then the lowest mask. The first
  // that suffices is the cheapest set, and no proper subset of it suffices (a subset costs no more and
  // has fewer victims, so it was tried before). false: not even every candidate suffices.
  bool search_exact(std::vector<std::size_t>& chosen) {
    std::vector<std::size_t> all(units_.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    if (!suffices(all, nullptr)) return false;
    const std::size_t n = units_.size();
    struct Subset {
      std::uint32_t mask;
      std::int64_t cost;
      int size;
      std::int64_t freed;
    };
    std::vector<Subset> subsets;
    subsets.reserve(std::size_t{1} << n);
    for (std::uint32_t mask = 0; mask < (std::uint32_t{1} << n); ++mask) {
      Subset sub{mask, 0, 0, 0};
      bool dominated = false;
      for (std::size_t u = 0; u < n; ++u) {
        if (!(mask >> u & 1U)) continue;
        // A job's shrink and its whole eviction together: the eviction alone frees the same.
        for (std::size_t v = 0; v < u; ++v)
          if ((mask >> v & 1U) && units_[v].job == units_[u].job) dominated = true;
        sub.cost = saturating_add(sub.cost, units_[u].cost);
        sub.freed = saturating_add(sub.freed, units_[u].freed_milli);
        ++sub.size;
      }
      if (!dominated) subsets.push_back(sub);
    }
    std::sort(subsets.begin(), subsets.end(), [](const Subset& a, const Subset& b) {
      if (a.cost != b.cost) return a.cost < b.cost;
      if (a.size != b.size) return a.size < b.size;
      return a.mask < b.mask;
    });
    const std::int64_t free_now = state_.shares().total_free();
    for (const Subset& sub : subsets) {
      if (saturating_add(free_now, sub.freed) < needed_) continue;
      std::vector<std::size_t> set;
      for (std::size_t u = 0; u < n; ++u)
        if (sub.mask >> u & 1U) set.push_back(u);
      if (suffices(set, &placement_)) {
        chosen = std::move(set);
        plan_.exact = true;
        break;
      }
    }
    return true;
  }

  // Costed greedy order: the whole-job candidates go node by node. Nodes whose candidates free a
  // preemptor's task (free share plus candidates' share >= its largest task) first, cheapest per freed
  // milli-GPU first. Cost order across the whole cluster frees one cheap GPU on each of thousands of
  // nodes before any node can take an 8-GPU task (measured: most of a scheduling cycle's time went
  // there); node order frees whole nodes, and the trimming gives back whatever the placement does not
  // need.
  std::vector<double> node_ranks() const {
    std::vector<double> node_rank(state_.node_count(), 0.0);
    std::int64_t largest_task = 0;
    for (const GangGroup& g : spec_.groups) largest_task = std::max<std::int64_t>(largest_task, g.request.shape.total_gpu_milli());
    std::vector<std::int64_t> node_cost(state_.node_count(), 0), node_freed(state_.node_count(), 0);
    for (const CandidateUnit& u : units_) {
      if (!u.whole) continue;
      const NodeId n = facts_.task_nodes[facts_.jobs[u.job].first_node + u.first];
      if (n >= node_cost.size()) continue;
      node_cost[n] = saturating_add(node_cost[n], u.cost);
      node_freed[n] = saturating_add(node_freed[n], u.freed_milli);
    }
    for (NodeId n = 0; n < state_.node_count(); ++n) {
      if (node_freed[n] == 0) continue;
      const bool enough = state_.shares().node_free_milli(n) + node_freed[n] >= largest_task;
      node_rank[n] = (enough ? 0.0 : 1e30) + static_cast<double>(node_cost[n]) / static_cast<double>(node_freed[n]);
    }
    return node_rank;
  }

  // The order the greedy search takes units in, as a heap: elastic shrinks first, then (costed) node
  // rank, node and cost, then (Kueue's order) lower priority, later start; lower index last.
  struct OrderKey {
    bool whole;
    double rank;
    NodeId node;
    std::int64_t cost;
    std::int64_t priority;
    Seconds start;
    std::size_t unit;
  };
  static bool after(const OrderKey& a, const OrderKey& b) {  // "a after b": the heap's comparison
    if (a.whole != b.whole) return a.whole;
    if (a.rank != b.rank) return a.rank > b.rank;
    if (a.node != b.node) return a.node > b.node;
    if (a.cost != b.cost) return a.cost > b.cost;
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.start != b.start) return a.start < b.start;
    return a.unit > b.unit;
  }
  std::vector<OrderKey> greedy_keys() const {
    const std::vector<double> node_rank = order_ ? node_ranks() : std::vector<double>(state_.node_count(), 0.0);
    std::vector<OrderKey> keys;
    keys.reserve(units_.size());
    for (std::size_t u = 0; u < units_.size(); ++u) {
      const CandidateUnit& x = units_[u];
      const RunningFacts::Job& f = facts_.jobs[x.job];
      OrderKey k{x.whole, 0.0, 0, 0, f.priority, f.start_time, u};  // fields a mode does not use tie
      if (order_) {
        if (x.whole) {
          k.node = facts_.task_nodes[f.first_node + x.first];
          k.rank = k.node < node_rank.size() ? node_rank[k.node] : 0.0;
        }
        k.cost = x.cost;
      }
      keys.push_back(k);
    }
    return keys;
  }

  // Greedy: units released one after another in order until the preemptor places. The placement is
  // simulated only once the free total could hold the gang, and then after 1, 2, 4, ... more victims
  // (a few simulations, not one per victim), so a 64-GPU gang among thousands of candidates costs a
  // handful of placements. Then trimmed. false: not even every candidate suffices.
  bool search_greedy(std::vector<std::size_t>& chosen) {
    // A heap, not a sort: the loop usually stops after a few hundred of tens of thousands of
    // candidates, so the order is produced lazily (O(n) to build, O(log n) per unit taken).
    std::vector<OrderKey> keys = greedy_keys();
    std::make_heap(keys.begin(), keys.end(), after);
    std::vector<std::uint8_t> job_released(running_.size(), 0);  // 1: shed tasks, 2: all tasks
    std::size_t since_bound = 0, next_check = 1;
    bool found = false;
    while (!keys.empty()) {
      std::pop_heap(keys.begin(), keys.end(), after);
      const std::size_t u = keys.back().unit;
      keys.pop_back();
      const CandidateUnit& unit = units_[u];
      const RunningJob& job = running_[unit.job];
      const std::uint8_t level = unit.whole ? 2 : 1;
      if (job_released[unit.job] >= level) continue;
      // A whole eviction after a shrink releases only the tasks still held.
      const std::uint32_t last = job_released[unit.job] == 1 ? static_cast<std::uint32_t>(job.min_tasks)
                                                             : unit.first + unit.count;
      for (std::uint32_t t = unit.first; t < last; ++t) (void)state_.release_journaled(job.tasks[t].assignment);
      job_released[unit.job] = level;
      chosen.push_back(u);
      if (state_.shares().total_free() < needed_) continue;
      if (++since_bound < next_check) continue;
      next_check *= 2;
      if (preemptor_fits(state_, spec_, gang_options_, &placement_, plan_.placements_tried)) {
        found = true;
        break;
      }
    }
    if (!found) found = preemptor_fits(state_, spec_, gang_options_, &placement_, plan_.placements_tried);
    state_.rollback(base_);
    if (!found) return false;
    trim_greedy(chosen);
    return true;
  }

  // Victims on nodes the simulated placement does not use cannot matter to it: given back at once
  // (checked); then Kueue's reverse pass: every victim the preemptor can do without returns.
  void trim_greedy(std::vector<std::size_t>& chosen) {
    std::vector<std::uint8_t> placement_node(state_.node_count(), 0);
    for (const TaskPlacement& t : placement_)
      if (t.assignment.node < placement_node.size()) placement_node[t.assignment.node] = 1;
    std::vector<std::size_t> near;
    for (std::size_t u : chosen) {
      const RunningJob& job = running_[units_[u].job];
      for (std::uint32_t t = units_[u].first; t < units_[u].first + units_[u].count; ++t)
        if (placement_node[job.tasks[t].assignment.node]) {
          near.push_back(u);
          break;
        }
    }
    if (near.size() < chosen.size() && suffices(near, nullptr)) chosen = std::move(near);
    for (std::size_t k = chosen.size(); k-- > 0;) {
      std::vector<std::size_t> without = chosen;
      without.erase(without.begin() + static_cast<std::ptrdiff_t>(k));
      if (suffices(without, nullptr)) chosen = std::move(without);
    }
    placement_.clear();
    if (!suffices(chosen, &placement_)) chosen.clear();
  }

  // A chosen shrink sheds every task above the job's minimum; the preemptor may need fewer. Each is
  // cut to the fewest of its last tasks with which the set still suffices (binary search: shedding
  // more never frees less), so an elastic victim keeps the rest running. If the cut set's placement
  // fails (the gang solver is not monotone in every corner), the full shrinks stay.
  void trim_shrinks(std::span<const std::size_t> set) {
    std::vector<std::pair<std::size_t, CandidateUnit>> full;
    for (std::size_t u : set) {
      if (units_[u].whole || units_[u].count <= 1) continue;
      const bool evicted_whole =
          std::any_of(set.begin(), set.end(), [&](std::size_t v) { return units_[v].whole && units_[v].job == units_[u].job; });
      if (evicted_whole) continue;
      full.emplace_back(u, units_[u]);
      const CandidateUnit all_extra = units_[u];
      auto cut = [&](std::uint32_t c) {  // its last c tasks
        return candidate_unit(running_, all_extra.job, all_extra.first + all_extra.count - c, c, false, facts_.now, order_);
      };
      std::uint32_t lo = 1, hi = all_extra.count;
      while (lo < hi) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        units_[u] = cut(mid);
        if (suffices(set, nullptr)) hi = mid;
        else lo = mid + 1;
      }
      units_[u] = cut(hi);
    }
    if (full.empty()) return;
    std::vector<TaskPlacement> cut_placement;
    if (suffices(set, &cut_placement)) {
      placement_ = std::move(cut_placement);
      return;
    }
    for (const auto& [u, unit] : full) units_[u] = unit;
  }

  // The plan of the victims `chosen`: one victim per job (the whole eviction when chosen, else the
  // shrink), in job order.
  PreemptionPlan finish(std::vector<std::size_t> chosen) {
    if (chosen.empty() && placement_.empty()) {
      // Unreachable in practice (the full set sufficed), but never report a plan that does not place.
      plan_.verdict = Verdict::kNotNow;
      plan_.reasons.push_back({ReasonKind::kSearchBudget});
      return std::move(plan_);
    }
    std::sort(chosen.begin(), chosen.end(), [&](std::size_t a, std::size_t b) {
      if (units_[a].job != units_[b].job) return units_[a].job < units_[b].job;
      return units_[a].whole && !units_[b].whole;
    });
    for (std::size_t u : chosen) {
      const CandidateUnit& unit = units_[u];
      if (!plan_.victims.empty() && plan_.victims.back().job == unit.job) continue;
      plan_.victims.push_back({unit.job, unit.count, unit.whole, unit.lost, unit.restart});
      plan_.cost = saturating_add(plan_.cost, unit.cost);
    }
    plan_.placement = std::move(placement_);
    plan_.verdict = Verdict::kPlaced;
    return std::move(plan_);
  }

  ClusterState& state_;
  const Preemptor& pre_;
  const GangSpec& spec_;
  std::span<const RunningJob> running_;
  const RunningFacts& facts_;
  const PreemptionOptions& options_;
  std::span<const std::uint8_t> reclaimable_;
  const VictimOrder* order_;  // null: Kueue's order
  ClusterState::Checkpoint base_;
  std::int64_t needed_;
  GangOptions gang_options_;
  GangCapacityCache capacity_cache_;
  PreemptionPlan plan_;
  std::vector<CandidateUnit> units_;
  std::vector<TaskPlacement> placement_;  // the preemptor's simulated placement with the victims chosen
};

}  // namespace detail

GPUSCHED_DECL PreemptionPlan detail::find_victims_with(ClusterState& state, const Preemptor& preemptor,
                                                std::span<const RunningJob> running, const RunningFacts& facts,
                                                const PreemptionOptions& options,
                                                std::span<const std::uint8_t> reclaimable) {
  if (preemptor.spec == nullptr || preemptor.spec->groups.empty()) {
    PreemptionPlan plan;
    plan.verdict = Verdict::kInvalid;
    plan.reasons.push_back({ReasonKind::kOther});
    return plan;
  }
  return VictimSearch(state, preemptor, running, facts, options, reclaimable).run();
}

}  // namespace gpusched::scheduler
