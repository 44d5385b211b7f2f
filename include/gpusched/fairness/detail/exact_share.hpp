// gpusched/fairness/detail/exact_share.hpp — weighted dominant shares compared exactly.
//
// Why. Fair share documents "ties go to the client (queue) listed first", but a weighted dominant
// share computed in doubles is rounded twice (allocation / capacity, then / weight), so two equal
// rational shares can differ in their last bit: 9/30 with weight 3 is 0.09999999999999999 and 4/20
// with weight 2 is 0.1, both exactly 1/10, and the queue listed second was served first (issue 15
// part 3). The sorters keep the double as a fast key and fall back to this exact comparison when two
// doubles are within rounding of each other.
//
// How. A share is num / (den · weight) with num, den non-negative int64 (the allocation and the
// capacity of the dominant resource) and weight a positive finite double, taken at its exact binary
// value mantissa · 2^exponent (53-bit integer mantissa). a < b then reads
//     num_a · den_b · mantissa_b · 2^exp_b  <  num_b · den_a · mantissa_a · 2^exp_a,
// two products of at most 63 + 63 + 53 bits, computed in 192 bits and compared after aligning them.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <compare>
#include <cstdint>

namespace gpusched::fairness::detail {

__extension__ using FairnessU128 = unsigned __int128;
__extension__ using FairnessI128 = __int128;

// An unsigned 192-bit integer, least significant limb first.
struct FairnessU192 {
  std::uint64_t limb[3] = {0, 0, 0};

  int bit_length() const {
    for (int i = 2; i >= 0; --i)
      if (limb[i] != 0) return 64 * i + static_cast<int>(std::bit_width(limb[i]));
    return 0;
  }
  // The value times 2^shift, 0 <= shift < 192; the caller makes sure no set bit is shifted out.
  FairnessU192 shifted_left(int shift) const {
    FairnessU192 out;
    const int whole = shift / 64, bits = shift % 64;
    for (int i = 2; i >= whole; --i) {
      const int from = i - whole;
      std::uint64_t v = limb[from] << bits;
      if (bits != 0 && from > 0) v |= limb[from - 1] >> (64 - bits);
      out.limb[i] = v;
    }
    return out;
  }
};

// a · b · c exactly.
inline FairnessU192 fairness_product3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  const FairnessU128 ab = static_cast<FairnessU128>(a) * b;
  const FairnessU128 low = static_cast<FairnessU128>(static_cast<std::uint64_t>(ab)) * c;
  const FairnessU128 high = static_cast<FairnessU128>(static_cast<std::uint64_t>(ab >> 64)) * c + (low >> 64);
  FairnessU192 out;
  out.limb[0] = static_cast<std::uint64_t>(low);
  out.limb[1] = static_cast<std::uint64_t>(high);
  out.limb[2] = static_cast<std::uint64_t>(high >> 64);
  return out;
}

// A positive finite double as mantissa · 2^exponent with an odd integer mantissa below 2^53
// (trailing zero bits moved into the exponent, so small integer weights have small mantissas).
struct FairnessBinaryWeight {
  std::uint64_t mantissa = 1;
  int exponent = 0;
  FairnessBinaryWeight() = default;
  explicit FairnessBinaryWeight(double w) {
    int e = 0;
    const double f = std::frexp(w, &e);  // w = f · 2^e, f in [0.5, 1)
    mantissa = static_cast<std::uint64_t>(std::ldexp(f, 53));
    exponent = e - 53;
    if (mantissa == 0) return;
    const int zeros = std::countr_zero(mantissa);
    mantissa >>= zeros;
    exponent += zeros;
  }
};

// The exact weighted dominant share num / (den · weight); den == 0 means the share is 0 (nothing
// held of any resource with capacity). The weight is kept as the double (for the fast path of equal
// weights) and in binary form (for the general path), decomposed once when the share is set.
struct ExactShare {
  std::int64_t num = 0;
  std::int64_t den = 0;
  double weight = 1.0;
  FairnessBinaryWeight binary{1.0};

  ExactShare() = default;
  ExactShare(std::int64_t numerator, std::int64_t denominator, double w)
      : num(numerator), den(denominator), weight(w), binary(w) {}
};

