/* Tests of the C API, written in C99 and linked to libtenferro_c.so alone,
 * as a C user would build them. Results are compared with naive C loops;
 * every error path checks the code and a piece of the message. Exit status
 * 0 when every check passed. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_api_test_support.h"
#include "tenferro/c/tenferro.h"

static const int kDTypes[] = {TF_DTYPE_F32, TF_DTYPE_F64, TF_DTYPE_C64, TF_DTYPE_C128, TF_DTYPE_I32, TF_DTYPE_I64};

static tf_einsum_args einsum_args(tf_runtime* rt, const char* subscripts, const tf_tensor* const* inputs,
                                  size_t num_inputs, const tf_tensor* output) {
  tf_einsum_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.runtime = rt;
  args.subscripts = subscripts;
  args.inputs = inputs;
  args.num_inputs = num_inputs;
  args.output = output;
  return args;
}

static tf_einsum_vjp_args vjp_args(tf_runtime* rt, const char* subscripts, const tf_tensor* const* inputs,
                                   size_t num_inputs, const tf_tensor* cotangent, const tf_tensor* const* outputs) {
  tf_einsum_vjp_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.runtime = rt;
  args.subscripts = subscripts;
  args.inputs = inputs;
  args.num_inputs = num_inputs;
  args.cotangent = cotangent;
  args.outputs = outputs;
  return args;
}

/* --- results against naive loops ---------------------------------------- */

enum { kRowMajor = 0, kTransposed = 1, kPadded = 2 };

/* C[i,j] = sum_p A[i,p] B[p,j], A m x k, B k x n. `a_layout`, `b_layout`
 * and `c_layout` choose how each is stored: row-major (strides NULL),
 * transposed (column-major, explicit strides) or row-major with padded rows.
 * Padding of C must stay untouched. */
static void check_matmul(tf_runtime* rt, int dtype, int a_layout, int b_layout, int c_layout) {
  enum { m = 3, k = 4, n = 5, pad = 3 };
  const int64_t a_shape[2] = {m, k}, b_shape[2] = {k, n}, c_shape[2] = {m, n};
  int64_t a_strides[2], b_strides[2], c_strides[2];
  const int64_t* a_s = NULL;
  const int64_t* b_s = NULL;
  const int64_t* c_s = NULL;
  void *a, *b, *c;
  int64_t i, j, p, c_count;
  tf_tensor ta, tb, tc;
  const tf_tensor* ins[2];
  tf_einsum_args args;
  tf_error* error = NULL;
  int ok = 1;

  if (a_layout == kTransposed) {
    a_strides[0] = 1;
    a_strides[1] = m;
    a_s = a_strides;
  }
  if (a_layout == kPadded) {
    a_strides[0] = k + pad;
    a_strides[1] = 1;
    a_s = a_strides;
  }
  if (b_layout == kTransposed) {
    b_strides[0] = 1;
    b_strides[1] = k;
    b_s = b_strides;
  }
  if (b_layout == kPadded) {
    b_strides[0] = n + pad;
    b_strides[1] = 1;
    b_s = b_strides;
  }
  if (c_layout == kTransposed) {
    c_strides[0] = 1;
    c_strides[1] = m;
    c_s = c_strides;
  }
  if (c_layout == kPadded) {
    c_strides[0] = n + pad;
    c_strides[1] = 1;
    c_s = c_strides;
  }
  a = random_buffer(dtype, m * (k + pad));
  b = random_buffer(dtype, k * (n + pad));
  c_count = m * (n + pad);
  c = random_buffer(dtype, c_count); /* the padding keeps these values */
  {
    void* before = malloc((size_t)c_count * elem_size(dtype));
    memcpy(before, c, (size_t)c_count * elem_size(dtype));
    ta = make_tensor(a, dtype, 2, a_shape, a_s);
    tb = make_tensor(b, dtype, 2, b_shape, b_s);
    tc = make_tensor(c, dtype, 2, c_shape, c_s);
    ins[0] = &ta;
    ins[1] = &tb;
    args = einsum_args(rt, "ij,jk->ik", ins, 2, &tc);
    if (EXPECT_OK(tf_einsum(&args, &error), error)) {
      const int64_t as0 = a_s ? a_s[0] : k, as1 = a_s ? a_s[1] : 1;
      const int64_t bs0 = b_s ? b_s[0] : n, bs1 = b_s ? b_s[1] : 1;
      const int64_t cs0 = c_s ? c_s[0] : n, cs1 = c_s ? c_s[1] : 1;
      char* written = calloc((size_t)c_count, 1);
      for (i = 0; i < m; ++i) {
        for (j = 0; j < n; ++j) {
          double complex expected = 0;
          for (p = 0; p < k; ++p) expected += get(a, dtype, i * as0 + p * as1) * get(b, dtype, p * bs0 + j * bs1);
          ok &= close_enough(get(c, dtype, i * cs0 + j * cs1), expected, dtype);
          written[i * cs0 + j * cs1] = 1;
        }
      }
      for (i = 0; i < c_count; ++i)
        if (!written[i])
          ok &= memcmp((char*)c + i * elem_size(dtype), (char*)before + i * elem_size(dtype), elem_size(dtype)) == 0;
      free(written);
      CHECK(ok);
      if (!ok) fprintf(stderr, "  matmul %s layouts a %d b %d c %d\n", dtype_name(dtype), a_layout, b_layout, c_layout);
    }
    free(before);
  }
  free(a);
  free(b);
  free(c);
}

/* C[b,i,k] = sum_j A[b,i,j] B[b,j,k], all row-major. */
static void check_batched(tf_runtime* rt, int dtype) {
  enum { nb = 2, ni = 3, nj = 4, nk = 2 };
  const int64_t a_shape[3] = {nb, ni, nj}, b_shape[3] = {nb, nj, nk}, c_shape[3] = {nb, ni, nk};
  void* a = random_buffer(dtype, nb * ni * nj);
  void* b = random_buffer(dtype, nb * nj * nk);
  void* c = random_buffer(dtype, nb * ni * nk);
  tf_tensor ta = make_tensor(a, dtype, 3, a_shape, NULL);
  tf_tensor tb = make_tensor(b, dtype, 3, b_shape, NULL);
  tf_tensor tc = make_tensor(c, dtype, 3, c_shape, NULL);
  const tf_tensor* ins[2];
  tf_einsum_args args;
  tf_error* error = NULL;
  int64_t x, i, j, k;
  int ok = 1;
  ins[0] = &ta;
  ins[1] = &tb;
  args = einsum_args(rt, "bij,bjk->bik", ins, 2, &tc);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (x = 0; x < nb; ++x)
      for (i = 0; i < ni; ++i)
        for (k = 0; k < nk; ++k) {
          double complex expected = 0;
          for (j = 0; j < nj; ++j)
            expected += get(a, dtype, (x * ni + i) * nj + j) * get(b, dtype, (x * nj + j) * nk + k);
          ok &= close_enough(get(c, dtype, (x * ni + i) * nk + k), expected, dtype);
        }
    CHECK(ok);
  }
  free(a);
  free(b);
  free(c);
}

