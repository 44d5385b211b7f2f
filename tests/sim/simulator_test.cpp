// The time-based simulator (gpusched/sim/simulator.hpp): hand-computed schedules, lost work of a
// preemption and of a failure, conservation over random instances, determinism, bad trace rows.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gpusched/sim/sim_report.hpp"
#include "gpusched/sim/simulator.hpp"
#include "gpusched/sim/sweep.hpp"
#include "gpusched/sim/traces.hpp"
#include "test_util.hpp"

using namespace gpusched;
using namespace gpusched::sim;

namespace {

SimJob job(std::string name, Seconds submit, std::int32_t gpus, Seconds duration) {
  SimJob j;
  j.name = std::move(name);
  j.submit = submit;
  j.duration = duration;
  j.shape.gpus = gpus;
  j.shape.gpu_milli = kMilliPerGpu;
  return j;
}

SimResult run(const SimCluster& c, const std::vector<SimJob>& jobs, const std::string& policy,
              SimConfig cfg = {}) {
  auto p = parse_policy(policy);
  REQUIRE(p);
  cfg.policy = *p;
  cfg.policy.min_runtime = 0;
  auto r = simulate(c, jobs, cfg);
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  CHECK(r->conservation.holds());
  return *r;
}

std::vector<Seconds> jcts(const SimResult& r) {
  std::vector<Seconds> out;
  for (const JobOutcome& o : r.jobs) out.push_back(o.end - o.submit);
  return out;
}

// One node of 4 GPUs. J0 (3 GPUs, 100 s) runs from 0; J1 (3 GPUs) and J2 (4 GPUs) must wait; J3 (1 GPU,
// 250 s) fits the one idle GPU at t=3. Estimates are exact.
//   FIFO (strict):  J1 100..200, J2 200..300, J3 300..550 (behind the blocked head). JCTs 100 199 298 547.
//   EASY:           J1 reserved at the shadow time 100 (free 1 + J0's 3 = 4 >= 3, extra 1): J3 needs 1 <=
//                   extra and starts at 3 (to 253); only J1 is protected, so J2 (4 GPUs) waits for J3:
//                   J1 100..200, J2 253..353. JCTs 100 199 351 250.
//   conservative:   J2 is reserved too ([200, 300) needs all 4), so J3 would delay it and may not start
//                   before 300: the FIFO schedule. JCTs 100 199 298 547.
std::vector<SimJob> easy_example() {
  return {job("J0", 0, 3, 100), job("J1", 1, 3, 100), job("J2", 2, 4, 100), job("J3", 3, 1, 250)};
}

}  // namespace

TEST_CASE("FIFO, EASY and conservative backfill: hand-computed schedules") {
  const SimCluster c = make_uniform_cluster(1, 4, "V100M32");
  const auto jobs = easy_example();
  CHECK(jcts(run(c, jobs, "fifo")) == std::vector<Seconds>{100, 199, 298, 547});
  CHECK(jcts(run(c, jobs, "easy")) == std::vector<Seconds>{100, 199, 351, 250});
  CHECK(jcts(run(c, jobs, "conservative")) == std::vector<Seconds>{100, 199, 298, 547});
  // The simulator's own backfill step is gone: the modifier is refused.
  CHECK_FALSE(parse_policy("conservative+simbf"));
  const SimResult f = run(c, jobs, "fifo");
  CHECK(f.metrics.makespan == 550);
  CHECK(f.metrics.jct_mean == doctest::Approx((100 + 199 + 298 + 547) / 4.0));
  // Greedy (BestEffortFIFO, no reservation): J3 starts at 3; J1 fits at 100 (J0's 3 GPUs), J2 waits
  // for J1 and J3: 253..353. JCTs 100 199 351 250 (the same as EASY here).
  CHECK(jcts(run(c, jobs, "greedy")) == std::vector<Seconds>{100, 199, 351, 250});
  // Demand: 3x100 + 3x100 + 4x100 + 1x250 = 1250 GPU-seconds, delivered exactly (no loss, no rounding).
  CHECK(f.conservation.delivered == 1'250'000);
  CHECK(f.conservation.demand_done == 1'250'000);
}

