// gpusched/packing/detail/registry_impl.hpp — definitions of registry.hpp (header-only).
//
// Included at the end of registry.hpp, or, under GPUSCHED_SEPARATE_COMPILATION, once per program by
// gpusched/compiled.hpp (core/config.hpp); not a public header.
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/packing/registry.hpp"

#include <cctype>
#include <utility>

namespace gpusched {
namespace detail {

// A built-in entry whose factory is a plain constructor call.
template <class Make>
PolicyEntry builtin_policy(std::string name, std::string summary, PolicySet set, Make make,
                           std::vector<std::string> aliases = {}, bool needs_workload = false) {
  PolicyEntry e;
  e.name = std::move(name);
  e.summary = std::move(summary);
  e.set = set;
  e.make = std::move(make);
  e.aliases = std::move(aliases);
  e.needs_workload = needs_workload;
  return e;
}

// An FGD-family entry: make_trace_policy with the workload the path computed.
GPUSCHED_DECL PolicyEntry fgd_entry(std::string name, std::string summary) {
  std::string canonical_name = name;
  return builtin_policy(std::move(name), std::move(summary), PolicySet::kTrace,
                        [canonical_name](const PolicyArgs& a) -> std::unique_ptr<PlacementPolicy> {
                          return make_trace_policy(canonical_name, a.seed, *a.workload);
                        },
                        {}, true);
}

GPUSCHED_DECL PolicyEntry trace_entry(std::string name, std::string summary) {
  std::string canonical_name = name;
  static const TargetWorkload kNone;  // the non-FGD trace policies read no workload
  return builtin_policy(std::move(name), std::move(summary), PolicySet::kTrace,
                        [canonical_name](const PolicyArgs& a) -> std::unique_ptr<PlacementPolicy> {
                          return make_trace_policy(canonical_name, a.seed, kNone);
                        });
}

GPUSCHED_DECL bool entry_named(const PolicyEntry& e, std::string_view name) {
  if (e.name == name) return true;
  for (const auto& a : e.aliases)
    if (a == name) return true;
  return false;
}

GPUSCHED_DECL bool entry_named_canonically(const PolicyEntry& e, const std::string& canonical) {
  if (PolicyRegistry::canonical(e.name) == canonical) return true;
  for (const auto& a : e.aliases)
    if (PolicyRegistry::canonical(a) == canonical) return true;
  return false;
}

}  // namespace detail

GPUSCHED_DECL std::string PolicyRegistry::canonical(std::string_view name) {
  std::string out;
  for (char c : name)
    if (c != '-' && c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

GPUSCHED_DECL PolicyRegistry PolicyRegistry::with_builtins() {
  using detail::builtin_policy;
  constexpr PolicySet kPlace = PolicySet::kPlacement;
  PolicyRegistry r;
  auto& e = r.entries_;
  e.push_back(builtin_policy("first-fit", "the lowest-id node that fits", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<FirstFitPolicy>(); }));
  e.push_back(builtin_policy("best-fit", "least idle GPUs left on the node; a shared task on the tightest GPU", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<BestFitPolicy>(); }));
  e.push_back(builtin_policy("worst-fit", "most idle GPUs left on the node (spreads)", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<WorstFitPolicy>(); }, {"spread"}));
  e.push_back(builtin_policy("most-allocated", "Kubernetes NodeResourcesFit MostAllocated (packs)", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<MostAllocatedPolicy>(); }));
  e.push_back(builtin_policy("least-allocated", "Kubernetes NodeResourcesFit LeastAllocated (spreads)", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<LeastAllocatedPolicy>(); }));
  e.push_back(builtin_policy("dot-product", "Tetris: alignment of request and free vectors", kPlace,
                             [](const PolicyArgs&) { return std::make_unique<DotProductPolicy>(); }, {"tetris"}));
  e.push_back(builtin_policy("random", "a uniformly random fitting node (seeded)", kPlace,
                             [](const PolicyArgs& a) { return std::make_unique<RandomPolicy>(a.seed); }));
  e.push_back(detail::trace_entry("Random", "FGD paper: random node and GPU"));
  e.push_back(detail::trace_entry("DotProd", "FGD paper: smallest dot product of request and free vector"));
  e.push_back(detail::trace_entry("GpuClustering", "FGD paper: nodes running tasks of the same kind first"));
  e.push_back(detail::trace_entry("GpuPacking", "FGD paper: shared GPUs, then used nodes, then idle nodes"));
  e.push_back(detail::trace_entry("BestFit", "FGD paper: least CPU and GPU left, normalised score"));
  e.push_back(detail::fgd_entry("FGD", "Fragmentation Gradient Descent (Weng et al., ATC'23)"));
  e.push_back(detail::fgd_entry("FGD-OC", "FGD with opportunity costs (ours; docs/bench-packing.md)"));
  e.push_back(detail::fgd_entry("FGD-Pack", "FGD, ties to the least GPU share left (measured worse)"));
  e.push_back(detail::fgd_entry("FGD-BF", "FGD scored by the exact change of F (measured worse)"));
  e.push_back(detail::fgd_entry("FGD-Bal", "FGD, ties by CPU kept beside free GPU share (measured worse)"));
  return r;
}

