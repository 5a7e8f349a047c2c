// PyRuntime (py_runtime.h): the runtime a tenferro.Runtime object owns.
#include "py_runtime.h"

#include <pthread.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tenferro/base/hash.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/fft/ad_rules.h"
#include "tenferro/fft_cpu/cpu_engine.h"

namespace tenferro::python {
namespace {

constexpr ErrorStage kStage = ErrorStage::kConfiguration;
// Bound on each op cache; a program that makes more distinct subscripts
// than this starts over (parsing again is cheap next to the first call).
constexpr std::size_t kMaxCachedOps = 4096;

Error invalid(std::string message) { return Error(ErrorCode::kInvalidArgument, kStage, std::move(message)); }

}  // namespace

Result<linalg::NormOrder> norm_order_of(std::string_view ord) {
  using linalg::NormOrder;
  static constexpr std::pair<std::string_view, NormOrder> kOrders[] = {
      {"fro", NormOrder::kFrobenius}, {"nuc", NormOrder::kNuclear}, {"1", NormOrder::kOne},
      {"-1", NormOrder::kNegOne},     {"2", NormOrder::kTwo},       {"-2", NormOrder::kNegTwo},
      {"inf", NormOrder::kInf},       {"-inf", NormOrder::kNegInf}, {"p", NormOrder::kP}};
  for (const auto& [name, order] : kOrders) {
    if (name == ord) return order;
  }
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                    "linalg.norm: expected ord fro, nuc, 1, -1, 2, -2, inf, -inf or p, found '{}'", ord);
}

Result<std::shared_ptr<const linalg::LinalgOp>> linalg_op_of(std::string_view name, std::string_view mode, bool flag,
                                                             double rcond) {
  using linalg::LinalgOp;
  const auto bad_mode = [&](std::string_view expected) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "linalg.{}: expected mode {}, found '{}'", name,
                      expected, mode);
  };
  if (name == "svd") {
    if (mode == "full") return LinalgOp::svd(linalg::SvdMode::kFull);
    if (mode == "thin") return LinalgOp::svd(linalg::SvdMode::kThin);
    if (mode == "values") return LinalgOp::svd(linalg::SvdMode::kValuesOnly);
    return bad_mode("full, thin or values");
  }
  if (name == "qr") {
    if (mode == "complete") return LinalgOp::qr(linalg::QrMode::kComplete);
    if (mode == "reduced" || mode.empty()) return LinalgOp::qr(linalg::QrMode::kReduced);
    return bad_mode("reduced or complete");
  }
  if (name == "eigh") return LinalgOp::eigh(flag);
  if (name == "eig") return LinalgOp::eig(flag);
  if (name == "cholesky") return LinalgOp::cholesky();
  if (name == "lu") return LinalgOp::lu();
  if (name == "solve") return LinalgOp::solve();
  if (name == "inv") return LinalgOp::inv();
  if (name == "det") return LinalgOp::det();
  if (name == "slogdet") return LinalgOp::slogdet();
  if (name == "lstsq") return LinalgOp::lstsq(rcond, /*singular_values=*/true);
  if (name == "pinv") return LinalgOp::pinv(rcond);
  if (name == "matrix_norm") {
    TENFERRO_ASSIGN_OR_RETURN(const linalg::NormOrder order, norm_order_of(mode));
    return LinalgOp::matrix_norm(order);
  }
  if (name == "vector_norm") {
    TENFERRO_ASSIGN_OR_RETURN(const linalg::NormOrder order, norm_order_of(mode));
    return LinalgOp::vector_norm(order, rcond);  // rcond carries p
  }
  if (name == "triangular_solve") {
    if (mode.size() != 3 || (mode[0] != 'L' && mode[0] != 'U') || mode[1] != ':' ||
        (mode[2] != 'N' && mode[2] != 'T' && mode[2] != 'C')) {
      return bad_mode("<L|U>:<N|T|C>");
    }
    const linalg::TriangularTranspose op = mode[2] == 'T'   ? linalg::TriangularTranspose::kTranspose
                                           : mode[2] == 'C' ? linalg::TriangularTranspose::kAdjoint
                                                            : linalg::TriangularTranspose::kNone;
    return LinalgOp::triangular_solve(mode[0] == 'L', flag, op);
  }
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "linalg: unknown operation '{}'", name);
}

