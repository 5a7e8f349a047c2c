// Umbrella header of the fft component (backend-neutral): discrete Fourier
// transforms as an extension (family "tenferro.fft"): the op, eager calls and
// AD rules. The CPU engine with its FFTW and native providers is in
// tenferro/fft_cpu.h.
//
// Note [Using the fft component]
// Install:   auto fft = fft::CpuFftEngine::create_default();                 // FFTW, FFTW_ESTIMATE plans
//            runtime_builder.add_extension_module(fft::cpu_extension_module(cpu_engine_id, fft));
// Eager:     auto ctx = runtime.on();
//            Tensor y = *fft::fft(ctx, x);                                   // last axis, numpy semantics
//            Tensor z = *fft::rfftn(ctx, x, {64, 64}, {0, 1}, fft::FftNorm::kOrtho);
// Graph:     auto outs = *builder.emit_extension(*fft::FftOp::make(fft::FftKind::kIfft), {x});
// Providers: std::make_shared<fft::CpuFftEngine>(std::make_shared<fft::NativeFftProvider>())
// AD:        fft::install_fft_ad_rules(ad_context);
// Explain:   fft->explain(op, DType::kComplex128, shape) -> provider, passes, blocks, workspace
#pragma once

#include "tenferro/fft/ad_rules.h"
#include "tenferro/fft/eager_fft.h"
#include "tenferro/fft/fft_op.h"
