// gpusched/gpusched.hpp — everything of the core library in one include.
//
// gpusched is a library of GPU-cluster scheduling policies. The layers, bottom to top:
//   core/     quantities, ResourceVector, the GPU model registry, Result/Error, Outcome/Reason
//   cluster/  the ClusterView/JobView interfaces, an in-memory Cluster, the indexed ClusterState
//   packing/  Filter -> Score -> Select node policies and whole-job placement
// Policy families (mig/, topology/, gang/, fairness/) have their own headers.
#pragma once

#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/outcome.hpp"
#include "gpusched/core/quantity.hpp"
#include "gpusched/core/resources.hpp"
#include "gpusched/core/result.hpp"
#include "gpusched/cluster/cluster.hpp"
#include "gpusched/cluster/cluster_state.hpp"
#include "gpusched/cluster/views.hpp"
#include "gpusched/packing/placement.hpp"
#include "gpusched/packing/policy.hpp"
#include "gpusched/packing/registry.hpp"
#include "gpusched/packing/score_function.hpp"
