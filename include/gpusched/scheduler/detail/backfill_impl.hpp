// Implementation of gpusched/scheduler/backfill.hpp (included at its end).
#pragma once

namespace gpusched::scheduler {
namespace detail {

inline Seconds saturating_add_time(Seconds a, Seconds b) {
  Seconds out = 0;
  return __builtin_add_overflow(a, b, &out) ? kForever : out;
}

// `t` rounded up to the grid now + k * resolution (k >= 1: nothing is expected to end at `now`
// itself, it is running). kForever stays kForever.
inline Seconds grid_up(Seconds t, Seconds now, Seconds resolution) {
  if (t == kForever) return kForever;
  if (t <= now) return saturating_add_time(now, resolution);
  const Seconds delta = t - now;
  const Seconds steps = delta / resolution + (delta % resolution != 0 ? 1 : 0);
  Seconds out = 0;
  if (__builtin_mul_overflow(steps, resolution, &out)) return kForever;
  return saturating_add_time(now, out);
}

// A duration rounded up to whole resolution steps (unknown: kForever).
inline Seconds grid_duration(Seconds estimate, Seconds resolution) {
  if (estimate <= 0) return kForever;
  const Seconds steps = estimate / resolution + (estimate % resolution != 0 ? 1 : 0);
  Seconds out = 0;
  return __builtin_mul_overflow(steps, resolution, &out) ? kForever : out;
}

// One task that frees its resources at `end`.
struct ReleaseEntry {
  Seconds end = 0;
  const TaskAssignment* assignment = nullptr;
};

// A job this plan reserved: its gang on concrete nodes during [start, end).
struct Claim {
  std::size_t job = 0;
  Seconds start = 0;
  Seconds end = kForever;
  const GangSpec* spec = nullptr;
  const std::vector<TaskPlacement>* placement = nullptr;
};

// The availability profile over the one ClusterState. The journal is layered:
//   [caller's][jobs started by this plan][running work released up to the cursor][overlay]
// The cursor is a stack of marks (time, journal position, list positions): moving it to an earlier
// time rolls back, to a later one releases the tasks ending in between.
class Profile {
 public:
  Profile(ClusterState& state, std::vector<ReleaseEntry> running, Seconds now)
      : state_(state), running_(std::move(running)) {
    std::stable_sort(running_.begin(), running_.end(),
                     [](const ReleaseEntry& a, const ReleaseEntry& b) { return a.end < b.end; });
    running_prefix_.assign(running_.size() + 1, 0);
    for (std::size_t i = 0; i < running_.size(); ++i)
      running_prefix_[i + 1] = saturating_add(running_prefix_[i], held_milli(*running_[i].assignment));
    marks_.push_back({now, state.checkpoint(), 0, 0});
    free_now_ = state.total_gpu_milli_free();
  }

  // A necessary condition for any gang needing `needed` milli-GPU to fit at t: the GPU share free
  // now plus what running work frees by t (reservations only take more).
  bool may_fit(Seconds t, std::int64_t needed) const {
    auto freed = [t](const std::vector<ReleaseEntry>& list, const std::vector<std::int64_t>& prefix) {
      const auto it = std::upper_bound(list.begin(), list.end(), t,
                                       [](Seconds value, const ReleaseEntry& e) { return value < e.end; });
      return prefix[static_cast<std::size_t>(it - list.begin())];
    };
    return saturating_add(saturating_add(free_now_, freed(running_, running_prefix_)), freed(started_, started_prefix_)) >=
           needed;
  }

  // The state with every task ending by t released.
  void move_to(Seconds t) {
    while (marks_.size() > 1 && marks_.back().time > t) marks_.pop_back();
    state_.rollback(marks_.back().checkpoint);
    if (marks_.back().time == t) return;
    Mark m = marks_.back();
    for (; m.running < running_.size() && running_[m.running].end <= t; ++m.running)
      (void)state_.release_journaled(*running_[m.running].assignment);
    for (; m.started < started_.size() && started_[m.started].end <= t; ++m.started)
      (void)state_.release_journaled(*started_[m.started].assignment);
    m.time = t;
    m.checkpoint = state_.checkpoint();
    marks_.push_back(m);
  }

  // A job started now by this plan: its tasks are held from now until `end`.
  void add_started(const GangSpec& spec, const std::vector<TaskPlacement>& placement, Seconds end) {
    marks_.resize(1);
    state_.rollback(marks_[0].checkpoint);
    for (const TaskPlacement& t : placement) {
      // It placed on this state with the overlay on top (which only takes more): it fits without.
      (void)state_.reserve(spec.groups[t.group].request, t.assignment);
      if (end == kForever) continue;
      const ReleaseEntry e{end, &t.assignment};
      const auto at = std::upper_bound(started_.begin(), started_.end(), end,
                                       [](Seconds value, const ReleaseEntry& x) { return value < x.end; });
      started_.insert(at, e);
    }
    started_prefix_.assign(started_.size() + 1, 0);
    for (std::size_t i = 0; i < started_.size(); ++i)
      started_prefix_[i + 1] = saturating_add(started_prefix_[i], held_milli(*started_[i].assignment));
    marks_[0].checkpoint = state_.checkpoint();
    free_now_ = state_.total_gpu_milli_free();
  }

