// Where a policy's unallocated GPU share at 100 % arrived goes, against two LP bounds (default
// Alibaba trace, bench-packing's protocol, seeds 42-51). Not a timing program: the measurement behind
// docs/bench-packing.md, "How low a placement policy can go".
//
//   ./build/benchmarks/gpusched_bench_packing_gap [POLICY [SIZE]]     (defaults: FGD-OC 810)
//
// Per seed: the policy's unallocated %, the LP bound of bench-packing (sim/lp_bound.hpp: the LP may
// leave any arrived request out), and the same LP with every arrived share of SIZE allocated — the
// 810-milli requests leave 190 that only the trace's rare small shares fill, and the LP's optimum
// drops about one in five of them for whole-GPU requests. A policy that places every request that
// fits cannot do that: that LP (an estimate), and a strict floor below it that credits the forced
// requests' leftovers to every small share that fits there, bound it, up to the few SIZE requests that
// arrive once no GPU has room. Then the free share at 100 % by what shares the GPU holds (its "pattern").
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpusched/io/alibaba_trace.hpp"
#include "gpusched/sim/lp_bound.hpp"
#include "gpusched/sim/packing_experiment.hpp"

using namespace gpusched;

namespace {

struct SeedResult {
  double unallocated = 0, lp = 0, lp_forced = 0, lp_forced_floor = 0;
  std::int64_t forced_arrived = 0, forced_failed = 0;
};

// The two LP bounds over the requests that arrived up to 100 %.
void bounds(const sim::TraceWorkload& w, const std::vector<std::uint32_t>& order, MilliGpu forced, SeedResult& out) {
  const std::vector<sim::ItemDemand> all = sim::arrived_gpu_demand(w, order);
  std::vector<sim::ItemDemand> rest;
  for (const sim::ItemDemand& d : all) {
    if (d.size == forced) out.forced_arrived = d.count;
    else rest.push_back(d);
  }
  const std::int64_t gpus = w.capacity / kMilliPerGpu;
  const double cap = static_cast<double>(w.capacity);
  out.lp = 100.0 * (cap - sim::cutting_stock_bound(all, gpus).value().max_allocatable_milli) / cap;
  // Each forced request on a GPU of its own; the rest packed into the other GPUs (the forced GPUs'
  // leftovers, 1000 - SIZE, stay free: an estimate; the floor below credits them to the small shares).
  const double rest_milli = sim::cutting_stock_bound(rest, gpus - out.forced_arrived).value().max_allocatable_milli;
  out.lp_forced = 100.0 * (cap - static_cast<double>(out.forced_arrived * forced) - rest_milli) / cap;
  // A strict floor: as if every share that fits beside a forced one filled those leftovers too.
  std::int64_t riders = 0;
  for (const sim::ItemDemand& d : all)
    if (d.size + forced <= kMilliPerGpu) riders += d.size * d.count;
  const std::int64_t room = out.forced_arrived * (kMilliPerGpu - forced);
  out.lp_forced_floor = out.lp_forced - 100.0 * static_cast<double>(std::min(riders, room)) / cap;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string policy_name = argc > 1 ? argv[1] : "FGD-OC";
  const MilliGpu forced = argc > 2 ? static_cast<MilliGpu>(std::stoi(argv[2])) : 810;
  const std::string dir = std::string(GPUSCHED_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";
  auto nodes = io::read_alibaba_nodes(dir + "openb_node_list_gpu_node.csv");
  auto pods = io::read_alibaba_pods(dir + "openb_pod_list_default.csv");
  if (!nodes || !pods) {
    std::fprintf(stderr, "cannot read the trace under %s\n", dir.c_str());
    return 2;
  }
  const sim::TraceWorkload w = sim::make_trace_workload(*nodes, *pods, "default").value();
  const PolicyRegistry registry = PolicyRegistry::with_builtins();
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> patterns;  // "810+160" -> (GPUs, free milli)
  SeedResult mean;
  const int seeds = 10;
  for (std::uint64_t seed = 42; seed < 42 + seeds; ++seed) {
    const auto order = sim::arrival_order(w, seed, 1.3);
    auto made = registry.make(policy_name, {seed, &w.target}, PolicySet::kTrace);
    if (!made) {
      std::fprintf(stderr, "%s\n", made.error().message.c_str());
      return 2;
    }
    PlacementPolicy& policy = **made;
    ClusterState state = w.initial;
    policy.attach(state);
    std::map<std::pair<NodeId, GpuIndex>, std::vector<MilliGpu>> shares;
    SeedResult r;
    std::int64_t arrived = 0;
    TaskAssignment a;
    for (const std::uint32_t i : order) {
      const TaskRequest& req = w.pods[i];
      arrived += req.shape.total_gpu_milli();
      const NodeId n = policy.select(state, req);
      if (n != kNoNode && policy.gpu_picker().pick(state, n, req, a) && state.reserve(req, a)) {
        state.commit();
        policy.observe(state, req, a);
        if (req.shape.shares_gpu()) shares[{n, a.gpus[0]}].push_back(req.shape.gpu_milli);
      } else if (req.shape.shares_gpu() && req.shape.gpu_milli == forced) {
        ++r.forced_failed;
      }
      if (arrived >= w.capacity) break;
    }
    r.unallocated = 100.0 * static_cast<double>(state.shares().total_free()) / static_cast<double>(w.capacity);
    bounds(w, order, forced, r);
    // The requests of SIZE this run failed (no GPU had room any more) are not on a GPU of their own:
    // the floor of a policy that fails as many is lower by their leftovers.
    r.lp_forced_floor -= 100.0 * static_cast<double>(r.forced_failed * (kMilliPerGpu - forced)) /
                         static_cast<double>(w.capacity);
    for (auto& [gpu, on] : shares) {
      std::sort(on.begin(), on.end(), std::greater<>());
      std::string key;
      for (MilliGpu s : on) {
        if (!key.empty()) key += '+';
        key += std::to_string(s);
      }
      patterns[key].first += 1;
      patterns[key].second += state.shares().free_milli_if_healthy(gpu.first, gpu.second);
    }
    std::printf("seed %2lu  %s %.3f %%  LP %.3f %%  every %d placed: LP %.3f %%, floor %.3f %%  (%ld of %ld failed)\n",
                static_cast<unsigned long>(seed), policy_name.c_str(), r.unallocated, r.lp, static_cast<int>(forced),
                r.lp_forced, r.lp_forced_floor, static_cast<long>(r.forced_failed), static_cast<long>(r.forced_arrived));
    mean.unallocated += r.unallocated / seeds;
    mean.lp += r.lp / seeds;
    mean.lp_forced += r.lp_forced / seeds;
    mean.lp_forced_floor += r.lp_forced_floor / seeds;
  }
  std::printf("mean     %s %.3f %%  LP %.3f %%  every %d placed: LP %.3f %%, floor %.3f %%\n", policy_name.c_str(),
              mean.unallocated, mean.lp, static_cast<int>(forced), mean.lp_forced, mean.lp_forced_floor);
  std::vector<std::pair<std::int64_t, std::string>> by_free;
  for (const auto& [key, v] : patterns) by_free.emplace_back(v.second, key);
  std::sort(by_free.rbegin(), by_free.rend());
  std::printf("free share at 100 %% by GPU pattern (mean per seed):\n");
  for (std::size_t i = 0; i < by_free.size() && i < 10; ++i)
    std::printf("  %-16s %6.1f GPUs  %.3f %%\n", by_free[i].second.c_str(),
                static_cast<double>(patterns[by_free[i].second].first) / seeds,
                100.0 * static_cast<double>(by_free[i].first) / static_cast<double>(w.capacity) / seeds);
}
