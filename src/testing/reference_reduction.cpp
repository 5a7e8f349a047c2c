// Reference evaluation of reductions and dot_general (docs/core_ops.md
// "Reductions", "Contraction"): one accumulator per result element, summed
// in operand order in double / complex<double> (integers wrap).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "reference_ops.h"
#include "tenferro/program/attributes.h"
#include "tenferro/program/core_op.h"

namespace tenferro::testing::internal {
namespace {

using program::CoreSemanticOp;

bool contains(const Dims& axes, std::size_t axis) {
  return std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(axis)) != axes.end();
}

/// For every element of x, calls f(result_offset, element), where the
/// result keeps x's axes that are not in `axes`, in order.
template <class T, class F>
void for_each_reduced(const Tensor& x, const Dims& axes, F f) {
  Dims kept_shape;
  for (std::size_t k = 0; k < static_cast<std::size_t>(x.rank()); ++k) {
    if (!contains(axes, k)) kept_shape.push_back(x.size(static_cast<std::int64_t>(k)));
  }
  Dims kept(kept_shape.size(), 0);
  const T* src = elements<T>(x);
  std::int64_t i = 0;
  for_each_index(x.shape(), [&](std::span<const std::int64_t> index) {
    std::size_t j = 0;
    for (std::size_t k = 0; k < index.size(); ++k) {
      if (!contains(axes, k)) kept[j++] = index[k];
    }
    f(linear_offset(kept.span(), kept_shape), src[i++]);
  });
}

template <class T>
Result<Tensor> reduce(const CoreCall& call, const Dims& axes) {
  const Tensor& x = call.operands[0];
  const CoreSemanticOp op = call.op.core_op();
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, x.dtype()));
  T* dst = mutable_elements<T>(y);
  const auto n = static_cast<std::size_t>(y.numel());
  if constexpr (std::is_same_v<T, bool>) {
    return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} on bool", call.op.name());
  } else if (op == CoreSemanticOp::kReduceSum || op == CoreSemanticOp::kReduceProd) {
    using A = Accumulator<T>;
    const bool sum = op == CoreSemanticOp::kReduceSum;
    std::vector<A> acc(n, sum ? A(0) : A(1));
    for_each_reduced<T>(x, axes, [&](std::int64_t r, T v) {
      A& a = acc[static_cast<std::size_t>(r)];
      if constexpr (kIsInteger<T>) {
        a = sum ? wrap_add(a, v) : wrap_mul(a, v);
      } else {
        a = sum ? a + static_cast<A>(v) : a * static_cast<A>(v);
      }
    });
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(acc[i]);
    return y;
  }
  if constexpr (!kIsComplex<T> && !std::is_same_v<T, bool>) {
    const bool is_max = op == CoreSemanticOp::kReduceMax;
    constexpr bool kHasInf = std::numeric_limits<T>::has_infinity;
    const T identity = is_max ? (kHasInf ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest())
                              : (kHasInf ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max());
    std::fill(dst, dst + n, identity);
    for_each_reduced<T>(x, axes, [&](std::int64_t r, T v) {
      T& a = dst[r];
      if (is_nan(a)) return;  // NaN propagates
      if (is_nan(v) || (is_max ? a < v : v < a)) a = v;
    });
    return y;
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: {} on {} has no rule",
                    call.op.name(), x.dtype());
}

template <class T>
Result<Tensor> arg_reduce(const CoreCall& call, std::int64_t axis) {
  const Tensor& x = call.operands[0];
  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, DType::kInt64));
  if constexpr (!kIsComplex<T>) {
    const bool is_max = call.op.core_op() == CoreSemanticOp::kArgmax;
    const auto n = static_cast<std::size_t>(y.numel());
    std::vector<T> best(n);
    std::vector<bool> seen(n, false);
    std::int64_t* dst = mutable_elements<std::int64_t>(y);
    Dims axes{axis};
    // Visit in row-major order and remember the position along `axis`: the
    // first extreme wins, and the first NaN is the extreme.
    std::int64_t i = 0;
    const std::int64_t inner = [&] {
      std::int64_t s = 1;
      for (std::int64_t k = axis + 1; k < x.rank(); ++k) s *= x.size(k);
      return s;
    }();
    for_each_reduced<T>(x, axes, [&](std::int64_t r, T v) {
      const std::int64_t position = (i++ / inner) % x.size(axis);
      const auto slot = static_cast<std::size_t>(r);
      if (!seen[slot]) {
        seen[slot] = true;
        best[slot] = v;
        dst[r] = position;
        return;
      }
      if (is_nan(best[slot])) return;
      if (is_nan(v) || (is_max ? best[slot] < v : v < best[slot])) {
        best[slot] = v;
        dst[r] = position;
      }
    });
  }
  return y;
}

