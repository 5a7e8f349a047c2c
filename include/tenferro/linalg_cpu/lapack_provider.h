// LapackLinalgProvider: the LAPACK provider of the linalg extension, calling
// LAPACKE (netlib's C interface, *_work entry points: no allocation inside
// LAPACKE) over the LAPACK in an OpenBLAS build chosen at construction.
//
// Note [LAPACK provider isolation]
// Debian's OpenBLAS is built without LAPACKE; liblapacke.so.3 (netlib) calls
// dgesdd_ & co. that the dynamic linker finds through liblapack.so.3, which
// the alternatives system points at the *pthread* OpenBLAS. Linking LAPACKE
// into tenferro would therefore (1) put LAPACK/BLAS symbols into the global
// scope, clashing with the GEMM providers' isolation (Note [External BLAS
// isolation] in cpu/gemm/external_blas.h), and (2) make the threading of
// every LAPACK call an accident of the machine's alternatives. Instead a
// tiny C module (src/linalg_cpu/lapack/lapack_module.c) is linked against
// liblapacke and ONE OpenBLAS build by full path with a RUNPATH to that
// build's directory, and loaded with dlopen(RTLD_NOW | RTLD_LOCAL |
// RTLD_NODELETE). Every LAPACKE_*_work and cblas_*gemm is looked up with
// dlsym on the module handle, i.e. breadth-first in the module's own
// dependency tree, where the chosen libopenblas.so.0 (which contains LAPACK)
// precedes the liblapack.so.3 that liblapacke names; nothing enters the
// global scope. The remaining limit is shared with the GEMM providers: the
// loader shares an already loaded libopenblas.so.0 by SONAME, so a process
// that already holds another OpenBLAS build gets that one (and
// LD_LIBRARY_PATH overrides the RUNPATH). The provider never trusts the
// request: it asks the bound library (openblas_get_parallel(),
// openblas_get_config(), dladdr of dgesdd_) and classifies its capability
// from what is actually loaded:
//   serial OpenBLAS             kSequential / kCallingThread: the engine may
//                               fan out over a batch (one fan-out level)
//   pthread or OpenMP OpenBLAS  kGlobalOrUncontrolled / kExternalWorkers: no
//                               outer fan-out; the library threads inside a
//                               call with its process-global pool
// A process that already holds an OpenBLAS would still hand it to the
// module, whichever build it is: Note [An OpenBLAS of our own].
//
// Note [An OpenBLAS of our own]
// Every OpenBLAS build has the soname libopenblas.so.0, and the loader
// gives a module the library of that soname the process already holds. So
// the serial module bound numpy's pthread OpenBLAS inside Python, and in a
// C or C++ program the pthread build a GEMM provider (gemm = openblas with
// 2 threads) or the program itself had loaded: its process-global
// threading then failed every linalg call under the strict policy
// (kPlacementError; the C API audit of 2026-12-06: det of a 2 x 2 failed
// after a gemm=openblas runtime was created first), and Python's threads=1
// ran LAPACK on numpy's threads. And the serial build itself is not
// reentrant (Note [Serial OpenBLAS is not reentrant]), so calls from several
// threads had to take turns. The build therefore gives the serial module
// (the default, one thread per call) copies of an OpenBLAS build's
// libopenblas.so.0, libblas.so.3 and liblapack.so.3 renamed with patchelf
// (libtenferro_openblas.so and so on: their own sonames, next to the
// module, which finds them through RUNPATH $ORIGIN), made from the pthread
// build when it is installed: that build locks its buffer pool, so calls
// from several threads run at once, and since nothing else in the process
// uses this copy, the provider can pin its thread count to one and stop its
// thread pool without touching anyone's OpenBLAS (two threads running
// dgesdd on it: 28,000 calls, 0 wrong, 1.76x the calls of one; the serial
// build gave wrong values). The provider loads the module with
// RTLD_DEEPBIND, so that the module's and liblapacke's references resolve
// in the module's own libraries before a program's global ones (a program
// linked with -lopenblas). The sanitizer runtimes refuse RTLD_DEEPBIND;
// under one (a sanitizer build of tenferro, or a sanitized program using a
// release install, whose runtime is found in the process) the module loads
// without it (prefers_own_symbols() is false) and binds a globally loaded
// OpenBLAS as before. A build without patchelf links the
// system's serial files (scripts/setup.sh installs patchelf).
//
// Argument errors never reach LAPACK's xerbla: plan() rejects extents beyond
// 32-bit lapack_int (kUnsupported, so the engine can use another provider)
// and the engine validates every shape before a call.
#pragma once

