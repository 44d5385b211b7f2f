// FGD's class index is a cache of the attached state keyed to its generation: it must never answer
// for a state it has not seen (issue 11 part 3).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fgd_test_util.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/packing/placement.hpp"

using namespace gpusched;
using namespace gpusched::fgd_test;

TEST_CASE("regression: an attached FGD places a job whose reservations it was not told about") {
  // The case: 3 nodes x 2 A100, one job of 3 tasks x 2 GPUs, seed 42. Each task needs a whole
  // node, so the job fits exactly. Before the fix the attached policy kept choosing the node its stale
  // class index still showed idle and place_job failed with "the chosen node's GPU pick failed".
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(node("n" + std::to_string(i), 32000, {0, 0}, "A100-80GB"));
  const Cluster cluster(nodes);
  Job job;
  job.job_name = "train";
  TaskGroupSpec group;
  group.name = "workers";
  group.replicas = 3;
  group.shape = TaskShape{4000, kGiB, 2, 1000, 0};
  job.groups.push_back(group);
  TargetWorkload w;
  w.shapes = {shape(4000, 2, 1000, 1.0)};

  ClusterState plain_state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
  const FgdPolicy plain(w, 42);
  const JobPlacement by_plain = place_job(plain_state, compile_job(plain_state, job).value(), plain);
  REQUIRE(by_plain.placed());

  ClusterState state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
  FgdPolicy attached(w, 42);
  attached.attach(state);
  const CompiledJob compiled = compile_job(state, job).value();
  const JobPlacement by_attached = place_job(state, compiled, attached);
  CHECK_MESSAGE(by_attached.placed(), describe(compiled, by_attached));
  REQUIRE(by_attached.tasks.size() == 3);
  for (std::size_t t = 0; t < 3; ++t) CHECK(by_attached.tasks[t].assignment.node == by_plain.tasks[t].assignment.node);
  CHECK(state.same_allocation_as(plain_state));
}

TEST_CASE("property: attached FGD decides like a fresh scan after unobserved reservations, releases and events") {
  // 60 seeded runs of 80 steps on 12 trace-like nodes; the attached policy hears of a reservation only
  // half of the time (observe) and never of releases or events.
  TargetWorkload w = example_workload();
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    SplitMix64 rng(seed * 104729);
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < 12; ++i) {
      std::vector<MilliGpu> used(static_cast<std::size_t>(rng.uniform(1, 4)), 0);
      for (MilliGpu& u : used) u = static_cast<MilliGpu>(rng.uniform(0, 2) * 300);
      nodes.push_back(node("n" + std::to_string(i), static_cast<MilliCpu>(rng.uniform(8, 32) * 1000), used));
    }
    ClusterState state = ClusterState::build(Cluster(nodes), GpuModelRegistry::builtin()).value();
    FgdPolicy attached(w, seed);
    attached.attach(state);
    std::vector<TaskAssignment> running;
    for (int step = 0; step < 80; ++step) {
      const NodeId n = static_cast<NodeId>(rng.below(state.node_count()));
      switch (rng.below(8)) {
        case 0:
          if (rng.chance(15)) {
            // A node joins: the permutation is redrawn for the new node count, the index rebuilt.
            REQUIRE(state.add_node(Cluster({node("new" + std::to_string(step), 16000, {0, 500})})).ok());
          } else {
            (void)(rng.chance(50) ? state.cordon(n) : state.uncordon(n));
          }
          break;
        case 1:
          if (state.gpu_count(n) > 0)
            (void)state.set_gpu_health(n, rng.below(state.gpu_count(n)), rng.chance(50));
          break;
        case 2:
          if (!running.empty()) {
            const std::size_t i = rng.below(running.size());
            REQUIRE(state.release(running[i]).ok());
            running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
          }
          break;
        default: {
          const GpuCount gpus = static_cast<GpuCount>(rng.uniform(0, 2));
          const TaskRequest r = request(state, static_cast<MilliCpu>(rng.uniform(1, 4) * 1000), gpus,
                                        gpus == 1 ? static_cast<MilliGpu>(rng.uniform(1, 10) * 100) : 1000);
          // A fresh policy with the same seed scans every node: the reference answer.
          const FgdPolicy fresh(w, seed);
          const NodeId expected = fresh.select(state, r);
          const NodeId got = attached.select(state, r);
          REQUIRE(got == expected);
          TaskAssignment a;
          if (got != kNoNode && attached.gpu_picker().pick(state, got, r, a) && state.reserve(r, a).ok()) {
            running.push_back(a);
            if (rng.chance(50)) attached.observe(state, r, a);
          }
          state.commit();
        }
      }
    }
  }
}
