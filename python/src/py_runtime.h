// PyRuntime: what a tenferro.Runtime Python object owns: a tenferro Runtime
// with the CPU engine (its GEMM provider and, above one thread, one managed
// CPU domain), the native einsum and linalg extension modules on it, an
// eager context for the calling threads, an AD context with the einsum and
// linalg rules, and the parsed-EinsumOp cache of the Python fast path.
//
// Note [Python eager path]
// tenferro.einsum parses its subscripts once per (subscripts, optimize) and
// keeps the EinsumOp here, so a repeated call is: op cache lookup (GIL
// held), operands wrapped as borrowed Tensors, the GIL released, one eager
// fast-path call on the context (whose engine caches the execution plan per
// shapes), the GIL taken back and the output wrapped. The op cache is only
// touched with the GIL held. An eager context is thread-compatible, so a
// call takes one under a mutex (Note [Eager contexts per CPU]).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "optimize.h"
#include "small_lru.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/base/function_ref.h"
#include "tenferro/base/sharded_counters.h"
#include "tenferro/base/status.h"
#include "tenferro/compiler/graph_compiler.h"
#include "tenferro/cpu/domains/domain_spec.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/fft/fft_op.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::python {

/// numpy's `ord` of tenferro.linalg.norm as the Python layer spells it:
/// fro, nuc, 1, -1, 2, -2, inf, -inf, or p (a vector p-norm, p passed
/// separately). kInvalidArgument otherwise.
Result<linalg::NormOrder> norm_order_of(std::string_view ord);

/// The LinalgOp of tenferro.linalg's call `name` (as tenferro/linalg.py
/// names it): svd (mode full, thin or values), qr (complete or reduced),
/// eigh and eig (flag: compute the vectors), cholesky, lu, solve, inv, det,
/// slogdet, lstsq (rcond; the singular values too, as numpy), pinv (rcond),
/// matrix_norm and vector_norm (mode: the order; rcond carries p) and
/// triangular_solve (mode "<lower|upper>:<N|T|C>", flag: unit diagonal).
/// kInvalidArgument for an unknown name or mode.
Result<std::shared_ptr<const linalg::LinalgOp>> linalg_op_of(std::string_view name, std::string_view mode, bool flag,
                                                             double rcond);

/// The FftOp attributes of tenferro.fft's calls: `kind` fft, ifft, rfft,
/// irfft, hfft or ihfft, `norm` backward, ortho or forward; empty `axes`
/// and `lengths` take the op's defaults. kInvalidArgument for an unknown
/// kind or norm.
Result<fft::FftAttributes> fft_attributes_of(std::string_view kind, Dims lengths, Dims axes, std::string_view norm);

/// See the file comment. Thread-safe except for op_for (GIL held).
class PyRuntime {
 public:
  /// `threads` 0: every CPU this process may use. `gemm`: native, openblas
  /// or blis. `domain`: "managed" (one managed CPU domain of `threads`
  /// pinned workers, as the CLI builds it), "inline" (no domain: work runs
  /// sequentially on the calling thread; only with one thread) or empty
  /// (inline for one thread, managed otherwise). `worker_spin`: how long
  /// a managed domain's workers spin for the next loop (Note [Worker spin]).
  /// kInvalidArgument for bad options, kUnsupported when the GEMM library
  /// cannot be loaded.
  static Result<std::unique_ptr<PyRuntime>> create(
      int threads, std::string gemm, std::string domain = {},
      std::chrono::microseconds worker_spin = cpu::CpuDomainSpec::kDefaultWorkerSpin);

  int threads() const noexcept { return threads_; }
  const std::string& gemm() const noexcept { return gemm_; }
  const std::string& domain() const noexcept { return domain_; }
  /// Zero when no domain workers exist (inline, one thread).
  std::chrono::microseconds worker_spin() const noexcept { return worker_spin_; }
  runtime::Runtime& runtime() noexcept { return runtime_; }
  ad::AdContext& ad() noexcept { return *ad_; }
  const std::shared_ptr<ad::AdContext>& ad_ptr() const noexcept { return ad_; }
  /// The compiler (and its bounded cache) of every tape on this runtime:
  /// a function recorded again by tenferro.grad compiles once.
  const std::shared_ptr<compiler::GraphCompiler>& compiler_ptr() const noexcept { return compiler_; }

