// Shared helpers of the fairness tests: a seeded splitmix64 generator with an unbiased-enough
// reduction of our own (no implementation-defined std distributions), and inline resource vectors.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "gpusched/cluster/jobs.hpp"
#include "gpusched/core/random.hpp"
#include "gpusched/fairness/admission_rule.hpp"
#include "gpusched/fairness/drf.hpp"

namespace gpusched::fairness::testing {

// gpusched::SplitMix64's sequence, reduced differently (below), so the recorded instances stay.
struct SplitMix {
  SplitMix64 gen;
  explicit SplitMix(std::uint64_t seed) : gen(seed) {}
  std::uint64_t next() { return gen.next(); }
  // In [0, n), 0 < n < 2^32: Lemire's multiply-shift on the high 32 bits (bias below n / 2^32).
  std::uint64_t below(std::uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

// An integer resource vector written inline: amounts({1, 4}).
inline Amounts amounts(std::initializer_list<std::int64_t> v) {
  Amounts a(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (auto x : v) a[i++] = x;
  return a;
}

// A real resource vector written inline: vec({1, 4}).
inline Vector vec(std::initializer_list<double> v) {
  Vector a(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (double x : v) a[i++] = x;
  return a;
}

// A group of `replicas` tasks (at least `min_replicas`, -1 = all) of `cpu`, `memory` and `gpu_milli`
// each (whole GPUs when a multiple of 1000, as job_of).
inline CompiledGroup group_of(std::int32_t replicas, std::int32_t min_replicas, std::int64_t cpu, std::int64_t memory,
                              std::int64_t gpu_milli) {
  CompiledGroup g;
  g.name = "group";
  g.replicas = replicas;
  g.min_replicas = min_replicas;
  g.request.shape.cpu = cpu;
  g.request.shape.memory = memory;
  if (gpu_milli > 0) {
    const bool whole = gpu_milli % kMilliPerGpu == 0;
    g.request.shape.gpus = whole ? static_cast<GpuCount>(gpu_milli / kMilliPerGpu) : 1;
    g.request.shape.gpu_milli = whole ? kMilliPerGpu : static_cast<MilliGpu>(gpu_milli);
  }
  return g;
}

// A pending job of one task (the one job model, cluster/jobs.hpp) asking `cpu` milli-CPU, `memory`
// bytes and `gpu_milli` milli-GPU in all: whole GPUs when it is a multiple of 1000, else one task
// with that share (the planner multiplies gpus x gpu_milli; it does not check a task's share the way
// compile_job does, and these totals are the planner's arithmetic under test). `models` are GPU
// models of `space`, the planner's registry when it is built without one (model id k = the k-th).
inline CompiledJob job_of(std::string name, std::string queue, std::int64_t cpu, std::int64_t memory, std::int64_t gpu_milli,
                          const ResourceSpace& space = {}, const std::vector<std::string>& models = {},
                          std::int32_t priority = 0, std::int64_t submit_time = 0) {
  CompiledJob job;
  job.name = std::move(name);
  job.queue = std::move(queue);
  job.priority = priority;
  job.submit_time = submit_time;
  CompiledGroup& task = job.groups.emplace_back(group_of(1, 1, cpu, memory, gpu_milli));
  if (!models.empty()) {
    task.request.models = 0;
    for (const std::string& m : models)
      for (std::size_t k = 0; k < space.gpu_models.size(); ++k)
        if (space.gpu_models[k] == m) task.request.models |= model_bit(static_cast<GpuModelId>(k));
  }
  return job;
}

}  // namespace gpusched::fairness::testing
