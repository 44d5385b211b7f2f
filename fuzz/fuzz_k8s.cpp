// libFuzzer: the Kubernetes object reader (gpusched/io/k8s.hpp) on arbitrary bytes, as JSON or YAML
// (multi-document, aliases, deep nesting, JSON lists read item by item); what it accepts must build
// a ClusterState and be decided and bound without a crash, give its queues with their usage
// (`fairshare --k8s`: the bound pods counted unreserved), and become the cycle's inputs (`cycle
// --k8s`: the bound pods reserved on the GPUs the reader gave them) for one cycle.
#include <span>

#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/fairness/cluster_input.hpp"
#include "gpusched/io/cycle_json.hpp"
#include "gpusched/io/k8s.hpp"

GPUSCHED_FUZZ_TARGET(k8s, data, size) {
  const gpusched::io::k8s::Source source{gpusched::fuzz::as_text(data, size), "fuzz.yaml"};
  const std::span<const gpusched::io::k8s::Source> sources(&source, 1);
  auto input = gpusched::io::k8s::read(sources);
  gpusched::fuzz::check_result(input);
  if (!input.ok()) return 0;
  auto state = gpusched::ClusterState::build(input->cluster, input->registry);
  gpusched::fuzz::check_result(state);
  if (!state.ok()) return 0;
  gpusched::BestFitPolicy policy;
  auto decided = gpusched::io::k8s::decide(*input, *state, policy);
  gpusched::fuzz::check_result(decided);
  if (decided.ok()) (void)gpusched::io::k8s::bindings_json(*input, *state, decided->placements, decided->messages);
  if (auto fc = gpusched::fairness::fairness_cluster(*state); fc.ok() && !input->queues.empty())
    gpusched::fuzz::check_result(gpusched::io::k8s::queue_configs(*input, *state, fc->space));
  auto cycle = gpusched::io::read_cycle_inputs_k8s(sources);
  gpusched::fuzz::check_result(cycle);
  if (cycle.ok()) gpusched::fuzz::check_result(gpusched::io::run_cycle_on(*cycle->state, cycle->inputs, 1714560000, {}));
  return 0;
}