  /// The cached EinsumOp for (subscripts, spec) (Note [Python eager path]);
  /// call with the GIL held.
  Result<std::shared_ptr<const einsum::EinsumOp>> op_for(std::string_view subscripts, const OptimizeSpec& spec);
  /// The cached FftOp for `attributes` (so that repeated transforms take
  /// the eager context's memo); call with the GIL held.
  Result<std::shared_ptr<const fft::FftOp>> fft_op_for(const fft::FftAttributes& attributes);
  /// Runs `body` on the eager context (Note [Python eager path]); the GIL
  /// may be released.
  ///
  /// Note [Eager contexts per CPU]
  /// There was one cached context; a call that found it busy (another
  /// Python thread inside a call with the GIL released) made a fresh one,
  /// which costs about 0.84 us (the concurrency audit of 2026-12-05) and
  /// has no memo, so the second of two threads
  /// paid that on every call. The runtime now keeps kContexts contexts,
  /// each under its own mutex, and a call tries the one of the CPU it runs
  /// on first (Note [Sharded counters]), then the others; only when all are
  /// busy does it make a fresh one.
  template <class F>
  auto with_context(F&& body) -> decltype(body(std::declval<runtime::EagerContext&>())) {
    if (from_before_fork()) return fork_error();
    const std::size_t first = this_cpu_shard(kContexts);
    for (std::size_t i = 0; i < kContexts; ++i) {
      CachedContext& cached = contexts_[(first + i) % kContexts];
      std::unique_lock<std::mutex> lock(cached.mutex, std::try_to_lock);
      if (!lock.owns_lock()) continue;
      if (!cached.context.has_value()) cached.context.emplace(runtime_.on());
      return body(*cached.context);
    }
    runtime::EagerContext fresh = runtime_.on();
    return body(fresh);
  }
  std::size_t cached_ops() const noexcept;

  /// Note [Runtimes from before a fork]
  /// A runtime with worker threads (threads >= 2) does not survive fork():
  /// its workers and arena slots are the parent's, and a call in the child
  /// blocked forever on them (silently: the concurrency audit's repro hung
  /// in 20 of 20 children). The module's own runtimes are replaced in the
  /// child (Note [Runtimes across fork]); one the program created itself
  /// now fails each call in the child with kInvalidArgument saying to
  /// create a new one, instead of hanging. A fork is counted by a
  /// pthread_atfork handler, so any fork() counts (os.fork, multiprocessing,
  /// C code); a runtime compares the count with the one at its creation
  /// (one relaxed load per call). Inline runtimes (threads=1) work in a
  /// child and are left alone.
  bool from_before_fork() const noexcept { return domains_ != nullptr && forks_at_creation_ != forks_so_far(); }
  /// The error of a call on a runtime from before a fork.
  Status fork_error() const;
  /// fork() calls in this process so far (registers the counter on first use).
  static std::uint64_t forks_so_far() noexcept;
  /// Calls that released the GIL (Note [Keeping the GIL for tiny calls]).
  ShardedCounters<1>& gil_releases() noexcept { return gil_releases_; }
  std::int64_t gil_release_count() const noexcept { return gil_releases_.load(0); }
  /// Drops every cache and returns the domains' pooled memory.
  void clear_caches();
  /// Bytes of freed blocks the domains' memory pools keep for reuse.
  std::uint64_t pooled_bytes() const;

  /// Note [Einsum gradients in Python]
  /// tenferro.einsum_vjp built the one-einsum program, asked the AD context
  /// for its backward program and ran that through the runtime (fingerprint,
  /// plan cache) on every call: 5.9 us for a 2 x 2 product's gradients. The
  /// runtime now remembers the last kBackwardEntries backward programs,
  /// prepared (ad::prepare_vjp_cotangents, as the C API's tf_einsum_vjp
  /// does), keyed by the cached op (op_for: one object per subscripts and
  /// optimize; the entry holds it, so its address is not reused) and the run's
  /// input signature (operands, then the cotangent), the least recently used
  /// dropped first. A hit runs the prepared program. Call both with the GIL
  /// held.
  std::shared_ptr<const runtime::PreparedProgram> einsum_backward(const einsum::EinsumOp& op,
                                                                  const runtime::InputSignature& signature);
  void remember_einsum_backward(std::shared_ptr<const einsum::EinsumOp> op, runtime::InputSignature signature,
                                std::shared_ptr<const runtime::PreparedProgram> backward);
  std::size_t cached_einsum_backwards() const noexcept;

