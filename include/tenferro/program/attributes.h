// Typed attribute structs of the core operations, the small inline Literal,
// and CoreAttributes: the closed variant of every attribute struct named in
// core_ops.def (generated from the table, duplicates removed).
//
// Every attribute type is a plain semantic value: regular (copyable,
// equality-comparable), hashable with hash_value(), printable with
// to_string(), and holding no pointer, handle or callback (Note [No runtime
// handles in a program] in semantic_program.h). The SemanticAttribute
// concept and the static_assert below keep that true.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/status.h"
#include "tenferro/program/symbolic_extent.h"
#include "tenferro/tensor/dtype.h"
#include "tenferro/tensor/scalar.h"
#include "tenferro/tensor/shape.h"

namespace tenferro {
class Tensor;
}  // namespace tenferro

namespace tenferro::program {

/// A small dense constant inlined in a program: dtype, exact shape and
/// row-major element bytes. Immutable; copies share the bytes. Equality is
/// bitwise (so -0.0 != 0.0 and NaN payloads count), which is what program
/// identity needs. Large tensors belong in ProgramBindings, not here.
class Literal {
 public:
  /// The float64 scalar 0.
  Literal();
  /// A rank-0 literal holding `value`.
  static Literal scalar(const Scalar& value);
  /// Copies the elements of `tensor` (any strides; must be host memory).
  static Result<Literal> from_tensor(const Tensor& tensor);
  /// Copies `values` laid out row-major with `shape`.
  template <class T>
  static Result<Literal> from_values(std::span<const T> values, IntArrayRef shape);
  template <class T>
  static Result<Literal> from_values(std::initializer_list<T> values, IntArrayRef shape) {
    return from_values(std::span<const T>(values.begin(), values.size()), shape);
  }

  DType dtype() const noexcept { return dtype_; }
  std::span<const std::int64_t> shape() const noexcept { return shape_.span(); }
  std::int64_t numel() const noexcept { return numel_unchecked(shape_); }
  std::size_t nbytes() const noexcept { return bytes_->size(); }
  std::span<const std::byte> bytes() const noexcept { return *bytes_; }
  /// Element i (row-major) as a Scalar.
  Scalar element(std::int64_t i) const;
  std::uint64_t hash() const noexcept;
  /// "float64[2]{1, 2}" (at most 8 elements, then "...").
  std::string to_string() const;

  friend bool operator==(const Literal& a, const Literal& b) noexcept;

 private:
  Literal(DType dtype, Dims shape, std::shared_ptr<const std::vector<std::byte>> bytes) noexcept
      : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {}
  static Result<Literal> from_bytes(DType dtype, IntArrayRef shape, const void* data, std::size_t size);

