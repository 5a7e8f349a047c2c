// The ready CPU runtime (include/tenferro/cpu_runtime/cpu_runtime.h).
#include "tenferro/cpu_runtime/cpu_runtime.h"

#include <fmt/format.h>

#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/einsum_cpu/cpu_engine.h"

namespace tenferro::cpu {

Result<CpuGemmChoice> parse_gemm_choice(std::string_view name) {
  for (CpuGemmChoice c : {CpuGemmChoice::kNative, CpuGemmChoice::kOpenBlas, CpuGemmChoice::kBlis}) {
    if (name == to_string(c)) return c;
  }
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                    "gemm provider: expected native, openblas or blis, found '{}'", name);
}

Result<std::shared_ptr<const CpuDomainSet>> make_managed_domains(int threads, int first_cpu) {
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
  const CpuDomainSpec specs[] = {spec};
  return CpuDomainSet::create_managed(topology, specs);
}

Result<std::shared_ptr<const CpuGemmProvider>> make_gemm_provider(CpuGemmChoice choice, int threads) {
  CpuEngineOptions options;
  options.gemm = choice;
  // The serial build runs on the engine's thread; for more threads the
  // pthread build's process-wide count is the only control OpenBLAS has.
  options.openblas.build = threads > 1 ? OpenBlasBuild::kPthread : OpenBlasBuild::kSerial;
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const CpuGemmProvider> gemm, make_gemm_provider(options));
  if (choice == CpuGemmChoice::kOpenBlas && threads > 1) {
    TENFERRO_TRY(static_cast<const ExternalBlasGemmProvider&>(*gemm).set_global_thread_count(threads));
  }
  return gemm;
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
    TENFERRO_ASSIGN_OR_RETURN(domains, make_managed_domains(options.threads));
    threads = domains->domains().front()->thread_budget();
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const CpuGemmProvider> gemm, make_gemm_provider(options.gemm, threads));
  runtime::RuntimeBuilder builder;
  CpuEngineOptions engine;
  engine.gemm_provider = gemm;
  engine.domains = domains;
  TENFERRO_TRY(register_cpu_engine(builder, engine));
  std::shared_ptr<einsum::CpuEinsumExecutor> einsum_engine;
  if (options.einsum) {
    TENFERRO_ASSIGN_OR_RETURN(einsum_engine,
                              einsum::CpuEinsumExecutor::create(std::make_shared<const DotGeneralComposite>(gemm)));
    builder.add_extension_module(einsum::cpu_extension_module(engine.id, einsum_engine));
  }
  std::shared_ptr<linalg::CpuLinalgEngine> linalg_engine;
  if (options.linalg) {
    linalg_engine = linalg::CpuLinalgEngine::create_default(options.linalg_options);
    builder.add_extension_module(linalg::cpu_extension_module(engine.id, linalg_engine));
  }
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  return CpuRuntime{std::move(rt),           threads, std::move(gemm), std::move(domains), std::move(einsum_engine),
                    std::move(linalg_engine)};
}

}  // namespace tenferro::cpu
