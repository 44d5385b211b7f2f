// Shared by the libFuzzer harnesses: the input as text, and the one property every harness checks.
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

#include "gpusched/core/result.hpp"

namespace gpusched::fuzz {

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
