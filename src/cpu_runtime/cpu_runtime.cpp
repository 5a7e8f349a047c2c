// The ready CPU runtime (include/tenferro/cpu_runtime/cpu_runtime.h).
#include "tenferro/cpu_runtime/cpu_runtime.h"

#include <fmt/format.h>

#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/einsum_cpu/cpu_engine.h"

namespace tenferro::cpu {

Result<std::shared_ptr<const CpuDomainSet>> make_managed_domains(int threads, int first_cpu,
                                                                 std::chrono::microseconds worker_spin) {
  TENFERRO_ASSIGN_OR_RETURN(CpuTopology topology, CpuTopology::discover());
  const std::vector<int> allowed = topology.allowed_cpus().to_vector();
  if (threads < 0 || threads > static_cast<int>(allowed.size())) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "cpu runtime: expected 0 (all) to {} threads (the CPUs this process may use), found {}",
                      allowed.size(), threads);
  }
  if (first_cpu < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "cpu runtime: expected a first CPU position >= 0, found {}", first_cpu);
  }
  if (threads == 0) threads = static_cast<int>(allowed.size());
  CpuDomainSpec spec;
  spec.id = CpuDomainId(1);
  for (int i = 0; i < threads; ++i) {
    spec.cpus.add(allowed[static_cast<std::size_t>(first_cpu + i) % allowed.size()]);
  }
  spec.thread_budget = threads;
  spec.worker_spin = worker_spin;
  const CpuDomainSpec specs[] = {spec};
  return CpuDomainSet::create_managed(topology, specs);
}

Result<CpuRuntime> make_cpu_runtime(const CpuRuntimeOptions& options) {
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
  } else {
    TENFERRO_ASSIGN_OR_RETURN(domains, make_managed_domains(options.threads, 0, options.worker_spin));
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
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  return CpuRuntime{std::move(rt),           threads,
                    std::move(gemm),         std::move(cpu_engine.providers),
                    std::move(domains),      std::move(einsum_engine),
                    std::move(linalg_engine)};
}

}  // namespace tenferro::cpu
