// FftOp: options, payload identity and metadata inference (Note [FFT
// operation semantics] in fft_op.h).
#include "tenferro/fft/fft_op.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tenferro/base/hash.h"
#include "tenferro/program/shape_guard.h"

namespace tenferro::fft {

namespace {

using program::SymbolicExtent;
using program::ValueMetadata;

using hashing::hash_combine;

std::uint64_t hash_attributes(const FftAttributes& a) noexcept {
  std::uint64_t h = 0x666674ULL;  // "fft"
  h = hash_combine(h, static_cast<std::uint64_t>(a.kind));
  h = hash_combine(h, static_cast<std::uint64_t>(a.norm));
  h = hash_combine(h, a.axes.size());
  for (std::int64_t axis : a.axes) h = hash_combine(h, static_cast<std::uint64_t>(axis));
  h = hash_combine(h, a.lengths.size());
  for (std::int64_t n : a.lengths) h = hash_combine(h, static_cast<std::uint64_t>(n));
  return h;
}

// The halved axis of rfft/ihfft (output) and irfft/hfft (input).
bool real_input(FftKind k) noexcept { return k == FftKind::kRfft || k == FftKind::kIhfft; }
bool real_output(FftKind k) noexcept { return k == FftKind::kIrfft || k == FftKind::kHfft; }

std::string list_to_string(IntArrayRef values) { return shape_to_string(values); }

}  // namespace

std::string_view to_string(FftKind kind) noexcept {
  switch (kind) {
    case FftKind::kFft:
      return "fft";
    case FftKind::kIfft:
      return "ifft";
    case FftKind::kRfft:
      return "rfft";
    case FftKind::kIrfft:
      return "irfft";
    case FftKind::kHfft:
      return "hfft";
    case FftKind::kIhfft:
      return "ihfft";
  }
  return "?";
}

std::string_view to_string(FftNorm norm) noexcept {
  switch (norm) {
    case FftNorm::kBackward:
      return "backward";
    case FftNorm::kOrtho:
      return "ortho";
    case FftNorm::kForward:
      return "forward";
  }
  return "?";
}

Result<FftNorm> parse_norm(std::string_view norm) {
  if (norm == "backward") return FftNorm::kBackward;
  if (norm == "ortho") return FftNorm::kOrtho;
  if (norm == "forward") return FftNorm::kForward;
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "fft: expected norm \"backward\", \"ortho\" or \"forward\", found \"{}\"", norm);
}

FftNorm swapped(FftNorm norm) noexcept {
  return norm == FftNorm::kBackward ? FftNorm::kForward
                                    : (norm == FftNorm::kForward ? FftNorm::kBackward : FftNorm::kOrtho);
}

bool is_forward_type(FftKind kind) noexcept {
  return kind == FftKind::kFft || kind == FftKind::kRfft || kind == FftKind::kHfft;
}

double FftGeometry::total_length() const noexcept {
  double n = 1.0;
  for (std::int64_t l : lengths) n *= static_cast<double>(l);
  return n;
}

FftOp::FftOp(const FftAttributes& attributes) : attributes_(attributes), hash_(hash_attributes(attributes)) {}

Result<std::shared_ptr<const FftOp>> FftOp::create(const FftAttributes& attributes) {
  if (attributes.axes.empty()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "fft.{}: expected at least one axis, found none",
                      to_string(attributes.kind));
  }
  if (!attributes.lengths.empty() && attributes.lengths.size() != attributes.axes.size()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "fft.{}{}: expected one length per axis ({} axes {}), found lengths {}",
                      to_string(attributes.kind), attributes.axes.size() > 1 ? "n" : "", attributes.axes.size(),
                      list_to_string(attributes.axes), list_to_string(attributes.lengths));
  }
  for (std::int64_t n : attributes.lengths) {
    if (n < 1 && n != -1) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "fft.{}: expected transform lengths >= 1 (or -1 for the default), found {}",
                        to_string(attributes.kind), list_to_string(attributes.lengths));
    }
  }
  return std::shared_ptr<const FftOp>(new FftOp(attributes));
}

Result<std::shared_ptr<const FftOp>> FftOp::make(FftKind kind, std::int64_t n, std::int64_t axis, FftNorm norm) {
  FftAttributes a;
  a.kind = kind;
  a.axes.push_back(axis);
  if (n != -1) a.lengths.push_back(n);
  a.norm = norm;
  return create(a);
}

