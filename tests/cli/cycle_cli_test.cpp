// `gpusched cycle` and `gpusched explain` end to end on the shipped example (examples/cycle/, worked
// by hand below), JSON output, and exit status 2 with one clear message on bad input.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_util.hpp"

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;

const std::string kExample = std::string(GPUSCHED_SOURCE_DIR) + "/examples/cycle/";
const std::string kInputs = "--cluster " + kExample + "cluster.json --running " + kExample + "running.json --pending " +
                            kExample + "pending.json --queues " + kExample + "queues.json --now 3700";

}  // namespace

// The example, by hand. 4 nodes x 8 H100; queues research and product in cohort lab, nominal 16 GPUs
// each. product runs prod-train (16 GPUs, not preemptible) and prod-batch (8 GPUs on node-2, last
// checkpoint t=3300, restart 60 s): 24 GPUs, borrowing 8. research runs res-notebook (2 GPUs on
// node-3). At t=3700:
//   res-train (research, priority 5, 8 GPUs): research's usage 2 + 8 is within its nominal 16, but
//     the cohort's pool (32) has 26 in use: 6 available < 8 -> reclaimable. The borrowing queue is
//     product; prod-train is not preemptible, so prod-batch is evicted (cohort reclaim): it loses
//     8 GPUs x (3700 - 3300) s = 3200 GPU-s, plus 8 x 60 s = 480 GPU-s of restart; res-train starts
//     on node-2.
//   res-small (1 GPU) fits research's quota and node-3's 6 idle GPUs.
//   res-big (4 x 8 GPUs): research then holds 2 + 8 + 1 = 11 GPUs, and the pool's 32 have 16 + 11 in
//     use: 5 available for 32 asked (cohort exhausted); nothing it may reclaim (product is back
//     within its nominal quota), so it waits; no reservation either (prod-train runs 86,400 s on
//     two of the four nodes it needs, and res-notebook has no estimate).
//   prod-retry backs off until t=3900.
TEST_CASE("cycle: the example as JSON") {
  const Run r = run_tool("cycle " + kInputs + " --format json");
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["now"] == 3700);
  REQUIRE(doc["starts"].size() == 2);
  CHECK(doc["starts"][0]["job"] == "res-train");
  CHECK(doc["starts"][0]["preempted"] == true);
  CHECK(doc["starts"][0]["tasks"][0]["node"] == "node-2");
  CHECK(doc["starts"][1]["job"] == "res-small");
  CHECK(doc["starts"][1]["tasks"][0]["node"] == "node-3");
  REQUIRE(doc["evictions"].size() == 1);
  const auto& e = doc["evictions"][0];
  CHECK(e["job"] == "prod-batch");
  CHECK(e["for"] == "res-train");
  CHECK(e["reason"] == "cohort reclaim");
  CHECK(e["lost_gpu_seconds"] == 3200.0);
  CHECK(e["restart_gpu_seconds"] == 480.0);
  REQUIRE(doc["pending"].size() == 2);
  CHECK(doc["pending"][0]["job"] == "prod-retry");
  CHECK(doc["pending"][0]["reasons"][0]["kind"] == "backing off after a failure");
  CHECK(doc["pending"][1]["job"] == "res-big");
  CHECK(doc["pending"][1]["reasons"][0]["kind"] == "cohort exhausted");
  CHECK(doc["pending"][1]["reasons"][0]["needed"] == 32000);
  CHECK(doc["pending"][1]["reasons"][0]["available"] == 5000);
}

TEST_CASE("cycle: the example as a table") {
  const Run r = run_tool("cycle " + kInputs);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("res-train            1 task(s) on node-2 [0,1,2,3,4,5,6,7] (after evictions)") != std::string::npos);
  CHECK(r.out.find("prod-batch           evicted for res-train (cohort reclaim): loses 3200.0 GPU-s since its checkpoint + "
                   "480.0 GPU-s restart") != std::string::npos);
  CHECK(r.out.find("prod-retry           not now: backing off after a failure until t=3900") != std::string::npos);
}

