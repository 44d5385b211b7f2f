// Builders shared by the cluster test files.
#pragma once

#include <doctest/doctest.h>

#include <utility>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"

namespace gpusched::cluster_test {

// The state of a view with the built-in registry; a failed build fails the test with its message.
inline ClusterState build_state(const ClusterView& view) {
  auto s = ClusterState::build(view, GpuModelRegistry::builtin());
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return std::move(s).value();
}

}  // namespace gpusched::cluster_test
