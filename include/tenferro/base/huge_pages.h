// Transparent huge pages for large buffers.
//
// Note [Huge pages for large buffers]
// A large operand streamed by a packing or permutation kernel takes one TLB
// miss per 4 KiB page; where Linux THP is in `madvise` mode (the Debian
// default) that costs large GEMMs a large share of their speed (`tenferro
// bench gemm`; docs/performance_notes.md, "Huge pages"). numpy advises every
// array of 4 MiB or more for the same reason. Advice only helps memory not
// yet touched: pages the C heap recycles stay 4 KiB. So the pooled
// allocators (CPU domain pools, the calling-thread engine's pool, engine
// workspaces, GEMM packing buffers) take their large blocks from
// map_huge_pages, fresh and huge-page aligned; default host storage, which
// is not pooled, advises the interior of its operator-new blocks (mapping
// fresh there would zero a new block on every call). Buffers users adopt
// are left alone. It is a hint: where THP is off, not Linux, or the range
// is small, nothing happens and nothing fails.
//
// The price is paid on first touch: under a hypervisor, writing fresh
// advised memory is slower than with 4 KiB pages (each new 2 MiB block is
// backed on demand), while a second pass costs the same. Pooled memory
// (workspaces, domain pools, packing buffers) pays it once, so a repeated
// large einsum gets slower on its first call and faster on every later one
// (docs/performance_notes.md, "Huge pages").
#pragma once

#include <cstddef>

namespace tenferro {

/// The x86-64 transparent huge page.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
/// Storage blocks of at least this many bytes are advised (numpy's
/// threshold). Workspace pools, which allocate whole huge pages aligned to
/// kHugePageBytes, advise from kHugePageBytes on.
inline constexpr std::size_t kHugePageAdviceBytes = std::size_t{4} << 20;

/// Asks the kernel to back the kHugePageBytes-aligned pages inside [data,
/// data + bytes) with transparent huge pages when bytes >= min_bytes. Call
/// it before the memory is first written. Returns whether advice was given
/// (false: too small, unsupported, or refused).
bool advise_huge_pages(void* data, std::size_t bytes, std::size_t min_bytes = kHugePageAdviceBytes) noexcept;

/// Whole huge pages mapped fresh from the system: at least `bytes`
/// (rounded up to kHugePageBytes), aligned to kHugePageBytes and advised
/// before first touch. Fresh matters: memory the C heap recycles may
/// already be backed by 4 KiB pages, which advice does not change (a
/// Python process, whose heap numpy has used, got one huge page in two for
/// its pooled einsum results; docs/performance_notes.md, "Huge pages").
/// Release with unmap_huge_pages(data, bytes), the same `bytes`. nullptr
/// when exhausted.
void* map_huge_pages(std::size_t bytes) noexcept;
void unmap_huge_pages(void* data, std::size_t bytes) noexcept;

/// A workspace block of at least `bytes`: below kHugePageBytes from
/// std::aligned_alloc, `alignment`-aligned; from kHugePageBytes on,
/// map_huge_pages. `*allocated` receives the size actually allocated; free
/// it with free_workspace_block(data, *allocated). nullptr when exhausted.
void* allocate_workspace_block(std::size_t bytes, std::size_t alignment, std::size_t* allocated) noexcept;
void free_workspace_block(void* data, std::size_t allocated) noexcept;

}  // namespace tenferro
