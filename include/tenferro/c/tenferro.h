/* The tenferro C API: a stable C99 interface to the native CPU einsum,
 * linear-algebra and FFT engines for programs that cannot link C++ (C,
 * Fortran, Julia, Rust, ...), built as
 * the shared library libtenferro_c.so. docs/c_api.md is the guide.
 *
 * Note [C API conventions]
 *  - Opaque handles (tf_runtime, tf_einsum_plan, tf_error) are created and
 *    destroyed only by this library. Every destroy function accepts NULL.
 *  - Every fallible function returns a tf_code: TF_CODE_OK (0) on success,
 *    otherwise the code of the failure. Its last parameter `error` may be
 *    NULL; when it is not, *error is set to NULL on success and to a new
 *    tf_error (code + message saying what was expected and what was found)
 *    on failure, which the caller frees with tf_error_destroy. If even the
 *    error object cannot be allocated, *error stays NULL and the code is
 *    still returned. There is no global or thread-local "last error".
 *  - Nothing is thrown or aborted on bad input: null pointers, wrong
 *    struct_size, malformed subscripts, mismatched shapes, unsupported
 *    dtypes and out-of-memory all come back as codes.
 *  - Every struct passed across the boundary starts with `size_t
 *    struct_size`, which the caller sets to sizeof(the struct) as compiled.
 *    The library accepts the sizes of every version of the struct it knows
 *    (TF_<STRUCT>_SIZE_V<n>, listed beside each struct; fields after the
 *    caller's struct_size take their defaults) and rejects 0, any other
 *    smaller size (TF_CODE_INVALID_ARGUMENT) and sizes from a newer header
 *    (TF_CODE_UNIMPLEMENTED). Each version ends on an 8-byte boundary, so
 *    sizeof(struct) of every version is exactly its TF_<STRUCT>_SIZE_V<n>.
 *  - Tensors are caller-owned memory described by tf_tensor: shape and
 *    strides in ELEMENTS (not bytes; numpy's strides divided by itemsize).
 *    The library only borrows them for the duration of a call.
 *  - Thread safety: a tf_runtime and a tf_einsum_plan may be used from any
 *    number of threads at once; a tf_error belongs to the caller.
 *  - Error codes (tf_code, generated from include/tenferro/base/error_code.def)
 *    are tenferro's codes. Their numeric values follow that table; compare
 *    against the TF_CODE_* names, and use tf_error_canonical_code to get the
 *    coarse canonical class (invalid argument, unimplemented, ...). */
#ifndef TENFERRO_C_TENFERRO_H_
#define TENFERRO_C_TENFERRO_H_

#include <stddef.h>
#include <stdint.h>

#include "tenferro/c/tenferro_codes.h" /* tf_code, generated at configure time */

#if defined(TENFERRO_C_BUILDING_LIBRARY) && defined(__GNUC__)
#define TF_API __attribute__((visibility("default")))
#else
#define TF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A failure: its code and a message. Owned by the caller once returned;
 *  free with tf_error_destroy. Immutable; may be read from any thread. */
typedef struct tf_error tf_error;

/* --- Version ------------------------------------------------------------ */

/** The version of this header. The library reports its own with
 *  tf_get_version; a program built against major M runs only with a library
 *  of major M. Minor versions only add (functions, struct versions, enum
 *  values). */
#define TF_API_VERSION_MAJOR 0
#define TF_API_VERSION_MINOR 3

/** The byte size of `type` up to and including `last_field`. (In C++ the
 *  member's size is taken without a C-style cast of 0, which
 *  -Wold-style-cast and -Wzero-as-null-pointer-constant reject.) */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define TF_STRUCT_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(static_cast<type*>(nullptr)->last_field))
#else
#define TF_STRUCT_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type*)0)->last_field))
#endif

/** What tf_get_version fills in. Strings are static (never freed). */
typedef struct tf_version {
  size_t struct_size;
  int32_t api_major; /**< TF_API_VERSION_MAJOR of the library */
  int32_t api_minor; /**< TF_API_VERSION_MINOR of the library */
  /** tenferro's release, e.g. "0.1.0". */
  const char* library_version;
  /** The git revision the library was built from ("unknown" outside git). */
  const char* git_revision;
} tf_version;
#define TF_VERSION_SIZE_V1 TF_STRUCT_SIZE(tf_version, git_revision)

