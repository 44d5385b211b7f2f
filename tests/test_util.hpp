// Small helpers shared by the test suites: seeded random numbers and cluster builders.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"

namespace gpusched::testing {

// splitmix64: the same sequence for a seed on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }

 private:
  std::uint64_t state_;
};

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
