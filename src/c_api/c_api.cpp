// The C API (include/tenferro/c/tenferro.h) over the native CPU einsum
// engine. Every exported function runs its body inside guarded(), which
// turns a Status, and any exception (std::bad_alloc included), into a
// tf_code plus an optional tf_error: nothing escapes the C boundary.
//
// Note [C API execution]
// tf_runtime_create builds the ready CPU runtime (cpu::make_cpu_runtime,
// as `tenferro einsum` and the Python module do) with the native einsum
// engine: the calling thread for up to one thread, a managed CPU domain for
// more. The einsum calls of this API use that engine's
// CpuEinsumExecutor directly rather than an eager context, because the
// result goes into the caller's buffer: the executor runs a compiled
// ExecutionPlan over borrowed TensorViews, so the caller's strided output is
// written in place (the last GEMM writes straight into it) with no
// allocation and no copy. Parallel runs enter the domain the runtime's CPU
// engine would enter, in the same mode (kInner). A tf_einsum_plan retains
// the engine, so plans outlive tf_runtime_destroy safely.
#include "tenferro/c/tenferro.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tenferro/ad_runtime/functional.h"
#include "tenferro/base/build_info.h"
#include "tenferro/base/small_vector.h"
#include "tenferro/base/status.h"
#include "tenferro/cpu/domains/cpu_domain_set.h"
#include "tenferro/cpu/domains/topology.h"
#include "tenferro/cpu/kernels/layout.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/einsum_call.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum_cpu/cpu_executor.h"
#include "tenferro/linalg/linalg_op.h"
#include "tenferro/runtime/eager.h"
#include "tenferro/runtime/runtime.h"
#include "tenferro/tensor/tensor.h"

#include "one_shot_memo.h"
#ifdef TENFERRO_C_HAVE_FFT
#include "tenferro/fft/fft_op.h"
#include "tenferro/fft_cpu/cpu_engine.h"
#endif

// tf_code enumerates error_code.def in order, as ErrorCode does; these catch
// a generator that went wrong (both ends and a refinement in between).
static_assert(TF_CODE_OK == static_cast<int>(tenferro::ErrorCode::kOk));
static_assert(TF_CODE_SHAPE_MISMATCH == static_cast<int>(tenferro::ErrorCode::kShapeMismatch));
static_assert(TF_CODE_NO_CONVERGENCE == static_cast<int>(tenferro::ErrorCode::kNoConvergence));
static_assert(TF_CODE_COUNT == static_cast<int>(tenferro::ErrorCode::kNoConvergence) + 1);
// Note [C API conventions] in tenferro.h: each struct version ends on an
// 8-byte boundary, so an older caller's sizeof is exactly its version size.
static_assert(sizeof(tf_version) == TF_VERSION_SIZE_V1);
static_assert(sizeof(tf_tensor) == TF_TENSOR_SIZE_V1);
static_assert(sizeof(tf_runtime_options) == TF_RUNTIME_OPTIONS_SIZE_V2 && TF_RUNTIME_OPTIONS_SIZE_V1 % 8 == 0);
static_assert(sizeof(tf_einsum_args) == TF_EINSUM_ARGS_SIZE_V2 && TF_EINSUM_ARGS_SIZE_V1 % 8 == 0);
static_assert(sizeof(tf_einsum_prepare_args) == TF_EINSUM_PREPARE_ARGS_SIZE_V1);
static_assert(sizeof(tf_einsum_run_args) == TF_EINSUM_RUN_ARGS_SIZE_V1);
static_assert(sizeof(tf_einsum_plan_info) == TF_EINSUM_PLAN_INFO_SIZE_V1);
static_assert(sizeof(tf_einsum_vjp_args) == TF_EINSUM_VJP_ARGS_SIZE_V1);
static_assert(sizeof(tf_result_info) == TF_RESULT_INFO_SIZE_V1);
static_assert(sizeof(tf_linalg_args) == TF_LINALG_ARGS_SIZE_V1);
static_assert(sizeof(tf_fft_args) == TF_FFT_ARGS_SIZE_V1);

struct tf_error {
  tenferro::ErrorCode code;
  std::string message;
};

namespace tenferro::c_api {
namespace {

// The engines behind a tf_runtime, shared with its plans (Note [C API
// execution]). Immutable after creation; the executor and the runtime are
// thread-safe.
struct Engine {
  explicit Engine(cpu::CpuRuntime cpu)
      : runtime(std::move(cpu.runtime)),
        executor(std::move(cpu.einsum)),
        domains(std::move(cpu.domains)),
        ad(std::move(cpu.ad)) {}

  // The runtime this engine belongs to: its CPU engine holds the GEMM
  // provider and the domains, and its einsum extension is `executor`. The C
  // calls reach the executor directly (Note [C API execution]); holding the
  // runtime keeps one owner for all of them.
  runtime::Runtime runtime;
  std::shared_ptr<einsum::CpuEinsumExecutor> executor;
  std::shared_ptr<const cpu::CpuDomainSet> domains;  // null: the calling thread
  std::shared_ptr<ad::AdContext> ad;                 // the einsum AD rule installed (tf_einsum_vjp)
  cpu::SequentialContext sequential;

