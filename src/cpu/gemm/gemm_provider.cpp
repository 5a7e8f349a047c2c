// Request validation shared by every GEMM provider, and the null provider.
#include "tenferro/cpu/gemm/gemm_provider.h"

#include <algorithm>
#include <array>

#include "cpu/gemm/gemm_layout.h"

namespace tenferro::cpu {
namespace {

struct Axis {
  std::int64_t extent;
  std::int64_t stride;
};

// Sufficient condition for distinct addresses: ordered by stride, every
// stride exceeds the span of all axes with smaller strides. Extent-1 axes
// do not matter. This accepts every layout a tensor can have after
// permuting, slicing and batching a dense buffer.
template <std::size_t N>
bool non_overlapping(std::array<Axis, N> axes) {
  std::sort(axes.begin(), axes.end(), [](const Axis& x, const Axis& y) { return x.stride < y.stride; });
  std::int64_t span = 0;  // largest offset reachable with the smaller axes
  for (const Axis& axis : axes) {
    if (axis.extent <= 1) continue;
    if (axis.stride <= span) return false;
    span += axis.stride * (axis.extent - 1);
  }
  return true;
}

// Byte range [lo, hi) touched by a matrix; empty when it has no elements.
struct ByteRange {
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
};

ByteRange byte_range(const void* data, std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs,
                     std::size_t elem) {
  if (rows <= 0 || cols <= 0 || data == nullptr) return {};
  const auto lo = reinterpret_cast<std::uintptr_t>(data);
  const auto last = static_cast<std::uintptr_t>((rows - 1) * rs + (cols - 1) * cs);
  return {lo, lo + (last + 1) * elem};
}

bool intersects(ByteRange x, ByteRange y) { return x.lo < x.hi && y.lo < y.hi && x.lo < y.hi && y.lo < x.hi; }

Status unsupported_entry(std::string_view entry) {
  return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                    "null GEMM provider: {} is not implemented (expected a provider that supports it)", entry);
}

}  // namespace

bool GemmSupport::supports(DType dtype) const noexcept {
  switch (dtype) {
    case DType::kFloat32:
      return f32;
    case DType::kFloat64:
      return f64;
    case DType::kComplex64:
      return c64;
    case DType::kComplex128:
      return c128;
    default:
      return false;
  }
}

bool gemm_operand_layout_supported(GemmStrideSupport support, std::int64_t rows, std::int64_t cols, std::int64_t rs,
                                   std::int64_t cs) noexcept {
  if (rows <= 0 || cols <= 0) return true;
  switch (support) {
    case GemmStrideSupport::kAny:
      return true;
    case GemmStrideSupport::kUnitStride:
      return internal::as_blas_operand(rows, cols, rs, cs).has_value();
    case GemmStrideSupport::kPositiveTilted: {
      if (rows == 1 || cols == 1) return (rows == 1 || rs > 0) && (cols == 1 || cs > 0);
      if (rs <= 0 || cs <= 0 || rs == cs) return false;
      return rs < cs ? cs >= rows * rs : rs >= cols * cs;
    }
  }
  return false;
}

bool gemm_layout_supported(GemmStrideSupport support, const GemmProblem& p) noexcept {
  return gemm_operand_layout_supported(support, p.m, p.k, p.a.row_stride, p.a.col_stride) &&
         gemm_operand_layout_supported(support, p.k, p.n, p.b.row_stride, p.b.col_stride) &&
         gemm_operand_layout_supported(support, p.m, p.n, p.c.row_stride, p.c.col_stride);
}

Status check_layout_supported(const GemmSupport& support, const GemmProblem& p, std::string_view provider) {
  if (gemm_layout_supported(support.strides, p)) return ok_status();
  return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                    "{} GEMM provider: expected operand layouts it supports (one unit stride and a leading "
                    "dimension per operand, or tilted positive strides), found A ({}, {}), B ({}, {}), C ({}, {}) "
                    "for m={}, n={}, k={}",
                    provider, p.a.row_stride, p.a.col_stride, p.b.row_stride, p.b.col_stride, p.c.row_stride,
                    p.c.col_stride, p.m, p.n, p.k);
}

bool can_run_sequential_per_worker(const ProviderCapability& capability) noexcept {
  return capability.thread_count != ThreadCountControl::kGlobalOrUncontrolled;
}

