// LinalgOp: options, payload identity and metadata inference (Note [Linalg
// operation semantics] in linalg_op.h).
#include "tenferro/linalg/linalg_op.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "tenferro/base/hash.h"

namespace tenferro::linalg {

namespace {

using program::SymbolicExtent;
using program::ValueMetadata;

struct OpInfo {
  std::string_view name;
  std::int32_t operands;
  LinalgSlot slot;
  bool square;
  bool rejects_non_finite;
};

constexpr OpInfo kOpInfo[] = {
#define TENFERRO_LINALG_OP(name, str, operands, slot, square, finite) \
  {str, operands, LinalgSlot::k##slot, square, finite},
#include "tenferro/linalg/linalg_ops.def"
};

const OpInfo& info(LinalgOpKind kind) noexcept { return kOpInfo[static_cast<int>(kind)]; }

using hashing::hash_combine;
std::uint64_t double_bits(double v) noexcept {
  if (v == 0.0) v = 0.0;  // -0.0 and 0.0 are the same option
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

std::uint64_t hash_attributes(const LinalgAttributes& a) noexcept {
  std::uint64_t h = 0x6c696e616c67ULL;  // "linalg"
  h = hash_combine(h, static_cast<std::uint64_t>(a.kind));
  h = hash_combine(h, static_cast<std::uint64_t>(a.svd_mode));
  h = hash_combine(h, static_cast<std::uint64_t>(a.qr_mode));
  h = hash_combine(h, (a.compute_vectors ? 1u : 0u) | (a.lower ? 2u : 0u) | (a.unit_diagonal ? 4u : 0u) |
                          (a.singular_values ? 8u : 0u));
  h = hash_combine(h, static_cast<std::uint64_t>(a.transpose));
  h = hash_combine(h, double_bits(a.rcond));
  h = hash_combine(h, static_cast<std::uint64_t>(a.norm));
  return hash_combine(h, double_bits(a.p));
}

bool is_vector_order(NormOrder o) noexcept {
  return o == NormOrder::kOne || o == NormOrder::kTwo || o == NormOrder::kInf || o == NormOrder::kNegInf ||
         o == NormOrder::kP;
}

std::shared_ptr<const LinalgOp> make(const LinalgAttributes& a) {
  Result<std::shared_ptr<const LinalgOp>> op = LinalgOp::create(a);
  TENFERRO_CHECK(op.ok());  // factories build valid attributes only
  return std::move(op).value();
}

}  // namespace

std::string_view to_string(LinalgOpKind kind) noexcept { return info(kind).name; }

std::string_view to_string(LinalgSlot slot) noexcept {
  switch (slot) {
    case LinalgSlot::kSvd:
      return "svd";
    case LinalgSlot::kQr:
      return "qr";
    case LinalgSlot::kEigh:
      return "eigh";
    case LinalgSlot::kEigvalsh:
      return "eigvalsh";
    case LinalgSlot::kEig:
      return "eig";
    case LinalgSlot::kCholesky:
      return "cholesky";
    case LinalgSlot::kLu:
      return "lu";
    case LinalgSlot::kSolve:
      return "solve";
    case LinalgSlot::kTriangularSolve:
      return "triangular_solve";
    case LinalgSlot::kInverse:
      return "inverse";
    case LinalgSlot::kLstsq:
      return "lstsq";
    case LinalgSlot::kPinv:
      return "pinv";
    case LinalgSlot::kNone:
      return "none";
  }
  return "unknown";
}

std::string_view to_string(SvdMode mode) noexcept {
  switch (mode) {
    case SvdMode::kFull:
      return "full";
    case SvdMode::kThin:
      return "thin";
    case SvdMode::kValuesOnly:
      return "values_only";
  }
  return "unknown";
}

std::string_view to_string(QrMode mode) noexcept { return mode == QrMode::kReduced ? "reduced" : "complete"; }

std::string_view to_string(TriangularTranspose t) noexcept {
  switch (t) {
    case TriangularTranspose::kNone:
      return "none";
    case TriangularTranspose::kTranspose:
      return "transpose";
    case TriangularTranspose::kAdjoint:
      return "adjoint";
  }
  return "unknown";
}

std::string_view to_string(NormOrder order) noexcept {
  switch (order) {
    case NormOrder::kFrobenius:
      return "fro";
    case NormOrder::kNuclear:
      return "nuc";
    case NormOrder::kOne:
      return "1";
    case NormOrder::kNegOne:
      return "-1";
    case NormOrder::kTwo:
      return "2";
    case NormOrder::kNegTwo:
      return "-2";
    case NormOrder::kInf:
      return "inf";
    case NormOrder::kNegInf:
      return "-inf";
    case NormOrder::kP:
      return "p";
  }
  return "unknown";
}

LinalgSlot slot_of(const LinalgAttributes& a) noexcept {
  if (a.kind == LinalgOpKind::kMatrixNorm &&
      (a.norm == NormOrder::kTwo || a.norm == NormOrder::kNegTwo || a.norm == NormOrder::kNuclear)) {
    return LinalgSlot::kSvd;
  }
  // syevd('N') and Eigen's values-only solver cross over elsewhere than
  // with vectors (Eigen is faster with vectors below n = 64 here, LAPACK
  // without them from n = 32).
  if (a.kind == LinalgOpKind::kEigh && !a.compute_vectors) return LinalgSlot::kEigvalsh;
  return info(a.kind).slot;
}
bool requires_square_input(LinalgOpKind kind) noexcept { return info(kind).square; }
bool rejects_non_finite(LinalgOpKind kind) noexcept { return info(kind).rejects_non_finite; }
std::int32_t num_operands(LinalgOpKind kind) noexcept { return info(kind).operands; }

std::int32_t num_results(const LinalgAttributes& a) noexcept {
  switch (a.kind) {
    case LinalgOpKind::kSvd:
      return a.svd_mode == SvdMode::kValuesOnly ? 1 : 3;
    case LinalgOpKind::kQr:
    case LinalgOpKind::kSlogdet:
      return 2;
    case LinalgOpKind::kLstsq:
      return a.singular_values ? 2 : 1;
    case LinalgOpKind::kEigh:
    case LinalgOpKind::kEig:
      return a.compute_vectors ? 2 : 1;
    case LinalgOpKind::kLu:
      return 3;
    default:
      return 1;
  }
}

// --- factories ---------------------------------------------------------------

// Note [Shared linalg ops]
// The factories hand out one immutable op per attribute set they can make
// (function-local statics, built on first use), so that an eager loop of
// linalg::det(ctx, a) finds the context's memo, which is keyed on the op's
// address (Note [Extension call memo] in runtime/eager.cpp), instead of
// preparing the engine again on every call (a 4 x 4 det from Python took
// 3.90 us with a fresh op per call, 3.15 us with the shared one). Ops with
// a continuous parameter (lstsq and pinv's rcond, a vector p-norm's p) are
// made per call.
namespace {

// The op of attributes_of(index) for index < N, shared; a fresh one beyond.
template <std::size_t N, class F>
std::shared_ptr<const LinalgOp> shared_op(std::size_t index, F attributes_of) {
  static const std::array<std::shared_ptr<const LinalgOp>, N> ops = [&] {
    std::array<std::shared_ptr<const LinalgOp>, N> o;
    for (std::size_t i = 0; i < N; ++i) o[i] = make(attributes_of(i));
    return o;
  }();
  return index < N ? ops[index] : make(attributes_of(index));
}

LinalgAttributes of_kind(LinalgOpKind kind) {
  LinalgAttributes a;
  a.kind = kind;
  return a;
}

}  // namespace

std::shared_ptr<const LinalgOp> LinalgOp::svd(SvdMode mode) {
  return shared_op<3>(static_cast<std::size_t>(mode), [](std::size_t i) {
    LinalgAttributes a = of_kind(LinalgOpKind::kSvd);
    a.svd_mode = static_cast<SvdMode>(i);
    return a;
  });
}
std::shared_ptr<const LinalgOp> LinalgOp::qr(QrMode mode) {
  return shared_op<2>(static_cast<std::size_t>(mode), [](std::size_t i) {
    LinalgAttributes a = of_kind(LinalgOpKind::kQr);
    a.qr_mode = static_cast<QrMode>(i);
    return a;
  });
}
std::shared_ptr<const LinalgOp> LinalgOp::eigh(bool compute_vectors) {
  return shared_op<2>(compute_vectors ? 1 : 0, [](std::size_t i) {
    LinalgAttributes a = of_kind(LinalgOpKind::kEigh);
    a.compute_vectors = i == 1;
    return a;
  });
}
std::shared_ptr<const LinalgOp> LinalgOp::eig(bool compute_vectors) {
  return shared_op<2>(compute_vectors ? 1 : 0, [](std::size_t i) {
    LinalgAttributes a = of_kind(LinalgOpKind::kEig);
    a.compute_vectors = i == 1;
    return a;
  });
}
std::shared_ptr<const LinalgOp> LinalgOp::cholesky() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kCholesky); });
}
std::shared_ptr<const LinalgOp> LinalgOp::lu() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kLu); });
}
std::shared_ptr<const LinalgOp> LinalgOp::solve() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kSolve); });
}
std::shared_ptr<const LinalgOp> LinalgOp::triangular_solve(bool lower, bool unit_diagonal,
                                                           TriangularTranspose transpose) {
  const std::size_t index = (lower ? 1 : 0) + (unit_diagonal ? 2 : 0) + 4 * static_cast<std::size_t>(transpose);
  return shared_op<12>(index, [](std::size_t i) {
    LinalgAttributes a = of_kind(LinalgOpKind::kTriangularSolve);
    a.lower = (i & 1) != 0;
    a.unit_diagonal = (i & 2) != 0;
    a.transpose = static_cast<TriangularTranspose>(i / 4);
    return a;
  });
}
std::shared_ptr<const LinalgOp> LinalgOp::inv() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kInv); });
}
std::shared_ptr<const LinalgOp> LinalgOp::det() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kDet); });
}
std::shared_ptr<const LinalgOp> LinalgOp::slogdet() {
  return shared_op<1>(0, [](std::size_t) { return of_kind(LinalgOpKind::kSlogdet); });
}
std::shared_ptr<const LinalgOp> LinalgOp::lstsq(double rcond, bool singular_values) {
  LinalgAttributes a = of_kind(LinalgOpKind::kLstsq);
  a.rcond = std::isnan(rcond) ? -1.0 : rcond;
  a.singular_values = singular_values;
  return make(a);
}
std::shared_ptr<const LinalgOp> LinalgOp::pinv(double rcond) {
  LinalgAttributes a = of_kind(LinalgOpKind::kPinv);
  a.rcond = std::isnan(rcond) ? -1.0 : rcond;
  return make(a);
}
Result<std::shared_ptr<const LinalgOp>> LinalgOp::matrix_norm(NormOrder order) {
  LinalgAttributes a = of_kind(LinalgOpKind::kMatrixNorm);
  a.norm = order;
  if (order == NormOrder::kP) return create(a);  // a vector order: the error
  return shared_op<8>(static_cast<std::size_t>(order), [](std::size_t i) {
    LinalgAttributes m = of_kind(LinalgOpKind::kMatrixNorm);
    m.norm = static_cast<NormOrder>(i);
    return m;
  });
}
Result<std::shared_ptr<const LinalgOp>> LinalgOp::vector_norm(NormOrder order, double p) {
  LinalgAttributes a = of_kind(LinalgOpKind::kVectorNorm);
  a.norm = order;
  if (order == NormOrder::kP) {
    a.p = p;
    return create(a);
  }
  static constexpr NormOrder kVectorOrders[] = {NormOrder::kOne, NormOrder::kTwo, NormOrder::kInf, NormOrder::kNegInf};
  const auto* found = std::find(std::begin(kVectorOrders), std::end(kVectorOrders), order);
  if (found == std::end(kVectorOrders)) return create(a);  // a matrix order: the error
  return shared_op<4>(static_cast<std::size_t>(found - std::begin(kVectorOrders)), [](std::size_t i) {
    LinalgAttributes v = of_kind(LinalgOpKind::kVectorNorm);
    v.norm = kVectorOrders[std::min<std::size_t>(i, std::size(kVectorOrders) - 1)];
    return v;
  });
}

