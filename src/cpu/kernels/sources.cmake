# CPU kernels (elementwise, reduction, indexing, creation, layout): plain
# functions over borrowed TensorViews and a ParallelContext.
list(APPEND TENFERRO_CPU_SOURCES
  kernels/copy_kernel.cpp
  kernels/creation.cpp
  kernels/elementwise.cpp
  kernels/gather_scatter.cpp
  kernels/layout.cpp
  kernels/random.cpp
  kernels/along_axis.cpp
  kernels/reduction.cpp
  kernels/slicing.cpp
  kernels/transpose_micro_avx2.cpp
  kernels/transpose_micro_avx512.cpp
  kernels/validation.cpp
  kernels/vector_math_avx2.cpp
  kernels/vector_math_avx512.cpp
)
list(APPEND TENFERRO_CPU_TESTS
  kernels/along_axis_test.cpp
  kernels/elementwise_test.cpp
  kernels/indexing_test.cpp
  kernels/layout_test.cpp
  kernels/numpy_reference_test.cpp
  kernels/random_test.cpp
  kernels/reduction_test.cpp
  kernels/vector_math_test.cpp
)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb)
# Note [Vector math] (kernels/vector_math.h): glibc's vector math library.
# Found here, linked by name: the exported targets then say -lmvec, not this
# machine's path to it.
find_library(TENFERRO_MVEC_LIBRARY NAMES mvec REQUIRED)
list(APPEND TENFERRO_CPU_DEPENDS mvec)

# Note [ISA translation units] (gemm/native/micro_kernels.h): the SIMD tile transposes
# get their ISA flags whatever TENFERRO_ARCH says; copy_kernel.cpp calls
# the set layout_kernel_isa() allows (Note [ISA cap] in tenferro/cpu/cpu_isa.h).
set_source_files_properties(kernels/transpose_micro_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512vl;-mavx2")
set_source_files_properties(kernels/transpose_micro_avx2.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mno-avx512f")
set_source_files_properties(kernels/vector_math_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx2;-mfma")
set_source_files_properties(kernels/vector_math_avx2.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-mno-avx512f")
