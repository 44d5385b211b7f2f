// gpusched/scheduler/session.hpp — the scheduler that lives across cycles.
//
// What it is for. An orchestrator runs a scheduling cycle every second; a simulator runs one at
// every event. Between two cycles little changes: a job arrives, one ends, a node fails. `run_cycle`
// (cycle.hpp) is handed the whole world each time and rebuilds what it needs from it: every pending
// job's gang spec compiled and checked again, every queue sorted again, the running jobs' queues and
// usage summed again, a waiting record with reasons written for every job that stays pending. A
// `Session` keeps those between cycles and is told what changes:
//
//   auto session = Session::open(state, queues, options).value();    // the state is borrowed
//   session.submit(job);                  // compiled and checked once, placed in its queue's order
//   session.finish("train-7");            // its tasks released, its queue's usage reduced
//   auto d = session.cycle(now);          // decide and commit: starts reserved, jobs moved
//   auto p = session.cycle(now, CycleApply::kPlan);   // decide only: nothing changes at all
//
// What it keeps: the pending jobs in submission order (requeued ones go to the end), each with its
// gang spec and its place in its queue's policy order (priority, then submit time, then that
// order); the running jobs (a finished job's place is taken by the last one), each with its queue,
// the queues' usage (RunningUsage) and, for requeueing after an eviction, the PendingJob it
// started from; the backfill profile's inputs (the running jobs by estimated end, every running
// task's release at its job's estimated end, the jobs that may grow), changed in place by the
// events; the nominations of the last committed cycle; the failure history of the nodes; and, when
// the last committed cycle decided nothing, what it found for the jobs it served (cycle.hpp,
// CyclePrefix): at an instant where jobs only arrived since, the next cycle serves and plans only
// the new ones (without queues, preemption or reasons; the same answers: PlanPrefix says
// why, and Session::prefix_usable when).
//
// The same decisions as run_cycle. A cycle is the one cycle engine of cycle.hpp run on the kept
// lists: `cycle(now)` decides exactly what `run_cycle(state, running(), pending(), queues, now,
// options, held())` decides on the same state (tests/scheduler/session_property_test.cpp checks it
// byte for byte over long random event sequences, every policy and modifier); what the session
// saves is the rebuilding. With `CycleDetail::kDecisions` it also skips explaining: no waiting
// record for a job that merely waits (kNotNow), no placement made only to say why (docs/cycle.md,
// "Sessions").
//
// Commit or plan. `kCommit` applies the decisions: the state keeps the starts' and grows'
// reservations and the evictions' releases (as run_cycle does), started jobs move to running,
// evicted ones back to pending (with the preemptor in `evicted_by`), shrunk and grown jobs change
// their tasks, and the cycle's nominations are held for the next one. `kPlan` (a dry run) changes
// nothing — not the state, not the lists, not the held nominations — whether jobs run or not.
//
// Events. Jobs: submit, add_running (a job already running when the session opens: its tasks are
// held on the state by the caller), finish, cancel, requeue (a running job stopped by its caller,
// a failure say, to wait again), shrink, and the facts the policies read: priority, runtime
// estimate, last checkpoint. Nodes: `fail` (on_failure on the session's lists); every other
// cluster event (cordon, recovery, a node added or removed, GPU health, MIG layouts) goes to the
// ClusterState itself, which the session reads at every cycle. An event that cannot be honoured is
// an Error naming the job (kUnknownName, kDuplicate) and changes nothing.
//
// Threads: a session and its state belong to one thread at a time (like run_cycle); const members
// may be read from many threads while none changes it.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpusched/scheduler/cycle.hpp"

namespace gpusched::scheduler {

// Whether a cycle's decisions are applied (to the state and the session's lists) or only returned.
enum class CycleApply : std::uint8_t { kCommit, kPlan };

class Session {
 public:
  // A session over `state` (borrowed: it must outlive the session), with the queue tree and quotas
  // of the fairness family (validated here, naming the queue and field) and the cycle's options
  // (`options.usage` and `options.dry_run` are the session's own: ignored).
  static Result<Session> open(ClusterState& state, std::vector<fairness::QueueConfig> queues = {},
                              CycleOptions options = {});

