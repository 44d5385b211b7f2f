// gpusched/packing/registry.hpp — placement policies by name: the built-in ones and the user's.
//
// Every path that takes a placement policy by name — `place`, `cycle`/`explain`, `bench-packing`,
// `simulate` and its sweeps, the C API, Python — resolves it in a `PolicyRegistry`. A registry is a
// value, not a process-wide table (the library keeps no global state): the tool makes one with the
// built-ins, adds the policies of the plugins it is given (`--plugin`, io/policy_plugin.hpp), and
// hands it to every command; the C API keeps one per cluster handle; a C++ program makes its own.
//
//   PolicyRegistry reg = PolicyRegistry::with_builtins();
//   reg.add({.name = "my-pack", .summary = "...", .make = [](const PolicyArgs& a) {
//     return std::make_unique<MyPolicy>(a.seed); }});
//   auto policy = reg.make("my-pack", {.seed = 7});   // Result<std::unique_ptr<PlacementPolicy>>
//
// A factory gets the run's seed and, when the entry says it needs one, the target workload (FGD's M:
// fgd.hpp) the path computed from the tasks it places. Factories may run on several threads at once
// (bench-packing runs seeds in parallel) unless the entry says `thread_safe = false`; each call makes
// a fresh policy, used by one thread.
//
// Two sets of built-ins share one name space: the placement policies of policy.hpp ("best-fit",
// "first-fit", ...; `place` and the cycle's default set) and the FGD paper's trace policies of
// trace_policies.hpp and fgd.hpp ("BestFit", "FGD", "FGD-OC", ...; `bench-packing`'s set). A name
// matches exactly (any set), else canonically (case, '-' and '_' ignored: "fgd-oc" = "FGD-OC"), and a
// canonical match prefers the caller's set: `bench-packing --policies bestfit` is the paper's BestFit,
// `place --policy bestfit` the placement policy, and "best-fit" or "BestFit" each itself everywhere.
// User entries match exactly or canonically like the others and may not take a built-in's name.
#pragma once

#include "gpusched/core/config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"
#include "gpusched/packing/fgd.hpp"
#include "gpusched/packing/policy.hpp"

namespace gpusched {

struct PolicyArgs {
  std::uint64_t seed = 42;
  // FGD's target workload; required by entries with needs_workload (make() refuses without it).
  const TargetWorkload* workload = nullptr;
};

// Which set an entry belongs to (see the top of this file).
enum class PolicySet : std::uint8_t { kPlacement, kTrace, kUser };

struct PolicyEntry {
  std::string name;
  std::string summary;  // one line, for --help and docs
  std::function<std::unique_ptr<PlacementPolicy>(const PolicyArgs&)> make;
  PolicySet set = PolicySet::kUser;
  bool needs_workload = false;
  bool thread_safe = true;           // instances may run on different threads at the same time
  std::vector<std::string> aliases;  // other exact names ("spread" for worst-fit)
};

class PolicyRegistry {
 public:
  // Every built-in policy (policy.hpp, trace_policies.hpp, fgd.hpp).
  static PolicyRegistry with_builtins();

  // Adds an entry. Refused (changing nothing) for an empty name or no factory (kInvalidValue), or a
  // name that matches an entry already there, canonically or as an alias (kDuplicate).
  Status add(PolicyEntry entry);
  // The entry `name` denotes (see the top of this file); nullptr when none does, or when the only
  // matches are canonical ones outside `prefer` and they are more than one.
  const PolicyEntry* find(std::string_view name, PolicySet prefer = PolicySet::kPlacement) const;
  // A fresh policy: kUnknownName naming the known policies, or kMissingField when the entry needs a
  // workload and `args` has none.
  Result<std::unique_ptr<PlacementPolicy>> make(std::string_view name, const PolicyArgs& args = {},
                                                PolicySet prefer = PolicySet::kPlacement) const;
  // make() for a path that knows the tasks it places: the target workload is computed from `tasks()`
  // only when the entry needs one (with an empty `tasks`, such an entry is refused: kMissingField).
  Result<std::unique_ptr<PlacementPolicy>> make_for(std::string_view name, std::uint64_t seed,
                                                    const std::function<std::vector<TaskRequest>()>& tasks,
                                                    PolicySet prefer = PolicySet::kPlacement) const;
  // Names in registration order (built-ins first), of one set or of all.
  std::vector<std::string_view> names() const;
  std::vector<std::string_view> names(PolicySet set) const;
  const std::vector<PolicyEntry>& entries() const { return entries_; }

  // The canonical form of a name: lower case, '-' and '_' removed.
  static std::string canonical(std::string_view name);

 private:
  std::vector<PolicyEntry> entries_;
};

}  // namespace gpusched

#if GPUSCHED_HEADER_ONLY
#include "gpusched/packing/detail/registry_impl.hpp"
#endif
