// The simulator's first scheduler step (see step.hpp): queue order, backfill and preemption over the
// library's gang placement and preemption search.
//
// Rules, and where they come from:
//   * FIFO without backfill: the first job that does not fit blocks the queue (Slurm's
//     SchedulerType=sched/builtin; Kueue's StrictFIFO).
//   * EASY backfill (Lifka, "The ANL/IBM SP scheduling system", 1995; Mu'alem and Feitelson, IEEE TPDS
//     2001): the first blocked job gets a reservation at the earliest time enough GPUs free up by the
//     running jobs' estimated ends (the "shadow time"); a later job may start now if it fits and either
//     ends by the shadow time or uses only the GPUs the reservation leaves spare ("extra").
//   * Conservative backfill (same papers): every blocked job, up to `backfill_depth`, gets a reservation
//     in a profile of free GPUs over time; a job starts now only if it delays none of them.
//     The profile counts GPU share (milli-GPU) over the usable nodes, not concrete nodes: a job whose
//     reservation is due but whose gang does not place on the nodes then free is reserved again later.
//   * Tiresias discretised 2D-LAS (Gu et al., NSDI'19): a job's queue is given by the GPU-service it
//     attained (GPUs x seconds), thresholds `las_thresholds`; FIFO inside a queue; a job of a higher
//     queue preempts jobs of lower queues. With `las_promote_knob` K > 0, a job that has waited K times
//     as long as it has run is promoted to the top queue and its attained service counts from there
//     (the paper's starvation rule, PROMOTE_KNOB in its simulator).
//   * SRTF with known durations: the least remaining work (at full size) first; preempts longer ones.
//   * DRF across queues (Ghodsi et al., NSDI'11): the queue with the least weighted dominant share
//     (GPU and CPU) goes next; FIFO inside a queue (a blocked head blocks its queue, Kueue StrictFIFO),
//     others go on; a queue at its GPU quota waits.
// Preemption is the library's find_victims (whole gangs, elastic shrink first, minimal sets,
// checkpoint-aware cost when asked), with the order key as the priority inside one queue.
#include <algorithm>
#include <limits>
#include <map>

#include "gpusched/packing/cost_aware.hpp"
#include "gpusched/scheduler/preemption.hpp"
#include "sim/step.hpp"

namespace gpusched::sim::detail {
namespace {

constexpr Seconds kNever = std::numeric_limits<Seconds>::max() / 4;

// Free GPU share over time: free_[i] holds from times_[i] until times_[i + 1] (the last forever).
class Profile {
 public:
  Profile(Seconds now, std::int64_t free) : times_{now}, free_{free} {}
  void release_at(Seconds t, std::int64_t amount) { add(t, kNever, amount); }
  // The earliest time t >= from (from, or a breakpoint) with at least `need` free over [t, t + dur).
  Seconds earliest(std::int64_t need, Seconds dur, Seconds from) const {
    for (std::size_t i = 0; i < times_.size(); ++i) {
      if (i + 1 < times_.size() && times_[i + 1] <= from) continue;
      const Seconds t = std::max(times_[i], from);
      bool ok = true;
      for (std::size_t k = i; k < times_.size() && times_[k] < t + dur; ++k)
        if (free_[k] < need) {
          ok = false;
          break;
        }
      if (ok) return t;
    }
    return kNever;
  }
  void take(Seconds t, Seconds dur, std::int64_t need) { add(t, t + dur, -need); }

