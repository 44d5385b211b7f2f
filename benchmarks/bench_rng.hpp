// The benchmarks' instance generator: splitmix64 with a multiply-shift reduction on the high 32 bits.
// Kept separate from gpusched::SplitMix64 (which reduces by remainder) so that the instances, and
// the quality figures recorded in benchmarks/README.md, stay exactly as measured.
#pragma once

#include <cstdint>

namespace gpusched::bench {

struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [0, n) for 0 < n < 2^32.
  std::uint64_t below(std::uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

}  // namespace gpusched::bench
