// AdContext: extension rules (linearize + transpose, multi-output, direct
// VJP proven to be taken), the lowering fallback policy, effectful ops,
// rule-contract violations, active-input validation and the transform
// cache (hits, misses, collisions, eviction, clearing, rule epochs).
#include <atomic>
#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

#include "ad_test_support.h"
#include "tenferro/ad/ad_context.h"
#include "tenferro/testing/tensor_checks.h"

namespace tenferro::ad {
namespace {

using program::CoreSemanticOp;
using program::EffectSet;
using program::ExtensionLoweringContext;
using program::ExtensionLoweringOutcome;
using program::ExtensionOp;
using program::FrozenProgram;
using program::ProgramBuilder;
using program::ProgramValue;
using program::ShapeConstraints;
using program::ValueMetadata;
using testing::check_derivatives;

/// y = factor * x; pure; lowers to mul by a broadcast constant.
class ScaleOp final : public ExtensionOp {
 public:
  explicit ScaleOp(double factor) : factor_(factor) {}
  double factor() const noexcept { return factor_; }
  std::string_view family_id() const noexcept override { return "test.scale"; }
  std::uint64_t payload_hash() const noexcept override {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(factor_ * 1000));
  }
  bool payload_equal(const ExtensionOp& other) const noexcept override {
    return static_cast<const ScaleOp&>(other).factor_ == factor_;
  }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints& constraints) const override {
    if (operands.size() != 1) return constraints.error(ErrorCode::kInvalidArgument, "expected one operand");
    return SmallVector<ValueMetadata, 2>{operands[0]};
  }
  EffectSet effects() const override { return EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override { return {program::AliasDecl::fresh()}; }
  Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& context) const override {
    ProgramBuilder& b = context.builder();
    const ValueMetadata& m = context.operand_metadata(0);
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, b.constant(program::Literal::scalar(Scalar::of(factor_))));
    TENFERRO_ASSIGN_OR_RETURN(
        ProgramValue cb, b.emit(CoreSemanticOp::kBroadcastInDim, {c}, program::BroadcastInDimAttributes{m.shape, {}}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue y, b.emit(CoreSemanticOp::kMul, {context.operand(0), cb}));
    return ExtensionLoweringOutcome::lowered({y});
  }

 private:
  double factor_;
};

/// The scale family's rule: the tangent is the op itself on the tangent
/// (a linear extension node), transposed by the same op.
class ScaleRule final : public ExtensionAdRule {
 public:
  std::string_view family_id() const noexcept override { return "test.scale"; }
  Result<TangentList> linearize(LinearizeContext& c) const override {
    ++linearize_calls;
    TangentList out;
    if (!c.tangent(0)) {
      out.push_back(std::nullopt);
      return out;
    }
    auto op = std::make_shared<ScaleOp>(static_cast<const ScaleOp&>(c.op()).factor());
    TENFERRO_ASSIGN_OR_RETURN(auto r, c.builder().emit_extension(op, {*c.tangent(0)}));
    out.push_back(r[0]);
    return out;
  }
  Result<CotangentList> transpose(TransposeContext& c) const override {
    ++transpose_calls;
    CotangentList out(1);
    if (!c.cotangent(0)) return out;
    auto op = std::make_shared<ScaleOp>(static_cast<const ScaleOp&>(c.op()).factor());
    TENFERRO_ASSIGN_OR_RETURN(auto r, c.builder().emit_extension(op, {*c.cotangent(0)}));
    out[0] = r[0];
    return out;
  }
  mutable std::atomic<int> linearize_calls{0};
  mutable std::atomic<int> transpose_calls{0};
};