TEST_CASE("explain: why a job starts, whom it evicts; why another waits") {
  const Run train = run_tool("explain res-train " + kInputs);
  REQUIRE(train.status == 0);
  CHECK(train.out.find("starts this cycle on node-2 (after evictions)") != std::string::npos);
  CHECK(train.out.find("evicting prod-batch (cohort reclaim): it loses 3200.0 GPU-s since its checkpoint + 480.0 GPU-s "
                       "restart") != std::string::npos);
  // res-big needs 4 whole nodes; prod-train (2 nodes) is not preemptible: no eviction suffices.
  const Run big = run_tool("explain res-big " + kInputs + " --format json");
  REQUIRE(big.status == 0);
  const auto doc = nlohmann::json::parse(big.out);
  CHECK(doc["status"] == "waits");
  CHECK(doc["verdict"] == "not now");
  CHECK(doc["would_evict"].empty());
}

TEST_CASE("explain: the victims that would let a job start, and what they lose") {
  // Without queues (one queue, priority order) and without preemption: hi (priority 9, 8 GPUs)
  // waits; evicting prod-batch (node-2) would let it start, and the priority rule allows it (0 < 9).
  // Its reservation: prod-batch is expected to end at 3000 + 7200 = 10200, already a point of the
  // 60 s grid (170 x 60, counted from the epoch), so it is not rounded.
  const std::string jobs = temp_file("hi.json", R"({"jobs": [{"name": "hi", "priority": 9, "cpu": 8, "gpus": 8}]})");
  const Run r = run_tool("explain hi --cluster " + kExample + "cluster.json --running " + kExample +
                         "running.json --pending " + jobs + " --now 3700 --no-preempt");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("it would start now if these were evicted:") != std::string::npos);
  CHECK(r.out.find("reserved: expected to start at t=10200 (in 6500 s)") != std::string::npos);
  CHECK(r.out.find("prod-batch (queue product, priority 0): loses 3200.0 GPU-s since its checkpoint + 480.0 GPU-s "
                   "restart [the priority rule allows it]") != std::string::npos);
}

TEST_CASE("explain: a job the free capacity holds, kept back by a reservation, gets no empty eviction list") {
  // Two nodes of 8 GPUs: "a" holds n0 until 1000, "b" 4 GPUs of n1 until 2000. "big" (2 x 8 GPUs)
  // is reserved from 2000; "long" (2 GPUs for 100,000 s) fits n1's 4 free GPUs now but would
  // delay big: it waits, and evicting nobody changes that.
  const std::string cluster = temp_file("two8.json", R"({"nodes": [{"name": "n0", "cpu": 8, "memory": "64Gi", "gpu_model": "H100-80GB", "gpus": 8},
    {"name": "n1", "cpu": 8, "memory": "64Gi", "gpu_model": "H100-80GB", "gpus": 8}]})");
  const std::string running = temp_file("r3.json", R"({"jobs": [
    {"name": "a", "start_time": 0, "runtime_estimate": 1000, "cpu": 1, "memory": "1Gi", "gpus": 8, "placement": [{"node": "n0", "gpus": [0,1,2,3,4,5,6,7]}]},
    {"name": "b", "start_time": 0, "runtime_estimate": 2000, "cpu": 1, "memory": "1Gi", "gpus": 4, "placement": [{"node": "n1", "gpus": [0,1,2,3]}]}]})");
  const std::string pending = temp_file("p3.json", R"({"jobs": [
    {"name": "big", "submit_time": 10, "runtime_estimate": 500, "replicas": 2, "cpu": 1, "memory": "1Gi", "gpus": 8},
    {"name": "long", "submit_time": 20, "runtime_estimate": 100000, "cpu": 1, "memory": "1Gi", "gpus": 2}]})");
  const Run r = run_tool("explain long --cluster " + cluster + " --running " + running + " --pending " + pending + " --now 100 --no-preempt");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("if these were evicted") == std::string::npos);
  CHECK(r.out.find("the free capacity holds it now") != std::string::npos);
}

