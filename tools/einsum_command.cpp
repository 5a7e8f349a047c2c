// `tenferro einsum`: the main job (einsum_command.h).
#include "einsum_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <time.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// CPU time of the whole process (all threads), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Error invalid(std::string message) { return Error(ErrorCode::kInvalidArgument, ErrorStage::kNone, std::move(message)); }

// The operation-local policy for --path.
Result<einsum::PlanningPolicy> policy_for(const einsum::BenchmarkInstance& instance, std::string& path) {
  using einsum::PlannerKind;
  if (path.empty()) path = instance.opt_flops ? "ref-flops" : "greedy";
  einsum::PlanningPolicy policy;
  if (path == "ref-flops" || path == "ref-size") {
    const auto& ref = path == "ref-flops" ? instance.opt_flops : instance.opt_size;
    if (!ref) {
      return invalid(
          fmt::format("--path {}: instance '{}' has no {} reference path; expected greedy, optimal or "
                      "treesa",
                      path, instance.name, path == "ref-flops" ? "opt_flops" : "opt_size"));
    }
    TENFERRO_ASSIGN_OR_RETURN(
        einsum::ContractionOrder order,
        einsum::ContractionOrder::from_opt_einsum_path(static_cast<std::int32_t>(instance.shapes.size()), ref->pairs));
    policy.planner = PlannerKind::kExplicitPath;
    policy.path = std::move(order);
  } else if (path == "greedy") {
    policy.planner = PlannerKind::kGreedy;
  } else if (path == "optimal") {
    policy.planner = PlannerKind::kOptimal;
  } else if (path == "treesa") {
    policy.planner = PlannerKind::kTreeSA;
  } else {
    return invalid(fmt::format("--path {}: expected ref-flops, ref-size, greedy, optimal or treesa", path));
  }
  return policy;
}

Result<std::shared_ptr<const cpu::CpuGemmProvider>> make_gemm(const std::string& name, int threads) {
  if (name == "native") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  if (name == "openblas") {
    // The serial build runs on the engine's thread; for more threads the
    // pthread build's process-global count is the only control OpenBLAS has.
    cpu::OpenBlasOptions options;
    options.build = threads > 1 ? cpu::OpenBlasBuild::kPthread : cpu::OpenBlasBuild::kSerial;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::ExternalBlasGemmProvider> gemm,
                              cpu::ExternalBlasGemmProvider::load_openblas(options));
    if (threads > 1) TENFERRO_TRY(gemm->set_global_thread_count(threads));
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  if (name == "blis") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::ExternalBlasGemmProvider> gemm,
                              cpu::ExternalBlasGemmProvider::load_blis());
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  return invalid(fmt::format("--gemm {}: expected native, openblas or blis", name));
}

std::vector<Tensor> random_inputs(const einsum::BenchmarkInstance& instance, std::uint64_t seed) {
  std::vector<Tensor> inputs;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t i = 0; i < instance.shapes.size(); ++i) {
    std::mt19937_64 rng(seed * 1000003 + i);
    Tensor t = *Tensor::empty(IntArrayRef(instance.shapes[i]), DType::kFloat64);
    auto* data = static_cast<double*>(t.data());
    for (std::int64_t k = 0; k < t.numel(); ++k) data[k] = uniform(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

double sum_of(const Tensor& t) {
  const auto* data = static_cast<const double*>(t.data());
  double s = 0.0;
  for (std::int64_t i = 0; i < t.numel(); ++i) s += data[i];
  return s;
}

Result<std::shared_ptr<const program::SemanticProgram>> einsum_program(
    const std::shared_ptr<const einsum::EinsumOp>& op, const einsum::BenchmarkInstance& instance) {
  program::ProgramBuilder b;
  std::vector<program::ProgramValue> inputs;
  for (const auto& s : instance.shapes) {
    const program::SymbolicShape shape = program::symbolic_shape(IntArrayRef(s));
    TENFERRO_ASSIGN_OR_RETURN(
        program::ProgramValue v,
        b.add_input(DType::kFloat64, std::span<const program::SymbolicExtent>(shape.data(), shape.size())));
    inputs.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue out, einsum::emit_einsum(b, op, inputs));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, b.freeze({out}));
  return frozen.program;
}

}  // namespace

