# The installable package: `cmake --install` puts the component libraries,
# the public headers (not the test-only tenferro/testing ones), the provider
# modules, a CMake package (find_package(tenferro CONFIG)) exporting
# tenferro::<component> and the umbrella tenferro::tenferro, and a
# pkg-config files (tenferro.pc; tenferro-c.pc for the C ABI) for non-CMake
# builds.
include(CMakePackageConfigHelpers)

# tenferro::tenferro: every component but mpi (which needs the application's
# MPI) and cuda (the CUDA toolkit), for applications that want it all.
get_property(_tf_components GLOBAL PROPERTY TENFERRO_COMPONENTS)
add_library(tenferro_all INTERFACE)
foreach(_tf_c IN LISTS _tf_components)
  if(NOT _tf_c STREQUAL "mpi" AND NOT _tf_c STREQUAL "cuda")
    target_link_libraries(tenferro_all INTERFACE tenferro_${_tf_c})
  endif()
endforeach()
set_target_properties(tenferro_all PROPERTIES EXPORT_NAME tenferro)
add_library(tenferro::tenferro ALIAS tenferro_all)
install(TARGETS tenferro_all EXPORT tenferroTargets)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tenferro DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  PATTERN testing EXCLUDE PATTERN testing.h EXCLUDE)
# The linalg engine's measured provider table (Note [Provider table file]),
# found there through BuildInfo::installed_data_dir.
if(TARGET tenferro_linalg_cpu)
  install(FILES ${PROJECT_SOURCE_DIR}/data/linalg_provider_table.json DESTINATION ${CMAKE_INSTALL_DATADIR}/tenferro)
endif()

set(_tf_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tenferro)
# Optional components whose third-party targets the package must find.
set(TENFERRO_PACKAGE_HAS_FFT FALSE)
set(TENFERRO_PACKAGE_HAS_MPI FALSE)
set(TENFERRO_PACKAGE_HAS_CUDA FALSE)
if(TARGET tenferro_cuda)
  set(TENFERRO_PACKAGE_HAS_CUDA TRUE)
endif()
if(TARGET tenferro_fft_cpu)
  set(TENFERRO_PACKAGE_HAS_FFT TRUE)
endif()
if(TARGET tenferro_mpi)
  set(TENFERRO_PACKAGE_HAS_MPI TRUE)
endif()
# The names find_package(tenferro COMPONENTS ...) accepts: every exported
# component, the C ABI's `c` and the umbrella `tenferro`.
set(TENFERRO_PACKAGE_COMPONENTS ${_tf_components} tenferro)
if(TARGET tenferro_c)
  list(APPEND TENFERRO_PACKAGE_COMPONENTS c)
