// The nvidia-smi parsers on real captured text (tests/fixtures/mig, copied with their source
// headers from /work/shared/data/nvidia-mig/samples).
#include <doctest/doctest.h>

#include "gpusched/mig/layout.hpp"
#include "gpusched/io/mig_nvidia_smi.hpp"
#include "test_util.hpp"

using namespace gpusched::mig;
using namespace gpusched::io;

namespace {

std::string fixture(const char* name) { return gpusched::testing::fixture_text(std::string("mig/") + name); }

const MigGpuSpec& builtin(std::string_view name) {
  return MigCatalog::builtin().spec(*MigCatalog::builtin().find(name));
}

}  // namespace

TEST_CASE("-lgip of A100-40GB (guide example, newer driver with 1g.10gb and +me)") {
  auto rows = parse_lgip(fixture("a100_40gb_lgip_mig_user_guide_copy.txt"));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 7);
  const LgipRow& r0 = rows->front();
  CHECK(r0.name == "1g.5gb");
  CHECK(r0.id == 19);
  CHECK(r0.free == 7);
  CHECK(r0.total == 7);
  CHECK(r0.memory_gib == doctest::Approx(4.75));
  CHECK(r0.sm == 14);
  CHECK(r0.ce == 1);
  const LgipRow& full = rows->back();
  CHECK(full.name == "7g.40gb");
  CHECK(full.id == 0);
  CHECK(full.dec == 5);
  CHECK(full.jpeg == 1);
  CHECK(full.ofa == 1);
}

TEST_CASE("-lgipp: plural and the singular 'Placement :' form") {
  auto rows = parse_lgipp(fixture("a100_40gb_lgipp_mig_user_guide.txt"));
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 7);
  CHECK(rows->at(0).id == 19);
  CHECK(rows->at(0).starts == 0x7F);
  CHECK(rows->at(0).size == 1);
  CHECK(rows->at(4).id == 9);
  CHECK(rows->at(4).starts == 0x11);
  CHECK(rows->at(4).size == 4);
  CHECK(rows->at(6).id == 0);  // "Placement : {0}:8"
  CHECK(rows->at(6).starts == 0x01);
  CHECK(rows->at(6).size == 8);
}

TEST_CASE("A100-40GB table read from nvidia-smi text equals the built-in one") {
  auto lgip = parse_lgip(fixture("a100_40gb_lgip_mig_user_guide_copy.txt"));
  auto lgipp = parse_lgipp(fixture("a100_40gb_lgipp_mig_user_guide.txt"));
  REQUIRE(lgip.ok());
  REQUIRE(lgipp.ok());
  auto spec = spec_from_nvidia_smi("A100-SXM4-40GB", *lgip, *lgipp);
  REQUIRE(spec.ok());
  CHECK(spec->memory_slots == 8);
  CHECK(spec->compute_slices == 7);
  CHECK(spec->max_instances == 7);
  CHECK(compare_specs(builtin("A100-SXM4-40GB"), *spec).empty());
  // And it yields the same maximal layouts.
  CHECK(maximal_layouts(*spec) == maximal_layouts(builtin("A100-SXM4-40GB")));
}

TEST_CASE("A30 capture from an older driver: only 2g.12gb+me (R525+) is missing") {
  const std::string text = fixture("a30_24gb_lgip_lgipp.txt");
  auto lgip = parse_lgip(text);
  auto lgipp = parse_lgipp(text);
  REQUIRE(lgip.ok());
  REQUIRE(lgipp.ok());
  CHECK(lgip->at(0).free == 0);  // four 1g.6gb already existed
  CHECK(lgip->at(0).total == 4);
  auto spec = spec_from_nvidia_smi("A30-24GB", *lgip, *lgipp);
  REQUIRE(spec.ok());
  CHECK(spec->memory_slots == 4);
  CHECK(spec->compute_slices == 4);
  auto diff = compare_specs(builtin("A30-24GB"), *spec);
  REQUIRE(diff.size() == 1);
  CHECK(diff[0].geometry);
  CHECK(diff[0].text == "profile ID 6 (2g.12gb+me): missing from the observed table");
}

TEST_CASE("a renamed profile is a note, a moved placement is a geometry difference") {
  MigGpuSpec observed = builtin("A100-80GB");
  observed.profiles[static_cast<std::size_t>(observed.find_id(9))].name = "3g.39gb";
  observed.profiles[static_cast<std::size_t>(observed.find_id(14))].starts = 0x05;
  auto diff = compare_specs(builtin("A100-80GB"), observed);
  REQUIRE(diff.size() == 2);  // in the reference's row order: ID 14 before ID 9
  CHECK(diff[0].geometry);
  CHECK(diff[0].text == "profile ID 14: placements {0,2,4} vs {0,2}");
  CHECK_FALSE(diff[1].geometry);
  CHECK(diff[1].text == "profile ID 9: name 3g.40gb vs 3g.39gb");
}

TEST_CASE("parser errors name the line") {
  SUBCASE("lgip with a broken instances column") {
    auto r = parse_lgip("|   0  MIG 1g.5gb        19     7-7        4.75       No     14     0     0   |\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "lgip line 1: instances \"7-7\" is not free/total");
  }
  SUBCASE("lgip row without its second line") {
    auto r = parse_lgip("|   0  MIG 1g.5gb        19     7/7        4.75       No     14     0     0   |\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("lacks its CE/JPEG/OFA line") != std::string::npos);
  }
  SUBCASE("lgipp start out of range") {
    auto r = parse_lgipp("x\nGPU  0 Profile ID 19 Placements: {0,9}:1\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("lgipp line 2: start \"9\"") == 0);
  }
  SUBCASE("lgipp without a size") {
    auto r = parse_lgipp("GPU  0 Profile ID 19 Placements: {0,1}\n");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("expected ':size'") != std::string::npos);
  }
  SUBCASE("empty text") {
    CHECK_FALSE(parse_lgip("No MIG-enabled devices found.\n").ok());
    CHECK_FALSE(parse_lgipp("").ok());
  }
  SUBCASE("a profile without placements") {
    auto lgip = parse_lgip(fixture("a100_40gb_lgip_mig_user_guide_copy.txt"));
    auto lgipp = parse_lgipp("GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1\n");
    REQUIRE(lgip.ok());
    REQUIRE(lgipp.ok());
    auto spec = spec_from_nvidia_smi("x", *lgip, *lgipp);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.error().message == "lgipp: no placements for profile ID 20 (\"1g.5gb+me\") of GPU 0");
  }
}