/* The trace of a strided (every other column) n x n matrix, explicit and
 * implicit output, into a rank-0 output. */
static void check_trace(tf_runtime* rt, int dtype) {
  enum { n = 4 };
  const int64_t shape[2] = {n, n}, strides[2] = {2 * n, 2};
  void* a = random_buffer(dtype, 2 * n * n);
  void* out = random_buffer(dtype, 1);
  tf_tensor ta = make_tensor(a, dtype, 2, shape, strides);
  tf_tensor tout = make_tensor(out, dtype, 0, NULL, NULL);
  const tf_tensor* ins[1];
  const char* subscripts[2] = {"ii->", "ii"};
  tf_error* error = NULL;
  double complex expected = 0;
  int64_t i, s;
  ins[0] = &ta;
  for (i = 0; i < n; ++i) expected += get(a, dtype, i * strides[0] + i * strides[1]);
  for (s = 0; s < 2; ++s) {
    tf_einsum_args args = einsum_args(rt, subscripts[s], ins, 1, &tout);
    put(out, dtype, 0, 100.0);
    if (EXPECT_OK(tf_einsum(&args, &error), error)) CHECK(close_enough(get(out, dtype, 0), expected, dtype));
  }
  free(a);
  free(out);
}

/* "...ij,jk->...ki" (ellipsis, output permuted by the subscripts). */
static void check_ellipsis_permuted(tf_runtime* rt) {
  enum { nb = 2, ni = 3, nj = 2, nk = 4 };
  const int64_t a_shape[3] = {nb, ni, nj}, b_shape[2] = {nj, nk}, c_shape[3] = {nb, nk, ni};
  void* a = random_buffer(TF_DTYPE_F64, nb * ni * nj);
  void* b = random_buffer(TF_DTYPE_F64, nj * nk);
  double c[nb * nk * ni];
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 3, a_shape, NULL);
  tf_tensor tb = make_tensor(b, TF_DTYPE_F64, 2, b_shape, NULL);
  tf_tensor tc = make_tensor(c, TF_DTYPE_F64, 3, c_shape, NULL);
  const tf_tensor* ins[2];
  tf_einsum_args args;
  tf_error* error = NULL;
  int64_t x, i, j, k;
  int ok = 1;
  ins[0] = &ta;
  ins[1] = &tb;
  args = einsum_args(rt, "...ij,jk->...ki", ins, 2, &tc);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (x = 0; x < nb; ++x)
      for (k = 0; k < nk; ++k)
        for (i = 0; i < ni; ++i) {
          double expected = 0;
          for (j = 0; j < nj; ++j) expected += ((double*)a)[(x * ni + i) * nj + j] * ((double*)b)[j * nk + k];
          ok &= fabs(c[(x * nk + k) * ni + i] - expected) <= 1e-12;
        }
    CHECK(ok);
  }
  free(a);
  free(b);
}

/* Empty operands: a sum over an empty label gives zeros; NULL data is
 * allowed for arrays without elements. */
static void check_empty(tf_runtime* rt) {
  const int64_t a_shape[2] = {2, 0}, b_shape[2] = {0, 3}, c_shape[2] = {2, 3}, e_shape[2] = {0, 3};
  double c[6];
  tf_tensor ta = make_tensor(NULL, TF_DTYPE_F64, 2, a_shape, NULL);
  tf_tensor tb = make_tensor(NULL, TF_DTYPE_F64, 2, b_shape, NULL);
  tf_tensor tc = make_tensor(c, TF_DTYPE_F64, 2, c_shape, NULL);
  tf_tensor te = make_tensor(NULL, TF_DTYPE_F64, 2, e_shape, NULL);
  const tf_tensor* ins[2];
  tf_einsum_args args;
  tf_error* error = NULL;
  int i, ok = 1;
  ins[0] = &ta;
  ins[1] = &tb;
  args = einsum_args(rt, "ij,jk->ik", ins, 2, &tc);
  for (i = 0; i < 6; ++i) c[i] = 7.0;
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (i = 0; i < 6; ++i) ok &= c[i] == 0.0;
    CHECK(ok);
  }
  /* An empty output: nothing to write. */
  ins[0] = &tb;
  args = einsum_args(rt, "jk->jk", ins, 1, &te);
  EXPECT_OK(tf_einsum(&args, &error), error);
}

/* Broadcast (stride-0) inputs (Note [C API broadcast operands]): a row
 * repeated over the rows of a matrix, summed ("ij,ij->", "ij,ij->j") or kept
 * ("ij,ij->ij"); a stride-0 axis only the output has ("ij,j->ij" of a
 * broadcast column); and a wrong output shape is still refused. */
static void check_broadcast_inputs(tf_runtime* rt) {
  enum { m = 5, n = 7 };
  const int64_t shape[2] = {m, n}, row_strides[2] = {0, 1}, col_strides[2] = {1, 0}, vshape[1] = {n};
  const int64_t bad_shape[1] = {m};
  void* row = random_buffer(TF_DTYPE_F64, n);
  void* col = random_buffer(TF_DTYPE_F64, m);
  void* b = random_buffer(TF_DTYPE_F64, m * n);
  double total = 0, sums[n], product[m * n], tensor[m * n];
  tf_tensor trow = make_tensor(row, TF_DTYPE_F64, 2, shape, row_strides);
  tf_tensor tcol = make_tensor(col, TF_DTYPE_F64, 2, shape, col_strides);
  tf_tensor tb = make_tensor(b, TF_DTYPE_F64, 2, shape, NULL);
  tf_tensor tv = make_tensor(row, TF_DTYPE_F64, 1, vshape, NULL);
  tf_tensor ttotal = make_tensor(&total, TF_DTYPE_F64, 0, NULL, NULL);
  tf_tensor tsums = make_tensor(sums, TF_DTYPE_F64, 1, vshape, NULL);
  tf_tensor tproduct = make_tensor(product, TF_DTYPE_F64, 2, shape, NULL);
  tf_tensor ttensor = make_tensor(tensor, TF_DTYPE_F64, 2, shape, NULL);
  tf_tensor tbad = make_tensor(sums, TF_DTYPE_F64, 1, bad_shape, NULL);
  const tf_tensor* ins[2] = {&trow, &tb};
  const tf_tensor* col_ins[2] = {&tcol, &tv};
  tf_einsum_args args;
  tf_error* error = NULL;
  double want_total = 0;
  int64_t i, j;
  int ok = 1;
  args = einsum_args(rt, "ij,ij->", ins, 2, &ttotal);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (i = 0; i < m; ++i)
      for (j = 0; j < n; ++j) want_total += ((double*)row)[j] * ((double*)b)[i * n + j];
    CHECK(fabs(total - want_total) <= 1e-12 * (1 + fabs(want_total)));
  }
  args = einsum_args(rt, "ij,ij->j", ins, 2, &tsums);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (j = 0; j < n; ++j) {
      double want = 0;
      for (i = 0; i < m; ++i) want += ((double*)row)[j] * ((double*)b)[i * n + j];
      ok &= fabs(sums[j] - want) <= 1e-12;
    }
    CHECK(ok);
  }
  args = einsum_args(rt, "ij,ij->ij", ins, 2, &tproduct);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (i = 0; i < m; ++i)
      for (j = 0; j < n; ++j) ok &= product[i * n + j] == ((double*)row)[j] * ((double*)b)[i * n + j];
    CHECK(ok);
  }
  args = einsum_args(rt, "ij,j->ij", col_ins, 2, &ttensor);
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    for (i = 0; i < m; ++i)
      for (j = 0; j < n; ++j) ok &= tensor[i * n + j] == ((double*)col)[i] * ((double*)row)[j];
    CHECK(ok);
  }
  args = einsum_args(rt, "ij,ij->j", ins, 2, &tbad);
  CHECK(tf_einsum(&args, &error) == TF_CODE_SHAPE_MISMATCH);
  CHECK(error != NULL && strstr(tf_error_message(error), "gives shape [7]") != NULL);
  tf_error_destroy(error);
  free(row);
  free(col);
  free(b);
}

