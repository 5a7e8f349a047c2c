/* Tests of tf_linalg and tf_fft (C99, linked to libtenferro_c.so alone).
 * Results are checked by what defines them (A = U S Vh, Q R = A, A V = V w,
 * A X = B, the DFT sum) with naive C loops, in row-major and strided
 * outputs; every error path checks the code, a piece of the message and
 * that the outputs were left unchanged. Exit status 0 when every check
 * passed. */
#include "c_api_test_support.h"

static const double kPi = 3.14159265358979323846;

/* Element (i, j) of a matrix at `base` with strides (rs, cs) in elements. */
static double complex at(const void* base, int dtype, int64_t rs, int64_t cs, int64_t i, int64_t j) {
  return get(base, dtype, i * rs + j * cs);
}

static double real_tol(int dtype) { return (dtype == TF_DTYPE_F32 || dtype == TF_DTYPE_C64) ? 2e-4 : 1e-10; }
static int real_of(int dtype) {
  return dtype == TF_DTYPE_C64 ? TF_DTYPE_F32 : dtype == TF_DTYPE_C128 ? TF_DTYPE_F64 : dtype;
}

static tf_linalg_args linalg_args(tf_runtime* rt, int op, unsigned flags, const tf_tensor* const* inputs,
                                  size_t num_inputs, const tf_tensor* const* outputs, size_t num_outputs) {
  tf_linalg_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.runtime = rt;
  a.op = op;
  a.flags = flags;
  a.inputs = inputs;
  a.num_inputs = num_inputs;
  a.outputs = outputs;
  a.num_outputs = num_outputs;
  return a;
}

static tf_fft_args fft_args(tf_runtime* rt, int kind, const int64_t* axes, size_t num_axes, const tf_tensor* in,
                            const tf_tensor* out) {
  tf_fft_args a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.runtime = rt;
  a.kind = kind;
  a.axes = axes;
  a.num_axes = num_axes;
  a.input = in;
  a.output = out;
  return a;
}

/* The results tf_linalg_results reports match `count` shapes (ndim, dims). */
static void expect_results(const tf_linalg_args* args, size_t count, const int* dtypes, const int* ndims,
                           const int64_t (*shapes)[3]) {
  tf_result_info info[3];
  size_t found = 0, j;
  int a;
  tf_error* error = NULL;
  for (j = 0; j < 3; ++j) {
    memset(&info[j], 0, sizeof info[j]);
    info[j].struct_size = sizeof info[j];
  }
  if (!EXPECT_OK(tf_linalg_results(args, info, 3, &found, &error), error)) return;
  CHECK(found == count);
  for (j = 0; j < count && j < found; ++j) {
    CHECK(info[j].dtype == dtypes[j]);
    CHECK(info[j].ndim == ndims[j]);
    for (a = 0; a < ndims[j] && a < info[j].ndim; ++a) CHECK(info[j].shape[a] == shapes[j][a]);
  }
}

/* --- linear algebra ------------------------------------------------------ */

/* A = U diag(S) Vh for a 5 x 3 matrix: thin (U row-major) and full (U
 * column-major, a strided output). */
static void check_svd(tf_runtime* rt, int dtype, int full) {
  enum { M = 5, N = 3, K = 3 };
  const int64_t ushape[2] = {M, full ? M : K}, sshape[1] = {K}, vshape[2] = {full ? N : K, N}, ashape[2] = {M, N};
  const int64_t ucols = ushape[1];
  const int64_t ustrides[2] = {1, M}; /* column-major U */
  void* a = random_buffer(dtype, M * N);
  void* u = calloc((size_t)(M * M), elem_size(dtype));
  void* s = calloc(K, elem_size(real_of(dtype)));
  void* vh = calloc((size_t)(N * N), elem_size(dtype));
  tf_tensor ta = make_tensor(a, dtype, 2, ashape, NULL);
  tf_tensor tu = make_tensor(u, dtype, 2, ushape, full ? ustrides : NULL);
  tf_tensor ts = make_tensor(s, real_of(dtype), 1, sshape, NULL);
  tf_tensor tv = make_tensor(vh, dtype, 2, vshape, NULL);
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* out[3] = {&tu, &ts, &tv};
  tf_linalg_args args = linalg_args(rt, TF_LINALG_SVD, full ? TF_LINALG_FULL : 0u, in, 1, out, 3);
  const int dtypes[3] = {dtype, real_of(dtype), dtype}, ndims[3] = {2, 1, 2};
  const int64_t shapes[3][3] = {{ushape[0], ushape[1], 0}, {K, 0, 0}, {vshape[0], vshape[1], 0}};
  tf_error* error = NULL;
  int64_t i, j, l;
  const int64_t urs = full ? 1 : ucols, ucs = full ? M : 1;
  expect_results(&args, 3, dtypes, ndims, shapes);
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (l = 0; l < K; ++l) {
      CHECK(creal(get(s, real_of(dtype), l)) >= 0.0);
      if (l > 0) CHECK(creal(get(s, real_of(dtype), l)) <= creal(get(s, real_of(dtype), l - 1)));
    }
    for (i = 0; i < M; ++i) {
      for (j = 0; j < N; ++j) {
        double complex sum = 0.0;
        for (l = 0; l < K; ++l) sum += at(u, dtype, urs, ucs, i, l) * get(s, real_of(dtype), l) * at(vh, dtype, N, 1, l, j);
        CHECK(cabs(sum - get(a, dtype, i * N + j)) <= real_tol(dtype) * 10);
      }
    }
  }
  free(a);
  free(u);
  free(s);
  free(vh);
}