/** Fills `version` (struct_size set by the caller) with the library's
 *  version. Thread-safe. */
TF_API tf_code tf_get_version(tf_version* version, tf_error** error);

/* --- Errors ------------------------------------------------------------- */

/** The code of `error`; TF_CODE_OK for NULL. */
TF_API tf_code tf_error_code(const tf_error* error);
/** The canonical class `error`'s code refines (e.g. TF_CODE_INVALID_ARGUMENT
 *  for TF_CODE_SHAPE_MISMATCH); TF_CODE_OK for NULL. */
TF_API tf_code tf_error_canonical_code(const tf_error* error);
/** "stage code: message" with the whole cause chain; "" for NULL. Owned by
 *  `error`: valid until tf_error_destroy(error). */
TF_API const char* tf_error_message(const tf_error* error);
/** Frees `error` (NULL is allowed). */
TF_API void tf_error_destroy(tf_error* error);
/** The snake_case name of `code` (a tf_code), e.g. "shape_mismatch";
 *  "unknown_code" for a value outside the table. A static string. Takes an
 *  int32_t so that any value, even one no tf_code names, is valid input. */
TF_API const char* tf_code_name(int32_t code);

/* --- Tensors ------------------------------------------------------------ */

/** Element types. Complex types are interleaved (re, im) pairs, layout-
 *  compatible with C99 float _Complex / double _Complex. Integer
 *  contractions wrap modulo 2^32 / 2^64 like C unsigned arithmetic (and
 *  numpy's integer einsum). */
typedef enum tf_dtype {
  TF_DTYPE_F32 = 1,
  TF_DTYPE_F64 = 2,
  TF_DTYPE_C64 = 3,
  TF_DTYPE_C128 = 4,
  TF_DTYPE_I32 = 5, /**< int32_t */
  TF_DTYPE_I64 = 6  /**< int64_t */
} tf_dtype;

/** A caller-owned strided array, borrowed for one call.
 *  `data` addresses element (0, ..., 0) and must be aligned for the element
 *  type's real component (4 bytes for F32/C64/I32, 8 for F64/C128/I64); it may be
 *  NULL only when the array has no elements. `shape` holds `ndim` extents
 *  (>= 0; NULL allowed when ndim is 0). `strides` holds `ndim` non-negative
 *  strides in ELEMENTS, or is NULL for a dense row-major (C order) array.
 *  Inputs are only read and may overlap each other. An output must address
 *  each of its elements once (no zero or overlapping strides), and the byte
 *  range from its first to its last element must not intersect any input's. */
typedef struct tf_tensor {
  size_t struct_size;
  void* data;
  const int64_t* shape;
  const int64_t* strides;
  int32_t ndim;
  int32_t dtype; /**< a tf_dtype */
} tf_tensor;
#define TF_TENSOR_SIZE_V1 TF_STRUCT_SIZE(tf_tensor, dtype)

/* --- Runtime ------------------------------------------------------------ */

/** A tenferro runtime: the CPU engine (its GEMM provider and worker threads)
 *  with the native einsum engine and its plan cache. Thread-safe. */
typedef struct tf_runtime tf_runtime;

/** GEMM providers behind the einsum engine. */
typedef enum tf_gemm {
  TF_GEMM_NATIVE = 0,   /**< tenferro's own GEMM (always available) */
  TF_GEMM_OPENBLAS = 1, /**< OpenBLAS, loaded at runtime creation */
  TF_GEMM_BLIS = 2      /**< BLIS, loaded at runtime creation */
} tf_gemm;

/** Options of tf_runtime_create. A zero-filled struct (with struct_size set)
 *  is the default: one thread, native GEMM. */
