// The linalg AD rules against central finite differences (forward mode) and
// the adjoint identity Re<v, J u> = Re<J* v, u> (reverse mode), for every
// operation in float64 and complex128, batched and unbatched, through the
// real AD transforms (ad::AdContext) and a Runtime running the linalg
// engine. Outputs whose gauge is not unique (the completion columns of a
// full SVD or complete QR) are checked through their projectors, which are.
#include <gtest/gtest.h>

#include <functional>

#include "ad/ad_test_support.h"
#include "linalg_cpu/linalg_test_support.h"
#include "tenferro/ad_runtime/functional.h"
#include "tenferro/linalg/ad_rules.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/testing/reference_engine.h"

namespace tenferro::linalg {
namespace {

using namespace testing;
using program::ProgramBuilder;
using program::ProgramValue;
using Values = SmallVector<ProgramValue, 4>;

// kHermitian / kSpd inputs get Hermitian tangents (the perturbation stays in
// the space the operation is defined on) unless InputSpec::general_tangent;
// the other kinds get general ones.
enum class Kind { kGeneral, kSpd, kWell, kHermitian };

struct InputSpec {
  Dims shape;
  Kind kind = Kind::kGeneral;
  bool general_tangent = false;  ///< a general tangent even for a kSpd / kHermitian input
  std::vector<cd> values = {};   ///< the input itself (row-major), instead of one of `kind`
};

struct AdCase {
  std::string name;
  std::vector<InputSpec> inputs;
  std::function<Result<Values>(ProgramBuilder&, const Values&)> build;
};

// --- program helpers for post-processing outputs ---------------------------------

Result<ProgramValue> matmul(ProgramBuilder& b, ProgramValue x, ProgramValue y) {
  const std::int64_t r = b.metadata(x)->rank();
  Dims batch;
  for (std::int64_t i = 0; i + 2 < r; ++i) batch.push_back(i);
  return b.emit(program::CoreSemanticOp::kDotGeneral, {x, y},
                program::DotGeneralAttributes{batch, batch, {r - 1}, {r - 2}});
}

Result<ProgramValue> adjoint(ProgramBuilder& b, ProgramValue x) {
  const std::int64_t r = b.metadata(x)->rank();
  Dims perm;
  for (std::int64_t i = 0; i + 2 < r; ++i) perm.push_back(i);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue t,
                            b.emit(program::CoreSemanticOp::kTranspose, {x}, program::TransposeAttributes{perm}));
  return is_complex(b.metadata(x)->dtype) ? b.emit(program::CoreSemanticOp::kConj, {t}) : Result<ProgramValue>(t);
}

// Columns [begin, end) of an exact-shape matrix.
Result<ProgramValue> columns(ProgramBuilder& b, ProgramValue x, std::int64_t begin, std::int64_t end) {
  const Dims shape = *program::exact_shape(b.metadata(x)->shape);
  Dims start(shape.size(), 0), limit = shape, stride(shape.size(), 1);
  start.back() = begin;
  limit.back() = end;
  return b.emit(program::CoreSemanticOp::kSlice, {x}, program::SliceAttributes{start, limit, stride});
}

// X Xᴴ: the projector onto the column space of orthonormal columns X.
Result<ProgramValue> projector(ProgramBuilder& b, ProgramValue x) {
  TENFERRO_ASSIGN_OR_RETURN(ProgramValue xh, adjoint(b, x));
  return matmul(b, x, xh);
}

std::function<Result<Values>(ProgramBuilder&, const Values&)> op_of(std::shared_ptr<const LinalgOp> op) {
  return [op](ProgramBuilder& b, const Values& in) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(auto outs, b.emit_extension(op, std::span<const ProgramValue>(in.data(), in.size())));
    return Values(outs.begin(), outs.end());
  };
}

// --- numerics ---------------------------------------------------------------------------

