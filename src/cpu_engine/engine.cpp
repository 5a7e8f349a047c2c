// The CPU engine registration (Note [CPU engine] in tenferro/cpu_engine/engine.h):
// the executor that enters a CPU domain, the domain-pool allocator, the
// cache owner over the pools, and make_cpu_engine.
#include "tenferro/cpu_engine/engine.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cpu_engine/engine_slots.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/runtime/spi/event_domain.h"

namespace tenferro::cpu {

Result<std::vector<std::string>> parse_gemm_candidates(std::string_view list) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = list.find(',', begin);
    std::string_view name = list.substr(begin, comma == std::string_view::npos ? list.size() - begin : comma - begin);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (std::find(kGemmProviderNames.begin(), kGemmProviderNames.end(), name) == kGemmProviderNames.end()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "gemm provider list '{}': expected names from {} separated by commas, found '{}'", list,
                        fmt::join(kGemmProviderNames, ", "), name);
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                        "gemm provider list '{}': expected each name once, found '{}' twice", list, name);
    }
    out.emplace_back(name);
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

namespace {

// One served domain with its pool as a HostAllocator (converted once, so
// entering never touches a reference count).
struct ServedDomain {
  const CpuResourceDomain* domain = nullptr;
  std::shared_ptr<HostAllocator> pool;
};

std::vector<ServedDomain> served_domains(const std::shared_ptr<const CpuDomainSet>& set) {
  std::vector<ServedDomain> out;
  if (set == nullptr) return out;
  for (const std::shared_ptr<const CpuResourceDomain>& d : set->domains()) out.push_back({d.get(), d->memory()});
  return out;
}

// The domain a placement names: 0 is the default (first) domain.
const ServedDomain* find_served(std::span<const ServedDomain> served, std::uint64_t domain) noexcept {
  if (served.empty()) return nullptr;
  if (domain == 0) return &served.front();
  for (const ServedDomain& s : served)
    if (s.domain->id().value() == domain) return &s;
  return nullptr;
}

Error unknown_domain(runtime::ResolvedPlacement placement, std::string_view what) {
  return make_error(ErrorCode::kPlacementError, ErrorStage::kEnqueue,
                    "cpu engine {}: {} expected a CPU domain this engine serves, found domain {}", placement.engine,
                    what, placement.domain);
}

// Note [CPU engine executor]
// Without domains the body runs inline with a SequentialContext (the
// executor's own, immutable). With domains it enters the placed domain once
// (CpuResourceDomain::enter: one install, the entering thread pinned for
// the entry) and derives one kInner context: providers split work over the
// domain's workers with one fan-out level, and a re-entry from inside a
// domain job is rejected by the domain (kReentryRejected). Every context it
// hands out reports the engine's resolved ISA cap as kernel_isa(), so the
// layout kernels honour CpuEngineOptions::isa like the native GEMM does.
class CpuEngineExecutor final : public runtime::EngineExecutor {
 public:
  CpuEngineExecutor(std::shared_ptr<const CpuDomainSet> domains, CpuIsa isa)
      : domains_(std::move(domains)), served_(served_domains(domains_)), sequential_(isa) {}

  runtime::ExecutionContextTypeId context_type() const noexcept override {
    return runtime::ExecutionContextTypeId::of<CpuEngineContext>();
  }

  Status enter(runtime::ResolvedPlacement placement,
               FunctionRef<Status(runtime::ErasedExecutionContext)> body) noexcept override {
    if (served_.empty()) {
      CpuEngineContext context;
      context.parallel = &sequential_;
      return body(runtime::ErasedExecutionContext::of(context));
    }
    const ServedDomain* served = find_served(served_, placement.domain);
    if (served == nullptr) return unknown_domain(placement, "enter");
    return served->domain->enter([&](const CpuDomainSession& session) -> Status {
      const CpuExecutionContext operation = session.context(ParallelMode::kInner);
      const KernelIsaContext parallel(operation.parallel(), sequential_.kernel_isa());
      CpuEngineContext context;
      context.parallel = &parallel;
      context.domain = &operation;
      context.allocator = &served->pool;
      context.session = &session;
      return body(runtime::ErasedExecutionContext::of(context));
    });
  }

