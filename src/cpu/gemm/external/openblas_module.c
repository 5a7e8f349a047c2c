/* BLAS module for one OpenBLAS build (serial, pthread or OpenMP), chosen at
 * link time by full path and RUNPATH (src/cpu/gemm/sources.cmake). The
 * OpenBLAS API is declared here so the module needs no OpenBLAS headers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "blas_module_abi.h"

char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_parallel(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int threads);

enum { kColMajor = 102, kNoTrans = 111, kTrans = 112 };
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc);
void cblas_cgemm(int order, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int lda,
                 const void* b, int ldb, const void* beta, void* c, int ldc);
void cblas_zgemm(int order, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int lda,
                 const void* b, int ldb, const void* beta, void* c, int ldc);

static void copy_string(char* dst, size_t size, const char* src) { snprintf(dst, size, "%s", src != NULL ? src : ""); }

static int initialize(int select_avx512) {
  (void)select_avx512; /* OpenBLAS DYNAMIC_ARCH already picks SkylakeX kernels */
  return 0;
}

static void identify(TenferroBlasIdentity* out) {
  memset(out, 0, sizeof(*out));
  copy_string(out->library, sizeof(out->library), "openblas");
  const char* config = openblas_get_config();
  copy_string(out->config, sizeof(out->config), config);
  /* "OpenBLAS 0.3.21 ..." -> version is the second word */
  char version[64] = "";
  if (config != NULL && sscanf(config, "OpenBLAS %63s", version) != 1) version[0] = '\0';
  copy_string(out->version, sizeof(out->version), version);
  copy_string(out->arch, sizeof(out->arch), openblas_get_corename());
  const int parallel = openblas_get_parallel();
  out->threading = parallel == 0 ? TENFERRO_BLAS_SERIAL : parallel == 2 ? TENFERRO_BLAS_OPENMP : TENFERRO_BLAS_PTHREAD;
  out->pool_threads = openblas_get_num_threads();
  out->per_call_threads = 0;
  Dl_info info;
  char* (*fn)(void) = &openblas_get_config;
  void* address;
  memcpy(&address, &fn, sizeof(address));
  if (dladdr(address, &info) != 0) copy_string(out->loaded_path, sizeof(out->loaded_path), info.dli_fname);
}

/* Note [Serial OpenBLAS is not reentrant]
 * Debian's serial OpenBLAS 0.3.21 (SINGLE_THREADED; its locks are compiled
 * out without USE_LOCKING) returned wrong results when two of our workers
 * called it at once: DotGeneralTest.ExactlyOneFanOutLevelWithEveryProvider,
 * a batch of small products split over two workers, failed in 2 of 30 and
 * 1 of 46 runs on a loaded 2-core machine, a few 2 x 3 blocks of one
 * product wrong; with this lock, 0 of 80. A standalone two-thread loop of
 * the same calls did not reproduce it, so the exact race inside the library
 * is not known. The lock is this module's because the state it guards is
 * the loaded library's; the threaded builds lock internally. */
static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;

static void gemm_colmajor(int dtype, int transa, int transb, int m, int n, int k, const void* alpha, const void* a,
                          int lda, const void* b, int ldb, const void* beta, void* c, int ldc) {
  const int ta = transa ? kTrans : kNoTrans;
  const int tb = transb ? kTrans : kNoTrans;
  const int serial = openblas_get_parallel() == 0;
  if (serial) pthread_mutex_lock(&serial_lock);
  switch (dtype) {
    case TENFERRO_BLAS_F32:
      cblas_sgemm(kColMajor, ta, tb, m, n, k, *(const float*)alpha, (const float*)a, lda, (const float*)b, ldb,
                  *(const float*)beta, (float*)c, ldc);
      break;
    case TENFERRO_BLAS_F64:
      cblas_dgemm(kColMajor, ta, tb, m, n, k, *(const double*)alpha, (const double*)a, lda, (const double*)b, ldb,
                  *(const double*)beta, (double*)c, ldc);
      break;
    case TENFERRO_BLAS_C64:
      cblas_cgemm(kColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      break;
    case TENFERRO_BLAS_C128:
      cblas_zgemm(kColMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      break;
    default:
      break;
  }
  if (serial) pthread_mutex_unlock(&serial_lock);
}

static void set_global_threads(int threads) { openblas_set_num_threads(threads); }

static const TenferroBlasModule kModule = {
    TENFERRO_BLAS_MODULE_ABI_VERSION, initialize, identify, gemm_colmajor, NULL, set_global_threads};

__attribute__((visibility("default"))) const TenferroBlasModule* tenferro_blas_module_v1(void) { return &kModule; }
