// Placement policies written in C: the adapter of a gpusched_policy_def, and the plugin loader.
#include "gpusched/io/policy_plugin.hpp"

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "gpusched/packing/score_function.hpp"
#include "io/text_input.hpp"

namespace gpusched::io {
namespace policy_plugin_impl {

// A message a callback gave: at most 200 bytes shown, never trusted to be short or printable.
std::string callback_message(const char* message) {
  if (!message) return {};
  return ": " + detail::shown(std::string_view(message, strnlen(message, 4096)), 200);
}

class CPolicy final : public ScoreFunctionPolicy {
 public:
  CPolicy(const gpusched_policy_def& def, std::string name, std::uint64_t seed)
      : ScoreFunctionPolicy(std::move(name), seed, traits_of(def)), def_(def) {}

  std::optional<std::int64_t> score(const ClusterState& state, NodeId node, const TaskRequest& request) const override {
    fill(state, node, request);
    std::int64_t s = 0;
    const char* message = nullptr;
    const int rc = def_.score(def_.user, &node_, &task_, &s, &message);
    if (rc == GPUSCHED_SCORE_OK) return s;
    if (rc != GPUSCHED_SCORE_REFUSE)
      fail(fmt::format("score returned {} on node {}{}", rc, detail::shown(state.node_name(node)), callback_message(message)));
    return std::nullopt;
  }

  bool pick_gpus(const ClusterState& state, NodeId node, const TaskRequest& request,
                 std::vector<GpuIndex>& gpus) const override {
    fill(state, node, request);
    const auto n = static_cast<std::uint32_t>(request.shape.shares_gpu() ? 1 : request.shape.gpus);
    std::vector<std::uint32_t> out(n, 0);
    const char* message = nullptr;
    const int rc = def_.pick_gpus(def_.user, &node_, &task_, out.data(), n, &message);
    if (rc != GPUSCHED_SCORE_OK) {
      if (rc != GPUSCHED_SCORE_REFUSE)
        fail(fmt::format("pick_gpus returned {} on node {}{}", rc, detail::shown(state.node_name(node)),
                         callback_message(message)));
      return false;
    }
    for (std::uint32_t g : out) {
      if (g >= state.gpu_count(node)) {
        fail(fmt::format("pick_gpus chose GPU {} of node {}, which has {}", g, detail::shown(state.node_name(node)),
                         state.gpu_count(node)));
        return false;
      }
      gpus.push_back(static_cast<GpuIndex>(g));
    }
    return true;
  }

 private:
  static ScoreFunctionTraits traits_of(const gpusched_policy_def& def) {
    ScoreFunctionTraits t;
    t.ties = (def.flags & GPUSCHED_POLICY_TIES_SEEDED) ? TieRule::kSeededOrder : TieRule::kLowestId;
    t.memoize = (def.flags & GPUSCHED_POLICY_MEMOIZE) != 0;
    t.picks_gpus = def.pick_gpus != nullptr;
    return t;
  }