/// (sin x, cos x): two results; no lowering.
class SinCosOp final : public ExtensionOp {
 public:
  std::string_view family_id() const noexcept override { return "test.sincos"; }
  std::uint64_t payload_hash() const noexcept override { return 1; }
  bool payload_equal(const ExtensionOp&) const noexcept override { return true; }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints&) const override {
    return SmallVector<ValueMetadata, 2>{operands[0], operands[0]};
  }
  EffectSet effects() const override { return EffectSet::pure(); }
  SmallVector<program::AliasDecl, 2> aliases() const override {
    return {program::AliasDecl::fresh(), program::AliasDecl::fresh()};
  }
  /// For the reference evaluator only (the fallback test expects no
  /// lowering for shapes other than rank 1 of extent 5).
  Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& context) const override {
    const ValueMetadata& m = context.operand_metadata(0);
    if (!(m.shape.size() == 1 && m.shape[0] == program::SymbolicExtent(5)))
      return ExtensionLoweringOutcome::unsupported("test: only float64[5]");
    ProgramBuilder& b = context.builder();
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue s, b.emit(CoreSemanticOp::kSin, {context.operand(0)}));
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, b.emit(CoreSemanticOp::kCos, {context.operand(0)}));
    return ExtensionLoweringOutcome::lowered({s, c});
  }
};

/// How SinCosRule misbehaves, for contract tests.
enum class SinCosMode { kCorrect, kDirectVjp, kWrongShape, kPrimalAsTangent, kNonLinearUse, kThrows, kWrongCount };

class SinCosRule final : public ExtensionAdRule {
 public:
  explicit SinCosRule(SinCosMode mode = SinCosMode::kCorrect) : mode_(mode) {}
  std::string_view family_id() const noexcept override { return "test.sincos"; }
  Result<TangentList> linearize(LinearizeContext& c) const override {
    AdBuilder& b = c.builder();
    const AdValue x = c.primal_operand(0);
    const AdValue t = *c.tangent(0);
    switch (mode_) {
      case SinCosMode::kThrows:
        throw std::runtime_error("rule exploded");
      case SinCosMode::kWrongCount:
        return TangentList{t};
      case SinCosMode::kPrimalAsTangent:
        return TangentList{x, std::nullopt};
      case SinCosMode::kNonLinearUse: {
        TENFERRO_ASSIGN_OR_RETURN(AdValue bad, b.emit(CoreSemanticOp::kExp, {t}));
        return TangentList{bad, std::nullopt};
      }
      case SinCosMode::kWrongShape: {
        TENFERRO_ASSIGN_OR_RETURN(AdValue s, b.emit(CoreSemanticOp::kReduceSum, {t}, program::ReduceAttributes{{0}}));
        return TangentList{s, std::nullopt};
      }
      default:
        break;
    }
    // d sin = cos dx, d cos = -sin dx; the primal results are reused.
    TENFERRO_ASSIGN_OR_RETURN(AdValue ds, b.emit(CoreSemanticOp::kMul, {c.primal_result(1), t}));
    TENFERRO_ASSIGN_OR_RETURN(AdValue ns, b.emit(CoreSemanticOp::kNeg, {c.primal_result(0)}));
    TENFERRO_ASSIGN_OR_RETURN(AdValue dc, b.emit(CoreSemanticOp::kMul, {ns, t}));
    return TangentList{ds, dc};
  }
  Result<CotangentList> transpose(TransposeContext&) const override {
    return make_error(ErrorCode::kInternal, ErrorStage::kCompile, "sincos emits no linear extension node");
  }
  bool has_direct_vjp() const noexcept override { return mode_ == SinCosMode::kDirectVjp; }
  Result<CotangentList> direct_vjp(DirectVjpContext& c) const override {
    ++direct_calls;
    AdBuilder& b = c.builder();
    CotangentList out(1);
    if (!c.needs_cotangent(0)) return out;
    std::optional<AdValue> sum;
    if (c.cotangent(0)) {
      TENFERRO_ASSIGN_OR_RETURN(AdValue a, b.emit(CoreSemanticOp::kMul, {c.primal_result(1), *c.cotangent(0)}));
      sum = a;
    }
    if (c.cotangent(1)) {
      TENFERRO_ASSIGN_OR_RETURN(AdValue ns, b.emit(CoreSemanticOp::kNeg, {c.primal_result(0)}));
      TENFERRO_ASSIGN_OR_RETURN(AdValue a, b.emit(CoreSemanticOp::kMul, {ns, *c.cotangent(1)}));
      if (sum) {
        TENFERRO_ASSIGN_OR_RETURN(AdValue s, b.emit(CoreSemanticOp::kAdd, {*sum, a}));
        sum = s;
      } else {
        sum = a;
      }
    }
    out[0] = sum;
    return out;
  }
  mutable std::atomic<int> direct_calls{0};

