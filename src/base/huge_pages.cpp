// advise_huge_pages (Note [Huge pages for large buffers]).
#include "tenferro/base/huge_pages.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

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

namespace {

std::size_t whole_huge_pages(std::size_t bytes) noexcept {
  return (std::max<std::size_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* map_huge_pages(std::size_t bytes) noexcept {
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) return nullptr;
  const std::size_t size = whole_huge_pages(bytes);
#if defined(__linux__)
  // Map one huge page more than needed and unmap the unaligned ends.
  const std::size_t span = size + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (begin + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (aligned > begin) munmap(raw, aligned - begin);
  const std::uintptr_t end = aligned + size;
  if (begin + span > end) munmap(reinterpret_cast<void*>(end), begin + span - end);
  void* data = reinterpret_cast<void*>(aligned);
  advise_huge_pages(data, size, kHugePageBytes);
  return data;
#else
  return ::operator new(size, std::align_val_t(kHugePageBytes), std::nothrow);
#endif
}

void unmap_huge_pages(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
#if defined(__linux__)
  munmap(data, whole_huge_pages(bytes));
#else
  (void)bytes;
  ::operator delete(data, std::align_val_t(kHugePageBytes));
#endif
}

void* allocate_workspace_block(std::size_t bytes, std::size_t alignment, std::size_t* allocated) noexcept {
  if (bytes >= kHugePageBytes) {
    void* data = map_huge_pages(bytes);
    if (data != nullptr) *allocated = whole_huge_pages(bytes);
    return data;
  }
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* data = std::aligned_alloc(alignment, size);
  if (data != nullptr) *allocated = size;
  return data;
}

void free_workspace_block(void* data, std::size_t allocated) noexcept {
  if (allocated >= kHugePageBytes) {
    unmap_huge_pages(data, allocated);
  } else {
    std::free(data);
  }
}

}  // namespace tenferro