template <class T>
Result<Tensor> dot_general(const CoreCall& call) {
  const Tensor& lhs = call.operands[0];
  const Tensor& rhs = call.operands[1];
  const auto& d = *call.op.attributes_as<program::DotGeneralAttributes>();
  // Free axes of each operand, in order.
  auto free_axes = [](const Tensor& t, const Dims& batch, const Dims& contract) {
    Dims out;
    for (std::size_t k = 0; k < static_cast<std::size_t>(t.rank()); ++k) {
      if (!contains(batch, k) && !contains(contract, k)) out.push_back(static_cast<std::int64_t>(k));
    }
    return out;
  };
  const Dims lhs_free = free_axes(lhs, d.lhs_batch, d.lhs_contract);
  const Dims rhs_free = free_axes(rhs, d.rhs_batch, d.rhs_contract);
  Dims contract_shape;
  for (std::int64_t axis : d.lhs_contract) contract_shape.push_back(lhs.size(axis));

  TENFERRO_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(call.result_shape, lhs.dtype()));
  T* dst = mutable_elements<T>(y);
  Dims li(static_cast<std::size_t>(lhs.rank()), 0);
  Dims ri(static_cast<std::size_t>(rhs.rank()), 0);
  std::int64_t o = 0;
  for_each_index(call.result_shape, [&](std::span<const std::int64_t> out) {
    // Result axes: batch, then lhs free, then rhs free.
    std::size_t p = 0;
    for (std::size_t b = 0; b < d.lhs_batch.size(); ++b, ++p) {
      li[static_cast<std::size_t>(d.lhs_batch[b])] = out[p];
      ri[static_cast<std::size_t>(d.rhs_batch[b])] = out[p];
    }
    for (std::int64_t axis : lhs_free) li[static_cast<std::size_t>(axis)] = out[p++];
    for (std::int64_t axis : rhs_free) ri[static_cast<std::size_t>(axis)] = out[p++];
    Accumulator<T> acc{};
    auto accumulate = [&](std::span<const std::int64_t> c) {
      for (std::size_t j = 0; j < c.size(); ++j) {
        li[static_cast<std::size_t>(d.lhs_contract[j])] = c[j];
        ri[static_cast<std::size_t>(d.rhs_contract[j])] = c[j];
      }
      const T a = elements<T>(lhs)[linear_offset(li.span(), lhs.shape())];
      const T b = elements<T>(rhs)[linear_offset(ri.span(), rhs.shape())];
      if constexpr (kIsInteger<T>) {
        acc = wrap_add(acc, wrap_mul(a, b));
      } else {
        acc += static_cast<Accumulator<T>>(a) * static_cast<Accumulator<T>>(b);
      }
    };
    for_each_index(contract_shape, accumulate);
    dst[o++] = static_cast<T>(acc);
  });
  return y;
}

}  // namespace

Result<Tensor> evaluate_reduction(const CoreCall& call) {
  const Tensor& x = call.operands[0];
  switch (call.op.core_op()) {
    case CoreSemanticOp::kDotGeneral:
      return visit_dtype(x.dtype(), [&]<class T>(T) -> Result<Tensor> {
        if constexpr (std::is_same_v<T, bool>) {
          return make_error(ErrorCode::kInternal, ErrorStage::kCompletion, "reference evaluator: bool dot_general");
        } else {
          return dot_general<T>(call);
        }
      });
    case CoreSemanticOp::kArgmax:
    case CoreSemanticOp::kArgmin: {
      const std::int64_t axis = call.op.attributes_as<program::ArgReduceAttributes>()->axis;
      return visit_dtype(x.dtype(), [&]<class T>(T) { return arg_reduce<T>(call, axis); });
    }
    default: {
      const Dims& axes = call.op.attributes_as<program::ReduceAttributes>()->axes;
      return visit_dtype(x.dtype(), [&]<class T>(T) { return reduce<T>(call, axes); });
    }
  }
}

}  // namespace tenferro::testing::internal