  // The views of (node, request), into this policy's scratch space.
  void fill(const ClusterState& state, NodeId node, const TaskRequest& request) const {
    if (names_instance_ != state.instance_id() || model_names_.size() != state.registry().size()) {
      model_names_.clear();
      model_name_ptrs_.clear();
      for (std::size_t m = 0; m < state.registry().size(); ++m)
        model_names_.push_back(state.registry().model(static_cast<GpuModelId>(m)).name);
      for (const std::string& s : model_names_) model_name_ptrs_.push_back(s.c_str());
      names_instance_ = state.instance_id();
    }
    node_name_.assign(state.node_name(node));
    const std::size_t gpus = state.gpu_count(node);
    gpu_free_.resize(gpus);
    gpu_model_.resize(gpus);
    gpu_memory_.resize(gpus);
    std::uint32_t idle = 0;
    for (std::size_t g = 0; g < gpus; ++g) {
      const auto gi = static_cast<GpuIndex>(g);
      gpu_free_[g] = state.shares().free_milli_if_healthy(node, gi);
      gpu_model_[g] = state.gpu_model(node, gi);
      gpu_memory_[g] = state.shares().free_memory_if_healthy(node, gi);
      idle += gpu_free_[g] == kMilliPerGpu ? 1U : 0U;
    }
    node_ = {static_cast<std::uint32_t>(node), node_name_.c_str(), state.cpu_capacity(node), state.cpu_free(node),
             state.memory_capacity(node), state.memory_free(node), static_cast<std::uint32_t>(gpus), idle,
             gpu_free_.data(), gpu_model_.data(), gpu_memory_.data(), model_name_ptrs_.data(),
             static_cast<std::uint32_t>(model_name_ptrs_.size())};
    const TaskShape& s = request.shape;
    task_ = {s.cpu, s.memory, s.gpus, static_cast<std::int32_t>(s.gpu_milli), s.gpu_memory, request.models};
  }

  gpusched_policy_def def_;
  mutable gpusched_node_view node_{};
  mutable gpusched_task_view task_{};
  mutable std::string node_name_;
  mutable std::vector<std::int32_t> gpu_free_;
  mutable std::vector<std::uint8_t> gpu_model_;
  mutable std::vector<std::int64_t> gpu_memory_;
  mutable std::vector<std::string> model_names_;
  mutable std::vector<const char*> model_name_ptrs_;
  mutable std::uint64_t names_instance_ = 0;
};

// A C order's failure: kept, and every later call answers 0 (the cycle reports the failure).
class COrderFailure {
 public:
  std::string_view failure() const { return failure_; }
  void clear() const { failure_.clear(); }

 protected:
  bool failed() const { return !failure_.empty(); }
  void fail(std::string why) const { failure_ = std::move(why); }

 private:
  mutable std::string failure_;
};

class CJobOrder final : public scheduler::JobOrder, COrderFailure {
 public:
  CJobOrder(const gpusched_order_def& def, std::string name) : def_(def), name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::string_view failure() const override { return COrderFailure::failure(); }
  void clear_failure() const override { COrderFailure::clear(); }
  std::int64_t key(const scheduler::PendingJob& job) const override {
    if (failed()) return 0;
    std::int64_t tasks = 0, milli = 0;  // saturating at INT64_MAX, never wrapping
    for (const CompiledGroup& g : job.job.groups) {
      std::int64_t m = 0;
      if (__builtin_add_overflow(tasks, g.replicas, &tasks)) tasks = INT64_MAX;
      if (__builtin_mul_overflow(std::int64_t{g.replicas}, g.request.shape.total_gpu_milli(), &m) ||
          __builtin_add_overflow(milli, m, &milli))
        milli = INT64_MAX;
    }
    const gpusched_job_view view{job.job.name.c_str(), job.job.queue.c_str(), job.job.priority, job.restarts,
                                 job.job.submit_time, job.runtime_estimate, tasks, milli};
    std::int64_t key = 0;
    const char* message = nullptr;
    const int rc = def_.key(def_.user, &view, &key, &message);
    if (rc == GPUSCHED_SCORE_OK) return key;
    fail(fmt::format("key returned {} for job {}{}", rc, detail::shown(job.job.name), callback_message(message)));
    return 0;
  }

