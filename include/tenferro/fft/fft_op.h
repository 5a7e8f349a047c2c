// FftOp: the discrete Fourier transform extension operation (family
// "tenferro.fft") as it appears in a SemanticProgram and in eager calls. Its
// payload is the transform kind, the axes, the transform lengths and the
// normalisation; providers, plans and workspaces are not part of it.
//
// Note [FFT operation semantics]
// The kinds follow numpy.fft (and scipy.fft for the N-D Hermitian pair),
// over any non-empty set of distinct axes (negative axes count from the
// end), batched over every other axis:
//   fft    complex (or real, promoted) -> complex, exp(-2πi jk/n) over every axis
//   ifft   complex (or real, promoted) -> complex, exp(+2πi jk/n)
//   rfft   real -> complex; the LAST listed axis keeps n/2+1 outputs, the
//          other axes are full complex transforms (numpy rfftn)
//   irfft  complex -> real, the inverse of rfft: the other axes first, then
//          the last listed axis from n/2+1 inputs to n real outputs (numpy
//          irfftn); the imaginary parts of its zero and (even n) n/2
//          frequencies are ignored
//   hfft   complex -> real, irfft of the conjugate with the normalisation
//          swapped (numpy hfft; scipy hfftn for several axes)
//   ihfft  real -> complex, the conjugate of rfft with the normalisation
//          swapped (numpy ihfft; scipy ihfftn)
// Lengths (`s`, numpy's `n`): one per axis or none; -1 keeps the default.
// The input is zero-padded or cropped to the length along each axis before
// the transform. Defaults: the input extent; for irfft/hfft's last axis
// 2·(m − 1) where m is the input extent. rfft/ihfft's default on a
// symbolic extent is an error (n/2+1 is not expressible), give a length.
// Norms: "backward" (forward-type kinds fft/rfft/hfft unscaled, inverse-type
// kinds ifft/irfft/ihfft scaled by 1/N), "ortho" (1/sqrt(N) both ways),
// "forward" (the reverse of backward), N the product of the lengths.
// Dtypes: float32 -> complex64, float64 -> complex128 (precision is kept,
// as torch.fft and numpy >= 2 do); rfft/ihfft take float32/float64 only,
// irfft/hfft complex64/complex128 only; other dtypes are kDTypeMismatch.
// Errors (compile stage): kAxisOutOfRange, kInvalidArgument (no axes,
// repeated axes, a length list of another size, a length < 1 other than
// -1), kShapeMismatch (a transform length that resolves to < 1, e.g. an
// empty axis without a length or irfft of a one-element axis).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/program/extension_op.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::fft {

/// The extension family id of FftOp.
inline constexpr std::string_view kFftFamilyId = "tenferro.fft";

enum class FftKind : std::uint8_t { kFft, kIfft, kRfft, kIrfft, kHfft, kIhfft };
/// numpy's `norm`.
enum class FftNorm : std::uint8_t { kBackward, kOrtho, kForward };
std::string_view to_string(FftKind kind) noexcept;
std::string_view to_string(FftNorm norm) noexcept;
/// "backward" / "ortho" / "forward"; kInvalidArgument otherwise.
Result<FftNorm> parse_norm(std::string_view norm);
/// backward <-> forward, ortho stays (the norm of an adjoint transform).
FftNorm swapped(FftNorm norm) noexcept;
/// True for fft, rfft and hfft (the kinds "backward" leaves unscaled).
bool is_forward_type(FftKind kind) noexcept;

/// The options of one transform. Regular value type.
struct FftAttributes {
  FftKind kind = FftKind::kFft;
  Dims axes;     ///< as given; negative axes count from the end
  Dims lengths;  ///< empty, or one per axis (-1: the default)
  FftNorm norm = FftNorm::kBackward;

  friend bool operator==(const FftAttributes&, const FftAttributes&) = default;
};

/// A transform resolved against a concrete input shape (what the engine
/// plans and the AD rules read). Every list is indexed like `axes`.
struct FftGeometry {
  Dims axes;           ///< normalised to [0, rank), in the given order
  Dims lengths;        ///< logical transform length n per axis (after defaults)
  Dims input_extents;  ///< the input's extent along each axis
  /// The extent the input is padded/cropped to along each axis: n, except
  /// irfft/hfft's last axis (n/2+1).
  Dims staged_extents;
  Dims output_shape;
  double scale = 1.0;  ///< the normalisation factor applied to the result

  /// Product of `lengths` (the N of the normalisation).
  double total_length() const noexcept;
};

/// The FFT extension op (Note [FFT operation semantics]). Immutable and
/// thread-safe; build it with the factories.
class FftOp final : public program::ExtensionOp {
 public:
  /// Validates the options that do not depend on the input (non-empty axes,
  /// lengths list size, lengths >= 1 or -1): kInvalidArgument otherwise.
  static Result<std::shared_ptr<const FftOp>> create(const FftAttributes& attributes);
  /// One axis: numpy's fft(x, n, axis, norm) and the other kinds.
  static Result<std::shared_ptr<const FftOp>> make(FftKind kind, std::int64_t n = -1, std::int64_t axis = -1,
                                                   FftNorm norm = FftNorm::kBackward);
  /// Several axes: numpy's fftn(x, s, axes, norm) and the other kinds.
  static Result<std::shared_ptr<const FftOp>> make_n(FftKind kind, IntArrayRef lengths, IntArrayRef axes,
                                                     FftNorm norm = FftNorm::kBackward);

  const FftAttributes& attributes() const noexcept { return attributes_; }
  FftKind kind() const noexcept { return attributes_.kind; }

  /// The result dtype for an input of `input`; kDTypeMismatch when the kind
  /// does not accept it.
  Result<DType> result_dtype(DType input) const;
  /// The transform against a concrete input shape (errors as
  /// infer_metadata, stage kCompile).
  Result<FftGeometry> geometry(IntArrayRef input_shape) const;

  // --- program::ExtensionOp ---
  std::string_view family_id() const noexcept override { return kFftFamilyId; }
  std::uint64_t payload_hash() const noexcept override { return hash_; }
  bool payload_equal(const program::ExtensionOp& other) const noexcept override;
  Result<SmallVector<program::ValueMetadata, 2>> infer_metadata(std::span<const program::ValueMetadata> operands,
                                                                program::ShapeConstraints& constraints) const override;
  program::EffectSet effects() const override { return program::EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override;
  /// "fft.rfft(axes [0, -1], s [8, -1], ortho)".
  std::string describe() const override;
  /// The transform with its non-negative axes moved past the batch axis.
  std::shared_ptr<const program::ExtensionOp> batched(std::span<const program::ValueMetadata> operands,
                                                      std::span<const bool> batched) const override;

 private:
  explicit FftOp(const FftAttributes& attributes);
  FftAttributes attributes_;
  std::uint64_t hash_ = 0;
};

}  // namespace tenferro::fft
