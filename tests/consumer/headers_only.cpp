// The header-only proof: one program using all five policy families, compiled with gpusched's include
// path and the header-only dependencies (Eigen, Boost's headers, {fmt} with FMT_HEADER_ONLY) and NO
// gpusched library linked (tests/consumer/run_headers_only.cmake invokes the compiler directly).
//
// Every answer is worked by hand (below), so the program fails (exit 1) when a family answers
// differently, not only when it does not compile.
#include <cstdio>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/fairness/drf.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/topology/node_topology.hpp"

namespace gs = gpusched;

static int failures = 0;
static void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

static gs::Job job_of(const char* name, std::int32_t replicas, gs::GpuCount gpus) {
  gs::Job job;
  job.job_name = name;
  gs::TaskGroupSpec group;
  group.name = "worker";
  group.replicas = replicas;
  group.shape = gs::TaskShape{4000, 16 * gs::kGiB, gpus, 1000, 0};
  job.groups.push_back(group);
  return job;
}

int main() {
  // Two nodes of 8 A100-80GB; node a has 4 GPUs in use, node b none.
  std::vector<gs::NodeSpec> nodes(2);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].name = n == 0 ? "a" : "b";
    nodes[n].cpu = 64000;
    nodes[n].memory = 512 * gs::kGiB;
    nodes[n].gpus.assign(8, gs::GpuSpec{"A100-80GB"});
  }
  for (int g = 0; g < 4; ++g) nodes[0].gpus[g].used_milli = 1000;
  gs::Cluster cluster(nodes);
  auto state = gs::ClusterState::build(cluster, gs::GpuModelRegistry::builtin());
  if (!state) return 2;

  // Packing: one 4-GPU task with best-fit goes to a (0 idle GPUs left there, 4 on b).
  auto packed = gs::compile_job(*state, job_of("train", 1, 4));
  if (!packed) return 2;
  gs::JobPlacement placement = gs::place_job(*state, *packed, gs::BestFitPolicy{});
  expect(placement.placed() && placement.tasks.size() == 1 && placement.tasks[0].assignment.node == 0,
         "packing: best-fit puts the 4-GPU task on node a");

  // Gang: 2 x 4 GPUs needs 8 free GPUs and only b's 8 are left, so it fits (both tasks on b);
  // a second identical gang then cannot fit anywhere (0 free GPUs).
  auto gang_job = gs::compile_job(*state, job_of("allreduce", 2, 4));
  if (!gang_job) return 2;
  auto spec = gs::make_gang_spec(*gang_job);
  if (!spec) return 2;
  gs::GangResult first = gs::place_gang(*state, *spec);
  expect(first.placed(), "gang: 2 x 4 GPUs fit on node b");
  gs::GangResult second = gs::place_gang(*state, *spec);
  expect(!second.placed(), "gang: a second 2 x 4 GPUs does not fit");

  // MIG: a 1g.5gb on an empty A100-40GB goes to slice 6 with fragmentation-aware placement, which
  // keeps the 4g.20gb (slices 0-3) and the 3g.20gb (4-6 minus one) placeable (MIG User Guide,
  // A100 placement table; worked in tests/mig/packer_test.cpp).
  const auto& catalog = gs::mig::MigCatalog::builtin();
  gs::mig::MigClusterBuilder mig_cluster;  // MIG GPUs live in the one ClusterState
  mig_cluster.add_gpu(mig_cluster.add_node("m0"), *catalog.find("A100-SXM4-40GB"));
  auto mig_state = mig_cluster.build();
  if (!mig_state) return 2;
  auto request = gs::mig::MigRequest::from_name(catalog, "1g.5gb");
  if (!request) return 2;
  gs::mig::FragAwarePlacer placer(gs::mig::MigMode::kDynamic, gs::mig::MigDemand::uniform(catalog));
  gs::mig::MigDecision decision = placer.decide(*mig_state, *request);
  expect(decision.placed() && decision.start == 6, "mig: 1g.5gb placed at slice 6");

  // Topology: on one NVSwitch host every GPU pair is equal; the best 2 of 4 free GPUs is found
  // and, ties going to the lowest indices, is {0, 1}.
  auto topo = gs::topology::NodeTopology::nvlink_domain(1, 4, gs::topology::LinkKind::kNvLink5, 18);
  const std::vector<std::uint16_t> free_gpus{0, 1, 2, 3};
  gs::topology::GpuPick pick = topo.best_gpus(free_gpus, 2);
  expect(pick.found() && pick.gpus.size() == 2, "topology: picks 2 of 4 NVSwitch GPUs");

  // Fairness (DRF, Ghodsi et al. NSDI'11, section 4 example): 9 CPUs and 18 GB; after one task of
  // A <1 CPU, 4 GB> (dominant share 4/18) and none of B, B is next; after one task of B
  // <3 CPU, 1 GB> (3/9 > 4/18), A is next.
  gs::fairness::Amounts total(2);
  total << 9, 18;
  gs::fairness::DrfSorter sorter(total);
  const auto user_a = sorter.add();
  const auto user_b = sorter.add();
  gs::fairness::Amounts task_a(2), task_b(2);
  task_a << 1, 4;
  task_b << 3, 1;
  sorter.allocate(user_a, task_a);
  const bool b_next = sorter.front() == user_b;
  sorter.allocate(user_b, task_b);
  expect(b_next && sorter.front() == user_a, "fairness: DRF order B then A");

  return failures == 0 ? 0 : 1;
}
