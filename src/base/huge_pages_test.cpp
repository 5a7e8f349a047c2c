// advise_huge_pages: small blocks are left alone; a large block's aligned
// interior becomes THP-eligible (read back from /proc/self/smaps) where the
// kernel offers transparent huge pages.
#include "tenferro/base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace tenferro {
namespace {

// THP mode from sysfs ("always", "madvise", "never"), empty when unknown.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(in, text);
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos) return {};
  return text.substr(open + 1, close - open - 1);
}

// The THPeligible field of the /proc/self/smaps mapping containing `p`, or -1.
int thp_eligible(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= address && address < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

TEST(HugePagesTest, SmallBlocksAreNotAdvised) {
  void* p = std::aligned_alloc(4096, kHugePageAdviceBytes / 2);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(advise_huge_pages(p, kHugePageAdviceBytes / 2));
  EXPECT_FALSE(advise_huge_pages(nullptr, kHugePageAdviceBytes * 2));
  std::free(p);
}

TEST(HugePagesTest, LargeBlocksBecomeEligible) {
  const std::string mode = thp_mode();
  // Only in madvise mode does eligibility depend on the advice ("always"
  // makes every mapping eligible, "never" none).
  if (mode != "madvise") GTEST_SKIP() << "transparent huge pages are '" << mode << "' here, not 'madvise'";
  const std::size_t bytes = kHugePageAdviceBytes * 4;
  void* p = std::aligned_alloc(4096, bytes);
  ASSERT_NE(p, nullptr);
  // A byte in the aligned interior: its mapping (split off by madvise) is
  // eligible afterwards and was not before.
  const auto interior =
      (reinterpret_cast<std::uintptr_t>(p) + (std::uintptr_t{4} << 20)) & ~((std::uintptr_t{2} << 20) - 1);
  EXPECT_EQ(thp_eligible(reinterpret_cast<const void*>(interior)), 0);
  ASSERT_TRUE(advise_huge_pages(p, bytes));
  std::memset(p, 1, bytes);
  EXPECT_EQ(thp_eligible(reinterpret_cast<const void*>(interior)), 1);
  std::free(p);
}

// map_huge_pages: whole huge pages on a huge-page boundary, fresh from the
// system, THP-eligible from the start wherever advice decides it.
TEST(HugePagesTest, MappedBlocksAreWholeAlignedHugePages) {
  const std::size_t bytes = kHugePageBytes * 2 + 1;
  void* p = map_huge_pages(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes, 0u);
  std::memset(p, 7, kHugePageBytes * 3);  // rounded up to three huge pages, all writable
  EXPECT_EQ(static_cast<const unsigned char*>(p)[kHugePageBytes * 3 - 1], 7);
  if (thp_mode() == "madvise") {
    EXPECT_EQ(thp_eligible(p), 1);
  }
  unmap_huge_pages(p, bytes);
  EXPECT_EQ(map_huge_pages(SIZE_MAX - kHugePageBytes), nullptr);  // too large: nullptr, no overflow
}

TEST(HugePagesTest, WorkspaceBlocksReportWhatTheyAllocated) {
  std::size_t small = 0;
  void* s = allocate_workspace_block(1000, 64, &small);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(small, 1024u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s) % 64, 0u);
  free_workspace_block(s, small);

  std::size_t large = 0;
  void* l = allocate_workspace_block(kHugePageBytes + 1, 64, &large);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(large, 2 * kHugePageBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(l) % kHugePageBytes, 0u);
  std::memset(l, 1, large);
  free_workspace_block(l, large);
}

}  // namespace
}  // namespace tenferro
