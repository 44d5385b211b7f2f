// `gpusched mig ...` end to end: exit status, output, one clear message on bad input.
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



const std::string kFix = std::string(GPUSCHED_FIXTURES_DIR) + "/mig/";
const std::string kEx = std::string(GPUSCHED_SOURCE_DIR) + "/examples/mig/";

}  // namespace

TEST_CASE("mig layouts: every maximal layout, table and JSON") {
  const Run t = run_tool("mig layouts --model A30");
  CHECK(t.status == 0);
  CHECK(t.out.find("A30-24GB: 17 valid maximal layouts") == 0);
  CHECK(t.out.find("  13  2g.12gb@0 2g.12gb@2\n") != std::string::npos);
  CHECK(t.out.find("  17  4g.24gb@0\n") != std::string::npos);
  const Run j = run_tool("mig layouts --model NVIDIA-A100-SXM4-40GB --format json");
  REQUIRE(j.status == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["model"] == "A100-SXM4-40GB");
  CHECK(doc["count"] == doc["layouts"].size());
  bool four_three = false;
  for (const auto& l : doc["layouts"]) {
    CHECK(l["compute_slices"].get<int>() <= 7);
    if (l["instances"].size() == 2 && l["instances"][0]["profile"] == "4g.20gb" && l["instances"][1]["profile"] == "3g.20gb" &&
        l["instances"][1]["start"] == 4)
      four_three = true;
  }
  CHECK(four_three);
  // The pre-R510 rule removes exactly that layout.
  const Run old = run_tool("mig layouts --model A100-SXM4-40GB --pre-r510 --format json");
  CHECK(nlohmann::json::parse(old.out)["count"].get<int>() == doc["count"].get<int>() - 1);
}

TEST_CASE("mig table: read nvidia-smi text, compare with the built-in table") {
  const Run a100 = run_tool("mig table --lgip " + kFix + "a100_40gb_lgip_mig_user_guide_copy.txt --lgipp " + kFix +
                       "a100_40gb_lgipp_mig_user_guide.txt --model A100-SXM4-40GB");
  CHECK(a100.status == 0);
  CHECK(a100.out.find("   9  3g.20gb            3      4  {0,4}                 4     2") != std::string::npos);
  CHECK(a100.out.find("matches the built-in A100-SXM4-40GB table") != std::string::npos);
  const Run a30 = run_tool("mig table --lgip " + kFix + "a30_24gb_lgip_lgipp.txt --lgipp " + kFix +
                      "a30_24gb_lgip_lgipp.txt --model A30 --format json");
  CHECK(a30.status == 1);  // the older driver lacks 2g.12gb+me
  const auto doc = nlohmann::json::parse(a30.out);
  CHECK(doc["profiles"].size() == 4);
  CHECK(doc["profiles"][2]["placement_starts"] == nlohmann::json::array({0, 2}));
  CHECK(doc["differences_from_builtin"][0]["text"] == "profile ID 6 (2g.12gb+me): missing from the observed table");
  const Run bad = run_tool("mig table --lgip " + temp_file("bad.lgip", "|   0  MIG 1g.5gb  19  7-7  4.75  No  14  0  0  |\n") +
                          " --lgipp " + kFix + "a100_40gb_lgipp_mig_user_guide.txt",
                      true);
  CHECK(bad.status == 2);
  CHECK(bad.out.find("lgip line 1: instances \"7-7\" is not free/total") != std::string::npos);
}

TEST_CASE("mig place: the example cluster") {
  const Run t = run_tool("mig place --cluster " + kEx + "cluster.json --requests " + kEx + "requests.json --format json");
  REQUIRE(t.status == 0);
  const auto doc = nlohmann::json::parse(t.out);
  CHECK(doc["placed"] == 7);
  const auto& d = doc["decisions"];
  CHECK(d[0]["action"] == "use-idle");  // train-a takes the idle 3g.20gb
  CHECK(d[0]["gpu"] == 1);
  CHECK(d[0]["start"] == 4);
  CHECK(d[5]["request"] == "pinned");  // profile ID 9 on H100 = 3g.40gb, at 4: slices 0..3 stay for a 4g
  CHECK(d[5]["profile"] == "3g.40gb");
  CHECK(d[5]["start"] == 4);
}

