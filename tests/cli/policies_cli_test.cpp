// Policies of one's own on the tool's paths (docs/policies.md): the example C plugins by name in
// place, cycle and bench-packing, the FGD family by name, job and victim orders by name and from a
// plugin, and bad plugins and names as exit status 2.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <string>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;
using gpusched::cli_test::temp_file;

const std::string kPolicyExamples = std::string(GPUSCHED_SOURCE_DIR) + "/examples/";

}  // namespace

#ifdef GPUSCHED_BEST_FIT_PLUGIN
TEST_CASE("policies: a C plugin's policy by name decides as the built-in it re-implements") {
  const std::string plugin = std::string(" --plugin ") + GPUSCHED_BEST_FIT_PLUGIN;
  const std::string place = "place --cluster " + kPolicyExamples + "cluster.json --jobs " + kPolicyExamples +
                            "jobs.json --format json --policy ";
  const Run builtin = run_tool(place + "best-fit");
  const Run plugged = run_tool(place + "c-best-fit" + plugin);
  REQUIRE(builtin.status == 0);
  REQUIRE(plugged.status == 0);
  std::string expected = builtin.out;
  expected.replace(expected.find("\"best-fit\""), 10, "\"c-best-fit\"");
  CHECK(plugged.out == expected);
  const std::string cycle = "cycle --cluster " + kPolicyExamples + "cycle/cluster.json --pending " + kPolicyExamples +
                            "cycle/pending.json --running " + kPolicyExamples + "cycle/running.json --queues " +
                            kPolicyExamples + "cycle/queues.json --now 3600 --format json";
  const Run cycled = run_tool(cycle + " --policy c-best-fit" + plugin);
  REQUIRE(cycled.status == 0);
  CHECK(cycled.out == run_tool(cycle).out);
}
#endif

TEST_CASE("policies: unknown names and plugins that cannot load are exit status 2, naming them") {
  const std::string place = "place --cluster " + kPolicyExamples + "cluster.json --jobs " + kPolicyExamples + "jobs.json";
  Run r = run_tool(place + " --policy no-such", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--policy: unknown policy \"no-such\" (known: first-fit") != std::string::npos);
  r = run_tool(place + " --plugin /no/such/plugin.so", true);
  CHECK(r.status == 2);
  CHECK(r.out.find("--plugin \"/no/such/plugin.so\": cannot load it") != std::string::npos);
  r = run_tool(place + " --policy FGD --format json");  // the FGD family packs for the jobs given
  CHECK(r.status == 0);
  CHECK(r.out.find("\"policy\": \"FGD\"") != std::string::npos);
}

TEST_CASE("orders: --order and --victim-order by name and from a plugin choose who starts and who is evicted") {
  // n0 (4 GPUs) and n1 (8 GPUs) held at t=1000: x (4 GPUs on n0) since 100, y (8 GPUs on n1) since 500.
  // urgent (4 GPUs, priority 10) evicts x by default (it loses 3,600 GPU-s, y 4,000); newest-first
  // evicts y, and so does the example plugin's c-newest-first.
  const std::string cluster = temp_file("orders_cluster.json", R"({"nodes": [
    {"name": "n0", "cpu": 16, "memory": "64Gi", "gpus": 4, "gpu_model": "A100-80GB"},
    {"name": "n1", "cpu": 16, "memory": "64Gi", "gpus": 8, "gpu_model": "A100-80GB"}]})");
  const std::string running = temp_file("orders_running.json", R"({"jobs": [
    {"name": "x", "gpus": 4, "cpu": 1, "memory": "1Gi", "start_time": 100, "placement": [{"node": "n0", "gpus": [0,1,2,3]}]},
    {"name": "y", "gpus": 8, "cpu": 1, "memory": "1Gi", "start_time": 500,
     "placement": [{"node": "n1", "gpus": [0,1,2,3,4,5,6,7]}]}]})");
  const std::string urgent = temp_file("orders_urgent.json",
                                       R"({"jobs": [{"name": "urgent", "gpus": 4, "cpu": 1, "memory": "1Gi", "priority": 10}]})");
  const std::string cycle = "cycle --cluster " + cluster + " --pending " + urgent + " --running " + running +
                            " --now 1000 --format json";
  auto evicted = [](const Run& r) {
    const auto at = r.out.find("\"evictions\"");
    return at == std::string::npos ? std::string() : r.out.substr(at, 60);
  };
  const Run plain = run_tool(cycle);
  REQUIRE(plain.status == 0);
  CHECK(evicted(plain).find("\"x\"") != std::string::npos);
  const Run newest = run_tool(cycle + " --victim-order newest-first");
  REQUIRE(newest.status == 0);
  CHECK(evicted(newest).find("\"y\"") != std::string::npos);
  // Nothing running: big (8 GPUs, priority 5) takes n1 and two (2 GPUs) n0 by default, four waits;
  // smallest-first starts two and four (on n1), and big waits.
  const std::string three = temp_file("orders_three.json", R"({"jobs": [
    {"name": "big", "gpus": 8, "cpu": 1, "memory": "1Gi", "priority": 5},
    {"name": "two", "gpus": 2, "cpu": 1, "memory": "1Gi", "submit_time": 1},
    {"name": "four", "gpus": 4, "cpu": 1, "memory": "1Gi", "submit_time": 2}]})");
  const std::string idle = "cycle --cluster " + cluster + " --pending " + three + " --now 0 --backfill none";
  const Run by_priority = run_tool(idle);
  const Run smallest = run_tool(idle + " --order smallest-first");
  REQUIRE(by_priority.status == 0);
  REQUIRE(smallest.status == 0);
  CHECK(by_priority.out.find("Starts (2)") != std::string::npos);
  CHECK(by_priority.out.find("big ") < by_priority.out.find("Pending"));
  CHECK(smallest.out.find("Starts (2)") != std::string::npos);
  CHECK(smallest.out.find("big ") > smallest.out.find("Pending"));
#ifdef GPUSCHED_ORDERS_PLUGIN
  const std::string plugin = std::string(" --plugin ") + GPUSCHED_ORDERS_PLUGIN;
  const Run plugged = run_tool(cycle + " --victim-order c-newest-first" + plugin);
  REQUIRE(plugged.status == 0);
  CHECK(plugged.out == newest.out);
#endif
  Run bad = run_tool(cycle + " --victim-order shortest-first", true);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--victim-order: unknown victim order \"shortest-first\" (known: checkpoint-cost") != std::string::npos);
  bad = run_tool("simulate --trace synthetic:20 --policies priority --order nope", true);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--order: unknown job order \"nope\"") != std::string::npos);
}
