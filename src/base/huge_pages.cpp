// advise_huge_pages (Note [Huge pages for large buffers]).
#include "tenferro/base/huge_pages.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tenferro {

bool advise_huge_pages(void* data, std::size_t bytes, std::size_t min_bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (data == nullptr || bytes < min_bytes || bytes < kHugePageBytes) return false;
  constexpr std::uintptr_t kMask = ~(std::uintptr_t{kHugePageBytes} - 1);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePageBytes - 1) & kMask;
  const std::uintptr_t last = (begin + bytes) & kMask;
  if (last <= first) return false;
  return madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE) == 0;
#else
  (void)data;
  (void)bytes;
  (void)min_bytes;
  return false;
#endif
}

void* allocate_workspace_block(std::size_t bytes, std::size_t alignment, std::size_t* allocated) noexcept {
  const bool huge = bytes >= kHugePageBytes;
  const std::size_t align = huge ? kHugePageBytes : alignment;
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  void* data = std::aligned_alloc(align, size);
  if (data == nullptr) return nullptr;
  if (huge) advise_huge_pages(data, size, kHugePageBytes);
  *allocated = size;
  return data;
}

}  // namespace tenferro