 private:
  gpusched_order_def def_;
  std::string name_;
};

class CVictimOrder final : public scheduler::VictimOrder, COrderFailure {
 public:
  CVictimOrder(const gpusched_order_def& def, std::string name) : def_(def), name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::string_view failure() const override { return COrderFailure::failure(); }
  void clear_failure() const override { COrderFailure::clear(); }
  std::int64_t cost(const scheduler::VictimCandidate& c) const override {
    if (failed()) return 0;
    const scheduler::RunningJob& job = *c.job;
    const gpusched_victim_view view{job.name.c_str(), job.queue.c_str(), job.priority, c.whole ? 1U : 0U,
                                    c.first_task, c.task_count, job.start_time, c.now, c.lost_milli_gpu_seconds,
                                    c.restart_milli_gpu_seconds, c.freed_milli_gpu};
    std::int64_t cost = 0;
    const char* message = nullptr;
    const int rc = def_.victim_cost(def_.user, &view, &cost, &message);
    if (rc == GPUSCHED_SCORE_OK && cost >= 0) return cost;
    fail(rc == GPUSCHED_SCORE_OK
             ? fmt::format("victim_cost returned the negative cost {} for job {}", cost, detail::shown(job.name))
             : fmt::format("victim_cost returned {} for job {}{}", rc, detail::shown(job.name), callback_message(message)));
    return 0;
  }

