// libFuzzer: the cluster JSON reader (docs/formats.md) on arbitrary bytes; a document it accepts must
// also build a ClusterState or be refused with an error, never crash.
#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"

GPUSCHED_FUZZ_TARGET(cluster_json, data, size) {
  auto doc = gpusched::io::read_cluster_json(gpusched::fuzz::as_text(data, size), "fuzz.json");
  gpusched::fuzz::check_result(doc);
  if (doc.ok()) {
    auto state = gpusched::ClusterState::build(doc->cluster, doc->registry);
    gpusched::fuzz::check_result(state);
  }
  return 0;
}
