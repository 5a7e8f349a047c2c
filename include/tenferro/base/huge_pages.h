// Transparent huge pages for large buffers.
//
// Note [Huge pages for large buffers]
// A large operand streamed by a packing or permutation kernel takes one TLB
// miss per 4 KiB page; on the development VM (Linux THP in `madvise` mode,
// the Debian default) this halves single-thread dgemm at n = 2048 (40 vs
// 70 GFLOP/s with the buffers advised, `tenferro bench gemm`). numpy advises
// every array of 4 MiB or more for the same reason. tenferro's own
// allocators (default host storage, CPU domain pools, engine workspaces,
// GEMM packing buffers) call advise_huge_pages on each fresh block before
// touching it; buffers users adopt are left alone. It is a hint: where THP
// is off, not Linux, or the range is small, nothing happens and nothing
// fails.
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

/// A workspace block of at least `bytes` from std::aligned_alloc (free it
/// with std::free): `alignment`-aligned, or, from kHugePageBytes on, whole
/// huge pages advised before first touch. `*allocated` receives the size
/// actually allocated. nullptr when exhausted.
void* allocate_workspace_block(std::size_t bytes, std::size_t alignment, std::size_t* allocated) noexcept;

}  // namespace tenferro
