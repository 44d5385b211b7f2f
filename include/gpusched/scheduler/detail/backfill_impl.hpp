// Implementation of gpusched/scheduler/backfill.hpp (included at its end,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/scheduler/backfill.hpp"

#include <array>
#include <cassert>
#include <memory>

namespace gpusched::scheduler {
namespace detail {

GPUSCHED_DECL Seconds saturating_add_time(Seconds a, Seconds b) {
  Seconds out = 0;
  return __builtin_add_overflow(a, b, &out) ? kForever : out;
}

// The backfill grid is absolute, as Slurm's is (backfill.c rounds every end to `end / bf_resolution *
// bf_resolution`): the multiples of `resolution`. An end does not move when `now` does, so a scheduler
// session keeps its running jobs' releases rounded between cycles instead of rounding every one at
// every cycle. Ours rounds up where Slurm rounds down: resources are assumed held a little longer,
// never shorter, so no job is started on GPUs that are still busy.

// The least multiple of `resolution` >= t (kForever when there is none below it).
GPUSCHED_DECL Seconds grid_ceil(Seconds t, Seconds resolution) {
  if (t == kForever) return kForever;
  Seconds steps = t / resolution;
  if (t % resolution > 0) ++steps;  // (division truncates: for t < 0 it already rounded up)
  Seconds out = 0;
  return __builtin_mul_overflow(steps, resolution, &out) ? kForever : out;
}

// The first grid point after `now`: the earliest a running job is expected to end (it is running at
// `now`, so it has not ended by then).
GPUSCHED_DECL Seconds grid_after(Seconds now, Seconds resolution) {
  return now == kForever ? kForever : grid_ceil(saturating_add_time(now, 1), resolution);
}

// When work expected to end at `t` is released in a plan at `now`: t rounded up to the grid, and no
// earlier than the first grid point after now (a job past its estimate is assumed to end there).
GPUSCHED_DECL Seconds grid_end(Seconds t, Seconds now, Seconds resolution) {
  return std::max(grid_ceil(t, resolution), grid_after(now, resolution));
}

// A duration rounded up to whole resolution steps (unknown: kForever).
GPUSCHED_DECL Seconds grid_duration(Seconds estimate, Seconds resolution) {
  return estimate <= 0 ? kForever : grid_ceil(estimate, resolution);
}

// When a job of `duration` (grid_duration's) that starts at t is expected to end (kForever: never).
GPUSCHED_DECL Seconds end_after(Seconds t, Seconds duration) {
  return duration == kForever ? kForever : saturating_add_time(t, duration);
}

GPUSCHED_DECL ReleaseEntry release_of(Seconds end, const TaskAssignment& a, std::uint32_t job) {
  return {end, &a, held_milli(a), a.node, a.is_mig() ? -1 : static_cast<std::int32_t>(a.gpus.size()), job};
}

GPUSCHED_DECL bool earlier_end(const ReleaseEntry& a, const ReleaseEntry& b) { return a.end < b.end; }
// By (end, job): the order a session keeps its releases in, as a one-shot cycle makes them.
GPUSCHED_DECL bool earlier_release(const ReleaseEntry& a, const ReleaseEntry& b) {
  return a.end != b.end ? a.end < b.end : a.job < b.job;
}

// The whole GPUs each task of `group` takes (> 0), or 0 when its tasks take none or not whole ones
// (MIG instances, shares, no GPU) or none are required (min_replicas 0): the groups the whole-GPU
// counts below can say something about.
GPUSCHED_DECL std::int64_t whole_gpus_per_task(const GangGroup& group) {
  const TaskShape& shape = group.request.shape;
  if (group.request.mig.any() || !shape.needs_gpu() || shape.gpu_milli != kMilliPerGpu || group.min_replicas <= 0) return 0;
  return shape.gpus;
}

// A job this plan reserved: its gang on concrete nodes during [start, end).
struct Claim {
  std::size_t job = 0;
  Seconds start = 0;
  Seconds end = kForever;
  const GangSpec* spec = nullptr;
  const std::vector<TaskPlacement>* placement = nullptr;
  std::int64_t gpu_milli = 0;  // the GPU share it holds (MIG instances aside: they hold no share)
};

// Whole idle GPUs over time, per node and summed, as a cheap necessary condition for a gang to fit
// during [t, t + d) before any state is touched. Time is cut into slots at the plan's own time points:
// slot k is [b_k, b_{k+1}) with b_0 = now, a boundary at every expected end of running work and of
// every job the plan reserves (added as the plan claims it), and the last slot open-ended. Nothing
// changes inside a slot, so the bound is exact for whole GPUs at every instant: for node n, E_n[k] is
// its idle GPUs now, plus every GPU a running task released by b_k touches (capped at the node's
// GPUs), minus the whole GPUs the plan's jobs hold during slot k (exactly theirs: a claim's GPUs are
// free of running work and of other claims during its interval). count[k][g] = sum_n floor(E_n[k] /
// g) then bounds how many tasks of g whole GPUs could run at any instant of slot k, and a group of m
// such tasks fits during [t, t + d) only if count[k][g] >= m at every slot k the interval meets.
// Only the nodes that claims touch get a materialized E_n; the counts come from how many nodes have
// each idle level per slot (difference arrays over one walk of the releases), and only for the task
// sizes g the plan's jobs ask for. A plan of one job needs less (first_slot_with_room).
// Disabled (always "may fit") when the GPUs per node are too many for its arrays.
//
// An earlier version cut the window into equal slots (at most two per expected end, so that a plan
// does not pay for a day at one-second resolution); a slot then mixed instants before and after a
// release and the bound let through tests that placement refused (perf, benchmarks/README.md).
class IdleGpuBound {
 public:
  static constexpr std::int32_t kMaxGpus = 16;

