// Validation of rewrites: a core lowering of an extension op, or the output
// of a SemanticTransform, must preserve the semantic contract (Note [Effects
// and ordering], Note [Alias declarations] in effects.h): arity, metadata,
// effects, aliases and provenance.
//
// Note [Alias strength]
// Validation compares the aliasing a rewrite *produces* with what was
// declared. A result is "fresh", "a view of input k" (reached from input k
// through view-class core ops), or stronger (must-alias / external). A
// rewrite may produce a fresh value where a view was declared, but never a
// view where a fresh value was declared, a view of a different input, or
// anything where must-alias / external aliasing was declared (core ops
// cannot express it).
#pragma once

#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"

namespace tenferro::program {

class ExtensionOp;

/// The aliasing produced for `value` of `program` (Note [Alias strength]):
/// view_of(k) when it is input k or a view-class core op chain from it,
/// the declared alias of the extension result it comes from through such
/// a chain, fresh otherwise.
AliasDecl produced_alias(const SemanticProgram& program, ValueId value);

/// Validates `fragment` as a core lowering of `op` (Note [Core lowering] in
/// extension_op.h): only core ops; fragment inputs are the operands; the
/// results match op.infer_metadata() of the fragment's input metadata in
/// count, dtype and shape; effects equal op.effects(); aliases per Note
/// [Alias strength]; every operation's provenance derives from `origin`.
/// kContractViolation (stage kPrepare) naming the family and the mismatch.
Status validate_lowering(const ExtensionOp& op, const SemanticProgram& fragment, const ProvenanceRecord* origin);

/// Validates `output` as the result of transform `transform_name` applied
/// to `input`: the same input schemas, output count and metadata, the same
/// program effects, output aliases per Note [Alias strength], and every
/// operation's provenance derived from a record of `input`.
/// kContractViolation (stage kCompile) naming the transform and mismatch.
Status validate_transform_output(const SemanticProgram& input, const SemanticProgram& output,
                                 std::string_view transform_name);

}  // namespace tenferro::program