/* Q R = A with R upper triangular, 4 x 6 (m < n) reduced. */
static void check_qr(tf_runtime* rt, int dtype) {
  enum { M = 4, N = 6, K = 4 };
  const int64_t ashape[2] = {M, N}, qshape[2] = {M, K}, rshape[2] = {K, N};
  void* a = random_buffer(dtype, M * N);
  void* q = calloc(M * K, elem_size(dtype));
  void* r = calloc(K * N, elem_size(dtype));
  tf_tensor ta = make_tensor(a, dtype, 2, ashape, NULL), tq = make_tensor(q, dtype, 2, qshape, NULL),
            tr = make_tensor(r, dtype, 2, rshape, NULL);
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* out[2] = {&tq, &tr};
  tf_linalg_args args = linalg_args(rt, TF_LINALG_QR, 0u, in, 1, out, 2);
  tf_error* error = NULL;
  int64_t i, j, l;
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (i = 0; i < K; ++i)
      for (j = 0; j < i; ++j) CHECK(cabs(get(r, dtype, i * N + j)) == 0.0);
    for (i = 0; i < M; ++i) {
      for (j = 0; j < N; ++j) {
        double complex sum = 0.0;
        for (l = 0; l < K; ++l) sum += get(q, dtype, i * K + l) * get(r, dtype, l * N + j);
        CHECK(cabs(sum - get(a, dtype, i * N + j)) <= real_tol(dtype) * 10);
      }
    }
  }
  free(a);
  free(q);
  free(r);
}

/* A V = V diag(w) for a Hermitian A, w ascending. */
static void check_eigh(tf_runtime* rt, int dtype) {
  enum { N = 4 };
  const int64_t ashape[2] = {N, N}, wshape[1] = {N};
  void* b = random_buffer(dtype, N * N);
  void* a = malloc(N * N * elem_size(dtype));
  void* w = calloc(N, elem_size(real_of(dtype)));
  void* v = calloc(N * N, elem_size(dtype));
  tf_tensor ta, tw, tv;
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* out[2] = {&tw, &tv};
  tf_linalg_args args;
  tf_error* error = NULL;
  int64_t i, j, l;
  for (i = 0; i < N; ++i)
    for (j = 0; j < N; ++j) put(a, dtype, i * N + j, get(b, dtype, i * N + j) + conj(get(b, dtype, j * N + i)));
  ta = make_tensor(a, dtype, 2, ashape, NULL);
  tw = make_tensor(w, real_of(dtype), 1, wshape, NULL);
  tv = make_tensor(v, dtype, 2, ashape, NULL);
  args = linalg_args(rt, TF_LINALG_EIGH, 0u, in, 1, out, 2);
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (l = 1; l < N; ++l) CHECK(creal(get(w, real_of(dtype), l)) >= creal(get(w, real_of(dtype), l - 1)));
    for (l = 0; l < N; ++l) {
      for (i = 0; i < N; ++i) {
        double complex av = 0.0;
        for (j = 0; j < N; ++j) av += get(a, dtype, i * N + j) * get(v, dtype, j * N + l);
        CHECK(cabs(av - get(w, real_of(dtype), l) * get(v, dtype, i * N + l)) <= real_tol(dtype) * 20);
      }
    }
  }
  free(a);
  free(b);
  free(w);
  free(v);
}

