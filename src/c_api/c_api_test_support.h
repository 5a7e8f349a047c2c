/* Helpers of the C API tests (c_api_test.c, c_api_linalg_fft_test.c): C99,
 * one translation unit each, so everything is static. */
#ifndef TENFERRO_C_API_TEST_SUPPORT_H_
#define TENFERRO_C_API_TEST_SUPPORT_H_

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenferro/c/tenferro.h"

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++g_checks;                                                                \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* The call succeeded; otherwise print its error. Frees the error. The
 * macros pass &error so it is read after the call (argument evaluation order
 * is unspecified). */
static inline int expect_ok(tf_code code, tf_error** error_slot, const char* what, const char* file, int line) {
  tf_error* error = *error_slot;
  *error_slot = NULL;
  ++g_checks;
  if (code == TF_CODE_OK && error == NULL) return 1;
  ++g_failures;
  fprintf(stderr, "%s:%d: %s failed: code %s, %s\n", file, line, what, tf_code_name(code), tf_error_message(error));
  tf_error_destroy(error);
  return 0;
}
#define EXPECT_OK(call, error) expect_ok((call), &(error), #call, __FILE__, __LINE__)

/* The call failed with `expected`, its error carries that code and a
 * message containing `fragment`. Frees the error. */
static inline void expect_error(tf_code code, tf_error** error_slot, tf_code expected, const char* fragment,
                                const char* file, int line) {
  tf_error* error = *error_slot;
  *error_slot = NULL;
  ++g_checks;
  if (code != expected || error == NULL || tf_error_code(error) != expected ||
      strstr(tf_error_message(error), fragment) == NULL) {
    ++g_failures;
    fprintf(stderr, "%s:%d: expected %s containing \"%s\", found %s: %s\n", file, line, tf_code_name(expected),
            fragment, tf_code_name(code), tf_error_message(error));
  }
  tf_error_destroy(error);
}
#define EXPECT_ERROR(call, error, expected, fragment) \
  expect_error((call), &(error), (expected), (fragment), __FILE__, __LINE__)

/* --- typed buffers ------------------------------------------------------- */

static inline size_t elem_size(int dtype) {
  switch (dtype) {
    case TF_DTYPE_I32:
      return sizeof(int32_t);
    case TF_DTYPE_I64:
      return sizeof(int64_t);
    case TF_DTYPE_F32:
      return sizeof(float);
    case TF_DTYPE_F64:
      return sizeof(double);
    case TF_DTYPE_C64:
      return sizeof(float complex);
    default:
      return sizeof(double complex);
  }
}

static inline const char* dtype_name(int dtype) {
  switch (dtype) {
    case TF_DTYPE_I32:
      return "i32";
    case TF_DTYPE_I64:
      return "i64";
    case TF_DTYPE_F32:
      return "f32";
    case TF_DTYPE_F64:
      return "f64";
    case TF_DTYPE_C64:
      return "c64";
    default:
      return "c128";
  }
}

static inline int is_complex(int dtype) { return dtype == TF_DTYPE_C64 || dtype == TF_DTYPE_C128; }
static inline int is_integer(int dtype) { return dtype == TF_DTYPE_I32 || dtype == TF_DTYPE_I64; }

static inline void put(void* base, int dtype, int64_t index, double complex value) {
  switch (dtype) {
    case TF_DTYPE_I32:
      ((int32_t*)base)[index] = (int32_t)creal(value);
      break;
    case TF_DTYPE_I64:
      ((int64_t*)base)[index] = (int64_t)creal(value);
      break;
    case TF_DTYPE_F32:
      ((float*)base)[index] = (float)creal(value);
      break;
    case TF_DTYPE_F64:
      ((double*)base)[index] = creal(value);
      break;
    case TF_DTYPE_C64:
      ((float complex*)base)[index] = (float complex)value;
      break;
    default:
      ((double complex*)base)[index] = value;
  }
}

static inline double complex get(const void* base, int dtype, int64_t index) {
  switch (dtype) {
    case TF_DTYPE_I32:
      return ((const int32_t*)base)[index];
    case TF_DTYPE_I64:
      return (double)((const int64_t*)base)[index];
    case TF_DTYPE_F32:
      return ((const float*)base)[index];
    case TF_DTYPE_F64:
      return ((const double*)base)[index];
    case TF_DTYPE_C64:
      return ((const float complex*)base)[index];
    default:
      return ((const double complex*)base)[index];
  }
}

static unsigned long long g_rng = 12345;
static inline double uniform(void) { /* in [-1, 1) */
  g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

/* A buffer of `count` elements filled with random values (integers in
 * [-100, 100], whose sums of products stay exact in double). */
static inline void* random_buffer(int dtype, int64_t count) {
  void* data = malloc((size_t)count * elem_size(dtype) + 1);
  int64_t i;
  for (i = 0; i < count; ++i) {
    put(data, dtype, i,
        is_integer(dtype) ? (double)(int)(100.0 * uniform()) : uniform() + (is_complex(dtype) ? uniform() * I : 0.0));
  }
  return data;
}

static inline int close_enough(double complex found, double complex expected, int dtype) {
  const double tol = is_integer(dtype) ? 0.0 : (dtype == TF_DTYPE_F32 || dtype == TF_DTYPE_C64) ? 1e-4 : 1e-11;
  return cabs(found - expected) <= tol * (1.0 + cabs(expected));
}

static inline tf_tensor make_tensor(void* data, int dtype, int32_t ndim, const int64_t* shape, const int64_t* strides) {
  tf_tensor t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.strides = strides;
  return t;
}

#endif /* TENFERRO_C_API_TEST_SUPPORT_H_ */
