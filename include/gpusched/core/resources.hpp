// gpusched/core/resources.hpp — the fixed resource dimensions and `ResourceVector`.
//
// A `ResourceVector` holds one integer per `Resource`. It is the unit of arithmetic for capacity,
// free amounts and requests across the library: fairness (DRF) computes dominant shares over it,
// packing scores (most/least allocated, Tetris dot product) weight its dimensions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpusched/core/quantity.hpp"

namespace gpusched {

enum class Resource : std::uint8_t {
  kCpu = 0,        // milli-CPU
  kMemory = 1,     // bytes of host memory
  kGpu = 2,        // milli-GPU (a whole GPU counts 1000)
  kGpuMemory = 3,  // bytes of GPU memory
};
inline constexpr std::size_t kResourceCount = 4;

constexpr std::string_view resource_name(Resource r) {
  switch (r) {
    case Resource::kCpu: return "cpu";
    case Resource::kMemory: return "memory";
    case Resource::kGpu: return "gpu";
    case Resource::kGpuMemory: return "gpu_memory";
  }
  return "?";
}

struct ResourceVector {
  std::array<std::int64_t, kResourceCount> amount{};

  static constexpr ResourceVector of(std::int64_t cpu_milli, Bytes memory, MilliGpu gpu_milli = 0,
                                     Bytes gpu_memory = 0) {
    return ResourceVector{{cpu_milli, memory, gpu_milli, gpu_memory}};
  }

  constexpr std::int64_t& operator[](Resource r) { return amount[static_cast<std::size_t>(r)]; }
  constexpr std::int64_t operator[](Resource r) const { return amount[static_cast<std::size_t>(r)]; }

  constexpr ResourceVector& operator+=(const ResourceVector& o) {
    for (std::size_t i = 0; i < kResourceCount; ++i) amount[i] += o.amount[i];
    return *this;
  }
  constexpr ResourceVector& operator-=(const ResourceVector& o) {
    for (std::size_t i = 0; i < kResourceCount; ++i) amount[i] -= o.amount[i];
    return *this;
  }
  friend constexpr ResourceVector operator+(ResourceVector a, const ResourceVector& b) { return a += b; }
  friend constexpr ResourceVector operator-(ResourceVector a, const ResourceVector& b) { return a -= b; }
  friend constexpr ResourceVector operator*(ResourceVector a, std::int64_t k) {
    for (auto& x : a.amount) x *= k;
    return a;
  }
  friend constexpr bool operator==(const ResourceVector&, const ResourceVector&) = default;

  // True when every dimension of *this is <= the same dimension of `other`.
  constexpr bool fits_within(const ResourceVector& other) const {
    for (std::size_t i = 0; i < kResourceCount; ++i)
      if (amount[i] > other.amount[i]) return false;
    return true;
  }
  constexpr bool any_negative() const {
    for (auto x : amount)
      if (x < 0) return true;
    return false;
  }
  constexpr bool is_zero() const {
    for (auto x : amount)
      if (x != 0) return false;
    return true;
  }
};

}  // namespace gpusched