  // ---- events: jobs --------------------------------------------------------------------------------
  // A job joins its queue. A bad request is not an error: like run_cycle, the job waits kInvalid.
  // Refused (kDuplicate) when a job of that name is pending or running.
  Status submit(PendingJob job);
  // A job that already runs: its tasks are held on the state (the caller reserved them). With
  // `requeue_as`, an eviction sends it back to pending as that job; without, an evicted job is gone.
  Status add_running(RunningJob job, std::optional<PendingJob> requeue_as = std::nullopt);
  // A running job ended: its tasks are released on the state.
  Status finish(std::string_view job);
  // A pending job leaves its queue, or a running job stops and leaves (its tasks released).
  Status cancel(std::string_view job);
  // A running job stopped by its caller (a failure) waits again from `not_before` after `restarts`
  // restarts: its tasks are released and it is requeued (kState when it has nothing to requeue as).
  Status requeue(std::string_view job, Seconds not_before, std::int32_t restarts);
  // A running elastic job loses the tasks with these indices (released on the state); it may not
  // go below its minimum (kInvalidValue).
  Status shrink(std::string_view job, std::span<const std::uint32_t> tasks);
  // The facts the cycle reads that change while a job waits or runs: its order (priority), its
  // expected run time (backfill: pending, or from its start when running), its last checkpoint
  // (running: what an eviction loses), when it may start (pending: a backoff).
  Status set_priority(std::string_view job, std::int32_t priority);
  Status set_runtime_estimate(std::string_view job, Seconds estimate);
  Status set_last_checkpoint(std::string_view job, Seconds t);
  Status set_not_before(std::string_view job, Seconds t);
  // A running job restarted in place (a resize that restarts it, in the simulator): its run counts
  // from `t` (the minimum runtime, the work an eviction loses, its expected end).
  Status set_start_time(std::string_view job, Seconds t);

  // ---- events: nodes -------------------------------------------------------------------------------
  // A node (gpu < 0) or one GPU failed: on_failure over the running jobs, then its answer applied
  // to the lists: shed tasks dropped, restarted jobs requeued with their backoff (or gone when the
  // session has nothing to requeue them as).
  Result<FailureResponse> fail(NodeId node, int gpu, Seconds now, const FailureOptions& options = {});

  // ---- cycles --------------------------------------------------------------------------------------
  // One scheduling cycle at `now` over what the session holds (cycle.hpp: the same decisions as
  // run_cycle on these lists), committed or planned, with reasons or decisions only. Indices in the
  // decisions refer to pending() and running() as they were before the cycle.
  Result<CycleDecisions> cycle(Seconds now, CycleApply apply = CycleApply::kCommit,
                               CycleDetail detail = CycleDetail::kFull);

  // A fresh session over the same state, queues and options, given the same jobs in the same order
  // and the same held nominations: what a caller that keeps nothing would build. Its cycles decide
  // what this one's do (`simulate --rebuild-cycles` checks a whole simulation that way).
  Result<Session> rebuilt() const;

  // ---- what it holds -------------------------------------------------------------------------------
  std::span<const PendingJob> pending() const { return pending_; }
  std::span<const RunningJob> running() const { return running_; }
  std::span<const Nomination> held() const { return held_; }
  std::span<const fairness::QueueConfig> queues() const { return queues_; }
  const CycleOptions& options() const { return options_; }
  const RunningUsage& usage() const { return usage_; }
  ClusterState& state() const { return *state_; }
  const PendingJob* find_pending(std::string_view job) const;
  const RunningJob* find_running(std::string_view job) const;

 private:
  Session(ClusterState& state, std::vector<fairness::QueueConfig> queues, CycleOptions options);
  static constexpr std::size_t kNone = SIZE_MAX;