  DType dtype_;
  Dims shape_;
  std::shared_ptr<const std::vector<std::byte>> bytes_;
};

template <class T>
Result<Literal> Literal::from_values(std::span<const T> values, IntArrayRef shape) {
  return from_bytes(dtype_of<T>, shape, values.data(), values.size() * sizeof(T));
}

// ---------------------------------------------------------------------------
// Attribute structs (docs/core_ops.md gives the meaning of each field).

/// For operations without attributes.
struct NoAttributes {
  friend bool operator==(const NoAttributes&, const NoAttributes&) = default;
};

enum class ComparisonDirection : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view to_string(ComparisonDirection direction) noexcept;

struct CompareAttributes {
  ComparisonDirection direction = ComparisonDirection::kEq;
  friend bool operator==(const CompareAttributes&, const CompareAttributes&) = default;
};

struct ConvertAttributes {
  DType dtype = DType::kFloat64;
  friend bool operator==(const ConvertAttributes&, const ConvertAttributes&) = default;
};

struct ConstantAttributes {
  Literal literal;
  friend bool operator==(const ConstantAttributes&, const ConstantAttributes&) = default;
};

/// y[i...] = i[axis], of `dtype` and `shape`.
struct IotaAttributes {
  DType dtype = DType::kInt64;
  SymbolicShape shape;
  std::int64_t axis = 0;
  friend bool operator==(const IotaAttributes&, const IotaAttributes&) = default;
};

enum class RandomDistribution : std::uint8_t { kUniform, kNormal };
std::string_view to_string(RandomDistribution distribution) noexcept;

/// rng_philox: `dtype` (float32 or float64) values of `shape` drawn from
/// the Philox-4x32-10 stream of `key`, starting at block `counter`
/// (docs/core_ops.md "Creation" fixes the layout). The same attributes give
/// the same bits, so the op is pure; callers advance `counter` for fresh
/// numbers.
struct RandomAttributes {
  DType dtype = DType::kFloat64;
  SymbolicShape shape;
  std::uint64_t key = 0;
  std::uint64_t counter = 0;
  RandomDistribution distribution = RandomDistribution::kUniform;
  friend bool operator==(const RandomAttributes&, const RandomAttributes&) = default;
};

/// Operand axis k maps to result axis dims[k] (strictly increasing).
struct BroadcastInDimAttributes {
  SymbolicShape shape;
  Dims dims;
  friend bool operator==(const BroadcastInDimAttributes&, const BroadcastInDimAttributes&) = default;
};

struct ReshapeAttributes {
  SymbolicShape shape;
  friend bool operator==(const ReshapeAttributes&, const ReshapeAttributes&) = default;
};

/// Result axis i is operand axis perm[i].
struct TransposeAttributes {
  Dims perm;
  friend bool operator==(const TransposeAttributes&, const TransposeAttributes&) = default;
};

struct SliceAttributes {
  Dims start;
  Dims limit;
  Dims stride;
  friend bool operator==(const SliceAttributes&, const SliceAttributes&) = default;
};

struct ReverseAttributes {
  Dims axes;
  friend bool operator==(const ReverseAttributes&, const ReverseAttributes&) = default;
};

struct ConcatenateAttributes {
  std::int64_t axis = 0;
  friend bool operator==(const ConcatenateAttributes&, const ConcatenateAttributes&) = default;
};

struct PadAttributes {
  Dims low;
  Dims high;
  Dims interior;
  friend bool operator==(const PadAttributes&, const PadAttributes&) = default;
};

struct DynamicSliceAttributes {
  Dims sizes;
  friend bool operator==(const DynamicSliceAttributes&, const DynamicSliceAttributes&) = default;
};

/// StableHLO gather dimension numbers (Note [General gather and scatter] in
/// docs/core_ops.md states the semantics). With B the indices' axes other
/// than `index_vector_dim`, result = B-axes interleaved with the window
/// axes: the window axes sit at `offset_dims` (increasing), and are the
/// operand axes not in `collapsed_slice_dims`, in order, with extents
/// `slice_sizes`. `start_index_map[k]` is the operand axis that index-vector
/// component k starts; each start is clamped into
/// [0, operand extent - slice size]. `index_vector_dim` == indices rank means
/// an implicit trailing index vector of length 1. StableHLO's batching dims
/// (operand_batching_dims / start_indices_batching_dims) are not supported:
/// express them with an iota concatenated to the indices.
/// `indices_are_sorted` is a hint and ignored.
struct GatherAttributes {
  Dims offset_dims;
  Dims collapsed_slice_dims;
  Dims start_index_map;
  std::int64_t index_vector_dim = 0;
  SymbolicShape slice_sizes;  // one per operand axis; may be symbolic
  bool indices_are_sorted = false;
  friend bool operator==(const GatherAttributes&, const GatherAttributes&) = default;
};

/// numpy `take(x, indices, axis)` as a general gather: operand of shape
/// `operand_shape`, indices of rank `indices_rank`, result shape
/// x.shape[:axis] + indices.shape + x.shape[axis+1:].
GatherAttributes take_attributes(const SymbolicShape& operand_shape, std::int64_t indices_rank, std::int64_t axis);

enum class ScatterCombine : std::uint8_t { kReplace, kAdd };
std::string_view to_string(ScatterCombine combine) noexcept;

/// StableHLO scatter dimension numbers. With B the updates' axes not in
/// `update_window_dims` (which must match the indices' axes other than
/// `index_vector_dim`, in order), each update window (the axes
/// `update_window_dims`, increasing) lands in the operand axes not in
/// `inserted_window_dims`, in order, at the start whose component k is on
/// operand axis `scatter_dims_to_operand_dims[k]`. A window that does not
/// lie wholly inside the operand is skipped (never clamped). `combine`
/// replaces (duplicates: one unspecified write wins) or adds. Batching dims
/// are not supported (see GatherAttributes).
struct ScatterAttributes {
  Dims update_window_dims;
  Dims inserted_window_dims;
  Dims scatter_dims_to_operand_dims;
  std::int64_t index_vector_dim = 0;
  ScatterCombine combine = ScatterCombine::kReplace;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  friend bool operator==(const ScatterAttributes&, const ScatterAttributes&) = default;
};

/// The scatter matching take_attributes: updates of shape
/// x.shape[:axis] + indices.shape + x.shape[axis+1:] land at
/// y[p, indices[q], r] (numpy `add.at(y, (slice(None),)*axis + (indices,), u)`
/// for kAdd).
ScatterAttributes take_scatter_attributes(std::int64_t operand_rank, std::int64_t indices_rank, std::int64_t axis,
                                          ScatterCombine combine);

/// The gather that reads back, for every update window of `scatter`, the
/// operand window it lands on (the transpose of scatter-add in `updates`):
/// `updates_shape` gives the window extents.
GatherAttributes gather_of_scatter(const ScatterAttributes& scatter, std::int64_t operand_rank,
                                   const SymbolicShape& updates_shape);

/// The scatter that writes each window of `gather` back (the transpose of
/// gather); combine as given.
ScatterAttributes scatter_of_gather(const GatherAttributes& gather, ScatterCombine combine);

/// The listed axes are reduced away.
struct ReduceAttributes {
  Dims axes;
  friend bool operator==(const ReduceAttributes&, const ReduceAttributes&) = default;
};

struct ArgReduceAttributes {
  std::int64_t axis = 0;
  friend bool operator==(const ArgReduceAttributes&, const ArgReduceAttributes&) = default;
};

/// cumsum / cumprod along `axis`: y[i] combines x[0..i] (x[i..n) with
/// `reverse`); `exclusive` leaves x[i] itself out (y starts at the identity).
struct CumulativeAttributes {
  std::int64_t axis = 0;
  bool reverse = false;
  bool exclusive = false;
  friend bool operator==(const CumulativeAttributes&, const CumulativeAttributes&) = default;
};

/// sort / argsort along `axis`: stable, ascending unless `descending`; NaNs
/// go last in either direction.
struct SortAttributes {
  std::int64_t axis = 0;
  bool descending = false;
  friend bool operator==(const SortAttributes&, const SortAttributes&) = default;
};

/// StableHLO dot_general dimension numbers.
struct DotGeneralAttributes {
  Dims lhs_batch;
  Dims rhs_batch;
  Dims lhs_contract;
  Dims rhs_contract;
  friend bool operator==(const DotGeneralAttributes&, const DotGeneralAttributes&) = default;
};

// hash_value(): equal attributes hash equal. to_string(): "{axes=[0, 2]}".
#define TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(T)           \
  std::uint64_t hash_value(const T& attributes) noexcept; \
  std::string to_string(const T& attributes);
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(NoAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(CompareAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ConvertAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ConstantAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(IotaAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(RandomAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(BroadcastInDimAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ReshapeAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(TransposeAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(SliceAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ReverseAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ConcatenateAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(PadAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(DynamicSliceAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(GatherAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ScatterAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ReduceAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(ArgReduceAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(CumulativeAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(SortAttributes)
TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS(DotGeneralAttributes)
#undef TENFERRO_DECLARE_ATTRIBUTE_FUNCTIONS

/// A type that may be stored as a core-op attribute: a regular, hashable,
/// printable value that is not a pointer.
template <class T>
concept SemanticAttribute = std::regular<T> && !std::is_pointer_v<T> && requires(const T& t) {
  { hash_value(t) } -> std::same_as<std::uint64_t>;
  { to_string(t) } -> std::same_as<std::string>;
};

namespace internal {
template <class Variant, class... Ts>
struct UniqueVariantImpl {
  using type = Variant;
};
template <class... Us, class T, class... Ts>
struct UniqueVariantImpl<std::variant<Us...>, T, Ts...> {
  using type = typename UniqueVariantImpl<
      std::conditional_t<(std::is_same_v<T, Us> || ...), std::variant<Us...>, std::variant<Us..., T>>, Ts...>::type;
};
/// std::variant of the distinct types among Ts, in first-occurrence order.
template <class... Ts>
using UniqueVariant = typename UniqueVariantImpl<std::variant<>, Ts...>::type;
}  // namespace internal

/// The closed set of attribute types, generated from core_ops.def.
/// Default-constructs to NoAttributes.
using CoreAttributes = internal::UniqueVariant<NoAttributes,
#define TENFERRO_CORE_OP(name, str, min_operands, max_operands, attributes, ...) attributes,
#include "tenferro/program/core_ops.def"
                                               NoAttributes>;

namespace internal {
template <class Variant>
struct AllSemanticAttributes;
template <class... Ts>
struct AllSemanticAttributes<std::variant<Ts...>> : std::bool_constant<(SemanticAttribute<Ts> && ...)> {};
}  // namespace internal
static_assert(internal::AllSemanticAttributes<CoreAttributes>::value,
              "every core-op attribute type must be a plain semantic value (SemanticAttribute)");

std::uint64_t hash_value(const CoreAttributes& attributes) noexcept;
/// "" for NoAttributes, otherwise "{...}".
std::string to_string(const CoreAttributes& attributes);

}  // namespace tenferro::program
