// Elementwise kernels: validation, then one switch on (op, dtype) per call
// that selects a run_elementwise instance (Note [Choosing the inner loop
// once]).
#include "tenferro/cpu/kernels/elementwise.h"

#include <array>
#include <utility>

#include "cpu/kernels/elementwise_functors.h"
#include "cpu/kernels/elementwise_loop.h"
#include "cpu/kernels/validation.h"
#include "cpu/kernels/vector_math.h"

namespace tenferro::cpu {
namespace {

using internal::kStage;
using internal::run_elementwise;

// Elements per parallel chunk. Memory-bound ops need large chunks to pay for
// a fork-join (its cost: `tenferro bench domains`, parallel_for_2); ops
// calling libm cost far more per element and need much smaller ones.
constexpr std::int64_t kCheapGrain = 32768;
constexpr std::int64_t kHeavyGrain = 2048;
// A vector math function (Note [Vector math]) costs about 1 ns per element
// (float64 tanh, AVX-512), ten times less than libm: with the heavy grain a
// recorded np.tanh of 64 x 64 float64 in tenferro.grad took 11.0 us on a
// two-thread runtime against 7.1 us on a one-thread one (2026-12-04, Zen 5
// VM, the fork-join cost more than it saved).
constexpr std::int64_t kVectorMathGrain = 8192;

enum class OpCost : std::uint8_t { kCheap, kHeavy };

struct OpInfo {
  std::string_view name;
  OpDomain domain;
  OpCost cost;
};
constexpr OpInfo kUnaryInfo[] = {
#define TENFERRO_UNARY_OP(name, str, domain, cost) {str, OpDomain::k##domain, OpCost::k##cost},
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
constexpr OpInfo kBinaryInfo[] = {
#define TENFERRO_BINARY_OP(name, str, domain, cost) {str, OpDomain::k##domain, OpCost::k##cost},
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
constexpr std::string_view kDirectionNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};

constexpr const OpInfo& info(UnaryOp op) { return kUnaryInfo[static_cast<int>(op)]; }
constexpr const OpInfo& info(BinaryOp op) { return kBinaryInfo[static_cast<int>(op)]; }
constexpr std::int64_t grain_of(OpCost cost) { return cost == OpCost::kCheap ? kCheapGrain : kHeavyGrain; }

std::string_view domain_name(OpDomain d) {
  switch (d) {
    case OpDomain::kNumeric:
      return "a numeric dtype (integer, floating or complex)";
    case OpDomain::kInexact:
      return "a floating or complex dtype";
    case OpDomain::kFloating:
      return "a floating dtype";
    case OpDomain::kRealNumeric:
      return "an integer or floating dtype";
    case OpDomain::kBool:
      return "bool";
    case OpDomain::kIntegral:
      return "bool or an integer dtype";
    case OpDomain::kInteger:
      return "an integer dtype";
    case OpDomain::kAny:
      return "any dtype";
  }
  return "?";
}

Status check_domain(std::string_view op, const TensorView& x, OpDomain domain) {
  if (in_domain(domain, x.dtype)) return ok_status();
  return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: expected {}, found {}", op, domain_name(domain), x.dtype);
}

// Views, equal shapes, the output's dtype and the alias contract for an op
// with output `out` and inputs `in` (all of in[0]'s shape).
Status check_elementwise(std::string_view op, const TensorView& out, DType out_dtype, std::span<const TensorView> in,
                         std::span<const std::string_view> names) {
  for (std::size_t k = 0; k < in.size(); ++k) {
    TENFERRO_TRY(internal::check_view(op, names[k], in[k]));
    if (k > 0) TENFERRO_TRY(internal::check_shape(op, names[k], in[k], in[0].shape));
  }
  TENFERRO_TRY(internal::check_output_view(op, "output", out));
  TENFERRO_TRY(internal::check_shape(op, "output", out, in[0].shape));
  TENFERRO_TRY(internal::check_dtype(op, "output", out, out_dtype));
  for (std::size_t k = 0; k < in.size(); ++k) {
    TENFERRO_TRY(internal::check_alias(op, out, names[k], in[k], /*allow_identical=*/true));
  }
  return ok_status();
}

// Op's scalar function for strided elements and a vector math function for
// contiguous runs (Note [Vector math]).
template <class Op>
struct VectorRuns : Op {
  internal::VectorMathFn vector;
  void run(char* out, const char* x, std::int64_t n) const { vector(out, x, n); }
};

// `vector`: the op's vector math function for x's dtype, or nullptr.
template <class Op, OpDomain kDomain, bool kHasVectorMath>
void dispatch_unary(const TensorView& x, const TensorView& out, const ParallelContext& ctx, std::int64_t grain,
                    KernelStats* stats, internal::VectorMathFn vector) {
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (in_domain(kDomain, dtype_of<T>)) {
      using Out = decltype(Op{}(T{}));
      const std::span<const TensorView> in(&x, 1);
      if constexpr (kHasVectorMath && std::is_floating_point_v<T> && std::is_same_v<Out, T>) {
        if (vector != nullptr) {
          if (stats != nullptr) ++stats->vector_math;
          return run_elementwise<Out, T>(VectorRuns<Op>{{}, vector}, out, in, ctx, grain, stats);
        }
      }
      run_elementwise<Out, T>(Op{}, out, in, ctx, grain, stats);
    }
  });
}

template <class Op, OpDomain kDomain>
void dispatch_binary(const TensorView& a, const TensorView& b, const TensorView& out, const ParallelContext& ctx,
                     std::int64_t grain, KernelStats* stats) {
  const std::array<TensorView, 2> in = {a, b};
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (in_domain(kDomain, dtype_of<T>)) {
      using Out = decltype(Op{}(T{}, T{}));
      run_elementwise<Out, T, T>(Op{}, out, in, ctx, grain, stats);
    }
  });
}

