// Literals and the hashing/printing of core-op attribute structs.
#include "tenferro/program/attributes.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hashing.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::program {

using internal::hash_combine;
using internal::hash_int_range;

// --- Literal ---

Literal::Literal() : Literal(scalar(Scalar::of(0.0))) {}

Literal Literal::scalar(const Scalar& value) {
  auto bytes = std::make_shared<std::vector<std::byte>>(dtype_size(value.dtype()));
  // An explicit switch rather than visit_dtype: GCC 12 reports a false
  // -Warray-bounds on visit_dtype's unreachable fallback here.
  switch (value.dtype()) {
#define TENFERRO_DTYPE(name, str, cpp, kind)  \
  case DType::k##name: {                      \
    cpp v = value.value<cpp>();               \
    std::memcpy(bytes->data(), &v, sizeof v); \
    break;                                    \
  }
#include "tenferro/tensor/dtype.def"
  }
  return Literal(value.dtype(), Dims{}, std::move(bytes));
}

Result<Literal> Literal::from_bytes(DType dtype, IntArrayRef shape, const void* data, std::size_t size) {
  TENFERRO_ASSIGN_OR_RETURN(std::int64_t n, checked_numel(shape));
  if (static_cast<std::size_t>(n) * dtype_size(dtype) != size) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "literal: shape {} holds {} elements, but {} bytes of {} were given", shape_to_string(shape), n,
                      size, dtype);
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(size);
  if (size > 0) std::memcpy(bytes->data(), data, size);
  return Literal(dtype, Dims(shape.span()), std::move(bytes));
}

Result<Literal> Literal::from_tensor(const Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_host()) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "literal: expected a defined host tensor, found {}",
                      tensor.defined() ? tensor.to_string() : std::string("an undefined tensor"));
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(tensor.nbytes());
  if (!bytes->empty()) tenferro::internal::copy_to_contiguous(tensor.view(), bytes->data());
  return Literal(tensor.dtype(), Dims(tensor.shape()), std::move(bytes));
}

