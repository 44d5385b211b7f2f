// Node topology: graph construction, set scores (hand-worked), best-k known answers, property
// tests (monotone in added links, picks within the free set, exhaustive optimality) and the Boost
// max-flow oracle for the cut model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpusched/core/random.hpp"
#include "gpusched/topology/graph.hpp"
#include "gpusched/io/nvidia_smi_topo.hpp"
#include "topology/topology_test_util.hpp"

using namespace gpusched::topology;
using namespace gpusched::io;
using namespace gpusched::topology_test;
using G = std::vector<std::uint16_t>;

namespace {

NodeTopology load(const std::string& name) {
  auto t = parse_nvidia_smi_topo(fixture(name));
  REQUIRE(t.ok());
  return std::move(t).value();
}

G mask_to_set(std::uint32_t mask) {
  G out;
  for (std::uint16_t i = 0; i < 32; ++i)
    if (mask >> i & 1U) out.push_back(i);
  return out;
}

// The exact min cut that splits a set: min over t of the max flow from set[0] to t, the other
// members staying as transit (Boost push-relabel).
double exact_cut(const NodeTopology& t, const G& set) {
  const TopologyGraph& g = t.graph();
  double best = INFINITY;
  std::vector<std::size_t> others;
  for (auto x : set) others.push_back(t.device_vertex(x));
  for (std::size_t i = 1; i < set.size(); ++i) {
    const std::size_t s = t.device_vertex(set[0]), k = t.device_vertex(set[i]);
    best = std::min(best, g.max_flow(std::span(&s, 1), std::span(&k, 1), others));
  }
  return best;
}

}  // namespace

TEST_CASE("DGX-1 V100 graph: NVLink 2 hybrid cube-mesh on a PCIe Gen3 two-socket tree") {
  const NodeTopology t = load("dgx1_v100.txt");
  CHECK(t.gpu_count() == 8);
  CHECK(t.nic_count() == 4);
  CHECK(t.nvlink_kind() == LinkKind::kNvLink2);
  CHECK(t.pcie_kind() == LinkKind::kPcieGen3);
  CHECK_FALSE(t.has_nvswitch());
  // NV2 = 2 x 25 GB/s; a SYS pair's widest path is the PCIe Gen3 x16 link (UPI is 2 x 20.8).
  CHECK(t.path_bandwidth_gbps(0, 3) == doctest::Approx(50.0));
  CHECK(t.path_bandwidth_gbps(0, 5) == doctest::Approx(15.75));
  CHECK(t.path_latency_us(0, 3) == doctest::Approx(0.5));
  // GPU0 and mlx5_0 share a PCIe switch: two PCIe hops.
  CHECK(t.path_latency_us(0, 8) == doctest::Approx(1.0));
  CHECK(t.path_bandwidth_gbps(0, 8) == doctest::Approx(15.75));
  CHECK(t.graph().vertex_count() > 12);
}

TEST_CASE("known answer: on a DGX-1 the best 4 GPUs are a fully NVLinked quad") {
  const NodeTopology t = load("dgx1_v100.txt");
  const G all{0, 1, 2, 3, 4, 5, 6, 7};
  GpuPick p = t.best_gpus(all, 4);
  REQUIRE(p.found());
  CHECK(p.exact);
  CHECK(p.gpus == G{0, 1, 2, 3});
  for (std::size_t a = 0; a < 4; ++a)
    for (std::size_t b = a + 1; b < 4; ++b) CHECK(t.link(p.gpus[a], p.gpus[b]).cls == PairClass::kNvLink);
  // Hand-worked bus bandwidth: GPU0 has NV1+NV1+NV2 = 4 links (100 GB/s) into the quad plus its
  // 15.75 GB/s PCIe link; the ring {0,1,5,4} has only 3 links (75 GB/s) per GPU.
  CHECK(p.score.bus_bandwidth_gbps == doctest::Approx(115.75));
  auto ring = t.score(G{0, 1, 4, 5}, 64.0 * 1024 * 1024);
  REQUIRE(ring.ok());
  CHECK(ring->bus_bandwidth_gbps == doctest::Approx(90.75));
  CHECK(ring->span == PairLink{PairClass::kSys, 0});
  CHECK(ring->allreduce_us > p.score.allreduce_us);
  // With GPU1 busy, the best quad is the other one.
  GpuPick q = t.best_gpus(G{0, 2, 3, 4, 5, 6, 7}, 4);
  CHECK(q.gpus == G{4, 5, 6, 7});
  // Pairs: an NV2 pair beats an NV1 pair.
  GpuPick pair = t.best_gpus(all, 2);
  CHECK(t.link(pair.gpus[0], pair.gpus[1]) == PairLink{PairClass::kNvLink, 2});
}

