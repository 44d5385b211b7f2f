// `gpusched cycle|explain|place|fairshare --slurm` end to end, on a real Slurm 22.05 capture
// (tests/fixtures/slurm) and on a small hand-written one with two accounts.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_util.hpp"

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;

const std::string kSlurm = std::string(GPUSCHED_FIXTURES_DIR) + "/slurm/";
const std::string kHeld = kSlurm + "sinfo-8gpu.json " + kSlurm + "squeue-held.json --slurm-held plan --now 1796394815";

}  // namespace

TEST_CASE("cycle --slurm: Slurm's plan, as JSON and as scontrol commands") {
  Run r = run_tool("cycle --slurm " + kHeld + " --backfill conservative --no-preempt --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  REQUIRE(out["starts"].size() == 1);
  CHECK(out["starts"][0]["job"] == "5");
  CHECK(out["reservations"].size() == 3);
  CHECK(out["slurm"]["schema"] == "v0.0.38");
  r = run_tool("cycle --slurm " + kHeld + " --backfill conservative --no-preempt --format slurm");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("scontrol update JobId=5 ReqNodeList=localhost\n") != std::string::npos);
  // r1 ends at 1796396613: job 3 (8 GPUs) starts at the first point of the 60 s grid (multiples of
  // 60 from the epoch, as Slurm's) at or after it, 29,939,944 x 60 = 1796396640 = 15:04:00.
  CHECK(r.out.find("TZ=UTC scontrol update JobId=3 StartTime=2026-12-04T15:04:00 ReqNodeList=localhost") != std::string::npos);
  // Held jobs skipped: nothing pending, the reason counted on stderr.
  r = run_tool("cycle --slurm " + kSlurm + "sinfo-8gpu.json " + kSlurm + "squeue-held.json --now 1796394815", true);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("4 pending jobs not planned, as Slurm would not start them now (4 \"JobHeldUser\")") != std::string::npos);
}

TEST_CASE("explain and place --slurm name jobs by Slurm's id") {
  Run r = run_tool("explain 6 --slurm " + kHeld + " --backfill conservative --no-preempt");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("reserved: expected to start at t=") != std::string::npos);
  r = run_tool("place --slurm " + kSlurm + "sinfo-8gpu.json " + kSlurm + "squeue-held.json --slurm-held plan --format slurm");
  REQUIRE(r.status == 0);
  // 2 GPUs are free; in Slurm's order 3 (8 GPUs) and 4 (4) wait, 5 (2) takes the two, 6 (1) waits.
  CHECK(r.out.find("scontrol update JobId=5 ReqNodeList=localhost") != std::string::npos);
  CHECK(r.out.find("# 3 waits (not now)") != std::string::npos);
  CHECK(r.out.find("# 6 waits (not now)") != std::string::npos);
  // A job the reader does not plan, or one that runs, is explained as such (exit 2).
  r = run_tool("explain 4 --slurm " + kSlurm + "sinfo-8gpu.json " + kSlurm + "squeue-held.json --now 1796394815", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("slurm: job 4 is not planned: Slurm would not start it now (\"JobHeldUser\"); --slurm-held plan") != std::string::npos);
  r = run_tool("explain 1 --slurm " + kHeld, true);
  CHECK(r.status == 2);
  CHECK(r.out.find("job \"1\" is running, not pending") != std::string::npos);
  r = run_tool("explain 99 --slurm " + kHeld, true);
  CHECK(r.out.find("squeue: no pending job named \"99\"") != std::string::npos);
  CHECK(run_tool("place --cluster x.json --jobs y.json --format slurm").status == 2);
  CHECK(run_tool("cycle --slurm " + kSlurm + "sinfo-8gpu.json --pending x.json --now 0").status == 2);
}

TEST_CASE("fairshare --slurm: the accounts' queues, usage from the running jobs") {
  const std::string meta = R"("meta": {"plugin": {"type": "openapi/v0.0.38"}})";
  const std::string nodes = temp_file("slurm-nodes.json", "{" + meta + R"J(, "nodes": [
    {"name": "g1", "cpus": 64, "real_memory": 262144, "gres": "gpu:h100:8", "state": "mixed", "partitions": ["gpu"]}]})J");
  const std::string jobs_text = "{" + meta + R"J(, "jobs": [
    {"job_id": 1, "job_state": "RUNNING", "account": "ml", "nodes": "g1", "cpus": 8, "start_time": 100, "end_time": 3700,
     "time_limit": 60, "gres_detail": ["gpu:h100:4(IDX:0-3)"], "partition": "gpu"},
    {"job_id": 2, "job_state": "PENDING", "state_reason": "Priority", "account": "ml", "priority": 10, "cpus": 8,
     "tres_per_node": "gres:gpu:h100:2", "partition": "gpu", "submit_time": 200},
    {"job_id": 3, "job_state": "PENDING", "state_reason": "Priority", "account": "cv", "priority": 5, "cpus": 8,
     "tres_per_node": "gres:gpu:h100:2", "partition": "gpu", "submit_time": 300}]})J";
  const std::string jobs = temp_file("slurm-jobs.json", jobs_text);
  const std::string queues = temp_file("accounts.json", R"({"queues": [{"name": "ml", "weight": 1}, {"name": "cv", "weight": 1}]})");
  Run r = run_tool("fairshare --slurm " + nodes + " " + jobs + " --queues " + queues + " --format json");
  REQUIRE(r.status == 0);
  const auto out = nlohmann::json::parse(r.out);
  // ml holds 4 H100s already: DRF admits cv's job before ml's second, though ml's has the higher
  // Slurm priority.
  REQUIRE(out["admitted"].size() == 2);
  CHECK(out["admitted"][0]["job"] == "3");
  CHECK(out["admitted"][1]["job"] == "2");
  CHECK(run_tool("fairshare --slurm " + nodes + " " + jobs).status == 2);  // no queues: refused by name

  // The accounts under a parent queue: the same plan (the parent takes no usage of its own; it was
  // refused as "a queue with child queues takes no ... usage" before).
  const std::string tree = temp_file("accounts-tree.json", R"({"queues": [{"name": "org"},
    {"name": "ml", "parent": "org", "weight": 1}, {"name": "cv", "parent": "org", "weight": 1}]})");
  r = run_tool("fairshare --slurm " + nodes + " " + jobs + " --queues " + tree + " --format json");
  REQUIRE(r.status == 0);
  const auto in_tree = nlohmann::json::parse(r.out);
  REQUIRE(in_tree["admitted"].size() == 2);
  CHECK(in_tree["admitted"][0]["job"] == "3");
  CHECK(in_tree["admitted"][1]["job"] == "2");
  CHECK(in_tree["queues"][1]["usage"]["gpus"]["H100-80GB"] == 6.0);  // ml after the plan: 4 running + 2

  // A running job charged to the parent account is reported by its id and counted in no queue: both
  // accounts then hold nothing, and the tie goes to the queue listed first (ml).
  std::string parent_jobs = jobs_text;
  parent_jobs.replace(parent_jobs.find(R"("account": "ml")"), 15, R"("account": "org")");
  const std::string org_jobs = temp_file("slurm-jobs-org.json", parent_jobs);
  r = run_tool("fairshare --slurm " + nodes + " " + org_jobs + " --queues " + tree + " --format json", true);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("running job 1: account \"org\" is a parent queue") != std::string::npos);
  const auto org = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  REQUIRE(org["admitted"].size() == 2);
  CHECK(org["admitted"][0]["job"] == "2");
}
