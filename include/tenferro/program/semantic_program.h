// SemanticProgram: the frozen, immutable, backend- and runtime-neutral program
// artifact, with read-only views, shape-guard evaluation, its fingerprint and
// explain().
//
// Note [No runtime handles in a program]
// A SemanticProgram holds only semantic data: metadata, the closed set of
// attribute types (attributes.h), literals, guards, effects, aliases,
// placement constraints, provenance and extension payloads. It can hold no
// runtime, engine, thread pool, stream, allocator or lease handle: every
// stored type is listed in SemanticProgram::StoredTypes and checked by
// static_asserts (and by program_types_test.cpp). Extension payloads are
// semantic by contract (ExtensionOp): their identity is family id + payload
// hash/equality, never runtime state.
//
// Note [Canonical form and fingerprint]
// freeze() keeps only the operations reachable from the outputs, plus every
// effectful operation, and orders them canonically: a depth-first post-order
// from the outputs (operands in order; effect predecessors and leftover
// effectful roots in the order of their structural Merkle hashes). Values
// are numbered inputs first, then results in that order, and dimension
// symbols by first appearance in the input schemas. Hence the same program
// built in a different insertion order freezes to the same representation.
// The canonical form is a byte encoding of inputs, operations (name,
// attributes, operands, result metadata, effects, aliases, effect order,
// placement), outputs and sorted guards; bindings and provenance are
// excluded. Its SHA-256 is the fingerprint, computed once at freeze.
// structurally_equal() compares canonical forms and then extension payloads
// with payload_equal(), so it decides within a fingerprint collision bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tenferro/base/sha256.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"
#include "tenferro/program/effects.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/shape_guard.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro {
class Tensor;
}  // namespace tenferro

namespace tenferro::program {

class ExtensionOp;
class SemanticProgram;

/// A value of one SemanticProgram: a dense index in [0, num_values()),
/// inputs first, meaningful only with the program it came from. Runtimes use
/// it to index side tables. Trivial value type.
class ValueId {
 public:
  constexpr ValueId() noexcept = default;
  constexpr explicit ValueId(std::uint32_t index) noexcept : index_(index) {}
  constexpr std::uint32_t index() const noexcept { return index_; }
  friend constexpr bool operator==(ValueId, ValueId) noexcept = default;
  friend constexpr auto operator<=>(ValueId, ValueId) noexcept = default;

 private:
  std::uint32_t index_ = 0;
};

/// An operation of one SemanticProgram: a dense index in
/// [0, num_operations()) in topological order. Trivial value type.
class OperationId {
 public:
  constexpr OperationId() noexcept = default;
  constexpr explicit OperationId(std::uint32_t index) noexcept : index_(index) {}
  constexpr std::uint32_t index() const noexcept { return index_; }
  friend constexpr bool operator==(OperationId, OperationId) noexcept = default;
  friend constexpr auto operator<=>(OperationId, OperationId) noexcept = default;

 private:
  std::uint32_t index_ = 0;
};

/// The fingerprint of a frozen program (Note [Canonical form and
/// fingerprint]). Process-local: no wire-stability guarantee.
struct SemanticFingerprint {
  Digest256 digest;

