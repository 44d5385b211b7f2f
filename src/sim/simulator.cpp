// The event-driven engine of gpusched/sim/simulator.hpp: time, the job table, the one ClusterState,
// and the accounting behind the metrics and the conservation check.
#include "gpusched/sim/simulator.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <queue>

#include <fmt/format.h>

#include "gpusched/core/random.hpp"
#include "gpusched/packing/registry.hpp"
#include "io/text_input.hpp"
#include "sim/numbers.hpp"
#include "sim/job_clock.hpp"

namespace gpusched::sim {

std::int64_t SimJob::full_rate() const {
  const std::int64_t per_task = shape.needs_gpu() ? shape.total_gpu_milli() : kMilliPerGpu;
  return per_task * tasks;
}
std::int64_t SimJob::demand() const { return full_rate() * duration; }

NodeEnergy default_energy(std::string_view model, std::int32_t gpus) {
  // Board power (TDP) from the vendor datasheets, a host of ~400 W for an 8-GPU server scaled by GPU
  // count, and an on-demand price per GPU-hour in the range the large clouds list (docs/simulate.md).
  struct Row {
    std::string_view model;
    double gpu_watts, price_per_gpu_hour;
  };
  static constexpr Row kRows[] = {
      {"V100M32", 300, 3.06}, {"V100M16", 300, 2.48}, {"V100", 300, 3.06}, {"A100-SXM4-40GB", 400, 3.67},
      {"A100-80GB", 400, 5.12}, {"H100-80GB", 700, 9.80}, {"T4", 70, 0.53}, {"P100", 250, 1.46},
      {"A10", 150, 1.10}, {"L4", 72, 0.71}, {"L40S", 350, 2.00}, {"G2", 300, 2.48}, {"G3", 300, 2.48}};
  NodeEnergy e;
  for (const Row& r : kRows)
    if (r.model == model) {
      e.gpu_watts = r.gpu_watts;
      e.idle_watts = 50.0 * gpus;
      e.price_per_hour = r.price_per_gpu_hour * gpus;
    }
  return e;
}

SimCluster make_uniform_cluster(std::size_t nodes, std::int32_t gpus_per_node, std::string model,
                                std::size_t nodes_per_rack, MilliCpu cpu, Bytes memory) {
  SimCluster c;
  auto& list = c.nodes.nodes();
  list.reserve(nodes);
  for (std::size_t n = 0; n < nodes; ++n) {
    NodeSpec s;
    s.name = fmt::format("node-{:05}", n);
    s.cpu = cpu;
    s.memory = memory;
    s.gpus.assign(static_cast<std::size_t>(gpus_per_node), GpuSpec{model});
    if (nodes_per_rack > 0) s.labels.push_back({"rack", fmt::format("rack-{:04}", n / nodes_per_rack)});
    list.push_back(std::move(s));
    c.energy.push_back(default_energy(model, gpus_per_node));
  }
  c.name = fmt::format("{}x{}-{}", nodes, gpus_per_node, model);
  return c;
}

namespace {

using detail::JobState;
using detail::Phase;

enum class EventKind : std::uint8_t { kCompletion = 0, kFailure = 1, kRepair = 2, kArrival = 3, kWake = 4, kTick = 5 };

struct Event {
  Seconds time;
  EventKind kind;
  std::uint64_t seq;
  std::uint32_t id;       // job or node
  std::uint64_t version;  // completion: the job's version; failure: the repair duration
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  // Nearest rank (the smallest value with at least p % of the values at or below it).
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

Seconds exponential(SplitMix64& rng, double mean_seconds) {
  const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
  return std::max<Seconds>(1, static_cast<Seconds>(std::llround(-std::log1p(-u) * mean_seconds)));
}

class Engine {
 public:
  Engine(const SimCluster& cluster, const std::vector<SimJob>& jobs, const SimConfig& config, ClusterState state)
      : cluster_(cluster), jobs_(jobs), config_(config), state_(std::move(state)), js_(jobs.size()) {}

  Result<SimResult> run();

 private:
  // The placement policy of config_ (SimConfig::placement).
  Result<std::unique_ptr<PlacementPolicy>> make_placement() const;
  Status make_orders();
  // --- accounting ---
  std::int64_t allocated() const { return state_.shares().total_capacity() - state_.shares().total_free(); }
  bool gpu_job(std::uint32_t j) const { return jobs_[j].shape.needs_gpu(); }
  std::int64_t task_rate(std::uint32_t j) const { return jobs_[j].full_rate() / jobs_[j].tasks; }
  void advance(Seconds t);
  void node_energy_update(NodeId n);
  void nodes_energy_update(const std::vector<TaskPlacement>& tasks);
  void check_instant();

  // --- job life ---
  Status compile(std::uint32_t j);
  void start_segment(std::uint32_t j, Seconds now);
  // Ends the running segment at `now`: kind 0 = completion, 1 = checkpoint (resize/horizon), 2 = eviction
  // (preemption), 3 = eviction (failure). Returns nothing; updates remaining, attained and accounting.
  void end_segment(std::uint32_t j, Seconds now, int kind);
  void schedule_completion(std::uint32_t j);
  void add_running(std::uint32_t j);
  void remove_running(std::uint32_t j);
  void drop_tasks(std::uint32_t j, std::span<const std::uint32_t> tasks);

  // --- the scheduler (the library's session) and what it reads of the jobs ---
  static std::string name_of(std::uint32_t j) { return std::to_string(j); }
  static std::uint32_t id_of(std::string_view name);
  Status arrive(std::uint32_t j, Seconds now);
  Status became_pending(std::uint32_t j, Seconds now);  // the session has it pending: its facts, wake-ups
  Status segment_started(std::uint32_t j, Seconds now);  // the session runs it: its facts, wake-ups
  Status stop(std::uint32_t j, Seconds now, bool failure);   // evicted (the session requeued it) or failed
  Status on_node_failure(NodeId n, Seconds now);
  Status refresh_facts(Seconds now);
  // One cycle; `again`: whether another at the same instant can decide more.
  Status run_cycle(Seconds now, bool& again);
  static constexpr int kMaxCyclesPerInstant = 64;
  void wake(Seconds t, std::uint32_t j) {
    if (t > now_) push(t, EventKind::kWake, j, js_[j].version);
  }
  void push(Seconds t, EventKind k, std::uint32_t id, std::uint64_t v = 0) {
    if (k == EventKind::kWake || k == EventKind::kTick) ++wake_events_;
    events_.push(Event{t, k, seq_++, id, v});
  }