TEST_CASE("LAS (Tiresias): a job past the first threshold is preempted; lost work since its checkpoint") {
  // One GPU. J0 (300 s) starts at 0; J1 (50 s) arrives at 10. Threshold 100 GPU-seconds: at 10 both
  // are in the top queue (J0 attained 10), so nothing moves; J0 crosses the threshold at 100, a
  // wake-up (no periodic tick needed), and J1 preempts it then.
  //   checkpoint every 60 s: J0's last checkpoint is 60 -> 40 GPU-seconds lost; J1 100..150; J0
  //   resumes at 150 with 240 s left: ends 390. JCTs 390 and 140.
  //   no checkpoints: all 100 GPU-seconds lost; J0 restarts from scratch at 150, ends 450.
  const SimCluster c = make_uniform_cluster(1, 1, "V100M32");
  std::vector<SimJob> jobs = {job("J0", 0, 1, 300), job("J1", 10, 1, 50)};
  auto p = parse_policy("las");
  REQUIRE(p);
  for (Seconds interval : {Seconds{60}, Seconds{0}}) {
    jobs[0].checkpoint_interval = interval;
    SimConfig c2;
    c2.policy = *p;
    c2.policy.min_runtime = 0;
    c2.policy.las_thresholds = {100 * 1000};
    auto r = simulate(c, jobs, c2);
    REQUIRE(r);
    CHECK(r->conservation.holds());
    CHECK(r->metrics.preemptions == 1);
    if (interval == 60) {
      CHECK(jcts(*r) == std::vector<Seconds>{390, 140});
      CHECK(r->conservation.lost_preemption == 40'000);
    } else {
      CHECK(jcts(*r) == std::vector<Seconds>{450, 140});
      CHECK(r->conservation.lost_preemption == 100'000);
    }
    CHECK(r->jobs[0].preemptions == 1);
    // A cycle every 7 s besides the wake-ups changes nothing: the wake-ups are every instant at
    // which a decision can change.
    c2.cycle_period = 7;
    auto ticked = simulate(c, jobs, c2);
    REQUIRE(ticked);
    CHECK(jcts(*ticked) == jcts(*r));
    CHECK(ticked->metrics.cycles > r->metrics.cycles);
  }
}

TEST_CASE("LAS starvation (Tiresias' promote knob): a job that waited K times its run goes to the top queue") {
  // One GPU, threshold 100 GPU-seconds, checkpoints every 60 s. J0 (300 s) starts at 0; J1 (1000 s)
  // arrives at 10 and preempts J0 at 100, when J0 crosses the threshold (J0's checkpoint at 60: 40
  // GPU-seconds lost, 240 s left). J1 passes 100 GPU-seconds at 200 and joins J0's queue: nothing
  // moves any more.
  //   las:          J1 100..1100, J0 1100..1340. JCTs 1340 and 1090.
  //   las+promote2: J0 waits from 100 with 100 s run: starving at 300, a wake-up, promoted; it
  //                 preempts J1 (its checkpoint at 280: 20 GPU-seconds lost) and runs 300..540 with
  //                 its attained service counted from 0 (so J1, in the second queue, does not take
  //                 the GPU back when J0 passes the threshold at 400); J1 resumes 540..1360 (820 s
  //                 left). JCTs 540 and 1350.
  const SimCluster c = make_uniform_cluster(1, 1, "V100M32");
  std::vector<SimJob> jobs = {job("J0", 0, 1, 300), job("J1", 10, 1, 1000)};
  for (SimJob& j : jobs) j.checkpoint_interval = 60;
  for (const char* policy : {"las", "las+promote2"}) {
    CAPTURE(policy);
    SimConfig cfg;
    auto p = parse_policy(policy);
    REQUIRE(p);
    cfg.policy = *p;
    cfg.policy.min_runtime = 0;
    cfg.policy.las_thresholds = {100 * 1000};
    auto r = simulate(c, jobs, cfg);
    REQUIRE(r);
    CHECK(r->conservation.holds());
    if (cfg.policy.las_promote_knob == 0) {
      CHECK(r->conservation.lost_preemption == 40'000);
      CHECK(jcts(*r) == std::vector<Seconds>{1340, 1090});
      CHECK(r->metrics.preemptions == 1);
    } else {
      CHECK(cfg.policy.las_promote_knob == 2.0);
      CHECK(r->conservation.lost_preemption == 60'000);
      CHECK(jcts(*r) == std::vector<Seconds>{540, 1350});
      CHECK(r->metrics.preemptions == 2);
    }
    cfg.cycle_period = 13;
    auto ticked = simulate(c, jobs, cfg);
    REQUIRE(ticked);
    CHECK(jcts(*ticked) == jcts(*r));
  }
  for (const char* bad : {"las+promote", "las+promote0", "las+promote-1", "las+promotex", "fifo+promote2",
                          "las+promote2.5x", "las+promote 2", "las+promote1e7", "las+promoteinf", "las+promotenan"})
    CHECK_FALSE(parse_policy(bad));
  // Read exactly, whatever the C locale's decimal point.
  CHECK(parse_policy("las+promote2.5")->las_promote_knob == 2.5);
  CHECK(parse_policy("las+promote1e3")->las_promote_knob == 1000.0);
}

TEST_CASE("a node failure loses the work since the last checkpoint; the job restarts after its backoff") {
  // One GPU node; J0 (100 s, checkpoint every 30 s) from 0. The node fails at 50 for 20 s: J0 loses
  // 50 - 30 = 20 GPU-seconds and may restart at 50 + 60 (backoff) = 110, when the periodic cycle runs
  // (50 + 60); 70 s of work left: ends 180.
  const SimCluster c = make_uniform_cluster(1, 1, "V100M32");
  std::vector<SimJob> jobs = {job("J0", 0, 1, 100)};
  jobs[0].checkpoint_interval = 30;
  SimConfig cfg;
  cfg.failures.list = {NodeFailure{50, 0, 20}};
  const SimResult r = run(c, jobs, "fifo", cfg);
  CHECK(jcts(r) == std::vector<Seconds>{180});
  CHECK(r.conservation.lost_failure == 20'000);
  CHECK(r.metrics.node_failures == 1);
  CHECK(r.metrics.failure_restarts == 1);
  CHECK(r.jobs[0].failures == 1);
}

TEST_CASE("restart cost is paid at every (re)start and counted apart from lost work") {
  // One GPU; J0 (100 s, restart cost 10) alone: runs 0..110; 10 GPU-seconds of restart overhead.
  const SimCluster c = make_uniform_cluster(1, 1, "V100M32");
  std::vector<SimJob> jobs = {job("J0", 0, 1, 100)};
  jobs[0].restart_cost = 10;
  const SimResult r = run(c, jobs, "fifo");
  CHECK(jcts(r) == std::vector<Seconds>{110});
  CHECK(r.conservation.restart_overhead == 10'000);
  CHECK(r.conservation.delivered == 110'000);
}

TEST_CASE("conservation and completion over random workloads, every policy, with failures and elastic jobs") {
  for (std::uint64_t seed = 1; seed <= testing::trials<std::uint64_t>(3); ++seed) {
    SyntheticSpec s;
    s.jobs = testing::sanitized ? 60 : 150;  // the sanitized run checks the same code on fewer jobs
    s.seed = seed;
    s.arrivals_per_hour = 40;
    s.duration_median = 1800;
    s.extra = Augment{seed, 3, 3, 600, 30, 1.0, 0.5};
    const auto jobs = synthetic_jobs(s);
    const SimCluster c = make_uniform_cluster(8, 8, "V100M32", 4);
    int compared = 0;
    for (const std::string policy : {"fifo", "greedy", "easy", "conservative", "priority", "drf", "las", "srtf",
                                     "las+ckpt+topo", "las+promote2", "drf+preempt", "easy+energy", "conservative+ckpt"}) {
      SimConfig cfg;
      cfg.seed = seed;
      cfg.failures.mtbf_hours = 100;
      cfg.failures.mttr_hours = 1;
      auto p = parse_policy(policy);
      REQUIRE(p);
      cfg.policy = *p;
      auto r = simulate(c, jobs, cfg);
      REQUIRE(r);
      INFO(policy << " seed " << seed);
      CHECK(r->conservation.holds());
      CHECK(r->conservation.max_overcommit == 0);
      CHECK(r->metrics.completed + r->metrics.rejected == jobs.size());
      CHECK(r->metrics.rejected == 0);
      // Delivered = demand + losses + rounding: the demand part is the whole trace's.
      std::int64_t demand = 0;
      for (const SimJob& j : jobs) demand += j.demand();
      CHECK(r->conservation.demand_done == demand);
      // The kept scheduler decides what one rebuilt from scratch at every cycle decides: the same record.
      // (The sanitized run compares a third of the policies: the same code, a third of the runs.)
      if (testing::sanitized && ++compared % 3 != 1) continue;
      SimConfig rebuilt = cfg;
      rebuilt.rebuild_cycles = true;
      auto rb = simulate(c, jobs, rebuilt);
      REQUIRE(rb);
      CHECK(run_record(*rb, 0, "t").dump() == run_record(*r, 0, "t").dump());
      // The wake-ups are every instant at which a decision can change: a cycle every 37 s besides
      // them changes no job's start, end, preemptions or failures.
      SimConfig ticked = cfg;
      ticked.cycle_period = 37;
      auto tk = simulate(c, jobs, ticked);
      REQUIRE(tk);
      CHECK(tk->metrics.cycles > r->metrics.cycles);
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        CAPTURE(j);
        CHECK(tk->jobs[j].first_start == r->jobs[j].first_start);
        CHECK(tk->jobs[j].end == r->jobs[j].end);
        CHECK(tk->jobs[j].preemptions == r->jobs[j].preemptions);
        CHECK(tk->jobs[j].failures == r->jobs[j].failures);
      }
    }
  }
}

TEST_CASE("deterministic: the same inputs and seed give the same record") {
  SyntheticSpec s;
  s.jobs = gpusched::testing::sanitized ? 50 : 200;  // the sanitized run checks the same code on fewer jobs
  s.extra = Augment{7, 2, 2, 900, 20, 0.5, 0.3};
  const auto jobs = synthetic_jobs(s);
  const SimCluster c = make_uniform_cluster(6, 8, "V100M32", 3);
  for (const std::string policy : {"easy", "las+ckpt"}) {
    SimConfig cfg;
    cfg.failures.mtbf_hours = 50;
    cfg.policy = *parse_policy(policy);
    auto a = simulate(c, jobs, cfg), b = simulate(c, jobs, cfg);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(run_record(*a, 0, "t").dump() == run_record(*b, 0, "t").dump());
  }
  // The generator is seeded: the same spec gives the same jobs.
  CHECK(jobs_to_csv(synthetic_jobs(s)) == jobs_to_csv(jobs));
}

TEST_CASE("min_cycle_interval: events sooner than the interval after a cycle wait for one deferred cycle") {
  // The EASY example under greedy, a cycle at most every 10 s (periodic ticks every 60 s). J0 starts
  // at 0 (the first cycle); J1, J2, J3 arrive at 1, 2, 3 and are seen by one cycle at 10, which
  // starts J3 (10..260); J1 starts when J0 ends (100..200; the last cycle, a periodic one, was at 61);
  // J2 needs all 4 GPUs and starts when J3 ends (260..360; last cycle at 241). JCTs 100 199 358 257
  // (without the interval: 100 199 351 250, J3 starting at its arrival).
  const SimCluster c = make_uniform_cluster(1, 4, "V100M32");
  SimConfig cfg;
  cfg.min_cycle_interval = 10;
  const SimResult batched = run(c, easy_example(), "greedy", cfg);
  CHECK(jcts(batched) == std::vector<Seconds>{100, 199, 358, 257});
  const SimResult every = run(c, easy_example(), "greedy");
  CHECK(jcts(every) == std::vector<Seconds>{100, 199, 351, 250});
  CHECK(batched.metrics.cycles < every.metrics.cycles);
  // An interval of 1 s changes nothing: events are integer seconds, one cycle per instant already.
  cfg.min_cycle_interval = 1;
  CHECK(jcts(run(c, easy_example(), "greedy", cfg)) == jcts(every));
  cfg.min_cycle_interval = -5;
  const auto bad = simulate(c, easy_example(), cfg);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().field == "min_cycle_interval");
  CHECK(bad.error().message.find("-5") != std::string::npos);
}

TEST_CASE("a job larger than the cluster is rejected, not waited for forever") {
  const SimCluster c = make_uniform_cluster(1, 4, "V100M32");
  const SimResult r = run(c, {job("big", 0, 8, 10), job("ok", 0, 1, 10)}, "fifo");
  CHECK(r.metrics.rejected == 1);
  CHECK(r.metrics.completed == 1);
  // The jobs it held up behind it (StrictFIFO) run at once, and its rejection is no JCT or wait of -1:
  // a 17-GPU job on 16 GPUs used to make the two 1-GPU jobs submitted with it vanish.
  const SimCluster two = make_uniform_cluster(2, 8, "V100M32");
  for (const char* policy : {"fifo", "greedy", "easy", "conservative", "drf", "las"}) {
    CAPTURE(policy);
    const SimResult v = run(two, {job("big", 0, 17, 100), job("a", 0, 1, 100), job("b", 0, 1, 100)}, policy);
    CHECK(v.metrics.rejected == 1);
    CHECK(v.metrics.completed == 2);
    CHECK(v.metrics.jct_mean == 100.0);
    CHECK(v.metrics.wait_mean == 0.0);
    CHECK(v.metrics.jct_p99 == 100.0);
    CHECK(v.jobs[0].end == -1);
    CHECK(v.metrics.makespan == 100);
  }
}

TEST_CASE("an elastic job the cluster can never hold is rejected too; jobs not done are counted, never lost") {
  // An elastic job (2..4 tasks of 8 GPUs) asking H100 on a V100 cluster: the gang path said "not now"
  // for ever (only O(1) bounds), the simulator waited, and under FIFO the jobs behind it vanished:
  // tests/fixtures/sim/jobs.csv on 4 nodes completed 0 and rejected 0 of 3.
  const SimCluster c = make_uniform_cluster(4, 8, "V100M32");
  SimJob elastic = job("elastic-h100", 0, 8, 100);
  elastic.tasks = 4;
  elastic.min_tasks = 2;
  elastic.gpu_model = "H100-80GB";
  SimJob wide = job("wide", 0, 8, 100);  // 2..5 tasks of 8 GPUs: 5 never fit 4 nodes, 2 do
  wide.tasks = 5;
  wide.min_tasks = 2;
  for (const char* policy : {"fifo", "easy", "conservative", "drf", "las"}) {
    CAPTURE(policy);
    const SimResult r = run(c, {elastic, wide, job("after", 0, 1, 100)}, policy);
    CHECK(r.metrics.rejected == 1);
    CHECK(r.metrics.completed == 2);
    CHECK(r.metrics.unfinished == 0);
    CHECK(r.jobs[0].end == -1);
  }
  // The project's own fixture: train-a (H100) and infer (A100) can never run on V100 nodes.
  auto jobs = read_jobs_file(std::string(GPUSCHED_FIXTURES_DIR) + "/sim/jobs.csv");
  REQUIRE(jobs);
  const SimResult fixture = run(c, *jobs, "fifo");
  CHECK(fixture.metrics.completed == 1);
  CHECK(fixture.metrics.rejected == 2);
  CHECK(fixture.metrics.unfinished == 0);
  // A horizon that cuts a run leaves jobs unfinished, and says how many.
  SimConfig cut;
  cut.horizon = 50;
  const SimResult r = run(c, {job("a", 0, 8, 100), job("b", 10, 8, 100), job("c", 60, 1, 10)}, "fifo", cut);
  CHECK(r.metrics.completed == 0);
  CHECK(r.metrics.unfinished == 3);
  CHECK(r.metrics.completed + r.metrics.rejected + r.metrics.unfinished == r.metrics.jobs);
}

TEST_CASE("jobs whose numbers a run cannot account for are refused, naming the job and field") {
  const SimCluster c = make_uniform_cluster(2, 8, "V100M32");
  const auto refused = [&](SimJob bad, const std::string& field) {
    SimConfig cfg;
    cfg.policy = *parse_policy("fifo");
    auto r = simulate(c, {job("ok", 0, 1, 10), bad}, cfg);
    REQUIRE_FALSE(r);
    CHECK(r.error().field == "jobs[1]." + field);
    CHECK(r.error().message.find("job 1 (\"bad\"): " + field) != std::string::npos);
    CHECK(r.error().message.size() < 300);
  };
  constexpr Seconds kHuge = std::numeric_limits<Seconds>::max();
  SimJob b = job("bad", 0, 1, kHuge);  // it "completed" with makespan 0 and JCT 0
  refused(b, "duration");
  b = job("bad", kHuge, 1, 10);  // beside a job at 0: the run ran away
  refused(b, "submit");
  b = job("bad", 0, 1, 10);
  b.restart_cost = kHuge;  // a mean JCT of -9.2e18
  refused(b, "restart_cost");
  b.restart_cost = 0;
  b.checkpoint_interval = -1;
  refused(b, "checkpoint_interval");
  b.checkpoint_interval = 0;
  b.tasks = 1'000'000;
  b.shape.gpus = 65'535;
  b.duration = kMaxSimSeconds;  // 1e6 tasks x 65,535,000 milli x 2^40 s: beyond 64 bits
  refused(b, "duration");
}

TEST_CASE("sweep options out of range are refused naming the option, before anything runs") {
  const auto refused = [](SweepOptions o, const std::string& part) {
    o.traces = {"synthetic:10"};
    o.policies = {"fifo"};
    auto r = run_sweep(o);
    REQUIRE_FALSE(r);
    CHECK_MESSAGE(r.error().message.find(part) != std::string::npos, r.error().message);
  };
  SweepOptions o;
  o.gpus_per_node = -1;  // "internal error: cannot create std::vector larger than max_size()"
  refused(o, "gpus_per_node (--gpus-per-node): expected 1 to 64, got -1");
  o = {};
  o.nodes = 100'000'000;
  refused(o, "nodes (--nodes): expected at most 1000000");
  o = {};
  o.restart_cost = -1;
  refused(o, "restart_cost (--restart-cost)");
  o = {};
  o.checkpoint_interval = -1;
  refused(o, "checkpoint_interval (--checkpoint-interval)");
  o = {};
  o.estimate_error = std::nan("");
  refused(o, "estimate_error (--estimate-error)");
  o = {};
  o.mtbf_hours = -1;
  refused(o, "mtbf_hours (--mtbf-hours)");
  o = {};
  o.mtbf_hours = 0.001;  // no job outlives a failure: the run never ended
  refused(o, "0 or at least 0.1 hours");
  o = {};
  o.elastic = 2;
  refused(o, "elastic (--elastic): expected a share in [0, 1], got 2");
  o = {};
  o.shard = 1;
  o.shards = 99'999'999;
  refused(o, "shard (--shard)");
  o = {};
  o.traces = {"synthetic:-1"};
  o.policies = {"fifo"};
  auto r = run_sweep(o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("synthetic:N with N jobs in 1..") != std::string::npos);
}

TEST_CASE("trace readers: ITP rows, the generic CSV/JSON formats and their errors per row") {
  auto itp = parse_itp_trace("job_id,submission_time,duration,num_gpu\na,5,100,16\nb,7,50,2\n", "c.csv");
  REQUIRE(itp);
  REQUIRE(itp->size() == 2);
  CHECK((*itp)[0].tasks == 2);  // 16 GPUs = 2 nodes x 8
  CHECK((*itp)[0].shape.gpus == 8);
  CHECK((*itp)[1].shape.gpus == 2);
  auto bad_itp = parse_itp_trace("job_id,submission_time,duration,num_gpu\na,5,100,12\n", "c.csv");
  REQUIRE_FALSE(bad_itp);
  CHECK(bad_itp.error().message == "c.csv:2: column 4 (num_gpu): expected 1..8 or a multiple of 8, got \"12\"");

  const std::string header = "name,submit,duration,gpus,tasks,queue,preemptible\n";
  auto ok = parse_jobs_csv(header + "x,0,60,1,2,q1,false\ny,3,10,0,1,,\n", "jobs.csv");
  REQUIRE(ok);
  CHECK((*ok)[0].tasks == 2);
  CHECK((*ok)[0].queue == "q1");
  CHECK_FALSE((*ok)[0].preemptible);
  CHECK((*ok)[1].shape.gpus == 0);
  auto neg = parse_jobs_csv(header + "x,0,60,1,2,q1,false\nz,1,-5,1,1,,\n", "jobs.csv");
  REQUIRE_FALSE(neg);
  CHECK(neg.error().message == "jobs.csv:3: column 3 (duration): expected a positive integer (seconds), got \"-5\"");
  auto pre = parse_jobs_csv(header + "x,0,60,1,2,q1,maybe\n", "jobs.csv");
  REQUIRE_FALSE(pre);
  CHECK(pre.error().message == "jobs.csv:2: column 7 (preemptible): expected true, false, 1 or 0, got \"maybe\"");
  auto cols = parse_jobs_csv(header + "x,0,60\n", "jobs.csv");
  REQUIRE_FALSE(cols);
  CHECK(cols.error().message == "jobs.csv:2: expected 7 columns, got 3");
  auto missing = parse_jobs_csv("name,submit,gpus\nx,0,1\n", "jobs.csv");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "jobs.csv:1: missing column 'duration'");

  auto js = parse_jobs_json(R"({"jobs":[{"name":"a","submit":0,"duration":5,"gpus":1,"min_tasks":1,"tasks":4}]})", "j.json");
  REQUIRE(js);
  CHECK((*js)[0].min_tasks == 1);
  auto js_bad = parse_jobs_json(R"({"jobs":[{"name":"a","submit":0,"duration":5,"gpus":1},{"name":"b","submit":0,"duration":5,"gpus":1,"tasks":0}]})", "j.json");
  REQUIRE_FALSE(js_bad);
  CHECK(js_bad.error().message == "j.json: jobs[1].tasks: expected a positive integer, got 0");
  auto js_unknown = parse_jobs_json(R"({"jobs":[{"name":"a","submit":0,"duration":5,"gpus":1,"colour":"red"}]})", "j.json");
  REQUIRE_FALSE(js_unknown);
  CHECK(js_unknown.error().message == "j.json: jobs[0].colour: unknown field");
  auto js_missing = parse_jobs_json(R"({"jobs":[{"name":"a","submit":0,"gpus":1}]})", "j.json");
  REQUIRE_FALSE(js_missing);
  CHECK(js_missing.error().message == "j.json: jobs[0]: missing field 'duration'");

  // What jobs_to_csv writes reads back the same.
  SyntheticSpec s;
  s.jobs = 30;
  s.extra = Augment{3, 2, 2, 60, 5, 0.5, 0.5};
  const auto gen = synthetic_jobs(s);
  auto back = parse_jobs_csv(jobs_to_csv(gen), "gen.csv");
  REQUIRE(back);
  CHECK(jobs_to_csv(*back) == jobs_to_csv(gen));
}

// docs/formats.md's rules for every reader, on the simulator's trace formats (issue 15, part 1).
TEST_CASE("trace readers: quoted CSV fields, every line ending, unknown and repeated columns, control characters, no rows") {
  const std::string header = "name,submit,duration,gpus,queue\n";
  // RFC 4180 quoting: a comma and a doubled quote inside quoted fields, spaces kept inside quotes.
  auto quoted = parse_jobs_csv(header + "\"a,b\",0,60,1,\"q \"\"x\"\"\"\n \" y \" ,1,60,1,q\n", "q.csv");
  REQUIRE(quoted);
  REQUIRE(quoted->size() == 2);
  CHECK((*quoted)[0].name == "a,b");
  CHECK((*quoted)[0].queue == "q \"x\"");
  CHECK((*quoted)[1].name == " y ");
  // A quoted field may span lines, but no name may hold a line break: refused at the record's line,
  // and a later error names its own line (the quoted field took two).
  auto two_lines = parse_jobs_csv(header + "x,1,60,1,q\n\"two\nlines\",1,60,1,q\n", "q.csv");
  REQUIRE_FALSE(two_lines);
  CHECK(two_lines.error().message == "q.csv:3: column 1 (name): expected a name without control characters (0x0a), got \"two\\x0alines\"");
  auto after = parse_jobs_csv("name,submit,duration,gpus,estimate\nx,1,60,1,\"1\n\"\nz,1,-5,1,0\n", "q.csv");
  REQUIRE_FALSE(after);
  CHECK(after.error().message == "q.csv:2: column 5 (estimate): expected a non-negative integer (seconds), got \"1\\x0a\"");
  auto later = parse_jobs_csv("name,submit,duration,gpus,queue\nx,1,60,1,\"q\"\nz,1,-5,1,\"r\"\n", "q.csv");
  REQUIRE_FALSE(later);
  CHECK(later.error().message == "q.csv:3: column 3 (duration): expected a positive integer (seconds), got \"-5\"");
  // \r\n, a lone \r and a byte order mark read like \n.
  for (const std::string& text : {std::string("name,submit,duration,gpus\r\nx,0,60,1\r\ny,1,60,2\r\n"),
                                  std::string("name,submit,duration,gpus\rx,0,60,1\ry,1,60,2"),
                                  std::string("\xEF\xBB\xBFname,submit,duration,gpus\nx,0,60,1\n\ny,1,60,2\n")}) {
    auto jobs = parse_jobs_csv(text, "e.csv");
    REQUIRE(jobs);
    REQUIRE(jobs->size() == 2);
    CHECK((*jobs)[1].name == "y");
    CHECK((*jobs)[1].shape.gpus == 2);
  }
  auto itp_cr = parse_itp_trace("job_id,submission_time,duration,num_gpu\ra,5,100,16\rb,7,50,2", "c.csv");
  REQUIRE(itp_cr);
  CHECK(itp_cr->size() == 2);
  // Unknown and repeated columns are errors (a typo must not drop a field silently).
  auto typo = parse_jobs_csv("name,submit,duration,gpus,prioirty\nx,0,60,1,5\n", "t.csv");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().code == ErrorCode::kUnknownField);
  CHECK(typo.error().field == "prioirty");
  CHECK(typo.error().message.rfind("t.csv:1: unknown column \"prioirty\" (known: name, submit, duration, gpus, tasks,", 0) == 0);
  auto twice = parse_jobs_csv("name,submit,duration,gpus,gpus\nx,0,60,1,2\n", "t.csv");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message == "t.csv:1: column 'gpus' appears twice (columns 4 and 5)");
  auto itp_extra = parse_itp_trace("job_id,submission_time,duration,num_gpu,user\na,5,100,16,u\n", "c.csv");
  REQUIRE_FALSE(itp_extra);
  CHECK(itp_extra.error().code == ErrorCode::kUnknownField);
  // Malformed quoting.
  auto open_quote = parse_jobs_csv(header + "\"x,0,60,1,q\n", "o.csv");
  REQUIRE_FALSE(open_quote);
  CHECK(open_quote.error().message == "o.csv:2: a quoted field is not closed");
  auto trailing = parse_jobs_csv(header + "\"x\"y,0,60,1,q\n", "o.csv");
  REQUIRE_FALSE(trailing);
  CHECK(trailing.error().code == ErrorCode::kParse);
  // Control characters in names are refused, in every format.
  auto nul = parse_jobs_csv(header + std::string("a\0b,0,60,1,q\n", 13), "n.csv");
  REQUIRE_FALSE(nul);
  CHECK(nul.error().message == "n.csv:2: column 1 (name): expected a name without control characters (0x00), got \"a\\x00b\"");
  auto tab_queue = parse_jobs_json(R"({"jobs":[{"name":"a","submit":0,"duration":5,"gpus":1,"queue":"q\u0007"}]})", "j.json");
  REQUIRE_FALSE(tab_queue);
  CHECK(tab_queue.error().field == "jobs[0].queue");
  auto itp_ctl = parse_itp_trace("job_id,submission_time,duration,num_gpu\n\"a\x1b[2J\",5,100,1\n", "c.csv");
  REQUIRE_FALSE(itp_ctl);
  CHECK(itp_ctl.error().field == "job_id");
  // Sizes beyond 64 bits are errors, not wrapped amounts.
  auto mib = parse_jobs_csv("name,submit,duration,gpus,memory_mib\nx,0,60,1,9000000000000000\n", "m.csv");
  REQUIRE_FALSE(mib);
  CHECK(mib.error().field == "memory_mib");
  // No job rows is an error, never an empty run.
  for (const auto& r : {parse_jobs_csv(header, "h.csv"), parse_jobs_csv(header + "\n\n", "h.csv"),
                        parse_itp_trace("job_id,submission_time,duration,num_gpu\n", "h.csv"),
                        parse_jobs_json(R"({"jobs": []})", "h.csv")}) {
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "h.csv: no jobs (the file has no job rows)");
  }
  auto empty = parse_jobs_csv("", "h.csv");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().message == "h.csv: empty file (expected a header line)");

  // jobs_to_csv quotes what needs it, and the reader gives the same jobs back.
  std::vector<SimJob> odd(3);
  odd[0].name = "a,b";
  odd[1].name = " padded ";
  odd[1].queue = "say \"hi\"";
  odd[2].name = "\"quoted\", then not";
  odd[2].gpu_model = "H100-80GB";
  for (SimJob& j : odd) j.shape = TaskShape{0, 0, 1, 1000, 0};
  odd[1].shape = TaskShape{4000, 0, 0, 0, 0};  // CPU-only: its share 0 is written as an empty field
  auto odd_back = parse_jobs_csv(jobs_to_csv(odd), "odd.csv");
  REQUIRE(odd_back);
  REQUIRE(odd_back->size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK((*odd_back)[i].name == odd[i].name);
    CHECK((*odd_back)[i].queue == odd[i].queue);
    CHECK((*odd_back)[i].gpu_model == odd[i].gpu_model);
    CHECK((*odd_back)[i].shape == odd[i].shape);
  }
}