  /// dst = src with the CPU copy kernel (tiled transposes, streaming
  /// stores) on this runtime's default domain; the GIL may be released
  /// (Note [einsum out=]).
  Status copy_into(const TensorView& src, const TensorView& dst);
  /// `op` over `inputs` written into `out` (Note [einsum out= in place] in
  /// module.cpp): the einsum executor's cached plan run on this runtime's
  /// default domain, as the C API runs it. kShapeMismatch when `out` does
  /// not have the result's shape (nothing written); the caller checks that
  /// `out` overlaps no input. The GIL may be released.
  Status einsum_into(const einsum::EinsumOp& op, std::span<const Tensor> inputs, const TensorView& out);
  /// The contraction of `op` over `inputs` sliced so that no intermediate
  /// of a slice (its output slice included) exceeds `max_intermediate_bytes`
  /// (Note [Sliced einsum in Python]). Planned on every call; the slices run
  /// one after another on this runtime's threads. The GIL may be released.
  Result<Tensor> sliced_einsum(const einsum::EinsumOp& op, std::span<const Tensor> inputs,
                               double max_intermediate_bytes) const;
  /// Compiled slicings kept for sliced_einsum.
  std::size_t cached_sliced_plans() const;

 private:
  PyRuntime(cpu::CpuRuntime cpu, std::string gemm, std::string domain, std::chrono::microseconds worker_spin);
  // Runs `body` on the calling thread (inline runtime) or in one kInner
  // context of the default domain: copy_into, einsum_into, sliced_einsum.
  Status on_default_domain(FunctionRef<Status(const cpu::ParallelContext&)> body) const;
  Result<std::shared_ptr<const einsum::WorkerSliceExecutor>> sliced_plan(const einsum::EinsumOp& op,
                                                                         std::span<const Tensor> inputs,
                                                                         double max_intermediate_bytes) const;

  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using OpMap = std::unordered_map<std::string, std::shared_ptr<const einsum::EinsumOp>, StringHash, std::equal_to<>>;
  struct FftAttributesHash {
    std::size_t operator()(const fft::FftAttributes& a) const noexcept;
  };

  runtime::Runtime runtime_;
  // The runtime's einsum executor and CPU domains (null: inline), for
  // sliced_einsum.
  std::shared_ptr<einsum::CpuEinsumExecutor> einsum_;
  std::shared_ptr<const cpu::CpuDomainSet> domains_;
  // Compiled slicings, most recently used first (Note [Sliced einsum in
  // Python]); guarded by sliced_mutex_ (used without the GIL).
  mutable std::mutex sliced_mutex_;
  mutable SmallLru<std::shared_ptr<const einsum::WorkerSliceExecutor>> sliced_plans_{16};
  int threads_;
  std::string gemm_;
  std::string domain_;
  std::chrono::microseconds worker_spin_;
  static constexpr std::size_t kContexts = 4;
  struct alignas(128) CachedContext {
    std::mutex mutex;
    std::optional<runtime::EagerContext> context;  // made on first use
  };
  std::array<CachedContext, kContexts> contexts_;
  ShardedCounters<1> gil_releases_;
  std::uint64_t forks_at_creation_ = forks_so_far();
  std::shared_ptr<ad::AdContext> ad_;
  std::shared_ptr<compiler::GraphCompiler> compiler_;
  // One map per planner kind, keyed by the subscripts, and one for explicit
  // paths keyed by the subscripts, '\x1f' and the path.
  std::array<OpMap, 8> ops_;
  OpMap path_ops_;
  // Note [Einsum gradients in Python]: the most recently used first.
  struct EinsumBackward {
    std::shared_ptr<const einsum::EinsumOp> op;
    runtime::InputSignature signature;
    std::shared_ptr<const runtime::PreparedProgram> backward;
  };
  static constexpr std::size_t kBackwardEntries = 8;
  std::vector<EinsumBackward> backwards_;
  // FftOps keyed by their attributes (no key string formatted per call).
  std::unordered_map<fft::FftAttributes, std::shared_ptr<const fft::FftOp>, FftAttributesHash> fft_ops_;
};

}  // namespace tenferro::python
