// A ready-to-use CPU runtime: the CPU engine over one managed CPU domain,
// with the native einsum and linalg engines installed. What applications,
// the Python module, the C API and the command-line program start from;
// anything more specific (several domains, custom providers) builds a
// RuntimeBuilder by hand (register_cpu_engine, cpu_extension_module).
//
//   cpu::CpuRuntimeOptions options;
//   options.threads = 2;
//   TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime(options));
//   runtime::EagerContext ctx = cpu.runtime.on();
//   TENFERRO_ASSIGN_OR_RETURN(Tensor c, einsum::einsum(ctx, "ij,jk->ik", operands));
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/ad/ad_context.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/gemm_provider.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/linalg_cpu/cpu_engine.h"
#include "tenferro/runtime/runtime.h"

namespace tenferro::cpu {

struct CpuRuntimeOptions {
  /// Threads of the runtime's CPU domain (the caller and threads - 1
  /// workers); 0: one per CPU this process may use.
  int threads = 0;
  /// Where the domain runs (Note [Default placement] in cpu_runtime.cpp).
  /// Unset: on every CPU this process may use, at most `threads` at a time,
  /// wherever the OS schedules them (nothing is pinned), so that independent
  /// processes spread over the machine. Set: pinned to `threads`
  /// consecutive CPUs of that list from this position, wrapping around, to
  /// partition a machine between runtimes (e.g. one per MPI rank).
  std::optional<int> first_cpu;
  /// No CPU domain: every call runs on the calling thread (threads 0 or 1;
  /// no domain entry per call, no memory pool). Otherwise one managed
  /// domain (placed as `first_cpu` says) with a node-local memory pool.
  bool on_calling_thread = false;
  /// How long the domain's workers spin for the next loop after one ends
  /// (CpuDomainSpec::worker_spin, Note [Worker spin]); zero where the CPUs
  /// are shared with other busy processes.
  std::chrono::microseconds worker_spin = CpuDomainSpec::kDefaultWorkerSpin;
  /// The GEMM candidates, tried in order (Note [GEMM candidates]). OpenBLAS
  /// uses its serial build at one thread and its pthread build (with its
  /// process-wide thread count set to `threads` once it is selected)
  /// otherwise.
  std::vector<std::string> gemm = {"native"};
  /// Install the native einsum engine (otherwise einsum lowers to core ops).
  bool einsum = true;
  /// Install the CPU linalg engine (otherwise linalg ops are unsupported).
  bool linalg = true;
  /// The linalg engine's options (e.g. the threading policy its providers
  /// must satisfy).
  linalg::LinalgEngineOptions linalg_options;
  /// More extension modules for the CPU engine, each made from the engine's
  /// id (e.g. `[fft](EngineId e) { return fft::cpu_extension_module(e, fft); }`
  /// from tenferro/fft_cpu.h, which this component does not depend on).
  std::vector<std::function<runtime::ExtensionModule(EngineId)>> extensions;
};

/// A built CPU runtime and the engines it holds (shared with the runtime;
/// kept for explain(), statistics and direct planning).
struct CpuRuntime {
  runtime::Runtime runtime;
  int threads = 0;
  std::shared_ptr<const CpuGemmProvider> gemm;
  /// The CPU engine's providers, with the GEMM candidates refused before
  /// the selected one (CpuEngine::providers).
  std::vector<CpuEngineProviderInfo> providers;
  std::shared_ptr<const CpuDomainSet> domains;        ///< null with on_calling_thread
  std::shared_ptr<einsum::CpuEinsumExecutor> einsum;  ///< null unless options.einsum
  std::shared_ptr<linalg::CpuLinalgEngine> linalg;    ///< null unless options.linalg
  /// An AdContext with the AD rules of the families this runtime runs
  /// (einsum, linalg) installed: pass it to ad::GradientTape, ad::grad or
  /// AdContext::vjp users (add fft::install_fft_ad_rules for the FFT module).
  std::shared_ptr<ad::AdContext> ad;
};

/// One managed CPU domain with a budget of `threads` threads (0: one per CPU
/// this process may use). Without `first_cpu` it spans every CPU the
/// process may use and pins nothing; with it, it is pinned to `threads`
/// consecutive CPUs of that list from position `first_cpu`, wrapping around
/// (CpuRuntimeOptions::first_cpu). kInvalidArgument when more threads are
/// asked for than the process may use, `threads` is negative or `first_cpu`
/// is. `worker_spin`: CpuDomainSpec::worker_spin (checked the same way).
Result<std::shared_ptr<const CpuDomainSet>> make_managed_domains(
    int threads, std::optional<int> first_cpu = std::nullopt,
    std::chrono::microseconds worker_spin = CpuDomainSpec::kDefaultWorkerSpin);

/// Builds the runtime. Errors: kInvalidArgument for a bad thread count
/// (more than one with on_calling_thread);
/// kInvalidArgument for an unknown GEMM candidate; kUnsupported listing each
/// refusal when no GEMM candidate is available; the linalg engine's provider
/// table errors (linalg::read_provider_table).
Result<CpuRuntime> make_cpu_runtime(const CpuRuntimeOptions& options = {});

}  // namespace tenferro::cpu