// Exact comparison of two positive weighted dominant shares of different weights (the slow path of
// compare_exact_shares, a separate function so that the common cases stay small enough to inline
// into the heaps).
inline std::strong_ordering compare_exact_shares_weighted(const ExactShare& a, const ExactShare& b) {
  const FairnessBinaryWeight& wa = a.binary;
  const FairnessBinaryWeight& wb = b.binary;
  const FairnessU192 left = fairness_product3(static_cast<std::uint64_t>(a.num), static_cast<std::uint64_t>(b.den), wb.mantissa);
  const FairnessU192 right = fairness_product3(static_cast<std::uint64_t>(b.num), static_cast<std::uint64_t>(a.den), wa.mantissa);
  const auto digits = [](const FairnessU192& l, const FairnessU192& r) {
    for (int i = 2; i >= 0; --i)
      if (l.limb[i] != r.limb[i]) return l.limb[i] <=> r.limb[i];
    return std::strong_ordering::equal;
  };
  if (wa.exponent == wb.exponent) return digits(left, right);
  // Compare left · 2^exp_b with right · 2^exp_a: first by magnitude (bit length plus exponent), then,
  // at equal magnitude, by the digits after shifting the side with the larger exponent left by the
  // difference (it then has the other side's bit length, so the shift cannot overflow 192 bits).
  const int mag_left = left.bit_length() + wb.exponent, mag_right = right.bit_length() + wa.exponent;
  if (mag_left != mag_right) return mag_left <=> mag_right;
  if (wb.exponent > wa.exponent) return digits(left.shifted_left(wb.exponent - wa.exponent), right);
  return digits(left, right.shifted_left(wa.exponent - wb.exponent));
}

// Exact three-way comparison of two weighted dominant shares.
inline std::strong_ordering compare_exact_shares(const ExactShare& a, const ExactShare& b) {
  const bool a_zero = a.num <= 0 || a.den <= 0, b_zero = b.num <= 0 || b.den <= 0;
  if (a_zero || b_zero) return b_zero <=> a_zero;  // zero is least; two zeros are equal
  // Equal weights (the common case: a few weight classes): num_a · den_b vs num_b · den_a in 128 bits.
  if (a.weight == b.weight)
    return static_cast<FairnessU128>(a.num) * static_cast<std::uint64_t>(b.den) <=>
           static_cast<FairnessU128>(b.num) * static_cast<std::uint64_t>(a.den);
  return compare_exact_shares_weighted(a, b);
}

// Sets `share` to the dominant resource of an integer allocation, exactly: the r maximising
// alloc[r] / cap[r] over resources with cap[r] > 0 (compared by cross-multiplication in 128 bits;
// the first such r on ties); {0, 0} when nothing is held. The weight stays as it was.
template <class AllocAt, class CapAt>
void fairness_set_dominant_fraction(ExactShare& share, std::size_t resources, AllocAt alloc_at, CapAt cap_at) {
  share.num = 0;
  share.den = 0;
  for (std::size_t r = 0; r < resources; ++r) {
    const std::int64_t c = cap_at(r), a = alloc_at(r);
    if (c <= 0 || a <= 0) continue;
    if (share.den == 0 || static_cast<FairnessI128>(a) * share.den > static_cast<FairnessI128>(share.num) * c) {
      share.num = a;
      share.den = c;
    }
  }
}

// A share of nothing yet, for a client or leaf of the given weight.
inline ExactShare fairness_zero_share(double weight) { return ExactShare(0, 0, weight); }

// Two doubles computed from exact shares by at most three roundings each are ordered correctly
// when they differ by more than this relative margin; within it the exact comparison decides.
inline constexpr double kFairnessShareMargin = 1e-12;

// Three-way order of two weighted dominant shares given as doubles with their exact values: the
// doubles decide when they are clearly apart, else the exact values (equal exact shares are
// equivalent; the caller breaks the tie by id).
inline std::strong_ordering fairness_share_order(double da, const ExactShare& a, double db, const ExactShare& b) {
  const double margin = kFairnessShareMargin * std::max(std::fabs(da), std::fabs(db));
  if (da - db < -margin) return std::strong_ordering::less;
  if (da - db > margin) return std::strong_ordering::greater;
  return compare_exact_shares(a, b);
}

}  // namespace gpusched::fairness::detail