Result<std::shared_ptr<const LinalgOp>> LinalgOp::create(const LinalgAttributes& attributes) {
  LinalgAttributes a = attributes;
  if (static_cast<int>(a.kind) >= kNumLinalgOps) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "linalg: expected an operation kind below {}, found {}", kNumLinalgOps, static_cast<int>(a.kind));
  }
  if (a.kind == LinalgOpKind::kMatrixNorm && a.norm == NormOrder::kP) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                      "linalg.matrix_norm: expected ord fro, nuc, 1, -1, 2, -2, inf or -inf, found a p-norm order");
  }
  if (a.kind == LinalgOpKind::kVectorNorm) {
    if (!is_vector_order(a.norm)) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "linalg.vector_norm: expected ord 1, 2, inf, -inf or a p-norm, found the matrix order {}",
                        to_string(a.norm));
    }
    if (a.norm == NormOrder::kOne || a.norm == NormOrder::kTwo) {
      a.p = a.norm == NormOrder::kOne ? 1.0 : 2.0;
      a.norm = NormOrder::kP;
    }
    if (a.norm == NormOrder::kP && !std::isfinite(a.p)) {  // (+-inf: NormOrder::kInf / kNegInf)
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompile,
                        "linalg.vector_norm: expected a finite order p, found {}", a.p);
    }
  }
  // Canonical defaults for options the kind does not use (payload identity).
  const LinalgAttributes defaults;
  if (a.kind != LinalgOpKind::kSvd) a.svd_mode = defaults.svd_mode;
  if (a.kind != LinalgOpKind::kQr) a.qr_mode = defaults.qr_mode;
  if (a.kind != LinalgOpKind::kEigh && a.kind != LinalgOpKind::kEig) a.compute_vectors = defaults.compute_vectors;
  if (a.kind != LinalgOpKind::kTriangularSolve) {
    a.lower = defaults.lower;
    a.unit_diagonal = defaults.unit_diagonal;
    a.transpose = defaults.transpose;
  }
  if (a.kind != LinalgOpKind::kLstsq && a.kind != LinalgOpKind::kPinv) a.rcond = defaults.rcond;
  if (a.kind != LinalgOpKind::kLstsq) a.singular_values = defaults.singular_values;
  if (a.rcond < 0.0 || std::isnan(a.rcond)) a.rcond = -1.0;
  if (a.kind != LinalgOpKind::kMatrixNorm && a.kind != LinalgOpKind::kVectorNorm) a.norm = defaults.norm;
  if (a.norm != NormOrder::kP) a.p = defaults.p;
  return std::shared_ptr<const LinalgOp>(new LinalgOp(a));
}

