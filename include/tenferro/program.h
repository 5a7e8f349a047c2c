// Umbrella header of the program component: the backend-neutral semantic IR.
//
// Note [Using the program component]
// Build:      ProgramBuilder b;
//             ProgramValue x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "x");
//             ProgramValue w = *b.capture(weights);                    // bound input (ProgramBindings)
//             ProgramValue y = *b.emit(CoreSemanticOp::kDotGeneral, {x, w},
//                                      DotGeneralAttributes{{}, {}, {1}, {0}});
//             auto ext = *b.emit_extension(std::make_shared<MyOp>(...), {y});
//             FrozenProgram f = *b.freeze({ext[0]});                   // program + bindings
// Read:       for (OperationView op : f.program->operations()) { op.core_op(), op.operands(), ... }
// Run-time:   f.program->check_guards(inputs, &symbols)  -> kShapeGuardFailed before provider work
//             f.program->concrete_shape(value, symbols)  -> Dims
//             lower_extension_to_core(*f.program, op_id, granted, symbols)
// Identity:   f.program->fingerprint(), structurally_equal(a, b)
// Rewrite:    apply_transform(my_transform, f)            (validated; provenance kept)
// Debug:      f.program->explain()
#pragma once

#include "tenferro/program/attributes.h"
#include "tenferro/program/collective_op.h"
#include "tenferro/program/core_inference.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/program_value.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/program/semantic_transform.h"
#include "tenferro/program/shape_guard.h"
#include "tenferro/program/specialization.h"
#include "tenferro/program/symbolic_extent.h"
#include "tenferro/program/validation.h"
