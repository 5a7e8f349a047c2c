// Register-tile transposes for the layout kernel (Note [Blocked transpose] in
// copy_kernel.cpp): W x W tiles of 4-, 8- or 16-byte elements, one
// translation unit per instruction set, chosen at run time from what the CPU
// supports (the translation units get their ISA flags whatever
// TENFERRO_NATIVE_ARCH says, so a portable build still uses them).
#pragma once

#include <cstdint>

namespace tenferro::cpu::internal {

/// (dst_cols[c] + dst_offset)[r] = (src_rows[r] + src_offset)[c] for
/// r, c < width (byte offsets; element indices): every source row and
/// destination column is a contiguous run of `width` elements. The row and
/// column bases of a whole macro tile are computed once and the offsets
/// select the register tile. With `streaming`, columns whose address is
/// 64-byte aligned are written with non-temporal stores (the caller fences
/// with store_fence()).
using TileKernel = void (*)(const char* const* src_rows, std::int64_t src_offset, char* const* dst_cols,
                            std::int64_t dst_offset, bool streaming) noexcept;

struct TileTranspose {
  int width = 0;  ///< 0: no SIMD kernel for this element size
  TileKernel run = nullptr;
};

/// The widest kernel this CPU supports for `item_size`-byte elements.
TileTranspose select_tile_transpose(std::int64_t item_size) noexcept;

/// Orders earlier non-temporal stores before later stores (sfence).
void store_fence() noexcept;

// One table per ISA, each in its own translation unit.
TileTranspose avx512_tile_transpose(std::int64_t item_size) noexcept;
TileTranspose avx2_tile_transpose(std::int64_t item_size) noexcept;

}  // namespace tenferro::cpu::internal