Result<std::shared_ptr<const cpu::CpuDomainSet>> managed_cpu_domains(int threads) {
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuTopology topology, cpu::CpuTopology::discover());
  const std::vector<int> allowed = topology.allowed_cpus().to_vector();
  if (threads > static_cast<int>(allowed.size())) {
    return invalid(fmt::format("--threads {}: this process may use {} CPUs", threads, allowed.size()));
  }
  cpu::CpuDomainSpec spec;
  spec.id = CpuDomainId(1);
  for (int i = 0; i < threads; ++i) spec.cpus.add(allowed[static_cast<std::size_t>(i)]);
  spec.thread_budget = threads;
  const cpu::CpuDomainSpec specs[] = {spec};
  return cpu::CpuDomainSet::create_managed(topology, specs);
}

double EinsumRunResult::median_seconds() const { return median_of(seconds); }
double EinsumRunResult::median_cpu_seconds() const { return median_of(cpu_seconds); }

double EinsumRunResult::min_seconds() const {
  return seconds.empty() ? 0.0 : *std::min_element(seconds.begin(), seconds.end());
}

einsum::BenchmarkInstance builtin_einsum_instance() {
  // The norm-like contraction of an 8-site matrix product state with an
  // 8-site operator chain: 24 tensors, bond dimension 96, physical 4.
  einsum::BenchmarkInstance inst;
  inst.name = "builtin_mps_expectation_8";
  const int sites = 8;
  const std::int64_t bond = 96, mpo = 4, phys = 4;
  // Labels: ket bonds a.., bra bonds A.., operator bonds α.., physical p/q.
  const auto label = [](int base, int i) {
    std::string s;
    const char32_t cp = static_cast<char32_t>(base + i);
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  std::vector<std::string> terms;
  for (int i = 0; i < sites; ++i) {
    std::string t;  // ket site i: [left bond, physical, right bond]
    if (i > 0) t += label('a', i - 1);
    t += label(0x3B1, i);  // physical (ket side), Greek
    if (i + 1 < sites) t += label('a', i);
    terms.push_back(t);
    std::vector<std::int64_t> shape;
    if (i > 0) shape.push_back(bond);
    shape.push_back(phys);
    if (i + 1 < sites) shape.push_back(bond);
    inst.shapes.push_back(shape);
  }
  for (int i = 0; i < sites; ++i) {
    std::string t;  // operator site i: [left, ket physical, bra physical, right]
    if (i > 0) t += label('A', i - 1);
    t += label(0x3B1, i);
    t += label(0x430, i);  // physical (bra side), Cyrillic
    if (i + 1 < sites) t += label('A', i);
    terms.push_back(t);
    std::vector<std::int64_t> shape;
    if (i > 0) shape.push_back(mpo);
    shape.push_back(phys);
    shape.push_back(phys);
    if (i + 1 < sites) shape.push_back(mpo);
    inst.shapes.push_back(shape);
  }
  for (int i = 0; i < sites; ++i) {
    std::string t;  // bra site i
    if (i > 0) t += label('q', i - 1);
    t += label(0x430, i);
    if (i + 1 < sites) t += label('q', i);
    terms.push_back(t);
    std::vector<std::int64_t> shape;
    if (i > 0) shape.push_back(bond);
    shape.push_back(phys);
    if (i + 1 < sites) shape.push_back(bond);
    inst.shapes.push_back(shape);
  }
  for (std::size_t i = 0; i < terms.size(); ++i) inst.format_string += (i > 0 ? "," : "") + terms[i];
  inst.format_string += "->";
  return inst;
}

Result<EinsumRunResult> run_einsum_instance(const einsum::BenchmarkInstance& instance,
                                            const EinsumRunOptions& options) {
  if (options.threads < 1) return invalid(fmt::format("--threads {}: expected at least 1", options.threads));
  if (options.runs < 1) return invalid(fmt::format("--runs {}: expected at least 1", options.runs));
  if (options.mode != "eager" && options.mode != "graph") {
    return invalid(fmt::format("--mode {}: expected eager or graph", options.mode));
  }
  EinsumRunResult result;
  result.instance = instance.name;
  result.tensors = instance.shapes.size();
  result.path = options.path;
  TENFERRO_ASSIGN_OR_RETURN(einsum::PlanningPolicy policy, policy_for(instance, result.path));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                            einsum::EinsumOp::create(instance.format_string, policy));
  const std::vector<IntArrayRef> shapes = instance.shape_refs();
  TENFERRO_ASSIGN_OR_RETURN(einsum::Network network, op->bind(shapes, instance.dtype));
  TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionTree tree, einsum::plan(network, policy));
  result.planner = std::string(einsum::to_string(tree.stats().planner));
  result.plan_seconds = tree.stats().seconds;
  result.log10_flops = tree.cost().log10_flops();
  result.log2_size = tree.cost().log2_max_intermediate();
  result.multiply_adds = tree.cost().multiply_adds;
  if (options.plan_only) {
    if (options.explain) result.explain = tree.explain();
    return result;
  }
  if (instance.dtype != DType::kFloat64) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "instance '{}' is {}; tenferro einsum runs float64 instances", instance.name, instance.dtype);
  }

  // Execution contracts along the planned order, so the search is not repeated.
  einsum::PlanningPolicy fixed;
  fixed.planner = einsum::PlannerKind::kExplicitPath;
  fixed.path = tree.order();
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> run_op,
                            einsum::EinsumOp::create(instance.format_string, fixed));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const cpu::CpuGemmProvider> gemm, make_gemm(options.gemm, options.threads));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<einsum::CpuEinsumExecutor> executor,
                            einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(gemm)));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const cpu::CpuDomainSet> domains, managed_cpu_domains(options.threads));
  runtime::RuntimeBuilder builder;
  cpu::CpuEngineOptions cpu_options;
  cpu_options.gemm_provider = gemm;
  cpu_options.domains = domains;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, cpu_options));
  builder.add_extension_module(einsum::cpu_extension_module(cpu_options.id, executor));
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  const std::vector<Tensor> inputs = random_inputs(instance, options.seed);

  Tensor out;
  if (options.mode == "eager") {
    runtime::EagerContext ctx = rt.on();
    const auto first = Clock::now();
    TENFERRO_ASSIGN_OR_RETURN(out, einsum::einsum(ctx, run_op, inputs));
    result.prepare_seconds = seconds_since(first);
    for (int r = 0; r < options.runs; ++r) {
      const double cpu = process_cpu_seconds();
      const auto start = Clock::now();
      TENFERRO_ASSIGN_OR_RETURN(out, einsum::einsum(ctx, run_op, inputs));
      result.seconds.push_back(seconds_since(start));
      result.cpu_seconds.push_back(process_cpu_seconds() - cpu);
    }
  } else {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const program::SemanticProgram> program,
                              einsum_program(run_op, instance));
    const auto start = Clock::now();
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::PreparedProgram> prepared,
                              rt.prepare_for(program, runtime::InputSignature::of(inputs)));
    result.prepare_seconds = seconds_since(start);
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList warm, rt.run_prepared(*prepared, inputs));
    for (int r = 0; r < options.runs; ++r) {
      const double cpu = process_cpu_seconds();
      const auto t0 = Clock::now();
      TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList outs, rt.run_prepared(*prepared, inputs));
      result.seconds.push_back(seconds_since(t0));
      result.cpu_seconds.push_back(process_cpu_seconds() - cpu);
      out = outs[0];
    }
  }
  result.checksum = sum_of(out);
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::ExecutionPlan> plan,
                            executor->prepare(*run_op, shapes, DType::kFloat64));
  result.workspace_bytes = plan->workspace_bytes();
  result.planned_copies = plan->planned_copies();
  if (options.explain) result.explain = plan->explain();
  return result;
}

