// Eager FFT calls (eager_fft.h): build the op, call it, unpack.
#include "tenferro/fft/eager_fft.h"

namespace tenferro::fft {

namespace {

// Integer and bool input is transformed as float64, as numpy does (Note
// [Eager dtype promotion] in runtime/eager.h). irfft and hfft take complex
// input: real input is taken as complex with zero imaginary parts
// (float32 as complex64), as numpy and torch do.
Result<Tensor> call(runtime::EagerContext& context, const Tensor& x, Result<std::shared_ptr<const FftOp>> op) {
  if (!op.ok()) return op.status();
  Tensor input = x;
  if (x.defined() && !is_complex(x.dtype())) {
    const FftKind kind = (*op)->attributes().kind;
    const bool complex_input = kind == FftKind::kIrfft || kind == FftKind::kHfft;
    const DType real = x.dtype() == DType::kFloat32 ? DType::kFloat32 : DType::kFloat64;
    const DType want = complex_input ? *complex_dtype(real) : real;
    if (want != x.dtype()) {
      TENFERRO_ASSIGN_OR_RETURN(input, context.convert(x, want));
    }
  }
  const Tensor inputs[] = {input};
  TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, context.call(*op, inputs));
  return std::move(out[0]);
}

Result<Tensor> one_axis(runtime::EagerContext& context, FftKind kind, const Tensor& x, std::int64_t n,
                        std::int64_t axis, FftNorm norm) {
  return call(context, x, FftOp::make(kind, n, axis, norm));
}

Result<Tensor> n_axes(runtime::EagerContext& context, FftKind kind, const Tensor& x, IntArrayRef s, IntArrayRef axes,
                      FftNorm norm) {
  FftAttributes a;
  a.kind = kind;
  a.norm = norm;
  a.lengths.assign(s.span());
  if (axes.empty()) {
    const std::int64_t count = s.empty() ? x.rank() : static_cast<std::int64_t>(s.size());
    if (count > x.rank()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "fft.{}n: expected at most {} lengths (the input's rank) without axes, found {}",
                        to_string(kind), x.rank(), s.size());
    }
    for (std::int64_t i = x.rank() - count; i < x.rank(); ++i) a.axes.push_back(i);
  } else {
    a.axes.assign(axes.span());
  }
  if (a.axes.empty()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "fft.{}n: expected at least one axis, found none (the input has rank {})", to_string(kind),
                      x.rank());
  }
  return call(context, x, FftOp::create(a));
}

}  // namespace

Result<Tensor> fft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kFft, x, n, axis, norm);
}
Result<Tensor> ifft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kIfft, x, n, axis, norm);
}
Result<Tensor> rfft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kRfft, x, n, axis, norm);
}
Result<Tensor> irfft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kIrfft, x, n, axis, norm);
}
Result<Tensor> hfft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kHfft, x, n, axis, norm);
}
Result<Tensor> ihfft(runtime::EagerContext& c, const Tensor& x, std::int64_t n, std::int64_t axis, FftNorm norm) {
  return one_axis(c, FftKind::kIhfft, x, n, axis, norm);
}

Result<Tensor> fftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kFft, x, s, axes, norm);
}
Result<Tensor> ifftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kIfft, x, s, axes, norm);
}
Result<Tensor> rfftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kRfft, x, s, axes, norm);
}
Result<Tensor> irfftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kIrfft, x, s, axes, norm);
}
Result<Tensor> hfftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kHfft, x, s, axes, norm);
}
Result<Tensor> ihfftn(runtime::EagerContext& c, const Tensor& x, IntArrayRef s, IntArrayRef axes, FftNorm norm) {
  return n_axes(c, FftKind::kIhfft, x, s, axes, norm);
}

Result<Tensor> transform(runtime::EagerContext& c, const Tensor& x, const FftAttributes& attributes) {
  return call(c, x, FftOp::create(attributes));
}

}  // namespace tenferro::fft
