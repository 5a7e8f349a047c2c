# tenferro_component(): one component = one directory = one library target
# `tenferro_<name>` with alias `tenferro::<name>`, an explicit source list and
# declared dependencies. Unit tests listed under TESTS build into one GoogleTest
# program per component, registered with ctest under the label <name>.
#
#   tenferro_component(<name>
#     SOURCES a.cpp b.cpp            # explicit, never globbed
#     DEPENDS tenferro::base ...     # PUBLIC component/third-party deps
#     PRIVATE_DEPENDS ...            # PRIVATE deps
#     BACKEND                        # backend-specific (CPU, CUDA, ...): no
#                                    # backend-neutral component may depend
#                                    # on it (Note [Component boundaries])
#     MAY_DEPEND_ON base tensor      # the only components its closure may
#                                    # hold (a boundary the design fixes)
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
    -Wno-missing-field-initializers
    # Note [No math errno]: tenferro never reads errno, so sqrt and friends
    # compile to instructions and the loops around them vectorize (a jit'd
    # np.sqrt ran a scalar sqrt with an errno branch per element: 0.24-0.51
    # of numpy's speed).
    -fno-math-errno)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false -Wrestrict positives inside libstdc++'s
    # std::string at -O3 (GCC PR105651); the code involved is not ours.
    target_compile_options(${target} PRIVATE -Wno-restrict)
    if(CMAKE_UNITY_BUILD)
      # Note [Unity builds]: a unity source #includes the .cpp files, so GCC
      # takes a class defined in one of them for a header's class and warns
      # that its members use that file's anonymous namespace.
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
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

if(NOT TENFERRO_ARCH STREQUAL "none")
  add_compile_options(-march=${TENFERRO_ARCH})
endif()
if(TENFERRO_SANITIZE)
  add_compile_options(-fsanitize=${TENFERRO_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TENFERRO_SANITIZE})
endif()

define_property(GLOBAL PROPERTY TENFERRO_COMPONENTS
  BRIEF_DOCS "tenferro components in declaration order" FULL_DOCS "-")

function(tenferro_component name)
  cmake_parse_arguments(ARG "TSAN;BACKEND" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS;TESTS;TEST_DEPENDS;TSAN_TESTS;MAY_DEPEND_ON" ${ARGN})
  set(target tenferro_${name})
  set(public_includes $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target}
      PUBLIC ${public_includes}
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
    tenferro_apply_flags(${target})
    # The headers are C++20: consumers of the installed targets get it too.
    target_compile_features(${target} PUBLIC cxx_std_20)
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${public_includes})
    target_link_libraries(${target} INTERFACE ${ARG_DEPENDS})
    target_compile_features(${target} INTERFACE cxx_std_20)
  endif()
  add_library(tenferro::${name} ALIAS ${target})
  # Installed and exported as tenferro::<name> (cmake/TenferroPackage.cmake).
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  install(TARGETS ${target} EXPORT tenferroTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

  # Record direct component dependencies for the boundary check.
  set(component_deps "")
  foreach(dep IN LISTS ARG_DEPENDS ARG_PRIVATE_DEPENDS)
    if(dep MATCHES "^tenferro::(.+)$")
      list(APPEND component_deps ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY TENFERRO_DEPS_${name} "${component_deps}")
  set(test_deps "")
  foreach(dep IN LISTS ARG_TEST_DEPENDS)
    if(dep MATCHES "^tenferro::(.+)$")
      list(APPEND test_deps ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY TENFERRO_TEST_DEPS_${name} "${test_deps}")
  set_property(GLOBAL PROPERTY TENFERRO_BACKEND_${name} ${ARG_BACKEND})
  set_property(GLOBAL PROPERTY TENFERRO_MAY_DEPEND_ON_${name} "${ARG_MAY_DEPEND_ON}")
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

# Flags of a test program: the project's warnings, and test code compiled at
# -O1 in the Release configuration.
#
# Note [Test optimisation level]
# A test program's own code (fixtures, loops over cases, naive reference
# loops) runs once per ctest; the time of a test is spent in the library,
# which keeps the configuration's -O3. Compiling the test code at -O1 takes
# ~40 % less compiler time than -O3 (docs/performance_notes.md, "Build
# time"); the sanitizer presets compile everything at -O1 already.
function(tenferro_test_flags target)
  tenferro_apply_flags(${target})
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-O1>)
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
  tenferro_test_flags(${test_target})
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

# Note [Component boundaries]
# Components form a layered graph, checked at configure time:
# - dependency order: a component depends only on components declared
#   before it (the order of add_subdirectory in the top-level CMakeLists);
# - backend neutrality: a component not marked BACKEND never depends,
#   even transitively, on a BACKEND one (the semantic IR, runtime, AD and
#   the einsum/linalg semantics stay usable by any engine);
# - fixed boundaries (MAY_DEPEND_ON): `program` stays independent
#   of the runtime, providers, scheduling and AD; the CPU kernel library
#   `cpu` does not know the runtime.
# The `boundary_includes` test checks the same graph on #include lines
# (public headers of the closure, private headers of the component itself).
function(tenferro_check_boundaries)
  get_property(components GLOBAL PROPERTY TENFERRO_COMPONENTS)
  set(declared "")
  set(manifest "set(ALL_COMPONENTS \"${components}\")\n")
  foreach(name IN LISTS components)
    get_property(deps GLOBAL PROPERTY TENFERRO_DEPS_${name})
    foreach(dep IN LISTS deps)
      if(NOT dep IN_LIST declared)
        message(FATAL_ERROR "component boundary: tenferro::${name} depends on tenferro::${dep}, "
          "which is not declared before it (dependency order: ${declared})")
      endif()
    endforeach()
    list(APPEND declared ${name})
    tenferro_component_closure(${name} closure)
    get_property(backend GLOBAL PROPERTY TENFERRO_BACKEND_${name})
    get_property(may GLOBAL PROPERTY TENFERRO_MAY_DEPEND_ON_${name})
    foreach(dep IN LISTS closure)
      get_property(dep_backend GLOBAL PROPERTY TENFERRO_BACKEND_${dep})
      if(dep_backend AND NOT backend)
        message(FATAL_ERROR "component boundary: backend-neutral tenferro::${name} depends on "
          "backend component tenferro::${dep}")
      endif()
      if(may AND NOT dep IN_LIST may)
        message(FATAL_ERROR "component boundary: tenferro::${name} may depend only on ${may}, "
          "but it depends on tenferro::${dep}")
      endif()
    endforeach()
    get_property(test_deps GLOBAL PROPERTY TENFERRO_TEST_DEPS_${name})
    set(test_allowed ${name} ${closure})
    foreach(dep IN LISTS test_deps)
      tenferro_component_closure(${dep} dep_closure)
      list(APPEND test_allowed ${dep} ${dep_closure})
    endforeach()
    list(APPEND test_allowed testing)  # the test-only support library
    list(REMOVE_DUPLICATES test_allowed)
    string(APPEND manifest
      "set(DIRS_${name} \"${PROJECT_SOURCE_DIR}/src/${name};${PROJECT_SOURCE_DIR}/include/tenferro/${name};"
      "${PROJECT_SOURCE_DIR}/include/tenferro/${name}.h\")\n"
      "set(ALLOWED_${name} \"${name};${closure}\")\n"
      "set(TEST_ALLOWED_${name} \"${test_allowed}\")\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/boundary_manifest.cmake "${manifest}")
endfunction()