Result<fft::FftAttributes> fft_attributes_of(std::string_view kind, Dims lengths, Dims axes, std::string_view norm) {
  using fft::FftKind;
  static constexpr std::pair<std::string_view, FftKind> kKinds[] = {
      {"fft", FftKind::kFft},     {"ifft", FftKind::kIfft}, {"rfft", FftKind::kRfft},
      {"irfft", FftKind::kIrfft}, {"hfft", FftKind::kHfft}, {"ihfft", FftKind::kIhfft}};
  fft::FftAttributes a;
  const auto* found =
      std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& k) { return k.first == kind; });
  if (found == std::end(kKinds)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "fft: expected a transform fft, ifft, rfft, irfft, hfft or ihfft, found '{}'", kind);
  }
  a.kind = found->second;
  TENFERRO_ASSIGN_OR_RETURN(a.norm, fft::parse_norm(norm));
  a.lengths = std::move(lengths);
  a.axes = std::move(axes);
  return a;
}

PyRuntime::PyRuntime(cpu::CpuRuntime cpu, std::string gemm, std::string domain, std::chrono::microseconds worker_spin)
    : runtime_(std::move(cpu.runtime)),
      einsum_(std::move(cpu.einsum)),
      domains_(std::move(cpu.domains)),
      threads_(cpu.threads),
      gemm_(cpu.gemm != nullptr ? std::string(cpu.gemm->name()) : std::move(gemm)),  // the candidate chosen
      domain_(std::move(domain)),
      worker_spin_(worker_spin),
      ad_(std::move(cpu.ad)),
      compiler_(std::make_shared<compiler::GraphCompiler>()) {}

namespace {

// Note [hwloc plugins stay loaded]
// hwloc loads its plugins (pci, opencl, gl, xml: libicu, libxml2, the X11
// libraries) when the process's first topology is created and unloads them
// with its last. Each Runtime discovers the topology (a managed one twice:
// here and for its domains) and drops it with the runtime, so creating
// Runtimes with no other alive spent most of its time in dlopen and dlclose
// (munmap with TLB shootdowns): 17.3 ms per Runtime(threads=2) created and
// dropped, against 2.1 ms with the default runtime alive. The module keeps
// the first topology it discovers for the life of the process, so the
// plugins stay loaded; every Runtime still discovers its own (the CPUs the
// process may use can change).
Result<cpu::CpuTopology> discover_topology() {
  static const Result<cpu::CpuTopology> first = cpu::CpuTopology::discover();
  (void)first;
  return cpu::CpuTopology::discover();
}

}  // namespace

Result<std::unique_ptr<PyRuntime>> PyRuntime::create(int threads, std::string gemm, std::string domain,
                                                     std::chrono::microseconds worker_spin) {
  if (threads < 0) return invalid(fmt::format("Runtime: threads={}: expected at least 1 (or None)", threads));
  if (domain.empty()) domain = threads == 1 ? "inline" : "managed";
  if (domain != "inline" && domain != "managed") {
    return invalid(fmt::format("Runtime: domain '{}': expected 'inline' or 'managed'", domain));
  }
  cpu::CpuRuntimeOptions options;
  TENFERRO_ASSIGN_OR_RETURN(options.gemm, cpu::parse_gemm_candidates(gemm));
  // More threads than the CPUs this process may use (a script written for a
  // bigger machine): the allowed CPUs, with a RuntimeWarning, as OpenBLAS
  // caps its thread count; the C++ API refuses it.
  TENFERRO_ASSIGN_OR_RETURN(const cpu::CpuTopology topology, discover_topology());
  const int allowed = static_cast<int>(topology.allowed_cpus().count());
  if (threads > allowed) {
    const std::string warning = fmt::format("Runtime: threads={} but this process may use {} CPU{}; using {}", threads,
                                            allowed, allowed == 1 ? "" : "s", allowed);
    if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) throw py::error_already_set();
    threads = allowed;
  }
  options.threads = threads;  // 0: every CPU this process may use
  options.on_calling_thread = domain == "inline";
  options.worker_spin = worker_spin;
  // Note [Linalg threading in Python]: numpy, loaded first in the same
  // process, brings the system's OpenBLAS (usually the pthread build). The
  // LAPACK provider keeps its own copy (Note [An OpenBLAS of our own]),
  // except in a build without patchelf, where it resolves to
  // numpy's, whose threading is process-global and which the strict policy
  // rejects: the Python runtime then admits it under the exclusive permit
  // instead of failing every linalg call.
  options.linalg_options.threading = cpu::ProviderThreadingPolicy::kProviderDefaultExclusive;
  std::shared_ptr<fft::CpuFftEngine> fft_engine = fft::CpuFftEngine::create_default();
  options.extensions.push_back([fft_engine](EngineId e) { return fft::cpu_extension_module(e, fft_engine); });
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime(options));
  // The domain's own report: zero without workers (inline, one thread).
  worker_spin = cpu.domains ? cpu.domains->default_domain().report().worker_spin : std::chrono::microseconds(0);
  std::unique_ptr<PyRuntime> self(new PyRuntime(std::move(cpu), std::move(gemm), std::move(domain), worker_spin));
  TENFERRO_TRY(fft::install_fft_ad_rules(*self->ad_));  // einsum's and linalg's come with the CPU runtime
  return self;
}

