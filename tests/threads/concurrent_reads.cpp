// The thread-safety contract (cluster/cluster_state.hpp, "Threads"), checked under ThreadSanitizer:
// any number of threads may read one shared ClusterState through const calls (queries, compile_job,
// a MIG placer's decide, copies for what-if work) while none changes it; each thread changes only
// its own copy and uses its own policy objects. Built alone with -fsanitize=thread by
// tests/threads/run_tsan.cmake (ctest `thread_safety_tsan`): a data race fails the run (halt_on_error).
//
// Every thread also checks its answers against the single-threaded reference: the same inputs give
// the same decisions whichever thread asks (determinism), and the shared state's generation does
// not move (nothing wrote to it).
#include <cstdio>
#include <thread>
#include <vector>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/mig/cluster_builder.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"

namespace gs = gpusched;

namespace {

gs::Job job_of(std::int32_t replicas, gs::GpuCount gpus) {
  gs::Job job;
  job.job_name = "j";
  gs::TaskGroupSpec group;
  group.name = "worker";
  group.replicas = replicas;
  group.shape = gs::TaskShape{4000, 16 * gs::kGiB, gpus, 1000, 0};
  job.groups.push_back(group);
  return job;
}

// What one thread computes from the shared states: the nodes a best-fit placement and a gang use
// on a private copy, and where a MIG request would go on the shared MIG state.
struct Answers {
  std::vector<gs::NodeId> packed, gang;
  bool mig_placed = false;
  std::uint64_t generation = 0;
  bool operator==(const Answers&) const = default;
};

Answers answer(const gs::ClusterState& shared, const gs::ClusterState& mig_shared, const gs::mig::MigRequest& req) {
  Answers a;
  gs::ClusterState what_if = shared;  // a copy: a const read of the shared state
  const gs::BestFitPolicy policy;     // one per thread
  for (int g : {1, 2, 4, 8}) {
    auto job = gs::compile_job(shared, job_of(1, g));
    if (!job) return a;
    auto p = gs::place_job(what_if, *job, policy);
    for (const auto& t : p.tasks) a.packed.push_back(t.assignment.node);
  }
  auto gang_job = gs::compile_job(shared, job_of(4, 2));
  if (!gang_job) return a;
  auto spec = gs::make_gang_spec(*gang_job);
  if (!spec) return a;
  gs::ClusterState gang_copy = shared;
  auto r = gs::place_gang(gang_copy, *spec);
  if (r.placed())
    for (const auto& t : r.tasks) a.gang.push_back(t.assignment.node);
  // Read-only queries on the shared state itself.
  std::int64_t idle = 0;
  for (gs::NodeId n = 0; n < shared.node_count(); ++n) idle += shared.shares().idle_gpus(n);
  a.packed.push_back(static_cast<gs::NodeId>(idle));
  const gs::mig::FragAwarePlacer placer(gs::mig::MigMode::kDynamic, gs::mig::MigDemand::uniform(gs::mig::MigCatalog::builtin()));
  a.mig_placed = placer.decide(mig_shared, req).placed();
  a.generation = shared.generation() + mig_shared.generation();
  return a;
}

}  // namespace

int main() {
  std::vector<gs::NodeSpec> nodes(64);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].name = "n" + std::to_string(n);
    nodes[n].cpu = 64000;
    nodes[n].memory = 512 * gs::kGiB;
    nodes[n].gpus.assign(8, gs::GpuSpec{"A100-80GB"});
    for (std::size_t g = 0; g < n % 8; ++g) nodes[n].gpus[g].used_milli = 1000;
  }
  const gs::Cluster cluster(nodes);
  auto built = gs::ClusterState::build(cluster, gs::GpuModelRegistry::builtin());
  if (!built) return 2;
  const gs::ClusterState shared = std::move(*built);

  const auto& catalog = gs::mig::MigCatalog::builtin();
  gs::mig::MigClusterBuilder mig_cluster;
  for (int n = 0; n < 4; ++n) {
    auto node = mig_cluster.add_node("m" + std::to_string(n));
    for (int g = 0; g < 2; ++g) mig_cluster.add_gpu(node, *catalog.find("A100-SXM4-40GB"));
  }
  auto mig_built = mig_cluster.build();
  if (!mig_built) return 2;
  const gs::ClusterState mig_shared = std::move(*mig_built);
  const auto request = gs::mig::MigRequest::from_name(catalog, "1g.5gb");
  if (!request) return 2;

  const Answers reference = answer(shared, mig_shared, *request);
  if (reference.packed.size() < 5 || reference.gang.size() != 4 || !reference.mig_placed) {
    std::printf("FAILED: the reference answers are incomplete\n");
    return 1;
  }
  constexpr int kThreads = 4, kRounds = 8;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r)
        if (!(answer(shared, mig_shared, *request) == reference)) ++mismatches[static_cast<std::size_t>(t)];
    });
  for (auto& th : threads) th.join();
  int failures = 0;
  for (int m : mismatches) failures += m;
  std::printf("%s: %d threads x %d rounds of queries and what-if copies on one shared state\n",
              failures == 0 ? "ok" : "FAILED", kThreads, kRounds);
  return failures == 0 ? 0 : 1;
}