  Status execute(const einsum::ExecutionPlan& plan, std::span<const TensorView> inputs,
                 const TensorView& output) const {
    if (domains == nullptr) return executor->execute(plan, inputs, output, sequential);
    return domains->default_domain().run(cpu::ParallelMode::kInner, [&](const cpu::CpuExecutionContext& context) {
      return executor->execute(plan, inputs, output, context.parallel());
    });
  }
};

Error invalid(std::string message) { return Error(ErrorCode::kInvalidArgument, ErrorStage::kNone, std::move(message)); }

// Runs `body` (returning Status) with every exception caught, and reports
// the outcome through `error` (Note [C API conventions] in tenferro.h).
template <class Body>
tf_code guarded(tf_error** error, const char* where, Body&& body) noexcept {
  if (error != nullptr) *error = nullptr;
  Status status;
  try {
    status = body();
  } catch (...) {
    status = status_from_current_exception(ErrorStage::kNone, where);
  }
  if (status.ok()) [[likely]]
    return TF_CODE_OK;
  if (error != nullptr) {
    try {
      *error = new tf_error{status.code(), status.to_string()};
    } catch (...) {
      *error = nullptr;  // the code still says what failed
    }
  }
  return static_cast<tf_code>(status.code());
}

// Checks `struct_size` of the struct `name` (of type `type`; empty: `name`
// is the type) against the sizes of the versions this library knows
// (ascending).
Status check_struct_size(std::string_view name, std::size_t found, std::initializer_list<std::size_t> known,
                         std::string_view type = {}) {
  for (std::size_t size : known)
    if (found == size) return ok_status();
  std::string sizes;
  for (std::size_t size : known) sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", size);
  if (found > *std::prev(known.end())) {
    return make_error(ErrorCode::kUnimplemented, ErrorStage::kNone,
                      "{}.struct_size is {}, larger than any version this library (C API {}.{}) knows ({}); the "
                      "caller was built against a newer tenferro.h",
                      name, found, TF_API_VERSION_MAJOR, TF_API_VERSION_MINOR, sizes);
  }
  return invalid(fmt::format("{}.struct_size is {}; expected sizeof({}) of a known version ({})", name, found,
                             type.empty() ? name : type, sizes));
}

Status require(const void* pointer, std::string_view what) {
  if (pointer == nullptr) return invalid(fmt::format("{} is NULL; expected a valid pointer", what));
  return ok_status();
}

// The handle `what` is non-NULL and live (Note [C API handle tags]).
Status check_handle(const tf_runtime* runtime, std::string_view what);
Status check_handle(const tf_einsum_plan* plan, std::string_view what);

// The tenferro dtype of a tf_dtype value; false for any other value.
bool dtype_of(std::int32_t value, DType& dtype) noexcept {
  switch (value) {
    case TF_DTYPE_F32:
      dtype = DType::kFloat32;
      return true;
    case TF_DTYPE_F64:
      dtype = DType::kFloat64;
      return true;
    case TF_DTYPE_C64:
      dtype = DType::kComplex64;
      return true;
    case TF_DTYPE_C128:
      dtype = DType::kComplex128;
      return true;
    case TF_DTYPE_I32:
      dtype = DType::kInt32;
      return true;
    case TF_DTYPE_I64:
      dtype = DType::kInt64;
      return true;
    default:
      return false;
  }
}

tf_dtype c_dtype(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32:
      return TF_DTYPE_F32;
    case DType::kComplex64:
      return TF_DTYPE_C64;
    case DType::kComplex128:
      return TF_DTYPE_C128;
    case DType::kInt32:
      return TF_DTYPE_I32;
    case DType::kInt64:
      return TF_DTYPE_I64;
    default:
      return TF_DTYPE_F64;
  }
}

// The byte alignment a tensor's data needs: its real component's.
std::size_t component_alignment(DType dtype) noexcept {
  return dtype == DType::kFloat32 || dtype == DType::kComplex64 || dtype == DType::kInt32 ? alignof(float)
                                                                                          : alignof(double);
}

// A descriptor's name in messages: "inputs[i]" for index i >= 0, "output"
// for -1, "outputs[j]" for -2 - j (output_index(j)). Formatted only when an
// error is reported.
// kCotangentIndex names tf_einsum_vjp's cotangent, kSingleInputIndex the
// `input` of a call that takes one (tf_fft_args).
constexpr std::ptrdiff_t kCotangentIndex = PTRDIFF_MIN;
constexpr std::ptrdiff_t kSingleInputIndex = PTRDIFF_MIN + 1;
std::string name_of(std::ptrdiff_t index) {
  if (index >= 0) return fmt::format("inputs[{}]", index);
  if (index == kCotangentIndex) return "cotangent";
  if (index == kSingleInputIndex) return "input";
  return index == -1 ? std::string("output") : fmt::format("outputs[{}]", -2 - index);
}
constexpr std::ptrdiff_t output_index(std::size_t j) noexcept { return -2 - static_cast<std::ptrdiff_t>(j); }

// The bytes [lo, hi) a tensor's elements occupy (empty without elements),
// and which argument it is (name_of's index).
struct ByteRange {
  std::uintptr_t lo = 0, hi = 0;
  std::ptrdiff_t index = 0;
};

// Validates the descriptor `desc` (input `index`, or the output for -1) into
// `view`: shape and given strides stay the caller's arrays; row-major strides
// for NULL `strides` are written to `strides_storage`, which must outlive
// the view. `need_data`: data and strides matter (false for the shape-only
// descriptors of prepare). The success path formats and allocates nothing.
Status check_tensor(const tf_tensor* desc, std::ptrdiff_t index, bool need_data, Dims& strides_storage,
                    TensorView& view, ByteRange& range) {
  if (desc == nullptr) return invalid(fmt::format("{} is NULL; expected a valid pointer", name_of(index)));
  if (desc->struct_size != TF_TENSOR_SIZE_V1) {
    return check_struct_size(name_of(index), desc->struct_size, {TF_TENSOR_SIZE_V1}, "tf_tensor");
  }
  DType dtype;
  if (!dtype_of(desc->dtype, dtype)) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "{}.dtype is {}; expected TF_DTYPE_F32 (1), TF_DTYPE_F64 (2), TF_DTYPE_C64 (3), "
                      "TF_DTYPE_C128 (4), TF_DTYPE_I32 (5) or TF_DTYPE_I64 (6)",
                      name_of(index), desc->dtype);
  }
  if (desc->ndim < 0) return invalid(fmt::format("{}.ndim is {}; expected ndim >= 0", name_of(index), desc->ndim));
  const auto rank = static_cast<std::size_t>(desc->ndim);
  if (rank > 0 && desc->shape == nullptr) {
    return invalid(fmt::format("{}.shape is NULL; expected {} extents (ndim {})", name_of(index), rank, rank));
  }
  const std::span<const std::int64_t> shape(desc->shape, rank);
  std::int64_t numel = 1;
  for (std::size_t a = 0; a < rank; ++a) {
    if (shape[a] < 0) {
      return invalid(fmt::format("{}.shape[{}] is {}; expected an extent >= 0", name_of(index), a, shape[a]));
    }
    if (__builtin_mul_overflow(numel, shape[a], &numel)) {
      return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "{}: shape {} has more than 2^63 elements",
                        name_of(index), shape_to_string(shape));
    }
  }
  view.shape = shape;
  view.dtype = dtype;
  view.data = desc->data;
  view.storage = nullptr;
  range = ByteRange{0, 0, index};
  if (!need_data) return ok_status();

  if (desc->strides == nullptr) {
    strides_storage.resize(rank);
    std::int64_t stride = 1;
    for (std::size_t a = rank; a-- > 0;) {
      strides_storage[a] = stride;
      stride *= std::max<std::int64_t>(shape[a], 1);  // bounded by numel, or an axis is empty
    }
    view.strides = strides_storage.span();
  } else {
    view.strides = std::span<const std::int64_t>(desc->strides, rank);
    for (std::size_t a = 0; a < rank; ++a) {
      if (view.strides[a] < 0) {
        return invalid(fmt::format("{}.strides[{}] is {}; expected a stride >= 0 (in elements)", name_of(index), a,
                                   view.strides[a]));
      }
    }
  }
  if (numel == 0) return ok_status();
  if (desc->data == nullptr) {
    return invalid(fmt::format("{}.data is NULL; expected the address of {} elements", name_of(index), numel));
  }
  const std::size_t align = component_alignment(dtype);
  if (reinterpret_cast<std::uintptr_t>(desc->data) % align != 0) {
    return invalid(fmt::format("{}.data {} is not aligned for {}; expected a multiple of {} bytes", name_of(index),
                               fmt::ptr(desc->data), dtype, align));
  }
  // The last element's offset must be addressable.
  std::int64_t last = 0;
  for (std::size_t a = 0; a < rank; ++a) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(shape[a] - 1, view.strides[a], &step) || __builtin_add_overflow(last, step, &last)) {
      return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone,
                        "{}: shape {} with strides {} addresses beyond 2^63 elements", name_of(index),
                        shape_to_string(shape), shape_to_string(view.strides));
    }
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(last + 1, static_cast<std::int64_t>(dtype_size(dtype)), &bytes)) {
    return make_error(ErrorCode::kSizeOverflow, ErrorStage::kNone, "{}: the elements span more than 2^63 bytes",
                      name_of(index));
  }
  range.lo = reinterpret_cast<std::uintptr_t>(desc->data);
  range.hi = range.lo + static_cast<std::uintptr_t>(bytes);
  return ok_status();
}

// An output must address each element once: sorted by stride, every axis
// (of extent > 1) must step over the whole block of the axes below it. This
// accepts every permutation of a dense or padded layout, which is what
// strided C and numpy arrays are.
Status check_output_layout(const TensorView& v, std::ptrdiff_t index) {
  SmallVector<std::size_t, 8> axes;
  for (std::size_t a = 0; a < v.shape.size(); ++a) {
    if (v.shape[a] == 0) return ok_status();  // no elements
    if (v.shape[a] > 1) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end(), [&](std::size_t x, std::size_t y) { return v.strides[x] < v.strides[y]; });
  std::int64_t block = 1;  // elements spanned by the axes so far
  for (std::size_t a : axes) {
    if (v.strides[a] < block) {
      return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                        "{}: expected an output layout that is a dense or padded one in some axis order (sorted by "
                        "stride, each axis steps over the whole block of the axes below it), so that no element can "
                        "be written twice; found shape {} with strides {} (zero, overlapping or interleaved strides; "
                        "the check is conservative: some interleaved layouts with distinct addresses are refused too)",
                        name_of(index), shape_to_string(v.shape), shape_to_string(v.strides));
    }
    block = v.strides[a] * v.shape[a];  // no overflow: check_tensor bounded the span
  }
  return ok_status();
}

Status check_disjoint(const ByteRange& out, std::span<const ByteRange> taken) {
  if (out.lo == out.hi) return ok_status();
  for (const ByteRange& in : taken) {
    if (in.lo != in.hi && in.lo < out.hi && out.lo < in.hi) {
      return make_error(ErrorCode::kAliasConflict, ErrorStage::kNone,
                        "{} memory [{:#x}, {:#x}) overlaps {} [{:#x}, {:#x}); expected an output whose address range "
                        "intersects no other argument's",
                        name_of(out.index), out.lo, out.hi, name_of(in.index), in.lo, in.hi);
    }
  }
  return ok_status();
}

