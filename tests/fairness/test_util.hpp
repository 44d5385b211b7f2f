// Shared helpers of the fairness tests: a seeded splitmix64 generator with an unbiased-enough
// reduction of our own (no implementation-defined std distributions), and inline resource vectors.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "gpusched/fairness/drf.hpp"

namespace gpusched::fairness::testing {

struct SplitMix {
  std::uint64_t state;
  explicit SplitMix(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
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

}  // namespace gpusched::fairness::testing