  const SimCluster& cluster_;
  const std::vector<SimJob>& jobs_;
  const SimConfig& config_;
  ClusterState state_;
  std::vector<JobState> js_;
  std::unique_ptr<PlacementPolicy> placement_;
  scheduler::Orders orders_;  // SimConfig::order, victim_order (null: the policy's own)
  std::optional<scheduler::Session> session_;
  bool las_running_ = false;    // LAS: running jobs' priorities follow their service (preemption, grow order)
  bool srtf_running_ = false;   // SRTF: likewise, every second
  bool backfill_ = false;       // the profile reads expected ends: an overrun is a wake-up
  // Preemption prices victims by their last checkpoint: (time, job, version) of the next one due.
  std::priority_queue<Event, std::vector<Event>, std::greater<>> checkpoints_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::size_t wake_events_ = 0;  // kWake and kTick events in the queue
  bool overflow_ = false;        // a GPU-second integral left 64 bits: the run is refused

  std::size_t pending_jobs_ = 0;
  std::vector<std::uint32_t> running_;   // sorted by id
  std::size_t done_ = 0;
  bool tick_scheduled_ = false;      // the periodic cycle's tick (id 0) is in the queue
  bool deferred_scheduled_ = false;  // a cycle deferred by min_cycle_interval (tick id 1) is in it
  Seconds last_cycle_ = -1;

