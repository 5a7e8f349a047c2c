#include "tenferro/base/small_vector.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace tenferro {
namespace {

static_assert(sizeof(SmallVector<std::int64_t, 6>) == 64, "pointer + 2x32-bit + 6 inline int64");

TEST(SmallVectorTest, StaysInlineUpToCapacity) {
  SmallVector<std::int64_t, 4> v;
  EXPECT_TRUE(v.empty());
  for (int i = 0; i < 4; ++i) v.push_back(i);
  EXPECT_TRUE(v.is_inline());
  EXPECT_EQ(v.capacity(), 4u);
  v.push_back(4);
  EXPECT_FALSE(v.is_inline());
  EXPECT_GE(v.capacity(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(v[static_cast<std::size_t>(i)], i);
}

TEST(SmallVectorTest, ConstructorsAndSpanConversion) {
  SmallVector<int, 3> a{1, 2, 3, 4};
  EXPECT_EQ(a.size(), 4u);
  std::vector<int> src{5, 6};
  SmallVector<int, 3> b(src.begin(), src.end());
  EXPECT_EQ(b.back(), 6);
  SmallVector<int, 3> c{std::span<const int>(src)};
  EXPECT_EQ(c, b);
  SmallVector<int, 3> d(5, 9);
  EXPECT_EQ(std::accumulate(d.begin(), d.end(), 0), 45);
  std::span<const int> view = a;
  EXPECT_EQ(view.size(), 4u);
  EXPECT_EQ(view[3], 4);
  SmallVector<int, 3> zeros(3);
  EXPECT_EQ(zeros, (SmallVector<int, 3>{0, 0, 0}));
}

TEST(SmallVectorTest, CopyAndMoveInlineAndHeap) {
  for (std::size_t n : {2u, 10u}) {
    SmallVector<std::string, 4> src;
    for (std::size_t i = 0; i < n; ++i) src.push_back("s" + std::to_string(i));
    SmallVector<std::string, 4> copy = src;
    EXPECT_EQ(copy, src);
    SmallVector<std::string, 4> moved = std::move(src);
    EXPECT_EQ(moved, copy);
    EXPECT_TRUE(src.empty());  // NOLINT(bugprone-use-after-move): documented state
    EXPECT_TRUE(src.is_inline());
    src = moved;
    EXPECT_EQ(src, copy);
    SmallVector<std::string, 4> target{"x"};
    target = std::move(moved);
    EXPECT_EQ(target, copy);
  }
}

TEST(SmallVectorTest, PushBackOfOwnElementDuringGrowth) {
  SmallVector<std::string, 2> v{"a", "b"};
  v.push_back(v[0]);  // aliases an element while growing
  EXPECT_EQ(v, (SmallVector<std::string, 2>{"a", "b", "a"}));
  v.emplace_back(v.back());
  EXPECT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3], "a");
}

TEST(SmallVectorTest, InsertEraseResize) {
  SmallVector<int, 4> v{1, 2, 4};
  v.insert(v.begin() + 2, 3);
  v.insert(v.begin(), 0);
  v.insert(v.end(), 5);
  EXPECT_EQ(v, (SmallVector<int, 4>{0, 1, 2, 3, 4, 5}));
  v.erase(v.begin() + 1);
  EXPECT_EQ(v, (SmallVector<int, 4>{0, 2, 3, 4, 5}));
  v.erase(v.begin(), v.begin() + 2);
  EXPECT_EQ(v, (SmallVector<int, 4>{3, 4, 5}));
  v.resize(5, 7);
  EXPECT_EQ(v, (SmallVector<int, 4>{3, 4, 5, 7, 7}));
  v.resize(1);
  EXPECT_EQ(v, (SmallVector<int, 4>{3}));
  v.pop_back();
  EXPECT_TRUE(v.empty());
  v.assign(std::vector<int>{8, 9});
  EXPECT_EQ(v.front(), 8);
}

TEST(SmallVectorTest, MoveOnlyElementsAreDestroyed) {
  auto counter = std::make_shared<int>(0);
  {
    SmallVector<std::shared_ptr<int>, 2> v;
    for (int i = 0; i < 5; ++i) v.push_back(counter);
    EXPECT_EQ(counter.use_count(), 6);
    v.erase(v.begin());
    EXPECT_EQ(counter.use_count(), 5);
    SmallVector<std::unique_ptr<int>, 2> u;
    u.push_back(std::make_unique<int>(1));
    u.push_back(std::make_unique<int>(2));
    u.push_back(std::make_unique<int>(3));
    auto w = std::move(u);
    EXPECT_EQ(*w[2], 3);
  }
  EXPECT_EQ(counter.use_count(), 1);
}

struct alignas(64) Wide {
  double v[8];
};

TEST(SmallVectorTest, OverAlignedElementsStayAligned) {
  SmallVector<Wide, 1> v;
  for (int i = 0; i < 3; ++i) v.push_back(Wide{{static_cast<double>(i)}});
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 64, 0u);
  EXPECT_EQ(v[2].v[0], 2.0);
}

// Random operation sequences agree with std::vector.
TEST(SmallVectorTest, MatchesStdVectorUnderRandomOperations) {
  std::mt19937 rng(7);
  SmallVector<int, 3> v;
  std::vector<int> ref;
  for (int step = 0; step < 5000; ++step) {
    const int op = static_cast<int>(rng() % 6);
    const int value = static_cast<int>(rng() % 100);
    if (op == 0 || op == 1) {
      v.push_back(value);
      ref.push_back(value);
    } else if (op == 2 && !ref.empty()) {
      v.pop_back();
      ref.pop_back();
    } else if (op == 3) {
      const std::size_t at = ref.empty() ? 0 : rng() % (ref.size() + 1);
      v.insert(v.begin() + at, value);
      ref.insert(ref.begin() + static_cast<std::ptrdiff_t>(at), value);
    } else if (op == 4 && !ref.empty()) {
      const std::size_t at = rng() % ref.size();
      v.erase(v.begin() + at);
      ref.erase(ref.begin() + static_cast<std::ptrdiff_t>(at));
    } else if (op == 5) {
      const std::size_t n = rng() % 8;
      v.resize(n, value);
      ref.resize(n, value);
    }
    ASSERT_EQ(v.size(), ref.size());
    ASSERT_TRUE(std::equal(v.begin(), v.end(), ref.begin()));
  }
}

}  // namespace
}  // namespace tenferro
