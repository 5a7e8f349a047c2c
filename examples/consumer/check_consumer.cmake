# The `package_*` tests: install the build into a fresh prefix, then build
# and run examples/consumer against it with find_package (MODE=cmake) or
# with pkg-config (MODE=pkgconfig). Usage:
#   cmake -DBUILD_DIR=<tenferro build> -DSOURCE_DIR=<consumer> -DWORK=<scratch> -DMODE=cmake|pkgconfig
#         [-DPYTHON=<python with numpy>] [-DMPIEXEC_FLAGS=<flags before -np>] -P check_consumer.cmake
# The prefix is not the configured one and the build tree still exists:
# the C++ consumer, the installed shared library and the Python package
# must load their provider modules from the prefix (Note [Locating provider
# files]), which the loader's LD_DEBUG=files trace shows.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install into ${prefix} failed (${rc})")
endif()
# The command-line program is installed and runs from the prefix.
execute_process(COMMAND ${prefix}/bin/tenferro info RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "kernels")
  message(FATAL_ERROR "${prefix}/bin/tenferro info: expected status 0 and the kernels section, found ${rc}: ${err}")
endif()
# ... and finds its data in this prefix, not in the configured one (Note
# [Locating provider files]: the program's own directory gives its prefix).
string(FIND "${out}" "provider_table: ${prefix}/share/tenferro/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${prefix}/bin/tenferro info: expected the linalg provider table under ${prefix}, found:\n${out}")
endif()
# The package names no library path of the build machine for FFTW's
# threads libraries (Note [FFTW threads target]) or, where the MPI ships a
# pkg-config module, for MPI (Note [MPI in tenferro-mpi.pc]): the consumer
# finds its own.
file(GLOB package_files ${prefix}/lib*/cmake/tenferro/tenferroTargets*.cmake
     ${prefix}/lib/*/cmake/tenferro/tenferroTargets*.cmake)
if(NOT package_files)
  message(FATAL_ERROR "no tenferroTargets*.cmake under ${prefix}/lib*/cmake/tenferro")
endif()
foreach(f IN LISTS package_files)
  file(READ ${f} text)
  if(text MATCHES "/[^ ;\"]*libfftw3f?_threads")
    message(FATAL_ERROR "${f} names the build machine's ${CMAKE_MATCH_0}; expected TenferroFFTW3::threads")
  endif()
endforeach()
file(GLOB mpi_pc ${prefix}/lib*/pkgconfig/tenferro-mpi.pc ${prefix}/lib/*/pkgconfig/tenferro-mpi.pc)
execute_process(COMMAND pkg-config --exists ompi-c RESULT_VARIABLE no_ompi_pc)
if(mpi_pc AND no_ompi_pc EQUAL 0)
  file(READ ${mpi_pc} text)
  if(NOT text MATCHES "Requires: tenferro = [^\n]*, (ompi-c|mpich|mpi-c)" OR text MATCHES "/[^ ]*libmpi")
    message(FATAL_ERROR "${mpi_pc}: expected MPI through a pkg-config module (Requires), found:\n${text}")
  endif()
endif()
foreach(forbidden include/tenferro/testing include/tenferro/testing.h)
  if(EXISTS ${prefix}/${forbidden})
    message(FATAL_ERROR "the test-only ${forbidden} was installed")
  endif()
endforeach()

# Compiles `source` into `output` with `compiler`, `options` and the flags
# of pkg-config package `package`; fails with the reason otherwise.
function(build_with_pc package compiler options source output)
  execute_process(COMMAND pkg-config --cflags --libs ${package}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs ${package} failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  execute_process(COMMAND ${compiler} ${options} ${source} -o ${output} ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling ${source} with ${package}.pc failed:\n${out}")
  endif()
endfunction()

if(MODE STREQUAL "cmake")
  # CPU components need no CUDA toolkit (looked for only for COMPONENTS cuda).
  # __FILE__ rewritten away from the prefix: the imported targets name it
  # (Note [The prefix of the headers]).
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build -G Ninja
                  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
                  "-DCMAKE_CXX_FLAGS=-fmacro-prefix-map=${prefix}=/no/such/prefix"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the consumer failed:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the consumer failed:\n${out}")
  endif()
  set(app ${WORK}/build/contract)
  # A component the package does not have fails find_package with the names
  # it does have.
  file(WRITE ${WORK}/bad/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)\nproject(bad LANGUAGES CXX)\n"
       "find_package(tenferro CONFIG REQUIRED COMPONENTS einsum_cpu no_such_part)\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/bad -B ${WORK}/bad/build -G Ninja -DCMAKE_PREFIX_PATH=${prefix}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps the message
  if(rc EQUAL 0 OR NOT flat MATCHES "component 'no_such_part' is not available: expected one of: .*einsum_cpu")
    message(FATAL_ERROR "find_package(tenferro COMPONENTS no_such_part) should fail naming the components (${rc}):\n${out}")
  endif()
  # A C project asking for the C ABI alone needs none of the C++
  # components' dependencies (they are disabled here) and builds.
  if(EXISTS ${prefix}/include/tenferro/c/tenferro.h)
    file(WRITE ${WORK}/conly/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)\nproject(conly LANGUAGES C)\n"
         "find_package(tenferro CONFIG REQUIRED COMPONENTS c)\n"
         "add_executable(contract_c ${SOURCE_DIR}/contract_c.c)\ntarget_link_libraries(contract_c PRIVATE tenferro::c)\n")
    set(no_cxx_deps)
    foreach(dep Threads OpenSSL fmt nlohmann_json TBB Eigen3 PkgConfig CUDAToolkit MPI)
      list(APPEND no_cxx_deps -DCMAKE_DISABLE_FIND_PACKAGE_${dep}=ON)
    endforeach()
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/conly -B ${WORK}/conly/build -G Ninja
                    -DCMAKE_PREFIX_PATH=${prefix} ${no_cxx_deps}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0)
      execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/conly/build
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    endif()
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "a C-only project (COMPONENTS c) without the C++ dependencies failed:\n${out}")
    endif()
  endif()
else()
  file(GLOB pc_dir LIST_DIRECTORIES true ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  execute_process(COMMAND pkg-config --cflags --libs tenferro
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs tenferro failed: ${err}")
  endif()
  if(flags MATCHES "cudart|tenferro_cuda")
    message(FATAL_ERROR "pkg-config --libs tenferro links CUDA (tenferro-cuda.pc is for that): ${flags}")
  endif()
  if(flags MATCHES "tenferro_mpi")
    message(FATAL_ERROR "pkg-config --libs tenferro links tenferro_mpi (tenferro-mpi.pc is for that): ${flags}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(app ${WORK}/contract_pc)
  # The package does not choose the language standard (-std=c++23 stays
  # C++23); the consumer asks for C++20, and an older standard gets the
  # headers' message saying so.
  execute_process(COMMAND c++ -std=c++20 -O1 -Wall -Wextra -Werror ${SOURCE_DIR}/contract.cpp -o ${app} ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling the consumer with pkg-config flags failed:\n${out}")
  endif()
  # A program built with AddressSanitizer against this release install:
  # the linalg provider finds the sanitizer's runtime in the process and
  # loads its LAPACK module without RTLD_DEEPBIND, which that runtime
  # refuses by killing the process (Note [An OpenBLAS of our own]).
  execute_process(COMMAND c++ -std=c++20 -O1 -fsanitize=address ${SOURCE_DIR}/contract.cpp -o ${WORK}/contract_asan
                          ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling the consumer with -fsanitize=address failed:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 ${WORK}/contract_asan
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "det -6")
    message(FATAL_ERROR "the consumer built with -fsanitize=address failed (${rc}): ${out}${err}")
  endif()
  execute_process(COMMAND c++ -std=c++17 -fsyntax-only ${SOURCE_DIR}/contract.cpp ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "headers need C\\+\\+20")
    message(FATAL_ERROR "a C++17 compile of the consumer should fail with the C++20 message:\n${out}")
  endif()
  if(EXISTS ${pc_dir}/tenferro-mpi.pc)
    # tenferro::mpi through tenferro-mpi.pc (tenferro.pc leaves it out).
    build_with_pc(tenferro-mpi c++ "-std=c++20;-O1;-Wall;-Wextra;-Werror" ${SOURCE_DIR}/ranks.cpp ${WORK}/ranks_pc)
  endif()
  if(EXISTS ${prefix}/include/tenferro/c/tenferro.h)
    # The C ABI through tenferro-c.pc: cc, no CMake.
    build_with_pc(tenferro-c cc "-std=c99;-O1" ${SOURCE_DIR}/contract_c.c ${WORK}/contract_c_pc)
    set(c_app ${WORK}/contract_c_pc)
    # Its rpath holds without lib/pkgconfig too (a deployment without the
    # development files): the installed directory follows the relative one.
    file(RENAME ${pc_dir} ${pc_dir}.hidden)
    execute_process(COMMAND ${c_app} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    file(RENAME ${pc_dir}.hidden ${pc_dir})
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the tenferro-c.pc consumer failed without lib/pkgconfig (${rc}): ${out}${err}")
    endif()
  endif()
endif()

# Fails unless the loader trace `trace` shows a tenferro provider module
# loaded, every one of them from under the prefix.
function(check_modules_from_prefix what trace)
  string(REGEX MATCHALL "calling init: [^\n]*tenferro_(lapack|blas)_[^\n]*\\.so" inits "${trace}")
  if(NOT inits)
    message(FATAL_ERROR "${what}: no tenferro provider module was loaded")
  endif()
  foreach(init IN LISTS inits)
    string(REPLACE "calling init: " "" path "${init}")
    string(FIND "${path}" "${prefix}/" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "${what} loaded ${path}, expected the install's copy under ${prefix}")
    endif()
  endforeach()
  message(STATUS "${what} loaded its modules from the prefix: ${inits}")
endfunction()

# The C++ program links the static libraries: it finds the modules of the
# prefix it was compiled against (Note [The prefix of the headers]), not
# the build tree's.
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_DEBUG=files ${app}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "det -6")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}${err}")
endif()
message(STATUS "consumer (${MODE}) printed: ${out}")
check_modules_from_prefix("the C++ consumer (${MODE})" "${err}")
# The C ABI through tenferro::c (the find_package consumer) or tenferro-c.pc
# (pkg-config), wherever the package has it, as every build with the C API
# does.
if(MODE STREQUAL "cmake" AND EXISTS ${prefix}/include/tenferro/c/tenferro.h)
  set(c_app ${WORK}/build/contract_c)
endif()
# tenferro::mpi through find_package's optional component, under mpirun,
# wherever the package has it.
if(MODE STREQUAL "cmake" AND EXISTS ${prefix}/include/tenferro/mpi.h)
  if(NOT EXISTS ${WORK}/build/ranks)
    message(FATAL_ERROR "the package has tenferro::mpi, but the consumer did not find the mpi component")
  endif()
  find_program(mpiexec NAMES mpiexec mpirun REQUIRED)
  execute_process(COMMAND ${mpiexec} ${MPIEXEC_FLAGS} -np 2 ${WORK}/build/ranks
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(REGEX MATCHALL "ranks 2 sum 1" lines "${out}")
  list(LENGTH lines n)
  if(NOT rc EQUAL 0 OR NOT n EQUAL 2)
    message(FATAL_ERROR "the tenferro::mpi consumer failed under mpirun -np 2 (${rc}): ${out}${err}")
  endif()
  message(STATUS "tenferro::mpi consumer printed: ${out}")
endif()

if(c_app)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_DEBUG=files ${c_app}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "c det -6")
    message(FATAL_ERROR "the C consumer through tenferro::c failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "C consumer printed: ${out}")
  check_modules_from_prefix("the installed libtenferro_c" "${err}")
endif()
# The installed Python package (the module is installed with the package).
file(GLOB py_ext ${prefix}/*/python3/dist-packages/tenferro/_tenferro*.so)
if(PYTHON AND py_ext)
  list(GET py_ext 0 py_ext)
  get_filename_component(py_dir ${py_ext} DIRECTORY)
  get_filename_component(py_dir ${py_dir} DIRECTORY)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_DEBUG=files PYTHONPATH=${py_dir} ${PYTHON} -c
                    "import numpy, tenferro; print('py det', round(float(tenferro.linalg.det(numpy.array([[1., 2.], [4., 2.]])))))"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "py det -6")
    message(FATAL_ERROR "the installed Python package failed (${rc}): ${out}${err}")
  endif()
  check_modules_from_prefix("the installed Python package" "${err}")
endif()
file(REMOVE_RECURSE ${WORK})
