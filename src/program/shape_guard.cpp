// Shape guards and ShapeConstraints (Note [Shape guards]).
#include "tenferro/program/shape_guard.h"

#include "builder_impl.h"
#include "dim_polynomial.h"

namespace tenferro::program {
namespace {

// Guards `e == 0` and `-e == 0` are the same predicate: pick the sign that
// makes the first non-constant term positive.
SymbolicExtent normalize_sign(const SymbolicExtent& e) {
  const internal::DimPolynomial* p = internal::DimPolynomial::of(e);
  if (p == nullptr) return e;
  for (const internal::DimTerm& t : p->terms) {
    if (t.factors.empty()) continue;
    return t.coefficient < 0 ? SymbolicExtent(std::int64_t{0}) - e : e;
  }
  return e;
}

}  // namespace

namespace internal {
std::string node_label(std::string_view name, std::size_t value_index, const ProvenanceRef& provenance) {
  if (provenance && !provenance->label.empty() && provenance->label != "unattributed") {
    return fmt::format("{} %{} [{}]", name, value_index, provenance->label);
  }
  return fmt::format("{} %{}", name, value_index);
}
}  // namespace internal

bool ShapeGuard::holds(std::span<const std::int64_t> symbol_values) const noexcept {
  std::int64_t v;
  if (!expression.try_evaluate(symbol_values, &v)) return false;
  return kind == GuardKind::kEqualsZero ? v == 0 : v >= 0;
}

std::string ShapeGuard::to_string() const {
  return fmt::format("{} {} 0", expression.to_string(), kind == GuardKind::kEqualsZero ? "==" : ">=");
}

std::string ShapeConstraints::node() const {
  return value_index_ == kNoValue ? std::string(node_) : internal::node_label(node_, value_index_, origin_);
}

Status ShapeConstraints::require_equal(const SymbolicExtent& a, const SymbolicExtent& b, std::string_view what) {
  if (a == b) return ok_status();
  if (a.contains_placeholder() || b.contains_placeholder()) {
    return error(ErrorCode::kInvalidArgument, "{}: an unbound placeholder extent ({} vs {}) outside an input schema",
                 what, a.to_string(), b.to_string());
  }
  SymbolicExtent diff = a - b;
  if (diff.lower_bound() > 0 || (diff.upper_bound() && *diff.upper_bound() < 0)) {
    return error(ErrorCode::kShapeMismatch, "{}: expected equal extents, found {} and {}", what, a.to_string(),
                 b.to_string());
  }
  return add_guard(GuardKind::kEqualsZero, normalize_sign(diff), what);
}

Status ShapeConstraints::require_less_equal(const SymbolicExtent& a, const SymbolicExtent& b, std::string_view what) {
  if (a.contains_placeholder() || b.contains_placeholder()) {
    return error(ErrorCode::kInvalidArgument, "{}: an unbound placeholder extent ({} vs {}) outside an input schema",
                 what, a.to_string(), b.to_string());
  }
  SymbolicExtent diff = b - a;
  if (diff.lower_bound() >= 0) return ok_status();
  if (diff.upper_bound() && *diff.upper_bound() < 0) {
    return error(ErrorCode::kShapeMismatch, "{}: expected {} <= {}, which never holds", what, a.to_string(),
                 b.to_string());
  }
  return add_guard(GuardKind::kNonNegative, diff, what);
}

Status ShapeConstraints::add_guard(GuardKind kind, SymbolicExtent expression, std::string_view what) {
  if (guards_ == nullptr) {
    return error(ErrorCode::kShapeMismatch, "{}: cannot decide {} {} 0 without concrete shapes", what,
                 expression.to_string(), kind == GuardKind::kEqualsZero ? "==" : ">=");
  }
  guards_->push_back(ShapeGuard{kind, std::move(expression), fmt::format("{} ({})", what, node()), origin_});
  return ok_status();
}

}  // namespace tenferro::program