TEST_CASE("mig place: static vs dynamic on a small cluster") {
  const Run st = run_tool("mig place --cluster " + kFix + "cluster_small.json --profile 1g.6gb --count 2 --mode static");
  CHECK(st.status == 0);
  CHECK(st.out.find("1 placed, 1 unschedulable") != std::string::npos);
  CHECK(st.out.find("UNSCHEDULABLE: 0/3 GPUs can take 1g.6gb: 1 no idle instance of the profile, 2 GPU model without "
                    "the profile") != std::string::npos);
  const Run dy = run_tool("mig place --cluster " + kFix + "cluster_small.json --profile 1g.6gb --count 2");
  CHECK(dy.out.find("2 placed, 0 unschedulable") != std::string::npos);
  // A 1g.5gb next to the busy 4g.20gb goes to slice 6, not 4: a 2g.10gb still fits at 4.
  const Run one = run_tool("mig place --cluster " + kFix + "cluster_small.json --profile 1g.5gb");
  CHECK(one.out.find("a                  0  A100-SXM4-40GB create    1g.5gb          6") != std::string::npos);
  const Run ff = run_tool("mig place --cluster " + kFix + "cluster_small.json --profile 1g.5gb --policy first-fit");
  CHECK(ff.out.find("a                  0  A100-SXM4-40GB create    1g.5gb          4") != std::string::npos);
}

TEST_CASE("mig plan: table, JSON and mig-parted YAML") {
  const std::string args = "mig plan --cluster " + kEx + "cluster.json --demand " + kEx + "demand.json";
  const Run t = run_tool(args);
  CHECK(t.status == 0);
  CHECK(t.out.find("10 served, 0 unserved, 3 GPUs re-partitioned") != std::string::npos);
  CHECK(t.out.find("hgx-h100-01 gpu 0 (H100-80GB): 1g.10gb@6  ->  3g.40gb@0 1g.10gb@4 1g.10gb@5 1g.10gb@6") !=
        std::string::npos);
  const auto doc = nlohmann::json::parse(run_tool(args + " --format json").out);
  CHECK(doc["gpus_touched"] == 3);
  CHECK(doc["mig_parted"]["dgx-a100-01"]["config"] == "gpusched-dgx-a100-01");
  const Run y = run_tool(args + " --format yaml");
  CHECK(y.out.find("version: v1\nmig-configs:\n  \"gpusched-dgx-a100-01\":\n") == 0);
  const Run keep = run_tool(args + " --keep-idle");
  CHECK(keep.status == 0);
}

