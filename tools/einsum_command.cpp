// `tenferro einsum`: the main job (einsum_command.h, docs/cli.md).
#include "einsum_command.h"

#include "einsum_slicing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <type_traits>

#include <time.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_values.h"
#include "npy_io.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/network.h"
#include "tenferro/einsum/subscripts.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/shape.h"

namespace tenferro::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

template <class T>
constexpr bool kIsComplex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <class T>
constexpr bool kIsInexact = std::is_floating_point_v<T> || kIsComplex<T>;
template <class T>
constexpr bool kIsNumber = kIsInexact<T> || (std::is_integral_v<T> && !std::is_same_v<T, bool>);

// numpy's result type of two of the six .npy dtypes: int64 when either
// integer is; an integer with a float is float64 (complex128 with a
// complex); among floats, complex when either is, double precision when
// either is.
DType promote(DType a, DType b) {
  if (is_integer(a) && is_integer(b)) return a == DType::kInt64 || b == DType::kInt64 ? DType::kInt64 : DType::kInt32;
  const bool complex = is_complex(a) || is_complex(b);
  const bool wide =
      is_integer(a) || is_integer(b) || real_dtype(a) == DType::kFloat64 || real_dtype(b) == DType::kFloat64;
  return complex ? (wide ? DType::kComplex128 : DType::kComplex64) : (wide ? DType::kFloat64 : DType::kFloat32);
}

// Converts the elements at `in` (element strides) in row-major order into
// dense `out`; D is never narrower than S (promote).
template <class S, class D>
void convert_strided(const S* in, D* out, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides) {
  const auto rank = static_cast<std::ptrdiff_t>(shape.size());
  Dims index(shape.size(), 0);
  std::int64_t offset = 0;
  const std::int64_t n = numel_unchecked(shape);
  for (std::int64_t k = 0; k < n; ++k) {
    if constexpr (kIsComplex<D> && kIsComplex<S>) {
      using R = typename D::value_type;
      out[k] = D(static_cast<R>(in[offset].real()), static_cast<R>(in[offset].imag()));
    } else if constexpr (kIsComplex<D>) {
      out[k] = D(static_cast<typename D::value_type>(in[offset]));
    } else {
      out[k] = static_cast<D>(in[offset]);
    }
    for (std::ptrdiff_t d = rank - 1; d >= 0; --d) {
      const auto u = static_cast<std::size_t>(d);
      if (++index[u] < shape[u]) {
        offset += strides[u];
        break;
      }
      offset -= strides[u] * (shape[u] - 1);
      index[u] = 0;
    }
  }
}

// A row-major copy of `src` (any strides) converted to `to`.
Result<Tensor> convert_copy(const Tensor& src, DType to) {
  TENFERRO_ASSIGN_OR_RETURN(Tensor dst, Tensor::empty(src.shape(), to));
  visit_dtype(src.dtype(), [&]<class S>(S) {
    visit_dtype(to, [&]<class D>(D) {
      if constexpr (kIsNumber<S> && kIsNumber<D> && (kIsComplex<D> || !kIsComplex<S>)) {
        convert_strided(static_cast<const S*>(src.data()), static_cast<D*>(dst.data()), src.shape(), src.strides());
      }
    });
  });
  return dst;
}

Result<std::shared_ptr<const program::SemanticProgram>> einsum_program(
    const std::shared_ptr<const einsum::EinsumOp>& op, const einsum::BenchmarkInstance& instance) {
  program::ProgramBuilder b;
  std::vector<program::ProgramValue> inputs;
  for (const auto& s : instance.shapes) {
    const program::SymbolicShape shape = program::symbolic_shape(IntArrayRef(s));
    TENFERRO_ASSIGN_OR_RETURN(
        program::ProgramValue v,
        b.add_input(instance.dtype, std::span<const program::SymbolicExtent>(shape.data(), shape.size())));
    inputs.push_back(v);
  }
  TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue out, einsum::emit_einsum(b, op, inputs));
  TENFERRO_ASSIGN_OR_RETURN(program::FrozenProgram frozen, b.freeze({out}));
  return frozen.program;
}

}  // namespace

