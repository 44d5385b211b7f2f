// libFuzzer: the Kubernetes object reader (gpusched/io/k8s.hpp) on arbitrary bytes, as JSON or YAML
// (multi-document, aliases, deep nesting, JSON lists read item by item); what it accepts must build
// a ClusterState and be decided and bound without a crash.
#include <span>

#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/k8s.hpp"

GPUSCHED_FUZZ_TARGET(k8s, data, size) {
  const gpusched::io::k8s::Source source{gpusched::fuzz::as_text(data, size), "fuzz.yaml"};
  auto input = gpusched::io::k8s::read(std::span<const gpusched::io::k8s::Source>(&source, 1));
  gpusched::fuzz::check_result(input);
  if (!input.ok()) return 0;
  auto state = gpusched::ClusterState::build(input->cluster, input->registry);
  gpusched::fuzz::check_result(state);
  if (!state.ok()) return 0;
  gpusched::BestFitPolicy policy;
  auto decided = gpusched::io::k8s::decide(*input, *state, policy);
  gpusched::fuzz::check_result(decided);
  if (decided.ok()) (void)gpusched::io::k8s::bindings_json(*input, *state, decided->placements, decided->messages);
  return 0;
}
