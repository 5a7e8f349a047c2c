// The canonical byte encoding of a program (Note [Canonical form and
// fingerprint]): everything semantic in canonical order, nothing diagnostic
// (provenance, input names, guard reasons) and no bindings.
#include <cstring>

#include "builder_impl.h"
#include "dim_polynomial.h"

namespace tenferro::program::internal {
namespace {

class CanonicalWriter {
 public:
  explicit CanonicalWriter(std::vector<std::byte>& out) : out_(out) {}

  // Native byte order: fingerprints are process-local (no wire stability).
  void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void i64(std::int64_t v) { raw(&v, sizeof v); }
  void raw(const void* data, std::size_t n) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, data, n);
  }
  void size(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }
  void str(std::string_view s) {
    size(s.size());
    raw(s.data(), s.size());
  }
  void ints(IntArrayRef values) {
    size(values.size());
    raw(values.data(), values.size() * sizeof(std::int64_t));
  }

  void extent(const SymbolicExtent& e) {
    const DimPolynomial* p = DimPolynomial::of(e);
    if (p == nullptr) {
      u8(0);
      i64(DimPolynomial::constant_of(e));
      return;
    }
    u8(1);
    size(p->terms.size());
    for (const DimTerm& t : p->terms) {
      i64(t.coefficient);
      size(t.factors.size());
      for (const DimAtom& atom : t.factors) {
        u8(static_cast<std::uint8_t>(atom.kind));
        if (atom.kind == DimAtom::Kind::kSymbol) {
          u32(atom.symbol);
          i64(atom.bound);
        } else {
          extent((*atom.args)[0]);
          extent((*atom.args)[1]);
        }
      }
    }
  }
  void shape(std::span<const SymbolicExtent> s) {
    size(s.size());
    for (const SymbolicExtent& e : s) extent(e);
  }
  void metadata(const ValueMetadata& m) {
    u8(static_cast<std::uint8_t>(m.dtype));
    shape(m.shape);
  }

  // Attributes.
  void attributes(const NoAttributes&) {}
  void attributes(const CompareAttributes& a) { u8(static_cast<std::uint8_t>(a.direction)); }
  void attributes(const ConvertAttributes& a) { u8(static_cast<std::uint8_t>(a.dtype)); }
  void attributes(const ConstantAttributes& a) {
    u8(static_cast<std::uint8_t>(a.literal.dtype()));
    ints(a.literal.shape());
    size(a.literal.nbytes());
    raw(a.literal.bytes().data(), a.literal.nbytes());
  }
  void attributes(const IotaAttributes& a) {
    u8(static_cast<std::uint8_t>(a.dtype));
    shape(a.shape);
    i64(a.axis);
  }
  void attributes(const RandomAttributes& a) {
    u8(static_cast<std::uint8_t>(a.dtype));
    shape(a.shape);
    u64(a.key);
    u64(a.counter);
    u8(static_cast<std::uint8_t>(a.distribution));
  }
  void attributes(const BroadcastInDimAttributes& a) {
    shape(a.shape);
    ints(a.dims);
  }
  void attributes(const ReshapeAttributes& a) { shape(a.shape); }
  void attributes(const TransposeAttributes& a) { ints(a.perm); }
  void attributes(const SliceAttributes& a) {
    ints(a.start);
    ints(a.limit);
    ints(a.stride);
  }
  void attributes(const ReverseAttributes& a) { ints(a.axes); }
  void attributes(const ConcatenateAttributes& a) { i64(a.axis); }
  void attributes(const PadAttributes& a) {
    ints(a.low);
    ints(a.high);
    ints(a.interior);
  }
  void attributes(const DynamicSliceAttributes& a) { ints(a.sizes); }
  void attributes(const GatherAttributes& a) {
    ints(a.offset_dims);
    ints(a.collapsed_slice_dims);
    ints(a.start_index_map);
    i64(a.index_vector_dim);
    shape(a.slice_sizes);
    u8(a.indices_are_sorted ? 1 : 0);
  }
  void attributes(const ScatterAttributes& a) {
    ints(a.update_window_dims);
    ints(a.inserted_window_dims);
    ints(a.scatter_dims_to_operand_dims);
    i64(a.index_vector_dim);
    u8(static_cast<std::uint8_t>(a.combine));
    u8(static_cast<std::uint8_t>((a.indices_are_sorted ? 1U : 0U) | (a.unique_indices ? 2U : 0U)));
  }
  void attributes(const ReduceAttributes& a) { ints(a.axes); }
  void attributes(const ArgReduceAttributes& a) { i64(a.axis); }
  void attributes(const CumulativeAttributes& a) {
    i64(a.axis);
    u8(static_cast<std::uint8_t>((a.reverse ? 1U : 0U) | (a.exclusive ? 2U : 0U)));
  }
  void attributes(const SortAttributes& a) {
    i64(a.axis);
    u8(a.descending ? 1 : 0);
  }
  void attributes(const DotGeneralAttributes& a) {
    ints(a.lhs_batch);
    ints(a.rhs_batch);
    ints(a.lhs_contract);
    ints(a.rhs_contract);
  }