endif()
list(JOIN TENFERRO_PACKAGE_COMPONENTS " " TENFERRO_PACKAGE_COMPONENTS)
install(EXPORT tenferroTargets NAMESPACE tenferro:: DESTINATION ${_tf_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tenferroConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tenferroConfig.cmake INSTALL_DESTINATION ${_tf_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tenferroConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tenferroConfig.cmake ${PROJECT_BINARY_DIR}/tenferroConfigVersion.cmake
  DESTINATION ${_tf_cmake_dir})
if(TENFERRO_PACKAGE_HAS_FFT)  # Note [FFTW threads target]
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/TenferroFFTW3Threads.cmake DESTINATION ${_tf_cmake_dir})
endif()

# pkg-config: the static component libraries in link order (dependents
# first), then what they need.
set(_tf_libs "")
set(_tf_reversed ${_tf_components})
list(REVERSE _tf_reversed)
foreach(_tf_c IN LISTS _tf_reversed)
  get_target_property(_tf_type tenferro_${_tf_c} TYPE)
  if(_tf_type STREQUAL "STATIC_LIBRARY" AND NOT _tf_c STREQUAL "cuda" AND NOT _tf_c STREQUAL "mpi")
    string(APPEND _tf_libs " -ltenferro_${_tf_c}")
  endif()
endforeach()
if(TENFERRO_PACKAGE_HAS_FFT)
  string(APPEND _tf_libs " -lfftw3_threads -lfftw3f_threads -lfftw3 -lfftw3f")
endif()
# The prefix relative to the .pc file, so an installation can move.
file(RELATIVE_PATH _tf_pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" _tf_pc_to_prefix "${_tf_pc_to_prefix}")  # ../.., not ../../
configure_file(${PROJECT_SOURCE_DIR}/cmake/tenferro.pc.in ${PROJECT_BINARY_DIR}/tenferro.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tenferro.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# tenferro-cuda.pc: tenferro::cuda and the CUDA runtime, apart, so that CPU
# programs neither link nor need cudart.
if(TENFERRO_PACKAGE_HAS_CUDA)
  set(_tf_cuda_libs "-L${TENFERRO_CUDA_LIBRARY_DIR} -Wl,-rpath,${TENFERRO_CUDA_LIBRARY_DIR} -lcudart")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tenferro-cuda.pc.in ${PROJECT_BINARY_DIR}/tenferro-cuda.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/tenferro-cuda.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
# tenferro-mpi.pc: tenferro::mpi and the MPI library it was built against,
# apart like the umbrella target leaves it out (it needs the application's MPI).
if(TENFERRO_PACKAGE_HAS_MPI)
  # Note [MPI in tenferro-mpi.pc]
  # The MPI library goes in as a pkg-config module the consumer's pkg-config
  # resolves (`Requires: ompi-c`), not as this machine's paths, when the
  # MPI implementation ships one and it is the MPI FindMPI found here (a
  # library of the module is one of MPI_CXX_LIBRARIES): Open MPI's ompi-c,
  # MPICH's mpich, or Debian's alternatives-managed mpi-c. tenferro::mpi
  # uses the C API only (OMPI_SKIP_MPICXX), so the C module suffices. An MPI
  # without a matching module keeps the paths FindMPI gave.
  get_property(_tf_mpi_includes GLOBAL PROPERTY TENFERRO_MPI_INCLUDE_DIRS)
  get_property(_tf_mpi_libraries GLOBAL PROPERTY TENFERRO_MPI_LIBRARIES)
  set(_tf_mpi_requires "")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    foreach(_tf_module IN ITEMS ompi-c mpich mpi-c)
      string(MAKE_C_IDENTIFIER "_TF_PC_${_tf_module}" _tf_prefix)
      pkg_check_modules(${_tf_prefix} QUIET ${_tf_module})
      foreach(_tf_lib IN LISTS ${_tf_prefix}_LINK_LIBRARIES)
        if(_tf_lib IN_LIST _tf_mpi_libraries)
          set(_tf_mpi_requires ", ${_tf_module}")
        endif()
      endforeach()
      if(_tf_mpi_requires)
        break()
      endif()
    endforeach()
  endif()
  set(_tf_mpi_cflags "")
  set(_tf_mpi_libs "")
  if(NOT _tf_mpi_requires)
    foreach(_tf_dir IN LISTS _tf_mpi_includes)
      string(APPEND _tf_mpi_cflags " -I${_tf_dir}")
    endforeach()
    list(JOIN _tf_mpi_libraries " " _tf_mpi_libs)
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tenferro-mpi.pc.in ${PROJECT_BINARY_DIR}/tenferro-mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/tenferro-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
# tenferro-c.pc: the C ABI alone (libtenferro_c.so and its header), for C,
# Fortran and other callers that do not use CMake.
# Its rpath names the library directory twice: through the .pc file's
# directory (`${pcfiledir}/../../lib`, so a moved installation works) and,
# after it, as the absolute directory it was installed to, written at
# install time (--prefix included). The loader resolves the first only
# while lib/pkgconfig exists; a deployment that strips the development
# files keeps the second (the C ABI audit of 2026-12-07).
if(TARGET tenferro_c)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tenferro-c.pc.in ${PROJECT_BINARY_DIR}/tenferro-c.pc.in @ONLY)
  install(CODE "
    get_filename_component(_tf_prefix \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
    file(READ \"${PROJECT_BINARY_DIR}/tenferro-c.pc.in\" _tf_pc)
    string(REPLACE \"%INSTALLED_LIBDIR%\" \"\${_tf_prefix}/${CMAKE_INSTALL_LIBDIR}\" _tf_pc \"\${_tf_pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/pc-install/tenferro-c.pc\" \"\${_tf_pc}\")
    file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\" TYPE FILE
         FILES \"${PROJECT_BINARY_DIR}/pc-install/tenferro-c.pc\")")
endif()
