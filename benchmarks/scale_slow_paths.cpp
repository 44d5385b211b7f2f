// The two slow paths of issue 15 ("65,535 GPUs on one node and a 20,000-deep queue tree take
// quadratic time"), each measured at N, 2N and 4N so that the ratio per doubling shows (about 2 when
// the work is linear in the size, about 4 when quadratic):
//
//   BM_HugeNodeBuild/G         the state of one node with G GPUs (G up to 65,535, the model's bound:
//                              GpuIndex is 16 bits, ClusterState::build refuses more)
//   BM_HugeNodeFill/G/policy   that node filled by jobs of 1, 2, 3, ..., 8 GPUs (cycling) with one
//                              policy (select + GPU pick + reserve), then every job released: the number
//                              of decisions grows with G, so constant per decision = ratio 2
//   BM_HugeNodeFillShared/G/P  the node filled with shared tasks of 0.5, 0.25, 0.3 GPU, then released
//                              (best-fit, spread, FGD; G = 4,096 / 16,384 / 65,535, two doublings a
//                              step: before the share index it was O(G) per decision)
//   BM_HugeNodeFillSharedMixed/G/P  the same on a node of two models (every other GPU an A100), the
//                              0.3 task allowing H100s only (best-fit, spread, FGD)
//   BM_HugeNodeFillSharedMemory/G/P  the same on one model with GPU memory asked (40, 20, 30 GiB)
//   BM_DeepQueueBuild/D        a chain of D queues (each the parent of the next; the jobs in the leaf),
//                              FairSharePlanner::build
//   BM_DeepQueuePlan/D         its admission plan of 1,000 jobs
//   BM_DeepQueueRead/D         the same chain read from a queues document (io::read_queues_json)
//   BM_DeepHdrfBuild/D         HdrfScheduler: the chain of D nodes added one by one
//   BM_DeepHdrfPick/D          one pick + allocate + release on it (each walks the D levels)
//
// Every argument runs in the default run (a whole run takes well under a minute).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpusched/fairness/admission.hpp"
#include "gpusched/fairness/hdrf.hpp"
#include "gpusched/gpusched.hpp"
#include "gpusched/io/fairshare_json.hpp"
#include "gpusched/packing/fgd.hpp"