/* A X = B over a batch of two 3 x 3 systems, X written column-major. With
 * `broadcast`, one A for the whole batch, given with stride 0 along the
 * batch axis (as numpy.broadcast_to gives it). */
static void check_solve_batched(tf_runtime* rt, int dtype, int broadcast) {
  enum { B = 2, N = 3, R = 2 };
  const int64_t ashape[3] = {B, N, N}, bshape[3] = {B, N, R};
  const int64_t astrides[3] = {broadcast ? 0 : N * N, N, 1};
  const int64_t xstrides[3] = {N * R, 1, N}; /* each matrix column-major */
  const int64_t a_batch = broadcast ? 1 : B;
  void* a = random_buffer(dtype, a_batch * N * N);
  void* rhs = random_buffer(dtype, B * N * R);
  void* x = calloc(B * N * R, elem_size(dtype));
  tf_tensor ta, tb, tx;
  const tf_tensor* in[2] = {&ta, &tb};
  const tf_tensor* out[1] = {&tx};
  tf_linalg_args args;
  tf_error* error = NULL;
  int64_t b, i, j, l;
  for (b = 0; b < a_batch; ++b)
    for (i = 0; i < N; ++i) put(a, dtype, b * N * N + i * N + i, get(a, dtype, b * N * N + i * N + i) + 4.0);
  ta = make_tensor(a, dtype, 3, ashape, astrides);
  tb = make_tensor(rhs, dtype, 3, bshape, NULL);
  tx = make_tensor(x, dtype, 3, bshape, xstrides);
  args = linalg_args(rt, TF_LINALG_SOLVE, 0u, in, 2, out, 1);
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (b = 0; b < B; ++b) {
      const int64_t ab = broadcast ? 0 : b;
      for (i = 0; i < N; ++i) {
        for (j = 0; j < R; ++j) {
          double complex sum = 0.0;
          for (l = 0; l < N; ++l) sum += get(a, dtype, ab * N * N + i * N + l) * get(x, dtype, b * N * R + j * N + l);
          CHECK(cabs(sum - get(rhs, dtype, b * N * R + i * R + j)) <= real_tol(dtype) * 10);
        }
      }
    }
  }
  free(a);
  free(rhs);
  free(x);
}

/* One output of a one-input operation on `a` (n x n, double). */
static int run1(tf_runtime* rt, int op, const double* a, int64_t n, void* out, int out_dtype, int32_t out_ndim,
                const int64_t* out_shape) {
  const int64_t ashape[2] = {n, n};
  tf_tensor ta = make_tensor((void*)a, TF_DTYPE_F64, 2, ashape, NULL);
  tf_tensor to = make_tensor(out, out_dtype, out_ndim, out_shape, NULL);
  const tf_tensor* in[1] = {&ta};
  const tf_tensor* outs[1] = {&to};
  tf_linalg_args args = linalg_args(rt, op, 0u, in, 1, outs, 1);
  tf_error* error = NULL;
  return EXPECT_OK(tf_linalg(&args, &error), error);
}

