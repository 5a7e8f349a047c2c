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
// Two more baselines put the 3x target in context (Note [Reverse mode at
// the GEMM floor]): torch (Debian's, /usr/bin/python3, same sizes and thread
// count) runs the chain as `y @ W` -- its forward under no_grad is the
// forward case's baseline, and its autograd step (record, then
// torch.autograd.grad over all inputs) the baseline of `vjp_all_vs_torch`
// and `eager_step_vs_torch`; and `gemm_sequence` issues the VJP's 300 GEMMs
// straight to the GEMM provider, without the runtime, against 3x the
// forward's 100 (each GEMM over the domain's threads), which is the ratio
// the GEMMs alone impose.
//
// The runtime is the CPU engine (cpu::register_cpu_engine) over one managed
// domain of the case's thread count, with the native einsum module; the
// only core op the derivative programs need, add (summing the tangents of
// the two operands in forward mode), goes to the engine's elementwise slot.
//
// Note [Reverse mode at the GEMM floor]
// The VJP over all inputs does exactly three times the forward's flops: the
// forward again (writing the residuals), the cotangent GEMM g W^T and the
// weight gradient x^T g of every step. It can only come in under 3x the
// forward if its GEMMs run faster than the forward's, and they run slower:
// per step the forward reads one matrix that is not in cache (W), while the
// VJP writes a residual, reads W again, reads the residual back and writes
// a fresh gradient -- five cold matrices against one -- and its transposed
// operands pack more slowly than the forward's. `gemm_sequence` measures
// that floor in the same run: the same GEMMs, same buffers, no runtime.
#include <cmath>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_command.h"
#include "einsum_command.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/ad_runtime/gradient_tape.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum_cpu/cpu_engine.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::bench {
namespace {

using program::FrozenProgram;

// The CPU engine over `domains` (outputs come from the domain's memory
// pool, as for any user of the CPU engine), with the native einsum module
// on it; `gemm` serves both.
Result<runtime::Runtime> chain_runtime(std::shared_ptr<cpu::NativeGemmProvider> gemm,
                                       std::shared_ptr<const cpu::CpuDomainSet> domains) {
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<einsum::CpuEinsumExecutor> executor,
                            einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(gemm)));
  cpu::CpuEngineOptions options;
  options.gemm_provider = std::move(gemm);
  options.domains = std::move(domains);
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

// The chain's GEMMs issued straight to the provider, on the programs' own
// matrices (Note [Reverse mode at the GEMM floor]). The forward ping-pongs
// between two buffers, as the forward program's buffer plan does; the VJP
// keeps every step's result (the residuals), runs the cotangent chain
// g_{i-1} = g_i W_i^T and writes each weight gradient x_{i-1}^T g_i to its
// own buffer, as the VJP program does. Buffers are allocated once and reused
// by every run, as pool blocks are.
class GemmSequence {
 public:
  GemmSequence(const cpu::CpuGemmProvider& gemm, const std::vector<Tensor>& x, const Tensor& ct)
      : gemm_(gemm), n_(x[0].shape()[1]), x_(x), ct_(ct) {
    for (int i = 0; i < 2; ++i) {
      ping_pong_.push_back(*Tensor::empty({n_, n_}, DType::kFloat64));
      cotangents_.push_back(*Tensor::empty({n_, n_}, DType::kFloat64));
    }
    for (std::size_t i = 1; i < x.size(); ++i) {
      residuals_.push_back(*Tensor::empty({n_, n_}, DType::kFloat64));
      gradients_.push_back(*Tensor::empty({n_, n_}, DType::kFloat64));
    }
  }

  Status forward(const cpu::ParallelContext& ctx) const {
    const double* y = data(x_[0]);
    for (std::size_t i = 1; i < x_.size(); ++i) {
      double* out = data(ping_pong_[i % 2]);
      TENFERRO_TRY(multiply(y, false, data(x_[i]), false, out, ctx));
      y = out;
    }
    return ok_status();
  }

  Status vjp(const cpu::ParallelContext& ctx) const {
    const std::size_t steps = residuals_.size();
    for (std::size_t i = 0; i < steps; ++i) {
      TENFERRO_TRY(multiply(input_of(i), false, data(x_[i + 1]), false, data(residuals_[i]), ctx));
    }
    const double* g = data(ct_);
    for (std::size_t i = steps; i-- > 0;) {
      double* next = data(cotangents_[i % 2]);
      TENFERRO_TRY(multiply(g, false, data(x_[i + 1]), true, next, ctx));             // g W^T
      TENFERRO_TRY(multiply(input_of(i), true, g, false, data(gradients_[i]), ctx));  // x^T g
      g = next;
    }
    return ok_status();
  }

 private:
  static double* data(const Tensor& t) { return static_cast<double*>(t.data()); }
  // The input of step i: x for the first, the residual before it otherwise.
  const double* input_of(std::size_t i) const { return i == 0 ? data(x_[0]) : data(residuals_[i - 1]); }

  // c = op(a) op(b), row-major n x n.
  Status multiply(const double* a, bool transpose_a, const double* b, bool transpose_b, double* c,
                  const cpu::ParallelContext& ctx) const {
    cpu::GemmRequest request;
    request.dtype = DType::kFloat64;
    cpu::GemmProblem& p = request.problem;
    p.m = p.n = p.k = n_;
    p.a = {a, transpose_a ? 1 : n_, transpose_a ? n_ : 1};
    p.b = {b, transpose_b ? 1 : n_, transpose_b ? n_ : 1};
    p.c = {c, n_, 1};
    return gemm_.gemm(request, ctx);
  }

  const cpu::CpuGemmProvider& gemm_;
  std::int64_t n_;
  const std::vector<Tensor>& x_;
  const Tensor& ct_;
  std::vector<Tensor> ping_pong_, cotangents_, residuals_, gradients_;
};

