// A tiny outside program: builds a two-node cluster and places a 4-GPU task with best-fit.
#include <cstdio>

#include "gpusched/gpusched.hpp"

int main() {
  gpusched::NodeSpec a{"a", 32000, 256 * gpusched::kGiB};
  a.gpus.assign(8, gpusched::GpuSpec{"A100-80GB"});
  for (int g = 0; g < 4; ++g) a.gpus[g].used_milli = 1000;
  gpusched::NodeSpec b{"b", 32000, 256 * gpusched::kGiB};
  b.gpus.assign(8, gpusched::GpuSpec{"A100-80GB"});
  gpusched::Cluster cluster({a, b});
  auto state = gpusched::ClusterState::build(cluster, gpusched::GpuModelRegistry::builtin());
  if (!state) return 2;
  auto request = state->compile(gpusched::TaskShape{4000, gpusched::kGiB, 4, 1000, 0});
  if (!request) return 2;
  const gpusched::NodeId node = gpusched::BestFitPolicy{}.select(*state, *request);
  std::printf("best-fit node: %s\n", node == gpusched::kNoNode ? "none" : state->node_name(node).data());
  return node == 0 ? 0 : 1;
}
