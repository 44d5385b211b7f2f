// Profile tables and layouts: known facts from NVIDIA's MIG User Guide and -lgipp output.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "gpusched/core/mig_layout.hpp"
#include "gpusched/core/mig_profiles.hpp"

using namespace gpusched::mig;

namespace {

const MigGpuSpec& table(std::string_view name) {
  const MigCatalog& c = MigCatalog::builtin();
  auto id = c.find(name);
  REQUIRE(id.has_value());
  return c.spec(*id);
}

int idx(const MigGpuSpec& spec, std::uint32_t id) {
  const int p = spec.find_id(id);
  REQUIRE(p >= 0);
  return p;
}

}  // namespace

TEST_CASE("built-in tables are valid and keyed by profile ID") {
  const MigCatalog& c = MigCatalog::builtin();
  REQUIRE(c.size() == 5);
  for (std::size_t m = 0; m < c.size(); ++m) {
    const MigGpuSpec& spec = c.spec(static_cast<MigModelId>(m));
    CHECK_MESSAGE(validate_spec(spec).ok(), spec.model);
    for (const MigProfile& p : spec.profiles) {
      CHECK_MESSAGE(!p.source.empty(), p.name);
      // Every -lgip "Total" equals what placements and limits allow on an empty GPU.
      Occupancy occ;
      int placed = 0;
      const int pi = spec.find_id(p.id);
      for (int s = 0; s < spec.memory_slots; ++s)
        if (can_add(spec, occ, pi, s)) {
          add_instance(spec, occ, pi, s);
          ++placed;
        }
      CHECK_MESSAGE(placed == p.max_instances, spec.model, " ", p.name);
    }
  }
  // Aliases of the core registry resolve.
  CHECK(c.find("NVIDIA-A100-SXM4-40GB").has_value());
  CHECK(c.find("A100-PCIE-40GB") == c.find("A100-SXM4-40GB"));
  CHECK(c.find("H100-80GB-HBM3") == c.find("H100-80GB"));
  CHECK(c.find("A30") == c.find("A30-24GB"));
  CHECK_FALSE(c.find("T4").has_value());
  CHECK_FALSE(c.find("no-such-gpu").has_value());
}

TEST_CASE("-lgipp facts: A100-40GB placements") {
  const MigGpuSpec& a100 = table("A100-SXM4-40GB");
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 19))].starts == 0x7F);  // {0..6}:1
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 15))].starts == 0x55);  // {0,2,4,6}:2
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 14))].starts == 0x15);  // {0,2,4}:2
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 9))].starts == 0x11);   // {0,4}:4
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 9))].memory_slices == 4);
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 5))].starts == 0x01);   // {0}:4
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 0))].memory_slices == 8);
  // The same ID means different geometry on A30.
  const MigGpuSpec& a30 = table("A30-24GB");
  CHECK(a30.profiles[static_cast<std::size_t>(idx(a30, 14))].compute_slices == 1);
  CHECK(a100.profiles[static_cast<std::size_t>(idx(a100, 14))].compute_slices == 2);
}