  // `times`: the plan's time points, ascending, times[0] = now; `releases` sorted by end, each end
  // one of the times (releases beyond the window were dropped by the plan); `jobs`: the specs the
  // plan will ask about (bad_slots), whose whole-GPU task sizes are counted.
  IdleGpuBound(const ClusterState& state, const ReleaseLists& releases, std::span<const Seconds> times,
               std::span<const BlockedJob> jobs)
      : bounds_(times.begin(), times.end()) {
    max_gpus_ = state.max_gpus_per_node();
    if (bounds_.empty() || max_gpus_ > kMaxGpus || max_gpus_ <= 0) return;
    column_.fill(-1);
    for (const BlockedJob& job : jobs)
      for (const GangGroup& group : job.spec->groups)
        if (const std::int32_t g = counted_size(group); g > 0 && g <= max_gpus_ && column_[static_cast<std::size_t>(g)] < 0) {
          column_[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(sizes_.size());
          sizes_.push_back(g);
        }
    if (sizes_.empty()) return;  // nothing to bound
    enabled_ = true;
    if (jobs.size() == 1) {
      single_ = jobs.front().spec;
      first_fit_ = first_slot_with_room(state, releases, *single_);
      return;
    }
    const std::size_t slots = bounds_.size(), nodes = state.node_count(), g_count = sizes_.size();
    const auto levels = static_cast<std::size_t>(max_gpus_) + 1;
    releases_ = releases;
    read_nodes(state);
    // How many nodes have v whole idle GPUs in slot k: first as differences between consecutive
    // slots, then their running sums. An event moves one node between two levels, whatever the
    // task sizes asked about (per size it changed every count: most of the bound's time).
    std::vector<std::int32_t> nodes_at(slots * levels, 0);
    std::vector<std::int32_t> idle = idle_now_;
    for (const std::int32_t v : idle) ++nodes_at[static_cast<std::size_t>(v)];
    // One walk over the releases in time order moves each node's idle GPUs; the slot of each comes
    // from a cursor over the sorted times. (Per-node lists are made only for the nodes claims touch:
    // materialize.)
    std::size_t slot = 0;
    for (const std::span<const ReleaseEntry> run : releases.runs())
      for (const ReleaseEntry& e : run) {
        if (e.whole_gpus < 0 || e.node >= nodes || idle[e.node] >= gpus_[e.node]) continue;
        slot = slot_of(e.end, slot);
        const std::int32_t next = std::min(gpus_[e.node], idle[e.node] + e.whole_gpus);
        --nodes_at[slot * levels + static_cast<std::size_t>(idle[e.node])];
        ++nodes_at[slot * levels + static_cast<std::size_t>(next)];
        idle[e.node] = next;
      }
    count_.assign(slots * g_count, 0);
    for (std::size_t k = 0; k < slots; ++k)
      for (std::size_t v = 0; v < levels; ++v) {
        if (k > 0) nodes_at[k * levels + v] += nodes_at[(k - 1) * levels + v];
        for (std::size_t c = 0; c < g_count; ++c)
          count_[k * g_count + c] += std::int64_t{nodes_at[k * levels + v]} * quotient(static_cast<std::int32_t>(v), sizes_[c]);
      }
    timeline_of_.assign(nodes, -1);
  }

  bool enabled() const { return enabled_; }

  // The slot holding time t (t >= now); kForever: the slot count, past the last. An interval [t, end)
  // meets at least the slots [slot_of(t), slot_of(end)).
  std::size_t slot_of(Seconds t) const {
    if (t == kForever || bounds_.empty()) return bounds_.size();
    const auto it = std::upper_bound(bounds_.begin(), bounds_.end(), t);
    return it == bounds_.begin() ? 0 : static_cast<std::size_t>(it - bounds_.begin()) - 1;
  }
  // slot_of(t) for a t no earlier than the slot `from` begins: a scan over ascending times moves
  // its cursor forward instead of searching (the plan's time loop did a third of its work there).
  std::size_t slot_of(Seconds t, std::size_t from) const {
    if (t == kForever || bounds_.empty()) return bounds_.size();
    while (from + 1 < bounds_.size() && bounds_[from + 1] <= t) ++from;
    return from;
  }

  // The whole GPUs a job of this plan holds on its nodes during [start, end) (start is a boundary: the
  // plan only tests its time points), taken from the slots of that interval; `end` becomes a boundary.
  void add_claim(const std::vector<TaskPlacement>& placement, Seconds start, Seconds end) {
    if (!enabled_ || single_ != nullptr) return;  // one job: nothing is asked after its claim
    if (end != kForever) split_at(end);
    const std::size_t first = slot_of(start), stop = slot_of(end);
    materialize(placement);
    for (const TaskPlacement& t : placement) {
      const TaskAssignment& a = t.assignment;
      if (!counted(a)) continue;
      std::vector<std::int32_t>& e = timelines_[static_cast<std::size_t>(timeline_of_[a.node])];
      const auto taken = static_cast<std::int32_t>(a.gpus.size());
      for (std::size_t k = first; k < stop; ++k) {
        const std::int32_t old = e[k];
        const std::int32_t next = std::max(0, old - taken);
        e[k] = next;
        add_change(k, old, next);
      }
    }
  }

  // The slots at which `spec` cannot run for lack of whole idle GPUs: `next_bad[k]` is the first
  // slot >= k that fails some group's count (the slot count: none). A start in slot s whose interval
  // meets the slots [s, e) may fit iff next_bad[s] >= e.
  void bad_slots(const GangSpec& spec, std::vector<std::size_t>& next_bad) const {
    const std::size_t slots = bounds_.size();
    next_bad.assign(slots + 1, slots);
    if (!enabled_) return;
    if (single_ != nullptr) {  // (another job than the one it was made for: no bound)
      if (&spec == single_)
        for (std::size_t k = 0; k < first_fit_ && k < slots; ++k) next_bad[k] = k;
      return;
    }
    for (std::size_t k = slots; k-- > 0;) {
      bool bad = false;
      for (const GangGroup& group : spec.groups) {
        const std::int32_t g = counted_size(group);
        if (g <= 0) continue;
        if (g > max_gpus_ || (column_[static_cast<std::size_t>(g)] >= 0 && count_[index(k, g)] < group.min_replicas)) {
          bad = true;
          break;
        }
      }
      next_bad[k] = bad ? k : next_bad[k + 1];
    }
  }

 private:
  struct Event {
    Seconds end = 0;
    std::int32_t gpus = 0;
  };
  static constexpr int kWalks = 4;  // walks over every release for claims, before per-node lists
  // floor(idle / g) for idle, g <= kMaxGpus: the counts change by these on every event, and a
  // division per node and size was a tenth of a conservative replay.
  static std::int32_t quotient(std::int32_t idle, std::int32_t g) {
    static constexpr auto kTable = [] {
      std::array<std::array<std::int8_t, kMaxGpus + 1>, kMaxGpus + 1> q{};
      for (std::int32_t i = 0; i <= kMaxGpus; ++i)
        for (std::int32_t d = 1; d <= kMaxGpus; ++d) q[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)] = static_cast<std::int8_t>(i / d);
      return q;
    }();
    return kTable[static_cast<std::size_t>(idle)][static_cast<std::size_t>(g)];
  }
  // The whole GPUs per task of a group the bound counts (> 0), or 0: not one it can say anything
  // about (MIG instances, shares, no GPU, no minimum).
  static std::int32_t counted_size(const GangGroup& group) {
    return static_cast<std::int32_t>(std::min<std::int64_t>(whole_gpus_per_task(group), kMaxGpus + 1));
  }
  std::size_t index(std::size_t k, std::int32_t g) const {
    return k * sizes_.size() + static_cast<std::size_t>(column_[static_cast<std::size_t>(g)]);
  }
  // A node's whole idle GPUs go from `old` to `next` in slot k: every counted size's count changes.
  void add_change(std::size_t k, std::int32_t old, std::int32_t next) {
    if (old == next) return;
    std::int64_t* row = count_.data() + k * sizes_.size();
    for (std::size_t c = 0; c < sizes_.size(); ++c) row[c] += quotient(next, sizes_[c]) - quotient(old, sizes_[c]);
  }
  // Makes t a boundary: the slot holding it splits in two with the same counts (nothing changes
  // inside a slot).
  void split_at(Seconds t) {
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), t);
    if (it != bounds_.end() && *it == t) return;
    const auto k = static_cast<std::size_t>(it - bounds_.begin());  // the new slot's index; k >= 1
    bounds_.insert(it, t);
    const std::size_t g_count = sizes_.size();
    const auto at = count_.begin() + static_cast<std::ptrdiff_t>(k * g_count);
    count_.insert(at, g_count, 0);
    std::copy_n(count_.begin() + static_cast<std::ptrdiff_t>((k - 1) * g_count), g_count,
                count_.begin() + static_cast<std::ptrdiff_t>(k * g_count));
    for (std::vector<std::int32_t>& e : timelines_) e.insert(e.begin() + static_cast<std::ptrdiff_t>(k), e[k - 1]);
  }
  // Each node's GPUs and whole idle GPUs now; 0 and 0 for the nodes that take no new work
  // (cordoned, failed): their releases then free nothing either.
  void read_nodes(const ClusterState& state) {
    const std::size_t nodes = state.node_count();
    idle_now_.assign(nodes, 0);
    gpus_.assign(nodes, 0);
    for (NodeId n = 0; n < nodes; ++n) {
      if (!state.eligible(n)) continue;
      gpus_[n] = static_cast<std::int32_t>(state.gpu_count(n));
      idle_now_[n] = state.shares().idle_gpus(n);
    }
  }
  bool counted(const TaskAssignment& a) const {
    return !a.is_mig() && a.gpu_milli == kMilliPerGpu && !a.gpus.empty() && a.node < timeline_of_.size();
  }
  // Each node a claim touches gets its whole idle GPUs per slot (E_n), from its releases: found by
  // one walk over all releases for the first few claims (a plan that claims a handful of nodes does
  // not pay for per-node lists of every node), then from per-node lists made once.
  void materialize(const std::vector<TaskPlacement>& placement) {
    const auto first_new = static_cast<std::int32_t>(timelines_.size());
    std::vector<NodeId> fresh;
    for (const TaskPlacement& t : placement)
      if (counted(t.assignment) && timeline_of_[t.assignment.node] < 0) {
        timeline_of_[t.assignment.node] = static_cast<std::int32_t>(timelines_.size() + fresh.size());
        fresh.push_back(t.assignment.node);
      }
    if (fresh.empty()) return;
    const std::size_t slots = bounds_.size();
    std::vector<std::int32_t> idle;
    std::vector<std::size_t> filled(fresh.size(), 0);
    for (NodeId n : fresh) {
      timelines_.emplace_back(slots, 0);
      idle.push_back(idle_now_[n]);
    }
    // Release after release: E_n[k] for the slots before the release's is what the node had before it.
    const auto release = [&](std::size_t i, const Seconds end, const std::int32_t gpus) {
      std::vector<std::int32_t>& e = timelines_[static_cast<std::size_t>(first_new) + i];
      for (const std::size_t until = slot_of(end); filled[i] < until; ++filled[i]) e[filled[i]] = idle[i];
      idle[i] = std::min(gpus_[fresh[i]], idle[i] + gpus);
    };
    if (node_begin_.empty() && ++walks_ > kWalks) make_lists();
    if (node_begin_.empty()) {
      for (const std::span<const ReleaseEntry> run : releases_.runs())
        for (const ReleaseEntry& r : run)
          if (r.whole_gpus >= 0 && r.node < timeline_of_.size() && timeline_of_[r.node] >= first_new)
            release(static_cast<std::size_t>(timeline_of_[r.node] - first_new), r.end, r.whole_gpus);
    } else {
      for (std::size_t i = 0; i < fresh.size(); ++i)
        for (std::uint32_t k = node_begin_[fresh[i]]; k < node_begin_[fresh[i] + 1]; ++k) release(i, events_[k].end, events_[k].gpus);
    }
    for (std::size_t i = 0; i < fresh.size(); ++i)
      for (std::vector<std::int32_t>& e = timelines_[static_cast<std::size_t>(first_new) + i]; filled[i] < slots; ++filled[i])
        e[filled[i]] = idle[i];
  }
  // Per-node release lists (CSR by node): (time, GPUs touched), in time order.
  void make_lists() {
    const std::size_t nodes = timeline_of_.size();
    node_begin_.assign(nodes + 1, 0);
    const auto runs = releases_.runs();
    for (const std::span<const ReleaseEntry> run : runs)
      for (const ReleaseEntry& e : run)
        if (e.whole_gpus >= 0 && e.node < nodes) ++node_begin_[e.node + 1];
    for (std::size_t n = 0; n < nodes; ++n) node_begin_[n + 1] += node_begin_[n];
    events_.resize(node_begin_[nodes]);
    std::vector<std::uint32_t> fill(node_begin_.begin(), node_begin_.end() - 1);
    for (const std::span<const ReleaseEntry> run : runs)  // in end order: each node's list is too
      for (const ReleaseEntry& e : run)
        if (e.whole_gpus >= 0 && e.node < nodes) events_[fill[e.node]++] = {e.end, e.whole_gpus};
  }

