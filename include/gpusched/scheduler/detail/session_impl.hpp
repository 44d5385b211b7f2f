// Implementation of gpusched/scheduler/session.hpp (included at its end,
// or, under GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp)).
#pragma once

#include <type_traits>

#include "gpusched/core/config.hpp"
#include "gpusched/scheduler/session.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_set>

namespace gpusched::scheduler {

GPUSCHED_CTOR_DECL Session::Session(ClusterState& state, std::vector<fairness::QueueConfig> queues, CycleOptions options)
    : state_(&state), queues_(std::move(queues)), options_(std::move(options)) {
  fair_ = !queues_.empty();
  options_.usage = nullptr;
  options_.dry_run = false;
  // Jobs join leaf queues: a queue no other queue names as its parent (one pass, not a scan per queue:
  // a tree may have tens of thousands of queues).
  const auto parents = fairness::parent_queue_names(queues_);
  for (std::size_t q = 0; q < queues_.size(); ++q)
    if (!parents.contains(queues_[q].name)) queue_index_.emplace(queues_[q].name, q);
  members_.assign(fair_ ? queues_.size() : 1, {});
}

GPUSCHED_DECL Result<Session> Session::open(ClusterState& state, std::vector<fairness::QueueConfig> queues,
                                            CycleOptions options) {
  // The queues are checked once, by the cycle itself on an empty world (the fairness family's
  // rules and messages); a cycle of nothing changes nothing.
  options.usage = nullptr;
  options.dry_run = true;
  auto check = run_cycle(state, {}, {}, queues, 0, options);
  if (!check) return check.error();
  return Session(state, std::move(queues), std::move(options));
}

// ---- lookups ----------------------------------------------------------------------------------------

GPUSCHED_DECL std::size_t Session::pending_index(std::string_view job) const {
  auto it = pending_seq_.find(std::string(job));
  if (it == pending_seq_.end()) return kNone;
  return static_cast<std::size_t>(std::lower_bound(seq_.begin(), seq_.end(), it->second) - seq_.begin());
}

GPUSCHED_DECL std::size_t Session::running_index(std::string_view job) const {
  auto it = running_slot_.find(std::string(job));
  return it == running_slot_.end() ? kNone : it->second;
}

GPUSCHED_DECL std::size_t Session::queue_of_name(std::string_view queue) const {
  if (!fair_) return 0;
  auto it = queue_index_.find(std::string(queue));
  return it == queue_index_.end() ? kNone : it->second;
}

GPUSCHED_DECL const PendingJob* Session::find_pending(std::string_view job) const {
  const std::size_t p = pending_index(job);
  return p == kNone ? nullptr : &pending_[p];
}

GPUSCHED_DECL const RunningJob* Session::find_running(std::string_view job) const {
  const std::size_t j = running_index(job);
  return j == kNone ? nullptr : &running_[j];
}

GPUSCHED_DECL Error Session::unknown(std::string_view job, const char* what) const {
  return Error{"job \"" + std::string(job.substr(0, 200)) + "\": not " + what, ErrorCode::kUnknownName, "job"};
}

GPUSCHED_DECL Status Session::check_name_free(std::string_view job) const {
  if (pending_seq_.contains(std::string(job)) || running_slot_.contains(std::string(job)))
    return Error{"job \"" + std::string(job.substr(0, 200)) + "\": already pending or running", ErrorCode::kDuplicate,
                 "job"};
  return {};
}

// ---- the pending side -------------------------------------------------------------------------------

// Policy order within a queue, as the cycle sorts it: the options' order key (CycleOptions::order),
// then priority (higher first), submit time, index.
GPUSCHED_DECL void Session::enqueue(std::size_t p) {
  const std::size_t q = specs_[p] ? queue_of_name(pending_[p].job.queue) : kNone;
  if (q == kNone) {
    unqueued_.insert(std::lower_bound(unqueued_.begin(), unqueued_.end(), p), p);
    return;
  }
  std::vector<std::size_t>& m = members_[q];
  const JobOrder* order = options_.order;
  const std::int64_t key = order ? order->key(pending_[p]) : 0;
  const auto before = [&](std::size_t a) {  // does a go before p?
    return detail::queue_order_before(pending_[a], a, order ? order->key(pending_[a]) : 0, pending_[p], p, key);
  };
  const auto at = std::partition_point(m.begin(), m.end(), before);
  m.insert(at, p);
}

GPUSCHED_DECL void Session::dequeue(std::size_t p) {
  forget_prefix_of(p);
  auto drop = [p](std::vector<std::size_t>& v) {
    auto it = std::find(v.begin(), v.end(), p);
    if (it == v.end()) return false;
    v.erase(it);
    return true;
  };
  if (drop(unqueued_)) return;
  const std::size_t q = queue_of_name(pending_[p].job.queue);
  if (q != kNone && drop(members_[q])) return;
  for (auto& m : members_)
    if (drop(m)) return;
}

GPUSCHED_DECL void Session::append_pending(PendingJob job) {
  const std::uint64_t seq = next_seq_++;
  pending_seq_[job.job.name] = seq;
  specs_.push_back(detail::pending_spec(job.job));
  keys_.push_back(specs_.back() ? detail::shape_key(*specs_.back()) : std::nullopt);
  pending_.push_back(std::move(job));
  seq_.push_back(seq);
  enqueue(pending_.size() - 1);
}

// Removes pending jobs (ascending indices) and renumbers the kept ones in every queue: O(pending).
GPUSCHED_DECL void Session::remove_pending(std::span<const std::size_t> gone) {
  if (gone.empty()) return;
  prefix_valid_ = false;  // (the indices move)
  const std::size_t n = pending_.size();
  std::vector<std::size_t> renumber(n, kNone);
  std::size_t kept = 0;
  for (std::size_t p = 0, g = 0; p < n; ++p) {
    if (g < gone.size() && gone[g] == p) {
      ++g;
      pending_seq_.erase(pending_[p].job.name);
      continue;
    }
    renumber[p] = kept;
    if (kept != p) {
      pending_[kept] = std::move(pending_[p]);
      specs_[kept] = std::move(specs_[p]);
      keys_[kept] = keys_[p];
      seq_[kept] = seq_[p];
    }
    ++kept;
  }
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept), pending_.end());
  specs_.erase(specs_.begin() + static_cast<std::ptrdiff_t>(kept), specs_.end());
  keys_.resize(kept);
  seq_.resize(kept);
  const auto apply = [&](std::vector<std::size_t>& v) {
    std::size_t out = 0;
    for (std::size_t p : v)
      if (renumber[p] != kNone) v[out++] = renumber[p];
    v.resize(out);
  };
  for (auto& m : members_) apply(m);
  apply(unqueued_);
}

