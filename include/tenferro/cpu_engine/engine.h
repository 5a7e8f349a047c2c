// The CPU engine: registers tenferro's CPU kernels, the dot_general
// composite and a CPU resource-domain executor with the runtime
// (docs/engines.md).
//
// Usage:
//   runtime::RuntimeBuilder builder;
//   cpu::CpuEngineOptions options;            // native GEMM, calling thread
//   options.gemm = {"openblas", "native"};    // optional: GEMM candidates in order
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
//    reverse), dot_general (DotGeneralComposite over the GEMM provider the
//    candidate list selects: native by default, OpenBLAS or BLIS; Note
//    [GEMM candidates]) and layout (copy_into). No subgraph compiler.
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

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tenferro/base/ids.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/capabilities.h"
#include "tenferro/cpu/cpu_isa.h"
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

// Note [GEMM candidates]
// The GEMM provider behind dot_general comes from an ordered candidate list
// (oneDNN's implementation-list style): each name is created in turn, and a
// candidate whose creation answers kUnsupported (its library is not
// installed, the CPU lacks the instruction set it needs) is passed over with
// its reason recorded; any other error stops construction, since only
// kUnsupported lets resolution try the next candidate. The first candidate
// that is created serves every call for the engine's lifetime: the choice is
// made once at construction, so the run path is the same as with a single
// fixed provider. When every candidate refuses, construction fails with
// kUnsupported listing each refusal. The refusals are kept in CpuEngine and
// shown by CpuEngine::explain() and `tenferro info`.
//
// The names:
//   "native"    NativeGemmProvider (runs on the entered domain's workers)
//   "openblas"  ExternalBlasGemmProvider::load_openblas(openblas)
//   "blis"      ExternalBlasGemmProvider::load_blis(blis)
inline constexpr std::array<std::string_view, 3> kGemmProviderNames = {"native", "openblas", "blis"};

/// A GEMM candidate list from one name or several separated by commas
/// ("openblas,native"), in order. kInvalidArgument naming the valid names
/// for an unknown, empty or repeated name.
Result<std::vector<std::string>> parse_gemm_candidates(std::string_view list);

/// A candidate passed over during selection, and why.
struct ProviderRefusal {
  std::string candidate;
  std::string reason;
};

struct CpuEngineOptions {
  /// Unique within the runtime; non-zero.
  EngineId id = EngineId(1);
  std::string name = "cpu";
  /// The GEMM candidates, tried in order (Note [GEMM candidates]); names
  /// from kGemmProviderNames.
  std::vector<std::string> gemm = {"native"};
  OpenBlasOptions openblas;
  BlisOptions blis;
  /// When set, used instead of the `gemm` candidates (e.g. a
  /// NullGemmProvider in tests).
  std::shared_ptr<const CpuGemmProvider> gemm_provider;
  DotGeneralOptions dot_general;
  /// The instruction set of the native kernels, GEMM and layout tiles
  /// (Note [ISA cap] in tenferro/cpu/cpu_isa.h): kAuto reads
  /// TENFERRO_CPU_ISA at creation, and takes the best the CPU supports when
  /// it is unset.
  CpuIsa isa = CpuIsa::kAuto;
  /// The resource domains the engine serves. Null: one implicit domain 0
  /// running on the calling thread (sequential).
  std::shared_ptr<const CpuDomainSet> domains;
};

/// What providers of the CPU engine receive as their typed context
/// (`context.get<CpuEngineContext>()`). Borrowed for one provider call.
struct CpuEngineContext {
  /// The operation's one fan-out level (Note [One fan-out level]); its
  /// kernel_isa() is the engine's resolved ISA cap.
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
  /// The candidates passed over before this provider (the GEMM entry only).
  std::vector<ProviderRefusal> refusals;
};

/// The ParallelContext an extension provider (einsum, linalg) installed on
/// a CPU engine runs with: CpuEngineContext::parallel on the engine built
/// here, CpuExecutionContext::parallel() on an engine that enters one domain
/// directly; null for any other context type (NoExecutionContext included),
/// which the caller reports or replaces with its own fallback. One type
/// comparison per recognised type, no allocation.
const ParallelContext* parallel_context_of(runtime::ErasedExecutionContext context) noexcept;

/// The GEMM provider a candidate list selected, and the candidates passed
/// over before it.
struct GemmSelection {
  std::shared_ptr<const CpuGemmProvider> provider;
  /// The candidate's name ("caller-supplied" for CpuEngineOptions::gemm_provider).
  std::string candidate;
  std::vector<ProviderRefusal> refusals;
};

/// The GEMM provider `options` select: `gemm_provider` when set, otherwise
/// the first of the `gemm` candidates that can be created (Note [GEMM
/// candidates]). Errors: kInvalidArgument for an unknown name or an empty
/// list; kUnsupported listing every refusal when no candidate can be
/// created; any other creation error as is.
Result<GemmSelection> select_gemm_provider(const CpuEngineOptions& options);

/// The engine registration plus what it is built from.
struct CpuEngine {
  runtime::EngineRegistration registration;
  std::shared_ptr<const CpuGemmProvider> gemm;
  /// The GEMM candidate that was selected ("native", ...).
  std::string gemm_candidate;
  /// The instruction set the options (or TENFERRO_CPU_ISA) resolved to;
  /// the native GEMM and the layout kernels run it (never kAuto).
  CpuIsa isa = CpuIsa::kPortable;
  std::shared_ptr<const DotGeneralComposite> dot_general;
  /// One entry per filled slot (and the GEMM provider behind dot_general,
  /// with the candidates refused before it).
  std::vector<CpuEngineProviderInfo> providers;

  /// One line per provider: family, name, capability detail and refusals.
  std::string explain() const;
};

/// Builds the CPU engine. Errors: kInvalidArgument for an invalid id, an
/// unknown GEMM candidate or an unknown TENFERRO_CPU_ISA value;
/// kUnsupported when options.isa (or TENFERRO_CPU_ISA) names an instruction
/// set this CPU lacks, or when no GEMM candidate can be created (the message
/// lists each refusal: which file and why); other errors from the selected
/// GEMM provider's creation.
Result<CpuEngine> make_cpu_engine(const CpuEngineOptions& options = {});

/// make_cpu_engine(options) added to `builder` (builder.config().add_engine).
Status register_cpu_engine(runtime::RuntimeBuilder& builder, const CpuEngineOptions& options = {});

}  // namespace tenferro::cpu