TEST_CASE("cycle: evicted_by carries who evicted whom across calls, so a job never evicts its evictor back") {
  // An earlier call evicted b (priority 1) for a (priority 5). Now b's priority is 9 (aged): without
  // knowing that a evicted it, b evicts a; with evicted_by: ["a"] (the earlier answer's
  // evictions[].for) it waits.
  const std::string cluster = temp_file("one8.json", R"({"nodes": [{"name": "n0", "cpu": 8, "memory": "64Gi", "gpu_model": "H100-80GB", "gpus": 8}]})");
  const std::string running = temp_file("a_runs.json", R"({"jobs": [{"name": "a", "priority": 5, "start_time": 0, "cpu": 1, "memory": "1Gi",
    "gpus": 8, "placement": [{"node": "n0", "gpus": [0,1,2,3,4,5,6,7]}]}]})");
  const auto pending = [](const std::string& extra) {
    return temp_file("b_waits.json", R"({"jobs": [{"name": "b", "priority": 9, "cpu": 1, "memory": "1Gi", "gpus": 8)" + extra + "}]}");
  };
  const std::string base = "cycle --cluster " + cluster + " --running " + running + " --now 100 --format json --pending ";
  const Run forgot = run_tool(base + pending(""));
  REQUIRE(forgot.status == 0);
  CHECK(nlohmann::json::parse(forgot.out)["evictions"].size() == 1);
  const Run kept = run_tool(base + pending(R"(, "evicted_by": ["a"])"));
  REQUIRE(kept.status == 0);
  CHECK(nlohmann::json::parse(kept.out)["evictions"].empty());
  const Run bad = run_tool(base + pending(R"(, "evicted_by": "a")"), true);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("jobs[0].evicted_by: expected an array of job names") != std::string::npos);
}

TEST_CASE("cycle: bad input is exit status 2 with the field named, nothing on stdout") {
  const std::string running = temp_file("bad_running.json",
                                        R"({"jobs": [{"name": "x", "cpu": 1, "gpus": 1, "start_time": 0,
                                            "placement": [{"node": "nope", "gpus": [0]}]}]})");
  const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + running + " --pending " + kExample +
                         "pending.json --now 0");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  const Run m = run_tool("cycle --cluster " + kExample + "cluster.json --running " + running + " --pending " + kExample +
                             "pending.json --now 0",
                         true);
  CHECK(m.out.find("jobs[0].placement[0].node: no node named \"nope\"") != std::string::npos);
  const Run missing = run_tool("explain nobody " + kInputs, true);
  CHECK(missing.status == 2);
  CHECK(missing.out.find("no pending job named \"nobody\"") != std::string::npos);
}

TEST_CASE("cycle: a cluster whose totals overflow is blamed on the cluster file, not on the queues read after it") {
  const std::string big = R"({"name": "NAME", "cpu": 9223372036854775, "memory": 9223372036854775807, "gpus": 1, "gpu_model": "A100-80GB"})";
  std::string nodes;
  for (const char* name : {"n0", "n1", "n2"}) {
    std::string node = big;
    node.replace(node.find("NAME"), 4, name);
    nodes += (nodes.empty() ? "" : ",") + node;
  }
  const std::string cluster = temp_file("ovf_cluster.json", R"({"nodes": [)" + nodes + "]}");
  const std::string pending = temp_file("ovf_pending.json", R"({"jobs": [{"name": "a", "gpus": 1, "queue": "a"}]})");
  const std::string queues = temp_file("ovf_queues.json", R"({"queues": [{"name": "a"}]})");
  const Run r = run_tool("cycle --cluster " + cluster + " --pending " + pending + " --queues " + queues + " --now 0", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("ovf_cluster.json: nodes[1] (n1).cpu: the cluster's total exceeds a 64-bit amount") != std::string::npos);
  CHECK(r.out.find("ovf_queues.json") == std::string::npos);
}

