/* The C ABI between tenferro's external-BLAS GEMM provider and the BLAS
 * modules it loads with dlopen(RTLD_LOCAL) (Note [External BLAS isolation] in
 * external_blas.h). A module is a small C shared object linked against exactly
 * one BLAS library build; it exports one symbol, tenferro_blas_module_v1(),
 * and does no validation: the provider only passes layouts the library
 * accepts. Plain C so a module carries no C++ runtime. */
#ifndef TENFERRO_CPU_GEMM_EXTERNAL_BLAS_MODULE_ABI_H
#define TENFERRO_CPU_GEMM_EXTERNAL_BLAS_MODULE_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TENFERRO_BLAS_MODULE_ABI_VERSION 1u
#define TENFERRO_BLAS_MODULE_SYMBOL "tenferro_blas_module_v1"

/* dtype codes */
enum { TENFERRO_BLAS_F32 = 0, TENFERRO_BLAS_F64 = 1, TENFERRO_BLAS_C64 = 2, TENFERRO_BLAS_C128 = 3 };
/* threading of the loaded library */
enum { TENFERRO_BLAS_SERIAL = 0, TENFERRO_BLAS_PTHREAD = 1, TENFERRO_BLAS_OPENMP = 2 };

/* What was actually loaded, filled by identify(). Strings are
 * NUL-terminated (truncated when longer). */
typedef struct TenferroBlasIdentity {
  char library[32];      /* "openblas", "blis" */
  char version[64];      /* library version */
  char config[256];      /* build configuration string */
  char arch[64];         /* kernel architecture in use ("SkylakeX", "skx", "haswell") */
  char loaded_path[512]; /* file the library code was loaded from (dladdr) */
  int threading;         /* TENFERRO_BLAS_SERIAL / _PTHREAD / _OPENMP */
  int pool_threads;      /* the library's current default thread count */
  int per_call_threads;  /* 1 when gemm_strided honours its `threads` argument per call */
} TenferroBlasIdentity;

typedef struct TenferroBlasModule {
  uint32_t abi_version; /* TENFERRO_BLAS_MODULE_ABI_VERSION */
  /* One-time library initialisation; 0 on success. select_avx512 asks for the
   * AVX-512 kernels where the library would not pick them itself. */
  int (*initialize)(int select_avx512);
  void (*identify)(TenferroBlasIdentity* out);
  /* Column-major BLAS call (trans: 0 = N, 1 = T); NULL when unsupported. */
  void (*gemm_colmajor)(int dtype, int transa, int transb, int m, int n, int k, const void* alpha, const void* a,
                        int lda, const void* b, int ldb, const void* beta, void* c, int ldc);
  /* General-stride call with a per-call thread count; NULL when unsupported. */
  void (*gemm_strided)(int dtype, int64_t m, int64_t n, int64_t k, const void* alpha, const void* a, int64_t rsa,
                       int64_t csa, const void* b, int64_t rsb, int64_t csb, const void* beta, void* c, int64_t rsc,
                       int64_t csc, int threads);
  /* The library's process-global default thread count (openblas_set_num_threads,
   * bli_thread_set_num_threads); NULL when it has none. */
  void (*set_global_threads)(int threads);
} TenferroBlasModule;

typedef const TenferroBlasModule* (*TenferroBlasModuleEntry)(void);

#ifdef __cplusplus
}
#endif

#endif /* TENFERRO_CPU_GEMM_EXTERNAL_BLAS_MODULE_ABI_H */