GPUSCHED_DECL Status Session::submit(PendingJob job) {
  if (Status s = check_name_free(job.job.name); !s) return s;
  append_pending(std::move(job));
  return {};
}

// ---- the running side -------------------------------------------------------------------------------

GPUSCHED_DECL Status Session::append_running(RunningJob job, std::optional<PendingJob> origin) {
  std::size_t q = 0;
  if (fair_) {
    q = queue_of_name(job.queue);
    if (q == kNone)
      return Error{"job \"" + job.name.substr(0, 200) + "\": queue \"" + job.queue.substr(0, 200) +
                       "\" is not a leaf queue of the session",
                   ErrorCode::kUnknownName, "queue"};
    if (Status s = usage_.add(*state_, job); !s) return s;
  }
  prefix_valid_ = false;
  running_slot_[job.name] = running_.size();
  running_queue_.push_back(q);
  running_.push_back(std::move(job));
  origin_.push_back(std::move(origin));
  by_end_insert(running_.size() - 1);
  if (running_.back().max_tasks > 0) elastic_.push_back(running_.size() - 1);
  return {};
}

// Running job j's expected end on the backfill grid, before a cycle's floor (grid_end): the key of
// by_end_, which does not move with `now`.
GPUSCHED_DECL std::optional<Seconds> Session::grid_key(std::size_t j) const {
  const std::optional<Seconds> end = detail::estimated_end(running_[j]);
  if (!end) return std::nullopt;
  return detail::grid_ceil(*end, std::max<Seconds>(options_.backfill.resolution, 1));
}

GPUSCHED_DECL void Session::by_end_insert(std::size_t j) {
  prefix_valid_ = false;  // (the running work changed)
  const std::optional<Seconds> end = grid_key(j);
  if (!end) return;
  releases_insert(j, *end);
  by_end_.emplace_back(*end, j);
  if (by_end_.size() - by_end_sorted_ > std::max<std::size_t>(64, by_end_sorted_ / 4)) by_end_settle();
}

