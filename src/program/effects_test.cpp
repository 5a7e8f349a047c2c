// Effects (typed resources, ordering, liveness) and alias declarations.
#include "tenferro/program/effects.h"

#include <gtest/gtest.h>

#include "extension_test_support.h"
#include "tenferro/program/program_builder.h"
#include "tenferro/program/validation.h"

namespace tenferro::program {
namespace {

using testing::make_unary;

constexpr ResourceId kRng{ResourceKind::kRandomState, 1};
constexpr ResourceId kLog{ResourceKind::kHostCallback, 7};
constexpr ResourceId kBuffer{ResourceKind::kExternalBuffer, 3};

std::shared_ptr<testing::UnaryExtension> touching(ResourceId resource, EffectAccess access, int payload = 0) {
  EffectSet effects;
  effects.add({resource, access});
  return make_unary({.family = "test.effect", .payload = payload, .effects = effects});
}

TEST(EffectSetTest, MergesAndSorts) {
  EffectSet set;
  EXPECT_TRUE(set.is_pure());
  EXPECT_EQ(set.to_string(), "pure");
  set.add({kLog, EffectAccess::kRead});
  set.add({kRng, EffectAccess::kRead});
  set.add({kRng, EffectAccess::kWrite});
  ASSERT_EQ(set.size(), 2u);
  EXPECT_EQ(set.effects()[0].resource, kRng) << "sorted by resource";
  EXPECT_EQ(set.effects()[0].access, EffectAccess::kReadWrite) << "accesses merge";
  EXPECT_EQ(set, (EffectSet{{kLog, EffectAccess::kRead}, {kRng, EffectAccess::kReadWrite}}));
  EXPECT_NE(set.hash(), EffectSet().hash());
  EXPECT_EQ(set.to_string(), "{read_write random_state:1, read host_callback:7}");
}

TEST(EffectsTest, EffectfulOperationsAreOrderedPerResource) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {2});
  auto w1 = *b.emit_extension(touching(kRng, EffectAccess::kWrite, 1), {x});
  auto r1 = *b.emit_extension(touching(kRng, EffectAccess::kRead, 2), {x});
  auto r2 = *b.emit_extension(touching(kRng, EffectAccess::kRead, 3), {x});
  auto w2 = *b.emit_extension(touching(kRng, EffectAccess::kWrite, 4), {x});
  auto other = *b.emit_extension(touching(kLog, EffectAccess::kWrite, 5), {x});
  auto pure = *b.emit(CoreSemanticOp::kNeg, {x});
  (void)w1;
  (void)r1;
  (void)r2;
  (void)w2;
  (void)other;
  // Only the pure neg is an output; every effectful op stays alive.
  auto frozen = b.freeze({pure});
  ASSERT_TRUE(frozen.ok());
  const SemanticProgram& p = *frozen->program;
  EXPECT_EQ(p.num_operations(), 6u);
  EXPECT_EQ(p.effects().size(), 2u);
  auto find = [&](std::uint64_t payload) -> OperationView {
    for (OperationView op : p.operations())
      if (op.is_extension() && op.extension()->payload_hash() == payload) return op;
    ADD_FAILURE() << "payload " << payload;
    return p.operation(OperationId(0));
  };
  OperationView ow1 = find(1), or1 = find(2), or2 = find(3), ow2 = find(4), oo = find(5);
  EXPECT_TRUE(ow1.ordered_after().empty());
  ASSERT_EQ(or1.ordered_after().size(), 1u);
  EXPECT_EQ(or1.ordered_after()[0], ow1.id()) << "read after write";
  ASSERT_EQ(or2.ordered_after().size(), 1u) << "reads do not order each other";
  EXPECT_EQ(or2.ordered_after()[0], ow1.id());
  ASSERT_EQ(ow2.ordered_after().size(), 3u) << "write after the last write and every read since";
  EXPECT_TRUE(oo.ordered_after().empty()) << "independent resources stay unordered";
  // Topological order respects effect edges.
  for (OperationView op : p.operations())
    for (OperationId pred : op.ordered_after()) EXPECT_LT(pred.index(), op.id().index());
}

