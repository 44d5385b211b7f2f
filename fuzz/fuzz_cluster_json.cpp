// libFuzzer: the cluster JSON reader (docs/formats.md) on arbitrary bytes; a document it accepts must
// also build a ClusterState or be refused with an error, never crash. A state it builds is written
// back (write_cluster_json), and that text must read and build again and write the same text: the
// writer's round trip, checked on whatever the reader accepts.
#include <cstdlib>

#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"

GPUSCHED_FUZZ_TARGET(cluster_json, data, size) {
  auto doc = gpusched::io::read_cluster_json(gpusched::fuzz::as_text(data, size), "fuzz.json");
  gpusched::fuzz::check_result(doc);
  if (!doc.ok()) return 0;
  auto state = gpusched::ClusterState::build(doc->cluster, doc->registry);
  gpusched::fuzz::check_result(state);
  if (!state.ok()) return 0;
  const std::string written = gpusched::io::write_cluster_json(*state);
  auto again = gpusched::io::read_cluster_json(written, "written.json");
  if (!again.ok()) std::abort();
  auto rebuilt = gpusched::ClusterState::build(again->cluster, again->registry);
  if (!rebuilt.ok() || gpusched::io::write_cluster_json(*rebuilt) != written) std::abort();
  return 0;
}
