// The one libFuzzer program of every harness: `gpusched_fuzz --target=<name> [libFuzzer flags]
// [corpus dirs]` fuzzes harness fuzz_<name>.cpp. libFuzzer ignores flags that start with "--", so
// the target flag passes through its own parsing untouched.
#include <cstdio>
#include <cstdlib>

#include "fuzz_harness.hpp"

namespace {

gpusched::fuzz::TargetFn chosen = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  constexpr std::string_view kFlag = "--target=";
  std::string_view name;
  for (int i = 1; i < *argc; ++i)
    if (std::string_view arg = (*argv)[i]; arg.substr(0, kFlag.size()) == kFlag) name = arg.substr(kFlag.size());
  for (const gpusched::fuzz::Target& t : gpusched::fuzz::targets())
    if (t.name == name) chosen = t.run;
  if (chosen == nullptr) {
    std::fprintf(stderr, "gpusched_fuzz: %s; the harnesses are:", name.empty() ? "no --target=<name>" : "unknown --target");
    for (const gpusched::fuzz::Target& t : gpusched::fuzz::targets())
      std::fprintf(stderr, " %.*s", static_cast<int>(t.name.size()), t.name.data());
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return chosen(data, size); }
