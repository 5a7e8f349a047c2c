#include "tenferro/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tenferro {
namespace {

TEST(ErrorCodeTest, NamesAreUniqueAndCanonicalClassesAreCanonical) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(ErrorCode::kNoConvergence); ++i) {
    const auto code = static_cast<ErrorCode>(i);
    EXPECT_TRUE(names.insert(to_string(code)).second) << to_string(code);
    const ErrorCode canonical = canonical_code(code);
    EXPECT_EQ(canonical_code(canonical), canonical) << to_string(code);
    EXPECT_LE(static_cast<int>(canonical), static_cast<int>(ErrorCode::kUnsupported));
  }
  EXPECT_EQ(to_string(ErrorCode::kShapeMismatch), "shape_mismatch");
  EXPECT_EQ(canonical_code(ErrorCode::kShapeMismatch), ErrorCode::kInvalidArgument);
  EXPECT_EQ(canonical_code(ErrorCode::kStalePreparedGraph), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(canonical_code(ErrorCode::kUnsupported), ErrorCode::kUnsupported);
  EXPECT_EQ(to_string(static_cast<ErrorCode>(60000)), "invalid_code");
}

TEST(StatusTest, OkStatusCarriesNothing) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kOk);
  EXPECT_EQ(s.stage(), ErrorStage::kNone);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.to_string(), "ok");
  EXPECT_TRUE(s.with_context("ignored").ok());
  EXPECT_TRUE(s.in_stage(ErrorStage::kPrepare).ok());
}

TEST(StatusTest, ErrorCarriesCodeStageAndMessage) {
  Status s = make_error(ErrorCode::kShapeMismatch, ErrorStage::kPrepare, "expected {} found {}", 3, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kShapeMismatch);
  EXPECT_EQ(s.stage(), ErrorStage::kPrepare);
  EXPECT_EQ(s.message(), "expected 3 found 4");
  EXPECT_EQ(s.error().cause(), nullptr);
  EXPECT_TRUE(s.error().suppressed().empty());
  EXPECT_EQ(s.to_string(), "prepare shape_mismatch: expected 3 found 4");
}

TEST(StatusTest, OkCodeCannotBeUsedForAnError) {
  Error e(ErrorCode::kOk, ErrorStage::kNone, "oops");
  EXPECT_EQ(e.code(), ErrorCode::kInternal);
  EXPECT_NE(e.message().find("oops"), std::string::npos);
}

TEST(StatusTest, ContextBuildsACauseChain) {
  Status inner = make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "float32 vs int64");
  Status outer = inner.with_context("while preparing node 3", ErrorStage::kPrepare);
  EXPECT_EQ(outer.code(), ErrorCode::kDTypeMismatch);
  EXPECT_EQ(outer.stage(), ErrorStage::kPrepare);
  EXPECT_EQ(outer.message(), "while preparing node 3");
  ASSERT_NE(outer.error().cause(), nullptr);
  EXPECT_EQ(outer.error().cause()->message(), "float32 vs int64");
  EXPECT_EQ(&outer.error().root_cause(), outer.error().cause());
  const std::string text = outer.to_string();
  EXPECT_NE(text.find("caused by"), std::string::npos);
  EXPECT_NE(text.find("float32 vs int64"), std::string::npos);
  // Without an explicit stage the wrapped stage is kept.
  EXPECT_EQ(inner.in_stage(ErrorStage::kCompile).with_context("x").stage(), ErrorStage::kCompile);
}

// A context that quotes its cause whole prints it once; a cause with more
// to say (another stage, its own cause) keeps its line.
TEST(StatusTest, ACauseTheContextQuotesIsPrintedOnce) {
  Status inner = make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration, "X: expected a, found 'b'");
  const std::string text = inner.with_context("engine 'cpu': X: expected a, found 'b'").to_string();
  EXPECT_EQ(text.find("caused by"), std::string::npos) << text;
  EXPECT_NE(text.find("engine 'cpu': X: expected a, found 'b'"), std::string::npos) << text;
  const std::string staged =
      inner.with_context("engine 'cpu': X: expected a, found 'b'", ErrorStage::kPrepare).to_string();
  EXPECT_NE(staged.find("caused by"), std::string::npos) << staged;
}

TEST(StatusTest, InStageOnlySetsAMissingStage) {
  Status s = make_error(ErrorCode::kInternal, ErrorStage::kNone, "m");
  EXPECT_EQ(s.in_stage(ErrorStage::kEnqueue).stage(), ErrorStage::kEnqueue);
  Status t = make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "m");
  EXPECT_EQ(t.in_stage(ErrorStage::kEnqueue).stage(), ErrorStage::kCompletion);
}

