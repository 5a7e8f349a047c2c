// The error model: ErrorCode, ErrorStage, Error, Status and Result<T>.
//
// Note [Error reporting in the public API]
// Every public operation that can fail on user input returns Status or
// Result<T>; tenferro does not throw for user errors. Both are [[nodiscard]].
// An Error carries a code from the single table in error_code.def, the
// lifecycle stage that raised it (compile, configuration, prepare, enqueue,
// completion, or none for direct tensor/base API calls), a message saying
// what was expected and what was found, an optional cause (context added
// while propagating) and the errors suppressed while draining after a first
// failure. Only ErrorCode::kUnsupported lets capability resolution try the
// next candidate. Exceptions thrown by third-party code or user callbacks are
// caught at tenferro's boundaries and converted (status_from_exception), so
// no exception escapes a noexcept function or a C boundary. std::bad_alloc
// for user-sized buffers becomes kResourceExhausted; a failed internal
// invariant aborts through TENFERRO_CHECK (assert.h) and is a tenferro bug.
#pragma once

#if __cplusplus < 202002L
#error "tenferro's C++ headers need C++20: compile with -std=c++20 (or later)"
#endif

#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tenferro/base/consumer_prefix.h"

namespace tenferro {

/// Error codes, generated from error_code.def.
enum class ErrorCode : std::uint16_t {
#define TENFERRO_ERROR_CODE(name, str, canonical) k##name,
#include "tenferro/base/error_code.def"
};

/// The snake_case name of `code`, e.g. "shape_mismatch".
std::string_view to_string(ErrorCode code) noexcept;
/// The canonical class `code` refines (a canonical code maps to itself).
ErrorCode canonical_code(ErrorCode code) noexcept;

/// The lifecycle stage that raised an error (docs/errors.md).
enum class ErrorStage : std::uint8_t {
  kNone,           ///< a direct base/tensor API call outside the program lifecycle
  kCompile,        ///< semantic compile: invalid graph, payload, schema
  kConfiguration,  ///< runtime construction or reconfiguration
  kPrepare,        ///< capability, specialization, placement, planning
  kEnqueue,        ///< leases, allocation, launch, stale or foreign plans
  kCompletion,     ///< deferred kernel, device, transfer or async failure
};
std::string_view to_string(ErrorStage stage) noexcept;

/// An immutable description of one failure. Thread-compatible value type.
class Error {
 public:
  Error(ErrorCode code, ErrorStage stage, std::string message);

  ErrorCode code() const noexcept { return code_; }
  ErrorStage stage() const noexcept { return stage_; }
  const std::string& message() const noexcept { return message_; }
  /// The error this one wraps (added context), or nullptr.
  const Error* cause() const noexcept { return cause_.get(); }
  /// Errors observed after this (primary) one, e.g. while draining a run.
  std::span<const Error> suppressed() const noexcept { return suppressed_; }
  /// The innermost error of the cause chain (this one if it has no cause).
  const Error& root_cause() const noexcept;

  /// "stage code: message" plus the cause chain and suppressed errors.
  std::string to_string() const;

  /// A copy whose cause is `cause`; used to add context while propagating.
  Error with_cause(Error cause) const;
  /// A copy with `suppressed` appended to the suppressed list.
  Error with_suppressed(Error suppressed) const;
  /// A copy raised in `stage`.
  Error with_stage(ErrorStage stage) const;

 private:
  ErrorCode code_;
  ErrorStage stage_;
  std::string message_;
  std::shared_ptr<const Error> cause_;
  std::vector<Error> suppressed_;
};

/// Success or one Error. An ok Status holds no allocation; copying a failed
/// Status shares the immutable Error. Thread-compatible.
class [[nodiscard]] Status {
 public:
  /// An ok status.
  Status() noexcept = default;
  /// A failed status. `error.code()` must not be kOk.
  Status(Error error);  // NOLINT(google-explicit-constructor): errors convert implicitly

  bool ok() const noexcept { return error_ == nullptr; }
  /// kOk for an ok status.
  ErrorCode code() const noexcept { return ok() ? ErrorCode::kOk : error_->code(); }
  ErrorStage stage() const noexcept { return ok() ? ErrorStage::kNone : error_->stage(); }
  /// The error; precondition: !ok().
  const Error& error() const noexcept;
  /// The message, empty for an ok status.
  std::string_view message() const noexcept;
  std::string to_string() const;

  /// Wraps a failed status in a new error with the same code, `stage` (or the
  /// original stage when kNone) and `context` as message; an ok status stays ok.
  Status with_context(std::string context, ErrorStage stage = ErrorStage::kNone) const;
  /// Sets the stage of an error raised without one (kNone); no-op otherwise.
  Status in_stage(ErrorStage stage) const;

  /// Explicitly discards the status.
  void ignore() const noexcept {}

