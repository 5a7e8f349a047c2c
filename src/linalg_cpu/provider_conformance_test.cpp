// The linalg provider conformance suite, written once and run against every
// provider (LAPACK over serial OpenBLAS, Eigen): each operation, dtype and
// batched shape is checked against its definition (U·S·Vᴴ = A, QᴴQ = I,
// A·X = B, ...) through a runtime whose linalg engine holds only the provider
// under test, plus the gauge convention. The null skeleton must answer
// kUnsupported for everything, and both providers must agree with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "linalg_cpu/linalg_test_support.h"

namespace tenferro::linalg {
namespace {

using namespace testing;

std::shared_ptr<const CpuLinalgProvider> provider_named(const std::string& name) {
  if (name == "lapack") {
    Result<std::shared_ptr<LapackLinalgProvider>> p = LapackLinalgProvider::load();
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? std::shared_ptr<const CpuLinalgProvider>(*p) : nullptr;
  }
  return std::make_shared<EigenLinalgProvider>();
}

void expect_close(const RefMatrix& got, const RefMatrix& want, double tol, const std::string& what) {
  ASSERT_EQ(got.rows, want.rows) << what;
  ASSERT_EQ(got.cols, want.cols) << what;
  const double err = (got - want).max_abs();
  EXPECT_LE(err, tol * std::max(1.0, want.max_abs())) << what << ": max |difference| " << err;
}

RefMatrix diag(const std::vector<cd>& s, std::int64_t rows, std::int64_t cols) {
  RefMatrix d(rows, cols);
  for (std::size_t i = 0; i < s.size(); ++i) d(static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)) = s[i];
  return d;
}

// The gauge pivot (first entry within 1e-3 of the largest magnitude) of each
// column is real and positive.
void expect_column_gauge(const RefMatrix& m, double tol, const std::string& what) {
  for (std::int64_t j = 0; j < m.cols; ++j) {
    double largest = 0;
    for (std::int64_t i = 0; i < m.rows; ++i) largest = std::max(largest, std::abs(m(i, j)));
    if (largest == 0) continue;
    for (std::int64_t i = 0; i < m.rows; ++i) {
      if (std::abs(m(i, j)) >= largest * (1 - 1e-3)) {
        EXPECT_GT(m(i, j).real(), 0) << what << " column " << j;
        EXPECT_LE(std::abs(m(i, j).imag()), tol) << what << " column " << j;
        break;
      }
    }
  }
}

std::string label(DType dtype, IntArrayRef shape) { return fmt::format("{} {}", dtype, shape_to_string(shape)); }

const std::vector<Dims> kGeneralShapes = {{1, 1}, {5, 3}, {3, 5}, {3, 17, 20}, {2, 2, 20, 17}, {40, 33}, {33, 40}};
const std::vector<Dims> kSquareShapes = {{1, 1}, {5, 5}, {3, 17, 17}, {2, 2, 4, 4}, {40, 40}};

class ProviderConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    provider_ = provider_named(GetParam());
    ASSERT_NE(provider_, nullptr);
    engine_ = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(provider_)));
    runtime_ = make_runtime(engine_);
  }

  // Whether the provider under test implements `kind` (the Eigen provider
  // leaves the SVD family to LAPACK: Note [No Eigen SVD]).
  bool serves(LinalgOpKind kind) const {
    LinalgAttributes a;
    a.kind = kind;
    return provider_->plan(LinalgProblem{&a, DType::kFloat64, 4, 4, 1}).ok();
  }

  void expect_lu_factors(const Tensor& a, const std::string& what);
  void expect_qr(const Tensor& a, QrMode mode, const std::string& what);
  void expect_inverse_and_solve(const Tensor& a, const std::string& what);

  runtime::TensorList call(const std::shared_ptr<const LinalgOp>& op, std::initializer_list<Tensor> inputs) {
    runtime::EagerContext ctx = runtime_.on();
    Result<runtime::TensorList> out = ctx.call(op, std::span<const Tensor>(inputs.begin(), inputs.size()));
    EXPECT_TRUE(out.ok()) << op->describe() << ": " << out.status().to_string();
    EXPECT_EQ(ctx.metrics().fast_path_calls, 1u) << "the native engine must serve the call";
    return out.ok() ? std::move(out).value() : runtime::TensorList();
  }

  std::shared_ptr<const CpuLinalgProvider> provider_;
  std::shared_ptr<CpuLinalgEngine> engine_;
  runtime::Runtime runtime_ = make_runtime(std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed({})));
};

TEST_P(ProviderConformance, SvdReconstructsAndIsOrthonormalInEveryMode) {
  if (!serves(LinalgOpKind::kSvd)) GTEST_SKIP() << provider_->name() << " leaves the SVD family to LAPACK";
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kGeneralShapes) {
      const Tensor a = random_tensor(dtype, shape, 11);
      const std::int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      const double tol = tolerance(dtype, std::max(m, n));
      const runtime::TensorList values = call(LinalgOp::svd(SvdMode::kValuesOnly), {a});
      for (SvdMode mode : {SvdMode::kThin, SvdMode::kFull}) {
        const runtime::TensorList out = call(LinalgOp::svd(mode), {a});
        ASSERT_EQ(out.size(), 3u);
        const std::int64_t ucols = mode == SvdMode::kFull ? m : k, vrows = mode == SvdMode::kFull ? n : k;
        EXPECT_EQ(out[0].size(out[0].rank() - 1), ucols);
        EXPECT_EQ(out[2].size(out[2].rank() - 2), vrows);
        EXPECT_EQ(out[1].dtype(), real_dtype(dtype));
        for (std::int64_t b = 0; b < batch_of(shape); ++b) {
          const std::string what = label(dtype, shape) + " " + std::string(to_string(mode));
          const RefMatrix u = matrix_of(out[0], b), vh = matrix_of(out[2], b);
          const std::vector<cd> s = vector_of(out[1], b);
          for (std::size_t i = 0; i + 1 < s.size(); ++i) EXPECT_GE(s[i].real(), s[i + 1].real() - tol) << what;
          expect_close(u * diag(s, ucols, vrows) * vh, matrix_of(a, b), tol, what + " U S Vh = A");
          expect_close(u.adjoint() * u, RefMatrix::identity(ucols), tol, what + " UᴴU = I");
          expect_close(vh * vh.adjoint(), RefMatrix::identity(vrows), tol, what + " Vh Vhᴴ = I");
          expect_column_gauge(u, tol, what + " U gauge");
          const std::vector<cd> sv = vector_of(values[0], b);
          for (std::int64_t i = 0; i < k; ++i) EXPECT_NEAR(sv[i].real(), s[i].real(), tol * (1 + s[0].real())) << what;
        }
      }
    }
  }
}