  // Note [CPU concurrent groups]
  // Inside an entry on a domain of T >= 2 threads the members run in
  // batches of up to T, one per worker, each with a kSequential context of
  // the same session; a single member left after the batches runs with the
  // entry's own (kInner) context, so it still uses every worker.
  void run_concurrently(runtime::ErasedExecutionContext entered, std::size_t count,
                        FunctionRef<void(std::size_t, runtime::ErasedExecutionContext)> task) noexcept override {
    const CpuEngineContext* context = entered.get<CpuEngineContext>();
    const std::size_t threads = context != nullptr && context->session != nullptr
                                    ? static_cast<std::size_t>(context->parallel->max_threads())
                                    : 1;
    std::size_t i = 0;
    if (threads >= 2) {
      const CpuExecutionContext sequential = context->session->context(ParallelMode::kSequential);
      const KernelIsaContext member_parallel(sequential.parallel(), sequential_.kernel_isa());
      CpuEngineContext member;
      member.parallel = &member_parallel;
      member.domain = &sequential;
      member.allocator = context->allocator;
      const runtime::ErasedExecutionContext erased = runtime::ErasedExecutionContext::of(member);
      while (count - i >= 2) {
        const std::size_t batch = std::min(count - i, threads);
        context->parallel->parallel_for(0, static_cast<std::int64_t>(batch), 1, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t q = b; q < e; ++q) task(i + static_cast<std::size_t>(q), erased);
        });
        i += batch;
      }
    }
    for (; i < count; ++i) task(i, entered);
  }

 private:
  std::shared_ptr<const CpuDomainSet> domains_;
  std::vector<ServedDomain> served_;
  SequentialContext sequential_;  // reports the engine's ISA cap; every context handed out passes it on
};

// Outputs and intermediates come from the placed domain's pool.
class CpuDomainAllocator final : public runtime::EngineAllocator {
 public:
  explicit CpuDomainAllocator(std::shared_ptr<const CpuDomainSet> domains)
      : domains_(std::move(domains)), served_(served_domains(domains_)) {}

  Result<StorageRef> allocate(std::size_t nbytes, runtime::ResolvedPlacement placement) noexcept override {
    const ServedDomain* served = find_served(served_, placement.domain);
    if (served == nullptr) return unknown_domain(placement, "allocate");
    return served->domain->memory()->allocate_storage(nbytes);
  }

 private:
  std::shared_ptr<const CpuDomainSet> domains_;
  std::vector<ServedDomain> served_;
};

// Note [Calling-thread pool]
// An engine without domains runs on the calling thread and has no domain
// pool. Its outputs and intermediates of kPooledBytes or more come from one
// engine-wide pool (no domain, no affinity), smaller ones from the plain
// operator new, which is cheaper per call. Without the pool, a large result
// freed by one call was mapped and zeroed again by the next: a Python loop
// of 128 MiB outer products on Runtime(threads=1) took 17-18 ms per call,
// against 11-12 ms on a pooled runtime (docs/performance_notes.md,
// "Huge pages").
class CallingThreadAllocator final : public runtime::EngineAllocator {
 public:
  static constexpr std::size_t kPooledBytes = std::size_t{64} << 10;

  explicit CallingThreadAllocator(std::shared_ptr<CpuDomainMemoryPool> pool) : pool_(std::move(pool)) {}

  Result<StorageRef> allocate(std::size_t nbytes, runtime::ResolvedPlacement /*placement*/) noexcept override {
    if (nbytes < kPooledBytes) return Storage::allocate_host(nbytes);
    return pool_->allocate_storage(nbytes);
  }

 private:
  std::shared_ptr<CpuDomainMemoryPool> pool_;
};

// The engine's caches are its memory pools' cached free blocks.
class CpuEngineCacheOwner final : public runtime::CacheOwner {
 public:
  explicit CpuEngineCacheOwner(std::vector<std::shared_ptr<CpuDomainMemoryPool>> pools) : pools_(std::move(pools)) {}

