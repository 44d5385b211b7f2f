// gpusched/cluster/node_bitset.hpp — an ordered set of node ids as a two-level bitset.
//
// Insert and erase are O(1); iteration visits members in increasing id order (or, with prev,
// decreasing), skipping 4,096 absent ids per summary bit, so scanning a sparse bucket of 100,000
// nodes touches a few dozen words. This is what lets the cluster index answer "first node with k
// idle GPUs" deterministically. The state also keeps one over idle counts (which buckets are
// non-empty) and one over GPU slots (which GPUs are idle).
//
// Storage is taken on the first insert: an empty set is its id range and nothing else, and
// `trim()` gives an empty set's storage back. The cluster index keeps one set per (GPU model, idle
// count) over the whole node range and trims a bucket when it empties, so one node of 65,535 GPUs
// among 100,000 nodes no longer makes 65,536 x 12.7 KB (about 830 MB) of sets that are almost all
// empty: the index costs the buckets in use (issue 15, part 8). Sets that empty and fill again on
// every change (the index's set of non-empty idle counts, one node's idle GPUs) are not trimmed.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpusched {

class NodeBitset {
 public:
  static constexpr std::uint32_t kEnd = ~std::uint32_t{0};

  // trim() keeps the storage of sets of at most this many words (4,096 ids, 520 bytes): re-taking it
  // would cost more than it saves.
  static constexpr std::size_t kKeptWords = 64;

  NodeBitset() = default;
  explicit NodeBitset(std::uint32_t size) : size_(size) {}

  std::uint32_t capacity() const { return size_; }
  // Grows the id range to `size` (never shrinks); members stay. Amortised O(1) per id when the
  // caller grows geometrically (ClusterState::add_node doubles); O(1) for a set without storage.
  void grow(std::uint32_t size) {
    if (size <= size_) return;
    size_ = size;
    if (words_.empty()) return;
    words_.resize(word_count(size), 0);
    summary_.resize(summary_count(size), 0);
  }
  std::uint32_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // The bytes this set holds beyond the object itself.
  std::size_t storage_bytes() const { return (words_.capacity() + summary_.capacity()) * sizeof(std::uint64_t); }

  bool contains(std::uint32_t id) const { return !words_.empty() && ((words_[id >> 6] >> (id & 63)) & 1U); }
  void insert(std::uint32_t id) {
    if (words_.empty()) {
      words_.assign(word_count(size_), 0);
      summary_.assign(summary_count(size_), 0);
    }
    std::uint64_t& w = words_[id >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    if (w & bit) return;
    w |= bit;
    summary_[id >> 12] |= std::uint64_t{1} << ((id >> 6) & 63);
    ++count_;
  }
  void erase(std::uint32_t id) {
    if (words_.empty()) return;
    std::uint64_t& w = words_[id >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    if (!(w & bit)) return;
    w &= ~bit;
    if (w == 0) summary_[id >> 12] &= ~(std::uint64_t{1} << ((id >> 6) & 63));
    --count_;
  }
  // An empty set of more than kKeptWords words gives its storage back (the next insert takes it again).
  void trim() {
    if (count_ != 0 || words_.size() <= kKeptWords) return;
    std::vector<std::uint64_t>().swap(words_);
    std::vector<std::uint64_t>().swap(summary_);
  }

  // The smallest member >= from, or kEnd.
  std::uint32_t next(std::uint32_t from) const {
    if (from >= size_ || count_ == 0) return kEnd;
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
    if (size_ == 0 || count_ == 0) return kEnd;
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

  // Equal id ranges and members (whether an empty set holds storage does not matter).
  friend bool operator==(const NodeBitset& a, const NodeBitset& b) {
    return a.size_ == b.size_ && a.count_ == b.count_ && (a.count_ == 0 || a.words_ == b.words_);
  }

 private:
  static std::size_t word_count(std::uint32_t size) { return (std::size_t{size} + 63) / 64; }
  static std::size_t summary_count(std::uint32_t size) { return (word_count(size) + 63) / 64; }

  std::uint32_t size_ = 0;
  std::uint32_t count_ = 0;
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> summary_;
};

}  // namespace gpusched
