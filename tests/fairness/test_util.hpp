// Shared helpers of the fairness tests: a seeded splitmix64 generator with an unbiased-enough
// reduction of our own (no implementation-defined std distributions), and inline resource vectors.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "gpusched/core/random.hpp"
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

}  // namespace gpusched::fairness::testing