typedef struct tf_runtime_options {
  size_t struct_size;
  /** Worker threads. 0 or 1: every call runs on the calling thread. N > 1: a
   *  managed CPU domain running at most N threads on the CPUs this process
   *  may use (nothing pinned; the OS places them); with OpenBLAS this also
   *  sets OpenBLAS's own process-wide thread count to N. */
  int32_t threads;
  int32_t gemm; /**< a tf_gemm */
  /* Since V2: */
  /** Microseconds the workers of a managed domain (threads > 1) keep
   *  spinning for the next parallel loop after one ends, before they sleep:
   *  0 takes the default (10000), TF_WORKER_SPIN_OFF turns spinning off, at
   *  most 1000000. Turn it off when the CPUs are shared with other busy
   *  processes (docs/parallelism.md, "Workers between loops"). */
  int32_t worker_spin_us;
  int32_t reserved0; /**< must be 0 */
} tf_runtime_options;
#define TF_RUNTIME_OPTIONS_SIZE_V1 TF_STRUCT_SIZE(tf_runtime_options, gemm)
#define TF_RUNTIME_OPTIONS_SIZE_V2 TF_STRUCT_SIZE(tf_runtime_options, reserved0)
/** tf_runtime_options.worker_spin_us: workers sleep as soon as a loop ends. */
#define TF_WORKER_SPIN_OFF (-1)

/** Creates a runtime into *runtime. `options` may be NULL (the defaults).
 *  Errors: TF_CODE_INVALID_ARGUMENT for bad options (negative or too many
 *  threads, unknown gemm), TF_CODE_UNSUPPORTED when the chosen BLAS library
 *  cannot be loaded (the message says which file and why). */
TF_API tf_code tf_runtime_create(const tf_runtime_options* options, tf_runtime** runtime, tf_error** error);
/** Releases the caller's reference (NULL is allowed). Plans created from the
 *  runtime stay valid: they keep what they need alive. Must not race with a
 *  call that uses `runtime`. */
TF_API void tf_runtime_destroy(tf_runtime* runtime);

/* --- Einsum ------------------------------------------------------------- */

/** How the contraction order is chosen. */
typedef enum tf_planner {
  TF_PLANNER_AUTO = 0,    /**< optimal for up to 10 operands, greedy beyond (TreeSA-refined when expensive) */
  TF_PLANNER_GREEDY = 1,  /**< opt_einsum-style greedy */
  TF_PLANNER_OPTIMAL = 2, /**< exact dynamic programming (<= 16 operands) */
  TF_PLANNER_TREESA = 3   /**< simulated annealing (large networks) */
} tf_planner;

/** Arguments of tf_einsum (one call: plan from the runtime's cache, then
 *  contract). */
typedef struct tf_einsum_args {
  size_t struct_size;
  tf_runtime* runtime;
  /** numpy einsum notation, e.g. "ij,jk->ik", "...ij,...jk", "ii" (implicit
   *  output, ellipsis and repeated indices as numpy; UTF-8). */
  const char* subscripts;
  /** `num_inputs` pointers to the operands, all of one dtype. */
  const tf_tensor* const* inputs;
  size_t num_inputs;
  /** The result, written in place. Its dtype must be the inputs' and its
   *  shape the einsum's output shape (ndim 0 for a scalar result). */
  const tf_tensor* output;
  /* Since V2: */
  int32_t planner; /**< a tf_planner; TF_PLANNER_AUTO when absent */
  int32_t reserved0;
} tf_einsum_args;
#define TF_EINSUM_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_einsum_args, output)
#define TF_EINSUM_ARGS_SIZE_V2 TF_STRUCT_SIZE(tf_einsum_args, reserved0)

/** Contracts `inputs` into `output`. Errors: TF_CODE_INVALID_ARGUMENT (null
 *  pointers, bad struct_size, malformed subscripts, negative strides,
 *  misaligned data, unknown planner), TF_CODE_SHAPE_MISMATCH (operands that
 *  do not fit the subscripts, an output of the wrong shape),
 *  TF_CODE_DTYPE_MISMATCH (mixed dtypes), TF_CODE_UNSUPPORTED (a dtype value
 *  outside tf_dtype), TF_CODE_ALIAS_CONFLICT (an output
 *  that overlaps itself or an input), TF_CODE_RESOURCE_EXHAUSTED. On error
 *  the output may have been partly written only for errors raised during
 *  the contraction itself (never for argument errors). Thread-safe. */
TF_API tf_code tf_einsum(const tf_einsum_args* args, tf_error** error);

/** A prepared einsum: subscripts bound to operand shapes and a dtype, its
 *  contraction path planned and compiled once, to run many times. Immutable
 *  and thread-safe; it keeps the runtime's engine alive. */
