// The dot_general composite's tiny-problem shortcut (Note [Tiny
// dot_general]): a (batched) matrix product small enough that planning TTGT
// and calling a GEMM provider costs more than the arithmetic.
//
// Note [Tiny dot_general]
// A validated request is "tiny" when it has at most one batch axis, at most
// one contracting axis and at most one free axis per operand (so it is a
// batched matrix, vector or outer product at any strides: row- or
// column-major, transposed, sliced, broadcast) and batch*m*n*k is at most
// DotGeneralOptions::tiny_max_work. Such a request skips planning and runs
// one strided triple loop per batch element on the calling thread, summing
// k in order. Nothing is allocated and no provider is called; the composite
// counts these calls (DotGeneralCounters::tiny_calls).
#pragma once

#include <cstdint>

#include "tenferro/cpu/gemm/dot_general.h"

namespace tenferro::cpu::internal {

/// A tiny request as a batched matrix product: extents and element strides
/// of every operand along (batch, m, k) for lhs, (batch, k, n) for rhs and
/// (batch, m, n) for out (0 where the operand lacks the axis).
struct TinyContraction {
  std::int64_t batch = 1;
  std::int64_t m = 1;
  std::int64_t n = 1;
  std::int64_t k = 1;
  std::int64_t lhs[3] = {0, 0, 0};
  std::int64_t rhs[3] = {0, 0, 0};
  std::int64_t out[3] = {0, 0, 0};
};

/// Fills `t` and returns true when the validated request is tiny (Note
/// [Tiny dot_general]); `out` is the result view. Reads only metadata.
bool match_tiny(const TensorView& lhs, const TensorView& rhs, const DotGeneralDims& dims, const TensorView& out,
                std::int64_t max_work, TinyContraction& t) noexcept;

/// Runs a matched tiny contraction of dtype `dtype` (not bool).
void run_tiny(DType dtype, const TinyContraction& t, const void* lhs, const void* rhs, void* out) noexcept;

}  // namespace tenferro::cpu::internal
