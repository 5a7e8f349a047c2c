// AVX-512 variants of Note [Vector math] (vector_math.h); compiled with
// -mavx512f whatever TENFERRO_ARCH says (Note [ISA translation units]).
#include <immintrin.h>

#define TENFERRO_VM_VD __m512d
#define TENFERRO_VM_VF __m512
#define TENFERRO_VM_NAME_D(fn) _ZGVeN8v_##fn
#define TENFERRO_VM_NAME_F(fn) _ZGVeN16v_##fn##f
#define TENFERRO_VM_LOAD_D _mm512_loadu_pd
#define TENFERRO_VM_STORE_D _mm512_storeu_pd
#define TENFERRO_VM_LOAD_F _mm512_loadu_ps
#define TENFERRO_VM_STORE_F _mm512_storeu_ps
#define TENFERRO_VM_TABLE avx512_vector_math
#include "cpu/kernels/vector_math_impl.h"
