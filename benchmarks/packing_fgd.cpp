// FGD's and FGD-OC's per-task decision on the 1,213-node Alibaba trace cluster, during a replay
// (seed 42): select (node) + pick (GPU) + reserve + observe, including the memo fills of new node classes.
#include <benchmark/benchmark.h>

#include <string>

#include "gpusched/packing/fgd.hpp"
#include "gpusched/sim/packing_experiment.hpp"
#include "trace_workload.hpp"

namespace {

using namespace gpusched;

const sim::TraceWorkload& workload() { return bench::default_trace_workload(); }

template <bool Attach, bool OpportunityCosts = false>
void BM_FgdDecision(benchmark::State& st) {
  const auto& w = workload();
  const auto order = sim::arrival_order(w, 42, 1.3);
  FgdOptions options;
  options.packing_loss = options.cpu_stranding = options.model_scarcity = OpportunityCosts;
  FgdPolicy fgd(w.target, 42, options);
  ClusterState state = w.initial;
  if (Attach) fgd.attach(state);
  std::size_t i = 0;
  TaskAssignment a;
  for (auto _ : st) {
    if (i == order.size()) {
      st.PauseTiming();
      state = w.initial;
      if (Attach) fgd.attach(state);
      i = 0;
      st.ResumeTiming();
    }
    const TaskRequest& r = w.pods[order[i++]];
    const NodeId n = fgd.select(state, r);
    if (n != kNoNode && fgd.gpu_picker().pick(state, n, r, a) && state.reserve(r, a)) {
      state.commit();
      fgd.observe(state, r, a);
    }
    benchmark::DoNotOptimize(n);
  }
}
// Attached: the class index the simulator uses. Unattached: every fitting node evaluated directly.
BENCHMARK(BM_FgdDecision<true>)->Name("BM_FgdDecision/indexed")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FgdDecision<false>)->Name("BM_FgdDecision/direct")->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK(BM_FgdDecision<true, true>)->Name("BM_FgdOcDecision/indexed")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