#include <memory>
#include <string>

#include "tenferro/linalg_cpu/linalg_provider.h"

namespace tenferro::linalg {

namespace internal {
struct LapackModule;
}  // namespace internal

/// Which OpenBLAS build supplies LAPACK. kOpenBlasSerial (the default)
/// means one thread per call: the module's own renamed copy of the pthread
/// build pinned to one thread where the build had patchelf, else the
/// system's serial build (Note [An OpenBLAS of our own]).
enum class LapackBuild : std::uint8_t { kOpenBlasSerial, kOpenBlasPthread, kOpenBlasOpenMP };
std::string_view to_string(LapackBuild build) noexcept;

struct LapackOptions {
  LapackBuild build = LapackBuild::kOpenBlasSerial;
  /// Directory of the tenferro LAPACK modules; empty = where this build put them.
  std::string module_dir;
};

/// What the provider found loaded.
struct LapackIdentity {
  std::string openblas_config;  ///< openblas_get_config()
  int openblas_parallel = -1;   ///< openblas_get_parallel(): 0 serial, 1 pthread, 2 OpenMP
  int openblas_threads = 1;     ///< openblas_get_num_threads()
  std::string lapack_path;      ///< file dgesdd_ resolved to (dladdr)
  std::string lapacke_path;     ///< file LAPACKE_dgesdd_work resolved to
  std::string module_path;      ///< the tenferro module that anchors them
  /// A renamed copy nothing else in the process uses, pinned to one thread
  /// when it is a threaded build (Note [An OpenBLAS of our own]).
  bool own_instance = false;
  /// openblas_get_corename(): the kernels it runs ("SkylakeX", "Haswell", ...).
  std::string openblas_core;
  /// What OpenBLAS chose itself when tenferro chose openblas_core instead
  /// (Note [OpenBLAS kernels for new CPUs] in lapack_provider.cpp); empty
  /// when OpenBLAS's own choice runs.
  std::string openblas_own_choice;
};

/// The LAPACK provider (Note [LAPACK provider isolation]). Implements every
/// slot for float32, float64, complex64 and complex128 with the routines
///   svd gesdd, qr geqrf + orgqr/ungqr, eigh syevd/heevd, eig geev,
///   cholesky potrf, lu getrf, solve gesv, triangular_solve trtrs,
///   inverse getrf + getri, lstsq gelsd, pinv gesdd + gemm.
/// run() allocates nothing (every LAPACK workspace comes from `workspace`).
/// Immutable; thread-safe.
class LapackLinalgProvider final : public CpuLinalgProvider {
 public:
  /// kUnsupported when the module for `options.build` was not built or the
  /// libraries cannot be loaded (the message names the file and why).
  static Result<std::shared_ptr<LapackLinalgProvider>> load(const LapackOptions& options = {});
  ~LapackLinalgProvider() override;

  std::string_view name() const noexcept override { return name_; }
  const cpu::ProviderCapability& capability() const noexcept override { return capability_; }
  const LapackIdentity& identity() const noexcept { return identity_; }
  /// Whether modules are loaded with their own symbols ahead of the
  /// process's (RTLD_DEEPBIND; false under a sanitizer): Note [An
  /// OpenBLAS of our own].
  static bool prefers_own_symbols() noexcept;

  Result<LinalgKernelPlan> plan(const LinalgProblem& problem) const override;
  Status run(const LinalgProblem& problem, const LinalgKernelPlan& plan, const LinalgBuffers& buffers,
             std::span<std::byte> workspace) const override;

 private:
  explicit LapackLinalgProvider(std::unique_ptr<internal::LapackModule> module);

  std::unique_ptr<internal::LapackModule> module_;
  std::string name_;
  LapackIdentity identity_;
  cpu::ProviderCapability capability_;
};

}  // namespace tenferro::linalg