 private:
  std::size_t split(Seconds t) {
    auto it = std::lower_bound(times_.begin(), times_.end(), t);
    const auto i = static_cast<std::size_t>(it - times_.begin());
    if (it != times_.end() && *it == t) return i;
    const std::int64_t v = free_[i - 1];
    times_.insert(it, t);
    free_.insert(free_.begin() + static_cast<std::ptrdiff_t>(i), v);
    return i;
  }
  void add(Seconds from, Seconds to, std::int64_t delta) {
    from = std::max(from, times_.front());
    if (from >= to) return;
    const std::size_t a = split(from);
    const std::size_t b = to >= kNever ? times_.size() : split(to);
    for (std::size_t i = a; i < b; ++i) free_[i] += delta;
  }
  std::vector<Seconds> times_;
  std::vector<std::int64_t> free_;
};

class LibraryStep {
 public:
  LibraryStep(const PolicyConfig& p, const SimCluster& cluster) : p_(p) {
    if (p_.energy_aware && !cluster.energy.empty()) {
      placement_ = make_cost_aware_policy(cluster);
    } else {
      placement_ = std::make_unique<BestFitPolicy>();
    }
    gang_.policy = placement_.get();
    gang_.effort = 20'000;
  }

  StepDecision operator()(ClusterState& state, const StepView& v);

 private:
  std::int32_t order_key(const StepView& v, std::uint32_t j) const;
  std::int64_t need(const StepView& v, std::uint32_t j) const {
    const GangGroup& g = v.state[j].spec.groups[0];
    return g.request.shape.total_gpu_milli() * g.min_replicas;
  }
  Seconds estimate(const StepView& v, std::uint32_t j) const {
    const SimJob& job = v.jobs[j];
    const JobState& s = v.state[j];
    // What is left of the estimate: the estimate scaled by the share of the work left.
    const long double ratio = static_cast<long double>(job.runtime_estimate()) / static_cast<long double>(job.duration);
    const long double left = static_cast<long double>(s.remaining) / static_cast<long double>(job.full_rate());
    return std::max<Seconds>(1, static_cast<Seconds>(ratio * left + 0.999999L) + job.restart_cost);
  }
  bool try_preempt(ClusterState& state, const StepView& v, std::uint32_t j, StepDecision& d);

