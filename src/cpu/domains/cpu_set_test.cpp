#include "tenferro/cpu/domains/cpu_set.h"

#include <gtest/gtest.h>

namespace tenferro::cpu {
namespace {

TEST(CpuSetTest, ParsesAndPrintsCpulists) {
  auto set = CpuSet::parse(" 0-3, 8,10-11 ");
  ASSERT_TRUE(set.ok()) << set.status().to_string();
  EXPECT_EQ(set->count(), 7);
  EXPECT_EQ(set->to_string(), "0-3,8,10-11");
  EXPECT_EQ(set->to_vector(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(set->first(), 0);
  EXPECT_EQ(set->last(), 11);
  EXPECT_EQ(set->next(3), 8);
  EXPECT_EQ(set->next(11), -1);
  EXPECT_TRUE(CpuSet::parse("")->empty());
  EXPECT_EQ(CpuSet::parse("5")->to_string(), "5");
  EXPECT_EQ(fmt::format("{}", CpuSet{}), "{}");
}

TEST(CpuSetTest, MalformedCpulistsAreTypedErrors) {
  for (const char* bad : {"a", "3-1", "1,,2", "-1", "1-", "0-99999", "1.5"}) {
    auto set = CpuSet::parse(bad);
    ASSERT_FALSE(set.ok()) << bad;
    EXPECT_EQ(set.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(set.status().stage(), ErrorStage::kConfiguration);
    EXPECT_NE(set.status().message().find("expected items"), std::string_view::npos);
  }
}

TEST(CpuSetTest, SetAlgebraAcrossWords) {
  const CpuSet a = CpuSet::range(60, 70);  // spans the first two 64-bit words
  const CpuSet b{65, 300, 1000};           // beyond the inline capacity
  EXPECT_TRUE(a.intersects(b));
  EXPECT_EQ((a & b), (CpuSet{65}));
  EXPECT_EQ((a | b).count(), 13);
  EXPECT_EQ((a | b).last(), 1000);
  EXPECT_EQ(a.minus(b).count(), 10);
  EXPECT_FALSE(a.minus(b).contains(65));
  EXPECT_TRUE((CpuSet{61, 62}).is_subset_of(a));
  EXPECT_FALSE(b.is_subset_of(a));
  EXPECT_TRUE(CpuSet{}.is_subset_of(a));
  EXPECT_FALSE(CpuSet{}.intersects(a));

  CpuSet c = b;
  c.remove(1000);
  c.remove(300);
  EXPECT_EQ(c, CpuSet{65});  // trailing zero words are trimmed, so equality is exact
  c.remove(65);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.first(), -1);
  EXPECT_EQ(c.last(), -1);
}

}  // namespace
}  // namespace tenferro::cpu