/* Peak resident memory in KiB (VmHWM), or -1 where /proc does not say. */
static long peak_rss_kib(void) {
  char line[256];
  long kib = -1;
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return kib;
}

/* The broadcast row is not copied to a dense matrix of its logical size:
 * the peak memory of "ij,ij->" grows by far less than that (72 MiB). */
static void check_broadcast_input_stays_small(tf_runtime* rt) {
  enum { n = 3000 };
  const int64_t shape[2] = {n, n}, row_strides[2] = {0, 1};
  double* row = malloc(n * sizeof(double));
  double* b = malloc((size_t)n * n * sizeof(double));
  double total = 0;
  tf_tensor trow, tb, ttotal;
  const tf_tensor* ins[2] = {&trow, &tb};
  tf_einsum_args args;
  tf_error* error = NULL;
  long before;
  int64_t i;
  for (i = 0; i < n; ++i) row[i] = 1.0;
  for (i = 0; i < (int64_t)n * n; ++i) b[i] = 0.5; /* touched: resident before the call */
  trow = make_tensor(row, TF_DTYPE_F64, 2, shape, row_strides);
  tb = make_tensor(b, TF_DTYPE_F64, 2, shape, NULL);
  ttotal = make_tensor(&total, TF_DTYPE_F64, 0, NULL, NULL);
  args = einsum_args(rt, "ij,ij->", ins, 2, &ttotal);
  before = peak_rss_kib();
  if (EXPECT_OK(tf_einsum(&args, &error), error)) {
    const long grew = before < 0 ? 0 : peak_rss_kib() - before;
    CHECK(total == 0.5 * n * n);
    CHECK(grew < (long)n * n * 8 / 1024 / 2); /* a dense copy would add n * n * 8 bytes */
  }
  free(row);
  free(b);
}

static void check_results(tf_runtime* rt) {
  size_t d;
  int la, lb, lc;
  for (d = 0; d < sizeof kDTypes / sizeof kDTypes[0]; ++d) {
    for (la = 0; la < 3; ++la)
      for (lb = 0; lb < 3; ++lb)
        for (lc = 0; lc < 3; ++lc) check_matmul(rt, kDTypes[d], la, lb, lc);
    check_batched(rt, kDTypes[d]);
    check_trace(rt, kDTypes[d]);
  }
  check_ellipsis_permuted(rt);
  check_empty(rt);
  check_broadcast_inputs(rt);
  check_broadcast_input_stays_small(rt);
}

/* --- version, codes, struct sizes ---------------------------------------- */

static void test_version(void) {
  tf_version v;
  tf_error* error = (tf_error*)&v; /* must be reset to NULL on success */
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  if (EXPECT_OK(tf_get_version(&v, &error), error)) {
    CHECK(v.api_major == TF_API_VERSION_MAJOR);
    CHECK(v.api_minor == TF_API_VERSION_MINOR);
    CHECK(v.library_version != NULL && strlen(v.library_version) >= 5 && strchr(v.library_version, '.') != NULL);
    CHECK(v.git_revision != NULL && v.git_revision[0] != '\0');
  }
  v.struct_size = 0;
  EXPECT_ERROR(tf_get_version(&v, &error), error, TF_CODE_INVALID_ARGUMENT, "tf_version.struct_size is 0");
  v.struct_size = sizeof v + 8;
  EXPECT_ERROR(tf_get_version(&v, &error), error, TF_CODE_UNIMPLEMENTED, "newer tenferro.h");
  v.struct_size = sizeof v - 8;
  EXPECT_ERROR(tf_get_version(&v, &error), error, TF_CODE_INVALID_ARGUMENT, "expected sizeof(tf_version)");
  EXPECT_ERROR(tf_get_version(NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "version is NULL");
  /* A NULL error pointer: the code alone. */
  CHECK(tf_get_version(NULL, NULL) == TF_CODE_INVALID_ARGUMENT);
}

static void test_codes(void) {
  int c;
  CHECK(TF_CODE_OK == 0);
  CHECK(strcmp(tf_code_name(TF_CODE_OK), "ok") == 0);
  CHECK(strcmp(tf_code_name(TF_CODE_INVALID_ARGUMENT), "invalid_argument") == 0);
  CHECK(strcmp(tf_code_name(TF_CODE_SHAPE_MISMATCH), "shape_mismatch") == 0);
  CHECK(strcmp(tf_code_name(TF_CODE_ALIAS_CONFLICT), "alias_conflict") == 0);
  CHECK(strcmp(tf_code_name(TF_CODE_COUNT), "unknown_code") == 0);
  CHECK(strcmp(tf_code_name(-1), "unknown_code") == 0);
  for (c = 0; c < TF_CODE_COUNT; ++c) CHECK(strcmp(tf_code_name(c), "unknown_code") != 0);
  /* NULL errors read as success. */
  CHECK(tf_error_code(NULL) == TF_CODE_OK);
  CHECK(tf_error_canonical_code(NULL) == TF_CODE_OK);
  CHECK(strcmp(tf_error_message(NULL), "") == 0);
  tf_error_destroy(NULL);
}

/* --- runtimes ------------------------------------------------------------ */

static void test_runtime_options(void) {
  tf_runtime_options options;
  tf_runtime* rt = (tf_runtime*)&options;
  tf_error* error = NULL;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;

  options.threads = -1;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT,
               "threads is -1; expected 0 or 1 (the calling thread) to ");
  CHECK(rt == NULL);
  options.threads = 1000000;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT,
               "threads is 1000000; expected 0 or 1 (the calling thread) to ");
  options.threads = 1;
  options.gemm = 7;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT, "gemm is 7");
  options.gemm = TF_GEMM_NATIVE;
  options.struct_size = 4;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT,
               "tf_runtime_options.struct_size is 4");
  options.struct_size = sizeof options;
  EXPECT_ERROR(tf_runtime_create(&options, NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "runtime is NULL");

  /* Since V2: the worker spin (0: default, TF_WORKER_SPIN_OFF, 1..1e6 us). */
  options.worker_spin_us = -2;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT,
               "worker_spin_us is -2; expected 0 (the default), TF_WORKER_SPIN_OFF (-1) or 1 to 1000000");
  options.worker_spin_us = 1000001;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT, "worker_spin_us is 1000001");
  options.worker_spin_us = 0;
  options.reserved0 = 3;
  EXPECT_ERROR(tf_runtime_create(&options, &rt, &error), error, TF_CODE_INVALID_ARGUMENT, "reserved0 is 3; expected 0");
  options.reserved0 = 0;
  /* A V1 caller's struct ends at gemm: the fields after it are not read. */
  options.struct_size = TF_RUNTIME_OPTIONS_SIZE_V1;
  options.worker_spin_us = -2;
  EXPECT_OK(tf_runtime_create(&options, &rt, &error), error);
  tf_runtime_destroy(rt);
  options.struct_size = sizeof options;
  options.worker_spin_us = 0;

  /* The external BLAS providers: either they load and contract correctly,
   * or the library is missing here and says so (kUnsupported). */
  {
    const int gemms[2] = {TF_GEMM_OPENBLAS, TF_GEMM_BLIS};
    int g;
    for (g = 0; g < 2; ++g) {
      tf_code code;
      options.gemm = gemms[g];
      code = tf_runtime_create(&options, &rt, &error);
      if (code == TF_CODE_OK) {
        check_matmul(rt, TF_DTYPE_F64, kRowMajor, kTransposed, kRowMajor);
        check_matmul(rt, TF_DTYPE_C64, kPadded, kRowMajor, kTransposed);
        tf_runtime_destroy(rt);
      } else {
        fprintf(stderr, "note: gemm %d unavailable: %s\n", gemms[g], tf_error_message(error));
        CHECK(code == TF_CODE_UNSUPPORTED);
        tf_error_destroy(error);
      }
    }
  }

  /* Two workers in a managed domain, where the machine has two CPUs. */
  options.gemm = TF_GEMM_NATIVE;
  options.threads = 2;
  {
    tf_code code = tf_runtime_create(&options, &rt, &error);
    if (code == TF_CODE_OK) {
      /* The default worker spin, none, and a short one. */
      const int32_t spins[2] = {TF_WORKER_SPIN_OFF, 500};
      int i;
      check_results(rt);
      tf_runtime_destroy(rt);
      for (i = 0; i < 2; ++i) {
        options.worker_spin_us = spins[i];
        EXPECT_OK(tf_runtime_create(&options, &rt, &error), error);
        check_results(rt);
        tf_runtime_destroy(rt);
      }
      options.worker_spin_us = 0;
    } else {
      fprintf(stderr, "note: no two-thread runtime: %s\n", tf_error_message(error));
      CHECK(code == TF_CODE_INVALID_ARGUMENT);
      tf_error_destroy(error);
    }
  }
}

