// Symbolic extents: canonical polynomial arithmetic over dimension symbols,
// bounds, evaluation and substitution (Note [Symbolic extents]).
//
// Coefficient arithmetic saturates at the int64 limits instead of failing:
// operators cannot return errors, and metadata inference checks exact
// element counts separately (checked_numel) before building extents.
#include "tenferro/program/symbolic_extent.h"

#include <algorithm>

#include <fmt/format.h>

#include "dim_polynomial.h"
#include "hashing.h"

namespace tenferro::program {
namespace internal {
namespace {

std::int64_t add_saturating(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? kPlusInfinity : kMinusInfinity;
}
std::int64_t sub_saturating(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? kPlusInfinity : kMinusInfinity;
}
std::int64_t mul_saturating(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? kMinusInfinity : kPlusInfinity;
}

// Interval endpoints: kMinusInfinity / kPlusInfinity are infinities.
bool is_infinite(std::int64_t v) noexcept { return v == kPlusInfinity || v == kMinusInfinity; }
std::int64_t bound_mul(std::int64_t a, std::int64_t b) noexcept {
  if (a == 0 || b == 0) return 0;
  if (is_infinite(a) || is_infinite(b)) return ((a < 0) != (b < 0)) ? kMinusInfinity : kPlusInfinity;
  return mul_saturating(a, b);
}
std::int64_t bound_add(std::int64_t a, std::int64_t b) noexcept {
  if (a == kPlusInfinity || b == kPlusInfinity) return kPlusInfinity;
  if (a == kMinusInfinity || b == kMinusInfinity) return kMinusInfinity;
  return add_saturating(a, b);
}
struct Interval {
  std::int64_t lo, hi;
};
Interval interval_mul(Interval a, Interval b) noexcept {
  std::int64_t p[4] = {bound_mul(a.lo, b.lo), bound_mul(a.lo, b.hi), bound_mul(a.hi, b.lo), bound_mul(a.hi, b.hi)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

Interval interval_of(const SymbolicExtent& e) noexcept {
  const DimPolynomial* p = DimPolynomial::of(e);
  if (p == nullptr) {
    std::int64_t c = DimPolynomial::constant_of(e);
    return {c, c};
  }
  return {p->lower, p->upper};
}

Interval interval_of(const DimAtom& atom) noexcept {
  switch (atom.kind) {
    case DimAtom::Kind::kSymbol:
      return {0, atom.bound};
    case DimAtom::Kind::kMin: {
      Interval a = interval_of((*atom.args)[0]), b = interval_of((*atom.args)[1]);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case DimAtom::Kind::kMax: {
      Interval a = interval_of((*atom.args)[0]), b = interval_of((*atom.args)[1]);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return {0, kPlusInfinity};
}

std::strong_ordering compare_monomials(const SmallVector<DimAtom, 2>& a, const SmallVector<DimAtom, 2>& b) noexcept {
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto c = compare_atoms(a[i], b[i]);
    if (c != 0) return c;
  }
  return a.size() <=> b.size();
}

std::uint64_t hash_atom(const DimAtom& atom) noexcept {
  std::uint64_t h = hash_combine(static_cast<std::uint64_t>(atom.kind), atom.symbol);
  h = hash_combine(h, static_cast<std::uint64_t>(atom.bound));
  if (atom.args) {
    h = hash_combine(h, (*atom.args)[0].hash());
    h = hash_combine(h, (*atom.args)[1].hash());
  }
  return h;
}

std::uint32_t atom_symbol_limit(const DimAtom& atom) noexcept {
  if (atom.kind == DimAtom::Kind::kSymbol) return atom.symbol == kPlaceholderSymbol ? 0 : atom.symbol + 1;
  return std::max((*atom.args)[0].symbol_limit(), (*atom.args)[1].symbol_limit());
}

bool atom_has_placeholder(const DimAtom& atom) noexcept {
  if (atom.kind == DimAtom::Kind::kSymbol) return atom.symbol == kPlaceholderSymbol;
  return (*atom.args)[0].contains_placeholder() || (*atom.args)[1].contains_placeholder();
}

SmallVector<DimTerm, 2> terms_of(const SymbolicExtent& e) {
  SmallVector<DimTerm, 2> terms;
  if (const DimPolynomial* p = DimPolynomial::of(e)) {
    terms = p->terms;
  } else if (DimPolynomial::constant_of(e) != 0) {
    terms.push_back(DimTerm{DimPolynomial::constant_of(e), {}});
  }
  return terms;
}

SymbolicExtent from_atom(DimAtom atom) {
  SmallVector<DimTerm, 2> terms;
  DimTerm term{1, {}};
  term.factors.push_back(std::move(atom));
  terms.push_back(std::move(term));
  return DimPolynomial::make(std::move(terms));
}

SymbolicExtent min_or_max(DimAtom::Kind kind, const SymbolicExtent& a, const SymbolicExtent& b) {
  const bool is_min = kind == DimAtom::Kind::kMin;
  if (a.is_exact() && b.is_exact())
    return is_min ? std::min(*a.exact_value(), *b.exact_value()) : std::max(*a.exact_value(), *b.exact_value());
  if (a == b) return a;
  // Decide by the sign of a - b when its bounds allow.
  SymbolicExtent diff = a - b;
  Interval d = interval_of(diff);
  if (d.lo >= 0) return is_min ? b : a;
  if (d.hi <= 0) return is_min ? a : b;
  DimAtom atom;
  atom.kind = kind;
  auto args = std::make_shared<std::array<SymbolicExtent, 2>>();
  (*args)[0] = a < b ? a : b;
  (*args)[1] = a < b ? b : a;
  atom.args = std::move(args);
  return from_atom(std::move(atom));
}

bool evaluate_atom(const DimAtom& atom, std::span<const std::int64_t> values, std::int64_t* out) noexcept {
  switch (atom.kind) {
    case DimAtom::Kind::kSymbol:
      if (atom.symbol >= values.size()) return false;
      *out = values[atom.symbol];
      return true;
    case DimAtom::Kind::kMin:
    case DimAtom::Kind::kMax: {
      std::int64_t a, b;
      if (!(*atom.args)[0].try_evaluate(values, &a) || !(*atom.args)[1].try_evaluate(values, &b)) return false;
      *out = atom.kind == DimAtom::Kind::kMin ? std::min(a, b) : std::max(a, b);
      return true;
    }
  }
  return false;
}

std::string atom_to_string(const DimAtom& atom) {
  switch (atom.kind) {
    case DimAtom::Kind::kSymbol:
      if (atom.symbol == kPlaceholderSymbol) {
        return atom.bound == kPlusInfinity ? std::string("?") : fmt::format("?<={}", atom.bound);
      }
      return fmt::format("s{}", atom.symbol);
    case DimAtom::Kind::kMin:
      return fmt::format("min({}, {})", (*atom.args)[0].to_string(), (*atom.args)[1].to_string());
    case DimAtom::Kind::kMax:
      return fmt::format("max({}, {})", (*atom.args)[0].to_string(), (*atom.args)[1].to_string());
  }
  return "?";
}

}  // namespace

std::strong_ordering compare_atoms(const DimAtom& a, const DimAtom& b) noexcept {
  if (a.kind != b.kind) return a.kind <=> b.kind;
  if (a.kind == DimAtom::Kind::kSymbol) {
    if (a.symbol != b.symbol) return a.symbol <=> b.symbol;
    return a.bound <=> b.bound;
  }
  auto c = (*a.args)[0] <=> (*b.args)[0];
  if (c != 0) return c;
  return (*a.args)[1] <=> (*b.args)[1];
}

SymbolicExtent DimPolynomial::make(SmallVector<DimTerm, 2> terms) {
  for (DimTerm& t : terms) {
    std::sort(t.factors.begin(), t.factors.end(),
              [](const DimAtom& x, const DimAtom& y) { return compare_atoms(x, y) < 0; });
  }
  std::sort(terms.begin(), terms.end(),
            [](const DimTerm& x, const DimTerm& y) { return compare_monomials(x.factors, y.factors) < 0; });
  SmallVector<DimTerm, 2> merged;
  for (DimTerm& t : terms) {
    if (!merged.empty() && compare_monomials(merged.back().factors, t.factors) == 0) {
      merged.back().coefficient = add_saturating(merged.back().coefficient, t.coefficient);
    } else {
      merged.push_back(std::move(t));
    }
  }
  SmallVector<DimTerm, 2> kept;
  for (DimTerm& t : merged)
    if (t.coefficient != 0) kept.push_back(std::move(t));
  if (kept.empty()) return SymbolicExtent(std::int64_t{0});
  if (kept.size() == 1 && kept[0].factors.empty()) return SymbolicExtent(kept[0].coefficient);

  auto poly = std::make_shared<DimPolynomial>();
  std::uint64_t h = 0x51a7b01cULL;
  std::int64_t lower = 0, upper = 0;
  for (const DimTerm& t : kept) {
    Interval term{t.coefficient, t.coefficient};
    h = hash_combine(h, static_cast<std::uint64_t>(t.coefficient));
    for (const DimAtom& atom : t.factors) {
      term = interval_mul(term, interval_of(atom));
      h = hash_combine(h, hash_atom(atom));
      poly->symbol_limit = std::max(poly->symbol_limit, atom_symbol_limit(atom));
      poly->has_placeholder = poly->has_placeholder || atom_has_placeholder(atom);
    }
    h = hash_combine(h, 0xfeedULL);  // term separator
    lower = bound_add(lower, term.lo);
    upper = bound_add(upper, term.hi);
  }
  poly->terms = std::move(kept);
  poly->hash = h;
  poly->lower = lower;
  poly->upper = upper;
  return SymbolicExtent(std::shared_ptr<const DimPolynomial>(std::move(poly)));
}

}  // namespace internal

using internal::DimAtom;
using internal::DimPolynomial;
using internal::DimTerm;

std::string_view to_string(ExtentKind kind) noexcept {
  switch (kind) {
    case ExtentKind::kExact:
      return "exact";
    case ExtentKind::kBounded:
      return "bounded";
    case ExtentKind::kUnknown:
      return "unknown";
  }
  return "?";
}

SymbolicExtent SymbolicExtent::bounded(std::int64_t upper_bound) {
  return symbol(internal::kPlaceholderSymbol, upper_bound);
}

SymbolicExtent SymbolicExtent::unknown() { return symbol(internal::kPlaceholderSymbol, std::nullopt); }

SymbolicExtent SymbolicExtent::symbol(std::uint32_t index, std::optional<std::int64_t> upper_bound) {
  DimAtom atom;
  atom.kind = DimAtom::Kind::kSymbol;
  atom.symbol = index;
  atom.bound = upper_bound ? std::max<std::int64_t>(*upper_bound, 0) : internal::kPlusInfinity;
  return internal::from_atom(std::move(atom));
}

ExtentKind SymbolicExtent::kind() const noexcept {
  if (is_exact()) return ExtentKind::kExact;
  return poly_->upper == internal::kPlusInfinity ? ExtentKind::kUnknown : ExtentKind::kBounded;
}

std::optional<std::int64_t> SymbolicExtent::upper_bound() const noexcept {
  if (is_exact()) return constant_;
  if (poly_->upper == internal::kPlusInfinity) return std::nullopt;
  return poly_->upper;
}

std::int64_t SymbolicExtent::lower_bound() const noexcept { return is_exact() ? constant_ : poly_->lower; }

std::optional<std::uint32_t> SymbolicExtent::as_symbol() const noexcept {
  if (is_exact() || poly_->terms.size() != 1) return std::nullopt;
  const DimTerm& t = poly_->terms[0];
  if (t.coefficient != 1 || t.factors.size() != 1 || t.factors[0].kind != DimAtom::Kind::kSymbol) return std::nullopt;
  if (t.factors[0].symbol == internal::kPlaceholderSymbol) return std::nullopt;
  return t.factors[0].symbol;
}

bool SymbolicExtent::is_placeholder() const noexcept {
  if (is_exact() || poly_->terms.size() != 1) return false;
  const DimTerm& t = poly_->terms[0];
  return t.coefficient == 1 && t.factors.size() == 1 && t.factors[0].kind == DimAtom::Kind::kSymbol &&
         t.factors[0].symbol == internal::kPlaceholderSymbol;
}

bool SymbolicExtent::contains_placeholder() const noexcept { return !is_exact() && poly_->has_placeholder; }

std::uint32_t SymbolicExtent::symbol_limit() const noexcept { return is_exact() ? 0 : poly_->symbol_limit; }

SymbolicExtent operator+(const SymbolicExtent& a, const SymbolicExtent& b) {
  if (a.is_exact() && b.is_exact()) return internal::add_saturating(a.constant_, b.constant_);
  SmallVector<DimTerm, 2> terms = internal::terms_of(a);
  for (DimTerm& t : internal::terms_of(b)) terms.push_back(std::move(t));
  return DimPolynomial::make(std::move(terms));
}

SymbolicExtent operator-(const SymbolicExtent& a, const SymbolicExtent& b) {
  if (a.is_exact() && b.is_exact()) return internal::sub_saturating(a.constant_, b.constant_);
  SmallVector<DimTerm, 2> terms = internal::terms_of(a);
  for (DimTerm& t : internal::terms_of(b)) {
    t.coefficient = internal::mul_saturating(t.coefficient, -1);
    terms.push_back(std::move(t));
  }
  return DimPolynomial::make(std::move(terms));
}

SymbolicExtent operator*(const SymbolicExtent& a, const SymbolicExtent& b) {
  if (a.is_exact() && b.is_exact()) return internal::mul_saturating(a.constant_, b.constant_);
  SmallVector<DimTerm, 2> lhs = internal::terms_of(a), rhs = internal::terms_of(b), terms;
  for (const DimTerm& x : lhs) {
    for (const DimTerm& y : rhs) {
      DimTerm t{internal::mul_saturating(x.coefficient, y.coefficient), x.factors};
      for (const DimAtom& f : y.factors) t.factors.push_back(f);
      terms.push_back(std::move(t));
    }
  }
  return DimPolynomial::make(std::move(terms));
}

SymbolicExtent min(const SymbolicExtent& a, const SymbolicExtent& b) {
  return internal::min_or_max(DimAtom::Kind::kMin, a, b);
}
SymbolicExtent max(const SymbolicExtent& a, const SymbolicExtent& b) {
  return internal::min_or_max(DimAtom::Kind::kMax, a, b);
}

bool operator==(const SymbolicExtent& a, const SymbolicExtent& b) noexcept { return (a <=> b) == 0; }

std::strong_ordering operator<=>(const SymbolicExtent& a, const SymbolicExtent& b) noexcept {
  if (a.is_exact() != b.is_exact()) return a.is_exact() ? std::strong_ordering::less : std::strong_ordering::greater;
  if (a.is_exact()) return a.constant_ <=> b.constant_;
  if (a.poly_ == b.poly_) return std::strong_ordering::equal;
  const auto& x = a.poly_->terms;
  const auto& y = b.poly_->terms;
  std::size_t n = std::min(x.size(), y.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto c = internal::compare_monomials(x[i].factors, y[i].factors);
    if (c != 0) return c;
    if (x[i].coefficient != y[i].coefficient) return x[i].coefficient <=> y[i].coefficient;
  }
  return x.size() <=> y.size();
}

std::uint64_t SymbolicExtent::hash() const noexcept {
  return is_exact() ? internal::hash_combine(0xe4ac7ULL, static_cast<std::uint64_t>(constant_)) : poly_->hash;
}

bool SymbolicExtent::try_evaluate(std::span<const std::int64_t> symbol_values, std::int64_t* out) const noexcept {
  if (is_exact()) {
    *out = constant_;
    return true;
  }
  std::int64_t sum = 0;
  for (const DimTerm& t : poly_->terms) {
    std::int64_t product = t.coefficient;
    for (const DimAtom& atom : t.factors) {
      std::int64_t v;
      if (!internal::evaluate_atom(atom, symbol_values, &v)) return false;
      if (__builtin_mul_overflow(product, v, &product)) return false;
    }
    if (__builtin_add_overflow(sum, product, &sum)) return false;
  }
  *out = sum;
  return true;
}

SymbolicExtent SymbolicExtent::substitute(std::span<const SymbolicExtent> by_symbol) const {
  if (is_exact()) return *this;
  SymbolicExtent sum(std::int64_t{0});
  for (const DimTerm& t : poly_->terms) {
    SymbolicExtent product(t.coefficient);
    for (const DimAtom& atom : t.factors) {
      switch (atom.kind) {
        case DimAtom::Kind::kSymbol:
          if (atom.symbol == internal::kPlaceholderSymbol || atom.symbol >= by_symbol.size()) {
            product = product * internal::from_atom(atom);
          } else {
            product = product * by_symbol[atom.symbol];
          }
          break;
        case DimAtom::Kind::kMin:
          product = product * min((*atom.args)[0].substitute(by_symbol), (*atom.args)[1].substitute(by_symbol));
          break;
        case DimAtom::Kind::kMax:
          product = product * max((*atom.args)[0].substitute(by_symbol), (*atom.args)[1].substitute(by_symbol));
          break;
      }
    }
    sum = sum + product;
  }
  return sum;
}

std::string SymbolicExtent::to_string() const {
  if (is_exact()) return fmt::format("{}", constant_);
  std::string out;
  std::int64_t constant = 0;
  for (const DimTerm& t : poly_->terms) {
    if (t.factors.empty()) {
      constant = t.coefficient;
      continue;
    }
    std::string monomial;
    for (const DimAtom& atom : t.factors) {
      if (!monomial.empty()) monomial += "*";
      monomial += internal::atom_to_string(atom);
    }
    std::int64_t c = t.coefficient;
    if (out.empty()) {
      if (c == -1)
        out += "-";
      else if (c != 1)
        out += fmt::format("{}*", c);
    } else {
      out += c < 0 ? " - " : " + ";
      std::int64_t magnitude = c < 0 ? -c : c;
      if (magnitude != 1) out += fmt::format("{}*", magnitude);
    }
    out += monomial;
  }
  if (constant > 0) out += fmt::format(" + {}", constant);
  if (constant < 0) out += fmt::format(" - {}", -constant);
  return out;
}

std::string shape_string(std::span<const SymbolicExtent> shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += shape[i].to_string();
  }
  return out + "]";
}

SymbolicShape symbolic_shape(IntArrayRef exact_shape) {
  SymbolicShape shape;
  for (std::int64_t extent : exact_shape) shape.push_back(SymbolicExtent(extent));
  return shape;
}

std::optional<Dims> exact_shape(std::span<const SymbolicExtent> shape) {
  Dims out;
  for (const SymbolicExtent& e : shape) {
    if (!e.is_exact()) return std::nullopt;
    out.push_back(*e.exact_value());
  }
  return out;
}

SymbolicExtent symbolic_numel(std::span<const SymbolicExtent> shape) {
  SymbolicExtent n(std::int64_t{1});
  for (const SymbolicExtent& e : shape) n = n * e;
  return n;
}

bool ValueMetadata::is_exact() const noexcept {
  for (const SymbolicExtent& e : shape)
    if (!e.is_exact()) return false;
  return true;
}

std::uint64_t ValueMetadata::hash() const noexcept {
  std::uint64_t h = internal::hash_combine(static_cast<std::uint64_t>(dtype), shape.size());
  for (const SymbolicExtent& e : shape) h = internal::hash_combine(h, e.hash());
  return h;
}

std::string ValueMetadata::to_string() const { return fmt::format("{}{}", dtype, shape_string(shape)); }

}  // namespace tenferro::program
