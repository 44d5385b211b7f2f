// One scheduling cycle at scale (issue 12): 10,000 nodes x 8 H100s, 50,000 running tasks (45,000
// one-GPU jobs and 625 gangs of 8 one-GPU tasks: 50,000 of the 80,000 GPUs busy), 10,000 pending jobs
// (9,000 of 1, 2 or 4 GPUs and 1,000 gangs of 4 tasks x 8 GPUs: 50,000 GPUs asked for, 30,000 free),
// four queues of one cohort (nominal 20,000 GPUs each), priorities 0-2 pending vs 0-1 running, so the
// cycle places, refuses, and preempts (up to its 32 preemption searches); every job has a runtime
// estimate, so the EASY backfill stage (default options: depth 500) plans reservations too.
//
//   BM_Cycle           the cycle on the one state, changed incrementally and rolled back (dry run)
//   BM_CycleRebuild    the naive baseline measured in the same run: rebuild the state from the cluster
//                      description and re-reserve every running task each cycle, then the same cycle
//   BM_SessionAfterSubmit/Finish   a scheduler session (scheduler/session.hpp) kept across cycles on
//                      that instance: after a first committed cycle, each iteration is one event (a
//                      one-GPU job submitted; one running job finished) and one committed cycle,
//                      decisions only (the simulator's and an orchestrator's loop). Issue 30: <= 1 ms.
//                      Counter bytes_per_pending: the session's memory per pending job.
//   BM_SessionAfterArrival/mode/resume   a job that only arrives, without queues or preemption (EASY 1,
//                      conservative 2): the cycle resumes the last one (resume 1) or serves from the
//                      top (resume 0).
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpusched/scheduler/cycle.hpp"
#include "gpusched/scheduler/session.hpp"
#include "instances/scheduler.hpp"

