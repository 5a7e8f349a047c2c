// `tenferro bench ad`: the cost of derivatives of a 100-step einsum chain
// (y_{i+1} = einsum("ij,jk->ik", y_i, W_i), square matrices of 128 and of
// 256; 20 steps of 32 with --quick) through a Runtime with the
// native einsum engine, against the forward program measured in the same
// run (interleaved). The target is reverse mode at most 3x the forward time
// (the cheap-gradient principle), so the baseline of the derivative cases
// is 3 x forward: ratio >= 1 means the target is met. Also reported: the
// split backward program alone (residuals from the forward) against 2 x
// forward, the eager path (one GradientTape step: record the chain,
// loss = sum(y * ct), backward()) against 3 x forward, and the transform
// itself (AdContext::vjp with a cleared cache) against building the source
// program.
//
// The runtime is the CPU engine (cpu::register_cpu_engine) over one managed
// domain of the case's thread count, with the native einsum module; the
// only core op the derivative programs need, add (summing the tangents of
// the two operands in forward mode), goes to the engine's elementwise slot.
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/ad/gradient_tape.h"
#include "tenferro/cpu/engine.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/einsum/cpu_engine.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::bench {
namespace {

using program::FrozenProgram;

// The CPU engine over one managed domain of `threads` pinned CPUs (outputs
// come from the domain's memory pool, as for any user of the CPU engine),
// with the native einsum module on it.
Result<runtime::Runtime> chain_runtime(int threads) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<einsum::CpuEinsumExecutor> executor,
                            einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(gemm)));
  cpu::CpuEngineOptions options;
  options.gemm_provider = gemm;
  TENFERRO_ASSIGN_OR_RETURN(options.domains, cli::managed_cpu_domains(threads));
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, options));
  builder.add_extension_module(einsum::cpu_extension_module(options.id, std::move(executor)));
  return builder.build();
}

// y = x W_1 ... W_steps as `steps` einsums; inputs x [m, n], then W_i [n, n].
Result<FrozenProgram> chain_program(int steps, std::int64_t m, std::int64_t n) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op, einsum::EinsumOp::create("ij,jk->ik"));
  program::ProgramBuilder b;
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue y, b.add_input(DType::kFloat64, {m, n}, "x"));
  for (int i = 0; i < steps; ++i) {
    TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue w, b.add_input(DType::kFloat64, {n, n}, fmt::format("W{}", i)));
    const program::ProgramValue operands[] = {y, w};
    TENFERRO_ASSIGN_OR_RETURN(y, einsum::emit_einsum(b, op, operands));
  }
  return b.freeze({y});
}

Tensor random_matrix(std::int64_t rows, std::int64_t cols, double scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-scale, scale);
  Tensor t = *Tensor::empty({rows, cols}, DType::kFloat64);
  auto* d = static_cast<double*>(t.data());
  for (std::int64_t i = 0; i < t.numel(); ++i) d[i] = u(rng);
  return t;
}

struct Prepared {
  std::string name;
  std::shared_ptr<const runtime::PreparedProgram> plan;
  std::vector<Tensor> inputs;
  Samples samples;
};

Result<Prepared> prepare(runtime::Runtime& rt, std::string name, const FrozenProgram& program,
                         std::vector<Tensor> parameters) {
  TENFERRO_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, program.bindings.num_inputs() == 0
                                                            ? Result<std::vector<Tensor>>(std::move(parameters))
                                                            : program.bindings.assemble_inputs(parameters));
  TENFERRO_ASSIGN_OR_RETURN(auto plan, rt.prepare_for(program.program, runtime::InputSignature::of(inputs)));
  TENFERRO_TRY(rt.run_prepared(*plan, inputs).status());  // warm-up (plans, workspaces)
  return Prepared{std::move(name), std::move(plan), std::move(inputs), {}};
}