Result<einsum::PlanningPolicy> policy_for(const einsum::BenchmarkInstance& instance, std::string& path) {
  using einsum::PlannerKind;
  if (path.empty()) {
    const bool nested = instance.format_string.find('(') != std::string::npos;
    path = nested ? "nested" : instance.opt_flops ? "ref-flops" : "greedy";
  }
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
  } else if (path == "nested") {
    policy.planner = PlannerKind::kNested;
  } else {
    return invalid(fmt::format("--path {}: expected ref-flops, ref-size, greedy, optimal, treesa or nested", path));
  }
  return policy;
}

Result<std::vector<Tensor>> random_inputs(const einsum::BenchmarkInstance& instance, std::uint64_t seed) {
  std::vector<Tensor> inputs;
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (std::size_t i = 0; i < instance.shapes.size(); ++i) {
    std::mt19937_64 rng(seed * 1000003 + i);
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(IntArrayRef(instance.shapes[i]), DType::kFloat64));
    auto* data = static_cast<double*>(t.data());
    for (std::int64_t k = 0; k < t.numel(); ++k) data[k] = uniform(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

Result<std::shared_ptr<const cpu::CpuDomainSet>> managed_cpu_domains(int threads) {
  if (threads < 1) return invalid(fmt::format("--threads {}: expected at least 1", threads));
  return cpu::make_managed_domains(threads);
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

Result<EinsumRunResult> run_einsum_instance(const einsum::BenchmarkInstance& instance, const EinsumRunOptions& options,
                                            std::span<const Tensor> given) {
  if (options.threads < 1) return invalid(fmt::format("--threads {}: expected at least 1", options.threads));
  if (options.runs < 0) return invalid(fmt::format("--runs {}: expected at least 0", options.runs));
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
  if (!given.empty()) {
    if (given.size() != instance.shapes.size()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "instance '{}' has {} operands, found {} inputs", instance.name, instance.shapes.size(),
                        given.size());
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (!std::ranges::equal(given[i].shape(), instance.shapes[i])) {
        return make_error(
            ErrorCode::kShapeMismatch, ErrorStage::kNone, "input {}: expected shape {} of instance '{}', found {}", i,
            shape_to_string(IntArrayRef(instance.shapes[i])), instance.name, shape_to_string(given[i].shape()));
      }
      if (given[i].dtype() != instance.dtype) {
        return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "input {}: expected {}, found {}", i,
                          instance.dtype, given[i].dtype());
      }
    }
  } else if (instance.dtype != DType::kFloat64) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "instance '{}' is {}; tenferro einsum runs float64 instances on random data (give --inputs DIR "
                      "for other dtypes)",
                      instance.name, instance.dtype);
  }

  // Execution contracts along the planned order, so the search is not repeated.
  einsum::PlanningPolicy fixed;
  fixed.planner = einsum::PlannerKind::kExplicitPath;
  fixed.path = tree.order();
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> run_op,
                            einsum::EinsumOp::create(instance.format_string,
                                                     // Parenthesised subscripts accept only their own order.
                                                     policy.planner == einsum::PlannerKind::kNested ? policy : fixed));
  TENFERRO_ASSIGN_OR_RETURN(std::vector<std::string> gemm, cpu::parse_gemm_candidates(options.gemm));
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu,
                            cpu::make_cpu_runtime({.threads = options.threads, .gemm = gemm, .linalg = false}));
  runtime::Runtime& rt = cpu.runtime;
  const std::shared_ptr<einsum::CpuEinsumExecutor>& executor = cpu.einsum;
  if (cpu.gemm != nullptr) result.gemm_provider = std::string(cpu.gemm->name());
  std::vector<Tensor> random;
  if (given.empty()) {
    TENFERRO_ASSIGN_OR_RETURN(random, random_inputs(instance, options.seed));
  }
  const std::span<const Tensor> inputs = given.empty() ? std::span<const Tensor>(random) : given;

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
    // The first call is preparation and the first run (docs/cli.md), as in
    // eager mode: timing prepare_for alone left the contraction out.
    TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList first, rt.run_prepared(*prepared, inputs));
    result.prepare_seconds = seconds_since(start);
    out = first[0];
    for (int r = 0; r < options.runs; ++r) {
      const double cpu = process_cpu_seconds();
      const auto t0 = Clock::now();
      TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList outs, rt.run_prepared(*prepared, inputs));
      result.seconds.push_back(seconds_since(t0));
      result.cpu_seconds.push_back(process_cpu_seconds() - cpu);
      out = outs[0];
    }
  }
  const std::complex<double> checksum = sum_of(out);
  result.checksum = checksum.real();
  result.checksum_imag = checksum.imag();
  result.output = out;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::ExecutionPlan> plan,
                            executor->prepare(*run_op, shapes, instance.dtype));
  result.workspace_bytes = plan->workspace_bytes();
  result.planned_copies = plan->planned_copies();
  if (options.explain) {
    // The tree as the chosen planner made it (the plan's own was re-planned
    // along that path, "planner path"), then the execution.
    const std::string executed = plan->explain();
    const std::size_t execution = executed.find("\nexecution:");
    result.explain = execution == std::string::npos ? executed : tree.explain() + executed.substr(execution + 1);
  }
  return result;
}

