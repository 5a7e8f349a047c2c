// GraphCompiler: the pure semantic compiler from a TracedGraph to a
// CompiledGraph{program, bindings}, with its bounded compile cache.
//
// Note [Compiler pipeline]
// compile() runs a fixed, deterministic, target-independent pipeline:
//  1. trace normalization: the traced program (already reduced to what its
//     outputs and effects need, in canonical order) is read into the
//     compiler's working graph;
//  2. metadata, constraints and shape guards: every operation keeps the
//     traced metadata; rewritten operations are re-inferred and a rewrite
//     whose inferred metadata differs is not applied; the final emission
//     re-infers everything and the compiled guards must include every
//     traced guard;
//  3. effects and aliases: effectful operations keep their relative order
//     and are never merged or removed; a value that an in-place
//     (must-alias) operation updates is never merged, replaced or given a
//     new use; an identity elimination never turns a fresh output into a
//     view of an input;
//  4. canonicalization (Note [Canonical form of the compiler]) with CSE in
//     one forward pass, then DCE;
//  5. extension output pruning (ExtensionOp::prune_outputs for unused
//     results, accepted only when the pruned op agrees with the original on
//     the live results' metadata, aliases, effects and guards), then DCE;
//  6. validation (validate_transform_output against the traced program, the
//     guard check of step 2), freeze and fingerprint. When steps 4 and 5
//     changed nothing, the input program is returned as it is: it was
//     validated, frozen and fingerprinted when it was made.
// Custom SemanticTransforms in CompilerOptions then run in order, each
// through apply_transform (validated, provenance derived); when any ran,
// steps 1-6 run once more, so a compiled program is always in canonical
// form. Inputs are kept one-to-one, so the traced bindings carry over.
//
// Note [Canonical form of the compiler]
// Rewrites, applied bottom-up in one forward pass (operands first):
//  - identities: transpose by the identity, reshape/broadcast_in_dim to the
//    operand's own shape, full slices; and (when the operand is not a view
//    of a program input, so aliasing is kept) convert to the same dtype,
//    reverse/reduce over no axes;
//  - view composition: transpose(transpose(x)) is one transpose;
//    reshape(reshape(x)) one reshape; broadcast_in_dim(broadcast_in_dim(x))
//    one broadcast_in_dim; an inner view is only bypassed when it needed no
//    shape guard, so no guard is lost;
//  - canonical operand order of commutative ops (add, mul, max, min, and,
//    or, xor, compare eq/ne): the operand defined first comes first;
//  - canonical dot_general (Note [Canonical dot_general]);
//  - CSE: pure operations with equal op, attributes (extension: family and
//    payload_equal), operands and placement are merged; the first one's
//    provenance is kept.
// A rewritten operation keeps the provenance and placement of the
// operation it replaces; rewrites only apply between operations with the
// same placement.
//
// Note [Canonical dot_general]
// A dot_general is canonical when
//  (a) no operand is a transpose whose free (non-batch, non-contracting)
//      axes keep their relative order: such a transpose is folded into the
//      dimension numbers, since it only reorders batch/contracting axes;
//  (b) its contracting pairs are sorted by lhs axis (this never changes
//      the result);
//  (c) its batch pairs are sorted by lhs axis; when that reorders them, a
//      transpose of the result restores the traced axis order (and composes
//      with a consumer transpose).
// Free axes stay in operand order, so the runtime sees [batch, lhs free,
// rhs free] results with batch and contracting dimensions in lhs order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tenferro/base/status.h"
#include "tenferro/compiler/trace_context.h"
#include "tenferro/program/program_bindings.h"
#include "tenferro/program/semantic_program.h"
#include "tenferro/program/semantic_transform.h"