/* --- prepared einsums and the path query -------------------------------- */

static tf_einsum_prepare_args prepare_args(tf_runtime* rt, const char* subscripts, const tf_tensor* const* inputs,
                                           size_t num_inputs, int planner) {
  tf_einsum_prepare_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.runtime = rt;
  args.subscripts = subscripts;
  args.inputs = inputs;
  args.num_inputs = num_inputs;
  args.planner = planner;
  return args;
}

static tf_einsum_plan_info plan_info(const tf_einsum_plan* plan) {
  tf_einsum_plan_info info;
  tf_error* error = NULL;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(tf_einsum_plan_get_info(plan, &info, &error), error);
  return info;
}

/* A 2x2 matmul planned once and run on fresh data many times, from row-major
 * and from transposed operands; the plan outlives its runtime. */
static void test_prepared(void) {
  const int64_t shape[2] = {2, 2}, transposed[2] = {1, 2};
  tf_tensor ta = make_tensor(NULL, TF_DTYPE_F64, 2, shape, NULL);
  tf_tensor tb = make_tensor(NULL, TF_DTYPE_F64, 2, shape, NULL);
  const tf_tensor* ins[2];
  tf_runtime* rt = NULL;
  tf_einsum_plan* plan = NULL;
  tf_einsum_prepare_args pargs;
  tf_error* error = NULL;
  int run, ok = 1;
  ins[0] = &ta;
  ins[1] = &tb;
  if (!EXPECT_OK(tf_runtime_create(NULL, &rt, &error), error)) return;
  pargs = prepare_args(rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO);
  if (!EXPECT_OK(tf_einsum_prepare(&pargs, &plan, &error), error)) {
    tf_runtime_destroy(rt);
    return;
  }
  tf_runtime_destroy(rt); /* the plan keeps the engine alive */
  {
    const tf_einsum_plan_info info = plan_info(plan);
    CHECK(info.output_ndim == 2 && info.output_shape[0] == 2 && info.output_shape[1] == 2);
    CHECK(info.dtype == TF_DTYPE_F64);
    CHECK(info.multiply_adds == 8.0);
    CHECK(info.flops == 16.0);
    CHECK(info.largest_intermediate == 4.0);
    CHECK(info.num_steps == 1 && info.path[0] == 0 && info.path[1] == 1);
    CHECK(info.planner != NULL && info.planner[0] != '\0');
  }
  for (run = 0; run < 50; ++run) {
    double a[4], b[4], c[4];
    int i, j, p;
    const int b_transposed = run % 2;
    tf_tensor ra = make_tensor(a, TF_DTYPE_F64, 2, shape, NULL);
    tf_tensor rb = make_tensor(b, TF_DTYPE_F64, 2, shape, b_transposed ? transposed : NULL);
    tf_tensor rc = make_tensor(c, TF_DTYPE_F64, 2, shape, NULL);
    const tf_tensor* rins[2];
    tf_einsum_run_args rargs;
    for (i = 0; i < 4; ++i) {
      a[i] = uniform();
      b[i] = uniform();
    }
    rins[0] = &ra;
    rins[1] = &rb;
    memset(&rargs, 0, sizeof rargs);
    rargs.struct_size = sizeof rargs;
    rargs.plan = plan;
    rargs.inputs = rins;
    rargs.num_inputs = 2;
    rargs.output = &rc;
    if (!EXPECT_OK(tf_einsum_run(&rargs, &error), error)) break;
    for (i = 0; i < 2; ++i)
      for (j = 0; j < 2; ++j) {
        double expected = 0;
        for (p = 0; p < 2; ++p) expected += a[i * 2 + p] * (b_transposed ? b[j * 2 + p] : b[p * 2 + j]);
        ok &= fabs(c[i * 2 + j] - expected) <= 1e-14;
      }
  }
  CHECK(ok);
  tf_einsum_plan_destroy(plan);
  tf_einsum_plan_destroy(NULL);
  tf_runtime_destroy(NULL);
}

/* A(10x100) B(100x10) C(10x100): (AB)C costs 2*(10*100*10 + 10*10*100) =
 * 40000 flops, A(BC) 2*(100*10*100 + 10*100*100) = 400000; the largest
 * array on the good path is the 10x100 result. */