// Where (end, j) is in by_end_: by search in the sorted part, else among the late ones; end() if absent.
GPUSCHED_DECL std::vector<std::pair<Seconds, std::size_t>>::iterator Session::by_end_find(Seconds end, std::size_t j) {
  const std::pair<Seconds, std::size_t> key(end, j);
  const auto sorted_end = by_end_.begin() + static_cast<std::ptrdiff_t>(by_end_sorted_);
  if (const auto at = std::lower_bound(by_end_.begin(), sorted_end, key); at != sorted_end && *at == key) return at;
  return std::find(sorted_end, by_end_.end(), key);
}

GPUSCHED_DECL bool Session::by_end_in_order(std::vector<std::pair<Seconds, std::size_t>>::iterator at) const {
  return at - by_end_.begin() < static_cast<std::ptrdiff_t>(by_end_sorted_);
}

GPUSCHED_DECL void Session::by_end_erase(std::size_t j) {
  prefix_valid_ = false;
  const std::optional<Seconds> end = grid_key(j);
  if (!end) return;
  releases_erase(j, *end);
  const auto at = by_end_find(*end, j);
  if (at == by_end_.end()) return;
  if (by_end_in_order(at)) --by_end_sorted_;
  by_end_.erase(at);
}

GPUSCHED_DECL void Session::by_end_renumber(std::size_t from, std::size_t to) {
  const std::optional<Seconds> end = grid_key(from);
  if (!end) return;
  const std::pair<Seconds, std::size_t> target(*end, to);
  if (const auto at = by_end_find(*end, from); at != by_end_.end()) {
    if (by_end_in_order(at)) {
      const auto dest = std::lower_bound(by_end_.begin(), at, target);  // only entries of this end lie between
      std::rotate(dest, at, at + 1);
      *dest = target;
    } else {
      *at = target;  // (the late ones are in no order)
    }
  }
  if (!releases_valid_) return;
  const Seconds release = std::max(*end, releases_floor_);
  for (ReleaseList* list : {&releases_, &fresh_releases_}) {
    const auto [first, last] = releases_of(*list, from, release);
    const auto dest = releases_at(*list, to, release);
    std::rotate(dest, first, last);
    for (auto e = dest; e != dest + (last - first); ++e) e->job = static_cast<std::uint32_t>(to);
  }
}

// Pointers into the running jobs' tasks stay valid while the jobs move (a move keeps the tasks'
// buffer); every event that adds, removes or changes a running job's tasks or end invalidates them.
static_assert(std::is_nothrow_move_constructible_v<RunningJob> && std::is_nothrow_move_assignable_v<RunningJob>);
GPUSCHED_DECL std::span<const detail::ReleaseEntry> Session::releases_for(Seconds now) {
  const Seconds floor = detail::grid_after(now, std::max<Seconds>(options_.backfill.resolution, 1));
  if (!releases_valid_) {
    by_end_settle();
    releases_.clear();
    fresh_releases_.clear();
    detail::add_job_releases(releases_.entries, running_, by_end_);  // at their grid keys: no floor yet
    releases_floor_ = std::numeric_limits<Seconds>::min();
    releases_valid_ = true;
  }
  if (floor != releases_floor_) raise_floor(floor);
  release_changes_ = 0;
  return releases_.view();
}

// The releases at a cycle's floor: the ones expected by then (a prefix: they are in end order) end
// there, in job order among the others that end there, as a one-shot cycle orders them. Between
// two cycles that is the jobs past their estimate and those whose grid point `now` passed.
GPUSCHED_DECL void Session::raise_floor(Seconds floor) {
  const Seconds reach = std::max(floor, releases_floor_);  // (a `now` earlier than the last lowers it)
  for (ReleaseList* list : {&releases_, &fresh_releases_}) {
    const auto stop = std::upper_bound(list->begin(), list->end(), reach, detail::ends_after);
    for (auto e = list->begin(); e != stop; ++e) e->end = std::max(*grid_key(e->job), floor);
    std::stable_sort(list->begin(), stop, detail::earlier_release);
  }
  releases_floor_ = floor;
}

// Where job j's tasks are, or would be, in a list sorted by (end, job).
GPUSCHED_DECL Session::ReleaseList::iterator Session::releases_at(ReleaseList& list, std::size_t j, Seconds end) {
  return std::lower_bound(list.begin(), list.end(), std::pair(end, j), [](const detail::ReleaseEntry& e, const auto& key) {
    return std::pair(e.end, static_cast<std::size_t>(e.job)) < key;
  });
}