// (X + Xᴴ) / 2 of every matrix of a [..., n, n] batch.
Tensor hermitian(const Tensor& x) {
  std::vector<cd> v = values_of(x);
  const std::int64_t n = x.size(x.rank() - 1);
  for (std::size_t b = 0; b < v.size(); b += static_cast<std::size_t>(n * n))
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j <= i; ++j) {
        cd& lower = v[b + static_cast<std::size_t>(i * n + j)];
        cd& upper = v[b + static_cast<std::size_t>(j * n + i)];
        const cd mean = (lower + std::conj(upper)) / 2.0;
        lower = mean;
        upper = std::conj(mean);
      }
  return tensor_of(x.dtype(), x.shape(), v);
}

Tensor make_input(DType dtype, const InputSpec& spec, std::uint32_t seed) {
  if (!spec.values.empty()) return tensor_of(dtype, spec.shape, spec.values);
  switch (spec.kind) {
    case Kind::kSpd:
      return hermitian_positive_definite(dtype, spec.shape, seed);
    case Kind::kWell:
      return well_conditioned(dtype, spec.shape, seed);
    case Kind::kHermitian:
      return hermitian(random_tensor(dtype, spec.shape, seed));
    default:
      return random_tensor(dtype, spec.shape, seed);
  }
}

using ad::testing::axpy;
using ad::testing::real_inner;

bool differentiable(const Tensor& t) { return is_inexact(t.dtype()); }

class LinalgAdTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(install_linalg_ad_rules(context_).ok());
    // Core ops on the reference evaluator, linalg ops on the native linalg
    // engine installed for the same engine id.
    runtime::RuntimeBuilder builder;
    builder.add_engine(tenferro::testing::reference_engine_registration(EngineId(1)));
    builder.add_extension_module(cpu_extension_module(EngineId(1), CpuLinalgEngine::create_default().value()));
    Result<runtime::Runtime> rt = builder.build();
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    runtime_ = std::make_unique<runtime::Runtime>(std::move(rt).value());
  }

  void check(const AdCase& c) {
    const DType dtype = GetParam();
    SCOPED_TRACE(c.name + " " + std::string(to_string(dtype)));
    ProgramBuilder b;
    Values in;
    for (const InputSpec& s : c.inputs) {
      in.push_back(*b.add_input(dtype, program::symbolic_shape(s.shape).span()));
    }
    Result<Values> outs = c.build(b, in);
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    Result<program::FrozenProgram> f = b.freeze(std::span<const ProgramValue>(outs->data(), outs->size()));
    ASSERT_TRUE(f.ok()) << f.status().to_string();

    std::vector<Tensor> x, u;
    std::vector<std::uint32_t> active;
    for (std::size_t i = 0; i < c.inputs.size(); ++i) {
      x.push_back(make_input(dtype, c.inputs[i], 100 + static_cast<std::uint32_t>(i)));
      Tensor ui = random_tensor(dtype, c.inputs[i].shape, 200 + static_cast<std::uint32_t>(i));
      const bool hermitian_space =
          !c.inputs[i].general_tangent && (c.inputs[i].kind == Kind::kSpd || c.inputs[i].kind == Kind::kHermitian);
      u.push_back(hermitian_space ? hermitian(ui) : ui);
      active.push_back(static_cast<std::uint32_t>(i));
    }
    Result<ad::JvpResult> jvp = ad::jvp(*runtime_, context_, *f, x, active, u);
    ASSERT_TRUE(jvp.ok()) << jvp.status().to_string();

    // Central differences of every differentiable output.
    const double h = 1e-6;
    std::vector<Tensor> plus, minus;
    for (std::size_t i = 0; i < x.size(); ++i) {
      plus.push_back(axpy(x[i], h, u[i]));
      minus.push_back(axpy(x[i], -h, u[i]));
    }
    Result<runtime::TensorList> fp = runtime_->run(*f, plus);
    Result<runtime::TensorList> fm = runtime_->run(*f, minus);
    ASSERT_TRUE(fp.ok() && fm.ok()) << (fp.ok() ? fm.status() : fp.status()).to_string();
    for (std::size_t o = 0; o < jvp->outputs.size(); ++o) {
      if (!differentiable(jvp->outputs[o])) {
        EXPECT_FALSE(jvp->tangents[o].defined()) << "output " << o << " is not differentiable";
        continue;
      }
      const std::vector<cd> tp = values_of((*fp)[o]), tm = values_of((*fm)[o]);
      const std::vector<cd> tangent = values_of(jvp->tangents[o]);
      ASSERT_EQ(tangent.size(), tp.size());
      double scale = 1, err = 0;
      for (std::size_t i = 0; i < tp.size(); ++i) {
        const cd fd = (tp[i] - tm[i]) / (2 * h);
        scale = std::max(scale, std::abs(fd));
        err = std::max(err, std::abs(fd - tangent[i]));
      }
      EXPECT_LE(err, 2e-6 * scale) << "JVP of output " << o << " vs central differences";
    }

    // Reverse mode: Re<v, J u> == Re<J* v, u> with random cotangents v.
    std::vector<Tensor> v;
    double lhs = 0;
    for (std::size_t o = 0; o < jvp->outputs.size(); ++o) {
      if (!differentiable(jvp->outputs[o])) {
        v.emplace_back();
        continue;
      }
      v.push_back(random_tensor(jvp->outputs[o].dtype(), jvp->outputs[o].shape(), 300 + static_cast<std::uint32_t>(o)));
      lhs += real_inner(v.back(), jvp->tangents[o]);
    }
    Result<ad::VjpResult> vjp = ad::vjp(*runtime_, context_, *f, x, active, v);
    ASSERT_TRUE(vjp.ok()) << vjp.status().to_string();
    double rhs = 0;
    for (std::size_t i = 0; i < u.size(); ++i) rhs += real_inner(vjp->cotangents[i], u[i]);
    EXPECT_NEAR(lhs, rhs, 1e-8 * std::max(1.0, std::abs(lhs))) << "adjoint identity";
  }

  ad::AdContext context_;
  std::unique_ptr<runtime::Runtime> runtime_;
};