  // A plan of one job (the scheduling cycle's guards) asks about that job before it claims anything,
  // so only running work changes the counts, and it only frees GPUs: they never fall from one slot
  // to the next, and the slots where the job may fit are those from the first where every group's
  // count suffices. One walk over the releases in time order finds it, stopping there, with no
  // per-node lists (the guard's bound was a third of a one-event cycle at 10,000 nodes). The counts
  // and the answer are those the lists would give.
  std::size_t first_slot_with_room(const ClusterState& state, const ReleaseLists& releases, const GangSpec& spec) {
    const std::size_t nodes = state.node_count(), slots = bounds_.size();
    for (const GangGroup& group : spec.groups)
      if (counted_size(group) > max_gpus_) return slots;
    std::vector<std::int64_t> count(sizes_.size(), 0);
    // idle_now_ is walked forward here: a one-job bound never reads it again (no claims).
    read_nodes(state);
    for (const std::int32_t v : idle_now_)
      for (std::size_t c = 0; c < sizes_.size(); ++c) count[c] += quotient(v, sizes_[c]);
    const auto room = [&] {
      for (const GangGroup& group : spec.groups)
        if (const std::int32_t g = counted_size(group); g > 0 && count[static_cast<std::size_t>(column_[static_cast<std::size_t>(g)])] < group.min_replicas)
          return false;
      return true;
    };
    std::size_t k = 0;
    ReleaseLists::Cursor i = releases.start();
    while (!room()) {
      const ReleaseEntry* next_release = releases.at(i);
      if (next_release == nullptr) return slots;  // nothing more is freed
      k = slot_of(next_release->end, k);         // the next slot at which running work ends
      if (k >= slots) return slots;              // (the plan gives no release past its last time)
      const Seconds until = k + 1 < slots ? bounds_[k + 1] : kForever;
      for (; (next_release = releases.at(i)) != nullptr && next_release->end < until; releases.advance(i)) {
        const ReleaseEntry& e = *next_release;
        if (e.whole_gpus < 0 || e.node >= nodes) continue;
        std::int32_t& cur = idle_now_[e.node];
        const std::int32_t next = std::min(gpus_[e.node], cur + e.whole_gpus);
        for (std::size_t c = 0; c < sizes_.size(); ++c) count[c] += quotient(next, sizes_[c]) - quotient(cur, sizes_[c]);
        cur = next;
      }
    }
    return k;
  }