// Q R = A relative to |A| (any scale), QᴴQ = I, R upper with a real
// non-negative diagonal, for each matrix of `a`.
void ProviderConformance::expect_qr(const Tensor& a, QrMode mode, const std::string& what) {
  const std::int64_t m = a.shape()[a.rank() - 2], n = a.shape().back(), k = std::min(m, n);
  const double tol = tolerance(a.dtype(), std::max(m, n));
  const runtime::TensorList out = call(LinalgOp::qr(mode), {a});
  ASSERT_EQ(out.size(), 2u);
  const std::int64_t qcols = mode == QrMode::kComplete ? m : k;
  for (std::int64_t b = 0; b < batch_of(a.shape()); ++b) {
    const RefMatrix q = matrix_of(out[0], b), r = matrix_of(out[1], b), am = matrix_of(a, b);
    ASSERT_EQ(q.cols, qcols) << what;
    EXPECT_LE((q * r - am).max_abs(), tol * am.max_abs()) << what << " QR = A";
    expect_close(q.adjoint() * q, RefMatrix::identity(qcols), tol, what + " QᴴQ = I");
    for (std::int64_t i = 0; i < r.rows; ++i) {
      for (std::int64_t j = 0; j < std::min(i, r.cols); ++j) EXPECT_EQ(r(i, j), cd(0)) << what << " R lower";
      if (i < k) {
        EXPECT_GE(r(i, i).real(), 0) << what << " diag(R) real non-negative";
        EXPECT_LE(std::abs(r(i, i).imag()), tol * std::max(1.0, am.max_abs())) << what;
      }
    }
  }
}

TEST_P(ProviderConformance, QrReducedAndCompleteIncludingWideMatrices) {
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kGeneralShapes) {
      const Tensor a = random_tensor(dtype, shape, 12);
      for (QrMode mode : {QrMode::kReduced, QrMode::kComplete}) {
        expect_qr(a, mode, label(dtype, shape) + " " + std::string(to_string(mode)));
      }
    }
  }
}

// Note [Small QR]: the LAPACK provider factors matrices up to
// small_qr_max() rows and columns (32; complex 16) itself, counted by the
// engine, larger and taller ones with geqrf; at any scale (dlarfg's
// rescaling of tiny columns), with zero columns and a column that is
// already reduced (tau = 0).
TEST_P(ProviderConformance, QrAroundTheSmallQrBoundAtExtremeScales) {
  const bool lapack = GetParam() == "lapack";
  struct Case {
    DType dtype;
    Dims shape;
    bool inline_qr;  // for the LAPACK provider
  };
  const Case cases[] = {{DType::kFloat64, {2, 32, 32}, true},    {DType::kFloat64, {2, 33, 33}, false},
                        {DType::kFloat32, {2, 32, 5}, true},     {DType::kFloat32, {40, 8}, false},
                        {DType::kComplex128, {2, 16, 16}, true}, {DType::kComplex64, {2, 17, 17}, false},
                        {DType::kComplex64, {3, 7}, true},       {DType::kComplex128, {9, 4}, true}};
  for (const Case& c : cases) {
    const bool single = c.dtype == DType::kFloat32 || c.dtype == DType::kComplex64;
    for (const double scale : {1.0, single ? 1e-30 : 1e-300, single ? 1e30 : 1e300}) {
      std::vector<cd> values = random_values(c.dtype, numel_unchecked(c.shape), 41);
      const std::int64_t cols = c.shape.back();
      for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] *= scale;
        if (static_cast<std::int64_t>(i) % cols == 1) values[i] = 0;  // a zero column
        // column 2 already reduced: a real entry on the diagonal, zeros below
        const std::int64_t row = static_cast<std::int64_t>(i) / cols % c.shape[c.shape.size() - 2];
        if (static_cast<std::int64_t>(i) % cols == 2 && row >= 2) values[i] = row == 2 ? cd(scale, 0) : cd(0);
      }
      const Tensor a = tensor_of(c.dtype, c.shape, values);
      const std::uint64_t before = engine_->stats().inline_kernel_matrices;
      const std::string what = fmt::format("{} scale {}", label(c.dtype, c.shape), scale);
      expect_qr(a, QrMode::kReduced, what + " reduced");
      expect_qr(a, QrMode::kComplete, what + " complete");
      EXPECT_EQ(engine_->stats().inline_kernel_matrices - before,
                lapack && c.inline_qr ? 2 * static_cast<std::uint64_t>(batch_of(c.shape)) : 0u)
          << what;
    }
  }
}