TEST_P(LinalgAdTest, SvdThinValuesAndFull) {
  check({"svd thin tall batched", {{{2, 4, 3}}}, op_of(LinalgOp::svd(SvdMode::kThin))});
  check({"svd thin wide", {{{3, 5}}}, op_of(LinalgOp::svd(SvdMode::kThin))});
  check({"svd values", {{{4, 3}}}, op_of(LinalgOp::svd(SvdMode::kValuesOnly))});
  // Full matrices: U1, S, Vh1 directly; the completions through projectors.
  for (const Dims& shape : {Dims{4, 2}, Dims{2, 4}}) {
    const std::int64_t m = shape[0], n = shape[1], k = std::min(m, n);
    check({"svd full " + shape_to_string(shape),
           {{shape}},
           [m, n, k](ProgramBuilder& b, const Values& in) -> Result<Values> {
             TENFERRO_ASSIGN_OR_RETURN(auto o, b.emit_extension(LinalgOp::svd(SvdMode::kFull), {in[0]}));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue u1, columns(b, o[0], 0, k));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, adjoint(b, o[2]));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue v1, columns(b, v, 0, k));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue u2, columns(b, o[0], k, m));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue v2, columns(b, v, k, n));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue pu, projector(b, m > k ? u2 : u1));
             TENFERRO_ASSIGN_OR_RETURN(ProgramValue pv, projector(b, n > k ? v2 : v1));
             return Values{u1, o[1], v1, pu, pv};
           }});
  }
}