  bool enabled_ = false;
  const GangSpec* single_ = nullptr;  // the one job asked about, when the plan has one
  std::size_t first_fit_ = 0;         // single_: the first slot where its groups' counts suffice
  std::vector<Seconds> bounds_;  // slot k begins at bounds_[k]
  std::int32_t max_gpus_ = 0;
  std::vector<std::int32_t> sizes_;                 // the counted task sizes
  std::array<std::int32_t, kMaxGpus + 2> column_{};  // size -> its column in count_ (-1: not counted)
  ReleaseLists releases_;  // the plan's, for the nodes claims touch
  int walks_ = 0;
  std::vector<std::uint32_t> node_begin_;  // made by make_lists (empty before)
  std::vector<Event> events_;
  std::vector<std::int32_t> idle_now_, gpus_;
  std::vector<std::int64_t> count_;  // [k][column of g]
  std::vector<std::int32_t> timeline_of_;
  std::vector<std::vector<std::int32_t>> timelines_;
};

// The availability profile over the one ClusterState: `state` itself for now (the jobs this plan
// starts are reserved on it, journaled), and for later times a what-if copy made when first needed,
// whose journal is layered:
//   [running work released up to the cursor][overlay: the plan's jobs that overlap the interval]
// The cursor is a stack of marks (time, journal position, list position): moving it to an earlier
// time rolls back, to a later one releases the tasks ending in between. Keeping now apart means the
// cursor never walks back to now when a job is started, so it mostly moves forward.
class Profile {
 public:
  // `running`: each list sorted by end; the profile reads them until it is destroyed.
  Profile(ClusterState& state, ReleaseLists running, Seconds now)
      : state_(state), running_(running), now_(now) {
    running_prefix_.push_back(0);  // extended as far as may_fit asks (a plan of one job rarely asks far)
    base_ = state.checkpoint();
    started_top_ = base_;
    in_place_.push_back({now_, base_, running_.start()});
    free_now_ = state.shares().total_free();
    // Measured (benchmarks/README.md, "Backfill"): copying 10,000 nodes x 8 GPUs (0.7 ms CPU) costs
    // about what 1,000 journaled releases do.
    copy_cost_ = (state.node_count() + state.total_gpu_count()) / 90;
  }

  const ReleaseLists& releases() const { return running_; }

  // A necessary condition for any gang needing `needed` milli-GPU to fit at t: the GPU share free
  // now plus what running work frees by t (the plan's own jobs only take more).
  bool may_fit(Seconds t, std::int64_t needed) {
    const std::size_t released = running_.count_by(t);
    for (; prefix_cursor_.position() < released; running_.advance(prefix_cursor_))
      running_prefix_.push_back(saturating_add(running_prefix_.back(), running_.at(prefix_cursor_)->milli));
    return saturating_add(free_now_, running_prefix_[released]) >= needed;
  }

  // The state as it is at t with the running work that ended by then released (no overlay yet).
  ClusterState& at(Seconds t) {
    if (t <= now_) {
      state_.rollback(started_top_);
      in_place_.resize(1);
      return state_;
    }
    // Until the plan starts a job, `state` itself is the cursor: the releases are journaled above
    // its base and rolled back when a job starts (at(now)) or the plan ends. A plan of one job (the
    // scheduling cycle's guard, once per blocked job) then never copies the state.
    if (started_top_ == base_) return walk(state_, in_place_, t);
    // The cursor nearest to t, or a new one when that is cheaper than walking (a copy of the state
    // costs about as much as releasing `copy_cost_` tasks).
    const std::size_t target = running_.count_by(t);
    Cursor* best = nullptr;
    std::size_t best_cost = 0;
    for (const std::unique_ptr<Cursor>& c : cursors_) {
      const std::size_t at = c->marks.back().running.position();
      const std::size_t cost = at > target ? at - target : target - at;
      if (best == nullptr || cost < best_cost) {
        best = c.get();
        best_cost = cost;
      }
    }
    if (best == nullptr || (cursors_.size() < kMaxCursors && best_cost > target + copy_cost_)) {
      auto c = std::make_unique<Cursor>(Cursor{state_, {}});
      c->state.rollback(base_);  // the jobs started so far are claims there, like the reserved ones
      c->marks.push_back({now_, c->state.checkpoint(), running_.start()});
      best = c.get();
      cursors_.push_back(std::move(c));
    }
    return walk(best->state, best->marks, t);
  }

  // A job started now by this plan: reserved on the state of now (it placed there with the overlay
  // on top, which only takes more, so it fits without).
  void add_started(const GangSpec& spec, const std::vector<TaskPlacement>& placement) {
    ClusterState& now_state = at(now_);
    for (const TaskPlacement& t : placement) (void)now_state.reserve(spec.groups[t.group].request, t.assignment);
    started_top_ = now_state.checkpoint();
  }

  // Takes again, on top of `state`, what a claim holds. What is no longer free (another claim or
  // running work holds it during the tested interval) is taken as far as it is free.
  static void overlay(ClusterState& state, const Claim& claim) {
    for (const TaskPlacement& t : *claim.placement) {
      const TaskAssignment& a = t.assignment;
      if (state.try_reserve(claim.spec->groups[t.group].request, a)) continue;
      if (a.is_mig() || a.node >= state.node_count() || !state.eligible(a.node)) continue;
      const NodeId n = a.node;
      TaskRequest host;
      host.shape.cpu = std::min(a.cpu, state.cpu_free(n));
      host.shape.memory = std::min(a.memory, state.memory_free(n));
      if (host.shape.cpu > 0 || host.shape.memory > 0) {
        TaskAssignment h;
        h.node = n;
        h.cpu = host.shape.cpu;
        h.memory = host.shape.memory;
        (void)state.reserve(host, h);
      }
      for (const GpuIndex g : a.gpus) {
        if (g >= state.gpu_count(n)) continue;
        const MilliGpu milli = std::min(a.gpu_milli, state.shares().free_milli(n, g));
        if (milli <= 0) continue;
        TaskRequest piece;
        piece.shape.gpus = 1;
        piece.shape.gpu_milli = milli;
        piece.shape.gpu_memory = std::min(a.gpu_memory, state.shares().free_memory(n, g));
        TaskAssignment p;
        p.node = n;
        p.gpus = {g};
        p.gpu_milli = milli;
        p.gpu_memory = piece.shape.gpu_memory;
        (void)state.reserve(piece, p);
      }
    }
  }

