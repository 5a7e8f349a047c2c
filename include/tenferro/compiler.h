// Umbrella header of the compiler component: tracing and the semantic
// compiler.
//
// Note [Using the compiler component]
// Trace:    TraceContext ctx;
//           TracedValue x = *ctx.input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "x");
//           TracedValue w = *ctx.capture(weights);                 // bound, never copied
//           auto scope = ctx.scope("layer 1");                      // provenance of what follows
//           Result<TracedValue> y = ctx.reduce_sum(ctx.mul(x, ctx.broadcast_in_dim(w, x.shape(), {1})), {1});
//           TracedGraph g = *ctx.finish({y});
// Compile:  GraphCompiler compiler;                                 // owns the bounded compile cache
//           CompiledGraph c = *compiler.compile(g, {});             // c.program, c.bindings
// Inspect:  c.explain(); compiler.cache_stats();
// Reuse:    other.import(g, {a})                                    // explicit cross-trace import
#pragma once

#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/compiler/trace_context.h"
#include "tenferro/compiler/traced_value.h"