Result<std::shared_ptr<const einsum::EinsumOp>> PyRuntime::op_for(std::string_view subscripts,
                                                                  const OptimizeSpec& spec) {
  OpMap* map = nullptr;
  std::string key;
  std::string_view lookup = subscripts;
  if (spec.planner == einsum::PlannerKind::kExplicitPath) {
    key.append(subscripts);
    key.push_back('\x1f');
    key += path_key(spec);
    lookup = key;
    map = &path_ops_;
  } else {
    map = &ops_[static_cast<std::size_t>(spec.planner) % ops_.size()];
  }
  if (auto it = map->find(lookup); it != map->end()) return it->second;
  TENFERRO_ASSIGN_OR_RETURN(einsum::Subscripts parsed, einsum::Subscripts::parse(subscripts));
  TENFERRO_ASSIGN_OR_RETURN(einsum::PlanningPolicy policy, policy_of(spec, parsed.num_operands()));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                            einsum::EinsumOp::create(std::move(parsed), std::move(policy)));
  if (map->size() >= kMaxCachedOps) map->clear();
  map->emplace(std::string(lookup), op);
  return op;
}

std::size_t PyRuntime::FftAttributesHash::operator()(const fft::FftAttributes& a) const noexcept {
  std::uint64_t h = hashing::hash_combine(static_cast<std::uint64_t>(a.kind), static_cast<std::uint64_t>(a.norm));
  h = hashing::hash_combine(h, a.axes.size());
  for (const std::int64_t v : a.axes) h = hashing::hash_combine(h, static_cast<std::uint64_t>(v));
  for (const std::int64_t v : a.lengths) h = hashing::hash_combine(h, static_cast<std::uint64_t>(v));
  return static_cast<std::size_t>(h);
}

Result<std::shared_ptr<const fft::FftOp>> PyRuntime::fft_op_for(const fft::FftAttributes& attributes) {
  if (auto it = fft_ops_.find(attributes); it != fft_ops_.end()) return it->second;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const fft::FftOp> op, fft::FftOp::create(attributes));
  if (fft_ops_.size() >= kMaxCachedOps) fft_ops_.clear();
  fft_ops_.emplace(attributes, op);
  return op;
}

std::size_t PyRuntime::cached_ops() const noexcept {
  std::size_t n = path_ops_.size() + fft_ops_.size();
  for (const OpMap& m : ops_) n += m.size();
  return n;
}

std::shared_ptr<const runtime::PreparedProgram> PyRuntime::einsum_backward(const einsum::EinsumOp& op,
                                                                           const runtime::InputSignature& signature) {
  for (auto it = backwards_.begin(); it != backwards_.end(); ++it) {
    if (it->op.get() == &op && it->signature == signature) {
      std::rotate(backwards_.begin(), it, it + 1);  // now the most recently used
      return backwards_.front().backward;
    }
  }
  return nullptr;
}

void PyRuntime::remember_einsum_backward(std::shared_ptr<const einsum::EinsumOp> op, runtime::InputSignature signature,
                                         std::shared_ptr<const runtime::PreparedProgram> backward) {
  if (backwards_.size() == kBackwardEntries) backwards_.pop_back();
  backwards_.insert(backwards_.begin(), EinsumBackward{std::move(op), std::move(signature), std::move(backward)});
}

std::size_t PyRuntime::cached_einsum_backwards() const noexcept { return backwards_.size(); }