// Job j's tasks in such a list (an empty range at their place when it has none there).
GPUSCHED_DECL std::pair<Session::ReleaseList::iterator, Session::ReleaseList::iterator> Session::releases_of(
    ReleaseList& list, std::size_t j, Seconds end) {
  const auto first = releases_at(list, j, end);
  auto last = first;
  while (last != list.end() && last->job == j && last->end == end) ++last;
  return {first, last};
}

// Job j's tasks join the fresh releases where (end, j) orders them: a short list, folded into the
// long one when it grows past 1/128 of it (an insertion into 50,000 entries moved a
// megabyte; a cycle reads the two as one, ReleaseLists).
GPUSCHED_DECL void Session::releases_insert(std::size_t j, Seconds end) {
  if (!releases_valid_) return;
  const Seconds release = std::max(end, releases_floor_);
  std::vector<detail::ReleaseEntry> tasks;
  detail::add_releases(tasks, release, running_[j].tasks, j);
  fresh_releases_.entries.insert(releases_at(fresh_releases_, j, release), tasks.begin(), tasks.end());
  if (fresh_releases_.size() <= std::max<std::size_t>(8, releases_.size() / 128)) return;
  std::vector<detail::ReleaseEntry> merged(releases_.size() + fresh_releases_.size());
  std::merge(releases_.begin(), releases_.end(), fresh_releases_.begin(), fresh_releases_.end(), merged.begin(),
             detail::earlier_release);
  releases_.entries.swap(merged);
  releases_.head = 0;
  fresh_releases_.clear();
}

// Job j's tasks leave the list that holds them; past a few such changes between two cycles the
// releases are remade at the next one instead (each moves half of the long list on average).
GPUSCHED_DECL void Session::releases_erase(std::size_t j, Seconds end) {
  if (!releases_valid_ || ++release_changes_ > kReleaseChanges) {
    releases_valid_ = false;
    return;
  }
  const Seconds release = std::max(end, releases_floor_);
  if (const auto [first, last] = releases_of(releases_, j, release); first != last) releases_.erase(first, last);
  else if (const auto [f, l] = releases_of(fresh_releases_, j, release); f != l) fresh_releases_.erase(f, l);
}

// The shorter side moves over the gap: the entries before it one place per erased entry towards
// the end (the front then grows by as many gone ones), or the entries after it towards the front.
GPUSCHED_DECL void Session::ReleaseList::erase(iterator first, iterator last) {
  if (first - begin() < end() - last) {
    std::move_backward(begin(), first, last);
    head += static_cast<std::size_t>(last - first);
  } else {
    entries.erase(first, last);
  }
}

