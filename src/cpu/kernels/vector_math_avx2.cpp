// AVX2 variants of Note [Vector math] (vector_math.h); compiled with -mavx2
// -mfma -mno-avx512f whatever TENFERRO_ARCH says (Note [ISA translation units]).
#include <immintrin.h>

#define TENFERRO_VM_VD __m256d
#define TENFERRO_VM_VF __m256
#define TENFERRO_VM_NAME_D(fn) _ZGVdN4v_##fn
#define TENFERRO_VM_NAME_F(fn) _ZGVdN8v_##fn##f
#define TENFERRO_VM_LOAD_D _mm256_loadu_pd
#define TENFERRO_VM_STORE_D _mm256_storeu_pd
#define TENFERRO_VM_LOAD_F _mm256_loadu_ps
#define TENFERRO_VM_STORE_F _mm256_storeu_ps
#define TENFERRO_VM_TABLE avx2_vector_math
#include "cpu/kernels/vector_math_impl.h"