/* Cholesky, inverse, determinant, slogdet and LU of a 3 x 3 SPD matrix. */
static void check_small_factorizations(tf_runtime* rt) {
  const double a[9] = {4, 2, 0.4, 2, 5, 1, 0.4, 1, 3};
  const double det = 4 * (5 * 3 - 1 * 1) - 2 * (2 * 3 - 1 * 0.4) + 0.4 * (2 * 1 - 5 * 0.4);
  const int64_t mshape[2] = {3, 3}, vshape[1] = {3};
  double l[9], inv[9], d = 0.0, sign = 0.0, logabs = 0.0, lu[9];
  int64_t pivots[3], perm[3];
  int i, j, k;
  memset(l, 0xff, sizeof l); /* NaN bytes: the upper triangle must be written */
  if (run1(rt, TF_LINALG_CHOLESKY, a, 3, l, TF_DTYPE_F64, 2, mshape)) {
    for (i = 0; i < 3; ++i) {
      for (j = 0; j < 3; ++j) {
        double sum = 0.0;
        for (k = 0; k < 3; ++k) sum += l[i * 3 + k] * l[j * 3 + k];
        CHECK(fabs(sum - a[i * 3 + j]) < 1e-12);
        if (j > i) CHECK(l[i * 3 + j] == 0.0);
      }
    }
  }
  if (run1(rt, TF_LINALG_INV, a, 3, inv, TF_DTYPE_F64, 2, mshape)) {
    for (i = 0; i < 3; ++i) {
      for (j = 0; j < 3; ++j) {
        double sum = 0.0;
        for (k = 0; k < 3; ++k) sum += a[i * 3 + k] * inv[k * 3 + j];
        CHECK(fabs(sum - (i == j ? 1.0 : 0.0)) < 1e-12);
      }
    }
  }
  if (run1(rt, TF_LINALG_DET, a, 3, &d, TF_DTYPE_F64, 0, NULL)) CHECK(fabs(d - det) < 1e-12 * fabs(det));
  {
    const int64_t ashape[2] = {3, 3};
    tf_tensor ta = make_tensor((void*)a, TF_DTYPE_F64, 2, ashape, NULL);
    tf_tensor ts = make_tensor(&sign, TF_DTYPE_F64, 0, NULL, NULL), tl = make_tensor(&logabs, TF_DTYPE_F64, 0, NULL, NULL);
    tf_tensor tlu = make_tensor(lu, TF_DTYPE_F64, 2, mshape, NULL), tp = make_tensor(pivots, TF_DTYPE_I64, 1, vshape, NULL),
              tq = make_tensor(perm, TF_DTYPE_I64, 1, vshape, NULL);
    const tf_tensor* in[1] = {&ta};
    const tf_tensor* slog[2] = {&ts, &tl};
    const tf_tensor* luo[3] = {&tlu, &tp, &tq};
    tf_linalg_args args = linalg_args(rt, TF_LINALG_SLOGDET, 0u, in, 1, slog, 2);
    tf_error* error = NULL;
    if (EXPECT_OK(tf_linalg(&args, &error), error)) CHECK(fabs(sign * exp(logabs) - det) < 1e-12 * fabs(det));
    args = linalg_args(rt, TF_LINALG_LU, 0u, in, 1, luo, 3);
    if (EXPECT_OK(tf_linalg(&args, &error), error)) {
      /* A[perm[i], j] = sum_k L[i,k] U[k,j] (L unit lower, U upper, both in lu). */
      for (i = 0; i < 3; ++i) {
        CHECK(perm[i] >= 0 && perm[i] < 3);
        CHECK(pivots[i] >= i && pivots[i] < 3);
        for (j = 0; j < 3; ++j) {
          double sum = 0.0;
          for (k = 0; k <= i && k <= j; ++k) sum += (k == i ? 1.0 : lu[i * 3 + k]) * lu[k * 3 + j];
          CHECK(fabs(sum - a[perm[i] * 3 + j]) < 1e-12);
        }
      }
    }
  }
}

/* Least squares (normal equations hold), pseudo-inverse (P A = I for full
 * column rank) and norms against sums. */