namespace {

// Note [einsum arguments]
// The first positional argument names an instance file when it ends in
// ".json" and contains neither ',' nor "->" (subscripts need one of them for
// more than one operand or an explicit output, and '.' is not a label);
// otherwise it is einsum subscripts and the remaining arguments are its
// operand files, one per operand. No argument: the built-in example. The
// instance forms take their operands from --inputs DIR, as DIR/0.npy,
// DIR/1.npy, ... (operand index, no padding), or use random float64 data.
bool is_instance_file(std::string_view arg) {
  return arg.size() > 5 && arg.ends_with(".json") && arg.find(',') == std::string_view::npos &&
         arg.find("->") == std::string_view::npos;
}

struct EinsumCommand {
  std::vector<std::string> args;
  std::string unused_positional;  // Note [Operands after --]
  std::string output;
  std::string inputs_dir;
  EinsumRunOptions options;
  bool json = false;
  bool runs_given = false;
  bool seed_given = false;
  EinsumSlicingOptions slicing;
};

// What to contract: an instance and its operands (none: random data).
struct EinsumJob {
  einsum::BenchmarkInstance instance;
  bool from_subscripts = false;
  std::vector<std::string> files;
  std::vector<Tensor> inputs;
};

std::string operand_file(const std::string& dir, std::size_t i) {
  return (std::filesystem::path(dir) / fmt::format("{}.npy", i)).string();
}

Result<std::vector<Tensor>> read_operands(const std::vector<std::string>& files) {
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    Result<Tensor> t = npy::read_npy(files[i]);
    if (!t.ok())
      return Error(t.status().code(), ErrorStage::kNone, fmt::format("operand {}: {}", i, t.status().message()));
    inputs.push_back(std::move(*t));
  }
  return inputs;
}

// DIR/n.npy beyond the n operands is not read: say so (a subscript short
// of an operand would otherwise contract the wrong network silently).
void note_unread_inputs(const std::string& dir, std::size_t operands) {
  const std::string next = operand_file(dir, operands);
  std::error_code ec;
  if (std::filesystem::exists(next, ec)) {
    std::fprintf(stderr, "tenferro einsum: note: %s is not read (the contraction has %zu operand%s)\n", next.c_str(),
                 operands, operands == 1 ? "" : "s");
  }
}