  PolicyConfig p_;
  std::unique_ptr<PlacementPolicy> placement_;
  GangOptions gang_;
  // Per cycle: the running jobs as the preemption search sees them.
  std::vector<scheduler::RunningJob> victims_;
  std::vector<std::uint32_t> victim_ids_;
  bool victims_built_ = false;
};

std::int32_t LibraryStep::order_key(const StepView& v, std::uint32_t j) const {
  return detail::order_key(p_, v, j);
}

bool LibraryStep::try_preempt(ClusterState& state, const StepView& v, std::uint32_t j, StepDecision& d) {
  if (!victims_built_) {
    victims_.clear();
    victim_ids_.clear();
    for (std::uint32_t r : v.running) {
      const JobState& s = v.state[r];
      scheduler::RunningJob rj;
      rj.name = v.jobs[r].name;
      rj.priority = order_key(v, r);
      rj.start_time = s.seg_start;
      rj.last_checkpoint = v.last_checkpoint(r);
      rj.restart_cost = v.jobs[r].restart_cost;
      rj.preemptible = v.jobs[r].preemptible;
      rj.min_tasks = s.spec.groups[0].min_replicas < v.jobs[r].tasks ? s.spec.groups[0].min_replicas : -1;
      for (const TaskPlacement& t : s.tasks) rj.tasks.push_back({s.spec.groups[0].request, t.assignment});
      victims_.push_back(std::move(rj));
      victim_ids_.push_back(r);
    }
    victims_built_ = true;
  }
  if (victims_.empty()) return false;
  scheduler::Preemptor pre{&v.state[j].spec, "", order_key(v, j), v.jobs[j].submit};
  scheduler::PreemptionOptions opt;
  opt.within_queue = scheduler::WithinQueue::kLowerPriority;
  opt.min_runtime = p_.min_runtime;
  opt.checkpoint_aware = p_.checkpoint_aware;
  opt.placement = gang_;
  const scheduler::PreemptionPlan plan = scheduler::find_victims(state, pre, victims_, v.now, opt);
  if (plan.verdict != Verdict::kPlaced) return false;
  std::vector<std::size_t> gone;
  for (const scheduler::Victim& vic : plan.victims) {
    scheduler::RunningJob& rj = victims_[vic.job];
    const std::size_t first = rj.tasks.size() - vic.tasks_shed;
    for (std::size_t t = first; t < rj.tasks.size(); ++t) (void)state.release_journaled(rj.tasks[t].assignment);
    if (vic.whole || vic.tasks_shed >= rj.tasks.size()) {
      d.evict.push_back(victim_ids_[vic.job]);
      gone.push_back(vic.job);
    } else {
      Shrink sh{victim_ids_[vic.job], {}};
      for (std::size_t t = first; t < first + vic.tasks_shed; ++t) sh.tasks.push_back(static_cast<std::uint32_t>(t));
      d.shrink.push_back(std::move(sh));
      rj.tasks.resize(first);
      if (static_cast<std::int32_t>(rj.tasks.size()) <= rj.min_tasks) rj.min_tasks = -1;
    }
  }
  const TaskRequest& req = v.state[j].spec.groups[0].request;
  for (const TaskPlacement& t : plan.placement) (void)state.reserve(req, t.assignment);
  d.starts.push_back({j, plan.placement});
  std::sort(gone.rbegin(), gone.rend());
  for (std::size_t g : gone) {
    victims_.erase(victims_.begin() + static_cast<std::ptrdiff_t>(g));
    victim_ids_.erase(victim_ids_.begin() + static_cast<std::ptrdiff_t>(g));
  }
  return true;
}

StepDecision LibraryStep::operator()(ClusterState& state, const StepView& v) {
  StepDecision d;
  victims_built_ = false;
  const ClusterState::Checkpoint mark = state.checkpoint();
  std::vector<std::uint32_t> order;
  order.reserve(v.pending.size());
  for (std::uint32_t j : v.pending)
    if (v.state[j].not_before <= v.now) order.push_back(j);
  if (p_.order == QueueOrder::kLas || p_.order == QueueOrder::kSrtf || p_.order == QueueOrder::kPriority) {
    std::vector<std::pair<std::int32_t, std::uint32_t>> keyed;
    keyed.reserve(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) keyed.push_back({order_key(v, order[i]), static_cast<std::uint32_t>(i)});
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::uint32_t> sorted;
    sorted.reserve(order.size());
    for (const auto& k : keyed) sorted.push_back(order[k.second]);
    order = std::move(sorted);
  }

  // DRF: interleave the queues by weighted dominant share.
  if (p_.order == QueueOrder::kDrf) {
    std::map<std::string, std::vector<std::uint32_t>> queues;  // FIFO each
    for (std::uint32_t j : order) queues[v.jobs[j].queue].push_back(j);
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> used;  // GPU milli, CPU milli
    for (std::uint32_t r : v.running) {
      const JobState& s = v.state[r];
      auto& u = used[v.jobs[r].queue];
      u.first += s.spec.groups[0].request.shape.total_gpu_milli() * s.held;
      u.second += s.spec.groups[0].request.shape.cpu * s.held;
    }
    std::int64_t cpu_cap = 0;
    for (NodeId n = 0; n < state.node_count(); ++n) cpu_cap += state.removed(n) ? 0 : state.cpu_capacity(n);
    const double gpu_cap = std::max<double>(1, static_cast<double>(state.total_gpu_milli_capacity()));
    const auto weight = [this](const std::string& q) {
      for (const auto& [name, w] : p_.queue_weights)
        if (name == q) return w > 0 ? w : 1.0;
      return 1.0;
    };
    const auto quota = [this](const std::string& q) -> std::int64_t {
      for (const auto& [name, g] : p_.queue_quota_gpus)
        if (name == q) return g * kMilliPerGpu;
      return std::numeric_limits<std::int64_t>::max();
    };
    std::map<std::string, std::size_t> head;
    std::vector<std::string> live;
    for (const auto& [q, list] : queues) live.push_back(q);
    while (!live.empty()) {
      std::size_t best = 0;
      double best_share = 0;
      for (std::size_t i = 0; i < live.size(); ++i) {
        const auto& u = used[live[i]];
        const double share = std::max(static_cast<double>(u.first) / gpu_cap,
                                      cpu_cap > 0 ? static_cast<double>(u.second) / static_cast<double>(cpu_cap) : 0) /
                             weight(live[i]);
        if (i == 0 || share < best_share) best = i, best_share = share;
      }
      const std::string q = live[best];
      const std::uint32_t j = queues[q][head[q]];
      auto& u = used[q];
      bool go_on = false;
      if (u.first + need(v, j) <= quota(q)) {
        GangResult r = place_gang(state, v.state[j].spec, gang_);
        if (r.placed()) {
          d.starts.push_back({j, r.tasks});
          u.first += need(v, j);
          u.second += v.state[j].spec.groups[0].request.shape.cpu * static_cast<std::int64_t>(r.tasks.size());
          go_on = true;
        } else if (r.verdict == Verdict::kInfeasible) {
          d.reject.push_back(j);
          go_on = true;
        }
      }
      if (go_on && ++head[q] < queues[q].size()) continue;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(best));  // blocked or drained
    }
    state.rollback(mark);
    return d;
  }

