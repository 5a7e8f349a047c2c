// GEMM providers over external BLAS libraries: OpenBLAS (a chosen build:
// serial, pthread or OpenMP) and BLIS (typed API, per-call thread count).
//
// Note [External BLAS isolation]
// OpenBLAS and BLIS export the same Fortran/CBLAS symbols (dgemm_,
// cblas_dgemm, ...), and all three OpenBLAS builds share the SONAME
// libopenblas.so.0, so linking them into tenferro would let link order
// decide which code runs. Instead each library is wrapped in its own small
// C module (src/cpu/gemm/external/*_module.c) linked by full path with a
// RUNPATH to that build's directory, and loaded at provider construction
// with dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE): the library's symbols
// stay out of the global scope, so two libraries (or a library and
// tenferro's own link) never resolve each other's symbols. RTLD_NODELETE
// keeps a library with worker threads mapped after the provider is gone.
// One limit remains: the dynamic loader shares an already loaded object by
// SONAME, so if the process already holds another libopenblas.so.0 (e.g.
// through LAPACKE -> libblas.so.3), a module gets that one. The provider
// therefore never trusts the request: it identifies the build actually
// loaded (openblas_get_parallel(), openblas_get_config(), dladdr) and
// classifies its capability from that.
#pragma once

#include <memory>
#include <string>

#include "tenferro/cpu/cpu_isa.h"
#include "tenferro/cpu/gemm/gemm_provider.h"

namespace tenferro::cpu {

namespace internal {
struct BlasModuleHandle;
}  // namespace internal

/// OpenBLAS builds Debian ships (same API, different threading).
enum class OpenBlasBuild : std::uint8_t { kSerial, kPthread, kOpenMP };
std::string_view to_string(OpenBlasBuild build) noexcept;

/// The instruction set of an OpenBLAS kernel table (openblas_get_corename()):
/// kAvx512 for SkylakeX, Cooperlake and SapphireRapids, kAvx2 for Haswell
/// and Zen, kPortable for every older table (case-insensitive). A
/// DYNAMIC_ARCH OpenBLAS that does not know a CPU falls back to an old one
/// (Note [OpenBLAS kernels for new CPUs] in
/// src/linalg_cpu/lapack/lapack_provider.cpp).
CpuIsa openblas_core_isa(std::string_view core) noexcept;

/// The OpenBLAS kernel table that gives a CPU whose widest instruction set
/// is `widest` kernels of that width -- "SkylakeX" (AVX-512) or "Haswell"
/// (AVX2) -- when `core` is narrower; empty when `core` already has that
/// width (its own tuning is kept).
std::string_view openblas_core_for(CpuIsa widest, std::string_view core) noexcept;

/// Threading of the library actually loaded.
enum class BlasThreading : std::uint8_t { kSerial, kPthread, kOpenMP };
std::string_view to_string(BlasThreading threading) noexcept;

/// What a provider found loaded, as reported by the library itself.
struct ExternalBlasIdentity {
  std::string library;      ///< "openblas" or "blis"
  std::string version;      ///< e.g. "0.3.21", "0.9.0"
  std::string config;       ///< the library's configuration string
  std::string arch;         ///< kernel architecture in use, e.g. "SkylakeX", "skx"
  std::string loaded_path;  ///< file the library was loaded from
  std::string module_path;  ///< tenferro module that wraps it
  BlasThreading threading = BlasThreading::kSerial;
  int pool_threads = 1;           ///< the library's own default thread count
  bool per_call_threads = false;  ///< honours a thread count per call (BLIS rntm_t)
};

struct OpenBlasOptions {
  OpenBlasBuild build = OpenBlasBuild::kSerial;
  /// Directory holding the tenferro BLAS modules; empty = where this build put them.
  std::string module_dir;
};

struct BlisOptions {
  /// Ask BLIS for its AVX-512 (skx) kernels where the CPU has them
  /// (Note [BLIS kernel selection] in blis_module.c).
  bool select_avx512_kernels = true;
  std::string module_dir;
};

/// A CpuGemmProvider over one external BLAS library (see the Note above).
/// Immutable after construction; thread-safe to call concurrently (the
/// libraries are). Capability, from the loaded build:
///   OpenBLAS serial                 kSequential / kCallingThread
///   OpenBLAS pthread or OpenMP      kGlobalOrUncontrolled / kExternalWorkers
///   BLIS with per-call threads      kPerCall / kExternalWorkers (exact
///                                   placement only at a budget of 1)
///   BLIS serial build               kSequential / kCallingThread
/// OpenBLAS accepts kUnitStride layouts, BLIS kPositiveTilted; neither
/// accepts broadcast (stride-0) operands.
class ExternalBlasGemmProvider final : public CpuGemmProvider {
 public:
  /// kUnsupported when the module for `options.build` was not built or the
  /// library cannot be loaded (the message says which file and why).
  static Result<std::shared_ptr<ExternalBlasGemmProvider>> load_openblas(const OpenBlasOptions& options = {});
  static Result<std::shared_ptr<ExternalBlasGemmProvider>> load_blis(const BlisOptions& options = {});
  ~ExternalBlasGemmProvider() override;

  std::string_view name() const noexcept override { return identity_.library; }
  const ProviderCapability& capability() const noexcept override { return capability_; }
  GemmSupport support() const noexcept override { return support_; }
  const ExternalBlasIdentity& identity() const noexcept { return identity_; }

  /// Sets the library's process-global default thread count
  /// (openblas_set_num_threads / bli_thread_set_num_threads). This is a
  /// compatibility knob for benchmarks and callers that own the whole process:
  /// it changes the library for every user in the process, races with
  /// concurrent calls, and is never a per-call control (capability() does not
  /// change). kUnsupported when the library has no such setting.
  Status set_global_thread_count(int threads) const;

  Status gemm(const GemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_strided_batched(const StridedBatchedGemmRequest& request, const ParallelContext& ctx) const override;
  Status gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& ctx) const override;

 private:
  explicit ExternalBlasGemmProvider(std::unique_ptr<internal::BlasModuleHandle> module);
  Status check(DType dtype, const GemmProblem& problem) const;
  void run(DType dtype, const GemmProblem& problem, int threads) const;

  std::unique_ptr<internal::BlasModuleHandle> module_;
  ExternalBlasIdentity identity_;
  ProviderCapability capability_;
  GemmSupport support_;
};

}  // namespace tenferro::cpu