// Integer division (div, remainder, fmod) checks its divisor before anything
// is written.
constexpr bool needs_divisor_check(BinaryOp op, DType dtype) {
  return is_integer(dtype) && (op == BinaryOp::kDiv || op == BinaryOp::kRemainder || op == BinaryOp::kFmod);
}
Status check_nonzero_divisor(BinaryOp op, const TensorView& b) {
  bool zero = false;
  visit_dtype(b.dtype, [&]<class T>(T) {
    if constexpr (internal::kIsWrappingInt<T>) {
      const internal::LoopOperand ops[1] = {{b.data, b.strides.data(), static_cast<std::int64_t>(sizeof(T))}};
      internal::StridedLoop<1> loop;
      internal::init_strided_loop(b.shape, ops, loop);
      const std::int64_t s = loop.inner_stride(0);
      internal::for_each_run(loop, 0, loop.numel, [&](char* const* p, std::int64_t n) {
        bool found = false;
        for (std::int64_t i = 0; i < n; ++i) found |= *reinterpret_cast<const T*>(p[0] + i * s) == 0;
        zero = zero || found;
      });
    }
  });
  if (!zero) return ok_status();
  return make_error(ErrorCode::kInvalidArgument, ErrorStage::kCompletion,
                    "{}: integer division by zero (the {} divisor of shape {} contains a zero)", to_string(op), b.dtype,
                    shape_to_string(b.shape));
}

// ---- the flat fast path: one function pointer per (op, dtype) ----

using FlatUnaryFn = void (*)(char* out, const char* x, std::int64_t n);
using FlatBinaryFn = void (*)(char* out, const char* a, const char* b, std::int64_t n);

template <class Op, class T>
void flat_unary(char* out, const char* x, std::int64_t n) {
  using Out = decltype(Op{}(T{}));
  internal::contiguous_loop<Out>(Op{}, reinterpret_cast<Out*>(out), n,
                                 internal::ContiguousArg<T>{reinterpret_cast<const T*>(x)});
}
template <class Op, class T>
void flat_binary(char* out, const char* a, const char* b, std::int64_t n) {
  using Out = decltype(Op{}(T{}, T{}));
  internal::contiguous_loop<Out>(Op{}, reinterpret_cast<Out*>(out), n,
                                 internal::ContiguousArg<T>{reinterpret_cast<const T*>(a)},
                                 internal::ContiguousArg<T>{reinterpret_cast<const T*>(b)});
}

template <class Op, OpDomain kDomain, DType D>
constexpr FlatUnaryFn unary_entry() {
  if constexpr (in_domain(kDomain, D)) {
    return &flat_unary<Op, cpp_type<D>>;
  } else {
    return nullptr;
  }
}
template <class Op, OpDomain kDomain, DType D>
constexpr FlatBinaryFn binary_entry() {
  if constexpr (in_domain(kDomain, D)) {
    return &flat_binary<Op, cpp_type<D>>;
  } else {
    return nullptr;
  }
}
template <class Op, OpDomain kDomain, std::size_t... I>
constexpr std::array<FlatUnaryFn, kNumDTypes> unary_row(std::index_sequence<I...>) {
  return {unary_entry<Op, kDomain, static_cast<DType>(I)>()...};
}
template <class Op, OpDomain kDomain, std::size_t... I>
constexpr std::array<FlatBinaryFn, kNumDTypes> binary_row(std::index_sequence<I...>) {
  return {binary_entry<Op, kDomain, static_cast<DType>(I)>()...};
}

