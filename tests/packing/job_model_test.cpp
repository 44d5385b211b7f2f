// The one job model: what a JobView says (queue, priority and class, submit time, MIG profiles,
// gang constraints by group index) reaches the CompiledJob every family takes, from code and
// from the jobs JSON alike; bad references name the field.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpusched/gang/gang.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/packing/placement.hpp"
#include "test_util.hpp"

using namespace gpusched;
using gpusched::testing::make_node;

namespace {

ClusterState two_racks() {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    NodeSpec n = make_node("n" + std::to_string(i), 64000, 256 * kGiB, 8, "H100-80GB");
    n.labels = {{"topology.kubernetes.io/rack", i < 2 ? "rack-0" : "rack-1"}};
    nodes.push_back(n);
  }
  return ClusterState::build(Cluster(std::move(nodes)), GpuModelRegistry::builtin()).value();
}

// An orchestrator's own job type, implementing only what it knows (the defaults do the rest).
class InferenceJobView final : public JobView {
 public:
  std::string_view name() const override { return "serve"; }
  std::string_view queue() const override { return "prod"; }
  std::string_view priority_class() const override { return "high"; }
  std::int64_t submit_time() const override { return 1700000000; }
  std::size_t group_count() const override { return 2; }
  TaskGroupInfo group(std::size_t g) const override {
    if (g == 0) return {"prefill", 2, -1, TaskShape{4000, kGiB, 1, 1000, 0}, {}};
    return {"decode", 4, 2, TaskShape{2000, kGiB, 0, 0, 0}, "1g.10gb"};  // a MIG instance, not GPUs
  }
  TopologyRequest topology() const override { return {"rack", LevelMode::kPreferred}; }
  std::size_t spread_count() const override { return 1; }
  SpreadRequest spread(std::size_t) const override { return {"node", 3, 0}; }
  std::size_t spread_group_count(std::size_t) const override { return 1; }
  std::uint32_t spread_group(std::size_t, std::size_t) const override { return 1; }
  std::size_t anti_affinity_count() const override { return 1; }
  AntiAffinityRequest anti_affinity(std::size_t) const override { return {0, 1, {}}; }
};

}  // namespace

TEST_CASE("compile_job carries everything the JobView says") {
  const ClusterState s = two_racks();
  const InferenceJobView view;
  auto job = compile_job(s, view);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().message));
  CHECK(job->queue == "prod");
  CHECK(job->priority == 0);
  CHECK(job->priority_class == "high");
  CHECK(job->submit_time == 1700000000);
  REQUIRE(job->groups.size() == 2);
  CHECK(job->groups[0].min_replicas == 2);  // -1 = all replicas
  CHECK(job->groups[1].min_replicas == 2);
  CHECK(job->groups[0].mig_profile.empty());
  CHECK(job->groups[1].mig_profile == "1g.10gb");
  CHECK(job->topology.level == "rack");
  CHECK(job->topology.mode == LevelMode::kPreferred);
  REQUIRE(job->spread.size() == 1);
  CHECK(job->spread[0].groups == std::vector<std::uint32_t>{1});
  CHECK(job->spread[0].max_per_domain == 3);
  REQUIRE(job->anti_affinity.size() == 1);
  CHECK(job->anti_affinity[0].level == kNodeLevel);  // empty level = one node
  CHECK(job->has_gang_constraints());

  // The gang takes the constraints from the job itself: said once.
  auto spec = make_gang_spec(*job);
  REQUIRE(spec.ok());
  CHECK(spec->topology.level == "rack");
  CHECK(spec->spread.size() == 1);
  CHECK(spec->anti_affinity[0].group_b == 1);
}

TEST_CASE("compile_job rejects a constraint naming a group the job does not have") {
  const ClusterState s = two_racks();
  Job job;
  job.job_name = "j";
  job.groups.push_back(TaskGroupSpec{"w", 1, -1, TaskShape{1000, kGiB, 1, 1000, 0}, {}, {}, {}});
  job.job_anti_affinity.push_back({0, 3, "node"});
  auto r = compile_job(s, job);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "jobs[j].anti_affinity[0].groups[1]: no group 3 (the job has 1)");
  CHECK(r.error().code == ErrorCode::kUnknownName);
  CHECK(r.error().field == "jobs[j].anti_affinity[0].groups[1]");
  job.job_anti_affinity.clear();
  job.job_spread.push_back({"", 1, 0, {}});
  r = compile_job(s, job);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().field == "jobs[j].spread[0].level");
}

TEST_CASE("jobs JSON: the new job-model fields and gang constraints resolved to group indices") {
  auto r = io::read_jobs_json(R"({"jobs": [
    {"name": "serve", "queue": "prod", "priority_class": "high", "submit_time": 42,
     "topology": {"level": "rack", "mode": "preferred"},
     "anti_affinity": [{"groups": ["prefill", "decode"]}],
     "groups": [
       {"name": "prefill", "replicas": 2, "gpus": 1},
       {"name": "decode", "replicas": 4, "min_replicas": 2, "mig_profile": "1g.10gb",
        "spread": {"level": "node", "max_per_domain": 3}}]},
    {"name": "nb", "mig_profile": "2g.20gb"}
  ]})");
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  const Job& serve = r->jobs[0];
  CHECK(serve.priority_class() == "high");
  CHECK(serve.submit_time() == 42);
  CHECK(serve.group(1).mig_profile == "1g.10gb");
  CHECK(r->jobs[1].group(0).mig_profile == "2g.20gb");
  CHECK(serve.topology().level == "rack");
  CHECK(serve.topology().mode == LevelMode::kPreferred);
  REQUIRE(serve.spread_count() == 1);
  CHECK(serve.spread_group_count(0) == 1);
  CHECK(serve.spread_group(0, 0) == 1);
  REQUIRE(serve.anti_affinity_count() == 1);
  CHECK(serve.anti_affinity(0).group_a == 0);
  CHECK(serve.anti_affinity(0).group_b == 1);

  auto bad = io::read_jobs_json(R"({"jobs": [{"name": "x", "groups": [{"name": "a"}],
    "anti_affinity": [{"groups": ["a", "zz"]}]}]})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("jobs[0].anti_affinity[0].groups[1]: unknown group \"zz\" (groups: a)") !=
        std::string::npos);
}