  runtime::CacheUsage usage() const noexcept override {
    runtime::CacheUsage usage;
    for (const std::shared_ptr<CpuDomainMemoryPool>& pool : pools_) {
      const MemoryPoolStats stats = pool->stats();
      usage.entries += static_cast<std::size_t>(stats.cached_blocks);
      usage.bytes += static_cast<std::size_t>(stats.cached_bytes);
      usage.hits += stats.reused;
      usage.misses += stats.allocations - stats.reused;
    }
    return usage;
  }
  void clear() noexcept override {
    for (const std::shared_ptr<CpuDomainMemoryPool>& pool : pools_) pool->trim();
  }

 private:
  std::vector<std::shared_ptr<CpuDomainMemoryPool>> pools_;
};

// One named candidate created with the options' library settings.
Result<std::shared_ptr<const CpuGemmProvider>> make_gemm_candidate(std::string_view name,
                                                                   const CpuEngineOptions& options) {
  if (name == "native") {
    NativeGemmOptions native;
    native.isa = options.isa;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<NativeGemmProvider> p, NativeGemmProvider::create(native));
    return std::shared_ptr<const CpuGemmProvider>(std::move(p));
  }
  if (name == "openblas") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<ExternalBlasGemmProvider> p,
                              ExternalBlasGemmProvider::load_openblas(options.openblas));
    return std::shared_ptr<const CpuGemmProvider>(std::move(p));
  }
  if (name == "blis") {
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<ExternalBlasGemmProvider> p,
                              ExternalBlasGemmProvider::load_blis(options.blis));
    return std::shared_ptr<const CpuGemmProvider>(std::move(p));
  }
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                    "gemm provider: expected one of {}, found '{}'", fmt::join(kGemmProviderNames, ", "), name);
}

}  // namespace

Result<GemmSelection> select_gemm_provider(const CpuEngineOptions& options) {
  if (options.gemm_provider != nullptr) return GemmSelection{options.gemm_provider, "caller-supplied", {}};
  if (options.gemm.empty()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "gemm provider list: expected at least one of {}, found none",
                      fmt::join(kGemmProviderNames, ", "));
  }
  GemmSelection selection;
  for (const std::string& name : options.gemm) {
    Result<std::shared_ptr<const CpuGemmProvider>> created = make_gemm_candidate(name, options);
    if (created.ok()) {
      selection.provider = *std::move(created);
      selection.candidate = name;
      return selection;
    }
    // Only kUnsupported lets the next candidate be tried (Note [GEMM candidates]).
    if (created.status().code() != ErrorCode::kUnsupported) return created.status();
    selection.refusals.push_back({name, std::string(created.status().message())});
  }
  std::string refused;
  for (const ProviderRefusal& r : selection.refusals) refused += fmt::format("; {}: {}", r.candidate, r.reason);
  return make_error(ErrorCode::kUnsupported, ErrorStage::kConfiguration,
                    "gemm provider: expected one of the candidates {} to be available, found every one refused{}",
                    fmt::join(options.gemm, ", "), refused);
}

