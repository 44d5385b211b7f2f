// A placement policy of your own in C++ (docs/policies.md, "C++"): a score function registered by
// name beside the built-ins, then made by name like any of them.
//
// The policy, "uniform", prefers the node whose free GPU shares are the fewest distinct values (the
// node stays easy to pack for one kind of task). It reads only the node's resources, so it asks to
// be memoised. The test suite runs this program and checks its output (registry_example.expected):
// best-fit and uniform choose different nodes for the same task.
#include <cstdio>
#include <set>

#include "gpusched/gpusched.hpp"

using namespace gpusched;

namespace {

std::optional<std::int64_t> uniform(const ClusterState& s, NodeId n, const TaskRequest& /*request*/) {
  const auto free = s.shares().free_milli(n);
  return -static_cast<std::int64_t>(std::set<std::int32_t>(free.begin(), free.end()).size());
}

NodeSpec node(const char* name, std::initializer_list<MilliGpu> used) {
  NodeSpec n;
  n.name = name;
  n.cpu = 32000;
  n.memory = 256 * kGiB;
  for (MilliGpu u : used) {
    GpuSpec gpu{"A100-80GB"};
    gpu.used_milli = u;
    n.gpus.push_back(gpu);
  }
  return n;
}

}  // namespace

int main() {
  PolicyRegistry registry = PolicyRegistry::with_builtins();
  PolicyEntry entry;
  entry.name = "uniform";
  entry.summary = "fewest distinct free GPU shares";
  entry.make = [](const PolicyArgs& a) {
    return make_score_function_policy("uniform", {uniform, {}}, a.seed, {TieRule::kLowestId, true, false});
  };
  if (!registry.add(std::move(entry))) return 1;

  // tidy: free shares {500, 1000, 1000, 1000} (two kinds); fragmented: {500, 300, 700, 0} (four).
  // A task of half a GPU: best-fit takes the node it leaves with the fewest idle GPUs (fragmented:
  // none), uniform the node with the fewest kinds of free share (tidy); both the 500 GPU there.
  Cluster cluster({node("tidy", {500, 0, 0, 0}), node("fragmented", {500, 700, 300, 1000})});
  ClusterState state = ClusterState::build(cluster, GpuModelRegistry::builtin()).value();
  Job job;
  job.job_name = "notebook";
  TaskGroupSpec group;
  group.name = "main";
  group.shape = TaskShape{1000, kGiB, 1, 500, 0};
  job.groups.push_back(group);
  const CompiledJob compiled = compile_job(state, job).value();
  for (const char* name : {"best-fit", "uniform"}) {
    const auto policy = std::move(registry.make(name).value());
    const ClusterState::Checkpoint mark = state.checkpoint();
    const JobPlacement p = place_job(state, compiled, *policy);
    state.rollback(mark);  // a what-if: both policies see the same cluster
    if (!p.placed()) return 1;
    std::printf("%-9s -> %s GPU %d\n", name, std::string(state.node_name(p.tasks[0].assignment.node)).c_str(),
                static_cast<int>(p.tasks[0].assignment.gpus[0]));
  }
  return 0;
}
