// Policies of one's own on the tool's paths (docs/policies.md): the example C plugin by name in
// place, cycle and bench-packing, the FGD family by name, and bad plugins and names as exit status 2.
#include <doctest/doctest.h>

#include "cli/cli_util.hpp"

#include <string>

namespace {

using gpusched::cli_test::Run;
using gpusched::cli_test::run_tool;

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
