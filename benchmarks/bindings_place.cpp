// One placement decision through C++, through the C API and (benchmarks/README.md, "Bindings",
// measured with a small script) through Python: the issue's bound is 2x the C++ call.
//
// The cluster: 1,000 nodes of 8 H100 with each GPU in use with probability 0.7 (the
// packing_placement benchmark's cluster), written as a cluster document so that the C API reads
// the same state. The decision: one job of one task asking 2 GPUs, 20 cores, 200 GiB, best fit,
// as a dry run (decided, then rolled back) so every iteration sees the same state.
//   C++:   compile_job + place_job + rollback, the policy object kept by the caller
//   C API: gpusched_place(..., GPUSCHED_PLACE_DRY_RUN) + gpusched_result_free (compiles the job,
//          makes the policy by name, copies the result into the handle)
#include <benchmark/benchmark.h>

#include <string>

#include <fmt/format.h>

#include "gpusched/c/gpusched.h"
#include "gpusched/gpusched.hpp"
#include "gpusched/io/cluster_json.hpp"

namespace {

using namespace gpusched;

std::string cluster_json(std::size_t nodes) {
  SplitMix64 rng{42};
  std::string out = R"({"nodes": [)";
  for (std::size_t i = 0; i < nodes; ++i) {
    std::string gpus;
    int used = 0;
    for (int g = 0; g < 8; ++g) {
      const bool busy = rng.next() % 10 < 7;
      used += busy;
      gpus += fmt::format(R"({}{{"used_milli": {}}})", g ? "," : "", busy ? 1000 : 0);
    }
    out += fmt::format(R"({}{{"name": "node-{}", "cpu": 96, "memory": "1Ti", "gpu_model": "H100-80GB", )"
                       R"("cpu_used": {}, "memory_used": "{}Gi", "gpus": [{}]}})",
                       i ? "," : "", i, used * 11, used * 120, gpus);
  }
  return out + "]}";
}

const std::string& cluster_text() {
  static const std::string text = cluster_json(1000);
  return text;
}
const char* kJobs = R"({"jobs": [{"name": "j", "gpus": 2, "cpu": 20, "memory": "200Gi"}]})";

void BM_PlaceDecision_Cpp(benchmark::State& st) {
  auto doc = io::read_cluster_json(cluster_text());
  auto jobs = io::read_jobs_json(kJobs);
  ClusterState s = *ClusterState::build(doc->cluster, doc->registry);
  BestFitPolicy policy;
  for (auto _ : st) {
    auto job = compile_job(s, jobs->jobs[0]);
    const auto mark = s.checkpoint();
    JobPlacement p = place_job(s, *job, policy);
    benchmark::DoNotOptimize(p);
    s.rollback(mark);
  }
}
BENCHMARK(BM_PlaceDecision_Cpp);

// The decision alone, the job compiled once before the loop: what the Python module does between
// calls (it keeps each job compiled while the state's layout stays), so its floor.
void BM_PlaceDecision_CppCompiledOnce(benchmark::State& st) {
  auto doc = io::read_cluster_json(cluster_text());
  auto jobs = io::read_jobs_json(kJobs);
  ClusterState s = *ClusterState::build(doc->cluster, doc->registry);
  BestFitPolicy policy;
  const auto job = compile_job(s, jobs->jobs[0]);
  for (auto _ : st) {
    const auto mark = s.checkpoint();
    JobPlacement p = place_job(s, *job, policy);
    benchmark::DoNotOptimize(p);
    s.rollback(mark);
  }
}
BENCHMARK(BM_PlaceDecision_CppCompiledOnce);

void BM_PlaceDecision_CApi(benchmark::State& st) {
  gpusched_state* s = nullptr;
  gpusched_jobs* jobs = nullptr;
  gpusched_error err;
  if (gpusched_state_from_json(cluster_text().c_str(), &s, &err) != GPUSCHED_OK ||
      gpusched_jobs_from_json(kJobs, &jobs, &err) != GPUSCHED_OK) {
    st.SkipWithError(err.message);
    return;
  }
  for (auto _ : st) {
    gpusched_result* r = nullptr;
    gpusched_place(s, jobs, 0, "best-fit", 0, GPUSCHED_PLACE_DRY_RUN, &r, &err);
    benchmark::DoNotOptimize(r);
    gpusched_result_free(r);
  }
  gpusched_jobs_free(jobs);
  gpusched_state_free(s);
}
BENCHMARK(BM_PlaceDecision_CApi);

}  // namespace

BENCHMARK_MAIN();