void add_einsum_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("einsum", "Plan and contract an einsum instance (the main job)");
  struct State {
    std::string file;
    EinsumRunOptions options;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  cmd->add_option("file", state->file, "Instance JSON (../shared/bench/instances format); default: built-in example");
  cmd->add_option("--path", state->options.path, "Contraction path: ref-flops, ref-size, greedy, optimal, treesa")
      ->check(CLI::IsMember({"ref-flops", "ref-size", "greedy", "optimal", "treesa"}));
  cmd->add_option("--threads", state->options.threads, "Worker threads")->check(CLI::Range(1, 4096));
  cmd->add_option("--gemm", state->options.gemm, "GEMM provider: native, openblas, blis")
      ->check(CLI::IsMember({"native", "openblas", "blis"}));
  cmd->add_option("--mode", state->options.mode, "eager (one fast-path call) or graph (prepared program)")
      ->check(CLI::IsMember({"eager", "graph"}));
  cmd->add_option("--runs", state->options.runs, "Timed repetitions")->check(CLI::Range(1, 1000000));
  cmd->add_option("--seed", state->options.seed, "Seed of the random float64 inputs");
  cmd->add_flag("--plan-only", state->options.plan_only, "Plan and report the path without contracting");
  cmd->add_flag("--explain", state->options.explain, "Print the contraction tree and execution plan");
  cmd->add_flag("--json", state->json, "Print one JSON object");
  cmd->callback([state] {
    einsum::BenchmarkInstance instance;
    if (state->file.empty()) {
      instance = builtin_einsum_instance();
    } else {
      Result<einsum::BenchmarkInstance> loaded = einsum::load_benchmark_instance(state->file);
      if (!loaded.ok()) {
        std::fprintf(stderr, "tenferro einsum: %s\n", loaded.status().to_string().c_str());
        throw CLI::RuntimeError(1);
      }
      instance = std::move(*loaded);
    }
    Result<EinsumRunResult> r = run_einsum_instance(instance, state->options);
    if (!r.ok()) {
      std::fprintf(stderr, "tenferro einsum: %s\n", r.status().to_string().c_str());
      throw CLI::RuntimeError(1);
    }
    const EinsumRunOptions& o = state->options;
    const double flops = 2.0 * r->multiply_adds;
    if (state->json) {
      nlohmann::json j;
      j["instance"] = r->instance;
      j["tensors"] = r->tensors;
      j["path"] = r->path;
      j["planner"] = r->planner;
      j["log10_flops"] = r->log10_flops;
      j["log2_size"] = r->log2_size;
      j["plan_seconds"] = r->plan_seconds;
      j["threads"] = o.threads;
      j["gemm"] = o.gemm;
      j["mode"] = o.mode;
      j["plan_only"] = o.plan_only;
      if (!o.plan_only) {
        j["prepare_seconds"] = r->prepare_seconds;
        j["median_seconds"] = r->median_seconds();
        j["min_seconds"] = r->min_seconds();
        j["median_cpu_seconds"] = r->median_cpu_seconds();
        j["runs"] = r->seconds.size();
        j["seconds"] = r->seconds;
        j["effective_gflops"] = flops / r->median_seconds() * 1e-9;
        j["workspace_bytes"] = r->workspace_bytes;
        j["planned_copies"] = r->planned_copies;
        j["checksum"] = r->checksum;
      } else {
        j["runs"] = 0;
      }
      if (o.explain) j["explain"] = r->explain;
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    if (o.explain) std::printf("%s", r->explain.c_str());
    std::printf("instance   %s (%zu tensors)\n", r->instance.c_str(), r->tensors);
    std::printf("path       %s (planner %s): log10 flops %.4f, log2 largest intermediate %.2f, planned in %.3f ms\n",
                r->path.c_str(), r->planner.c_str(), r->log10_flops, r->log2_size, r->plan_seconds * 1e3);
    if (o.plan_only) return;
    std::printf("engine     native einsum, gemm %s, %d thread%s, %s mode; workspace %.3g MB, %lld planned copies\n",
                o.gemm.c_str(), o.threads, o.threads == 1 ? "" : "s", o.mode.c_str(),
                static_cast<double>(r->workspace_bytes) / 1e6, static_cast<long long>(r->planned_copies));
    std::printf("time       median %.6g s, min %.6g s over %zu runs (first call %.6g s); %.2f GFLOP/s\n",
                r->median_seconds(), r->min_seconds(), r->seconds.size(), r->prepare_seconds,
                flops / r->median_seconds() * 1e-9);
    std::printf("checksum   %.17g\n", r->checksum);
  });
}

}  // namespace tenferro::cli
