#include "tenferro/program/symbolic_extent.h"

#include <gtest/gtest.h>

#include "tenferro/program/shape_guard.h"

namespace tenferro::program {
namespace {

SymbolicExtent sym(std::uint32_t i, std::optional<std::int64_t> bound = std::nullopt) {
  return SymbolicExtent::symbol(i, bound);
}

TEST(SymbolicExtentTest, KindsAndBounds) {
  SymbolicExtent three = 3;
  EXPECT_EQ(three.kind(), ExtentKind::kExact);
  EXPECT_EQ(three.exact_value(), 3);
  EXPECT_EQ(three.upper_bound(), 3);
  SymbolicExtent n = sym(0, 10);
  EXPECT_EQ(n.kind(), ExtentKind::kBounded);
  EXPECT_EQ(n.upper_bound(), 10);
  EXPECT_EQ(n.lower_bound(), 0);
  EXPECT_EQ(n.as_symbol(), 0u);
  SymbolicExtent m = sym(1);
  EXPECT_EQ(m.kind(), ExtentKind::kUnknown);
  EXPECT_EQ(m.upper_bound(), std::nullopt);
  // Bounds flow through arithmetic: a non-exact guarantee is preserved.
  EXPECT_EQ((n + 5).upper_bound(), 15);
  EXPECT_EQ((n * 3).upper_bound(), 30);
  EXPECT_EQ((n + m).kind(), ExtentKind::kUnknown);
  EXPECT_EQ((n * n).upper_bound(), 100);
  EXPECT_EQ((n - 1).lower_bound(), -1);
  EXPECT_EQ(min(n, m).upper_bound(), 10);
  EXPECT_EQ(max(n, 4).kind(), ExtentKind::kBounded);
  EXPECT_EQ(max(n, 4).lower_bound(), 4);
}

TEST(SymbolicExtentTest, CanonicalFormDecidesEquality) {
  SymbolicExtent n = sym(0), m = sym(1);
  EXPECT_EQ(n * (m + 1), n * m + n);
  EXPECT_EQ(n + m, m + n);
  EXPECT_EQ((n + 2) - 2, n);
  EXPECT_EQ(n - n, SymbolicExtent(0));
  EXPECT_TRUE((n - n).is_exact());
  EXPECT_EQ(n * 2 + n, n * 3);
  EXPECT_NE(n, m);
  EXPECT_NE(n * m, n + m);
  EXPECT_EQ(min(n, m), min(m, n));
  EXPECT_EQ(min(n, n), n);
  EXPECT_EQ(min(SymbolicExtent(3), SymbolicExtent(5)), SymbolicExtent(3));
  // max(0, n - 1) cannot be decided for unbounded n, but max(0, n + 1) can.
  EXPECT_FALSE(max(SymbolicExtent(0), n - 1).is_exact());
  EXPECT_EQ(max(SymbolicExtent(0), n + 1), n + 1);
  EXPECT_EQ((n * m).hash(), (m * n).hash());
  EXPECT_EQ(n.symbol_limit(), 1u);
  EXPECT_EQ((n * m).symbol_limit(), 2u);
}

TEST(SymbolicExtentTest, EvaluateAndSubstitute) {
  SymbolicExtent n = sym(0), m = sym(1);
  SymbolicExtent e = n * m * 2 + max(SymbolicExtent(0), n - 1) * 3 - 4;
  std::int64_t values[] = {5, 7};
  std::int64_t v = 0;
  ASSERT_TRUE(e.try_evaluate(values, &v));
  EXPECT_EQ(v, 5 * 7 * 2 + 4 * 3 - 4);
  std::int64_t zero_n[] = {0, 7};
  ASSERT_TRUE(e.try_evaluate(zero_n, &v));
  EXPECT_EQ(v, -4);
  std::int64_t missing[] = {5};
  EXPECT_FALSE(e.try_evaluate(missing, &v));
  std::int64_t huge[] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_FALSE(e.try_evaluate(huge, &v)) << "overflow must be reported";

  SymbolicExtent by_symbol[] = {m + 1, SymbolicExtent(3)};
  EXPECT_EQ((n * m).substitute(by_symbol), m * 3 + 3);
  EXPECT_EQ(min(n, m).substitute(by_symbol), min(m + 1, SymbolicExtent(3)));
}

TEST(SymbolicExtentTest, PlaceholdersAndPrinting) {
  SymbolicExtent p = SymbolicExtent::bounded(8);
  EXPECT_TRUE(p.is_placeholder());
  EXPECT_EQ(p.upper_bound(), 8);
  EXPECT_FALSE(p.as_symbol().has_value());
  EXPECT_TRUE((p + 1).contains_placeholder());
  EXPECT_FALSE(sym(0).contains_placeholder());
  EXPECT_EQ(SymbolicExtent::unknown().to_string(), "?");
  EXPECT_EQ((sym(0) * sym(1) * 2 + sym(2) - 1).to_string(), "2*s0*s1 + s2 - 1");
  EXPECT_EQ(min(sym(0), sym(1)).to_string(), "min(s0, s1)");
  EXPECT_EQ(shape_string(SymbolicShape{sym(0), 3}), "[s0, 3]");
  ValueMetadata m{DType::kFloat32, {sym(0), 3}};
  EXPECT_EQ(m.to_string(), "float32[s0, 3]");
  EXPECT_FALSE(m.is_exact());
  EXPECT_TRUE(ValueMetadata::exact(DType::kInt64, {2, 3}).is_exact());
}

TEST(ShapeConstraintsTest, DecidesOrGuards) {
  std::vector<ShapeGuard> guards;
  ShapeConstraints c("add %3", &guards);
  EXPECT_TRUE(c.require_equal(4, 4, "same").ok());
  Status s = c.require_equal(3, 4, "axis 0");
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(s.stage(), ErrorStage::kCompile);
  EXPECT_NE(s.message().find("add %3"), std::string_view::npos) << s.message();
  EXPECT_NE(s.message().find("axis 0"), std::string_view::npos);
  // A bounded symbol can never equal something above its bound.
  EXPECT_EQ(c.require_equal(sym(0, 5), 9, "bound").code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE(guards.empty());
  EXPECT_TRUE(c.require_equal(sym(0), sym(1), "n == m").ok());
  ASSERT_EQ(guards.size(), 1u);
  EXPECT_EQ(guards[0].kind, GuardKind::kEqualsZero);
  // m == n is the same predicate as n == m.
  EXPECT_TRUE(c.require_equal(sym(1), sym(0), "m == n").ok());
  EXPECT_TRUE(guards[0].same_predicate(guards[1]));
  EXPECT_TRUE(c.require_less_equal(sym(0, 3), 3, "provable").ok());
  EXPECT_EQ(guards.size(), 2u);
  EXPECT_EQ(c.require_less_equal(5, sym(0, 3), "never").code(), ErrorCode::kShapeMismatch);
  EXPECT_TRUE(c.require_less_equal(5, sym(0), "guarded").ok());
  ASSERT_EQ(guards.size(), 3u);
  std::int64_t ok_values[] = {7, 7};
  std::int64_t bad_values[] = {4, 7};
  EXPECT_TRUE(guards[2].holds(ok_values));
  EXPECT_FALSE(guards[2].holds(bad_values));
  EXPECT_FALSE(guards[0].holds(bad_values));
  EXPECT_EQ(guards[2].to_string(), "s0 - 5 >= 0");

  ShapeConstraints exact_only("mul %1", nullptr);
  EXPECT_EQ(exact_only.require_equal(sym(0), sym(1), "n == m").code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(c.require_equal(SymbolicExtent::unknown(), 3, "placeholder").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tenferro::program
