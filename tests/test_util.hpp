// Small helpers shared by the test suites: seeded random numbers and cluster builders.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"

namespace gpusched::testing {

using Rng = SplitMix64;

// A node with `gpus` GPUs of `model`, each with the given used share (missing entries idle).
inline NodeSpec make_node(std::string name, MilliCpu cpu, Bytes memory, int gpus, std::string model,
                          std::initializer_list<MilliGpu> used = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu = cpu;
  n.memory = memory;
  n.gpus.assign(static_cast<std::size_t>(gpus), GpuSpec{model});
  std::size_t i = 0;
  for (MilliGpu u : used) n.gpus[i++].used_milli = u;
  return n;
}

}  // namespace gpusched::testing
