// Shape guards and the constraint sink used by metadata inference.
//
// Note [Shape guards]
// Inference proves what it can at compile time: provably equal extents need
// nothing, provably different ones are a compile-stage error naming the
// node. What depends on the concrete input extents becomes a ShapeGuard: a
// canonical predicate `e == 0` or `e >= 0` over the input dimension symbols.
// A frozen program keeps its guards sorted and deduplicated (they are part
// of its identity); SemanticProgram::check_guards binds the symbols from
// concrete input shapes and evaluates every guard before any provider work,
// returning kShapeGuardFailed with the guard's reason and origin.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tenferro/base/status.h"
#include "tenferro/program/provenance.h"
#include "tenferro/program/symbolic_extent.h"

namespace tenferro::program {

enum class GuardKind : std::uint8_t {
  kEqualsZero,   ///< expression == 0
  kNonNegative,  ///< expression >= 0
};

/// A predicate on input dimension symbols (Note [Shape guards]). Identity is
/// (kind, expression); `reason` and `origin` are diagnostics only.
struct ShapeGuard {
  GuardKind kind = GuardKind::kEqualsZero;
  SymbolicExtent expression;
  std::string reason;    ///< e.g. "dot_general contracting extents are equal"
  ProvenanceRef origin;  ///< the node that required it (may be null)

  /// True when the guard holds for `symbol_values`; false also when the
  /// expression cannot be evaluated (overflow). Never allocates.
  bool holds(std::span<const std::int64_t> symbol_values) const noexcept;
  /// "s0 - s1 == 0".
  std::string to_string() const;
  /// Semantic equality: kind and expression.
  bool same_predicate(const ShapeGuard& other) const noexcept {
    return kind == other.kind && expression == other.expression;
  }
};

/// Where inference states its shape requirements. Borrowed by inference for
/// one call; not thread-safe.
class ShapeConstraints {
 public:
  /// `node` names the operation in error messages and is borrowed for the
  /// lifetime of *this. Guards are appended to `guards`; with nullptr every
  /// requirement must be decided at compile time (concrete shapes), and an
  /// undecidable one is a kShapeMismatch error.
  ShapeConstraints(std::string_view node, std::vector<ShapeGuard>* guards, ProvenanceRef origin = nullptr) noexcept
      : node_(node), guards_(guards), origin_(std::move(origin)) {}
  /// The node that defines value `value_index` of a program, named in
  /// messages as "op %index [provenance label]" (program_builder.cpp's
  /// node_label); the name is formatted only when a message or guard needs
  /// it, so that inference that succeeds formats nothing.
  ShapeConstraints(std::string_view op, std::size_t value_index, std::vector<ShapeGuard>* guards,
                   ProvenanceRef origin) noexcept
      : node_(op), value_index_(value_index), guards_(guards), origin_(std::move(origin)) {}

  /// Requires a == b. ok when provably equal; a compile-stage kShapeMismatch
  /// (naming the node, `what`, and both extents) when provably different;
  /// otherwise a guard.
  Status require_equal(const SymbolicExtent& a, const SymbolicExtent& b, std::string_view what);
  /// Likewise, with `what` formatted from `format` and `args` only when it
  /// is needed (not when a == b).
  template <class... Args>
  requires(sizeof...(Args) > 0) Status require_equal(const SymbolicExtent& a, const SymbolicExtent& b,
                                                     fmt::format_string<Args...> format, Args&&... args) {
    if (a == b) return ok_status();
    return require_equal(a, b, std::string_view(fmt::format(format, std::forward<Args>(args)...)));
  }
  /// Requires a <= b, likewise.
  Status require_less_equal(const SymbolicExtent& a, const SymbolicExtent& b, std::string_view what);

  /// The node's name (see the constructors).
  std::string node() const;
  /// A compile-stage error `code` whose message starts with the node name.
  template <class... Args>
  Error error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) const {
    return Error(code, ErrorStage::kCompile,
                 fmt::format("{}: {}", node(), fmt::format(format, std::forward<Args>(args)...)));
  }

 private:
  static constexpr std::size_t kNoValue = static_cast<std::size_t>(-1);
  Status add_guard(GuardKind kind, SymbolicExtent expression, std::string_view what);

  std::string_view node_;
  std::size_t value_index_ = kNoValue;
  std::vector<ShapeGuard>* guards_;
  ProvenanceRef origin_;
};

}  // namespace tenferro::program
