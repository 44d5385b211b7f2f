// Small helpers shared by the test suites: seeded random numbers, cluster builders, fixture files.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include <fmt/format.h>

#include "gpusched/cluster/cluster.hpp"
#include "gpusched/core/random.hpp"

namespace gpusched::testing {

using Rng = SplitMix64;

// A file of tests/fixtures/ as text: fixture_text("slurm/sinfo-8gpu.json").
inline std::string fixture_text(const std::string& path) {
  std::ifstream in(std::string(GPUSCHED_FIXTURES_DIR) + "/" + path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// How many random instances a property test runs: all of them in a plain build, an eighth (at least
// one) in a sanitizer build. The sanitizers run the same code 10-70x slower; CI's Release run goes
// through every instance and its sanitized run checks a sample of the same ones for memory errors and
// undefined behaviour (benchmarks/README.md, "CI time"). GPUSCHED_TESTS_SANITIZED: tests/CMakeLists.txt.
// `sanitized`: whether this is that build (for tests whose sample is not a count of instances).
#ifdef GPUSCHED_TESTS_SANITIZED
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
template <typename Count>
constexpr Count trials(Count full) {
  if constexpr (sanitized) return full / 8 > 0 ? full / 8 : Count{1};
  return full;
}

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
