// A tiny outside program: builds a two-node cluster, places a 4-GPU task with best-fit and decides a
// two-task gang. Node a has 4 of 8 GPUs in use, so best-fit (fewest idle GPUs left) picks a; the gang
// of 2 x 4 GPUs then needs 8 free GPUs: a has 4 (the task was only selected, not reserved), b 8, so it is
// feasible.
#include <cstdio>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/gang/gang.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"

int main() {
  std::vector<gpusched::NodeSpec> nodes(2);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].name = n == 0 ? "a" : "b";
    nodes[n].cpu = 32000;
    nodes[n].memory = 256 * gpusched::kGiB;
    nodes[n].gpus.assign(8, gpusched::GpuSpec{"A100-80GB"});
  }
  for (int g = 0; g < 4; ++g) nodes[0].gpus[g].used_milli = 1000;
  gpusched::Cluster cluster(nodes);
  auto state = gpusched::ClusterState::build(cluster, gpusched::GpuModelRegistry::builtin());
  if (!state) return 2;
  auto request = state->compile(gpusched::TaskShape{4000, gpusched::kGiB, 4, 1000, 0});
  if (!request) return 2;
  const gpusched::NodeId node = gpusched::BestFitPolicy{}.select(*state, *request);
  std::printf("best-fit node: %s\n", node == gpusched::kNoNode ? "none" : state->node_name(node).data());
  if (node != 0) return 1;

  gpusched::Job job;
  job.job_name = "allreduce";
  gpusched::TaskGroupSpec group;
  group.name = "worker";
  group.replicas = 2;
  group.shape = gpusched::TaskShape{4000, gpusched::kGiB, 4, 1000, 0};
  job.groups.push_back(group);
  auto compiled = gpusched::compile_job(*state, job);
  if (!compiled) return 2;
  auto spec = gpusched::make_gang_spec(*compiled);
  if (!spec) return 2;
  const gpusched::GangResult gang = gpusched::place_gang(*state, *spec);
  std::printf("gang: %s\n", std::string(gpusched::verdict_name(gang.verdict)).c_str());
  return gang.placed() ? 0 : 1;
}