 private:
  std::shared_ptr<const Error> error_;
};

inline Status ok_status() noexcept { return Status(); }

/// Builds an Error with a fmt-formatted message.
template <class... Args>
[[nodiscard]] Error make_error(ErrorCode code, ErrorStage stage, fmt::format_string<Args...> format, Args&&... args) {
  return Error(code, stage, fmt::format(format, std::forward<Args>(args)...));
}

namespace internal {
[[noreturn]] void die_bad_result_access(const Status& status) noexcept;
}  // namespace internal

/// A value of type T or a failed Status. [[nodiscard]]; thread-compatible.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; use Result<T*>");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "use Status directly");

 public:
  using value_type = T;

  Result(const T& value) : has_value_(true) { new (&value_) T(value); }        // NOLINT
  Result(T&& value) : has_value_(true) { new (&value_) T(std::move(value)); }  // NOLINT
  template <class U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
           !std::is_same_v<std::remove_cvref_t<U>, Status> && !std::is_same_v<std::remove_cvref_t<U>, Error> &&
           !std::is_same_v<std::remove_cvref_t<U>, Result>) Result(U&& value)
      : has_value_(true) {  // NOLINT
    new (&value_) T(std::forward<U>(value));
  }
  /// A failed result. An ok `status` is a bug and is turned into kInternal.
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Error(ErrorCode::kInternal, ErrorStage::kNone, "Result built from an ok Status");
  }
  Result(Error error) : status_(std::move(error)) {}  // NOLINT

  Result(const Result& other) : status_(other.status_), has_value_(other.has_value_) {
    if (has_value_) new (&value_) T(other.value_);
  }
  Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : status_(std::move(other.status_)), has_value_(other.has_value_) {
    if (has_value_) new (&value_) T(std::move(other.value_));
  }
  Result& operator=(const Result& other) {
    if (this != &other) {
      reset();
      status_ = other.status_;
      if (other.has_value_) {
        new (&value_) T(other.value_);
        has_value_ = true;
      }
    }
    return *this;
  }
  Result& operator=(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      reset();
      status_ = std::move(other.status_);
      if (other.has_value_) {
        new (&value_) T(std::move(other.value_));
        has_value_ = true;
      }
    }
    return *this;
  }
  ~Result() { reset(); }

  bool ok() const noexcept { return has_value_; }
  /// ok_status() when a value is held.
  const Status& status() const& noexcept { return status_; }
  Status status() && noexcept { return std::move(status_); }

  T& value() & {
    check();
    return value_;
  }
  const T& value() const& {
    check();
    return value_;
  }
  // Note [Values out of temporary results]
  // On a temporary Result the value is moved out and returned by value,
  // not as T&&: `for (double v : *t.to_vector<double>())` and
  // `const auto& v = *f();` then extend the value's lifetime to the loop or
  // the reference. Returning T&& left both referring into the temporary,
  // destroyed at the end of the full-expression (a C++ user's audit read
  // freed memory that way). The cost is one move constructor.
  T value() && {
    check();
    return std::move(value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value_ ? value_ : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void check() const {
    if (!has_value_) [[unlikely]]
      internal::die_bad_result_access(status_);
  }
  void reset() noexcept {
    if (has_value_) {
      value_.~T();
      has_value_ = false;
    }
  }

  Status status_;
  bool has_value_ = false;
  union {
    T value_;
  };
};

namespace internal {
inline Status status_of(const Status& s) { return s; }
inline Status status_of(Status&& s) { return std::move(s); }
template <class T>
Status status_of(const Result<T>& r) {
  return r.status();
}
template <class T>
Status status_of(Result<T>&& r) {
  return std::move(r).status();
}
}  // namespace internal

/// Converts the exception being handled into a Status; call only inside a
/// catch block. std::bad_alloc maps to kResourceExhausted, anything else to
/// kInternal naming `where`.
Status status_from_current_exception(ErrorStage stage, std::string_view where) noexcept;

}  // namespace tenferro

#define TENFERRO_CONCAT_INNER(a, b) a##b
#define TENFERRO_CONCAT(a, b) TENFERRO_CONCAT_INNER(a, b)

/// Returns the failure of `expr` (a Status or Result) from the enclosing
/// function, which must return Status or Result<U>.
#define TENFERRO_TRY(expr)                                                                                      \
  do {                                                                                                          \
    auto&& tenferro_try_value_ = (expr);                                                                        \
    if (!tenferro_try_value_.ok()) [[unlikely]]                                                                 \
      return ::tenferro::internal::status_of(std::forward<decltype(tenferro_try_value_)>(tenferro_try_value_)); \
  } while (false)

/// `lhs = value of expr`, or returns its failure. `lhs` may declare a variable:
///   TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(shape, dtype));
#define TENFERRO_ASSIGN_OR_RETURN(lhs, expr) \
  TENFERRO_ASSIGN_OR_RETURN_IMPL(TENFERRO_CONCAT(tenferro_result_, __LINE__), lhs, expr)
#define TENFERRO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) [[unlikely]]                          \
    return std::move(tmp).status();                    \
  lhs = std::move(tmp).value()
