// Fuzzes ProgramBuilder with a byte-driven sequence of operations: inputs of
// chosen dtypes and (exact or symbolic) shapes, then any core op of the
// core_ops.def table over earlier values with byte-chosen attributes, then a
// freeze of some values. Ill-formed operations must be rejected with a typed
// error that leaves the builder usable (Note [Builder atomicity]); freezing
// must be deterministic (the same outputs give the same fingerprint).
#include <cstdint>
#include <vector>

#include "fuzz_input.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::program {
namespace {

using fuzz::FuzzInput;

constexpr DType kDTypes[] = {DType::kBool,    DType::kInt32,     DType::kInt64,     DType::kFloat32,
                             DType::kFloat64, DType::kComplex64, DType::kComplex128};

DType any_dtype(FuzzInput& in) { return kDTypes[in.below(std::size(kDTypes))]; }

// Axis numbers and extents mostly in range, sometimes just outside it.
Dims axes(FuzzInput& in, std::uint32_t max_len = 4) {
  Dims out;
  const std::uint32_t n = in.below(max_len + 1);
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(in.in_range(-1, 4));
  return out;
}

SymbolicShape shape(FuzzInput& in) {
  SymbolicShape out;
  const std::uint32_t rank = in.below(4);
  for (std::uint32_t i = 0; i < rank; ++i) {
    const std::uint8_t b = in.byte();
    if (b < 16)
      out.push_back(b % 2 == 0 ? SymbolicExtent::unknown() : SymbolicExtent::bounded(b));
    else
      out.push_back(SymbolicExtent(static_cast<std::int64_t>(b % 5)));
  }
  return out;
}

CoreAttributes make(FuzzInput&, std::type_identity<NoAttributes>) { return NoAttributes{}; }
CoreAttributes make(FuzzInput& in, std::type_identity<CompareAttributes>) {
  return CompareAttributes{static_cast<ComparisonDirection>(in.below(6))};
}
CoreAttributes make(FuzzInput& in, std::type_identity<ConvertAttributes>) { return ConvertAttributes{any_dtype(in)}; }
CoreAttributes make(FuzzInput& in, std::type_identity<ConstantAttributes>) {
  return ConstantAttributes{Literal::scalar(Scalar::of(static_cast<double>(in.byte())))};
}
CoreAttributes make(FuzzInput& in, std::type_identity<IotaAttributes>) {
  IotaAttributes a{any_dtype(in), shape(in), 0};
  a.axis = in.in_range(-1, 3);
  return a;
}
CoreAttributes make(FuzzInput& in, std::type_identity<BroadcastInDimAttributes>) {
  SymbolicShape s = shape(in);
  return BroadcastInDimAttributes{std::move(s), axes(in)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<ReshapeAttributes>) { return ReshapeAttributes{shape(in)}; }
CoreAttributes make(FuzzInput& in, std::type_identity<TransposeAttributes>) { return TransposeAttributes{axes(in)}; }
CoreAttributes make(FuzzInput& in, std::type_identity<SliceAttributes>) {
  Dims start = axes(in), limit = axes(in), stride = axes(in);
  return SliceAttributes{std::move(start), std::move(limit), std::move(stride)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<ReverseAttributes>) { return ReverseAttributes{axes(in)}; }
CoreAttributes make(FuzzInput& in, std::type_identity<ConcatenateAttributes>) {
  return ConcatenateAttributes{in.in_range(-1, 3)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<PadAttributes>) {
  Dims low = axes(in), high = axes(in), interior = axes(in);
  return PadAttributes{std::move(low), std::move(high), std::move(interior)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<DynamicSliceAttributes>) {
  return DynamicSliceAttributes{axes(in)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<GatherAttributes>) {
  GatherAttributes a;
  a.offset_dims = axes(in);
  a.collapsed_slice_dims = axes(in);
  a.start_index_map = axes(in);
  a.index_vector_dim = in.in_range(-1, 3);
  a.slice_sizes = shape(in);
  a.indices_are_sorted = in.flag();
  return a;
}
CoreAttributes make(FuzzInput& in, std::type_identity<ScatterAttributes>) {
  ScatterAttributes a;
  a.update_window_dims = axes(in);
  a.inserted_window_dims = axes(in);
  a.scatter_dims_to_operand_dims = axes(in);
  a.index_vector_dim = in.in_range(-1, 3);
  a.combine = in.flag() ? ScatterCombine::kAdd : ScatterCombine::kReplace;
  return a;
}
CoreAttributes make(FuzzInput& in, std::type_identity<ReduceAttributes>) { return ReduceAttributes{axes(in)}; }
CoreAttributes make(FuzzInput& in, std::type_identity<ArgReduceAttributes>) {
  return ArgReduceAttributes{in.in_range(-1, 3)};
}
CoreAttributes make(FuzzInput& in, std::type_identity<CumulativeAttributes>) {
  const std::int64_t axis = in.in_range(-1, 3);
  const bool reverse = in.flag();
  return CumulativeAttributes{axis, reverse, in.flag()};
}
CoreAttributes make(FuzzInput& in, std::type_identity<SortAttributes>) {
  const std::int64_t axis = in.in_range(-1, 3);
  return SortAttributes{axis, in.flag()};
}
CoreAttributes make(FuzzInput& in, std::type_identity<RandomAttributes>) {
  RandomAttributes a{any_dtype(in), shape(in)};
  a.key = in.byte();
  a.counter = in.byte();
  a.distribution = in.flag() ? RandomDistribution::kNormal : RandomDistribution::kUniform;
  return a;
}
CoreAttributes make(FuzzInput& in, std::type_identity<DotGeneralAttributes>) {
  Dims lb = axes(in, 2), rb = axes(in, 2), lc = axes(in, 2), rc = axes(in, 2);
  return DotGeneralAttributes{std::move(lb), std::move(rb), std::move(lc), std::move(rc)};
}

CoreAttributes attributes_for(CoreSemanticOp op, FuzzInput& in) {
  switch (op) {
#define TENFERRO_CORE_OP(name, str, min_operands, max_operands, attributes, ...) \
  case CoreSemanticOp::k##name:                                                  \
    return make(in, std::type_identity<attributes>{});
#include "tenferro/program/core_ops.def"
  }
  return NoAttributes{};
}

void run(FuzzInput& in) {
  ProgramBuilder builder;
  std::vector<ProgramValue> values;
  const std::uint32_t inputs = 1 + in.below(3);
  for (std::uint32_t i = 0; i < inputs; ++i) {
    const DType dtype = any_dtype(in);
    const SymbolicShape s = shape(in);
    Result<ProgramValue> v = builder.add_input(dtype, std::span<const SymbolicExtent>(s.begin(), s.size()));
    if (v.ok()) values.push_back(*v);
  }
  if (values.empty()) return;
  for (int step = 0; step < 16 && !in.empty(); ++step) {
    const auto op = static_cast<CoreSemanticOp>(in.below(kNumCoreOps));
    const CoreOpInfo& info = core_op_info(op);
    const int max = info.max_operands == kVariadic ? info.min_operands + 2 : info.max_operands;
    const int count = static_cast<int>(in.in_range(info.min_operands, max));
    std::vector<ProgramValue> operands;
    for (int k = 0; k < count; ++k) operands.push_back(values[in.below(static_cast<std::uint32_t>(values.size()))]);
    CoreAttributes attributes = attributes_for(op, in);
    Result<ProgramValue> result = builder.emit(op, operands, std::move(attributes));
    if (!result.ok()) continue;
    if (!builder.metadata(*result).ok()) fuzz::property_violated("emitted value has no metadata", to_string(op));
    values.push_back(*result);
  }
  std::vector<ProgramValue> outputs;
  const std::uint32_t n = 1 + in.below(3);
  for (std::uint32_t i = 0; i < n; ++i) outputs.push_back(values[in.below(static_cast<std::uint32_t>(values.size()))]);
  Result<FrozenProgram> first = builder.freeze(outputs);
  Result<FrozenProgram> second = builder.freeze(outputs);
  if (first.ok() != second.ok()) fuzz::property_violated("freeze is not deterministic", "");
  if (first.ok() && !(first->program->fingerprint() == second->program->fingerprint()))
    fuzz::property_violated("freezing twice gives two fingerprints", "");
}

}  // namespace
}  // namespace tenferro::program

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tenferro::fuzz::FuzzInput in(data, size);
  tenferro::program::run(in);
  return 0;
}