// Note [SVD derivative terms] (docs/linalg.md): inside a cluster of equal
// or nearly equal singular values only the 1/(σj - σi) part of the vector
// derivative is dropped, so the polar factor U Vᴴ (its derivative has only
// the 1/(σi + σj) part) stays exact at repeated values, as
// (U Vᴴ = A (AᴴA)^-1/2) is smooth wherever A has full column rank.
TEST_P(LinalgAdTest, SvdPolarFactorAtRepeatedSingularValues) {
  const cd e = 1e-10;  // values apart by less than the degeneracy tolerance
  const std::vector<std::pair<std::string, InputSpec>> inputs = {
      {"[I; 0]", {{4, 3}, Kind::kGeneral, false, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}}},
      {"diag(2, 2, 1) rotated", {{3, 3}, Kind::kGeneral, false, {1.2, 1.6, 0, -1.6, 1.2, 0, 0, 0, 1}}},
      {"I + 1e-10 R", {{3, 3}, Kind::kGeneral, false, {1.0 + e, 3.0 * e, -e, 2.0 * e, 1.0 - e, 5.0 * e, 0, -e, 1}}},
  };
  for (const auto& [name, input] : inputs) {
    for (const SvdMode mode : {SvdMode::kThin, SvdMode::kFull}) {
      const std::int64_t m = input.shape[0], n = input.shape[1], k = std::min(m, n);
      check({"polar factor " + name + (mode == SvdMode::kFull ? " full" : " thin"),
             {input},
             [mode, k](ProgramBuilder& b, const Values& in) -> Result<Values> {
               TENFERRO_ASSIGN_OR_RETURN(auto o, b.emit_extension(LinalgOp::svd(mode), {in[0]}));
               TENFERRO_ASSIGN_OR_RETURN(ProgramValue u1, columns(b, o[0], 0, k));
               TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, adjoint(b, o[2]));
               TENFERRO_ASSIGN_OR_RETURN(ProgramValue v1, columns(b, v, 0, k));
               TENFERRO_ASSIGN_OR_RETURN(ProgramValue v1h, adjoint(b, v1));
               TENFERRO_ASSIGN_OR_RETURN(ProgramValue polar, matmul(b, u1, v1h));
               return Values{polar};
             }});
    }
  }
}

// A VJP program (primal and derivative) decomposes once: a full SVD's
// derivative reads the thin factors from the full ones (their leading
// columns), and a values-only svd / eigh / eig is expanded into the
// decomposition with vectors (Note [Values-only decompositions under AD]).
TEST_P(LinalgAdTest, EveryDecompositionRunsOnceInItsVjpProgram) {
  struct Case {
    std::shared_ptr<const LinalgOp> op;
    Dims shape;
    std::size_t values;  // the result summed into the loss
  };
  const std::vector<Case> cases = {
      {LinalgOp::svd(SvdMode::kFull), {4, 3}, 1},
      {LinalgOp::svd(SvdMode::kFull), {3, 3}, 1},
      {LinalgOp::svd(SvdMode::kThin), {4, 3}, 1},
      {LinalgOp::svd(SvdMode::kValuesOnly), {4, 3}, 0},
      {LinalgOp::svd(SvdMode::kValuesOnly), {3, 4}, 0},
      {LinalgOp::eigh(false), {3, 3}, 0},
      {LinalgOp::eig(false), {3, 3}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op->describe() + " " + shape_to_string(c.shape));
    ProgramBuilder b;
    const ProgramValue a = *b.add_input(GetParam(), program::symbolic_shape(c.shape).span());
    const auto o = *b.emit_extension(c.op, {a});
    ProgramValue values = o[c.values];
    if (is_complex(b.metadata(values)->dtype)) values = *b.emit(program::CoreSemanticOp::kReal, {values});
    const ProgramValue total = *b.emit(program::CoreSemanticOp::kReduceSum, {values}, program::ReduceAttributes{{0}});
    const auto f = *b.freeze({total});
    const std::uint32_t active[] = {0};
    Result<ad::VjpProgram> g = context_.vjp(f, active);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    int decompositions = 0;
    for (const auto& op : g->program.program->operations()) {
      const auto* l = dynamic_cast<const LinalgOp*>(op.extension());
      if (l == nullptr || l->kind() != c.op->kind()) continue;
      ++decompositions;
      EXPECT_NE(l->attributes().svd_mode, SvdMode::kValuesOnly);
      EXPECT_TRUE(l->attributes().compute_vectors);
    }
    EXPECT_EQ(decompositions, 1);
  }
  // Run: the expanded values-only program gives the values and the gradient.
  check({"svd values expanded", {{{4, 3}}}, op_of(LinalgOp::svd(SvdMode::kValuesOnly))});
}