constexpr std::array<FlatUnaryFn, kNumDTypes> kFlatUnary[] = {
#define TENFERRO_UNARY_OP(name, str, domain, cost) \
  unary_row<internal::name##Op, OpDomain::k##domain>(std::make_index_sequence<kNumDTypes>{}),
#include "tenferro/cpu/kernels/elementwise_ops.def"
};
constexpr std::array<FlatBinaryFn, kNumDTypes> kFlatBinary[] = {
#define TENFERRO_BINARY_OP(name, str, domain, cost) \
  binary_row<internal::name##Op, OpDomain::k##domain>(std::make_index_sequence<kNumDTypes>{}),
#include "tenferro/cpu/kernels/elementwise_ops.def"
};

// Result dtypes per (op, input dtype); entries outside the op's domain are
// never read (the flat function pointer is null there).
constexpr DType unary_result(UnaryOp op, DType in) {
  if (op == UnaryOp::kIsFinite || op == UnaryOp::kIsNan) return DType::kBool;
  return op == UnaryOp::kAbs || op == UnaryOp::kReal || op == UnaryOp::kImag ? real_dtype(in) : in;
}
constexpr DType binary_result(BinaryOp op, DType in) {
  return op == BinaryOp::kComplex ? complex_dtype(in).value_or(in) : in;
}
template <class Op, class Fn, std::size_t... I>
constexpr std::array<DType, kNumDTypes> result_row(Op op, Fn fn, std::index_sequence<I...>) {
  return {fn(op, static_cast<DType>(I))...};
}
template <class Op, std::size_t... O>
constexpr auto result_table(DType (*fn)(Op, DType), std::index_sequence<O...>) {
  return std::array<std::array<DType, kNumDTypes>, sizeof...(O)>{
      result_row(static_cast<Op>(O), fn, std::make_index_sequence<kNumDTypes>{})...};
}
constexpr auto kUnaryResult = result_table<UnaryOp>(&unary_result, std::make_index_sequence<std::size(kUnaryInfo)>{});
constexpr auto kBinaryResult =
    result_table<BinaryOp>(&binary_result, std::make_index_sequence<std::size(kBinaryInfo)>{});

// Runs body(begin, end) over [0, n): inline when small, split otherwise.
template <class Body>
void run_flat(const ParallelContext& ctx, std::int64_t n, std::int64_t grain, KernelStats* stats, Body&& body) {
  if (stats != nullptr) ++stats->flat_contiguous;
  if (n < 2 * grain) {
    body(std::int64_t{0}, n);
  } else {
    internal::parallel_or_inline(ctx, n, grain, stats, body);
  }
}

// The strided path of unary(): full validation, then one dispatch.
[[gnu::noinline]] Status unary_general(UnaryOp op, const TensorView& x, const TensorView& out,
                                       const ParallelContext& ctx, KernelStats* stats, internal::VectorMathFn vector) {
  const std::string_view name = to_string(op);
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  TENFERRO_TRY(check_domain(name, x, info(op).domain));
  const std::string_view names[] = {"operand"};
  TENFERRO_TRY(check_elementwise(name, out, *result_dtype(op, x.dtype), std::span<const TensorView>(&x, 1), names));
  const std::int64_t grain = vector != nullptr ? kVectorMathGrain : grain_of(info(op).cost);
  switch (op) {
#define TENFERRO_UNARY_OP(name, str, domain, cost)                                                        \
  case UnaryOp::k##name:                                                                                  \
    dispatch_unary<internal::name##Op, OpDomain::k##domain, internal::has_vector_math(UnaryOp::k##name)>( \
        x, out, ctx, grain, stats, vector);                                                               \
    break;
#include "tenferro/cpu/kernels/elementwise_ops.def"
  }
  return ok_status();
}