  // time integrals
  Seconds now_ = 0, first_time_ = 0;
  std::int64_t held_sum_ = 0;  // the running GPU jobs' shares
  Conservation cons_;
  long double util_integral_ = 0;  // allocated milli x seconds over live capacity
  long double energy_joules_ = 0, cost_ = 0;
  double power_watts_ = 0, price_rate_ = 0;  // current totals
  std::vector<double> node_watts_, node_price_;
  std::vector<Sample> samples_;
  Seconds failure_cutoff_ = std::numeric_limits<Seconds>::max();  // see Engine::run
  static constexpr std::size_t kMaxSamples = std::size_t{1} << 14;
  Seconds next_sample_ = 0, sample_period_ = 60;
  std::int64_t failed_nodes_ = 0;
  std::size_t rejected_ = 0;
  std::size_t arrivals_left_ = 0;
  SimMetrics m_;
  std::vector<SplitMix64> node_rng_;
  double next_progress_ = 0.01;
};

// A job's numbers in their ranges (times up to kMaxSimSeconds, its demand within 64 bits), or an error
// naming the job and the field: never a run whose sums wrap.
Status check_job(const SimJob& job, std::size_t j) {
  const auto bad = [&](const char* field, std::string_view expected, auto value) -> Status {
    return Error{fmt::format("job {} ({}): {}: expected {}, got {}", j, io::detail::shown(job.name), field, expected, value),
                 ErrorCode::kInvalidValue, fmt::format("jobs[{}].{}", j, field)};
  };
  const std::string seconds = fmt::format("seconds in [0, {}]", kMaxSimSeconds);
  if (job.tasks < 1 || job.tasks > 1'000'000) return bad("tasks", "1 to 1000000", job.tasks);
  if (job.min_tasks < -1 || job.min_tasks > job.tasks) return bad("min_tasks", "-1 (rigid) or 0 to tasks", job.min_tasks);
  if (job.submit < 0 || job.submit > kMaxSimSeconds) return bad("submit", seconds, job.submit);
  if (job.duration < 1 || job.duration > kMaxSimSeconds)
    return bad("duration", fmt::format("seconds in [1, {}]", kMaxSimSeconds), job.duration);
  if (job.estimate < 0 || job.estimate > kMaxSimSeconds) return bad("estimate", seconds, job.estimate);
  if (job.restart_cost < 0 || job.restart_cost > kMaxSimSeconds) return bad("restart_cost", seconds, job.restart_cost);
  if (job.checkpoint_interval < 0 || job.checkpoint_interval > kMaxSimSeconds)
    return bad("checkpoint_interval", seconds, job.checkpoint_interval);
  if (job.shape.gpus < 0 || job.shape.gpus > 65'535) return bad("gpus", "0 to 65535", job.shape.gpus);
  if (job.shape.gpu_milli < 0 || job.shape.gpu_milli > kMilliPerGpu) return bad("gpu_milli", "0 to 1000", job.shape.gpu_milli);
  // Its demand in milli-GPU-seconds (the conservation check's unit) must be a 64-bit number.
  const std::int64_t per_task = job.shape.needs_gpu() ? job.shape.total_gpu_milli() : kMilliPerGpu;
  std::int64_t rate = 0, demand = 0;
  if (__builtin_mul_overflow(per_task, static_cast<std::int64_t>(job.tasks), &rate) ||
      __builtin_mul_overflow(rate, job.duration, &demand))
    return bad("duration", "a demand (duration x tasks x milli-GPUs) within 64 bits", job.duration);
  return {};
}

Status Engine::compile(std::uint32_t j) {
  const SimJob& job = jobs_[j];
  std::vector<std::string_view> models;
  if (!job.gpu_model.empty()) models.push_back(job.gpu_model);
  auto request = state_.compile(job.shape, models);
  if (!request)
    return Error{fmt::format("job {} ({}): {}", j, job.name, request.error().message), request.error().code,
                 "jobs[" + std::to_string(j) + "]"};
  GangSpec& spec = js_[j].spec;
  spec.name = job.name;
  spec.groups.clear();
  GangGroup g;
  g.name = "task";
  g.replicas = job.tasks;
  g.min_replicas = job.min_tasks >= 0 && job.min_tasks < job.tasks ? std::max(1, job.min_tasks) : job.tasks;
  g.request = std::move(request.value());
  spec.groups.push_back(std::move(g));
  if (config_.policy.topology_aware && job.tasks > 1)
    spec.topology = TopologyConstraint{config_.rack_label, LevelMode::kPreferred};
  return {};
}

void Engine::add_running(std::uint32_t j) { running_.insert(std::lower_bound(running_.begin(), running_.end(), j), j); }

void Engine::remove_running(std::uint32_t j) { running_.erase(std::lower_bound(running_.begin(), running_.end(), j)); }

std::uint32_t Engine::id_of(std::string_view name) {
  std::uint32_t j = 0;
  std::from_chars(name.data(), name.data() + name.size(), j);
  return j;
}

void Engine::advance(Seconds t) {
  if (t <= now_) return;
  // Samples at the instants in (now_, t]: the state held over [now_, t).
  while (next_sample_ <= t) {
    if (next_sample_ > now_) {
      Sample s;
      s.time = next_sample_;
      const std::int64_t cap = state_.shares().total_capacity();
      s.utilisation = cap > 0 ? static_cast<double>(allocated()) / static_cast<double>(cap) : 0;
      s.queue_length = static_cast<std::int64_t>(pending_jobs_);
      s.running = static_cast<std::int64_t>(running_.size());
      std::int64_t idle = 0, idle_on_empty = 0;
      for (NodeId n = 0; n < state_.node_count(); ++n) {
        if (!state_.eligible(n)) continue;
        const std::int64_t i = state_.shares().idle_gpus(n);
        idle += i;
        if (i == static_cast<std::int64_t>(state_.gpu_count(n))) idle_on_empty += i;
      }
      s.fragmentation = idle > 0 ? static_cast<double>(idle - idle_on_empty) / static_cast<double>(idle) : 0;
      s.failed_nodes = failed_nodes_;
      samples_.push_back(s);
      if (samples_.size() == kMaxSamples) {
        // A run far longer than its trace's span (a failure every few minutes: 7.2 M samples, 1.6 GB)
        // keeps every other sample and samples half as often, as many times as it takes.
        for (std::size_t k = 0; 2 * k < samples_.size(); ++k) samples_[k] = samples_[2 * k];
        samples_.resize((samples_.size() + 1) / 2);
        next_sample_ = samples_.back().time;
        sample_period_ *= 2;
      }
    }
    next_sample_ += sample_period_;
  }
  const Seconds dt = t - now_;
  const std::int64_t a = allocated();
  std::int64_t delivered = 0;
  if (__builtin_mul_overflow(a, dt, &delivered) || __builtin_add_overflow(cons_.delivered, delivered, &cons_.delivered))
    overflow_ = true;  // the run stops with an error (Engine::run)
  const std::int64_t cap = state_.shares().total_capacity();
  if (cap > 0) util_integral_ += static_cast<long double>(a) / static_cast<long double>(cap) * dt;
  energy_joules_ += static_cast<long double>(power_watts_) * dt;
  cost_ += static_cast<long double>(price_rate_) * dt / 3600.0L;
  now_ = t;
}

void Engine::node_energy_update(NodeId n) {
  if (cluster_.energy.empty() || n >= cluster_.energy.size()) return;
  const NodeEnergy& e = cluster_.energy[n];
  const NodeUsage u = state_.usage(n);
  const bool busy = u.gpu_milli > 0 || u.cpu > 0;
  const bool powered = state_.healthy(n) && (busy || !config_.power_off_idle);
  const double watts = (powered ? e.idle_watts : 0) + e.gpu_watts * static_cast<double>(u.gpu_milli) / 1000.0;
  const double price = powered ? e.price_per_hour : 0;
  power_watts_ += watts - node_watts_[n];
  price_rate_ += price - node_price_[n];
  node_watts_[n] = watts;
  node_price_[n] = price;
}

void Engine::check_instant() {
  ++cons_.checks;
  const std::int64_t diff = std::llabs(allocated() - held_sum_);
  const std::int64_t over = std::max<std::int64_t>(0, allocated() - state_.shares().total_capacity());
  cons_.max_overcommit = std::max({cons_.max_overcommit, diff, over});
}

void Engine::start_segment(std::uint32_t j, Seconds now) {
  JobState& s = js_[j];
  if (detail::las_starving(config_.policy, s, now)) s.las_discount = s.attained;  // promoted: LAS from here
  s.seg_start = now;
  s.held = static_cast<std::int32_t>(s.tasks.size());
  s.rate = task_rate(j) * s.held;
  if (gpu_job(j)) held_sum_ += s.rate;
  if (s.first_start < 0) s.first_start = now;
  s.phase = Phase::kRunning;
  schedule_completion(j);
}

void Engine::schedule_completion(std::uint32_t j) {
  JobState& s = js_[j];
  ++s.version;
  const Seconds work = (s.remaining + s.rate - 1) / s.rate;
  push(s.seg_start + jobs_[j].restart_cost + work, EventKind::kCompletion, j, s.version);
}

void Engine::end_segment(std::uint32_t j, Seconds now, int kind) {
  JobState& s = js_[j];
  const SimJob& job = jobs_[j];
  const Seconds elapsed = now - s.seg_start;
  const std::int64_t restart = s.rate * std::min(elapsed, job.restart_cost);
  const detail::SegmentClock clock = detail::SegmentClock::of(job, s);
  std::int64_t prog = clock.progress(now);
  std::int64_t saved = prog, lost = 0, rounding = 0;
  if (kind == 0) {
    rounding = prog - s.remaining;
    saved = s.remaining;
  } else if (kind >= 2) {
    saved = s.rate * std::max<Seconds>(0, clock.last_checkpoint(now) - s.seg_start - job.restart_cost);
    saved = std::min(saved, prog);
    lost = prog - saved;
  }
  s.remaining -= saved;
  s.attained += s.rate * elapsed;
  s.executed += elapsed;
  if (gpu_job(j)) {
    cons_.demand_done += saved;
    cons_.restart_overhead += restart;
    cons_.rounding += rounding;
    if (kind == 2) cons_.lost_preemption += lost;
    if (kind == 3) cons_.lost_failure += lost;
    held_sum_ -= s.rate;
  }
  s.rate = 0;
  ++s.version;  // any queued completion is stale
}

void Engine::nodes_energy_update(const std::vector<TaskPlacement>& tasks) {
  for (const TaskPlacement& t : tasks) node_energy_update(t.assignment.node);
}

// Drops tasks (indices) from the engine's copy of a job's tasks, as the session drops them from its own.
void Engine::drop_tasks(std::uint32_t j, std::span<const std::uint32_t> tasks) {
  JobState& s = js_[j];
  std::vector<TaskPlacement> keep, drop;
  for (std::uint32_t t = 0; t < s.tasks.size(); ++t)
    (std::find(tasks.begin(), tasks.end(), t) != tasks.end() ? drop : keep).push_back(s.tasks[t]);
  s.tasks = std::move(keep);
  s.held = static_cast<std::int32_t>(s.tasks.size());
  nodes_energy_update(drop);
}

// A job arrives: compiled once, submitted to the session as a pending job.
Status Engine::arrive(std::uint32_t j, Seconds now) {
  if (Status ok = compile(j); !ok) return ok;
  JobState& s = js_[j];
  const SimJob& job = jobs_[j];
  s.phase = Phase::kPending;
  s.waiting_since = now;
  scheduler::PendingJob p;
  p.job.name = name_of(j);
  const bool named = config_.policy.order == QueueOrder::kDrf;
  p.job.queue = named ? (job.queue.empty() ? "default" : job.queue) : "";
  p.job.priority = detail::order_key(config_.policy, job, s, now);
  p.job.submit_time = job.submit;
  const GangGroup& g = s.spec.groups[0];
  p.job.groups.push_back(CompiledGroup{g.name, g.replicas, g.min_replicas, g.request, {}});
  p.job.topology = s.spec.topology;
  p.runtime_estimate = detail::SegmentClock::of(job, s).pending_estimate(job.full_rate());
  p.preemptible = job.preemptible;
  p.restart_cost = job.restart_cost;
  ++pending_jobs_;
  return session_->submit(std::move(p));
}

// The session holds job j pending again (evicted or restarted): what it reads of it now (its
// estimate of the work left, its LAS queue), and the instants that can change a decision about it.
Status Engine::became_pending(std::uint32_t j, Seconds now) {
  JobState& s = js_[j];
  const SimJob& job = jobs_[j];
  s.phase = Phase::kPending;
  s.waiting_since = now;
  ++pending_jobs_;
  const std::string name = name_of(j);
  if (Status st = session_->set_runtime_estimate(name, detail::SegmentClock::of(job, s).pending_estimate(job.full_rate())); !st)
    return st;
  if (config_.policy.order == QueueOrder::kLas || config_.policy.order == QueueOrder::kSrtf)
    if (Status st = session_->set_priority(name, detail::order_key(config_.policy, job, s, now)); !st) return st;
  if (s.not_before > now) wake(s.not_before, j);  // its backoff ends
  if (const auto t = detail::las_promotion_time(config_.policy, s)) wake(*t, j);  // it starves: promoted
  return {};
}

// Job j began a segment (a start, a resize): the session's running job counts from now, with the
// segment's expected run time; the instants that can change a decision about it.
Status Engine::segment_started(std::uint32_t j, Seconds now) {
  JobState& s = js_[j];
  const SimJob& job = jobs_[j];
  const detail::SegmentClock clock = detail::SegmentClock::of(job, s);
  const std::string name = name_of(j);
  if (Status st = session_->set_start_time(name, now); !st) return st;
  if (Status st = session_->set_runtime_estimate(name, clock.segment_estimate()); !st) return st;
  if (las_running_ || srtf_running_)
    if (Status st = session_->set_priority(name, detail::order_key(config_.policy, job, s, now)); !st) return st;
  if (las_running_) {
    // Its LAS queue drops when its service crosses the next threshold.
    const detail::LasLevel level = detail::las_level(config_.policy, s.attained - s.las_discount);
    if (level.next_threshold != std::numeric_limits<std::int64_t>::max() && s.rate > 0) {
      const std::int64_t left = level.next_threshold - (s.attained - s.las_discount);
      wake(s.seg_start + (left + s.rate - 1) / s.rate, j);
    }
  }
  if (config_.policy.preempt) {
    wake(s.seg_start + config_.policy.min_runtime, j);  // it may become a victim
    if (job.checkpoint_interval > 0) checkpoints_.push(Event{s.seg_start + job.restart_cost, EventKind::kWake, 0, j, s.version});
  }
  if (backfill_) wake(s.seg_start + clock.segment_estimate(), j);  // it overruns its estimate
  return {};
}

// Job j stops running: evicted by the cycle (the session has requeued it and released its tasks) or
// by a failure (the session is told here).
Status Engine::stop(std::uint32_t j, Seconds now, bool failure) {
  JobState& s = js_[j];
  end_segment(j, now, failure ? 3 : 2);
  if (failure) {
    ++s.failures;
    ++m_.failure_restarts;
    const int shift = std::min(s.failures - 1, 20);
    s.not_before = now + (config_.failure_backoff << shift);
    if (Status st = session_->requeue(name_of(j), s.not_before, s.failures); !st) return st;
  } else {
    ++s.preemptions;
    ++m_.preemptions;
  }
  const std::vector<TaskPlacement> tasks = std::move(s.tasks);
  s.tasks.clear();
  s.held = 0;
  nodes_energy_update(tasks);
  remove_running(j);
  return became_pending(j, now);
}

// The gangs with a task on the failed node: an elastic gang above its minimum sheds those tasks
// (restarting from its checkpoint at the smaller size); any other is restarted whole.
Status Engine::on_node_failure(NodeId n, Seconds now) {
  std::vector<std::uint32_t> hit;
  for (std::uint32_t j : running_)
    for (const TaskPlacement& tp : js_[j].tasks)
      if (tp.assignment.node == n) {
        hit.push_back(j);
        break;
      }
  for (std::uint32_t j : hit) {
    JobState& s = js_[j];
    std::vector<std::uint32_t> on_node;
    for (std::uint32_t t = 0; t < s.tasks.size(); ++t)
      if (s.tasks[t].assignment.node == n) on_node.push_back(t);
    const std::int32_t min = s.spec.groups[0].min_replicas;
    const auto keep = static_cast<std::int32_t>(s.tasks.size() - on_node.size());
    if (keep >= min && min < jobs_[j].tasks && keep > 0) {
      end_segment(j, now, 3);
      if (Status st = session_->shrink(name_of(j), on_node); !st) return st;
      drop_tasks(j, on_node);
      ++s.failures;
      start_segment(j, now);
      if (Status st = segment_started(j, now); !st) return st;
    } else if (Status st = stop(j, now, true); !st) {
      return st;
    }
  }
  return {};
}

// What the cycle reads that changes with time alone, brought up to now: SRTF's running priorities
// (every second), the running jobs' last checkpoints (preemption prices victims by them).
Status Engine::refresh_facts(Seconds now) {
  if (srtf_running_)
    for (std::uint32_t j : running_)
      if (Status st = session_->set_priority(name_of(j), detail::order_key(config_.policy, jobs_[j], js_[j], now)); !st)
        return st;
  while (!checkpoints_.empty() && checkpoints_.top().time <= now) {
    const Event e = checkpoints_.top();
    checkpoints_.pop();
    const JobState& s = js_[e.id];
    if (s.phase != Phase::kRunning || s.version != e.version) continue;
    const detail::SegmentClock clock = detail::SegmentClock::of(jobs_[e.id], s);
    const Seconds last = clock.last_checkpoint(now);
    if (Status st = session_->set_last_checkpoint(name_of(e.id), last); !st) return st;
    checkpoints_.push(Event{last + jobs_[e.id].checkpoint_interval, EventKind::kWake, 0, e.id, e.version});
  }
  return {};
}

Status Engine::run_cycle(Seconds now, bool& again) {
  ++m_.cycles;
  if (Status st = refresh_facts(now); !st) return st;
  if (config_.rebuild_cycles) {
    // The same simulation with nothing kept: a session rebuilt from the lists at every cycle.
    auto fresh = session_->rebuilt();
    if (!fresh) return fresh.error();
    session_.emplace(std::move(*fresh));
  }
  auto d = session_->cycle(now, scheduler::CycleApply::kCommit, scheduler::CycleDetail::kActions);
  if (!d) return Error{"scheduling cycle: " + d.error().message, d.error().code, d.error().field};
  again = !d->evictions.empty() || (config_.policy.preempt && (!d->starts.empty() || !d->grows.empty()));
  for (const scheduler::Waiting& w : d->waiting) {
    if (w.outcome.verdict != Verdict::kInfeasible) continue;
    const std::uint32_t j = id_of(w.job);  // it can never run here
    if (Status st = session_->cancel(w.job); !st) return st;
    js_[j].phase = Phase::kDone;  // never ran: end stays -1, counted as rejected
    js_[j].spec = GangSpec{};
    --pending_jobs_;
    ++rejected_;
    ++done_;
    again = true;  // the jobs it held up (behind a StrictFIFO head) are tried at once
  }
  for (const scheduler::Eviction& e : d->evictions) {
    const std::uint32_t j = id_of(e.job);
    if (e.whole) {
      if (Status st = stop(j, now, false); !st) return st;
      continue;
    }
    JobState& s = js_[j];
    end_segment(j, now, 2);
    ++s.preemptions;
    ++m_.preemptions;
    drop_tasks(j, e.tasks);
    start_segment(j, now);
    if (Status st = segment_started(j, now); !st) return st;
  }
  for (const scheduler::Start& st : d->starts) {
    const std::uint32_t j = id_of(st.job);
    JobState& s = js_[j];
    std::uint32_t replica = 0;
    for (const scheduler::RunningTask& t : st.tasks) s.tasks.push_back({0, replica++, t.assignment});
    nodes_energy_update(s.tasks);
    --pending_jobs_;
    add_running(j);
    start_segment(j, now);
    if (Status ok = segment_started(j, now); !ok) return ok;
  }
  for (const scheduler::Grow& g : d->grows) {
    const std::uint32_t j = id_of(g.job);
    JobState& s = js_[j];
    end_segment(j, now, 1);
    std::uint32_t replica = static_cast<std::uint32_t>(s.tasks.size());
    for (const scheduler::RunningTask& t : g.tasks) {
      s.tasks.push_back({0, replica++, t.assignment});
      node_energy_update(t.assignment.node);
    }
    start_segment(j, now);
    if (Status ok = segment_started(j, now); !ok) return ok;
  }
  return {};
}

Result<std::unique_ptr<PlacementPolicy>> Engine::make_placement() const {
  const bool energy = config_.policy.energy_aware && !cluster_.energy.empty();
  if (config_.placement.empty())
    return energy ? detail::make_cost_aware_policy(cluster_) : std::unique_ptr<PlacementPolicy>(std::make_unique<BestFitPolicy>());
  if (config_.policy.energy_aware)
    return Error{fmt::format("placement: '+energy' places by its own cost-aware policy; drop it or the placement "
                             "policy {}", io::detail::shown(config_.placement)),
                 ErrorCode::kInconsistent, "placement"};
  const PolicyRegistry builtins = config_.registry ? PolicyRegistry{} : PolicyRegistry::with_builtins();
  const PolicyRegistry& registry = config_.registry ? *config_.registry : builtins;
  auto p = registry.make_for(config_.placement, config_.seed, [&] {
    std::vector<TaskRequest> requests;  // one per job: its task shape (FGD's workload of the trace)
    for (const SimJob& job : jobs_) {
      TaskRequest r;
      r.shape = job.shape;
      if (!job.gpu_model.empty())
        if (auto m = state_.registry().find(job.gpu_model)) r.models = model_bit(*m);
      requests.push_back(r);
    }
    return requests;
  });
  if (!p) return Error{"placement: " + p.error().message, p.error().code, "placement"};
  return p;
}

Status Engine::make_orders() {
  const scheduler::OrderRegistry builtins =
      config_.orders ? scheduler::OrderRegistry{} : scheduler::OrderRegistry::with_builtins();
  auto made = (config_.orders ? *config_.orders : builtins).make_orders(config_.order, config_.victim_order);
  if (!made) return Error{made.error().field + ": " + made.error().message, made.error().code, made.error().field};
  orders_ = std::move(*made);
  return {};
}

// One function on purpose: the event loop: every kind of event (arrival, end, failure, repair, wake-up,
// cycle) reads and moves the same clock, queues and metrics.
Result<SimResult> Engine::run() {
  const std::size_t n_jobs = jobs_.size();
  node_watts_.assign(state_.node_count(), 0);
  node_price_.assign(state_.node_count(), 0);
  for (NodeId n = 0; n < state_.node_count(); ++n) node_energy_update(n);
  // The scheduler: the library's session, configured by the policy (policy_session.cpp).
  if (auto p = make_placement(); !p) return p.error();
  else placement_ = std::move(*p);
  if (Status ok = make_orders(); !ok) return ok.error();
  auto session = detail::open_policy_session(config_.policy, jobs_, state_, *placement_, orders_.order.get(), orders_.victim_order.get());
  if (!session) return session.error();
  session_.emplace(std::move(*session));
  const bool grows = session_->options().grow_elastic;
  las_running_ = config_.policy.order == QueueOrder::kLas && (config_.policy.preempt || grows);
  srtf_running_ = config_.policy.order == QueueOrder::kSrtf && (config_.policy.preempt || grows);
  backfill_ = config_.policy.backfill != BackfillMode::kNone;

  Seconds first = 0, last = 0, serial = 0;
  for (std::uint32_t j = 0; j < n_jobs; ++j) {
    const SimJob& job = jobs_[j];
    if (Status ok = check_job(job, j); !ok) return ok.error();
    serial = std::min(serial + job.duration, kMaxSimSeconds);
    js_[j].remaining = job.demand() / job.duration * job.duration;  // == full_rate x duration
    first = j == 0 ? job.submit : std::min(first, job.submit);
    last = std::max(last, job.submit + job.duration);
    push(job.submit, EventKind::kArrival, j);
    ++arrivals_left_;
  }
  first_time_ = first;
  now_ = first;
  // Random failures at a rate no job outlives would never let a run end (--mtbf-hours 0.1: failures
  // for ever, memory growing): a run with random failures stops at 1,000 x (the trace's span + its
  // jobs run one after another) past the first submit, what is not done by then unfinished. (At
  // --mtbf-hours 0.5 the 20-job synthetic trace on 4 nodes took 34 simulated years to end; it is cut
  // at 33 with 16 jobs done.)
  if (config_.failures.mtbf_hours > 0) failure_cutoff_ = first + 1000 * (last - first + serial);
  sample_period_ = config_.sample_period > 0 ? config_.sample_period
                                             : std::max<Seconds>(60, (last - first) / 200 + 1);
  next_sample_ = first;
  // Failures: the given list, and seeded exponential ones per node (each node its own stream, so a
  // node's failures do not depend on the others').
  for (const NodeFailure& f : config_.failures.list) {
    if (f.node >= state_.node_count())
      return Error{fmt::format("failures: node {} out of range (cluster has {})", f.node, state_.node_count()),
                   ErrorCode::kInvalidValue, "failures.node"};
    push(f.time, EventKind::kFailure, f.node, static_cast<std::uint64_t>(std::max<Seconds>(1, f.duration)));
  }
  if (config_.failures.mtbf_hours > 0) {
    for (NodeId n = 0; n < state_.node_count(); ++n) {
      node_rng_.emplace_back(config_.seed * 0x9E3779B97F4A7C15ULL + n + 1);
      const Seconds t = first + exponential(node_rng_.back(), config_.failures.mtbf_hours * 3600);
      push(t, EventKind::kFailure, n,
           static_cast<std::uint64_t>(exponential(node_rng_.back(), config_.failures.mttr_hours * 3600)));
    }
  }

  while (!events_.empty() && done_ < n_jobs) {
    const Seconds t = events_.top().time;
    if ((config_.horizon > 0 && t > config_.horizon) || t > failure_cutoff_) break;
    advance(t);
    if (overflow_)
      return Error{fmt::format("the GPU-seconds delivered by t={} exceed 64 bits of milli-GPU-seconds: a cluster this large "
                               "over this long a span cannot be accounted exactly",
                               t),
                   ErrorCode::kOverflow, "jobs"};
    bool changed = false;
    while (!events_.empty() && events_.top().time == t) {
      const Event e = events_.top();
      events_.pop();
      ++m_.events;
      if (e.kind == EventKind::kWake || e.kind == EventKind::kTick) --wake_events_;
      switch (e.kind) {
        case EventKind::kCompletion: {
          JobState& s = js_[e.id];
          if (s.phase != Phase::kRunning || s.version != e.version) break;
          end_segment(e.id, t, 0);
          if (Status st = session_->finish(name_of(e.id)); !st) return st.error();
          nodes_energy_update(s.tasks);
          s.tasks.clear();
          s.held = 0;
          remove_running(e.id);
          s.phase = Phase::kDone;
          s.end = t;
          s.spec = GangSpec{};
          ++done_;
          changed = true;
          break;
        }
        case EventKind::kFailure: {
          const NodeId n = e.id;
          if (!state_.healthy(n)) break;  // already down
          ++m_.node_failures;
          if (Status st = on_node_failure(n, t); !st) return st.error();
          (void)state_.fail_node(n);
          ++failed_nodes_;
          node_energy_update(n);
          push(t + static_cast<Seconds>(e.version), EventKind::kRepair, n);
          changed = true;
          break;
        }
        case EventKind::kRepair: {
          const NodeId n = e.id;
          (void)state_.recover_node(n);
          --failed_nodes_;
          node_energy_update(n);
          if (config_.failures.mtbf_hours > 0 && n < node_rng_.size()) {
            SplitMix64& rng = node_rng_[n];
            const Seconds next = t + exponential(rng, config_.failures.mtbf_hours * 3600);
            push(next, EventKind::kFailure, n,
                 static_cast<std::uint64_t>(exponential(rng, config_.failures.mttr_hours * 3600)));
          }
          changed = true;
          break;
        }
        case EventKind::kArrival:
          --arrivals_left_;
          if (Status ok = arrive(e.id, t); !ok) return ok.error();
          changed = true;
          break;
        case EventKind::kWake: {
          // An instant at which a decision about job e.id can change (wake(): a backoff ends, a LAS
          // queue changes, a promotion, a minimum runtime reached, an estimate overrun).
          JobState& s = js_[e.id];
          if (s.version != e.version || s.phase == Phase::kDone) break;
          if (s.phase == Phase::kRunning && las_running_) {
            if (Status st = session_->set_priority(name_of(e.id), detail::order_key(config_.policy, jobs_[e.id], s, t)); !st)
              return st.error();
            const detail::LasLevel level =
                detail::las_level(config_.policy, s.attained - s.las_discount + s.rate * (t - s.seg_start));
            if (level.next_threshold != std::numeric_limits<std::int64_t>::max() && s.rate > 0) {
              const std::int64_t left = level.next_threshold - (s.attained - s.las_discount);
              wake(s.seg_start + (left + s.rate - 1) / s.rate, e.id);
            }
          } else if (s.phase == Phase::kPending && detail::las_starving(config_.policy, s, t)) {
            if (Status st = session_->set_priority(name_of(e.id), 0); !st) return st.error();
          }
          changed = true;
          break;
        }
        case EventKind::kTick:
          (e.id == 0 ? tick_scheduled_ : deferred_scheduled_) = false;
          changed = true;
          break;
      }
    }
    check_instant();
    if (changed && pending_jobs_ > 0) {
      if (config_.min_cycle_interval > 0 && last_cycle_ >= 0 && t - last_cycle_ < config_.min_cycle_interval) {
        // Too soon after the last cycle: it runs when the interval has passed (one deferred tick;
        // an interval beyond the end of time defers it to the end of time, without overflow).
        if (!deferred_scheduled_) {
          const Seconds room = std::numeric_limits<Seconds>::max() - last_cycle_;
          push(last_cycle_ + std::min(config_.min_cycle_interval, room), EventKind::kTick, 1);
          deferred_scheduled_ = true;
        }
      } else {
        // A cycle that evicted a job, or under a preempting policy started or grew one, is followed
        // by another at the same instant: the capacity its victims left over and the requeued jobs,
        // the queues' new usage (fair-share reclaim) and the new possible victims are considered at
        // once, as a scheduler's next pass would. (Without preemption a cycle that only starts jobs
        // leaves nothing for a second one: what failed still fails with less capacity.)
        bool again = true;
        for (int pass = 0; again && pass < kMaxCyclesPerInstant; ++pass)
          if (Status ok = run_cycle(t, again); !ok) return ok.error();
        if (!placement_->failure().empty())  // user code (docs/policies.md): the run ends with its message
          return Error{fmt::format("placement: policy {} failed: {}", io::detail::shown(placement_->name()),
                                   placement_->failure()),
                       ErrorCode::kInvalidValue, "placement"};
        last_cycle_ = t;
        check_instant();
      }
    }
    // Nothing runs, nothing will happen and nothing waits for a backoff: what is pending can never start
    // (its model's nodes are gone, say). Stop rather than wait forever; those jobs count as not
    // completed. (Failures may go on for ever: with every node up and no arrival to come, a cycle that
    // starts nothing on an idle cluster is the same proof.)
    if (pending_jobs_ > 0 && running_.empty() && last_cycle_ == t &&
        (events_.size() == wake_events_ || (arrivals_left_ == 0 && failed_nodes_ == 0))) {
      bool backoff = false;
      for (const scheduler::PendingJob& p : session_->pending()) backoff = backoff || p.not_before > t;
      if (!backoff) break;
    }
    // Periodic cycles on top of the wake-ups, when asked for (they cannot change a decision: tested).
    if (pending_jobs_ > 0 && !tick_scheduled_ && config_.cycle_period > 0) {
      push(t + config_.cycle_period, EventKind::kTick, 0);
      tick_scheduled_ = true;
    }
    if (config_.progress && n_jobs > 0) {
      const double f = static_cast<double>(done_) / static_cast<double>(n_jobs);
      if (f >= next_progress_) {
        config_.progress(f);
        next_progress_ = f + 0.01;
      }
    }
  }
  const Seconds end = now_;
  // Jobs still running at the horizon: their progress is demand done (a checkpoint at the end).
  for (std::uint32_t j : std::vector<std::uint32_t>(running_)) end_segment(j, end, 1);

  SimResult r;
  r.policy = config_.policy.name;
  r.trace = cluster_.name;
  r.seed = config_.seed;
  r.conservation = cons_;
  r.samples = std::move(samples_);
  SimMetrics& m = m_;
  m.jobs = n_jobs;
  m.rejected = rejected_;
  std::vector<double> jct, wait, slow;
  std::vector<std::string> queues;
  std::vector<std::pair<double, std::int64_t>> queue_slow;  // per queue: sum, count
  for (std::uint32_t j = 0; j < n_jobs; ++j) {
    const JobState& s = js_[j];
    JobOutcome o{jobs_[j].submit, s.first_start, s.end, s.preemptions, s.failures, jobs_[j].queue};
    r.jobs.push_back(o);
    m.max_preemptions_of_a_job = std::max(m.max_preemptions_of_a_job, s.preemptions);
    // Completed jobs only: a rejected job (it never fits: done, never started) has no JCT or wait.
    if (s.phase != Phase::kDone) ++m.unfinished;
    if (s.phase != Phase::kDone || s.end < 0) continue;
    ++m.completed;
    const double c = static_cast<double>(s.end - jobs_[j].submit);
    jct.push_back(c);
    wait.push_back(static_cast<double>(s.first_start - jobs_[j].submit));
    const double sd = c / static_cast<double>(std::max<Seconds>(jobs_[j].duration, 10));
    slow.push_back(sd);
    auto it = std::lower_bound(queues.begin(), queues.end(), jobs_[j].queue);
    const auto qi = static_cast<std::size_t>(it - queues.begin());
    if (it == queues.end() || *it != jobs_[j].queue) {
      queues.insert(it, jobs_[j].queue);
      queue_slow.insert(queue_slow.begin() + static_cast<std::ptrdiff_t>(qi), {0.0, 0});
    }
    queue_slow[qi].first += sd;
    ++queue_slow[qi].second;
    m.makespan = std::max(m.makespan, s.end - first);
  }
  const auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  m.jct_mean = mean(jct);
  m.wait_mean = mean(wait);
  m.slowdown_mean = mean(slow);
  std::sort(jct.begin(), jct.end());
  std::sort(wait.begin(), wait.end());
  std::sort(slow.begin(), slow.end());
  m.jct_p50 = percentile(jct, 50);
  m.jct_p95 = percentile(jct, 95);
  m.jct_p99 = percentile(jct, 99);
  m.wait_p50 = percentile(wait, 50);
  m.wait_p95 = percentile(wait, 95);
  m.wait_p99 = percentile(wait, 99);
  m.slowdown_p50 = percentile(slow, 50);
  m.slowdown_p95 = percentile(slow, 95);
  // Jain's index over the queues' mean slowdowns: 1 when every queue is slowed down alike.
  if (!queue_slow.empty()) {
    double sum = 0, sq = 0;
    for (const auto& [s, c] : queue_slow) {
      const double x = s / static_cast<double>(c);
      sum += x;
      sq += x * x;
    }
    m.jain_fairness = sq > 0 ? sum * sum / (static_cast<double>(queue_slow.size()) * sq) : 1.0;
  }
  const Seconds span = end - first;
  m.simulated_seconds = span;
  m.utilisation_mean = span > 0 ? static_cast<double>(util_integral_ / span) : 0;
  double frag = 0;
  for (const Sample& s : r.samples) frag += s.fragmentation;
  m.fragmentation_mean = r.samples.empty() ? 0 : frag / static_cast<double>(r.samples.size());
  constexpr double kMilliGpuHour = 1000.0 * 3600.0;
  m.gpu_hours_delivered = static_cast<double>(cons_.delivered) / kMilliGpuHour;
  m.gpu_hours_lost_preemption = static_cast<double>(cons_.lost_preemption) / kMilliGpuHour;
  m.gpu_hours_lost_failure = static_cast<double>(cons_.lost_failure) / kMilliGpuHour;
  m.gpu_hours_restart = static_cast<double>(cons_.restart_overhead) / kMilliGpuHour;
  m.preemptions_per_job = n_jobs ? static_cast<double>(m.preemptions) / static_cast<double>(n_jobs) : 0;
  m.energy_kwh = static_cast<double>(energy_joules_ / 3.6e6L);
  m.cost = static_cast<double>(cost_);
  r.metrics = m;
  r.jct_sorted = std::move(jct);
  return r;
}

}  // namespace

Result<SimResult> simulate(const SimCluster& cluster, const std::vector<SimJob>& jobs, const SimConfig& config) {
  auto state = ClusterState::build(cluster.nodes, GpuModelRegistry::builtin());
  if (!state) return state.error();
  if (!cluster.energy.empty() && cluster.energy.size() != cluster.nodes.node_count())
    return Error{"energy: one entry per node expected", ErrorCode::kInconsistent, "energy"};
  for (const auto& [field, value] : {std::pair{"cycle_period", config.cycle_period}, std::pair{"min_cycle_interval", config.min_cycle_interval}})
    if (value < 0)
      return Error{fmt::format("{}: expected seconds >= 0, got {}", field, value), ErrorCode::kInvalidValue, field};
  Engine engine(cluster, jobs, config, std::move(state.value()));
  return engine.run();
}

}  // namespace gpusched::sim

namespace gpusched::sim {

std::vector<std::string> policy_names() { return {"fifo", "greedy", "easy", "conservative", "priority", "drf", "las", "srtf"}; }

Result<PolicyConfig> parse_policy(std::string_view spec) {
  PolicyConfig p;
  p.name = std::string(spec);
  std::size_t plus = spec.find('+');
  const std::string_view base = spec.substr(0, plus);
  if (base == "fifo") {
  } else if (base == "greedy") {
    p.strict = false;
  } else if (base == "easy") {
    p.backfill = BackfillMode::kEasy;
  } else if (base == "conservative") {
    p.backfill = BackfillMode::kConservative;
  } else if (base == "priority") {
    p.order = QueueOrder::kPriority;
    p.preempt = true;
  } else if (base == "drf") {
    p.order = QueueOrder::kDrf;
  } else if (base == "las") {
    p.order = QueueOrder::kLas;
    p.preempt = true;
    p.strict = false;
  } else if (base == "srtf") {
    p.order = QueueOrder::kSrtf;
    p.preempt = true;
    p.strict = false;
  } else {
    return Error{fmt::format("policy '{}': unknown (known: fifo, greedy, easy, conservative, priority, drf, las, srtf)",
                             base),
                 ErrorCode::kUnknownName, "policy"};
  }
  while (plus != std::string_view::npos) {
    const std::size_t next = spec.find('+', plus + 1);
    const std::string_view mod = spec.substr(plus + 1, next == std::string_view::npos ? next : next - plus - 1);
    if (mod == "ckpt") p.checkpoint_aware = true;
    else if (mod == "topo") p.topology_aware = true;
    else if (mod == "energy") p.energy_aware = true;
    else if (mod == "preempt") p.preempt = true;
    else if (mod.starts_with("promote") && p.order == QueueOrder::kLas) {
      const std::string_view knob = mod.substr(7);
      const std::optional<double> k = detail::parse_positive(knob, 1e6);
      if (!k)
        return Error{fmt::format("policy '{}': '+promote' takes a positive number (Tiresias' knob), got '{}'", spec, knob),
                     ErrorCode::kInvalidValue, "policy"};
      p.las_promote_knob = *k;
    } else
      return Error{fmt::format("policy '{}': unknown modifier '{}' (known: ckpt, topo, energy, preempt, promoteK for las)", spec, mod),
                   ErrorCode::kUnknownName, "policy"};
    plus = next;
  }
  return p;
}

}  // namespace gpusched::sim