  // Takes again, on top of the cursor's state, what a claim holds. What is no longer free (another
  // claim or running work holds it during the tested interval) is taken as far as it is free.
  void overlay(const Claim& claim) {
    for (const TaskPlacement& t : *claim.placement) {
      const TaskAssignment& a = t.assignment;
      if (state_.reserve(claim.spec->groups[t.group].request, a).ok()) continue;
      if (a.is_mig() || a.node >= state_.node_count() || !state_.eligible(a.node)) continue;
      const NodeId n = a.node;
      TaskRequest host;
      host.shape.cpu = std::min(a.cpu, state_.cpu_free(n));
      host.shape.memory = std::min(a.memory, state_.memory_free(n));
      if (host.shape.cpu > 0 || host.shape.memory > 0) {
        TaskAssignment h;
        h.node = n;
        h.cpu = host.shape.cpu;
        h.memory = host.shape.memory;
        (void)state_.reserve(host, h);
      }
      for (const GpuIndex g : a.gpus) {
        if (g >= state_.gpu_count(n)) continue;
        const MilliGpu milli = std::min(a.gpu_milli, state_.gpu_free_milli(n, g));
        if (milli <= 0) continue;
        TaskRequest piece;
        piece.shape.gpus = 1;
        piece.shape.gpu_milli = milli;
        piece.shape.gpu_memory = std::min(a.gpu_memory, state_.gpu_free_memory(n, g));
        TaskAssignment p;
        p.node = n;
        p.gpus = {g};
        p.gpu_milli = milli;
        p.gpu_memory = piece.shape.gpu_memory;
        (void)state_.reserve(piece, p);
      }
    }
  }

  ClusterState& state() { return state_; }