Result<std::optional<einsum::PlanningPolicy>> policy_of(std::int32_t planner) {
  einsum::PlanningPolicy policy;
  switch (planner) {
    case TF_PLANNER_AUTO:
      return std::optional<einsum::PlanningPolicy>();
    case TF_PLANNER_GREEDY:
      policy.planner = einsum::PlannerKind::kGreedy;
      break;
    case TF_PLANNER_OPTIMAL:
      policy.planner = einsum::PlannerKind::kOptimal;
      break;
    case TF_PLANNER_TREESA:
      policy.planner = einsum::PlannerKind::kTreeSA;
      break;
    default:
      return invalid(
          fmt::format("planner is {}; expected TF_PLANNER_AUTO (0), TF_PLANNER_GREEDY (1), TF_PLANNER_OPTIMAL (2) or "
                      "TF_PLANNER_TREESA (3)",
                      planner));
  }
  return std::optional<einsum::PlanningPolicy>(std::move(policy));
}

// The operands of one call, checked: views of the callers' arrays, their
// byte ranges, and the row-major strides of descriptors without strides.
constexpr std::size_t kInlineOperands = 8;
struct CheckedOperands {
  SmallVector<TensorView, kInlineOperands> views;
  SmallVector<ByteRange, kInlineOperands> ranges;
  SmallVector<Dims, kInlineOperands> strides;

  SmallVector<IntArrayRef, kInlineOperands> shapes() const {
    SmallVector<IntArrayRef, kInlineOperands> out;
    for (const TensorView& v : views) out.push_back(IntArrayRef(v.shape));
    return out;
  }
};

// The output of one call, checked.
struct CheckedOutput {
  TensorView view;
  ByteRange range;
  Dims strides;
};

// A count above this is taken for a corrupt argument (an uninitialised or
// negative value cast to size_t) and refused before anything is sized by
// it; networks of thousands of operands stay far below.
constexpr std::size_t kMaxInputs = std::size_t{1} << 20;

// How a call's arguments are named in messages: arrays (inputs[i],
// outputs[j], results[j]) or one of each (input, output, result: tf_fft).
enum class Naming { kArrays, kSingle };

Status check_inputs(const tf_tensor* const* inputs, std::size_t num_inputs, bool need_data, CheckedOperands& ops,
                    Naming naming = Naming::kArrays) {
  if (num_inputs == 0) return invalid("num_inputs is 0; expected at least one operand");
  if (num_inputs > kMaxInputs) {
    return invalid(fmt::format("num_inputs is {}; expected at most {} operands", num_inputs, kMaxInputs));
  }
  TENFERRO_TRY(require(inputs, "inputs"));
  // Sized once: views point into `strides`.
  ops.views.resize(num_inputs);
  ops.ranges.resize(num_inputs);
  ops.strides.resize(num_inputs);
  for (std::size_t i = 0; i < num_inputs; ++i) {
    const std::ptrdiff_t index = naming == Naming::kSingle ? kSingleInputIndex : static_cast<std::ptrdiff_t>(i);
    TENFERRO_TRY(check_tensor(inputs[i], index, need_data, ops.strides[i], ops.views[i], ops.ranges[i]));
    if (ops.views[i].dtype != ops.views[0].dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                        "inputs[{}] is {}, inputs[0] is {}; expected one dtype for all operands", i, ops.views[i].dtype,
                        ops.views[0].dtype);
    }
  }
  return ok_status();
}

Status check_output(const tf_tensor* output, DType dtype, CheckedOutput& out) {
  TENFERRO_TRY(check_tensor(output, -1, true, out.strides, out.view, out.range));
  if (out.view.dtype != dtype) {
    return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "output is {}; expected {} like the inputs",
                      out.view.dtype, dtype);
  }
  return check_output_layout(out.view, -1);
}

Status check_output_shape(const CheckedOutput& out, IntArrayRef want, std::string_view subscripts) {
  if (IntArrayRef(out.view.shape) != want) {
    return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                      "output has shape {} (ndim {}); einsum \"{}\" on these operands gives shape {} (ndim {})",
                      shape_to_string(out.view.shape), out.view.shape.size(), subscripts, shape_to_string(want),
                      want.size());
  }
  return ok_status();
}

// Note [C API broadcast operands]
// An input with a stride-0 axis (numpy's broadcast_to, a row repeated
// without copying) went through the plan, whose GEMM steps copied it to a
// dense buffer of its logical size: "ij,ij->" of a broadcast 6000-element
// row against a 6000 x 6000 matrix peaked at 580 MB, twice the matrix. Such
// a call runs the eager einsum instead, which drops the stride-0 axes
// (Note [Broadcast operands] in einsum_call.cpp), and copies its result
// into the caller's output.
bool has_broadcast_axis(const CheckedOperands& inputs) {
  for (const TensorView& v : inputs.views) {
    for (std::size_t a = 0; a < v.shape.size(); ++a) {
      if (v.shape[a] > 1 && v.strides[a] == 0) return true;
    }
  }
  return false;
}

Status run_checked(const Engine& engine, const einsum::ExecutionPlan& plan, const CheckedOperands& inputs,
                   const CheckedOutput& out) {
  TENFERRO_TRY(check_disjoint(out.range, std::span<const ByteRange>(inputs.ranges.data(), inputs.ranges.size())));
  return engine.execute(plan, std::span<const TensorView>(inputs.views.data(), inputs.views.size()), out.view);
}

// The one-candidate GEMM list the C enum names.
Result<std::vector<std::string>> gemm_choice(std::int32_t gemm) {
  switch (gemm) {
    case TF_GEMM_NATIVE:
      return std::vector<std::string>{"native"};
    case TF_GEMM_OPENBLAS:
      return std::vector<std::string>{"openblas"};
    case TF_GEMM_BLIS:
      return std::vector<std::string>{"blis"};
    default:
      return invalid(fmt::format(
          "tf_runtime_options.gemm is {}; expected TF_GEMM_NATIVE (0), TF_GEMM_OPENBLAS (1) or TF_GEMM_BLIS (2)",
          gemm));
  }
}

// The ready CPU runtime with the einsum, linalg and (with FFTW) FFT
// engines; up to one thread runs on the calling thread, more in one managed
// CPU domain.
Result<std::shared_ptr<const Engine>> make_engine(int threads, std::int32_t gemm, std::int32_t worker_spin_us) {
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuTopology topology, cpu::CpuTopology::discover());
  const std::size_t allowed = topology.allowed_cpus().to_vector().size();
  if (threads < 0 || static_cast<std::size_t>(threads) > allowed) {
    return invalid(fmt::format(
        "tf_runtime_options.threads is {}; expected 0 or 1 (the calling thread) to {} (the CPUs this process may use)",
        threads, allowed));
  }
  cpu::CpuRuntimeOptions options;
  options.threads = threads;
  if (worker_spin_us == TF_WORKER_SPIN_OFF) {
    options.worker_spin = std::chrono::microseconds(0);
  } else if (worker_spin_us > 0 && worker_spin_us <= cpu::CpuDomainSpec::kMaxWorkerSpin.count()) {
    options.worker_spin = std::chrono::microseconds(worker_spin_us);
  } else if (worker_spin_us != 0) {
    return invalid(fmt::format(
        "tf_runtime_options.worker_spin_us is {}; expected 0 (the default), TF_WORKER_SPIN_OFF (-1) or 1 to {}",
        worker_spin_us, cpu::CpuDomainSpec::kMaxWorkerSpin.count()));
  }
  options.on_calling_thread = threads <= 1;
  TENFERRO_ASSIGN_OR_RETURN(options.gemm, gemm_choice(gemm));
#ifdef TENFERRO_C_HAVE_FFT
  std::shared_ptr<fft::CpuFftEngine> fft_engine = fft::CpuFftEngine::create_default();
  options.extensions.push_back([fft_engine](EngineId e) { return fft::cpu_extension_module(e, fft_engine); });
#endif
  TENFERRO_ASSIGN_OR_RETURN(cpu::CpuRuntime cpu, cpu::make_cpu_runtime(options));
  return std::make_shared<const Engine>(std::move(cpu));
}

