// Eager FFT calls: numpy.fft's functions over a placement-bound
// runtime::EagerContext (runtime.on(placement)). Each builds the FftOp and
// calls it through the context: the native fft engine when the context's
// engine has the fft module installed (the eager fast path), otherwise
// whatever the runtime resolves (Note [Eager fast path] in runtime/eager.h).
// Semantics, dtypes and errors: Note [FFT operation semantics] in fft_op.h;
// integer and bool input is transformed as float64, and real input of
// irfft/hfft as complex, as numpy does (the FftOp itself stays strict).
// Thread-compatible like the context.
#pragma once

#include "tenferro/base/int_array_ref.h"
#include "tenferro/fft/fft_op.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::fft {

/// One axis (numpy's fft(x, n, axis, norm), ...). n = -1: the default length.
Result<Tensor> fft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                   FftNorm norm = FftNorm::kBackward);
Result<Tensor> ifft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                    FftNorm norm = FftNorm::kBackward);
Result<Tensor> rfft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                    FftNorm norm = FftNorm::kBackward);
Result<Tensor> irfft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                     FftNorm norm = FftNorm::kBackward);
Result<Tensor> hfft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                    FftNorm norm = FftNorm::kBackward);
Result<Tensor> ihfft(runtime::EagerContext& context, const Tensor& x, std::int64_t n = -1, std::int64_t axis = -1,
                     FftNorm norm = FftNorm::kBackward);

/// Several axes (numpy's fftn(x, s, axes, norm), ...). Empty `axes`: the
/// last len(s) axes, or every axis when `s` is empty too (numpy's None).
Result<Tensor> fftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                    FftNorm norm = FftNorm::kBackward);
Result<Tensor> ifftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                     FftNorm norm = FftNorm::kBackward);
Result<Tensor> rfftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                     FftNorm norm = FftNorm::kBackward);
Result<Tensor> irfftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                      FftNorm norm = FftNorm::kBackward);
Result<Tensor> hfftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                     FftNorm norm = FftNorm::kBackward);
Result<Tensor> ihfftn(runtime::EagerContext& context, const Tensor& x, IntArrayRef s = {}, IntArrayRef axes = {},
                      FftNorm norm = FftNorm::kBackward);

/// Any transform.
Result<Tensor> transform(runtime::EagerContext& context, const Tensor& x, const FftAttributes& attributes);

}  // namespace tenferro::fft