  /// First 8 bytes: a compact cache key.
  std::uint64_t prefix64() const noexcept { return digest.prefix64(); }
  std::string hex() const { return digest.hex(); }
  friend bool operator==(const SemanticFingerprint&, const SemanticFingerprint&) = default;
};

/// Concrete metadata of one program input (borrowed).
struct ConcreteInput {
  DType dtype = DType::kFloat64;
  IntArrayRef shape;
};

/// Values of a program's dimension symbols, indexed by symbol.
using SymbolValues = SmallVector<std::int64_t, 8>;

/// A dimension symbol of a program: introduced by input `input`, axis `axis`.
struct SymbolInfo {
  std::optional<std::int64_t> upper_bound;
  std::uint32_t input = 0;
  std::uint32_t axis = 0;
};

/// Who produces a value: a program input or an operation's result.
struct ValueProducer {
  bool is_input = false;
  OperationId operation;    ///< valid when !is_input
  std::uint32_t index = 0;  ///< input position, or result index
};

namespace internal {
/// One value as stored in a builder or a program.
struct ValueRecord {
  ValueMetadata metadata;
  ValueProducer producer;
};
/// One operation as stored in a builder or a program.
struct OperationRecord {
  CoreSemanticOp core = CoreSemanticOp::kNeg;    ///< when extension == nullptr
  std::shared_ptr<const ExtensionOp> extension;  ///< null for core ops
  CoreAttributes attributes;                     ///< NoAttributes for extensions
  SmallVector<ValueId, 4> operands;
  std::uint32_t first_result = 0;
  std::uint32_t num_results = 0;
  EffectSet effects;
  SmallVector<AliasDecl, 1> aliases;          ///< one per result
  SmallVector<OperationId, 2> ordered_after;  ///< effect-order predecessors
  PlacementConstraint placement;
  ProvenanceRef provenance;
};
struct ProgramParts;
}  // namespace internal

/// A borrowed, read-only view of one operation; valid while its program
/// lives. Cheap to copy.
class OperationView {
 public:
  OperationId id() const noexcept { return id_; }
  bool is_core() const noexcept { return record_->extension == nullptr; }
  bool is_extension() const noexcept { return record_->extension != nullptr; }
  /// Precondition: is_core().
  CoreSemanticOp core_op() const noexcept { return record_->core; }
  /// The extension payload, or nullptr for a core op.
  const ExtensionOp* extension() const noexcept { return record_->extension.get(); }
  const std::shared_ptr<const ExtensionOp>& shared_extension() const noexcept { return record_->extension; }
  /// The core op name or the extension family id.
  std::string_view name() const noexcept;
  /// The attributes (NoAttributes for extensions).
  const CoreAttributes& attributes() const noexcept { return record_->attributes; }
  /// The attribute struct T, or nullptr when the op takes another one.
  template <class T>
  const T* attributes_as() const noexcept {
    return std::get_if<T>(&record_->attributes);
  }
  std::span<const ValueId> operands() const noexcept { return record_->operands.span(); }
  std::size_t num_results() const noexcept { return record_->num_results; }
  ValueId result(std::size_t i = 0) const noexcept {
    return ValueId(record_->first_result + static_cast<std::uint32_t>(i));
  }
  const EffectSet& effects() const noexcept { return record_->effects; }
  std::span<const AliasDecl> aliases() const noexcept { return record_->aliases.span(); }
  /// Operations that must complete first because of effects (Note [Effects and ordering]).
  std::span<const OperationId> ordered_after() const noexcept { return record_->ordered_after.span(); }
  const PlacementConstraint& placement() const noexcept { return record_->placement; }
  const ProvenanceRef& provenance() const noexcept { return record_->provenance; }

 private:
  friend class SemanticProgram;
  OperationView(const internal::OperationRecord* record, OperationId id) noexcept : record_(record), id_(id) {}
  const internal::OperationRecord* record_;
  OperationId id_;
};

/// The frozen program. Immutable and thread-safe; shared as
/// std::shared_ptr<const SemanticProgram>. Built only by
/// ProgramBuilder::freeze.
class SemanticProgram {
 public:
  /// Every type a program stores (Note [No runtime handles in a program]).
  using StoredTypes =
      std::tuple<internal::ValueRecord, internal::OperationRecord, ValueMetadata, SymbolicExtent, CoreAttributes,
                 Literal, EffectSet, AliasDecl, PlacementConstraint, ShapeGuard, ProvenanceRef,
                 std::shared_ptr<const ExtensionOp>, SymbolInfo, std::string, SemanticFingerprint>;

  SemanticProgram(const SemanticProgram&) = delete;
  SemanticProgram& operator=(const SemanticProgram&) = delete;
  ~SemanticProgram();

  // --- inputs, values, outputs ---
  std::size_t num_inputs() const noexcept { return num_inputs_; }
  /// Input i's value (inputs are values 0 .. num_inputs()-1).
  ValueId input(std::size_t i) const noexcept { return ValueId(static_cast<std::uint32_t>(i)); }
  /// The diagnostic name given at add_input ("" when none); not identity.
  std::string_view input_name(std::size_t i) const noexcept { return input_names_[i]; }
  std::span<const ValueId> outputs() const noexcept { return outputs_; }
  std::size_t num_values() const noexcept { return values_.size(); }
  const ValueMetadata& metadata(ValueId value) const noexcept { return values_[value.index()].metadata; }
  const ValueProducer& producer(ValueId value) const noexcept { return values_[value.index()].producer; }