// Note [C API linalg and FFT]
// tf_linalg and tf_fft make one eager call of the runtime's linalg or FFT
// engine on a fresh EagerContext (a context is thread-compatible, the
// runtime thread-safe) over the caller's inputs, borrowed, then copy each
// result into the caller's output (copy_into: any strides). The results'
// dtypes and shapes come from the operation's shape inference first (what
// tf_linalg_results and tf_fft_result report), so every argument error,
// the outputs' included, is found before anything runs, and the outputs
// are written only once every result exists: on any error they are
// unchanged. The copy is O(result) against the O(n^3) or O(n log n) work.

// `v` (checked, spanning `range`) as a Tensor over the caller's memory.
Result<Tensor> borrow(const TensorView& v, const ByteRange& range) {
  TENFERRO_ASSIGN_OR_RETURN(StorageRef storage,
                            Storage::wrap(v.data, range.hi - range.lo, StorageDescriptor{}, nullptr));
  return Tensor::from_storage(std::move(storage), v.dtype, IntArrayRef(v.shape), IntArrayRef(v.strides));
}

// Every checked input as a Tensor over the caller's memory.
Result<SmallVector<Tensor, kInlineOperands>> borrow_all(const CheckedOperands& inputs) {
  SmallVector<Tensor, kInlineOperands> operands;
  for (std::size_t i = 0; i < inputs.views.size(); ++i) {
    TENFERRO_ASSIGN_OR_RETURN(Tensor t, borrow(inputs.views[i], inputs.ranges[i]));
    operands.push_back(std::move(t));
  }
  return operands;
}

// `body` on the calling CPU's eager context (Note [One-shot einsum memo]),
// or on a fresh one while that table is busy.
template <class F>
auto with_eager_context(const Engine& engine, OneShotMemo& memo, F&& body) {
  OneShotMemo::Lease lease = memo.acquire();
  runtime::EagerContext* context = lease.context(engine.runtime);
  std::optional<runtime::EagerContext> own;
  if (context == nullptr) context = &own.emplace(engine.runtime.on());
  return body(*context);
}

// The results `op` gives on `inputs` (dtypes and exact shapes).
Result<SmallVector<program::ValueMetadata, 2>> infer_results(const program::ExtensionOp& op,
                                                             const CheckedOperands& inputs) {
  SmallVector<program::ValueMetadata, 2> operands;
  for (const TensorView& v : inputs.views)
    operands.push_back(program::ValueMetadata::exact(v.dtype, IntArrayRef(v.shape)));
  const std::span<const program::ValueMetadata> span(operands.data(), operands.size());
  program::ShapeConstraints constraints(op.family_id(), nullptr);
  Result<SmallVector<program::ValueMetadata, 2>> results = op.infer_metadata(span, constraints);
  if (results.ok()) return results;
  // Again, for a message that names the op with its attributes.
  const std::string name = op.describe();
  program::ShapeConstraints described(name, nullptr);
  return op.infer_metadata(span, described);
}

Status describe_result(const program::ValueMetadata& result, tf_result_info* info, std::size_t index,
                       Naming naming = Naming::kArrays) {
  if (info == nullptr) {
    return invalid(fmt::format("{} is NULL; expected a valid pointer",
                               naming == Naming::kSingle ? std::string("result") : fmt::format("results[{}]", index)));
  }
  TENFERRO_TRY(check_struct_size(naming == Naming::kSingle ? std::string("result") : fmt::format("results[{}]", index),
                                 info->struct_size, {TF_RESULT_INFO_SIZE_V1}, "tf_result_info"));
  if (result.rank() > TF_MAX_RESULT_NDIM) {
    return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                      "result {} has {} axes; tf_result_info holds at most TF_MAX_RESULT_NDIM ({})", index,
                      result.rank(), TF_MAX_RESULT_NDIM);
  }
  info->dtype = c_dtype(result.dtype);
  info->ndim = static_cast<std::int32_t>(result.rank());
  for (std::size_t a = 0; a < result.shape.size(); ++a) info->shape[a] = result.shape[a].exact_value().value_or(-1);
  return ok_status();
}

// Runs `op` on `inputs` into the caller's `outputs` (Note [C API linalg and
// FFT]).
Status run_into(const Engine& engine, OneShotMemo& memo, const std::shared_ptr<const program::ExtensionOp>& op,
                const CheckedOperands& inputs, const tf_tensor* const* outputs, std::size_t num_outputs,
                Naming naming = Naming::kArrays) {
  TENFERRO_ASSIGN_OR_RETURN(const auto results, infer_results(*op, inputs));
  if (num_outputs != results.size()) {
    return invalid(fmt::format("num_outputs is {}; {} gives {} result{}", num_outputs, op->describe(), results.size(),
                               results.size() == 1 ? "" : "s"));
  }
  TENFERRO_TRY(require(outputs, "outputs"));
  SmallVector<CheckedOutput, 3> outs(num_outputs);
  SmallVector<ByteRange, kInlineOperands> taken(inputs.ranges.begin(), inputs.ranges.end());
  for (std::size_t j = 0; j < num_outputs; ++j) {
    CheckedOutput& out = outs[j];
    const std::ptrdiff_t index = naming == Naming::kSingle ? -1 : output_index(j);
    TENFERRO_TRY(check_tensor(outputs[j], index, true, out.strides, out.view, out.range));
    const program::ValueMetadata& want = results[j];
    if (out.view.dtype != want.dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "{} is {}; {} gives result {} as {}",
                        name_of(index), out.view.dtype, op->describe(), j, want.to_string());
    }
    if (!(program::ValueMetadata::exact(want.dtype, IntArrayRef(out.view.shape)) == want)) {
      return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                        "{} has shape {}; {} on these inputs gives result {} as {}", name_of(index),
                        shape_to_string(out.view.shape), op->describe(), j, want.to_string());
    }
    TENFERRO_TRY(check_output_layout(out.view, index));
    TENFERRO_TRY(check_disjoint(out.range, std::span<const ByteRange>(taken.data(), taken.size())));
    taken.push_back(out.range);
  }
  TENFERRO_ASSIGN_OR_RETURN(const auto operands, borrow_all(inputs));
  TENFERRO_ASSIGN_OR_RETURN(const runtime::TensorList computed,
                            with_eager_context(engine, memo, [&](runtime::EagerContext& context) {
                              return context.call(op, std::span<const Tensor>(operands.data(), operands.size()));
                            }));
  cpu::SequentialContext sequential;
  for (std::size_t j = 0; j < num_outputs; ++j) {
    TENFERRO_TRY(cpu::copy_into(computed[j].view(), outs[j].view, sequential));
  }
  return ok_status();
}

Result<linalg::NormOrder> norm_of(std::int32_t norm, bool vector) {
  using linalg::NormOrder;
  switch (norm) {
    case TF_NORM_DEFAULT:
      return vector ? NormOrder::kTwo : NormOrder::kFrobenius;
    case TF_NORM_FRO:
      return NormOrder::kFrobenius;
    case TF_NORM_NUC:
      return NormOrder::kNuclear;
    case TF_NORM_ONE:
      return NormOrder::kOne;
    case TF_NORM_NEG_ONE:
      return NormOrder::kNegOne;
    case TF_NORM_TWO:
      return NormOrder::kTwo;
    case TF_NORM_NEG_TWO:
      return NormOrder::kNegTwo;
    case TF_NORM_INF:
      return NormOrder::kInf;
    case TF_NORM_NEG_INF:
      return NormOrder::kNegInf;
    case TF_NORM_P:
      return NormOrder::kP;
    default:
      return invalid(fmt::format("norm is {}; expected a tf_norm (TF_NORM_DEFAULT (0) to TF_NORM_P (9))", norm));
  }
}

