# gemm/: GEMM providers (native kernels, null skeleton, external BLAS
# modules) and the dot_general composite. Paths are relative to src/cpu.
list(APPEND TENFERRO_CPU_SOURCES
  gemm/gemm_provider.cpp
  gemm/native/gemm_kernels_avx512.cpp
  gemm/native/gemm_kernels_avx2.cpp
  gemm/native/gemm_kernels_portable.cpp
  gemm/native/gemm_workspace_pool.cpp
  gemm/native/native_gemm.cpp
  gemm/external/external_blas.cpp
  gemm/dot_general_planner.cpp
  gemm/dot_general_tiny.cpp
  gemm/dot_general.cpp
  gemm/integer_gemm.cpp
  gemm/integer_gemm_avx2.cpp
  gemm/integer_gemm_avx512.cpp
)
list(APPEND TENFERRO_CPU_TESTS
  gemm/gemm_conformance_test.cpp
  gemm/native/native_gemm_test.cpp
  gemm/external/external_blas_test.cpp
  gemm/dot_general_test.cpp
  gemm/integer_gemm_test.cpp
)
# The integer kernel's jobs share the composite's workspace pool across workers.
list(APPEND TENFERRO_CPU_TSAN_TESTS gemm/integer_gemm_test.cpp)
list(APPEND TENFERRO_CPU_DEPENDS TBB::tbb ${CMAKE_DL_LIBS})

# Note [ISA translation units] (native/micro_kernels.h): the SIMD kernels get
# their target flags whatever TENFERRO_ARCH says (the AVX2 ones never
# AVX-512, even under -march=native); the driver checks the CPU before using
# them.
set_source_files_properties(gemm/native/gemm_kernels_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx512vl;-mavx512bw;-mavx2;-mfma")
set_source_files_properties(gemm/native/gemm_kernels_avx2.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-mno-avx512f")
set_source_files_properties(gemm/integer_gemm_avx512.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx512f;-mavx512dq;-mavx512vl;-mavx512bw;-mavx2;-mfma")
set_source_files_properties(gemm/integer_gemm_avx2.cpp PROPERTIES
  COMPILE_OPTIONS "-mavx2;-mfma;-mno-avx512f")

# External BLAS modules (Note [External BLAS isolation] in
# include/tenferro/cpu/gemm/external_blas.h): one C shared object per
# library build, linked by full path with a RUNPATH to that build's
# directory, loaded by ExternalBlasGemmProvider with dlopen(RTLD_LOCAL).
# A build that is not installed simply gets no module (its provider then
# reports kUnsupported).
set(TENFERRO_BLAS_MODULE_DIR ${PROJECT_BINARY_DIR}/blas_modules)
set_source_files_properties(gemm/external/external_blas.cpp PROPERTIES
  COMPILE_DEFINITIONS "TENFERRO_BLAS_MODULE_DIR=\"${TENFERRO_BLAS_MODULE_DIR}\"")
set(_tf_blas_modules "")
function(tenferro_add_blas_module name source library)
  get_filename_component(library_dir ${library} DIRECTORY)
  add_library(${name} MODULE ${source})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gemm/external)
  if(ARGN)  # third-party headers: no warnings from them
    target_include_directories(${name} SYSTEM PRIVATE ${ARGN})
  endif()
  target_link_libraries(${name} PRIVATE ${library})
  target_compile_options(${name} PRIVATE -Wall -Wextra $<$<BOOL:${TENFERRO_WERROR}>:-Werror>)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    LIBRARY_OUTPUT_DIRECTORY ${TENFERRO_BLAS_MODULE_DIR}
    C_VISIBILITY_PRESET hidden
    BUILD_RPATH ${library_dir}
    INSTALL_RPATH ${library_dir})
  install(TARGETS ${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tenferro)
endfunction()

set(_tf_libdir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
foreach(_tf_build IN ITEMS serial pthread openmp)
  set(_tf_lib ${_tf_libdir}/openblas-${_tf_build}/libopenblas.so.0)
  if(EXISTS ${_tf_lib})
    tenferro_add_blas_module(tenferro_blas_openblas_${_tf_build} gemm/external/openblas_module.c ${_tf_lib})
    list(APPEND _tf_blas_modules tenferro_blas_openblas_${_tf_build})
  endif()
endforeach()
# BLIS: the first installed build, preferring OpenMP (its pool is reused
# across calls; the pthread build creates threads on every call).
foreach(_tf_build IN ITEMS openmp serial pthread)
  set(_tf_lib ${_tf_libdir}/blis-${_tf_build}/libblis.so.4)
  set(_tf_inc /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-${_tf_build})
  if(EXISTS ${_tf_lib} AND EXISTS ${_tf_inc}/blis.h AND NOT TARGET tenferro_blas_blis)
    tenferro_add_blas_module(tenferro_blas_blis gemm/external/blis_module.c ${_tf_lib} ${_tf_inc})
    list(APPEND _tf_blas_modules tenferro_blas_blis)
  endif()
endforeach()
if(_tf_blas_modules)
  # tenferro_cpu is created after this file is included; build the modules
  # whenever it is built so tests and tools find them.
  cmake_language(DEFER CALL add_dependencies tenferro_cpu ${_tf_blas_modules})
endif()