TEST_P(ProviderConformance, EighDiagonalisesTheLowerTriangle) {
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kSquareShapes) {
      // Only the lower triangle is read: garbage above must not matter.
      const Tensor h = hermitian_positive_definite(dtype, shape, 13);
      std::vector<cd> v = values_of(h);
      const std::int64_t n = shape.back();
      for (std::int64_t b = 0; b < batch_of(shape); ++b)
        for (std::int64_t i = 0; i < n; ++i)
          for (std::int64_t j = i + 1; j < n; ++j) v[static_cast<std::size_t>(b * n * n + i * n + j)] = cd(99, -7);
      const Tensor a = tensor_of(dtype, shape, v);
      const double tol = tolerance(dtype, n);
      const runtime::TensorList out = call(LinalgOp::eigh(), {a});
      const runtime::TensorList values = call(LinalgOp::eigh(false), {a});
      ASSERT_EQ(out.size(), 2u);
      ASSERT_EQ(values.size(), 1u);
      for (std::int64_t b = 0; b < batch_of(shape); ++b) {
        const std::string what = label(dtype, shape);
        const RefMatrix hm = matrix_of(h, b), vecs = matrix_of(out[1], b);
        const std::vector<cd> w = vector_of(out[0], b), w2 = vector_of(values[0], b);
        for (std::int64_t i = 0; i + 1 < n; ++i) EXPECT_LE(w[i].real(), w[i + 1].real()) << what << " ascending";
        expect_close(hm * vecs, vecs * diag(w, n, n), tol * n, what + " A V = V diag(w)");
        expect_close(vecs.adjoint() * vecs, RefMatrix::identity(n), tol, what + " VᴴV = I");
        expect_column_gauge(vecs, tol, what + " V gauge");
        for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(w[i].real(), w2[i].real(), tol * n * n) << what;
      }
    }
  }
}

TEST_P(ProviderConformance, EigReturnsSortedComplexPairs) {
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kSquareShapes) {
      const Tensor a = random_tensor(dtype, shape, 14);
      const std::int64_t n = shape.back();
      const double tol = tolerance(dtype, n) * 10;
      const runtime::TensorList out = call(LinalgOp::eig(), {a});
      const runtime::TensorList values = call(LinalgOp::eig(false), {a});
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(out[0].dtype(), *complex_dtype(dtype));
      for (std::int64_t b = 0; b < batch_of(shape); ++b) {
        const std::string what = label(dtype, shape);
        const RefMatrix am = matrix_of(a, b), vecs = matrix_of(out[1], b);
        const std::vector<cd> w = vector_of(out[0], b), w2 = vector_of(values[0], b);
        for (std::int64_t i = 0; i + 1 < n; ++i) {
          EXPECT_TRUE(w[i].real() < w[i + 1].real() ||
                      (w[i].real() == w[i + 1].real() && w[i].imag() <= w[i + 1].imag()))
              << what << " sorted by (real, imag)";
        }
        expect_close(am * vecs, vecs * diag(w, n, n), tol * n, what + " A V = V diag(w)");
        for (std::int64_t j = 0; j < n; ++j) {
          double norm2 = 0;
          for (std::int64_t i = 0; i < n; ++i) norm2 += std::norm(vecs(i, j));
          EXPECT_NEAR(norm2, 1.0, tol) << what << " unit columns";
        }
        expect_column_gauge(vecs, tol, what + " V gauge");
        for (std::int64_t i = 0; i < n; ++i) EXPECT_LE(std::abs(w[i] - w2[i]), tol * n * n) << what;
      }
    }
  }
}

// A[perm] = L U for the packed factorization of each matrix of `a` (m x n,
// L unit lower m x k, U upper k x n); the pivots replay the permutation.
void ProviderConformance::expect_lu_factors(const Tensor& a, const std::string& what) {
  const std::int64_t m = a.shape()[a.rank() - 2], n = a.shape()[a.rank() - 1], k = std::min(m, n);
  const runtime::TensorList lu = call(LinalgOp::lu(), {a});
  for (std::int64_t b = 0; b < batch_of(a.shape()); ++b) {
    const RefMatrix packed = matrix_of(lu[0], b), am = matrix_of(a, b);
    const std::vector<cd> piv = vector_of(lu[1], b), perm = vector_of(lu[2], b);
    RefMatrix lower(m, k), upper(k, n), permuted(m, n);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        if (j < i && j < k) lower(i, j) = packed(i, j);
        if (j == i) lower(i, j) = 1;
        if (j >= i && i < k) upper(i, j) = packed(i, j);
      }
    std::vector<std::int64_t> replay(static_cast<std::size_t>(m));
    std::iota(replay.begin(), replay.end(), 0);
    for (std::int64_t i = 0; i < k; ++i) {
      std::swap(replay[static_cast<std::size_t>(i)], replay[static_cast<std::size_t>(piv[i].real())]);
    }
    for (std::int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(static_cast<std::int64_t>(perm[i].real()), replay[static_cast<std::size_t>(i)]) << what;
      for (std::int64_t j = 0; j < n; ++j) permuted(i, j) = am(static_cast<std::int64_t>(perm[i].real()), j);
    }
    expect_close(lower * upper, permuted, tolerance(a.dtype(), std::max(m, n)) * std::max(m, n),
                 what + " A[perm] = L U");
  }
}