// The linalg operation `args` names, with its flags checked.
Result<std::shared_ptr<const linalg::LinalgOp>> linalg_op_of(const tf_linalg_args& args) {
  using linalg::LinalgOp;
  const std::uint32_t flags = args.flags;
  const auto allow = [&](std::uint32_t allowed, std::string_view op) -> Status {
    if ((flags & ~allowed) != 0) {
      return invalid(
          fmt::format("flags {:#x} for {}: expected only {:#x} (the TF_LINALG_* flags it takes)", flags, op, allowed));
    }
    return ok_status();
  };
  if (args.norm != TF_NORM_DEFAULT && args.op != TF_LINALG_MATRIX_NORM && args.op != TF_LINALG_VECTOR_NORM) {
    return invalid(
        fmt::format("norm is {}; only TF_LINALG_MATRIX_NORM and TF_LINALG_VECTOR_NORM take a norm", args.norm));
  }
  if (args.rcond != 0.0 && args.op != TF_LINALG_LSTSQ && args.op != TF_LINALG_PINV) {
    return invalid(
        fmt::format("rcond is {}; only TF_LINALG_LSTSQ and TF_LINALG_PINV take an rcond (expected 0)", args.rcond));
  }
  if (args.p != 0.0 && (args.op != TF_LINALG_VECTOR_NORM || args.norm != TF_NORM_P)) {
    return invalid(fmt::format("p is {}; only TF_LINALG_VECTOR_NORM with TF_NORM_P takes a p (expected 0)", args.p));
  }
  if (std::isnan(args.rcond)) return invalid("rcond is NaN; expected a number (<= 0: the default cutoff)");
  const double rcond = args.rcond > 0.0 ? args.rcond : -1.0;
  const bool values_only = (flags & TF_LINALG_VALUES_ONLY) != 0;
  switch (args.op) {
    case TF_LINALG_SVD:
      TENFERRO_TRY(allow(TF_LINALG_VALUES_ONLY | TF_LINALG_FULL, "TF_LINALG_SVD"));
      if (values_only && (flags & TF_LINALG_FULL) != 0) {
        return invalid("flags: TF_LINALG_VALUES_ONLY and TF_LINALG_FULL exclude each other for TF_LINALG_SVD");
      }
      return LinalgOp::svd(values_only                     ? linalg::SvdMode::kValuesOnly
                           : (flags & TF_LINALG_FULL) != 0 ? linalg::SvdMode::kFull
                                                           : linalg::SvdMode::kThin);
    case TF_LINALG_QR:
      TENFERRO_TRY(allow(TF_LINALG_FULL, "TF_LINALG_QR"));
      return LinalgOp::qr((flags & TF_LINALG_FULL) != 0 ? linalg::QrMode::kComplete : linalg::QrMode::kReduced);
    case TF_LINALG_EIGH:
      TENFERRO_TRY(allow(TF_LINALG_VALUES_ONLY, "TF_LINALG_EIGH"));
      return LinalgOp::eigh(!values_only);
    case TF_LINALG_EIG:
      TENFERRO_TRY(allow(TF_LINALG_VALUES_ONLY, "TF_LINALG_EIG"));
      return LinalgOp::eig(!values_only);
    case TF_LINALG_TRIANGULAR_SOLVE: {
      TENFERRO_TRY(allow(TF_LINALG_UPPER | TF_LINALG_UNIT_DIAGONAL | TF_LINALG_TRANSPOSE | TF_LINALG_ADJOINT,
                         "TF_LINALG_TRIANGULAR_SOLVE"));
      if ((flags & TF_LINALG_TRANSPOSE) != 0 && (flags & TF_LINALG_ADJOINT) != 0) {
        return invalid("flags: TF_LINALG_TRANSPOSE and TF_LINALG_ADJOINT exclude each other");
      }
      const linalg::TriangularTranspose op = (flags & TF_LINALG_TRANSPOSE) != 0
                                                 ? linalg::TriangularTranspose::kTranspose
                                             : (flags & TF_LINALG_ADJOINT) != 0 ? linalg::TriangularTranspose::kAdjoint
                                                                                : linalg::TriangularTranspose::kNone;
      return LinalgOp::triangular_solve((flags & TF_LINALG_UPPER) == 0, (flags & TF_LINALG_UNIT_DIAGONAL) != 0, op);
    }
    case TF_LINALG_MATRIX_NORM: {
      TENFERRO_TRY(allow(0, "TF_LINALG_MATRIX_NORM"));
      TENFERRO_ASSIGN_OR_RETURN(const linalg::NormOrder order, norm_of(args.norm, false));
      return LinalgOp::matrix_norm(order);
    }
    case TF_LINALG_VECTOR_NORM: {
      TENFERRO_TRY(allow(0, "TF_LINALG_VECTOR_NORM"));
      TENFERRO_ASSIGN_OR_RETURN(const linalg::NormOrder order, norm_of(args.norm, true));
      return LinalgOp::vector_norm(order, order == linalg::NormOrder::kP ? args.p : 2.0);
    }
    default:
      break;
  }
  // The ops without options: named in the flags message.
  std::shared_ptr<const LinalgOp> plain;
  switch (args.op) {
    case TF_LINALG_CHOLESKY:
      plain = LinalgOp::cholesky();
      break;
    case TF_LINALG_LU:
      plain = LinalgOp::lu();
      break;
    case TF_LINALG_SOLVE:
      plain = LinalgOp::solve();
      break;
    case TF_LINALG_INV:
      plain = LinalgOp::inv();
      break;
    case TF_LINALG_DET:
      plain = LinalgOp::det();
      break;
    case TF_LINALG_SLOGDET:
      plain = LinalgOp::slogdet();
      break;
    case TF_LINALG_LSTSQ:
      plain = LinalgOp::lstsq(rcond);
      break;
    case TF_LINALG_PINV:
      plain = LinalgOp::pinv(rcond);
      break;
    default:
      return invalid(
          fmt::format("op is {}; expected a tf_linalg_op (TF_LINALG_SVD (1) to TF_LINALG_VECTOR_NORM (15))", args.op));
  }
  TENFERRO_TRY(allow(0, plain->describe()));
  return plain;
}

// The checked arguments of tf_linalg / tf_linalg_results.
Result<std::shared_ptr<const linalg::LinalgOp>> checked_linalg(const tf_linalg_args* args, bool need_data,
                                                               CheckedOperands& inputs) {
  TENFERRO_TRY(require(args, "args"));
  TENFERRO_TRY(check_struct_size("tf_linalg_args", args->struct_size, {TF_LINALG_ARGS_SIZE_V1}));
  TENFERRO_TRY(check_handle(args->runtime, "args->runtime"));
  if (args->reserved0 != 0) return invalid(fmt::format("reserved0 is {}; expected 0", args->reserved0));
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const linalg::LinalgOp> op, linalg_op_of(*args));
  const auto operands = static_cast<std::size_t>(linalg::num_operands(op->kind()));
  if (args->num_inputs != operands) {
    return invalid(fmt::format("num_inputs is {}; {} takes {} operand{}", args->num_inputs, op->describe(), operands,
                               operands == 1 ? "" : "s"));
  }
  TENFERRO_TRY(check_inputs(args->inputs, args->num_inputs, need_data, inputs));
  return op;
}

#ifdef TENFERRO_C_HAVE_FFT
// The checked arguments of tf_fft / tf_fft_result.
Result<std::shared_ptr<const fft::FftOp>> checked_fft(const tf_fft_args* args, bool need_data,
                                                      CheckedOperands& inputs) {
  TENFERRO_TRY(require(args, "args"));
  TENFERRO_TRY(check_struct_size("tf_fft_args", args->struct_size, {TF_FFT_ARGS_SIZE_V1}));
  TENFERRO_TRY(check_handle(args->runtime, "args->runtime"));
  fft::FftAttributes a;
  if (args->kind < TF_FFT_FFT || args->kind > TF_FFT_IHFFT) {
    return invalid(fmt::format("kind is {}; expected a tf_fft_kind (TF_FFT_FFT (1) to TF_FFT_IHFFT (6))", args->kind));
  }
  a.kind = static_cast<fft::FftKind>(args->kind - TF_FFT_FFT);
  if (args->norm < TF_FFT_NORM_BACKWARD || args->norm > TF_FFT_NORM_FORWARD) {
    return invalid(fmt::format(
        "norm is {}; expected TF_FFT_NORM_BACKWARD (0), TF_FFT_NORM_ORTHO (1) or TF_FFT_NORM_FORWARD (2)", args->norm));
  }
  a.norm = static_cast<fft::FftNorm>(args->norm);
  // Distinct axes: no more than the input has (checked before num_axes
  // sizes anything).
  TENFERRO_TRY(require(args->input, "args->input"));
  if (args->num_axes > static_cast<std::size_t>(std::max<std::int32_t>(args->input->ndim, 0))) {
    return invalid(fmt::format("num_axes is {}; expected at most the input's ndim, {} (the axes are distinct)",
                               args->num_axes, args->input->ndim));
  }
  if (args->num_axes == 0) {
    if (args->axes != nullptr || args->lengths != nullptr) {
      return invalid(
          "num_axes is 0 with axes or lengths given; expected num_axes entries in each (axes NULL with num_axes k: "
          "the last k axes)");
    }
    a.axes = Dims{-1};
  } else {
    if (args->axes == nullptr) {  // the last num_axes axes, as numpy's s= without axes=
      for (std::size_t k = args->num_axes; k > 0; --k) a.axes.push_back(-static_cast<std::int64_t>(k));
    } else {
      a.axes = Dims(std::span<const std::int64_t>(args->axes, args->num_axes));
    }
    if (args->lengths != nullptr) a.lengths = Dims(std::span<const std::int64_t>(args->lengths, args->num_axes));
  }
  TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const fft::FftOp> op, fft::FftOp::create(a));
  TENFERRO_TRY(check_inputs(&args->input, 1, need_data, inputs, Naming::kSingle));
  return op;
}
#else
Status no_fft() {
  return make_error(ErrorCode::kUnsupported, ErrorStage::kNone,
                    "tf_fft: this libtenferro_c was built without FFTW (libfftw3-dev); expected a build with it");
}
#endif

}  // namespace
}  // namespace tenferro::c_api