TEST_CASE("policy names: modifiers, and an unknown name or modifier is an error naming it") {
  auto p = parse_policy("las+ckpt+topo");
  REQUIRE(p);
  CHECK(p->order == QueueOrder::kLas);
  CHECK(p->checkpoint_aware);
  CHECK(p->topology_aware);
  auto bad = parse_policy("lifo");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("'lifo'") != std::string::npos);
  auto badmod = parse_policy("easy+fast");
  REQUIRE_FALSE(badmod);
  CHECK(badmod.error().message.find("'fast'") != std::string::npos);
}

TEST_CASE("read_shard: a shard is checked like every input, and contradictions are refused by field") {
  // A real shard (1 of 2) of synthetic:6 x {fifo, easy} x seeds {1, 2}: runs 1 and 3.
  SweepOptions o;
  o.traces = {"synthetic:6"};
  o.policies = {"fifo", "easy"};
  o.seeds = {1, 2};
  o.nodes = 2;
  o.shard = 1;
  o.shards = 2;
  auto runs = run_sweep(o);
  REQUIRE(runs);
  nlohmann::ordered_json doc;
  doc["sweep"] = sweep_description(o);
  doc["shard"] = {1, 2};
  doc["records"] = runs->records;
  CHECK(doc["sweep"]["trace_labels"][0] == "synthetic6");
  CHECK(doc["sweep"]["trace_digests"][0] == "");
  const auto good = read_shard(doc.dump(), "s.json");
  REQUIRE_MESSAGE(good, (good ? "" : good.error().message));
  CHECK(good->index == 1);
  CHECK(good->count == 2);
  CHECK(good->records.size() == 2);

  const auto refused = [&](const std::function<void(nlohmann::ordered_json&)>& change, const std::string& message) {
    nlohmann::ordered_json bad = doc;
    change(bad);
    const auto r = read_shard(bad.dump(), "s.json");
    CAPTURE(message);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == message);
  };
  using J = nlohmann::ordered_json;
  refused([](J& d) { d["shard"] = {5, 2}; }, "s.json: shard: expected [i, n] with 0 <= i < n <= 1000000, got [5,2]");
  refused([](J& d) { d["shard"] = {0, 0}; }, "s.json: shard: expected [i, n] with 0 <= i < n <= 1000000, got [0,0]");
  refused([](J& d) { d["shard"] = {0, 2}; }, "s.json: records[0].index: run 1 is not one of shard 0/2 (index % 2 = 1)");
  refused([](J& d) { d["records"][0]["policy"] = "easy"; },
          "s.json: records[0].policy: expected \"fifo\" for run 1, got \"easy\"");
  refused([](J& d) { d["records"][0]["trace"] = "other"; },
          "s.json: records[0].trace: expected \"synthetic6\" for run 1, got \"other\"");
  refused([](J& d) { d["records"][1]["seed"] = 1; }, "s.json: records[1].seed: expected 2 for run 3, got 1");
  refused([](J& d) { d["records"][0]["metrics"].erase("jct_mean_s"); }, "s.json: records[0].metrics.jct_mean_s: missing");
  refused([](J& d) { d["records"][0]["metrics"]["colour"] = 1; }, "s.json: records[0].metrics.colour: unknown field");
  refused([](J& d) { d["records"][0]["metrics"]["completed"] = "6"; },
          "s.json: records[0].metrics.completed: expected an integer, got \"6\"");
  refused([](J& d) { d["sweep"]["runs"] = -1; }, "s.json: sweep.runs: expected 4 (traces x policies x seeds), got -1");
  refused([](J& d) { d["records"][0]["index"] = 9; }, "s.json: records[0].index: expected a run index below 4, got 9");
  refused([](J& d) { d["extra"] = 1; }, "s.json: extra: unknown field");
  // Deep or repeated: refused by the JSON reader before anything is built from it.
  std::string deep = "{\"sweep\": ";
  for (int i = 0; i < 100000; ++i) deep += "[";
  const auto d = read_shard(deep, "deep.json");
  REQUIRE_FALSE(d);
  CHECK(d.error().message == "deep.json: JSON nested deeper than 64 levels");
  const auto twice = read_shard(R"({"shard": [0, 1], "shard": [0, 1]})", "t.json");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message == "t.json: shard: the key appears twice in its object");
}

