// gpusched/io/policy_plugin.hpp — placement policies and orders written in C (gpusched/c/policy.h):
// from a definition of callbacks, or from a plugin (a shared library) that exports some.
//
// `add_c_policy` registers one definition in a PolicyRegistry (packing/registry.hpp); the policy it
// makes is a ScoreFunctionPolicy (packing/score_function.hpp) whose score and GPU step call the
// definition's callbacks with views of the node and the task (no copy of the cluster per call).
// `load_policy_plugin` opens a shared library, calls its entry point (GPUSCHED_PLUGIN_ENTRY) and
// registers every definition it gives. A library is never unloaded: the policies it made may be
// alive anywhere. Bad plugins are errors naming the file and the definition: a missing entry point,
// an ABI the plugin refuses, a definition without a name or a score, a name already taken.
#pragma once

#include <string>
#include <string_view>

#include "gpusched/c/policy.h"
#include "gpusched/core/result.hpp"
#include "gpusched/packing/registry.hpp"
#include "gpusched/scheduler/orders.hpp"

namespace gpusched::io {

// Registers `def` (copied, with its name and summary) in `registry`. `source` prefixes errors.
Status add_c_policy(PolicyRegistry& registry, const gpusched_policy_def& def, std::string_view source = "policy");

// Registers the order `def` (a job order, a victim order or both; gpusched/c/policy.h) in `orders`.
Status add_c_order(scheduler::OrderRegistry& orders, const gpusched_order_def& def, std::string_view source = "order");

// Loads the plugin at `path` and registers its policies (GPUSCHED_PLUGIN_ENTRY) and, when `orders` is
// given, its orders (GPUSCHED_PLUGIN_ORDERS_ENTRY): all or none. A plugin exports either or both.
Status load_policy_plugin(PolicyRegistry& registry, const std::string& path, scheduler::OrderRegistry* orders = nullptr);

}  // namespace gpusched::io