namespace tenferro::compiler {

/// What the pipeline did (for tests, benchmarks and explain()).
struct CompileMetrics {
  bool cache_hit = false;
  std::size_t operations_in = 0;   ///< operations of the traced program
  std::size_t operations_out = 0;  ///< operations of the compiled program
  std::size_t identities_removed = 0;
  std::size_t views_composed = 0;  ///< transpose, reshape and broadcast_in_dim pairs made one
  std::size_t commutative_operands_swapped = 0;
  std::size_t dot_general_transposes_folded = 0;
  std::size_t dot_general_dimensions_sorted = 0;
  std::size_t common_subexpressions = 0;  ///< operations merged into an equal one
  std::size_t dead_operations = 0;        ///< operations removed by DCE
  std::size_t extension_outputs_pruned = 0;
  std::size_t custom_transforms = 0;
  /// Fixed-pipeline runs that changed nothing and so returned their input
  /// program as it was (already validated and fingerprinted), skipping
  /// re-emission (Note [Compiler pipeline]).
  std::size_t unchanged_programs_reused = 0;
};

/// The compiler's result: the frozen program and the bindings of its
/// inputs (those of the traced graph: inputs are kept one-to-one). Copies
/// share the program and the tensors. Thread-safe to read.
struct CompiledGraph {
  std::shared_ptr<const program::SemanticProgram> program;
  program::ProgramBindings bindings;
  /// On a cache hit: the metrics of the compile that filled the entry, with
  /// cache_hit set.
  CompileMetrics metrics;

  /// The program for a person: every operation with its provenance (where
  /// in the trace it came from and which rewrite or transform made it),
  /// which inputs are bound, and what the pipeline did.
  std::string explain() const;
};

/// Flags and custom transforms of one compile. Part of the cache key.
struct CompilerOptions {
  bool canonicalize = true;                     ///< Note [Canonical form of the compiler] (without CSE)
  bool eliminate_common_subexpressions = true;  ///< CSE
  bool prune_extension_outputs = true;          ///< pipeline step 5
  /// Run in order after the fixed pipeline; their identities (name and
  /// options hash, in order) enter the cache key. Retained by the options.
  std::vector<std::shared_ptr<const program::SemanticTransform>> transforms;
};

/// Bounds of the compile cache. An entry larger than max_bytes is not kept.
struct CompileCacheConfig {
  std::size_t max_entries = 256;
  std::size_t max_bytes = std::size_t{64} << 20;
};

/// Compile cache statistics. `bytes` counts the canonical forms of the
/// traced and compiled programs of each entry (Note [Compile cache]).
struct CompileCacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::size_t entries = 0;
  std::size_t bytes = 0;
};

/// The pure semantic compiler (Note [Compiler pipeline]) and its compile
/// cache.
///
/// Note [Compile cache]
/// The key is the traced program's structure (its fingerprint, then
/// structural equality within the bucket) plus the options: the three flags
/// and the ordered transform identities. Bindings and provenance are not
/// part of the key: a hit returns the program compiled for the first
/// structurally equal trace (with that trace's provenance and input names)
/// and the bindings of the graph being compiled. Least recently used
/// entries are evicted beyond max_entries or max_bytes; an entry retains
/// both programs, and its size is their canonical forms' bytes (one
/// program's when compilation returned the traced program unchanged).
///
/// Thread-safety: compile(), cache_stats() and clear_cache() may be called
/// concurrently. The cache lock is never held while compiling; two threads
/// missing on the same key both compile and the first insertion wins (the
/// results are structurally equal). Failed compiles are not cached.
class GraphCompiler {
 public:
  explicit GraphCompiler(CompileCacheConfig config = {});
  ~GraphCompiler();
  GraphCompiler(const GraphCompiler&) = delete;
  GraphCompiler& operator=(const GraphCompiler&) = delete;

  /// Compiles `graph` (retained by the cache entry). Errors are
  /// compile-stage and name the offending node and its provenance:
  /// kInvalidArgument for an empty graph; kContractViolation when an
  /// extension's metadata inference or output pruning contradicts itself,
  /// or a custom transform produces an invalid program; errors returned or
  /// thrown by extension and transform code.
  Result<CompiledGraph> compile(const TracedGraph& graph, const CompilerOptions& options = {});

  CompileCacheStats cache_stats() const;
  /// Drops every entry (statistics other than entries/bytes are kept).
  void clear_cache();
  const CompileCacheConfig& cache_config() const noexcept;

 private:
  class Cache;
  std::unique_ptr<Cache> cache_;
};

/// The fixed pipeline and the transforms without the cache (what compile()
/// runs on a miss). Pure; thread-safe.
Result<CompiledGraph> compile_uncached(const TracedGraph& graph, const CompilerOptions& options = {});

}  // namespace tenferro::compiler