// Note [Sliced einsum in Python]
// tenferro.einsum(..., max_intermediate_bytes=B) runs the CLI's
// --max-intermediate: the path planned as usual, then labels fixed one
// value at a time until every intermediate of a slice fits B (Note [Index
// slicing]), or one label cut into ranges run in turn when that costs less
// (einsum::WorkerSlicing::plan_sequential, Note [Range chunks]); each slice
// reads the operands through strided views and writes or adds into its
// output slice (einsum::WorkerSliceExecutor). The output comes from the
// domain's memory pool.
// The compiled slicing is kept per (subscripts, policy, shapes, dtype,
// bound), the last 16 of them (PyRuntime::sliced_plans_), so a repeated
// call plans nothing.
Result<std::shared_ptr<const einsum::WorkerSliceExecutor>> PyRuntime::sliced_plan(const einsum::EinsumOp& op,
                                                                                  std::span<const Tensor> inputs,
                                                                                  double max_intermediate_bytes) const {
  // The key: what the plan depends on (the op's subscripts and policy, the
  // shapes, the dtype, the bound).
  const std::optional<einsum::PlanningPolicy>& policy = op.policy();
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", op.canonical_subscripts(),
                                policy ? static_cast<int>(policy->planner) : -1,
                                policy && policy->path ? policy->path->to_string() : std::string(),
                                static_cast<int>(inputs[0].dtype()), max_intermediate_bytes);
  for (const Tensor& t : inputs) fmt::format_to(std::back_inserter(key), "\x1f{}", fmt::join(t.shape(), ","));
  {
    const std::lock_guard<std::mutex> lock(sliced_mutex_);
    if (const auto* hit = sliced_plans_.find(key)) return *hit;
  }
  SmallVector<IntArrayRef, 8> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  TENFERRO_ASSIGN_OR_RETURN(einsum::Network network,
                            op.bind(std::span<const IntArrayRef>(shapes.data(), shapes.size()), inputs[0].dtype()));
  TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionTree tree,
                            einsum::plan(network, policy.value_or(einsum::PlanningPolicy{})));
  einsum::SlicingOptions options;
  options.max_intermediate_bytes = max_intermediate_bytes;
  TENFERRO_ASSIGN_OR_RETURN(einsum::WorkerSlicing sliced, einsum::WorkerSlicing::plan_sequential(tree, options));
  TENFERRO_ASSIGN_OR_RETURN(einsum::WorkerSliceExecutor runner,
                            einsum::WorkerSliceExecutor::create(std::move(sliced), 0, einsum_));
  auto shared = std::make_shared<const einsum::WorkerSliceExecutor>(std::move(runner));
  const std::lock_guard<std::mutex> lock(sliced_mutex_);
  sliced_plans_.insert(std::move(key), shared);
  return shared;
}

namespace {
std::atomic<std::uint64_t> forks{0};
void count_fork() noexcept { forks.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

std::uint64_t PyRuntime::forks_so_far() noexcept {
  static const bool registered = pthread_atfork(nullptr, nullptr, count_fork) == 0;
  (void)registered;
  return forks.load(std::memory_order_relaxed);
}

Status PyRuntime::fork_error() const {
  return invalid(fmt::format(
      "this tenferro.Runtime(threads={}) was created before fork(), and its worker threads belong to the parent "
      "process; create a new Runtime in the child (Runtime(threads=1) and the module's default runtimes work in a "
      "child)",
      threads_));
}

Status PyRuntime::on_default_domain(FunctionRef<Status(const cpu::ParallelContext&)> body) const {
  if (domains_ == nullptr) {
    const cpu::SequentialContext sequential;
    return body(sequential);
  }
  return domains_->default_domain().run(
      cpu::ParallelMode::kInner, [&](const cpu::CpuExecutionContext& context) { return body(context.parallel()); });
}

Status PyRuntime::copy_into(const TensorView& src, const TensorView& dst) {
  if (from_before_fork()) return fork_error();
  return on_default_domain([&](const cpu::ParallelContext& ctx) { return cpu::copy_into(src, dst, ctx); });
}

Status PyRuntime::einsum_into(const einsum::EinsumOp& op, std::span<const Tensor> inputs, const TensorView& out) {
  if (from_before_fork()) return fork_error();
  if (inputs.empty()) return invalid("einsum: expected at least one operand");
  SmallVector<IntArrayRef, 8> shapes;
  SmallVector<TensorView, 8> views;
  for (const Tensor& t : inputs) {
    shapes.push_back(t.shape());
    views.push_back(t.view());
  }
  TENFERRO_ASSIGN_OR_RETURN(
      std::shared_ptr<const einsum::ExecutionPlan> plan,
      einsum_->prepare(op, std::span<const IntArrayRef>(shapes.data(), shapes.size()), inputs[0].dtype()));
  if (IntArrayRef(out.shape) != IntArrayRef(plan->output_shape())) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone, "einsum: out has shape {}, expected {}",
                      shape_to_string(IntArrayRef(out.shape)), shape_to_string(IntArrayRef(plan->output_shape())));
  }
  const std::span<const TensorView> in(views.data(), views.size());
  return on_default_domain([&](const cpu::ParallelContext& ctx) { return einsum_->execute(*plan, in, out, ctx); });
}