TEST_CASE("known answer: PCIe-only two-socket server takes 2 GPUs under one switch, never across sockets") {
  const NodeTopology t = load("pcie_2socket.txt");
  CHECK(t.pcie_kind() == LinkKind::kPcieGen4);
  CHECK(t.best_gpus(G{0, 1, 2, 3, 4, 5, 6, 7}, 2).gpus == G{0, 1});
  // {2,3} and {6,7} are both switch pairs; {6,7} wins because taking {2,3} would strand GPU1 with
  // only cross-socket partners (the leftover tie-break).
  CHECK(t.best_gpus(G{1, 2, 3, 4, 5, 6, 7}, 2).gpus == G{6, 7});
  CHECK(t.best_gpus(G{1, 2, 3, 4, 5}, 2).gpus == G{2, 3});
  CHECK(t.best_gpus(G{0, 3, 4, 6, 7}, 2).gpus == G{6, 7});
  // No switch pair free: the same-socket pair, never a SYS pair. {4,6} share a host bridge (PHB),
  // {0,2} only a NUMA node (NODE): equal bandwidth and latency, the tighter class wins.
  GpuPick p = t.best_gpus(G{0, 2, 4, 6}, 2);
  CHECK(p.gpus == G{4, 6});
  CHECK(p.score.span == PairLink{PairClass::kPhb, 0});
  for (std::uint16_t a : {0, 2})
    for (std::uint16_t b : {4, 6}) CHECK(t.score(G{a, b}, 64.0 * 1024 * 1024)->allreduce_us > p.score.allreduce_us);
  // Hand-worked: PIX pair = two PCIe Gen4 hops (1 us); ring of 2 at 64 MiB over 31.5 GB/s.
  auto s = t.score(G{0, 1}, 64.0 * 1024 * 1024);
  REQUIRE(s.ok());
  CHECK(s->bus_bandwidth_gbps == doctest::Approx(31.5));
  CHECK(s->latency_us == doctest::Approx(1.0));
  CHECK(s->ring_us == doctest::Approx(2.0 * 0.5 * 67108864.0 / 31500.0 + 2.0 * 1.0));
}

TEST_CASE("tie-break: among equal choices keep the better-connected free GPUs together") {
  const NodeTopology t = load("pcie_2socket.txt");
  // One GPU of {2,3,4}: all score the same; taking 4 leaves the PIX pair {2,3} whole.
  GpuPick p = t.best_gpus(G{2, 3, 4}, 1);
  CHECK(p.gpus == G{4});
  // Two of {0,1,2,6,7}: {0,1} and {6,7} tie on time and class; taking {0,1} would leave GPU2 with
  // only cross-socket partners, taking {6,7} leaves it next to {0,1}.
  GpuPick two = t.best_gpus(G{0, 1, 2, 6, 7}, 2);
  CHECK(two.gpus == G{6, 7});
  // Without a tie the leftover does not matter: the first of equal picks in enumeration order.
  CHECK(t.best_gpus(G{0, 1, 6, 7}, 2).gpus == G{0, 1});
}

TEST_CASE("HGX H100: NVSwitch detected, every set the same bandwidth, NUMA from the affinity column") {
  const NodeTopology t = load("hgx_h100.txt");
  CHECK(t.has_nvswitch());
  CHECK(t.nvlink_kind() == LinkKind::kNvLink4);
  CHECK(t.pcie_kind() == LinkKind::kPcieGen5);
  // 18 links x 25 GB/s through the switch, plus the GPU's PCIe Gen5 link.
  CHECK(t.pair_bus_bandwidth_gbps(0, 1) == doctest::Approx(450.0 + 63.0));
  // Across sockets the PCIe share of the cut is the UPI pair (2 x 20.8) instead.
  CHECK(t.pair_bus_bandwidth_gbps(0, 7) == doctest::Approx(450.0 + 41.6));
  CHECK(t.path_latency_us(0, 7) == doctest::Approx(0.5));
  CHECK(t.score(G{0, 1, 2, 3, 4, 5, 6, 7}, 1e6)->bus_bandwidth_gbps == doctest::Approx(513.0));
  CHECK(t.best_gpus(G{0, 1, 2, 3, 4, 5, 6, 7}, 8).gpus.size() == 8);
}