static void check_lstsq_pinv_norms(tf_runtime* rt) {
  enum { M = 6, N = 3 };
  const int64_t ashape[2] = {M, N}, bshape[2] = {M, 1}, xshape[2] = {N, 1}, pshape[2] = {N, M}, vshape[1] = {M};
  double* a = random_buffer(TF_DTYPE_F64, M * N);
  double* b = random_buffer(TF_DTYPE_F64, M);
  double x[N], p[N * M], fro = 0.0, expected_fro = 0.0, pnorm = 0.0, expected_p = 0.0;
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 2, ashape, NULL), tb = make_tensor(b, TF_DTYPE_F64, 2, bshape, NULL);
  tf_tensor tx = make_tensor(x, TF_DTYPE_F64, 2, xshape, NULL), tp = make_tensor(p, TF_DTYPE_F64, 2, pshape, NULL);
  tf_tensor tf = make_tensor(&fro, TF_DTYPE_F64, 0, NULL, NULL), tn = make_tensor(&pnorm, TF_DTYPE_F64, 0, NULL, NULL);
  tf_tensor tv = make_tensor(b, TF_DTYPE_F64, 1, vshape, NULL);
  const tf_tensor* ab[2] = {&ta, &tb};
  const tf_tensor* aa[1] = {&ta};
  const tf_tensor* vv[1] = {&tv};
  const tf_tensor* ox[1] = {&tx};
  const tf_tensor* op[1] = {&tp};
  const tf_tensor* of[1] = {&tf};
  const tf_tensor* on[1] = {&tn};
  tf_linalg_args args = linalg_args(rt, TF_LINALG_LSTSQ, 0u, ab, 2, ox, 1);
  tf_error* error = NULL;
  int i, j, k;
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (j = 0; j < N; ++j) { /* A^T (A x - b) = 0 */
      double g = 0.0;
      for (i = 0; i < M; ++i) {
        double r = -b[i];
        for (k = 0; k < N; ++k) r += a[i * N + k] * x[k];
        g += a[i * N + j] * r;
      }
      CHECK(fabs(g) < 1e-12);
    }
  }
  args = linalg_args(rt, TF_LINALG_PINV, 0u, aa, 1, op, 1);
  args.rcond = NAN; /* refused, not read as the default */
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "rcond is NaN");
  args.rcond = 0.0;
  if (EXPECT_OK(tf_linalg(&args, &error), error)) {
    for (i = 0; i < N; ++i) {
      for (j = 0; j < N; ++j) {
        double sum = 0.0;
        for (k = 0; k < M; ++k) sum += p[i * M + k] * a[k * N + j];
        CHECK(fabs(sum - (i == j ? 1.0 : 0.0)) < 1e-12);
      }
    }
  }
  for (i = 0; i < M * N; ++i) expected_fro += a[i] * a[i];
  args = linalg_args(rt, TF_LINALG_MATRIX_NORM, 0u, aa, 1, of, 1);
  if (EXPECT_OK(tf_linalg(&args, &error), error)) CHECK(fabs(fro - sqrt(expected_fro)) < 1e-12);
  for (i = 0; i < M; ++i) expected_p += pow(fabs(b[i]), 3.0);
  args = linalg_args(rt, TF_LINALG_VECTOR_NORM, 0u, vv, 1, on, 1);
  args.norm = TF_NORM_P;
  args.p = 3.0;
  if (EXPECT_OK(tf_linalg(&args, &error), error)) CHECK(fabs(pnorm - cbrt(expected_p)) < 1e-12);
  /* An option of another operation is refused, as a norm is, not ignored. */
  args.norm = TF_NORM_TWO;
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "only TF_LINALG_VECTOR_NORM with TF_NORM_P takes a p");
  args = linalg_args(rt, TF_LINALG_MATRIX_NORM, 0u, aa, 1, of, 1);
  args.rcond = 1e-3;
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "rcond is 0.001; only TF_LINALG_LSTSQ and");
  free(a);
  free(b);
}

static int unchanged(const double* v, int n, double sentinel) {
  int i;
  for (i = 0; i < n; ++i)
    if (v[i] != sentinel) return 0;
  return 1;
}

