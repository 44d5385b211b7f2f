// The scheduling cycle's inputs and decisions through the io library (gpusched/io/cycle_json.hpp):
// what `gpusched cycle`, the C API and the Python module share.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/task_records.hpp"

using namespace gpusched;

namespace cycle_json_test {

// n0: 4 GPUs, n1: 8 GPUs (A100-80GB).
ClusterState two_nodes() {
  auto doc = io::read_cluster_json(R"({"nodes": [
    {"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
    {"name": "n1", "cpu": 32, "memory": "128Gi", "gpus": 8, "gpu_model": "A100-80GB"}]})");
  REQUIRE(doc.ok());
  auto state = ClusterState::build(doc->cluster, doc->registry);
  REQUIRE(state.ok());
  return std::move(*state);
}

io::JobsDocument jobs(const std::string& text) {
  auto doc = io::read_jobs_json(text, "pending.json");
  REQUIRE(doc.ok());
  return std::move(*doc);
}

const char* const kRunning = R"({"jobs": [{"name": "low", "gpus": 8, "cpu": 4, "start_time": 0,
  "restart_cost": 30, "placement": [{"node": "n1", "gpus": [0,1,2,3,4,5,6,7]}]}]})";

}  // namespace cycle_json_test

using namespace cycle_json_test;

TEST_CASE("cycle JSON: pending jobs' cycle fields are read by the jobs reader, with the field named") {
  const io::JobsDocument d = jobs(R"({"jobs": [{"name": "a", "gpus": 1, "runtime_estimate": 600, "not_before": 50,
    "restarts": 2, "preemptible": false, "restart_cost": 9, "checkpoint_interval": 300}, {"name": "b", "gpus": 1}]})");
  REQUIRE(d.cycle.size() == 2);
  CHECK(d.cycle[0].runtime_estimate == 600);
  CHECK(d.cycle[0].not_before == 50);
  CHECK(d.cycle[0].restarts == 2);
  CHECK_FALSE(d.cycle[0].preemptible);
  CHECK(d.cycle[0].restart_cost == 9);
  CHECK(d.cycle[0].checkpoint_interval == 300);
  CHECK(d.cycle[1].preemptible);
  CHECK(d.cycle[1].runtime_estimate == 0);
  auto bad = io::read_jobs_json(R"({"jobs": [{"name": "a", "preemptible": "no"}]})", "p.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "jobs[0].preemptible: expected true or false, got \"no\"");
  ClusterState st = two_nodes();
  auto pending = io::pending_jobs(st, d, {});
  REQUIRE(pending.ok());
  CHECK((*pending)[0].runtime_estimate == 600);
  CHECK((*pending)[0].not_before == 50);
  CHECK_FALSE((*pending)[0].preemptible);
}

TEST_CASE("cycle JSON: a run, its JSON, dry run and a kept run") {
  ClusterState st = two_nodes();
  const io::JobsDocument pending = jobs(R"({"jobs": [{"name": "high", "gpus": 8, "priority": 10},
                                                     {"name": "small", "gpus": 2}]})");
  scheduler::CycleOptions o;
  o.dry_run = true;
  auto run = io::cycle_run(st, pending, "", kRunning, 1000, o);
  REQUIRE(run.ok());
  CHECK(st.shares().idle_gpus(0) == 4);  // a dry run leaves the state as it was, running jobs included
  CHECK(st.shares().idle_gpus(1) == 8);
  REQUIRE(run->inputs.running.size() == 1);
  CHECK(run->inputs.running[0].restart_cost == 30);
  CHECK(run->inputs.running_groups[0] == std::vector<std::string>{"task"});
  REQUIRE(run->decisions.starts.size() == 2);
  CHECK(run->decisions.starts[0].job == "high");
  const auto doc = nlohmann::json::parse(io::write_cycle_json(st, *run));
  CHECK(doc["now"] == 1000);
  CHECK(doc["evictions"][0]["job"] == "low");
  CHECK(doc["evictions"][0]["lost_gpu_seconds"] == 8000.0);
  CHECK(doc["evictions"][0]["restart_gpu_seconds"] == 240.0);  // 8 GPUs x 30 s
  CHECK(doc["starts"][1]["tasks"][0] == nlohmann::json{{"group", "task"}, {"node", "n0"}, {"gpus", {0, 1}}});
  const std::string table = io::write_cycle_table(st, *run);
  CHECK(table.find("high                 1 task(s) on n1 [0,1,2,3,4,5,6,7] (after evictions)") != std::string::npos);

  o.dry_run = false;
  auto kept = io::cycle_run(st, pending, "", kRunning, 1000, o);
  REQUIRE(kept.ok());
  CHECK(st.shares().idle_gpus(0) == 2);
  CHECK(st.shares().idle_gpus(1) == 0);
  CHECK(st.journal_size() == 0);
}

