// Fingerprint stability (insertion order does not matter), sensitivity
// (every semantic change matters), exclusions (provenance, names,
// bindings) and collision resolution by structural equality.
#include <map>

#include <gtest/gtest.h>

#include "extension_test_support.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::program {
namespace {

using testing::make_unary;
using testing::MatmulExtension;

std::shared_ptr<const SemanticProgram> freeze_or_die(const ProgramBuilder& b, std::span<const ProgramValue> outputs,
                                                     const FreezeOptions& options = {}) {
  auto frozen = b.freeze(outputs, options);
  EXPECT_TRUE(frozen.ok()) << frozen.status().to_string();
  return frozen->program;
}

// x, y -> (add(exp(x), log(y)), mul(exp(x), exp(x))), with the operations
// emitted in one of two orders and with or without a duplicate exp.
std::shared_ptr<const SemanticProgram> diamond(bool reversed, const std::string& provenance = "p") {
  ProgramBuilder b;
  b.set_provenance(make_provenance(provenance));
  auto x = *b.add_input(DType::kFloat64, {4}, reversed ? "first" : "x");
  auto y = *b.add_input(DType::kFloat64, {4});
  ProgramValue a, l, c, d;
  if (!reversed) {
    a = *b.emit(CoreSemanticOp::kExp, {x});
    l = *b.emit(CoreSemanticOp::kLog, {y});
    c = *b.emit(CoreSemanticOp::kAdd, {a, l});
    d = *b.emit(CoreSemanticOp::kMul, {a, a});
  } else {
    l = *b.emit(CoreSemanticOp::kLog, {y});
    auto dead = *b.emit(CoreSemanticOp::kSin, {l});
    (void)dead;
    a = *b.emit(CoreSemanticOp::kExp, {x});
    d = *b.emit(CoreSemanticOp::kMul, {a, a});
    c = *b.emit(CoreSemanticOp::kAdd, {a, l});
  }
  const ProgramValue outputs[] = {c, d};
  return freeze_or_die(b, outputs);
}

TEST(FingerprintTest, InsertionOrderDoesNotMatter) {
  auto p = diamond(false);
  auto q = diamond(true, "other provenance");
  EXPECT_EQ(p->fingerprint(), q->fingerprint());
  EXPECT_TRUE(structurally_equal(*p, *q));
  EXPECT_EQ(p->num_operations(), 4u) << "the dead sin is not part of the program";
  // The canonical order makes the representations identical too.
  for (std::uint32_t i = 0; i < p->num_operations(); ++i) {
    EXPECT_EQ(p->operation(OperationId(i)).core_op(), q->operation(OperationId(i)).core_op());
  }
  EXPECT_EQ(p->fingerprint().hex().size(), 64u);
}

// One semantic knob per variant; the base program uses none.
enum class Variant {
  kBase,
  kOp,
  kAttribute,
  kInputDType,
  kInputShape,
  kSymbolBound,
  kConstant,
  kExtensionPayload,
  kEffect,
  kAlias,
  kPlacement,
  kOutputOrder,
  kCount,
};

std::shared_ptr<const SemanticProgram> variant_program(Variant v) {
  ProgramBuilder b;
  auto x = *b.add_input(v == Variant::kInputDType ? DType::kFloat32 : DType::kFloat64,
                        {v == Variant::kInputShape ? 5 : 4, 3});
  auto n = *b.add_input(DType::kFloat64, {SymbolicExtent::bounded(v == Variant::kSymbolBound ? 9 : 8)});
  auto e = *b.emit(v == Variant::kOp ? CoreSemanticOp::kLog : CoreSemanticOp::kExp, {x});
  auto t = *b.emit(CoreSemanticOp::kReduceSum, {e}, ReduceAttributes{{v == Variant::kAttribute ? 0 : 1}});
  auto c = *b.constant(Literal::scalar(Scalar::of(v == Variant::kConstant ? 2.0 : 1.0)));
  if (v == Variant::kPlacement) b.set_placement({PlacementClass::kHost, 0});
  auto k = *b.emit(CoreSemanticOp::kMul, {n, n});
  b.set_placement({});
  EffectSet effects;
  if (v == Variant::kEffect) effects.add({{ResourceKind::kRandomState, 1}, EffectAccess::kReadWrite});
  auto u =
      *b.emit_extension(make_unary({.payload = v == Variant::kExtensionPayload ? 2 : 1,
                                    .effects = effects,
                                    .aliases = {v == Variant::kAlias ? AliasDecl::view_of(0) : AliasDecl::fresh()}}),
                        {k});
  std::vector<ProgramValue> outputs{t, c, u[0]};
  if (v == Variant::kOutputOrder) std::swap(outputs[0], outputs[1]);
  return freeze_or_die(b, outputs);
}

TEST(FingerprintTest, EverySemanticChangeChangesIt) {
  std::vector<std::shared_ptr<const SemanticProgram>> programs;
  for (int v = 0; v < static_cast<int>(Variant::kCount); ++v)
    programs.push_back(variant_program(static_cast<Variant>(v)));
  // The base program is reproducible.
  EXPECT_EQ(variant_program(Variant::kBase)->fingerprint(), programs[0]->fingerprint());
  for (std::size_t i = 0; i < programs.size(); ++i) {
    for (std::size_t j = i + 1; j < programs.size(); ++j) {
      EXPECT_NE(programs[i]->fingerprint(), programs[j]->fingerprint()) << "variants " << i << " and " << j;
      EXPECT_FALSE(structurally_equal(*programs[i], *programs[j])) << "variants " << i << " and " << j;
    }
  }
}

TEST(FingerprintTest, GuardsAreIncluded) {
  // Importing a program whose input is bounded by 10 into an unbounded value
  // yields the same operations plus the guard "t <= 10".
  ProgramBuilder src;
  auto a = *src.add_input(DType::kFloat64, {SymbolicExtent::bounded(10)});
  auto source = *src.freeze({*src.emit(CoreSemanticOp::kNeg, {a})});

  ProgramBuilder with_guard;
  auto x = *with_guard.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto imported = *with_guard.import_program(*source.program, std::span<const ProgramValue>(&x, 1));
  auto guarded = freeze_or_die(with_guard, imported);

  ProgramBuilder plain;
  auto y = *plain.add_input(DType::kFloat64, {SymbolicExtent::unknown()});
  auto negated = *plain.emit(CoreSemanticOp::kNeg, {y});
  auto unguarded = freeze_or_die(plain, std::span<const ProgramValue>(&negated, 1));

  ASSERT_EQ(guarded->guards().size(), 1u);
  EXPECT_TRUE(unguarded->guards().empty());
  EXPECT_EQ(guarded->num_operations(), unguarded->num_operations());
  EXPECT_NE(guarded->fingerprint(), unguarded->fingerprint());
  EXPECT_FALSE(structurally_equal(*guarded, *unguarded));
}

TEST(FingerprintTest, ProvenanceNamesAndBindingsAreExcluded) {
  EXPECT_EQ(diamond(false, "a")->fingerprint(), diamond(false, "b")->fingerprint());
  auto t = *Tensor::zeros({4}, DType::kFloat64);
  ProgramBuilder captured, parameter;
  auto c = *captured.capture(t, "weights");
  auto p = *parameter.add_input(DType::kFloat64, {4});
  auto fc = freeze_or_die(captured, std::span<const ProgramValue>(&c, 1));
  auto fp = freeze_or_die(parameter, std::span<const ProgramValue>(&p, 1));
  EXPECT_EQ(fc->fingerprint(), fp->fingerprint());
  EXPECT_TRUE(structurally_equal(*fc, *fp));
}

// A payload whose hash always collides: only payload_equal tells them apart.
class CollidingExtension : public ExtensionOp {
 public:
  explicit CollidingExtension(int payload) : payload_(payload) {}
  std::string_view family_id() const noexcept override { return "test.colliding"; }
  std::uint64_t payload_hash() const noexcept override { return 42; }
  bool payload_equal(const ExtensionOp& other) const noexcept override {
    return static_cast<const CollidingExtension&>(other).payload_ == payload_;
  }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints&) const override {
    return SmallVector<ValueMetadata, 2>{operands[0]};
  }
  EffectSet effects() const override { return {}; }
  SmallVector<AliasDecl, 2> aliases() const override { return {AliasDecl::fresh()}; }

