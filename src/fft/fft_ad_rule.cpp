// The fft family's ad::ExtensionAdRule: linearize applies the transform to
// the tangent; transpose emits the adjoint transform (Note [FFT adjoints]
// in ad_rules.h).
#include "tenferro/fft/ad_rules.h"

#include <fmt/format.h>

#include "tenferro/fft/fft_op.h"

namespace tenferro::fft {

namespace {

using ad::AdBuilder;
using ad::AdValue;
using program::CoreSemanticOp;

Error unimplemented(const FftOp& op, std::string_view why) {
  return Error(ErrorCode::kUnimplemented, ErrorStage::kCompile, fmt::format("{} transpose: {}", op.describe(), why));
}

Result<AdValue> emit_fft(AdBuilder& b, FftKind kind, const FftGeometry& g, FftNorm norm, AdValue x) {
  FftAttributes a;
  a.kind = kind;
  a.axes = g.axes;
  a.lengths = g.lengths;
  a.norm = norm;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const FftOp> op, FftOp::create(a));
  TENFERRO_ASSIGN_OR_RETURN(auto out, b.emit_extension(op, {x}));
  return out[0];
}

// Multiplies x[..., k, ...] (k along `axis`, extent h = n/2+1) by `factor`
// for 0 < k < n/2 (the frequencies a Hermitian spectrum holds twice).
Result<AdValue> weight_middle(AdBuilder& b, AdValue x, std::int64_t axis, std::int64_t n, double factor) {
  const program::ValueMetadata meta = b.metadata(x);
  const std::optional<Dims> shape = program::exact_shape(meta.shape);
  const std::size_t ax = static_cast<std::size_t>(axis);
  const std::int64_t h = (*shape)[ax];
  const std::int64_t end = n % 2 == 0 ? h - 1 : h;  // the middle is [1, end)
  if (end <= 1) return x;
  const auto slice = [&](std::int64_t lo, std::int64_t hi) -> Result<AdValue> {
    program::SliceAttributes s;
    for (std::size_t d = 0; d < shape->size(); ++d) {
      s.start.push_back(d == ax ? lo : 0);
      s.limit.push_back(d == ax ? hi : (*shape)[d]);
      s.stride.push_back(1);
    }
    return b.emit(CoreSemanticOp::kSlice, {x}, s);
  };
  SmallVector<AdValue, 3> parts;
  TENFERRO_ASSIGN_OR_RETURN(AdValue head, slice(0, 1));
  parts.push_back(head);
  TENFERRO_ASSIGN_OR_RETURN(AdValue middle, slice(1, end));
  TENFERRO_ASSIGN_OR_RETURN(AdValue f, b.full(Scalar::of(factor), b.metadata(middle)));
  TENFERRO_ASSIGN_OR_RETURN(AdValue scaled, b.emit(CoreSemanticOp::kMul, {middle, f}));
  parts.push_back(scaled);
  if (end < h) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue tail, slice(end, h));
    parts.push_back(tail);
  }
  return b.emit(CoreSemanticOp::kConcatenate, std::span<const AdValue>(parts.data(), parts.size()),
                program::ConcatenateAttributes{axis});
}

// Crops or zero-pads x along g.axes to `extents` (the operand's).
Result<AdValue> resize(AdBuilder& b, AdValue x, const FftGeometry& g, IntArrayRef extents) {
  const program::ValueMetadata meta = b.metadata(x);
  const Dims shape = *program::exact_shape(meta.shape);
  program::SliceAttributes crop;
  program::PadAttributes pad;
  bool cropping = false, padding = false;
  Dims cropped = shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    crop.start.push_back(0);
    crop.stride.push_back(1);
    pad.low.push_back(0);
    pad.interior.push_back(0);
    std::int64_t target = shape[d];
    for (std::size_t i = 0; i < g.axes.size(); ++i)
      if (static_cast<std::size_t>(g.axes[i]) == d) target = extents[i];
    crop.limit.push_back(std::min(target, shape[d]));
    pad.high.push_back(std::max<std::int64_t>(target - shape[d], 0));
    cropping = cropping || target < shape[d];
    padding = padding || target > shape[d];
  }
  if (cropping) {
    TENFERRO_ASSIGN_OR_RETURN(x, b.emit(CoreSemanticOp::kSlice, {x}, crop));
  }
  if (padding) {
    TENFERRO_ASSIGN_OR_RETURN(AdValue zero, b.scalar(Scalar::of(0.0), meta.dtype));
    TENFERRO_ASSIGN_OR_RETURN(x, b.emit(CoreSemanticOp::kPad, {x, zero}, pad));
  }
  return x;
}