  // The GPU share `state` would have free once overlay() took these claims, computed without
  // taking them. Each take on a GPU is min(what the task holds there, what is free), so the claims
  // of one GPU take min(free, their sum) whatever their order; a MIG task, a task on a node that is
  // not eligible and a GPU the node does not have are counted as taking nothing (overlay may take
  // them only when the whole task fits, so this never says less than overlay would leave). Most
  // tests of the ITP-04 conservative replay stop at this check; overlaying and rolling back their
  // claims was 75 % of its time (perf, benchmarks/README.md "Backfill").
  //
  // With `count_idle`, it also notes per node how many of its idle GPUs (free share 1000) the claims
  // would take a share of, for whole_gpus_may_fit, which must be asked next.
  template <typename Overlaps>
  std::int64_t free_after_overlay(const ClusterState& state, std::span<const Claim> claims, const Overlaps& overlaps,
                                  bool count_idle = false) {
    if (gpu_offset_.empty()) {
      gpu_offset_.resize(state.node_count() + 1, 0);
      for (NodeId n = 0; n < state.node_count(); ++n) gpu_offset_[n + 1] = gpu_offset_[n] + state.gpu_count(n);
      demand_.assign(gpu_offset_.back(), 0);
    }
    touched_.clear();
    for (const Claim& c : claims) {
      if (!overlaps(c)) continue;
      for (const TaskPlacement& tp : *c.placement) {
        const TaskAssignment& a = tp.assignment;
        if (a.is_mig() || a.node >= state.node_count() || !state.eligible(a.node)) continue;
        for (const GpuIndex g : a.gpus) {
          if (g >= state.gpu_count(a.node)) continue;
          const std::size_t at = gpu_offset_[a.node] + g;
          if (demand_[at] == 0) touched_.push_back({a.node, g});
          demand_[at] += a.gpu_milli;
        }
      }
    }
    std::int64_t free = state.shares().total_free();
    if (count_idle && idle_taken_.empty()) idle_taken_.assign(state.node_count(), 0);
    for (const auto& [n, g] : touched_) {
      std::int64_t& d = demand_[gpu_offset_[n] + g];
      const MilliGpu f = state.shares().free_milli(n, g);
      free -= std::min<std::int64_t>(f, d);
      if (count_idle && f == kMilliPerGpu && d > 0 && idle_taken_[n]++ == 0) taken_nodes_.push_back(n);
      d = 0;
    }
    return free;
  }

  // After free_after_overlay(..., true) on the same state and claims: whether each group of `spec`
  // whose tasks take whole GPUs could still find its minimum of tasks on nodes with that many idle
  // GPUs once overlay() took the claims. A necessary condition, exact for whole GPUs: an idle GPU a
  // claim takes any share of is no longer idle, and a task of g whole GPUs needs g idle GPUs of one
  // eligible node. The count starts from the state's idle buckets (nodes per idle level), less what
  // the claims take on the nodes they touch, so it costs the levels and the claims, not a node scan.
  // A test the share check lets through can still fail here when the free GPUs are scattered over
  // nodes: a third of the placements of the ITP-04 conservative replay failed so (benchmarks/README.md).
  bool whole_gpus_may_fit(const ClusterState& state, const GangSpec& spec) {
    const gpusched::detail::ClusterIndex index = gpusched::detail::cluster_index(state);
    bool fits = true;
    for (const GangGroup& group : spec.groups) {
      const std::int64_t g = whole_gpus_per_task(group);
      if (g <= 0) continue;
      std::int64_t tasks = 0;
      for (const std::uint8_t key : index.model_keys())
        for (std::int32_t v = index.next_idle_level(key, static_cast<std::int32_t>(std::min<std::int64_t>(g, INT32_MAX)));
             v >= 0; v = index.next_idle_level(key, v + 1))
          if (const NodeBitset* nodes = index.idle_bucket(key, v)) tasks += std::int64_t{nodes->count()} * (v / g);
      for (const NodeId n : taken_nodes_) {
        const std::int64_t idle = state.shares().idle_gpus(n);
        tasks -= idle / g - (idle - idle_taken_[n]) / g;
      }
      if (tasks < group.min_replicas) {
        fits = false;
        break;
      }
    }
    forget_idle_taken();
    return fits;
  }
  // What free_after_overlay(..., true) counted, when whole_gpus_may_fit is not asked after all.
  void forget_idle_taken() {
    for (const NodeId n : taken_nodes_) idle_taken_[n] = 0;
    taken_nodes_.clear();
  }

  void restore() { state_.rollback(base_); }
  std::uint64_t cursor_steps() const { return cursor_steps_; }

 private:
  struct Mark {
    Seconds time = 0;
    ClusterState::Checkpoint checkpoint = 0;
    ReleaseLists::Cursor running;
  };
  // Moves a cursor (a state and its marks) to t: back by rolling back to the last mark at or before
  // t, then forward by releasing the running tasks that end by t.
  ClusterState& walk(ClusterState& f, std::vector<Mark>& marks, Seconds t) {
    while (marks.size() > 1 && marks.back().time > t) marks.pop_back();
    cursor_steps_ += f.checkpoint() - marks.back().checkpoint;
    f.rollback(marks.back().checkpoint);
    if (marks.back().time == t) return f;
    Mark m = marks.back();
    const std::span<const ReleaseEntry> kept = running_.kept;
    for (std::size_t i = m.running.k; i < m.running.k + 8 && i < kept.size() && kept[i].end <= t; ++i)
      __builtin_prefetch(kept[i].assignment);
    for (const ReleaseEntry* e; (e = running_.at(m.running)) != nullptr && e->end <= t; running_.advance(m.running)) {
      prefetch_ahead(m.running.k);
      (void)f.release_journaled(*e->assignment);
    }
    cursor_steps_ += m.running.position() - marks.back().running.position();
    m.time = t;
    m.checkpoint = f.checkpoint();
    marks.push_back(m);
    return f;
  }

  // The walk is bound by memory latency: each release reads a task assignment somewhere in the
  // caller's running jobs, then its GPU list (perf: half of ClusterState::release's samples were the
  // load of the assignment's node). Fetching them a few releases ahead hides most of it.
  void prefetch_ahead(std::size_t i) const {
    const std::span<const ReleaseEntry> kept = running_.kept;  // (the few more are not worth it)
    if (i + 8 < kept.size()) __builtin_prefetch(kept[i + 8].assignment);
    if (i + 4 < kept.size()) __builtin_prefetch(kept[i + 4].assignment->gpus.data());
  }

  ClusterState& state_;
  ReleaseLists running_;
  std::vector<std::int64_t> running_prefix_;  // [i]: the share the first i releases free (as far as asked)
  ReleaseLists::Cursor prefix_cursor_ = running_.start();  // the release after the last one summed
  Seconds now_ = 0;
  ClusterState::Checkpoint base_ = 0, started_top_ = 0;
  struct Cursor {
    ClusterState state;
    std::vector<Mark> marks;
  };
  static constexpr std::size_t kMaxCursors = 8;
  std::vector<std::unique_ptr<Cursor>> cursors_;
  std::vector<Mark> in_place_;  // the marks of `state` as the cursor (until a job starts)
  std::size_t copy_cost_ = 0;
  std::int64_t free_now_ = 0;
  std::uint64_t cursor_steps_ = 0;
  // free_after_overlay's scratch: the first GPU of each node in demand_, the claims' share per GPU
  // (zero between calls), the GPUs it touched.
  std::vector<std::size_t> gpu_offset_;
  std::vector<std::int64_t> demand_;
  std::vector<std::pair<NodeId, GpuIndex>> touched_;
  // whole_gpus_may_fit's: per node, the idle GPUs the claims take (zero between calls), and those nodes.
  std::vector<std::int32_t> idle_taken_;
  std::vector<NodeId> taken_nodes_;
};