TEST_CASE("bad input to score and best_gpus is a value with a reason") {
  const NodeTopology t = load("pcie_2socket.txt");
  CHECK_FALSE(t.score(G{0, 9}, 1).ok());
  CHECK(t.score(G{0, 0}, 1).error().message == "gpus[1]: GPU 0 repeated");
  CHECK_FALSE(t.score(G{0}, -1).ok());
  CHECK(t.best_gpus(G{0, 1}, 3).reason == "gpus: cannot take 3 of 2 free GPUs");
  CHECK(t.best_gpus(G{0, 1}, 0).reason == "gpus: cannot take 0 of 2 free GPUs");
  CHECK(t.best_gpus(G{0, 42}, 1).reason == "free: GPU 42 out of range (the node has 8)");
  auto single = t.score(G{3}, 1e6);
  REQUIRE(single.ok());
  CHECK(single->allreduce_us == 0);
  // Matrix-level errors from build().
  std::vector<Device> d(2);
  d[0].name = "GPU0";
  d[1].name = "GPU1";
  auto asym = NodeTopology::build(d, {{PairClass::kSelf, 0}, {PairClass::kPix, 0}, {PairClass::kSys, 0}, {PairClass::kSelf, 0}});
  REQUIRE_FALSE(asym.ok());
  CHECK(asym.error().message.find("asymmetric") != std::string::npos);
  auto gen = NodeTopology::build(d, {{PairClass::kSelf, 0}, {PairClass::kPix, 0}, {PairClass::kPix, 0}, {PairClass::kSelf, 0}},
                                 {.nvlink_generation = 9});
  REQUIRE_FALSE(gen.ok());
  CHECK(gen.error().message == "nvlink_generation: expected 1..5, got 9");
}

TEST_CASE("property: picks are k distinct free GPUs and exhaustive search is optimal") {
  gpusched::SplitMix64 rng{7};
  for (const char* name : {"dgx1_v100.txt", "pcie_2socket.txt", "hgx_h100.txt"}) {
    const NodeTopology t = load(name);
    for (int round = 0; round < 40; ++round) {
      const auto free_mask = static_cast<std::uint32_t>(rng.next() & 0xff);
      const G free = mask_to_set(free_mask);
      if (free.empty()) continue;
      const std::size_t k = 1 + rng.next() % free.size();
      const double bytes = static_cast<double>(1u << (rng.next() % 28));
      GpuPick p = t.best_gpus(free, k, {bytes});
      REQUIRE(p.found());
      CHECK(p.gpus.size() == k);
      CHECK(std::is_sorted(p.gpus.begin(), p.gpus.end()));
      CHECK(std::adjacent_find(p.gpus.begin(), p.gpus.end()) == p.gpus.end());
      for (auto g : p.gpus) CHECK(((free_mask >> g) & 1U) == 1U);
      // Oracle: no k-subset of the free GPUs has a lower estimated time.
      for (std::uint32_t s = 1; s < 256; ++s) {
        if ((s & ~free_mask) || static_cast<std::size_t>(std::popcount(s)) != k) continue;
        const double other = t.score(mask_to_set(s), bytes)->allreduce_us;
        CHECK(p.score.allreduce_us <= other * (1 + 1e-9));
      }
    }
  }
}