namespace {

using namespace gpusched;
using namespace gpusched::scheduler;

constexpr std::size_t kNodes = 10'000;

using Instance = bench::CycleInstance;

// The running tasks of the instance reserved on `state` (the baseline's rebuild).
void reserve_running(ClusterState& state, const std::vector<RunningJob>& running) {
  for (const RunningJob& r : running)
    for (const RunningTask& t : r.tasks) (void)state.reserve(t.request, t.assignment);
}

Instance& instance() {
  static Instance in = bench::cycle_instance(kNodes);
  return in;
}

void report(benchmark::State& st, const CycleDecisions& d) {
  st.counters["starts"] = static_cast<double>(d.starts.size());
  st.counters["evictions"] = static_cast<double>(d.evictions.size());
  st.counters["waiting"] = static_cast<double>(d.waiting.size());
  st.counters["preemption_searches"] = static_cast<double>(d.stats.preemption_attempts);
  st.counters["placements"] = static_cast<double>(d.stats.placements_tried);
}

void BM_Cycle(benchmark::State& st) {
  Instance& in = instance();
  CycleOptions o;
  o.dry_run = true;
  CycleDecisions last;
  for (auto _ : st) {
    auto d = run_cycle(in.state, in.running, in.pending, in.queues, 4000, o);
    benchmark::DoNotOptimize(d);
    last = std::move(*d);
  }
  report(st, last);
}

void BM_CycleRebuild(benchmark::State& st) {
  Instance& in = instance();
  CycleOptions o;
  CycleDecisions last;
  for (auto _ : st) {
    ClusterState state = ClusterState::build(in.cluster, GpuModelRegistry::builtin()).value();
    reserve_running(state, in.running);
    state.commit();
    auto d = run_cycle(state, in.running, in.pending, in.queues, 4000, o);
    benchmark::DoNotOptimize(d);
    last = std::move(*d);
  }
  report(st, last);
}

// A session over a copy of the instance, its first cycle committed.
struct KeptSession {
  ClusterState state;
  std::optional<Session> session;
  int next = 0;
};

// preempt: the cycle's preemption on (victims must have run 600 s, so what a cycle starts is not
// evicted by the next), else off.
std::unique_ptr<KeptSession> kept_session(bool preempt) {
  Instance& in = instance();
  auto k = std::make_unique<KeptSession>(KeptSession{in.state, std::nullopt, 0});
  CycleOptions o;
  o.preempt = preempt;
  o.preemption.min_runtime = 600;
  k->session.emplace(Session::open(k->state, in.queues, o).value());
  for (const RunningJob& r : in.running) (void)k->session->add_running(r);
  for (const PendingJob& p : in.pending) (void)k->session->submit(p);
  (void)k->session->cycle(4000, CycleApply::kCommit, CycleDetail::kDecisions);
  return k;
}

void BM_SessionAfterSubmit(benchmark::State& st) {
  auto k = kept_session(st.range(0) != 0);
  Seconds now = 4001;
  const PendingJob& model = instance().pending.front();
  std::size_t starts = 0, evictions = 0, searches = 0;
  for (auto _ : st) {
    PendingJob p = model;
    p.job.name = "new-" + std::to_string(k->next++);
    p.job.submit_time = now;
    (void)k->session->submit(std::move(p));
    auto d = k->session->cycle(now++, CycleApply::kCommit, CycleDetail::kDecisions);
    if (d) {
      starts += d->starts.size();
      evictions += d->evictions.size();
      searches += d->stats.preemption_attempts;
    }
    benchmark::DoNotOptimize(d);
  }
  st.counters["starts_per_cycle"] = static_cast<double>(starts) / static_cast<double>(st.iterations());
  st.counters["evictions_per_cycle"] = static_cast<double>(evictions) / static_cast<double>(st.iterations());
  st.counters["searches_per_cycle"] = static_cast<double>(searches) / static_cast<double>(st.iterations());
  st.counters["pending"] = static_cast<double>(k->session->pending().size());
  st.counters["running"] = static_cast<double>(k->session->running().size());
}

void BM_SessionAfterFinish(benchmark::State& st) {
  auto k = kept_session(st.range(0) != 0);
  Seconds now = 4001;
  std::size_t starts = 0;
  for (auto _ : st) {
    const std::string name = k->session->running()[static_cast<std::size_t>(k->next++) % k->session->running().size()].name;
    (void)k->session->finish(name);
    auto d = k->session->cycle(now++, CycleApply::kCommit, CycleDetail::kDecisions);
    starts += d ? d->starts.size() : 0;
    benchmark::DoNotOptimize(d);
  }
  st.counters["starts_per_cycle"] = static_cast<double>(starts) / static_cast<double>(st.iterations());
}

// An instant where a job only arrives (issue 30, scheduler/cycle.hpp CyclePrefix): the instance without
// queues or preemption, EASY (1) or conservative (2) backfill, after a first committed cycle. Each
// iteration submits a gang of 4 x 8 GPUs at the lowest priority, which waits, and commits a cycle; resume 0 makes the session
// forget its kept prefix first (a backoff set again to what it was on a kept job: the same decisions,
// served from the top). actions 1: the cycles report no reservations (CycleDetail::kActions, as the
// simulator asks). Counter resumed: the pending jobs a cycle did not serve again.
void BM_SessionAfterArrival(benchmark::State& st) {
  Instance& in = instance();
  ClusterState state = in.state;
  CycleOptions o;
  o.preempt = false;
  o.backfill.mode = st.range(0) == 2 ? BackfillMode::kConservative : BackfillMode::kEasy;
  Session session = Session::open(state, {}, o).value();
  for (const RunningJob& r : in.running) (void)session.add_running(r);
  for (const PendingJob& p : in.pending) (void)session.submit(p);
  (void)session.cycle(4000, CycleApply::kCommit, CycleDetail::kDecisions);
  const auto gang = std::find_if(in.pending.begin(), in.pending.end(), [](const PendingJob& p) {
    return p.job.groups.size() == 1 && p.job.groups[0].replicas == 4;
  });
  const bool resume = st.range(1) != 0;
  const CycleDetail detail = st.range(2) != 0 ? CycleDetail::kActions : CycleDetail::kDecisions;
  Seconds now = 4001;
  std::size_t starts = 0, resumed = 0;
  int next = 0;
  for (auto _ : st) {
    if (!resume) (void)session.set_not_before(session.pending().front().job.name, session.pending().front().not_before);
    PendingJob p = *gang;
    p.job.name = "arrival-" + std::to_string(next++);
    p.job.submit_time = now;
    p.job.priority = 0;  // (the lowest: it joins the end of the queue)
    (void)session.submit(std::move(p));
    auto d = session.cycle(now++, CycleApply::kCommit, detail);
    if (d) {
      starts += d->starts.size();
      resumed += d->stats.resumed;
    }
    benchmark::DoNotOptimize(d);
  }
  st.counters["starts_per_cycle"] = static_cast<double>(starts) / static_cast<double>(st.iterations());
  st.counters["resumed"] = static_cast<double>(resumed) / static_cast<double>(st.iterations());
  st.counters["pending"] = static_cast<double>(session.pending().size());
}

// The session's memory per pending job: what 10,000 more submitted jobs take (glibc's mallinfo2).
void BM_SessionMemoryPerPending(benchmark::State& st) {
  for (auto _ : st) {
    ClusterState state = instance().state;
    Session s = Session::open(state, instance().queues).value();
    const std::size_t before = mallinfo2().uordblks;
    for (const PendingJob& p : instance().pending) (void)s.submit(p);
    const std::size_t after = mallinfo2().uordblks;
    st.counters["bytes_per_pending"] =
        static_cast<double>(after - before) / static_cast<double>(instance().pending.size());
  }
}

}  // namespace

BENCHMARK(BM_SessionAfterSubmit)->ArgName("preempt")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200)->Repetitions(3);
BENCHMARK(BM_SessionAfterFinish)->ArgName("preempt")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(200)->Repetitions(3);
BENCHMARK(BM_SessionAfterArrival)->ArgNames({"mode", "resume", "actions"})->ArgsProduct({{1, 2}, {0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(20)->Repetitions(3);
BENCHMARK(BM_SessionMemoryPerPending)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Cycle)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(5)->Repetitions(3);
BENCHMARK(BM_CycleRebuild)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime()->Iterations(3)->Repetitions(3);

BENCHMARK_MAIN();