// The bounds by counts, no placement: the share that overlaying the claims `overlaps` selects would
// leave on `state`, and for each group of whole-GPU tasks the tasks of its size that the nodes' idle
// GPUs could still hold then. A necessary condition for `spec` to place there once they are overlaid.
template <typename Overlaps>
bool may_fit_by_counts(Profile& profile, const ClusterState& state, std::span<const Claim> claims, const GangSpec& spec,
                       std::int64_t needed, const Overlaps& overlaps) {
  const bool whole = std::any_of(spec.groups.begin(), spec.groups.end(), [](const GangGroup& g) { return whole_gpus_per_task(g) > 0; });
  if (profile.free_after_overlay(state, claims, overlaps, whole) < needed) {
    profile.forget_idle_taken();
    return false;
  }
  return !whole || profile.whole_gpus_may_fit(state, spec);
}

// The claims a test at now overlays for a job that would end at `end`: the reservations that begin
// before then (the jobs the plan started are on the state of now already).
inline auto overlaid_at_now(Seconds now, Seconds end) {
  return [now, end](const Claim& c) { return c.start > now && c.start < end; };
}

// Starts only (BackfillOptions::starts_only): where a plan stops. Whether a job starts depends only
// on the jobs before it, so the plan stops after the last job that could still start now by counts
// against the claims made so far (the plan's test at now meets the same state with more taken: the
// jobs it starts, the reservations it overlays). Checked before the plan, then again whenever
// claims came that begin before that job would end.
class StartsOnlyStop {
 public:
  StartsOnlyStop(Profile& profile, std::span<const BlockedJob> blocked, Seconds now, Seconds resolution, std::size_t stop)
      : profile_(profile), blocked_(blocked), now_(now), resolution_(resolution), stop_(stop) {}

  // One past the last job at or after `from` that could start now beside `claims`.
  std::size_t at(std::span<const Claim> claims, std::size_t from) {
    if (stop_ > from && checked_ != kNever) {
      const Seconds end = end_now(stop_ - 1);
      if (std::all_of(claims.begin() + static_cast<std::ptrdiff_t>(checked_), claims.end(),
                      [&](const Claim& c) { return c.start >= end; }))
        checked_ = claims.size();
    }
    while (stop_ > from && checked_ != claims.size()) {
      const std::size_t j = stop_ - 1;
      if (may_fit_by_counts(profile_, profile_.at(now_), claims, *blocked_[j].spec, needed_milli(*blocked_[j].spec),
                            overlaid_at_now(now_, end_now(j))))
        checked_ = claims.size();
      else
        --stop_;
    }
    return stop_;
  }

 private:
  static constexpr std::size_t kNever = SIZE_MAX;
  Seconds end_now(std::size_t j) const { return end_after(now_, grid_duration(blocked_[j].runtime_estimate, resolution_)); }
  Profile& profile_;
  std::span<const BlockedJob> blocked_;
  Seconds now_, resolution_;
  std::size_t stop_;
  std::size_t checked_ = kNever;  // the claims the last job before stop_ was checked against
};

// One test of a gang at time t for [t, end).
struct FitTest {
  bool fits = false;
  GangResult result;  // set when a placement was tried
  bool tried = false;
};

// Claims are the plan's jobs: started ones (start == now; on the state of now already, overlaid only
// on later states) and reserved ones.
GPUSCHED_DECL FitTest test_fit(Profile& profile, std::span<const Claim> claims, const GangSpec& spec, Seconds now, Seconds t,
                        Seconds end, std::int64_t needed, const GangOptions& options, bool skip_reserved,
                        std::uint64_t& placements_tried, std::uint64_t& overlaid) {
  FitTest out;
  ClusterState& state = profile.at(t);
  // Before any overlay, a necessary condition: the claims active at the instant t hold exactly their
  // share then, on resources free at t (of running work and of each other), so the overlay takes at
  // least that much, however it clamps. Most tests that cannot fit stop here (perf of the ITP-04
  // conservative replay: 60 % of the tests, each of which overlaid ~45 tasks and rolled them back).
  if (t != now) {
    std::int64_t active = 0;
    for (const Claim& c : claims)
      if (c.start <= t && c.end > t) active = saturating_add(active, c.gpu_milli);
    if (state.shares().total_free() - active < needed) return out;
  }
  auto overlaps = [&](const Claim& c) {
    if (!(c.start < end && c.end > t)) return false;
    const bool started = c.start == now;
    return !(started ? t == now : skip_reserved);
  };
  // A gang of whole-GPU tasks also needs nodes with that many idle GPUs each (whole_gpus_may_fit).
  if (t != now && !may_fit_by_counts(profile, state, claims, spec, needed, overlaps)) return out;
  const ClusterState::Checkpoint mark = state.checkpoint();
  for (const Claim& c : claims) {
    if (!overlaps(c)) continue;
    Profile::overlay(state, c);
    overlaid += c.placement->size();
  }
  if (state.shares().total_free() >= needed || t == now) {
    out.result = place_gang(state, spec, options);
    out.tried = true;
    ++placements_tried;
    out.fits = out.result.placed();
  }
  state.rollback(mark);
  return out;
}

// Every task of job `job` (an index into the caller's list) expected to end at `end`, as the plan
// releases them.
GPUSCHED_DECL void add_releases(std::vector<ReleaseEntry>& out, Seconds end, std::span<const RunningTask> tasks,
                                std::size_t job) {
  for (const RunningTask& t : tasks) out.push_back(release_of(end, t.assignment, static_cast<std::uint32_t>(job)));
}

// Every task of the running jobs in `order` ((end, index into `running`), ascending), each at its
// job's end as `order` gives it.
GPUSCHED_DECL void add_job_releases(std::vector<ReleaseEntry>& out, std::span<const RunningJob> running,
                                    std::span<const std::pair<Seconds, std::size_t>> order) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    // Bound by memory latency (each job and its tasks are somewhere in the caller's list): fetched
    // a few jobs ahead.
    if (i + 8 < order.size()) __builtin_prefetch(&running[order[i + 8].second]);
    if (i + 4 < order.size()) __builtin_prefetch(running[order[i + 4].second].tasks.data());
    add_releases(out, order[i].first, running[order[i].second].tasks, order[i].second);
  }
}