TEST_CASE("known layouts on A100-40GB") {
  const MigGpuSpec& a100 = table("A100-SXM4-40GB");
  SUBCASE("seven 1g.5gb fit, an eighth does not") {
    std::vector<MigInstance> seven;
    for (std::uint8_t s = 0; s < 7; ++s) seven.push_back({19, s});
    CHECK(validate_layout(a100, seven).ok());
    seven.push_back({19, 7});
    auto r = validate_layout(a100, seven);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("instances[7].start: 7 is not a placement of 1g.5gb") != std::string::npos);
  }
  SUBCASE("4g.20gb + 3g.20gb fit on current drivers, not before R510") {
    const std::vector<MigInstance> l = {{5, 0}, {9, 4}};
    CHECK(validate_layout(a100, l).ok());
    CHECK_FALSE(validate_layout(a100, l, LayoutRules{.pre_r510 = true}).ok());
  }
  SUBCASE("two 3g.20gb leave no room for a 1g.5gb") {
    auto occ = validate_layout(a100, std::vector<MigInstance>{{9, 0}, {9, 4}});
    REQUIRE(occ.ok());
    CHECK(occ->used == 0xFF);
    CHECK(feasible_starts(a100, *occ, idx(a100, 19)) == 0);
    CHECK(is_maximal(a100, *occ));
  }
  SUBCASE("overlap is reported with both instances") {
    auto r = validate_layout(a100, std::vector<MigInstance>{{5, 0}, {14, 2}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "instances[1]: 2g.10gb at 2 overlaps instances[0] (4g.20gb at 0..3)");
  }
  SUBCASE("unknown profile ID") {
    auto r = validate_layout(a100, std::vector<MigInstance>{{42, 0}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "instances[0].profile_id: 42 is not a profile of A100-SXM4-40GB");
  }
  SUBCASE("only one +me instance per GPU") {
    CHECK_FALSE(validate_layout(a100, std::vector<MigInstance>{{20, 0}, {20, 1}}).ok());
  }
  SUBCASE("1g.10gb takes two memory slices: four fit, leaving nothing") {
    auto occ = validate_layout(a100, std::vector<MigInstance>{{15, 0}, {15, 2}, {15, 4}, {15, 6}});
    REQUIRE(occ.ok());
    CHECK(occ->used == 0xFF);
    CHECK(occ->compute == 4);
  }
  SUBCASE("7g.40gb excludes everything") {
    auto occ = validate_layout(a100, std::vector<MigInstance>{{0, 0}});
    REQUIRE(occ.ok());
    CHECK(is_maximal(a100, *occ));
  }
}

TEST_CASE("A30: one media-extension instance of any size per GPU") {
  const MigGpuSpec& a30 = table("A30-24GB");
  CHECK(validate_layout(a30, std::vector<MigInstance>{{21, 0}, {14, 1}, {6, 2}}).ok() == false);
  CHECK(validate_layout(a30, std::vector<MigInstance>{{21, 0}, {14, 1}, {5, 2}}).ok());
  CHECK(validate_layout(a30, std::vector<MigInstance>{{14, 0}, {14, 1}, {14, 2}, {14, 3}}).ok());
}

// An independent brute force: every subset of (profile, start) candidates, checked with
// validate_layout only. Used as the oracle for maximal_layouts.
std::set<std::vector<std::pair<int, int>>> brute_force_maximal(const MigGpuSpec& spec) {
  std::vector<MigInstance> cand;
  for (const MigProfile& p : spec.profiles)
    for (int s = 0; s < spec.memory_slots; ++s)
      if ((p.starts >> s) & 1U) cand.push_back({p.id, static_cast<std::uint8_t>(s)});
  std::set<std::vector<std::pair<int, int>>> valid;
  const std::size_t n = cand.size();
  REQUIRE(n < 30);
  // Depth-first over subsets with pruning on validity (a superset of an invalid set is invalid).
  std::vector<MigInstance> cur;
  std::vector<std::vector<MigInstance>> all_valid;
  auto rec = [&](auto&& self, std::size_t i) -> void {
    if (i == n) {
      all_valid.push_back(cur);
      return;
    }
    self(self, i + 1);
    cur.push_back(cand[i]);
    if (validate_layout(spec, cur).ok()) self(self, i + 1);
    cur.pop_back();
  };
  rec(rec, 0);
  auto key = [](std::vector<MigInstance> l) {
    std::vector<std::pair<int, int>> k;
    for (auto& x : l) k.emplace_back(x.start, x.profile_id);
    std::sort(k.begin(), k.end());
    return k;
  };
  for (const auto& l : all_valid) {
    bool maximal = true;
    for (const MigInstance& c : cand) {
      if (std::find(l.begin(), l.end(), c) != l.end()) continue;
      auto ext = l;
      ext.push_back(c);
      if (validate_layout(spec, ext).ok()) {
        maximal = false;
        break;
      }
    }
    if (maximal) valid.insert(key(l));
  }
  return valid;
}

TEST_CASE("maximal_layouts equals a brute-force enumeration on every built-in model") {
  const MigCatalog& c = MigCatalog::builtin();
  for (std::size_t m = 0; m < c.size(); ++m) {
    const MigGpuSpec& spec = c.spec(static_cast<MigModelId>(m));
    auto layouts = maximal_layouts(spec);
    std::set<std::vector<std::pair<int, int>>> got;
    for (const auto& l : layouts) {
      CHECK(validate_layout(spec, l).ok());
      CHECK(std::is_sorted(l.begin(), l.end(), [](auto& a, auto& b) { return a.start < b.start; }));
      std::vector<std::pair<int, int>> k;
      for (auto& x : l) k.emplace_back(x.start, x.profile_id);
      got.insert(k);
    }
    CHECK_MESSAGE(got.size() == layouts.size(), spec.model, ": duplicate layouts");
    CHECK_MESSAGE(got == brute_force_maximal(spec), spec.model);
  }
}

TEST_CASE("A100-40GB with the older driver's profiles: the 4g+3g rule changes the layouts") {
  // Old drivers offered 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb only.
  MigGpuSpec old = table("A100-SXM4-40GB");
  std::erase_if(old.profiles, [](const MigProfile& p) { return p.id == 20 || p.id == 15; });
  REQUIRE(validate_spec(old).ok());
  auto now = maximal_layouts(old);
  auto before = maximal_layouts(old, LayoutRules{.pre_r510 = true});
  auto has = [](const std::vector<std::vector<MigInstance>>& ls, const std::vector<MigInstance>& l) {
    return std::find(ls.begin(), ls.end(), l) != ls.end();
  };
  const std::vector<MigInstance> four_three = {{5, 0}, {9, 4}};
  CHECK(has(now, four_three));
  CHECK_FALSE(has(before, four_three));
  // Before R510 the 4g.20gb is followed by smaller instances only: 4g + 2g + 1g (the 2g at 4).
  CHECK(has(before, std::vector<MigInstance>{{5, 0}, {14, 4}, {19, 6}}));
}

TEST_CASE("profile names resolve by geometry, not by string") {
  auto g = parse_profile_name("nvidia.com/mig-3g.39gb");
  REQUIRE(g.has_value());
  CHECK(g->compute_slices == 3);
  CHECK(g->memory_gb == 39);
  const MigGpuSpec& a100_80 = table("A100-80GB");
  const int p = match_profile(a100_80, *g);
  REQUIRE(p >= 0);
  CHECK(a100_80.profiles[static_cast<std::size_t>(p)].id == 9);  // the driver's 3g.39gb is 3g.40gb
  CHECK(parse_profile_name("MIG 1g.5gb+me")->media_extensions);
  CHECK(match_profile(table("A100-SXM4-40GB"), *parse_profile_name("1g.5gb+me")) == idx(table("A100-SXM4-40GB"), 20));
  CHECK(match_profile(table("A100-SXM4-40GB"), *parse_profile_name("1g.10gb")) == idx(table("A100-SXM4-40GB"), 15));
  CHECK(match_profile(table("A100-SXM4-40GB"), *parse_profile_name("3g.40gb")) == -1);
  CHECK_FALSE(parse_profile_name("3g").has_value());
  CHECK_FALSE(parse_profile_name("3g.20gbx").has_value());
  CHECK_FALSE(parse_profile_name("0g.20gb").has_value());
  CHECK_FALSE(parse_profile_name("").has_value());
}

TEST_CASE("validate_spec rejects bad tables with a named field") {
  MigGpuSpec s = table("A30-24GB");
  s.profiles[0].starts = 0x10;  // start 4 on a 4-slice GPU
  auto st = validate_spec(s);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("placement start 4") != std::string::npos);
  s = table("A30-24GB");
  s.profiles[1].id = s.profiles[0].id;
  CHECK(validate_spec(s).error().message.find("duplicate profile ID") != std::string::npos);
  MigCatalog c;
  CHECK(c.add(table("A30-24GB")).ok());
  CHECK_FALSE(c.add(table("A30-24GB")).ok());
}