// A few late ones are inserted where they belong; many are sorted and merged in one pass.
GPUSCHED_DECL void Session::by_end_settle() {
  const std::size_t late = by_end_.size() - by_end_sorted_;
  if (late == 0) return;
  const auto mid = by_end_.begin() + static_cast<std::ptrdiff_t>(by_end_sorted_);
  if (late <= 8) {
    for (std::size_t k = by_end_sorted_; k < by_end_.size(); ++k) {
      const auto key = by_end_[k];
      const auto at = std::upper_bound(by_end_.begin(), by_end_.begin() + static_cast<std::ptrdiff_t>(k), key);
      std::move_backward(at, by_end_.begin() + static_cast<std::ptrdiff_t>(k), by_end_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      *at = key;
    }
  } else {
    std::sort(mid, by_end_.end());
    std::inplace_merge(by_end_.begin(), mid, by_end_.end());
  }
  by_end_sorted_ = by_end_.size();
}

GPUSCHED_DECL Status Session::add_running(RunningJob job, std::optional<PendingJob> requeue_as) {
  if (Status s = check_name_free(job.name); !s) return s;
  return append_running(std::move(job), std::move(requeue_as));
}

GPUSCHED_DECL void Session::remove_running(std::size_t j) {
  prefix_valid_ = false;
  if (fair_) (void)usage_.add(*state_, running_[j], -1);  // (a subtraction of what was added cannot overflow)
  running_slot_.erase(running_[j].name);
  const std::size_t last = running_.size() - 1;
  by_end_erase(j);
  std::erase(elastic_, j);
  if (j != last) {
    by_end_renumber(last, j);
    std::replace(elastic_.begin(), elastic_.end(), last, j);
    running_[j] = std::move(running_[last]);
    origin_[j] = std::move(origin_[last]);
    running_queue_[j] = running_queue_[last];
    running_slot_[running_[j].name] = j;
  }
  running_.pop_back();
  origin_.pop_back();
  running_queue_.pop_back();
}

GPUSCHED_DECL Status Session::release_running(std::size_t j) {
  for (const RunningTask& t : running_[j].tasks)
    if (Status s = state_->release(t.assignment); !s) return s;
  return {};
}

GPUSCHED_DECL Status Session::finish(std::string_view job) {
  const std::size_t j = running_index(job);
  if (j == kNone) return unknown(job, "running");
  Status released = release_running(j);
  remove_running(j);
  return released;
}

GPUSCHED_DECL Status Session::cancel(std::string_view job) {
  if (running_index(job) != kNone) return finish(job);
  const std::size_t p = pending_index(job);
  if (p == kNone) return unknown(job, "pending or running");
  std::erase_if(held_, [&](const Nomination& n) { return n.job == job; });
  const std::size_t gone[] = {p};
  remove_pending(gone);
  return {};
}

// The running job j goes back to pending as the job it started from (dropped when unknown), with
// what its running life taught: who evicted it, its restarts, its backoff. Nothing released here.
GPUSCHED_DECL void Session::requeue_running(std::size_t j, const std::string& evicted_for,
                                            std::optional<Seconds> not_before, std::optional<std::int32_t> restarts) {
  std::optional<PendingJob> back = std::move(origin_[j]);
  if (back) {
    back->evicted_by = running_[j].evicted_by;
    back->restarts = restarts ? *restarts : running_[j].restarts;
    if (!evicted_for.empty()) back->evicted_by.push_back(evicted_for);
    if (not_before) back->not_before = *not_before;
  }
  remove_running(j);
  if (back) append_pending(std::move(*back));
}

GPUSCHED_DECL Status Session::requeue(std::string_view job, Seconds not_before, std::int32_t restarts) {
  const std::size_t j = running_index(job);
  if (j == kNone) return unknown(job, "running");
  if (!origin_[j])
    return Error{"job \"" + std::string(job.substr(0, 200)) + "\": the session does not know it as a pending job",
                 ErrorCode::kState, "job"};
  if (Status s = release_running(j); !s) return s;
  requeue_running(j, {}, not_before, restarts);
  return {};
}

// Drops tasks (indices into job j's tasks) from its list and its queue's usage; nothing released.
GPUSCHED_DECL void Session::drop_tasks(std::size_t j, std::span<const std::uint32_t> tasks) {
  by_end_erase(j);  // (the tasks after a dropped one move)
  RunningJob& r = running_[j];
  std::vector<std::uint32_t> idx(tasks.begin(), tasks.end());
  std::sort(idx.rbegin(), idx.rend());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  std::vector<RunningTask> shed;
  for (std::uint32_t t : idx)
    if (t < r.tasks.size()) {
      shed.push_back(r.tasks[t]);
      r.tasks.erase(r.tasks.begin() + t);
    }
  if (fair_) (void)usage_.add(*state_, r.queue, shed, -1, false);
  by_end_insert(j);
}

GPUSCHED_DECL Status Session::shrink(std::string_view job, std::span<const std::uint32_t> tasks) {
  const std::size_t j = running_index(job);
  if (j == kNone) return unknown(job, "running");
  const RunningJob& r = running_[j];
  std::vector<std::uint32_t> idx(tasks.begin(), tasks.end());
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  if (!idx.empty() && idx.back() >= r.tasks.size())
    return Error{"tasks: index " + std::to_string(idx.back()) + " of job \"" + r.name.substr(0, 200) + "\" with " +
                     std::to_string(r.tasks.size()) + " tasks",
                 ErrorCode::kInvalidValue, "tasks"};
  if (r.min_tasks < 0 || r.tasks.size() - idx.size() < static_cast<std::size_t>(r.min_tasks))
    return Error{"tasks: job \"" + r.name.substr(0, 200) + "\" may not go below its minimum of " +
                     std::to_string(std::max(r.min_tasks, 0)) + " tasks",
                 ErrorCode::kInvalidValue, "tasks"};
  for (std::uint32_t t : idx)
    if (Status s = state_->release(r.tasks[t].assignment); !s) return s;
  drop_tasks(j, idx);
  return {};
}

// ---- facts ------------------------------------------------------------------------------------------

GPUSCHED_DECL Status Session::set_priority(std::string_view job, std::int32_t priority) {
  if (const std::size_t j = running_index(job); j != kNone) {
    running_[j].priority = priority;
    return {};
  }
  const std::size_t p = pending_index(job);
  if (p == kNone) return unknown(job, "pending or running");
  if (pending_[p].job.priority == priority) return {};
  dequeue(p);
  pending_[p].job.priority = priority;
  enqueue(p);
  return {};
}

GPUSCHED_DECL Status Session::set_runtime_estimate(std::string_view job, Seconds estimate) {
  if (const std::size_t j = running_index(job); j != kNone) {
    by_end_erase(j);
    running_[j].runtime_estimate = estimate;
    by_end_insert(j);
    return {};
  }
  const std::size_t p = pending_index(job);
  if (p == kNone) return unknown(job, "pending or running");
  if (!options_.order) {
    forget_prefix_of(p);
    pending_[p].runtime_estimate = estimate;
    return {};
  }
  dequeue(p);  // a job order may read the estimate (shortest first): its place is taken again
  pending_[p].runtime_estimate = estimate;
  enqueue(p);
  return {};
}

GPUSCHED_DECL Status Session::set_last_checkpoint(std::string_view job, Seconds t) {
  return change_running(job, [t](RunningJob& r) { r.last_checkpoint = t; });
}

GPUSCHED_DECL Status Session::set_not_before(std::string_view job, Seconds t) {
  const std::size_t p = pending_index(job);
  if (p == kNone) return unknown(job, "pending");
  forget_prefix_of(p);
  pending_[p].not_before = t;
  return {};
}

GPUSCHED_DECL Status Session::set_start_time(std::string_view job, Seconds t) {
  const std::size_t j = running_index(job);
  if (j == kNone) return unknown(job, "running");
  by_end_erase(j);
  running_[j].start_time = t;
  by_end_insert(j);
  return {};
}

// ---- nodes ------------------------------------------------------------------------------------------

GPUSCHED_DECL Result<FailureResponse> Session::fail(NodeId node, int gpu, Seconds now, const FailureOptions& options) {
  auto response = on_failure(*state_, running_, node, gpu, now, history_, options);
  if (!response) return response.error();
  for (const Eviction& e : response->shrinks) drop_tasks(e.running, e.tasks);
  // Restarted jobs leave by descending index (a slot is refilled from the end, which is gone first).
  std::vector<const Restart*> restarts;
  for (const Restart& r : response->restarts) restarts.push_back(&r);
  std::sort(restarts.begin(), restarts.end(), [](const Restart* a, const Restart* b) { return a->running > b->running; });
  for (const Restart* r : restarts) requeue_running(r->running, {}, r->not_before, r->restarts);
  return response;
}

GPUSCHED_DECL Result<Session> Session::rebuilt() const {
  auto fresh = open(*state_, queues_, options_);
  if (!fresh) return fresh.error();
  for (std::size_t j = 0; j < running_.size(); ++j)
    if (Status s = fresh->append_running(running_[j], origin_[j]); !s) return s.error();
  for (const PendingJob& p : pending_) fresh->append_pending(p);
  fresh->held_ = held_;
  fresh->history_ = history_;
  return fresh;
}

// ---- cycles -----------------------------------------------------------------------------------------

// Applies committed decisions to the lists (the cycle has applied them to the state already).
GPUSCHED_DECL void Session::commit(const CycleDecisions& d) {
  // Shrinks and grows first, while the running indices are those of the decisions.
  for (const Eviction& e : d.evictions)
    if (!e.whole) drop_tasks(e.running, e.tasks);
  for (const Grow& g : d.grows) {
    RunningJob& r = running_[g.running];
    by_end_erase(g.running);  // (its tasks may move)
    r.tasks.insert(r.tasks.end(), g.tasks.begin(), g.tasks.end());
    by_end_insert(g.running);
    if (fair_) (void)usage_.add(*state_, r.queue, g.tasks, 1, false);
  }
  // Starts leave pending in one pass; they run in the order started.
  std::vector<std::size_t> started;
  std::vector<RunningJob> runs;
  std::vector<PendingJob> origins;
  for (const Start& s : d.starts) {
    started.push_back(s.pending);
    runs.push_back(running_from_start(pending_[s.pending], s, d.now));
    origins.push_back(pending_[s.pending]);
  }
  // Whole evictions by descending index, requeued in the order evicted (after the starts leave).
  std::vector<const Eviction*> whole;
  for (const Eviction& e : d.evictions)
    if (e.whole) whole.push_back(&e);
  std::vector<std::optional<PendingJob>> requeued(whole.size());
  {
    std::vector<std::size_t> order(whole.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return whole[a]->running > whole[b]->running; });
    for (std::size_t k : order) {
      const std::size_t j = whole[k]->running;
      std::optional<PendingJob> back = std::move(origin_[j]);
      if (back) {
        back->evicted_by = running_[j].evicted_by;
        back->restarts = running_[j].restarts;
        if (!whole[k]->for_job.empty()) back->evicted_by.push_back(whole[k]->for_job);
      }
      requeued[k] = std::move(back);
      remove_running(j);
    }
  }
  std::sort(started.begin(), started.end());
  remove_pending(started);
  for (std::size_t k = 0; k < runs.size(); ++k) (void)append_running(std::move(runs[k]), std::move(origins[k]));
  for (std::optional<PendingJob>& back : requeued)
    if (back) append_pending(std::move(*back));
  held_ = d.nominations;
}