Result<CpuEngine> make_cpu_engine(const CpuEngineOptions& options) {
  if (!options.id.valid()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "cpu engine '{}': expected a non-zero engine id, found 0", options.name);
  }
  // An ISA cap the CPU cannot honour fails the engine, before the GEMM
  // candidates could take it for a reason to fall back to another library.
  Result<CpuIsa> isa = resolve_cpu_isa(options.isa);
  if (!isa.ok()) {
    return isa.status().with_context(fmt::format("cpu engine '{}': {}", options.name, isa.status().message()),
                                     ErrorStage::kConfiguration);
  }
  // The candidates get the resolved set, so the environment is read once.
  CpuEngineOptions resolved = options;
  resolved.isa = *isa;
  Result<GemmSelection> gemm = select_gemm_provider(resolved);
  if (!gemm.ok()) {
    return gemm.status().with_context(fmt::format("cpu engine '{}': {}", options.name, gemm.status().message()),
                                      ErrorStage::kConfiguration);
  }
  CpuEngine engine;
  engine.gemm = std::move(gemm->provider);
  engine.gemm_candidate = std::move(gemm->candidate);
  engine.isa = *isa;
  engine.dot_general = std::make_shared<const DotGeneralComposite>(engine.gemm, nullptr, options.dot_general);

  runtime::EngineRegistration& r = engine.registration;
  r.metadata.id = options.id;
  r.metadata.name = options.name;
  r.metadata.hardware = runtime::HardwareClass::kCpu;
  r.metadata.storage = kHostStorageDomain;
  std::vector<std::shared_ptr<CpuDomainMemoryPool>> pools;
  if (options.domains != nullptr) {
    for (const std::shared_ptr<const CpuResourceDomain>& d : options.domains->domains()) {
      r.metadata.domains.push_back(d->id().value());
      pools.push_back(d->memory());
    }
    r.metadata.default_domain = options.domains->default_domain().id().value();
    r.allocator = std::make_shared<CpuDomainAllocator>(options.domains);
  } else {
    pools.push_back(CpuDomainMemoryPool::create(CpuDomainId(), std::nullopt, nullptr));
    r.allocator = std::make_shared<CallingThreadAllocator>(pools.back());
  }
  r.capabilities.elementwise = internal::make_elementwise_slot();
  r.capabilities.reduction = internal::make_reduction_slot();
  r.capabilities.indexing = internal::make_indexing_slot();
  r.capabilities.dot_general = internal::make_dot_general_slot(engine.dot_general);
  r.capabilities.layout = internal::make_layout_slot();
  r.executor = std::make_shared<CpuEngineExecutor>(options.domains, *isa);
  r.event_driver = runtime::make_cpu_immediate_event_driver(r.executor);
  r.cache_owner = std::make_shared<CpuEngineCacheOwner>(std::move(pools));

  // The kernels run exactly on the workers of the context they are given.
  const bool parallel = options.domains != nullptr;
  const ProviderCapability kernels{parallel ? ThreadCountControl::kPerCall : ThreadCountControl::kSequential,
                                   parallel ? PlacementControl::kEngineWorkers : PlacementControl::kCallingThread,
                                   parallel ? "tenferro kernels on the entered domain's workers"
                                            : "tenferro kernels on the calling thread (no domains configured)"};
  using runtime::OpFamily;
  engine.providers.push_back({OpFamily::kElementwise, std::string(r.capabilities.elementwise->name()), kernels});
  engine.providers.push_back({OpFamily::kReduction, std::string(r.capabilities.reduction->name()), kernels});
  engine.providers.push_back({OpFamily::kIndexing, std::string(r.capabilities.indexing->name()), kernels});
  engine.providers.push_back({OpFamily::kLayout, std::string(r.capabilities.layout->name()), kernels});
  ProviderCapability composite = kernels;
  composite.detail = fmt::format("TTGT composite over the {} GEMM provider", engine.gemm->name());
  engine.providers.push_back({OpFamily::kDotGeneral, std::string(r.capabilities.dot_general->name()), composite});
  engine.providers.push_back({OpFamily::kDotGeneral, fmt::format("gemm.{}", engine.gemm->name()),
                              engine.gemm->capability(), std::move(gemm->refusals)});
  return engine;
}

std::string CpuEngine::explain() const {
  std::string out;
  for (const CpuEngineProviderInfo& p : providers) {
    out += fmt::format("{}: {} ({})", runtime::to_string(p.family), p.name, p.capability.detail);
    for (const ProviderRefusal& r : p.refusals) out += fmt::format("; candidate {} refused: {}", r.candidate, r.reason);
    out += "\n";
  }
  return out;
}

const ParallelContext* parallel_context_of(runtime::ErasedExecutionContext context) noexcept {
  if (const auto* engine = context.get<CpuEngineContext>()) return engine->parallel;
  if (const auto* domain = context.get<CpuExecutionContext>()) return &domain->parallel();
  return nullptr;
}

Status register_cpu_engine(runtime::RuntimeBuilder& builder, const CpuEngineOptions& options) {
  TENFERRO_ASSIGN_OR_RETURN(CpuEngine engine, make_cpu_engine(options));
  return builder.config().add_engine(std::move(engine.registration));
}

}  // namespace tenferro::cpu