// A A⁻¹ = I and A X = B for each (square) matrix of `a`.
void ProviderConformance::expect_inverse_and_solve(const Tensor& a, const std::string& what) {
  const std::int64_t n = a.shape().back();
  const double tol = tolerance(a.dtype(), n) * n;
  const Tensor inv = call(LinalgOp::inv(), {a})[0];
  Dims bshape(a.shape().begin(), a.shape().end());
  bshape.back() = 3;
  const Tensor rhs = random_tensor(a.dtype(), bshape, 17);
  const Tensor x = call(LinalgOp::solve(), {a, rhs})[0];
  for (std::int64_t b = 0; b < batch_of(a.shape()); ++b) {
    const RefMatrix am = matrix_of(a, b);
    expect_close(am * matrix_of(inv, b), RefMatrix::identity(n), tol, what + " A A⁻¹ = I");
    expect_close(am * matrix_of(x, b), matrix_of(rhs, b), tol, what + " A X = B");
  }
}

TEST_P(ProviderConformance, CholeskyLuSolveInverse) {
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kSquareShapes) {
      const std::int64_t n = shape.back();
      const double tol = tolerance(dtype, n);
      const std::string what = label(dtype, shape);
      const Tensor spd = hermitian_positive_definite(dtype, shape, 15);
      const Tensor l = call(LinalgOp::cholesky(), {spd})[0];
      for (std::int64_t b = 0; b < batch_of(shape); ++b) {
        const RefMatrix lm = matrix_of(l, b);
        expect_close(lm * lm.adjoint(), matrix_of(spd, b), tol * n, what + " L Lᴴ = A");
        for (std::int64_t i = 0; i < n; ++i) {
          EXPECT_GT(lm(i, i).real(), 0) << what;
          for (std::int64_t j = i + 1; j < n; ++j) EXPECT_EQ(lm(i, j), cd(0)) << what << " L lower";
        }
      }
      const Tensor a = well_conditioned(dtype, shape, 16);
      expect_lu_factors(a, what);
      expect_inverse_and_solve(a, what);
    }
  }
}

// Note [Small LU]: the LAPACK provider factors matrices up to
// kSmallLuMax (32) rows and columns itself, and inverts them while their n²
// elements fit kSmallInverseBytes (complex128: 24 x 24), counted by the
// engine; it hands larger ones to getrf/getri; rectangular ones both ways.
TEST_P(ProviderConformance, LuAroundTheSmallLuBoundAndOfRectangularMatrices) {
  const bool lapack = GetParam() == "lapack";
  struct Case {
    DType dtype;
    Dims shape;
    int inline_ops;  // of lu, inverse and solve (square) or of lu, for the LAPACK provider
  };
  const Case cases[] = {
      {DType::kFloat64, {2, 32, 32}, 3},    {DType::kFloat64, {2, 33, 33}, 0},    {DType::kFloat32, {3, 2, 2}, 3},
      {DType::kComplex128, {2, 24, 24}, 3}, {DType::kComplex128, {2, 25, 25}, 2}, {DType::kComplex64, {2, 32, 32}, 3},
      {DType::kComplex64, {2, 33, 33}, 0},  {DType::kFloat64, {2, 5, 3}, 1},      {DType::kComplex64, {3, 7}, 1},
      {DType::kFloat32, {32, 20}, 1},       {DType::kComplex128, {20, 33}, 0},    {DType::kFloat64, {33, 3}, 0}};
  for (const Case& c : cases) {
    const std::string what = label(c.dtype, c.shape);
    const bool square = c.shape.back() == c.shape[c.shape.size() - 2];
    const Tensor a = square ? well_conditioned(c.dtype, c.shape, 31) : random_tensor(c.dtype, c.shape, 31);
    const std::uint64_t before = engine_->stats().inline_kernel_matrices;
    expect_lu_factors(a, what);
    if (square) expect_inverse_and_solve(a, what);
    const std::uint64_t want = lapack ? static_cast<std::uint64_t>(batch_of(c.shape) * c.inline_ops) : 0u;
    EXPECT_EQ(engine_->stats().inline_kernel_matrices - before, want) << what;
  }
}

TEST_P(ProviderConformance, TriangularSolveEveryTriangleAndTranspose) {
  for (DType dtype : kAllDTypes) {
    const Dims shape = {2, 6, 6};
    const Tensor a = well_conditioned(dtype, shape, 18);
    const Tensor rhs = random_tensor(dtype, {2, 6, 4}, 19);
    const double tol = tolerance(dtype, 6) * 10;
    for (bool lower : {true, false}) {
      for (bool unit : {false, true}) {
        for (TriangularTranspose t :
             {TriangularTranspose::kNone, TriangularTranspose::kTranspose, TriangularTranspose::kAdjoint}) {
          const Tensor x = call(LinalgOp::triangular_solve(lower, unit, t), {a, rhs})[0];
          for (std::int64_t b = 0; b < 2; ++b) {
            RefMatrix tri = matrix_of(a, b);
            for (std::int64_t i = 0; i < 6; ++i)
              for (std::int64_t j = 0; j < 6; ++j) {
                if (lower ? j > i : j < i) tri(i, j) = 0;
                if (unit && i == j) tri(i, j) = 1;
              }
            const RefMatrix op = t == TriangularTranspose::kNone        ? tri
                                 : t == TriangularTranspose::kTranspose ? tri.transpose()
                                                                        : tri.adjoint();
            expect_close(op * matrix_of(x, b), matrix_of(rhs, b), tol,
                         fmt::format("{} lower={} unit={} {}", dtype, lower, unit, to_string(t)));
          }
        }
      }
    }
  }
}