// torch on the same chain, as `y @ W`: the forward under no_grad, and one
// autograd step (record, then torch.autograd.grad over every input with the
// cotangent), alternating; prints {"forward": [s...], "vjp": [s...]}.
constexpr const char* kTorchScript = R"PY(
import json, sys, time
import torch
n, steps, threads, runs = (int(a) for a in sys.argv[1:5])
torch.set_num_threads(threads)
gen = torch.Generator().manual_seed(7)
def uniform(scale):
    return (torch.rand(n, n, dtype=torch.float64, generator=gen) * 2 - 1) * scale
x = uniform(1.0)
ws = [uniform((3.0 / n) ** 0.5) for _ in range(steps)]
ct = uniform(1.0)
leaves = [t.clone().requires_grad_() for t in [x] + ws]
def forward():
    with torch.no_grad():
        y = x
        for w in ws:
            y = y @ w
def vjp():
    y = leaves[0]
    for w in leaves[1:]:
        y = y @ w
    torch.autograd.grad(y, leaves, ct)
out = {'forward': [], 'vjp': []}
forward()
vjp()
for _ in range(runs):
    for name, fn in (('forward', forward), ('vjp', vjp)):
        t0 = time.perf_counter()
        fn()
        out[name].append(time.perf_counter() - t0)
print(json.dumps(out))
)PY";

struct TorchTimes {
  Samples forward, vjp;
};

std::optional<TorchTimes> run_torch(std::int64_t n, int steps, int threads, int runs) {
  const std::string args[] = {std::to_string(n), std::to_string(steps), std::to_string(threads), std::to_string(runs)};
  const std::optional<std::string> text = run_python_peer(kTorchScript, args, threads);
  if (!text) return std::nullopt;
  TorchTimes t;
  try {  // anything but {"forward": [s...], "vjp": [s...]} means no peer
    const nlohmann::json j = nlohmann::json::parse(*text);
    t.forward.seconds = j.at("forward").get<std::vector<double>>();
    t.vjp.seconds = j.at("vjp").get<std::vector<double>>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (t.forward.runs() == 0 || t.vjp.runs() == 0) return std::nullopt;
  return t;
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
    Result<std::shared_ptr<cpu::NativeGemmProvider>> gemm = cpu::NativeGemmProvider::create();
    Result<std::shared_ptr<const cpu::CpuDomainSet>> domains = cli::managed_cpu_domains(threads);
    Result<runtime::Runtime> rt = gemm.ok() && domains.ok()
                                      ? chain_runtime(*gemm, *domains)
                                      : Result<runtime::Runtime>(gemm.ok() ? domains.status() : gemm.status());
    if (!rt.ok()) {
      reporter.progress("ad: " + rt.status().to_string());
      return 1;
    }
    const GemmSequence sequence(**gemm, x, ct);
    Samples sequence_forward, sequence_vjp;
    // Both sequences in one entry of the domain (as a prepared segment).
    auto time_sequences = [&]() -> Status {
      return (*domains)->default_domain().run(
          cpu::ParallelMode::kInner, [&](const cpu::CpuExecutionContext& context) -> Status {
            auto t0 = std::chrono::steady_clock::now();
            TENFERRO_TRY(sequence.forward(context.parallel()));
            auto t1 = std::chrono::steady_clock::now();
            TENFERRO_TRY(sequence.vjp(context.parallel()));
            auto t2 = std::chrono::steady_clock::now();
            sequence_forward.seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
            sequence_vjp.seconds.push_back(std::chrono::duration<double>(t2 - t1).count());
            return ok_status();
          });
    };
    std::optional<TorchTimes> torch;
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
    if (const Status s = time_sequences(); !s.ok()) {  // warm-up
      reporter.progress("ad: gemm sequence: " + s.to_string());
      return 1;
    }
    sequence_forward.seconds.clear();
    sequence_vjp.seconds.clear();
    Samples eager;
    // Interleaved: every round times each program once, then the eager step
    // and the GEMM sequences; torch runs its rounds halfway.
    for (int r = 0; r < runs; ++r) {
      if (r == runs / 2) {
        torch = run_torch(n, steps, threads, runs);
        if (!torch) reporter.progress("ad: no torch peer (python3-torch missing?)");
      }
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
      if (const Status s = time_sequences(); !s.ok()) {
        reporter.progress("ad: gemm sequence: " + s.to_string());
        return 1;
      }
    }
    const double fwd = cases[0].samples.median();
    reporter.add(Case{fmt::format("{}_forward_t{}", tag, threads),
                      fwd,
                      "s",
                      torch ? std::optional<double>(torch->forward.median()) : std::nullopt,
                      torch ? "torch" : "",
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
    if (torch) {
      const double torch_ratio = torch->vjp.median() / torch->forward.median();
      for (const auto& [name, ours] :
           {std::pair{"vjp_all", cases[1].samples.median()}, {"eager_step", eager.median()}}) {
        reporter.add(Case{fmt::format("{}_{}_vs_torch_t{}", tag, name, threads),
                          ours,
                          "s",
                          torch->vjp.median(),
                          "torch_autograd",
                          threads,
                          runs,
                          {{"torch_times_forward", torch_ratio}}});
      }
    }
    reporter.add(Case{fmt::format("{}_gemm_sequence_vjp_t{}", tag, threads),
                      sequence_vjp.median(),
                      "s",
                      3.0 * sequence_forward.median(),
                      "3x_gemm_sequence_forward",
                      threads,
                      runs,
                      {{"times_forward", sequence_vjp.median() / sequence_forward.median()},
                       {"forward_s", sequence_forward.median()}}});
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