// Note [C API handle tags]
// A zero-filled block, a pointer to some other object or a destroyed
// handle passed where a tf_runtime* or tf_einsum_plan* belongs used to be
// dereferenced as one and crash inside the library. Each handle now starts
// with a tag word, a constant of its own type, checked on entry to every
// function that takes the handle (check_handle: kInvalidArgument naming the
// argument) and cleared by its destroy function before the memory is freed
// (a volatile store, so the compiler cannot drop it as a dead store to an
// object about to die). A *_destroy of a handle without its tag does
// nothing, so a repeated destroy is caught too. This is best effort, not a
// guarantee: a use after destroy is undefined behaviour (docs/c_api.md),
// and freed memory that was reused, or a foreign object that happens to
// hold the tag, is not detected. The check costs one load and compare per
// call.
namespace tenferro::c_api {
template <std::uint64_t kTag>
struct HandleTag {
  std::uint64_t word = kTag;

  HandleTag() = default;
  HandleTag(const HandleTag&) = delete;
  HandleTag& operator=(const HandleTag&) = delete;
  ~HandleTag() { *static_cast<volatile std::uint64_t*>(&word) = 0; }
  // Whether `handle` (whose first member is the tag) holds the tag. Read as
  // bytes: a foreign pointer need not have the handle's alignment, and a
  // member access through a misaligned pointer is itself undefined (UBSan
  // reported the test's zeroed stack block).
  static bool live(const void* handle) noexcept {
    std::uint64_t word = 0;
    std::memcpy(&word, handle, sizeof word);
    return word == kTag;
  }
};
}  // namespace tenferro::c_api

struct tf_runtime {
  tenferro::c_api::HandleTag<0x74665f72756e7431ULL> tag;  // "tf_runt1"; first member
  std::shared_ptr<const tenferro::c_api::Engine> engine;
  tenferro::c_api::OneShotMemo memo;  // Note [One-shot einsum memo]
};

struct tf_einsum_plan {
  tenferro::c_api::HandleTag<0x74665f706c616e31ULL> tag;  // "tf_plan1"; first member
  std::shared_ptr<const tenferro::c_api::Engine> engine;
  std::shared_ptr<const tenferro::einsum::EinsumOp> op;
  std::shared_ptr<const tenferro::einsum::ExecutionPlan> plan;
  std::vector<std::int64_t> path;  // opt_einsum pairs, flattened
};

namespace tenferro::c_api {
namespace {

Status check_handle(const tf_runtime* runtime, std::string_view what) {
  TENFERRO_TRY(require(runtime, what));
  if (!decltype(tf_runtime::tag)::live(runtime)) {
    return invalid(fmt::format(
        "{} is not a live runtime: expected a tf_runtime* from tf_runtime_create, found an invalid or destroyed handle",
        what));
  }
  return ok_status();
}

Status check_handle(const tf_einsum_plan* plan, std::string_view what) {
  TENFERRO_TRY(require(plan, what));
  if (!decltype(tf_einsum_plan::tag)::live(plan)) {
    return invalid(fmt::format(
        "{} is not a live plan: expected a tf_einsum_plan* from tf_einsum_prepare, found an invalid or destroyed "
        "handle",
        what));
  }
  return ok_status();
}

}  // namespace
}  // namespace tenferro::c_api

using namespace tenferro;         // NOLINT(google-build-using-namespace): one .cpp
using namespace tenferro::c_api;  // NOLINT(google-build-using-namespace)

extern "C" {

TF_API tf_code tf_get_version(tf_version* version, tf_error** error) {
  return guarded(error, "tf_get_version", [&]() -> Status {
    TENFERRO_TRY(require(version, "version"));
    TENFERRO_TRY(check_struct_size("tf_version", version->struct_size, {TF_VERSION_SIZE_V1}));
    version->api_major = TF_API_VERSION_MAJOR;
    version->api_minor = TF_API_VERSION_MINOR;
    version->library_version = build_info().version.data();
    version->git_revision = build_info().git_revision.data();
    return ok_status();
  });
}

TF_API tf_code tf_error_code(const tf_error* error) {
  return error == nullptr ? TF_CODE_OK : static_cast<tf_code>(error->code);
}

TF_API tf_code tf_error_canonical_code(const tf_error* error) {
  return error == nullptr ? TF_CODE_OK : static_cast<tf_code>(canonical_code(error->code));
}

TF_API const char* tf_error_message(const tf_error* error) { return error == nullptr ? "" : error->message.c_str(); }

TF_API void tf_error_destroy(tf_error* error) { delete error; }

TF_API const char* tf_code_name(std::int32_t code) {
  if (code < 0 || code >= TF_CODE_COUNT) return "unknown_code";
  // The names are string literals of error_code.def: NUL-terminated.
  return to_string(static_cast<ErrorCode>(code)).data();
}

TF_API tf_code tf_runtime_create(const tf_runtime_options* options, tf_runtime** runtime, tf_error** error) {
  return guarded(error, "tf_runtime_create", [&]() -> Status {
    TENFERRO_TRY(require(runtime, "runtime"));
    *runtime = nullptr;
    int threads = 0;
    std::int32_t gemm = TF_GEMM_NATIVE;
    std::int32_t worker_spin_us = 0;
    if (options != nullptr) {
      TENFERRO_TRY(check_struct_size("tf_runtime_options", options->struct_size,
                                     {TF_RUNTIME_OPTIONS_SIZE_V1, TF_RUNTIME_OPTIONS_SIZE_V2}));
      threads = options->threads;
      gemm = options->gemm;
      if (options->struct_size >= TF_RUNTIME_OPTIONS_SIZE_V2) {
        if (options->reserved0 != 0) {
          return invalid(fmt::format("tf_runtime_options.reserved0 is {}; expected 0", options->reserved0));
        }
        worker_spin_us = options->worker_spin_us;
      }
    }
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, make_engine(threads, gemm, worker_spin_us));
    auto created = std::make_unique<tf_runtime>();
    created->engine = std::move(engine);
    *runtime = created.release();
    return ok_status();
  });
}

TF_API void tf_runtime_destroy(tf_runtime* runtime) {
  if (runtime != nullptr && decltype(tf_runtime::tag)::live(runtime)) delete runtime;  // Note [C API handle tags]
}

