// PyRuntime (py_runtime.h): the runtime a tenferro.Runtime object owns.
#include "py_runtime.h"

#include <fmt/format.h>

#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_engine/engine.h"
#include "tenferro/einsum/contraction_order.h"
#include "tenferro/einsum/einsum_ad_rule.h"
#include "tenferro/einsum_cpu/cpu_engine.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/linalg/ad_rules.h"
#include "tenferro/linalg_cpu/cpu_engine.h"

namespace tenferro::python {
namespace {

constexpr ErrorStage kStage = ErrorStage::kConfiguration;
// Bound on each op cache; a program that makes more distinct subscripts
// than this starts over (parsing again is cheap next to the first call).
constexpr std::size_t kMaxCachedOps = 4096;

Error invalid(std::string message) { return Error(ErrorCode::kInvalidArgument, kStage, std::move(message)); }

Result<std::shared_ptr<const cpu::CpuGemmProvider>> make_gemm(const std::string& name, int threads) {
  if (name == "native") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  if (name == "openblas") {
    // As in the CLI: the serial build runs on the engine's thread; above one
    // thread the pthread build's process-global count is OpenBLAS's only control.
    cpu::OpenBlasOptions options;
    options.build = threads > 1 ? cpu::OpenBlasBuild::kPthread : cpu::OpenBlasBuild::kSerial;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::ExternalBlasGemmProvider> gemm,
                              cpu::ExternalBlasGemmProvider::load_openblas(options));
    if (threads > 1) TENFERRO_TRY(gemm->set_global_thread_count(threads));
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  if (name == "blis") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::ExternalBlasGemmProvider> gemm,
                              cpu::ExternalBlasGemmProvider::load_blis());
    return std::shared_ptr<const cpu::CpuGemmProvider>(std::move(gemm));
  }
  return invalid(fmt::format("Runtime: gemm '{}': expected native, openblas or blis", name));
}

// One managed CPU domain over the first `threads` allowed CPUs (as the CLI's
// --threads builds it).
Result<std::shared_ptr<const cpu::CpuDomainSet>> managed_domains(const cpu::CpuTopology& topology, int threads) {
  const std::vector<int> allowed = topology.allowed_cpus().to_vector();
  cpu::CpuDomainSpec spec;
  spec.id = CpuDomainId(1);
  for (int i = 0; i < threads; ++i) spec.cpus.add(allowed[static_cast<std::size_t>(i)]);
  spec.thread_budget = threads;
  const cpu::CpuDomainSpec specs[] = {spec};
  return cpu::CpuDomainSet::create_managed(topology, specs);
}

}  // namespace

Result<einsum::PlanningPolicy> policy_of(const OptimizeSpec& spec, std::int32_t num_operands) {
  einsum::PlanningPolicy policy;
  policy.planner = spec.planner;
  if (spec.planner == einsum::PlannerKind::kExplicitPath) {
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionOrder order,
                              einsum::ContractionOrder::from_opt_einsum_path(num_operands, spec.path));
    policy.path = std::move(order);
  }
  return policy;
}

PyRuntime::PyRuntime(runtime::Runtime runtime, int threads, std::string gemm, std::string domain)
    : runtime_(std::move(runtime)),
      threads_(threads),
      gemm_(std::move(gemm)),
      domain_(std::move(domain)),
      context_(runtime_.on()),
      ad_(std::make_shared<ad::AdContext>()) {}

Result<std::unique_ptr<PyRuntime>> PyRuntime::create(int threads, std::string gemm, std::string domain) {
  if (threads < 0) return invalid(fmt::format("Runtime: threads={}: expected at least 1 (or None)", threads));
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuTopology topology, cpu::CpuTopology::discover());
  const int allowed = topology.allowed_cpus().count();
  if (threads == 0) threads = std::max(1, allowed);
  if (threads > allowed) {
    return invalid(fmt::format("Runtime: threads={}: this process may use {} CPUs", threads, allowed));
  }
  if (domain.empty()) domain = threads == 1 ? "inline" : "managed";
  if (domain != "inline" && domain != "managed") {
    return invalid(fmt::format("Runtime: domain '{}': expected 'inline' or 'managed'", domain));
  }
  if (domain == "inline" && threads != 1) {
    return invalid(
        fmt::format("Runtime: domain 'inline' runs on the calling thread; expected threads=1, found {}", threads));
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const cpu::CpuGemmProvider> gemm_provider, make_gemm(gemm, threads));
  TENFERRO_ASSIGN_OR_RETURN(
      std::shared_ptr<einsum::CpuEinsumExecutor> executor,
      einsum::CpuEinsumExecutor::create(std::make_shared<const cpu::DotGeneralComposite>(gemm_provider)));
  cpu::CpuEngineOptions cpu_options;
  cpu_options.gemm_provider = gemm_provider;
  // Inline: no domain, so no domain entry (or pinning) per call.
  if (domain == "managed") {
    TENFERRO_ASSIGN_OR_RETURN(cpu_options.domains, managed_domains(topology, threads));
  }
  runtime::RuntimeBuilder builder;
  TENFERRO_TRY(cpu::register_cpu_engine(builder, cpu_options));
  builder.add_extension_module(einsum::cpu_extension_module(cpu_options.id, std::move(executor)));
  // Note [Linalg threading in Python]: numpy, loaded first in the same
  // process, brings the system's OpenBLAS (usually the pthread build), and
  // the LAPACK provider then resolves to it; its threading is process-global,
  // which the strict policy rejects. The Python runtime admits it under the
  // exclusive permit instead of failing every linalg call.
  linalg::LinalgEngineOptions linalg_options;
  linalg_options.threading = cpu::ProviderThreadingPolicy::kProviderDefaultExclusive;
  builder.add_extension_module(
      linalg::cpu_extension_module(cpu_options.id, linalg::CpuLinalgEngine::create_default(linalg_options)));
  TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
  std::unique_ptr<PyRuntime> self(new PyRuntime(std::move(rt), threads, std::move(gemm), std::move(domain)));
  TENFERRO_TRY(self->ad_->install_rule(einsum::einsum_ad_rule()));
  TENFERRO_TRY(linalg::install_linalg_ad_rules(*self->ad_));
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
    for (const auto& [a, b] : spec.path) fmt::format_to(std::back_inserter(key), "{},{};", a, b);
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

std::size_t PyRuntime::cached_ops() const noexcept {
  std::size_t n = path_ops_.size();
  for (const OpMap& m : ops_) n += m.size();
  return n;
}

void PyRuntime::clear_caches() {
  for (OpMap& m : ops_) m.clear();
  path_ops_.clear();
  ad_->clear_cache();
}

}  // namespace tenferro::python
