// `gpusched place` with gang jobs: topology levels, spread and anti-affinity, elastic groups, the
// gang verdicts in the output, and bad gang fields named by path.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;


std::string gang_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "gpusched-gang-cli-test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

const std::string kGang = std::string(GPUSCHED_FIXTURES_DIR) + "/gang/";
const std::string kArgs = "place --cluster " + kGang + "cluster.json --jobs " + kGang + "jobs.json";

}  // namespace

TEST_CASE("place with gang jobs: table") {
  const Run r = run_tool(kArgs);
  CHECK(r.status == 0);
  CHECK(r.out.find("llm                      gang: 4 tasks (launcher 1/1, worker 3/3) on 3 nodes in "
                   "topology.kubernetes.io/rack=rack-0") != std::string::npos);
  // Racks of 4 nodes never hold 5 tasks of 8 GPUs: infeasible, not merely "not now".
  CHECK(r.out.find("too-wide                 UNSCHEDULABLE (infeasible): no topology.kubernetes.io/rack can hold the "
                   "gang: group task needs 5 tasks x 8 GPUs; the largest topology.kubernetes.io/rack (rack-1) offers "
                   "4; infeasible even on the empty cluster: group task: tasks in one topology.kubernetes.io/rack, "
                   "the largest being rack-0 (5 needed, 4 at capacity)") != std::string::npos);
  CHECK(r.out.find("elastic                  gang: 2 tasks (task 2/8) on 2 nodes") != std::string::npos);
  CHECK(r.out.find("4 placed, 1 unschedulable") != std::string::npos);
}

TEST_CASE("place with gang jobs: JSON carries verdicts, counts, domains and bounds") {
  const Run r = run_tool(kArgs + " --format json");
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& placed = doc["placed"];
  REQUIRE(placed.size() == 4);
  CHECK(placed[0]["job"] == "llm");
  CHECK(placed[0]["gang"]["verdict"] == "placed");
  CHECK(placed[0]["gang"]["domain"] == "rack-0");
  CHECK(placed[0]["gang"]["placed"]["worker"] == 3);
  for (const auto& t : placed[0]["tasks"]) CHECK(t["node"].get<std::string>().rfind("r0", 0) == 0);
  // serve: prefill at most one per zone, and never on a node with decode.
  const auto& serve = placed[1];
  CHECK(serve["job"] == "serve");
  std::set<std::string> prefill_nodes, decode_nodes;
  for (const auto& t : serve["tasks"]) (t["group"] == "prefill" ? prefill_nodes : decode_nodes).insert(t["node"]);
  CHECK(prefill_nodes.size() == 2);
  for (const auto& n : prefill_nodes) CHECK(decode_nodes.count(n) == 0);
  // The plain job is not a gang and keeps the plain output.
  CHECK(placed[3]["job"] == "plain");
  CHECK_FALSE(placed[3].contains("gang"));
  const auto& bad = doc["unschedulable"];
  REQUIRE(bad.size() == 1);
  CHECK(bad[0]["job"] == "too-wide");
  CHECK(bad[0]["verdict"] == "infeasible");
  CHECK(bad[0]["method"] == "per-node count");
  CHECK(bad[0]["bounds"][0]["needed"] == 1);
  // The structured reasons: the capacity bound that makes it infeasible first.
  CHECK(bad[0]["reasons"][0]["kind"] == "no topology domain fits");
  // 5 tasks of 8 GPUs in one rack; a rack of 4 empty 8-GPU nodes holds 4.
  CHECK(bad[0]["reasons"][0]["unit"] == "tasks");
  CHECK(bad[0]["reasons"][0]["needed"] == 5);
  CHECK(bad[0]["reasons"][0]["available"] == 4);
}

TEST_CASE("place --gang: every job is decided as a gang, with the aggregate bound's explanation") {
  const std::string jobs = gang_temp("big.json", R"({"jobs": [{"name": "big", "replicas": 9, "gpus": 8}]})");
  const Run r = run_tool("place --gang --format json --cluster " + kGang + "cluster.json --jobs " + jobs);
  REQUIRE(r.status == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["unschedulable"].size() == 1);
  CHECK(doc["unschedulable"][0]["message"] ==
        "group task needs 9 tasks x 8 GPUs; 8 nodes have 8 free GPUs (8 tasks fit); infeasible even on the empty "
        "cluster: GPU share (milli-GPU) of the cluster (72000 needed, 64000 at capacity)");
  CHECK(doc["unschedulable"][0]["verdict"] == "infeasible");
  CHECK(doc["unschedulable"][0]["method"] == "aggregate bound");
}

TEST_CASE("bad gang fields: exit status 2 and the field's path") {
  auto check = [](const std::string& job, const std::string& message) {
    const std::string jobs = gang_temp("bad.json", R"({"jobs": [)" + job + "]}");
    const Run r = run_tool("place --cluster " + kGang + "cluster.json --jobs " + jobs, true);
    CHECK(r.status == 2);
    CHECK(r.out.find(message) != std::string::npos);
  };
  check(R"({"name": "j", "gpus": 1, "topology": {"level": "rack", "mode": "sometimes"}})",
        R"(jobs[0].topology.mode: expected "required" or "preferred", got "sometimes")");
  check(R"({"name": "j", "gpus": 1, "spread": {"level": "zone"}})",
        "jobs[0].spread: give max_per_domain or min_domains (or both)");
  check(R"({"name": "j", "groups": [{"name": "a", "gpus": 1}], "anti_affinity": [{"groups": ["a", "b"]}]})",
        R"(jobs[0].anti_affinity[0].groups[1]: unknown group "b" (groups: a))");
  check(R"({"name": "j", "groups": [{"name": "a", "gpus": 1, "topology": "rack"}]})",
        "jobs[0].groups[0].topology: a topology level applies to the whole gang; write it on the job");
  check(R"({"name": "j", "replicas": 2, "gpus": 1, "spread": {"level": "zone", "min_domains": 3}})",
        "gang j: spread[0].min_domains: 3 domains need at least 3 tasks, but the groups' min_replicas add up to 2");
}