Result<EinsumJob> job_for(const EinsumCommand& c) {
  EinsumJob job;
  if (c.args.empty() || is_instance_file(c.args[0])) {
    if (c.args.size() > 1) {
      return invalid(fmt::format("instance file '{}' takes its operands from --inputs DIR; found extra argument '{}'",
                                 c.args[0], c.args[1]));
    }
    if (c.args.empty()) {
      job.instance = builtin_einsum_instance();
    } else {
      TENFERRO_ASSIGN_OR_RETURN(job.instance, einsum::load_benchmark_instance(c.args[0]));
    }
    if (c.inputs_dir.empty()) return job;
    for (std::size_t i = 0; i < job.instance.shapes.size(); ++i) job.files.push_back(operand_file(c.inputs_dir, i));
    note_unread_inputs(c.inputs_dir, job.instance.shapes.size());
    TENFERRO_ASSIGN_OR_RETURN(job.inputs, read_operands(job.files));
    for (std::size_t i = 0; i < job.inputs.size(); ++i) {
      if (!std::ranges::equal(job.inputs[i].shape(), job.instance.shapes[i])) {
        return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                          "operand {} ({}): expected shape {} from instance '{}', found {}", i, job.files[i],
                          shape_to_string(IntArrayRef(job.instance.shapes[i])), job.instance.name,
                          shape_to_string(job.inputs[i].shape()));
      }
    }
  } else {
    const std::string& text = c.args[0];
    Result<einsum::Subscripts> subscripts = einsum::Subscripts::parse(text);
    if (!subscripts.ok()) {
      // The parser's stage (compile: Note [Einsum binding errors are
      // compile-stage]), as every binding reports malformed subscripts.
      return Error(subscripts.status().code(), subscripts.status().stage(),
                   fmt::format("'{}' is neither einsum subscripts ({}) nor an instance file (a name ending in .json)",
                               text, subscripts.status().message()));
    }
    const auto operands = static_cast<std::size_t>(subscripts->num_operands());
    job.from_subscripts = true;
    job.files.assign(c.args.begin() + 1, c.args.end());
    if (!c.inputs_dir.empty()) {
      if (!job.files.empty()) return invalid("give the operands as .npy arguments or as --inputs DIR, not both");
      for (std::size_t i = 0; i < operands; ++i) job.files.push_back(operand_file(c.inputs_dir, i));
      note_unread_inputs(c.inputs_dir, operands);
    }
    if (job.files.size() != operands || operands == 0) {
      return invalid(fmt::format("subscripts '{}' have {} operand{}, found {} .npy file{}", text, operands,
                                 operands == 1 ? "" : "s", job.files.size(), job.files.size() == 1 ? "" : "s"));
    }
    TENFERRO_ASSIGN_OR_RETURN(job.inputs, read_operands(job.files));
    job.instance.name = text;
    job.instance.format_string = text;
    for (const Tensor& t : job.inputs) job.instance.shapes.emplace_back(t.shape().begin(), t.shape().end());
    // The operands' shapes against the subscripts, with the files named
    // (einsum's own message gives operand numbers).
    SmallVector<IntArrayRef, 8> shapes;
    for (const Tensor& t : job.inputs) shapes.push_back(t.shape());
    if (Result<einsum::Network> bound =
            einsum::Network::bind(text, std::span<const IntArrayRef>(shapes.data(), shapes.size()));
        !bound.ok()) {
      std::string files;
      for (std::size_t i = 0; i < job.files.size(); ++i)
        files += fmt::format("{}{} = {}", i ? ", " : "", i, job.files[i]);
      return Error(bound.status().code(), bound.status().stage(),  // compile, as in every binding
                   fmt::format("{} (operands {})", bound.status().message(), files));
    }
  }
  // Mixed dtypes are promoted as numpy does; einsum runs in one dtype.
  DType dtype = job.inputs.front().dtype();
  for (const Tensor& t : job.inputs) dtype = promote(dtype, t.dtype());
  for (Tensor& t : job.inputs) {
    if (t.dtype() != dtype) {
      TENFERRO_ASSIGN_OR_RETURN(t, convert_copy(t, dtype));
    }
  }
  job.instance.dtype = dtype;
  return job;
}