LinalgOp::LinalgOp(const LinalgAttributes& attributes) : attributes_(attributes), hash_(hash_attributes(attributes)) {}

bool LinalgOp::payload_equal(const program::ExtensionOp& other) const noexcept {
  if (other.family_id() != kLinalgFamilyId) return false;
  return static_cast<const LinalgOp&>(other).attributes_ == attributes_;
}

SmallVector<program::AliasDecl, 2> LinalgOp::aliases() const {
  SmallVector<program::AliasDecl, 2> out;
  for (std::int32_t i = 0; i < num_results(attributes_); ++i) out.push_back(program::AliasDecl::fresh());
  return out;
}

std::shared_ptr<const program::ExtensionOp> LinalgOp::batched(std::span<const program::ValueMetadata>,
                                                              std::span<const bool> batched) const {
  if (!std::ranges::all_of(batched, [](bool b) { return b; })) return nullptr;
  Result<std::shared_ptr<const LinalgOp>> op = create(attributes_);
  return op.ok() ? *op : nullptr;
}

std::string LinalgOp::describe() const {
  const LinalgAttributes& a = attributes_;
  std::string options;
  switch (a.kind) {
    case LinalgOpKind::kSvd:
      options = std::string(to_string(a.svd_mode));
      break;
    case LinalgOpKind::kQr:
      options = std::string(to_string(a.qr_mode));
      break;
    case LinalgOpKind::kEigh:
    case LinalgOpKind::kEig:
      options = a.compute_vectors ? "vectors" : "values_only";
      break;
    case LinalgOpKind::kTriangularSolve:
      options = fmt::format(
          "{}{}{}", a.lower ? "lower" : "upper", a.unit_diagonal ? ", unit" : "",
          a.transpose == TriangularTranspose::kNone ? std::string() : ", " + std::string(to_string(a.transpose)));
      break;
    case LinalgOpKind::kLstsq:
    case LinalgOpKind::kPinv:
      options = a.rcond < 0 ? "rcond=default" : fmt::format("rcond={}", a.rcond);
      if (a.singular_values) options += ", singular_values";
      break;
    case LinalgOpKind::kMatrixNorm:
      options = fmt::format("ord={}", to_string(a.norm));
      break;
    case LinalgOpKind::kVectorNorm:
      options = a.norm == NormOrder::kP ? fmt::format("ord={}", a.p) : fmt::format("ord={}", to_string(a.norm));
      break;
    default:
      break;
  }
  return options.empty() ? fmt::format("linalg.{}", to_string(a.kind))
                         : fmt::format("linalg.{}({})", to_string(a.kind), options);
}

