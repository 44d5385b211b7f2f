#include <doctest/doctest.h>
#include <fmt/format.h>

#include "gpusched/core/gpu_model.hpp"
#include "gpusched/core/quantity.hpp"
#include "gpusched/core/resources.hpp"

using namespace gpusched;

TEST_CASE("parse_quantity reads the Kubernetes forms") {
  CHECK(*parse_quantity("8", QuantityUnit::kCount) == 8);
  CHECK(*parse_quantity("500m", QuantityUnit::kMilli) == 500);
  CHECK(*parse_quantity("2", QuantityUnit::kMilli) == 2000);
  CHECK(*parse_quantity("0.5", QuantityUnit::kMilli) == 500);
  CHECK(*parse_quantity("1.5", QuantityUnit::kMilli) == 1500);
  CHECK(*parse_quantity("64Gi", QuantityUnit::kBytes) == 64 * kGiB);
  CHECK(*parse_quantity("512Mi", QuantityUnit::kBytes) == 512 * kMiB);
  CHECK(*parse_quantity("1G", QuantityUnit::kBytes) == 1000000000);
  CHECK(*parse_quantity("1.5Gi", QuantityUnit::kBytes) == 3 * kGiB / 2);
  CHECK(*parse_quantity("2k", QuantityUnit::kCount) == 2000);
}

TEST_CASE("parse_quantity rejects bad input with the text in the message") {
  for (const char* bad : {"", "-2", "abc", "5x", "1.", "0.0001", "99999999999999999999Pi", "1..2"}) {
    auto r = parse_quantity(bad, QuantityUnit::kMilli);
    CAPTURE(bad);
    if (std::string(bad) == "1.") {
      // "1." is accepted by Kubernetes as 1: we follow.
      CHECK(r.ok());
      continue;
    }
    REQUIRE_FALSE(r.ok());
    const std::string quoted = fmt::format("\"{}\"", bad);
    CHECK(r.error().message.find(quoted) != std::string::npos);
  }
  CHECK_FALSE(parse_quantity("500m", QuantityUnit::kCount).ok());
  CHECK_FALSE(parse_quantity("0.5", QuantityUnit::kBytes).ok());
  CHECK_FALSE(parse_quantity("9223372036854775808", QuantityUnit::kCount).ok());
  CHECK(*parse_quantity("9223372036854775807", QuantityUnit::kCount) == 9223372036854775807LL);
  CHECK_FALSE(parse_quantity("9223372036854775807", QuantityUnit::kMilli).ok());
  // The code tells a range problem from a malformed one: 2^63 overflows int64, "5x" is no quantity.
  CHECK(parse_quantity("9223372036854775808", QuantityUnit::kCount).error().code == ErrorCode::kOverflow);
  CHECK(parse_quantity("5x", QuantityUnit::kCount).error().code == ErrorCode::kInvalidValue);
}