  // One pass down the ordered queue.
  const bool backfill = p_.backfill != BackfillMode::kNone;
  std::size_t blocked = 0, examined_after_block = 0;
  // EASY: the first blocked job's reservation; conservative: the profile.
  Seconds shadow = kNever;
  std::int64_t extra = 0;
  std::unique_ptr<Profile> profile;
  std::vector<std::pair<Seconds, std::int64_t>> ends;  // (estimated end, share) of the running jobs
  const auto build_ends = [&] {
    ends.clear();
    for (std::uint32_t r : v.running) {
      bool evicted = std::find(d.evict.begin(), d.evict.end(), r) != d.evict.end();
      if (!evicted) ends.push_back({v.estimated_end(r), v.state[r].rate > 0 ? v.state[r].rate : 0});
    }
    for (const Start& s : d.starts) {
      const std::int64_t share = v.state[s.job].spec.groups[0].request.shape.total_gpu_milli() *
                                 static_cast<std::int64_t>(s.tasks.size());
      ends.push_back({v.now + estimate(v, s.job), share});
    }
    std::sort(ends.begin(), ends.end());
  };
  const auto usable_free = [&] { return state.total_gpu_milli_free() - v.unusable_free; };

  if (p_.backfill == BackfillMode::kConservative) {
    build_ends();
    profile = std::make_unique<Profile>(v.now, usable_free());
    for (const auto& [t, share] : ends) profile->release_at(t, share);
  }
  for (std::uint32_t j : order) {
    if (blocked > 0 && backfill && ++examined_after_block > p_.backfill_depth) break;
    const std::int64_t nd = need(v, j);
    const Seconds est = estimate(v, j);
    Seconds reserve_at = v.now;
    if (blocked > 0 && p_.backfill == BackfillMode::kEasy) {
      if (nd > usable_free()) continue;
      if (v.now + est > shadow && nd > extra) continue;  // would delay the reservation
    } else if (profile) {
      reserve_at = profile->earliest(nd, est, v.now);
    }
    // The first job that does not start is always tried, so that one larger than the cluster is
    // rejected (infeasible) rather than reserved forever.
    if (reserve_at == v.now && (nd <= usable_free() || blocked == 0)) {
      GangResult r = place_gang(state, v.state[j].spec, gang_);
      if (r.placed()) {
        if (blocked > 0 && p_.backfill == BackfillMode::kEasy && v.now + est > shadow) extra -= nd;
        if (profile) profile->take(v.now, est, nd);
        d.starts.push_back({j, std::move(r.tasks)});
        continue;
      }
      if (r.verdict == Verdict::kInfeasible) {
        d.reject.push_back(j);
        continue;
      }
    }
    if (p_.preempt && blocked == 0 && try_preempt(state, v, j, d)) continue;
    // Blocked.
    ++blocked;
    if (!backfill) {
      if (p_.strict) break;
      continue;
    }
    if (p_.backfill == BackfillMode::kEasy) {
      if (blocked == 1) {
        build_ends();
        std::int64_t acc = usable_free();
        shadow = kNever;
        for (const auto& [t, share] : ends) {
          acc += share;
          if (acc >= nd) {
            shadow = t;
            extra = acc - nd;
            break;
          }
        }
      }
      continue;
    }
    // Conservative: the job keeps its earliest slot (after now when its gang did not place now).
    const Seconds at = profile->earliest(nd, est, reserve_at == v.now ? v.now + 1 : reserve_at);
    if (at < kNever) profile->take(at, est, nd);
  }

