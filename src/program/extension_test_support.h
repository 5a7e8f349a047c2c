// Mock extension operations shared by the program unit tests.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "tenferro/program/extension_op.h"
#include "tenferro/program/program_builder.h"

namespace tenferro::program::testing {

/// How MatmulExtension::lower_to_core behaves.
enum class MatmulLowering {
  kCorrect,            ///< dot_general(a, b)
  kUnsupported,        ///< answers Unsupported
  kWrongArity,         ///< returns two values for one result
  kWrongMetadata,      ///< returns transpose(dot_general(a, b))
  kEmitsExtension,     ///< emits another extension op
  kNeedsConcreteDims,  ///< NeedsSpecialization{concrete_dims} until granted
  kRepeatsRequest,     ///< NeedsSpecialization with what was already granted
  kChangesProvenance,  ///< emits under its own provenance record
  kForeignValue,       ///< returns a value of another builder
  kThrows,             ///< throws from lower_to_core
};

/// A[m, k] x B[k, n] -> C[m, n], pure, one fresh result.
class MatmulExtension : public ExtensionOp {
 public:
  explicit MatmulExtension(MatmulLowering lowering = MatmulLowering::kCorrect, int payload = 0)
      : lowering_(lowering), payload_(payload) {}

  std::string_view family_id() const noexcept override { return "test.matmul"; }
  std::uint64_t payload_hash() const noexcept override {
    return static_cast<std::uint64_t>(payload_) * 131 + static_cast<std::uint64_t>(lowering_);
  }
  bool payload_equal(const ExtensionOp& other) const noexcept override {
    const auto& o = static_cast<const MatmulExtension&>(other);
    return o.payload_ == payload_ && o.lowering_ == lowering_;
  }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints& constraints) const override {
    if (operands.size() != 2 || operands[0].rank() != 2 || operands[1].rank() != 2 ||
        operands[0].dtype != operands[1].dtype) {
      return constraints.error(ErrorCode::kInvalidArgument, "expected two rank-2 operands of one dtype");
    }
    TENFERRO_TRY(constraints.require_equal(operands[0].shape[1], operands[1].shape[0], "inner extents"));
    SmallVector<ValueMetadata, 2> out;
    out.push_back(ValueMetadata{operands[0].dtype, {operands[0].shape[0], operands[1].shape[1]}});
    return out;
  }
  EffectSet effects() const override { return EffectSet::pure(); }
  SmallVector<AliasDecl, 2> aliases() const override { return {AliasDecl::fresh()}; }

  Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& context) const override {
    ProgramBuilder& b = context.builder();
    auto matmul = [&]() {
      return b.emit(CoreSemanticOp::kDotGeneral, {context.operand(0), context.operand(1)},
                    DotGeneralAttributes{{}, {}, {1}, {0}});
    };
    switch (lowering_) {
      case MatmulLowering::kCorrect: {
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, matmul());
        return ExtensionLoweringOutcome::lowered({c});
      }
      case MatmulLowering::kUnsupported:
        return ExtensionLoweringOutcome::unsupported("no lowering in this test");
      case MatmulLowering::kWrongArity: {
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, matmul());
        return ExtensionLoweringOutcome::lowered({c, c});
      }
      case MatmulLowering::kWrongMetadata: {
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, matmul());
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue t, b.emit(CoreSemanticOp::kTranspose, {c}, TransposeAttributes{{1, 0}}));
        return ExtensionLoweringOutcome::lowered({t});
      }
      case MatmulLowering::kEmitsExtension: {
        auto inner = std::make_shared<MatmulExtension>(MatmulLowering::kCorrect, payload_);
        TENFERRO_ASSIGN_OR_RETURN(auto r, b.emit_extension(inner, {context.operand(0), context.operand(1)}));
        return ExtensionLoweringOutcome::lowered({r[0]});
      }
      case MatmulLowering::kNeedsConcreteDims: {
        if (!context.granted().has(SpecializationAxis::kConcreteDims)) {
          return ExtensionLoweringOutcome::needs_specialization({SpecializationAxis::kConcreteDims});
        }
        if (!context.operand_metadata(0).is_exact()) {
          return Error(ErrorCode::kInternal, ErrorStage::kPrepare, "concrete dims granted but operands not exact");
        }
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, matmul());
        return ExtensionLoweringOutcome::lowered({c});
      }
      case MatmulLowering::kRepeatsRequest:
        return ExtensionLoweringOutcome::needs_specialization(context.granted());
      case MatmulLowering::kChangesProvenance: {
        b.set_provenance(make_provenance("somewhere else"));
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue c, matmul());
        return ExtensionLoweringOutcome::lowered({c});
      }
      case MatmulLowering::kForeignValue: {
        ProgramBuilder other;
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, other.add_input(DType::kFloat64, {1, 1}));
        return ExtensionLoweringOutcome::lowered({v});
      }
      case MatmulLowering::kThrows:
        throw std::runtime_error("lowering exploded");
    }
    return ExtensionLoweringOutcome::unsupported("?");
  }

 private:
  MatmulLowering lowering_;
  int payload_;
};

