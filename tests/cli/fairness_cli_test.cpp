// `gpusched fairshare` end to end: a hand-worked admission order (priorities with aging, flavors,
// borrowing limit, lending limit), JSON output, the shipped example, and exit status 2 with one clear
// message on bad input.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;



const std::string kFixtures = std::string(GPUSCHED_FIXTURES_DIR) + "/fairness/";
const std::string kFairshareArgs = "fairshare --cluster " + kFixtures + "cluster.json --queues " + kFixtures +
                          "queues.json --jobs " + kFixtures + "jobs.json";

}  // namespace

TEST_CASE("fairshare: hand-worked admission order as a table") {
  // Worked by hand (see tests/fixtures/fairness/): aging at now = 10800 with 50 per hour up to 100
  // gives v-train 110, v-big 110, v-old 100, nlp's class "high" 100 + 100 = 200 for n-pretrain and
  // n-more, n-ft 5 + 100. Both queues start at share 0 (tie: vision, listed first). v-big would
  // borrow 4 A100 with a limit of 2; v-old fits vision's own H100 quota, so it takes H100 although
  // vision lists A100 first. n-more would borrow H100, but nlp lends none (lending limit 0) and
  // vision's lendable 4 are half used by v-old: only 2 available. n-ft fits nlp's own A100 quota.
  const Run r = run_tool(kFairshareArgs);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("   1  v-train                  vision           A100-80GB               no      110\n"
                   "   2  n-pretrain               nlp              H100-80GB               no      200\n"
                   "   3  v-old                    vision           H100-80GB               no      100\n"
                   "   4  n-ft                     nlp              A100-80GB               no      105\n") !=
        std::string::npos);
  CHECK(r.out.find("v-big                    vision           queue vision: exceeds the borrowing limit on "
                   "gpu:A100-80GB (requested 4, available 2)") != std::string::npos);
  CHECK(r.out.find("n-more                   nlp              queue nlp: the cohort has no unused quota to lend on "
                   "gpu:H100-80GB (requested 4, available 2)") != std::string::npos);
}

TEST_CASE("fairshare: JSON output and --now") {
  const Run r = run_tool(kFairshareArgs + " --format json");
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["admitted"].size() == 4);
  CHECK(doc["admitted"][0]["job"] == "v-train");
  CHECK(doc["admitted"][0]["flavor"] == "A100-80GB");
  CHECK(doc["admitted"][2]["borrowed"] == false);
  REQUIRE(doc["pending"].size() == 2);
  CHECK(doc["pending"][0]["job"] == "v-big");
  REQUIRE(doc["queues"].size() == 2);
  CHECK(doc["queues"][0]["name"] == "vision");
  CHECK(doc["queues"][0]["usage"]["gpus"]["H100-80GB"] == 2.0);
  CHECK(doc["queues"][0]["dominant_share"] == doctest::Approx(0.5));
  CHECK(doc["queues"][1]["usage"]["cpu"] == 20.0);
  CHECK(doc["capacity"]["gpus"]["A100-80GB"] == 8.0);

  // Without aging (now = the oldest submit time) vision's order is by plain priority: v-train and
  // v-big (10) before v-old (0).
  const Run early = run_tool(kFairshareArgs + " --format json --now 0");
  REQUIRE(early.status == 0);
  const auto d2 = nlohmann::json::parse(early.out);
  CHECK(d2["admitted"][0]["priority"] == 10);
  bool v_old_pending_or_late = true;
  for (std::size_t i = 0; i < d2["admitted"].size(); ++i)
    if (d2["admitted"][i]["job"] == "v-old") v_old_pending_or_late = i >= 2;
  CHECK(v_old_pending_or_late);
}

TEST_CASE("fairshare: the shipped example runs") {
  const std::string ex = std::string(GPUSCHED_SOURCE_DIR) + "/examples/";
  const Run r = run_tool("fairshare --cluster " + ex + "cluster.json --queues " + ex + "fairness/queues.json --jobs " + ex +
                    "jobs.json --format json");
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["admitted"].size() + doc["pending"].size() == 7);
  CHECK(doc["admitted"][0]["job"] == "llm-pretrain");
}