 private:
  struct Mark {
    Seconds time = 0;
    ClusterState::Checkpoint checkpoint = 0;
    std::size_t running = 0, started = 0;
  };
  ClusterState& state_;
  std::vector<ReleaseEntry> running_, started_;
  std::vector<std::int64_t> running_prefix_, started_prefix_{0};
  std::vector<Mark> marks_;
  std::int64_t free_now_ = 0;
};

// One test of a gang at time t for [t, end).
struct FitTest {
  bool fits = false;
  GangResult result;  // set when a placement was tried
  bool tried = false;
};

inline FitTest test_fit(Profile& profile, std::span<const Claim> claims, const GangSpec& spec, Seconds t, Seconds end,
                        std::int64_t needed, const GangOptions& options, bool use_bound, bool skip_claims,
                        std::uint64_t& placements_tried) {
  FitTest out;
  if (use_bound && !profile.may_fit(t, needed)) return out;
  profile.move_to(t);
  ClusterState& state = profile.state();
  const ClusterState::Checkpoint mark = state.checkpoint();
  if (!skip_claims)
    for (const Claim& c : claims)
      if (c.start < end && c.end > t) profile.overlay(c);
  if (!use_bound || state.total_gpu_milli_free() >= needed) {
    out.result = place_gang(state, spec, options);
    out.tried = true;
    ++placements_tried;
    out.fits = out.result.placed();
  }
  state.rollback(mark);
  return out;
}

inline void insert_time(std::vector<Seconds>& times, Seconds t) {
  const auto at = std::lower_bound(times.begin(), times.end(), t);
  if (at == times.end() || *at != t) times.insert(at, t);
}

}  // namespace detail

inline std::string_view backfill_mode_name(BackfillMode mode) {
  switch (mode) {
    case BackfillMode::kNone: return "none";
    case BackfillMode::kEasy: return "easy";
    case BackfillMode::kConservative: return "conservative";
  }
  return "?";
}

inline std::vector<NodeId> Reservation::nodes() const {
  std::vector<NodeId> out;
  for (const TaskPlacement& t : placement) out.push_back(t.assignment.node);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

inline Seconds expected_end(const RunningJob& job, Seconds now, Seconds resolution) {
  if (resolution <= 0) resolution = 1;
  if (job.runtime_estimate <= 0) return kForever;
  return detail::grid_up(detail::saturating_add_time(job.start_time, job.runtime_estimate), now, resolution);
}

inline Result<BackfillPlan> plan_backfill(ClusterState& state, std::span<const RunningJob> running,
                                          std::span<const BlockedJob> blocked, Seconds now,
                                          const BackfillOptions& options) {
  if (options.resolution <= 0)
    return Error{"resolution: must be positive, got " + std::to_string(options.resolution), ErrorCode::kInvalidValue,
                 "resolution"};
  if (options.window < 0)
    return Error{"window: must not be negative, got " + std::to_string(options.window), ErrorCode::kInvalidValue,
                 "window"};
  for (std::size_t i = 0; i < blocked.size(); ++i)
    if (blocked[i].spec == nullptr) {
      const std::string field = "blocked[" + std::to_string(i) + "].spec";
      return Error{field + ": null", ErrorCode::kInvalidValue, field};
    }

  BackfillPlan plan;
  const Seconds res = options.resolution;
  const Seconds horizon = detail::saturating_add_time(now, options.window);
  GangOptions gang_options = options.placement;
  gang_options.dry_run = true;

  const ClusterState::Checkpoint base = state.checkpoint();
  // Candidate start times: now and every expected end within the window.
  std::vector<Seconds> times{now};
  std::vector<detail::ReleaseEntry> releases;
  for (const RunningJob& job : running) {
    const Seconds end = expected_end(job, now, res);
    if (end > horizon) continue;  // holds its resources past every start this plan tests
    detail::insert_time(times, end);
    for (const RunningTask& t : job.tasks) releases.push_back({end, &t.assignment});
  }
  detail::Profile profile(state, std::move(releases), now);

  // Placements of started and reserved jobs live here (stable addresses for the profile).
  std::vector<std::vector<TaskPlacement>> placements(blocked.size());
  std::vector<detail::Claim> claims;
  std::size_t fcfs_head = blocked.size();  // kNone: the first job that did not start

  for (std::size_t i = 0; i < blocked.size(); ++i) {
    const GangSpec& spec = *blocked[i].spec;
    if (options.mode == BackfillMode::kNone && fcfs_head < blocked.size()) {
      plan.waiting.push_back({i, Verdict::kNotNow, {{ReasonKind::kBehindStrictHead, Unit::kNone, -1, -1, 0,
                                                     static_cast<std::int32_t>(fcfs_head)}}});
      continue;
    }
    if (options.mode != BackfillMode::kNone && i >= options.depth) {
      plan.waiting.push_back({i, Verdict::kNotNow, {{ReasonKind::kBeyondDepth, Unit::kNone,
                                                     static_cast<std::int64_t>(i) + 1,
                                                     static_cast<std::int64_t>(options.depth), 0, -1}}});
      continue;
    }
    const Seconds duration = detail::grid_duration(blocked[i].runtime_estimate, res);
    const std::int64_t needed = detail::needed_milli(spec);
    auto end_at = [&](Seconds t) { return duration == kForever ? kForever : detail::saturating_add_time(t, duration); };

    // Now: on the state with the jobs started so far, and the reservations that overlap.
    detail::FitTest now_test = detail::test_fit(profile, claims, spec, now, end_at(now), needed, gang_options, false,
                                                false, plan.placements_tried);
    if (now_test.fits) {
      placements[i] = std::move(now_test.result.tasks);
      const Seconds end = end_at(now);
      profile.add_started(spec, placements[i], end);
      if (end <= horizon) detail::insert_time(times, end);
      plan.startable.push_back({i, end, placements[i]});
      continue;
    }
    const Verdict verdict = now_test.result.verdict;
    if (verdict == Verdict::kInfeasible || verdict == Verdict::kInvalid) {
      plan.waiting.push_back({i, verdict, now_test.result.reasons});
      continue;
    }
    if (options.mode == BackfillMode::kNone) {
      fcfs_head = i;
      plan.waiting.push_back({i, Verdict::kNotNow, now_test.result.reasons});
      continue;
    }

    const bool protect = options.mode == BackfillMode::kConservative || plan.reservations.empty();
    if (!protect) {
      // EASY, behind the head: it may only start now. Say whether a reservation is what stops it.
      BackfillWait wait{i, Verdict::kNotNow, now_test.result.reasons};
      for (const detail::Claim& c : claims)
        if (c.start < end_at(now)) {
          const detail::FitTest free_test = detail::test_fit(profile, claims, spec, now, end_at(now), needed,
                                                             gang_options, false, true, plan.placements_tried);
          if (free_test.fits)
            wait.reasons = {{ReasonKind::kReservedForOther, Unit::kNone, -1, -1, 0, static_cast<std::int32_t>(c.job)}};
          break;
        }
      plan.waiting.push_back(std::move(wait));
      continue;
    }

    // The earliest later time at which it fits for its whole duration.
    bool reserved = false;
    for (std::size_t k = 1; k < times.size() && times[k] <= horizon && !reserved; ++k) {
      const Seconds t = times[k];
      detail::FitTest test = detail::test_fit(profile, claims, spec, t, end_at(t), needed, gang_options, true, false,
                                              plan.placements_tried);
      if (!test.fits) continue;
      placements[i] = std::move(test.result.tasks);
      const Seconds end = end_at(t);
      claims.push_back({i, t, end, &spec, &placements[i]});
      if (end <= horizon) detail::insert_time(times, end);
      plan.reservations.push_back({i, t, end, placements[i]});
      reserved = true;
    }
    if (!reserved) {
      BackfillWait wait{i, Verdict::kNotNow, {{ReasonKind::kBeyondWindow, Unit::kNone, -1, -1, 0, -1}}};
      for (const Reason& r : now_test.result.reasons) wait.reasons.push_back(r);
      plan.waiting.push_back(std::move(wait));
    }
  }
  plan.time_points = times.size();
  state.rollback(base);
  return plan;
}

}  // namespace gpusched::scheduler
