// gpusched/fairness/detail/admission_rule_impl.hpp — the definitions behind
// gpusched/fairness/admission_rule.hpp.
//
// Included at the end of admission_rule.hpp (header-only use), or, under
// GPUSCHED_SEPARATE_COMPILATION, once per program by gpusched/compiled.hpp (core/config.hpp).
#pragma once

#include "gpusched/core/config.hpp"
#include "gpusched/fairness/admission_rule.hpp"

#include <cmath>
#include <cstdio>

#include "gpusched/core/quantity.hpp"
#include "gpusched/fairness/detail/text.hpp"

namespace gpusched::fairness {

GPUSCHED_DECL std::string ResourceSpace::name(Eigen::Index dim) const {
  if (dim == kCpu) return "cpu";
  if (dim == kMemory) return "memory";
  return detail::fairness_text("gpu:", gpu_models[static_cast<std::size_t>(dim - 2)]);
}

GPUSCHED_DECL std::optional<Eigen::Index> ResourceSpace::gpu_dim(std::string_view model) const {
  for (std::size_t k = 0; k < gpu_models.size(); ++k)
    if (gpu_models[k] == model) return static_cast<Eigen::Index>(2 + k);
  return std::nullopt;
}

namespace detail {
// A milli-unit amount in whole units: "4", or "4.500" (three decimals, as the CLI's tables print).
GPUSCHED_DECL std::string fairness_format_milli(std::int64_t v) {
  if (v % 1000 == 0) return fairness_text(v / 1000);
  char buffer[48];
  const int n = std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(v) / 1000.0);
  return std::string(buffer, static_cast<std::size_t>(n > 0 ? n : 0));
}
}  // namespace detail

GPUSCHED_DECL std::string ResourceSpace::format(Eigen::Index dim, std::int64_t amount) const {
  if (dim == kMemory) return format_bytes(amount);
  return detail::fairness_format_milli(amount);  // cores or GPUs
}

namespace detail {
// Names, weights and flavors of every queue (before the tree is linked).
template <class Index>
Status check_queue_fields(const ResourceSpace& space, std::span<const QueueConfig> queues, Index& index) {
  for (std::size_t q = 0; q < queues.size(); ++q) {
    const QueueConfig& queue = queues[q];
    if (queue.name.empty()) return fairness_error(ErrorCode::kMissingField, fairness_text("queues[", q, "].name: must not be empty"));
    if (!index.emplace(queue.name, q).second)
      return fairness_error(ErrorCode::kDuplicate, fairness_text("queues[", q, "].name: duplicate queue name \"", queue.name, "\""));
    if (!std::isfinite(queue.weight) || queue.weight <= 0)
      return fairness_error(ErrorCode::kInvalidValue, fairness_text("queues[", q, "] (", queue.name, ").weight: expected a positive number, got ", queue.weight));
    for (const auto& model : queue.flavor_order)
      if (!space.gpu_dim(model))
        return fairness_error(ErrorCode::kUnknownName, fairness_text("queues[", q, "] (", queue.name, ").flavors: unknown GPU model \"", model, "\" (not in the cluster)"));
  }
  return {};
}

GPUSCHED_DECL Error internal_queue_error(std::size_t q, const QueueConfig& queue) {
  return fairness_error(ErrorCode::kInconsistent, fairness_text("queues[", q, "] (", queue.name, "): a queue with child queues takes no quota, cohort or usage "
                        "(put them on its leaf queues)"));
}
}  // namespace detail

GPUSCHED_DECL Result<QueueTree> QueueTree::build(const ResourceSpace& space, std::span<const QueueConfig> queues) {
  QueueTree t;
  if (Status st = detail::check_queue_fields(space, queues, t.index_); !st) return st.error();
  t.parent_.assign(queues.size(), -1);
  t.leaf_.assign(queues.size(), 1);
  for (std::size_t q = 0; q < queues.size(); ++q) {
    if (queues[q].parent.empty()) continue;
    auto it = t.index_.find(queues[q].parent);
    if (it == t.index_.end())
      return detail::fairness_error(ErrorCode::kUnknownName, detail::fairness_text("queues[", q, "] (", queues[q].name, ").parent: no queue named \"", queues[q].parent, "\""));
    t.parent_[q] = static_cast<std::int64_t>(it->second);
    t.leaf_[it->second] = 0;
  }
  // No cycle: a walk up from every queue reaches the root, each queue's depth known on the way.
  std::vector<std::int64_t> depth(queues.size(), -1);  // -2: on the walk being made
  std::vector<std::size_t> chain;
  for (std::size_t q = 0; q < queues.size(); ++q) {
    chain.clear();
    std::size_t at = q;
    while (depth[at] == -1) {
      depth[at] = -2;
      chain.push_back(at);
      if (t.parent_[at] < 0) break;
      at = static_cast<std::size_t>(t.parent_[at]);
      if (depth[at] == -2)
        return detail::fairness_error(ErrorCode::kInconsistent, detail::fairness_text("queues[", q, "] (", queues[q].name, ").parent: the queue tree has a cycle through \"", queues[at].name, "\""));
    }
    std::int64_t d = depth[at] >= 0 ? depth[at] + 1 : 0;  // (-2: the walk's own top reached the root)
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) depth[*it] = d++;
  }
  // Parents before children, and siblings in the order listed: H-DRF breaks equal shares by creation
  // order, so this is what makes ties go to the queue listed first.
  // A counting sort by depth (stable: index order within a depth).
  std::vector<std::size_t> start;
  for (const std::int64_t d : depth) {
    if (static_cast<std::size_t>(d) + 2 > start.size()) start.resize(static_cast<std::size_t>(d) + 2, 0);
    ++start[static_cast<std::size_t>(d) + 1];
  }
  for (std::size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
  t.topo_.resize(queues.size());
  for (std::size_t q = 0; q < queues.size(); ++q) t.topo_[start[static_cast<std::size_t>(depth[q])]++] = q;
  for (std::size_t q = 0; q < queues.size(); ++q) {
    const QueueConfig& queue = queues[q];
    if (!t.leaf_[q] && (queue.nominal.size() != 0 || !queue.cohort.empty()))
      return detail::internal_queue_error(q, queue);
  }
  return t;
}

