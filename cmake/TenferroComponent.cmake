# tenferro_component(): one component = one directory = one library target
# `tenferro_<name>` with alias `tenferro::<name>`, an explicit source list and
# declared dependencies. Unit tests listed under TESTS build into one GoogleTest
# program per component, registered with ctest under the label <name>.
#
#   tenferro_component(<name>
#     SOURCES a.cpp b.cpp            # explicit, never globbed
#     DEPENDS tenferro::base ...     # PUBLIC component/third-party deps
#     PRIVATE_DEPENDS ...            # PRIVATE deps
#     TESTS a_test.cpp ...           # GoogleTest sources beside the code
#     TEST_DEPENDS ...               # extra libraries for the tests only
#     TSAN                           # also run the tests under ThreadSanitizer
#                                    # (label gets `:tsan`; add the test target
#                                    # to the tsan build preset)
#     TSAN_TESTS c_test.cpp ...)     # tests of a component without TSAN that
#                                    # do run under ThreadSanitizer: a second
#                                    # program tenferro_<name>_tsan_tests,
#                                    # label unit:<name>:tsan

# Flags every tenferro target gets (not third-party code).
function(tenferro_apply_flags target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wnon-virtual-dtor -Woverloaded-virtual
    -Wimplicit-fallthrough
    # Aggregates with default member initialisers are idiomatic here.
    -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false -Wrestrict positives inside libstdc++'s
    # std::string at -O3 (GCC PR105651); the code involved is not ours.
    target_compile_options(${target} PRIVATE -Wno-restrict)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # `#pragma clang loop vectorize(assume_safety)` (TENFERRO_IVDEP) is a
    # hint: clang reports -Wpass-failed when an instantiation does not
    # vectorize (e.g. under sanitizers). Still shown, never an error.
    target_compile_options(${target} PRIVATE -Wno-error=pass-failed)
  endif()
  if(TENFERRO_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(TENFERRO_NATIVE_ARCH)
  add_compile_options(-march=native)
endif()
if(TENFERRO_SANITIZE)
  add_compile_options(-fsanitize=${TENFERRO_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TENFERRO_SANITIZE})
endif()

define_property(GLOBAL PROPERTY TENFERRO_COMPONENTS
  BRIEF_DOCS "tenferro components in declaration order" FULL_DOCS "-")

function(tenferro_component name)
  cmake_parse_arguments(ARG "TSAN" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS;TESTS;TEST_DEPENDS;TSAN_TESTS" ${ARGN})
  set(target tenferro_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target}
      PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
    tenferro_apply_flags(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target}
      INTERFACE ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
    target_link_libraries(${target} INTERFACE ${ARG_DEPENDS})
  endif()
  add_library(tenferro::${name} ALIAS ${target})

  # Record direct component dependencies for the boundary check.
  set(component_deps "")
  foreach(dep IN LISTS ARG_DEPENDS ARG_PRIVATE_DEPENDS)
    if(dep MATCHES "^tenferro::(.+)$")
      list(APPEND component_deps ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY TENFERRO_DEPS_${name} "${component_deps}")
  set_property(GLOBAL APPEND PROPERTY TENFERRO_COMPONENTS ${name})

  # One label per test, "unit:<component>[:tsan]": gtest_discover_tests
  # cannot pass list-valued properties, and ctest -L matches a regular
  # expression, so `-L unit`, `-L unit:runtime` and `-L tsan` all select.
  if(TENFERRO_BUILD_TESTS AND ARG_TESTS)
    set(label "unit:${name}")
    if(ARG_TSAN)
      string(APPEND label ":tsan")
    endif()
    tenferro_unit_test_program(tenferro_${name}_tests ${target} "${label}"
      SOURCES ${ARG_TESTS} DEPENDS ${ARG_TEST_DEPENDS})
  endif()
  if(TENFERRO_BUILD_TESTS AND ARG_TSAN_TESTS)
    tenferro_unit_test_program(tenferro_${name}_tsan_tests ${target} "unit:${name}:tsan"
      SOURCES ${ARG_TSAN_TESTS} DEPENDS ${ARG_TEST_DEPENDS})
  endif()
endfunction()

# A GoogleTest program over `library`, each test registered with `label`.
function(tenferro_unit_test_program test_target library label)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_executable(${test_target} ${ARG_SOURCES})
  target_link_libraries(${test_target} PRIVATE ${library} ${ARG_DEPENDS}
                        GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${test_target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(${test_target} PRIVATE
    TENFERRO_SHARED_DIR="${TENFERRO_SHARED_DIR}"
    TENFERRO_REFERENCE_PYTHON="${TENFERRO_REFERENCE_PYTHON}"
    TENFERRO_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  tenferro_apply_flags(${test_target})
  gtest_discover_tests(${test_target}
    PROPERTIES LABELS "${label}" DISCOVERY_TIMEOUT 60)
endfunction()

# Transitive component dependencies of `name` (excluding itself).
function(tenferro_component_closure name out)
  set(seen "")
  set(todo ${name})
  while(todo)
    list(POP_FRONT todo current)
    get_property(deps GLOBAL PROPERTY TENFERRO_DEPS_${current})
    foreach(dep IN LISTS deps)
      if(NOT dep IN_LIST seen)
        list(APPEND seen ${dep})
        list(APPEND todo ${dep})
      endif()
    endforeach()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# The seed requires the semantic program to stay independent of the runtime,
# providers, scheduling and AD. Configure fails if `program` (transitively)
# links any component other than base and tensor; the `boundary` test checks
# #include lines for the same rule.
function(tenferro_check_program_boundary)
  tenferro_component_closure(program closure)
  foreach(dep IN LISTS closure)
    if(NOT dep STREQUAL "base" AND NOT dep STREQUAL "tensor")
      message(FATAL_ERROR
        "component boundary: tenferro::program may depend only on base and tensor, "
        "but it depends on tenferro::${dep}")
    endif()
  endforeach()
endfunction()