namespace {

using namespace gpusched;

// --- one node with G GPUs ---------------------------------------------------------------------------

// `mixed`: every other GPU an A100 (two models on one node).
Cluster huge_node_cluster(std::size_t gpus, bool mixed = false) {
  NodeSpec n;
  n.name = "huge";
  n.cpu = static_cast<MilliCpu>(gpus) * 2000;
  n.memory = static_cast<Bytes>(gpus) * 2 * kGiB;
  n.gpus.assign(gpus, GpuSpec{"H100-80GB"});
  if (mixed)
    for (std::size_t g = 1; g < gpus; g += 2) n.gpus[g] = GpuSpec{"A100-80GB"};
  return Cluster({n});
}

const ClusterState& huge_node_state(std::size_t gpus, bool mixed = false) {
  static std::map<std::pair<std::size_t, bool>, ClusterState> cache;
  auto it = cache.find({gpus, mixed});
  if (it == cache.end())
    it = cache.emplace(std::pair{gpus, mixed}, *ClusterState::build(huge_node_cluster(gpus, mixed), GpuModelRegistry::builtin())).first;
  return it->second;
}

void BM_HugeNodeBuild(benchmark::State& st) {
  const Cluster c = huge_node_cluster(static_cast<std::size_t>(st.range(0)));
  const auto registry = GpuModelRegistry::builtin();
  for (auto _ : st) {
    auto s = ClusterState::build(c, registry);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_HugeNodeBuild)->Arg(16384)->Arg(32768)->Arg(65535)->Unit(benchmark::kMillisecond);

std::vector<TaskRequest> one_to_eight(const ClusterState& s) {
  std::vector<TaskRequest> out;
  for (GpuCount g = 1; g <= 8; ++g) out.push_back(*s.compile(TaskShape{g * 1000, g * kGiB, g, 1000, 0}));
  return out;
}

std::unique_ptr<PlacementPolicy> policy_by_name(std::string_view name, const std::vector<TaskRequest>& reqs) {
  if (name == "FGD" || name == "FGD-OC") return make_trace_policy(name, 42, TargetWorkload::from_requests(reqs));
  return make_policy(name);
}

// Each iteration: the requests in turn (cycling) until one no longer places, then all released.
// Returns the tasks placed by the last iteration.
std::size_t fill_and_release(benchmark::State& st, ClusterState& s, const std::vector<TaskRequest>& reqs,
                             const char* name) {
  auto policy = policy_by_name(name, reqs);
  auto* trace = dynamic_cast<TracePolicy*>(policy.get());
  std::vector<TaskAssignment> placed;
  for (auto _ : st) {
    placed.clear();
    if (trace) trace->attach(s);
    for (std::size_t i = 0;; ++i) {
      const TaskRequest& r = reqs[i % reqs.size()];
      const NodeId n = policy->select(s, r);
      if (n == kNoNode) break;
      TaskAssignment a;
      if (!policy->gpu_picker().pick(s, n, r, a)) break;
      if (!s.reserve(r, a)) break;
      if (trace) trace->observe(s, r, a);
      placed.push_back(std::move(a));
    }
    s.commit();
    for (const auto& a : placed) benchmark::DoNotOptimize(s.release(a).ok());
  }
  return placed.size();
}

// Fill the node with jobs of 1..8 GPUs, then release them all; the counter is the jobs placed.
void huge_node_fill(benchmark::State& st, const char* name) {
  ClusterState s = huge_node_state(static_cast<std::size_t>(st.range(0)));
  st.counters["jobs"] = static_cast<double>(fill_and_release(st, s, one_to_eight(s), name));
}

// Shared (fractional) tasks: shares of 0.5, 0.25 and 0.3 GPU (cycling) until nothing fits, then all
// released. check_fit, the shared GPU pick and the best-fit / spread / FGD shared scores read every GPU
// of the node before the state's share index (detail::ClusterIndex::least_share_gpu, most_free_share).
void huge_node_fill_shared(benchmark::State& st, const char* name) {
  ClusterState s = huge_node_state(static_cast<std::size_t>(st.range(0)));
  std::vector<TaskRequest> reqs;
  for (MilliGpu m : {500, 250, 300}) reqs.push_back(*s.compile(TaskShape{1000, kGiB, 1, m, 0}));
  st.counters["tasks"] = static_cast<double>(fill_and_release(st, s, reqs, name));
}

// The same on a node of two models (every other GPU an A100), with a task allowing only H100s in
// the cycle: the share index orders each model's GPUs apart, so this is O(log G) per decision too.
void huge_node_fill_shared_mixed(benchmark::State& st, const char* name) {
  ClusterState s = huge_node_state(static_cast<std::size_t>(st.range(0)), true);
  std::vector<TaskRequest> reqs;
  const std::string_view h100[] = {"H100-80GB"};
  for (MilliGpu m : {500, 250}) reqs.push_back(*s.compile(TaskShape{1000, kGiB, 1, m, 0}));
  reqs.push_back(*s.compile(TaskShape{1000, kGiB, 1, 300, 0}, h100));
  st.counters["tasks"] = static_cast<double>(fill_and_release(st, s, reqs, name));
}

// Shared tasks asking GPU memory too (0.5 GPU and 40 GiB, 0.25 and 20 GiB, 0.3 and 30 GiB of an
// H100's 80): the share index steps over GPUs whose memory is short, in share order.
void huge_node_fill_shared_memory(benchmark::State& st, const char* name) {
  ClusterState s = huge_node_state(static_cast<std::size_t>(st.range(0)));
  std::vector<TaskRequest> reqs;
  for (const auto& [milli, gib] : {std::pair<MilliGpu, Bytes>{500, 40}, {250, 20}, {300, 30}})
    reqs.push_back(*s.compile(TaskShape{1000, kGiB, 1, milli, gib * kGiB}));
  st.counters["tasks"] = static_cast<double>(fill_and_release(st, s, reqs, name));
}

void register_huge_node() {
  // FGD and FGD-OC keep a node as its distinct (free share, model) levels and change a big node's
  // levels by the GPUs of each observed reservation, so they run at the full sizes too.
  for (const char* name : {"first-fit", "best-fit", "worst-fit", "most-allocated", "least-allocated", "dot-product",
                           "random", "FGD", "FGD-OC"})
    benchmark::RegisterBenchmark((std::string("BM_HugeNodeFill/") + name).c_str(), huge_node_fill, name)
        ->Arg(16384)
        ->Arg(32768)
        ->Arg(65535)
        ->Unit(benchmark::kMillisecond);
  for (const char* name : {"best-fit", "worst-fit", "FGD"})
    benchmark::RegisterBenchmark((std::string("BM_HugeNodeFillShared/") + name).c_str(), huge_node_fill_shared, name)
        ->Arg(4096)
        ->Arg(16384)
        ->Arg(65535)
        ->Unit(benchmark::kMillisecond);
  for (const char* name : {"best-fit", "worst-fit"})
    benchmark::RegisterBenchmark((std::string("BM_HugeNodeFillSharedMemory/") + name).c_str(), huge_node_fill_shared_memory, name)
        ->Arg(4096)
        ->Arg(16384)
        ->Arg(65535)
        ->Unit(benchmark::kMillisecond);
  for (const char* name : {"best-fit", "worst-fit", "FGD"})
    benchmark::RegisterBenchmark((std::string("BM_HugeNodeFillSharedMixed/") + name).c_str(), huge_node_fill_shared_mixed, name)
        ->Arg(4096)
        ->Arg(16384)
        ->Arg(65535)
        ->Unit(benchmark::kMillisecond);
}

// --- a queue tree D levels deep ---------------------------------------------------------------------

using namespace gpusched::fairness;

ResourceSpace deep_space() { return ResourceSpace{{"H100-80GB"}}; }
Amounts deep_capacity() {
  Amounts cap(3);
  cap << std::int64_t{1000000} * 1000, std::int64_t{1000000} << 30, std::int64_t{100000} * 1000;
  return cap;
}

std::vector<QueueConfig> queue_chain(std::size_t depth) {
  std::vector<QueueConfig> queues(depth);
  for (std::size_t q = 0; q < depth; ++q) {
    queues[q].name = fmt::format("q{}", q);
    if (q > 0) queues[q].parent = queues[q - 1].name;
  }
  queues.back().cohort = "all";
  return queues;
}

// Jobs of one task: 4 cores, 16 GiB, 1-8 whole GPUs.
std::vector<CompiledJob> deep_jobs(std::size_t count, std::string_view leaf) {
  std::vector<CompiledJob> jobs(count);
  for (std::size_t j = 0; j < count; ++j) {
    jobs[j].name = fmt::format("j{}", j);
    jobs[j].queue = std::string(leaf);
    jobs[j].priority = static_cast<std::int32_t>(j % 3);
    jobs[j].submit_time = static_cast<std::int64_t>(j);
    TaskShape& task = jobs[j].groups.emplace_back().request.shape;
    task.cpu = 4000;
    task.memory = std::int64_t{16} << 30;
    task.gpus = static_cast<GpuCount>(1 + j % 8);
    task.gpu_milli = kMilliPerGpu;
  }
  return jobs;
}

void BM_DeepQueueBuild(benchmark::State& st) {
  const auto queues = queue_chain(static_cast<std::size_t>(st.range(0)));
  for (auto _ : st) {
    auto planner = FairSharePlanner::build(deep_space(), deep_capacity(), deep_capacity(), queues);
    if (!planner) st.SkipWithError(planner.error().message.c_str());
    benchmark::DoNotOptimize(planner);
  }
}
BENCHMARK(BM_DeepQueueBuild)->Arg(5000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMillisecond);

void BM_DeepQueuePlan(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  const auto queues = queue_chain(depth);
  const auto planner = FairSharePlanner::build(deep_space(), deep_capacity(), deep_capacity(), queues);
  if (!planner) {
    st.SkipWithError(planner.error().message.c_str());
    return;
  }
  const auto jobs = deep_jobs(1000, queues.back().name);
  std::size_t admitted = 0;
  for (auto _ : st) {
    const auto plan = planner->plan(jobs);
    admitted = plan.admitted.size();
    benchmark::DoNotOptimize(plan);
  }
  st.counters["admitted"] = static_cast<double>(admitted);
}
BENCHMARK(BM_DeepQueuePlan)->Arg(5000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMillisecond);

void BM_DeepQueueRead(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  std::string text = "{\"queues\": [";
  for (std::size_t q = 0; q < depth; ++q) {
    if (q > 0) text += ",";
    text += q == 0 ? fmt::format("{{\"name\": \"q{}\"}}", q) : fmt::format("{{\"name\": \"q{}\", \"parent\": \"q{}\"}}", q, q - 1);
  }
  text += "]}";
  const auto registry = GpuModelRegistry::builtin();
  for (auto _ : st) {
    auto doc = io::read_queues_json(text, "queues", deep_space(), registry);
    if (!doc) st.SkipWithError(doc.error().message.c_str());
    benchmark::DoNotOptimize(doc);
  }
}
BENCHMARK(BM_DeepQueueRead)->Arg(5000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMillisecond);

// Building the chain: D add_node calls.
void BM_DeepHdrfBuild(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  for (auto _ : st) {
    HdrfScheduler s(deep_capacity());
    HdrfScheduler::NodeId parent = HdrfScheduler::kRoot;
    for (std::size_t d = 0; d < depth; ++d) parent = s.add_node(parent, 1.0).value();
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_DeepHdrfBuild)->Arg(5000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMillisecond);

// One pick + allocate + release on the built chain: each walks all D levels (H-DRF's cost per
// change is O(depth)), so 2 per doubling is linear.
void BM_DeepHdrfPick(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  Amounts task = Amounts::Zero(3);
  task << 1000, std::int64_t{1} << 30, 1000;
  HdrfScheduler s(deep_capacity());
  HdrfScheduler::NodeId parent = HdrfScheduler::kRoot;
  for (std::size_t d = 0; d < depth; ++d) parent = s.add_node(parent, 1.0).value();
  for (auto _ : st) {
    const auto leaf = *s.pick();
    s.allocate(leaf, task);
    s.release(leaf, task);
  }
}
BENCHMARK(BM_DeepHdrfPick)->Arg(5000)->Arg(10000)->Arg(20000)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  register_huge_node();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
