// gpusched/cluster/jobs.hpp — the one job model: a job compiled against a state, and a running job.
//
// A job enters through a `JobView` (cluster/views.hpp, the caller's own type behind an interface).
// `compile_job` reads it once against a `ClusterState` into a `CompiledJob`: one resolved
// `TaskRequest` per group, the replica counts, and everything else the job said (queue, priority and
// its class, submit time, MIG profiles, gang constraints). A job that runs is a `RunningJob`: its
// tasks with the assignments they hold. Every family reads these two — packing and gang place a
// CompiledJob, fairness charges its queue for it and counts a queue's usage from RunningJobs,
// preemption picks victims among RunningJobs, the scheduling cycle keeps both across cycles — so
// they live here, below every family, and no family keeps a job record of its own.
//
// Header-only: compile_job's definition is in cluster/detail/jobs_impl.hpp.
// Threads: compile_job reads the state (const): it may run concurrently with other readers.
#pragma once

#include "gpusched/core/config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/views.hpp"
#include "gpusched/core/result.hpp"

namespace gpusched {

using Seconds = std::int64_t;

// Gang constraints, resolved to group indices (the gang module reads them; docs/gang.md).
struct TopologyConstraint {
  std::string level;  // kNodeLevel or a node label key; empty = no topology constraint
  LevelMode mode = LevelMode::kRequired;
};

struct SpreadConstraint {
  std::string level;                  // kNodeLevel or a node label key (a failure domain)
  std::vector<std::uint32_t> groups;  // the groups counted together; empty = every group
  std::int32_t max_per_domain = 0;    // 0 = no cap
  std::int32_t min_domains = 0;       // 0 = no minimum
};

struct AntiAffinity {
  std::uint32_t group_a = 0;
  std::uint32_t group_b = 0;  // == group_a: the group's replicas repel each other
  std::string level = std::string(kNodeLevel);
};

// A job compiled against a state: one request per group, with replica counts, and what the JobView
// said about the job (see cluster/views.hpp for each field's meaning).
struct CompiledGroup {
  std::string name;
  std::int32_t replicas = 1;
  std::int32_t min_replicas = 1;
  TaskRequest request;
  std::string mig_profile = {};  // "" = none; the MIG family resolves it
};
struct CompiledJob {
  std::string name;
  std::string queue;
  std::int32_t priority = 0;
  std::string priority_class;
  std::int64_t submit_time = 0;
  std::vector<CompiledGroup> groups;
  TopologyConstraint topology;
  std::vector<SpreadConstraint> spread;
  std::vector<AntiAffinity> anti_affinity;

  // A topology, spread or anti-affinity constraint, or an elastic group: a job for the gang solver.
  bool has_gang_constraints() const;
};

// Appends every task of `job`, replica by replica, to `out` (the tasks a path packs for: FGD's target
// workload is made of them).
inline void append_tasks(const CompiledJob& job, std::vector<TaskRequest>& out) {
  for (const CompiledGroup& g : job.groups) out.insert(out.end(), static_cast<std::size_t>(g.replicas), g.request);
}

// Fails (with the field path) on a group the state cannot compile, negative replicas, min_replicas
// above replicas, a constraint naming a group the job does not have, or an empty spread level.
Result<CompiledJob> compile_job(const ClusterState& state, const JobView& job);

// A view of compiled jobs wherever the caller keeps them, copying none: a span (or vector) of
// CompiledJob, or of any record that holds one — the scheduling cycle's pending jobs are read in
// place as JobSpan(pending, &scheduler::PendingJob::job). Records must be contiguous (a span's);
// the view walks them by the record's size.
class JobSpan {
 public:
  JobSpan() = default;
  JobSpan(std::span<const CompiledJob> jobs)  // NOLINT: implicit, as a span converts
      : first_(reinterpret_cast<const std::byte*>(jobs.data())), stride_(sizeof(CompiledJob)), size_(jobs.size()) {}
  JobSpan(const std::vector<CompiledJob>& jobs) : JobSpan(std::span<const CompiledJob>(jobs)) {}  // NOLINT
  template <class Record>
  JobSpan(std::span<const Record> records, CompiledJob Record::*member)
      : first_(records.empty() ? nullptr : reinterpret_cast<const std::byte*>(&(records.front().*member))),
        stride_(sizeof(Record)),
        size_(records.size()) {}

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const CompiledJob& operator[](std::size_t i) const { return *reinterpret_cast<const CompiledJob*>(first_ + i * stride_); }

 private:
  const std::byte* first_ = nullptr;
  std::size_t stride_ = sizeof(CompiledJob);
  std::size_t size_ = 0;
};

// A job running on the cluster: what the scheduling cycle, preemption and fair share read.
struct RunningTask {
  TaskRequest request;
  TaskAssignment assignment;
  std::uint32_t group = 0;  // its group: an index into RunningJob::groups (0 for a job of one group)
};

// A group of an elastic job of several groups: what a grow adds to it, and up to how many tasks.
struct ElasticGroup {
  std::string name;
  TaskRequest request;
  std::int32_t max_tasks = 0;  // its replicas
};

// A job running on the cluster as the cycle sees it.
struct RunningJob {
  std::string name;
  std::string queue;
  std::int32_t priority = 0;
  Seconds start_time = 0;
  Seconds last_checkpoint = -1;  // the last checkpoint's time; before start_time (or -1): none yet
  Seconds restart_cost = 0;      // seconds every GPU it holds spends restarting (load, warm up)
  bool preemptible = true;
  std::int32_t min_tasks = -1;   // elastic: tasks beyond the first min_tasks may be shed; -1 = rigid
  Seconds runtime_estimate = -1;  // expected run time from start_time (backfill.hpp); <= 0: unknown
  std::vector<RunningTask> tasks;
  // Added by the scheduling cycle (scheduler/cycle.hpp); the defaults keep the meanings above.
  // When it was submitted (queue order; "newer" in kLowerOrNewerEqualPriority); -1 = use start_time.
  Seconds submit_time = -1;
  // It checkpoints every `checkpoint_interval` seconds after its start (0 = only at the times
  // `last_checkpoint` says): its latest checkpoint is then the later of last_checkpoint and
  // start_time + k * interval, the last such time not after now.
  Seconds checkpoint_interval = 0;
  std::int32_t max_tasks = -1;   // elastic: grows up to this many tasks (the request of its last
                                 // task); -1 = tasks.size() (never grows)
  // Elastic with several groups: each group grows up to its own max_tasks with its own request, its
  // tasks counted by RunningTask::group (empty: one group, as max_tasks says).
  std::vector<ElasticGroup> groups;
  std::int32_t restarts = 0;     // failures it was restarted after (the backoff exponent)
  std::vector<std::string> evicted_by;  // jobs that evicted it before (cycle.hpp: never evicted back)

  bool elastic() const { return min_tasks >= 0 && static_cast<std::size_t>(min_tasks) < tasks.size(); }
  // The time the queue rules compare: submit_time, else start_time.
  Seconds queued_since() const { return submit_time >= 0 ? submit_time : start_time; }
  // Its latest checkpoint at `now` (start_time when none yet): lost work is counted from there.
  Seconds checkpoint_at(Seconds now) const {
    Seconds since = std::max(start_time, last_checkpoint);
    if (checkpoint_interval > 0 && now > start_time)
      since = std::max(since, start_time + (now - start_time) / checkpoint_interval * checkpoint_interval);
    return since;
  }
};

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/cluster/detail/jobs_impl.hpp"
#endif