// det via the test's own Gaussian elimination with partial pivoting.
cd reference_det(RefMatrix m) {
  cd det = 1;
  for (std::int64_t c = 0; c < m.rows; ++c) {
    std::int64_t p = c;
    for (std::int64_t r = c + 1; r < m.rows; ++r)
      if (std::abs(m(r, c)) > std::abs(m(p, c))) p = r;
    if (m(p, c) == cd(0)) return 0;
    if (p != c) {
      for (std::int64_t j = 0; j < m.cols; ++j) std::swap(m(p, j), m(c, j));
      det = -det;
    }
    det *= m(c, c);
    for (std::int64_t r = c + 1; r < m.rows; ++r) {
      const cd f = m(r, c) / m(c, c);
      for (std::int64_t j = c; j < m.cols; ++j) m(r, j) -= f * m(c, j);
    }
  }
  return det;
}

TEST_P(ProviderConformance, DetAndSlogdetMatchAReferenceElimination) {
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kSquareShapes) {
      const Tensor a = random_tensor(dtype, shape, 20);
      const std::int64_t n = shape.back();
      const double tol = tolerance(dtype, n) * 10;
      const Tensor det = call(LinalgOp::det(), {a})[0];
      const runtime::TensorList sl = call(LinalgOp::slogdet(), {a});
      EXPECT_EQ(det.dtype(), dtype);
      EXPECT_EQ(sl[1].dtype(), real_dtype(dtype));
      const std::vector<cd> d = values_of(det), sign = values_of(sl[0]), logabs = values_of(sl[1]);
      for (std::int64_t b = 0; b < batch_of(shape); ++b) {
        const cd want = reference_det(matrix_of(a, b));
        EXPECT_LE(std::abs(d[b] - want), tol * std::max(1.0, std::abs(want))) << label(dtype, shape);
        EXPECT_NEAR(std::abs(sign[b]), 1.0, tol) << label(dtype, shape);
        EXPECT_LE(std::abs(sign[b] * std::exp(logabs[b].real()) - want), tol * std::max(1.0, std::abs(want)))
            << label(dtype, shape);
      }
    }
  }
}

// Note [Determinant scaling]: partial products of the pivots overflow or
// underflow where the determinant does not.
TEST_P(ProviderConformance, DeterminantsOfExtremeScalesAreScaledProducts) {
  const double huge = 1e300, tiny = 1e-300;
  for (const std::vector<double>& d : {std::vector<double>{huge, huge, tiny, tiny},
                                       {tiny, tiny, huge, huge},
                                       {huge, tiny, huge, tiny},
                                       {-huge, huge, tiny, -tiny}}) {
    std::vector<cd> v(16, cd(0));
    for (std::size_t i = 0; i < 4; ++i) v[i * 5] = cd(d[i]);
    double want = 1;  // the magnitudes pair up to 1
    for (double x : d) want = x < 0 ? -want : want;
    EXPECT_DOUBLE_EQ(values_of(call(LinalgOp::det(), {tensor_of(DType::kFloat64, {4, 4}, v)})[0])[0].real(), want)
        << d[0] << " " << d[1];
  }
  // float32 near its range (3.4e38), complex parts keep their signs on overflow.
  std::vector<cd> f(4, cd(0));
  f[0] = cd(1e30);
  f[3] = cd(1e-30);
  EXPECT_NEAR(values_of(call(LinalgOp::det(), {tensor_of(DType::kFloat32, {2, 2}, f)})[0])[0].real(), 1.0, 1e-6);
  std::vector<cd> z(4, cd(0));
  z[0] = z[3] = cd(1e200, 5e199);  // det = 1e400 (0.75 + 1i): both parts +inf (the plain product: NaN + inf i)
  const cd big = values_of(call(LinalgOp::det(), {tensor_of(DType::kComplex128, {2, 2}, z)})[0])[0];
  EXPECT_EQ(big.real(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(big.imag(), std::numeric_limits<double>::infinity());
  z[0] = cd(1e-200, 5e-201);  // det = 0.75 + 1i: neither underflows nor overflows
  EXPECT_LE(std::abs(values_of(call(LinalgOp::det(), {tensor_of(DType::kComplex128, {2, 2}, z)})[0])[0] - cd(0.75, 1)),
            1e-14);
  // A determinant that does underflow is 0, one that overflows inf.
  std::vector<cd> u(4, cd(0));
  u[0] = u[3] = cd(1e-200);
  EXPECT_EQ(values_of(call(LinalgOp::det(), {tensor_of(DType::kFloat64, {2, 2}, u)})[0])[0].real(), 0.0);
  u[0] = u[3] = cd(-1e200);
  EXPECT_EQ(values_of(call(LinalgOp::det(), {tensor_of(DType::kFloat64, {2, 2}, u)})[0])[0].real(),
            std::numeric_limits<double>::infinity());
  // Subnormal pivots keep their digits: the product of the pivots exactly
  // (the determinants below are representable).
  const double denorm = std::numeric_limits<double>::denorm_min();
  struct Exact {
    DType dtype;
    std::vector<cd> matrix;
    cd det;
  };
  const Exact exact[] = {
      {DType::kFloat64, {cd(denorm)}, cd(denorm)},
      {DType::kFloat32, {cd(std::numeric_limits<float>::denorm_min())}, cd(std::numeric_limits<float>::denorm_min())},
      {DType::kComplex128, {cd(0, denorm)}, cd(0, denorm)},
      {DType::kFloat64, {cd(0x1p1000), 0, 0, cd(denorm)}, cd(0x1p1000 * denorm)},
      {DType::kFloat64, {cd(denorm), cd(1), 0, cd(3)}, cd(3 * denorm)},
  };
  for (const Exact& e : exact) {
    const std::int64_t n = e.matrix.size() == 1 ? 1 : 2;
    EXPECT_EQ(values_of(call(LinalgOp::det(), {tensor_of(e.dtype, {n, n}, e.matrix)})[0])[0], e.det)
        << to_string(e.dtype) << " " << e.matrix[0];
  }
}

// Note [Finite checks read what the op reads]: a NaN or Inf in the
// triangle an op never reads changes nothing; one in the part it reads is
// kNonFiniteInput.
TEST_P(ProviderConformance, NonFiniteValuesOutsideTheTriangleReadAreIgnored) {
  const double nan = std::nan("");
  for (DType dtype : kAllDTypes) {
    const std::int64_t n = 4;
    // A Hermitian positive definite matrix and a right-hand side.
    const RefMatrix g = matrix_of(well_conditioned(dtype, {n, n}, 31), 0);
    RefMatrix spd = g.adjoint() * g;
    for (std::int64_t i = 0; i < n; ++i) spd(i, i) += cd(n);
    const Tensor rhs = random_tensor(dtype, {n, 2}, 32);
    const auto with = [&](RefMatrix m, bool upper, bool diagonal, double bad) {
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          if ((upper ? j > i : i > j) || (diagonal && i == j)) m(i, j) = cd(bad);
        }
      return tensor_of(dtype, {n, n}, m.d);
    };
    const double tol = tolerance(dtype, n) * 10;
    const auto same = [&](const Tensor& got, const Tensor& want, const std::string& what) {
      const std::vector<cd> a = values_of(got), b = values_of(want);
      ASSERT_EQ(a.size(), b.size()) << what;
      for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_LE(std::abs(a[i] - b[i]), tol) << what << " " << to_string(dtype);
    };
    const Tensor clean = tensor_of(dtype, {n, n}, spd.d);
    if (serves(LinalgOpKind::kEigh)) {
      const runtime::TensorList want = call(LinalgOp::eigh(), {clean});
      const runtime::TensorList got = call(LinalgOp::eigh(), {with(spd, true, false, nan)});
      same(got[0], want[0], "eigh values");
      same(got[1], want[1], "eigh vectors");
    }
    same(call(LinalgOp::cholesky(), {with(spd, true, false, nan)})[0], call(LinalgOp::cholesky(), {clean})[0],
         "cholesky");
    for (bool lower : {true, false}) {
      for (bool unit : {false, true}) {
        const auto op = LinalgOp::triangular_solve(lower, unit);
        // The triangle solved with, the other one NaN (and the diagonal when unit).
        const Tensor a = with(spd, lower, false, nan);
        RefMatrix unit_diag = spd;
        for (std::int64_t i = 0; i < n; ++i) unit_diag(i, i) = cd(unit ? 1 : spd(i, i).real());
        const Tensor want = call(op, {with(unit_diag, lower, false, 0.0), rhs})[0];
        same(call(op, {a, rhs})[0], want, fmt::format("triangular_solve lower={} unit={}", lower, unit));
        if (unit) same(call(op, {with(spd, lower, true, nan), rhs})[0], want, "unit diagonal NaN");
        // A NaN in the triangle read is refused.
        runtime::EagerContext ctx = runtime_.on();
        const Tensor read_bad = with(spd, !lower, false, nan);
        const Tensor args[] = {read_bad, rhs};
        Result<runtime::TensorList> refused = ctx.call(op, args);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.status().code(), ErrorCode::kNonFiniteInput) << refused.status().to_string();
      }
    }
    runtime::EagerContext ctx = runtime_.on();
    const Tensor lower_bad[] = {with(spd, false, false, nan)};
    EXPECT_EQ(ctx.call(LinalgOp::cholesky(), lower_bad).status().code(), ErrorCode::kNonFiniteInput);
  }
}

