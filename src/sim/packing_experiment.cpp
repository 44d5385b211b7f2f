#include "gpusched/sim/packing_experiment.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "gpusched/sim/lp_bound.hpp"

namespace gpusched::sim {

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

Result<TraceWorkload> make_trace_workload(const std::vector<io::TraceNode>& nodes,
                                          const std::vector<io::TracePod>& pods, std::string name) {
  // An empty list would "replay" nothing and report percentages of zero as if they were results.
  // Errors name no file: the caller knows which file the field ("pods" or "nodes") came from.
  if (pods.empty()) return Error{"the pod list has no pods", ErrorCode::kMissingField, "pods"};
  const Cluster cluster = io::to_cluster(nodes);
  auto state = ClusterState::build(cluster, GpuModelRegistry::builtin());
  if (!state) return Error{state.error().message, state.error().code, "nodes"};  // the node list's fault
  TraceWorkload w{std::move(state.value()), {}, {}, 0, std::move(name)};
  w.capacity = w.initial.shares().total_capacity();
  if (w.capacity == 0)
    return Error{fmt::format("the node list has no GPUs ({} nodes)", nodes.size()), ErrorCode::kMissingField, "nodes"};
  w.pods.reserve(pods.size());
  for (const io::TracePod& p : pods) {
    std::vector<std::string_view> models(p.gpu_spec.begin(), p.gpu_spec.end());
    auto req = w.initial.compile(p.shape(), models);
    if (!req) return Error{fmt::format("pod {}: {}", p.name, req.error().message), req.error().code, "pods"};
    w.pods.push_back(std::move(req.value()));
  }
  w.target = TargetWorkload::from_requests(w.pods);
  // FGD-OC's share prices: the cutting-stock LP over every shared request of the list.
  std::map<MilliGpu, std::int64_t> shares;
  for (const TaskRequest& r : w.pods)
    if (r.shape.shares_gpu()) ++shares[r.shape.gpu_milli];
  std::vector<ItemDemand> demand;
  for (const auto& [size, count] : shares) demand.push_back({size, count});
  auto prices = cutting_stock_prices(demand);
  if (!prices) return Error{fmt::format("share prices: {}", prices.error().message)};
  w.target.share_prices = std::move(prices.value());
  return w;
}

std::vector<std::uint32_t> arrival_order(const TraceWorkload& w, std::uint64_t seed, double target_ratio) {
  std::vector<std::uint32_t> order(w.pods.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  SplitMix64 rng{seed};
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  if (w.pods.empty()) return order;
  std::int64_t requested = 0;
  for (const auto& p : w.pods) requested += p.shape.total_gpu_milli();
  const auto target = static_cast<std::int64_t>(std::ceil(target_ratio * static_cast<double>(w.capacity)));
  // Resample only when some pod asks for a GPU (else the loop could never reach the target).
  if (requested == 0) return order;
  while (requested < target) {
    const auto i = static_cast<std::uint32_t>(rng.below(w.pods.size()));
    order.push_back(i);
    requested += w.pods[i].shape.total_gpu_milli();
  }
  return order;
}

std::vector<ItemDemand> arrived_gpu_demand(const TraceWorkload& w, const std::vector<std::uint32_t>& order) {
  std::map<MilliGpu, std::int64_t> sizes;
  std::int64_t arrived = 0;
  for (const std::uint32_t i : order) {
    const TaskShape& s = w.pods[i].shape;
    if (s.needs_gpu()) sizes[s.gpu_milli] += s.gpus;
    arrived += s.total_gpu_milli();
    if (arrived >= w.capacity) break;
  }
  std::vector<ItemDemand> demand;
  for (const auto& [size, count] : sizes) demand.push_back({size, count});
  return demand;
}

RunResult run_once(const TraceWorkload& w, const std::vector<std::uint32_t>& order, PlacementPolicy& policy,
                   const std::vector<double>& points, std::uint64_t seed) {
  ClusterState state = w.initial;
  policy.attach(state);
  RunResult r;
  r.policy = std::string(policy.name());
  r.seed = seed;
  r.curve.assign(points.size(), 0.0);
  const double cap = static_cast<double>(w.capacity);
  std::size_t next_point = 0;
  std::int64_t arrived = 0;
  bool have100 = false;
  TaskAssignment a;
  auto unallocated = [&] {
    return cap > 0 ? 100.0 * static_cast<double>(state.shares().total_free()) / cap : 0.0;
  };
  for (const std::uint32_t i : order) {
    const TaskRequest& req = w.pods[i];
    arrived += req.shape.total_gpu_milli();
    ++r.pods_arrived;
    const NodeId n = policy.select(state, req);
    bool placed = false;
    if (n != kNoNode && policy.gpu_picker().pick(state, n, req, a) && state.reserve(req, a)) {
      state.commit();  // no rollback in a replay: keep the journal empty
      policy.observe(state, req, a);
      placed = true;
    }
    if (!policy.failure().empty()) {
      r.failure = std::string(policy.failure());
      return r;
    }
    placed ? ++r.pods_placed : ++r.pods_failed;
    const double pct = cap > 0 ? 100.0 * static_cast<double>(arrived) / cap : 0.0;
    while (next_point < points.size() && pct >= points[next_point]) r.curve[next_point++] = unallocated();
    if (!have100 && pct >= 100.0) {
      r.unallocated_pct_at_100 = unallocated();
      have100 = true;
    }
  }
  // Points beyond the arrived total keep the final value.
  while (next_point < points.size()) r.curve[next_point++] = unallocated();
  if (!have100) r.unallocated_pct_at_100 = unallocated();
  return r;
}

namespace {

// The LP bound at 100 % for one arrival order: the pods up to and including the one that makes the
// arrived request reach capacity.
Result<double> lower_bound_at_100(const TraceWorkload& w, const std::vector<std::uint32_t>& order) {
  const std::int64_t gpus = w.capacity / kMilliPerGpu;
  auto lp = cutting_stock_bound(arrived_gpu_demand(w, order), gpus);
  if (!lp) return lp.error();
  const double cap = static_cast<double>(w.capacity);
  return std::max(0.0, 100.0 * (cap - lp->max_allocatable_milli) / cap);
}

// Per policy: its mean curve, its results at 100 % over the seeds, and its difference to the reference
// policy paired by seed.
void summarise(ExperimentReport& rep, const std::vector<std::string>& names, const ExperimentConfig& config) {
  const std::size_t ns = config.seeds.size();
  std::vector<double> ref;
  for (std::size_t p = 0; p < names.size(); ++p) {
    PolicySummary sum;
    sum.policy = rep.runs[p * ns].policy;
    sum.mean_curve.assign(rep.curve_points.size(), 0.0);
    for (std::size_t s = 0; s < ns; ++s) {
      const RunResult& r = rep.runs[p * ns + s];
      sum.per_seed_at_100.push_back(r.unallocated_pct_at_100);
      for (std::size_t i = 0; i < r.curve.size(); ++i) sum.mean_curve[i] += r.curve[i] / static_cast<double>(ns);
      sum.mean_placed += static_cast<double>(r.pods_placed) / static_cast<double>(ns);
      sum.mean_failed += static_cast<double>(r.pods_failed) / static_cast<double>(ns);
    }
    sum.mean_at_100 = mean_of(sum.per_seed_at_100);
    sum.stddev_at_100 = stddev_of(sum.per_seed_at_100);
    if (sum.policy == config.reference_policy) ref = sum.per_seed_at_100;
    rep.policies.push_back(std::move(sum));
  }
  if (!ref.empty())
    for (auto& sum : rep.policies) {
      if (sum.policy == config.reference_policy) continue;
      std::vector<double> d(ns);
      for (std::size_t s = 0; s < ns; ++s) d[s] = sum.per_seed_at_100[s] - ref[s];
      sum.paired_diff_mean = mean_of(d);
      sum.paired_diff_stderr = stddev_of(d) / std::sqrt(static_cast<double>(ns));
    }
}

// What the report says of the experiment before it runs: the trace, its size, the seeds, the target
// and the curve's points (50 % to 130 % of the capacity unless given).
ExperimentReport report_header(const TraceWorkload& w, const ExperimentConfig& config) {
  ExperimentReport rep;
  rep.trace = w.name;
  rep.nodes = w.initial.node_count();
  rep.gpus = w.initial.total_gpu_count();
  rep.pods = w.pods.size();
  rep.seeds = config.seeds;
  rep.target_ratio = config.target_ratio;
  rep.reference_policy = config.reference_policy;
  rep.curve_points = config.curve_points;
  if (rep.curve_points.empty())
    for (int x = 50; x <= 130; ++x) rep.curve_points.push_back(x);
  std::sort(rep.curve_points.begin(), rep.curve_points.end());
  return rep;
}

}  // namespace

Result<ExperimentReport> run_experiment(const TraceWorkload& w, const ExperimentConfig& config) {
  const auto t0 = std::chrono::steady_clock::now();
  if (config.seeds.empty()) return Error{"seeds: empty list"};
  if (!(config.target_ratio > 0) || config.target_ratio > 100)
    return Error{fmt::format("target_ratio: expected a value in (0, 100], got {}", config.target_ratio)};
  ExperimentReport rep = report_header(w, config);

  std::vector<std::string> names = config.policies;
  if (names.empty())
    for (auto n : trace_policy_names()) names.emplace_back(n);
  const PolicyRegistry builtins = config.registry ? PolicyRegistry{} : PolicyRegistry::with_builtins();
  const PolicyRegistry& registry = config.registry ? *config.registry : builtins;
  const PolicyArgs probe{0, &w.target};
  bool serial = false;
  for (const auto& n : names) {
    if (auto p = registry.make(n, probe, PolicySet::kTrace); !p) return Error{"policies: " + p.error().message};
    serial = serial || !registry.find(n, PolicySet::kTrace)->thread_safe;
  }

  std::vector<std::vector<std::uint32_t>> orders;
  for (auto seed : config.seeds) orders.push_back(arrival_order(w, seed, config.target_ratio));

  // Jobs: (policy, seed) runs, plus one LP per seed.
  const std::size_t runs = names.size() * config.seeds.size();
  const std::size_t lps = config.lower_bound ? config.seeds.size() : 0;
  rep.runs.resize(runs);
  std::vector<double> lp(lps, 0.0);
  std::vector<std::string> lp_error(lps);
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mu;
  auto worker = [&] {
    while (true) {
      const std::size_t j = next.fetch_add(1);
      if (j >= runs + lps) return;
      std::string label;
      std::uint64_t seed = 0;
      if (j < lps) {
        seed = config.seeds[j];
        label = "lower-bound";
        auto b = lower_bound_at_100(w, orders[j]);
        if (b)
          lp[j] = *b;
        else
          lp_error[j] = b.error().message;
      } else {
        const std::size_t k = j - lps;
        const std::size_t p = k / config.seeds.size(), s = k % config.seeds.size();
        seed = config.seeds[s];
        auto policy = std::move(registry.make(names[p], {seed, &w.target}, PolicySet::kTrace).value());
        rep.runs[k] = run_once(w, orders[s], *policy, rep.curve_points, seed);
        label = rep.runs[k].policy;
      }
      std::lock_guard<std::mutex> lock(mu);
      ++done;
      if (config.progress) config.progress(done, runs + lps, label, seed);
    }
  };
  unsigned threads = config.threads ? config.threads : std::max(1U, std::thread::hardware_concurrency());
  threads = serial ? 1U : static_cast<unsigned>(std::min<std::size_t>(threads, runs + lps));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const auto& e : lp_error)
    if (!e.empty()) return Error{fmt::format("lower bound: {}", e)};
  for (const RunResult& r : rep.runs)
    if (!r.failure.empty())
      return Error{fmt::format("policy \"{}\" failed (seed {}): {}", r.policy, r.seed, r.failure), ErrorCode::kInvalidValue,
                   "policies"};

  rep.lower_bound_per_seed = lp;
  rep.lower_bound_mean = mean_of(lp);
  rep.lower_bound_stddev = stddev_of(lp);

  summarise(rep, names, config);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace gpusched::sim
