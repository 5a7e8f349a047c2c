// The README's C++ quick start: an installed tenferro, a ready CPU runtime,
// eager einsum and linalg calls; then a gradient through the runtime's AD
// context, linked through tenferro::cpu_runtime alone.
#include <cstdio>
#include <vector>

#include <tenferro/ad_runtime.h>
#include <tenferro/cpu_runtime.h>

using namespace tenferro;

Result<double> contract() {
  cpu::CpuRuntimeOptions options;  // defaults: native GEMM, einsum and linalg engines
  options.threads = 1;
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime(options));
  runtime::EagerContext ctx = cpu.runtime.on();

  TENFERRO_ASSIGN_OR_RETURN(Tensor a, Tensor::from_values<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  TENFERRO_ASSIGN_OR_RETURN(Tensor b, Tensor::from_values<double>({1, 0, 0, 1, 1, 1}, {3, 2}));
  const Tensor ab[] = {a, b};
  TENFERRO_ASSIGN_OR_RETURN(Tensor c, einsum::einsum(ctx, "ij,jk->ik", ab));  // [[4, 5], [10, 11]]
  TENFERRO_ASSIGN_OR_RETURN(Tensor det, linalg::det(ctx, c));                 // 4 * 11 - 5 * 10
  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> v, det.to_vector<double>());

  // d det(c) / dc = det(c) inv(c)^T = [[11, -10], [-5, 4]]
  ad::GradientTape tape(cpu.runtime, cpu.ad);
  TENFERRO_ASSIGN_OR_RETURN(ad::TapeTensor x, tape.variable(c));
  const ad::TapeTensor xs[] = {x};
  TENFERRO_ASSIGN_OR_RETURN(auto taped_det, tape.apply(linalg::LinalgOp::det(), xs));
  TENFERRO_TRY(tape.backward(taped_det[0]));
  TENFERRO_ASSIGN_OR_RETURN(Tensor g, tape.grad(x));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<double> gv, g.to_vector<double>());
  const double expected[] = {11, -10, -5, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    if (gv[i] < expected[i] - 1e-9 || gv[i] > expected[i] + 1e-9) {
      return Error(ErrorCode::kInternal, ErrorStage::kNone, "gradient of det: expected [11, -10, -5, 4]");
    }
  }
  return v[0];
}

int main() {
  Result<double> det = contract();
  if (!det.ok()) {  // bad input is a typed error: code, stage and message
    std::fprintf(stderr, "error: %s\n", det.status().to_string().c_str());
    return 1;
  }
  std::printf("det %g\n", *det);
  return *det > -6.0 - 1e-9 && *det < -6.0 + 1e-9 ? 0 : 1;
}