typedef struct tf_einsum_plan tf_einsum_plan;

/** Arguments of tf_einsum_prepare. Only the dtype, ndim and shape of each
 *  input descriptor are read (data and strides are ignored and may be
 *  NULL): the plan accepts any strides at run time. */
typedef struct tf_einsum_prepare_args {
  size_t struct_size;
  tf_runtime* runtime;
  const char* subscripts;
  const tf_tensor* const* inputs;
  size_t num_inputs;
  int32_t planner; /**< a tf_planner */
  int32_t reserved0;
} tf_einsum_prepare_args;
#define TF_EINSUM_PREPARE_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_einsum_prepare_args, reserved0)

/** Plans and compiles an einsum into *plan (free with
 *  tf_einsum_plan_destroy). Errors as tf_einsum's argument errors. */
TF_API tf_code tf_einsum_prepare(const tf_einsum_prepare_args* args, tf_einsum_plan** plan, tf_error** error);
/** Frees `plan` (NULL is allowed). Must not race with a run of `plan`. */
TF_API void tf_einsum_plan_destroy(tf_einsum_plan* plan);

/** Arguments of tf_einsum_run. */
typedef struct tf_einsum_run_args {
  size_t struct_size;
  const tf_einsum_plan* plan;
  /** Operands of exactly the prepared shapes and dtype, any strides. */
  const tf_tensor* const* inputs;
  size_t num_inputs;
  const tf_tensor* output;
} tf_einsum_run_args;
#define TF_EINSUM_RUN_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_einsum_run_args, output)

/** Runs a prepared einsum: no parsing, planning or heap allocation of its
 *  own in the steady state. Errors as tf_einsum; an operand whose shape or
 *  dtype differs from the prepared one is TF_CODE_SHAPE_MISMATCH /
 *  TF_CODE_DTYPE_MISMATCH. Thread-safe. */
TF_API tf_code tf_einsum_run(const tf_einsum_run_args* args, tf_error** error);

/** What a plan contracts and what it costs (the contract-path query). The
 *  pointers are owned by the plan and valid until it is destroyed. */
typedef struct tf_einsum_plan_info {
  size_t struct_size;
  /** Flops of the chosen path (opt_einsum's convention: 2 per multiply-add
   *  of a step that sums, 1 otherwise; a complex multiply-add counts 1). */
  double flops;
  /** Multiply-adds of all binary steps. */
  double multiply_adds;
  /** Elements of the largest intermediate, the result included. */
  double largest_intermediate;
  /** Workspace bytes one run uses (intermediates and planned copies). */
  double workspace_bytes;
  /** The output shape: output_ndim extents. */
  const int64_t* output_shape;
  int32_t output_ndim;
  int32_t dtype; /**< a tf_dtype */
  /** The path in opt_einsum's format: num_steps pairs (path[2k],
   *  path[2k+1]) of positions in the shrinking operand list; each pair's
   *  operands are removed and their result appended. */
  const int64_t* path;
  int64_t num_steps;
  /** The planner that chose the path: "greedy", "optimal", "treesa". A
   *  static string. */
  const char* planner;
} tf_einsum_plan_info;
#define TF_EINSUM_PLAN_INFO_SIZE_V1 TF_STRUCT_SIZE(tf_einsum_plan_info, planner)

/** Fills `info` (struct_size set by the caller) for `plan`. Thread-safe. */
TF_API tf_code tf_einsum_plan_get_info(const tf_einsum_plan* plan, tf_einsum_plan_info* info, tf_error** error);

/* --- Einsum gradients (since C API 0.3) ---------------------------------- */

/** Arguments of tf_einsum_vjp. */
typedef struct tf_einsum_vjp_args {
  size_t struct_size;
  tf_runtime* runtime;
  const char* subscripts; /**< as for tf_einsum */
  /** The einsum's operands, as for tf_einsum, of one dtype: TF_DTYPE_F32,
   *  F64, C64 or C128. */
  const tf_tensor* const* inputs;
  size_t num_inputs;
  /** The cotangent of the einsum's output (d loss / d output): the output's
   *  shape, the inputs' dtype, any strides. */
  const tf_tensor* cotangent;
  /** num_inputs gradients, written in place (any strides): outputs[i]
   *  receives the gradient of inputs[i], of its shape and dtype. A NULL
   *  entry is not computed (nor is the work only it needs). */
  const tf_tensor* const* outputs;
  int32_t planner; /**< a tf_planner, for the contraction order */
  int32_t reserved0;
} tf_einsum_vjp_args;
#define TF_EINSUM_VJP_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_einsum_vjp_args, reserved0)