TEST_CASE("cycle JSON: an elastic running job of two groups grows each under its own name and shape") {
  // n0 (4 GPUs) idle, n1 (8 GPUs) holds mixed at its minimum: ps 1 x 1 GPU (of 1..2), worker 2 x 2 GPUs
  // (of 2..3). The cycle grows ps by one 1-GPU task and worker by one 2-GPU task, named by group.
  ClusterState st = two_nodes();
  const char* running = R"({"jobs": [{"name": "mixed", "start_time": 0, "groups": [
      {"name": "ps", "replicas": 2, "min_replicas": 1, "gpus": 1},
      {"name": "worker", "replicas": 3, "min_replicas": 2, "gpus": 2}],
    "placement": [{"group": "ps", "node": "n1", "gpus": [0]},
                  {"group": "worker", "node": "n1", "gpus": [1, 2]}, {"group": "worker", "node": "n1", "gpus": [3, 4]}]}]})";
  scheduler::CycleOptions o;
  o.dry_run = true;
  auto run = io::cycle_run(st, jobs(R"({"jobs": []})"), "", running, 100, o);
  REQUIRE_MESSAGE(run.ok(), (run.ok() ? "" : run.error().message));
  REQUIRE(run->decisions.grows.size() == 1);
  const auto doc = nlohmann::json::parse(io::write_cycle_json(st, *run));
  const auto& tasks = doc["grows"][0]["tasks"];
  REQUIRE(tasks.size() == 2);
  CHECK(tasks[0]["group"] == "ps");
  CHECK(tasks[0]["gpus"].size() == 1);
  CHECK(tasks[1]["group"] == "worker");
  CHECK(tasks[1]["gpus"].size() == 2);
}

TEST_CASE("cycle JSON: a bad running job is an error naming it, and the state is rolled back") {
  ClusterState st = two_nodes();
  const io::JobsDocument pending = jobs(R"({"jobs": [{"name": "p", "gpus": 1}]})");
  auto r = io::cycle_run(st, pending, "", R"({"jobs": [
    {"name": "x", "gpus": 2, "start_time": 0, "placement": [{"node": "n0", "gpus": [0, 1]}]},
    {"name": "y", "gpus": 1, "start_time": 0, "placement": [{"node": "n0", "gpus": [0]}]}]})", 0, {},
                         {.running = "running.json"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("running.json: jobs[1].placement[0]: ") == 0);
  CHECK(r.error().field == "running.json: jobs[1].placement[0]");
  CHECK(st.shares().idle_gpus(0) == 4);  // x's reservation was rolled back
  auto missing = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "gpus": 1}]})", 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kMissingField);
  CHECK(missing.error().message == "running: jobs[0].start_time: missing (a running job's start, seconds)");
  auto pend = io::cycle_run(st, jobs(R"({"jobs": [{"name": "p", "gpus": 1, "placement": []}]})"), "", "", 0);
  REQUIRE_FALSE(pend.ok());
  CHECK(pend.error().message == "jobs: jobs[0]: start_time/placement belong to running jobs (--running)");
  // A restart cost whose work (x the GPU share held) passes 64 bits is refused, not saturated.
  auto restart = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "gpus": 2, "start_time": 0,
      "restart_cost": 4611686018427387904, "placement": [{"node": "n0", "gpus": [0, 1]}]}]})", 0);
  REQUIRE_FALSE(restart.ok());
  CHECK(restart.error().code == ErrorCode::kOverflow);
  CHECK(restart.error().message.find("jobs[0].restart_cost: 4611686018427387904 s x the job's 2000 milli-GPU") != std::string::npos);
  CHECK(st.shares().idle_gpus(0) == 4);
}