/// x -> `num_results` results with x's metadata and configurable effects,
/// aliases and lowering (neg(x) or x itself per result).
class UnaryExtension : public ExtensionOp {
 public:
  struct Spec {
    std::string family = "test.unary";
    int payload = 0;
    EffectSet effects;
    SmallVector<AliasDecl, 2> aliases{AliasDecl::fresh()};
    std::size_t num_results = 1;
    bool lower_to_identity = false;  ///< lower result r to x itself (a view of operand 0)
    bool prunable = false;
  };
  explicit UnaryExtension(Spec spec) : spec_(std::move(spec)) {}

  std::string_view family_id() const noexcept override { return spec_.family; }
  std::uint64_t payload_hash() const noexcept override { return static_cast<std::uint64_t>(spec_.payload); }
  bool payload_equal(const ExtensionOp& other) const noexcept override {
    const auto& o = static_cast<const UnaryExtension&>(other);
    return o.spec_.payload == spec_.payload && o.spec_.effects == spec_.effects && o.spec_.aliases == spec_.aliases &&
           o.spec_.num_results == spec_.num_results && o.spec_.lower_to_identity == spec_.lower_to_identity;
  }
  Result<SmallVector<ValueMetadata, 2>> infer_metadata(std::span<const ValueMetadata> operands,
                                                       ShapeConstraints& constraints) const override {
    if (operands.size() != 1) return constraints.error(ErrorCode::kInvalidArgument, "expected one operand");
    SmallVector<ValueMetadata, 2> out;
    for (std::size_t r = 0; r < spec_.num_results; ++r) out.push_back(operands[0]);
    return out;
  }
  EffectSet effects() const override { return spec_.effects; }
  SmallVector<AliasDecl, 2> aliases() const override { return spec_.aliases; }
  Result<ExtensionLoweringOutcome> lower_to_core(ExtensionLoweringContext& context) const override {
    SmallVector<ProgramValue, 2> results;
    for (std::size_t r = 0; r < spec_.num_results; ++r) {
      if (spec_.lower_to_identity) {
        results.push_back(context.operand(0));
      } else {
        TENFERRO_ASSIGN_OR_RETURN(ProgramValue v, context.builder().emit(CoreSemanticOp::kNeg, {context.operand(0)}));
        results.push_back(v);
      }
    }
    return ExtensionLoweringOutcome::lowered(std::move(results));
  }
  std::shared_ptr<const ExtensionOp> prune_outputs(std::span<const bool> live) const override {
    if (!spec_.prunable) return nullptr;
    Spec pruned = spec_;
    pruned.num_results = 0;
    pruned.aliases.clear();
    for (std::size_t r = 0; r < live.size(); ++r) {
      if (!live[r]) continue;
      ++pruned.num_results;
      pruned.aliases.push_back(spec_.aliases[r]);
    }
    return std::make_shared<UnaryExtension>(std::move(pruned));
  }
  std::string describe() const override { return spec_.family + " payload " + std::to_string(spec_.payload); }

 private:
  Spec spec_;
};

inline std::shared_ptr<UnaryExtension> make_unary(UnaryExtension::Spec spec) {
  return std::make_shared<UnaryExtension>(std::move(spec));
}

}  // namespace tenferro::program::testing