  std::size_t pending_index(std::string_view job) const;  // kNone when not pending
  std::size_t running_index(std::string_view job) const;  // kNone when not running
  std::size_t queue_of_name(std::string_view queue) const;  // kNone: unknown or not a leaf
  void enqueue(std::size_t p);                 // into its queue's order (or unqueued)
  void dequeue(std::size_t p);
  void remove_pending(std::span<const std::size_t> sorted_indices);
  void append_pending(PendingJob job);
  Status append_running(RunningJob job, std::optional<PendingJob> origin);
  void remove_running(std::size_t j);          // its place taken by the last one; nothing released
  Status release_running(std::size_t j);       // its tasks given back to the state
  void requeue_running(std::size_t j, const std::string& evicted_for, std::optional<Seconds> not_before,
                       std::optional<std::int32_t> restarts);
  void drop_tasks(std::size_t j, std::span<const std::uint32_t> tasks);
  void commit(const CycleDecisions& d);
  Status check_name_free(std::string_view job) const;
  // Changes a fact of running job `job` (kUnknownName when it is not running).
  template <typename Change>
  Status change_running(std::string_view job, Change&& change) {
    const std::size_t j = running_index(job);
    if (j == kNone) return unknown(job, "running");
    change(running_[j]);
    return {};
  }
  Error unknown(std::string_view job, const char* what) const;

  ClusterState* state_;
  std::vector<fairness::QueueConfig> queues_;
  CycleOptions options_;
  std::unordered_map<std::string, std::size_t> queue_index_;  // leaf queues only
  bool fair_ = false;

  // Pending jobs in submission order; seq_ their submission numbers (ascending), by which names map.
  std::vector<PendingJob> pending_;
  std::vector<std::uint64_t> seq_;
  std::vector<Result<GangSpec>> specs_;
  std::vector<std::optional<detail::ShapeKey>> keys_;
  std::vector<std::vector<std::size_t>> members_;  // per queue: pending indices in policy order
  std::vector<std::size_t> unqueued_;              // pending indices that wait kInvalid, ascending
  std::unordered_map<std::string, std::uint64_t> pending_seq_;
  std::uint64_t next_seq_ = 0;

