// gpusched/core/random.hpp — the one random generator of the library: SplitMix64.
//
// Decisions must be identical on every platform for the same seed, so gpusched never uses the
// standard library's distributions (their algorithms are implementation-defined). SplitMix64
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) is a fixed
// sequence of 64-bit integers per seed; `below(n)` reduces it by remainder, the same on every
// platform (its bias, below n / 2^64, is immaterial for node and pod counts).
#pragma once

#include <cstdint>
#include <utility>

namespace gpusched {

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}

  constexpr std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // A value in [0, n) for n > 0.
  constexpr std::uint64_t below(std::uint64_t n) { return next() % n; }
  // A value in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }

  // Fisher-Yates with this generator: the same permutation for the same seed everywhere.
  template <class It>
  void shuffle(It first, It last) {
    for (auto n = last - first; n > 1; --n) {
      const auto k = static_cast<decltype(n)>(below(static_cast<std::uint64_t>(n)));
      using std::swap;
      swap(first[n - 1], first[k]);
    }
  }

 private:
  std::uint64_t state_;
};

}  // namespace gpusched