/** Reverse mode of an einsum: outputs[i] = J_i^* cotangent, J_i the Jacobian
 *  of einsum(inputs) with respect to inputs[i] (the gradient of
 *  sum(cotangent * einsum(inputs)) for real data), as
 *  torch.autograd.grad(torch.einsum(subscripts, inputs), inputs, cotangent)
 *  gives it; complex data follow PyTorch's convention (for "i,i->", the
 *  gradient of a is cotangent * conj(b)). A network of three or more
 *  operands is differentiated through its planned pairwise contractions, so
 *  all gradients together cost about two contractions of the network.
 *  Errors as tf_einsum's argument errors, and: TF_CODE_DTYPE_MISMATCH for
 *  integer operands (no gradient) or a cotangent or output of another
 *  dtype; TF_CODE_SHAPE_MISMATCH for a cotangent of another shape than the
 *  einsum's output or an output of another shape than its input;
 *  TF_CODE_ALIAS_CONFLICT for an output overlapping itself, another output,
 *  an input or the cotangent. Every argument is checked before anything
 *  runs, and the gradients are copied into the outputs only once all of them
 *  exist: on any error the outputs are unchanged. Thread-safe. */
TF_API tf_code tf_einsum_vjp(const tf_einsum_vjp_args* args, tf_error** error);

/* --- Results of linalg and FFT calls ------------------------------------- */

/** The most axes a result described by tf_result_info may have. */
#define TF_MAX_RESULT_NDIM 32

/** The dtype and shape of one result (filled by the library). */
typedef struct tf_result_info {
  size_t struct_size;
  int32_t dtype; /**< a tf_dtype */
  int32_t ndim;
  int64_t shape[TF_MAX_RESULT_NDIM]; /**< the first ndim entries */
} tf_result_info;
#define TF_RESULT_INFO_SIZE_V1 TF_STRUCT_SIZE(tf_result_info, shape)

/* --- Linear algebra ----------------------------------------------------- */

/** The operations of tf_linalg, batched over leading axes (a matrix is
 *  [..., m, n]; every operand of a call has the same batch extents) on F32,
 *  F64, C64 and C128. Results, in order (k = min(m, n)); docs/c_api.md and
 *  docs/linalg.md give the conventions (numpy's, with tenferro's gauge):
 *  SVD            U [..,m,k], S [..,k] (real), Vh [..,k,n]; with
 *                 TF_LINALG_FULL U [..,m,m], Vh [..,n,n]; TF_LINALG_VALUES_ONLY: S
 *  QR             Q [..,m,k], R [..,k,n]; TF_LINALG_FULL: Q [..,m,m], R [..,m,n]
 *  EIGH           w [..,n] (real, ascending), V [..,n,n]; reads the lower
 *                 triangle; TF_LINALG_VALUES_ONLY: w
 *  EIG            w [..,n], V [..,n,n], both complex; TF_LINALG_VALUES_ONLY: w
 *  CHOLESKY       L [..,n,n] lower, A = L L^H
 *  LU             LU [..,m,n], pivots I64 [..,k], permutation I64 [..,m]
 *  SOLVE          A [..,n,n], B [..,n,r] -> X [..,n,r]
 *  TRIANGULAR_SOLVE  A [..,n,n] (lower triangle, or upper with
 *                 TF_LINALG_UPPER), B [..,n,r] -> X with op(A) X = B
 *  INV            [..,n,n];  DET  [..] (A's dtype)
 *  SLOGDET        sign [..] (A's dtype), log|det| [..] (real)
 *  LSTSQ          A [..,m,n], B [..,m,r] -> X [..,n,r] (minimum norm)
 *  PINV           [..,n,m]
 *  MATRIX_NORM    [..] real; `norm` fro (default), nuc, 1, -1, 2, -2, inf, -inf
 *  VECTOR_NORM    over the last axis, [..] real; `norm` 2 (default), 1, inf,
 *                 -inf or TF_NORM_P with `p` */
