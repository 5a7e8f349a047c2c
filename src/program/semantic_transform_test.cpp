// SemanticTransform: read-only input, validating builder output, identity
// for cache keys, provenance preservation.
#include "tenferro/program/semantic_transform.h"

#include <functional>
#include <stdexcept>

#include <gtest/gtest.h>

#include "tenferro/program/validation.h"

namespace tenferro::program {
namespace {

using ValueList = SmallVector<ProgramValue, 4>;
using Rewrite = std::function<Result<ValueList>(const SemanticProgram&, TransformBuilder&)>;

// Copies every operation; `rewrite_one` may replace one first.
Result<ValueList> copy_all(
    const SemanticProgram& input, TransformBuilder& out,
    const std::function<std::optional<Result<ProgramValue>>(const OperationView&, std::span<const ProgramValue>,
                                                            TransformBuilder&)>& rewrite_one = {}) {
  std::vector<ProgramValue> map(input.num_values());
  for (std::size_t i = 0; i < input.num_inputs(); ++i) map[input.input(i).index()] = out.input(i);
  for (OperationView op : input.operations()) {
    SmallVector<ProgramValue, 4> operands;
    for (ValueId v : op.operands()) operands.push_back(map[v.index()]);
    if (rewrite_one) {
      if (auto replaced = rewrite_one(op, operands, out)) {
        TENFERRO_ASSIGN_OR_RETURN(map[op.result(0).index()], std::move(*replaced));
        continue;
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(auto results, out.copy_operation(op, operands));
    for (std::size_t r = 0; r < results.size(); ++r) map[op.result(r).index()] = results[r];
  }
  ValueList outputs;
  for (ValueId v : input.outputs()) outputs.push_back(map[v.index()]);
  return outputs;
}

class LambdaTransform : public SemanticTransform {
 public:
  LambdaTransform(std::string name, std::uint64_t options, Rewrite rewrite)
      : name_(std::move(name)), options_(options), rewrite_(std::move(rewrite)) {}
  std::string_view name() const noexcept override { return name_; }
  std::uint64_t options_hash() const noexcept override { return options_; }
  Result<ValueList> run(const SemanticProgram& input, TransformBuilder& output) const override {
    return rewrite_(input, output);
  }

 private:
  std::string name_;
  std::uint64_t options_;
  Rewrite rewrite_;
};

// y = transpose(transpose(x)) with both perms [1, 0], then e = exp(y) and
// n = neg(neg(x)); outputs (y, e, n). A captured weight w is added to e.
FrozenProgram sample_program() {
  ProgramBuilder b;
  b.set_provenance(make_provenance("user code"));
  auto x = *b.add_input(DType::kFloat64, {SymbolicExtent::unknown(), 3}, "x");
  auto w = *b.capture(*Tensor::zeros({3, 3}, DType::kFloat64), "w");
  auto t1 = *b.emit(CoreSemanticOp::kTranspose, {x}, TransposeAttributes{{1, 0}});
  auto t2 = *b.emit(CoreSemanticOp::kTranspose, {t1}, TransposeAttributes{{1, 0}});
  auto e = *b.emit(CoreSemanticOp::kExp, {t2});
  auto n1 = *b.emit(CoreSemanticOp::kNeg, {x});
  auto n2 = *b.emit(CoreSemanticOp::kNeg, {n1});
  auto d = *b.emit(CoreSemanticOp::kDotGeneral, {e, w}, DotGeneralAttributes{{}, {}, {1}, {0}});
  return *b.freeze({t2, d, n2});
}

TEST(SemanticTransformTest, IdentityTransformReproducesTheProgram) {
  FrozenProgram input = sample_program();
  LambdaTransform identity("identity", 0,
                           [](const SemanticProgram& p, TransformBuilder& out) { return copy_all(p, out); });
  auto output = apply_transform(identity, input);
  ASSERT_TRUE(output.ok()) << output.status().to_string();
  EXPECT_EQ(output->program->fingerprint(), input.program->fingerprint());
  EXPECT_TRUE(structurally_equal(*output->program, *input.program));
  EXPECT_EQ(output->bindings.num_bound(), 1u) << "bindings carry over";
  EXPECT_EQ(output->bindings.bound_tensor(1)->storage().get(), input.bindings.bound_tensor(1)->storage().get());
  const std::string text = output->program->explain();
  EXPECT_NE(text.find("transform identity <- user code"), std::string::npos) << text;
}

TEST(SemanticTransformTest, FoldingTransposesIsAValidRewrite) {
  FrozenProgram input = sample_program();
  LambdaTransform copy("fold_transposes", 0,
                       [](const SemanticProgram& p, TransformBuilder& out) { return copy_all(p, out); });
  // A real fold maps t2 to the inner transpose's operand; build it directly.
  LambdaTransform real_fold(
      "fold_transposes", 1, [](const SemanticProgram& p, TransformBuilder& out) -> Result<ValueList> {
        std::vector<ProgramValue> map(p.num_values());
        for (std::size_t i = 0; i < p.num_inputs(); ++i) map[p.input(i).index()] = out.input(i);
        for (OperationView op : p.operations()) {
          SmallVector<ProgramValue, 4> operands;
          for (ValueId v : op.operands()) operands.push_back(map[v.index()]);
          const ValueProducer& inner = op.operands().empty() ? ValueProducer{true} : p.producer(op.operands()[0]);
          if (op.is_core() && op.core_op() == CoreSemanticOp::kTranspose && !inner.is_input &&
              p.operation(inner.operation).core_op() == CoreSemanticOp::kTranspose) {
            map[op.result().index()] = map[p.operation(inner.operation).operands()[0].index()];
            continue;
          }
          TENFERRO_ASSIGN_OR_RETURN(auto r, out.copy_operation(op, operands));
          map[op.result().index()] = r[0];
        }
        ValueList outputs;
        for (ValueId v : p.outputs()) outputs.push_back(map[v.index()]);
        return outputs;
      });
  auto unchanged = apply_transform(copy, input);
  ASSERT_TRUE(unchanged.ok());
  auto folded = apply_transform(real_fold, input);
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  EXPECT_EQ(folded->program->num_operations(), input.program->num_operations() - 2) << "both transposes gone";
  EXPECT_NE(folded->program->fingerprint(), input.program->fingerprint());
  EXPECT_EQ(produced_alias(*folded->program, folded->program->outputs()[0]), AliasDecl::view_of(0));
  EXPECT_NE(copy.identity(), real_fold.identity()) << "options are part of the identity";
  EXPECT_EQ(copy.identity().name, "fold_transposes");
}

TEST(SemanticTransformTest, InvalidOutputsAreRejected) {
  FrozenProgram input = sample_program();
  // Output metadata changes: exp replaced by a reduction.
  LambdaTransform changes_metadata("reduce", 0, [](const SemanticProgram& p, TransformBuilder& out) {
    return copy_all(p, out,
                    [&](const OperationView& op, std::span<const ProgramValue> operands,
                        TransformBuilder& b) -> std::optional<Result<ProgramValue>> {
                      if (!op.is_core() || op.core_op() != CoreSemanticOp::kTranspose) return std::nullopt;
                      if (!p.producer(op.operands()[0]).is_input) return std::nullopt;
                      b.derive_from(op);
                      return b.builder().emit(CoreSemanticOp::kNeg, operands);
                    });
  });
  auto r1 = apply_transform(changes_metadata, input);
  EXPECT_EQ(r1.status().code(), ErrorCode::kContractViolation);
  EXPECT_NE(r1.status().message().find("output 0"), std::string_view::npos) << r1.status().message();

  // neg(neg(x)) -> x turns a fresh output into a view of an input.
  LambdaTransform aliasing("cancel_negations", 0, [](const SemanticProgram& p, TransformBuilder& out) {
    return copy_all(p, out,
                    [&](const OperationView& op, std::span<const ProgramValue>,
                        TransformBuilder& b) -> std::optional<Result<ProgramValue>> {
                      if (!op.is_core() || op.core_op() != CoreSemanticOp::kNeg) return std::nullopt;
                      const ValueProducer& inner = p.producer(op.operands()[0]);
                      if (inner.is_input) return std::nullopt;
                      return Result<ProgramValue>(b.input(0));  // x, the operand of the inner neg
                    });
  });
  auto r2 = apply_transform(aliasing, input);
  EXPECT_EQ(r2.status().code(), ErrorCode::kContractViolation) << r2.status().to_string();

  // Emitting without naming the source operation.
  LambdaTransform anonymous("anonymous", 0, [](const SemanticProgram& p, TransformBuilder& out) -> Result<ValueList> {
    auto v = out.builder().emit(CoreSemanticOp::kNeg, {out.input(0)});
    if (!v.ok()) return v.status();
    return copy_all(p, out);
  });
  auto r3 = apply_transform(anonymous, input);
  EXPECT_EQ(r3.status().code(), ErrorCode::kContractViolation);
  EXPECT_NE(r3.status().message().find("derive_from"), std::string_view::npos);

  // Forged provenance.
  LambdaTransform forged("forged", 0, [](const SemanticProgram& p, TransformBuilder& out) {
    return copy_all(p, out,
                    [](const OperationView& op, std::span<const ProgramValue> operands,
                       TransformBuilder& b) -> std::optional<Result<ProgramValue>> {
                      if (!op.is_core() || op.core_op() != CoreSemanticOp::kExp) return std::nullopt;
                      b.builder().set_provenance(make_provenance("from nowhere"));
                      return b.builder().emit(CoreSemanticOp::kExp, operands);
                    });
  });
  auto r4 = apply_transform(forged, input);
  EXPECT_EQ(r4.status().code(), ErrorCode::kContractViolation);
  EXPECT_NE(r4.status().message().find("from nowhere"), std::string_view::npos) << r4.status().message();

  // Inputs are fixed, and exceptions become errors.
  LambdaTransform adds_input("adds_input", 0, [](const SemanticProgram&, TransformBuilder& out) -> Result<ValueList> {
    TENFERRO_TRY(out.builder().add_input(DType::kFloat64, {1}));
    return ValueList{};
  });
  EXPECT_EQ(apply_transform(adds_input, input).status().code(), ErrorCode::kFailedPrecondition);
  LambdaTransform throws("throws", 0, [](const SemanticProgram&, TransformBuilder&) -> Result<ValueList> {
    throw std::runtime_error("boom");
  });
  EXPECT_EQ(apply_transform(throws, input).status().code(), ErrorCode::kInternal);
  // Wrong output count.
  LambdaTransform drops("drops", 0, [](const SemanticProgram& p, TransformBuilder& out) -> Result<ValueList> {
    TENFERRO_ASSIGN_OR_RETURN(ValueList all, copy_all(p, out));
    all.pop_back();
    return all;
  });
  EXPECT_EQ(apply_transform(drops, input).status().code(), ErrorCode::kContractViolation);
}

TEST(SemanticTransformTest, CopiesKeepExplicitlyConstantizedTensors) {
  ProgramBuilder b;
  auto table = *Tensor::zeros({128}, DType::kFloat64);  // 1 KiB, above the default inline limit
  auto c = b.constantize(table, ConstantPolicy{4096});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto x = *b.add_input(DType::kFloat64, {128});
  auto y = *b.emit(CoreSemanticOp::kAdd, {x, *c});
  FrozenProgram input = *b.freeze({y});
  LambdaTransform identity("identity", 0,
                           [](const SemanticProgram& p, TransformBuilder& out) { return copy_all(p, out); });
  auto output = apply_transform(identity, input);
  ASSERT_TRUE(output.ok()) << output.status().to_string();
  EXPECT_EQ(output->program->fingerprint(), input.program->fingerprint());
}

}  // namespace
}  // namespace tenferro::program