static void test_contract_path(void) {
  const int64_t sa[2] = {10, 100}, sb[2] = {100, 10}, sc[2] = {10, 100};
  tf_tensor ta = make_tensor(NULL, TF_DTYPE_C128, 2, sa, NULL);
  tf_tensor tb = make_tensor(NULL, TF_DTYPE_C128, 2, sb, NULL);
  tf_tensor tc = make_tensor(NULL, TF_DTYPE_C128, 2, sc, NULL);
  const tf_tensor* ins[3];
  const int planners[3] = {TF_PLANNER_GREEDY, TF_PLANNER_OPTIMAL, TF_PLANNER_AUTO};
  const char* names[3] = {"greedy", "optimal", "optimal"};
  tf_runtime* rt = NULL;
  tf_error* error = NULL;
  int p;
  ins[0] = &ta;
  ins[1] = &tb;
  ins[2] = &tc;
  if (!EXPECT_OK(tf_runtime_create(NULL, &rt, &error), error)) return;
  for (p = 0; p < 3; ++p) {
    tf_einsum_prepare_args args = prepare_args(rt, "ij,jk,kl->il", ins, 3, planners[p]);
    tf_einsum_plan* plan = NULL;
    if (EXPECT_OK(tf_einsum_prepare(&args, &plan, &error), error)) {
      const tf_einsum_plan_info info = plan_info(plan);
      CHECK(info.flops == 40000.0);
      CHECK(info.largest_intermediate == 1000.0);
      CHECK(info.num_steps == 2);
      CHECK(info.path[0] == 0 && info.path[1] == 1 && info.path[2] == 0 && info.path[3] == 1);
      CHECK(info.dtype == TF_DTYPE_C128);
      CHECK(info.output_ndim == 2 && info.output_shape[0] == 10 && info.output_shape[1] == 100);
      CHECK(strcmp(info.planner, names[p]) == 0);
    }
    tf_einsum_plan_destroy(plan);
  }
  /* treesa finds the same optimum on a three-tensor chain. */
  {
    tf_einsum_prepare_args args = prepare_args(rt, "ij,jk,kl->il", ins, 3, TF_PLANNER_TREESA);
    tf_einsum_plan* plan = NULL;
    if (EXPECT_OK(tf_einsum_prepare(&args, &plan, &error), error)) {
      const tf_einsum_plan_info info = plan_info(plan);
      CHECK(info.flops == 40000.0);
      CHECK(strcmp(info.planner, "treesa") == 0);
    }
    tf_einsum_plan_destroy(plan);
  }
  tf_runtime_destroy(rt);
}

/* --- error paths --------------------------------------------------------- */

static void test_einsum_errors(tf_runtime* rt) {
  const int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s24[2] = {2, 4}, s44[2] = {4, 4}, s45[2] = {4, 5};
  const int64_t neg_strides[2] = {-4, 1}, zero_strides[2] = {0, 1}, bad_shape[2] = {2, -3};
  double a[6] = {0}, b[12] = {0}, c[8] = {0}, big[64] = {0};
  float bf[12] = {0};
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 2, s23, NULL);
  tf_tensor tb = make_tensor(b, TF_DTYPE_F64, 2, s34, NULL);
  tf_tensor tc = make_tensor(c, TF_DTYPE_F64, 2, s24, NULL);
  tf_tensor t;
  const tf_tensor* ins[2];
  const tf_tensor* null_ins[2];
  tf_einsum_args args;
  tf_error* error = NULL;
  ins[0] = &ta;
  ins[1] = &tb;

  /* The good call these errors are variations of. */
  args = einsum_args(rt, "ij,jk->ik", ins, 2, &tc);
  EXPECT_OK(tf_einsum(&args, &error), error);

  EXPECT_ERROR(tf_einsum(NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "args is NULL");
  CHECK(tf_einsum(NULL, NULL) == TF_CODE_INVALID_ARGUMENT);
  args.struct_size = 0;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "tf_einsum_args.struct_size is 0");
  args.struct_size = sizeof args + 8;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_UNIMPLEMENTED, "larger than any version");
  args.struct_size = TF_EINSUM_ARGS_SIZE_V1 - 4;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "of a known version");
  args.struct_size = sizeof args;
  args.reserved0 = 2;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "tf_einsum_args.reserved0 is 2; expected 0");
  args.struct_size = TF_EINSUM_ARGS_SIZE_V1; /* a V1 caller's struct has no reserved0 */
  EXPECT_OK(tf_einsum(&args, &error), error);
  args.struct_size = sizeof args;
  args.reserved0 = 0;
  args.num_inputs = 1;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "names 2 operands; found 1 input");
  args.num_inputs = 2;

  args.runtime = NULL;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "args->runtime is NULL");
  args.runtime = rt;
  args.subscripts = NULL;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "args->subscripts is NULL");
  args.subscripts = "ij,jk->ik";
  args.inputs = NULL;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs is NULL");
  args.inputs = ins;
  args.num_inputs = 0;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "num_inputs is 0");
  args.num_inputs = (size_t)1 << 33; /* a corrupt count: refused, not sized (it aborted) */
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "expected at most 1048576 operands");
  args.num_inputs = 2;
  null_ins[0] = &ta;
  null_ins[1] = NULL;
  args.inputs = null_ins;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1] is NULL");
  args.inputs = ins;
  args.output = NULL;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "output is NULL");
  args.output = &tc;

  /* Bad subscripts. */
  args.subscripts = "ij,jk->iq";
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "output label 'q' does not appear");
  args.subscripts = "ij,jk->i-k";
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "unexpected '-'");
  args.subscripts = "ij,jk,kl->il"; /* three terms, two operands */
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT,
               "compile invalid_argument: einsum \"ij,jk,kl->il\" names 3 operands; found 2 inputs");
  args.subscripts = "ij,jk->ik";

  /* Operands that do not fit the subscripts: stage `compile`, as in every
   * binding (docs/errors.md), from tf_einsum and tf_einsum_prepare alike. */
  t = make_tensor(big, TF_DTYPE_F64, 2, s45, NULL);
  ins[1] = &t;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_SHAPE_MISMATCH,
               "compile shape_mismatch: einsum \"ij,jk->ik\": label 'j' has extent 4");
  {
    tf_einsum_prepare_args pargs = prepare_args(rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO);
    tf_einsum_plan* plan = NULL;
    EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_SHAPE_MISMATCH,
                 "compile shape_mismatch: einsum \"ij,jk->ik\": label 'j' has extent 4");
    CHECK(plan == NULL);
  }
  t = make_tensor(b, TF_DTYPE_F64, 1, s34, NULL); /* rank 1 for "jk" */
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "operand 1 has rank 1");
  ins[1] = &tb;

  /* Wrong output shape, dtype. */
  t = make_tensor(big, TF_DTYPE_F64, 2, s44, NULL);
  args.output = &t;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_SHAPE_MISMATCH,
               "output has shape [4, 4] (ndim 2); einsum \"ij,jk->ik\" on these operands gives shape [2, 4]");
  t = make_tensor(big, TF_DTYPE_F64, 1, s44, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "gives shape [2, 4] (ndim 2)");
  t = make_tensor(big, TF_DTYPE_C128, 2, s24, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "output is complex128; expected float64");
  args.output = &tc;

  /* Mixed and unsupported dtypes. */
  t = make_tensor(bf, TF_DTYPE_F32, 2, s34, NULL);
  ins[1] = &t;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "inputs[1] is float32, inputs[0] is float64");
  t = make_tensor(b, 99, 2, s34, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_UNSUPPORTED, "inputs[1].dtype is 99; expected TF_DTYPE_F32");
  t = make_tensor(b, 0, 2, s34, NULL); /* a zero-filled descriptor */
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_UNSUPPORTED, "inputs[1].dtype is 0");

  /* Malformed descriptors. */
  t = make_tensor(b, TF_DTYPE_F64, 2, s34, NULL);
  t.struct_size = 8;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].struct_size is 8; expected sizeof(tf_tensor)");
  t = make_tensor(b, TF_DTYPE_F64, -1, s34, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].ndim is -1");
  t = make_tensor(b, TF_DTYPE_F64, 2, NULL, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].shape is NULL");
  t = make_tensor(b, TF_DTYPE_F64, 2, bad_shape, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].shape[1] is -3");
  t = make_tensor(b, TF_DTYPE_F64, 2, s34, neg_strides);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].strides[0] is -4");
  t = make_tensor(NULL, TF_DTYPE_F64, 2, s34, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "inputs[1].data is NULL");
  t = make_tensor((char*)b + 4, TF_DTYPE_F64, 2, s34, NULL);
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "not aligned for float64");
  ins[1] = &tb;

  /* Outputs that overlap themselves or an input. */
  t = make_tensor(c, TF_DTYPE_F64, 2, s24, zero_strides);
  args.output = &t;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "written twice");
  t = make_tensor(b, TF_DTYPE_F64, 2, s24, NULL); /* b is input 1 */
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "overlaps inputs[1]");
  args.output = &tc;

  /* Planner: checked in a V2 struct, absent (the default) in a V1 one. */
  args.planner = 12345;
  EXPECT_ERROR(tf_einsum(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "planner is 12345");
  {
    /* An older caller's struct: exactly V1 bytes (ASan would catch a read
     * past them), its planner field absent. */
    void* old = malloc(TF_EINSUM_ARGS_SIZE_V1);
    args.struct_size = TF_EINSUM_ARGS_SIZE_V1;
    memcpy(old, &args, TF_EINSUM_ARGS_SIZE_V1);
    EXPECT_OK(tf_einsum((const tf_einsum_args*)old, &error), error);
    free(old);
    args.struct_size = sizeof args;
  }
  args.planner = TF_PLANNER_OPTIMAL;
  EXPECT_OK(tf_einsum(&args, &error), error);
}