GPUSCHED_DECL Result<CycleDecisions> Session::cycle(Seconds now, CycleApply apply, CycleDetail detail) {
  CycleOptions o = options_;
  o.usage = fair_ ? &usage_ : nullptr;
  o.dry_run = apply == CycleApply::kPlan;
  if (o.placement.capacity_cache == nullptr) o.placement.capacity_cache = &capacity_cache_;
  // Only a committed cycle without reasons keeps a prefix, and only such a cycle resumes one.
  const bool keeps = apply == CycleApply::kCommit && detail != CycleDetail::kFull;
  const bool resume = keeps && prefix_usable(now);
  detail::CycleKept kept{specs_, keys_, members_, unqueued_, running_queue_, releases_for(now), fresh_releases_.view(), &elastic_};
  kept.prefix = keeps ? &prefix_ : nullptr;
  kept.resume = resume;
  prefix_valid_ = false;
  auto d = detail::run_cycle_with(*state_, running_, pending_, queues_, now, o, held_, &kept, detail);
  if (!d) return d.error();
  if (apply == CycleApply::kCommit) commit(*d);
  if (keeps && prefix_.ready) {
    prefix_valid_ = true;
    prefix_generation_ = state_->generation();
    prefix_pending_ = pending_.size();
    prefix_backoff_end_ = kForever;
    for (const PendingJob& p : pending_)
      if (p.not_before > now) prefix_backoff_end_ = std::min(prefix_backoff_end_, p.not_before);
  }
  return d;
}