 private:
  gpusched_order_def def_;
  std::string name_;
};

// Calls a plugin's entry point `symbol` of type Entry: its definitions, none when it has no such
// symbol (nullopt), or an error.
template <class Def, class Entry>
Result<std::optional<std::span<const Def>>> plugin_definitions(void* lib, const char* symbol, const std::string& where) {
  auto entry = reinterpret_cast<Entry>(dlsym(lib, symbol));
  if (!entry) return std::optional<std::span<const Def>>();
  const Def* defs = nullptr;
  std::size_t count = 0;
  if (const int rc = entry(GPUSCHED_POLICY_ABI, &defs, &count); rc != 0)
    return Error{fmt::format("--plugin {}: {} refused ABI {} (returned {})", where, symbol, GPUSCHED_POLICY_ABI, rc),
                 ErrorCode::kInvalidValue, "plugin"};
  if (count > 0 && !defs)
    return Error{fmt::format("--plugin {}: {} announced {} definitions and gave none", where, symbol, count),
                 ErrorCode::kInvalidValue, "plugin"};
  return std::optional<std::span<const Def>>(std::span<const Def>(defs, count));
}

}  // namespace policy_plugin_impl

Status add_c_policy(PolicyRegistry& registry, const gpusched_policy_def& def, std::string_view source) {
  const std::string where(source);
  if (def.abi != GPUSCHED_POLICY_ABI)
    return Error{fmt::format("{}: abi {} (this gpusched reads {})", where, def.abi, GPUSCHED_POLICY_ABI),
                 ErrorCode::kInvalidValue, "abi"};
  if (!def.name || !*def.name) return Error{where + ": a policy without a name", ErrorCode::kMissingField, "name"};
  const std::string name(def.name, strnlen(def.name, 256));
  if (!def.score)
    return Error{fmt::format("{}: policy {} has no score callback", where, detail::shown(name)), ErrorCode::kMissingField,
                 "score"};
  if (def.flags & ~std::uint32_t{GPUSCHED_POLICY_TIES_SEEDED | GPUSCHED_POLICY_MEMOIZE | GPUSCHED_POLICY_THREAD_SAFE})
    return Error{fmt::format("{}: policy {}: unknown flags 0x{:x}", where, detail::shown(name), def.flags),
                 ErrorCode::kInvalidValue, "flags"};
  PolicyEntry e;
  e.name = name;
  e.summary = def.summary ? std::string(def.summary, strnlen(def.summary, 200)) : std::string("a C policy");
  e.thread_safe = (def.flags & GPUSCHED_POLICY_THREAD_SAFE) != 0;
  e.make = [def, name](const PolicyArgs& a) -> std::unique_ptr<PlacementPolicy> {
    return std::make_unique<policy_plugin_impl::CPolicy>(def, name, a.seed);
  };
  if (Status ok = registry.add(std::move(e)); !ok) return Error{where + ": " + ok.error().message, ok.error().code, "name"};
  return {};
}

Status add_c_order(scheduler::OrderRegistry& orders, const gpusched_order_def& def, std::string_view source) {
  const std::string where(source);
  if (def.abi != GPUSCHED_POLICY_ABI)
    return Error{fmt::format("{}: abi {} (this gpusched reads {})", where, def.abi, GPUSCHED_POLICY_ABI),
                 ErrorCode::kInvalidValue, "abi"};
  if (!def.name || !*def.name) return Error{where + ": an order without a name", ErrorCode::kMissingField, "name"};
  const std::string name(def.name, strnlen(def.name, 256));
  if (!def.key && !def.victim_cost)
    return Error{fmt::format("{}: order {} has neither a key nor a victim_cost callback", where, detail::shown(name)),
                 ErrorCode::kMissingField, "key"};
  if (def.flags != 0)
    return Error{fmt::format("{}: order {}: unknown flags 0x{:x}", where, detail::shown(name), def.flags),
                 ErrorCode::kInvalidValue, "flags"};
  scheduler::OrderEntry e;
  e.name = name;
  e.summary = def.summary ? std::string(def.summary, strnlen(def.summary, 200)) : std::string("a C order");
  if (def.key)
    e.job_order = [def, name]() -> std::unique_ptr<scheduler::JobOrder> {
      return std::make_unique<policy_plugin_impl::CJobOrder>(def, name);
    };
  if (def.victim_cost)
    e.victim_order = [def, name]() -> std::unique_ptr<scheduler::VictimOrder> {
      return std::make_unique<policy_plugin_impl::CVictimOrder>(def, name);
    };
  if (Status ok = orders.add(std::move(e)); !ok) return Error{where + ": " + ok.error().message, ok.error().code, "name"};
  return {};
}

Status load_policy_plugin(PolicyRegistry& registry, const std::string& path, scheduler::OrderRegistry* orders) {
  using policy_plugin_impl::plugin_definitions;
  const std::string where = detail::shown(path, 200);
  // A path without a slash would be searched for in the library path: a plugin is a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return Error{fmt::format("--plugin {}: cannot load it{}", where, policy_plugin_impl::callback_message(why)),
                 ErrorCode::kIo, "plugin"};
  }
  auto policies = plugin_definitions<gpusched_policy_def, gpusched_plugin_entry_fn>(lib, GPUSCHED_PLUGIN_ENTRY, where);
  if (!policies) return policies.error();
  auto order_defs =
      plugin_definitions<gpusched_order_def, gpusched_plugin_orders_fn>(lib, GPUSCHED_PLUGIN_ORDERS_ENTRY, where);
  if (!order_defs) return order_defs.error();
  if (!*policies && !*order_defs)
    return Error{fmt::format("--plugin {}: no entry point {} or {} (docs/policies.md)", where, GPUSCHED_PLUGIN_ENTRY,
                             GPUSCHED_PLUGIN_ORDERS_ENTRY),
                 ErrorCode::kMissingField, "plugin"};
  if (!orders && !*policies)
    return Error{fmt::format("--plugin {}: it exports orders only ({}), and this command takes placement policies", where,
                             GPUSCHED_PLUGIN_ORDERS_ENTRY),
                 ErrorCode::kInvalidValue, "plugin"};
  PolicyRegistry trial = registry;  // all or none
  if (*policies)
    for (std::size_t i = 0; i < (*policies)->size(); ++i)
      if (Status ok = add_c_policy(trial, (**policies)[i], fmt::format("--plugin {}: policy {}", where, i)); !ok)
        return ok;
  if (orders && *order_defs) {
    scheduler::OrderRegistry trial_orders = *orders;
    for (std::size_t i = 0; i < (*order_defs)->size(); ++i)
      if (Status ok = add_c_order(trial_orders, (**order_defs)[i], fmt::format("--plugin {}: order {}", where, i)); !ok)
        return ok;
    *orders = std::move(trial_orders);
  }
  registry = std::move(trial);
  return {};
}

}  // namespace gpusched::io
