// Umbrella header of the linalg component (backend-neutral): linear algebra
// as an extension (family "tenferro.linalg"): the semantic op, its AD rules
// and the eager calls. The CPU engine and its LAPACK and Eigen providers are
// in tenferro/linalg_cpu.h.
//
// Note [Using the linalg component]
// Install:   auto linalg = *linalg::CpuLinalgEngine::create_default();       // provider table file
//            runtime_builder.add_extension_module(linalg::cpu_extension_module(cpu_engine_id, linalg));
// Eager:     auto ctx = runtime.on();
//            linalg::SvdResult r = *linalg::svd(ctx, a, linalg::SvdMode::kThin);   // U, S, Vh
// Graph:     auto outs = *builder.emit_extension(linalg::LinalgOp::qr(), {a});      // Q, R
// Providers: linalg::LinalgProviderPolicy::fixed(linalg::LinalgProviderBundle::all(eigen))
//            replaces the table; each slot can hold its own provider.
// Explain:   linalg->explain(*op, DType::kFloat64, shapes, threads)  -> provider, reason, parallel mode
#pragma once

#include "tenferro/linalg/ad_rules.h"
#include "tenferro/linalg/eager_linalg.h"
#include "tenferro/linalg/linalg_op.h"
