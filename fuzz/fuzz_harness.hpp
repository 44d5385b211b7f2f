// Shared by the libFuzzer harnesses: how a harness registers, the input as text, and the one
// property every harness checks.
//
// The harnesses are one program (fuzz_main.cpp; each fuzz_<name>.cpp registers `name` with
// GPUSCHED_FUZZ_TARGET) run with `--target=<name>`: one link instead of one per reader, and the
// readers' headers compiled once (the harnesses are one translation unit in a unity build).
//
// A reader must return a value or an Error for ANY bytes: never throw, crash, hang, or run out of
// memory. libFuzzer with ASan and UBSan catches all but the first; an exception escaping
// LLVMFuzzerTestOneInput reaches std::terminate, which libFuzzer reports as a crash too. An Error
// must also be short and name something (a message of a megabyte, or an empty one, is a defect).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "gpusched/core/result.hpp"

namespace gpusched::fuzz {

using TargetFn = int (*)(const std::uint8_t* data, std::size_t size);
struct Target {
  std::string_view name;
  TargetFn run = nullptr;
};
inline std::vector<Target>& targets() {
  static std::vector<Target> all;
  return all;
}
struct Registration {
  Registration(std::string_view name, TargetFn run) { targets().push_back({name, run}); }
};

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <class T>
void check_result(const Result<T>& r) {
  if (!r.ok() && (r.error().message.empty() || r.error().message.size() > 4096)) std::abort();
}

inline void check_result(const Status& s) {
  if (!s.ok() && (s.error().message.empty() || s.error().message.size() > 4096)) std::abort();
}

}  // namespace gpusched::fuzz

// GPUSCHED_FUZZ_TARGET(name, data, size) { ... return 0; } defines and registers harness `name`.
#define GPUSCHED_FUZZ_TARGET(name, data, size)                                                       \
  int fuzz_target_##name(const std::uint8_t* data, std::size_t size);                               \
  static const ::gpusched::fuzz::Registration fuzz_registration_##name{#name, &fuzz_target_##name}; \
  int fuzz_target_##name(const std::uint8_t* data, std::size_t size)