Result<Tensor> PyRuntime::sliced_einsum(const einsum::EinsumOp& op, std::span<const Tensor> inputs,
                                        double max_intermediate_bytes) const {
  if (from_before_fork()) return fork_error();
  if (inputs.empty()) return invalid("einsum: expected at least one operand");
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::WorkerSliceExecutor> plan,
                            sliced_plan(op, inputs, max_intermediate_bytes));
  const einsum::WorkerSliceExecutor& runner = *plan;
  const DType dtype = inputs[0].dtype();
  SmallVector<TensorView, 8> views;
  for (const Tensor& t : inputs) views.push_back(t.view());
  const std::span<const TensorView> in(views.data(), views.size());
  const std::vector<std::int64_t> out_shape = runner.network().output_shape();
  // Note [Interrupting a sliced einsum]
  // A sliced contraction can run for hours, with the GIL released. Between
  // slices, at most every 50 ms, the GIL is taken back for a moment to run
  // Python's signal handlers: an exception they raise (KeyboardInterrupt)
  // stops the run with kCancelled and stays set on this thread, and the
  // binding raises it instead (the partial output is dropped).
  auto last_check = std::chrono::steady_clock::now();
  const auto interrupted = [&last_check] {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < std::chrono::milliseconds(50)) return false;
    last_check = now;
    if (interpreter_finalizing()) park_forever();  // Note [Daemon threads at exit]
    if (exit_began()) return true;                 // Note [Calls in flight at exit]: stop, then park
    const py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  };
  std::shared_ptr<HostAllocator> memory;  // the domain's pool, or the default allocator inline
  if (domains_ != nullptr) memory = domains_->default_domain().memory();
  TENFERRO_ASSIGN_OR_RETURN(Tensor out,
                            Tensor::empty(IntArrayRef(out_shape), dtype, MemoryOrder::kRowMajor, std::move(memory)));
  const TensorView view = out.view();
  TENFERRO_TRY(on_default_domain(
      [&](const cpu::ParallelContext& ctx) { return runner.run(in, view, ctx, nullptr, interrupted); }));
  return out;
}

std::size_t PyRuntime::cached_sliced_plans() const {
  const std::lock_guard<std::mutex> lock(sliced_mutex_);
  return sliced_plans_.size();
}

void PyRuntime::clear_caches() {
  {
    const std::lock_guard<std::mutex> lock(sliced_mutex_);
    sliced_plans_.clear();
  }
  for (OpMap& m : ops_) m.clear();
  path_ops_.clear();
  backwards_.clear();
  fft_ops_.clear();
  ad_->clear_cache();
  compiler_->clear_cache();
  // The eager contexts' memos keep the plans of their last few calls
  // (Note [Extension call memo]): an idle context is dropped (the next call
  // makes a new one); one that another thread is using keeps its memos.
  for (CachedContext& cached : contexts_) {
    std::unique_lock<std::mutex> lock(cached.mutex, std::try_to_lock);
    if (lock.owns_lock()) cached.context.reset();
  }
  // The prepared plans, the einsum, FFT and linalg engines' plans and
  // workspaces, and the freed results' blocks the CPU engine's pools keep
  // for reuse (its domains', or a one-thread runtime's calling-thread pool:
  // Note [Calling-thread pool]), back to the system.
  {
    // Without the GIL: an engine's cache waits for a plan another thread is
    // making (an FFT plan of a prime near 2e6: 0.4 s with every Python
    // thread frozen; the stress audit of 2026-12-07).
    const py::gil_scoped_release nogil;
    runtime_.clear_caches();
  }
#if defined(__GLIBC__)
  // glibc keeps the freed pages in its heap: a grad loop over 800 shapes left
  // RSS 39 MiB above its start after clear_caches, and malloc_trim took it
  // back to within 1 MiB (soak audit).
  malloc_trim(0);
#endif
}

std::uint64_t PyRuntime::pooled_bytes() const {
  std::uint64_t bytes = 0;
  for (const runtime::EngineCacheReport& engine : runtime_.cache_report().engines) bytes += engine.usage.bytes;
  return bytes;
}

}  // namespace tenferro::python