TEST_P(LinalgAdTest, QrReducedCompleteAndWide) {
  check({"qr square batched", {{{2, 3, 3}}}, op_of(LinalgOp::qr())});
  check({"qr tall", {{{5, 3}}}, op_of(LinalgOp::qr())});
  check({"qr wide (m < n)", {{{3, 5}}}, op_of(LinalgOp::qr())});
  check({"qr complete wide", {{{2, 4}}}, op_of(LinalgOp::qr(QrMode::kComplete))});
  check({"qr complete tall", {{{4, 2}}}, [](ProgramBuilder& b, const Values& in) -> Result<Values> {
           TENFERRO_ASSIGN_OR_RETURN(auto o, b.emit_extension(LinalgOp::qr(QrMode::kComplete), {in[0]}));
           TENFERRO_ASSIGN_OR_RETURN(ProgramValue q1, columns(b, o[0], 0, 2));
           TENFERRO_ASSIGN_OR_RETURN(ProgramValue q2, columns(b, o[0], 2, 4));
           TENFERRO_ASSIGN_OR_RETURN(ProgramValue p2, projector(b, q2));
           return Values{q1, o[1], p2};
         }});
}

TEST_P(LinalgAdTest, EighEigAndCholesky) {
  // Hermitian inputs with Hermitian perturbations; the eigenvectors are
  // compared in the engine's gauge (pivot real positive, applied to both
  // finite-difference evaluations and by the rule) and through |V|² (gauge
  // invariant).
  check({"eigh batched", {{{2, 4, 4}, Kind::kHermitian}}, op_of(LinalgOp::eigh())});
  check({"eigh |V|^2", {{{4, 4}, Kind::kHermitian}}, [](ProgramBuilder& b, const Values& in) -> Result<Values> {
           TENFERRO_ASSIGN_OR_RETURN(auto o, b.emit_extension(LinalgOp::eigh(), {in[0]}));
           TENFERRO_ASSIGN_OR_RETURN(ProgramValue vc, b.emit(program::CoreSemanticOp::kConj, {o[1]}));
           TENFERRO_ASSIGN_OR_RETURN(ProgramValue v2, b.emit(program::CoreSemanticOp::kMul, {o[1], vc}));
           return Values{o[0], v2};
         }});
  // A general input and tangent: eigh reads the lower triangle and the real
  // diagonal, and so does its derivative.
  check({"eigh of the lower triangle", {{{3, 3}}}, op_of(LinalgOp::eigh())});
  check({"eigvalsh", {{{3, 3}}}, op_of(LinalgOp::eigh(false))});
  check({"eig", {{{3, 3}}}, op_of(LinalgOp::eig())});
  check({"eigvals batched", {{{2, 3, 3}}}, op_of(LinalgOp::eig(false))});
  check({"cholesky batched", {{{2, 3, 3}, Kind::kSpd}}, op_of(LinalgOp::cholesky())});
  // A general perturbation of an SPD input: only its lower triangle and real
  // diagonal reach the factorization.
  check({"cholesky of the lower triangle",
         {{{2, 3, 3}, Kind::kSpd, /*general_tangent=*/true}},
         op_of(LinalgOp::cholesky())});
}

TEST_P(LinalgAdTest, LuSquareAndRectangular) {
  check({"lu square batched", {{{2, 3, 3}}}, op_of(LinalgOp::lu())});
  check({"lu tall", {{{4, 3}}}, op_of(LinalgOp::lu())});
  check({"lu wide", {{{3, 4}}}, op_of(LinalgOp::lu())});
}

