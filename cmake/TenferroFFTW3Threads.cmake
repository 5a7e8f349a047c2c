# Note [FFTW threads target]
# fft_cpu links FFTW's threads libraries (fftw3_threads, fftw3f_threads),
# which fftw3.pc does not list. Linked as the paths find_library returned,
# they were written into the installed tenferroTargets.cmake as this build
# machine's paths (/usr/lib/x86_64-linux-gnu/libfftw3_threads.so). They are
# the imported target TenferroFFTW3::threads instead, which the export names
# and which this file defines on both sides: in the build
# (src/fft_cpu/CMakeLists.txt) and in a consumer (tenferroConfig.cmake,
# which installs this file), each finding the libraries next to its own
# fftw3 (after pkg_check_modules(TENFERRO_FFTW3 ... fftw3 fftw3f)).
if(NOT TARGET TenferroFFTW3::threads)
  find_library(TENFERRO_FFTW3_THREADS_LIBRARY NAMES fftw3_threads HINTS ${TENFERRO_FFTW3_LIBRARY_DIRS} REQUIRED)
  find_library(TENFERRO_FFTW3F_THREADS_LIBRARY NAMES fftw3f_threads HINTS ${TENFERRO_FFTW3_LIBRARY_DIRS} REQUIRED)
  add_library(TenferroFFTW3::threads INTERFACE IMPORTED)
  set_target_properties(TenferroFFTW3::threads PROPERTIES
    INTERFACE_LINK_LIBRARIES "${TENFERRO_FFTW3_THREADS_LIBRARY};${TENFERRO_FFTW3F_THREADS_LIBRARY}")
endif()