static void test_prepared_errors(tf_runtime* rt) {
  const int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s24[2] = {2, 4}, s35[2] = {3, 5};
  double a[6] = {0}, b[15] = {0}, c[8] = {0};
  double complex z[12] = {0};
  float f32[32] = {0};
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 2, s23, NULL);
  tf_tensor tb = make_tensor(b, TF_DTYPE_F64, 2, s34, NULL);
  tf_tensor tc = make_tensor(c, TF_DTYPE_F64, 2, s24, NULL);
  tf_tensor t;
  const tf_tensor* ins[3];
  tf_einsum_prepare_args pargs;
  tf_einsum_run_args rargs;
  tf_einsum_plan_info info;
  tf_einsum_plan* plan = (tf_einsum_plan*)&pargs;
  tf_error* error = NULL;
  ins[0] = &ta;
  ins[1] = &tb;
  ins[2] = &tb;

  pargs = prepare_args(rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO);
  EXPECT_ERROR(tf_einsum_prepare(&pargs, NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "plan is NULL");
  EXPECT_ERROR(tf_einsum_prepare(NULL, &plan, &error), error, TF_CODE_INVALID_ARGUMENT, "args is NULL");
  CHECK(plan == NULL);
  pargs.struct_size = 16;
  EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_INVALID_ARGUMENT,
               "tf_einsum_prepare_args.struct_size is 16");
  pargs.struct_size = sizeof pargs;
  pargs.reserved0 = -1;
  EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_INVALID_ARGUMENT,
               "tf_einsum_prepare_args.reserved0 is -1; expected 0");
  CHECK(plan == NULL);
  pargs.reserved0 = 0;
  pargs.planner = -1;
  EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_INVALID_ARGUMENT, "planner is -1");
  pargs.planner = TF_PLANNER_AUTO;
  pargs.subscripts = "ij,jk->ikk";
  EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_INVALID_ARGUMENT, "appears more than once");
  pargs.subscripts = "ij,jk->ik";
  if (!EXPECT_OK(tf_einsum_prepare(&pargs, &plan, &error), error)) return;

  memset(&info, 0, sizeof info);
  info.struct_size = 12;
  EXPECT_ERROR(tf_einsum_plan_get_info(plan, &info, &error), error, TF_CODE_INVALID_ARGUMENT,
               "tf_einsum_plan_info.struct_size is 12");
  info.struct_size = sizeof info;
  EXPECT_ERROR(tf_einsum_plan_get_info(NULL, &info, &error), error, TF_CODE_INVALID_ARGUMENT, "plan is NULL");
  EXPECT_ERROR(tf_einsum_plan_get_info(plan, NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "info is NULL");

  memset(&rargs, 0, sizeof rargs);
  rargs.struct_size = sizeof rargs;
  rargs.plan = plan;
  rargs.inputs = ins;
  rargs.num_inputs = 2;
  rargs.output = &tc;
  EXPECT_OK(tf_einsum_run(&rargs, &error), error);

  EXPECT_ERROR(tf_einsum_run(NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "args is NULL");
  rargs.struct_size = sizeof rargs + 16;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_UNIMPLEMENTED, "newer tenferro.h");
  rargs.struct_size = sizeof rargs;
  rargs.plan = NULL;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_INVALID_ARGUMENT, "args->plan is NULL");
  rargs.plan = plan;
  rargs.num_inputs = 3;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_INVALID_ARGUMENT, "expected 2 inputs, found 3");
  rargs.num_inputs = 2;
  t = make_tensor(b, TF_DTYPE_F64, 2, s35, NULL); /* binds, but not the prepared shape */
  ins[1] = &t;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_SHAPE_MISMATCH, "input 1 has shape [3, 5]");
  t = make_tensor(z, TF_DTYPE_C128, 2, s34, NULL);
  ins[0] = &t;
  ins[1] = &t;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_DTYPE_MISMATCH,
               "input 0 is complex128; the plan was made for float64");
  /* Inputs and output all float32 on a float64 plan: the inputs are named
   * (they are checked against the plan before the output). */
  {
    tf_tensor f_in0 = make_tensor(f32, TF_DTYPE_F32, 2, s23, NULL);
    tf_tensor f_in1 = make_tensor(f32 + 8, TF_DTYPE_F32, 2, s34, NULL);
    tf_tensor f_out = make_tensor(f32 + 24, TF_DTYPE_F32, 2, s24, NULL);
    ins[0] = &f_in0;
    ins[1] = &f_in1;
    rargs.output = &f_out;
    EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_DTYPE_MISMATCH,
                 "api dtype_mismatch: einsum: input 0 is float32; the plan was made for float64");
    rargs.output = &tc;
  }
  /* A wrong input shape and a wrong output shape: the input is named, as
   * the output's "gives shape" would not hold for these operands. */
  ins[0] = &ta;
  t = make_tensor(b, TF_DTYPE_F64, 2, s35, NULL);
  ins[1] = &t;
  {
    tf_tensor wrong_out = make_tensor(c, TF_DTYPE_F64, 2, s23, NULL);
    rargs.output = &wrong_out;
    EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_SHAPE_MISMATCH,
                 "input 1 has shape [3, 5]; the plan was made for [3, 4]");
    rargs.output = &tc;
  }
  ins[0] = &ta;
  ins[1] = &tb;
  t = make_tensor(c, TF_DTYPE_F64, 2, s34, NULL);
  rargs.output = &t;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_SHAPE_MISMATCH, "gives shape [2, 4]");
  rargs.output = &tc;
  EXPECT_OK(tf_einsum_run(&rargs, &error), error);
  tf_einsum_plan_destroy(plan);
}

