# The `package_*` tests: install the build into a fresh prefix, then build
# and run examples/consumer against it with find_package (MODE=cmake) or
# with pkg-config (MODE=pkgconfig). Usage:
#   cmake -DBUILD_DIR=<tenferro build> -DSOURCE_DIR=<consumer> -DWORK=<scratch> -DMODE=cmake|pkgconfig -P check_consumer.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install into ${prefix} failed (${rc})")
endif()
foreach(forbidden include/tenferro/testing include/tenferro/testing.h)
  if(EXISTS ${prefix}/${forbidden})
    message(FATAL_ERROR "the test-only ${forbidden} was installed")
  endif()
endforeach()

if(MODE STREQUAL "cmake")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK}/build -G Ninja
                  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
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
else()
  file(GLOB pc_dir LIST_DIRECTORIES true ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  execute_process(COMMAND pkg-config --cflags --libs tenferro
                  RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs tenferro failed: ${err}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(app ${WORK}/contract_pc)
  execute_process(COMMAND c++ -O1 ${SOURCE_DIR}/contract.cpp -o ${app} ${flags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling the consumer with pkg-config flags failed:\n${out}")
  endif()
  if(EXISTS ${prefix}/include/tenferro/c/tenferro.h)
    # The C ABI through tenferro-c.pc: cc, no CMake.
    execute_process(COMMAND pkg-config --cflags --libs tenferro-c
                    RESULT_VARIABLE rc OUTPUT_VARIABLE c_flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "pkg-config --cflags --libs tenferro-c failed: ${err}")
    endif()
    separate_arguments(c_flags UNIX_COMMAND "${c_flags}")
    execute_process(COMMAND cc -std=c99 -O1 ${SOURCE_DIR}/contract_c.c -o ${WORK}/contract_c_pc ${c_flags}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "compiling the C consumer with tenferro-c.pc failed:\n${out}")
    endif()
    set(c_app ${WORK}/contract_c_pc)
  endif()
endif()

execute_process(COMMAND ${app} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "det -6")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}${err}")
endif()
message(STATUS "consumer (${MODE}) printed: ${out}")
# The C ABI through tenferro::c (the find_package consumer) or tenferro-c.pc
# (pkg-config), wherever the package has it, as every build with the C API
# does.
if(MODE STREQUAL "cmake" AND EXISTS ${prefix}/include/tenferro/c/tenferro.h)
  set(c_app ${WORK}/build/contract_c)
endif()
if(c_app)
  execute_process(COMMAND ${c_app} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "c det -6")
    message(FATAL_ERROR "the C consumer through tenferro::c failed (${rc}): ${out}${err}")
  endif()
  message(STATUS "C consumer printed: ${out}")
endif()
file(REMOVE_RECURSE ${WORK})
