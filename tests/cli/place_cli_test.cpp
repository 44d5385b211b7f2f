// The `gpusched place` command end to end: exit status, output, and one clear message on bad input.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;



const std::string kExamples = std::string(GPUSCHED_SOURCE_DIR) + "/examples/";

}  // namespace

TEST_CASE("place: the shipped example, as a table and as JSON") {
  const Run table = run_tool("place --cluster " + kExamples + "cluster.json --jobs " + kExamples + "jobs.json");
  CHECK(table.status == 0);
  CHECK(table.out.find("llm-pretrain             worker              0  h100-0                   0,1,2,3,4,5,6,7") !=
        std::string::npos);
  CHECK(table.out.find("6 placed, 1 unschedulable") != std::string::npos);

  const Run json = run_tool("place --format json --cluster " + kExamples + "cluster.json --jobs " + kExamples + "jobs.json");
  REQUIRE(json.status == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["policy"] == "best-fit");
  REQUIRE(doc["unschedulable"].size() == 1);
  CHECK(doc["unschedulable"][0]["job"] == "too-big");
  CHECK(doc["unschedulable"][0]["nodes_total"] == 12);
  CHECK(doc["unschedulable"][0]["reasons"]["insufficient GPUs"] == 5);
  // Every placed task names a node and, for GPU tasks, distinct GPU indices.
  for (const auto& job : doc["placed"])
    for (const auto& task : job["tasks"]) {
      CHECK(task["node"].is_string());
      if (task["gpu_milli"] == 1000) CHECK(task["gpus"].size() >= 1);
    }
  CHECK(doc["placed"][0]["job"] == "llm-pretrain");  // highest priority first
}

TEST_CASE("place: every policy runs on the example") {
  for (const char* policy : {"first-fit", "best-fit", "worst-fit", "spread", "most-allocated", "least-allocated",
                             "dot-product", "random"}) {
    CAPTURE(policy);
    const Run r = run_tool(std::string("place --policy ") + policy + " --cluster " + kExamples + "cluster.json --jobs " +
                      kExamples + "jobs.json --format json");
    CHECK(r.status == 0);
    CHECK(nlohmann::json::parse(r.out)["policy"].is_string());
  }
}

TEST_CASE("place: bad input exits 2 with one message and no output") {
  const std::string jobs = kExamples + "jobs.json";
  struct Case {
    const char* name;
    const char* cluster;
    const char* message;
  };
  const Case cases[] = {
      {"negative", R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1}, {"name": "b", "cpu": 1, "memory": 1},
        {"name": "c", "cpu": 1, "memory": 1}, {"name": "d", "cpu": 1, "memory": 1, "gpus": -2, "gpu_model": "T4"}]})",
       "nodes[3].gpus: expected a non-negative integer, got -2"},
      {"malformed", R"({"nodes": [}")", "malformed JSON"},
      {"duplicate", R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1}, {"name": "a", "cpu": 1, "memory": 1}]})",
       "nodes[1].name: duplicate node name \"a\""},
      {"model", R"({"nodes": [{"name": "a", "cpu": 1, "memory": 1, "gpus": 1, "gpu_model": "Z9000"}]})",
       "unknown GPU model \"Z9000\""},
      {"missing", R"({"nodes": [{"name": "a", "memory": 1}]})", "nodes[0].cpu: missing"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string path = temp_file(std::string(c.name) + ".json", c.cluster);
    const Run quiet = run_tool("place --cluster " + path + " --jobs " + jobs);
    CHECK(quiet.status == 2);
    CHECK(quiet.out.empty());  // no partial output
    const Run loud = run_tool("place --cluster " + path + " --jobs " + jobs, true);
    CHECK(loud.out.find(c.message) != std::string::npos);
  }
  const std::string cluster = kExamples + "cluster.json";
  const Run unknown_model = run_tool("place --cluster " + cluster + " --jobs " +
                                    temp_file("jobs-model.json", R"({"jobs": [{"name": "x", "gpus": 1, "gpu_models": ["Z9000"]}]})"),
                                true);
  CHECK(unknown_model.status == 2);
  CHECK(unknown_model.out.find("gpu_models[0]: unknown GPU model \"Z9000\"") != std::string::npos);
  CHECK(run_tool("place --cluster /nonexistent.json --jobs " + jobs).status == 2);
  CHECK(run_tool("place --cluster " + cluster + " --jobs " + jobs + " --policy nope").status == 2);
  CHECK(run_tool("place --cluster " + cluster).status == 2);
}

TEST_CASE("place: a job that fits nowhere is reported, not an error") {
  const std::string cluster = temp_file("small.json", R"({"nodes": [{"name": "a", "cpu": 4, "memory": "8Gi", "gpus": 2, "gpu_model": "T4"}]})");
  const std::string jobs = temp_file("big.json", R"({"jobs": [{"name": "big", "gpus": 4}]})");
  const Run r = run_tool("place --format json --cluster " + cluster + " --jobs " + jobs);
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["placed"].empty());
  // 4 GPUs per task on a 2-GPU node: infeasible even on the empty cluster, counted at capacity.
  const auto& big = doc["unschedulable"][0];
  CHECK(big["verdict"] == "infeasible");
  CHECK(big["message"] ==
        "group task replica 0: infeasible (node capacities, as if the cluster were empty): 0/1 nodes: 1 insufficient GPUs");
  CHECK(big["structured_reasons"][0]["kind"] == "insufficient GPUs");
  CHECK(big["structured_reasons"][0]["needed"] == 4);
  CHECK(big["structured_reasons"][0]["available"] == 2);
  CHECK(big["structured_reasons"][0]["group"] == "task");

  // Two 2-GPU tasks: the first takes the node, the second waits for it: not now.
  const std::string pair = temp_file("pair.json", R"({"jobs": [{"name": "one", "gpus": 2}, {"name": "two", "gpus": 2}]})");
  const Run later = run_tool("place --cluster " + cluster + " --jobs " + pair);
  REQUIRE(later.status == 0);
  CHECK(later.out.find("two                      UNSCHEDULABLE (not now): group task replica 0: 0/1 nodes: 1 "
                       "insufficient GPUs") != std::string::npos);
}
