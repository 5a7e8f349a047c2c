// Reference evaluation of the along-axis ops (docs/core_ops.md "Along one
// axis"): cumsum / cumprod accumulate each lane in order in double /
// complex<double> (integers wrap); sort / argsort place every element at its
// rank, counted directly (no sorting algorithm), so they check the kernel's
// stable sort independently.
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference_ops.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"

namespace tenferro::testing::internal {
namespace {

using program::CoreSemanticOp;

// A tensor seen as [outer, len, inner] around one axis.
struct Lanes {
  std::int64_t outer = 1, len = 1, inner = 1;
  Lanes(const Tensor& x, std::int64_t axis) : len(x.size(axis)) {
    for (std::int64_t k = 0; k < axis; ++k) outer *= x.size(k);
    for (std::int64_t k = axis + 1; k < x.rank(); ++k) inner *= x.size(k);
  }
  std::int64_t offset(std::int64_t o, std::int64_t k, std::int64_t i) const { return (o * len + k) * inner + i; }
};

template <class T>
Result<Tensor> cumulative(const CoreCall& call, const program::CumulativeAttributes& a) {
  const Tensor& x = call.operands[0];
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(x.shape(), x.dtype()));
  if constexpr (std::is_same_v<T, bool>) {
    return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} on bool", call.op.name());
  } else {
    using A = Accumulator<T>;
    const bool sum = call.op.core_op() == CoreSemanticOp::kCumsum;
    const Lanes lanes(x, a.axis);
    const T* src = elements<T>(x);
    T* dst = mutable_elements<T>(y);
    for (std::int64_t o = 0; o < lanes.outer; ++o) {
      for (std::int64_t i = 0; i < lanes.inner; ++i) {
        A acc = sum ? A(0) : A(1);
        for (std::int64_t step = 0; step < lanes.len; ++step) {
          const std::int64_t k = a.reverse ? lanes.len - 1 - step : step;
          const std::int64_t at = lanes.offset(o, k, i);
          if (a.exclusive) dst[at] = static_cast<T>(acc);
          if constexpr (kIsInteger<T>) {
            acc = sum ? wrap_add(acc, src[at]) : wrap_mul(acc, src[at]);
          } else {
            acc = sum ? acc + static_cast<A>(src[at]) : acc * static_cast<A>(src[at]);
          }
          if (!a.exclusive) dst[at] = static_cast<T>(acc);
        }
      }
    }
    return y;
  }
}

// Whether a strictly precedes b: NaNs last in either direction.
template <class T>
bool precedes(T a, T b, bool descending) {
  if (is_nan(a)) return false;
  if (is_nan(b)) return true;
  return descending ? b < a : a < b;
}

template <class T>
Result<Tensor> sort(const CoreCall& call, const program::SortAttributes& a) {
  const Tensor& x = call.operands[0];
  const bool values = call.op.core_op() == CoreSemanticOp::kSort;
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(x.shape(), values ? x.dtype() : DType::kInt64));
  if constexpr (kIsComplex<T>) {
    return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} on complex",
                      call.op.name());
  } else {
    const Lanes lanes(x, a.axis);
    const T* src = elements<T>(x);
    for (std::int64_t o = 0; o < lanes.outer; ++o) {
      for (std::int64_t i = 0; i < lanes.inner; ++i) {
        for (std::int64_t k = 0; k < lanes.len; ++k) {
          const T v = src[lanes.offset(o, k, i)];
          // Rank: elements strictly before v, plus equal ones earlier in the
          // lane (stability).
          std::int64_t rank = 0;
          for (std::int64_t j = 0; j < lanes.len; ++j) {
            const T w = src[lanes.offset(o, j, i)];
            const bool tie = !precedes(w, v, a.descending) && !precedes(v, w, a.descending);
            if (precedes(w, v, a.descending) || (tie && j < k)) ++rank;
          }
          const std::int64_t at = lanes.offset(o, rank, i);
          if (values) {
            mutable_elements<T>(y)[at] = v;
          } else {
            mutable_elements<std::int64_t>(y)[at] = k;
          }
        }
      }
    }
    return y;
  }
}

}  // namespace

Result<Tensor> evaluate_along_axis(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  if (const auto* cumulative_attributes = call.op.attributes_as<program::CumulativeAttributes>()) {
    return visit_dtype(x.dtype(), [&]<class T>(T) { return cumulative<T>(call, *cumulative_attributes); });
  }
  if (const auto* sort_attributes = call.op.attributes_as<program::SortAttributes>()) {
    return visit_dtype(x.dtype(), [&]<class T>(T) { return sort<T>(call, *sort_attributes); });
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} has no along-axis rule",
                    call.op.name());
}

}  // namespace tenferro::testing::internal
