// gpusched/compiled.hpp — every policy family's definitions, for separate compilation.
//
// Include this header in exactly one translation unit of a program whose units all define
// GPUSCHED_SEPARATE_COMPILATION (gpusched/core/config.hpp says why and when). gpusched's own build
// does so in src/compiled/families.cpp (the target gpusched_compiled). A program that does not define
// the macro needs none of this: the public headers then carry the definitions inline.
#pragma once

#include "gpusched/core/config.hpp"

#if GPUSCHED_HEADER_ONLY
#error "gpusched/compiled.hpp is for programs built with GPUSCHED_SEPARATE_COMPILATION defined"
#endif

#include "gpusched/cluster/detail/cluster_state_impl.hpp"
#include "gpusched/cluster/detail/jobs_impl.hpp"
#include "gpusched/packing/detail/placement_impl.hpp"
#include "gpusched/packing/detail/policy_impl.hpp"
#include "gpusched/packing/detail/fgd_impl.hpp"
#include "gpusched/packing/detail/trace_policies_impl.hpp"
#include "gpusched/packing/detail/score_function_impl.hpp"
#include "gpusched/packing/detail/registry_impl.hpp"
#include "gpusched/topology/detail/links_impl.hpp"
#include "gpusched/topology/detail/graph_impl.hpp"
#include "gpusched/topology/detail/node_topology_impl.hpp"
#include "gpusched/topology/detail/cluster_graph_impl.hpp"
#include "gpusched/topology/detail/cluster_topology_impl.hpp"
#include "gpusched/gang/detail/gang_spec.hpp"
#include "gpusched/gang/detail/gang_solver.hpp"
#include "gpusched/fairness/detail/quota_impl.hpp"
#include "gpusched/fairness/detail/drf_impl.hpp"
#include "gpusched/fairness/detail/hdrf_impl.hpp"
#include "gpusched/fairness/detail/admission_rule_impl.hpp"
#include "gpusched/fairness/detail/admission_impl.hpp"
#include "gpusched/mig/detail/packer_impl.hpp"
#include "gpusched/mig/detail/planner_impl.hpp"
#include "gpusched/scheduler/detail/preemption_impl.hpp"
#include "gpusched/scheduler/detail/backfill_impl.hpp"
#include "gpusched/scheduler/detail/cycle_impl.hpp"
#include "gpusched/scheduler/detail/session_impl.hpp"
#include "gpusched/scheduler/detail/orders_impl.hpp"