Status validate_gemm_problem(DType dtype, const GemmProblem& p, std::string_view where) {
  if (p.m < 0 || p.n < 0 || p.k < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected non-negative extents, found m={}, n={}, k={}", where, p.m, p.n, p.k);
  }
  const std::int64_t strides[] = {p.a.row_stride, p.a.col_stride, p.b.row_stride,
                                  p.b.col_stride, p.c.row_stride, p.c.col_stride};
  for (std::int64_t s : strides) {
    if (s < 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "{}: expected non-negative strides, found A ({}, {}), B ({}, {}), C ({}, {})", where,
                        strides[0], strides[1], strides[2], strides[3], strides[4], strides[5]);
    }
  }
  const bool reads_ab = p.k > 0 && p.alpha != std::complex<double>(0.0);
  if ((p.m > 0 && p.n > 0 && p.c.data == nullptr) || (reads_ab && p.m > 0 && p.n > 0 && p.a.data == nullptr) ||
      (reads_ab && p.m > 0 && p.n > 0 && p.b.data == nullptr)) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected data for every non-empty operand, found null (m={}, n={}, k={})", where, p.m, p.n,
                      p.k);
  }
  if (!non_overlapping(std::array<Axis, 2>{Axis{p.m, p.c.row_stride}, Axis{p.n, p.c.col_stride}})) {
    return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                      "{}: expected distinct addresses for the elements of C, found strides ({}, {}) for a {}x{} C",
                      where, p.c.row_stride, p.c.col_stride, p.m, p.n);
  }
  const std::size_t elem = dtype_size(dtype);
  const ByteRange c = byte_range(p.c.data, p.m, p.n, p.c.row_stride, p.c.col_stride, elem);
  if (reads_ab && (intersects(c, byte_range(p.a.data, p.m, p.k, p.a.row_stride, p.a.col_stride, elem)) ||
                   intersects(c, byte_range(p.b.data, p.k, p.n, p.b.row_stride, p.b.col_stride, elem)))) {
    return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                      "{}: expected C not to overlap A or B, found overlapping address ranges", where);
  }
  return ok_status();
}

Status validate_strided_batched(const StridedBatchedGemmRequest& r, std::string_view where) {
  TENFERRO_TRY(validate_gemm_problem(r.dtype, r.problem, where));
  if (r.batch_count < 0 || r.a_batch_stride < 0 || r.b_batch_stride < 0 || r.c_batch_stride < 0) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                      "{}: expected a non-negative batch count and batch strides, found count {} and strides "
                      "A {}, B {}, C {}",
                      where, r.batch_count, r.a_batch_stride, r.b_batch_stride, r.c_batch_stride);
  }
  const GemmProblem& p = r.problem;
  if (!non_overlapping(std::array<Axis, 3>{Axis{p.m, p.c.row_stride}, Axis{p.n, p.c.col_stride},
                                           Axis{r.batch_count, r.c_batch_stride}})) {
    return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                      "{}: expected the {} outputs to occupy distinct addresses, found C strides ({}, {}) and batch "
                      "stride {}",
                      where, r.batch_count, p.c.row_stride, p.c.col_stride, r.c_batch_stride);
  }
  return ok_status();
}

Status check_dtype_supported(const GemmSupport& support, DType dtype, std::string_view provider) {
  if (support.supports(dtype)) return ok_status();
  return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                    "{} GEMM provider: expected float32, float64, complex64 or complex128 it supports, found {}",
                    provider, to_string(dtype));
}

NullGemmProvider::NullGemmProvider() {
  capability_.thread_count = ThreadCountControl::kSequential;
  capability_.placement = PlacementControl::kCallingThread;
  capability_.detail = "null GEMM provider (supports nothing)";
}

Status NullGemmProvider::gemm(const GemmRequest& request, const ParallelContext& /*ctx*/) const {
  TENFERRO_TRY(validate_gemm_problem(request.dtype, request.problem, "null gemm"));
  return unsupported_entry("gemm");
}

Status NullGemmProvider::gemm_strided_batched(const StridedBatchedGemmRequest& request,
                                              const ParallelContext& /*ctx*/) const {
  TENFERRO_TRY(validate_strided_batched(request, "null gemm_strided_batched"));
  return unsupported_entry("gemm_strided_batched");
}

Status NullGemmProvider::gemm_grouped(const GroupedGemmRequest& request, const ParallelContext& /*ctx*/) const {
  for (const GemmProblem& p : request.problems)
    TENFERRO_TRY(validate_gemm_problem(request.dtype, p, "null gemm_grouped"));
  return unsupported_entry("gemm_grouped");
}

}  // namespace tenferro::cpu