  // Elastic gangs grow into what is left when nothing waits (each grow is a checkpoint and restart).
  if (blocked == 0) {
    for (std::uint32_t r : v.running) {
      const JobState& s = v.state[r];
      if (std::find(d.evict.begin(), d.evict.end(), r) != d.evict.end()) continue;
      bool shrunk = false;
      for (const Shrink& sh : d.shrink) shrunk = shrunk || sh.job == r;
      if (shrunk || s.held >= v.jobs[r].tasks || s.spec.groups[0].min_replicas >= v.jobs[r].tasks) continue;
      GangSpec extra_spec;
      extra_spec.name = s.spec.name;
      extra_spec.groups.push_back(s.spec.groups[0]);
      extra_spec.groups[0].replicas = v.jobs[r].tasks - s.held;
      extra_spec.groups[0].min_replicas = 1;
      GangResult g = place_gang(state, extra_spec, gang_);
      if (g.placed()) d.grows.push_back({r, std::move(g.tasks)});
    }
  }
  state.rollback(mark);
  return d;
}

}  // namespace

std::unique_ptr<PlacementPolicy> make_cost_aware_policy(const SimCluster& cluster) {
  std::vector<std::int64_t> cents;
  for (const NodeEnergy& e : cluster.energy) cents.push_back(static_cast<std::int64_t>(e.price_per_hour * 100 + 0.5));
  return std::make_unique<CostAwarePolicy>(std::move(cents));
}

std::int32_t order_key(const PolicyConfig& p, const StepView& v, std::uint32_t j) {
  switch (p.order) {
    case QueueOrder::kLas: {
      const JobState& s = v.state[j];
      if (las_starving(p, s, v.now)) return 0;
      const std::int64_t a =
          s.attained - s.las_discount + (s.phase == Phase::kRunning ? s.rate * (v.now - s.seg_start) : 0);
      return -las_level(p, a).queue;
    }
    case QueueOrder::kSrtf: {
      const std::int64_t left = v.remaining_now(j) / std::max<std::int64_t>(1, v.jobs[j].full_rate());
      return -static_cast<std::int32_t>(std::min<std::int64_t>(left, std::numeric_limits<std::int32_t>::max()));
    }
    default:
      return v.jobs[j].priority;
  }
}

LasLevel las_level(const PolicyConfig& p, std::int64_t attained) {
  LasLevel out;
  for (std::int64_t t : p.las_thresholds) {
    if (attained >= t) ++out.queue;
    else out.next_threshold = std::min(out.next_threshold, t);
  }
  return out;
}

bool las_starving(const PolicyConfig& p, const JobState& s, Seconds now) {
  return p.order == QueueOrder::kLas && p.las_promote_knob > 0 && s.phase == Phase::kPending && s.executed > 0 &&
         static_cast<double>(now - s.waiting_since) >= p.las_promote_knob * static_cast<double>(s.executed);
}

SchedulerStep make_library_step(const PolicyConfig& policy, const SimCluster& cluster, const ClusterState& /*state*/,
                                std::uint64_t /*seed*/) {
  auto step = std::make_shared<LibraryStep>(policy, cluster);
  return [step](ClusterState& state, const StepView& v) { return (*step)(state, v); };
}

}  // namespace gpusched::sim::detail