  // --- operations (topological order) ---
  std::size_t num_operations() const noexcept { return operations_.size(); }
  OperationView operation(OperationId id) const noexcept { return {&operations_[id.index()], id}; }

  class OperationIterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = OperationView;
    using difference_type = std::ptrdiff_t;
    OperationIterator() = default;
    OperationView operator*() const noexcept { return program_->operation(OperationId(index_)); }
    OperationIterator& operator++() noexcept {
      ++index_;
      return *this;
    }
    OperationIterator operator++(int) noexcept {
      OperationIterator old = *this;
      ++index_;
      return old;
    }
    friend bool operator==(const OperationIterator&, const OperationIterator&) = default;

   private:
    friend class SemanticProgram;
    OperationIterator(const SemanticProgram* program, std::uint32_t index) : program_(program), index_(index) {}
    const SemanticProgram* program_ = nullptr;
    std::uint32_t index_ = 0;
  };
  struct OperationRange {
    OperationIterator first, last;
    OperationIterator begin() const noexcept { return first; }
    OperationIterator end() const noexcept { return last; }
  };
  /// All operations in topological (canonical) order.
  OperationRange operations() const noexcept {
    return {OperationIterator(this, 0), OperationIterator(this, static_cast<std::uint32_t>(operations_.size()))};
  }

  // --- shapes and guards ---
  std::size_t num_symbols() const noexcept { return symbols_.size(); }
  const SymbolInfo& symbol(std::size_t i) const noexcept { return symbols_[i]; }
  /// Sorted, deduplicated guards (Note [Shape guards]).
  std::span<const ShapeGuard> guards() const noexcept { return guards_; }
  /// Binds the dimension symbols from concrete `inputs` and evaluates every
  /// guard. Errors (stage kPrepare): kInvalidArgument for a wrong input
  /// count, kDTypeMismatch, kShapeMismatch for a wrong rank,
  /// kShapeGuardFailed for an exact extent, a symbol bound or a guard that
  /// does not hold (the message names the guard and its origin). On success
  /// `symbols` (when given) holds the symbol values. Allocates only when
  /// the program has more than 8 symbols, or to report an error.
  Status check_guards(std::span<const ConcreteInput> inputs, SymbolValues* symbols = nullptr) const;
  /// The same for tensors (also allocates for more than 8 inputs).
  Status check_guards(std::span<const Tensor> inputs, SymbolValues* symbols = nullptr) const;
  /// The concrete shape of `value` for symbol values from check_guards.
  Result<Dims> concrete_shape(ValueId value, std::span<const std::int64_t> symbols) const;

  // --- effects ---
  /// The union of every operation's effects (empty: the program is pure).
  const EffectSet& effects() const noexcept { return effects_; }

  // --- identity ---
  const SemanticFingerprint& fingerprint() const noexcept { return fingerprint_; }
  /// The canonical encoding the fingerprint hashes (Note [Canonical form and fingerprint]).
  std::span<const std::byte> canonical_form() const noexcept { return canonical_; }

  /// The program in readable form, one operation per line with its result
  /// metadata, attributes, effects, aliases, placement and provenance.
  std::string explain() const;

 private:
  friend struct internal::ProgramParts;
  SemanticProgram() = default;

  std::size_t num_inputs_ = 0;
  std::vector<std::string> input_names_;
  std::vector<internal::ValueRecord> values_;
  std::vector<internal::OperationRecord> operations_;
  std::vector<ValueId> outputs_;
  std::vector<SymbolInfo> symbols_;
  std::vector<ShapeGuard> guards_;
  EffectSet effects_;
  std::vector<std::byte> canonical_;
  SemanticFingerprint fingerprint_;
};

/// Exact structural equality: the same canonical form and equal extension
/// payloads (ExtensionOp::payload_equal). Decides within a fingerprint
/// collision bucket; ignores provenance and input names. Thread-safe.
bool structurally_equal(const SemanticProgram& a, const SemanticProgram& b);

}  // namespace tenferro::program
