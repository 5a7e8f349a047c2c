// Test support for the ad component (ad_test_support.h).
#include "ad_test_support.h"

#include <cmath>
#include <complex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "tenferro/testing/reference_evaluator.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::ad::testing {

using program::FrozenProgram;
using program::SemanticProgram;

namespace {

template <class T>
Tensor axpy_typed(const Tensor& x, double h, const Tensor& u) {
  std::vector<T> a = *x.to_vector<T>();
  std::vector<T> b = *u.to_vector<T>();
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = a[i] + static_cast<T>(h) * b[i];
  return *Tensor::from_values<T>(std::span<const T>(a), x.shape());
}

template <class T>
double inner_typed(const Tensor& x, const Tensor& y) {
  std::vector<T> a = *x.to_vector<T>();
  std::vector<T> b = *y.to_vector<T>();
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    } else {
      s += std::real(std::conj(std::complex<double>(a[i])) * std::complex<double>(b[i]));
    }
  }
  return s;
}

template <class T>
double max_abs_typed(const Tensor& x) {
  double m = 0;
  const std::vector<T> values = *x.to_vector<T>();
  for (const T& v : values) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

}  // namespace

Tensor axpy(const Tensor& x, double h, const Tensor& u) {
  switch (x.dtype()) {
    case DType::kFloat32:
      return axpy_typed<float>(x, h, u);
    case DType::kFloat64:
      return axpy_typed<double>(x, h, u);
    case DType::kComplex64:
      return axpy_typed<std::complex<float>>(x, h, u);
    case DType::kComplex128:
      return axpy_typed<std::complex<double>>(x, h, u);
    default:
      ADD_FAILURE() << "axpy: unsupported dtype " << to_string(x.dtype());
      return x;
  }
}

double real_inner(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  switch (a.dtype()) {
    case DType::kFloat32:
      return inner_typed<float>(a, b);
    case DType::kFloat64:
      return inner_typed<double>(a, b);
    case DType::kComplex64:
      return inner_typed<std::complex<float>>(a, b);
    case DType::kComplex128:
      return inner_typed<std::complex<double>>(a, b);
    default:
      ADD_FAILURE() << "real_inner: unsupported dtype " << to_string(a.dtype());
      return 0;
  }
}

double max_abs(const Tensor& x) {
  switch (x.dtype()) {
    case DType::kFloat32:
      return max_abs_typed<float>(x);
    case DType::kFloat64:
      return max_abs_typed<double>(x);
    case DType::kComplex64:
      return max_abs_typed<std::complex<float>>(x);
    case DType::kComplex128:
      return max_abs_typed<std::complex<double>>(x);
    default:
      return 0;
  }
}

Tensor random_like(const Tensor& like, std::uint64_t seed) {
  return *tenferro::testing::random_tensor(like.dtype(), like.shape(), seed);
}

std::vector<Tensor> evaluate(const FrozenProgram& program, std::span<const Tensor> parameters) {
  Result<std::vector<Tensor>> out =
      tenferro::testing::evaluate_reference(*program.program, parameters, &program.bindings);
  EXPECT_TRUE(out.ok()) << out.status().to_string() << "\n" << program.program->explain();
  if (!out.ok()) return {};
  return std::move(*out);
}