TEST_CASE("mig: bad input exits 2 with one message naming the field") {
  auto err = [](const std::string& args) { return run_tool(args, true); };
  Run r = err("mig layouts --model T4");
  CHECK(r.status == 2);
  CHECK(r.out.find("--model: unknown MIG GPU model \"T4\"") != std::string::npos);
  r = err("mig place --cluster " + kFix + "cluster_overlap.json --profile 1g.5gb");
  CHECK(r.status == 2);
  // The legacy file is read as the one cluster format, so paths name the GPU's "mig" object.
  CHECK(r.out.find("nodes[0] (n0).gpus[0].mig.instances[1]: 2g.10gb at 2 overlaps instances[0] (4g.20gb at 0..3)") !=
        std::string::npos);
  r = err("mig place --cluster " + kFix + "cluster_small.json --profile 5g.20gb");
  CHECK(r.status == 2);
  CHECK(r.out.find("\"5g.20gb\" is not a profile of any known MIG GPU model") != std::string::npos);
  const std::string unknown_profile = temp_file("c1.json", R"({"nodes":[{"name":"n","gpus":[{"model":"A30","instances":[{"profile_id":9,"start":0}]}]}]})");
  r = err("mig place --cluster " + unknown_profile + " --profile 1g.6gb");
  CHECK(r.status == 2);
  CHECK(r.out.find("nodes[0].gpus[0].mig.instances[0].profile_id: 9 is not a profile of A30-24GB") != std::string::npos);
  const std::string bad_start = temp_file("c2.json", R"({"nodes":[{"name":"n","gpus":[{"model":"A100-80GB","instances":[{"profile":"3g.39gb","start":2}]}]}]})");
  r = err("mig place --cluster " + bad_start + " --profile 1g.10gb");
  CHECK(r.status == 2);
  CHECK(r.out.find("instances[0].start: 2 is not a placement of 3g.40gb (ID 9) on A100-80GB (allowed {0,4})") !=
        std::string::npos);
  const std::string unknown_model = temp_file("c3.json", R"({"nodes":[{"name":"n","gpus":[{"model":"V100"}]}]})");
  r = err("mig plan --cluster " + unknown_model + " --demand " + kEx + "demand.json");
  CHECK(r.status == 2);
  CHECK(r.out.find("nodes[0].gpus[0].mig: GPU model \"V100\" has no MIG profile table") != std::string::npos);
  // Unknown fields are rejected, naming the field, in the one format and in the legacy file alike (the
  // old MIG reader ignored them: a typo dropped a busy instance).
  const std::string typo = temp_file("c4.json", R"({"nodes":[{"name":"n","cpu":8,"memory":"8Gi","gpus":[{"model":"A30","mig":{"instances":[{"profile":"4g.24gb","start":0,"bussy":true}]}}]}]})");
  r = err("mig place --cluster " + typo + " --profile 1g.6gb");
  CHECK(r.status == 2);
  CHECK(r.out.find("nodes[0].gpus[0].mig.instances[0].bussy: unknown field") != std::string::npos);
  const std::string legacy_typo = temp_file("c5.json", R"({"nodes":[{"name":"n","gpus":[{"model":"A30","instances":[{"profile":"4g.24gb","start":0,"bussy":true}]}]}]})");
  r = err("mig place --cluster " + legacy_typo + " --profile 1g.6gb");
  CHECK(r.status == 2);
  CHECK(r.out.find("bussy: unknown field") != std::string::npos);
  const std::string bad_demand = temp_file("d1.json", R"({"demand":[{"profile_id":9,"count":1}]})");
  r = err("mig plan --cluster " + kEx + "cluster.json --demand " + bad_demand);
  CHECK(r.status == 2);
  CHECK(r.out.find("demand[0].profile_id: needs \"model\"") != std::string::npos);
  const std::string bad_json = temp_file("d2.json", "{");
  r = err("mig plan --cluster " + kEx + "cluster.json --demand " + bad_json);
  CHECK(r.status == 2);
  CHECK(r.out.find("malformed JSON") != std::string::npos);
  r = err("mig place --cluster " + kEx + "cluster.json --profile 1g.5gb --mode sometimes");
  CHECK(r.status == 2);
}

TEST_CASE("place and cycle --mig-placement: first fit by default, the frag-aware rule on request") {
  // One empty A100-40GB: first fit creates a 1g.5gb at slice 0 (ruling out the 4g.20gb); frag-aware
  // at slice 6 (docs/mig.md). The placed task says which instance.
  const std::string cluster = temp_file("mig_one_a100.json", R"({"nodes": [{"name": "n0", "cpu": 64, "memory": "256Gi",
      "gpus": [{"model": "A100-SXM4-40GB", "mig": {"instances": []}}]}]})");
  const std::string jobs = temp_file("mig_one_job.json", R"({"jobs": [{"name": "infer", "cpu": 1, "mig_profile": "1g.5gb"}]})");
  const auto start_of = [&](const std::string& extra) {
    const Run r = run_tool("place --cluster " + cluster + " --jobs " + jobs + " --format json" + extra);
    REQUIRE(r.status == 0);
    const auto task = nlohmann::json::parse(r.out)["placed"][0]["tasks"][0];
    CHECK(task["mig"]["profile"] == "1g.5gb");
    CHECK(task["mig"]["create"] == true);
    return task["mig"]["start"].get<int>();
  };
  CHECK(start_of("") == 0);
  CHECK(start_of(" --mig-placement first-fit") == 0);
  CHECK(start_of(" --mig-placement frag-aware") == 6);
  CHECK(start_of(" --gang --mig-placement frag-aware") == 6);
  const auto cycle_start = [&](const std::string& extra) {
    const Run r = run_tool("cycle --cluster " + cluster + " --pending " + jobs + " --now 0 --format json" + extra);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out)["starts"][0]["tasks"][0]["mig"]["start"].get<int>();
  };
  CHECK(cycle_start("") == 0);
  CHECK(cycle_start(" --mig-placement frag-aware") == 6);
  const Run bad = run_tool("place --cluster " + cluster + " --jobs " + jobs + " --mig-placement best", true);
  CHECK(bad.status != 0);
  CHECK(bad.out.find("--mig-placement") != std::string::npos);
}
