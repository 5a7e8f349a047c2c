/* The anchor module of the LAPACK linalg provider (Note [LAPACK provider
 * isolation] in include/tenferro/linalg_cpu/lapack_provider.h). It is linked
 * against netlib's liblapacke and ONE OpenBLAS build by full path, with a
 * RUNPATH to that build's directory, and loaded with dlopen(RTLD_LOCAL): the
 * provider then resolves every LAPACKE_*_work, cblas_*gemm and
 * cblas_*syrk/herk symbol with dlsym on this module's handle, i.e. in this
 * module's own dependency tree,
 * where the chosen OpenBLAS (which contains LAPACK) comes before the
 * liblapack.so.3 that liblapacke names. The module itself only reports what
 * it was bound to. Plain C: it carries no C++ runtime. */
#include <stdint.h>
#include <string.h>

#include <lapacke.h>

#define TENFERRO_LAPACK_MODULE_ABI_VERSION 1u

/* OpenBLAS extensions (declared here so no OpenBLAS header directory is
 * needed; every build exports them). */
extern int openblas_get_parallel(void);
extern char* openblas_get_config(void);
extern int openblas_get_num_threads(void);

typedef struct TenferroLapackModule {
  uint32_t abi_version;
  uint32_t lapack_int_bytes; /* sizeof(lapack_int): 4 for the LP64 interface */
  int (*openblas_parallel)(void);
  const char* (*openblas_config)(void);
  int (*openblas_threads)(void);
  const void* lapacke_anchor; /* keeps the link to liblapacke */
} TenferroLapackModule;

static const char* config(void) { return openblas_get_config(); }

static const TenferroLapackModule kModule = {
    TENFERRO_LAPACK_MODULE_ABI_VERSION, (uint32_t)sizeof(lapack_int),      &openblas_get_parallel, &config,
    &openblas_get_num_threads,          (const void*)&LAPACKE_dgesdd_work,
};

__attribute__((visibility("default"))) const TenferroLapackModule* tenferro_lapack_module_v1(void) { return &kModule; }

#ifdef TENFERRO_LAPACK_OWN_OPENBLAS
/* Note [An OpenBLAS of our own]: this module's OpenBLAS is a renamed copy
 * that nothing else in the process uses. */
__attribute__((visibility("default"))) const int tenferro_lapack_own_openblas = 1;

/* Note [OpenBLAS kernels for new CPUs] (lapack_provider.cpp): the copy
 * chooses its kernels from getenv("OPENBLAS_CORETYPE") when it is
 * initialised. Loaded with RTLD_DEEPBIND, its getenv reference resolves here
 * first, and nowhere else in the process does (the module is RTLD_LOCAL).
 * The environment is read as glibc's getenv reads it; the core the provider
 * set is given only for OPENBLAS_CORETYPE when the environment has none (a
 * user's setting wins), and only while the provider re-initialises the copy.
 */
extern char** environ;

static char core_override[32];

__attribute__((visibility("default"))) char* getenv(const char* name) {
  const size_t length = strlen(name);
  for (char** entry = environ; entry != NULL && *entry != NULL; ++entry) {
    if (strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') return *entry + length + 1;
  }
  if (core_override[0] != '\0' && strcmp(name, "OPENBLAS_CORETYPE") == 0) return core_override;
  return NULL;
}

/* An empty or NULL core clears the override. */
__attribute__((visibility("default"))) void tenferro_lapack_set_openblas_core(const char* core) {
  size_t i = 0;
  for (; core != NULL && core[i] != '\0' && i + 1 < sizeof core_override; ++i) core_override[i] = core[i];
  core_override[i] = '\0';
}
#endif
