// The AD rules of the fft family: one ad::ExtensionAdRule for
// "tenferro.fft", installed explicitly in an ad::AdContext (no global
// inventory). Every transform is linear, so linearize applies the same
// transform to the tangent and transpose is the adjoint transform.
//
// Note [FFT adjoints]
// Adjoints are with respect to the real inner product <u, v> = Re Σ conj(u) v
// (Note [Complex convention] in ad/ad_context.h). With P the pad/crop to the
// transform lengths s, N their product and c the normalisation factor:
//  - fft/ifft: y = c F P x, so x̄ = P* (c F^H ȳ): the opposite-sign
//    transform with the swapped norm (backward <-> forward, ortho stays) and
//    lengths s, then crop/pad back to the input extents (P* of a crop is a
//    zero pad and vice versa); the real part when x is real.
//  - rfft: R x keeps the first h = n/2+1 frequencies of a real signal, and
//    R* ȳ = Re Σ_{k<h} ȳ_k e^{+2πijk/n}. irfft (c2r) reads its input as
//    Hermitian, counting the middle frequencies twice, so R* ȳ = c2r(w ȳ)
//    with w = 1 at k = 0 and (n even) k = n/2, w = 1/2 elsewhere:
//    x̄ = P* irfftn(w ȳ, s, swapped norm).
//  - irfft: C z = c2r(z) is real-linear in z and C* ȳ = v · r2c(ȳ) with
//    v = 1 at k = 0 and (n even) k = n/2, v = 2 elsewhere (the imaginary
//    parts C ignores get zero cotangent, since r2c of a real signal is real
//    there): z̄ = P* (v rfftn(ȳ, s, swapped norm)).
//  - hfft = c2r(conj z) with hfft's factor: z̄ = P* (v ihfftn(ȳ, s, swapped)).
//  - ihfft = conj(r2c x) with ihfft's factor: x̄ = P* hfftn(w ȳ, s, swapped).
// The transposes need exact operand extents (the pad/crop and the weights
// are attributes): a symbolic one is kUnimplemented.
#pragma once

#include <memory>

#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/ad_rule.h"

namespace tenferro::fft {

/// The rule (Note [FFT adjoints]). Immutable; thread-safe.
std::shared_ptr<const ad::ExtensionAdRule> make_fft_ad_rule();

/// context.install_rule(make_fft_ad_rule()).
Status install_fft_ad_rules(ad::AdContext& context);

}  // namespace tenferro::fft