// The plan on running work given as its tasks' releases: `running` sorted by end (the scheduling
// cycle keeps its running jobs' releases in that order instead of copying and sorting them for
// every plan), and `more` in any order (the cycle's starts), placed after running releases of the
// same end; the two are read as one list (ReleaseLists), never copied into one. `not_before`: a start time before which none of the blocked jobs can start (the
// scheduling cycle knows one from an earlier plan of the same shape); times before it are not tested.
// `prefix`: in, an earlier plan to resume (PlanPrefix: its `jobs` are the first of `blocked`; 0: none),
// its reservations and waiting records moved into the plan returned; out, what this plan learned over
// all of `blocked` (its reservations and waiting records are the plan's: the caller moves them back).
GPUSCHED_DECL Result<BackfillPlan> plan_backfill_on(ClusterState& state, std::span<const ReleaseEntry> running,
                                             std::vector<ReleaseEntry> more, std::span<const BlockedJob> blocked,
                                             Seconds now, const BackfillOptions& options, Seconds not_before = 0,
                                             PlanPrefix* prefix = nullptr);

GPUSCHED_DECL void insert_time(std::vector<Seconds>& times, Seconds t) {
  const auto at = std::lower_bound(times.begin(), times.end(), t);
  if (at == times.end() || *at != t) times.insert(at, t);
}

}  // namespace detail

GPUSCHED_DECL std::string_view backfill_mode_name(BackfillMode mode) {
  switch (mode) {
    case BackfillMode::kNone: return "none";
    case BackfillMode::kEasy: return "easy";
    case BackfillMode::kConservative: return "conservative";
  }
  return "?";
}

