// Metadata inference for core operations: result dtype and symbolic shape
// from operand metadata and attributes, following docs/core_ops.md. The
// builder runs it for every core op it emits; eager front ends and the
// compiler may call it directly.
#pragma once

#include <span>

#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/shape_guard.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::program {

/// The metadata of `op`'s result. Checks operand count, operand dtypes
/// (the table's DTypeClass plus index-operand rules), that `attributes`
/// holds the op's attribute struct, and every attribute against the operand
/// ranks (axes in range, permutations, slice bounds, ...). Undecided shape
/// requirements become guards in `constraints` (Note [Shape guards]).
/// Errors are compile-stage: kInvalidArgument, kDTypeMismatch,
/// kShapeMismatch or kAxisOutOfRange, with the node named. Pure; thread-safe.
Result<ValueMetadata> infer_core_metadata(CoreSemanticOp op, const CoreAttributes& attributes,
                                          std::span<const ValueMetadata> operands, ShapeConstraints& constraints);

}  // namespace tenferro::program