  // Running jobs (slots: a removed job's slot is taken by the last one).
  std::vector<RunningJob> running_;
  std::vector<std::optional<PendingJob>> origin_;  // what each is requeued as
  std::vector<std::size_t> running_queue_;         // queue index (0 without queues)
  std::unordered_map<std::string, std::size_t> running_slot_;
  RunningUsage usage_;
  // The running jobs with an estimate as (expected end on the backfill grid, slot), ascending: the
  // order the backfill profile releases them in (releases_ follows it), kept by each event instead
  // of sorted by every cycle. The grid is absolute (backfill.hpp), so the keys do not move with
  // `now`. The first by_end_sorted_ are in order, the rest appended since and merged in by
  // by_end_settle (when the releases are remade, or when they grow many: a session opened with
  // 50,000 running jobs does not pay an insertion into a long vector for each).
  std::vector<std::pair<Seconds, std::size_t>> by_end_;
  std::size_t by_end_sorted_ = 0;
  std::optional<Seconds> grid_key(std::size_t j) const;  // running_[j]'s key (none without an estimate)
  void by_end_insert(std::size_t j);  // as running_[j] is now
  void by_end_erase(std::size_t j);   // as running_[j] is now
  // Job `from` is about to take slot `to` (to < from) with the same end: its entries move among
  // those of that end, instead of leaving and rejoining lists of 50,000 entries (a finish did three
  // such moves of each list, a fifth of a one-event cycle at 10,000 nodes).
  void by_end_renumber(std::size_t from, std::size_t to);
  std::vector<std::pair<Seconds, std::size_t>>::iterator by_end_find(Seconds end, std::size_t j);
  bool by_end_in_order(std::vector<std::pair<Seconds, std::size_t>>::iterator at) const;
  void by_end_settle();
  std::vector<std::size_t> elastic_;  // slots of the running jobs that may grow (CycleKept::elastic)
  // CycleKept::releases: every running task's release at its job's grid key, or at the floor of the
  // last cycle (the first grid point after its `now`) when that is later, sorted by (that end, job
  // slot): changed in place by the events that change a running job's tasks, end or slot, remade at
  // a cycle after many (valid_ false), brought to each cycle's floor by raise_floor.
  // A list sorted by (end, job) from which an erase moves the shorter side: the entries before
  // `head` are gone (a simulator finishes the jobs with the earliest ends, near the front of a list
  // of 50,000: an erase there moved nearly all of it).
  struct ReleaseList {
    std::vector<detail::ReleaseEntry> entries;
    std::size_t head = 0;
    using iterator = std::vector<detail::ReleaseEntry>::iterator;
    iterator begin() { return entries.begin() + static_cast<std::ptrdiff_t>(head); }
    iterator end() { return entries.end(); }
    std::size_t size() const { return entries.size() - head; }
    std::span<const detail::ReleaseEntry> view() const { return std::span(entries).subspan(head); }
    void clear() {
      entries.clear();
      head = 0;
    }
    void erase(iterator first, iterator last);
  };
  ReleaseList releases_;
  // CycleKept::fresh_releases: those of the jobs that joined since the list above was remade or
  // last took them in, in the same order (a short list: an insertion into the long one moved half
  // of it).
  ReleaseList fresh_releases_;
  // False again in a copy of the session: the copied releases point into this session's jobs.
  struct ValidUntilCopied {
    bool value = false;
    ValidUntilCopied(bool v = false) : value(v) {}  // NOLINT: assigned from bool
    ValidUntilCopied(const ValidUntilCopied&) {}
    ValidUntilCopied(ValidUntilCopied&& o) noexcept : value(o.value) {}
    ValidUntilCopied& operator=(const ValidUntilCopied&) {
      value = false;
      return *this;
    }
    ValidUntilCopied& operator=(ValidUntilCopied&& o) noexcept {
      value = o.value;
      return *this;
    }
    explicit operator bool() const { return value; }
  };
  ValidUntilCopied releases_valid_;
  std::size_t release_changes_ = 0;  // since the last cycle
  static constexpr std::size_t kReleaseChanges = 16;
  Seconds releases_floor_ = 0;
  std::span<const detail::ReleaseEntry> releases_for(Seconds now);
  void raise_floor(Seconds floor);
  static ReleaseList::iterator releases_at(ReleaseList& list, std::size_t j, Seconds end);
  void releases_insert(std::size_t j, Seconds end);
  void releases_erase(std::size_t j, Seconds end);
  static std::pair<ReleaseList::iterator, ReleaseList::iterator> releases_of(ReleaseList& list, std::size_t j, Seconds end);

  // What the last committed cycle left for an arrival-only instant (cycle.hpp, CyclePrefix): usable
  // while no event but a submit came since (prefix_valid_; the events forget it), the state is as
  // it was left (its generation) and the times allow it (prefix_usable). prefix_pending_: the
  // pending jobs it knew (a change to a later one's facts changes only that job).
  detail::CyclePrefix prefix_;
  bool prefix_valid_ = false;
  std::uint64_t prefix_generation_ = 0;
  std::size_t prefix_pending_ = 0;
  Seconds prefix_backoff_end_ = 0;  // the first end of a backoff after the prefix's cycle
  bool prefix_usable(Seconds now) const;
  void forget_prefix_of(std::size_t p) {
    if (p < prefix_pending_) prefix_valid_ = false;
  }

  std::vector<Nomination> held_;
  FailureHistory history_;
  GangCapacityCache capacity_cache_;  // capacity at empty, refreshed per capacity generation
};

}  // namespace gpusched::scheduler

#if GPUSCHED_HEADER_ONLY
#include "gpusched/scheduler/detail/session_impl.hpp"
#endif
