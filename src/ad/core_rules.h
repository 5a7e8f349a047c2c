// The built-in AD rules of the core operations: linearize_core (the
// tangent of one core node, core_linearize.cpp) and transpose_core (the
// cotangents of one linear core node, core_transpose.cpp). docs/ad.md lists
// every op's rule; the complex convention is Note [Complex convention] in
// include/tenferro/ad/ad_context.h.
#pragma once

#include <optional>

#include "tenferro/ad/ad_rule.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::ad::internal {

/// One core node being linearized: its primal operands and result and the
/// operand tangents (at least one present).
struct CoreLinearizeInput {
  program::CoreSemanticOp op = program::CoreSemanticOp::kNeg;
  const program::CoreAttributes* attributes = nullptr;
  SmallVector<AdValue, 4> operands;
  SmallVector<std::optional<AdValue>, 4> tangents;
  AdValue result;
};

/// The tangent of the node's result; nullopt when it is structurally zero
/// or the result is not differentiable.
Result<std::optional<AdValue>> linearize_core(const CoreLinearizeInput& input, AdBuilder& builder);

/// One linear core node being transposed.
struct CoreTransposeInput {
  program::CoreSemanticOp op = program::CoreSemanticOp::kNeg;
  const program::CoreAttributes* attributes = nullptr;
  /// The operand values; invalid tokens at linear positions.
  SmallVector<AdValue, 4> operands;
  SmallVector<bool, 4> linear;
  SmallVector<program::ValueMetadata, 4> operand_metadata;
  AdValue cotangent;
  program::ValueMetadata result_metadata;
};

/// One cotangent per operand (nullopt for primal operands and zeros).
Result<CotangentList> transpose_core(const CoreTransposeInput& input, AdBuilder& builder);

}  // namespace tenferro::ad::internal
