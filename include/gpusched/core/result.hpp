// gpusched/core/result.hpp — error values for input handling.
//
// Readers and validators return `Result<T>`: either a value or an `Error` with a code, the path of
// the offending field ("nodes[3].gpus") and a message naming it and its value ("nodes[3].gpus:
// expected a non-negative integer, got -2"). No exception crosses the library's API. Policy code
// does not use `Error` for infeasibility: an unplaceable job is a normal answer with a verdict and
// reasons (see gpusched/core/outcome.hpp), not a failure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gpusched {

// What kind of input error it is, so callers (the C API, bindings, an orchestrator) can branch on it
// without parsing the message.
enum class ErrorCode : std::uint8_t {
  kInvalidValue = 0,  // wrong type, negative, out of the documented range
  kMissingField,
  kUnknownField,      // a field no reader of this format knows (see docs/formats.md: rejected)
  kDuplicate,         // a duplicate name or id
  kUnknownName,       // a reference to something not defined (GPU model, queue, group, node)
  kOverflow,          // a quantity or a sum beyond the representable range
  kLimit,             // a size or nesting depth over the reader's bound
  kParse,             // malformed text (JSON, YAML, CSV, nvidia-smi output)
  kInconsistent,      // values that contradict each other (a layout that overlaps, min > max)
  kIo,                // a file that cannot be read or written
  kState,             // an operation the current state refuses (over-allocation, unknown node)
};

constexpr std::string_view error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kInvalidValue: return "invalid_value";
    case ErrorCode::kMissingField: return "missing_field";
    case ErrorCode::kUnknownField: return "unknown_field";
    case ErrorCode::kDuplicate: return "duplicate";
    case ErrorCode::kUnknownName: return "unknown_name";
    case ErrorCode::kOverflow: return "overflow";
    case ErrorCode::kLimit: return "limit";
    case ErrorCode::kParse: return "parse";
    case ErrorCode::kInconsistent: return "inconsistent";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kState: return "state";
  }
  return "?";
}

// `message` is complete on its own (it already names the field); `field` is the path alone, for
// programs ("nodes[3].gpus", empty when the error is about no one field).
// (A constructor, not an aggregate, so `Error{message}` stays valid without -Wextra's missing-field
// warning.)
struct Error {
  Error() = default;
  Error(std::string message_, ErrorCode code_ = ErrorCode::kInvalidValue, std::string field_ = {})  // NOLINT
      : message(std::move(message_)), code(code_), field(std::move(field_)) {}
  std::string message;
  ErrorCode code = ErrorCode::kInvalidValue;
  std::string field;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Result<void>: success or an error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace gpusched