  void resource(const ResourceId& r) {
    u8(static_cast<std::uint8_t>(r.kind));
    u64(r.id);
  }

 private:
  std::vector<std::byte>& out_;
};

}  // namespace

std::vector<std::byte> encode_canonical_form(const ProgramParts& parts) {
  std::vector<std::byte> out;
  out.reserve(256 + 160 * parts.operations.size());
  CanonicalWriter w(out);
  w.str("tenferro.semantic_program.v1");
  w.size(parts.symbols.size());
  for (const SymbolInfo& s : parts.symbols) {
    w.i64(s.upper_bound.value_or(-1));
    w.u32(s.input);
    w.u32(s.axis);
  }
  w.size(parts.num_inputs);
  for (std::size_t i = 0; i < parts.num_inputs; ++i) w.metadata(parts.values[i].metadata);
  w.size(parts.operations.size());
  for (const OperationRecord& op : parts.operations) {
    if (op.extension) {
      w.u8(1);
      w.str(op.extension->family_id());
      w.u64(op.extension->payload_hash());
    } else {
      w.u8(0);
      w.str(to_string(op.core));
      w.size(op.attributes.index());
      std::visit([&](const auto& a) { w.attributes(a); }, op.attributes);
    }
    w.size(op.operands.size());
    for (ValueId v : op.operands) w.u32(v.index());
    w.size(op.num_results);
    for (std::uint32_t r = 0; r < op.num_results; ++r) w.metadata(parts.values[op.first_result + r].metadata);
    w.size(op.effects.size());
    for (const Effect& e : op.effects) {
      w.resource(e.resource);
      w.u8(static_cast<std::uint8_t>(e.access));
    }
    w.size(op.aliases.size());
    for (const AliasDecl& a : op.aliases) {
      w.u8(static_cast<std::uint8_t>(a.kind));
      w.u32(a.kind == AliasKind::kViewOf || a.kind == AliasKind::kMustAlias ? a.operand : 0);
      w.resource(a.kind == AliasKind::kExternalAlias ? a.resource : ResourceId{});
    }
    w.size(op.ordered_after.size());
    for (OperationId p : op.ordered_after) w.u32(p.index());
    w.u8(static_cast<std::uint8_t>(op.placement.where));
    w.u32(op.placement.colocation_group);
  }
  w.size(parts.outputs.size());
  for (ValueId v : parts.outputs) w.u32(v.index());
  w.size(parts.guards.size());
  for (const ShapeGuard& g : parts.guards) {
    w.u8(static_cast<std::uint8_t>(g.kind));
    w.extent(g.expression);
  }
  return out;
}

}  // namespace tenferro::program::internal