TF_API tf_code tf_einsum(const tf_einsum_args* args, tf_error** error) {
  return guarded(error, "tf_einsum", [&]() -> Status {
    TENFERRO_TRY(require(args, "args"));
    TENFERRO_TRY(
        check_struct_size("tf_einsum_args", args->struct_size, {TF_EINSUM_ARGS_SIZE_V1, TF_EINSUM_ARGS_SIZE_V2}));
    TENFERRO_TRY(check_handle(args->runtime, "args->runtime"));
    TENFERRO_TRY(require(args->subscripts, "args->subscripts"));
    const std::int32_t planner = args->struct_size >= TF_EINSUM_ARGS_SIZE_V2 ? args->planner : TF_PLANNER_AUTO;
    if (args->struct_size >= TF_EINSUM_ARGS_SIZE_V2 && args->reserved0 != 0) {
      return invalid(fmt::format("tf_einsum_args.reserved0 is {}; expected 0", args->reserved0));
    }
    TENFERRO_ASSIGN_OR_RETURN(std::optional<einsum::PlanningPolicy> policy, policy_of(planner));
    CheckedOperands inputs;
    TENFERRO_TRY(check_inputs(args->inputs, args->num_inputs, true, inputs));
    CheckedOutput out;
    TENFERRO_TRY(check_output(args->output, inputs.views[0].dtype, out));
    const Engine& engine = *args->runtime->engine;
    const auto shapes = inputs.shapes();
    if (has_broadcast_axis(inputs)) {  // Note [C API broadcast operands]
      TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                                einsum::EinsumOp::create(args->subscripts, std::move(policy)));
      Dims out_shape;
      TENFERRO_TRY(op->output_shape(std::span<const IntArrayRef>(shapes.data(), shapes.size()), out_shape));
      TENFERRO_TRY(check_output_shape(out, IntArrayRef(out_shape), args->subscripts));
      TENFERRO_TRY(check_disjoint(out.range, std::span<const ByteRange>(inputs.ranges.data(), inputs.ranges.size())));
      TENFERRO_ASSIGN_OR_RETURN(const auto operands, borrow_all(inputs));
      TENFERRO_ASSIGN_OR_RETURN(
          const Tensor result, with_eager_context(engine, args->runtime->memo, [&](runtime::EagerContext& context) {
            return einsum::einsum(context, op, std::span<const Tensor>(operands.data(), operands.size()));
          }));
      cpu::SequentialContext sequential;
      return cpu::copy_into(result.view(), out.view, sequential);
    }
    const OneShotMemo::Key key{args->subscripts, planner, inputs.views[0].dtype,
                               std::span<const IntArrayRef>(shapes.data(), shapes.size())};
    OneShotMemo::Lease memo = args->runtime->memo.acquire();
    if (const einsum::ExecutionPlan* remembered = memo.find(key); remembered != nullptr) {
      TENFERRO_TRY(check_output_shape(out, remembered->output_shape(), args->subscripts));
      return run_checked(engine, *remembered, inputs, out);
    }
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                              einsum::EinsumOp::create(args->subscripts, std::move(policy)));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::ExecutionPlan> plan,
                              engine.executor->prepare(*op, key.shapes, key.dtype));
    TENFERRO_TRY(check_output_shape(out, plan->output_shape(), args->subscripts));
    Status status = run_checked(engine, *plan, inputs, out);
    memo.remember(key, std::move(plan));
    return status;
  });
}

TF_API tf_code tf_einsum_prepare(const tf_einsum_prepare_args* args, tf_einsum_plan** plan, tf_error** error) {
  return guarded(error, "tf_einsum_prepare", [&]() -> Status {
    TENFERRO_TRY(require(plan, "plan"));
    *plan = nullptr;
    TENFERRO_TRY(require(args, "args"));
    TENFERRO_TRY(check_struct_size("tf_einsum_prepare_args", args->struct_size, {TF_EINSUM_PREPARE_ARGS_SIZE_V1}));
    if (args->reserved0 != 0) {
      return invalid(fmt::format("tf_einsum_prepare_args.reserved0 is {}; expected 0", args->reserved0));
    }
    TENFERRO_TRY(check_handle(args->runtime, "args->runtime"));
    TENFERRO_TRY(require(args->subscripts, "args->subscripts"));
    TENFERRO_ASSIGN_OR_RETURN(std::optional<einsum::PlanningPolicy> policy, policy_of(args->planner));
    CheckedOperands inputs;
    TENFERRO_TRY(check_inputs(args->inputs, args->num_inputs, false, inputs));
    auto result = std::make_unique<tf_einsum_plan>();
    result->engine = args->runtime->engine;
    TENFERRO_ASSIGN_OR_RETURN(result->op, einsum::EinsumOp::create(args->subscripts, std::move(policy)));
    const auto shapes = inputs.shapes();
    TENFERRO_ASSIGN_OR_RETURN(result->plan, result->engine->executor->prepare(
                                                *result->op, std::span<const IntArrayRef>(shapes.data(), shapes.size()),
                                                inputs.views[0].dtype));
    for (const auto& [lhs, rhs] : result->plan->tree().order().to_opt_einsum_path()) {
      result->path.push_back(lhs);
      result->path.push_back(rhs);
    }
    *plan = result.release();
    return ok_status();
  });
}

TF_API void tf_einsum_plan_destroy(tf_einsum_plan* plan) {
  if (plan != nullptr && decltype(tf_einsum_plan::tag)::live(plan)) delete plan;  // Note [C API handle tags]
}

TF_API tf_code tf_einsum_run(const tf_einsum_run_args* args, tf_error** error) {
  return guarded(error, "tf_einsum_run", [&]() -> Status {
    TENFERRO_TRY(require(args, "args"));
    TENFERRO_TRY(check_struct_size("tf_einsum_run_args", args->struct_size, {TF_EINSUM_RUN_ARGS_SIZE_V1}));
    TENFERRO_TRY(check_handle(args->plan, "args->plan"));
    const einsum::ExecutionPlan& plan = *args->plan->plan;
    CheckedOperands inputs;
    TENFERRO_TRY(check_inputs(args->inputs, args->num_inputs, true, inputs));
    // The inputs against the plan before the output, so that a message names
    // the argument that is wrong: with float32 inputs on a float64 plan it is
    // the inputs, not the (float32) output.
    TENFERRO_TRY(plan.check_inputs(std::span<const TensorView>(inputs.views.data(), inputs.views.size())));
    CheckedOutput out;
    TENFERRO_TRY(check_output(args->output, plan.dtype(), out));
    TENFERRO_TRY(check_output_shape(out, plan.output_shape(), args->plan->op->canonical_subscripts()));
    return run_checked(*args->plan->engine, plan, inputs, out);
  });
}

TF_API tf_code tf_einsum_plan_get_info(const tf_einsum_plan* plan, tf_einsum_plan_info* info, tf_error** error) {
  return guarded(error, "tf_einsum_plan_get_info", [&]() -> Status {
    TENFERRO_TRY(check_handle(plan, "plan"));
    TENFERRO_TRY(require(info, "info"));
    TENFERRO_TRY(check_struct_size("tf_einsum_plan_info", info->struct_size, {TF_EINSUM_PLAN_INFO_SIZE_V1}));
    const einsum::ExecutionPlan& p = *plan->plan;
    const einsum::PathCost& cost = p.tree().cost();
    info->flops = cost.flops;
    info->multiply_adds = cost.multiply_adds;
    info->largest_intermediate = cost.max_intermediate_elements;
    info->workspace_bytes = static_cast<double>(p.workspace_bytes());
    info->output_shape = p.output_shape().data();
    info->output_ndim = static_cast<std::int32_t>(p.output_shape().size());
    info->dtype = c_dtype(p.dtype());
    info->path = plan->path.data();
    info->num_steps = static_cast<std::int64_t>(plan->path.size() / 2);
    // PlannerKind names are string literals: NUL-terminated.
    info->planner = einsum::to_string(p.tree().stats().planner).data();
    return ok_status();
  });
}

