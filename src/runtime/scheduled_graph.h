// Internal: the ScheduledGraph a PreparedProgram holds (slots, buffers,
// nodes, event domains, admission request) and the pool of reusable run
// workspaces. Built by prepare.cpp and buffer_plan.cpp, executed by
// execute.cpp, printed by explain.cpp.
//
// Note [Scheduled graph]
// Nodes are in a valid execution order (the order of Note [Execution
// order], with transfers and barriers inserted before their consumers;
// Collective nodes run on the scheduling thread, Note [Collective nodes] in
// spi/collective.h). A slot is one runtime value:
// a program input, the result of a node, or a metadata-only view of another
// slot. Every slot written by a provider is backed by a planned buffer.
// Dependencies point only into the node's own event domain, except for
// Transfer nodes (which wait for their source-domain producer on the host)
// and Barrier nodes (which wait for other-domain work on the host before the
// nodes after them are enqueued). View nodes run on the scheduling thread
// and have no event; their consumers depend on the node that produced the
// viewed storage.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tenferro/base/sharded_counters.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/admission.h"
#include "tenferro/runtime/config.h"
#include "tenferro/runtime/prepared_program.h"
#include "tenferro/runtime/signature.h"
#include "tenferro/runtime/spi/collective.h"
#include "tenferro/runtime/spi/extension.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/runtime/spi/transfer.h"

namespace tenferro::runtime::internal {

inline constexpr std::uint32_t kNoIndex = UINT32_MAX;
/// Marks a BufferInfo occupant that is a node's scratch.
inline constexpr std::uint32_t kScratchOccupant = 0x80000000u;

/// One runtime value (Note [Scheduled graph]).
struct SlotInfo {
  DType dtype = DType::kFloat64;
  Dims shape;
  /// Row-major strides for planned buffers; unused for inputs and views.
  Dims strides;
  LayoutClass layout = LayoutClass::kRowMajor;
  /// Index into PreparedState::engines of where the data lives.
  std::uint32_t engine = kNoIndex;
  std::uint32_t buffer = kNoIndex;       ///< planned buffer (written slots)
  std::uint32_t producer = kNoIndex;     ///< node writing or viewing it; kNoIndex for inputs
  std::uint32_t input = kNoIndex;        ///< program input position
  std::uint32_t view_source = kNoIndex;  ///< the slot a view node derives it from
  /// The node whose completion makes the storage readable (follows views).
  std::uint32_t storage_producer = kNoIndex;
  /// Position of the last node reading it (or any view of it).
  std::uint32_t last_use = 0;
  bool is_output = false;
  /// The memory escapes the run (an output, or viewed by one): planned in a
  /// buffer of its own, allocated per run.
  bool escapes = false;
  /// Read by a node of another event domain (a transfer): its buffer is
  /// never reused within the run.
  bool read_cross_domain = false;

  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel_unchecked(shape)) * dtype_size(dtype); }
};

/// One planned buffer.
struct BufferInfo {
  std::size_t bytes = 0;
  std::uint32_t engine = kNoIndex;
  ResolvedPlacement placement;
  /// Allocated fresh for every run (escaping memory) instead of living in
  /// the reusable run workspace.
  bool per_run = false;
  bool scratch = false;
  /// What it holds over time, in order: slot indices, or kScratchOccupant |
  /// node index for a node's scratch.
  SmallVector<std::uint32_t, 2> occupants;
  /// First and last schedule position it is live.
  std::uint32_t first_node = 0;
  std::uint32_t last_node = 0;
};

/// One scheduled node.
struct NodeRecord {
  ScheduledNodeKind kind = ScheduledNodeKind::kOperation;
  std::uint32_t engine = kNoIndex;         ///< executing (destination) engine
  std::uint32_t source_engine = kNoIndex;  ///< transfers: source engine
  std::uint32_t domain = kNoIndex;         ///< index into PreparedState::domains
  ResolvedPlacement placement;
  SmallVector<std::uint32_t, 4> inputs;   ///< slots read
  SmallVector<std::uint32_t, 2> outputs;  ///< slots written (or the view)
  SmallVector<std::uint32_t, 4> deps;     ///< same-domain nodes (source-domain for transfers/barriers)