 private:
  SinCosMode mode_;
};

/// An effectful op (writes a random state): y = x.
class NoisyOp final : public ExtensionOp {
 public:
  std::string_view family_id() const noexcept override { return "test.noisy"; }
  std::uint64_t payload_hash() const noexcept override { return 2; }
  bool payload_equal(const ExtensionOp&) const noexcept override { return true; }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints&) const override {
    return SmallVector<ValueMetadata, 2>{operands[0]};
  }
  EffectSet effects() const override {
    return EffectSet{{program::ResourceId{program::ResourceKind::kRandomState, 7}, program::EffectAccess::kReadWrite}};
  }
  SmallVector<program::AliasDecl, 2> aliases() const override { return {program::AliasDecl::fresh()}; }
};

FrozenProgram unary_extension_program(std::shared_ptr<const ExtensionOp> op, Dims shape, bool square_after = true) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, program::symbolic_shape(shape), "x");
  auto r = *b.emit_extension(op, {x});
  std::vector<ProgramValue> outputs(r.begin(), r.end());
  if (square_after) outputs.push_back(*b.emit(CoreSemanticOp::kMul, {r[0], r[0]}));
  return *b.freeze(std::span<const ProgramValue>(outputs));
}

const std::uint32_t kFirst[] = {0};

TEST(AdContext, ExtensionRuleWithLinearExtensionNodes) {
  AdContext context;
  auto rule = std::make_shared<ScaleRule>();
  ASSERT_TRUE(context.install_rule(rule).ok());
  FrozenProgram p = unary_extension_program(std::make_shared<ScaleOp>(2.5), {2, 3});
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {2, 3}, 1);
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), kFirst));
  EXPECT_GE(rule->linearize_calls.load(), 3);  // jvp, vjp, split
  EXPECT_GE(rule->transpose_calls.load(), 2);  // vjp, split
  // Without the rule and without the fallback: a typed error naming the family.
  AdContext bare;
  auto jvp = bare.jvp(p, kFirst);
  ASSERT_FALSE(jvp.ok());
  EXPECT_EQ(jvp.status().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(jvp.status().stage(), ErrorStage::kCompile);
  EXPECT_NE(jvp.status().message().find("test.scale"), std::string_view::npos) << jvp.status().to_string();
}

/// How ExpandingScaleRule expands a ScaleOp node.
enum class ExpandMode { kNone, kTwoHalves, kWrongArity, kItself };

/// The scale rule with an expansion: f * x as (sqrt f) * ((sqrt f) * x),
/// two ScaleOp nodes, each differentiated by the rule (kTwoHalves stops
/// at nodes whose factor is already a square root, marked by a negative
/// sign: their factor is -sqrt f, which squares to f as well).
class ExpandingScaleRule final : public ExtensionAdRule {
 public:
  explicit ExpandingScaleRule(ExpandMode mode) : mode_(mode) {}
  std::string_view family_id() const noexcept override { return "test.scale"; }
  Result<TangentList> linearize(LinearizeContext& c) const override { return inner_.linearize(c); }
  Result<CotangentList> transpose(TransposeContext& c) const override { return inner_.transpose(c); }
  Result<std::shared_ptr<const program::SemanticProgram>> expansion(
      const ExtensionOp& op, std::span<const ValueMetadata> operands) const override {
    const double f = static_cast<const ScaleOp&>(op).factor();
    if (mode_ == ExpandMode::kNone || (mode_ == ExpandMode::kTwoHalves && f < 0))
      return std::shared_ptr<const program::SemanticProgram>();
    ProgramBuilder b;
    ProgramValue x = *b.add_input(operands[0].dtype, operands[0].shape.span());
    if (mode_ == ExpandMode::kWrongArity) (void)*b.add_input(operands[0].dtype, operands[0].shape.span());
    if (mode_ == ExpandMode::kItself)
      return b.freeze({(*b.emit_extension(std::make_shared<ScaleOp>(f), {x}))[0]})->program;
    auto half = std::make_shared<ScaleOp>(-std::sqrt(f));
    ProgramValue once = (*b.emit_extension(half, {x}))[0];
    return b.freeze({(*b.emit_extension(half, {once}))[0]})->program;
  }