Result<std::shared_ptr<const FftOp>> FftOp::make_n(FftKind kind, IntArrayRef lengths, IntArrayRef axes, FftNorm norm) {
  FftAttributes a;
  a.kind = kind;
  a.axes.assign(axes.span());
  a.lengths.assign(lengths.span());
  a.norm = norm;
  return create(a);
}

bool FftOp::payload_equal(const program::ExtensionOp& other) const noexcept {
  return attributes_ == static_cast<const FftOp&>(other).attributes_;
}

Result<DType> FftOp::result_dtype(DType input) const {
  const FftKind k = attributes_.kind;
  const bool real = input == DType::kFloat32 || input == DType::kFloat64;
  const bool complex = input == DType::kComplex64 || input == DType::kComplex128;
  if (real_input(k)) {
    if (!real) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kCompile,
                        "fft.{}: expected a float32 or float64 input, found {}", to_string(k), input);
    }
    return *complex_dtype(input);
  }
  if (real_output(k)) {
    if (!complex) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kCompile,
                        "fft.{}: expected a complex64 or complex128 input, found {}", to_string(k), input);
    }
    return real_dtype(input);
  }
  if (!real && !complex) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kCompile,
                      "fft.{}: expected a float32, float64, complex64 or complex128 input, found {}", to_string(k),
                      input);
  }
  return real ? *complex_dtype(input) : input;
}

Result<SmallVector<program::ValueMetadata, 2>> FftOp::infer_metadata(std::span<const ValueMetadata> operands,
                                                                     program::ShapeConstraints& constraints) const {
  const FftAttributes& a = attributes_;
  if (operands.size() != 1) {
    return constraints.error(ErrorCode::kInvalidArgument, "expected 1 operand, found {}", operands.size());
  }
  const ValueMetadata& x = operands[0];
  Result<DType> dtype = result_dtype(x.dtype);
  if (!dtype.ok()) return constraints.error(dtype.status().code(), "{}", dtype.status().message());
  const std::int64_t rank = x.rank();
  Dims axes;
  for (std::int64_t axis : a.axes) {
    Result<std::int64_t> normalized = normalize_axis(axis, rank);
    if (!normalized.ok()) {
      return constraints.error(ErrorCode::kAxisOutOfRange,
                               "expected axes in [{}, {}) for an input of rank {}, found {}", -rank, rank, rank,
                               list_to_string(a.axes));
    }
    for (std::int64_t seen : axes) {
      if (seen == *normalized) {
        return constraints.error(ErrorCode::kInvalidArgument, "expected distinct axes, found {} (axis {} repeated)",
                                 list_to_string(a.axes), seen);
      }
    }
    axes.push_back(*normalized);
  }
  ValueMetadata out{*dtype, x.shape};
  Dims work;  // the transform's extents (its length along each axis), while exact
  for (const SymbolicExtent& e : x.shape) work.push_back(e.exact_value().value_or(-1));
  const std::size_t last = axes.size() - 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const SymbolicExtent& extent = x.shape[static_cast<std::size_t>(axes[i])];
    const std::int64_t given = a.lengths.empty() ? -1 : a.lengths[i];
    SymbolicExtent length = given != -1 ? SymbolicExtent(given) : extent;
    const bool halved_input = i == last && real_output(a.kind);
    const bool halved_output = i == last && real_input(a.kind);
    if (halved_input && given == -1) length = extent + extent - SymbolicExtent(2);
    if (given == -1) {
      if (length.exact_value() && *length.exact_value() < 1) {
        return constraints.error(
            ErrorCode::kShapeMismatch, "expected a transform length >= 1 along axis {}, found {}{} (input {})", axes[i],
            *length.exact_value(), halved_input ? " (2 * (m - 1) from the input extent m)" : "", x.to_string());
      }
      TENFERRO_TRY(constraints.require_less_equal(SymbolicExtent(1), length, "a transform length >= 1"));
    }
    SymbolicExtent result = length;
    if (halved_output) {
      if (!length.exact_value()) {
        return constraints.error(ErrorCode::kInvalidArgument,
                                 "expected an exact extent along axis {} or an explicit length ({} keeps n/2+1 "
                                 "outputs, which a symbolic extent cannot express), found {}",
                                 axes[i], to_string(a.kind), extent.to_string());
      }
      result = SymbolicExtent(*length.exact_value() / 2 + 1);
    }
    out.shape[static_cast<std::size_t>(axes[i])] = result;
    work[static_cast<std::size_t>(axes[i])] = length.exact_value().value_or(-1);
  }
  // The transform's arrays must be addressable: an unchecked byte count of
  // n >= 2^60 complex values wrapped around, and FFTW aborted on the
  // allocation (numpy: ValueError "array is too big").
  if (std::ranges::none_of(work, [](std::int64_t e) { return e < 0; })) {
    const std::int64_t element = static_cast<std::int64_t>(dtype_size(*complex_dtype(*dtype)));
    Result<std::int64_t> numel = checked_numel(work);
    if (!numel.ok() || *numel > std::numeric_limits<std::int64_t>::max() / element) {
      return constraints.error(ErrorCode::kSizeOverflow,
                               "expected a transform that fits in memory, found {} complex values of extents {} (more "
                               "than 2^63 bytes)",
                               numel.ok() ? fmt::to_string(*numel) : std::string("more than 2^63"),
                               shape_to_string(work));
    }
  }
  SmallVector<ValueMetadata, 2> results;
  results.push_back(std::move(out));
  return results;
}

