// Umbrella header of the linalg component: linear algebra as an extension
// (family "tenferro.linalg"), with LAPACK and Eigen providers, a batched CPU
// extension engine and eager calls.
//
// Note [Using the linalg component]
// Install:   auto linalg = linalg::CpuLinalgEngine::create_default();        // measured provider table
//            runtime_builder.add_extension_module(linalg::cpu_extension_module(cpu_engine_id, linalg));
// Eager:     auto ctx = runtime.on();
//            linalg::SvdResult r = *linalg::svd(ctx, a, linalg::SvdMode::kThin);   // U, S, Vh
// Graph:     auto outs = *builder.emit_extension(linalg::LinalgOp::qr(), {a});      // Q, R
// Providers: linalg::LinalgProviderPolicy::fixed(linalg::LinalgProviderBundle::all(eigen))
//            replaces the table; each slot can hold its own provider.
// Explain:   linalg->explain(*op, DType::kFloat64, shapes, threads)  -> provider, reason, parallel mode
#pragma once

#include "tenferro/linalg/cpu_engine.h"
#include "tenferro/linalg/eager_linalg.h"
#include "tenferro/linalg/eigen_provider.h"
#include "tenferro/linalg/lapack_provider.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/linalg/linalg_provider.h"
#include "tenferro/linalg/provider_policy.h"