/* Note [C API handle tags] in c_api.cpp: a block that is not a handle
 * (here zero-filled, as a struct cleared in place would be) is refused with
 * TF_CODE_INVALID_ARGUMENT naming the argument, by every function that takes
 * the handle; destroying it does nothing. A real use after destroy is
 * undefined behaviour and is not exercised here. */
static void test_invalid_handles(void) {
  uint64_t zeros[64];
  tf_runtime* fake_rt = (tf_runtime*)(void*)zeros;
  tf_einsum_plan* fake_plan = (tf_einsum_plan*)(void*)zeros;
  const int64_t s22[2] = {2, 2};
  double a[4] = {1, 2, 3, 4}, c[4] = {0};
  tf_tensor ta = make_tensor(a, TF_DTYPE_F64, 2, s22, NULL);
  tf_tensor tc = make_tensor(c, TF_DTYPE_F64, 2, s22, NULL);
  const tf_tensor* ins[2];
  const tf_tensor* outs[1];
  tf_einsum_args eargs;
  tf_einsum_prepare_args pargs;
  tf_einsum_run_args rargs;
  tf_einsum_plan_info info;
  tf_einsum_vjp_args vargs;
  tf_linalg_args largs;
  tf_result_info results[1];
  tf_fft_args fargs;
  tf_einsum_plan* plan = NULL;
  tf_error* error = NULL;
  size_t count = 0;
  const char* kRuntime = "args->runtime is not a live runtime: expected a tf_runtime* from tf_runtime_create, "
                         "found an invalid or destroyed handle";
  memset(zeros, 0, sizeof zeros);
  ins[0] = &ta;
  ins[1] = &ta;
  outs[0] = &tc;

  eargs = einsum_args(fake_rt, "ij,jk->ik", ins, 2, &tc);
  EXPECT_ERROR(tf_einsum(&eargs, &error), error, TF_CODE_INVALID_ARGUMENT, kRuntime);
  pargs = prepare_args(fake_rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO);
  EXPECT_ERROR(tf_einsum_prepare(&pargs, &plan, &error), error, TF_CODE_INVALID_ARGUMENT, kRuntime);
  CHECK(plan == NULL);
  vargs = vjp_args(fake_rt, "ij,jk->ik", ins, 2, &tc, NULL);
  EXPECT_ERROR(tf_einsum_vjp(&vargs, &error), error, TF_CODE_INVALID_ARGUMENT, kRuntime);
  memset(&largs, 0, sizeof largs);
  largs.struct_size = sizeof largs;
  largs.runtime = fake_rt;
  largs.op = TF_LINALG_INV;
  largs.inputs = ins;
  largs.num_inputs = 1;
  largs.outputs = outs;
  largs.num_outputs = 1;
  EXPECT_ERROR(tf_linalg(&largs, &error), error, TF_CODE_INVALID_ARGUMENT, kRuntime);
  memset(results, 0, sizeof results);
  results[0].struct_size = sizeof results[0];
  EXPECT_ERROR(tf_linalg_results(&largs, results, 1, &count, &error), error, TF_CODE_INVALID_ARGUMENT, kRuntime);
  memset(&fargs, 0, sizeof fargs);
  fargs.struct_size = sizeof fargs;
  fargs.runtime = fake_rt;
  fargs.kind = TF_FFT_FFT;
  fargs.input = &ta;
  fargs.output = &tc;
  {
    /* Without FFTW tf_fft is unsupported before it looks at the runtime. */
    const tf_code code = tf_fft(&fargs, &error);
    CHECK(code == TF_CODE_INVALID_ARGUMENT || code == TF_CODE_UNSUPPORTED);
    if (code == TF_CODE_INVALID_ARGUMENT) CHECK(strstr(tf_error_message(error), kRuntime) != NULL);
    tf_error_destroy(error);
    error = NULL;
  }

  memset(&rargs, 0, sizeof rargs);
  rargs.struct_size = sizeof rargs;
  rargs.plan = fake_plan;
  rargs.inputs = ins;
  rargs.num_inputs = 2;
  rargs.output = &tc;
  EXPECT_ERROR(tf_einsum_run(&rargs, &error), error, TF_CODE_INVALID_ARGUMENT,
               "args->plan is not a live plan: expected a tf_einsum_plan* from tf_einsum_prepare, found an invalid "
               "or destroyed handle");
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_ERROR(tf_einsum_plan_get_info(fake_plan, &info, &error), error, TF_CODE_INVALID_ARGUMENT,
               "plan is not a live plan: expected a tf_einsum_plan* from tf_einsum_prepare");

  /* Destroying a non-handle is a no-op: the block is left as it was. */
  tf_einsum_plan_destroy(fake_plan);
  tf_runtime_destroy(fake_rt);
  {
    size_t i;
    int untouched = 1;
    for (i = 0; i < sizeof zeros / sizeof zeros[0]; ++i) untouched &= zeros[i] == 0;
    CHECK(untouched);
  }

  /* A real runtime and plan pass the same checks. */
  {
    tf_runtime* rt = NULL;
    if (EXPECT_OK(tf_runtime_create(NULL, &rt, &error), error)) {
      pargs = prepare_args(rt, "ij,jk->ik", ins, 2, TF_PLANNER_AUTO);
      if (EXPECT_OK(tf_einsum_prepare(&pargs, &plan, &error), error)) {
        rargs.plan = plan;
        EXPECT_OK(tf_einsum_run(&rargs, &error), error);
        CHECK(c[0] == 7 && c[1] == 10 && c[2] == 15 && c[3] == 22);
        tf_einsum_plan_destroy(plan);
      }
      tf_runtime_destroy(rt);
    }
  }
}

/* One runtime serves many calls; many runtimes may coexist. */
static void test_runtime_reuse(void) {
  tf_runtime* rts[3] = {NULL, NULL, NULL};
  tf_error* error = NULL;
  int r, i;
  for (r = 0; r < 3; ++r) EXPECT_OK(tf_runtime_create(NULL, &rts[r], &error), error);
  for (i = 0; i < 3; ++i)
    for (r = 0; r < 3; ++r)
      if (rts[r] != NULL) check_batched(rts[r], kDTypes[(i + r) % 4]);
  for (r = 0; r < 3; ++r) tf_runtime_destroy(rts[r]);
}