::testing::AssertionResult provenance_derived(const SemanticProgram& source, const SemanticProgram& transformed) {
  std::set<const program::ProvenanceRecord*> origins;
  for (program::OperationView op : source.operations()) origins.insert(op.provenance().get());
  for (program::OperationView op : transformed.operations()) {
    bool found = false;
    for (const program::ProvenanceRecord* p = op.provenance().get(); p != nullptr && !found; p = p->derived_from.get())
      found = origins.count(p) != 0;
    if (!found) {
      return ::testing::AssertionFailure()
             << "operation " << op.id().index() << " (" << op.name() << ") has provenance '"
             << program::describe_provenance(op.provenance()) << "' not derived from the source program";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult check_derivatives(AdContext& context, const FrozenProgram& source,
                                             std::span<const Tensor> parameters, std::span<const std::uint32_t> active,
                                             const DerivativeCheck& check) {
  auto jvp = context.jvp(source, active);
  if (!jvp.ok()) return ::testing::AssertionFailure() << "jvp: " << jvp.status().to_string();
  auto vjp = context.vjp(source, active);
  if (!vjp.ok()) return ::testing::AssertionFailure() << "vjp: " << vjp.status().to_string();
  auto split = context.split_vjp(source, active);
  if (!split.ok()) return ::testing::AssertionFailure() << "split_vjp: " << split.status().to_string();
  for (const SemanticProgram* p : {jvp->program.program.get(), vjp->program.program.get(), split->forward.program.get(),
                                   split->backward.program.get()}) {
    auto derived = provenance_derived(*source.program, *p);
    if (!derived) return derived;
  }

  // All program inputs (bindings filled in) and the primal outputs.
  std::vector<Tensor> x = *source.bindings.assemble_inputs(parameters);
  const std::vector<Tensor> y = evaluate(source, parameters);
  const AdLayout& layout = jvp->layout;
  const std::size_t m = y.size();

  // Forward mode.
  std::vector<Tensor> u;
  for (std::size_t k = 0; k < layout.active_inputs.size(); ++k)
    u.push_back(random_like(x[layout.active_inputs[k]], check.seed + 11 * k));
  std::vector<Tensor> jvp_params(parameters.begin(), parameters.end());
  jvp_params.insert(jvp_params.end(), u.begin(), u.end());
  const std::vector<Tensor> jvp_out = evaluate(jvp->program, jvp_params);
  if (jvp_out.size() != m + layout.differentiated_outputs.size())
    return ::testing::AssertionFailure() << "jvp program has " << jvp_out.size() << " outputs";
  for (std::size_t j = 0; j < m; ++j) {
    Status s = tenferro::testing::check_allclose(jvp_out[j], y[j]);
    if (!s.ok()) return ::testing::AssertionFailure() << "jvp primal output " << j << ": " << s.to_string();
  }

  // Central differences along u (bound inputs are never active here).
  if (check.finite_differences) {
    std::vector<Tensor> plus(parameters.begin(), parameters.end()), minus(parameters.begin(), parameters.end());
    const auto params = source.bindings.parameters();
    for (std::size_t k = 0; k < layout.active_inputs.size(); ++k) {
      const std::uint32_t a = layout.active_inputs[k];
      std::size_t p = 0;
      while (p < params.size() && params[p] != a) ++p;
      if (p == params.size()) return ::testing::AssertionFailure() << "active input " << a << " is bound";
      plus[p] = axpy(x[a], check.h, u[k]);
      minus[p] = axpy(x[a], -check.h, u[k]);
    }
    const std::vector<Tensor> yp = evaluate(source, plus);
    const std::vector<Tensor> ym = evaluate(source, minus);
    std::size_t next = 0;
    for (std::size_t j = 0; j < m; ++j) {
      if (layout.output_tangents[j] == TangentState::kNonDifferentiable) continue;
      Tensor fd = axpy(yp[j], -1.0, ym[j]);
      fd = axpy(Tensor(*Tensor::zeros(fd.shape(), fd.dtype())), 0.5 / check.h, fd);
      if (layout.output_tangents[j] == TangentState::kZero) {
        if (max_abs(fd) > check.atol)
          return ::testing::AssertionFailure() << "output " << j << " has a zero tangent but finite differences give "
                                               << tenferro::testing::format_tensor(fd);
        continue;
      }
      const Tensor& t = jvp_out[m + next++];
      Status s = tenferro::testing::check_allclose(t, fd, {check.rtol, check.atol, true});
      if (!s.ok())
        return ::testing::AssertionFailure() << "jvp of output " << j << " vs finite differences: " << s.to_string();
    }
  }

  // Reverse mode: <v, J u> = <J* v, u>.
  std::vector<Tensor> v;
  double lhs = 0;
  for (std::size_t k = 0; k < layout.differentiated_outputs.size(); ++k) {
    v.push_back(random_like(y[layout.differentiated_outputs[k]], check.seed + 101 + 13 * k));
    lhs += real_inner(v.back(), jvp_out[m + k]);
  }
  std::vector<Tensor> vjp_params(parameters.begin(), parameters.end());
  vjp_params.insert(vjp_params.end(), v.begin(), v.end());
  const std::vector<Tensor> vjp_out = evaluate(vjp->program, vjp_params);
  const AdLayout& rl = vjp->layout;
  if (vjp_out.size() != m + rl.gradient_inputs.size())
    return ::testing::AssertionFailure() << "vjp program has " << vjp_out.size() << " outputs";
  double rhs = 0;
  double scale = 0;
  std::size_t g = 0;
  for (std::size_t k = 0; k < rl.active_inputs.size(); ++k) {
    if (rl.input_cotangents[k] != TangentState::kPresent) continue;
    rhs += real_inner(vjp_out[m + g], u[k]);
    scale += max_abs(vjp_out[m + g]) * max_abs(u[k]) * static_cast<double>(u[k].numel());
    ++g;
  }
  scale = std::max({scale, std::abs(lhs), 1e-300});
  if (std::abs(lhs - rhs) > check.identity_rtol * scale + 1e-12) {
    return ::testing::AssertionFailure() << fmt::format("<v, J u> = {:.17g} but <J* v, u> = {:.17g}", lhs, rhs);
  }

  // Split VJP equals the combined one.
  std::vector<Tensor> forward = evaluate(split->forward, parameters);
  std::vector<Tensor> backward_params(parameters.begin(), parameters.end());
  for (std::size_t r = 0; r < split->num_residuals; ++r) backward_params.push_back(forward[m + r]);
  backward_params.insert(backward_params.end(), v.begin(), v.end());
  const std::vector<Tensor> split_out = evaluate(split->backward, backward_params);
  if (split_out.size() != rl.gradient_inputs.size())
    return ::testing::AssertionFailure() << "backward program has " << split_out.size() << " outputs";
  for (std::size_t k = 0; k < split_out.size(); ++k) {
    Status s = tenferro::testing::check_allclose(split_out[k], vjp_out[m + k], {1e-12, 1e-12, true});
    if (!s.ok()) return ::testing::AssertionFailure() << "split vjp gradient " << k << ": " << s.to_string();
  }
  return ::testing::AssertionSuccess();
}

std::string numpy_literal(const Tensor& t) {
  std::ostringstream s;
  s.precision(17);
  s << "np.array([";
  if (t.dtype() == DType::kComplex128) {
    const auto v = *t.to_vector<std::complex<double>>();
    for (std::size_t i = 0; i < v.size(); ++i)
      s << (i ? "," : "") << "complex(" << v[i].real() << "," << v[i].imag() << ")";
    s << "], dtype=np.complex128)";
  } else {
    const auto v = *t.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
    s << "], dtype=np.float64)";
  }
  s << ".reshape((";
  for (std::int64_t e : t.shape()) s << e << ",";
  s << "))";
  return s.str();
}

Result<Tensor> parse_tensor(std::string_view text, DType dtype, IntArrayRef shape) {
  std::istringstream in{std::string(text)};
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  if (dtype == DType::kComplex128) {
    std::vector<std::complex<double>> v;
    double re = 0, im = 0;
    while (static_cast<std::int64_t>(v.size()) < n && in >> re >> im) v.emplace_back(re, im);
    if (static_cast<std::int64_t>(v.size()) != n)
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "parse_tensor: too few values in '{}'", text);
    return Tensor::from_values<std::complex<double>>(std::span<const std::complex<double>>(v), shape);
  }
  std::vector<double> v;
  double x = 0;
  while (static_cast<std::int64_t>(v.size()) < n && in >> x) v.push_back(x);
  if (static_cast<std::int64_t>(v.size()) != n)
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "parse_tensor: too few values in '{}'", text);
  return Tensor::from_values<double>(std::span<const double>(v), shape);
}

program::FrozenProgram make_program(std::span<const program::ValueMetadata> inputs, const ProgramBody& body) {
  program::ProgramBuilder builder;
  std::vector<program::ProgramValue> values;
  for (const program::ValueMetadata& m : inputs) {
    auto v = builder.add_input(m.dtype, m.shape.span());
    EXPECT_TRUE(v.ok()) << v.status().to_string();
    values.push_back(*v);
  }
  auto outputs = body(builder, values);
  EXPECT_TRUE(outputs.ok()) << outputs.status().to_string();
  auto frozen = builder.freeze(std::span<const program::ProgramValue>(*outputs));
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return std::move(*frozen);
}

}  // namespace tenferro::ad::testing