 private:
  ExpandMode mode_;
  ScaleRule inner_;
};

TEST(AdContext, RulesCanExpandANodeIntoSimplerOperations) {
  FrozenProgram p = unary_extension_program(std::make_shared<ScaleOp>(2.25), {2, 3});
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {2, 3}, 4);
  AdContext context;
  ASSERT_TRUE(context.install_rule(std::make_shared<ExpandingScaleRule>(ExpandMode::kTwoHalves)).ok());
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), kFirst));
  // The expansion stands for the node in the primal pass too: the VJP
  // program holds the two halves (and their transposes), never f = 2.25.
  auto vjp = context.vjp(p, kFirst);
  ASSERT_TRUE(vjp.ok()) << vjp.status().to_string();
  int halves = 0;
  for (program::OperationView op : vjp->program.program->operations()) {
    if (!op.is_extension()) continue;
    const double f = static_cast<const ScaleOp*>(op.extension())->factor();
    EXPECT_EQ(f, -1.5);
    ++halves;
  }
  EXPECT_EQ(halves, 4);  // two in the primal, two transposes
  EXPECT_GE(context.metrics().expanded_nodes, 1u);
  // Off by option: the node itself.
  AdContext plain(AdContextOptions{.expand_nodes = false});
  ASSERT_TRUE(plain.install_rule(std::make_shared<ExpandingScaleRule>(ExpandMode::kTwoHalves)).ok());
  auto unexpanded = plain.vjp(p, kFirst);
  ASSERT_TRUE(unexpanded.ok());
  EXPECT_EQ(plain.metrics().expanded_nodes, 0u);
  for (program::OperationView op : unexpanded->program.program->operations()) {
    if (op.is_extension()) {
      EXPECT_EQ(static_cast<const ScaleOp*>(op.extension())->factor(), 2.25);
    }
  }
  // Broken expansions are the rule's contract violations, named.
  for (ExpandMode bad : {ExpandMode::kWrongArity, ExpandMode::kItself}) {
    AdContext broken;
    ASSERT_TRUE(broken.install_rule(std::make_shared<ExpandingScaleRule>(bad)).ok());
    auto r = broken.vjp(p, kFirst);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kContractViolation);
    EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
    EXPECT_NE(r.status().message().find("test.scale"), std::string_view::npos) << r.status().to_string();
  }
}

TEST(AdContext, LoweringFallbackIsExplicit) {
  AdContext context(AdContextOptions{LoweringFallback::kThroughCoreLowering, {}});
  FrozenProgram p = unary_extension_program(std::make_shared<ScaleOp>(-1.5), {4});
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {4}, 2);
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&x, 1), kFirst));
  EXPECT_EQ(context.metrics().lowering_fallbacks, 3u);
  // An installed rule wins over the lowering.
  ASSERT_TRUE(context.install_rule(std::make_shared<ScaleRule>()).ok());
  ASSERT_TRUE(context.vjp(p, kFirst).ok());
  EXPECT_EQ(context.metrics().lowering_fallbacks, 3u);
  // No lowering available: the fallback reports why.
  AdContext fallback(AdContextOptions{LoweringFallback::kThroughCoreLowering, {}});
  auto r = fallback.jvp(unary_extension_program(std::make_shared<SinCosOp>(), {3}), kFirst);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
}

TEST(AdContext, MultiOutputRuleAndDirectVjpIsTaken) {
  FrozenProgram p = unary_extension_program(std::make_shared<SinCosOp>(), {5});
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {5}, 3);
  AdContext linearized;
  ASSERT_TRUE(linearized.install_rule(std::make_shared<SinCosRule>()).ok());
  EXPECT_TRUE(check_derivatives(linearized, p, std::span<const Tensor>(&x, 1), kFirst));
  EXPECT_EQ(linearized.metrics().direct_vjp_nodes, 0u);

  AdContext direct;
  auto rule = std::make_shared<SinCosRule>(SinCosMode::kDirectVjp);
  ASSERT_TRUE(direct.install_rule(rule).ok());
  EXPECT_TRUE(check_derivatives(direct, p, std::span<const Tensor>(&x, 1), kFirst));
  EXPECT_EQ(direct.metrics().direct_vjp_nodes, 2u);  // vjp and split_vjp
  EXPECT_EQ(rule->direct_calls.load(), 2);
  // Both reverse paths give the same gradient.
  const Tensor v[] = {*tenferro::testing::random_tensor(DType::kFloat64, {5}, 4),
                      *tenferro::testing::random_tensor(DType::kFloat64, {5}, 5),
                      *tenferro::testing::random_tensor(DType::kFloat64, {5}, 6)};
  std::vector<Tensor> params{x, v[0], v[1], v[2]};
  auto a = testing::evaluate(linearized.vjp(p, kFirst)->program, params);
  auto b = testing::evaluate(direct.vjp(p, kFirst)->program, params);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_TRUE(tenferro::testing::check_allclose(a[3], b[3]).ok());
}

