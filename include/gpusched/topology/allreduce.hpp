// gpusched/topology/allreduce.hpp — the one all-reduce cost model every estimate uses.
//
// What it is for. GPU sets inside a node (NodeTopology::score), node sets by their span
// (ClusterTopology::allreduce_us) and node sets on the fabric graph (ClusterGraph::allreduce) are
// all compared by the time of one all-reduce. They differ only in how they find the bottleneck bus
// bandwidth B and the per-step latency alpha; the time itself is computed here, once, so the three
// agree wherever their inputs agree (tested in tests/topology/allreduce_test.cpp).
//
// The alpha-beta model of NCCL's algorithms (NCCL's docs, "Performance: algorithm bandwidth and bus
// bandwidth"; NCCL src/graph/tuning.cc), for R ranks and a message of `bytes`:
//   ring  = 2 (R-1)/R * bytes / B + 2 (R-1) * alpha        (reduce-scatter then all-gather, each
//           R-1 steps; bandwidth-optimal: Patarasuk & Yuan, "Bandwidth optimal all-reduce
//           algorithms for clusters of workstations", JPDC 69(2), 2009)
//   tree  = 2 * bytes / B + 2 * ceil(log2 R) * alpha        (pipelined reduce up a binary tree and
//           broadcast down: twice the bytes over B, log-depth latency)
//   estimate = min(ring, tree): NCCL picks the faster algorithm for the size; the ring wins for
//   large messages, the tree for small messages on many ranks.
// B is GB/s per direction (10^9 bytes/s = 10^3 bytes/us); B = +inf (no bandwidth limit, e.g. a
// single node without an intra-node figure) leaves the latency terms; B <= 0 (disconnected) gives
// +inf. One rank or fewer costs 0.
//
//   AllReduceTime t = allreduce_time(8, 64.0 * (1 << 20), 115.75, 0.5);   // t.ring_us, t.tree_us, t.best_us
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpusched::topology {

struct AllReduceTime {
  double ring_us = 0;
  double tree_us = 0;
  double best_us = 0;  // min(ring, tree)
};

inline AllReduceTime allreduce_time(double ranks, double bytes, double bus_gbps, double alpha_us) {
  AllReduceTime t;
  if (!(ranks > 1)) return t;
  if (!(bus_gbps > 0)) {
    t.ring_us = t.tree_us = t.best_us = std::numeric_limits<double>::infinity();
    return t;
  }
  // GB/s = 1e3 bytes per microsecond; an infinite B leaves only the latency terms.
  const double transfer_us = std::isinf(bus_gbps) ? 0.0 : bytes / (bus_gbps * 1e3);
  t.ring_us = 2.0 * (ranks - 1) / ranks * transfer_us + 2.0 * (ranks - 1) * alpha_us;
  t.tree_us = 2.0 * transfer_us + 2.0 * std::ceil(std::log2(ranks)) * alpha_us;
  t.best_us = std::min(t.ring_us, t.tree_us);
  return t;
}

}  // namespace gpusched::topology