static void check_linalg_errors(tf_runtime* rt) {
  const int64_t ashape[2] = {3, 3}, bad2[2] = {2, 2}, sshape[1] = {3}, sbad[1] = {2}, rect[2] = {3, 4};
  double a[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1}; /* singular: row 1 = 2 row 0 */
  double u[16], s[4], vh[16], x[9];
  float uf[9];
  int32_t ai[9] = {0};
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 2, ashape, NULL), tr = make_tensor(a, TF_DTYPE_F64, 2, rect, NULL);
  tf_tensor tu = make_tensor(u, TF_DTYPE_F64, 2, ashape, NULL), ts = make_tensor(s, TF_DTYPE_F64, 1, sshape, NULL);
  tf_tensor tv = make_tensor(vh, TF_DTYPE_F64, 2, ashape, NULL), tx = make_tensor(x, TF_DTYPE_F64, 2, ashape, NULL);
  tf_tensor tsb = make_tensor(s, TF_DTYPE_F64, 1, sbad, NULL), tub = make_tensor(u, TF_DTYPE_F64, 2, bad2, NULL);
  tf_tensor tuf = make_tensor(uf, TF_DTYPE_F32, 2, ashape, NULL), tai = make_tensor(ai, TF_DTYPE_I32, 2, ashape, NULL);
  tf_tensor tsv = make_tensor(u + 4, TF_DTYPE_F64, 1, sshape, NULL); /* inside u */
  const tf_tensor* in1[1] = {&ta};
  const tf_tensor* in2[2] = {&ta, &ta};
  const tf_tensor* svd_out[3] = {&tu, &ts, &tv};
  const tf_tensor* svd_bad_s[3] = {&tu, &tsb, &tv};
  const tf_tensor* svd_bad_u[3] = {&tub, &ts, &tv};
  const tf_tensor* svd_f32[3] = {&tuf, &ts, &tv};
  const tf_tensor* svd_overlap[3] = {&tu, &tsv, &tv};
  const tf_tensor* one_x[1] = {&tx};
  const tf_tensor* in_rect[1] = {&tr};
  const tf_tensor* in_int[1] = {&tai};
  tf_linalg_args args;
  tf_result_info info;
  size_t count = 0;
  tf_error* error = NULL;
  int i;
  for (i = 0; i < 16; ++i) u[i] = vh[i] = -7.0;
  for (i = 0; i < 9; ++i) x[i] = -7.0;
  for (i = 0; i < 4; ++i) s[i] = -7.0;

  EXPECT_ERROR(tf_linalg(NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "args is NULL");
  args = linalg_args(rt, 99, 0u, in1, 1, svd_out, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "op is 99");
  args = linalg_args(rt, TF_LINALG_QR, TF_LINALG_VALUES_ONLY, in1, 1, svd_out, 2);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "flags 0x1 for TF_LINALG_QR");
  args = linalg_args(rt, TF_LINALG_SVD, TF_LINALG_VALUES_ONLY | TF_LINALG_FULL, in1, 1, svd_out, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "exclude each other");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in2, 2, svd_out, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "takes 1 operand");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_out, 2);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "gives 3 results");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_bad_s, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "outputs[1] has shape [2]");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_bad_u, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "outputs[0] has shape [2, 2]");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_f32, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "outputs[0] is float32");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_overlap, 3);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "overlaps");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_out, 3);
  args.reserved0 = 1;
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "reserved0");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_out, 3);
  args.norm = TF_NORM_TWO;
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "take a norm");
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, svd_out, 3);
  args.struct_size = 8;
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "struct_size");
  args = linalg_args(rt, TF_LINALG_INV, 0u, in_rect, 1, one_x, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "square");
  args = linalg_args(rt, TF_LINALG_INV, 0u, in_int, 1, one_x, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "int32");
  /* Run-time failures: a singular system, a NaN. */
  args = linalg_args(rt, TF_LINALG_SOLVE, 0u, in2, 2, one_x, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_SINGULAR_MATRIX, "singular");
  a[4] = NAN;
  args = linalg_args(rt, TF_LINALG_INV, 0u, in1, 1, one_x, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_NON_FINITE_INPUT, "");
  CHECK(unchanged(u, 16, -7.0) && unchanged(s, 4, -7.0) && unchanged(vh, 16, -7.0) && unchanged(x, 9, -7.0));
  /* The results query. */
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  args = linalg_args(rt, TF_LINALG_SVD, 0u, in1, 1, NULL, 0);
  if (EXPECT_OK(tf_linalg_results(&args, &info, 1, &count, &error), error)) {
    CHECK(count == 3);
    CHECK(info.ndim == 2 && info.shape[0] == 3 && info.shape[1] == 3 && info.dtype == TF_DTYPE_F64);
  }
  EXPECT_ERROR(tf_linalg_results(&args, NULL, 1, &count, &error), error, TF_CODE_INVALID_ARGUMENT, "results is NULL");
  EXPECT_ERROR(tf_linalg_results(&args, NULL, 0, NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "count is NULL");
  /* A bad struct_size names the entry; flags on an op without options name the op. */
  {
    tf_result_info three[3];
    memset(three, 0, sizeof three);
    three[0].struct_size = three[1].struct_size = sizeof three[0];
    EXPECT_ERROR(tf_linalg_results(&args, three, 3, &count, &error), error, TF_CODE_INVALID_ARGUMENT,
                 "results[2].struct_size is 0; expected sizeof(tf_result_info)");
  }
  args = linalg_args(rt, TF_LINALG_SOLVE, TF_LINALG_UPPER, in2, 2, one_x, 1);
  EXPECT_ERROR(tf_linalg(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "flags 0x4 for linalg.solve");
}

/* --- FFT ------------------------------------------------------------------ */

/* sum_t x[t] exp(sign 2 pi i t k / n) over one axis of a strided array. */
static double complex dft(const void* x, int dtype, int64_t n, int64_t stride, int64_t k, double sign) {
  double complex sum = 0.0;
  int64_t t;
  for (t = 0; t < n; ++t) sum += get(x, dtype, t * stride) * cexp(sign * 2.0 * kPi * I * (double)(t * k) / (double)n);
  return sum;
}

static void check_fft(tf_runtime* rt) {
  /* fft over the last axis of a [3, 8] complex array, into a column-major
   * output; then its ortho inverse back to the input. */
  const int64_t shape[2] = {3, 8}, colmajor[2] = {1, 3}, axis_last[1] = {-1};
  const int64_t rshape[2] = {4, 6}, rout[2] = {4, 4}, axes01[2] = {0, 1};
  void* x = random_buffer(TF_DTYPE_C128, 24);
  void* y = calloc(24, sizeof(double complex));
  void* z = calloc(24, sizeof(double complex));
  void* r = random_buffer(TF_DTYPE_F64, 24);
  void* rf = calloc(16, sizeof(double complex));
  void* back = calloc(24, sizeof(double));
  tf_tensor tx = make_tensor(x, TF_DTYPE_C128, 2, shape, NULL), ty = make_tensor(y, TF_DTYPE_C128, 2, shape, colmajor);
  tf_tensor tz = make_tensor(z, TF_DTYPE_C128, 2, shape, NULL), tr = make_tensor(r, TF_DTYPE_F64, 2, rshape, NULL);
  tf_tensor trf = make_tensor(rf, TF_DTYPE_C128, 2, rout, NULL), tback = make_tensor(back, TF_DTYPE_F64, 2, rshape, NULL);
  tf_fft_args args = fft_args(rt, TF_FFT_FFT, axis_last, 1, &tx, &ty);
  tf_result_info info;
  tf_error* error = NULL;
  int64_t i, k, j;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (EXPECT_OK(tf_fft_result(&args, &info, &error), error)) {
    CHECK(info.dtype == TF_DTYPE_C128 && info.ndim == 2 && info.shape[0] == 3 && info.shape[1] == 8);
  }
  if (EXPECT_OK(tf_fft(&args, &error), error)) {
    for (i = 0; i < 3; ++i)
      for (k = 0; k < 8; ++k)
        CHECK(cabs(get(y, TF_DTYPE_C128, i + 3 * k) - dft((double complex*)x + i * 8, TF_DTYPE_C128, 8, 1, k, -1.0)) <
              1e-12);
  }
  args = fft_args(rt, TF_FFT_IFFT, NULL, 0, &ty, &tz);
  if (EXPECT_OK(tf_fft(&args, &error), error)) {
    for (i = 0; i < 24; ++i) CHECK(cabs(get(z, TF_DTYPE_C128, i) - get(x, TF_DTYPE_C128, i)) < 1e-12);
  }
  args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &ty);
  args.norm = TF_FFT_NORM_ORTHO;
  if (EXPECT_OK(tf_fft(&args, &error), error)) {
    CHECK(cabs(get(y, TF_DTYPE_C128, 0) - dft(x, TF_DTYPE_C128, 8, 1, 0, -1.0) / sqrt(8.0)) < 1e-12);
  }
  /* rfft over both axes of a real [4, 6]: [4, 4] = 2-D DFT's first 6/2+1
   * columns; irfft with lengths (4, 6) gives the input back. */
  args = fft_args(rt, TF_FFT_RFFT, axes01, 2, &tr, &trf);
  if (EXPECT_OK(tf_fft(&args, &error), error)) {
    for (i = 0; i < 4; ++i) {
      for (k = 0; k < 4; ++k) {
        double complex sum = 0.0;
        for (j = 0; j < 4; ++j) sum += dft((double*)r + j * 6, TF_DTYPE_F64, 6, 1, k, -1.0) * cexp(-2.0 * kPi * I * (double)(j * i) / 4.0);
        CHECK(cabs(get(rf, TF_DTYPE_C128, i * 4 + k) - sum) < 1e-11);
      }
    }
  }
  {
    const int64_t lengths[2] = {4, 6};
    args = fft_args(rt, TF_FFT_IRFFT, axes01, 2, &trf, &tback);
    args.lengths = lengths;
    if (EXPECT_OK(tf_fft(&args, &error), error)) {
      for (i = 0; i < 24; ++i) CHECK(fabs(((double*)back)[i] - ((double*)r)[i]) < 1e-12);
    }
    /* axes NULL with num_axes 2: the last two axes (numpy's s= alone). */
    memset(back, 0, 24 * sizeof(double));
    args = fft_args(rt, TF_FFT_IRFFT, NULL, 2, &trf, &tback);
    args.lengths = lengths;
    if (EXPECT_OK(tf_fft(&args, &error), error)) {
      for (i = 0; i < 24; ++i) CHECK(fabs(((double*)back)[i] - ((double*)r)[i]) < 1e-12);
    }
  }
  /* float32 input: a complex64 result. */
  {
    float xf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float complex yf[5];
    const int64_t n8[1] = {8}, n5[1] = {5};
    tf_tensor txf = make_tensor(xf, TF_DTYPE_F32, 1, n8, NULL), tyf = make_tensor(yf, TF_DTYPE_C64, 1, n5, NULL);
    args = fft_args(rt, TF_FFT_RFFT, NULL, 0, &txf, &tyf);
    if (EXPECT_OK(tf_fft_result(&args, &info, &error), error)) CHECK(info.dtype == TF_DTYPE_C64 && info.shape[0] == 5);
    if (EXPECT_OK(tf_fft(&args, &error), error)) CHECK(cabsf(yf[0] - 36.0f) < 1e-5f && cabsf(yf[4] + 4.0f) < 1e-5f);
  }
  /* Errors; the output stays as it was. */
  {
    const int64_t axis5[1] = {5}, twice[2] = {1, 1};
    double complex before = get(y, TF_DTYPE_C128, 0);
    tf_tensor tyr = make_tensor(r, TF_DTYPE_F64, 2, shape, NULL);
    args = fft_args(rt, 0, NULL, 0, &tx, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "kind is 0");
    /* More axes than the input has is refused before num_axes sizes
       anything (SIZE_MAX used to grow without bound). */
    args = fft_args(rt, TF_FFT_FFT, NULL, (size_t)-1, &tx, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "expected at most the input's ndim, 2");
    EXPECT_ERROR(tf_fft_result(&args, &info, &error), error, TF_CODE_INVALID_ARGUMENT, "num_axes is");
    args = fft_args(rt, TF_FFT_FFT, axis5, 1, &tx, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_AXIS_OUT_OF_RANGE, "");
    args = fft_args(rt, TF_FFT_FFT, twice, 2, &tx, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "");
    /* tf_fft_args has one input and one output: messages name them so. */
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &tyr);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "output is float64");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &trf);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "output has shape [4, 4]");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, NULL, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "input is NULL");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, NULL);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "output is NULL");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &ty);
    EXPECT_ERROR(tf_fft_result(&args, NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "result is NULL");
    args = fft_args(rt, TF_FFT_RFFT, NULL, 0, &tx, &ty);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &ty);
    args.norm = 7;
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "norm is 7");
    args = fft_args(rt, TF_FFT_FFT, NULL, 0, &tx, &tx);
    EXPECT_ERROR(tf_fft(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "overlaps");
    CHECK(get(y, TF_DTYPE_C128, 0) == before);
  }
  free(x);
  free(y);
  free(z);
  free(r);
  free(rf);
  free(back);
}

int main(void) {
  tf_runtime* rts[2] = {NULL, NULL};
  tf_runtime_options options;
  tf_error* error = NULL;
  int r, d;
  const int dtypes[4] = {TF_DTYPE_F32, TF_DTYPE_F64, TF_DTYPE_C64, TF_DTYPE_C128};
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  for (r = 0; r < 2; ++r) { /* the calling thread, then a two-thread domain */
    options.threads = r == 0 ? 1 : 2;
    if (!EXPECT_OK(tf_runtime_create(&options, &rts[r], &error), error)) continue;
    for (d = 0; d < 4; ++d) {
      check_svd(rts[r], dtypes[d], 0);
      check_svd(rts[r], dtypes[d], 1);
      check_qr(rts[r], dtypes[d]);
      check_eigh(rts[r], dtypes[d]);
      check_solve_batched(rts[r], dtypes[d], 0);
      check_solve_batched(rts[r], dtypes[d], 1);
    }
    check_small_factorizations(rts[r]);
    check_lstsq_pinv_norms(rts[r]);
    check_linalg_errors(rts[r]);
    check_fft(rts[r]);
  }
  tf_runtime_destroy(rts[0]);
  tf_runtime_destroy(rts[1]);
  printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
