// TracedValue: a value recorded by one TraceContext, and TracedOperand, the
// operand type of every tracing call (a value or a failed result, so that
// calls compose and the first error propagates).
#pragma once

#include <cstdint>
#include <utility>

#include "tenferro/base/status.h"
#include "tenferro/program/program_value.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::compiler {

class TraceContext;

/// A value of one TraceContext with its metadata (dtype and symbolic
/// shape). Only the context that made it accepts it; any other context
/// answers kForeignValue (Note [Trace contexts and imports] in
/// trace_context.h). A default-constructed value is invalid. Value type;
/// thread-safe as a value.
class TracedValue {
 public:
  TracedValue() = default;

  bool valid() const noexcept { return context_id_ != 0; }
  /// The id of the TraceContext that recorded this value.
  std::uint64_t context_id() const noexcept { return context_id_; }
  const program::ValueMetadata& metadata() const noexcept { return metadata_; }
  DType dtype() const noexcept { return metadata_.dtype; }
  const program::SymbolicShape& shape() const noexcept { return metadata_.shape; }
  std::int64_t rank() const noexcept { return metadata_.rank(); }

 private:
  friend class TraceContext;
  TracedValue(std::uint64_t context_id, program::ProgramValue value, program::ValueMetadata metadata)
      : context_id_(context_id), value_(value), metadata_(std::move(metadata)) {}

  std::uint64_t context_id_ = 0;
  program::ProgramValue value_;
  program::ValueMetadata metadata_;
};

/// An operand of a tracing call: a TracedValue, or the Result of an earlier
/// call, so calls nest without checking each step:
///   Result<TracedValue> y = ctx.reduce_sum(ctx.mul(x, w), {1});
/// A failed Result makes the call fail with that error. Borrows nothing.
class TracedOperand {
 public:
  TracedOperand(const TracedValue& value) : value_(value) {}  // NOLINT(google-explicit-constructor)
  TracedOperand(const Result<TracedValue>& result)            // NOLINT(google-explicit-constructor)
      : value_(result.ok() ? *result : TracedValue()), status_(result.ok() ? Status() : result.status()) {}

  bool ok() const noexcept { return status_.ok(); }
  const Status& status() const noexcept { return status_; }
  /// The value; invalid when !ok().
  const TracedValue& value() const noexcept { return value_; }

 private:
  TracedValue value_;
  Status status_;
};

}  // namespace tenferro::compiler