typedef enum tf_linalg_op {
  TF_LINALG_SVD = 1,
  TF_LINALG_QR = 2,
  TF_LINALG_EIGH = 3,
  TF_LINALG_EIG = 4,
  TF_LINALG_CHOLESKY = 5,
  TF_LINALG_LU = 6,
  TF_LINALG_SOLVE = 7,
  TF_LINALG_TRIANGULAR_SOLVE = 8,
  TF_LINALG_INV = 9,
  TF_LINALG_DET = 10,
  TF_LINALG_SLOGDET = 11,
  TF_LINALG_LSTSQ = 12,
  TF_LINALG_PINV = 13,
  TF_LINALG_MATRIX_NORM = 14,
  TF_LINALG_VECTOR_NORM = 15
} tf_linalg_op;

/** tf_linalg_args.flags (0: the defaults). */
#define TF_LINALG_VALUES_ONLY 0x1u   /**< SVD, EIGH, EIG: no vectors */
#define TF_LINALG_FULL 0x2u          /**< SVD: full U and Vh; QR: complete Q */
#define TF_LINALG_UPPER 0x4u         /**< TRIANGULAR_SOLVE: A's upper triangle */
#define TF_LINALG_UNIT_DIAGONAL 0x8u /**< TRIANGULAR_SOLVE: A's diagonal is 1 */
#define TF_LINALG_TRANSPOSE 0x10u    /**< TRIANGULAR_SOLVE: solve A^T X = B */
#define TF_LINALG_ADJOINT 0x20u      /**< TRIANGULAR_SOLVE: solve A^H X = B */

/** Norm orders (numpy's `ord`). */
typedef enum tf_norm {
  TF_NORM_DEFAULT = 0, /**< fro for MATRIX_NORM, 2 for VECTOR_NORM */
  TF_NORM_FRO = 1,
  TF_NORM_NUC = 2,
  TF_NORM_ONE = 3,
  TF_NORM_NEG_ONE = 4,
  TF_NORM_TWO = 5,
  TF_NORM_NEG_TWO = 6,
  TF_NORM_INF = 7,
  TF_NORM_NEG_INF = 8,
  TF_NORM_P = 9 /**< VECTOR_NORM: sum(|x|^p)^(1/p) with tf_linalg_args.p */
} tf_norm;

/** Arguments of tf_linalg and tf_linalg_results. */
typedef struct tf_linalg_args {
  size_t struct_size;
  tf_runtime* runtime;
  int32_t op;     /**< a tf_linalg_op */
  uint32_t flags; /**< TF_LINALG_* flags */
  int32_t norm;   /**< a tf_norm (norms only) */
  int32_t reserved0;
  double p;                       /**< VECTOR_NORM with TF_NORM_P: any finite p, as numpy's ord
                                     (0: the count of non-zeros; negative: sum(|x|^p)^(1/p));
                                     0 for every other operation and norm */
  double rcond;                   /**< LSTSQ, PINV: singular values below rcond * max(S) count as
                                     zero; <= 0 (the default): eps * max(m, n); NaN is refused;
                                     0 for every other operation */
  const tf_tensor* const* inputs; /**< 1 operand, 2 for SOLVE, TRIANGULAR_SOLVE, LSTSQ */
  size_t num_inputs;
  /** One caller-owned array per result, written in place, each of exactly the
   *  result's dtype and shape (tf_linalg_results says which). */
  const tf_tensor* const* outputs;
  size_t num_outputs;
} tf_linalg_args;
#define TF_LINALG_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_linalg_args, num_outputs)

/** Runs one linalg operation on `inputs` into `outputs`. Errors:
 *  TF_CODE_INVALID_ARGUMENT (null pointers, unknown op, flags or norm, a
 *  wrong operand or output count), TF_CODE_SHAPE_MISMATCH (operand shapes the
 *  operation does not take, an output of another shape), TF_CODE_DTYPE_MISMATCH,
 *  TF_CODE_ALIAS_CONFLICT (an output overlapping itself, an input or another
 *  output), and at run time TF_CODE_NON_FINITE_INPUT (NaN or Inf, except
 *  norms), TF_CODE_SINGULAR_MATRIX, TF_CODE_NOT_POSITIVE_DEFINITE,
 *  TF_CODE_NO_CONVERGENCE. The outputs are written only when every result
 *  was computed and fits them: on any error they are unchanged. Thread-safe. */
