// A ready-to-use CPU runtime: the CPU engine over one managed CPU domain,
// with the native einsum and linalg engines installed. What applications,
// the Python module, the C API and the command-line program start from;
// anything more specific (several domains, custom providers) builds a
// RuntimeBuilder by hand (register_cpu_engine, cpu_extension_module).
//
//   TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime({.threads = 2}));
//   runtime::EagerContext ctx = cpu.runtime.on();
//   TENFERRO_ASSIGN_OR_RETURN(Tensor c, einsum::einsum(ctx, "ij,jk->ik", operands));
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/gemm_provider.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/linalg_cpu/cpu_engine.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cpu {

struct CpuRuntimeOptions {
  /// Worker threads of the runtime's CPU domain, pinned to the first
  /// `threads` CPUs this process may use; 0 takes all of them.
  int threads = 0;
  /// No CPU domain: every call runs on the calling thread (threads 0 or 1;
  /// no domain entry per call, no memory pool). Otherwise one managed
  /// domain: pinned workers and a node-local memory pool.
  bool on_calling_thread = false;
  /// The GEMM provider. OpenBLAS uses its serial build at one thread and
  /// its pthread build (with its process-wide thread count set to
  /// `threads`) otherwise.
  CpuGemmChoice gemm = CpuGemmChoice::kNative;
  /// Install the native einsum engine (otherwise einsum lowers to core ops).
  bool einsum = true;
  /// Install the CPU linalg engine (otherwise linalg ops are unsupported).
  bool linalg = true;
  /// The linalg engine's options (e.g. the threading policy its providers
  /// must satisfy).
  linalg::LinalgEngineOptions linalg_options;
};

/// A built CPU runtime and the engines it holds (shared with the runtime;
/// kept for explain(), statistics and direct planning).
struct CpuRuntime {
  runtime::Runtime runtime;
  int threads = 0;
  std::shared_ptr<const CpuGemmProvider> gemm;
  std::shared_ptr<const CpuDomainSet> domains;        ///< null with on_calling_thread
  std::shared_ptr<einsum::CpuEinsumExecutor> einsum;  ///< null unless options.einsum
  std::shared_ptr<linalg::CpuLinalgEngine> linalg;    ///< null unless options.linalg
};

/// "native", "openblas" or "blis"; kInvalidArgument naming the choices
/// otherwise.
Result<CpuGemmChoice> parse_gemm_choice(std::string_view name);

/// One managed CPU domain of `threads` workers on `threads` consecutive
/// CPUs of those this process may use, from position `first_cpu` of that
/// list, wrapping around (0 threads: all of them). kInvalidArgument when
/// more are asked for than the process may use or `threads` is negative.
Result<std::shared_ptr<const CpuDomainSet>> make_managed_domains(int threads, int first_cpu = 0);

/// The GEMM provider for `choice` at `threads` (the OpenBLAS rule above).
Result<std::shared_ptr<const CpuGemmProvider>> make_gemm_provider(CpuGemmChoice choice, int threads);

/// Builds the runtime. Errors: kInvalidArgument for a bad thread count
/// (more than one with on_calling_thread);
/// kUnsupported when the chosen external BLAS is not installed.
Result<CpuRuntime> make_cpu_runtime(const CpuRuntimeOptions& options = {});

}  // namespace tenferro::cpu