TEST(EffectsTest, EffectOrderIsPartOfIdentity) {
  auto build = [](bool swapped) {
    ProgramBuilder b;
    auto x = *b.add_input(DType::kFloat64, {2});
    auto first = touching(kRng, EffectAccess::kWrite, swapped ? 2 : 1);
    auto second = touching(kRng, EffectAccess::kWrite, swapped ? 1 : 2);
    auto a = *b.emit_extension(first, {x});
    auto c = *b.emit_extension(second, {x});
    return b.freeze({a[0], c[0]})->program;
  };
  auto p = build(false), q = build(true);
  EXPECT_NE(p->fingerprint(), q->fingerprint()) << "the order of two writes is semantic";
  EXPECT_EQ(p->fingerprint(), build(false)->fingerprint());
  // Two independent reads in either builder order: the same program.
  auto reads = [](bool swapped) {
    ProgramBuilder b;
    auto x = *b.add_input(DType::kFloat64, {2});
    auto w = *b.emit_extension(touching(kRng, EffectAccess::kWrite, 9), {x});
    auto r1 = touching(kRng, EffectAccess::kRead, swapped ? 2 : 1);
    auto r2 = touching(kRng, EffectAccess::kRead, swapped ? 1 : 2);
    auto a = *b.emit_extension(r1, {w[0]});
    auto c = *b.emit_extension(r2, {w[0]});
    auto after = *b.emit_extension(touching(kRng, EffectAccess::kWrite, 10), {x});
    (void)after;
    return b.freeze({swapped ? c[0] : a[0], swapped ? a[0] : c[0]})->program;
  };
  EXPECT_EQ(reads(false)->fingerprint(), reads(true)->fingerprint());
}

TEST(AliasTest, MustAliasNeedsAnUnsharedValue) {
  auto in_place = make_unary({.family = "test.in_place", .aliases = {AliasDecl::must_alias(0)}});
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {3});
  auto t = *b.emit(CoreSemanticOp::kNeg, {x});
  auto updated = *b.emit_extension(in_place, {t});
  auto ok = b.freeze({updated[0]});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(produced_alias(*ok->program, ok->program->outputs()[0]).kind, AliasKind::kFresh)
      << "an in-place update of a fresh temporary is fresh";
  // t read again after the in-place update: conflict.
  auto again = *b.emit(CoreSemanticOp::kExp, {t});
  auto conflict = b.freeze({updated[0], again});
  EXPECT_EQ(conflict.status().code(), ErrorCode::kAliasConflict);
  EXPECT_NE(conflict.status().message().find("test.in_place"), std::string_view::npos);
  EXPECT_EQ(b.freeze({updated[0], t}).status().code(), ErrorCode::kAliasConflict) << "t is also an output";
  // Updating a program input in place is refused.
  auto on_input = *b.emit_extension(in_place, {x});
  EXPECT_EQ(b.freeze({on_input[0]}).status().code(), ErrorCode::kAliasConflict);
}

TEST(AliasTest, ExternalAliasNeedsADeclaredEffect) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {3});
  EXPECT_EQ(b.emit_extension(make_unary({.aliases = {AliasDecl::external(kBuffer)}}), {x}).status().code(),
            ErrorCode::kContractViolation);
  EffectSet effects{{kBuffer, EffectAccess::kWrite}};
  auto ok = b.emit_extension(make_unary({.effects = effects, .aliases = {AliasDecl::external(kBuffer)}}), {x});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  auto frozen = b.freeze({(*ok)[0]});
  EXPECT_EQ(produced_alias(*frozen->program, frozen->program->outputs()[0]), AliasDecl::external(kBuffer));
}

TEST(AliasTest, ProducedAliasFollowsViews) {
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {2, 3});
  auto y = *b.add_input(DType::kFloat64, {2, 3});
  auto t = *b.emit(CoreSemanticOp::kTranspose, {y}, TransposeAttributes{{1, 0}});
  auto r = *b.emit(CoreSemanticOp::kReshape, {t}, ReshapeAttributes{{6}});
  auto e = *b.emit(CoreSemanticOp::kExp, {r});
  auto v = *b.emit_extension(make_unary({.aliases = {AliasDecl::view_of(0)}}), {x});
  auto p = b.freeze({r, e, x, v[0]})->program;
  EXPECT_EQ(produced_alias(*p, p->outputs()[0]), AliasDecl::view_of(1));
  EXPECT_EQ(produced_alias(*p, p->outputs()[1]), AliasDecl::fresh());
  EXPECT_EQ(produced_alias(*p, p->outputs()[2]), AliasDecl::view_of(0));
  EXPECT_EQ(produced_alias(*p, p->outputs()[3]), AliasDecl::view_of(0));
}

TEST(EffectsTest, ExtensionsCannotDeclareACommunicatorEffect) {
  // Collectives are scheduled nodes of their own; an extension op that says
  // it talks to a communicator is refused at compile time.
  ProgramBuilder b;
  auto x = *b.add_input(DType::kFloat64, {3});
  constexpr ResourceId kComm{ResourceKind::kCommunicator, 1};
  for (EffectAccess access : {EffectAccess::kRead, EffectAccess::kWrite}) {
    auto r = b.emit_extension(touching(kComm, access), {x});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kContractViolation);
    EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
    EXPECT_NE(r.status().message().find("communicator"), std::string_view::npos) << r.status().to_string();
  }
  // Other effects, alongside or alone, are still accepted.
  EXPECT_TRUE(b.emit_extension(touching(kBuffer, EffectAccess::kWrite), {x}).ok());
}

}  // namespace
}  // namespace tenferro::program