TEST_CASE("property: adding NVLink never worsens a score") {
  gpusched::SplitMix64 rng{99};
  for (int round = 0; round < 25; ++round) {
    // A random 6-GPU box: PCIe classes from random switch/socket assignment, random NV bonds.
    const std::size_t n = 6;
    std::vector<Device> devs(n);
    std::vector<int> sw(n), sock(n);
    for (std::size_t i = 0; i < n; ++i) {
      devs[i].name = "GPU" + std::to_string(i);
      sw[i] = static_cast<int>(rng.next() % 3);
      sock[i] = sw[i] / 2;
    }
    std::vector<PairLink> m(n * n);
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < n; ++b) {
        PairLink l{PairClass::kSelf, 0};
        if (a != b) l = sw[a] == sw[b] ? PairLink{PairClass::kPix, 0} : sock[a] == sock[b] ? PairLink{PairClass::kPhb, 0} : PairLink{PairClass::kSys, 0};
        m[a * n + b] = l;
      }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b)
        if (m[a * n + b].cls == PairClass::kSys && rng.next() % 2)
          m[a * n + b] = m[b * n + a] = PairLink{PairClass::kNvLink, static_cast<std::uint8_t>(1 + rng.next() % 2)};
    const NodeTopologyOptions opt{.nvlink_generation = 2, .pcie_generation = 3, .upi_links = 2};
    auto before = NodeTopology::build(devs, m, opt);
    REQUIRE(before.ok());
    // Upgrade one SYS pair to NV1 or one NV pair by one more link (SYS pairs carry no PCIe
    // grouping, so the tree is unchanged; a faster link is only added).
    std::vector<std::pair<std::size_t, std::size_t>> cand;
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b)
        if (m[a * n + b].cls == PairClass::kSys || m[a * n + b].cls == PairClass::kNvLink) cand.emplace_back(a, b);
    if (cand.empty()) continue;
    auto [a, b] = cand[rng.next() % cand.size()];
    PairLink up = m[a * n + b].cls == PairClass::kSys ? PairLink{PairClass::kNvLink, 1}
                                                      : PairLink{PairClass::kNvLink, static_cast<std::uint8_t>(m[a * n + b].nvlinks + 1)};
    m[a * n + b] = m[b * n + a] = up;
    auto after = NodeTopology::build(devs, m, opt);
    REQUIRE(after.ok());
    for (std::uint32_t s = 1; s < (1u << n); ++s) {
      const G set = mask_to_set(s);
      const SetScore x = *before->score(set, 1 << 24), y = *after->score(set, 1 << 24);
      CHECK(y.bus_bandwidth_gbps >= x.bus_bandwidth_gbps);
      CHECK(y.latency_us <= x.latency_us);
      CHECK(y.allreduce_us <= x.allreduce_us * (1 + 1e-12));
    }
  }
}

TEST_CASE("oracle: the cut model is an upper bound of Boost max-flow, exact on trees and NVSwitch") {
  for (const char* name : {"pcie_2socket.txt", "hgx_h100.txt", "dgx1_v100.txt"}) {
    const NodeTopology t = load(name);
    const bool exact_expected = std::string(name) != "dgx1_v100.txt";
    for (std::uint32_t s = 1; s < 256; ++s) {
      const G set = mask_to_set(s);
      if (set.size() < 2) continue;
      const double fast = t.score(set, 1)->bus_bandwidth_gbps;
      const double exact = exact_cut(t, set);
      CHECK(fast >= exact - 1e-6);
      if (exact_expected) CHECK(fast == doctest::Approx(exact));
    }
  }
}

TEST_CASE("NVLink domain (GB200 NVL72 shape): best 32 of 72 takes 8 whole trays") {
  const NodeTopology t = NodeTopology::nvlink_domain(18, 4, LinkKind::kNvLink5, 18);
  CHECK(t.gpu_count() == 72);
  G free(72);
  for (std::uint16_t i = 0; i < 72; ++i) free[i] = i;
  // Trays 0 and 1 half busy: the pick should not break the whole trays left.
  free.erase(std::remove_if(free.begin(), free.end(), [](std::uint16_t g) { return g == 0 || g == 1 || g == 4; }),
             free.end());
  GpuPick p = t.best_gpus(free, 32);
  REQUIRE(p.found());
  CHECK_FALSE(p.exact);
  CHECK(p.gpus.size() == 32);
  std::vector<int> per_tray(18, 0);
  for (auto g : p.gpus) ++per_tray[g / 4];
  for (int c : per_tray) CHECK((c == 0 || c == 4));
  CHECK(p.score.bus_bandwidth_gbps >= 900.0);
  // 6 GPUs: a full tray plus the partial tray with 2 free (best fit), not two full trays.
  GpuPick six = t.best_gpus(free, 6);
  std::vector<int> six_tray(18, 0);
  for (auto g : six.gpus) ++six_tray[g / 4];
  CHECK(std::count(six_tray.begin(), six_tray.end(), 4) == 1);
  CHECK(std::count(six_tray.begin(), six_tray.end(), 2) == 1);
}