TEST_CASE("failures no job outlives: the run ends, its samples stay bounded, what is not done is unfinished") {
  // Every node fails every 0.1 h on average and is down 2 h: a 1-hour job on all 4 nodes (no
  // checkpoints) almost never runs an hour. The run used to go on for ever, its samples growing.
  const SimCluster c = make_uniform_cluster(4, 8, "V100M32");
  SimJob wide = job("wide", 0, 8, 3600);
  wide.tasks = 4;
  SimConfig cfg;
  cfg.failures.mtbf_hours = 0.1;
  const SimResult r = run(c, {wide, job("small", 0, 1, 600)}, "fifo", cfg);
  CHECK(r.metrics.completed + r.metrics.unfinished == 2);
  CHECK(r.metrics.unfinished >= 1);
  // Cut at 1,000 x (span 3600 + serial 4200) past the first submit.
  CHECK(r.metrics.simulated_seconds <= 1000 * (3600 + 4200));
  CHECK(r.samples.size() < (std::size_t{1} << 14));
  for (std::size_t k = 1; k < r.samples.size(); ++k) CHECK(r.samples[k].time > r.samples[k - 1].time);
}

TEST_CASE("generated estimates stay within the simulator's horizon (the trace gave none to blame)") {
  // A job as long as the horizon allows, with the largest estimate error: duration x (1 + 1000 u)
  // would pass 2^40 s (and the int64 range for longer jobs); it is capped, never refused.
  SimJob j;
  j.name = "long";
  j.duration = kMaxSimSeconds;
  j.shape.gpus = 1;
  j.shape.gpu_milli = 1000;
  std::vector<SimJob> jobs{j};
  Augment a;
  a.estimate_error = 1000;
  augment(jobs, a);
  CHECK(jobs[0].estimate == kMaxSimSeconds);
  j.duration = 1000;
  jobs = {j};
  augment(jobs, a);
  CHECK(jobs[0].estimate >= 1000);
  CHECK(jobs[0].estimate <= 1000 * 1001);
}