Scalar Literal::element(std::int64_t i) const {
  return visit_dtype(dtype_, [&]<class T>(T) {
    T v;
    std::memcpy(&v, bytes_->data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
    return Scalar::of(v);
  });
}

std::uint64_t Literal::hash() const noexcept {
  std::uint64_t h = hash_combine(static_cast<std::uint64_t>(dtype_), 0x11735ULL);
  h = hash_int_range(h, shape_);
  return hash_combine(h, internal::hash_bytes(bytes_->data(), bytes_->size()));
}

std::string Literal::to_string() const {
  std::string out = fmt::format("{}[{}]{{", dtype_, fmt::join(shape_, ", "));
  const std::int64_t n = numel();
  for (std::int64_t i = 0; i < n && i < 8; ++i) {
    if (i > 0) out += ", ";
    std::string s = element(i).to_string();
    out += s.substr(0, s.rfind(':'));  // drop the ":dtype" suffix
  }
  if (n > 8) out += ", ...";
  return out + "}";
}

bool operator==(const Literal& a, const Literal& b) noexcept {
  return a.dtype_ == b.dtype_ && a.shape_ == b.shape_ && (a.bytes_ == b.bytes_ || *a.bytes_ == *b.bytes_);
}

// --- attribute structs ---

std::string_view to_string(ComparisonDirection direction) noexcept {
  switch (direction) {
    case ComparisonDirection::kEq:
      return "eq";
    case ComparisonDirection::kNe:
      return "ne";
    case ComparisonDirection::kLt:
      return "lt";
    case ComparisonDirection::kLe:
      return "le";
    case ComparisonDirection::kGt:
      return "gt";
    case ComparisonDirection::kGe:
      return "ge";
  }
  return "?";
}

std::string_view to_string(ScatterCombine combine) noexcept {
  return combine == ScatterCombine::kAdd ? "add" : "replace";
}

namespace {

std::uint64_t hash_shape(std::uint64_t seed, const SymbolicShape& shape) noexcept {
  seed = hash_combine(seed, shape.size());
  for (const SymbolicExtent& e : shape) seed = hash_combine(seed, e.hash());
  return seed;
}

std::string ints(const Dims& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

}  // namespace

std::uint64_t hash_value(const NoAttributes&) noexcept { return 0x0a77ULL; }
std::string to_string(const NoAttributes&) { return ""; }

std::uint64_t hash_value(const CompareAttributes& a) noexcept {
  return hash_combine(0xc0ULL, static_cast<std::uint64_t>(a.direction));
}
std::string to_string(const CompareAttributes& a) { return fmt::format("{{direction={}}}", to_string(a.direction)); }

std::uint64_t hash_value(const ConvertAttributes& a) noexcept {
  return hash_combine(0xc1ULL, static_cast<std::uint64_t>(a.dtype));
}
std::string to_string(const ConvertAttributes& a) { return fmt::format("{{dtype={}}}", a.dtype); }

std::uint64_t hash_value(const ConstantAttributes& a) noexcept { return hash_combine(0xc2ULL, a.literal.hash()); }
std::string to_string(const ConstantAttributes& a) { return fmt::format("{{literal={}}}", a.literal.to_string()); }

std::uint64_t hash_value(const IotaAttributes& a) noexcept {
  std::uint64_t h = hash_combine(0xc3ULL, static_cast<std::uint64_t>(a.dtype));
  return hash_combine(hash_shape(h, a.shape), static_cast<std::uint64_t>(a.axis));
}
std::string to_string(const IotaAttributes& a) {
  return fmt::format("{{dtype={}, shape={}, axis={}}}", a.dtype, shape_string(a.shape), a.axis);
}

std::string_view to_string(RandomDistribution distribution) noexcept {
  return distribution == RandomDistribution::kNormal ? "normal" : "uniform";
}

std::uint64_t hash_value(const RandomAttributes& a) noexcept {
  std::uint64_t h = hash_shape(hash_combine(0xd3ULL, static_cast<std::uint64_t>(a.dtype)), a.shape);
  h = hash_combine(hash_combine(h, a.key), a.counter);
  return hash_combine(h, static_cast<std::uint64_t>(a.distribution));
}
std::string to_string(const RandomAttributes& a) {
  return fmt::format("{{dtype={}, shape={}, key={:#x}, counter={}, distribution={}}}", a.dtype, shape_string(a.shape),
                     a.key, a.counter, to_string(a.distribution));
}

std::uint64_t hash_value(const BroadcastInDimAttributes& a) noexcept {
  return hash_int_range(hash_shape(0xc4ULL, a.shape), a.dims);
}
std::string to_string(const BroadcastInDimAttributes& a) {
  return fmt::format("{{shape={}, dims={}}}", shape_string(a.shape), ints(a.dims));
}

std::uint64_t hash_value(const ReshapeAttributes& a) noexcept { return hash_shape(0xc5ULL, a.shape); }
std::string to_string(const ReshapeAttributes& a) { return fmt::format("{{shape={}}}", shape_string(a.shape)); }

std::uint64_t hash_value(const TransposeAttributes& a) noexcept { return hash_int_range(0xc6ULL, a.perm); }
std::string to_string(const TransposeAttributes& a) { return fmt::format("{{perm={}}}", ints(a.perm)); }

std::uint64_t hash_value(const SliceAttributes& a) noexcept {
  return hash_int_range(hash_int_range(hash_int_range(0xc7ULL, a.start), a.limit), a.stride);
}
std::string to_string(const SliceAttributes& a) {
  return fmt::format("{{start={}, limit={}, stride={}}}", ints(a.start), ints(a.limit), ints(a.stride));
}

std::uint64_t hash_value(const ReverseAttributes& a) noexcept { return hash_int_range(0xc8ULL, a.axes); }
std::string to_string(const ReverseAttributes& a) { return fmt::format("{{axes={}}}", ints(a.axes)); }

std::uint64_t hash_value(const ConcatenateAttributes& a) noexcept {
  return hash_combine(0xc9ULL, static_cast<std::uint64_t>(a.axis));
}
std::string to_string(const ConcatenateAttributes& a) { return fmt::format("{{axis={}}}", a.axis); }

std::uint64_t hash_value(const PadAttributes& a) noexcept {
  return hash_int_range(hash_int_range(hash_int_range(0xcaULL, a.low), a.high), a.interior);
}
std::string to_string(const PadAttributes& a) {
  return fmt::format("{{low={}, high={}, interior={}}}", ints(a.low), ints(a.high), ints(a.interior));
}

std::uint64_t hash_value(const DynamicSliceAttributes& a) noexcept { return hash_int_range(0xcbULL, a.sizes); }
std::string to_string(const DynamicSliceAttributes& a) { return fmt::format("{{sizes={}}}", ints(a.sizes)); }

std::uint64_t hash_value(const GatherAttributes& a) noexcept {
  std::uint64_t h =
      hash_int_range(hash_int_range(hash_int_range(0xccULL, a.offset_dims), a.collapsed_slice_dims), a.start_index_map);
  h = hash_shape(hash_combine(h, static_cast<std::uint64_t>(a.index_vector_dim)), a.slice_sizes);
  return hash_combine(h, a.indices_are_sorted ? 1U : 0U);
}
std::string to_string(const GatherAttributes& a) {
  return fmt::format(
      "{{offset_dims={}, collapsed_slice_dims={}, start_index_map={}, index_vector_dim={}, slice_sizes={}{}}}",
      ints(a.offset_dims), ints(a.collapsed_slice_dims), ints(a.start_index_map), a.index_vector_dim,
      shape_string(a.slice_sizes), a.indices_are_sorted ? ", indices_are_sorted" : "");
}

std::uint64_t hash_value(const ScatterAttributes& a) noexcept {
  std::uint64_t h =
      hash_int_range(hash_int_range(hash_int_range(0xcdULL, a.update_window_dims), a.inserted_window_dims),
                     a.scatter_dims_to_operand_dims);
  h = hash_combine(hash_combine(h, static_cast<std::uint64_t>(a.index_vector_dim)),
                   static_cast<std::uint64_t>(a.combine));
  return hash_combine(h, (a.indices_are_sorted ? 1U : 0U) | (a.unique_indices ? 2U : 0U));
}
std::string to_string(const ScatterAttributes& a) {
  return fmt::format(
      "{{update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim={}, "
      "combine={}{}{}}}",
      ints(a.update_window_dims), ints(a.inserted_window_dims), ints(a.scatter_dims_to_operand_dims),
      a.index_vector_dim, to_string(a.combine), a.indices_are_sorted ? ", indices_are_sorted" : "",
      a.unique_indices ? ", unique_indices" : "");
}

GatherAttributes take_attributes(const SymbolicShape& operand_shape, std::int64_t indices_rank, std::int64_t axis) {
  GatherAttributes a;
  const auto rank = static_cast<std::int64_t>(operand_shape.size());
  for (std::int64_t k = 0; k < axis; ++k) a.offset_dims.push_back(k);
  for (std::int64_t k = axis + 1; k < rank; ++k) a.offset_dims.push_back(k - 1 + indices_rank);
  a.collapsed_slice_dims.push_back(axis);
  a.start_index_map.push_back(axis);
  a.index_vector_dim = indices_rank;
  a.slice_sizes = operand_shape;
  if (axis >= 0 && axis < rank) a.slice_sizes[static_cast<std::size_t>(axis)] = SymbolicExtent(1);
  return a;
}

ScatterAttributes take_scatter_attributes(std::int64_t operand_rank, std::int64_t indices_rank, std::int64_t axis,
                                          ScatterCombine combine) {
  ScatterAttributes a;
  for (std::int64_t k = 0; k < axis; ++k) a.update_window_dims.push_back(k);
  for (std::int64_t k = axis + 1; k < operand_rank; ++k) a.update_window_dims.push_back(k - 1 + indices_rank);
  a.inserted_window_dims.push_back(axis);
  a.scatter_dims_to_operand_dims.push_back(axis);
  a.index_vector_dim = indices_rank;
  a.combine = combine;
  return a;
}

GatherAttributes gather_of_scatter(const ScatterAttributes& scatter, std::int64_t operand_rank,
                                   const SymbolicShape& updates_shape) {
  GatherAttributes a;
  a.offset_dims = scatter.update_window_dims;
  a.collapsed_slice_dims = scatter.inserted_window_dims;
  a.start_index_map = scatter.scatter_dims_to_operand_dims;
  a.index_vector_dim = scatter.index_vector_dim;
  a.indices_are_sorted = scatter.indices_are_sorted;
  std::size_t window = 0;
  for (std::int64_t d = 0; d < operand_rank; ++d) {
    const auto& inserted = scatter.inserted_window_dims;
    if (std::find(inserted.begin(), inserted.end(), d) != inserted.end() ||
        window >= scatter.update_window_dims.size()) {
      a.slice_sizes.push_back(SymbolicExtent(1));
      continue;
    }
    const auto axis = static_cast<std::size_t>(scatter.update_window_dims[window++]);
    a.slice_sizes.push_back(axis < updates_shape.size() ? updates_shape[axis] : SymbolicExtent(1));
  }
  return a;
}

ScatterAttributes scatter_of_gather(const GatherAttributes& gather, ScatterCombine combine) {
  ScatterAttributes a;
  a.update_window_dims = gather.offset_dims;
  a.inserted_window_dims = gather.collapsed_slice_dims;
  a.scatter_dims_to_operand_dims = gather.start_index_map;
  a.index_vector_dim = gather.index_vector_dim;
  a.combine = combine;
  a.indices_are_sorted = gather.indices_are_sorted;
  return a;
}

std::uint64_t hash_value(const ReduceAttributes& a) noexcept { return hash_int_range(0xceULL, a.axes); }
std::string to_string(const ReduceAttributes& a) { return fmt::format("{{axes={}}}", ints(a.axes)); }

std::uint64_t hash_value(const ArgReduceAttributes& a) noexcept {
  return hash_combine(0xcfULL, static_cast<std::uint64_t>(a.axis));
}
std::string to_string(const ArgReduceAttributes& a) { return fmt::format("{{axis={}}}", a.axis); }

std::uint64_t hash_value(const CumulativeAttributes& a) noexcept {
  const std::uint64_t flags = (a.reverse ? 1U : 0U) | (a.exclusive ? 2U : 0U);
  return hash_combine(hash_combine(0xd1ULL, static_cast<std::uint64_t>(a.axis)), flags);
}
std::string to_string(const CumulativeAttributes& a) {
  return fmt::format("{{axis={}, reverse={}, exclusive={}}}", a.axis, a.reverse, a.exclusive);
}

std::uint64_t hash_value(const SortAttributes& a) noexcept {
  return hash_combine(hash_combine(0xd2ULL, static_cast<std::uint64_t>(a.axis)), a.descending ? 1U : 0U);
}
std::string to_string(const SortAttributes& a) {
  return fmt::format("{{axis={}, descending={}}}", a.axis, a.descending);
}

std::uint64_t hash_value(const DotGeneralAttributes& a) noexcept {
  std::uint64_t h = hash_int_range(hash_int_range(0xd0ULL, a.lhs_batch), a.rhs_batch);
  return hash_int_range(hash_int_range(h, a.lhs_contract), a.rhs_contract);
}
std::string to_string(const DotGeneralAttributes& a) {
  return fmt::format("{{lhs_batch={}, rhs_batch={}, lhs_contract={}, rhs_contract={}}}", ints(a.lhs_batch),
                     ints(a.rhs_batch), ints(a.lhs_contract), ints(a.rhs_contract));
}

std::uint64_t hash_value(const CoreAttributes& attributes) noexcept {
  return hash_combine(attributes.index(), std::visit([](const auto& a) { return hash_value(a); }, attributes));
}

std::string to_string(const CoreAttributes& attributes) {
  return std::visit([](const auto& a) { return to_string(a); }, attributes);
}

}  // namespace tenferro::program
