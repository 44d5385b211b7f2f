#include <doctest/doctest.h>

#include "gpusched/core/gpu_model.hpp"

using namespace gpusched;

TEST_CASE("adding a model reports bad input as an Error with a code and the field") {
  GpuModelRegistry r = GpuModelRegistry::builtin();
  auto empty = r.add(GpuModel{"", {}, kGiB, false, ""});
  REQUIRE_FALSE(empty);
  CHECK(empty.error().code == ErrorCode::kMissingField);
  CHECK(empty.error().field == "name");

  auto negative = r.add(GpuModel{"X1", {}, -1, false, ""});
  REQUIRE_FALSE(negative);
  CHECK(negative.error().code == ErrorCode::kInvalidValue);
  CHECK(negative.error().field == "memory");
  CHECK(negative.error().message == "gpu model X1: memory must be non-negative, got -1");

  auto taken_alias = r.add(GpuModel{"X2", {"nvidia-h100"}, kGiB, false, ""});
  REQUIRE_FALSE(taken_alias);
  CHECK(taken_alias.error().code == ErrorCode::kDuplicate);
  CHECK(taken_alias.error().message == "gpu model X2: alias nvidia-h100 already defined");

  auto added = r.add(GpuModel{"X3", {"x3-16gb"}, 16 * kGiB, false, "test"});
  REQUIRE(added);
  CHECK(*added == 16);  // after the 16 built-in rows
  CHECK(r.find("X3-16GB") == *added);
}

TEST_CASE("a full registry is a kLimit error naming the count") {
  GpuModelRegistry r;
  for (int i = 0; i < 64; ++i) {
    // Appended, not "M" + to_string(i): GCC 12 at -O3 raises a false -Wstringop-overflow on that.
    std::string name = "M";
    name += std::to_string(i);
    REQUIRE(r.add(GpuModel{name, {}, 0, false, ""}));
  }
  auto full = r.add(GpuModel{"M64", {}, 0, false, ""});
  REQUIRE_FALSE(full);
  CHECK(full.error().code == ErrorCode::kLimit);
  CHECK(full.error().message == "gpu model M64: registry full (64 models)");
}