TEST(AdContext, RuleContractViolationsAreTypedErrors) {
  FrozenProgram p = unary_extension_program(std::make_shared<SinCosOp>(), {3}, false);
  struct Expectation {
    SinCosMode mode;
    ErrorCode code;
    std::string_view text;
  };
  const Expectation cases[] = {
      {SinCosMode::kWrongShape, ErrorCode::kContractViolation, "expected the tangent of result 0"},
      {SinCosMode::kPrimalAsTangent, ErrorCode::kContractViolation, "not linear"},
      {SinCosMode::kNonLinearUse, ErrorCode::kContractViolation, "exp is linear in no operand"},
      {SinCosMode::kThrows, ErrorCode::kInternal, "rule exploded"},
      {SinCosMode::kWrongCount, ErrorCode::kContractViolation, "returned 1 tangents for 2 results"},
  };
  for (const Expectation& e : cases) {
    AdContext context;
    ASSERT_TRUE(context.install_rule(std::make_shared<SinCosRule>(e.mode)).ok());
    auto r = context.jvp(p, kFirst);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), e.code) << r.status().to_string();
    EXPECT_EQ(r.status().stage(), ErrorStage::kCompile);
    EXPECT_NE(r.status().to_string().find(e.text), std::string::npos) << r.status().to_string();
    EXPECT_NE(r.status().to_string().find("test.sincos"), std::string::npos) << r.status().to_string();
  }
}

TEST(AdContext, EffectfulOpsNeedARuleWhenDifferentiated) {
  AdContext context(AdContextOptions{LoweringFallback::kThroughCoreLowering, {}});
  {  // y = noisy(x): the effectful op is on the differentiation path.
    ProgramBuilder b;
    ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
    ProgramValue y = (*b.emit_extension(std::make_shared<NoisyOp>(), {x}))[0];
    auto r = context.vjp(*b.freeze({y}), kFirst);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(r.status().message().find("effectful"), std::string_view::npos) << r.status().to_string();
  }
  {  // y = x * noisy(z): off the path it is only copied, exactly once.
    ProgramBuilder b;
    ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
    ProgramValue z = *b.add_input(DType::kFloat64, {3}, "z");
    ProgramValue n = (*b.emit_extension(std::make_shared<NoisyOp>(), {z}))[0];
    ProgramValue y = *b.emit(CoreSemanticOp::kMul, {x, n});
    auto r = context.vjp(*b.freeze({y}), kFirst);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    std::size_t effectful = 0;
    for (program::OperationView op : r->program.program->operations()) effectful += op.effects().is_pure() ? 0 : 1;
    EXPECT_EQ(effectful, 1u);
  }
}

TEST(AdContext, ActiveInputsAreValidated) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {2}, "x");
  ProgramValue i = *b.add_input(DType::kInt64, {2}, "i");
  ProgramValue y = *b.emit(CoreSemanticOp::kMul, {x, x});
  FrozenProgram p = *b.freeze({y, i});
  AdContext context;
  const std::uint32_t out_of_range[] = {2};
  const std::uint32_t unsorted[] = {0, 0};
  const std::uint32_t integer[] = {1};
  EXPECT_EQ(context.jvp(p, out_of_range).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(context.vjp(p, unsorted).status().code(), ErrorCode::kInvalidArgument);
  auto r = context.vjp(p, integer);
  EXPECT_EQ(r.status().code(), ErrorCode::kDTypeMismatch);
  EXPECT_NE(r.status().message().find("'i'"), std::string_view::npos) << r.status().to_string();
  EXPECT_EQ(differentiable_inputs(*p.program).size(), 1u);
  // Nothing active is fine: every tangent is absent.
  auto none = context.vjp(p, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->layout.gradient_inputs.empty());
}

