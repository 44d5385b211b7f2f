// gpusched/cluster/node_bitset.hpp — an ordered set of node ids as a two-level bitset.
//
// Insert and erase are O(1); iteration visits members in increasing id order (or, with prev,
// decreasing), skipping 4,096 absent ids per summary bit, so scanning a sparse bucket of 100,000
// nodes touches a few dozen words. This is what lets the cluster index answer "first node with k
// idle GPUs" deterministically. The state also keeps one over idle counts (which buckets are
// non-empty) and one over GPU slots (which GPUs are idle).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace gpusched {

class NodeBitset {
 public:
  static constexpr std::uint32_t kEnd = ~std::uint32_t{0};

  NodeBitset() = default;
  explicit NodeBitset(std::uint32_t size)
      : size_(size), words_((size + 63) / 64, 0), summary_((words_.size() + 63) / 64, 0) {}

  std::uint32_t capacity() const { return size_; }
  // Grows the id range to `size` (never shrinks); members stay. Amortised O(1) per id when the
  // caller grows geometrically (ClusterState::add_node doubles).
  void grow(std::uint32_t size) {
    if (size <= size_) return;
    size_ = size;
    words_.resize((size + 63) / 64, 0);
    summary_.resize((words_.size() + 63) / 64, 0);
  }
  std::uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }

  bool contains(std::uint32_t id) const { return (words_[id >> 6] >> (id & 63)) & 1U; }
  void insert(std::uint32_t id) {
    std::uint64_t& w = words_[id >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    if (w & bit) return;
    w |= bit;
    summary_[id >> 12] |= std::uint64_t{1} << ((id >> 6) & 63);
    ++count_;
  }
  void erase(std::uint32_t id) {
    std::uint64_t& w = words_[id >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    if (!(w & bit)) return;
    w &= ~bit;
    if (w == 0) summary_[id >> 12] &= ~(std::uint64_t{1} << ((id >> 6) & 63));
    --count_;
  }

  // The smallest member >= from, or kEnd.
  std::uint32_t next(std::uint32_t from) const {
    if (from >= size_) return kEnd;
    std::uint32_t wi = from >> 6;
    std::uint64_t w = words_[wi] & (~std::uint64_t{0} << (from & 63));
    if (w) return (wi << 6) + static_cast<std::uint32_t>(std::countr_zero(w));
    // Find the next non-empty word through the summary.
    std::uint32_t si = (wi + 1) >> 6;
    std::uint32_t sbit = (wi + 1) & 63;
    if (si >= summary_.size()) return kEnd;
    std::uint64_t s = sbit ? (summary_[si] & (~std::uint64_t{0} << sbit)) : summary_[si];
    while (true) {
      if (s) {
        const std::uint32_t word = (si << 6) + static_cast<std::uint32_t>(std::countr_zero(s));
        return (word << 6) + static_cast<std::uint32_t>(std::countr_zero(words_[word]));
      }
      if (++si >= summary_.size()) return kEnd;
      s = summary_[si];
    }
  }
  std::uint32_t first() const { return next(0); }

  // The largest member <= from (from may be beyond the range), or kEnd.
  std::uint32_t prev(std::uint32_t from) const {
    if (size_ == 0) return kEnd;
    if (from >= size_) from = size_ - 1;
    const std::uint32_t wi = from >> 6;
    const std::uint64_t w = words_[wi] & (~std::uint64_t{0} >> (63 - (from & 63)));
    if (w) return (wi << 6) + 63 - static_cast<std::uint32_t>(std::countl_zero(w));
    if (wi == 0) return kEnd;
    // The previous non-empty word through the summary.
    std::uint32_t si = (wi - 1) >> 6;
    std::uint64_t s = summary_[si] & (~std::uint64_t{0} >> (63 - ((wi - 1) & 63)));
    while (true) {
      if (s) {
        const std::uint32_t word = (si << 6) + 63 - static_cast<std::uint32_t>(std::countl_zero(s));
        return (word << 6) + 63 - static_cast<std::uint32_t>(std::countl_zero(words_[word]));
      }
      if (si == 0) return kEnd;
      s = summary_[--si];
    }
  }

  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t i = first(); i != kEnd; i = next(i + 1)) f(i);
  }

  friend bool operator==(const NodeBitset&, const NodeBitset&) = default;

 private:
  std::uint32_t size_ = 0;
  std::uint32_t count_ = 0;
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
};

}  // namespace gpusched