TF_API tf_code tf_linalg(const tf_linalg_args* args, tf_error** error);

/** The results tf_linalg would produce for `args` (its outputs are ignored;
 *  of the inputs only dtype and shape are read): *count results, the first
 *  min(*count, capacity) described in `results` (each with struct_size set by
 *  the caller). Errors as tf_linalg's argument errors. Thread-safe. */
TF_API tf_code tf_linalg_results(const tf_linalg_args* args, tf_result_info* results, size_t capacity, size_t* count,
                                 tf_error** error);

/* --- FFT ---------------------------------------------------------------- */

/** Transforms (numpy.fft's, n-dimensional over the given axes). */
typedef enum tf_fft_kind {
  TF_FFT_FFT = 1,   /**< complex (or real, promoted) -> complex */
  TF_FFT_IFFT = 2,  /**< complex (or real, promoted) -> complex */
  TF_FFT_RFFT = 3,  /**< real -> complex, the last axis keeps n/2+1 */
  TF_FFT_IRFFT = 4, /**< complex -> real, inverse of RFFT */
  TF_FFT_HFFT = 5,  /**< complex -> real (numpy hfft) */
  TF_FFT_IHFFT = 6  /**< real -> complex (numpy ihfft) */
} tf_fft_kind;

/** Normalisation (numpy's `norm`). */
typedef enum tf_fft_norm {
  TF_FFT_NORM_BACKWARD = 0, /**< 1/N on the inverse-type transforms */
  TF_FFT_NORM_ORTHO = 1,    /**< 1/sqrt(N) both ways */
  TF_FFT_NORM_FORWARD = 2   /**< 1/N on the forward-type transforms */
} tf_fft_norm;

/** Arguments of tf_fft and tf_fft_result. */
typedef struct tf_fft_args {
  size_t struct_size;
  tf_runtime* runtime;
  int32_t kind; /**< a tf_fft_kind */
  int32_t norm; /**< a tf_fft_norm */
  /** The axes to transform (negative: from the end); NULL with num_axes 0:
   *  the last axis; NULL with num_axes k > 0: the last k axes (numpy's s=
   *  without axes=). num_axes is at most the input's ndim (the axes are
   *  distinct). */
  const int64_t* axes;
  size_t num_axes;
  /** NULL, or one transform length per axis (numpy's n / s; -1 keeps the
   *  default): the input is zero-padded or cropped to it. Lengths need
   *  num_axes >= 1: numpy's irfft(x, n=8) is axes NULL, num_axes 1,
   *  lengths {8}. */
  const int64_t* lengths;
  /** F32/F64 (real kinds, or promoted for FFT/IFFT) or C64/C128; F32 and
   *  C64 give C64 / F32 results, F64 and C128 give C128 / F64. */
  const tf_tensor* input;
  /** The result, written in place, of exactly tf_fft_result's dtype and shape. */
  const tf_tensor* output;
} tf_fft_args;
#define TF_FFT_ARGS_SIZE_V1 TF_STRUCT_SIZE(tf_fft_args, output)

/** Transforms `input` into `output` on the runtime's FFT engine (FFTW).
 *  Errors: TF_CODE_INVALID_ARGUMENT (null pointers, unknown kind or norm,
 *  repeated axes, a length given in `lengths` below 1),
 *  TF_CODE_AXIS_OUT_OF_RANGE, TF_CODE_SHAPE_MISMATCH (an output of another
 *  shape; a transform length below 1 taken from the input: an empty axis,
 *  or the 1-point irfft/hfft default of an axis of 1),
 *  TF_CODE_DTYPE_MISMATCH, TF_CODE_ALIAS_CONFLICT. On any error the output
 *  is unchanged. Thread-safe. */
TF_API tf_code tf_fft(const tf_fft_args* args, tf_error** error);

/** The dtype and shape tf_fft would produce for `args` (its output is
 *  ignored; of the input only dtype and shape are read). Thread-safe. */
TF_API tf_code tf_fft_result(const tf_fft_args* args, tf_result_info* result, tf_error** error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENFERRO_C_TENFERRO_H_ */