/* tf_einsum_vjp (Note [C API einsum gradients]): the gradients of
 * D = A B C ("ij,jk,kl->il") for a cotangent G, by naive loops:
 * dA = G (B C)^H, dB = A^H G C^H, dC = (A B)^H G (PyTorch's convention,
 * ^H the conjugate transpose), into a column-major dB; a NULL output skips
 * its gradient; every error leaves the outputs unchanged. */
static double complex conj_if(double complex z, int dtype) { return is_complex(dtype) ? conj(z) : z; }

static void check_einsum_vjp(tf_runtime* rt, int dtype) {
  enum { NI = 2, NJ = 3, NK = 4, NL = 5 };
  int64_t ashape[2] = {NI, NJ}, bshape[2] = {NJ, NK}, cshape[2] = {NK, NL}, gshape[2] = {NI, NL};
  int64_t bt_strides[2] = {1, NJ}; /* column-major dB */
  void* a = random_buffer(dtype, NI * NJ);
  void* b = random_buffer(dtype, NJ * NK);
  void* c = random_buffer(dtype, NK * NL);
  void* g = random_buffer(dtype, NI * NL);
  void* da = random_buffer(dtype, NI * NJ);
  void* db = random_buffer(dtype, NJ * NK);
  void* dc = random_buffer(dtype, NK * NL);
  tf_tensor ta = make_tensor(a, dtype, 2, ashape, NULL), tb = make_tensor(b, dtype, 2, bshape, NULL);
  tf_tensor tc = make_tensor(c, dtype, 2, cshape, NULL), tg = make_tensor(g, dtype, 2, gshape, NULL);
  tf_tensor tda = make_tensor(da, dtype, 2, ashape, NULL), tdb = make_tensor(db, dtype, 2, bshape, bt_strides);
  tf_tensor tdc = make_tensor(dc, dtype, 2, cshape, NULL);
  const tf_tensor* in[3] = {&ta, &tb, &tc};
  const tf_tensor* out[3] = {&tda, &tdb, &tdc};
  tf_einsum_vjp_args args;
  tf_error* error = NULL;
  int64_t i, j, k, l;
  double complex before;
  args = vjp_args(rt, "ij,jk,kl->il", in, 3, &tg, out);
  if (EXPECT_OK(tf_einsum_vjp(&args, &error), error)) {
    for (i = 0; i < NI; ++i)
      for (j = 0; j < NJ; ++j) {
        double complex want = 0;
        for (k = 0; k < NK; ++k)
          for (l = 0; l < NL; ++l)
            want += get(g, dtype, i * NL + l) * conj_if(get(b, dtype, j * NK + k) * get(c, dtype, k * NL + l), dtype);
        CHECK(close_enough(get(da, dtype, i * NJ + j), want, dtype));
      }
    for (j = 0; j < NJ; ++j)
      for (k = 0; k < NK; ++k) {
        double complex want = 0;
        for (i = 0; i < NI; ++i)
          for (l = 0; l < NL; ++l)
            want += conj_if(get(a, dtype, i * NJ + j) * get(c, dtype, k * NL + l), dtype) * get(g, dtype, i * NL + l);
        CHECK(close_enough(get(db, dtype, j + k * NJ), want, dtype)); /* column-major */
      }
    for (k = 0; k < NK; ++k)
      for (l = 0; l < NL; ++l) {
        double complex want = 0;
        for (i = 0; i < NI; ++i)
          for (j = 0; j < NJ; ++j)
            want += conj_if(get(a, dtype, i * NJ + j) * get(b, dtype, j * NK + k), dtype) * get(g, dtype, i * NL + l);
        CHECK(close_enough(get(dc, dtype, k * NL + l), want, dtype));
      }
  }
  /* Only dB: the others are left alone. */
  put(da, dtype, 0, 7.0);
  out[0] = NULL;
  out[2] = NULL;
  EXPECT_OK(tf_einsum_vjp(&args, &error), error);
  CHECK(get(da, dtype, 0) == 7.0);
  /* Errors, the outputs unchanged. */
  out[0] = &tda;
  before = get(db, dtype, 0);
  tg.shape = ashape;
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "cotangent has shape [2, 3]");
  tg.shape = gshape;
  tda.shape = bshape;
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_SHAPE_MISMATCH, "expected inputs[0]'s shape [2, 3]");
  tda.shape = ashape;
  tda.data = a; /* the gradient of A written over A */
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "outputs[0] memory");
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "overlaps inputs[0]");
  tda.data = g; /* over the cotangent */
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "overlaps cotangent");
  tda.data = db; /* over another output */
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_ALIAS_CONFLICT, "outputs[1] memory");
  tda.data = da;
  tda.dtype = dtype == TF_DTYPE_F64 ? TF_DTYPE_F32 : TF_DTYPE_F64;
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "outputs[0] is");
  tda.dtype = dtype;
  args.subscripts = "ij,jk->ik";
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "");
  args.subscripts = "ij,jk,kl->il";
  args.reserved0 = 1;
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_INVALID_ARGUMENT, "reserved0");
  args.reserved0 = 0;
  args.struct_size = sizeof args + 8;
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_UNIMPLEMENTED, "newer tenferro.h");
  args.struct_size = sizeof args;
  CHECK(get(db, dtype, 0) == before);
  free(a);
  free(b);
  free(c);
  free(g);
  free(da);
  free(db);
  free(dc);
}

static void test_einsum_vjp(tf_runtime* rt) {
  static const int kDTypes[4] = {TF_DTYPE_F32, TF_DTYPE_F64, TF_DTYPE_C64, TF_DTYPE_C128};
  int64_t shape[1] = {3};
  int32_t x[3] = {1, 2, 3};
  tf_tensor t = make_tensor(x, TF_DTYPE_I32, 1, shape, NULL), ct = make_tensor(x, TF_DTYPE_I32, 0, NULL, NULL);
  const tf_tensor* in[2] = {&t, &t};
  const tf_tensor* out[2] = {NULL, NULL};
  tf_einsum_vjp_args args;
  tf_error* error = NULL;
  int d;
  for (d = 0; d < 4; ++d) check_einsum_vjp(rt, kDTypes[d]);
  args = vjp_args(rt, "i,i->", in, 2, &ct, out);
  EXPECT_ERROR(tf_einsum_vjp(&args, &error), error, TF_CODE_DTYPE_MISMATCH, "no gradient");
  EXPECT_ERROR(tf_einsum_vjp(NULL, &error), error, TF_CODE_INVALID_ARGUMENT, "args is NULL");
}

int main(void) {
  tf_runtime* rt = NULL;
  tf_runtime_options options;
  tf_error* error = NULL;
  test_version();
  test_codes();
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  if (EXPECT_OK(tf_runtime_create(&options, &rt, &error), error)) {
    check_results(rt);
    test_einsum_errors(rt);
    test_prepared_errors(rt);
    test_einsum_vjp(rt);
    tf_runtime_destroy(rt);
  }
  test_runtime_options();
  test_prepared();
  test_contract_path();
  test_runtime_reuse();
  test_invalid_handles();
  printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
