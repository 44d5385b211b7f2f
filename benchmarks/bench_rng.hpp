// The benchmarks' instance generator: gpusched::SplitMix64's sequence with a multiply-shift reduction
// on the high 32 bits. SplitMix64 itself reduces by remainder; this reduction is kept so that the
// instances, and the quality figures recorded in benchmarks/README.md, stay exactly as measured.
#pragma once

#include <cstdint>

#include "gpusched/core/random.hpp"

namespace gpusched::bench {

struct SplitMix {
  SplitMix64 gen;
  explicit SplitMix(std::uint64_t seed) : gen(seed) {}
  std::uint64_t next() { return gen.next(); }
  // In [0, n) for 0 < n < 2^32.
  std::uint64_t below(std::uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

}  // namespace gpusched::bench