// Whether the kept prefix (CyclePrefix) is what a cycle at `now` would find again for the jobs it
// covers (PlanPrefix says why): nothing changed since but arrivals (events forget it, and the state's
// generation is the one the prefix was kept at), no job it covers stops backing off by now, no release
// of running work is due by now (none past its estimate is moved to the new floor), and no time point
// enters the plan's window (a release or reservation end in (t0 + window, now + window]).
GPUSCHED_DECL bool Session::prefix_usable(Seconds now) const {
  if (!prefix_valid_ || !releases_valid_ || !prefix_.ready || !held_.empty()) return false;
  if (state_->generation() != prefix_generation_ || now < prefix_.now || prefix_backoff_end_ <= now) return false;
  const Seconds window = options_.backfill.window;
  const Seconds was = detail::saturating_add_time(prefix_.now, window), is = detail::saturating_add_time(now, window);
  const auto enters = [&](Seconds end) { return end > was && end <= is; };
  for (const std::span<const detail::ReleaseEntry> list : {releases_.view(), fresh_releases_.view()}) {
    if (!list.empty() && list.front().end <= now) return false;
    const auto first_past = std::upper_bound(list.begin(), list.end(), was, detail::ends_after);
    if (first_past != list.end() && enters(first_past->end)) return false;
  }
  return std::none_of(prefix_.plan.reservations.begin(), prefix_.plan.reservations.end(),
                      [&](const Reservation& r) { return enters(r.end); });
}

}  // namespace gpusched::scheduler