GPUSCHED_DECL Status PolicyRegistry::add(PolicyEntry entry) {
  if (entry.name.empty()) return Error{"policy: empty name", ErrorCode::kInvalidValue, "name"};
  if (!entry.make) return Error{"policy '" + entry.name + "': no factory", ErrorCode::kInvalidValue, "make"};
  std::vector<std::string> names = entry.aliases;
  names.push_back(entry.name);
  for (const std::string& n : names) {
    const std::string c = canonical(n);
    if (c.empty()) return Error{"policy '" + entry.name + "': a name of only '-' and '_'", ErrorCode::kInvalidValue, "name"};
    for (const PolicyEntry& e : entries_)
      if (detail::entry_named_canonically(e, c))
        return Error{"policy '" + n + "': the name of an existing policy ('" + e.name + "')", ErrorCode::kDuplicate, "name"};
  }
  entry.set = PolicySet::kUser;
  entries_.push_back(std::move(entry));
  return {};
}

GPUSCHED_DECL const PolicyEntry* PolicyRegistry::find(std::string_view name, PolicySet prefer) const {
  const std::string c = canonical(name);
  const auto pass = [&](bool in_prefer, bool exact) -> const PolicyEntry* {
    const PolicyEntry* found = nullptr;
    for (const PolicyEntry& e : entries_) {
      if (in_prefer && e.set != prefer) continue;
      if (exact ? detail::entry_named(e, name) : detail::entry_named_canonically(e, c)) {
        if (found) return nullptr;  // ambiguous
        found = &e;
      }
    }
    return found;
  };
  constexpr bool kPasses[3][2] = {{false, true}, {true, false}, {false, false}};  // {in prefer only, exact}
  for (const auto& p : kPasses)
    if (const PolicyEntry* e = pass(p[0], p[1])) return e;
  return nullptr;
}

GPUSCHED_DECL Result<std::unique_ptr<PlacementPolicy>> PolicyRegistry::make(std::string_view name,
                                                                            const PolicyArgs& args,
                                                                            PolicySet prefer) const {
  const PolicyEntry* e = find(name, prefer);
  if (!e) {
    std::string known;
    for (std::string_view n : names()) known.append(known.empty() ? "" : ", ").append(n);
    std::string shown(name.substr(0, 100));
    return Error{"unknown policy \"" + shown + "\" (known: " + known + ")", ErrorCode::kUnknownName, "policy"};
  }
  if (e->needs_workload && !args.workload)
    return Error{"policy \"" + e->name + "\" needs a target workload (the tasks to place), and none was given",
                 ErrorCode::kMissingField, "policy"};
  std::unique_ptr<PlacementPolicy> p = e->make(args);
  if (!p) return Error{"policy \"" + e->name + "\": its factory made no policy", ErrorCode::kInvalidValue, "policy"};
  return p;
}

GPUSCHED_DECL Result<std::unique_ptr<PlacementPolicy>> PolicyRegistry::make_for(
    std::string_view name, std::uint64_t seed, const std::function<std::vector<TaskRequest>()>& tasks,
    PolicySet prefer) const {
  const PolicyEntry* e = find(name, prefer);
  const bool needs = e && e->needs_workload;
  TargetWorkload workload;
  if (needs && tasks) workload = TargetWorkload::from_requests(tasks());
  return make(name, {seed, needs && !tasks ? nullptr : &workload}, prefer);
}

GPUSCHED_DECL std::vector<std::string_view> PolicyRegistry::names() const {
  std::vector<std::string_view> out;
  for (const PolicyEntry& e : entries_) out.push_back(e.name);
  return out;
}

GPUSCHED_DECL std::vector<std::string_view> PolicyRegistry::names(PolicySet set) const {
  std::vector<std::string_view> out;
  for (const PolicyEntry& e : entries_)
    if (e.set == set) out.push_back(e.name);
  return out;
}

}  // namespace gpusched