// The strided path of binary(): full validation, then one dispatch.
[[gnu::noinline]] Status binary_general(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out,
                                        const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = to_string(op);
  TENFERRO_TRY(internal::check_view(name, "lhs", a));
  TENFERRO_TRY(check_domain(name, a, info(op).domain));
  TENFERRO_TRY(internal::check_dtype(name, "rhs", b, a.dtype));
  const std::array<TensorView, 2> in = {a, b};
  const std::string_view names[] = {"lhs", "rhs"};
  TENFERRO_TRY(check_elementwise(name, out, *result_dtype(op, a.dtype), in, names));
  if (needs_divisor_check(op, a.dtype)) TENFERRO_TRY(check_nonzero_divisor(op, b));
  const std::int64_t grain = grain_of(info(op).cost);
  switch (op) {
#define TENFERRO_BINARY_OP(name, str, domain, cost)                                         \
  case BinaryOp::k##name:                                                                   \
    dispatch_binary<internal::name##Op, OpDomain::k##domain>(a, b, out, ctx, grain, stats); \
    break;
#include "tenferro/cpu/kernels/elementwise_ops.def"
  }
  return ok_status();
}

}  // namespace

std::string_view to_string(UnaryOp op) noexcept { return info(op).name; }
std::string_view to_string(BinaryOp op) noexcept { return info(op).name; }
std::string_view to_string(CompareDirection direction) noexcept { return kDirectionNames[static_cast<int>(direction)]; }
OpDomain op_domain(UnaryOp op) noexcept { return info(op).domain; }
OpDomain op_domain(BinaryOp op) noexcept { return info(op).domain; }

std::optional<DType> result_dtype(UnaryOp op, DType input) noexcept {
  if (!in_domain(info(op).domain, input)) return std::nullopt;
  return unary_result(op, input);
}

std::optional<DType> result_dtype(BinaryOp op, DType input) noexcept {
  if (!in_domain(info(op).domain, input)) return std::nullopt;
  return binary_result(op, input);
}

namespace internal {

VectorMathFn vector_math_unary(UnaryOp op, DType dtype, CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::kAvx512:
      return avx512_vector_math(op, dtype);
    case CpuIsa::kAvx2:
      return avx2_vector_math(op, dtype);
    case CpuIsa::kAuto:
    case CpuIsa::kPortable:
      return nullptr;
  }
  return nullptr;
}

}  // namespace internal

Status unary(UnaryOp op, const TensorView& x, const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  std::int64_t n = 0;
  // Note [Vector math]: the context's kernel ISA, else the process's.
  const CpuIsa isa = ctx.kernel_isa() == CpuIsa::kAuto ? layout_kernel_isa() : ctx.kernel_isa();
  const internal::VectorMathFn vector = internal::vector_math_unary(op, x.dtype, isa);
  const FlatUnaryFn flat = vector != nullptr ? vector : kFlatUnary[static_cast<int>(op)][static_cast<int>(x.dtype)];
  const TensorView* const flat_in[] = {&x};
  if (flat != nullptr && out.dtype == kUnaryResult[static_cast<int>(op)][static_cast<int>(x.dtype)] &&
      internal::flat_compatible(out, flat_in, n)) {
    const auto so = static_cast<std::int64_t>(dtype_size(out.dtype));
    const auto sx = static_cast<std::int64_t>(dtype_size(x.dtype));
    if (stats != nullptr && vector != nullptr) ++stats->vector_math;
    run_flat(ctx, n, vector != nullptr ? kVectorMathGrain : grain_of(info(op).cost), stats,
             [&](std::int64_t lo, std::int64_t hi) {
               flat(static_cast<char*>(out.data) + lo * so, static_cast<const char*>(x.data) + lo * sx, hi - lo);
             });
    return ok_status();
  }
  return unary_general(op, x, out, ctx, stats, vector);
}

Status binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out, const ParallelContext& ctx,
              KernelStats* stats) {
  std::int64_t n = 0;
  const FlatBinaryFn flat = kFlatBinary[static_cast<int>(op)][static_cast<int>(a.dtype)];
  const TensorView* const flat_in[] = {&a, &b};
  // Integer division checks its divisor first: general path.
  if (flat != nullptr && b.dtype == a.dtype &&
      out.dtype == kBinaryResult[static_cast<int>(op)][static_cast<int>(a.dtype)] &&
      !needs_divisor_check(op, a.dtype) && internal::flat_compatible(out, flat_in, n)) {
    const auto so = static_cast<std::int64_t>(dtype_size(out.dtype));
    const auto si = static_cast<std::int64_t>(dtype_size(a.dtype));
    run_flat(ctx, n, grain_of(info(op).cost), stats, [&](std::int64_t lo, std::int64_t hi) {
      flat(static_cast<char*>(out.data) + lo * so, static_cast<const char*>(a.data) + lo * si,
           static_cast<const char*>(b.data) + lo * si, hi - lo);
    });
    return ok_status();
  }
  return binary_general(op, a, b, out, ctx, stats);
}

