// Note [Execution order]: the greedy locality order prepare plans in.
#include "runtime/execution_order.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "program/extension_test_support.h"
#include "runtime/runtime_test_support.h"

namespace tenferro::runtime {
namespace {

using internal::execution_order;
using program::CoreSemanticOp;
using program::OperationId;
using program::ProgramBuilder;
using program::ProgramValue;
using program::SemanticProgram;
using testing::make_program;
using Values = SmallVector<ProgramValue, 4>;

// Position of each operation in `order`.
std::vector<std::size_t> positions(const SemanticProgram& p, const std::vector<OperationId>& order) {
  std::vector<std::size_t> at(p.num_operations(), p.num_operations());
  for (std::size_t k = 0; k < order.size(); ++k) at[order[k].index()] = k;
  return at;
}

// Every operation once, after the producers of its operands and its effect
// predecessors.
void expect_valid_order(const SemanticProgram& p, const std::vector<OperationId>& order) {
  ASSERT_EQ(order.size(), p.num_operations());
  const std::vector<std::size_t> at = positions(p, order);
  for (std::uint32_t op = 0; op < p.num_operations(); ++op) {
    ASSERT_LT(at[op], order.size()) << "operation " << op << " missing";
    const program::OperationView view = p.operation(OperationId(op));
    for (program::ValueId v : view.operands()) {
      if (!p.producer(v).is_input) {
        EXPECT_LT(at[p.producer(v).operation.index()], at[op]);
      }
    }
    for (OperationId pred : view.ordered_after()) EXPECT_LT(at[pred.index()], at[op]);
  }
}

// The shape of a reverse-mode gradient: a chain c[i+1] = c[i] * w, and a
// side consumer s[i] = reduce_sum(c[i] + c[i]) of every chain value. The
// first output is the end of the chain, so the canonical order (a
// depth-first post-order from the outputs) runs the whole chain first.
std::shared_ptr<const SemanticProgram> chain_with_side_consumers(int length, std::int64_t n) {
  return make_program({{n}, {n}}, [length](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    ProgramValue c = x[0];
    Values sides;
    for (int i = 0; i < length; ++i) {
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue twice, b.emit(CoreSemanticOp::kAdd, {c, c}));
      TENFERRO_ASSIGN_OR_RETURN(ProgramValue s,
                                b.emit(CoreSemanticOp::kReduceSum, {twice}, program::ReduceAttributes{Dims{0}}));
      sides.push_back(s);
      TENFERRO_ASSIGN_OR_RETURN(c, b.emit(CoreSemanticOp::kMul, {c, x[1]}));
    }
    Values outputs{c};
    outputs.append(sides.begin(), sides.end());
    return outputs;
  });
}

TEST(ExecutionOrderTest, SideConsumersRunRightAfterTheirChainValue) {
  constexpr int kLength = 12;
  auto p = chain_with_side_consumers(kLength, 64);
  ASSERT_NE(p, nullptr);
  // The canonical order really is chain-first (what the reorder fixes).
  EXPECT_EQ(p->operation(OperationId(0)).core_op(), CoreSemanticOp::kMul);
  EXPECT_EQ(p->operation(OperationId(kLength - 1)).core_op(), CoreSemanticOp::kMul);

  const std::vector<OperationId> order = execution_order(*p);
  expect_valid_order(*p, order);
  // Each chain value is read by the next mul and its side add; between the
  // first and the last of those reads at most two other operations run (the
  // other read and the side's reduction), where the canonical order puts
  // the whole rest of the chain in between.
  const std::vector<std::size_t> at = positions(*p, order);
  for (std::uint32_t v = 0; v < p->num_values(); ++v) {
    std::size_t first = order.size(), last = 0;
    int reads = 0;
    for (std::uint32_t op = 0; op < p->num_operations(); ++op) {
      for (program::ValueId o : p->operation(OperationId(op)).operands()) {
        if (o.index() != v || p->operation(OperationId(op)).core_op() == CoreSemanticOp::kReduceSum) continue;
        first = std::min(first, at[op]);
        last = std::max(last, at[op]);
        ++reads;
      }
    }
    if (reads >= 2 && v >= p->num_inputs()) {
      EXPECT_LE(last - first, 3u) << "value " << v;
    }
  }
}

TEST(ExecutionOrderTest, PreparedPlanKeepsFewChainValuesLive) {
  // With the chain run first every chain value would be live at its end:
  // about kLength * 8 KiB. Interleaved, two or three at a time.
  constexpr int kLength = 16;
  constexpr std::int64_t kN = 1024;
  auto p = chain_with_side_consumers(kLength, kN);
  ASSERT_NE(p, nullptr);
  testing::MockEngine host{1, kHostStorageDomain, "host"};
  RuntimeBuilder b;
  b.set_submission_executor(std::make_shared<ManualSubmissionExecutor>());
  b.add_engine(host.registration());
  auto rt = b.build();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  InputSignature sig;
  sig.add(InputDescriptor{DType::kFloat64, Dims{kN}});
  sig.add(InputDescriptor{DType::kFloat64, Dims{kN}});
  auto prepared = rt->prepare_for(p, sig);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  const std::size_t value_bytes = kN * sizeof(double);
  EXPECT_LE((*prepared)->peak_memory_bytes(), 6 * value_bytes + kLength * 64) << (*prepared)->explain();
}

TEST(ExecutionOrderTest, EffectfulOperationsKeepTheirProgramOrder) {
  using program::testing::UnaryExtension;
  auto effect = [](std::uint64_t id) {
    UnaryExtension::Spec spec;
    spec.family = "test.effect";
    spec.payload = static_cast<int>(id);
    spec.effects =
        program::EffectSet{program::Effect{{program::ResourceKind::kUser, id}, program::EffectAccess::kWrite}};
    return std::make_shared<UnaryExtension>(spec);
  };
  // Two effectful operations on different resources (no ordered_after edge
  // between them): the first reads an input, the second the value just
  // computed, so by recency alone the second would run first.
  auto p = make_program({{4}, {4}}, [&](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
    TENFERRO_ASSIGN_OR_RETURN(ProgramValue n, b.emit(CoreSemanticOp::kNeg, {x[1]}));
    TENFERRO_ASSIGN_OR_RETURN(n, b.emit(CoreSemanticOp::kNeg, {n}));
    TENFERRO_ASSIGN_OR_RETURN(auto first, b.emit_extension(effect(1), {x[0]}));
    TENFERRO_ASSIGN_OR_RETURN(auto second, b.emit_extension(effect(2), {n}));
    return Values{n, first[0], second[0]};
  });
  ASSERT_NE(p, nullptr);
  const std::vector<OperationId> order = execution_order(*p);
  expect_valid_order(*p, order);
  std::vector<std::uint32_t> effectful;
  for (OperationId op : order)
    if (!p->operation(op).effects().is_pure()) effectful.push_back(op.index());
  ASSERT_EQ(effectful.size(), 2u);
  EXPECT_EQ(p->operation(OperationId(effectful[0])).operands()[0].index(), 0u) << "effectful operations reordered";
  EXPECT_LT(effectful[0], effectful[1]);
}

// Two independent chains of products: each pick is followed by a ready
// product of the other chain, so consecutive pairs never depend on each
// other. Two chains of elementwise ops are not interleaved that way.
TEST(ExecutionOrderTest, ProductsArePairedWithAReadyIndependentProduct) {
  constexpr int kLength = 6;
  auto two_chains = [](CoreSemanticOp op) {
    return make_program({{4, 4}, {4, 4}, {4, 4}},
                        [op](ProgramBuilder& b, std::span<const ProgramValue> x) -> Result<Values> {
                          ProgramValue u = x[0];
                          ProgramValue v = x[1];
                          const program::CoreAttributes attributes =
                              op == CoreSemanticOp::kDotGeneral
                                  ? program::CoreAttributes(program::DotGeneralAttributes{{}, {}, Dims{1}, Dims{0}})
                                  : program::CoreAttributes(program::NoAttributes{});
                          for (int i = 0; i < kLength; ++i) {
                            TENFERRO_ASSIGN_OR_RETURN(u, b.emit(op, {u, x[2]}, attributes));
                            TENFERRO_ASSIGN_OR_RETURN(v, b.emit(op, {v, x[2]}, attributes));
                          }
                          TENFERRO_ASSIGN_OR_RETURN(ProgramValue w, b.emit(CoreSemanticOp::kAdd, {u, v}));
                          return Values{w, u};  // the first output needs both chains
                        });
  };
  auto chain_of = [](const SemanticProgram& p, OperationId op) {
    // 0 for the chain starting at input 0, 1 for input 1.
    program::ValueId v = p.operation(op).operands()[0];
    while (!p.producer(v).is_input) v = p.operation(p.producer(v).operation).operands()[0];
    return v.index();
  };
  auto products = two_chains(CoreSemanticOp::kDotGeneral);
  ASSERT_NE(products, nullptr);
  std::vector<OperationId> order = execution_order(*products);
  expect_valid_order(*products, order);
  for (int k = 0; k < 2 * kLength; k += 2)
    EXPECT_NE(chain_of(*products, order[k]), chain_of(*products, order[k + 1])) << "positions " << k << ", " << k + 1;

  auto sums = two_chains(CoreSemanticOp::kMul);
  ASSERT_NE(sums, nullptr);
  order = execution_order(*sums);
  expect_valid_order(*sums, order);
  int switches = 0;
  for (int k = 0; k + 1 < 2 * kLength; ++k) switches += chain_of(*sums, order[k]) != chain_of(*sums, order[k + 1]);
  EXPECT_LE(switches, 1) << "elementwise chains were interleaved";
}

}  // namespace
}  // namespace tenferro::runtime
