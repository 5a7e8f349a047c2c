/* BLAS module for BLIS through its typed API (bli_?gemm_ex) with a per-call
 * rntm_t thread count. Linked by full path and RUNPATH against one BLIS
 * build (src/cpu/gemm/sources.cmake).
 *
 * Note [BLIS kernel selection]
 * BLIS 0.9 picks its kernels from the CPU brand string and chooses the AVX2
 * `haswell` kernels on CPUs whose brand string names no SKU (KVM guests), even
 * when the `skx` AVX-512 kernels are compiled in. The only selection interface
 * is the BLIS_ARCH_TYPE environment variable, read once by bli_init(). When
 * asked to and when the CPU has AVX-512F/DQ/BW/VL and the variable is unset,
 * initialize() sets it to the skx id, calls bli_init() and removes it again.
 * That touches the process environment once, at provider construction; the arch
 * actually in use is reported by identify(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blis.h>

#include "blas_module_abi.h"

static void copy_string(char* dst, size_t size, const char* src) { snprintf(dst, size, "%s", src != NULL ? src : ""); }

static int cpu_has_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

static int initialize(int select_avx512) {
  if (select_avx512 && cpu_has_avx512() && getenv("BLIS_ARCH_TYPE") == NULL) {
    char id[16];
    snprintf(id, sizeof(id), "%d", (int)BLIS_ARCH_SKX);
    if (setenv("BLIS_ARCH_TYPE", id, 0) != 0) return 1;
    bli_init();
    unsetenv("BLIS_ARCH_TYPE");
  } else {
    bli_init();
  }
  return 0;
}

static void identify(TenferroBlasIdentity* out) {
  memset(out, 0, sizeof(*out));
  copy_string(out->library, sizeof(out->library), "blis");
  copy_string(out->version, sizeof(out->version), bli_info_get_version_str());
  const char* arch = bli_arch_string(bli_arch_query_id());
  copy_string(out->arch, sizeof(out->arch), arch);
  const int openmp = (int)bli_info_get_enable_openmp();
  const int pthreads = (int)bli_info_get_enable_pthreads();
  out->threading = openmp ? TENFERRO_BLAS_OPENMP : pthreads ? TENFERRO_BLAS_PTHREAD : TENFERRO_BLAS_SERIAL;
  snprintf(out->config, sizeof(out->config), "BLIS %s arch=%s threading=%s", bli_info_get_version_str(), arch,
           openmp     ? "openmp"
           : pthreads ? "pthreads"
                      : "none");
  out->pool_threads = (int)bli_thread_get_num_threads();
  out->per_call_threads = 1;
  Dl_info info;
  void (*fn)(void) = &bli_init;
  void* address;
  memcpy(&address, &fn, sizeof(address));
  if (dladdr(address, &info) != 0) copy_string(out->loaded_path, sizeof(out->loaded_path), info.dli_fname);
}

static void gemm_strided(int dtype, int64_t m, int64_t n, int64_t k, const void* alpha, const void* a, int64_t rsa,
                         int64_t csa, const void* b, int64_t rsb, int64_t csb, const void* beta, void* c, int64_t rsc,
                         int64_t csc, int threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(threads > 0 ? threads : 1, &rntm);
  const trans_t nt = BLIS_NO_TRANSPOSE;
  switch (dtype) {
    case TENFERRO_BLAS_F32:
      bli_sgemm_ex(nt, nt, m, n, k, (float*)alpha, (float*)a, rsa, csa, (float*)b, rsb, csb, (float*)beta, (float*)c,
                   rsc, csc, NULL, &rntm);
      break;
    case TENFERRO_BLAS_F64:
      bli_dgemm_ex(nt, nt, m, n, k, (double*)alpha, (double*)a, rsa, csa, (double*)b, rsb, csb, (double*)beta,
                   (double*)c, rsc, csc, NULL, &rntm);
      break;
    case TENFERRO_BLAS_C64:
      bli_cgemm_ex(nt, nt, m, n, k, (scomplex*)alpha, (scomplex*)a, rsa, csa, (scomplex*)b, rsb, csb, (scomplex*)beta,
                   (scomplex*)c, rsc, csc, NULL, &rntm);
      break;
    case TENFERRO_BLAS_C128:
      bli_zgemm_ex(nt, nt, m, n, k, (dcomplex*)alpha, (dcomplex*)a, rsa, csa, (dcomplex*)b, rsb, csb, (dcomplex*)beta,
                   (dcomplex*)c, rsc, csc, NULL, &rntm);
      break;
    default:
      break;
  }
}

static void set_global_threads(int threads) { bli_thread_set_num_threads(threads); }

static const TenferroBlasModule kModule = {
    TENFERRO_BLAS_MODULE_ABI_VERSION, initialize, identify, NULL, gemm_strided, set_global_threads};

__attribute__((visibility("default"))) const TenferroBlasModule* tenferro_blas_module_v1(void) { return &kModule; }