FrozenProgram chain_program(int length, const program::FreezeOptions& options = {}) {
  ProgramBuilder b;
  ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
  ProgramValue y = x;
  for (int i = 0; i < length; ++i) y = *b.emit(CoreSemanticOp::kSin, {y});
  return *b.freeze({y}, options);
}

TEST(AdContext, TransformCache) {
  AdContext context(AdContextOptions{LoweringFallback::kDisabled, AdCacheLimits{2, std::size_t{1} << 20}});
  FrozenProgram p1 = chain_program(1);
  ASSERT_TRUE(context.vjp(p1, kFirst).ok());
  ASSERT_TRUE(context.vjp(p1, kFirst).ok());
  // A structurally equal program built separately hits as well.
  ASSERT_TRUE(context.vjp(chain_program(1), kFirst).ok());
  AdCacheStats s = context.cache_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 0u);
  // Another kind or active set is another entry; the third evicts the LRU.
  ASSERT_TRUE(context.jvp(p1, kFirst).ok());
  ASSERT_TRUE(context.vjp(p1, {}).ok());
  s = context.cache_stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(context.metrics().transforms_built, 3u);
  context.clear_cache();
  EXPECT_EQ(context.cache_stats().entries, 0u);
  EXPECT_EQ(context.cache_stats().bytes, 0u);
  // Installing a rule clears the cache (new rule epoch).
  ASSERT_TRUE(context.vjp(p1, kFirst).ok());
  ASSERT_TRUE(context.install_rule(std::make_shared<ScaleRule>()).ok());
  EXPECT_EQ(context.cache_stats().entries, 0u);
  EXPECT_EQ(context.install_rule(std::make_shared<ScaleRule>()).code(), ErrorCode::kAlreadyExists);
  EXPECT_TRUE(context.replace_rule(std::make_shared<ScaleRule>()).ok());
  EXPECT_EQ(context.install_rule(nullptr).code(), ErrorCode::kInvalidArgument);
}

TEST(AdContext, FingerprintCollisionIsAMiss) {
  program::FreezeOptions collide;
  collide.fingerprint_function = [](std::span<const std::byte>) { return Digest256{}; };
  FrozenProgram one = chain_program(1, collide);
  FrozenProgram two = chain_program(2, collide);
  ASSERT_EQ(one.program->fingerprint(), two.program->fingerprint());
  AdContext context;
  auto a = context.vjp(one, kFirst);
  auto b = context.vjp(two, kFirst);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(context.cache_stats().misses, 2u);
  EXPECT_NE(a->program.program, b->program.program);
  const Tensor x = *tenferro::testing::random_tensor(DType::kFloat64, {3}, 8);
  EXPECT_TRUE(check_derivatives(context, two, std::span<const Tensor>(&x, 1), kFirst));
}

TEST(AdContext, BoundInputsKeepTheirBindings) {
  ProgramBuilder b;
  const Tensor w = *tenferro::testing::random_tensor(DType::kFloat64, {3}, 9);
  ProgramValue x = *b.add_input(DType::kFloat64, {3}, "x");
  ProgramValue wv = *b.capture(w, "w");
  ProgramValue y = *b.emit(CoreSemanticOp::kMul, {x, wv});
  FrozenProgram p = *b.freeze({y});
  ASSERT_EQ(p.bindings.num_bound(), 1u);
  AdContext context;
  const Tensor xv = *tenferro::testing::random_tensor(DType::kFloat64, {3}, 10);
  EXPECT_TRUE(check_derivatives(context, p, std::span<const Tensor>(&xv, 1), kFirst));
  auto vjp = *context.vjp(p, kFirst);
  EXPECT_EQ(vjp.program.bindings.num_bound(), 1u);
  EXPECT_EQ(vjp.program.bindings.parameters().size(), 2u);  // x and the cotangent
}

}  // namespace
}  // namespace tenferro::ad