TEST_P(LinalgAdTest, SolversInverseAndDeterminants) {
  check({"solve batched", {{{2, 3, 3}, Kind::kWell}, {{2, 3, 2}}}, op_of(LinalgOp::solve())});
  for (bool lower : {true, false}) {
    for (bool unit : {false, true}) {
      for (TriangularTranspose t :
           {TriangularTranspose::kNone, TriangularTranspose::kTranspose, TriangularTranspose::kAdjoint}) {
        check({fmt::format("triangular_solve lower={} unit={} {}", lower, unit, to_string(t)),
               {{{3, 3}, Kind::kWell}, {{3, 2}}},
               op_of(LinalgOp::triangular_solve(lower, unit, t))});
      }
    }
  }
  check({"inv", {{{2, 3, 3}, Kind::kWell}}, op_of(LinalgOp::inv())});
  check({"det", {{{2, 3, 3}}}, op_of(LinalgOp::det())});
  check({"slogdet", {{{3, 3}}}, op_of(LinalgOp::slogdet())});
}

TEST_P(LinalgAdTest, LstsqPinvAndNorms) {
  check({"lstsq overdetermined", {{{5, 3}}, {{5, 2}}}, op_of(LinalgOp::lstsq())});
  check({"lstsq underdetermined", {{{3, 5}}, {{3, 2}}}, op_of(LinalgOp::lstsq())});
  check({"lstsq with singular values", {{{5, 3}}, {{5, 2}}}, op_of(LinalgOp::lstsq(-1.0, true))});
  check({"lstsq wide with singular values", {{{2, 3, 5}}, {{2, 3, 2}}}, op_of(LinalgOp::lstsq(-1.0, true))});
  check({"pinv tall", {{{4, 3}}}, op_of(LinalgOp::pinv())});
  check({"pinv wide batched", {{{2, 3, 4}}}, op_of(LinalgOp::pinv())});
  for (NormOrder ord : {NormOrder::kFrobenius, NormOrder::kNuclear, NormOrder::kOne, NormOrder::kNegOne,
                        NormOrder::kTwo, NormOrder::kNegTwo, NormOrder::kInf, NormOrder::kNegInf}) {
    check({"matrix_norm " + std::string(to_string(ord)), {{{2, 4, 3}}}, op_of(*LinalgOp::matrix_norm(ord))});
  }
  for (auto [ord, p] : {std::pair{NormOrder::kTwo, 2.0}, std::pair{NormOrder::kOne, 1.0}, std::pair{NormOrder::kP, 3.0},
                        std::pair{NormOrder::kInf, 0.0}, std::pair{NormOrder::kNegInf, 0.0}}) {
    check({fmt::format("vector_norm {} {}", to_string(ord), p), {{{2, 5}}}, op_of(*LinalgOp::vector_norm(ord, p))});
  }
}

