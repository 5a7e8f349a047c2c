// The CPU engine: registers tenferro's CPU kernels, the dot_general
// composite and a CPU resource-domain executor with the runtime
// (docs/engines.md).
//
// Usage:
//   runtime::RuntimeBuilder builder;
//   cpu::CpuEngineOptions options;            // native GEMM, calling thread
//   options.domains = my_domain_set;          // optional: Managed/External domains
//   TENFERRO_TRY(cpu::register_cpu_engine(builder, options));
//   TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, builder.build());
//   runtime::EagerContext ctx = rt.on();
//   TENFERRO_ASSIGN_OR_RETURN(Tensor c, ctx.matmul(a, b));
//
// Note [CPU engine]
//  - Every core capability slot is filled: elementwise (unary, binary,
//    compare, select, convert, constant, iota), reduction (incl. argmax /
//    argmin), indexing (gather, scatter, dynamic slices, concatenate, pad,
//    reverse), dot_general (DotGeneralComposite over the chosen GEMM
//    provider: native by default, OpenBLAS or BLIS) and layout (copy_into).
//    No subgraph compiler.
//  - The typed execution context is CpuEngineContext. Without domains the
//    executor runs inline on the calling thread with a SequentialContext;
//    with a CpuDomainSet, enter() enters the placed domain once (one
//    install) and providers use that domain's ParallelContext (the workers
//    of its thread budget) and its memory pool for temporaries. Outputs are
//    allocated from the placed domain's pool.
//  - The event-domain driver is the runtime's CPU immediate driver over that
//    executor; the cache owner reports the domains' memory pools (cached
//    blocks) and clears them.
//  - Slots validate each request (operand count, attributes, output dtype)
//    and the kernels validate shapes, dtypes and aliasing before anything is
//    written: bad input is a typed error and leaves every object valid.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/gemm/dot_general.h"
#include "tenferro/cpu/gemm/external_blas.h"
#include "tenferro/cpu/parallel.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/execution_context.h"
#include "tenferro/runtime/spi/engine.h"

namespace tenferro::runtime {
class RuntimeBuilder;
}  // namespace tenferro::runtime

namespace tenferro::cpu {

class CpuDomainSet;
class CpuExecutionContext;
class CpuDomainSession;

/// The GEMM provider behind the engine's dot_general.
enum class CpuGemmChoice : std::uint8_t {
  kNative,    ///< NativeGemmProvider (runs on the entered domain's workers)
  kOpenBlas,  ///< ExternalBlasGemmProvider::load_openblas(openblas)
  kBlis,      ///< ExternalBlasGemmProvider::load_blis(blis)
};
std::string_view to_string(CpuGemmChoice choice) noexcept;

struct CpuEngineOptions {
  /// Unique within the runtime; non-zero.
  EngineId id = EngineId(1);
  std::string name = "cpu";
  CpuGemmChoice gemm = CpuGemmChoice::kNative;
  OpenBlasOptions openblas;
  BlisOptions blis;
  /// When set, used instead of `gemm` (e.g. a NullGemmProvider in tests).
  std::shared_ptr<const CpuGemmProvider> gemm_provider;
  DotGeneralOptions dot_general;
  /// The resource domains the engine serves. Null: one implicit domain 0
  /// running on the calling thread (sequential).
  std::shared_ptr<const CpuDomainSet> domains;
};

/// What providers of the CPU engine receive as their typed context
/// (`context.get<CpuEngineContext>()`). Borrowed for one provider call.
struct CpuEngineContext {
  /// The operation's one fan-out level (Note [One fan-out level]).
  const ParallelContext* parallel = nullptr;
  /// The entered domain's context; null without domains.
  const CpuExecutionContext* domain = nullptr;
  /// Where temporaries come from (the domain's pool); null: default heap.
  const std::shared_ptr<HostAllocator>* allocator = nullptr;
  /// The entry this context belongs to, from which the engine derives the
  /// sequential contexts of a concurrent group (Note [Concurrent groups]);
  /// null without domains and inside a group member.
  const CpuDomainSession* session = nullptr;
};

/// One provider the engine registered, for `tenferro info` and explain().
struct CpuEngineProviderInfo {
  /// kDotGeneral is listed twice: the composite and its GEMM provider.
  runtime::OpFamily family = runtime::OpFamily::kElementwise;
  std::string name;
  ProviderCapability capability;
};

/// The ParallelContext an extension provider (einsum, linalg) installed on
/// a CPU engine runs with: CpuEngineContext::parallel on the engine built
/// here, CpuExecutionContext::parallel() on an engine that enters one domain
/// directly; null for any other context type (NoExecutionContext included),
/// which the caller reports or replaces with its own fallback. One type
/// comparison per recognised type, no allocation.
const ParallelContext* parallel_context_of(runtime::ErasedExecutionContext context) noexcept;

/// The engine registration plus what it is built from.
struct CpuEngine {
  runtime::EngineRegistration registration;
  std::shared_ptr<const CpuGemmProvider> gemm;
  std::shared_ptr<const DotGeneralComposite> dot_general;
  /// One entry per filled slot (and the GEMM provider behind dot_general).
  std::vector<CpuEngineProviderInfo> providers;
};

/// The GEMM provider `options` choose: `gemm_provider` when set, otherwise
/// the one `gemm` names (with the openblas / blis options). kUnsupported
/// when the chosen external library is not available.
Result<std::shared_ptr<const CpuGemmProvider>> make_gemm_provider(const CpuEngineOptions& options);

/// Builds the CPU engine. Errors: kInvalidArgument for an invalid id;
/// kUnsupported when the chosen external GEMM library is not available (the
/// message says which file and why); kResourceExhausted / kUnsupported from
/// the native GEMM provider's creation.
Result<CpuEngine> make_cpu_engine(const CpuEngineOptions& options = {});

/// make_cpu_engine(options) added to `builder` (builder.config().add_engine).
Status register_cpu_engine(runtime::RuntimeBuilder& builder, const CpuEngineOptions& options = {});

}  // namespace tenferro::cpu
