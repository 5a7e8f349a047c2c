// The ready CPU runtime (include/tenferro/cpu_runtime/cpu_runtime.h).
#include "tenferro/cpu_runtime/cpu_runtime.h"

#include <fmt/format.h>
#include <new>

#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum_cpu/cpu_engine.h"
#include "tenferro/linalg/ad_rules.h"

namespace tenferro::cpu {

// Note [Default placement]
// A runtime asked for N threads without a CPU position gets a domain over
// every CPU the process may use with a budget of N, not the first N CPUs:
// numpy, PyTorch and OpenMP pin nothing unless asked, and pinning by
// default put two independent one-thread processes on the same CPU 0 of a
// 2-CPU machine, each running at half speed while CPU 1 idled (MERA
// closed, `tenferro einsum --threads 1`, two at once: 1.21 s each against
// 0.56 s alone). A domain covering every allowed CPU also makes no affinity
// call when a thread enters it (Note [Pinning] in managed_executor.cpp),
// which cost 5.6 us per entry on a PVM-virtualised VM (`tenferro bench
// domains`, enter_empty_pinned_t1). Pinning stays one argument away, for
// partitioning a machine between runtimes (one per MPI rank).
Result<std::shared_ptr<const CpuDomainSet>> make_managed_domains(int threads, std::optional<int> first_cpu,
                                                                 std::chrono::microseconds worker_spin) {
  TENFERRO_ASSIGN_OR_RETURN(CpuTopology topology, CpuTopology::discover());
  const std::vector<int> allowed = topology.allowed_cpus().to_vector();
  if (threads < 0 || threads > static_cast<int>(allowed.size())) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "cpu runtime: expected 0 (all) to {} threads (the CPUs this process may use), found {}",
                      allowed.size(), threads);
  }
  if (first_cpu.has_value() && *first_cpu < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "cpu runtime: expected a first CPU position >= 0, found {}", *first_cpu);
  }
  if (threads == 0) threads = static_cast<int>(allowed.size());
  CpuDomainSpec spec;
  spec.id = CpuDomainId(1);
  if (first_cpu.has_value()) {
    for (int i = 0; i < threads; ++i) {
      spec.cpus.add(allowed[static_cast<std::size_t>(*first_cpu + i) % allowed.size()]);
    }
  } else {
    spec.cpus = topology.allowed_cpus();
  }
  spec.thread_budget = threads;
  spec.worker_spin = worker_spin;
  const CpuDomainSpec specs[] = {spec};
  return CpuDomainSet::create_managed(topology, specs);
}

namespace {
Result<CpuRuntime> build_cpu_runtime(const CpuRuntimeOptions& options);
}  // namespace

Result<CpuRuntime> make_cpu_runtime(const CpuRuntimeOptions& options) {
  // oneTBB's arenas, the engines and their pools allocate: without memory
  // (a tight ulimit -v) that is a typed error, not an exception through
  // the caller (Python saw a bare RuntimeError; the concurrency audit).
  try {
    return build_cpu_runtime(options);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kResourceExhausted, ErrorStage::kConfiguration,
                      "cpu runtime: expected memory for its threads, engines and caches, found an allocation failing "
                      "(an address-space limit or too little memory)");
  }
}

namespace {
Result<CpuRuntime> build_cpu_runtime(const CpuRuntimeOptions& options) {
  std::shared_ptr<const CpuDomainSet> domains;
  int threads = 1;
  if (options.on_calling_thread) {
    if (options.threads < 0 || options.threads > 1) {
      return make_error(
          ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
          "cpu runtime: on_calling_thread runs every call on the calling thread; expected threads 0 or 1, "
          "found {}",
          options.threads);
    }
    if (options.first_cpu.has_value()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "cpu runtime: on_calling_thread runs every call on the calling thread; expected no first_cpu, "
                        "found {}",
                        *options.first_cpu);
    }
  } else {
    TENFERRO_ASSIGN_OR_RETURN(domains, make_managed_domains(options.threads, options.first_cpu, options.worker_spin));
    threads = domains->domains().front()->thread_budget();
  }
  CpuEngineOptions engine;
  engine.gemm = options.gemm;
  // The serial build runs on the engine's thread; for more threads the
  // pthread build's process-wide count is the only control OpenBLAS has.
  engine.openblas.build = threads > 1 ? OpenBlasBuild::kPthread : OpenBlasBuild::kSerial;
  engine.domains = domains;
  TENFERRO_ASSIGN_OR_RETURN(CpuEngine cpu_engine, make_cpu_engine(engine));
  if (cpu_engine.gemm_candidate == "openblas" && threads > 1) {
    TENFERRO_TRY(static_cast<const ExternalBlasGemmProvider&>(*cpu_engine.gemm).set_global_thread_count(threads));
  }
  std::shared_ptr<const CpuGemmProvider> gemm = cpu_engine.gemm;
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(builder.config().add_engine(std::move(cpu_engine.registration)));
  std::shared_ptr<einsum::CpuEinsumExecutor> einsum_engine;
  if (options.einsum) {
    TENFERRO_ASSIGN_OR_RETURN(einsum_engine,
                              einsum::CpuEinsumExecutor::create(std::make_shared<const DotGeneralComposite>(gemm)));
    builder.add_extension_module(einsum::cpu_extension_module(engine.id, einsum_engine));
  }
  std::shared_ptr<linalg::CpuLinalgEngine> linalg_engine;
  if (options.linalg) {
    TENFERRO_ASSIGN_OR_RETURN(linalg_engine, linalg::CpuLinalgEngine::create_default(options.linalg_options));
    builder.add_extension_module(linalg::cpu_extension_module(engine.id, linalg_engine));
  }
  for (const auto& make_module : options.extensions) builder.add_extension_module(make_module(engine.id));
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  auto ad = std::make_shared<ad::AdContext>();
  if (options.einsum) TENFERRO_TRY(ad->install_rule(einsum::einsum_ad_rule()));
  if (options.linalg) TENFERRO_TRY(linalg::install_linalg_ad_rules(*ad));
  return CpuRuntime{std::move(rt),
                    threads,
                    std::move(gemm),
                    std::move(cpu_engine.providers),
                    std::move(domains),
                    std::move(einsum_engine),
                    std::move(linalg_engine),
                    std::move(ad)};
}
}  // namespace

}  // namespace tenferro::cpu