TEST_P(ProviderConformance, PinvSatisfiesThePenroseConditionsAndLstsqMatchesIt) {
  if (!serves(LinalgOpKind::kSvd)) GTEST_SKIP() << provider_->name() << " leaves the SVD family to LAPACK";
  for (DType dtype : kAllDTypes) {
    for (const Dims& shape : kGeneralShapes) {
      const Tensor a = random_tensor(dtype, shape, 21);
      const std::int64_t m = shape[shape.size() - 2], n = shape.back();
      const double tol = tolerance(dtype, std::max(m, n)) * 10;
      const Tensor p = call(LinalgOp::pinv(), {a})[0];
      Dims bshape = shape;
      bshape.back() = 2;
      const Tensor rhs = random_tensor(dtype, bshape, 22);
      const Tensor x = call(LinalgOp::lstsq(), {a, rhs})[0];
      for (std::int64_t b = 0; b < batch_of(shape); ++b) {
        const std::string what = label(dtype, shape);
        const RefMatrix am = matrix_of(a, b), pm = matrix_of(p, b);
        expect_close(am * pm * am, am, tol, what + " A P A = A");
        expect_close(pm * am * pm, pm, tol, what + " P A P = P");
        expect_close((am * pm).adjoint(), am * pm, tol, what + " (AP)ᴴ = AP");
        expect_close((pm * am).adjoint(), pm * am, tol, what + " (PA)ᴴ = PA");
        expect_close(matrix_of(x, b), pm * matrix_of(rhs, b), tol, what + " lstsq X = A⁺ B");
      }
    }
  }
}

TEST_P(ProviderConformance, RankDeficientLstsqIsTheMinimumNormSolution) {
  if (!serves(LinalgOpKind::kSvd)) GTEST_SKIP() << provider_->name() << " leaves the SVD family to LAPACK";
  // Rank 1: a = u vᴴ; the minimum-norm solution is A⁺ B.
  const Tensor a = tensor_of(DType::kFloat64, {3, 3}, {1, 2, 3, 2, 4, 6, 3, 6, 9});
  const Tensor rhs = tensor_of(DType::kFloat64, {3, 1}, {1, 2, 3});
  const Tensor x = call(LinalgOp::lstsq(), {a, rhs})[0];
  const std::vector<cd> v = values_of(x);
  // A x = b is consistent: x = b·v/|v|² scaled: v = (1,2,3), |v|² = 14, b = 1·(1,2,3).
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(v[i].real(), (i + 1) / 14.0, 1e-12);
}

