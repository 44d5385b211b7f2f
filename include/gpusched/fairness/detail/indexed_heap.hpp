// gpusched/fairness/detail/indexed_heap.hpp — a binary min-heap over small integer ids whose keys
// can change in place.
//
// The DRF sorters keep one entry per client (queue) and, after an allocation, move only that client
// (Mesos' DRF sorter re-sorts the one client that changed rather than the whole list). A binary heap
// with a position index gives O(log n) `update` and O(1) `top`, without the node allocations of a
// std::set. `Less(a, b)` must be a strict total order over ids (ties broken by id), so the heap's
// answers do not depend on the order of operations.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpusched::fairness::detail {

// Where a heap keeps each id's position: by default its own vector indexed by id (O(largest id) per
// heap). SharedHeapPositions points into one vector shared by many heaps whose id sets are disjoint:
// H-DRF keeps a heap per internal node, each over that node's children, and a node is only in its
// parent's heap. With a vector of its own per heap, a chain of D queues held D vectors of up to D
// entries (O(D^2) memory and time; issue 15).
struct OwnHeapPositions {
  std::vector<std::uint32_t> v;
  std::size_t size() const { return v.size(); }
  void resize(std::size_t n, std::uint32_t value) { v.resize(n, value); }
  std::uint32_t& operator[](std::size_t i) { return v[i]; }
  std::uint32_t operator[](std::size_t i) const { return v[i]; }
};
struct SharedHeapPositions {
  std::vector<std::uint32_t>* v = nullptr;
  std::size_t size() const { return v->size(); }
  void resize(std::size_t n, std::uint32_t value) {
    if (n > v->size()) v->resize(n, value);
  }
  std::uint32_t& operator[](std::size_t i) { return (*v)[i]; }
  std::uint32_t operator[](std::size_t i) const { return (*v)[i]; }
};

template <class Less, class Positions = OwnHeapPositions>
class IndexedHeap {
 public:
  static constexpr std::uint32_t kAbsent = ~std::uint32_t{0};

  explicit IndexedHeap(Less less = Less{}, Positions positions = Positions{})
      : less_(std::move(less)), pos_(std::move(positions)) {}

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  std::uint32_t top() const { return heap_.front(); }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != kAbsent; }
  const std::vector<std::uint32_t>& items() const { return heap_; }

  void push(std::uint32_t id) {
    if (id >= pos_.size()) pos_.resize(id + 1, kAbsent);
    if (pos_[id] != kAbsent) return update(id);
    pos_[id] = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(id);
    sift_up(pos_[id]);
  }
  void erase(std::uint32_t id) {
    if (!contains(id)) return;
    const std::uint32_t at = pos_[id];
    const std::uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (at < heap_.size()) {
      heap_[at] = last;
      pos_[last] = at;
      sift_down(at);
      sift_up(pos_[last]);
    }
  }
  // Restores the order after the key of `id` changed (either direction).
  void update(std::uint32_t id) {
    if (!contains(id)) return;
    sift_up(pos_[id]);
    sift_down(pos_[id]);
  }
  void clear() {
    for (auto id : heap_) pos_[id] = kAbsent;
    heap_.clear();
  }
  Less& less() { return less_; }

 private:
  void place(std::uint32_t at, std::uint32_t id) {
    heap_[at] = id;
    pos_[id] = at;
  }
  void sift_up(std::uint32_t at) {
    const std::uint32_t id = heap_[at];
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!less_(id, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, id);
  }
  void sift_down(std::uint32_t at) {
    const std::uint32_t id = heap_[at];
    const auto n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && less_(heap_[child + 1], heap_[child])) ++child;
      if (!less_(heap_[child], id)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, id);
  }

  Less less_;
  std::vector<std::uint32_t> heap_;
  Positions pos_;
};

}  // namespace gpusched::fairness::detail