// --- metadata inference ---------------------------------------------------------

Result<SmallVector<ValueMetadata, 2>> LinalgOp::infer_metadata(std::span<const ValueMetadata> operands,
                                                               program::ShapeConstraints& constraints) const {
  const LinalgAttributes& a = attributes_;
  const std::int32_t expected = num_operands(a.kind);
  if (operands.size() != static_cast<std::size_t>(expected)) {
    return constraints.error(ErrorCode::kInvalidArgument, "expected {} operand{}, found {}", expected,
                             expected == 1 ? "" : "s", operands.size());
  }
  const DType dtype = operands[0].dtype;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (!is_linalg_dtype(operands[i].dtype)) {
      return constraints.error(ErrorCode::kDTypeMismatch,
                               "expected operand {} of dtype float32, float64, complex64 or complex128, found {}", i,
                               operands[i].dtype);
    }
    if (operands[i].dtype != dtype) {
      return constraints.error(ErrorCode::kDTypeMismatch, "expected every operand of dtype {}, found operand {} of {}",
                               dtype, i, operands[i].dtype);
    }
  }
  const std::int64_t min_rank = a.kind == LinalgOpKind::kVectorNorm ? 1 : 2;
  const ValueMetadata& x = operands[0];
  if (x.rank() < min_rank) {
    return constraints.error(ErrorCode::kShapeMismatch, "expected operand 0 of rank >= {} ({}), found {}", min_rank,
                             min_rank == 1 ? "[..., n]" : "[..., m, n]", x.to_string());
  }
  const std::size_t core = static_cast<std::size_t>(min_rank);
  const std::size_t batch_rank = x.shape.size() - core;
  program::SymbolicShape batch(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(batch_rank));
  const SymbolicExtent m = x.shape[batch_rank];
  const SymbolicExtent n = x.shape[x.shape.size() - 1];
  if (requires_square_input(a.kind)) TENFERRO_TRY(constraints.require_equal(m, n, "a square matrix (rows == columns)"));

  SymbolicExtent rhs_cols;
  if (expected == 2) {
    const ValueMetadata& b = operands[1];
    if (b.rank() != x.rank()) {
      return constraints.error(ErrorCode::kShapeMismatch,
                               "expected operand 1 of rank {} ([..., rows, columns] with operand 0's batch), found {}",
                               x.rank(), b.to_string());
    }
    for (std::size_t i = 0; i < batch_rank; ++i) {
      TENFERRO_TRY(constraints.require_equal(x.shape[i], b.shape[i], "equal batch extents of both operands"));
    }
    TENFERRO_TRY(constraints.require_equal(b.shape[batch_rank], m, "operand 1's rows equal operand 0's rows"));
    rhs_cols = b.shape[batch_rank + 1];
  }

  const DType real = real_dtype(dtype);
  const auto with_batch = [&](std::initializer_list<SymbolicExtent> tail, DType d) {
    ValueMetadata meta{d, batch};
    for (const SymbolicExtent& e : tail) meta.shape.push_back(e);
    return meta;
  };
  const SymbolicExtent k = min(m, n);
  SmallVector<ValueMetadata, 2> out;
  switch (a.kind) {
    case LinalgOpKind::kSvd:
      if (a.svd_mode == SvdMode::kValuesOnly) {
        out.push_back(with_batch({k}, real));
      } else if (a.svd_mode == SvdMode::kFull) {
        out.push_back(with_batch({m, m}, dtype));
        out.push_back(with_batch({k}, real));
        out.push_back(with_batch({n, n}, dtype));
      } else {
        out.push_back(with_batch({m, k}, dtype));
        out.push_back(with_batch({k}, real));
        out.push_back(with_batch({k, n}, dtype));
      }
      break;
    case LinalgOpKind::kQr:
      if (a.qr_mode == QrMode::kComplete) {
        out.push_back(with_batch({m, m}, dtype));
        out.push_back(with_batch({m, n}, dtype));
      } else {
        out.push_back(with_batch({m, k}, dtype));
        out.push_back(with_batch({k, n}, dtype));
      }
      break;
    case LinalgOpKind::kEigh:
      out.push_back(with_batch({n}, real));
      if (a.compute_vectors) out.push_back(with_batch({n, n}, dtype));
      break;
    case LinalgOpKind::kEig: {
      const DType c = *complex_dtype(dtype);
      out.push_back(with_batch({n}, c));
      if (a.compute_vectors) out.push_back(with_batch({n, n}, c));
      break;
    }
    case LinalgOpKind::kCholesky:
    case LinalgOpKind::kInv:
      out.push_back(with_batch({n, n}, dtype));
      break;
    case LinalgOpKind::kLu:
      out.push_back(with_batch({m, n}, dtype));
      out.push_back(with_batch({k}, DType::kInt64));
      out.push_back(with_batch({m}, DType::kInt64));
      break;
    case LinalgOpKind::kSolve:
    case LinalgOpKind::kTriangularSolve:
      out.push_back(with_batch({n, rhs_cols}, dtype));
      break;
    case LinalgOpKind::kDet:
      out.push_back(with_batch({}, dtype));
      break;
    case LinalgOpKind::kSlogdet:
      out.push_back(with_batch({}, dtype));
      out.push_back(with_batch({}, real));
      break;
    case LinalgOpKind::kLstsq:
      out.push_back(with_batch({n, rhs_cols}, dtype));
      if (a.singular_values) out.push_back(with_batch({k}, real));
      break;
    case LinalgOpKind::kPinv:
      out.push_back(with_batch({n, m}, dtype));
      break;
    case LinalgOpKind::kMatrixNorm:
      out.push_back(with_batch({}, real));
      break;
    case LinalgOpKind::kVectorNorm: {
      ValueMetadata meta{real, program::SymbolicShape(x.shape.begin(), x.shape.end() - 1)};
      out.push_back(std::move(meta));
      break;
    }
  }
  return out;
}

double relative_cutoff(double rcond, DType dtype, std::int64_t m, std::int64_t n) noexcept {
  if (rcond >= 0.0) return rcond;
  const double eps = real_dtype(dtype) == DType::kFloat32 ? static_cast<double>(std::numeric_limits<float>::epsilon())
                                                          : std::numeric_limits<double>::epsilon();
  return eps * static_cast<double>(std::max(m, n));
}

}  // namespace tenferro::linalg