  // Operation / view payload.
  program::CoreSemanticOp op = program::CoreSemanticOp::kAdd;
  const program::CoreAttributes* attributes = nullptr;
  const CoreFamilyRuntime* provider = nullptr;
  // Extension payload.
  const ExtensionEngine* extension = nullptr;
  const program::ExtensionOp* extension_op = nullptr;
  // Copy payload.
  const LayoutRuntime* layout = nullptr;
  // Transfer payload.
  TransferProvider* transfer = nullptr;
  TransferEndpoint transfer_source;
  TransferEndpoint transfer_destination;
  // Collective payload (Note [Collective nodes] in spi/collective.h).
  const CollectiveProvider* collective = nullptr;
  const program::CollectiveOp* collective_op = nullptr;

  std::shared_ptr<const ProviderPlan> plan;
  std::uint32_t scratch_buffer = kNoIndex;
  std::size_t scratch_bytes = 0;
  SmallVector<ResourceAmount, 2> resources;
  /// A Donatable program-input slot whose storage may become output 0.
  std::uint32_t donate_input = kNoIndex;
  /// Provider allows output 0 to share operand 0's buffer.
  bool in_place_ok = false;
  /// First node after the segment of consecutive same-domain, same-placement
  /// nodes starting here (entry amortisation).
  std::uint32_t segment_end = 0;
  /// Estimated flops of one run (PreparedKernel::work; 0 unknown).
  double work = 0.0;
  /// First node after the concurrent group this node starts; index + 1 when
  /// it starts none (Note [Concurrent groups]).
  std::uint32_t group_end = 0;

  // Explain.
  std::string name;
  std::string provider_name;
  std::string reason;
  program::ProvenanceRef provenance;
};

/// One event domain the schedule uses, in first-use order.
struct DomainUse {
  std::uint32_t engine = kNoIndex;
  EventDomainId id;
};

struct RunWorkspace;

/// Reusable run workspaces of one prepared program (steady-state runs
/// allocate none). Thread-safe.
/// The idle run workspaces of one prepared program. Threads running the
/// same plan at once each take one; a run gives its workspace back to the
/// list of the CPU it ran on and takes from that list first, so concurrent
/// runs do not queue on one lock (Note [Sharded counters]: one mutex made
/// two threads running one plan slower than one thread). A list that is
/// empty takes from the others before a new workspace is made, so there
/// are never more workspaces than runs that were in flight at once. Each
/// list keeps its last workspace in an atomic slot, taken and given back
/// without the mutex: the lock and unlock pairs of a run cost about 40 ns
/// of a 0.8 us run_prepared.
class WorkspacePool {
 public:
  WorkspacePool();
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;
  std::unique_ptr<RunWorkspace> take();
  void give_back(std::unique_ptr<RunWorkspace> workspace);

 private:
  static constexpr std::size_t kLists = 16;
  struct alignas(128) List {
    std::atomic<RunWorkspace*> hot{nullptr};  // owned
    std::mutex mutex;
    std::vector<std::unique_ptr<RunWorkspace>> free;
  };
  std::array<List, kLists> lists_;
};

/// Everything prepare_for produced.
struct PreparedState {
  RuntimeId runtime;
  std::uint64_t epoch = 0;
  std::shared_ptr<const RuntimeConfig> config;
  std::shared_ptr<const program::SemanticProgram> program;
  /// Core-lowering fragments whose attributes nodes point into.
  std::vector<std::shared_ptr<const program::SemanticProgram>> fragments;
  /// Attributes whose symbolic result shape was evaluated for the concrete
  /// inputs (Note [Concrete validation]); nodes point into them.
  std::vector<std::shared_ptr<const program::CoreAttributes>> concrete_attributes;
  InputSignature signature;
  PrepareOptions options;
  Determinism determinism = Determinism::kFast;

  /// Engines the schedule uses (pointers into `config`).
  std::vector<const EngineEntry*> engines;
  std::vector<SlotInfo> slots;
  std::vector<BufferInfo> buffers;
  std::vector<NodeRecord> nodes;
  std::vector<DomainUse> domains;
  std::vector<std::uint32_t> input_slots;
  std::vector<std::uint32_t> output_slots;
  /// Run-level memory admission (canonical order).
  std::vector<ResourceAmount> admission;
  std::size_t peak_bytes = 0;
  std::size_t workspace_bytes = 0;  ///< buffers kept in run workspaces
  /// Resolution notes for explain() (placement reasons, refused candidates).
  std::vector<std::string> notes;

  mutable WorkspacePool pool;

  std::uint32_t engine_index(const EngineEntry* entry);
};

/// Builds the PreparedState (prepare.cpp). Errors are kPrepare-stage.
Result<std::unique_ptr<PreparedState>> prepare_program(std::shared_ptr<const RuntimeConfig> config,
                                                       std::shared_ptr<const program::SemanticProgram> program,
                                                       const InputSignature& signature, const PrepareOptions& options);