// Note [C API einsum gradients]
// tf_einsum_vjp builds the one-einsum program, asks the runtime's AdContext
// (the einsum AD rule installed) for its VJP with respect to the operands
// whose outputs were given (ad::vjp_cotangents: only what those gradients
// need, the pairwise steps of a network of three or more operands reused,
// Note [Pairwise einsums for reverse mode]) and runs it through the runtime
// over the caller's inputs and cotangent, borrowed. The prepared backward
// program is remembered for the signature (Note [One-shot einsum memo]), so
// a repeated call only runs it. As for tf_linalg (Note [C API linalg and
// FFT]), every argument is checked first and the gradients are copied into
// the outputs only once all exist.
TF_API tf_code tf_einsum_vjp(const tf_einsum_vjp_args* args, tf_error** error) {
  return guarded(error, "tf_einsum_vjp", [&]() -> Status {
    TENFERRO_TRY(require(args, "args"));
    TENFERRO_TRY(check_struct_size("tf_einsum_vjp_args", args->struct_size, {TF_EINSUM_VJP_ARGS_SIZE_V1}));
    TENFERRO_TRY(check_handle(args->runtime, "args->runtime"));
    TENFERRO_TRY(require(args->subscripts, "args->subscripts"));
    if (args->reserved0 != 0)
      return invalid(fmt::format("tf_einsum_vjp_args.reserved0 is {}; expected 0", args->reserved0));
    TENFERRO_ASSIGN_OR_RETURN(std::optional<einsum::PlanningPolicy> policy, policy_of(args->planner));
    CheckedOperands inputs;
    TENFERRO_TRY(check_inputs(args->inputs, args->num_inputs, true, inputs));
    const DType dtype = inputs.views[0].dtype;
    if (!is_inexact(dtype)) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                        "inputs are {}; expected TF_DTYPE_F32, F64, C64 or C128 (an integer einsum has no gradient)",
                        dtype);
    }
    CheckedOutput ct;
    TENFERRO_TRY(check_tensor(args->cotangent, kCotangentIndex, true, ct.strides, ct.view, ct.range));
    if (ct.view.dtype != dtype) {
      return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone, "cotangent is {}; expected {} like the inputs",
                        ct.view.dtype, dtype);
    }
    TENFERRO_TRY(require(args->outputs, "args->outputs"));
    SmallVector<CheckedOutput, kInlineOperands> outs(inputs.views.size());
    SmallVector<ByteRange, kInlineOperands> taken(inputs.ranges.begin(), inputs.ranges.end());
    taken.push_back(ct.range);
    std::vector<std::uint32_t> active;
    for (std::size_t j = 0; j < outs.size(); ++j) {
      if (args->outputs[j] == nullptr) continue;
      CheckedOutput& out = outs[j];
      TENFERRO_TRY(check_tensor(args->outputs[j], output_index(j), true, out.strides, out.view, out.range));
      if (out.view.dtype != dtype) {
        return make_error(ErrorCode::kDTypeMismatch, ErrorStage::kNone,
                          "outputs[{}] is {}; expected {} like the inputs", j, out.view.dtype, dtype);
      }
      if (IntArrayRef(out.view.shape) != IntArrayRef(inputs.views[j].shape)) {
        return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                          "outputs[{}] has shape {}; expected inputs[{}]'s shape {}", j,
                          shape_to_string(out.view.shape), j, shape_to_string(inputs.views[j].shape));
      }
      TENFERRO_TRY(check_output_layout(out.view, output_index(j)));
      TENFERRO_TRY(check_disjoint(out.range, std::span<const ByteRange>(taken.data(), taken.size())));
      taken.push_back(out.range);
      active.push_back(static_cast<std::uint32_t>(j));
    }
    if (active.empty()) return ok_status();

    // The operands, then the cotangent, borrowed; a remembered signature
    // runs its prepared backward program (Note [One-shot einsum memo]).
    std::vector<Tensor> params;
    for (std::size_t i = 0; i < inputs.views.size(); ++i) {
      TENFERRO_ASSIGN_OR_RETURN(Tensor t, borrow(inputs.views[i], inputs.ranges[i]));
      params.push_back(std::move(t));
    }
    TENFERRO_ASSIGN_OR_RETURN(Tensor cotangent, borrow(ct.view, ct.range));
    params.push_back(std::move(cotangent));
    const runtime::InputSignature signature = runtime::InputSignature::of(params);
    const Engine& engine = *args->runtime->engine;
    runtime::Runtime rt = engine.runtime;
    OneShotMemo::Lease memo = args->runtime->memo.acquire();
    const OneShotMemo::VjpKey key{args->subscripts, args->planner, active, &signature};
    std::vector<Tensor> gradients;
    if (const runtime::PreparedProgram* prepared = memo.find(key); prepared != nullptr) {
      TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, rt.run_prepared(*prepared, params));
      gradients.assign(out.begin(), out.end());
    } else {
      TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                                einsum::EinsumOp::create(args->subscripts, std::move(policy)));
      const auto shapes = inputs.shapes();
      Dims out_shape;
      TENFERRO_TRY(op->output_shape(std::span<const IntArrayRef>(shapes.data(), shapes.size()), out_shape));
      if (IntArrayRef(ct.view.shape) != IntArrayRef(out_shape)) {
        return make_error(ErrorCode::kShapeMismatch, ErrorStage::kNone,
                          "cotangent has shape {}; einsum \"{}\" on these operands gives shape {}",
                          shape_to_string(ct.view.shape), args->subscripts, shape_to_string(out_shape));
      }
      program::ProgramBuilder b;
      std::vector<program::ProgramValue> values;
      for (std::size_t i = 0; i < inputs.views.size(); ++i) {
        const program::SymbolicShape s = program::symbolic_shape(IntArrayRef(inputs.views[i].shape));
        TENFERRO_ASSIGN_OR_RETURN(program::ProgramValue v, b.add_input(dtype, s.span()));
        values.push_back(v);
      }
      TENFERRO_ASSIGN_OR_RETURN(const program::ProgramValue result, einsum::emit_einsum(b, op, values));
      TENFERRO_ASSIGN_OR_RETURN(const program::FrozenProgram f, b.freeze({result}));
      TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::PreparedProgram> backward,
                                ad::prepare_vjp_cotangents(rt, *engine.ad, f, active, signature));
      if (backward == nullptr) {
        const std::span<const Tensor> operands(params.data(), inputs.views.size());
        TENFERRO_ASSIGN_OR_RETURN(gradients, ad::vjp_cotangents(rt, *engine.ad, f, operands, active,
                                                                std::span<const Tensor>(&params.back(), 1)));
      } else {
        TENFERRO_ASSIGN_OR_RETURN(runtime::TensorList out, rt.run_prepared(*backward, params));
        gradients.assign(out.begin(), out.end());
        memo.remember(key, std::move(backward));
      }
    }
    cpu::SequentialContext sequential;
    for (std::size_t k = 0; k < active.size(); ++k) {
      TENFERRO_TRY(cpu::copy_into(gradients[k].view(), outs[active[k]].view, sequential));
    }
    return ok_status();
  });
}

TF_API tf_code tf_linalg(const tf_linalg_args* args, tf_error** error) {
  return guarded(error, "tf_linalg", [&]() -> Status {
    CheckedOperands inputs;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const linalg::LinalgOp> op, checked_linalg(args, true, inputs));
    return run_into(*args->runtime->engine, args->runtime->memo, op, inputs, args->outputs, args->num_outputs);
  });
}

TF_API tf_code tf_linalg_results(const tf_linalg_args* args, tf_result_info* results, size_t capacity, size_t* count,
                                 tf_error** error) {
  return guarded(error, "tf_linalg_results", [&]() -> Status {
    TENFERRO_TRY(require(count, "count"));
    CheckedOperands inputs;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const linalg::LinalgOp> op, checked_linalg(args, false, inputs));
    TENFERRO_ASSIGN_OR_RETURN(const auto metadata, infer_results(*op, inputs));
    if (capacity > 0) TENFERRO_TRY(require(results, "results"));
    for (std::size_t j = 0; j < std::min(capacity, metadata.size()); ++j) {
      TENFERRO_TRY(describe_result(metadata[j], &results[j], j));
    }
    *count = metadata.size();
    return ok_status();
  });
}

TF_API tf_code tf_fft(const tf_fft_args* args, tf_error** error) {
  return guarded(error, "tf_fft", [&]() -> Status {
#ifdef TENFERRO_C_HAVE_FFT
    CheckedOperands inputs;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const fft::FftOp> op, checked_fft(args, true, inputs));
    return run_into(*args->runtime->engine, args->runtime->memo, op, inputs, &args->output, 1, Naming::kSingle);
#else
    (void)args;
    return no_fft();
#endif
  });
}

TF_API tf_code tf_fft_result(const tf_fft_args* args, tf_result_info* result, tf_error** error) {
  return guarded(error, "tf_fft_result", [&]() -> Status {
#ifdef TENFERRO_C_HAVE_FFT
    CheckedOperands inputs;
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const fft::FftOp> op, checked_fft(args, false, inputs));
    TENFERRO_ASSIGN_OR_RETURN(const auto metadata, infer_results(*op, inputs));
    return describe_result(metadata[0], result, 0, Naming::kSingle);
#else
    (void)args;
    (void)result;
    return no_fft();
#endif
  });
}

}  // extern "C"