void print_report(const EinsumCommand& c, const EinsumJob& job, const EinsumRunOptions& o, const EinsumRunResult& r) {
  const double flops = 2.0 * r.multiply_adds;
  const bool timed = !r.seconds.empty();
  if (c.json) {
    nlohmann::json j;
    j["instance"] = r.instance;
    j["tensors"] = r.tensors;
    j["dtype"] = std::string(to_string(job.instance.dtype));
    if (!job.inputs.empty()) j["inputs"] = job.files;
    j["path"] = r.path;
    j["planner"] = r.planner;
    j["log10_flops"] = r.log10_flops;
    j["log2_size"] = r.log2_size;
    j["plan_seconds"] = r.plan_seconds;
    j["threads"] = o.threads;
    j["gemm"] = o.gemm;
    if (!r.gemm_provider.empty()) j["gemm_provider"] = r.gemm_provider;
    j["mode"] = o.mode;
    j["plan_only"] = o.plan_only;
    j["runs"] = r.seconds.size();
    if (!o.plan_only) {
      j["prepare_seconds"] = r.prepare_seconds;
      if (timed) {
        j["median_seconds"] = r.median_seconds();
        j["min_seconds"] = r.min_seconds();
        j["median_cpu_seconds"] = r.median_cpu_seconds();
        j["effective_gflops"] = flops / r.median_seconds() * 1e-9;
      }
      j["seconds"] = r.seconds;
      j["workspace_bytes"] = r.workspace_bytes;
      j["planned_copies"] = r.planned_copies;
      j["output_shape"] = std::vector<std::int64_t>(r.output.shape().begin(), r.output.shape().end());
      j["checksum"] = r.checksum;
      if (is_complex(r.output.dtype())) j["checksum_imag"] = r.checksum_imag;
      if (!c.output.empty()) j["output"] = c.output;
    }
    if (o.explain) j["explain"] = r.explain;
    // replace: a file name need not be UTF-8 (a strict dump throws).
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  if (o.explain) std::printf("%s", r.explain.c_str());
  std::printf("instance   %s (%zu tensors, %s%s)\n", r.instance.c_str(), r.tensors,
              std::string(to_string(job.instance.dtype)).c_str(), job.inputs.empty() ? ", random data" : "");
  std::printf("path       %s (planner %s): log10 flops %.4f, log2 largest intermediate %.2f, planned in %.3f ms\n",
              r.path.c_str(), r.planner.c_str(), r.log10_flops, r.log2_size, r.plan_seconds * 1e3);
  if (o.plan_only) return;
  // The GEMM that ran, and the candidates when they were more than it.
  const std::string gemm = r.gemm_provider.empty() || r.gemm_provider == o.gemm
                               ? o.gemm
                               : fmt::format("{} (of candidates {})", r.gemm_provider, o.gemm);
  std::printf("engine     native einsum, gemm %s, %d thread%s, %s mode; workspace %.3g MB, %lld planned copies\n",
              gemm.c_str(), o.threads, o.threads == 1 ? "" : "s", o.mode.c_str(),
              static_cast<double>(r.workspace_bytes) / 1e6, static_cast<long long>(r.planned_copies));
  if (timed) {
    std::printf("time       median %.6g s, min %.6g s over %zu runs (first call %.6g s); %.2f GFLOP/s\n",
                r.median_seconds(), r.min_seconds(), r.seconds.size(), r.prepare_seconds,
                flops / r.median_seconds() * 1e-9);
  } else {
    std::printf("time       %.6g s for one call, planning and preparation included (--runs N to time N more)\n",
                r.prepare_seconds);
  }
  std::printf("output     %s %s%s%s\n", std::string(to_string(r.output.dtype())).c_str(),
              shape_to_string(r.output.shape()).c_str(), c.output.empty() ? "" : " written to ", c.output.c_str());
  if (is_complex(r.output.dtype())) {
    std::printf("checksum   %.17g %+.17gi\n", r.checksum, r.checksum_imag);
  } else {
    std::printf("checksum   %.17g\n", r.checksum);
  }
}

// `printed` is set when the failure was printed already (Note [One report
// per job] in einsum_slicing.h).
Status run_command(const EinsumCommand& c, bool& printed) {
  if (!c.output.empty() && c.options.plan_only) {
    return invalid(fmt::format("-o {}: --plan-only contracts nothing to write", c.output));
  }
  // A sliced run checks -o on the reporting rank only (run_sliced_einsum).
  const Status output_ok = c.slicing.requested() || c.output.empty() ? ok_status() : check_output_directory(c.output);
  Result<EinsumJob> job = output_ok.ok() ? job_for(c) : Result<EinsumJob>(output_ok);
  EinsumRunOptions options = c.options;
  // Contracting user data is one call unless timing was asked for.
  if (job.ok() && job->from_subscripts && !c.runs_given) options.runs = 0;
  if (job.ok() && !job->inputs.empty() && c.seed_given) {
    std::fprintf(stderr, "tenferro einsum: note: --seed is not used (the operands come from .npy files)\n");
  }
  if (c.slicing.requested()) {  // einsum_slicing.h: a failure to read the operands is agreed over the ranks
    const EinsumJob none;
    const EinsumJob& j = job.ok() ? *job : none;
    TENFERRO_ASSIGN_OR_RETURN(SlicedEinsumOutcome sliced, run_sliced_einsum(j.instance, j.inputs, options, c.slicing,
                                                                            c.output, c.json, job.status(), &printed));
    return sliced.reporting && !c.output.empty() ? npy::write_npy(c.output, sliced.output) : ok_status();
  }
  TENFERRO_TRY(job.status());
  TENFERRO_ASSIGN_OR_RETURN(EinsumRunResult r, run_einsum_instance(job->instance, options, job->inputs));
  if (!c.output.empty()) TENFERRO_TRY(npy::write_npy(c.output, r.output));
  print_report(c, *job, options, r);
  return ok_status();
}

// Leaves the hidden positional of Note [Operands after --] out of the
// usage line (CLI11 printed it as "[]").
class HiddenPositionalFormatter final : public CLI::Formatter {
 public:
  std::string make_option_usage(const CLI::Option* opt) const override {
    return opt->get_group().empty() ? std::string() : CLI::Formatter::make_option_usage(opt);
  }
};

}  // namespace