TEST_P(LinalgAdTest, DegenerateSpectraGiveFiniteGaugeInvariantDerivatives) {
  // A = diag(1, 1, 3): the first two eigenvectors are any rotation of each
  // other; the eigenvalue tangents and the projector onto the degenerate
  // subspace are well defined, and nothing is NaN.
  const DType dtype = GetParam();
  ProgramBuilder b;
  const ProgramValue a = *b.add_input(dtype, {3, 3});
  const auto o = *b.emit_extension(LinalgOp::eigh(), {a});
  const ProgramValue v12 = *columns(b, o[1], 0, 2);
  const ProgramValue p = *projector(b, v12);
  const auto f = *b.freeze({o[0], p});
  const Tensor x = tensor_of(dtype, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 3});
  const Tensor u = hermitian_positive_definite(dtype, {3, 3}, 5);
  const std::uint32_t active[] = {0};
  Result<ad::JvpResult> jvp =
      ad::jvp(*runtime_, context_, f, std::span<const Tensor>(&x, 1), active, std::span<const Tensor>(&u, 1));
  ASSERT_TRUE(jvp.ok()) << jvp.status().to_string();
  for (const Tensor& t : jvp->tangents)
    for (const cd& e : values_of(t)) EXPECT_TRUE(std::isfinite(e.real()) && std::isfinite(e.imag()));
  // dP for the projector onto the {e1, e2} eigenspace: -(P dA Q + Q dA P) / 2
  // with Q = e3 e3ᵀ and the gap 3 - 1 = 2.
  const RefMatrix du = matrix_of(u, 0), dp = matrix_of(jvp->tangents[1], 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const bool cross = (i < 2) != (j < 2);
      const cd want = cross ? -du(i, j) / 2.0 : cd(0);
      EXPECT_NEAR(std::abs(dp(i, j) - want), 0.0, 1e-10) << i << "," << j;
    }
  // dλ of the degenerate pair: the eigenvalues of the 2x2 block of dA (here
  // their sum, which is basis independent).
  const std::vector<cd> dw = values_of(jvp->tangents[0]);
  EXPECT_NEAR((dw[0] + dw[1]).real(), (du(0, 0) + du(1, 1)).real(), 1e-10);
}

TEST_P(LinalgAdTest, HessianVectorProductOfLogDetByComposition) {
  // f(A) = log|det A|: H[V] = -tr(A⁻¹ V A⁻¹ dA) for the gradient direction.
  const DType dtype = GetParam();
  ProgramBuilder b;
  const ProgramValue a = *b.add_input(dtype, {3, 3});
  const auto o = *b.emit_extension(LinalgOp::slogdet(), {a});
  const auto f = *b.freeze({o[1]});
  const Tensor x = well_conditioned(dtype, {3, 3}, 7);
  const Tensor v = random_tensor(dtype, {3, 3}, 8);
  const std::uint32_t active[] = {0};
  Result<std::vector<Tensor>> hv =
      ad::hvp(*runtime_, context_, f, std::span<const Tensor>(&x, 1), active, std::span<const Tensor>(&v, 1));
  ASSERT_TRUE(hv.ok()) << hv.status().to_string();
  // Central differences of the gradient.
  const double h = 1e-6;
  const Tensor xp = axpy(x, h, v), xm = axpy(x, -h, v);
  Result<std::vector<Tensor>> gp = ad::grad(*runtime_, context_, f, std::span<const Tensor>(&xp, 1), active);
  Result<std::vector<Tensor>> gm = ad::grad(*runtime_, context_, f, std::span<const Tensor>(&xm, 1), active);
  ASSERT_TRUE(gp.ok() && gm.ok());
  const std::vector<cd> p = values_of((*gp)[0]), m = values_of((*gm)[0]), got = values_of((*hv)[0]);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(std::abs(got[i] - (p[i] - m[i]) / (2 * h)), 0.0, 1e-6);
}