TEST_P(ProviderConformance, MatrixAndVectorNorms) {
  if (!serves(LinalgOpKind::kSvd)) GTEST_SKIP() << provider_->name() << " leaves the SVD family to LAPACK";
  for (DType dtype : kAllDTypes) {
    const Dims shape = {3, 5, 4};
    const Tensor a = random_tensor(dtype, shape, 23);
    const double tol = tolerance(dtype, 5) * 10;
    const Tensor s = call(LinalgOp::svd(SvdMode::kValuesOnly), {a})[0];
    for (NormOrder ord : {NormOrder::kFrobenius, NormOrder::kNuclear, NormOrder::kOne, NormOrder::kNegOne,
                          NormOrder::kTwo, NormOrder::kNegTwo, NormOrder::kInf, NormOrder::kNegInf}) {
      const Tensor norm = call(*LinalgOp::matrix_norm(ord), {a})[0];
      EXPECT_EQ(norm.dtype(), real_dtype(dtype));
      const std::vector<cd> got = values_of(norm);
      for (std::int64_t b = 0; b < 3; ++b) {
        const RefMatrix m = matrix_of(a, b);
        const std::vector<cd> sv = vector_of(s, b);
        std::vector<double> cols(4, 0), rows(5, 0);
        double fro = 0;
        for (int i = 0; i < 5; ++i)
          for (int j = 0; j < 4; ++j) {
            cols[j] += std::abs(m(i, j));
            rows[i] += std::abs(m(i, j));
            fro += std::norm(m(i, j));
          }
        double want = 0;
        switch (ord) {
          case NormOrder::kFrobenius:
            want = std::sqrt(fro);
            break;
          case NormOrder::kNuclear:
            for (const cd& x : sv) want += x.real();
            break;
          case NormOrder::kOne:
            want = *std::max_element(cols.begin(), cols.end());
            break;
          case NormOrder::kNegOne:
            want = *std::min_element(cols.begin(), cols.end());
            break;
          case NormOrder::kTwo:
            want = sv.front().real();
            break;
          case NormOrder::kNegTwo:
            want = sv.back().real();
            break;
          case NormOrder::kInf:
            want = *std::max_element(rows.begin(), rows.end());
            break;
          default:
            want = *std::min_element(rows.begin(), rows.end());
            break;
        }
        EXPECT_NEAR(got[b].real(), want, tol * (1 + want)) << to_string(dtype) << " ord " << to_string(ord);
      }
    }
    const Tensor v = random_tensor(dtype, {2, 7}, 24);
    for (auto [ord, p] :
         {std::pair{NormOrder::kTwo, 2.0}, std::pair{NormOrder::kOne, 1.0}, std::pair{NormOrder::kP, 3.5},
          std::pair{NormOrder::kP, 0.0}, std::pair{NormOrder::kInf, 0.0}, std::pair{NormOrder::kNegInf, 0.0}}) {
      const std::vector<cd> got = values_of(call(*LinalgOp::vector_norm(ord, p), {v})[0]);
      for (std::int64_t b = 0; b < 2; ++b) {
        const std::vector<cd> x = vector_of(v, b);
        double want = ord == NormOrder::kNegInf ? 1e300 : 0;
        for (const cd& e : x) {
          const double mag = std::abs(e);
          if (ord == NormOrder::kInf)
            want = std::max(want, mag);
          else if (ord == NormOrder::kNegInf)
            want = std::min(want, mag);
          else if (p == 0.0)
            want += mag != 0 ? 1 : 0;
          else
            want += std::pow(mag, ord == NormOrder::kOne ? 1.0 : p);
        }
        if (ord == NormOrder::kTwo || (ord == NormOrder::kP && p != 0.0)) want = std::pow(want, 1.0 / p);
        EXPECT_NEAR(got[b].real(), want, tol * (1 + want))
            << to_string(dtype) << " vector ord " << to_string(ord) << " p " << p;
      }
    }
  }
}

TEST_P(ProviderConformance, EmptyMatricesFollowTheDefinitions) {
  if (serves(LinalgOpKind::kSvd)) {
    const Tensor wide = Tensor::zeros({2, 0, 3}, DType::kFloat64).value();
    const runtime::TensorList svd = call(LinalgOp::svd(SvdMode::kFull), {wide});
    EXPECT_EQ(matrix_of(svd[2], 1).max_abs(), 1.0);
    expect_close(matrix_of(svd[2], 1), RefMatrix::identity(3), 0, "Vh of an empty matrix is I");
  }
  const Tensor empty_square = Tensor::zeros({2, 0, 0}, DType::kFloat64).value();
  EXPECT_EQ(values_of(call(LinalgOp::det(), {empty_square})[0])[1], cd(1));
  const runtime::TensorList lu = call(LinalgOp::lu(), {Tensor::zeros({3, 0}, DType::kFloat64).value()});
  EXPECT_EQ(values_of(lu[2]), (std::vector<cd>{0, 1, 2}));
  EXPECT_EQ(engine_->stats().provider_calls, 0u) << "providers never see an empty matrix";
}

