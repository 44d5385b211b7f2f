// Checked arithmetic, property test: quantities at the edges of their types (INT64_MAX-ish CPU,
// memory and milli-GPU, INT32_MAX GPUs and replicas, negative values, extreme priorities and submit
// times) given to job compilation and whole-job placement. Every outcome must be an error naming a
// field, or a verdict (not now / infeasible); a placement that succeeds must fit the cluster
// (never a wrapped total admitting 9.2e18 cores on a 256-core cluster, as once happened). Run
// under the sanitizer build, UBSan turns any signed overflow on the way into a failure.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"

using namespace gpusched;

namespace {

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();

// Four nodes of 64 cores, 256 GiB, 8 A100-80GB: 256 cores and 32 GPUs in all.
ClusterState small_cluster() {
  std::vector<NodeSpec> nodes(4);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].name = "n" + std::to_string(n);
    nodes[n].cpu = 64'000;
    nodes[n].memory = 256 * kGiB;
    nodes[n].gpus.assign(8, GpuSpec{"A100-80GB"});
  }
  auto s = ClusterState::build(Cluster(nodes), GpuModelRegistry::builtin());
  REQUIRE(s.ok());
  return std::move(*s);
}

// A job of one group `group` of `replicas` tasks of `shape`.
Job one_group_job(std::string name, std::string group, std::int32_t replicas, TaskShape shape) {
  Job job;
  job.job_name = std::move(name);
  TaskGroupSpec g;
  g.name = std::move(group);
  g.replicas = replicas;
  g.shape = shape;
  job.groups.push_back(std::move(g));
  return job;
}

template <class T, std::size_t N>
T pick(SplitMix64& rng, const std::array<T, N>& values) {
  return values[rng.next() % N];
}

}  // namespace

TEST_CASE("extreme quantities: errors or verdicts, never a wrapped admission") {
  const ClusterState base = small_cluster();
  const std::array<std::int64_t, 10> q64 = {0, 1, 1000, -1, kMax64, kMax64 / 2, kMax64 / 1000 + 1, kMax64 / 8 + 7,
                                            std::numeric_limits<std::int64_t>::min(), 64'000};
  const std::array<std::int32_t, 8> q32 = {0, 1, 2, 8, -1, kMax32, kMax32 / 2 + 1, std::numeric_limits<std::int32_t>::min()};
  SplitMix64 rng(20261201);
  int compiled = 0, placed = 0, refused = 0;
  for (int i = 0; i < 4000; ++i) {
    Job job;
    job.job_name = "x";
    job.job_priority = pick(rng, q32);
    job.job_submit_time = pick(rng, q64);
    const std::size_t groups = 1 + rng.next() % 3;
    for (std::size_t g = 0; g < groups; ++g) {
      TaskGroupSpec group;
      group.name = "g" + std::to_string(g);
      group.replicas = pick(rng, q32);
      group.min_replicas = rng.next() % 2 ? -1 : pick(rng, q32);
      group.shape = TaskShape{pick(rng, q64), pick(rng, q64), pick(rng, q32), pick(rng, q64), pick(rng, q64)};
      job.groups.push_back(group);
    }
    auto c = compile_job(base, job);
    if (!c) {
      ++refused;
      CHECK_FALSE(c.error().message.empty());
      continue;
    }
    ++compiled;
    ClusterState what_if = base;
    const JobPlacement p = place_job(what_if, *c, BestFitPolicy{});
    if (!p.placed()) {
      CHECK((p.verdict == Verdict::kNotNow || p.verdict == Verdict::kInfeasible || p.verdict == Verdict::kInvalid));
      continue;
    }
    ++placed;
    // A placement that succeeded fits: every node's free CPU, memory and idle GPUs stay in range.
    for (NodeId n = 0; n < what_if.node_count(); ++n) {
      CHECK(what_if.shares().idle_gpus(n) >= 0);
      CHECK(what_if.shares().idle_gpus(n) <= 8);
    }
    CHECK(p.tasks.size() <= 32 + 4 * 64);  // no more tasks than the cluster could ever hold
  }
  // The generator reaches all three outcomes (a test that cannot fail is a defect).
  CHECK(refused > 0);
  CHECK(compiled > 0);
  CHECK(placed > 0);
}

TEST_CASE("extreme quantities: 2 x 2^62 milli-CPU is refused or infeasible, not admitted as a negative total") {
  const ClusterState base = small_cluster();
  Job job = one_group_job("huge", "w", 2, TaskShape{std::int64_t{1} << 62, kGiB, 0, 0, 0});
  job.groups.push_back(job.groups[0]);
  job.groups[1].name = "w2";
  auto c = compile_job(base, job);
  if (!c) {
    CHECK(c.error().message.find("cpu") != std::string::npos);
    return;
  }
  ClusterState what_if = base;
  const JobPlacement p = place_job(what_if, *c, BestFitPolicy{});
  CHECK_FALSE(p.placed());
  CHECK(p.verdict == Verdict::kInfeasible);
}

TEST_CASE("extreme quantities: a job of more than kMaxJobTasks tasks is an error naming the group, not 10^9 placements") {
  const ClusterState base = small_cluster();
  // Tasks that ask for nothing fit anywhere, again and again.
  Job job = one_group_job("wide", "zero-sized", kMax32 / 2 + 1, TaskShape{});
  auto c = compile_job(base, job);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == ErrorCode::kLimit);
  CHECK(c.error().message == "jobs[wide].groups[0].replicas: 1073741824 makes the job more than 1048576 tasks, the most a job may have");

  // The bound is on the job's total: two groups of 2^19 + 1.
  job.groups[0].replicas = (1 << 19) + 1;
  job.groups.push_back(job.groups[0]);
  job.groups[1].name = "second";
  auto two = compile_job(base, job);
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message.rfind("jobs[wide].groups[1].replicas: 524289 makes", 0) == 0);

  // At the bound, 2^20 tasks that ask for nothing are placed (every one on some node).
  job.groups.pop_back();
  job.groups[0].replicas = kMaxJobTasks;
  auto at_bound = compile_job(base, job);
  REQUIRE(at_bound.ok());
  ClusterState what_if = base;
  CHECK(place_job(what_if, *at_bound, BestFitPolicy{}).tasks.size() == static_cast<std::size_t>(kMaxJobTasks));
}