Result<FftGeometry> FftOp::geometry(IntArrayRef input_shape) const {
  const std::string node = describe();
  program::ShapeConstraints constraints(node, nullptr);
  ValueMetadata x = ValueMetadata::exact(DType::kComplex128, input_shape);
  const FftKind k = attributes_.kind;
  if (real_input(k)) x.dtype = DType::kFloat64;
  const ValueMetadata operands[] = {x};
  TENFERRO_ASSIGN_OR_RETURN(auto results, infer_metadata(operands, constraints));
  FftGeometry g;
  const std::int64_t rank = static_cast<std::int64_t>(input_shape.size());
  for (std::int64_t axis : attributes_.axes) g.axes.push_back(axis < 0 ? axis + rank : axis);
  g.output_shape = *program::exact_shape(results[0].shape);
  const std::size_t last = g.axes.size() - 1;
  for (std::size_t i = 0; i < g.axes.size(); ++i) {
    const std::int64_t extent = input_shape[static_cast<std::size_t>(g.axes[i])];
    const std::int64_t given = attributes_.lengths.empty() ? -1 : attributes_.lengths[i];
    std::int64_t n = given != -1 ? given : extent;
    if (i == last && real_output(k)) {
      if (given == -1) n = 2 * (extent - 1);
      g.staged_extents.push_back(n / 2 + 1);
    } else {
      g.staged_extents.push_back(n);
    }
    g.lengths.push_back(n);
    g.input_extents.push_back(extent);
  }
  const double total = g.total_length();
  switch (attributes_.norm) {
    case FftNorm::kBackward:
      g.scale = is_forward_type(k) ? 1.0 : 1.0 / total;
      break;
    case FftNorm::kOrtho:
      g.scale = 1.0 / std::sqrt(total);
      break;
    case FftNorm::kForward:
      g.scale = is_forward_type(k) ? 1.0 / total : 1.0;
      break;
  }
  return g;
}

SmallVector<program::AliasDecl, 2> FftOp::aliases() const {
  SmallVector<program::AliasDecl, 2> out;
  out.push_back(program::AliasDecl::fresh());
  return out;
}

std::shared_ptr<const program::ExtensionOp> FftOp::batched(std::span<const program::ValueMetadata>,
                                                           std::span<const bool>) const {
  FftAttributes a = attributes_;
  for (std::int64_t& axis : a.axes)
    if (axis >= 0) ++axis;
  Result<std::shared_ptr<const FftOp>> op = create(a);
  return op.ok() ? *op : nullptr;
}

std::string FftOp::describe() const {
  const FftAttributes& a = attributes_;
  std::string s = fmt::format("fft.{}(axes {}", to_string(a.kind), list_to_string(a.axes));
  if (!a.lengths.empty()) s += fmt::format(", s {}", list_to_string(a.lengths));
  return s + fmt::format(", {})", to_string(a.norm));
}

}  // namespace tenferro::fft