INSTANTIATE_TEST_SUITE_P(Providers, ProviderConformance, ::testing::Values("lapack", "eigen"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// --- the null skeleton and the undeclared-operation contract -------------------------

TEST(NullProvider, AnswersUnsupportedForEveryOperationAndTheRuntimeReportsIt) {
  const auto null = make_null_linalg_provider();
  for (int k = 0; k < kNumLinalgOps; ++k) {
    LinalgAttributes a;
    a.kind = static_cast<LinalgOpKind>(k);
    if (a.kind == LinalgOpKind::kVectorNorm) a.norm = NormOrder::kP;
    const LinalgProblem p{&a, DType::kFloat64, 4, 4, 1};
    Result<LinalgKernelPlan> plan = null->plan(p);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported) << to_string(a.kind);
  }
  auto engine = std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(null)));
  runtime::Runtime rt = make_runtime(engine);
  runtime::EagerContext ctx = rt.on();
  const Tensor a = random_tensor(DType::kFloat64, {4, 4}, 1);
  Result<runtime::TensorList> out = ctx.call(LinalgOp::svd(), std::span<const Tensor>(&a, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kUnsupportedExtension) << out.status().to_string();
  EXPECT_NE(out.status().to_string().find("does not support svd"), std::string::npos) << out.status().to_string();
}

TEST(EigenProvider, LeavesTheSvdFamilyToLapack) {
  const EigenLinalgProvider eigen;
  for (LinalgOpKind kind : {LinalgOpKind::kSvd, LinalgOpKind::kLstsq, LinalgOpKind::kPinv}) {
    LinalgAttributes a;
    a.kind = kind;
    Result<LinalgKernelPlan> plan = eigen.plan(LinalgProblem{&a, DType::kFloat64, 4, 4, 1});
    ASSERT_FALSE(plan.ok()) << to_string(kind);
    EXPECT_EQ(plan.status().code(), ErrorCode::kUnsupported) << to_string(kind);
    EXPECT_NE(plan.status().message().find("left to the LAPACK provider"), std::string::npos)
        << plan.status().to_string();
  }
  // The default engine asks LAPACK for the SVD family at every size.
  Result<std::shared_ptr<CpuLinalgEngine>> engine = CpuLinalgEngine::create_default();
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  runtime::Runtime rt = make_runtime(*engine);
  runtime::EagerContext ctx = rt.on();
  const Tensor a = random_tensor(DType::kFloat64, {5, 3}, 34);
  Result<runtime::TensorList> out = ctx.call(LinalgOp::pinv(), std::span<const Tensor>(&a, 1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  for (std::int64_t n : {4, 64, 2048}) {
    const Dims square = {n, n}, rhs = {n, 2};
    for (const auto& op : {LinalgOp::svd(), LinalgOp::lstsq(), LinalgOp::pinv()}) {
      std::vector<IntArrayRef> shapes = {IntArrayRef(square)};
      if (num_operands(op->kind()) == 2) shapes.push_back(IntArrayRef(rhs));
      Result<LinalgSelection> picked = (*engine)->select(*op, DType::kFloat64, shapes, 1);
      ASSERT_TRUE(picked.ok()) << op->describe() << ": " << picked.status().to_string();
      EXPECT_NE(picked->provider, eigen.name()) << op->describe() << " n=" << n;
    }
  }
}

TEST(ProviderReplacement, LapackAndEigenAgreeAfterTheGaugeConvention) {
  auto lapack = provider_named("lapack");
  auto eigen = provider_named("eigen");
  ASSERT_NE(lapack, nullptr);
  runtime::Runtime rl =
      make_runtime(std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(lapack))));
  runtime::Runtime re =
      make_runtime(std::make_shared<CpuLinalgEngine>(LinalgProviderPolicy::fixed(LinalgProviderBundle::all(eigen))));
  for (DType dtype : kAllDTypes) {
    const Tensor a = random_tensor(dtype, {2, 9, 6}, 30);
    const Tensor sq = well_conditioned(dtype, {2, 7, 7}, 31);
    const Tensor spd = hermitian_positive_definite(dtype, {2, 7, 7}, 32);
    const Tensor rhs = random_tensor(dtype, {2, 7, 3}, 33);
    const double tol = tolerance(dtype, 9) * 100;
    const std::vector<std::pair<std::shared_ptr<const LinalgOp>, std::vector<Tensor>>> cases = {
        {LinalgOp::qr(QrMode::kReduced), {a}},
        {LinalgOp::eigh(), {spd}},
        {LinalgOp::eig(), {sq}},
        {LinalgOp::cholesky(), {spd}},
        {LinalgOp::lu(), {sq}},
        {LinalgOp::solve(), {sq, rhs}},
        {LinalgOp::inv(), {sq}},
        {LinalgOp::det(), {sq}},
        {LinalgOp::slogdet(), {sq}},
        {LinalgOp::triangular_solve(true), {sq, rhs}}};
    for (const auto& [op, inputs] : cases) {
      runtime::EagerContext cl = rl.on(), ce = re.on();
      Result<runtime::TensorList> x = cl.call(op, inputs);
      Result<runtime::TensorList> y = ce.call(op, inputs);
      ASSERT_TRUE(x.ok() && y.ok()) << op->describe();
      ASSERT_EQ(x->size(), y->size());
      for (std::size_t r = 0; r < x->size(); ++r) {
        const std::vector<cd> vx = values_of((*x)[r]), vy = values_of((*y)[r]);
        ASSERT_EQ(vx.size(), vy.size());
        double err = 0, scale = 1;
        for (std::size_t i = 0; i < vx.size(); ++i) {
          err = std::max(err, std::abs(vx[i] - vy[i]));
          scale = std::max(scale, std::abs(vy[i]));
        }
        EXPECT_LE(err, tol * scale) << op->describe() << " " << to_string(dtype) << " result " << r;
      }
    }
  }
}

}  // namespace
}  // namespace tenferro::linalg