TEST(StatusTest, SuppressedErrorsAreKeptInOrder) {
  Error primary(ErrorCode::kInternal, ErrorStage::kCompletion, "kernel failed");
  Error both = primary.with_suppressed(Error(ErrorCode::kAborted, ErrorStage::kCompletion, "drain 1"))
                   .with_suppressed(Error(ErrorCode::kUnavailable, ErrorStage::kCompletion, "drain 2"));
  ASSERT_EQ(both.suppressed().size(), 2u);
  EXPECT_EQ(both.suppressed()[0].message(), "drain 1");
  EXPECT_EQ(both.suppressed()[1].code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(primary.suppressed().empty()) << "with_suppressed must not mutate the original";
  EXPECT_NE(both.to_string().find("suppressed"), std::string::npos);
}

TEST(StatusTest, CopiesShareTheImmutableError) {
  Status a = make_error(ErrorCode::kNotFound, ErrorStage::kConfiguration, "engine 7");
  Status b = a;
  EXPECT_EQ(&a.error(), &b.error());
}

Result<int> parse_positive(int x) {
  if (x <= 0) return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone, "expected > 0, found {}", x);
  return x * 10;
}

Result<int> twice(int x) {
  TENFERRO_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return v * 2;
}

Status check_all(int a, int b) {
  TENFERRO_TRY(parse_positive(a));
  TENFERRO_TRY(parse_positive(b));
  return ok_status();
}

TEST(ResultTest, HoldsValueOrError) {
  Result<int> good = parse_positive(4);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 40);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(ResultTest, MacrosPropagateFailures) {
  EXPECT_EQ(*twice(2), 40);
  EXPECT_EQ(twice(0).status().message(), "expected > 0, found 0");
  EXPECT_TRUE(check_all(1, 2).ok());
  EXPECT_EQ(check_all(1, -2).message(), "expected > 0, found -2");
}

TEST(ResultTest, SupportsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
  Result<std::unique_ptr<int>> moved = Result<std::unique_ptr<int>>(std::make_unique<int>(6));
  Result<std::unique_ptr<int>> target = make_error(ErrorCode::kInternal, ErrorStage::kNone, "x");
  target = std::move(moved);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(**target, 6);
}

TEST(ResultTest, CopyAndAssignBetweenStates) {
  Result<std::string> a = std::string("hello");
  Result<std::string> b = make_error(ErrorCode::kAborted, ErrorStage::kEnqueue, "no");
  Result<std::string> c = a;
  EXPECT_EQ(*c, "hello");
  c = b;
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kAborted);
  c = a;
  EXPECT_EQ(*c, "hello");
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r = Status();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInternal);
}

TEST(ResultDeathTest, AccessingAFailedValueAborts) {
  Result<int> bad = parse_positive(0);
  EXPECT_DEATH((void)bad.value(), "value\\(\\) of a failed Result");
}

TEST(StatusTest, ExceptionsConvertToStatus) {
  Status s;
  try {
    throw std::bad_alloc();
  } catch (...) {
    s = status_from_current_exception(ErrorStage::kEnqueue, "allocating output");
  }
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(s.stage(), ErrorStage::kEnqueue);
  try {
    throw std::runtime_error("boom");
  } catch (...) {
    s = status_from_current_exception(ErrorStage::kCompletion, "user callback");
  }
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("boom"), std::string_view::npos);
  try {
    throw 42;
  } catch (...) {
    s = status_from_current_exception(ErrorStage::kNone, "x");
  }
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
}

}  // namespace
}  // namespace tenferro

namespace tenferro {
namespace {

Result<std::vector<int>> ramp(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// Note [Values out of temporary results]: the value of a temporary Result
// is returned by value, so a range-for over it and a const reference to it
// outlive the Result (ASan reported a use after free while these returned
// T&&).
TEST(ResultTest, ValuesOutOfTemporaryResultsOutliveThem) {
  static_assert(std::is_same_v<decltype(*ramp(1)), std::vector<int>>);
  static_assert(std::is_same_v<decltype(ramp(1).value()), std::vector<int>>);
  int sum = 0;
  for (int x : *ramp(100)) sum += x;
  EXPECT_EQ(sum, 4950);
  const std::vector<int>& kept = ramp(5).value();
  EXPECT_EQ(kept, (std::vector<int>{0, 1, 2, 3, 4}));
  // An lvalue Result still hands out references to its own value.
  Result<std::vector<int>> r = ramp(3);
  (*r)[0] = 7;
  EXPECT_EQ(r.value()[0], 7);
  EXPECT_EQ(&*r, &r.value());
}

}  // namespace
}  // namespace tenferro