class FftAdRule final : public ad::ExtensionAdRule {
 public:
  std::string_view family_id() const noexcept override { return kFftFamilyId; }

  Result<ad::TangentList> linearize(ad::LinearizeContext& ctx) const override {
    const std::optional<AdValue> dx = ctx.tangent(0);
    if (!dx) return ad::TangentList{std::nullopt};
    TENFERRO_ASSIGN_OR_RETURN(auto dy, ctx.builder().emit_extension(ctx.shared_op(), {*dx}));
    return ad::TangentList{dy[0]};
  }

  Result<ad::CotangentList> transpose(ad::TransposeContext& ctx) const override {
    const auto& op = static_cast<const FftOp&>(ctx.op());
    const std::optional<AdValue> ct = ctx.cotangent(0);
    if (!ct || !ctx.is_linear_operand(0)) return ad::CotangentList{std::nullopt};
    const program::ValueMetadata& x = ctx.operand_metadata(0);
    const std::optional<Dims> shape = program::exact_shape(x.shape);
    if (!shape) return unimplemented(op, fmt::format("expected exact operand extents, found {}", x.to_string()));
    TENFERRO_ASSIGN_OR_RETURN(FftGeometry g, op.geometry(*shape));
    AdBuilder& b = ctx.builder();
    const FftNorm norm = swapped(op.attributes().norm);
    const std::int64_t last_axis = g.axes.back();
    const std::int64_t n = g.lengths.back();
    AdValue out;
    switch (op.kind()) {
      case FftKind::kFft:
      case FftKind::kIfft: {
        const FftKind adjoint = op.kind() == FftKind::kFft ? FftKind::kIfft : FftKind::kFft;
        TENFERRO_ASSIGN_OR_RETURN(out, emit_fft(b, adjoint, g, norm, *ct));
        if (!is_complex(x.dtype)) {
          TENFERRO_ASSIGN_OR_RETURN(out, b.emit(CoreSemanticOp::kReal, {out}));
        }
        break;
      }
      case FftKind::kRfft:
      case FftKind::kIhfft: {
        TENFERRO_ASSIGN_OR_RETURN(AdValue weighted, weight_middle(b, *ct, last_axis, n, 0.5));
        const FftKind adjoint = op.kind() == FftKind::kRfft ? FftKind::kIrfft : FftKind::kHfft;
        TENFERRO_ASSIGN_OR_RETURN(out, emit_fft(b, adjoint, g, norm, weighted));
        break;
      }
      case FftKind::kIrfft:
      case FftKind::kHfft: {
        const FftKind adjoint = op.kind() == FftKind::kIrfft ? FftKind::kRfft : FftKind::kIhfft;
        TENFERRO_ASSIGN_OR_RETURN(AdValue spectrum, emit_fft(b, adjoint, g, norm, *ct));
        TENFERRO_ASSIGN_OR_RETURN(out, weight_middle(b, spectrum, last_axis, n, 2.0));
        break;
      }
    }
    // The adjoint's output has the staged extents (the lengths, or n/2+1
    // along irfft/hfft's last axis); crop/pad back to the operand's.
    TENFERRO_ASSIGN_OR_RETURN(out, resize(b, out, g, g.input_extents));
    return ad::CotangentList{out};
  }
};

}  // namespace

std::shared_ptr<const ad::ExtensionAdRule> make_fft_ad_rule() { return std::make_shared<FftAdRule>(); }

Status install_fft_ad_rules(ad::AdContext& context) { return context.install_rule(make_fft_ad_rule()); }

}  // namespace tenferro::fft