Status compare(CompareDirection direction, const TensorView& a, const TensorView& b, const TensorView& out,
               const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = "compare";
  TENFERRO_TRY(internal::check_view(name, "lhs", a));
  const bool ordered = direction != CompareDirection::kEq && direction != CompareDirection::kNe;
  if (ordered && is_complex(a.dtype)) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "compare: direction {} needs a non-complex dtype, found {}",
                      to_string(direction), a.dtype);
  }
  TENFERRO_TRY(internal::check_dtype(name, "rhs", b, a.dtype));
  const std::array<TensorView, 2> in = {a, b};
  const std::string_view names[] = {"lhs", "rhs"};
  TENFERRO_TRY(check_elementwise(name, out, DType::kBool, in, names));
  visit_dtype(a.dtype, [&]<class T>(T) {
    auto run = [&](auto op) { run_elementwise<bool, T, T>(op, out, in, ctx, kCheapGrain, stats); };
    switch (direction) {
      case CompareDirection::kEq:
        return run(internal::EqOp{});
      case CompareDirection::kNe:
        return run(internal::NeOp{});
      default:
        break;
    }
    if constexpr (!internal::kIsComplex<T>) {
      switch (direction) {
        case CompareDirection::kLt:
          return run(internal::LtOp{});
        case CompareDirection::kLe:
          return run(internal::LeOp{});
        case CompareDirection::kGt:
          return run(internal::GtOp{});
        case CompareDirection::kGe:
          return run(internal::GeOp{});
        default:
          break;
      }
    }
  });
  return ok_status();
}

Status select(const TensorView& pred, const TensorView& on_true, const TensorView& on_false, const TensorView& out,
              const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = "select";
  TENFERRO_TRY(internal::check_view(name, "pred", pred));
  TENFERRO_TRY(internal::check_dtype(name, "pred", pred, DType::kBool));
  TENFERRO_TRY(internal::check_view(name, "on_true", on_true));
  TENFERRO_TRY(internal::check_dtype(name, "on_false", on_false, on_true.dtype));
  const std::array<TensorView, 3> in = {pred, on_true, on_false};
  const std::string_view names[] = {"pred", "on_true", "on_false"};
  TENFERRO_TRY(check_elementwise(name, out, on_true.dtype, in, names));
  visit_dtype(on_true.dtype, [&]<class T>(T) {
    run_elementwise<T, bool, T, T>(internal::SelectOp{}, out, in, ctx, kCheapGrain, stats);
  });
  return ok_status();
}

Status clamp(const TensorView& lo, const TensorView& x, const TensorView& hi, const TensorView& out,
             const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = "clamp";
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  if (x.dtype == DType::kBool || is_complex(x.dtype)) {
    return make_error(ErrorCode::kDTypeMismatch, kStage, "{}: expected an integer or floating dtype, found {}", name,
                      x.dtype);
  }
  TENFERRO_TRY(internal::check_view(name, "min", lo));
  TENFERRO_TRY(internal::check_dtype(name, "min", lo, x.dtype));
  TENFERRO_TRY(internal::check_dtype(name, "max", hi, x.dtype));
  const std::array<TensorView, 3> in = {lo, x, hi};
  const std::string_view names[] = {"min", "operand", "max"};
  TENFERRO_TRY(check_elementwise(name, out, x.dtype, in, names));
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (!internal::kIsComplex<T> && !std::is_same_v<T, bool>) {
      run_elementwise<T, T, T, T>(internal::ClampOp{}, out, in, ctx, kCheapGrain, stats);
    }
  });
  return ok_status();
}

Status convert(const TensorView& x, const TensorView& out, const ParallelContext& ctx, KernelStats* stats) {
  const std::string_view name = "convert";
  TENFERRO_TRY(internal::check_view(name, "operand", x));
  const std::string_view names[] = {"operand"};
  TENFERRO_TRY(check_elementwise(name, out, out.dtype, std::span<const TensorView>(&x, 1), names));
  visit_dtype(out.dtype, [&]<class To>(To) {
    visit_dtype(x.dtype, [&]<class From>(From) {
      run_elementwise<To, From>(internal::ConvertOp<To>{}, out, std::span<const TensorView>(&x, 1), ctx, kCheapGrain,
                                stats);
    });
  });
  return ok_status();
}

}  // namespace tenferro::cpu