TEST_CASE("parse_quantity follows resource.Quantity's grammar: exponents, E and Ei, bare points") {
  // k8s.io/apimachinery/pkg/api/resource: <number>(<binarySI>|<decimalSI>|e<signedNumber>|E<signedNumber>)
  CHECK(*parse_quantity("1e3", QuantityUnit::kCount) == 1000);
  CHECK(*parse_quantity("8e0", QuantityUnit::kCount) == 8);
  CHECK(*parse_quantity("1E3", QuantityUnit::kCount) == 1000);  // E followed by digits: an exponent
  CHECK(*parse_quantity("1e+3", QuantityUnit::kCount) == 1000);
  CHECK(*parse_quantity("5e-1", QuantityUnit::kMilli) == 500);
  CHECK(*parse_quantity("1e-3", QuantityUnit::kMilli) == 1);
  CHECK(*parse_quantity("1.5e3", QuantityUnit::kBytes) == 1500);
  CHECK(*parse_quantity("0e999", QuantityUnit::kCount) == 0);
  CHECK(*parse_quantity("1E", QuantityUnit::kBytes) == 1000000000000000000LL);  // a lone E is exa
  CHECK(*parse_quantity("1Ei", QuantityUnit::kBytes) == (std::int64_t{1} << 60));
  CHECK(*parse_quantity("7Ei", QuantityUnit::kBytes) == 7 * (std::int64_t{1} << 60));
  CHECK(*parse_quantity(".5", QuantityUnit::kMilli) == 500);
  CHECK(*parse_quantity("+2", QuantityUnit::kCount) == 2);
  CHECK(*parse_quantity("0.5Ki", QuantityUnit::kBytes) == 512);
  CHECK(*parse_quantity("0.0009765625Ki", QuantityUnit::kBytes) == 1);  // 2^-10 Ki: fives from the digits, twos from Ki
  CHECK(*parse_quantity("1.000000000000000000000000000000Ei", QuantityUnit::kBytes) == (std::int64_t{1} << 60));
  CHECK(*parse_quantity("0.000000000000000000001e24", QuantityUnit::kCount) == 1000);
  CHECK(*parse_quantity("0.00000000000000000000000000000000000001e41", QuantityUnit::kCount) == 1000);
  CHECK(*parse_quantity("9.223372036854775807e18", QuantityUnit::kCount) == 9223372036854775807LL);
  CHECK(*parse_quantity("9223372036854775.807k", QuantityUnit::kCount) == 9223372036854775807LL);
  CHECK(*parse_quantity("9223372036854775807m", QuantityUnit::kMilli) == 9223372036854775807LL);
  // Refused: past int64, finer than the unit, malformed exponents.
  for (const char* over : {"8Ei", "9.3e18", "1e19", "1e999", "9223372036854775808", "10E", "9223372036854775.808k"}) {
    CAPTURE(over);
    const auto r = parse_quantity(over, QuantityUnit::kCount);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kOverflow);
  }
  for (const char* bad : {"1e-1", "1e-999", "1.5", "3e-1Ki", "1e", "1e+", "1e3k", "1E3i", "1ei", "e3", ".", "1Eii"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_quantity(bad, QuantityUnit::kCount).ok());
  }
  CHECK_FALSE(parse_quantity("1e-4", QuantityUnit::kMilli).ok());
  // A long value is cut in the message.
  const std::string long_text(5000, '9');
  const auto r = parse_quantity(long_text, QuantityUnit::kCount);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.size() < 200);
  // ... as every reader cuts one: its first 100 bytes quoted, then its whole size.
  CHECK(r.error().message.find("\"" + std::string(100, '9') + "\"... (5000 bytes))") != std::string::npos);
}

TEST_CASE("format_bytes prints the exact Kubernetes spelling") {
  CHECK(format_bytes(64 * kGiB) == "64Gi");
  CHECK(format_bytes(512 * kMiB) == "512Mi");
  CHECK(format_bytes(1536 * kMiB) == "1536Mi");  // 1.5 GiB is not a whole GiB
  CHECK(format_bytes(1000) == "1000");
  CHECK(format_bytes(0) == "0");
}

TEST_CASE("ResourceVector arithmetic and comparison") {
  auto a = ResourceVector::of(1000, kGiB, 500);
  auto b = ResourceVector::of(2000, 2 * kGiB, 1000);
  CHECK(a.fits_within(b));
  CHECK_FALSE(b.fits_within(a));
  CHECK((b - a) == a);
  CHECK((a + a) == ResourceVector::of(2000, 2 * kGiB, 1000));
  CHECK((a - b).any_negative());
  CHECK(ResourceVector{}.is_zero());
  CHECK(a[Resource::kGpu] == 500);
}

TEST_CASE("GPU model registry: built-in rows, aliases, case, duplicates") {
  auto r = GpuModelRegistry::builtin();
  auto a100 = r.find("A100-SXM4-40GB");
  REQUIRE(a100);
  CHECK(r.model(*a100).memory == 40 * kGiB);
  CHECK(r.model(*a100).mig_capable);
  CHECK(r.find("nvidia-a100-sxm4-40gb") == a100);
  CHECK(r.find("NVIDIA A100-SXM4-40GB") == a100);
  CHECK(r.find("V100M16"));
  CHECK_FALSE(r.model(*r.find("T4")).mig_capable);
  CHECK_FALSE(r.find("Z9000"));
  CHECK_FALSE(r.add(GpuModel{.name = "t4", .memory = 1}).ok());
  auto added = r.add(GpuModel{"MI300X", {"AMD-MI300X"}, 192 * kGiB, false, "AMD data sheet"});
  REQUIRE(added.ok());
  CHECK(r.find("amd-mi300x") == *added);
  for (int i = 0; r.size() < kMaxGpuModels; ++i) REQUIRE(r.add(GpuModel{.name = fmt::format("X{}", i)}).ok());
  CHECK_FALSE(r.add(GpuModel{.name = "one-too-many"}).ok());
}
