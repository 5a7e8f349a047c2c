// Shape and stride arithmetic shared by every component: the Dims type,
// overflow-checked element counts, row-/column-major strides and axis
// normalisation. All strides are in elements, never bytes.
#pragma once

#include <cstdint>

#include "tenferro/base/int_array_ref.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"

namespace tenferro {

/// Inline capacity covers rank <= 6 without touching the heap.
using Dims = SmallVector<std::int64_t, 6>;

/// Product of `shape`; kInvalidArgument for a negative extent, kSizeOverflow
/// when the product does not fit in int64.
Result<std::int64_t> checked_numel(IntArrayRef shape);
/// Product of `shape`, which must already be validated.
std::int64_t numel_unchecked(IntArrayRef shape) noexcept;
/// C-order (last axis fastest) strides of `shape`.
Dims row_major_strides(IntArrayRef shape);
/// Fortran-order (first axis fastest) strides of `shape`.
Dims col_major_strides(IntArrayRef shape);
/// Maps axis in [-rank, rank) to [0, rank); kAxisOutOfRange otherwise.
Result<std::int64_t> normalize_axis(std::int64_t axis, std::int64_t rank);
/// `shape` in readable form: "[2, 3, 4]".
std::string shape_to_string(IntArrayRef shape);

}  // namespace tenferro