 private:
  int payload_;
};

std::shared_ptr<const SemanticProgram> colliding_program(int payload) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {2});
  auto r = *b.emit_extension(std::make_shared<CollidingExtension>(payload), {x});
  return freeze_or_die(b, r);
}

TEST(FingerprintTest, StructuralEqualityResolvesCollisions) {
  // Payload-hash collision: same canonical bytes, different payloads.
  auto p1 = colliding_program(1), p1_again = colliding_program(1), p2 = colliding_program(2);
  EXPECT_EQ(p1->fingerprint(), p2->fingerprint());
  EXPECT_FALSE(structurally_equal(*p1, *p2));
  EXPECT_TRUE(structurally_equal(*p1, *p1_again));

  // Forced digest collision between unrelated programs (test-only hook).
  FreezeOptions collide;
  collide.fingerprint_function = [](std::span<const std::byte>) { return Digest256{}; };
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {3});
  auto e = *b.emit(CoreSemanticOp::kExp, {x});
  auto s = *b.emit(CoreSemanticOp::kSin, {x});
  auto pe = freeze_or_die(b, std::span<const ProgramValue>(&e, 1), collide);
  auto ps = freeze_or_die(b, std::span<const ProgramValue>(&s, 1), collide);
  auto pe_again = freeze_or_die(b, std::span<const ProgramValue>(&e, 1), collide);
  EXPECT_EQ(pe->fingerprint(), ps->fingerprint());
  EXPECT_NE(pe->fingerprint(), freeze_or_die(b, std::span<const ProgramValue>(&e, 1))->fingerprint());

  // A cache keyed by fingerprint finds the right entry within the bucket.
  std::map<std::uint64_t, std::vector<std::shared_ptr<const SemanticProgram>>> cache;
  for (const auto& p : {pe, ps, p1, p2}) cache[p->fingerprint().prefix64()].push_back(p);
  auto lookup = [&](const SemanticProgram& key) -> std::shared_ptr<const SemanticProgram> {
    for (const auto& candidate : cache[key.fingerprint().prefix64()])
      if (structurally_equal(*candidate, key)) return candidate;
    return nullptr;
  };
  EXPECT_EQ(cache[pe->fingerprint().prefix64()].size(), 2u);
  EXPECT_EQ(lookup(*pe_again), pe);
  EXPECT_EQ(lookup(*ps), ps);
  EXPECT_EQ(lookup(*p1_again), p1);
  EXPECT_EQ(lookup(*colliding_program(2)), p2);
  EXPECT_EQ(lookup(*colliding_program(3)), nullptr);
}

}  // namespace
}  // namespace tenferro::program