TEST_CASE("cycle: a job both running and pending is refused, naming it (it would be evicted and queued twice)") {
  const std::string pending = temp_file("dup_pending.json",
                                        R"({"jobs": [{"name": "prod-batch", "queue": "product", "cpu": 1, "gpus": 1}]})");
  const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + kExample + "running.json --pending " +
                             pending + " --queues " + kExample + "queues.json --now 3700",
                         true);
  CHECK(r.status == 2);
  CHECK(r.out.find("dup_pending.json: jobs[0].name: \"prod-batch\" is already pending or running") != std::string::npos);
}

TEST_CASE("cycle: times at the int64 ends and placements that contradict the job are refused, naming the field") {
  // --now INT64_MAX crashed the backfill stage; --now -1 reported every job "backing off".
  for (const char* now : {"9223372036854775807", "9223372036854775000", "-1"}) {
    CAPTURE(now);
    const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + kExample + "running.json --pending " +
                               kExample + "pending.json --queues " + kExample + "queues.json --now " + now,
                           true);
    CHECK(r.status == 2);
    CHECK(r.out.find("gpusched: error: now: expected seconds in [0, 4611686018427387904]") != std::string::npos);  // no file: the time is the caller's
  }
  // At the bound itself, the eviction's lost work (since t=0) is beyond 64 bits of milli-GPU-seconds:
  // refused, naming the running file and the job (it was reported saturated at 9.2e15 GPU-seconds),
  // with a queues file too (whose name the cycle's other errors carry).
  for (const char* backfill : {"easy", "conservative"}) {
    const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + kExample + "running.json --pending " +
                               kExample + "pending.json --queues " + kExample + "queues.json --now 4611686018427387904 --backfill " +
                               backfill,
                           true);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.out.find("running.json: running job \"prod-batch\": the work its eviction at now=4611686018427387904 "
                             "loses") != std::string::npos,
                  r.out);
  }
  const auto refused = [](const std::string& running_json, const std::string& message) {
    const std::string running = temp_file("edge_running.json", running_json);
    const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + running + " --pending " + kExample +
                               "pending.json --now 100",
                           true);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.out.find(message) != std::string::npos, r.out);
  };
  refused(R"({"jobs": [{"name": "x", "gpus": 1, "start_time": 0, "restart_cost": 9223372036854775807,
              "placement": [{"node": "node-0", "gpus": [0]}]}]})",
          "jobs[0].restart_cost: expected an integer in 0..4611686018427387904");
  refused(R"({"jobs": [{"name": "x", "gpus": 1, "start_time": -9223372036854775808,
              "placement": [{"node": "node-0", "gpus": [0]}]}]})",
          "jobs[0].start_time: expected at least 0");
  refused(R"({"jobs": [{"name": "x", "gpus": 1, "start_time": 0,
              "placement": [{"node": "node-0", "gpus": [0]}, {"node": "node-0", "gpus": [1]}]}]})",
          "jobs[0].placement: group \"task\" has 2 task(s) placed, expected 1 (its replicas)");
}

TEST_CASE("cycle: a running job that starts after now is refused (it became unevictable without a reason)") {
  const std::string running = temp_file("future_running.json", R"({"jobs": [{"name": "x", "gpus": 1, "start_time": 500,
                                            "placement": [{"node": "node-0", "gpus": [0]}]}]})");
  const Run r = run_tool("cycle --cluster " + kExample + "cluster.json --running " + running + " --pending " + kExample +
                             "pending.json --now 100",
                         true);
  CHECK(r.status == 2);
  CHECK(r.out.find("future_running.json: jobs[0].start_time: 500 is after now (100)") != std::string::npos);
}