void add_einsum_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "einsum",
      "Contract .npy operands (SUBSCRIPTS A.npy B.npy ... [-o OUT.npy]), an instance file (FILE.json [--inputs DIR]) "
      "or the built-in example (no arguments); see docs/cli.md");
  auto state = std::make_shared<EinsumCommand>();
  add_einsum_slicing_options(*cmd, state->slicing);
  cmd->add_option("args", state->args,
                  "SUBSCRIPTS followed by one .npy file per operand, or an instance FILE.json "
                  "(../shared/bench/instances format); none: the built-in example");
  // Note [Operands after --]: CLI11 hands a `--` back to the top-level
  // parser (which refuses what follows) once every positional option holds
  // its minimum, so `einsum "ij->ji" -- a.npy` failed. This empty, hidden
  // positional is never filled (`args` takes every value), so the `--`
  // stays here and what follows it goes to `args`.
  cmd->add_option("operands_after_separator", state->unused_positional)->group("");
  cmd->formatter(std::make_shared<HiddenPositionalFormatter>());
  cmd->add_option("-o,--output", state->output, "Write the result to this .npy file (row-major, native byte order)")
      ->check(non_empty("a file name"));
  cmd->add_option("--inputs", state->inputs_dir, "Read operand i from DIR/i.npy (0.npy, 1.npy, ...)")
      ->check(non_empty("a directory"));
  cmd->add_option("--path", state->options.path,
                  "Contraction path: ref-flops, ref-size, greedy, optimal, treesa, nested")
      ->check(CLI::IsMember({"ref-flops", "ref-size", "greedy", "optimal", "treesa", "nested"}));
  cmd->add_option("--threads", state->options.threads,
                  "Worker threads (default 1; at most the CPUs this process may use)")
      ->check([](const std::string& value) {
        // The runtime's own message offers 0, which means all. Under mpirun
        // (Open MPI sets OMPI_COMM_WORLD_SIZE) each rank is bound to its own
        // cores by default: say how to give a rank more.
        const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
        return integer_error(value, 1, allowed_cpus(),
                             under_mpirun ? " (the CPUs this process may use; mpirun binds each rank to its own "
                                            "cores: --bind-to none or --map-by slot:PE=N gives a rank more)"
                                          : " (the CPUs this process may use)");
      });
  cmd->add_option("--gemm", state->options.gemm,
                  "GEMM provider candidates in order, e.g. openblas,native (names: native, openblas, blis)")
      ->check([](const std::string& list) {
        Result<std::vector<std::string>> parsed = cpu::parse_gemm_candidates(list);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      });
  cmd->add_option("--mode", state->options.mode, "eager (one fast-path call) or graph (prepared program)")
      ->check(CLI::IsMember({"eager", "graph"}));
  cmd->add_option("--runs", state->options.runs,
                  "Timed repetitions after the first call (default 5; 0 with SUBSCRIPTS: the first call only)")
      ->check([](const std::string& value) { return integer_error(value, 0, 1000000); });
  cmd->add_option("--seed", state->options.seed, "Seed of the random float64 inputs (default 0)")
      ->check([](const std::string& value) {
        return integer_error<std::uint64_t>(value, 0, std::numeric_limits<std::uint64_t>::max());
      });
  cmd->add_flag("--plan-only", state->options.plan_only, "Plan and report the path without contracting");
  cmd->add_flag("--explain", state->options.explain, "Print the contraction tree and execution plan");
  cmd->add_flag("--json", state->json, "Print one JSON object");
  cmd->callback([state, cmd] {
    state->runs_given = cmd->count("--runs") > 0;
    state->seed_given = cmd->count("--seed") > 0;
    bool printed = false;
    const Status status = run_command(*state, printed);
    if (!status.ok()) {
      if (!printed) std::fprintf(stderr, "tenferro einsum: %s\n", status.to_string().c_str());
      throw CLI::RuntimeError(1);
    }
  });
}

int allowed_cpus() {
  Result<cpu::CpuTopology> topology = cpu::CpuTopology::discover();
  return topology.ok() ? static_cast<int>(topology->allowed_cpus().count()) : 1;
}

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

std::complex<double> sum_of(const Tensor& t) {
  Tensor dense = t;
  if (!t.is_contiguous()) {
    Result<Tensor> copy = convert_copy(t, t.dtype());
    if (!copy.ok()) return std::nan("");
    dense = std::move(*copy);
  }
  std::complex<double> s = 0.0;
  visit_dtype(dense.dtype(), [&]<class T>(T) {
    if constexpr (kIsNumber<T>) {
      const T* p = static_cast<const T*>(dense.data());
      for (std::int64_t i = 0; i < dense.numel(); ++i) {
        if constexpr (kIsComplex<T>) {
          s += std::complex<double>(p[i]);
        } else {
          s += static_cast<double>(p[i]);
        }
      }
    }
  });
  return s;
}

}  // namespace tenferro::cli