TEST_CASE("fairshare: bad input exits 2 with a message naming the field") {
  auto expect = [](const std::string& queues_text, const std::string& message) {
    const std::string q = temp_file("queues.json", queues_text);
    const Run r = run_tool("fairshare --cluster " + kFixtures + "cluster.json --queues " + q + " --jobs " + kFixtures + "jobs.json",
                      true);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.out.find(message) != std::string::npos, r.out);
  };
  expect(R"({"queues": [{"name": "a", "wieght": 2}]})", "queues[0].wieght: unknown field");
  expect(R"({"queues": [{"name": "a", "priority_class": "vip"}]})",
         "queues[0].priority_class: unknown class \"vip\" (define it in priority_classes)");
  expect(R"({"queues": [{"name": "a", "flavors": ["B200"]}]})", "queues[0].flavors[0]: unknown GPU model \"B200\"");
  expect(R"({"queues": [{"name": "a", "strategy": "LIFO"}]})",
         "queues[0].strategy: expected \"BestEffortFIFO\" or \"StrictFIFO\", got \"LIFO\"");
  expect(R"({"queues": [{"name": "a", "quotas": {"gpus": {"H100-80GB": -2}}}]})", "queues[0].quotas.gpus.H100-80GB");
  expect(R"({"queues": [{"name": "a", "weight": 0}]})", "queues[0].weight: expected a positive number, got 0");
  expect(R"({"queues": [{"name": "a", "parent": "b"}]})", "(a).parent: no queue named \"b\"");
  expect(R"({"queues": [{"name": "a", "quotas": {"cpu": 1}, "borrowing_limits": {"cpu": 1}}]})",
         "queues[0].borrowing_limits: only meaningful with a \"cohort\"");
  expect(R"({"queues": []})", "queues: expected a non-empty array of queues");
  // A PriorityClass value is an int32 (Kubernetes); INT64_MAX wrapped and sorted last in the cycle.
  expect(R"({"priority_classes": {"max": 9223372036854775807}, "queues": [{"name": "a"}]})",
         "priority_classes.max: expected a 32-bit priority (at most 2147483647), got 9223372036854775807");
  expect(R"({"priority_classes": {"min": -2147483649}, "queues": [{"name": "a"}]})",
         "priority_classes.min: expected at least -2147483648, got -2147483649");
  expect("{not json", "malformed JSON");
  const Run missing = run_tool("fairshare --cluster " + kFixtures + "cluster.json --queues /nonexistent.json --jobs " +
                              kFixtures + "jobs.json",
                          true);
  CHECK(missing.status == 2);
  CHECK(missing.out.find("/nonexistent.json: cannot open file") != std::string::npos);
}

TEST_CASE("fairshare: per-job priority_class and partial admission (min_replicas)") {
  // With the fixture queues (now 10800, so jobs submitted then get no aging): "pc" takes class
  // "high" = 100 and goes first, on vision's first flavor (A100, within nominal). "elastic" asks 8
  // H100 with min_replicas 2; vision's H100 nominal is 4 and nlp lends none (lending limit 0), so
  // 4 of 8 replicas are admitted.
  const std::string jobs = temp_file("jobs-pc.json", R"({"jobs": [
    {"name": "elastic", "queue": "vision", "submit_time": 10800, "replicas": 8, "min_replicas": 2, "gpus": 1, "cpu": 1,
     "gpu_models": ["H100-80GB"]},
    {"name": "pc", "queue": "vision", "priority_class": "high", "submit_time": 10800, "gpus": 1, "cpu": 1}]})");
  const std::string base = "fairshare --cluster " + kFixtures + "cluster.json --queues " + kFixtures + "queues.json --jobs ";
  const Run r = run_tool(base + jobs + " --format json");
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["admitted"].size() == 2);
  CHECK(doc["admitted"][0]["job"] == "pc");
  CHECK(doc["admitted"][0]["priority"] == 100);
  CHECK(doc["admitted"][0]["partial"] == false);
  CHECK(doc["admitted"][1]["job"] == "elastic");
  CHECK(doc["admitted"][1]["flavor"] == "H100-80GB");
  CHECK(doc["admitted"][1]["partial"] == true);
  CHECK(doc["admitted"][1]["replicas"] == nlohmann::json::array({4}));
  const Run table = run_tool(base + jobs);
  REQUIRE(table.status == 0);
  CHECK_MESSAGE(table.out.find("partial: 4 of 8 replicas") != std::string::npos, table.out);

  const std::string bad = temp_file("jobs-vip.json", R"({"jobs": [{"name": "x", "queue": "vision", "priority_class": "vip", "cpu": 1}]})");
  const Run unknown = run_tool(base + bad, true);
  CHECK(unknown.status == 2);
  CHECK_MESSAGE(unknown.out.find("jobs[0].priority_class: unknown class \"vip\"") != std::string::npos, unknown.out);
  const std::string both = temp_file("jobs-both.json",
                                     R"({"jobs": [{"name": "x", "queue": "vision", "priority": 1, "priority_class": "high", "cpu": 1}]})");
  const Run twice = run_tool(base + both, true);
  CHECK(twice.status == 2);
  CHECK_MESSAGE(twice.out.find("jobs[0].priority_class: give \"priority\" or \"priority_class\", not both") != std::string::npos,
                twice.out);
}

TEST_CASE("fairshare: a request total beyond int64 is an error naming the job and field, not a wrap") {
  // 2 replicas x 4.7e15 cores = 9.4e18 milli-CPU > INT64_MAX (9.22e18). Before issue 15 this summed
  // to a negative number and the job was admitted on a 256-core cluster; 4.6e15 cores (9.2e18
  // milli-CPU) still fits in 64 bits and is only pending (larger than the cluster).
  const std::string base = "fairshare --cluster " + kFixtures + "cluster.json --queues " + kFixtures + "queues.json --jobs ";
  const std::string huge = temp_file("jobs-huge.json",
                                     R"({"jobs": [{"name": "huge", "queue": "vision", "replicas": 2, "cpu": 4700000000000000}]})");
  const Run r = run_tool(base + huge, true);
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.out.find("jobs[0].groups[0].cpu: 2 replicas of 4700000000000000000 exceed a 64-bit total (overflow)") !=
                    std::string::npos,
                r.out);
  const std::string large = temp_file("jobs-large.json",
                                      R"({"jobs": [{"name": "large", "queue": "vision", "replicas": 2, "cpu": 4600000000000000}]})");
  const Run ok = run_tool(base + large);
  REQUIRE(ok.status == 0);
  CHECK_MESSAGE(ok.out.find("requested 9200000000000000") != std::string::npos, ok.out);
}