// One chain of `steps` [n, n] matrices (and an [n, n] x); the transform's
// own cost is reported for the first size only.
int run_chain(const SuiteOptions& options, Reporter& reporter, int steps, std::int64_t n, bool time_transform) {
  const std::int64_t m = n;
  const int runs = options.runs > 0 ? options.runs : (options.quick ? 3 : 11);
  const std::string tag = fmt::format("chain{}_n{}", steps, n);

  ad::AdContext context;
  if (!context.install_rule(einsum::einsum_ad_rule()).ok()) return 1;
  Result<std::shared_ptr<const einsum::EinsumOp>> einsum_op = einsum::EinsumOp::create("ij,jk->ik");
  if (!einsum_op.ok()) return 1;
  Result<FrozenProgram> forward = chain_program(steps, m, n);
  if (!forward.ok()) {
    reporter.progress("ad: " + forward.status().to_string());
    return 1;
  }
  std::vector<std::uint32_t> all(static_cast<std::size_t>(steps) + 1);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint32_t>(i);
  const std::uint32_t x_only[] = {0};
  auto vjp_all = context.vjp(*forward, all);
  auto vjp_x = context.vjp(*forward, x_only);
  auto jvp_all = context.jvp(*forward, all);
  auto jvp_x = context.jvp(*forward, x_only);
  auto split = context.split_vjp(*forward, all);
  for (const Status& s : {vjp_all.status(), vjp_x.status(), jvp_all.status(), jvp_x.status(), split.status()}) {
    if (!s.ok()) {
      reporter.progress("ad: " + s.to_string());
      return 1;
    }
  }

  std::mt19937_64 rng(7);
  const double scale = std::sqrt(3.0 / static_cast<double>(n));
  std::vector<Tensor> x{random_matrix(m, n, 1.0, rng)};
  for (int i = 0; i < steps; ++i) x.push_back(random_matrix(n, n, scale, rng));
  const Tensor ct = random_matrix(m, n, 1.0, rng);

  for (int threads : options.threads) {
    reporter.progress(fmt::format("ad: {} einsums of [{}, {}] x [{}, {}], {} thread(s)", steps, m, n, n, n, threads));
    Result<runtime::Runtime> rt = chain_runtime(threads);
    if (!rt.ok()) {
      reporter.progress("ad: " + rt.status().to_string());
      return 1;
    }
    std::vector<Tensor> with_ct = x;
    with_ct.push_back(ct);
    std::vector<Tensor> with_all_tangents = x;
    for (const Tensor& t : x) with_all_tangents.push_back(random_matrix(t.shape()[0], t.shape()[1], 1.0, rng));
    std::vector<Tensor> with_x_tangent = x;
    with_x_tangent.push_back(random_matrix(m, n, 1.0, rng));
    std::vector<Prepared> cases;
    auto add = [&](std::string name, const FrozenProgram& p, std::vector<Tensor> params) {
      Result<Prepared> prepared = prepare(*rt, std::move(name), p, std::move(params));
      if (!prepared.ok()) {
        reporter.progress("ad: " + prepared.status().to_string());
        return false;
      }
      cases.push_back(std::move(*prepared));
      return true;
    };
    // The forward program's residual outputs feed the split backward program.
    Result<runtime::TensorList> residuals = rt->run(split->forward, x);
    if (!residuals.ok()) return 1;
    std::vector<Tensor> backward_inputs = x;
    backward_inputs.insert(backward_inputs.end(), residuals->begin() + 1, residuals->end());
    backward_inputs.push_back(ct);
    if (!add("forward", *forward, x) || !add("vjp_all", vjp_all->program, with_ct) ||
        !add("vjp_x", vjp_x->program, with_ct) || !add("jvp_all", jvp_all->program, with_all_tangents) ||
        !add("jvp_x", jvp_x->program, with_x_tangent) || !add("backward_all", split->backward, backward_inputs)) {
      return 1;
    }
    // The eager path: one training step on a GradientTape -- record the
    // chain (each einsum runs eagerly), loss = sum(y * ct), backward() (the
    // recorded values are the residuals: nothing is recomputed).
    auto tape_context = std::make_shared<ad::AdContext>();
    if (!tape_context->install_rule(einsum::einsum_ad_rule()).ok()) return 1;
    ad::GradientTape tape(*rt, tape_context);
    std::vector<ad::TapeTensor> variables;
    for (const Tensor& t : x) variables.push_back(*tape.variable(t));
    auto eager_step = [&]() -> Status {
      TENFERRO_TRY(tape.clear());
      tape.zero_grad();
      ad::TapeTensor y = variables[0];
      for (int i = 0; i < steps; ++i) {
        const ad::TapeTensor operands[] = {y, variables[static_cast<std::size_t>(i) + 1]};
        TENFERRO_ASSIGN_OR_RETURN(auto out, tape.apply(*einsum_op, operands));
        y = out[0];
      }
      TENFERRO_ASSIGN_OR_RETURN(ad::TapeTensor c, tape.constant(ct));
      TENFERRO_ASSIGN_OR_RETURN(ad::TapeTensor p, tape.apply(program::CoreSemanticOp::kMul, {y, c}));
      TENFERRO_ASSIGN_OR_RETURN(ad::TapeTensor loss, tape.apply(program::CoreSemanticOp::kReduceSum, {p},
                                                                program::ReduceAttributes{Dims{0, 1}}));
      return tape.backward(loss);
    };
    if (const Status s = eager_step(); !s.ok()) {  // warm-up (compile and transform caches)
      reporter.progress("ad: eager step: " + s.to_string());
      return 1;
    }
    Samples eager;
    // Interleaved: every round times each program once, then the eager step.
    for (int r = 0; r < runs; ++r) {
      for (Prepared& c : cases) {
        const auto t0 = std::chrono::steady_clock::now();
        Result<runtime::TensorList> out = rt->run_prepared(*c.plan, c.inputs);
        const auto t1 = std::chrono::steady_clock::now();
        if (!out.ok()) {
          reporter.progress("ad: " + out.status().to_string());
          return 1;
        }
        c.samples.seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
      const auto t0 = std::chrono::steady_clock::now();
      const Status s = eager_step();
      const auto t1 = std::chrono::steady_clock::now();
      if (!s.ok()) {
        reporter.progress("ad: eager step: " + s.to_string());
        return 1;
      }
      eager.seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    const double fwd = cases[0].samples.median();
    reporter.add(Case{fmt::format("{}_forward_t{}", tag, threads),
                      fwd,
                      "s",
                      std::nullopt,
                      "",
                      threads,
                      runs,
                      {{"flop", 2.0 * static_cast<double>(m * n * n) * steps}}});
    for (std::size_t k = 1; k < cases.size(); ++k) {
      const bool backward = cases[k].name == "backward_all";
      Case c{fmt::format("{}_{}_t{}", tag, cases[k].name, threads),
             cases[k].samples.median(),
             "s",
             (backward ? 2.0 : 3.0) * fwd,
             backward ? "2x_forward" : "3x_forward",
             threads,
             runs,
             {{"times_forward", cases[k].samples.median() / fwd}}};
      reporter.add(std::move(c));
    }
    reporter.add(Case{fmt::format("{}_eager_step_t{}", tag, threads),
                      eager.median(),
                      "s",
                      3.0 * fwd,
                      "3x_forward",
                      threads,
                      runs,
                      {{"times_forward", eager.median() / fwd}}});
  }

  if (!time_transform) return 0;
  // The transform itself: AdContext::vjp on a cleared cache vs emitting and
  // freezing the source program.
  const Samples transform = time_runs(
      [&] {
        context.clear_cache();
        (void)context.vjp(*forward, all);
      },
      3, 0.2, 50);
  const Samples build = time_runs([&] { (void)chain_program(steps, m, n); }, 3, 0.2, 200);
  reporter.add(Case{fmt::format("{}_vjp_transform", tag), transform.median(), "s", build.median(),
                    "build_source_program", 1, static_cast<int>(transform.runs())});
  return 0;
}

}  // namespace

int run_ad_suite(const SuiteOptions& options, Reporter& reporter) {
  if (options.quick) return run_chain(options, reporter, 20, 32, true);
  // 128: the reference case; 256: the same chain with 8x the flops per
  // einsum and 4x the bytes, where reverse mode's extra memory traffic
  // (residuals written, then read back cold) weighs less.
  for (std::int64_t n : {128, 256}) {
    if (const int rc = run_chain(options, reporter, 100, n, n == 128); rc != 0) return rc;
  }
  return 0;
}

}  // namespace tenferro::bench