GPUSCHED_DECL std::vector<Eigen::Index> gpu_dims_by_model(const ResourceSpace& space, const GpuModelRegistry& registry) {
  std::vector<Eigen::Index> out(registry.size(), -1);
  for (GpuModelId id = 0; id < registry.size(); ++id)
    if (const auto d = space.gpu_dim(registry.model(id).name)) out[id] = *d;
  return out;
}

GPUSCHED_DECL std::vector<Eigen::Index> flavor_dims(const ResourceSpace& space, const QueueConfig& queue) {
  std::vector<Eigen::Index> order;
  if (!queue.flavor_order.empty()) {
    for (const auto& model : queue.flavor_order)
      if (const auto d = space.gpu_dim(model)) order.push_back(*d);
  } else {
    for (Eigen::Index d = 2; d < space.size(); ++d) order.push_back(d);
  }
  return order;
}

GPUSCHED_DECL std::optional<std::size_t> QueueTree::find(std::string_view name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

GPUSCHED_CTOR_DECL QueueOrder::QueueOrder(const QueueTree& tree, std::span<const QueueConfig> queues, const Amounts& capacity,
                                          const Amounts& free, std::span<const Amounts> usage, Amounts saturation_threshold)
    : hdrf_(capacity, std::move(saturation_threshold)) {
  const std::size_t nq = tree.size();
  node_of_queue_.assign(nq, 0);
  queue_of_node_.assign(1, SIZE_MAX);
  for (const std::size_t q : tree.parents_first()) {
    const std::int64_t p = tree.parent(q);
    const auto at = p < 0 ? HdrfScheduler::kRoot : node_of_queue_[static_cast<std::size_t>(p)];
    node_of_queue_[q] = hdrf_.add_node(at, queues[q].weight).value();  // (validated by the tree)
    queue_of_node_.resize(node_of_queue_[q] + 1, SIZE_MAX);
    queue_of_node_[node_of_queue_[q]] = q;
  }
  Amounts attributed = Amounts::Zero(capacity.size());
  for (std::size_t q = 0; q < nq; ++q)
    if (tree.leaf(q)) attributed += usage[q];
  const Amounts other = (capacity - free - attributed).cwiseMax(0);
  const auto hidden = hdrf_.add_node(HdrfScheduler::kRoot, 1.0).value();
  queue_of_node_.resize(hidden + 1, SIZE_MAX);
  hdrf_.block(hidden);
  if (!other.isZero()) hdrf_.allocate(hidden, other);
  for (std::size_t q = 0; q < nq; ++q)
    if (tree.leaf(q) && !usage[q].isZero()) hdrf_.allocate(node_of_queue_[q], usage[q]);
}

GPUSCHED_DECL std::optional<std::size_t> QueueOrder::pick() const {
  // H-DRF picks leaves only: every leaf is a leaf queue's but the blocked one of other usage.
  const std::optional<HdrfScheduler::NodeId> node = hdrf_.pick();
  if (!node) return std::nullopt;
  return queue_of_node_[*node];
}

GPUSCHED_DECL void QueueOrder::update(std::size_t q, const Amounts* charged, std::optional<std::uint8_t> head_tier) {
  HdrfScheduler::LeafChange change;
  change.allocate = charged;
  if (head_tier) change.tier = *head_tier;
  else change.blocked = true;
  hdrf_.apply(node_of_queue_[q], change);
}

GPUSCHED_DECL void QueueOrder::block(std::size_t q) { hdrf_.block(node_of_queue_[q]); }
GPUSCHED_DECL void QueueOrder::allocate(std::size_t q, const Amounts& a) { hdrf_.allocate(node_of_queue_[q], a); }
GPUSCHED_DECL void QueueOrder::release(std::size_t q, const Amounts& a) { hdrf_.release(node_of_queue_[q], a); }
GPUSCHED_DECL double QueueOrder::share(std::size_t q) const { return hdrf_.share(node_of_queue_[q]); }

}  // namespace gpusched::fairness
