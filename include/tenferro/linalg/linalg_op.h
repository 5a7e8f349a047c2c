// LinalgOp: the linear-algebra extension operation (family
// "tenferro.linalg") as it appears in a SemanticProgram and in eager calls.
// Its payload is the operation kind (linalg_ops.def) plus the options that
// change what it computes (SVD/QR modes, whether eigenvectors are wanted,
// triangle and transpose flags, rcond, norm order); providers, plans and
// workspaces are not part of it.
//
// Note [Linalg operation semantics]
// Every operation is batched over leading dimensions: a matrix operand is
// [..., m, n] and every operand of one call has the same batch extents (no
// broadcasting; a mismatch is kShapeMismatch). Supported dtypes are float32,
// float64, complex64 and complex128 (others are kDTypeMismatch). Results,
// in order (k = min(m, n)):
//   svd              kFull: U [..,m,m], S [..,k], Vh [..,n,n]; kThin: U [..,m,k],
//                    S, Vh [..,k,n]; kValuesOnly: S. A = U diag(S) Vh, S real,
//                    descending. A values-only request never computes vectors.
//   qr               kReduced: Q [..,m,k], R [..,k,n]; kComplete: Q [..,m,m],
//                    R [..,m,n]. Any m, n (also m < n).
//   eigh             w [..,n] real ascending, V [..,n,n] (columns); reads the
//                    lower triangle. compute_vectors = false: w only.
//   eig              w [..,n] complex, V [..,n,n] complex; w sorted by (real,
//                    imag) ascending. compute_vectors = false: w only.
//   cholesky         L [..,n,n] lower with A = L Lᴴ; reads the lower triangle.
//   lu               LU [..,m,n] (unit-lower L below the diagonal, U on and
//                    above), pivots int64 [..,k] (0-based row interchanges:
//                    row i was swapped with row pivots[i]), permutation int64
//                    [..,m] with A[permutation] = L U.
//   solve            A [..,n,n], B [..,n,r] -> X [..,n,r] with A X = B.
//   triangular_solve A [..,n,n] (the `lower` or upper triangle; unit diagonal
//                    when `unit_diagonal`), B [..,n,r] -> X with op(A) X = B,
//                    op = identity, transpose or adjoint.
//   inv              A⁻¹ [..,n,n].
//   det              det(A) [..] (A's dtype).
//   slogdet          sign [..] (A's dtype: ±1 or a unit complex; 0 for a
//                    singular A), logabsdet [..] (real; -inf when singular).
//   lstsq            A [..,m,n], B [..,m,r] -> X [..,n,r], the minimum-norm
//                    least-squares solution; singular values below
//                    rcond * max(S) count as zero (rcond < 0 or NaN:
//                    eps * max(m, n)).
//                    singular_values: also S [..,k] (real, descending), the
//                    singular values the solver computed (numpy's lstsq
//                    returns them; no second SVD).
//   pinv             A⁺ [..,n,m], same rcond rule.
//   matrix_norm      [..] real: fro, nuc, 1, -1, 2, -2, inf, -inf (numpy ord).
//   vector_norm      over the last axis, [..] real: any finite p != 0
//                    (negative p too, as numpy), 0 (count of non-zeros),
//                    inf, -inf.
// Gauge (Note [Linalg gauge convention] in docs/linalg.md): singular vectors,
// eigenvectors and QR factors are normalised so results do not depend on
// the provider: each column of U (svd), V (eigh, eig) has its largest-
// magnitude entry real and positive (Vh rows follow U), eig vectors have
// unit norm, and R (qr) has a real non-negative diagonal.
// Errors at run time: kNonFiniteInput for NaN/Inf (except norms),
// kSingularMatrix for solve/inv/triangular_solve (message has LAPACK's
// info), kNotPositiveDefinite for cholesky (with info), kNoConvergence.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/extension_op.h"

namespace tenferro::linalg {

/// The extension family id of LinalgOp.
inline constexpr std::string_view kLinalgFamilyId = "tenferro.linalg";

/// The element types every linalg operation takes: f32, f64, c64, c128.
constexpr bool is_linalg_dtype(DType d) noexcept {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kComplex64 || d == DType::kComplex128;
}

/// The operations, generated from linalg_ops.def.
enum class LinalgOpKind : std::uint8_t {
#define TENFERRO_LINALG_OP(name, ...) k##name,
#include "tenferro/linalg/linalg_ops.def"
};
inline constexpr int kNumLinalgOps = 0
#define TENFERRO_LINALG_OP(...) +1
#include "tenferro/linalg/linalg_ops.def"
    ;
std::string_view to_string(LinalgOpKind kind) noexcept;

/// The provider-bundle slot that computes an operation (LinalgProviderBundle).
enum class LinalgSlot : std::uint8_t {
  kSvd,
  kQr,
  kEigh,
  kEigvalsh,  ///< eigh without vectors (its own measured crossover)
  kEig,
  kCholesky,
  kLu,
  kSolve,
  kTriangularSolve,
  kInverse,
  kLstsq,
  kPinv,
  kNone,  ///< computed by the engine itself
};
inline constexpr int kNumLinalgSlots = 12;  // without kNone
std::string_view to_string(LinalgSlot slot) noexcept;

enum class SvdMode : std::uint8_t { kFull, kThin, kValuesOnly };
enum class QrMode : std::uint8_t { kReduced, kComplete };
enum class TriangularTranspose : std::uint8_t { kNone, kTranspose, kAdjoint };
/// numpy's `ord` for matrix_norm and vector_norm (kP: `p` holds the order).
enum class NormOrder : std::uint8_t { kFrobenius, kNuclear, kOne, kNegOne, kTwo, kNegTwo, kInf, kNegInf, kP };
std::string_view to_string(SvdMode mode) noexcept;
std::string_view to_string(QrMode mode) noexcept;
std::string_view to_string(TriangularTranspose transpose) noexcept;
std::string_view to_string(NormOrder order) noexcept;

/// The options of one operation. Fields an operation does not use keep
/// their defaults (the factories below guarantee it), so equality and the
/// hash cover every field. Regular value type.
struct LinalgAttributes {
  LinalgOpKind kind = LinalgOpKind::kSvd;
  SvdMode svd_mode = SvdMode::kThin;
  QrMode qr_mode = QrMode::kReduced;
  bool compute_vectors = true;  ///< eigh, eig
  bool lower = true;            ///< triangular_solve: which triangle of A
  bool unit_diagonal = false;   ///< triangular_solve
  TriangularTranspose transpose = TriangularTranspose::kNone;
  double rcond = -1.0;           ///< lstsq, pinv (< 0 or NaN: eps * max(m, n))
  bool singular_values = false;  ///< lstsq: also return A's singular values
  NormOrder norm = NormOrder::kFrobenius;
  double p = 2.0;  ///< vector_norm with NormOrder::kP

