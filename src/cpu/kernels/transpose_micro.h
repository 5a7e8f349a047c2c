// Register-tile transposes for the layout kernel (Note [Blocked transpose] in
// copy_kernel.cpp): W x W tiles of 4-, 8- or 16-byte elements, one
// translation unit per instruction set, chosen at run time from what the CPU
// supports and the ISA cap allows (the translation units get their ISA flags
// whatever the TENFERRO_ARCH compile target is, so a portable build still
// uses them; Note [ISA cap] in tenferro/cpu/cpu_isa.h).
#pragma once

#include <cstdint>

#include "tenferro/cpu/cpu_isa.h"

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

/// The kernel of instruction set `isa` (resolved: never kAuto; the caller
/// has checked the CPU runs it) for `item_size`-byte elements; width 0 for
/// kPortable.
TileTranspose select_tile_transpose(std::int64_t item_size, CpuIsa isa) noexcept;

/// Orders earlier non-temporal stores before later stores (sfence).
void store_fence() noexcept;

// One table per ISA, each in its own translation unit.
TileTranspose avx512_tile_transpose(std::int64_t item_size) noexcept;
TileTranspose avx2_tile_transpose(std::int64_t item_size) noexcept;

}  // namespace tenferro::cpu::internal