GPUSCHED_DECL std::vector<NodeId> Reservation::nodes() const {
  std::vector<NodeId> out;
  for (const TaskPlacement& t : placement) out.push_back(t.assignment.node);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

GPUSCHED_DECL Seconds expected_end(const RunningJob& job, Seconds now, Seconds resolution) {
  if (resolution <= 0) resolution = 1;
  const std::optional<Seconds> end = detail::estimated_end(job);
  return end ? detail::grid_end(*end, now, resolution) : kForever;
}

GPUSCHED_DECL Result<BackfillPlan> plan_backfill(ClusterState& state, std::span<const RunningJob> running,
                                          std::span<const BlockedJob> blocked, Seconds now,
                                          const BackfillOptions& options) {
  std::vector<detail::ReleaseEntry> releases;
  for (std::size_t j = 0; j < running.size(); ++j)
    detail::add_releases(releases, expected_end(running[j], now, options.resolution), running[j].tasks, j);
  std::stable_sort(releases.begin(), releases.end(), detail::earlier_end);
  return detail::plan_backfill_on(state, releases, {}, blocked, now, options);
}

// One function on purpose: one pass over the blocked jobs whose claims, bounds, time points and cursors every
// step reads and extends.
GPUSCHED_DECL Result<BackfillPlan> detail::plan_backfill_on(ClusterState& state, std::span<const ReleaseEntry> running,
                                                     std::vector<ReleaseEntry> more, std::span<const BlockedJob> blocked,
                                                     Seconds now, const BackfillOptions& options, Seconds not_before,
                                                     PlanPrefix* prefix) {
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

  // Candidate start times: now and every expected end within the window. Work ending past the
  // window holds its resources past every start this plan tests; so does work that never ends
  // (kForever), even when the window reaches the end of time (a `now` near INT64_MAX: a time point
  // at kForever was a slot past the bound's arrays).
  auto beyond = [&](const detail::ReleaseEntry& e) { return e.end > horizon || e.end == kForever; };
  running = running.first(static_cast<std::size_t>(std::partition_point(running.begin(), running.end(), [&](const detail::ReleaseEntry& e) { return !beyond(e); }) - running.begin()));
  std::erase_if(more, beyond);
  std::stable_sort(more.begin(), more.end(), detail::earlier_end);
  detail::Profile profile(state, {running, more}, now);
  std::vector<Seconds> times{now};
  detail::for_each_end(running, [&](Seconds end) {
    if (end != times.back()) times.push_back(end);
  });
  for (const detail::ReleaseEntry& e : more)  // (a few: the jobs this cycle started)
    if (const auto at = std::lower_bound(times.begin(), times.end(), e.end); at == times.end() || *at != e.end) times.insert(at, e.end);
  // The idle-GPU bound, a necessary condition (the answers are the same without it). Conservative
  // searches a reservation for every job against the claims before it: the bound counts their task
  // sizes over one walk of the releases. EASY searches one for its head only, and tests the jobs
  // behind it at now, few of them (failed_now): that walk cost more than the tests it saved (a
  // fifth of a cycle after one event at 10,000 nodes, benchmarks/README.md), so only the first job,
  // most often the head, gets the one-job bound (a walk that stops at the first slot with room,
  // claims not counted). A resumed plan (PlanPrefix) counts only the jobs after the earlier one's.
  const std::size_t resumed = prefix != nullptr && prefix->jobs <= blocked.size() ? prefix->jobs : 0;
  // Placements of started and reserved jobs live here (stable addresses for the claims).
  std::vector<std::vector<TaskPlacement>> placements(blocked.size());
  std::vector<detail::Claim> claims;
  // Starts only: the plan stops after the last job that could still start now (StartsOnlyStop).
  std::optional<detail::StartsOnlyStop> starts_only;
  if (options.starts_only && !options.explain)
    starts_only.emplace(profile, blocked, now, res, std::min(blocked.size(), std::max(resumed, options.depth)));
  std::size_t stop = starts_only ? starts_only->at(claims, resumed) : blocked.size();
  const std::span<const BlockedJob> bounded = options.mode == BackfillMode::kConservative
                                                  ? blocked.subspan(resumed, stop - resumed)
                                                  : blocked.subspan(resumed, std::min<std::size_t>(1, blocked.size() - resumed));
  detail::IdleGpuBound bound(state, profile.releases(), times, bounded);
  std::size_t fcfs_head = blocked.size();  // kNone: the first job that did not start
  std::vector<std::size_t> next_bad;
  std::vector<std::pair<detail::ShapeKey, Seconds>> failed_now;  // EASY: shapes that could not start now, for so long
  detail::ShapeMemo memo;  // conservative
  // Job j holds `placement` during [t, end): a claim the later jobs' tests overlay.
  auto claim_job = [&](std::size_t j, Seconds t, Seconds end, std::vector<TaskPlacement> placement) {
    placements[j] = std::move(placement);
    std::int64_t held = 0;
    for (const TaskPlacement& p : placements[j])
      if (!p.assignment.is_mig()) held = detail::saturating_add(held, detail::held_milli(p.assignment));
    claims.push_back({j, t, end, blocked[j].spec, &placements[j], held});
    bound.add_claim(placements[j], t, end);
    if (end <= horizon) detail::insert_time(times, end);
  };

  if (resumed > 0) {
    plan.reservations = std::move(prefix->reservations);
    plan.waiting = std::move(prefix->waiting);
    for (const Reservation& r : plan.reservations) claim_job(r.job, r.start, r.end, r.placement);
    memo = std::move(prefix->memo);
    failed_now = std::move(prefix->failed_now);
    if (prefix->fcfs_head) fcfs_head = *prefix->fcfs_head;
  }

  for (std::size_t i = resumed; i < stop; ++i) {
    if (starts_only && i >= (stop = starts_only->at(claims, i))) break;
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
    // EASY behind the head, without reasons: a job of a shape that could not start now for no longer
    // cannot start now either (the plan only adds claims as it goes), so it is not tested again.
    const bool behind_head = options.mode == BackfillMode::kEasy && !plan.reservations.empty();
    const std::optional<detail::ShapeKey> key = behind_head && !options.explain ? detail::shape_key(spec) : std::nullopt;
    if (key && std::any_of(failed_now.begin(), failed_now.end(),
                           [&](const auto& f) { return f.first == *key && f.second <= duration; })) {
      plan.waiting.push_back({i, Verdict::kNotNow, {}});
      continue;
    }
    const std::int64_t needed = detail::needed_milli(spec);
    auto end_at = [&](Seconds t) { return detail::end_after(t, duration); };
    bound.bad_slots(spec, next_bad);
    auto may_fit_now = [&] { return next_bad[0] >= bound.slot_of(end_at(now)); };
    auto claim = [&](Seconds t, std::vector<TaskPlacement> placement) {
      const Seconds end = end_at(t);
      claim_job(i, t, end, std::move(placement));
      return end;
    };
    // Now: on the state with the jobs started so far, and the reservations that overlap.
    auto test_now = [&] {
      return detail::test_fit(profile, claims, spec, now, now, end_at(now), needed, gang_options, false,
                              plan.placements_tried, plan.overlaid_tasks);
    };
    // The reasons it cannot start now (placed on the state of now, with the reservations that overlap).
    auto now_reasons = [&](detail::FitTest& test) -> detail::FitTest& {
      if (!test.tried && !options.explain) {
        test.result.verdict = Verdict::kNotNow;  // unexplained: no placement only to say why
        return test;
      }
      if (!test.tried) test = test_now();
      return test;
    };

    const bool conservative = options.mode == BackfillMode::kConservative;
    const std::optional<detail::ShapeKey> memo_key = conservative ? detail::shape_key(spec) : std::nullopt;
    const std::int64_t replicas = memo_key ? spec.groups.front().replicas : 0;
    const Seconds job_not_before = std::max(not_before, memo.not_before(memo_key, replicas, duration, now));
    auto remember = [&](Seconds earliest) { memo.record(memo_key, replicas, duration, earliest); };

    detail::FitTest now_test;
    if (job_not_before <= now && may_fit_now()) now_test = test_now();
    if (now_test.fits) {
      profile.add_started(spec, now_test.result.tasks);
      remember(now);
      const Seconds end = claim(now, std::move(now_test.result.tasks));
      plan.startable.push_back({i, end, placements[i]});
      continue;
    }
    if (now_test.tried &&
        (now_test.result.verdict == Verdict::kInfeasible || now_test.result.verdict == Verdict::kInvalid)) {
      plan.waiting.push_back({i, now_test.result.verdict, now_test.result.reasons});
      continue;
    }
    if (options.mode == BackfillMode::kNone) {
      fcfs_head = i;
      const detail::FitTest& why = now_reasons(now_test);
      plan.waiting.push_back({i, why.result.verdict, why.result.reasons});
      continue;
    }

    const bool protect = options.mode == BackfillMode::kConservative || plan.reservations.empty();
    if (!protect) {
      if (key) failed_now.emplace_back(*key, duration);
      // EASY, behind the head: it may only start now. Say whether a reservation is what stops it.
      const detail::FitTest& why = now_reasons(now_test);
      BackfillWait wait{i, why.result.verdict, why.result.reasons};
      if (why.result.verdict == Verdict::kNotNow && options.explain)
        for (const detail::Claim& c : claims)
          if (c.start > now && c.start < end_at(now)) {
            const detail::FitTest free_test = detail::test_fit(profile, claims, spec, now, now, end_at(now), needed,
                                                               gang_options, true, plan.placements_tried, plan.overlaid_tasks);
            if (free_test.fits)
              wait.reasons = {{ReasonKind::kReservedForOther, Unit::kNone, -1, -1, 0, static_cast<std::int32_t>(c.job)}};
            break;
          }
      plan.waiting.push_back(std::move(wait));
      continue;
    }

    // The earliest later time at which it fits for its whole duration. Times and the ends of their
    // intervals only grow, so the slots are found by cursors, and the share bound (what running work
    // frees by t) once met stays met.
    bool reserved = false;
    std::size_t first_slot = 0, stop_slot = 0;
    bool share_ok = false;
    for (std::size_t k = 1; k < times.size() && times[k] <= horizon; ++k) {
      const Seconds t = times[k];
      if (t < job_not_before) continue;
      first_slot = bound.slot_of(t, first_slot);
      stop_slot = bound.slot_of(end_at(t), stop_slot);
      if (next_bad[first_slot] < stop_slot) continue;
      if (!share_ok && !(share_ok = profile.may_fit(t, needed))) continue;
      detail::FitTest test = detail::test_fit(profile, claims, spec, now, t, end_at(t), needed, gang_options, false,
                                              plan.placements_tried, plan.overlaid_tasks);
      if (!test.fits) {
        if (test.tried && (test.result.verdict == Verdict::kInfeasible || test.result.verdict == Verdict::kInvalid)) {
          now_test = std::move(test);
          break;
        }
        continue;
      }
      remember(t);
      const Seconds end = claim(t, std::move(test.result.tasks));
      plan.reservations.push_back({i, t, end, placements[i]});
      reserved = true;
      break;
    }
    if (!reserved) {
      // The memo says when a job can start, not whether it ever can: a job it kept from its test at
      // now is tested there as it would have been, so that one that fits no node at all (more than
      // the job it learned from asks) still says kInfeasible.
      if (!now_test.tried && not_before <= now && job_not_before > now && may_fit_now()) now_test = test_now();
      const detail::FitTest& why = now_reasons(now_test);
      if (why.result.verdict == Verdict::kInfeasible || why.result.verdict == Verdict::kInvalid) {
        plan.waiting.push_back({i, why.result.verdict, why.result.reasons});
        continue;
      }
      remember(kForever);
      BackfillWait wait{i, Verdict::kNotNow, {{ReasonKind::kBeyondWindow, Unit::kNone, -1, -1, 0, -1}}};
      for (const Reason& r : why.result.reasons) wait.reasons.push_back(r);
      plan.waiting.push_back(std::move(wait));
    }
  }
  plan.time_points = times.size();
  plan.cursor_steps = profile.cursor_steps();
  profile.restore();
  if (prefix != nullptr) {
    prefix->jobs = stop;
    prefix->memo = std::move(memo);
    prefix->failed_now = std::move(failed_now);
    prefix->fcfs_head = fcfs_head < blocked.size() ? std::optional<std::size_t>(fcfs_head) : std::nullopt;
  }
  return plan;
}

}  // namespace gpusched::scheduler