  friend bool operator==(const LinalgAttributes&, const LinalgAttributes&) = default;
};

/// The relative singular-value cutoff of lstsq, pinv and matrix_rank for an
/// m x n matrix of `dtype`: `rcond` when it is >= 0, else numpy's default
/// eps(dtype) * max(m, n) (NaN counts as negative). Singular values at or
/// below cutoff * max(S) count as zero. The providers and the eager functions
/// read it here.
double relative_cutoff(double rcond, DType dtype, std::int64_t m, std::int64_t n) noexcept;

/// The slot that computes `attributes` (matrix_norm's 2, -2 and nuclear
/// orders need singular values: kSvd).
LinalgSlot slot_of(const LinalgAttributes& attributes) noexcept;
/// Whether the operation needs a square operand 0 / rejects NaN and Inf.
bool requires_square_input(LinalgOpKind kind) noexcept;
bool rejects_non_finite(LinalgOpKind kind) noexcept;
std::int32_t num_operands(LinalgOpKind kind) noexcept;
/// The number of results for these options.
std::int32_t num_results(const LinalgAttributes& attributes) noexcept;

/// The linalg extension op (Note [Linalg operation semantics]). Immutable
/// and thread-safe; build it with the factories.
class LinalgOp final : public program::ExtensionOp {
 public:
  static std::shared_ptr<const LinalgOp> svd(SvdMode mode = SvdMode::kThin);
  static std::shared_ptr<const LinalgOp> qr(QrMode mode = QrMode::kReduced);
  static std::shared_ptr<const LinalgOp> eigh(bool compute_vectors = true);
  static std::shared_ptr<const LinalgOp> eig(bool compute_vectors = true);
  static std::shared_ptr<const LinalgOp> cholesky();
  static std::shared_ptr<const LinalgOp> lu();
  static std::shared_ptr<const LinalgOp> solve();
  static std::shared_ptr<const LinalgOp> triangular_solve(bool lower, bool unit_diagonal = false,
                                                          TriangularTranspose transpose = TriangularTranspose::kNone);
  static std::shared_ptr<const LinalgOp> inv();
  static std::shared_ptr<const LinalgOp> det();
  static std::shared_ptr<const LinalgOp> slogdet();
  /// `rcond` < 0 or NaN selects eps * max(m, n); `singular_values` adds A's
  /// singular values as a second result.
  static std::shared_ptr<const LinalgOp> lstsq(double rcond = -1.0, bool singular_values = false);
  static std::shared_ptr<const LinalgOp> pinv(double rcond = -1.0);
  /// kInvalidArgument for kP (a vector order).
  static Result<std::shared_ptr<const LinalgOp>> matrix_norm(NormOrder order = NormOrder::kFrobenius);
  /// `order` kP uses `p` (finite, negative too; 0 counts non-zeros); kTwo is p = 2. kInvalidArgument for
  /// matrix-only orders (frobenius, nuclear, -1, -2) or a bad p.
  static Result<std::shared_ptr<const LinalgOp>> vector_norm(NormOrder order = NormOrder::kTwo, double p = 2.0);
  /// Any validated attribute set (the factories' common path).
  static Result<std::shared_ptr<const LinalgOp>> create(const LinalgAttributes& attributes);

  const LinalgAttributes& attributes() const noexcept { return attributes_; }
  LinalgOpKind kind() const noexcept { return attributes_.kind; }

  // --- program::ExtensionOp ---
  std::string_view family_id() const noexcept override { return kLinalgFamilyId; }
  std::uint64_t payload_hash() const noexcept override { return hash_; }
  bool payload_equal(const program::ExtensionOp& other) const noexcept override;
  Result<SmallVector<program::ValueMetadata, 2>> infer_metadata(std::span<const program::ValueMetadata> operands,
                                                                program::ShapeConstraints& constraints) const override;
  program::EffectSet effects() const override { return program::EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override;
  /// "linalg.svd(thin)", "linalg.triangular_solve(lower, unit, adjoint)".
  std::string describe() const override;
  /// The same operation when every operand is batched (it is batched over
  /// leading dimensions already, Note [Linalg operation semantics]).
  std::shared_ptr<const program::ExtensionOp> batched(std::span<const program::ValueMetadata> operands,
                                                      std::span<const bool> batched) const override;

 private:
  explicit LinalgOp(const LinalgAttributes& attributes);
  LinalgAttributes attributes_;
  std::uint64_t hash_ = 0;
};

}  // namespace tenferro::linalg