// Note [Cotangents equal under guards] and Note [Concrete validation]: the
// gradients of square-matrix ops on symbolic extents, [s0, s1] square by
// the op's guard and [s, s], equal the gradients of the concrete program
// (the rules' cotangents are [s1, s1], and their identity masks iota and
// broadcast_in_dim of symbolic shapes, which prepare evaluates).
TEST_P(LinalgAdTest, GradientsOfSquareOpsOnSymbolicExtents) {
  const DType dtype = GetParam();
  const Tensor x = well_conditioned(dtype, {3, 3}, 17);
  const Tensor spd = [&] {
    const RefMatrix g = matrix_of(x, 0);
    RefMatrix m = g.adjoint() * g;
    for (std::int64_t i = 0; i < 3; ++i) m(i, i) += cd(3);
    return tensor_of(dtype, {3, 3}, m.d);
  }();
  const Tensor pad = random_tensor(dtype, {3, 2}, 18);  // only gives the symbol s its value
  const std::uint32_t first[] = {0}, second[] = {1};
  for (const auto& op :
       {LinalgOp::slogdet(), LinalgOp::det(), LinalgOp::inv(), LinalgOp::cholesky(), LinalgOp::eigh()}) {
    const Tensor& a =
        op->attributes().kind == LinalgOpKind::kCholesky || op->attributes().kind == LinalgOpKind::kEigh ? spd : x;
    // The loss: the real part of the sum of the op's (last real or first) result.
    const auto loss = [&](ProgramBuilder& b, ProgramValue m) -> Result<ProgramValue> {
      TENFERRO_ASSIGN_OR_RETURN(auto outs, b.emit_extension(op, {m}));
      ProgramValue v = outs[op->attributes().kind == LinalgOpKind::kSlogdet ? 1 : 0];
      if (is_complex(b.metadata(v)->dtype)) {
        TENFERRO_ASSIGN_OR_RETURN(v, b.emit(program::CoreSemanticOp::kReal, {v}));
      }
      const std::int64_t rank = b.metadata(v)->rank();
      Dims axes;
      for (std::int64_t i = 0; i < rank; ++i) axes.push_back(i);
      return b.emit(program::CoreSemanticOp::kReduceSum, {v}, program::ReduceAttributes{axes});
    };
    std::vector<cd> want;
    {
      ProgramBuilder b;
      const ProgramValue m = *b.add_input(dtype, {3, 3});
      const auto f = *b.freeze({*loss(b, m)});
      Result<std::vector<Tensor>> g = ad::grad(*runtime_, context_, f, std::span<const Tensor>(&a, 1), first);
      ASSERT_TRUE(g.ok()) << op->describe() << ": " << g.status().to_string();
      want = values_of((*g)[0]);
    }
    for (int variant = 0; variant < 2; ++variant) {
      ProgramBuilder b;
      ProgramValue m;
      std::vector<Tensor> inputs;
      if (variant == 0) {  // [s0, s1]: square by the op's guard
        m = *b.add_input(dtype, {program::SymbolicExtent::unknown(), program::SymbolicExtent::unknown()});
      } else {  // [s, s], s from another input
        const ProgramValue p = *b.add_input(dtype, {program::SymbolicExtent::unknown(), 2});
        const program::SymbolicExtent s = b.metadata(p)->shape[0];
        m = *b.add_input(dtype, {s, s});
        inputs.push_back(pad);
      }
      inputs.push_back(a);
      Result<ProgramValue> l = loss(b, m);
      ASSERT_TRUE(l.ok()) << l.status().to_string();
      const auto f = *b.freeze({*l});
      Result<std::vector<Tensor>> g = ad::grad(*runtime_, context_, f, inputs, variant == 0 ? first : second);
      ASSERT_TRUE(g.ok()) << op->describe() << " variant " << variant << ": " << g.status().to_string();
      const std::vector<cd> got = values_of((*g)[0]);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(std::abs(got[i] - want[i]), 0.0, 1e-10) << op->describe() << " variant " << variant;
    }
  }
}

TEST(LinalgAdRuleTest, IsInstalledExplicitlyAndWithoutItTheTransformFails) {
  ad::AdContext bare;
  ProgramBuilder b;
  const ProgramValue a = *b.add_input(DType::kFloat64, {3, 3});
  const auto o = *b.emit_extension(LinalgOp::inv(), {a});
  const auto f = *b.freeze({o[0]});
  const std::uint32_t active[] = {0};
  EXPECT_EQ(bare.jvp(f, active).status().code(), ErrorCode::kUnimplemented);
  ASSERT_TRUE(install_linalg_ad_rules(bare).ok());
  EXPECT_TRUE(bare.jvp(f, active).ok());
  EXPECT_EQ(install_linalg_ad_rules(bare).code(), ErrorCode::kAlreadyExists);
  EXPECT_GT(bare.metrics().extension_rule_calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LinalgAdTest, ::testing::Values(DType::kFloat64, DType::kComplex128),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace tenferro::linalg