TEST_CASE("cycle JSON: options") {
  auto o = io::read_cycle_options_json(R"({"preempt": false, "within_queue": "lower-or-newer", "backfill": "none",
    "backfill_depth": 7, "min_runtime": 60, "reclaim_within_cohort": "never", "grow": false, "dry_run": true})");
  REQUIRE(o.ok());
  CHECK_FALSE(o->preempt);
  CHECK(o->preemption.within_queue == scheduler::WithinQueue::kLowerOrNewerEqualPriority);
  CHECK(o->backfill.mode == scheduler::BackfillMode::kNone);
  CHECK(o->backfill.depth == 7);
  CHECK(o->preemption.min_runtime == 60);
  CHECK(o->reclaim_within_cohort == scheduler::CohortReclaim::kNever);
  CHECK_FALSE(o->grow_elastic);
  CHECK(o->dry_run);
  CHECK(io::read_cycle_options_json("").ok());
  auto bad = io::read_cycle_options_json(R"({"backfill_resolution": 0})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "options.backfill_resolution: expected at least 1, got 0");
  auto unknown = io::read_cycle_options_json(R"({"within_queue": "always"})");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kUnknownName);
  CHECK(unknown.error().field == "options.within_queue");
  CHECK_FALSE(io::read_cycle_options_json("{").ok());
}

TEST_CASE("task records: a placement's tasks by group and replica, with node names") {
  ClusterState st = two_nodes();
  auto job = compile_job(st, jobs(R"({"jobs": [{"name": "j", "groups": [{"name": "w", "replicas": 2, "gpus": 4},
                                                                        {"name": "n", "gpus": 1, "gpu_milli": 250}]}]})").jobs[0]);
  REQUIRE(job.ok());
  BestFitPolicy policy;
  JobPlacement p = place_job(st, *job, policy);
  REQUIRE(p.placed());
  const auto records = io::task_records(st, *job, p.tasks);
  REQUIRE(records.size() == 3);
  CHECK(records[0].group == "w");
  CHECK(records[1].group == "w");
  CHECK(records[1].replica == 1);
  CHECK(records[2].group == "n");
  CHECK(records[2].partial_gpu());
  CHECK(records[2].gpu_milli == 250);
  CHECK(records[0].node_name == std::string(st.node_name(records[0].node)));
  CHECK(records[0].gpus.size() == 4);
  CHECK_FALSE(records[0].is_mig());
  CHECK(records[0].mig_start == -1);
}

