// libFuzzer: the MIG cluster file (docs/mig.md, "The cluster file": the one cluster format with "mig"
// objects) on arbitrary bytes; a document it accepts must build a ClusterState with the MIG catalog
// (layouts checked against the profile tables) or be refused with an error, never crash; and a MIG
// placement on the state it built must answer (placed or not) without crashing.
#include "fuzz_harness.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/io/cluster_json.hpp"
#include "gpusched/mig/packer.hpp"
#include "gpusched/mig/profiles.hpp"

GPUSCHED_FUZZ_TARGET(mig_cluster, data, size) {
  auto doc = gpusched::io::read_cluster_json(gpusched::fuzz::as_text(data, size), "fuzz.json");
  gpusched::fuzz::check_result(doc);
  if (doc.ok()) {
    auto state = gpusched::ClusterState::build(doc->cluster, doc->registry, gpusched::mig::MigCatalog::builtin(),
                                               gpusched::mig::LayoutRules{});
    gpusched::fuzz::check_result(state);
    if (state.ok()) {
      namespace mig = gpusched::mig;
      static const mig::MigRequest request = mig::MigRequest::from_name(mig::MigCatalog::builtin(), "1g.5gb").value();
      (void)mig::FirstFitPlacer(mig::MigMode::kDynamic).decide(*state, request);
    }
  }
  return 0;
}