/// Liveness, buffer assignment with reuse and in-place donation, reuse
/// ordering edges, peak estimate and admission request (buffer_plan.cpp).
void plan_buffers(PreparedState& state);

/// Fills segment_end and the domain list (schedule.cpp).
void finish_schedule(PreparedState& state);

/// Fills group_end from the data dependencies, before the buffer plan
/// (concurrent_groups.cpp, Note [Concurrent groups]).
void form_concurrent_groups(PreparedState& state);

/// Re-infers a core op / extension op from concrete operand metadata and
/// checks it against the program's (Note [Concrete validation],
/// schedule.cpp). Errors are kPrepare-stage.
/// `attributes` with their result shape attribute (iota, rng_philox,
/// broadcast_in_dim, reshape) set to the concrete `shape`, when that
/// attribute is symbolic; nullopt otherwise (Note [Concrete validation]).
std::optional<program::CoreAttributes> concrete_attributes(const program::CoreAttributes& attributes,
                                                           IntArrayRef shape);
Status check_concrete_core(program::CoreSemanticOp op, const program::CoreAttributes& attributes,
                           std::span<const program::ValueMetadata> operands, DType dtype, IntArrayRef shape,
                           std::string_view name);
Status check_concrete_extension(const program::ExtensionOp& op, std::span<const program::ValueMetadata> operands,
                                std::span<const DType> dtypes, std::span<const Dims> shapes);

/// The provider and prepared kernel of a Collective node on host engine
/// `engine` (collective_node.cpp). Errors are kPrepare-stage:
/// kUnsupportedOperation without a provider for the communicator or when it
/// refuses, kDeterminismUnsupported when reproducibility is required and
/// the kernel is not reproducible, the provider's own errors.
struct ResolvedCollective {
  const CollectiveProvider* provider = nullptr;
  PreparedKernel kernel;
};
Result<ResolvedCollective> resolve_collective(const PreparedState& state, const program::CollectiveOp& op,
                                              const SlotInfo& operand, DType dtype, IntArrayRef shape,
                                              ResolvedPlacement placement);

/// Calls CollectiveProvider::abandon for every Collective node from
/// position `first` on, in schedule order, after a run failed with
/// `failure` (Note [Collective nodes]). Their errors are not reported: the
/// run keeps `failure`.
void abandon_collectives(const PreparedState& state, std::uint32_t first, const Status& failure);

/// The layout class of a view op's result given its source's (schedule.cpp).
LayoutClass view_layout(program::CoreSemanticOp op, LayoutClass source, IntArrayRef in_shape, IntArrayRef out_shape,
                        const program::CoreAttributes* attributes);

/// A metadata-only view (transpose, reshape, slice, broadcast_in_dim) of
/// `src` with result shape `out_shape`; shared by prepared runs and eager
/// calls (execute.cpp). kLayoutRequiresCopy when strides cannot express it.
Result<Tensor> apply_view_op(program::CoreSemanticOp op, const program::CoreAttributes& attributes, const Tensor& src,
                             IntArrayRef out_shape);

/// explain() text (explain.cpp).
std::string explain_prepared(const PreparedState& state);

/// One input's contribution to CPU-domain affinity.
struct AffinityWeight {
  MemoryAffinity affinity;
  std::size_t bytes = 0;
};

/// The placement resolver shared by eager and prepared paths (docs/runtime.md,
/// "Eager contexts"): the engine for `placement` and, for an
/// engine with several domains, the domain. An explicit domain wins;
/// otherwise the policy applies: DominantInputBytes picks the domain with
/// the largest sum of input bytes (ties by lowest domain id; inputs without
/// a CPU-domain affinity of this engine do not count; the engine default
/// when none does); RequireSingleDomain additionally rejects inputs from
/// several domains (kPlacementError). `reason` (when given) receives why.
/// Never allocates unless `reason` is given or it fails.
Result<ResolvedPlacement> resolve_placement(const RuntimeConfig& config, Placement placement,
                                            std::span<const AffinityWeight> inputs, std::string* reason);
/// Whether `engine` is one a CPU-domain or device placement points at: of
/// that hardware class (CPU or reference; GPU) and serving that domain or
/// device, whichever engine the placement names. False for other kinds.
bool serves_placement(const EngineEntry& engine, const Placement& placement) noexcept;

}  // namespace tenferro::runtime::internal
