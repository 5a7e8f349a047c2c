// Error, Status and the error-code table's name/canonical lookups.
#include "tenferro/base/status.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tenferro/base/assert.h"

namespace tenferro {
namespace {

struct CodeInfo {
  std::string_view name;
  ErrorCode canonical;
};

constexpr CodeInfo kCodeInfo[] = {
#define TENFERRO_ERROR_CODE(name, str, canonical) {str, ErrorCode::k##canonical},
#include "tenferro/base/error_code.def"
};

void append_indented(std::string& out, const Error& error, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  out += fmt::format("{} {}: {}", to_string(error.stage()), to_string(error.code()), error.message());
  const Error* cause = error.cause();
  // A cause the message already quotes whole (same code and stage, nothing
  // of its own beneath) adds no line: the CLI printed configuration errors
  // twice (the CLI audit of 2026-12-06).
  if (cause != nullptr && cause->cause() == nullptr && cause->suppressed().empty() && cause->code() == error.code() &&
      cause->stage() == error.stage() && std::string_view(error.message()).ends_with(cause->message())) {
    cause = nullptr;
  }
  if (cause != nullptr) {
    out += '\n';
    out.append(static_cast<std::size_t>(depth) * 2 + 2, ' ');
    out += "caused by:\n";
    append_indented(out, *cause, depth + 2);
  }
  for (const Error& suppressed : error.suppressed()) {
    out += '\n';
    out.append(static_cast<std::size_t>(depth) * 2 + 2, ' ');
    out += "suppressed:\n";
    append_indented(out, suppressed, depth + 2);
  }
}

}  // namespace

std::string_view to_string(ErrorCode code) noexcept {
  const auto index = static_cast<std::size_t>(code);
  return index < std::size(kCodeInfo) ? kCodeInfo[index].name : std::string_view("invalid_code");
}

ErrorCode canonical_code(ErrorCode code) noexcept {
  const auto index = static_cast<std::size_t>(code);
  return index < std::size(kCodeInfo) ? kCodeInfo[index].canonical : ErrorCode::kUnknown;
}

std::string_view to_string(ErrorStage stage) noexcept {
  switch (stage) {
    case ErrorStage::kNone:
      return "api";
    case ErrorStage::kCompile:
      return "compile";
    case ErrorStage::kConfiguration:
      return "configuration";
    case ErrorStage::kPrepare:
      return "prepare";
    case ErrorStage::kEnqueue:
      return "enqueue";
    case ErrorStage::kCompletion:
      return "completion";
  }
  return "invalid_stage";
}

Error::Error(ErrorCode code, ErrorStage stage, std::string message)
    : code_(code == ErrorCode::kOk ? ErrorCode::kInternal : code), stage_(stage), message_(std::move(message)) {
  if (code == ErrorCode::kOk) message_ = "error constructed with code ok: " + message_;
}

const Error& Error::root_cause() const noexcept {
  const Error* e = this;
  while (e->cause() != nullptr) e = e->cause();
  return *e;
}

std::string Error::to_string() const {
  std::string out;
  append_indented(out, *this, 0);
  return out;
}

Error Error::with_cause(Error cause) const {
  Error copy = *this;
  copy.cause_ = std::make_shared<const Error>(std::move(cause));
  return copy;
}

Error Error::with_suppressed(Error suppressed) const {
  Error copy = *this;
  copy.suppressed_.push_back(std::move(suppressed));
  return copy;
}

Error Error::with_stage(ErrorStage stage) const {
  Error copy = *this;
  copy.stage_ = stage;
  return copy;
}

Status::Status(Error error) : error_(std::make_shared<const Error>(std::move(error))) {}

const Error& Status::error() const noexcept {
  TENFERRO_CHECK(error_ != nullptr);
  return *error_;
}

std::string_view Status::message() const noexcept {
  return ok() ? std::string_view() : std::string_view(error_->message());
}

std::string Status::to_string() const { return ok() ? std::string("ok") : error_->to_string(); }

Status Status::with_context(std::string context, ErrorStage stage) const {
  if (ok()) return *this;
  const ErrorStage s = stage == ErrorStage::kNone ? error_->stage() : stage;
  return Error(error_->code(), s, std::move(context)).with_cause(*error_);
}

Status Status::in_stage(ErrorStage stage) const {
  if (ok() || error_->stage() != ErrorStage::kNone) return *this;
  return error_->with_stage(stage);
}

Status status_from_current_exception(ErrorStage stage, std::string_view where) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::kResourceExhausted, stage, fmt::format("out of memory in {}", where));
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, stage, fmt::format("exception in {}: {}", where, e.what()));
  } catch (...) {
    return Error(ErrorCode::kInternal, stage, fmt::format("unknown exception in {}", where));
  }
}

namespace internal {

void assert_fail(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "tenferro internal invariant violated: %s at %s:%d\n", condition, file, line);
  std::abort();
}

void die_bad_result_access(const Status& status) noexcept {
  std::fprintf(stderr, "tenferro: value() of a failed Result: %s\n", status.to_string().c_str());
  std::abort();
}

}  // namespace internal
}  // namespace tenferro