TEST_CASE("cycle JSON: running MIG tasks take their instance; a preemptor evicts one to start on its GPU") {
  // One node, two A100-40GB in MIG mode. GPU 0: a busy 3g.20gb at slice 0 (not a running job's: held
  // by work the cycle does not manage) and an idle 3g.20gb at 4, which running job m1 uses. GPU 1:
  // empty; running job m2 holds a 1g.5gb at slice 0 (created for it). p (priority 10) asks a
  // 7g.40gb: only GPU 1 can hold it once m2 (priority 0) is evicted.
  auto doc = io::read_cluster_json(R"({"nodes": [{"name": "dgx", "cpu": 64, "memory": "512Gi", "gpus": [
    {"model": "A100-SXM4-40GB", "mig": {"instances": [{"profile": "3g.20gb", "start": 0, "busy": true},
                                                      {"profile": "3g.20gb", "start": 4}]}},
    {"model": "A100-SXM4-40GB", "mig": {}}]}]})");
  REQUIRE(doc.ok());
  ClusterState st = ClusterState::build(doc->cluster, doc->registry).value();
  const char* running = R"({"jobs": [
    {"name": "m1", "mig_profile": "3g.20gb", "cpu": 1, "start_time": 0, "placement": [{"node": "dgx", "gpus": [0]}]},
    {"name": "m2", "mig_profile": "1g.5gb", "cpu": 1, "start_time": 0,
     "placement": [{"node": "dgx", "gpus": [1], "mig_start": 0}]}]})";
  const io::JobsDocument pending = jobs(R"({"jobs": [{"name": "p", "mig_profile": "7g.40gb", "cpu": 1, "priority": 10}]})");
  scheduler::CycleOptions o;
  o.dry_run = true;
  auto run = io::cycle_run(st, pending, "", running, 100, o);
  REQUIRE_MESSAGE(run.ok(), run.error().message);
  const TaskAssignment& m1 = run->inputs.running[0].tasks.at(0).assignment;
  CHECK(m1.mig_start == 4);  // the GPU's idle instance of the profile
  CHECK_FALSE(m1.mig_create);
  const TaskAssignment& m2 = run->inputs.running[1].tasks.at(0).assignment;
  CHECK(m2.mig_start == 0);
  CHECK(m2.mig_create);  // no instance there: created for it
  REQUIRE(run->decisions.evictions.size() == 1);
  CHECK(run->decisions.evictions[0].job == "m2");
  REQUIRE(run->decisions.starts.size() == 1);
  CHECK(run->decisions.starts[0].job == "p");
  CHECK(run->decisions.starts[0].tasks.at(0).assignment.gpus == std::vector<GpuIndex>{1});
  // The dry run left the instances as they were: GPU 0's at slice 4 idle again, GPU 1 empty.
  const mig::MigGpuId g0 = st.mig().gpu(0, 0), g1 = st.mig().gpu(0, 1);
  CHECK(st.mig().table().instances(g1).empty());
  REQUIRE(st.mig().table().instances(g0).size() == 2);
  CHECK_FALSE(st.mig().table().instances(g0)[1].busy);

  // Refused, naming the field: a MIG task on a GPU that is busy there, a slice beyond the GPU, a
  // GPU index beyond the node, and mig_start for a task without a MIG profile.
  auto busy = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "mig_profile": "3g.20gb", "cpu": 1, "start_time": 0,
    "placement": [{"node": "dgx", "gpus": [0], "mig_start": 0}]}]})", 0, o);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error().message.find("running: jobs[0].placement[0]: ") == 0);
  auto slice = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "mig_profile": "1g.5gb", "cpu": 1, "start_time": 0,
    "placement": [{"node": "dgx", "gpus": [1], "mig_start": 8}]}]})", 0, o);
  REQUIRE_FALSE(slice.ok());
  CHECK(slice.error().message.find("jobs[0].placement[0].mig_start: the A100-SXM4-40GB has memory slices 0-7, got 8") !=
        std::string::npos);
  auto index = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "gpus": 1, "cpu": 1, "start_time": 0,
    "placement": [{"node": "dgx", "gpus": [65537]}]}]})", 0, o);
  REQUIRE_FALSE(index.ok());
  CHECK(index.error().message.find("gpus[0]: node \"dgx\" has 2 GPUs, got index 65537") != std::string::npos);
  auto not_mig = io::cycle_run(st, pending, "", R"({"jobs": [{"name": "x", "gpus": 1, "cpu": 1, "start_time": 0,
    "placement": [{"node": "dgx", "gpus": [1], "mig_start": 0}]}]})", 0, o);
  REQUIRE_FALSE(not_mig.ok());
  CHECK(not_mig.error().message.find("mig_start: the group asks for no MIG profile") != std::string::npos);
  CHECK(st.journal_size() == 0);
}
