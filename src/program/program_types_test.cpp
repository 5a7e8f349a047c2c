// Compile-time properties of the program types (Note [No runtime handles in
// a program]): the set of stored types is closed and holds no runtime,
// engine, thread-pool, stream, allocator or lease handle; attributes are
// plain semantic values; extensions must declare effects and aliases.
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>

#include <gtest/gtest.h>

#include "tenferro/program.h"

namespace tenferro::program {
namespace {

// Stand-ins for the runtime-side handle types the program must never hold
// (the real ones live in components the program cannot include).
struct FakeRuntime {};
struct FakeEngine {};
struct FakeThreadPool {};
struct FakeStream {};
struct FakeAllocator {};
struct FakeLease {};

template <class T, class Tuple>
struct TupleContains;
template <class T, class... Ts>
struct TupleContains<T, std::tuple<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {};

template <class T>
constexpr bool storable_anywhere() {
  return TupleContains<T, SemanticProgram::StoredTypes>::value || std::is_constructible_v<CoreAttributes, T> ||
         std::is_constructible_v<ValueMetadata, T> || std::is_constructible_v<Literal, T> ||
         std::is_constructible_v<EffectSet, T> || std::is_constructible_v<PlacementConstraint, T>;
}

template <class Handle>
constexpr bool rejects_handle() {
  return !storable_anywhere<Handle>() && !storable_anywhere<Handle*>() &&
         !storable_anywhere<std::shared_ptr<Handle>>() && !storable_anywhere<std::unique_ptr<Handle>>() &&
         !storable_anywhere<std::weak_ptr<Handle>>();
}

static_assert(rejects_handle<FakeRuntime>());
static_assert(rejects_handle<FakeEngine>());
static_assert(rejects_handle<FakeThreadPool>());
static_assert(rejects_handle<FakeStream>());
static_assert(rejects_handle<FakeAllocator>());
static_assert(rejects_handle<FakeLease>());
static_assert(!storable_anywhere<void*>());
static_assert(!storable_anywhere<std::function<void()>>());
static_assert(!storable_anywhere<Tensor>(), "tensors live in ProgramBindings, never in a program");

// The stored set is closed: adding a type to a program is a reviewed change
// of this list.
using ExpectedStoredTypes =
    std::tuple<internal::ValueRecord, internal::OperationRecord, ValueMetadata, SymbolicExtent, CoreAttributes, Literal,
               EffectSet, AliasDecl, PlacementConstraint, ShapeGuard, ProvenanceRef, std::shared_ptr<const ExtensionOp>,
               SymbolInfo, std::string, SemanticFingerprint>;
static_assert(std::is_same_v<SemanticProgram::StoredTypes, ExpectedStoredTypes>);

// Every attribute alternative is a plain semantic value.
template <class Variant>
struct AllAttributes;
template <class... Ts>
struct AllAttributes<std::variant<Ts...>> {
  static constexpr bool value = (SemanticAttribute<Ts> && ...) && (!std::is_pointer_v<Ts> && ...);
  static constexpr std::size_t size = sizeof...(Ts);
};
static_assert(AllAttributes<CoreAttributes>::value);
static_assert(AllAttributes<CoreAttributes>::size == 21, "one alternative per attribute struct in core_ops.def");
static_assert(!SemanticAttribute<int*>);
static_assert(!SemanticAttribute<std::shared_ptr<FakeStream>>);

// A frozen program is immutable and only ProgramBuilder creates one.
static_assert(!std::is_copy_constructible_v<SemanticProgram>);
static_assert(!std::is_copy_assignable_v<SemanticProgram>);
static_assert(!std::is_default_constructible_v<SemanticProgram>);
static_assert(std::is_same_v<decltype(FrozenProgram::program), std::shared_ptr<const SemanticProgram>>);

// Tokens are opaque: no public construction from raw numbers.
static_assert(std::is_trivially_copyable_v<ProgramValue>);
static_assert(!std::is_constructible_v<ProgramValue, std::uint64_t, std::uint32_t>);
static_assert(!std::is_constructible_v<ProgramValue, std::uint64_t>);
static_assert(!std::is_copy_constructible_v<ProgramBuilder>);

// An extension must declare its effects and aliases (no pure default).
struct DeclaresNothing : ExtensionOp {
  std::string_view family_id() const noexcept override { return "x"; }
  std::uint64_t payload_hash() const noexcept override { return 0; }
  bool payload_equal(const ExtensionOp&) const noexcept override { return true; }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata>,
                                                       ShapeConstraints&) const override {
    return SmallVector<ValueMetadata, 2>{};
  }
};
struct DeclaresEffectsOnly : DeclaresNothing {
  EffectSet effects() const override { return {}; }
};
struct DeclaresBoth : DeclaresEffectsOnly {
  SmallVector<AliasDecl, 2> aliases() const override { return {}; }
};
static_assert(std::is_abstract_v<ExtensionOp>);
static_assert(std::is_abstract_v<DeclaresNothing>);
static_assert(std::is_abstract_v<DeclaresEffectsOnly>);
static_assert(!std::is_abstract_v<DeclaresBoth>);

TEST(ProgramTypesTest, CompileTimePropertiesHold) {
  // The static_asserts above are the test; this keeps it visible in ctest.
  DeclaresBoth op;
  EXPECT_TRUE(op.effects().is_pure());
  EXPECT_EQ(std::tuple_size_v<SemanticProgram::StoredTypes>, 15u);
}

}  // namespace
}  // namespace tenferro::program
